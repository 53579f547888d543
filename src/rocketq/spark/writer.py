"""Writers of the ``rocketmq`` data source: a DataFrame's rows become messages.

Columns (others are ignored): ``body`` (required; binary or string, strings are sent as UTF-8),
``topic`` (string; else the ``topic`` option), ``tags`` (string), ``keys`` (string, several keys
separated by spaces), ``properties`` (map<string,string> of user properties). A row whose topic
is null (and no ``topic`` option) or whose body is null fails the task with a clear error.

Each task sends its rows in batches (``SEND_BATCH_MESSAGE`` of up to ``sendBatchSize`` messages
and about ``sendBatchBytes`` bytes), each batch to the next writable queue of the topic in turn,
starting at a queue chosen by the task's partition id so that tasks spread over the queues.
Every message gets a producer unique id (``UNIQ_KEY``, the ``msg_id`` a read returns) and
``WAIT=true``, as a Java producer's batch does. A refused send fails the task with the broker's
error (``CODE: <code> DESC: <remark>``); retriable refusals and transport failures are tried
again on the next queue, twice, as RocketMQ's producer does (a timed-out send may then be stored
twice: delivery is at least once). ``write()`` returns a :class:`SendCommitMessage`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import BinaryType, MapType, StringType, StructType

from rocketq.client.blocking import BlockingClient
from rocketq.client.ids import next_uniq_id
from rocketq.errors import ConfigError, RocketQError
from rocketq.models import QueueRoute
from rocketq.protocol.message import Message
from rocketq.protocol.properties import MessageConst

if TYPE_CHECKING:
    from rocketq.spark.source import SourceOptions

__all__ = [
    "RETRIES",
    "RocketMQStreamWriter",
    "RocketMQWriter",
    "SendCommitMessage",
    "check_write_schema",
    "send_rows",
]

logger = logging.getLogger(__name__)

RETRIES: Final = 2
"""Extra attempts for a send that failed retriably (Java's ``retryTimesWhenSendFailed``)."""
_MESSAGE_OVERHEAD: Final = 64
"""Bytes of a batch record besides body and properties, rounded up (for the size cap)."""


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


class _TopicSender:
    """Round-robin batches of one topic over its writable queues."""

    def __init__(
        self, io: BlockingClient, topic: str, options: SourceOptions, first: int, stats: SendCommitMessage
    ) -> None:
        self.io = io
        self.topic = topic
        self.options = options
        self.queues, self.auto_create = io.write_queues(topic)
        if not self.queues:
            raise RocketQError(f"topic {topic!r} has no writable queue")
        self.index = first
        self.stats = stats
        self.pending: list[Message] = []
        self.size = 0

    def add(self, msg: Message) -> None:
        size = len(msg.body) + _MESSAGE_OVERHEAD + sum(len(k) + len(v) + 2 for k, v in msg.properties.items())
        if self.pending and self.size + size > self.options.send_batch_bytes:
            self.flush()
        self.pending.append(msg)
        self.size += size
        if len(self.pending) >= self.options.send_batch_size:
            self.flush()

    def _next_queue(self) -> QueueRoute:
        q = self.queues[self.index % len(self.queues)]
        self.index += 1
        return q

    def flush(self) -> None:
        if not self.pending:
            return
        messages, self.pending, self.size = self.pending, [], 0
        attempt = 0
        while True:
            q = self._next_queue()
            try:
                result = self.io.send_batch(
                    q, messages, producer_group=self.options.producer_group, default_topic=self.auto_create
                )
            except RocketQError as exc:
                if not exc.retriable or attempt >= RETRIES:
                    raise
                attempt += 1
                logger.warning("send to %s failed (%s); trying the next queue", q.queue, exc)
                continue
            break
        key = result.message_queue.short
        self.stats.per_queue[key] = self.stats.per_queue.get(key, 0) + len(messages)
        self.stats.messages += len(messages)
        self.stats.batches += 1
        if self.auto_create:
            # the broker created the topic on the first send: use its real route from now on
            try:
                self.queues, self.auto_create = self.io.write_queues(self.topic)
            except RocketQError:
                pass


def send_rows(
    batches: Iterator[pa.RecordBatch], options: SourceOptions, first_queue: int = 0
) -> SendCommitMessage:
    """Send every row of ``batches`` (executor side) and return what was sent."""
    stats = SendCommitMessage()
    senders: dict[str, _TopicSender] = {}
    default_topic = options.topics[0] if options.topics else None
    with BlockingClient(list(options.namesrv), timeout=options.timeout) as io:
        for batch in batches:
            names = batch.schema.names
            n = batch.num_rows

            def column(name: str, names: Sequence[str] = names, batch: pa.RecordBatch = batch) -> list[Any]:
                return (
                    batch.column(names.index(name)).to_pylist() if name in names else [None] * batch.num_rows
                )

            bodies = column("body")
            topics = column("topic")
            tags = column("tags")
            keys = column("keys")
            props = column("properties")
            for i in range(n):
                body = bodies[i]
                topic = topics[i] or default_topic
                if topic is None:
                    raise ConfigError("a row has a null 'topic' and no 'topic' option is set")
                if body is None:
                    raise ConfigError(f"a row for topic {topic!r} has a null 'body'")
                if isinstance(body, str):
                    body = body.encode()
                properties: dict[str, str] = {}
                if tags[i] is not None:
                    properties[MessageConst.TAGS] = str(tags[i])
                if keys[i] is not None:
                    properties[MessageConst.KEYS] = str(keys[i])
                properties[MessageConst.WAIT] = "true"
                user = props[i]
                if user:
                    properties.update((str(k), str(v)) for k, v in user if v is not None)
                properties[MessageConst.UNIQ_KEY] = next_uniq_id()
                sender = senders.get(topic)
                if sender is None:
                    sender = senders[topic] = _TopicSender(io, topic, options, first_queue, stats)
                sender.add(Message(topic, bytes(body), 0, properties))
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
