"""What the dashboard and the exporter read: broker runtime, queue reads, messages as dicts, and a
message's trace rebuilt from the trace topic's records."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from rocketq.protocol.message import MessageExt
from rocketq.protocol.trace import (
    ConsumeReturnType,
    TraceContext,
    TraceType,
)

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

    def first_number(self, key: str) -> float | None:
        """The first number of ``key``'s value (RocketMQ's ``"10s 60s 600s"`` rates give the
        10-second one); ``None`` when the broker does not report it or it is not a number."""
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
        return self.first_number("putTps")

    @property
    def get_tps(self) -> float | None:
        """Messages sent to consumers per second (``getTransferedTps``)."""
        return self.first_number("getTransferedTps")

    @property
    def disk_ratio(self) -> float | None:
        """Fraction of the commit log's disk in use (``commitLogDiskRatio``, 0..1)."""
        return self.first_number("commitLogDiskRatio")

    @property
    def boot_ms(self) -> int | None:
        value = self.first_number("bootTimestamp")
        return int(value) if value is not None else None

    @property
    def commit_log_max_offset(self) -> int | None:
        """The commit log's end (``commitLogMaxOffset``)."""
        value = self.first_number("commitLogMaxOffset")
        return int(value) if value is not None else None

    @property
    def latest_message_ms(self) -> int | None:
        """Store time of the newest whole message (rocketq's ``latestMessageTimeStamp``);
        ``None`` when the broker does not say (RocketMQ's) or holds none."""
        value = self.first_number("latestMessageTimeStamp")
        return int(value) if value is not None and value > 0 else None

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
class SlaveLag:
    """How far a slave is behind its master, from both brokers' runtime tables read at once.

    ``lag_bytes`` is the master's commit-log end less the slave's (rocketmq-exporter's
    ``rocketmq_broker_commitlog_diff``); ``lag_seconds`` the master's newest message's store time
    less the slave's newest (0 when the slave has every byte; ``None`` when a broker does not say,
    RocketMQ's, or the slave holds no whole message yet): how far back in time the slave's copy
    stands. Both ``None``, and ``error`` set, when a broker did not answer.

    >>> m = BrokerRuntime("m:1", {"commitLogMaxOffset": "900", "latestMessageTimeStamp": "5000"})
    >>> s = BrokerRuntime("s:1", {"commitLogMaxOffset": "400", "latestMessageTimeStamp": "3500"})
    >>> lag = SlaveLag.between("broker-a", 1, m, s)
    >>> (lag.lag_bytes, lag.lag_seconds)
    (500, 1.5)
    """

    broker_name: str
    broker_id: int
    addr: str
    master_addr: str | None
    lag_bytes: int | None
    lag_seconds: float | None
    error: str | None = None

    @classmethod
    def between(cls, name: str, broker_id: int, master: BrokerRuntime, slave: BrokerRuntime) -> SlaveLag:
        """The lag of ``slave`` behind ``master``, from their runtime tables."""
        m_end, s_end = master.commit_log_max_offset, slave.commit_log_max_offset
        lag_bytes = None if m_end is None or s_end is None else max(m_end - s_end, 0)
        m_ms, s_ms = master.latest_message_ms, slave.latest_message_ms
        if lag_bytes == 0:
            seconds: float | None = 0.0
        elif m_ms is None or s_ms is None:
            seconds = None
        else:
            seconds = max(m_ms - s_ms, 0) / 1000
        return cls(name, broker_id, slave.addr, master.addr, lag_bytes, seconds)

    def to_dict(self) -> dict[str, Any]:
        return {
            "broker_name": self.broker_name,
            "broker_id": self.broker_id,
            "addr": self.addr,
            "master_addr": self.master_addr,
            "lag_bytes": self.lag_bytes,
            "lag_seconds": self.lag_seconds,
            "error": self.error,
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
