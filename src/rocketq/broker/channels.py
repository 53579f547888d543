"""A client's registration on one connection, as the consumer and producer registries keep it.

RocketMQ's ``ClientChannelInfo`` and the expiry facts both of its ``ConsumerManager`` and
``ProducerManager`` follow: a client silent for :data:`CHANNEL_EXPIRED_TIMEOUT` is dropped, found
by the housekeeping scan every :data:`CLIENT_HOUSEKEEPING_INTERVAL`.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["CHANNEL_EXPIRED_TIMEOUT", "CLIENT_HOUSEKEEPING_INTERVAL", "ClientChannelInfo"]

C = TypeVar("C", bound=Hashable)

CHANNEL_EXPIRED_TIMEOUT = 120.0
"""RocketMQ's ``ConsumerManager.CHANNEL_EXPIRED_TIMEOUT`` (and ``ProducerManager``'s): 120 000 ms."""

CLIENT_HOUSEKEEPING_INTERVAL = 10.0
"""Period of RocketMQ's ``ClientHousekeepingService`` scan (10 000 ms, first run after 10 s)."""


@dataclass(frozen=True, slots=True)
class ClientChannelInfo(Generic[C]):
    """A client's registration on one connection (RocketMQ's ``ClientChannelInfo``).

    ``language`` is RocketMQ's ``LanguageCode`` name (``"JAVA"``, ``"GO"``, ``"PYTHON"``...) and
    ``version`` the client's ``MQVersion`` ordinal, both from the heartbeat request's header.
    """

    conn: C
    client_id: str
    remote_addr: str
    language: str
    version: int
    last_update: float
