"""Admin calls that the command line, the lab and the dashboard share (``DefaultMQAdminExt``'s job).

:class:`AsyncAdmin` does the work on the caller's event loop over the client layer's
:class:`~rocketq.client.api.ClientAPI` (plus the admin requests that API does not need); :class:`Admin`
is its synchronous facade, running it on a background loop thread as the clients do::

    with Admin("127.0.0.1:9876") as admin:
        admin.create_topic("TopicTest", queues=8)
        for q in admin.group_progress("my-group").queues:
            print(q.queue.short, q.broker_offset, q.consumer_offset, q.lag, q.owner)

What each call does, as RocketMQ 4.9.4's ``mqadmin`` does it:

* **topics**: create/update send UPDATE_AND_CREATE_TOPIC to the master of every broker of a cluster
  (or one broker); ordered topics also get their ``ORDER_TOPIC_CONFIG`` entry in the name servers.
  The brokers re-register at once, and :meth:`AsyncAdmin.create_topic` waits (bounded) until the
  name server's route shows the new queue counts, so a producer started next finds them. Delete
  goes to every broker first, then to every name server (else a broker's next registration would
  bring the topic back). List and route come from the name server, stats (per queue min/max offset
  and last store time) from each broker of the route.
* **groups**: members are the consumer connection list (client id, address, language, version);
  the queues each owns come from the client itself (GET_CONSUMER_RUNNING_INFO relayed by the
  broker), or — when a client does not answer — from re-running the group's strategy over the
  broker's member list and the topic's queues, exactly as the client computes it
  (:attr:`GroupMember.queues_source` says which). Client ids registered by two live connections
  are flagged from the broker's duplicate view (rocketq's request 10901; against a broker that
  lacks it, from the connection list, which then lists the id twice). Progress is GET_CONSUME_STATS
  of every broker with the owner of each queue from the members' running info. Reset is
  ``resetOffsetByTime``: INVOKE_BROKER_TO_RESET_OFFSET with force on, which a broker applies
  through the online members (RESET_CONSUMER_CLIENT_OFFSET) or, for an offline group, by committing
  the offsets itself (a RocketMQ broker answers CONSUMER_NOT_ONLINE instead, and the offsets are then
  committed from here queue by queue, as ``mqadmin`` does); ``"first"`` resets to each queue's min
  offset, ``"last"`` to its max. :meth:`AsyncAdmin.seed_new_group` commits a new group's start
  offsets, because a broker starts a new group at 0 on any queue that still holds its first message.

* **monitoring** (what the dashboard and the exporter read, a section of its own): each broker's
  runtime table (GET_BROKER_RUNTIME_INFO: version, put/get TPS, disk use), its topic and group
  configs in one request each, the groups consuming a topic (QUERY_TOPIC_CONSUME_BY_WHO), producer
  connections, and message look-ups: by message id (:meth:`AsyncAdmin.view_message`: an offset
  message id with VIEW_MESSAGE_BY_ID at the broker it names, a producer's unique id with
  QUERY_MESSAGE on the unique key), by key in a time range (:meth:`AsyncAdmin.query_message`),
  by queue and offset (a pull of one message as ``TOOLS_CONSUMER``), and a message's trace from
  the trace topic (:meth:`AsyncAdmin.message_trace`).

Errors are one-line :class:`~rocketq.errors.RocketQError`\\ s: :class:`~rocketq.errors.UnknownTopicError`,
:class:`~rocketq.errors.UnknownGroupError`, :class:`~rocketq.errors.RemotingConnectError` naming the
name server or broker that could not be reached, :class:`~rocketq.errors.BrokerError` for refusals.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, TypeVar

from rocketq.allocate import get_strategy, plan
from rocketq.client.api import ClientAPI
from rocketq.client.config import resolve_namesrv
from rocketq.client.consumer.selector import MessageSelector, subscription_of
from rocketq.client.loop_thread import LoopThread
from rocketq.client.routes import subscribe_info_from_route
from rocketq.client.trace import CLIENT_ID_PROPERTY
from rocketq.client.validators import check_group, check_topic
from rocketq.errors import (
    BrokerError,
    ConfigError,
    ConsumerNotOnlineError,
    RemoteProtocolError,
    RemotingConnectError,
    RemotingTimeoutError,
    RocketQError,
    UnknownGroupError,
    UnknownTopicError,
)
from rocketq.models import DuplicateClientId, MessageQueue, PullStatus
from rocketq.protocol import calls
from rocketq.protocol.bodies import (
    ClusterInfo,
    Connection,
    ConsumerConnection,
    ConsumerRunningInfo,
    ProducerConnection,
    SubscriptionGroupConfig,
    TopicConfig,
    TopicRouteData,
)
from rocketq.protocol.calls import Call
from rocketq.protocol.codes import MASTER_ID, PullSysFlag, version_name
from rocketq.protocol.headers import PullMessageRequestHeader
from rocketq.protocol.message import MessageExt, decode_messages
from rocketq.protocol.message_id import parse_offset_msg_id, parse_uniq_id
from rocketq.protocol.topics import is_retry_or_dlq_topic, is_system_topic, retry_topic
from rocketq.protocol.trace import (
    RMQ_SYS_TRACE_TOPIC,
    ConsumeReturnType,
    TraceContext,
    TraceType,
    decode_trace,
)
from rocketq.remoting.client import RemotingClient
from rocketq.remoting.config import ClientConfig as RemotingConfig

__all__ = [
    "ORDER_TOPIC_CONFIG",
    "TOOLS_CONSUMER_GROUP",
    "Admin",
    "AsyncAdmin",
    "BrokerRuntime",
    "DuplicateClientId",
    "GroupMember",
    "GroupMembers",
    "GroupProgress",
    "MessageTrace",
    "QueueProgress",
    "QueueRead",
    "QueueSource",
    "ResetResult",
    "TopicQueueStats",
    "TopicStats",
    "TraceEvent",
    "message_dict",
    "parse_reset_target",
    "parse_time",
    "trace_events",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"
"""The name servers' KV namespace of ordered topics' ``brokerName:queues;...`` settings."""

#: Where a member's queues came from: its own running info, or the strategy re-run here.
QueueSource = Literal["running-info", "plan"]

_FIRST = 0  # a reset to time stamp 0 lands on each queue's min offset
_JAVA_LONG_MAX = (1 << 63) - 1  # a query's end when none is given (Long.MAX_VALUE, as mqadmin)
_LAST = -1  # RocketMQ's "now": each queue's max offset


# ------------------------------------------------------------------------------------ values


def _mq_dict(mq: MessageQueue) -> dict[str, Any]:
    return {"topic": mq.topic, "broker": mq.broker_name, "queue_id": mq.queue_id}


@dataclass(frozen=True, slots=True)
class TopicQueueStats:
    """One queue of a topic: the offsets the broker holds and when it last stored a message."""

    queue: MessageQueue
    min_offset: int
    max_offset: int
    last_update_ms: int

    @property
    def messages(self) -> int:
        """Messages stored in the queue now (max - min)."""
        return self.max_offset - self.min_offset

    def to_dict(self) -> dict[str, Any]:
        return {
            **_mq_dict(self.queue),
            "min_offset": self.min_offset,
            "max_offset": self.max_offset,
            "messages": self.messages,
            "last_update_ms": self.last_update_ms,
        }


@dataclass(frozen=True, slots=True)
class TopicStats:
    """Every queue of a topic on every broker of its route, sorted."""

    topic: str
    queues: tuple[TopicQueueStats, ...]

    @property
    def total_messages(self) -> int:
        return sum(q.messages for q in self.queues)

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "queues": [q.to_dict() for q in self.queues],
            "total_messages": self.total_messages,
        }


@dataclass(frozen=True, slots=True)
class GroupMember:
    """One client id of a group: its connections, and the queues it owns.

    ``queues_source`` is ``"running-info"`` when the client reported its queues itself, ``"plan"``
    when they were computed here with ``strategy`` (the client did not answer: ``error`` says why).
    Two processes sharing one client id (``duplicate``) both own these queues: they consume them
    twice.
    """

    client_id: str
    addresses: tuple[str, ...]
    language: str
    version: int
    queues: tuple[MessageQueue, ...]
    queues_source: QueueSource
    strategy: str
    duplicate: bool = False
    error: str | None = None

    @property
    def version_name(self) -> str:
        return version_name(self.version)

    def to_dict(self) -> dict[str, Any]:
        return {
            "client_id": self.client_id,
            "addresses": list(self.addresses),
            "language": self.language,
            "version": self.version_name,
            "queues": [_mq_dict(q) for q in self.queues],
            "queues_source": self.queues_source,
            "strategy": self.strategy,
            "duplicate": self.duplicate,
            "error": self.error,
        }


@dataclass(frozen=True, slots=True)
class GroupMembers:
    """The online members of a consumer group (empty when it has none)."""

    group: str
    members: tuple[GroupMember, ...]
    subscriptions: Mapping[str, str] = field(default_factory=dict)
    message_model: str | None = None
    consume_type: str | None = None
    consume_from_where: str | None = None
    duplicates: tuple[DuplicateClientId, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "message_model": self.message_model,
            "consume_type": self.consume_type,
            "consume_from_where": self.consume_from_where,
            "subscriptions": dict(self.subscriptions),
            "members": [m.to_dict() for m in self.members],
            "duplicates": [d.to_dict() for d in self.duplicates],
        }


@dataclass(frozen=True, slots=True)
class QueueProgress:
    """A queue as a group sees it: the broker's max offset, the group's committed offset, the lag."""

    queue: MessageQueue
    broker_offset: int
    consumer_offset: int
    last_timestamp_ms: int
    owner: str | None

    @property
    def lag(self) -> int:
        return max(self.broker_offset - self.consumer_offset, 0)

    def to_dict(self) -> dict[str, Any]:
        return {
            **_mq_dict(self.queue),
            "broker_offset": self.broker_offset,
            "consumer_offset": self.consumer_offset,
            "lag": self.lag,
            "owner": self.owner,
            "last_timestamp_ms": self.last_timestamp_ms,
        }


@dataclass(frozen=True, slots=True)
class GroupProgress:
    """Consume progress of a group over its topics (or one), sorted by queue."""

    group: str
    queues: tuple[QueueProgress, ...]
    consume_tps: float
    owners_source: QueueSource | None = None

    @property
    def total_lag(self) -> int:
        return sum(q.lag for q in self.queues)

    @property
    def total_broker_offset(self) -> int:
        return sum(q.broker_offset for q in self.queues)

    @property
    def total_consumer_offset(self) -> int:
        return sum(q.consumer_offset for q in self.queues)

    def to_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "queues": [q.to_dict() for q in self.queues],
            "total_broker_offset": self.total_broker_offset,
            "total_consumer_offset": self.total_consumer_offset,
            "total_lag": self.total_lag,
            "consume_tps": self.consume_tps,
            "owners_source": self.owners_source,
        }


@dataclass(frozen=True, slots=True)
class ResetResult:
    """The offsets a reset set, per queue; ``timestamp_ms`` -1 means "last", 0 "first"."""

    group: str
    topic: str
    timestamp_ms: int
    offsets: Mapping[MessageQueue, int]

    def to_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "topic": self.topic,
            "timestamp_ms": self.timestamp_ms,
            "offsets": [{**_mq_dict(mq), "offset": o} for mq, o in sorted(self.offsets.items())],
        }


def parse_reset_target(text: str | int, *, now_ms: int | None = None) -> int:
    """A reset target as the time stamp RocketMQ's reset takes: ``"first"`` → 0 (each queue's min
    offset), ``"last"``/``"now"`` → -1 (max offset), digits → epoch ms, else ISO-8601 (local time
    when it has no offset). A time after ``now_ms`` (default: now) is refused: no message is stored
    after it, and RocketMQ's brokers would answer each queue's last message (max - 1), not its end.

    >>> parse_reset_target("first"), parse_reset_target("last"), parse_reset_target("1700000000000")
    (0, -1, 1700000000000)
    >>> parse_reset_target("2023-11-14T22:13:20+00:00")
    1700000000000
    """
    now = int(time.time() * 1000) if now_ms is None else now_ms
    if isinstance(text, int):
        if text < -1:
            raise ConfigError(f"a reset time stamp must be >= -1, got {text}")
        if text > now:
            raise ConfigError(_future(str(text)))
        return text
    value = text.strip()
    if value in ("first", "earliest"):
        return _FIRST
    if value in ("last", "latest", "now"):
        return _LAST
    if value.isdigit():
        ms = int(value)
    else:
        from datetime import datetime  # noqa: PLC0415 (only for this rarely used form)

        try:
            ms = int(datetime.fromisoformat(value).timestamp() * 1000)
        except (ValueError, OverflowError, OSError):
            raise ConfigError(
                f"a time must be first, last, epoch milliseconds or ISO-8601 (2026-01-31T12:00:00), "
                f"got {text!r}"
            ) from None
    if ms > now:
        raise ConfigError(_future(text if isinstance(text, str) else str(text)))
    return ms


def _future(text: str) -> str:
    return (
        f"time {text.strip()!r} is in the future: no message is stored after it "
        "(use last for each queue's end)"
    )


_AGE = re.compile(r"^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_time(text: str, *, now_ms: int | None = None) -> int:
    """A time as epoch ms: digits (epoch ms), ``now``, an age (``30s``, ``15m``, ``2h``, ``1d``:
    that long ago) or ISO-8601 (local time when it has no offset); else
    :class:`~rocketq.errors.ConfigError`.

    >>> parse_time("1700000000000"), parse_time("90s", now_ms=1_000_000), parse_time("now", now_ms=5)
    (1700000000000, 910000, 5)
    >>> parse_time("2023-11-14T22:13:20+00:00")
    1700000000000
    """
    value = text.strip()
    if value.isdigit():
        return int(value)
    now = int(time.time() * 1000) if now_ms is None else now_ms
    if value == "now":
        return now
    m = _AGE.match(value)
    if m:
        return now - int(float(m.group(1)) * _UNIT_MS[m.group(2)])
    from datetime import datetime  # noqa: PLC0415 (only for this form)

    try:
        return int(datetime.fromisoformat(value).timestamp() * 1000)
    except (ValueError, OverflowError, OSError):
        raise ConfigError(
            f"a time must be epoch ms, now, an age such as 15m, or ISO-8601 (2026-01-31T12:00:00); "
            f"got {text!r}"
        ) from None


# ------------------------------------------------------------------------------------ monitoring values


TOOLS_CONSUMER_GROUP = "TOOLS_CONSUMER"
"""The group RocketMQ's tools pull as (``MixAll.TOOLS_CONSUMER_GROUP``), built into every broker."""


@dataclass(frozen=True, slots=True)
class BrokerRuntime:
    """A broker's GET_BROKER_RUNTIME_INFO table with the figures a person looks for first.

    Rates are the 10-second figure (RocketMQ writes ``"10s 60s 600s"``; rocketq one number);
    ``None`` when the broker does not report them.
    """

    addr: str
    table: Mapping[str, str]

    def _first_number(self, key: str) -> float | None:
        text = self.table.get(key)
        if not text:
            return None
        try:
            return float(text.split()[0])
        except ValueError:
            return None

    @property
    def version(self) -> str:
        return self.table.get("brokerVersionDesc") or "?"

    @property
    def put_tps(self) -> float | None:
        """Messages stored per second (``putTps``)."""
        return self._first_number("putTps")

    @property
    def get_tps(self) -> float | None:
        """Messages sent to consumers per second (``getTransferedTps``)."""
        return self._first_number("getTransferedTps")

    @property
    def disk_ratio(self) -> float | None:
        """Fraction of the commit log's disk in use (``commitLogDiskRatio``, 0..1)."""
        return self._first_number("commitLogDiskRatio")

    @property
    def boot_ms(self) -> int | None:
        value = self._first_number("bootTimestamp")
        return int(value) if value is not None else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "addr": self.addr,
            "version": self.version,
            "put_tps": self.put_tps,
            "get_tps": self.get_tps,
            "disk_ratio": self.disk_ratio,
            "boot_ms": self.boot_ms,
            "table": dict(self.table),
        }


@dataclass(frozen=True, slots=True)
class QueueRead:
    """Messages read from a queue by :meth:`AsyncAdmin.read_queue`: where to read next, the
    queue's bounds, and whether the offset asked was within them."""

    messages: tuple[MessageExt, ...]
    next_offset: int
    min_offset: int
    max_offset: int
    in_range: bool = True


@dataclass(frozen=True, slots=True)
class TraceEvent:
    """One step of a message's life from its trace records (RocketMQ's message-trace view).

    ``kind`` is ``"sent"`` (a Pub line), ``"consumed"`` (a SubBefore and its SubAfter, paired by
    request id; an unpaired SubBefore is a consumption that had not finished when the records
    were read) or ``"transaction"`` (an EndTransaction line). ``client`` is the traced client's
    id when its trace producer wrote it (rocketq's ``rqClientId``), else the host the record was
    sent from; ``host`` is the broker (sent, transaction) or the consuming host.
    """

    kind: Literal["sent", "consumed", "transaction"]
    timestamp: int
    group: str
    client: str
    host: str
    cost_ms: int | None
    success: bool | None
    status: str
    retry_times: int = 0
    topic: str = ""
    tags: str = ""
    keys: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "timestamp_ms": self.timestamp,
            "group": self.group,
            "client": self.client,
            "host": self.host,
            "cost_ms": self.cost_ms,
            "success": self.success,
            "status": self.status,
            "retry_times": self.retry_times,
            "topic": self.topic,
            "tags": self.tags,
            "keys": self.keys,
        }


@dataclass(frozen=True, slots=True)
class MessageTrace:
    """A message's trace (:meth:`AsyncAdmin.message_trace`): its id, the stored message when it
    could be read, and the trace events in time order."""

    msg_id: str
    trace_topic: str
    message: MessageExt | None
    events: tuple[TraceEvent, ...]

    def to_dict(self) -> dict[str, Any]:
        m = self.message
        return {
            "msg_id": self.msg_id,
            "trace_topic": self.trace_topic,
            "message": None if m is None else message_dict(m),
            "events": [e.to_dict() for e in self.events],
        }


def message_dict(m: MessageExt, *, body: bool = True) -> dict[str, Any]:
    """A stored message as JSON-ready values (what ``rocketq message show --json`` prints; the
    body as UTF-8 text with replacement)."""
    out: dict[str, Any] = {
        "msg_id": m.msg_id,
        "offset_msg_id": m.offset_msg_id,
        "topic": m.topic,
        "queue_id": m.queue_id,
        "queue_offset": m.queue_offset,
        "commit_log_offset": m.commit_log_offset,
        "tags": m.tags,
        "keys": m.keys,
        "born_ms": m.born_timestamp,
        "born_host": str(m.born_host),
        "stored_ms": m.store_timestamp,
        "store_host": str(m.store_host),
        "reconsume_times": m.reconsume_times,
        "sys_flag": m.sys_flag,
        "properties": dict(sorted(m.properties.items())),
        "body_size": len(m.body),
    }
    if body:
        out["body"] = m.body.decode("utf-8", "replace")
    return out


def _return_type(code: int) -> str:
    try:
        return ConsumeReturnType(code).name
    except ValueError:
        return str(code)


def trace_events(records: Iterable[tuple[TraceContext, str]], msg_id: str) -> list[TraceEvent]:
    """The events of ``msg_id`` among decoded trace contexts, each with the client that wrote it
    (``(context, client)`` pairs), in time order; SubBefore and SubAfter lines of one consume
    call (one request id) make one ``consumed`` event.

    >>> from rocketq.protocol.trace import TraceBean, TraceContext, TraceType
    >>> b = (TraceBean(msg_id="M", retry_times=1),)
    >>> recs = [(TraceContext(trace_type=TraceType.SUB_BEFORE, timestamp=5, group_name="G",
    ...                       request_id="R", beans=b), "c1"),
    ...         (TraceContext(trace_type=TraceType.SUB_AFTER, timestamp=9, group_name="G",
    ...                       request_id="R", cost_time=4, beans=b), "c1")]
    >>> [(e.kind, e.timestamp, e.cost_ms, e.retry_times) for e in trace_events(recs, "M")]
    [('consumed', 5, 4, 1)]
    """
    events: list[TraceEvent] = []
    before: dict[str, tuple[TraceContext, str]] = {}
    after: dict[str, TraceContext] = {}
    for ctx, client in records:
        if not ctx.beans or ctx.beans[0].msg_id != msg_id:
            continue
        bean = ctx.beans[0]
        if ctx.trace_type is TraceType.PUB:
            status = "SEND_OK" if ctx.success else "failed"
            events.append(
                TraceEvent(
                    "sent",
                    ctx.timestamp,
                    ctx.group_name,
                    client,
                    bean.store_host,
                    ctx.cost_time,
                    ctx.success,
                    status,
                    topic=bean.topic,
                    tags=bean.tags,
                    keys=bean.keys,
                )
            )
        elif ctx.trace_type is TraceType.END_TRANSACTION:
            status = str(bean.transaction_state)
            if bean.from_transaction_check:
                status += " (answering a check)"
            events.append(
                TraceEvent(
                    "transaction",
                    ctx.timestamp,
                    ctx.group_name,
                    client,
                    bean.store_host,
                    None,
                    None,
                    status,
                    topic=bean.topic,
                    tags=bean.tags,
                    keys=bean.keys,
                )
            )
        elif ctx.trace_type is TraceType.SUB_BEFORE:
            before[ctx.request_id] = (ctx, client)
        else:
            after[ctx.request_id] = ctx
    for request_id, (ctx, client) in before.items():
        done = after.get(request_id)
        if done is None:
            status, cost, success = "no end recorded", None, None
        else:
            cost, success = done.cost_time, done.success
            status = "CONSUME_SUCCESS" if success else f"RECONSUME_LATER ({_return_type(done.context_code)})"
        bean = ctx.beans[0]
        host = client.partition("@")[0]
        events.append(
            TraceEvent(
                "consumed",
                ctx.timestamp,
                ctx.group_name,
                client,
                host,
                cost,
                success,
                status,
                retry_times=bean.retry_times,
                keys=bean.keys,
            )
        )
    return sorted(events, key=lambda e: e.timestamp)


# ------------------------------------------------------------------------------------ the core


def _refused(exc: BrokerError, what: str) -> BrokerError:
    """The same refusal, its message saying what was refused where (the CLI prints that line)."""
    return BrokerError.for_code(exc.code, f"{what}: {exc.remark or 'no reason given'}")


class AsyncAdmin:
    """Admin calls on the caller's event loop (see the module docstring).

    ``namesrv`` is RocketMQ's ``;``-separated list (else ``$NAMESRV_ADDR``, else
    ``127.0.0.1:9876``); ``timeout`` bounds each request (``timeoutMillis`` 5000 in ``mqadmin``).
    Use as ``async with AsyncAdmin(...) as admin`` or call :meth:`close`.
    """

    def __init__(self, namesrv: str | None = None, *, timeout: float = 5.0) -> None:
        self.namesrv_addrs = resolve_namesrv(namesrv)
        self.timeout = timeout
        self._remoting: RemotingClient | None = None
        self._api: ClientAPI | None = None

    @property
    def api(self) -> ClientAPI:
        """The client layer's API over this admin's connections (made on first use)."""
        if self._api is None:
            self._remoting = RemotingClient(config=RemotingConfig(request_timeout=self.timeout))
            self._api = ClientAPI(self._remoting, self.namesrv_addrs, timeout=self.timeout)
        return self._api

    async def close(self) -> None:
        if self._remoting is not None:
            await self._remoting.close()
        self._remoting = self._api = None

    async def __aenter__(self) -> AsyncAdmin:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # -------------------------------------------------------------- transport

    async def _namesrv(self, make: Callable[[], Call[T]]) -> T:
        """Ask the name servers in turn until one answers."""
        try:
            return await self.api.call_namesrv(make, self.timeout)
        except RemotingConnectError as exc:
            raise RemotingConnectError(f"cannot reach name server {';'.join(self.namesrv_addrs)}") from exc
        except RemotingTimeoutError as exc:
            raise RemotingTimeoutError(
                f"name server {';'.join(self.namesrv_addrs)} did not answer: {_reason(exc)}"
            ) from exc
        except BrokerError as exc:
            raise _refused(exc, make().what) from None

    async def _all_namesrv(self, make: Callable[[], Call[None]]) -> None:
        """Send to every name server; each must answer SUCCESS."""
        for addr in self.namesrv_addrs:
            await self._call(addr, make(), "name server")

    async def _call(self, addr: str, call: Call[T], kind: str = "broker") -> T:
        """Run ``call`` at ``addr``: a connection failure names the ``kind`` of server, a refusal
        says what was refused where."""
        try:
            return await self.api.call(addr, call, self.timeout)
        except RemotingConnectError as exc:
            raise RemotingConnectError(f"cannot reach {kind} {addr}: {_reason(exc)}") from exc
        except BrokerError as exc:
            raise _refused(exc, f"{call.what} on {addr}") from None
        except RemotingTimeoutError as exc:
            raise RemotingTimeoutError(f"{kind} {addr} did not answer: {_reason(exc)}") from exc

    async def _get_route(self, topic: str) -> TopicRouteData | None:
        try:
            return await self.api.get_topic_route(topic, self.timeout)
        except RemotingConnectError as exc:
            raise RemotingConnectError(f"cannot reach name server {';'.join(self.namesrv_addrs)}") from exc
        except RemotingTimeoutError as exc:
            raise RemotingTimeoutError(
                f"name server {';'.join(self.namesrv_addrs)} did not answer: {_reason(exc)}"
            ) from exc

    # -------------------------------------------------------------- cluster

    async def cluster_info(self) -> ClusterInfo:
        """Brokers by name and broker names by cluster (GET_BROKER_CLUSTER_INFO)."""
        return await self._namesrv(calls.get_broker_cluster_info)

    async def master_addrs(self, cluster: str | None = None) -> dict[str, str]:
        """``{broker name: master address}`` of one cluster (all clusters when ``None``), sorted."""
        info = await self.cluster_info()
        if cluster is not None:
            if cluster not in info.cluster_addr_table:
                known = ", ".join(sorted(info.cluster_addr_table)) or "none"
                raise ConfigError(f"no cluster named {cluster!r} in the name server (known: {known})")
            names: Iterable[str] = info.cluster_addr_table[cluster]
        else:
            names = info.broker_addr_table
        out: dict[str, str] = {}
        for name in sorted(names):
            bd = info.broker_addr_table.get(name)
            if bd is not None and MASTER_ID in bd.broker_addrs:
                out[name] = bd.broker_addrs[MASTER_ID]
        return out

    async def _broker_name_of(self, addr: str) -> str:
        info = await self.cluster_info()
        for name, bd in info.broker_addr_table.items():
            if addr in bd.broker_addrs.values():
                return name
        raise ConfigError(f"no broker at {addr} is registered with the name server")

    # -------------------------------------------------------------- topics

    async def topic_list(self) -> list[str]:
        """Every topic the name server knows, sorted."""
        return await self._namesrv(calls.get_all_topic_list)

    async def topic_route(self, topic: str) -> TopicRouteData:
        """The topic's route; :class:`UnknownTopicError` when the name server has none."""
        route = await self._get_route(topic)
        if route is None:
            raise UnknownTopicError(f"topic {topic} does not exist (the name server has no route for it)")
        return route

    async def topic_stats(self, topic: str) -> TopicStats:
        """Per queue min/max offset and last store time, from every broker of the route."""
        route = await self.topic_route(topic)
        queues: list[TopicQueueStats] = []
        for bd in route.broker_datas:
            addr = bd.broker_addrs.get(MASTER_ID)
            if addr is None:
                continue
            stats = await self._call(addr, calls.get_topic_stats_info(topic))
            if stats is None:  # this broker does not hold the topic
                continue
            table = stats.offset_table
            queues.extend(
                TopicQueueStats(mq, o.min_offset, o.max_offset, o.last_update_timestamp)
                for mq, o in table.items()
            )
        return TopicStats(topic, tuple(sorted(queues, key=lambda q: q.queue)))

    async def create_topic(
        self,
        topic: str,
        *,
        queues: int | None = None,
        read_queues: int | None = None,
        write_queues: int | None = None,
        perm: int = 6,
        order: bool = False,
        broker: str | None = None,
        cluster: str | None = None,
        wait: float = 5.0,
    ) -> dict[str, str]:
        """Create (or overwrite) ``topic`` on one broker (``broker`` address), every master of a
        cluster, or — when neither is given — every master of the only cluster.

        ``queues`` sets both queue counts; ``read_queues``/``write_queues`` override one of them.
        Returns ``{broker name: address}`` of the brokers written. Waits up to ``wait`` seconds
        for the name server's route to show the change.
        """
        read = read_queues if read_queues is not None else queues
        write = write_queues if write_queues is not None else queues
        if read is None or write is None:
            raise ConfigError("say how many queues: queues, or both read_queues and write_queues")
        _check_topic_args(topic, read, write, perm)
        targets = await self._targets(broker, cluster)
        for name, addr in targets.items():
            await self._update_topic_config(addr, topic, read, write, perm, order)
            logger.info(
                "topic %s: %d read / %d write queues, perm %d on %s (%s)",
                topic,
                read,
                write,
                perm,
                name,
                addr,
            )
        if order:
            await self._set_order_conf(topic, dict.fromkeys(targets, write), merge=broker is not None)
        await self._await_route(topic, dict.fromkeys(targets, (read, write, perm)), wait)
        return targets

    async def update_topic(
        self,
        topic: str,
        *,
        queues: int | None = None,
        read_queues: int | None = None,
        write_queues: int | None = None,
        perm: int | None = None,
        order: bool | None = None,
        broker: str | None = None,
        cluster: str | None = None,
        wait: float = 5.0,
    ) -> dict[str, str]:
        """Change an existing topic on the brokers that hold it (or one broker / one cluster's
        masters); what is not given keeps each broker's current value from the route."""
        route = await self.topic_route(topic)
        current = {qd.broker_name: qd for qd in route.queue_datas if qd.broker_name is not None}
        if broker is not None or cluster is not None:
            targets = await self._targets(broker, cluster)
        else:
            masters = {bd.broker_name: bd.broker_addrs.get(MASTER_ID) for bd in route.broker_datas}
            targets = {n: a for n, a in sorted(masters.items()) if n is not None and a is not None}
        expect: dict[str, tuple[int, int, int]] = {}
        is_order = order if order is not None else await self.order_conf(topic) is not None
        for name, addr in targets.items():
            qd = current.get(name)
            read = read_queues if read_queues is not None else queues
            write = write_queues if write_queues is not None else queues
            read = read if read is not None else (qd.read_queue_nums if qd else None)
            write = write if write is not None else (qd.write_queue_nums if qd else None)
            if read is None or write is None:
                raise ConfigError(f"topic {topic} is not on broker {name}: say how many queues it gets there")
            p = perm if perm is not None else (qd.perm if qd else 6)
            _check_topic_args(topic, read, write, p)
            await self._update_topic_config(addr, topic, read, write, p, is_order)
            expect[name] = (read, write, p)
        if order:
            await self._set_order_conf(topic, {n: expect[n][1] for n in targets}, merge=broker is not None)
        elif order is False and await self.order_conf(topic) is not None:
            await self._delete_order_conf(topic)
        await self._await_route(topic, expect, wait)
        return targets

    async def delete_topic(self, topic: str, *, cluster: str | None = None) -> dict[str, str]:
        """Delete ``topic`` in its brokers (every broker of ``cluster`` when given), then in every
        name server, as ``mqadmin deleteTopic`` does; returns the brokers it was deleted from."""
        if cluster is not None:
            info = await self.cluster_info()
            if cluster not in info.cluster_addr_table:
                raise ConfigError(f"no cluster named {cluster!r} in the name server")
            datas = [info.broker_addr_table[n] for n in sorted(info.cluster_addr_table[cluster])]
            brokers = {
                f"{bd.broker_name}/{bid}": a for bd in datas for bid, a in sorted(bd.broker_addrs.items())
            }
        else:
            route = await self.topic_route(topic)
            brokers = {
                f"{bd.broker_name}/{bid}": a
                for bd in sorted(route.broker_datas, key=lambda b: b.broker_name or "")
                for bid, a in sorted(bd.broker_addrs.items())
            }
        for addr in brokers.values():
            await self._call(addr, calls.delete_topic_in_broker(topic))
        await self._all_namesrv(lambda: calls.delete_topic_in_namesrv(topic, cluster=cluster))
        await self._delete_order_conf(topic)
        return brokers

    async def _targets(self, broker: str | None, cluster: str | None) -> dict[str, str]:
        if broker is not None and cluster is not None:
            raise ConfigError("give a broker or a cluster, not both")
        if broker is not None:
            return {await self._broker_name_of(broker): broker}
        if cluster is None:
            info = await self.cluster_info()
            clusters = sorted(info.cluster_addr_table)
            if not clusters:
                raise ConfigError("no broker is registered with the name server")
            if len(clusters) > 1:
                raise ConfigError(f"several clusters ({', '.join(clusters)}): say which one")
            cluster = clusters[0]
        targets = await self.master_addrs(cluster)
        if not targets:
            raise ConfigError(f"cluster {cluster} has no master broker")
        return targets

    async def _update_topic_config(
        self, addr: str, topic: str, read: int, write: int, perm: int, order: bool
    ) -> None:
        await self._call(addr, calls.create_topic(topic, read, write, perm=perm, order=order))

    async def _set_order_conf(self, topic: str, queues: Mapping[str, int], *, merge: bool) -> None:
        """``ORDER_TOPIC_CONFIG`` ``brokerName:writeQueues;...`` in every name server
        (``createOrUpdateOrderConf``: one broker merges into the existing value)."""
        entries = {name: f"{name}:{n}" for name, n in queues.items()}
        if merge:
            old = await self.order_conf(topic)
            for item in filter(None, (old or "").split(";")):
                entries.setdefault(item.split(":", 1)[0], item)
        value = ";".join(entries[k] for k in sorted(entries))
        await self._all_namesrv(lambda: calls.put_kv_config(ORDER_TOPIC_CONFIG, topic, value))

    async def order_conf(self, topic: str) -> str | None:
        """The topic's ``ORDER_TOPIC_CONFIG`` (``brokerName:queues;...``) in the name server, if any.

        (A route carries it only when the name server runs with ``orderMessageEnable``.)
        """
        return await self._namesrv(lambda: calls.get_kv_config(ORDER_TOPIC_CONFIG, topic))

    async def _delete_order_conf(self, topic: str) -> None:
        for addr in self.namesrv_addrs:
            try:
                await self._call(addr, calls.delete_kv_config(ORDER_TOPIC_CONFIG, topic), "name server")
            except RocketQError as exc:
                logger.warning("deleting the order config of %s on %s failed: %s", topic, addr, exc)

    async def _await_route(self, topic: str, expect: Mapping[str, tuple[int, int, int]], wait: float) -> None:
        """Poll the route until every broker in ``expect`` shows (read, write, perm), or ``wait`` ends."""
        deadline = time.monotonic() + wait
        delay = 0.02
        while True:
            route = await self._get_route(topic)
            if route is not None:
                seen = {
                    qd.broker_name: (qd.read_queue_nums, qd.write_queue_nums, qd.perm)
                    for qd in route.queue_datas
                }
                if all(seen.get(name) == want for name, want in expect.items()):
                    return
            if time.monotonic() >= deadline:
                logger.warning("topic %s: the name server's route does not show the change yet", topic)
                return
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.25)

    # -------------------------------------------------------------- groups

    async def _group_brokers(self, group: str) -> dict[str, str]:
        """``{broker name: master address}`` of every broker that may know ``group``: those of its
        retry topic's route, else every master of every cluster."""
        route = await self._get_route(retry_topic(group))
        if route is not None:
            out = {
                bd.broker_name: bd.broker_addrs[MASTER_ID]
                for bd in route.broker_datas
                if bd.broker_name is not None and MASTER_ID in bd.broker_addrs
            }
            if out:
                return dict(sorted(out.items()))
        return await self.master_addrs()

    async def consumer_connection(self, group: str) -> dict[str, ConsumerConnection]:
        """GET_CONSUMER_CONNECTION_LIST from every broker that has the group online, by address."""
        out: dict[str, ConsumerConnection] = {}
        for addr in (await self._group_brokers(group)).values():
            connection = await self._call(addr, calls.get_consumer_connection_list(group))
            if connection is not None:  # None: no member of the group online there
                out[addr] = connection
        return out

    async def running_info(
        self, group: str, client_id: str, broker_addr: str | None = None
    ) -> ConsumerRunningInfo:
        """The client's own view (subscriptions, queues, statistics), relayed by a broker."""
        addrs = [broker_addr] if broker_addr else list((await self._group_brokers(group)).values())
        last: RocketQError | None = None
        for addr in addrs:
            try:
                return await self._call(addr, calls.get_consumer_running_info(group, client_id))
            except RocketQError as exc:
                last = exc
        raise last if last is not None else UnknownGroupError(f"no broker knows consumer group {group}")

    async def duplicate_client_ids(self, group: str | None = None) -> list[DuplicateClientId]:
        """Client ids registered by several live connections, from every broker (rocketq's brokers
        answer request 10901; a broker without it is skipped)."""
        out: list[DuplicateClientId] = []
        for addr in (await self.master_addrs()).values():
            found = await self._call(addr, calls.query_duplicate_client_ids(addr, group))
            out.extend(found or ())  # None: a broker without the request
        return out

    async def group_members(self, group: str, *, strategy: str | None = None) -> GroupMembers:
        """The group's online members with their queues (see the module docstring).

        ``strategy`` is used to compute a member's queues only when it does not report them and
        no other member says which strategy the group uses (default ``AVG``).
        """
        conns = await self.consumer_connection(group)
        if not conns:
            if await self._get_route(retry_topic(group)) is None:
                raise UnknownGroupError(f"consumer group {group} is unknown to every broker")
            return GroupMembers(group, ())
        duplicates = [d for d in await self.duplicate_client_ids(group) if d.group == group]
        # one entry per client id; the broker listing most connections for it gives its addresses
        by_id: dict[str, tuple[Connection, list[str], str]] = {}
        for addr, cc in conns.items():
            per_id: dict[str, list[Connection]] = {}
            for c in cc.connection_set:
                if c.client_id:
                    per_id.setdefault(c.client_id, []).append(c)
            for cid, cs in per_id.items():
                addresses = sorted(c.client_addr or "?" for c in cs)
                if cid not in by_id or len(addresses) > len(by_id[cid][1]):
                    by_id[cid] = (cs[0], addresses, addr)
                if len(cs) > 1 and not any(d.client_id == cid and d.broker_addr == addr for d in duplicates):
                    duplicates.append(DuplicateClientId(group, cid, addr, tuple(addresses)))
        first = next(iter(conns.values()))
        subs = {t: s.sub_string or "*" for t, s in sorted(first.subscription_table.items())}

        async def ask(cid: str, addr: str) -> ConsumerRunningInfo | RocketQError:
            try:
                return await self.running_info(group, cid, addr)
            except RocketQError as exc:
                return exc

        answers = await asyncio.gather(*(ask(cid, addr) for cid, (_, _, addr) in by_id.items()))
        infos = dict(zip(by_id, answers, strict=True))
        reported = [i for i in infos.values() if isinstance(i, ConsumerRunningInfo)]
        group_strategy = next(
            (
                i.properties["allocateMessageQueueStrategy"]
                for i in reported
                if i.properties.get("allocateMessageQueueStrategy")
            ),
            strategy or "AVG",
        )
        planned: dict[str, list[MessageQueue]] | None = None
        dup_ids = {d.client_id for d in duplicates}
        members: list[GroupMember] = []
        for cid in sorted(by_id):
            conn, addresses, _ = by_id[cid]
            info = infos[cid]
            if isinstance(info, ConsumerRunningInfo):
                queues = tuple(sorted(info.mq_table))
                source: QueueSource = "running-info"
                error = None
                used = info.properties.get("allocateMessageQueueStrategy") or group_strategy
            else:
                if planned is None:
                    planned = await self._plan(group, group_strategy, subs, list(by_id))
                queues = tuple(planned.get(cid, ()))
                source, error, used = "plan", str(info), group_strategy
            members.append(
                GroupMember(
                    client_id=cid,
                    addresses=tuple(addresses),
                    language=str(conn.language or "?"),
                    version=conn.version,
                    queues=queues,
                    queues_source=source,
                    strategy=used,
                    duplicate=cid in dup_ids,
                    error=error,
                )
            )
        return GroupMembers(
            group,
            tuple(members),
            subscriptions=subs,
            message_model=str(first.message_model) if first.message_model is not None else None,
            consume_type=str(first.consume_type) if first.consume_type is not None else None,
            consume_from_where=str(first.consume_from_where)
            if first.consume_from_where is not None
            else None,
            duplicates=tuple(duplicates),
        )

    async def _plan(
        self, group: str, strategy_name: str, subs: Mapping[str, str], client_ids: Sequence[str]
    ) -> dict[str, list[MessageQueue]]:
        """Each client id's queues over the subscribed topics, as every client computes them."""
        try:
            strategy = get_strategy(strategy_name)
        except ConfigError:
            logger.warning("group %s uses strategy %s, unknown here; planning with AVG", group, strategy_name)
            strategy = get_strategy("AVG")
        out: dict[str, list[MessageQueue]] = {cid: [] for cid in client_ids}
        for topic in subs:
            route = await self._get_route(topic)
            if route is None:
                continue
            share = plan(strategy, group, subscribe_info_from_route(topic, route), client_ids)
            for cid, qs in share.items():
                out.setdefault(cid, []).extend(qs)
        return {cid: sorted(qs) for cid, qs in out.items()}

    async def group_progress(
        self, group: str, topic: str | None = None, *, members: GroupMembers | None = None
    ) -> GroupProgress:
        """Per queue: broker offset, committed offset, lag and owner, from every broker.

        ``members`` (a :meth:`group_members` answer the caller already has) gives the owners
        without asking the members again."""
        if topic is not None:
            route = await self.topic_route(topic)
            brokers = {
                bd.broker_name: bd.broker_addrs[MASTER_ID]
                for bd in route.broker_datas
                if bd.broker_name is not None and MASTER_ID in bd.broker_addrs
            }
        else:
            brokers = await self._group_brokers(group)
        table: dict[MessageQueue, tuple[int, int, int]] = {}
        tps = 0.0
        for addr in brokers.values():
            stats = await self._call(addr, calls.get_consume_stats(group, topic))
            tps += stats.consume_tps
            for mq, w in stats.offset_table.items():
                table[mq] = (w.broker_offset, w.consumer_offset, w.last_timestamp)
        if await self._get_route(retry_topic(group)) is None and (
            not table if topic is None else not await self.committed_offsets(group, topic)
        ):
            # never connected (no retry topic) and nothing committed: a typo, most likely
            raise UnknownGroupError(f"consumer group {group} is unknown to every broker")
        owners: dict[MessageQueue, str] = {}
        source: QueueSource | None = None
        if members is None:
            try:
                members = await self.group_members(group)
            except UnknownGroupError:
                members = GroupMembers(group, ())
        for m in members.members:
            for mq in m.queues:
                owners.setdefault(mq, m.client_id)
            source = "plan" if m.queues_source == "plan" or source == "plan" else "running-info"
        queues = tuple(
            QueueProgress(mq, b, c, last, owners.get(mq)) for mq, (b, c, last) in sorted(table.items())
        )
        return GroupProgress(group, queues, tps, source)

    async def committed_offsets(self, group: str, topic: str) -> dict[MessageQueue, int]:
        """The offsets ``group`` has committed for ``topic`` on the brokers of its route (only the
        queues it committed: GET_ALL_CONSUMER_OFFSET, unlike consume stats, tells "none" from 0)."""
        route = await self.topic_route(topic)
        out: dict[MessageQueue, int] = {}
        for bd in route.broker_datas:
            addr = bd.broker_addrs.get(MASTER_ID)
            if addr is None or bd.broker_name is None:
                continue
            table = (await self._call(addr, calls.get_all_consumer_offset())).offset_table
            for qid, offset in table.get(f"{topic}@{group}", {}).items():
                out[MessageQueue(topic, bd.broker_name, qid)] = offset
        return dict(sorted(out.items()))

    async def seed_new_group(self, group: str, topic: str, to: str | int) -> dict[MessageQueue, int] | None:
        """Commit start offsets for a group that has none for ``topic`` yet; ``None`` when it has some.

        ``to`` is ``"last"`` (each queue's max offset), ``"first"`` (min offset) or a time stamp
        (the broker's offset for that time). A RocketMQ broker answers 0 to a new group on a queue
        that still holds its first message, so a new consumer would start there whatever its
        consume-from-where says; committing first makes the choice hold (what ``mqadmin
        updateOffset`` would do by hand).
        """
        if await self.committed_offsets(group, topic):
            return None
        timestamp = parse_reset_target(to)
        route = await self.topic_route(topic)
        seeded: dict[MessageQueue, int] = {}
        for qd in route.queue_datas:
            addr = next(
                (
                    bd.broker_addrs.get(MASTER_ID)
                    for bd in route.broker_datas
                    if bd.broker_name == qd.broker_name
                ),
                None,
            )
            if addr is None or qd.broker_name is None:
                continue
            for qid in range(qd.read_queue_nums):
                mq = MessageQueue(topic, qd.broker_name, qid)
                if timestamp == _LAST:
                    offset = await self._call(addr, calls.get_max_offset(mq))
                elif timestamp == _FIRST:
                    offset = await self._call(addr, calls.get_min_offset(mq))
                else:
                    offset = await self._call(addr, calls.search_offset(mq, timestamp))
                await self._call(addr, calls.update_consumer_offset(group, mq, offset))
                seeded[mq] = offset
        return dict(sorted(seeded.items()))

    async def reset_offsets(self, group: str, topic: str, to: str | int) -> ResetResult:
        """Move the group's offsets of ``topic`` to a time stamp, ``"first"`` or ``"last"``
        (RocketMQ's ``resetOffsetByTime`` with force: online members reset and commit; for an
        offline group the broker commits the offsets itself)."""
        timestamp = parse_reset_target(to)
        route = await self.topic_route(topic)
        offsets: dict[MessageQueue, int] = {}
        for bd in route.broker_datas:
            addr = bd.broker_addrs.get(MASTER_ID)
            if addr is None:
                continue
            try:
                reset = await self.api.call(
                    addr, calls.invoke_broker_to_reset_offset(topic, group, timestamp)
                )
            except ConsumerNotOnlineError:
                # a RocketMQ broker leaves offline groups to the tool (resetOffsetByTimestampOld)
                offsets.update(await self._reset_offline(addr, group, topic, timestamp))
                continue
            except BrokerError as exc:
                if "not exist" in exc.remark:
                    raise UnknownGroupError(
                        f"consumer group {group} has no committed offsets for topic {topic} on broker "
                        f"{bd.broker_name} (running consumers commit theirs every 5 s)"
                    ) from None
                raise _refused(exc, f"reset offsets of {group} on {addr}") from None
            except RemotingConnectError as exc:
                raise RemotingConnectError(f"cannot reach broker {addr}: {_reason(exc)}") from exc
            offsets.update(reset)
        return ResetResult(group, topic, timestamp, offsets)

    async def _reset_offline(
        self, addr: str, group: str, topic: str, timestamp: int
    ) -> dict[MessageQueue, int]:
        """Commit the reset offsets of an offline group on one broker, queue by queue (what
        ``mqadmin`` does when a RocketMQ broker answers CONSUMER_NOT_ONLINE)."""
        stats = await self._call(addr, calls.get_consume_stats(group, topic))
        out: dict[MessageQueue, int] = {}
        for mq in sorted(stats.offset_table):
            if timestamp == _LAST:
                offset = await self._call(addr, calls.get_max_offset(mq))
            else:
                offset = await self._call(addr, calls.search_offset(mq, timestamp))
            await self._call(addr, calls.update_consumer_offset(group, mq, offset))
            out[mq] = offset
        return out

    # ================================================================== monitoring
    # Calls the dashboard and the exporter read (RocketMQ Dashboard's and rocketmq-exporter's
    # views), kept apart from the tools' calls above: brokers' runtime tables, every topic and
    # group config of a broker, who consumes a topic, producer connections, message look-ups.

    async def broker_runtime(self, addr: str) -> BrokerRuntime:
        """GET_BROKER_RUNTIME_INFO of the broker at ``addr``."""
        return BrokerRuntime(addr, await self._call(addr, calls.get_broker_runtime_info()))

    async def topic_configs(self, addr: str) -> dict[str, TopicConfig]:
        """Every topic the broker at ``addr`` holds, with its queue counts (GET_ALL_TOPIC_CONFIG)."""
        table = (await self._call(addr, calls.get_all_topic_config())).topic_config_table
        return dict(sorted(table.items()))

    async def group_configs(self, addr: str) -> dict[str, SubscriptionGroupConfig]:
        """Every consumer group the broker at ``addr`` has a config for (a broker makes one when
        a group first connects), GET_ALL_SUBSCRIPTIONGROUP_CONFIG."""
        wrapper = await self._call(addr, calls.get_all_subscription_group_config())
        return dict(sorted(wrapper.subscription_group_table.items()))

    async def consumer_groups(self) -> list[str]:
        """Every consumer group any master broker knows, sorted (built-in groups included)."""
        names: set[str] = set()
        for addr in (await self.master_addrs()).values():
            names.update(await self.group_configs(addr))
        return sorted(names)

    async def topic_consumers(self, topic: str) -> list[str]:
        """The consumer groups the brokers of ``topic``'s route see consuming it (online, or with
        committed offsets), sorted (QUERY_TOPIC_CONSUME_BY_WHO, as ``mqadmin topicStatus`` shows)."""
        route = await self.topic_route(topic)
        groups: set[str] = set()
        for bd in route.broker_datas:
            addr = bd.broker_addrs.get(MASTER_ID)
            if addr is not None:
                groups.update(await self._call(addr, calls.query_topic_consume_by_who(topic)))
        return sorted(groups)

    async def producer_connections(self, group: str) -> dict[str, ProducerConnection]:
        """GET_PRODUCER_CONNECTION_LIST from every master that has the producer group online, by address."""
        out: dict[str, ProducerConnection] = {}
        for addr in (await self.master_addrs()).values():
            found = await self._call(addr, calls.get_producer_connection_list(group))
            if found is not None:
                out[addr] = found
        return out

    async def query_message(
        self,
        topic: str,
        key: str,
        begin: int | None = None,
        end: int | None = None,
        max_num: int = 64,
    ) -> list[MessageExt]:
        """Messages of ``topic`` with ``key`` among their keys, stored between ``begin`` and
        ``end`` (epoch ms; default: any time), from every broker of the topic's route, sorted by
        store time (QUERY_MESSAGE through the brokers' message index, as ``mqadmin
        queryMsgByKey`` and Java's ``MQAdminImpl.queryMessage`` ask it). At most ``max_num``
        come from each broker, the newest (a broker answers at most 64). None found is ``[]``.
        The index keeps store times to the second (as RocketMQ's): a message counts as stored
        at the start of its second, so a range that begins within that second misses it; give
        ranges a second to spare."""
        check_topic(topic)
        if not key or not key.strip():
            raise ConfigError("a query needs a key")
        if max_num < 1:
            raise ConfigError(f"max_num must be positive, got {max_num}")
        begin_ms = 0 if begin is None else begin
        end_ms = _JAVA_LONG_MAX if end is None else end
        if begin_ms < 0 or end_ms < begin_ms:
            raise ConfigError(f"the time range is empty: begin {begin_ms} is after end {end_ms}")
        return await self._query(topic, key, unique=False, max_num=max_num, begin_ms=begin_ms, end_ms=end_ms)

    async def view_message(self, msg_id: str, *, topic: str | None = None) -> list[MessageExt]:
        """The stored message(s) with ``msg_id``, as ``mqadmin queryMsgById`` finds them:

        * an **offset message id** (the broker's: its address and commit-log offset) is read at
          that broker with VIEW_MESSAGE_BY_ID, when the broker is one of the cluster's;
        * a **producer's unique id** (``UNIQ_KEY``, the ``msg_id`` a send returns) is looked up
          with QUERY_MESSAGE on the unique key (``_UNIQUE_KEY_QUERY``, from a second before the
          time the id holds) in ``topic``, on every broker of its route; without ``topic``, in
          every topic of every master broker but RocketMQ's own (a retry or dead-letter topic
          is searched: a message consumed with failures is stored there again, same id).

        Both ids are 32 hex digits for IPv4 hosts, so an id is tried both ways. The result is
        every stored copy found, earliest first (one, usually; Java's ``viewMessage`` returns
        the earliest); ``[]`` when none is."""
        msg_id = msg_id.strip().upper()
        if len(msg_id) not in (32, 56) or any(c not in "0123456789ABCDEF" for c in msg_id):
            raise ConfigError(
                f"{msg_id!r} is not a message id: an offset message id or a producer's message id is "
                "32 hex digits (56 for IPv6 hosts)"
            )
        if topic is not None:
            check_topic(topic)
        found = await self._view_offset_id(msg_id)
        if found is not None:
            return [found]
        try:
            begin = parse_uniq_id(msg_id).approx_timestamp(int(time.time() * 1000)) - 1000
        except RocketQError:
            return []  # neither an offset id of this cluster nor a producer's id
        if topic is not None:
            return await self._query(topic, msg_id, unique=True, begin_ms=max(begin, 0))
        return await self._query_everywhere(msg_id, max(begin, 0))

    async def _view_offset_id(self, msg_id: str) -> MessageExt | None:
        """The message an offset id names, when it names one of the cluster's brokers."""
        try:
            host, offset = parse_offset_msg_id(msg_id)
        except RocketQError:
            return None
        addr = str(host)
        known = {
            a
            for bd in (await self.cluster_info()).broker_addr_table.values()
            for a in bd.broker_addrs.values()
        }
        if addr not in known:
            return None
        try:
            found = await self._call(addr, calls.view_message_by_id(offset))
        except (BrokerError, RemoteProtocolError):
            return None  # no record starts there: not an offset id after all
        return found if found.offset_msg_id == msg_id else None

    async def _query_everywhere(self, msg_id: str, begin_ms: int) -> list[MessageExt]:
        """QUERY_MESSAGE of a unique id in every user, retry and dead-letter topic of every master
        (topics from each broker's GET_ALL_TOPIC_CONFIG; 16 queries in flight)."""
        limit = asyncio.Semaphore(16)

        async def ask(addr: str, topic: str) -> list[MessageExt]:
            async with limit:
                call = calls.query_message(topic, msg_id, unique=True, begin_ms=begin_ms)
                return await self._call(addr, call)

        asks = []
        for addr in (await self.master_addrs()).values():
            for topic in await self.topic_configs(addr):
                if not is_system_topic(topic) or is_retry_or_dlq_topic(topic):
                    asks.append(ask(addr, topic))
        found = [m for batch in await asyncio.gather(*asks) for m in batch]
        return sorted(found, key=lambda m: (m.store_timestamp, m.topic, m.queue_id, m.queue_offset))

    async def _query(
        self,
        topic: str,
        key: str,
        *,
        unique: bool,
        max_num: int = 32,
        begin_ms: int = 0,
        end_ms: int = _JAVA_LONG_MAX,
    ) -> list[MessageExt]:
        route = await self.topic_route(topic)
        found: list[MessageExt] = []
        for bd in route.broker_datas:
            addr = bd.broker_addrs.get(MASTER_ID)
            if addr is not None:
                call = calls.query_message(
                    topic, key, unique=unique, max_num=max_num, begin_ms=begin_ms, end_ms=end_ms
                )
                found.extend(await self._call(addr, call))
        return sorted(found, key=lambda m: (m.store_timestamp, m.queue_id, m.queue_offset))

    async def message_trace(
        self, msg_id: str, *, topic: str | None = None, trace_topic: str = RMQ_SYS_TRACE_TOPIC
    ) -> MessageTrace:
        """The trace of the message ``msg_id`` (RocketMQ dashboard's message trace): the records
        traced clients published about it to ``trace_topic`` - sent (by which producer group,
        to which broker, how long it took), transaction ends, consumed (by which group and
        client, when, how long, how it ended, which retry) - found through the index (trace
        messages are keyed by the ids they trace) and decoded from RocketMQ's trace format
        (:mod:`rocketq.protocol.trace`); and the message itself as stored, when it can be read
        (``topic`` helps for a producer's id: see :meth:`view_message`). An offset id is turned
        into the producer's id the records name. No record is an empty ``events``."""
        stored = await self.view_message(msg_id, topic=topic)
        message = stored[0] if stored else None
        key = message.msg_id if message is not None else msg_id.strip().upper()
        try:
            traces = await self._query(trace_topic, key, unique=False, max_num=64)
        except UnknownTopicError:
            traces = []  # nothing was ever traced in this cluster
        records: list[tuple[TraceContext, str]] = []
        for t in traces:
            client = t.properties.get(CLIENT_ID_PROPERTY) or t.born_host.ip
            try:
                contexts = decode_trace(t.body)
            except RemoteProtocolError as exc:
                logger.warning("trace message %s is not readable: %s", t.msg_id, exc)
                continue
            records.extend((ctx, client) for ctx in contexts)
        events = trace_events(records, key)
        if message is None and topic is None:
            sent = next((e for e in events if e.kind == "sent" and e.topic), None)
            if sent is not None:  # the records name the topic: read the message there
                found = await self.view_message(key, topic=sent.topic)
                message = found[0] if found else None
        return MessageTrace(key, trace_topic, message, tuple(events))

    async def check_subscription(self, group: str, topic: str, selector: MessageSelector | str) -> None:
        """Ask every master of ``topic``'s route whether it can serve ``group``'s subscription
        (CHECK_CLIENT_CONFIG, as a consumer asks at start): raises the refusal (SQL92 on a
        broker without ``enablePropertyFilter``, or an expression the broker cannot parse), so a
        tool can say so before it changes anything."""
        check_group(group)
        sub = subscription_of(topic, selector, sub_version=int(time.time() * 1000))
        if sub.expression_type in (None, "", "TAG"):
            return
        route = await self.topic_route(topic)
        for bd in route.broker_datas:
            addr = bd.broker_addrs.get(MASTER_ID)
            if addr is not None:
                await self._call(addr, calls.check_client_config(group, f"rocketq-admin@{os.getpid()}", sub))

    async def read_queue(self, mq: MessageQueue, offset: int, max_nums: int = 32) -> QueueRead:
        """Up to ``max_nums`` messages of queue ``mq`` from ``offset`` (a pull as the tools' group
        ``TOOLS_CONSUMER``, which commits nothing), with where to read next and the queue's bounds."""
        route = await self.topic_route(mq.topic)
        addr = next(
            (bd.broker_addrs.get(MASTER_ID) for bd in route.broker_datas if bd.broker_name == mq.broker_name),
            None,
        )
        if addr is None:
            raise ConfigError(f"topic {mq.topic} has no queue on broker {mq.broker_name}")
        header = PullMessageRequestHeader(
            consumer_group=TOOLS_CONSUMER_GROUP,
            topic=mq.topic,
            queue_id=mq.queue_id,
            queue_offset=offset,
            max_msg_nums=max_nums,
            sys_flag=int(PullSysFlag.SUBSCRIPTION),
            commit_offset=0,
            suspend_timeout_millis=0,
            subscription="*",
            sub_version=0,
            expression_type="TAG",
        )
        result = await self._call(addr, calls.pull_message(header))
        messages = decode_messages(result.body) if result.status is PullStatus.FOUND else []
        return QueueRead(
            tuple(messages),
            result.next_begin_offset,
            result.min_offset,
            result.max_offset,
            in_range=result.status is not PullStatus.OFFSET_ILLEGAL and offset >= result.min_offset,
        )

    async def message_at(self, mq: MessageQueue, offset: int) -> MessageExt | None:
        """The message at ``offset`` of queue ``mq`` (a pull of one message); ``None`` past the
        queue's last message. An offset below the queue's first message raises
        :class:`~rocketq.errors.ConfigError` with the queue's bounds."""
        read = await self.read_queue(mq, offset, 1)
        if read.messages:
            return read.messages[0]
        if not read.in_range:
            raise ConfigError(
                f"offset {offset} is outside queue {mq.short}: it holds offsets "
                f"{read.min_offset}..{max(read.max_offset - 1, read.min_offset)}"
            )
        return None


def _reason(exc: BaseException) -> str:
    text = str(exc)
    _, sep, rest = text.partition(": ")
    return rest if sep else text


def _check_topic_args(topic: str, read: int, write: int, perm: int) -> None:
    if not topic:
        raise ConfigError("a topic needs a name")
    if read < 0 or write < 0 or read > 1024 or write > 1024:
        raise ConfigError(f"queue counts must be 0..1024, got read {read}, write {write}")
    if perm not in (2, 4, 6):
        raise ConfigError(f"perm must be 2 (write), 4 (read) or 6 (read and write), got {perm}")


# ------------------------------------------------------------------------------------ the facade


class Admin:
    """The synchronous facade of :class:`AsyncAdmin`: the same calls, blocking, on a loop thread."""

    def __init__(self, namesrv: str | None = None, *, timeout: float = 5.0) -> None:
        self.core = AsyncAdmin(namesrv, timeout=timeout)
        self._thread: LoopThread | None = None

    @property
    def namesrv_addrs(self) -> tuple[str, ...]:
        return self.core.namesrv_addrs

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._thread is None:
            self._thread = LoopThread("rocketq-admin", use_uvloop=False)
        return self._thread.call(coro)

    def close(self) -> None:
        if self._thread is not None:
            try:
                self._thread.call(self.core.close(), timeout=10.0)
            finally:
                self._thread.stop()
                self._thread = None

    def __enter__(self) -> Admin:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def cluster_info(self) -> ClusterInfo:
        return self._call(self.core.cluster_info())

    def master_addrs(self, cluster: str | None = None) -> dict[str, str]:
        return self._call(self.core.master_addrs(cluster))

    def topic_list(self) -> list[str]:
        return self._call(self.core.topic_list())

    def topic_route(self, topic: str) -> TopicRouteData:
        return self._call(self.core.topic_route(topic))

    def topic_stats(self, topic: str) -> TopicStats:
        return self._call(self.core.topic_stats(topic))

    def order_conf(self, topic: str) -> str | None:
        return self._call(self.core.order_conf(topic))

    def create_topic(
        self,
        topic: str,
        *,
        queues: int | None = None,
        read_queues: int | None = None,
        write_queues: int | None = None,
        perm: int = 6,
        order: bool = False,
        broker: str | None = None,
        cluster: str | None = None,
        wait: float = 5.0,
    ) -> dict[str, str]:
        """See :meth:`AsyncAdmin.create_topic`."""
        return self._call(
            self.core.create_topic(
                topic, queues=queues, read_queues=read_queues, write_queues=write_queues, perm=perm,
                order=order, broker=broker, cluster=cluster, wait=wait,
            )
        )  # fmt: skip

    def update_topic(
        self,
        topic: str,
        *,
        queues: int | None = None,
        read_queues: int | None = None,
        write_queues: int | None = None,
        perm: int | None = None,
        order: bool | None = None,
        broker: str | None = None,
        cluster: str | None = None,
        wait: float = 5.0,
    ) -> dict[str, str]:
        """See :meth:`AsyncAdmin.update_topic`."""
        return self._call(
            self.core.update_topic(
                topic, queues=queues, read_queues=read_queues, write_queues=write_queues, perm=perm,
                order=order, broker=broker, cluster=cluster, wait=wait,
            )
        )  # fmt: skip

    def delete_topic(self, topic: str, *, cluster: str | None = None) -> dict[str, str]:
        return self._call(self.core.delete_topic(topic, cluster=cluster))

    def consumer_connection(self, group: str) -> dict[str, ConsumerConnection]:
        return self._call(self.core.consumer_connection(group))

    def running_info(self, group: str, client_id: str) -> ConsumerRunningInfo:
        return self._call(self.core.running_info(group, client_id))

    def duplicate_client_ids(self, group: str | None = None) -> list[DuplicateClientId]:
        return self._call(self.core.duplicate_client_ids(group))

    def group_members(self, group: str, *, strategy: str | None = None) -> GroupMembers:
        return self._call(self.core.group_members(group, strategy=strategy))

    def group_progress(
        self, group: str, topic: str | None = None, *, members: GroupMembers | None = None
    ) -> GroupProgress:
        return self._call(self.core.group_progress(group, topic, members=members))

    def reset_offsets(self, group: str, topic: str, to: str | int) -> ResetResult:
        return self._call(self.core.reset_offsets(group, topic, to))

    def committed_offsets(self, group: str, topic: str) -> dict[MessageQueue, int]:
        return self._call(self.core.committed_offsets(group, topic))

    def seed_new_group(self, group: str, topic: str, to: str | int) -> dict[MessageQueue, int] | None:
        return self._call(self.core.seed_new_group(group, topic, to))

    # ================================================================== monitoring
    # (see the section of AsyncAdmin of the same name)

    def broker_runtime(self, addr: str) -> BrokerRuntime:
        return self._call(self.core.broker_runtime(addr))

    def topic_configs(self, addr: str) -> dict[str, TopicConfig]:
        return self._call(self.core.topic_configs(addr))

    def group_configs(self, addr: str) -> dict[str, SubscriptionGroupConfig]:
        return self._call(self.core.group_configs(addr))

    def consumer_groups(self) -> list[str]:
        return self._call(self.core.consumer_groups())

    def topic_consumers(self, topic: str) -> list[str]:
        return self._call(self.core.topic_consumers(topic))

    def producer_connections(self, group: str) -> dict[str, ProducerConnection]:
        return self._call(self.core.producer_connections(group))

    def query_message(
        self, topic: str, key: str, begin: int | None = None, end: int | None = None, max_num: int = 64
    ) -> list[MessageExt]:
        """See :meth:`AsyncAdmin.query_message`."""
        return self._call(self.core.query_message(topic, key, begin, end, max_num))

    def view_message(self, msg_id: str, *, topic: str | None = None) -> list[MessageExt]:
        """See :meth:`AsyncAdmin.view_message`."""
        return self._call(self.core.view_message(msg_id, topic=topic))

    def message_trace(
        self, msg_id: str, *, topic: str | None = None, trace_topic: str = RMQ_SYS_TRACE_TOPIC
    ) -> MessageTrace:
        """See :meth:`AsyncAdmin.message_trace`."""
        return self._call(self.core.message_trace(msg_id, topic=topic, trace_topic=trace_topic))

    def check_subscription(self, group: str, topic: str, selector: MessageSelector | str) -> None:
        """See :meth:`AsyncAdmin.check_subscription`."""
        self._call(self.core.check_subscription(group, topic, selector))

    def message_at(self, mq: MessageQueue, offset: int) -> MessageExt | None:
        return self._call(self.core.message_at(mq, offset))

    def read_queue(self, mq: MessageQueue, offset: int, max_nums: int = 32) -> QueueRead:
        return self._call(self.core.read_queue(mq, offset, max_nums))
