"""What each request processor sees of the broker: one narrow context per processor.

A processor of :mod:`rocketq.broker.handlers` is given an object satisfying its Protocol here -
the running :class:`~rocketq.broker.server.Broker` does, and a test may pass anything smaller -
rather than the broker itself: what a handler may reach is listed in one place, and the handlers
import this module, never the server (which imports them).

Each processor's Protocol lists exactly what it uses, built from a few parts several share -
:class:`Clock`, :class:`Tables` (config, topics, groups), :class:`Storage` (store, statistics),
:class:`Registries` (consumers, producers) - and the few services the server runs for it
(notifying groups, answering once a send is durable, waking the schedule).
The clock is the broker's wall clock (float seconds since the epoch, injectable for tests), the
one that stamps data versions and born time stamps.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Sequence
from typing import Protocol, TypeAlias

from rocketq.broker.config import BrokerConfig
from rocketq.broker.consumers import Changes, ConsumerRegistry
from rocketq.broker.locks import QueueLockTable
from rocketq.broker.producers import ProducerRegistry
from rocketq.broker.schedule import ScheduleService
from rocketq.broker.stats import BrokerStats
from rocketq.broker.subscriptions import SubscriptionGroupManager
from rocketq.broker.topics import TopicConfigManager
from rocketq.broker.transactions import TransactionalMessageService
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.message_id import HostPort
from rocketq.remoting import RemotingConnection
from rocketq.store import MessageStore
from rocketq.store.message_store import PutResult

AnswerWhenDurable: TypeAlias = Callable[
    [concurrent.futures.Future[None], RemotingConnection, RemotingCommand, RemotingCommand], None
]
"""``(cf, conn, request, response)``: the server's service that answers a send once it is durable."""

__all__ = [
    "AdminContext",
    "ClientContext",
    "Clock",
    "OffsetContext",
    "PullContext",
    "Registries",
    "ReplyContext",
    "SendContext",
    "Storage",
    "Tables",
    "TransactionContext",
]


class Clock(Protocol):
    """The broker's wall clock."""

    def wall(self) -> float:
        """Seconds since the epoch."""
        ...

    def wall_ms(self) -> int:
        """Milliseconds since the epoch (a born or store time stamp)."""
        ...


class Tables(Protocol):
    """The broker's configuration and its topic and subscription group tables."""

    @property
    def config(self) -> BrokerConfig: ...
    @property
    def topics(self) -> TopicConfigManager: ...
    @property
    def groups(self) -> SubscriptionGroupManager: ...


class Storage(Protocol):
    """The message store, and the counters of what goes in and out of it."""

    @property
    def store(self) -> MessageStore: ...
    @property
    def stats(self) -> BrokerStats: ...


class Registries(Protocol):
    """Who is connected: consumer groups' members and producer groups' members."""

    @property
    def consumers(self) -> ConsumerRegistry[RemotingConnection]: ...
    @property
    def producers(self) -> ProducerRegistry[RemotingConnection]: ...


class SendContext(Clock, Tables, Storage, Protocol):
    """What SEND_MESSAGE(_V2), SEND_BATCH_MESSAGE and CONSUMER_SEND_MSG_BACK use."""

    @property
    def delay_levels(self) -> Sequence[float]: ...
    @property
    def store_host(self) -> HostPort: ...

    def schedule_kick(self) -> None:
        """A delayed message was stored: the schedule service looks again now."""
        ...

    @property
    def answer_when_durable(self) -> AnswerWhenDurable:
        """Write ``response`` once the group commit's fsync ``cf`` completes (sync flush)."""
        ...

    @property
    def is_slave(self) -> bool:
        """A slave: it takes no send (its master's commit log only)."""
        ...

    @property
    def replicates_sync(self) -> bool:
        """A sync master: a waiting send is answered by :meth:`answer_when_replicated`."""
        ...

    def answer_when_replicated(
        self, put: PutResult, conn: RemotingConnection, request: RemotingCommand, response: RemotingCommand
    ) -> None:
        """Write ``response`` once a slave has the message (and its fsync is done, if any)."""
        ...


class PullContext(Clock, Tables, Storage, Protocol):
    """What PULL_MESSAGE and its held pulls use: the straight line of the pull path - group,
    topic and consumer registries, the store, then the hold table (the processor's own)."""

    @property
    def consumers(self) -> ConsumerRegistry[RemotingConnection]: ...
    @property
    def store_host(self) -> HostPort: ...


class ClientContext(Clock, Tables, Registries, Protocol):
    """What heartbeats, unregistrations, group membership queries and queue locks use."""

    @property
    def locks(self) -> QueueLockTable: ...

    async def notify_groups(self, changes: Changes[RemotingConnection]) -> None:
        """Send NOTIFY_CONSUMER_IDS_CHANGED for every change event to its connections."""
        ...


class OffsetContext(Protocol):
    """What consumer offsets, queue bounds and message look-ups use: the store, and the topics and
    consumer groups a fenced commit is checked against (:mod:`rocketq.broker.view_fence`)."""

    @property
    def store(self) -> MessageStore: ...
    @property
    def topics(self) -> TopicConfigManager: ...
    @property
    def consumers(self) -> ConsumerRegistry[RemotingConnection]: ...


class AdminContext(Clock, Tables, Storage, Registries, Protocol):
    """What the admin requests use: every table, read or edited, and the broker's figures."""

    @property
    def schedule(self) -> ScheduleService: ...
    @property
    def port(self) -> int: ...
    @property
    def address(self) -> str: ...
    @property
    def held_pulls(self) -> int: ...
    @property
    def schedule_delivered(self) -> int: ...

    def ha_lag_bytes(self) -> int | None:
        """Bytes the slave is behind its master (``None``: no HA link yet)."""
        ...

    def log_client_failure(self, client_id: str, exc: Exception) -> None:
        """A call the broker made to a client failed (logged, not answered)."""
        ...


class TransactionContext(Protocol):
    """What END_TRANSACTION uses."""

    @property
    def transactions(self) -> TransactionalMessageService: ...


class ReplyContext(Protocol):
    """What SEND_REPLY_MESSAGE(_V2) uses beyond the send processor's checks and appends."""

    @property
    def config(self) -> BrokerConfig: ...
    @property
    def store_host(self) -> HostPort: ...
    @property
    def producers(self) -> ProducerRegistry[RemotingConnection]: ...

    def wall_ms(self) -> int: ...
