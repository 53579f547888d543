"""Batch and streaming readers of the ``rocketmq`` data source, and the executor-side pull loop.

Planning happens on the driver: routes from a name server, offsets from the brokers, one
:class:`QueueRange` input partition per queue (split when a range holds more than
``maxMessagesPerPartition`` offsets). Each executor task pulls its range straight from the
queue's broker (:meth:`~rocketq.client.blocking.BlockingClient.pull_range`, pipelined) and turns the
stored records into Arrow record batches column by column (:class:`ColumnBuilder`), whose Arrow
schema is exactly Spark's for :data:`~rocketq.spark.source.SCHEMA_DDL`. A user schema's columns
are the only ones decoded, and one of :data:`POSITION_COLUMNS` only is answered from the queues'
offsets without a pull (:func:`read_positions`, all ranges in one task).

Streaming offsets are :mod:`rocketq.spark.offsets` JSON; see there for why the first offset is
symbolic. A queue added to a topic while a query runs shows up in the next ``latestOffset`` and is
read from its earliest offset.
"""

from __future__ import annotations

import logging
import re
import struct
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceReader,
    DataSourceStreamReader,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    LessThan,
    LessThanOrEqual,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructType,
    TimestampType,
)

from rocketq.client.blocking import BlockingClient
from rocketq.errors import ConfigError, DataLossError, RocketQError
from rocketq.models import MessageQueue, PullResult, PullStatus, QueueRoute
from rocketq.protocol import calls
from rocketq.protocol.message import MESSAGE_MAGIC_CODE, MessageSysFlag, decode_messages
from rocketq.protocol.message_id import HostPort
from rocketq.protocol.properties import MessageConst, string_to_properties
from rocketq.spark.columns import ARROW_SCHEMA, TIMESTAMP, decode_columns
from rocketq.spark.offsets import (
    LATEST,
    OffsetMap,
    StartingPosition,
    check_data_loss,
    fair_limit,
    from_json,
    is_symbolic,
    queue_name,
    resolve_start,
    split_range,
    to_json,
)

if TYPE_CHECKING:
    from rocketq.spark.source import SourceOptions

__all__ = [
    "ARROW_SCHEMA",
    "METRICS_KEY",
    "POSITION_COLUMNS",
    "ColumnBuilder",
    "Pushdown",
    "QueueRange",
    "QueueRanges",
    "RocketMQBatchReader",
    "RocketMQStreamReader",
    "answered_by_offsets",
    "projection",
    "read_positions",
    "read_range",
]

logger = logging.getLogger(__name__)

METRICS_KEY: Final = "$metrics"
"""The key of the lag metrics in a stream's reported latest offset (no topic starts with ``$``)."""
ROWS_PER_BATCH: Final = 8192
"""Rows per Arrow record batch handed to Spark (about: pull answers are not split)."""
BYTES_PER_BATCH: Final = 8 << 20
"""Pull answers are decoded together once they hold this many bytes, whatever their count."""
PULL_DEPTH: Final = 4
"""Pulls in flight per input partition (each of up to ``pullBatchBytes``)."""
POSITION_COLUMNS: Final = frozenset({"topic", "broker", "queue_id", "queue_offset"})
"""The columns a queue's offsets give without a pull (see :func:`read_positions`)."""
OFFSET_ROWS_PER_BATCH: Final = 1 << 16
"""Rows per record batch of :func:`read_positions` (no message behind them: cheap rows)."""

# A stored record with the V1 magic and IPv4 hosts, up to its body length (see rocketq.protocol.message).
_PLAIN: Final = struct.Struct(">iiiiiqqiq8sq8siqi")
_PLAIN_MIN: Final = _PLAIN.size + 3
_I16: Final = struct.Struct(">h")
_MAGIC_V1: Final = MESSAGE_MAGIC_CODE
_SLOW_FLAGS: Final = int(MessageSysFlag.COMPRESSED | MessageSysFlag.BORNHOST_V6 | MessageSysFlag.STOREHOST_V6)
_host_text: dict[bytes, str] = {}
READ_TYPES: Final[dict[str, DataType]] = {
    "topic": StringType(),
    "broker": StringType(),
    "queue_id": IntegerType(),
    "queue_offset": LongType(),
    "msg_id": StringType(),
    "tags": StringType(),
    "keys": StringType(),
    "body": BinaryType(),
    "born_timestamp": TimestampType(),
    "store_timestamp": TimestampType(),
    "born_host": StringType(),
    "reconsume_times": IntegerType(),
    "properties": MapType(StringType(), StringType()),
}
"""The read schema's Spark types by column (``SCHEMA_DDL``, without a session to parse it)."""
_SYSTEM_PREFIXES: Final = ("%RETRY%", "%DLQ%", "rmq_sys_", "RMQ_SYS_", "SCHEDULE_TOPIC_XXXX", "TBW102")


class QueueRange(InputPartition):
    """One input partition: offsets ``[start, end)`` of one queue, and where its broker is."""

    def __init__(self, topic: str, broker: str, queue_id: int, addr: str, start: int, end: int) -> None:
        super().__init__((topic, broker, queue_id, start, end))
        self.topic = topic
        self.broker = broker
        self.queue_id = queue_id
        self.addr = addr
        self.start = start
        self.end = end

    @property
    def route(self) -> QueueRoute:
        return QueueRoute(MessageQueue(self.topic, self.broker, self.queue_id), self.addr)

    def __repr__(self) -> str:
        return (
            f"QueueRange({self.topic} {self.broker}:{self.queue_id} [{self.start}, {self.end}) @ {self.addr})"
        )


class QueueRanges(InputPartition):
    """One input partition of several :class:`QueueRange`, read one after the other (a read
    answered from offsets, see :func:`read_positions`)."""

    def __init__(self, ranges: Sequence[QueueRange]) -> None:
        super().__init__(tuple(r.value for r in ranges))
        self.ranges = tuple(ranges)

    def __repr__(self) -> str:
        return f"QueueRanges({', '.join(map(repr, self.ranges))})"


class ColumnBuilder:
    """Accumulates decoded messages of one queue as Arrow columns."""

    __slots__ = (
        "bodies",
        "born",
        "born_host",
        "keys",
        "map_keys",
        "map_offsets",
        "map_values",
        "msg_ids",
        "offsets",
        "reconsume",
        "store",
        "tags",
    )

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        """Drop every row gathered so far."""
        self.offsets: list[int] = []
        self.msg_ids: list[str] = []
        self.tags: list[str | None] = []
        self.keys: list[str | None] = []
        self.bodies: list[bytes] = []
        self.born: list[int] = []
        self.store: list[int] = []
        self.born_host: list[str] = []
        self.reconsume: list[int] = []
        self.map_offsets: list[int] = [0]
        self.map_keys: list[str] = []
        self.map_values: list[str] = []

    def __len__(self) -> int:
        return len(self.offsets)

    def add_body(self, body: bytes, end: int, tag_set: frozenset[str] | None) -> bool:
        """Decode a FOUND pull body and add its messages below ``end`` that pass ``tag_set``;
        returns False once a message at or past ``end`` was seen.

        Plain records (V1 magic, IPv4 hosts, body not compressed: what every 4.x producer of small
        messages writes) are read straight into the columns with one ``struct`` call each; any
        other record, and everything after it in the body, goes through
        :func:`~rocketq.protocol.message.decode_messages`, which gives the same values.
        """
        buf = body if type(body) is bytes else bytes(body)
        size_all = len(buf)
        unpack = _PLAIN.unpack_from
        unpack_i16 = _I16.unpack_from
        hosts = _host_text
        offsets, msg_ids, tags, keys = self.offsets, self.msg_ids, self.tags, self.keys
        bodies, born, store, born_host = self.bodies, self.born, self.store, self.born_host
        reconsume, map_keys, map_values, map_offsets = (
            self.reconsume,
            self.map_keys,
            self.map_values,
            self.map_offsets,
        )
        pos = 0
        while pos < size_all:
            if size_all - pos < _PLAIN_MIN:
                return self._add_decoded(buf[pos:], end, tag_set)
            (size, magic, _crc, _qid, _flag, q_offset, _phys, sys_flag, born_ts, born_raw, store_ts, _store,
             times, _prepared, body_len) = unpack(buf, pos)  # fmt: skip
            rec_end = pos + size
            if magic != _MAGIC_V1 or sys_flag & _SLOW_FLAGS or size < _PLAIN_MIN or rec_end > size_all:
                return self._add_decoded(buf[pos:], end, tag_set)
            if q_offset >= end:
                return False
            body_end = pos + 88 + body_len
            if body_len < 0 or body_end + 3 > rec_end:
                return self._add_decoded(buf[pos:], end, tag_set)  # raises the codec's error
            topic_end = body_end + 1 + buf[body_end]
            props_len = unpack_i16(buf, topic_end)[0] if topic_end + 2 <= rec_end else -1
            if topic_end + 2 + props_len != rec_end:
                return self._add_decoded(buf[pos:], end, tag_set)  # raises the codec's error
            if props_len:
                try:
                    props = string_to_properties(buf[topic_end + 2 : rec_end].decode())
                except UnicodeDecodeError:
                    return self._add_decoded(buf[pos:], end, tag_set)  # raises the codec's error
            else:
                props = {}
            uniq = props.get("UNIQ_KEY")
            if uniq is None:
                return self._add_decoded(buf[pos:], end, tag_set)  # needs the offset msg id
            tag = props.get("TAGS")
            pos = rec_end
            if tag_set is not None and (tag is None or tag not in tag_set):
                continue
            offsets.append(q_offset)
            msg_ids.append(uniq)
            tags.append(tag)
            keys.append(props.get("KEYS"))
            bodies.append(buf[body_end - body_len : body_end])
            born.append(born_ts * 1000)
            store.append(store_ts * 1000)
            host = hosts.get(born_raw)
            if host is None:
                if len(hosts) >= 4096:
                    hosts.clear()
                host = hosts[born_raw] = str(HostPort.from_packed(born_raw))
            born_host.append(host)
            reconsume.append(times)
            map_keys.extend(props)
            map_values.extend(props.values())
            map_offsets.append(len(map_keys))
        return True

    def _add_decoded(self, body: bytes, end: int, tag_set: frozenset[str] | None) -> bool:
        """:meth:`add_body` through the general codec (any record kind)."""
        for msg in decode_messages(body):
            if msg.queue_offset >= end:
                return False
            props = msg.properties
            tag = props.get(MessageConst.TAGS)
            if tag_set is not None and (tag is None or tag not in tag_set):
                continue
            self.offsets.append(msg.queue_offset)
            self.msg_ids.append(msg.msg_id)
            self.tags.append(tag)
            self.keys.append(props.get(MessageConst.KEYS))
            self.bodies.append(msg.body)
            self.born.append(msg.born_timestamp * 1000)
            self.store.append(msg.store_timestamp * 1000)
            self.born_host.append(str(msg.born_host))
            self.reconsume.append(msg.reconsume_times)
            self.map_keys.extend(props)
            self.map_values.extend(props.values())
            self.map_offsets.append(len(self.map_keys))
        return True

    def record_batch(self, topic: str, broker: str, queue_id: int) -> pa.RecordBatch:
        """The rows so far as one record batch (then cleared)."""
        n = len(self.offsets)
        properties = pa.MapArray.from_arrays(
            pa.array(self.map_offsets, pa.int32()),
            pa.array(self.map_keys, pa.string()),
            pa.array(self.map_values, pa.string()),
        )
        batch = pa.RecordBatch.from_arrays(
            [
                pa.array([topic] * n, pa.string()),
                pa.array([broker] * n, pa.string()),
                pa.array([queue_id] * n, pa.int32()),
                pa.array(self.offsets, pa.int64()),
                pa.array(self.msg_ids, pa.string()),
                pa.array(self.tags, pa.string()),
                pa.array(self.keys, pa.string()),
                pa.array(self.bodies, pa.binary()),
                pa.array(self.born, TIMESTAMP),
                pa.array(self.store, TIMESTAMP),
                pa.array(self.born_host, pa.string()),
                pa.array(self.reconsume, pa.int32()),
                properties,
            ],
            schema=ARROW_SCHEMA,
        )
        self.clear()
        return batch

    def tuples(self, topic: str, broker: str, queue_id: int) -> list[tuple[Any, ...]]:
        """The rows so far as tuples of Python values (then cleared): the slower path, kept to
        measure what Arrow batches save."""
        mo, mk, mv = self.map_offsets, self.map_keys, self.map_values
        utc = UTC
        rows = [
            (
                topic,
                broker,
                queue_id,
                self.offsets[i],
                self.msg_ids[i],
                self.tags[i],
                self.keys[i],
                self.bodies[i],
                datetime.fromtimestamp(self.born[i] / 1e6, utc),
                datetime.fromtimestamp(self.store[i] / 1e6, utc),
                self.born_host[i],
                self.reconsume[i],
                dict(zip(mk[mo[i] : mo[i + 1]], mv[mo[i] : mo[i + 1]], strict=True)),
            )
            for i in range(len(self.offsets))
        ]
        self.clear()
        return rows


def read_range(
    part: QueueRange, options: SourceOptions, columns: Sequence[str] | None = None
) -> Iterator[Any]:
    """Pull ``part``'s range and yield it as record batches of ``columns`` (executor side; all
    columns when ``None``), or as tuples of every column one by one when the ``arrowBatches``
    option is false.

    Pull answers are gathered until they hold about :data:`ROWS_PER_BATCH` messages, then decoded
    together by :func:`~rocketq.spark.columns.decode_columns` (vectorised), or by
    :class:`ColumnBuilder` when they hold records that path leaves to the codec. Messages removed
    by retention are handled by ``failOnDataLoss``; a queue that ends before ``end`` (its data was
    truncated) is data loss too.
    """
    reader = _RangeReader(part, options, columns)
    with options.client() as io:
        while reader.pos < reader.end:
            last = None
            for result in io.pull_range(
                part.route,
                reader.pos,
                reader.end,
                group=options.pull_group,
                batch_size=options.pull_batch_size,
                expression=options.tags,
                depth=PULL_DEPTH,
                bulk_bytes=options.pull_batch_bytes,
            ):
                last = result
                yield from reader.take(result)
            if reader.pos >= reader.end or last is None or not reader.past_a_miss(last):
                break
    yield from reader.emit()


class _RangeReader:
    """The state of one :func:`read_range`: where it is, the pull answers gathered and not yet
    decoded, and what to do when the queue does not go on."""

    def __init__(self, part: QueueRange, options: SourceOptions, columns: Sequence[str] | None) -> None:
        self.part = part
        self.options = options
        self.columns = columns
        self.pos, self.end = part.start, part.end
        self.chunks: list[bytes] = []
        self.pending = 0  # offsets spanned by the gathered answers
        self.pending_bytes = 0

    def take(self, result: PullResult) -> Iterator[Any]:
        """One pull answer: gather its messages (decoding a batch when enough are gathered)."""
        if result.status in (PullStatus.FOUND, PullStatus.NO_MATCHED_MSG):
            nxt = max(self.pos, result.next_begin_offset)
            if result.status is PullStatus.FOUND:
                self.chunks.append(result.body)
                self.pending += nxt - self.pos
                self.pending_bytes += len(result.body)
                if self.pending >= ROWS_PER_BATCH or self.pending_bytes >= BYTES_PER_BATCH:
                    yield from self.emit()
            self.pos = nxt

    def past_a_miss(self, last: PullResult) -> bool:
        """The pulls stopped short of the end with ``last``: move past what retention removed or
        the broker skipped (True: pull again), or end the read (False) - raising when that is
        data loss and ``failOnDataLoss`` is on, or when the broker is not moving the read on."""
        part, pos, end = self.part, self.pos, self.end
        if last.status is PullStatus.OFFSET_ILLEGAL or last.status is PullStatus.NO_NEW_MSG:
            if pos < last.min_offset:
                self.pos = check_data_loss(
                    part.route.queue, pos, last.min_offset, fail=self.options.fail_on_data_loss
                )
                return True
            if last.next_begin_offset > pos:
                self.pos = last.next_begin_offset  # the broker skipped a hole in the queue
                return True
            text = (
                f"{part.topic} {part.broker}:{part.queue_id}: offsets {pos}..{end - 1} were planned "
                f"but the queue now ends at {last.max_offset} ({last.remark or last.status.value})"
            )
            if self.options.fail_on_data_loss:
                raise DataLossError(text + "; set failOnDataLoss to false to skip them")
            logger.warning("%s; skipping them (failOnDataLoss is false)", text)
            return False
        # FOUND / NO_MATCHED without progress: the broker is not moving us forward
        raise RocketQError(
            f"{part.topic} {part.broker}:{part.queue_id}: pull at offset {pos} made no progress "
            f"({last.status.value}, next offset {last.next_begin_offset})"
        )

    def emit(self) -> Iterator[Any]:
        """Decode what was gathered: one record batch, or tuples when ``arrowBatches`` is false."""
        part, options, chunks = self.part, self.options, self.chunks
        if not chunks:
            return
        batch = None
        if options.arrow_batches:
            batch = decode_columns(
                b"".join(chunks),
                topic=part.topic,
                broker=part.broker,
                end=self.end,
                tag_set=options.tag_set,
                columns=self.columns,
            )
        if batch is None:
            builder = ColumnBuilder()
            for chunk in chunks:
                builder.add_body(chunk, self.end, options.tag_set)
            if options.arrow_batches:
                batch = builder.record_batch(part.topic, part.broker, part.queue_id)
                if self.columns is not None:
                    batch = batch.select(list(self.columns))
            else:
                chunks.clear()
                yield from builder.tuples(part.topic, part.broker, part.queue_id)
        chunks.clear()
        self.pending = self.pending_bytes = 0
        if batch is not None and batch.num_rows:
            yield batch


def _read(
    part: InputPartition, options: SourceOptions, columns: Sequence[str] | None = None
) -> Iterator[Any]:
    """``part``'s rows, only ``columns`` of them when given (a user schema naming fewer)."""
    if isinstance(part, QueueRanges):
        return (batch for one in part.ranges for batch in _read(one, options, columns))
    if not isinstance(part, QueueRange):  # pragma: no cover - Spark hands back our partitions
        raise TypeError(f"unexpected partition {part!r}")
    if part.start >= part.end:
        return iter(())
    if columns is not None and options.arrow_batches and answered_by_offsets(columns, options):
        return read_positions(part, options, columns)
    if not options.arrow_batches:
        rows = read_range(part, options)
        if columns is None:
            return rows
        index = [ARROW_SCHEMA.names.index(c) for c in columns]
        return (tuple(row[i] for i in index) for row in rows)
    return read_range(part, options, columns)


def answered_by_offsets(columns: Iterable[str], options: SourceOptions) -> bool:
    """Whether a read of ``columns`` is answered from the queues' offsets alone: only
    :data:`POSITION_COLUMNS` and no tag filter (``tags`` option or a pushed ``tags`` filter)."""
    return options.tag_set is None and POSITION_COLUMNS.issuperset(columns)


def read_positions(part: QueueRange, options: SourceOptions, columns: Sequence[str]) -> Iterator[Any]:
    """``part``'s rows of position columns only (:data:`POSITION_COLUMNS`), without pulling.

    A queue's offsets are dense: every offset from the broker's min to its max offset is one
    stored message (the store's message count is their difference), and without a tag filter
    a pull of ``[start, end)`` answers each of them once. So the rows are the offsets of the
    range still on the broker, asked now (``GET_MIN_OFFSET`` / ``GET_MAX_OFFSET``): what
    retention removed since planning is data loss exactly as for a pull (``failOnDataLoss``
    fails, or skips with a warning), and a queue now ending before the range's end too.
    """
    q = part.route.queue
    with options.client() as io:
        low = io.call(part.addr, calls.get_min_offset(q))
        high = io.call(part.addr, calls.get_max_offset(q))
    start = check_data_loss(q, part.start, low, fail=options.fail_on_data_loss)
    end = part.end
    if high < end and start < end:
        text = (
            f"{part.topic} {part.broker}:{part.queue_id}: offsets {max(start, high)}..{end - 1} were "
            f"planned but the queue now ends at {high}"
        )
        if options.fail_on_data_loss:
            raise DataLossError(text + "; set failOnDataLoss to false to skip them")
        logger.warning("%s; skipping them (failOnDataLoss is false)", text)
        end = high
    schema = pa.schema([ARROW_SCHEMA.field(c) for c in columns])
    for a in range(start, end, OFFSET_ROWS_PER_BATCH):
        n = min(end, a + OFFSET_ROWS_PER_BATCH) - a
        yield pa.RecordBatch.from_arrays([_position_column(part, c, a, n) for c in columns], schema=schema)


def _position_column(part: QueueRange, column: str, start: int, rows: int) -> pa.Array:
    """Column ``column`` of the ``rows`` messages of ``part``'s queue from offset ``start``."""
    if column == "topic":
        return pa.repeat(pa.scalar(part.topic, pa.string()), rows)
    if column == "broker":
        return pa.repeat(pa.scalar(part.broker, pa.string()), rows)
    if column == "queue_id":
        return pa.repeat(pa.scalar(part.queue_id, pa.int32()), rows)
    if column == "queue_offset":
        return pa.array(np.arange(start, start + rows, dtype=np.int64))
    raise KeyError(column)  # pragma: no cover - answered_by_offsets chose these columns


def projection(schema: StructType) -> tuple[str, ...] | None:
    """The columns a user schema asks for, ``None`` for the whole schema; a column the source
    does not have, or of another type, raises :class:`~rocketq.errors.ConfigError`."""
    types = READ_TYPES
    for f in schema.fields:
        if f.name not in types:
            raise ConfigError(
                f"the schema names a column {f.name!r} the rocketmq source does not have "
                f"(its columns: {', '.join(types)})"
            )
        if f.dataType != types[f.name]:
            raise ConfigError(
                f"the schema gives column {f.name!r} the type {f.dataType.simpleString()}; "
                f"the rocketmq source reads it as {types[f.name].simpleString()}"
            )
    names = tuple(f.name for f in schema.fields)
    return None if names == tuple(types) else names


def _partitions(
    start: Mapping[MessageQueue, int],
    end: Mapping[MessageQueue, int],
    addrs: Mapping[MessageQueue, str],
    max_per_partition: int,
) -> list[QueueRange]:
    parts: list[QueueRange] = []
    for q in sorted(end):
        e = end[q]
        s = start.get(q, e)
        if q not in addrs or s >= e:
            continue
        for a, b in split_range(s, e, max_per_partition):
            parts.append(QueueRange(q.topic, q.broker_name, q.queue_id, addrs[q], a, b))
    return parts


class _Planner:
    """Driver-side routes and offsets (one BlockingClient, reused across calls)."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._io: BlockingClient | None = None

    @property
    def io(self) -> BlockingClient:
        if self._io is None:
            self._io = self.options.client()
        return self._io

    def __getstate__(self) -> dict[str, Any]:
        # Spark pickles readers to ship them to executors: connections stay behind
        return {"options": self.options, "_io": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.options = state["options"]
        self._io = None

    def topics(self) -> tuple[str, ...]:
        """The topics read: the ``topic`` option's, or the name server's topics matching
        ``subscribePattern`` (the whole name, as Kafka matches; system topics left out)."""
        pattern = self.options.topic_pattern
        if pattern is None:
            return self.options.topics
        regex = re.compile(pattern)
        listed: list[str] = []
        last: Exception | None = None
        for addr in self.io.namesrv:
            try:
                listed = self.io.call(addr, calls.get_all_topic_list())
                break
            except RocketQError as exc:
                last = exc
        else:
            assert last is not None
            raise last
        return tuple(
            t
            for t in listed
            if regex.fullmatch(t) and not t.startswith(("%RETRY%", "%DLQ%", "rmq_sys_", "RMQ_SYS_"))
        )

    def routes(self) -> dict[MessageQueue, QueueRoute]:
        out: dict[MessageQueue, QueueRoute] = {}
        for topic in self.topics():
            for r in self.io.read_queues(topic):
                out[r.queue] = r
        assign = self.options.assign
        if assign is not None:
            missing = sorted(queue_name(q) for q in assign if q not in out)
            if missing:
                raise ConfigError(
                    f"option 'assign' names queues the topic's route does not hold: {', '.join(missing)}"
                )
            out = {q: r for q, r in out.items() if q in assign}
        return out

    def search(self, routes: Mapping[MessageQueue, QueueRoute], q: MessageQueue, ts: int, end: int) -> int:
        """The offset of ``q``'s first message stored at or after ``ts``; when there is none
        (``end`` is the queue's end), ``startingOffsetsByTimestampStrategy`` decides: ``error``
        (Kafka's default) fails, ``latest`` starts at the end."""
        offset = self.io.offset_at_or_after(routes[q], ts, group=self.options.pull_group)
        if offset >= end and self.options.timestamp_strategy == "error":
            raise ConfigError(
                f"no message of {q.topic} {q.broker_name}:{q.queue_id} was stored at or after the starting "
                f"timestamp {ts}; set startingOffsetsByTimestampStrategy to latest to start at its end"
            )
        return min(offset, end)

    def close(self) -> None:
        if self._io is not None:
            self._io.close()
            self._io = None


def _split_size(
    options: SourceOptions, start: Mapping[MessageQueue, int], end: Mapping[MessageQueue, int]
) -> int:
    """Offsets per input partition: ``maxMessagesPerPartition``, made smaller when
    ``minPartitions`` asks for more partitions than the queues' ranges give."""
    per_part = options.max_messages_per_partition
    wanted = options.min_partitions
    if wanted is not None:
        sizes = [e - start.get(q, e) for q, e in end.items() if e > start.get(q, e)]
        per_part = max(1, min(per_part, -(-sum(sizes) // wanted)))
        while per_part > 1 and sum(-(-n // per_part) for n in sizes) < wanted:
            per_part -= 1
    return per_part


def _check_named_queues(options: SourceOptions, routes: Mapping[MessageQueue, QueueRoute]) -> None:
    """Refuse offsets or timestamps JSON naming a queue the routes do not hold (a typo would
    otherwise read from the wrong place in silence)."""
    named: list[tuple[str, Iterable[MessageQueue]]] = []
    if options.starting.kind in ("offsets", "timestamps"):
        option = "startingOffsets" if options.starting.kind == "offsets" else "startingOffsetsByTimestamp"
        named.append((option, options.starting.offsets))
    if not isinstance(options.ending, str):
        named.append(("endingOffsets", options.ending))
    if options.ending_timestamps is not None:
        named.append(("endingOffsetsByTimestamp", options.ending_timestamps))
    for option, queues in named:
        unknown = sorted(queue_name(q) for q in queues if q not in routes)
        if unknown:
            known = ", ".join(sorted(f"{q.broker_name}:{q.queue_id}" for q in routes)) or "none"
            raise ConfigError(
                f"option {option!r} names queues that are not read: {', '.join(unknown)} (read: {known})"
            )


def _batch_end(
    options: SourceOptions,
    planner: _Planner,
    routes: Mapping[MessageQueue, QueueRoute],
    maxes: Mapping[MessageQueue, int],
) -> OffsetMap:
    """Where a batch read ends on each queue: ``endingOffsets``, ``endingTimestamp`` or
    ``endingOffsetsByTimestamp`` (the first message stored at or after the time; none: the
    queue's end, as Kafka does), else the queue's end."""
    io = planner.io
    ending = options.ending
    if not isinstance(ending, str):
        return {
            q: (maxes[q] if ending.get(q, LATEST) == LATEST else min(ending[q], maxes[q])) for q in routes
        }
    stamps: Mapping[MessageQueue, int] | None = options.ending_timestamps
    if options.ending_timestamp is not None:
        stamps = dict.fromkeys(routes, options.ending_timestamp)
    if stamps is None:
        return dict(maxes)
    out: OffsetMap = {}
    for q in routes:
        ts = stamps.get(q)
        out[q] = (
            maxes[q]
            if ts is None
            else min(maxes[q], io.offset_at_or_after(routes[q], ts, group=options.pull_group))
        )
    return out


def _epoch_ms(value: Any) -> int | None:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return int(value.timestamp() * 1000)
    return None


class Pushdown:
    """The filters a batch read applied itself (see :meth:`RocketMQBatchReader.pushFilters`)."""

    def __init__(self) -> None:
        self.values: dict[str, set[Any]] = {}
        self.offset_low = 0
        self.offset_high: int | None = None
        self.store_low: int | None = None
        self.store_high: int | None = None
        self.tags: frozenset[str] | None = None
        self.empty = False

    def _allow(self, column: str, values: set[Any]) -> None:
        known = self.values.get(column)
        self.values[column] = values if known is None else known & values

    def add(self, f: Filter) -> bool:
        """Take ``f`` into account; whether Spark must still evaluate it."""
        attribute: tuple[str, ...] = getattr(f, "attribute", ())
        if len(attribute) != 1:
            return True
        column = attribute[0]
        if isinstance(f, EqualTo | In) and column in ("topic", "broker", "queue_id", "tags"):
            values = set(f.value) if isinstance(f, In) else {f.value}
            if column == "tags":
                chosen = frozenset(v for v in values if isinstance(v, str))
                self.tags = chosen if self.tags is None else self.tags & chosen
            else:
                self._allow(column, values)
            return False
        bound = getattr(f, "value", None)
        if column == "queue_offset" and type(bound) is int:
            if isinstance(f, GreaterThan | GreaterThanOrEqual):
                self.offset_low = max(self.offset_low, bound + (1 if isinstance(f, GreaterThan) else 0))
                return False
            if isinstance(f, LessThan | LessThanOrEqual):
                high = bound + (1 if isinstance(f, LessThanOrEqual) else 0)
                self.offset_high = high if self.offset_high is None else min(self.offset_high, high)
                return False
            if isinstance(f, EqualTo):
                self.offset_low = max(self.offset_low, bound)
                self.offset_high = bound + 1 if self.offset_high is None else min(self.offset_high, bound + 1)
                return False
        if column == "store_timestamp" and (ms := _epoch_ms(bound)) is not None:
            if isinstance(f, GreaterThan | GreaterThanOrEqual | EqualTo):
                low = ms + (1 if isinstance(f, GreaterThan) else 0)
                self.store_low = low if self.store_low is None else max(self.store_low, low)
            if isinstance(f, LessThan | LessThanOrEqual | EqualTo):
                high = ms + (0 if isinstance(f, LessThan) else 1)
                self.store_high = high if self.store_high is None else min(self.store_high, high)
        return True

    def selects(self, q: MessageQueue) -> bool:
        """Whether the filters leave any row of queue ``q``."""
        if self.tags is not None and not self.tags:
            return False
        for column, value in (("topic", q.topic), ("broker", q.broker_name), ("queue_id", q.queue_id)):
            allowed = self.values.get(column)
            if allowed is not None and value not in allowed:
                return False
        return True

    def narrow(
        self,
        start: Mapping[MessageQueue, int],
        end: Mapping[MessageQueue, int],
        at_or_after: Callable[[MessageQueue, int], int],
    ) -> tuple[OffsetMap, OffsetMap]:
        """The ranges cut by the offset and store-time bounds (an empty range: start = end)."""
        begin, stop = dict(start), dict(end)
        for q, last in end.items():
            low = max(begin.get(q, last), self.offset_low)
            high = last if self.offset_high is None else min(last, self.offset_high)
            if low < high and self.store_low is not None:
                low = max(low, at_or_after(q, self.store_low))
            if low < high and self.store_high is not None:
                high = min(high, at_or_after(q, self.store_high))
            begin[q] = min(low, high)
            stop[q] = high
        return begin, stop


class RocketMQBatchReader(DataSourceReader):
    """``spark.read.format("rocketmq")``: one fixed range per queue, planned on the driver."""

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema
        self.columns = projection(schema)
        self.pushed = Pushdown()

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        """Filters on ``topic``, ``broker``, ``queue_id``, ``queue_offset`` and ``tags`` choose
        the queues and offset ranges read (and the broker's tag filter), and Spark needs not
        evaluate them again; ``store_timestamp`` bounds narrow the ranges through the broker's
        offset-by-time look-up, and Spark still checks them (store times are in store order
        only as far as the broker's clock is). Every other filter is left to Spark."""
        for f in filters:
            kept = self.pushed.add(f)
            if kept:
                yield f
        tags = self.pushed.tags
        if tags is not None:
            current = self.options.tag_set
            chosen = tags if current is None else tags & current
            # an empty choice reads no queue at all (see Pushdown.selects)
            self.options = replace(self.options, tags=" || ".join(sorted(chosen)) or "*")

    def partitions(self) -> Sequence[InputPartition]:
        planner = _Planner(self.options)
        options = self.options
        try:
            routes = planner.routes()
            io = planner.io
            maxes = {q: io.call(r.addr, calls.get_max_offset(q)) for q, r in routes.items()}
            mins = {q: io.call(r.addr, calls.get_min_offset(q)) for q, r in routes.items()}
            _check_named_queues(options, routes)
            routes = {q: r for q, r in routes.items() if self.pushed.selects(q)}
            start = resolve_start(
                options.starting,
                routes,
                min_offset=mins.__getitem__,
                latest=maxes.__getitem__,
                search=lambda q, ts: planner.search(routes, q, ts, maxes[q]),
            )
            end = _batch_end(options, planner, routes, maxes)
            for q in routes:
                if start[q] > end[q]:
                    raise ConfigError(
                        f"{q.topic} {q.broker_name}:{q.queue_id} would start at {start[q]}, past its end "
                        f"{end[q]}: check startingOffsets / endingOffsets (or their timestamps)"
                    )
                start[q] = check_data_loss(q, start[q], mins[q], fail=options.fail_on_data_loss)
            start, end = self.pushed.narrow(
                start, end, lambda q, ts: io.offset_at_or_after(routes[q], ts, group=options.pull_group)
            )
            addrs = {q: r.addr for q, r in routes.items()}
            parts = _partitions(start, end, addrs, _split_size(options, start, end))
        finally:
            planner.close()
        logger.info("rocketmq batch read of %s: %d partitions", ",".join(options.topics), len(parts))
        if not parts:
            # Spark wants at least one partition; an empty range reads nothing
            return [QueueRange(options.topics[0] if options.topics else "", "", 0, "", 0, 0)]
        if (
            len(parts) > 1
            and self.columns is not None
            and options.min_partitions is None
            and options.arrow_batches
            and answered_by_offsets(self.columns, options)
        ):
            # rows made from offsets cost next to nothing: one task for them all spares Spark a
            # task (and a Python worker's round) per range
            return [QueueRanges(parts)]
        return parts

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return _read(partition, self.options, self.columns)


class RocketMQStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("rocketmq")``: micro-batches of per-queue offset ranges.

    ``commit(end)`` stores ``end`` as the ``group``'s consumer offsets (when the option is set):
    progress reporting only, Spark's checkpoint is what a restarted query resumes from.
    """

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema
        self.columns = projection(schema)
        self._planner = _Planner(options)
        self._routes: dict[MessageQueue, QueueRoute] = {}
        self._target: OffsetMap | None = None
        self._report: dict[str, Any] | None = None
        self._last_trigger = 0.0
        self.clock: Callable[[], float] = time.monotonic

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["clock"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.clock = time.monotonic

    def _refresh(self) -> dict[MessageQueue, QueueRoute]:
        routes = self._planner.routes()
        added = sorted(set(routes) - set(self._routes))
        if self._routes and added:
            logger.info(
                "rocketmq stream: new queues %s", ", ".join(f"{q.broker_name}:{q.queue_id}" for q in added)
            )
        self._routes = routes
        return routes

    def initialOffset(self) -> dict[str, Any]:
        return self.options.starting.to_offset()

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self.options.max_offsets_per_trigger
        return ReadAllAvailable() if limit is None else ReadMaxRows(limit)

    def prepareForTriggerAvailableNow(self) -> None:
        routes = self._refresh()
        io = self._planner.io
        self._target = {q: io.call(r.addr, calls.get_max_offset(q)) for q, r in routes.items()}

    def _resolve(self, start: Mapping[str, Any], latest: Mapping[MessageQueue, int]) -> OffsetMap:
        """Numbers for ``start`` on every queue of ``latest`` (new queues: earliest)."""
        io = self._planner.io
        routes = self._routes
        if is_symbolic(start):
            position = StartingPosition.from_offset(start)
            return resolve_start(
                position,
                latest,
                min_offset=lambda q: (
                    io.call(routes[q].addr, calls.get_min_offset(q)) if q in routes else latest[q]
                ),
                latest=latest.__getitem__,
                search=lambda q, ts: (
                    self._planner.search(routes, q, ts, latest[q]) if q in routes else latest[q]
                ),
            )
        known = from_json(start, what="stream start offset")
        out: OffsetMap = {}
        for q in latest:
            if q in known:
                out[q] = known[q]
            else:
                out[q] = io.call(routes[q].addr, calls.get_min_offset(q)) if q in routes else latest[q]
        for q, v in known.items():
            out.setdefault(q, v)  # a queue that left the route keeps its position
        return out

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        routes = self._refresh()
        if is_symbolic(start):
            _check_named_queues(self.options, routes)  # as a batch read does, before the first batch
        io = self._planner.io
        available = {q: io.call(r.addr, calls.get_max_offset(q)) for q, r in routes.items()}
        latest = available
        if self._target is not None:
            latest = {q: min(v, self._target.get(q, v)) for q, v in latest.items()}
        begin = self._resolve(start, latest)
        # never move a queue backwards (a shrunk or reset queue keeps its position)
        end = {q: max(latest.get(q, begin[q]), begin[q]) for q in begin}
        if self._target is not None:
            end = {q: (begin[q] if q not in self._target else v) for q, v in end.items()}
        if is_symbolic(start) and StartingPosition.from_offset(start).kind == "latest":
            self._report_lag(available, end)
            return to_json(end)  # the first batch of a "latest" stream reads nothing
        if self._delay(start, begin, end):
            self._report_lag(available, begin)
            return start
        if isinstance(limit, ReadMaxRows):
            end = fair_limit(begin, end, limit.max_rows)
        self._report_lag(available, end)
        return to_json(end)

    def _delay(
        self, start: Mapping[str, Any], begin: Mapping[MessageQueue, int], end: Mapping[MessageQueue, int]
    ) -> bool:
        """``minOffsetsPerTrigger``: hold the batch back while fewer messages than that wait and
        the last batch is less than ``maxTriggerDelay`` ago (Kafka's rule; never under
        ``Trigger.AvailableNow``, never for the first batch)."""
        least = self.options.min_offsets_per_trigger
        now = self.clock()
        if least is None or self._target is not None or is_symbolic(start):
            self._last_trigger = now
            return False
        waiting = sum(max(0, end[q] - begin.get(q, end[q])) for q in end)
        if waiting < least and now - self._last_trigger < self.options.max_trigger_delay:
            return True
        self._last_trigger = now
        return False

    def _report_lag(
        self, available: Mapping[MessageQueue, int], consumed: Mapping[MessageQueue, int]
    ) -> None:
        """What :meth:`reportLatestOffset` shows: the queues' latest offsets and, under the
        ``$metrics`` key, how far the batch's end is behind them (Kafka's min / avg / max
        ``OffsetsBehindLatest``) and, with ``group``, how far the group's committed offsets are."""
        behind = [max(0, available[q] - consumed.get(q, available[q])) for q in available]
        metrics: dict[str, str] = {
            "minOffsetsBehindLatest": str(min(behind, default=0)),
            "avgOffsetsBehindLatest": f"{(sum(behind) / len(behind)) if behind else 0.0:.1f}",
            "maxOffsetsBehindLatest": str(max(behind, default=0)),
        }
        group = self.options.group
        if group is not None:
            io = self._planner.io
            lag = 0
            for q, top in available.items():
                route = self._routes.get(q)
                if route is None:
                    continue
                try:
                    committed = io.call(route.addr, calls.query_consumer_offset(group, q))
                except RocketQError:
                    committed = None
                lag += top - (committed if committed is not None and committed >= 0 else 0)
            metrics["groupOffsetsBehindLatest"] = str(lag)
        report: dict[str, Any] = to_json(available)
        report[METRICS_KEY] = metrics
        self._report = report

    def reportLatestOffset(self) -> dict[str, Any] | None:
        """The queues' latest offsets as of the last :meth:`latestOffset`, with the lag metrics
        under ``$metrics`` (PySpark lets a Python source fill ``latestOffset`` in a query's
        progress, not its ``metrics``)."""
        return self._report

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        end_map = from_json(end, what="stream end offset")
        if not self._routes or not set(end_map) <= set(self._routes):
            self._refresh()
        begin = self._resolve(start, end_map)
        begin = {q: min(v, end_map[q]) for q, v in begin.items() if q in end_map}
        addrs = {q: r.addr for q, r in self._routes.items()}
        missing = sorted(q for q in end_map if q not in addrs and begin.get(q, 0) < end_map[q])
        if missing:
            raise RocketQError(f"no broker address for queues {missing}: they left the topic's route")
        return _partitions(begin, end_map, addrs, _split_size(self.options, begin, end_map))

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return _read(partition, self.options, self.columns)

    def commit(self, end: dict[str, Any]) -> None:
        group = self.options.group
        if group is None or is_symbolic(end):
            return
        routes = self._routes or self._refresh()
        io = self._planner.io
        for q, offset in from_json(end, what="committed offset").items():
            route = routes.get(q)
            if route is None:
                continue
            try:
                io.call(route.addr, calls.update_consumer_offset(group, q, offset))
            except RocketQError as exc:
                logger.warning("could not record %s's offset %d on %s: %s", group, offset, q, exc)

    def stop(self) -> None:
        self._planner.close()
