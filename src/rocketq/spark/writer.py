"""Writers of the ``rocketmq`` data source: a DataFrame's rows become messages.

Columns (others are ignored): ``body`` (required; binary or string, strings are sent as UTF-8),
``topic`` (string; else the ``topic`` option), ``tags`` (string), ``keys`` (string, several keys
separated by spaces), ``properties`` (map<string,string> of user properties). A row whose topic
is null (and no ``topic`` option) or whose body is null fails the task with a clear error.

Each Arrow batch Spark hands a task becomes ``SEND_BATCH_MESSAGE`` records column by column
(:func:`encode_rows`: Arrow kernels join each row's properties and its header, body and
properties into one buffer; no Python object per row). Every message gets a producer unique id
(``UNIQ_KEY``, the ``msg_id`` a read returns) and ``WAIT=true``, as a Java producer's batch does.
The records are cut into batches of up to ``sendBatchSize`` messages and about
``sendBatchBytes`` bytes as the broker will store them (a larger message goes alone; the
broker's ``maxMessageSize`` refuses what it cannot take), each batch to the next writable queue
of the topic in turn, taken broker by broker (the first queue of every broker, then the second of
every broker, ...: consecutive batches go to different brokers, see :func:`across_brokers`),
starting at a queue chosen by the task's partition id so that tasks spread over the brokers and
queues, with up to :data:`SENDS_IN_FLIGHT` batches sent and not yet answered. A refused
send fails the task with the broker's error (``CODE: <code> DESC: <remark>``); retriable
refusals and transport failures are tried again on the next queue, twice, as RocketMQ's producer
does (a timed-out send may then be stored twice: delivery is at least once). ``write()`` returns
a :class:`SendCommitMessage`.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import BinaryType, MapType, StringType, StructType

from rocketq.client.blocking import BlockingClient, Pending, not_confirmed
from rocketq.client.ids import next_uniq_ids
from rocketq.errors import BrokerError, ConfigError, RocketQError
from rocketq.models import QueueRoute
from rocketq.protocol.calls import SendResponse
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.message import BATCH_RECORD_OVERHEAD, MAX_PROPERTIES_LENGTH
from rocketq.protocol.properties import MessageConst

if TYPE_CHECKING:
    from rocketq.spark.source import SourceOptions

__all__ = [
    "RETRIES",
    "SENDS_IN_FLIGHT",
    "EncodedRows",
    "RocketMQStreamWriter",
    "RocketMQWriter",
    "SendCommitMessage",
    "check_write_schema",
    "encode_rows",
    "send_rows",
]

logger = logging.getLogger(__name__)

RETRIES: Final = 2
"""Extra attempts for a send that failed retriably (Java's ``retryTimesWhenSendFailed``)."""
SENDS_IN_FLIGHT: Final = 4
"""Batches a task has sent and not yet had answered, per topic (pipelined on one connection)."""
_STORED_EXTRA: Final = 160
"""Bytes a stored record takes besides its batch record and topic (fixed fields, hosts, the
``WAIT`` and ``CLUSTER`` properties the broker appends), rounded up: batches are sized by what
the broker stores, which its ``maxMessageSize`` bounds."""


@dataclass
class SendCommitMessage(WriterCommitMessage):
    """What one write task sent: message count and, per ``"broker:queue"``, how many."""

    messages: int = 0
    batches: int = 0
    per_queue: dict[str, int] = field(default_factory=dict)


def check_write_schema(schema: StructType, options: SourceOptions) -> None:
    """Refuse a DataFrame the writer cannot send, naming the column."""
    fields = {f.name: f.dataType for f in schema.fields}
    body = fields.get("body")
    if body is None:
        raise ConfigError("writing to rocketmq needs a 'body' column (binary or string)")
    if not isinstance(body, BinaryType | StringType):
        raise ConfigError(f"column 'body' must be binary or string, not {body.simpleString()}")
    for name in ("topic", "tags", "keys"):
        if name in fields and not isinstance(fields[name], StringType):
            raise ConfigError(f"column {name!r} must be a string, not {fields[name].simpleString()}")
    props = fields.get("properties")
    if props is not None and not (
        isinstance(props, MapType)
        and isinstance(props.keyType, StringType)
        and isinstance(props.valueType, StringType)
    ):
        raise ConfigError(f"column 'properties' must be map<string,string>, not {props.simpleString()}")
    if "topic" not in fields and not options.topics:
        raise ConfigError("writing to rocketmq needs a 'topic' column or the 'topic' option")


def _string(array: pa.Array) -> pa.Array:
    return array.cast(pa.string()) if pa.types.is_large_string(array.type) else array


def _binary(array: pa.Array) -> pa.Array:
    """A body column as binary (strings are their UTF-8 bytes already: a cast, no copy)."""
    if pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type):
        array = array.cast(pa.binary() if pa.types.is_large_binary(array.type) else pa.string())
    return array.cast(pa.binary()) if pa.types.is_string(array.type) else array


def _fixed(data: np.ndarray, width: int) -> pa.Array:
    """The rows of a C-contiguous numpy array of ``width`` bytes each, as a binary array."""
    raw = pa.py_buffer(np.ascontiguousarray(data).tobytes())
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), len(data), [None, raw]).cast(pa.binary())


def _property(name: str, values: pa.Array) -> pa.Array:
    """``name\x01value\x02`` per row, empty where the value is null (the property is left out)."""
    return pc.fill_null(pc.binary_join_element_wise(name + "\x01", _string(values), "\x02", ""), "")


def _user_properties(props: pa.MapArray, rows: int) -> pa.Array:
    """Each row's user properties as ``name\x01value\x02...`` (pairs with a null value left out,
    as are null maps)."""
    entries_type = props.type.key_field, props.type.item_field
    lists = pa.Array.from_buffers(
        pa.list_(pa.struct(list(entries_type))),
        len(props),
        props.buffers()[:2],
        props.null_count,
        props.offset,
        [props.values],
    )
    names, values = pc.list_flatten(lists).flatten()  # null maps give no entries
    counts = pc.fill_null(pc.list_value_length(lists), 0).to_numpy(zero_copy_only=False)
    pairs = pc.binary_join_element_wise(_string(names), "\x01", _string(values), "\x02", "")
    keep = pairs.is_valid().to_numpy(zero_copy_only=False)
    per_row = np.bincount(np.repeat(np.arange(rows), counts)[keep], minlength=rows)
    offsets = np.concatenate(([0], np.cumsum(per_row))).astype(np.int32)
    return pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets), pairs.filter(pa.array(keep))), "")


_HEX4: np.ndarray | None = None


def _ids(rows: int) -> pa.Array:
    """``rows`` new unique ids (``UNIQ_KEY``), formatted in bulk."""
    global _HEX4
    if _HEX4 is None:
        _HEX4 = np.frombuffer("".join(f"{i:04X}" for i in range(1 << 16)).encode(), dtype=np.uint8).reshape(
            -1, 4
        )
    head, counters = next_uniq_ids(rows)
    text = np.empty((rows, len(head) + 4), dtype=np.uint8)
    text[:, : len(head)] = np.frombuffer(head.encode(), dtype=np.uint8)
    text[:, len(head) :] = _HEX4[np.array(counters, dtype=np.int64)]
    return _fixed(text, len(head) + 4)


@dataclass
class EncodedRows:
    """The ``SEND_BATCH_MESSAGE`` records of some rows of one topic, back to back (the layout of
    :func:`~rocketq.protocol.message.encode_batch`): record ``i`` is
    ``data[ends[i - 1]:ends[i]]`` (``ends[-1]`` = 0)."""

    topic: str
    data: pa.Buffer
    ends: np.ndarray


def encode_rows(batch: pa.RecordBatch, default_topic: str | None) -> list[EncodedRows]:
    """The rows of ``batch`` as batch records, per topic, built column-wise with Arrow kernels:
    per row ``TAGS``, ``KEYS``, ``WAIT=true``, the user ``properties``, then a new ``UNIQ_KEY``.

    A null topic with no ``default_topic``, a null body or properties over 32767 bytes raise
    :class:`~rocketq.errors.ConfigError` naming the problem.
    """
    names = batch.schema.names
    rows = batch.num_rows
    if rows == 0:
        return []
    if "topic" in names:
        topics = _string(batch.column("topic"))
        if default_topic is not None:
            topics = pc.fill_null(topics, default_topic)
        if topics.null_count:
            raise ConfigError("a row has a null 'topic' and no 'topic' option is set")
        distinct = pc.unique(topics).to_pylist()
    elif default_topic is None:
        raise ConfigError("a row has a null 'topic' and no 'topic' option is set")
    else:
        distinct = [default_topic]
    out: list[EncodedRows] = []
    for topic in distinct:
        part = batch if len(distinct) == 1 else batch.filter(pc.equal(topics, topic))
        out.append(_encode_topic(part, str(topic)))
    return out


def _encode_topic(batch: pa.RecordBatch, topic: str) -> EncodedRows:
    names = batch.schema.names
    rows = batch.num_rows
    body = _binary(batch.column("body"))
    if body.null_count:
        raise ConfigError(f"a row for topic {topic!r} has a null 'body'")
    parts: list[pa.Array | str] = []
    if "tags" in names:
        parts.append(_property(MessageConst.TAGS, batch.column("tags")))
    if "keys" in names:
        parts.append(_property(MessageConst.KEYS, batch.column("keys")))
    parts.append(f"{MessageConst.WAIT}\x01true\x02")
    if "properties" in names:
        parts.append(_user_properties(batch.column("properties"), rows))
    parts.append(f"{MessageConst.UNIQ_KEY}\x01")
    parts.append(_ids(rows))
    props = pc.binary_join_element_wise(
        *[pa.scalar(p.encode(), pa.binary()) if isinstance(p, str) else p.cast(pa.binary()) for p in parts],
        b"",
    )
    props_len = pc.binary_length(props).to_numpy().astype(np.int64)
    longest = int(props_len.max())
    if longest > MAX_PROPERTIES_LENGTH:
        raise ConfigError(
            f"a row for topic {topic!r} has properties of {longest} bytes, "
            f"at most {MAX_PROPERTIES_LENGTH} fit"
        )
    body_len = pc.binary_length(body).to_numpy(zero_copy_only=False).astype(np.int64)
    head = np.zeros((rows, 5), dtype=">i4")
    head[:, 0] = BATCH_RECORD_OVERHEAD + body_len + props_len  # total; magic, CRC, flag stay 0
    head[:, 4] = body_len
    records = pc.binary_join_element_wise(
        _fixed(head, 20), body, _fixed(props_len.astype(">i2"), 2), props, b""
    )
    offsets = np.frombuffer(records.buffers()[1], dtype=np.int32)[records.offset : records.offset + rows + 1]
    base = int(offsets[0])
    data = records.buffers()[2].slice(base, int(offsets[-1]) - base)
    return EncodedRows(topic, data, (offsets[1:] - base).astype(np.int64))


@dataclass
class _InFlight:
    queue: QueueRoute
    pending: Pending[SendResponse]
    body: bytes
    count: int
    attempt: int


def across_brokers(queues: Sequence[QueueRoute]) -> list[QueueRoute]:
    """``queues`` (a route's order: broker by broker) reordered to take one queue of each broker
    in turn, so that a task sending a few batches, and tasks starting at neighbouring indexes,
    land on different brokers rather than on the first broker's queues.

    >>> from rocketq.models import MessageQueue
    >>> qs = [QueueRoute(MessageQueue("T", b, i), "") for b in ("a", "b") for i in range(3)]
    >>> [q.queue.short for q in across_brokers(qs)]
    ['a:0', 'b:0', 'a:1', 'b:1', 'a:2', 'b:2']
    """
    by_broker: dict[str, list[QueueRoute]] = {}
    for q in queues:
        by_broker.setdefault(q.queue.broker_name, []).append(q)
    rounds = max((len(qs) for qs in by_broker.values()), default=0)
    return [qs[i] for i in range(rounds) for qs in by_broker.values() if i < len(qs)]


class _TopicSender:
    """Batches of one topic, round-robin over its writable queues, up to :data:`SENDS_IN_FLIGHT`
    of them sent and not yet answered."""

    def __init__(
        self, io: BlockingClient, topic: str, options: SourceOptions, first: int, stats: SendCommitMessage
    ) -> None:
        self.io = io
        self.topic = topic
        self.options = options
        queues, self.auto_create = io.write_queues(topic)
        self.queues = across_brokers(queues)
        if not self.queues:
            raise RocketQError(f"topic {topic!r} has no writable queue")
        self.index = first
        self.stats = stats
        self.inflight: deque[_InFlight] = deque()
        # what a stored record adds to its batch record: the fixed fields and hosts, the topic,
        # and the properties the broker appends (WAIT, CLUSTER); rounded up
        self.extra = _STORED_EXTRA + len(topic.encode())

    def send_rows(self, rows: EncodedRows) -> None:
        """Send ``rows`` in batches of at most ``sendBatchSize`` records and about
        ``sendBatchBytes`` bytes once stored (a record larger than that goes alone)."""
        ends = rows.ends
        n = len(ends)
        most_bytes = self.options.send_batch_bytes
        most = self.options.send_batch_size
        stored = ends + self.extra * np.arange(1, n + 1, dtype=np.int64)  # cumulative
        a = 0
        while a < n:
            before = int(stored[a - 1]) if a else 0
            b = int(np.searchsorted(stored, before + most_bytes, side="right"))
            b = max(a + 1, min(b, a + most, n))
            begin = int(ends[a - 1]) if a else 0
            self.send(rows.data.slice(begin, int(ends[b - 1]) - begin).to_pybytes(), b - a)
            a = b

    def send(self, body: bytes, count: int) -> None:
        """Send one encoded batch of ``count`` records, once fewer than the most are in flight."""
        while self.inflight and (len(self.inflight) >= SENDS_IN_FLIGHT or self.auto_create):
            self._complete_oldest()
        self._start(body, count, 0)

    def _next_queue(self) -> QueueRoute:
        q = self.queues[self.index % len(self.queues)]
        self.index += 1
        return q

    def _start(self, body: bytes, count: int, attempt: int) -> None:
        q = self._next_queue()
        call = BlockingClient.batch_call(q, body, producer_group=self.options.producer_group)
        try:
            pending = self.io.start(q.addr, call)
        except RocketQError as exc:
            exc.add_note(f"{call.what} at {q.addr}")
            self._failed(exc, q, body, count, attempt)
            return
        self.inflight.append(_InFlight(q, pending, body, count, attempt))

    def _failed(self, exc: RocketQError, q: QueueRoute, body: bytes, count: int, attempt: int) -> None:
        if self.auto_create:
            exc.add_note("(the topic was to be auto-created from TBW102's route)")
        if not exc.retriable or attempt >= RETRIES:
            raise exc
        logger.warning("send to %s failed (%s); trying the next queue", q.queue, exc)
        self._start(body, count, attempt + 1)

    def _complete_oldest(self) -> None:
        f = self.inflight.popleft()
        try:
            answer = self.io.finish(f.pending)
        except BrokerError as exc:
            self._failed(exc, f.queue, f.body, f.count, f.attempt)
            return
        except RocketQError as exc:
            exc.add_note(f"{f.pending.call.what} at {f.queue.addr}")
            self._failed(exc, f.queue, f.body, f.count, f.attempt)
            return
        if answer.code != ResponseCode.SUCCESS:  # stored, but not flushed or replicated in time
            raise not_confirmed(answer.code, f.pending.call.what, f.queue.addr)
        key = f.queue.queue.short
        self.stats.per_queue[key] = self.stats.per_queue.get(key, 0) + f.count
        self.stats.messages += f.count
        self.stats.batches += 1
        if self.auto_create:
            # the broker created the topic on the first send: use its real route from now on
            try:
                queues, self.auto_create = self.io.write_queues(self.topic)
            except RocketQError:
                pass
            else:
                self.queues = across_brokers(queues)

    def flush(self) -> None:
        """Wait for every batch in flight (retrying the refused ones as :meth:`send` does)."""
        while self.inflight:
            self._complete_oldest()


def send_rows(
    batches: Iterator[pa.RecordBatch], options: SourceOptions, first_queue: int = 0
) -> SendCommitMessage:
    """Send every row of ``batches`` (executor side) and return what was sent."""
    stats = SendCommitMessage()
    senders: dict[str, _TopicSender] = {}
    default_topic = options.topics[0] if options.topics else None
    with BlockingClient(list(options.namesrv), timeout=options.timeout) as io:
        for batch in batches:
            for rows in encode_rows(batch, default_topic):
                sender = senders.get(rows.topic)
                if sender is None:
                    sender = senders[rows.topic] = _TopicSender(io, rows.topic, options, first_queue, stats)
                sender.send_rows(rows)
        for sender in senders.values():
            sender.flush()
    return stats


def _partition_id() -> int:
    try:
        ctx = TaskContext.get()
        return ctx.partitionId() if ctx is not None else 0
    except Exception:  # pragma: no cover - outside a task
        return 0


def _summary(messages: Sequence[WriterCommitMessage | None]) -> tuple[int, int]:
    sent = [m for m in messages if isinstance(m, SendCommitMessage)]
    return sum(m.messages for m in sent), sum(m.batches for m in sent)


class RocketMQWriter(DataSourceArrowWriter):
    """``df.write.format("rocketmq")``: every task sends its rows; nothing to undo on abort
    (sent messages stay sent, as with any RocketMQ producer)."""

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        check_write_schema(schema, options)
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SendCommitMessage:
        return send_rows(iterator, self.options, _partition_id())

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        count, batches = _summary(messages)
        logger.info("rocketmq write: %d messages in %d sends", count, batches)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        count, _ = _summary(messages)
        logger.warning("rocketmq write failed; %d messages had been sent by tasks that finished", count)


class RocketMQStreamWriter(DataSourceStreamArrowWriter):
    """``writeStream.format("rocketmq")``: each micro-batch's tasks send their rows."""

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        check_write_schema(schema, options)
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SendCommitMessage:
        return send_rows(iterator, self.options, _partition_id())

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        count, batches = _summary(messages)
        logger.info("rocketmq stream write, batch %d: %d messages in %d sends", batchId, count, batches)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        count, _ = _summary(messages)
        logger.warning("rocketmq stream write, batch %d failed after %d messages were sent", batchId, count)
