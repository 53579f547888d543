"""The broker's producer registry: producer groups and the connections of their members.

Producers heartbeat too; the broker records one channel per (producer group, connection), for
GET_PRODUCER_CONNECTION_LIST and to pick a member of the group when a transaction's state must be
checked (CHECK_TRANSACTION_STATE goes to any live producer of the group). From RocketMQ 4.9.4's
``ProducerManager``:

* a heartbeat adds the channel if its connection is new in the group, else renews its time stamp;
* UNREGISTER_CLIENT removes the connection's channel from the group (and drops an emptied group);
* a closed connection leaves every group (an emptied group stays listed, empty, as in RocketMQ);
* channels silent for more than 120 s are removed and their connections closed, with no notice
  to anyone (producers have no rebalancing);
* a client id also maps to its latest connection (``findChannel``) for broker-to-client calls.

Pure state: ``now`` in float seconds is passed in (wall clock, as RocketMQ; ``last_update`` is
reported to admin tools in ms); methods return connections to close rather than closing them.
Not thread-safe: one asyncio loop drives it.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Hashable
from dataclasses import replace
from typing import Generic, TypeVar

from rocketq.broker.channels import CHANNEL_EXPIRED_TIMEOUT, ClientChannelInfo
from rocketq.errors import ConfigError

__all__ = ["GET_AVAILABLE_CHANNEL_RETRY_COUNT", "ProducerRegistry"]

log = logging.getLogger(__name__)

C = TypeVar("C", bound=Hashable)

GET_AVAILABLE_CHANNEL_RETRY_COUNT = 3
"""RocketMQ's ``ProducerManager.GET_AVAILABLE_CHANNEL_RETRY_COUNT``."""


class ProducerRegistry(Generic[C]):
    """RocketMQ's ``ProducerManager`` as a pure table of producer groups and their channels."""

    __slots__ = ("_by_client", "_counter", "_groups", "_timeout")

    def __init__(self, channel_expired_timeout: float = CHANNEL_EXPIRED_TIMEOUT) -> None:
        if not channel_expired_timeout > 0:
            raise ConfigError(f"channel_expired_timeout must be positive, got {channel_expired_timeout!r}")
        self._timeout = channel_expired_timeout
        self._groups: dict[str, dict[C, ClientChannelInfo[C]]] = {}
        self._by_client: dict[str, C] = {}
        self._counter = itertools.count(1)

    def register(self, group: str, channel: ClientChannelInfo[C]) -> bool:
        """Record a producer group of a HEART_BEAT received as ``channel`` at its ``last_update``
        (``registerProducer``); return whether the channel is new."""
        channels = self._groups.setdefault(group, {})
        conn = channel.conn
        old = channels.get(conn)
        if old is not None:
            channels[conn] = replace(old, last_update=channel.last_update)
            return False
        channels[conn] = channel
        self._by_client[channel.client_id] = conn
        log.info("producer %s (%s) joined group %s", channel.client_id, channel.remote_addr, group)
        return True

    def unregister(self, group: str, conn: C, client_id: str) -> bool:
        """UNREGISTER_CLIENT for a producer group on ``conn``; return whether a channel was removed."""
        channels = self._groups.get(group)
        if not channels:
            return False
        old = channels.pop(conn, None)
        self._by_client.pop(client_id, None)
        if old is not None:
            log.info("producer %s (%s) unregistered from group %s", client_id, old.remote_addr, group)
        if not channels:
            del self._groups[group]
        return old is not None

    def connection_closed(self, conn: C) -> list[str]:
        """Remove ``conn`` from every producer group; return the groups it left."""
        left: list[str] = []
        for group, channels in self._groups.items():
            old = channels.pop(conn, None)
            if old is not None:
                left.append(group)
                self._by_client.pop(old.client_id, None)
                log.info(
                    "producer %s (%s) left group %s: connection closed", old.client_id, old.remote_addr, group
                )
        return left

    def scan_expired(self, now: float) -> list[C]:
        """Remove channels silent for more than the timeout; return their connections to close."""
        close: dict[C, None] = {}
        for group, channels in self._groups.items():
            for conn, info in list(channels.items()):
                if now - info.last_update > self._timeout:
                    del channels[conn]
                    self._by_client.pop(info.client_id, None)
                    close[conn] = None
                    log.warning(
                        "producer %s (%s) expired from group %s: no heartbeat for %.1f s",
                        info.client_id,
                        info.remote_addr,
                        group,
                        now - info.last_update,
                    )
        return list(close)

    def groups(self) -> list[str]:
        """Producer group names (possibly with no channel left after closes, as in RocketMQ)."""
        return list(self._groups)

    def connections(self, group: str) -> list[ClientChannelInfo[C]]:
        """GET_PRODUCER_CONNECTION_LIST: the group's channels in join order."""
        return list(self._groups.get(group, {}).values())

    def table(self) -> dict[str, list[ClientChannelInfo[C]]]:
        """Every group with its channels (RocketMQ's ``getProducerTable``), empty groups left out."""
        return {g: list(chs.values()) for g, chs in self._groups.items() if chs}

    def find_channel(self, client_id: str) -> C | None:
        """The connection a producer client id registered last, or ``None``."""
        return self._by_client.get(client_id)

    def available_channel(self, group: str, usable: Callable[[C], bool] = lambda _: True) -> C | None:
        """A connection of ``group`` to send a transaction check to, round robin.

        As ``getAvailableChannel``: start at the next index of a shared counter and try
        :data:`GET_AVAILABLE_CHANNEL_RETRY_COUNT` consecutive channels for one that is ``usable``
        (writable); failing that, return the last one tried (RocketMQ falls back to the last
        *open* one, and every registered connection is open: closes remove them). ``None`` if the
        group has no channel.
        """
        conns = list(self._groups.get(group, {}))
        if not conns:
            log.warning("no producer connection in group %s for a transaction check", group)
            return None
        index = next(self._counter) % len(conns)
        for _ in range(GET_AVAILABLE_CHANNEL_RETRY_COUNT):
            if usable(conns[index]):
                return conns[index]
            index = (index + 1) % len(conns)
        return conns[(index - 1) % len(conns)]

    def __len__(self) -> int:
        return sum(len(chs) for chs in self._groups.values())
