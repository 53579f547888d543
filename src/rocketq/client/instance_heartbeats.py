"""The client instance's heartbeats: the periodic round to every broker (at most 4 in flight, not
waited for), an urgent one to a broker that forgot this client (it answered
SUBSCRIPTION_NOT_EXIST, or we reconnected to it), and how a heartbeat that cannot be built is
reported (once, at ERROR)."""

from __future__ import annotations

import asyncio
import logging

from rocketq.client.instance_base import InstanceBase
from rocketq.errors import AccessDeniedError, RocketQError
from rocketq.protocol import calls
from rocketq.protocol.bodies import (
    HeartbeatData,
    ProducerData,
)
from rocketq.protocol.codes import MASTER_ID

__all__ = ["Heartbeats"]

logger = logging.getLogger("rocketq.client.instance")  # the instance's one logger name, whichever part logs


class Heartbeats(InstanceBase):
    """Heartbeats of a client instance (see the module docstring)."""

    async def _heartbeat_tick(self) -> None:
        """The periodic heartbeat: a round of its own, not waited for - a broker that does not
        answer (its heartbeats lost on the way) would otherwise hold every broker's next
        heartbeat for its 3 s timeout, and a broker with a short expiry would drop a client that
        is fine. At most 4 rounds in flight."""
        rounds = self._heartbeat_rounds
        if len(rounds) >= 4:
            return
        task = asyncio.get_running_loop().create_task(self.send_heartbeat_to_all_brokers())
        rounds.add(task)
        self._side_tasks.add(task)
        task.add_done_callback(rounds.discard)
        task.add_done_callback(self._side_tasks.discard)

    def heartbeat_data(self) -> HeartbeatData:
        return HeartbeatData(
            client_id=self.client_id,
            producer_data_set=tuple(ProducerData(group_name=g) for g in self.producers),
            consumer_data_set=tuple(c.consumer_data() for c in self.consumers.values()),
        )

    async def send_heartbeat_to_all_brokers(self, *, raise_bugs: bool = False, early: bool = False) -> None:
        """HEART_BEAT to every broker (masters only when this client has no consumer).

        A broker that cannot be reached is logged as a warning (the next round retries). A
        heartbeat that cannot even be built or sent because of a bug of ours (or a config value
        nothing caught) raises with ``raise_bugs`` (a consumer's ``start()``), else is logged at
        ERROR once: without heartbeats the brokers do not know this client. With ``raise_bugs`` a
        heartbeat a broker's ACL refuses raises its :class:`~rocketq.errors.AccessDeniedError` too
        (the account may not consume from the group or a subscribed topic). An ``early`` round
        (the one a new broker in a route triggers, as a consumer starts) logs such a refusal at
        DEBUG only: the start's own round raises it, and the periodic rounds warn of it."""
        assert self.api is not None
        assert self._heartbeat_lock is not None
        async with self._heartbeat_lock:
            try:
                data = self.heartbeat_data()
            except Exception as exc:
                if raise_bugs:
                    raise
                self._log_bug("heartbeat", exc)
                return
            if not data.producer_data_set and not data.consumer_data_set:
                return
            no_consumer = not data.consumer_data_set
            pending: list[asyncio.Task[int]] = []
            loop = asyncio.get_running_loop()
            for addrs in list(self.broker_addr_table.values()):
                for broker_id, addr in addrs.items():
                    if no_consumer and broker_id != MASTER_ID:
                        continue
                    # tasks, written in this order before the next round's: a broker that does
                    # not answer (its heartbeats lost) must not hold the next round to the others
                    pending.append(loop.create_task(self.api.call(addr, calls.send_heartbeat(data))))
        if pending:
            for result in await asyncio.gather(*pending, return_exceptions=True):
                if raise_bugs and isinstance(result, AccessDeniedError):
                    raise result  # at start: this account may not consume so; retrying cannot help
                if isinstance(result, RocketQError | OSError):
                    quiet = early and isinstance(result, AccessDeniedError)
                    level = logging.DEBUG if quiet else logging.WARNING
                    logger.log(level, "heartbeat of %s failed: %s", self.client_id, result)
                elif isinstance(result, Exception):
                    if raise_bugs:
                        raise result
                    self._log_bug("heartbeat", result)

    def heartbeat_broker_soon(self, addr: str, why: str) -> None:
        """Send this client's heartbeat to the broker at ``addr`` at once (one in flight per broker),
        because it does not know us any more (``why``: it answered SUBSCRIPTION_NOT_EXIST, or we
        reconnected to it, as after its restart). Logged once until a heartbeat gets through."""
        if self._closed or addr in self._urgent or self.api is None:
            return
        self._urgent.add(addr)
        if addr not in self._urgent_logged:
            self._urgent_logged.add(addr)
            logger.info("broker %s: %s; sending %s's heartbeat now", addr, why, self.client_id)

        async def beat() -> None:
            assert self.api is not None
            try:
                data = self.heartbeat_data()
                if data.producer_data_set or data.consumer_data_set:
                    await self.api.call(addr, calls.send_heartbeat(data))
                self._urgent_logged.discard(addr)
            except (RocketQError, OSError) as exc:
                logger.debug("heartbeat of %s to %s failed: %s", self.client_id, addr, exc)
            except Exception as exc:
                self._log_bug("heartbeat", exc)
            finally:
                self._urgent.discard(addr)

        self._spawn(beat())

    def _connected(self, addr: str) -> None:
        """A connection to ``addr`` opened: to a broker we were connected to before, a reconnect."""
        known = any(addr in addrs.values() for addrs in self.broker_addr_table.values())
        if not known:
            return
        if addr in self._connected_once:
            self.heartbeat_broker_soon(addr, "reconnected (it may have restarted and forgotten this client)")
        self._connected_once.add(addr)
