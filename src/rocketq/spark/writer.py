"""Writers of the ``rocketmq`` data source: a DataFrame's rows become messages.

Columns (others are ignored; docs/spark.md has the table): ``body`` (or Kafka's ``value``; binary or
string, strings are sent as UTF-8), ``topic`` (string; the ``topic`` option overrides it, as
Kafka's does), ``tags``, ``keys`` (several keys separated by spaces), ``key`` (Kafka's: stored as
``KEYS``, and its Java ``hashCode`` picks the queue as RocketMQ's ``SelectMessageQueueByHash``),
``queue_id`` or Kafka's ``partition`` (an index into the topic's writable queues), ``properties``
(map<string,string>) and Kafka's ``headers`` (array<struct<key:string,value:binary>>, stored as
properties). A row whose topic is null (and no ``topic`` option) or whose body is null fails the
task with a clear error.

Each Arrow batch Spark hands a task becomes ``SEND_BATCH_MESSAGE`` records column by column
(:func:`encode_rows`: Arrow kernels join each row's properties and its header, body and
properties into one buffer; no Python object per row). Every message gets a producer unique id
(``UNIQ_KEY``, the ``msg_id`` a read returns) and ``WAIT=true``, as a Java producer's batch does;
with ``exactlyOnce`` (the default) the id is :func:`row_ids`' deterministic one and the send asks
a rocketq broker to store each id once (``rqUniqWindow``): a replayed batch is stored once.
The records are cut into batches of up to ``sendBatchSize`` messages and about
``sendBatchBytes`` bytes as the broker will store them (a larger message goes alone; the
broker's ``maxMessageSize`` refuses what it cannot take), each batch to the next writable queue
of the topic in turn, taken broker by broker (the first queue of every broker, then the second of
every broker, ...: consecutive batches go to different brokers, see :func:`across_brokers`),
starting at a queue chosen by the task's partition id so that tasks spread over the brokers and
queues (or to the queue the rows chose), with up to :data:`SENDS_IN_FLIGHT` batches sent and not
yet answered. A refused send fails the task with the broker's error (``CODE: <code> DESC:
<remark>``); retriable refusals and transport failures are tried again on the next queue (the
same one for rows that chose it), twice, as RocketMQ's producer does (a timed-out send may then be
stored twice on a RocketMQ broker, or with ``exactlyOnce=false``: delivery is at least once
there). ``write()`` returns a :class:`SendCommitMessage`.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import struct
import uuid
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    ByteType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructType,
)

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
    "UNIQ_WINDOW",
    "EncodedRows",
    "RocketMQStreamWriter",
    "RocketMQWriter",
    "SendCommitMessage",
    "check_write_schema",
    "encode_rows",
    "java_string_hash",
    "key_hashes",
    "row_ids",
    "send_rows",
]

logger = logging.getLogger(__name__)

RETRIES: Final = 2
"""Extra attempts for a send that failed retriably (Java's ``retryTimesWhenSendFailed``)."""
SENDS_IN_FLIGHT: Final = 4
"""Batches a task has sent and not yet had answered, per topic (pipelined on one connection)."""
UNIQ_WINDOW_FIELD: Final = "rqUniqWindow"
"""The batch-send header field asking rocketq's broker to store each ``UNIQ_KEY`` once."""
UNIQ_WINDOW: Final = 24 * 3600
"""Seconds back a rocketq broker looks for a copy of a row written with ``exactlyOnce``."""
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
    duplicates: int = 0
    """Messages the broker had stored already (a replayed batch under ``exactlyOnce``)."""


def _body_name(names: Sequence[str]) -> str:
    return "body" if "body" in names or "value" not in names else "value"


def check_write_schema(schema: StructType, options: SourceOptions) -> None:
    """Refuse a DataFrame the writer cannot send, naming the column."""
    fields = {f.name: f.dataType for f in schema.fields}
    name = _body_name(list(fields))
    body = fields.get(name)
    if body is None:
        raise ConfigError("writing to rocketmq needs a 'body' column (or Kafka's 'value'; binary or string)")
    if not isinstance(body, BinaryType | StringType):
        raise ConfigError(f"column {name!r} must be binary or string, not {body.simpleString()}")
    for col in ("topic", "tags", "keys"):
        if col in fields and not isinstance(fields[col], StringType):
            raise ConfigError(f"column {col!r} must be a string, not {fields[col].simpleString()}")
    if "key" in fields and not isinstance(fields["key"], StringType | BinaryType):
        raise ConfigError(f"column 'key' must be a string or binary, not {fields['key'].simpleString()}")
    if "queue_id" in fields and "partition" in fields:
        raise ConfigError("give one of the columns 'queue_id' and 'partition' (Kafka's name for it)")
    for col in ("queue_id", "partition"):
        if col in fields and not isinstance(fields[col], IntegerType | LongType | ShortType | ByteType):
            raise ConfigError(f"column {col!r} must be an integer, not {fields[col].simpleString()}")
    props = fields.get("properties")
    if props is not None and not (
        isinstance(props, MapType)
        and isinstance(props.keyType, StringType)
        and isinstance(props.valueType, StringType)
    ):
        raise ConfigError(f"column 'properties' must be map<string,string>, not {props.simpleString()}")
    headers = fields.get("headers")
    if headers is not None and not (
        isinstance(headers, ArrayType)
        and isinstance(headers.elementType, StructType)
        and [f.name for f in headers.elementType.fields] == ["key", "value"]
        and isinstance(headers.elementType.fields[0].dataType, StringType)
        and isinstance(headers.elementType.fields[1].dataType, BinaryType | StringType)
    ):
        raise ConfigError(
            "column 'headers' must be Kafka's array<struct<key:string,value:binary>>, "
            f"not {headers.simpleString()}"
        )
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
    return _pairs(lists, rows)


def _header_properties(headers: pa.Array, rows: int) -> pa.Array:
    """Kafka's ``headers`` (a list of key / value structs per row) as properties, each value as
    UTF-8 text (a value that is not UTF-8 raises :class:`~rocketq.errors.ConfigError`)."""
    if pa.types.is_large_list(headers.type):
        headers = headers.cast(pa.list_(headers.type.value_type))
    return _pairs(headers, rows)


def _pairs(lists: pa.Array, rows: int) -> pa.Array:
    """Per row, its list of (name, value) structs joined as ``name\x01value\x02...``."""
    names, values = pc.list_flatten(lists).flatten()  # null lists give no entries
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        try:
            values = values.cast(pa.string())
        except pa.ArrowInvalid:
            raise ConfigError("a header value is not UTF-8 text (RocketMQ properties are strings)") from None
    counts = pc.fill_null(pc.list_value_length(lists), 0).to_numpy(zero_copy_only=False)
    pairs = pc.binary_join_element_wise(_string(names), "\x01", _string(values), "\x02", "")
    keep = pairs.is_valid().to_numpy(zero_copy_only=False)
    per_row = np.bincount(np.repeat(np.arange(rows), counts)[keep], minlength=rows)
    offsets = np.concatenate(([0], np.cumsum(per_row))).astype(np.int32)
    return pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets), pairs.filter(pa.array(keep))), "")


_HEX4: np.ndarray | None = None


def _random_ids(rows: int) -> pa.Array:
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


def row_ids(scope: str, first_row: int, rows: int) -> pa.Array:
    """Deterministic unique ids (``UNIQ_KEY``, 32 hex digits) of rows ``first_row`` ..
    ``first_row + rows - 1`` of ``scope`` (query id / batch id / partition): 80 bits of a hash of
    the scope, then the row number in 48 bits. A replayed batch gives its rows the same ids."""
    global _HEX4
    if _HEX4 is None:
        _HEX4 = np.frombuffer("".join(f"{i:04X}" for i in range(1 << 16)).encode(), dtype=np.uint8).reshape(
            -1, 4
        )
    head = hashlib.blake2b(scope.encode(), digest_size=10).hexdigest().upper()
    numbers = np.arange(first_row, first_row + rows, dtype=np.int64)
    text = np.empty((rows, 32), dtype=np.uint8)
    text[:, :20] = np.frombuffer(head.encode(), dtype=np.uint8)
    text[:, 20:24] = _HEX4[(numbers >> 32) & 0xFFFF]
    text[:, 24:28] = _HEX4[(numbers >> 16) & 0xFFFF]
    text[:, 28:32] = _HEX4[numbers & 0xFFFF]
    return _fixed(text, 32)


@functools.lru_cache(maxsize=65536)
def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode()`` (31-based over UTF-16 code units, as a signed 32-bit int).

    >>> java_string_hash("hello"), java_string_hash("")
    (99162322, 0)
    """
    data = text.encode("utf-16-be")
    h = 0
    for (unit,) in struct.iter_unpack(">H", data):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def key_hashes(keys: pa.Array) -> np.ndarray:
    """Per row, ``abs(String.hashCode())`` of its key (-1 for a null key): RocketMQ's
    ``SelectMessageQueueByHash`` picks queue ``hash % queues``."""
    if pa.types.is_binary(keys.type) or pa.types.is_large_binary(keys.type):
        try:
            keys = keys.cast(pa.string())
        except pa.ArrowInvalid:
            raise ConfigError("a 'key' is not UTF-8 text (RocketMQ keys are strings)") from None
    return np.array([-1 if k is None else abs(java_string_hash(k)) for k in keys.to_pylist()], dtype=np.int64)


@dataclass
class EncodedRows:
    """The ``SEND_BATCH_MESSAGE`` records of some rows of one topic, back to back (the layout of
    :func:`~rocketq.protocol.message.encode_batch`): record ``i`` is
    ``data[ends[i - 1]:ends[i]]`` (``ends[-1]`` = 0). ``queue_index`` (a ``queue_id`` /
    ``partition`` column: an index into the topic's writable queues) or ``key_hash`` (a ``key``
    column: the queue is ``hash % queues``; -1 where the key is null) fix a row's queue."""

    topic: str
    data: pa.Buffer
    ends: np.ndarray
    records: pa.Array | None = None
    queue_index: np.ndarray | None = None
    key_hash: np.ndarray | None = None


def encode_rows(
    batch: pa.RecordBatch, default_topic: str | None, ids: pa.Array | None = None
) -> list[EncodedRows]:
    """The rows of ``batch`` as batch records, per topic, built column-wise with Arrow kernels:
    per row ``TAGS``, ``KEYS``, ``WAIT=true``, the user ``properties`` and Kafka ``headers``,
    then its ``UNIQ_KEY`` (from ``ids``, else a new one).

    The ``topic`` option (``default_topic``) overrides a ``topic`` column, as Kafka's does. A
    null topic with no ``default_topic``, a null body or properties over 32767 bytes raise
    :class:`~rocketq.errors.ConfigError` naming the problem.
    """
    names = batch.schema.names
    rows = batch.num_rows
    if rows == 0:
        return []
    if ids is not None:
        batch = batch.append_column("$id", ids)
    if "topic" in names and default_topic is None:
        topics = _string(batch.column("topic"))
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
    body_name = _body_name(names)
    body = _binary(batch.column(body_name))
    if body.null_count:
        raise ConfigError(f"a row for topic {topic!r} has a null {body_name!r}")
    parts: list[pa.Array | str] = []
    if "tags" in names:
        parts.append(_property(MessageConst.TAGS, batch.column("tags")))
    key_hash = None
    if "keys" in names:
        parts.append(_property(MessageConst.KEYS, batch.column("keys")))
    elif "key" in names:
        key = batch.column("key")
        text = key.cast(pa.string()) if pa.types.is_binary(key.type) else _string(key)
        parts.append(_property(MessageConst.KEYS, text))
    if "key" in names:
        key_hash = key_hashes(batch.column("key"))
    queue_index = None
    for col in ("queue_id", "partition"):
        if col in names:
            chosen = batch.column(col)
            if chosen.null_count:
                raise ConfigError(f"a row for topic {topic!r} has a null {col!r}")
            queue_index = chosen.to_numpy(zero_copy_only=False).astype(np.int64)
            if (queue_index < 0).any():
                raise ConfigError(f"a row for topic {topic!r} has a negative {col!r}")
    parts.append(f"{MessageConst.WAIT}\x01true\x02")
    if "properties" in names:
        parts.append(_user_properties(batch.column("properties"), rows))
    if "headers" in names:
        parts.append(_header_properties(batch.column("headers"), rows))
    parts.append(f"{MessageConst.UNIQ_KEY}\x01")
    parts.append(batch.column("$id") if "$id" in names else _random_ids(rows))
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
    data, ends = _layout(records)
    return EncodedRows(topic, data, ends, records, queue_index, key_hash)


def _layout(records: pa.Array) -> tuple[pa.Buffer, np.ndarray]:
    """The bytes of a binary array's values back to back, and where each ends."""
    rows = len(records)
    offsets = np.frombuffer(records.buffers()[1], dtype=np.int32)[records.offset : records.offset + rows + 1]
    base = int(offsets[0])
    data = records.buffers()[2].slice(base, int(offsets[-1]) - base)
    return data, (offsets[1:] - base).astype(np.int64)


@dataclass
class _InFlight:
    queue: QueueRoute
    pending: Pending[SendResponse]
    body: bytes
    count: int
    attempt: int
    fixed: bool


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
        self.by_route = list(queues)  # route order: what queue_id / partition / key index
        if not self.queues:
            raise RocketQError(f"topic {topic!r} has no writable queue")
        self.index = first
        self.stats = stats
        self.inflight: deque[_InFlight] = deque()
        # what a stored record adds to its batch record: the fixed fields and hosts, the topic,
        # and the properties the broker appends (WAIT, CLUSTER); rounded up
        self.extra = _STORED_EXTRA + len(topic.encode())

    def send_rows(self, rows: EncodedRows) -> None:
        """Send ``rows``: to the queue each row names (``queue_index`` / ``key_hash``, rows of a
        queue in their order), else round-robin; see :meth:`send_records`."""
        choice = rows.queue_index
        n = len(self.by_route)
        if choice is None and rows.key_hash is not None:
            if (rows.key_hash < 0).any():
                raise ConfigError(f"a row for topic {self.topic!r} has a null 'key' (it picks the queue)")
            choice = rows.key_hash % n
        if choice is None:
            self.send_records(rows.data, rows.ends, None)
            return
        if (choice >= n).any():
            raise ConfigError(
                f"a row for topic {self.topic!r} names queue {int(choice.max())}; the topic has {n} "
                f"writable queues (0..{n - 1})"
            )
        assert rows.records is not None
        for qi in np.unique(choice):
            picked = rows.records.take(pa.array(np.flatnonzero(choice == qi)))
            data, ends = _layout(picked)
            self.send_records(data, ends, self.by_route[int(qi)])

    def send_records(self, data: pa.Buffer, ends: np.ndarray, queue: QueueRoute | None) -> None:
        """Send records in batches of at most ``sendBatchSize`` records and about
        ``sendBatchBytes`` bytes once stored (a record larger than that goes alone), to ``queue``
        or round-robin."""
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
            self.send(data.slice(begin, int(ends[b - 1]) - begin).to_pybytes(), b - a, queue)
            a = b

    def send(self, body: bytes, count: int, queue: QueueRoute | None = None) -> None:
        """Send one encoded batch of ``count`` records, once fewer than the most are in flight."""
        while self.inflight and (len(self.inflight) >= SENDS_IN_FLIGHT or self.auto_create):
            self._complete_oldest()
        self._start(body, count, 0, queue)

    def _next_queue(self) -> QueueRoute:
        q = self.queues[self.index % len(self.queues)]
        self.index += 1
        return q

    def _start(self, body: bytes, count: int, attempt: int, queue: QueueRoute | None = None) -> None:
        q = queue if queue is not None else self._next_queue()
        call = BlockingClient.batch_call(q, body, producer_group=self.options.producer_group)
        if self.options.exactly_once:
            call.request.ext_fields[UNIQ_WINDOW_FIELD] = str(UNIQ_WINDOW)
        try:
            pending = self.io.start(q.addr, call)
        except RocketQError as exc:
            exc.add_note(f"{call.what} at {q.addr}")
            self._failed(exc, q, body, count, attempt, queue is not None)
            return
        self.inflight.append(_InFlight(q, pending, body, count, attempt, queue is not None))

    def _failed(
        self, exc: RocketQError, q: QueueRoute, body: bytes, count: int, attempt: int, fixed: bool = False
    ) -> None:
        """Retry a retriable failure: on the next queue, or on the same one when the row chose
        it (its order within the queue matters more than where it goes)."""
        if self.auto_create:
            exc.add_note("(the topic was to be auto-created from TBW102's route)")
        if not exc.retriable or attempt >= RETRIES:
            raise exc
        logger.warning(
            "send to %s failed (%s); trying %s", q.queue, exc, "again" if fixed else "the next queue"
        )
        self._start(body, count, attempt + 1, q if fixed else None)

    def _complete_oldest(self) -> None:
        f = self.inflight.popleft()
        try:
            answer = self.io.finish(f.pending)
        except BrokerError as exc:
            self._failed(exc, f.queue, f.body, f.count, f.attempt, f.fixed)
            return
        except RocketQError as exc:
            exc.add_note(f"{f.pending.call.what} at {f.queue.addr}")
            self._failed(exc, f.queue, f.body, f.count, f.attempt, f.fixed)
            return
        if answer.code != ResponseCode.SUCCESS:  # stored, but not flushed or replicated in time
            raise not_confirmed(answer.code, f.pending.call.what, f.queue.addr)
        key = f.queue.queue.short
        stored = f.count
        if self.options.exactly_once:  # a rocketq broker lists the records it stored
            ids = [i for i in answer.offset_msg_id.split(",") if i] if answer.queue_offset >= 0 else []
            stored = min(len(ids), f.count)
        self.stats.per_queue[key] = self.stats.per_queue.get(key, 0) + stored
        self.stats.messages += stored
        self.stats.duplicates += f.count - stored
        self.stats.batches += 1
        if self.auto_create:
            # the broker created the topic on the first send: use its real route from now on
            try:
                queues, self.auto_create = self.io.write_queues(self.topic)
            except RocketQError:
                pass
            else:
                self.queues = across_brokers(queues)
                self.by_route = list(queues)

    def flush(self) -> None:
        """Wait for every batch in flight (retrying the refused ones as :meth:`send` does)."""
        while self.inflight:
            self._complete_oldest()


def send_rows(
    batches: Iterator[pa.RecordBatch], options: SourceOptions, first_queue: int = 0, scope: str | None = None
) -> SendCommitMessage:
    """Send every row of ``batches`` (executor side) and return what was sent. With ``scope``
    (query id / batch id / partition) and ``exactlyOnce``, row ``i`` gets the id
    :func:`row_ids` gives it, the same when the batch is replayed."""
    stats = SendCommitMessage()
    senders: dict[str, _TopicSender] = {}
    default_topic = options.topics[0] if options.topics else None
    row = 0
    with options.client() as io:
        for batch in batches:
            ids = None
            if scope is not None and options.exactly_once and batch.num_rows:
                ids = row_ids(scope, row, batch.num_rows)
            row += batch.num_rows
            for rows in encode_rows(batch, default_topic, ids):
                sender = senders.get(rows.topic)
                if sender is None:
                    sender = senders[rows.topic] = _TopicSender(io, rows.topic, options, first_queue, stats)
                sender.send_rows(rows)
        for sender in senders.values():
            sender.flush()
    return stats


def _task() -> tuple[int, str | None, str | None]:
    """The task's partition id, and the streaming query id and batch id Spark set for it."""
    try:
        ctx = TaskContext.get()
    except Exception:  # pragma: no cover - outside a task
        ctx = None
    if ctx is None:
        return 0, None, None
    return ctx.partitionId(), ctx.getLocalProperty(_QUERY_ID), ctx.getLocalProperty(_BATCH_ID)


_QUERY_ID: Final = "sql.streaming.queryId"
_BATCH_ID: Final = "streaming.sql.batchId"


def _summary(messages: Sequence[WriterCommitMessage | None]) -> tuple[int, int]:
    """Messages stored and batches sent by the tasks that reported."""
    sent = [m for m in messages if isinstance(m, SendCommitMessage)]
    return sum(m.messages for m in sent), sum(m.batches for m in sent)


class RocketMQWriter(DataSourceArrowWriter):
    """``df.write.format("rocketmq")``: every task sends its rows; nothing to undo on abort
    (sent messages stay sent, as with any RocketMQ producer)."""

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        check_write_schema(schema, options)
        self.options = options
        self.write_id = uuid.uuid4().hex  # made on the driver: a retried task sends the same ids

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SendCommitMessage:
        partition, _, _ = _task()
        return send_rows(iterator, self.options, partition, f"{self.write_id}/{partition}")

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
        partition, query, batch = _task()
        scope = None if query is None or batch is None else f"{query}/{batch}/{partition}"
        return send_rows(iterator, self.options, partition, scope)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        count, batches = _summary(messages)
        logger.info("rocketmq stream write, batch %d: %d messages in %d sends", batchId, count, batches)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        count, _ = _summary(messages)
        logger.warning("rocketmq stream write, batch %d failed after %d messages were sent", batchId, count)
