"""The ``rocketmq`` data source: its schema, its options, and the :class:`RocketMQDataSource` class.

Rows (batch and streaming reads), in this order:

==================  =====================  ==========================================================
column              type                   value
==================  =====================  ==========================================================
``topic``           string                 the message's topic
``broker``          string                 broker name of its queue
``queue_id``        int                    queue id on that broker
``queue_offset``    long                   offset in the queue (the position a consumer commits)
``msg_id``          string                 the producer's unique id (``UNIQ_KEY``), else the offset id
``tags``            string                 the ``TAGS`` property (null when absent)
``keys``            string                 the ``KEYS`` property, keys separated by spaces (or null)
``body``            binary                 the body, decompressed
``born_timestamp``  timestamp              when the producer created it (producer's clock)
``store_timestamp`` timestamp              when the broker stored it (broker's clock)
``born_host``       string                 the producer's ``ip:port``
``reconsume_times`` int                    redeliveries so far (retry topics)
``properties``      map<string,string>     every property as stored (``TAGS``, ``KEYS`` included)
==================  =====================  ==========================================================

Options (keys are case-insensitive; see docs/spark.md for the whole story):

* ``namesrv`` — name servers, ``host:port`` separated by ``;`` (else ``NAMESRV_ADDR``);
* ``topic`` — one topic, or several separated by commas (reads); the default topic (writes);
* ``startingOffsets`` — ``earliest`` (batch default), ``latest`` (stream default) or offsets JSON
  ``{"topic": {"broker-a": {"0": 42}}}`` (``-2`` earliest, ``-1`` latest; queues left out start
  at earliest); ``startingTimestamp`` (epoch ms) takes precedence over it;
* ``endingOffsets`` — batch only: ``latest`` (default) or offsets JSON (``-1`` latest);
* ``tags`` — a tag expression (``*``, ``TagA || TagB``): the broker filters by tag hash, the
  reader by exact tag, as a RocketMQ consumer does;
* ``maxOffsetsPerTrigger`` — stream only: at most this many messages per micro-batch, shared
  fairly across queues;
* ``failOnDataLoss`` — ``true`` (default): fail when messages to read were removed by retention;
  ``false``: log a warning and skip them;
* ``pullBatchSize`` — messages per pull (default 4096); ``pullBatchBytes`` — bytes per pull
  (default 1 MiB): rocketq's broker answers such bulk pulls, a RocketMQ broker caps each pull at
  its own 32 messages / 256 KiB and the reader adapts;
* ``maxMessagesPerPartition`` — a queue's range is split into input partitions of at most this
  many offsets (default 100000);
* ``group`` — a consumer group: pulls are made in its name, and a stream's committed progress is
  stored as the group's offsets on the brokers (so ``rocketq group progress`` shows its lag);
* writes: ``producerGroup`` (default ``rocketq-spark-producer``), ``sendBatchSize`` (messages per
  ``SEND_BATCH_MESSAGE``, default 128) and ``sendBatchBytes`` (default 1 MiB);
* ``timeout`` — seconds to wait for a broker's answer (default 10).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from rocketq.client.config import resolve_namesrv
from rocketq.errors import ConfigError
from rocketq.spark.offsets import OffsetMap, StartingPosition, parse_offsets_option
from rocketq.spark.reader import RocketMQBatchReader, RocketMQStreamReader
from rocketq.spark.writer import RocketMQStreamWriter, RocketMQWriter

__all__ = [
    "DEFAULT_PRODUCER_GROUP",
    "DEFAULT_PULL_GROUP",
    "SCHEMA_DDL",
    "RocketMQDataSource",
    "SourceOptions",
    "parse_options",
]

SCHEMA_DDL: Final = (
    "topic string, broker string, queue_id int, queue_offset long, msg_id string, tags string, "
    "keys string, body binary, born_timestamp timestamp, store_timestamp timestamp, born_host string, "
    "reconsume_times int, properties map<string,string>"
)
"""The read schema as Spark DDL (the module docstring describes each column)."""

DEFAULT_PULL_GROUP: Final = "rocketq_spark_reader"
"""The consumer group pulls are made in when no ``group`` option is given."""
DEFAULT_PRODUCER_GROUP: Final = "rocketq-spark-producer"

_KNOWN: Final = frozenset(
    {
        "namesrv",
        "topic",
        "startingoffsets",
        "endingoffsets",
        "startingtimestamp",
        "tags",
        "maxoffsetspertrigger",
        "failondataloss",
        "pullbatchsize",
        "pullbatchbytes",
        "maxmessagesperpartition",
        "group",
        "producergroup",
        "sendbatchsize",
        "sendbatchbytes",
        "timeout",
        "arrowbatches",
        # options Spark itself (or users by habit) pass to every source and sink
        "path",
        "checkpointlocation",
    }
)


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceOptions:
    """The parsed options (see the module docstring); built by :func:`parse_options`."""

    namesrv: tuple[str, ...]
    topics: tuple[str, ...]
    starting: StartingPosition
    ending: str | OffsetMap = "latest"
    tags: str = "*"
    max_offsets_per_trigger: int | None = None
    fail_on_data_loss: bool = True
    pull_batch_size: int = 4096
    pull_batch_bytes: int = 1 << 20
    max_messages_per_partition: int = 100_000
    group: str | None = None
    producer_group: str = DEFAULT_PRODUCER_GROUP
    send_batch_size: int = 128
    send_batch_bytes: int = 1 << 20
    timeout: float = 10.0
    arrow_batches: bool = True

    @property
    def pull_group(self) -> str:
        return self.group or DEFAULT_PULL_GROUP

    @property
    def tag_set(self) -> frozenset[str] | None:
        """The tags a message must carry, ``None`` for every message (RocketMQ's parsing)."""
        expr = self.tags.strip()
        if not expr or expr == "*":
            return None
        return frozenset(t.strip() for t in expr.split("||") if t.strip())


def _int(options: Mapping[str, str], key: str, name: str, default: int, low: int = 1) -> int:
    raw = options.get(key)
    if raw is None:
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ConfigError(f"option {name!r} must be an integer, got {raw!r}") from None
    if value < low:
        raise ConfigError(f"option {name!r} must be >= {low}, got {value}")
    return value


def _bool(options: Mapping[str, str], key: str, name: str, default: bool) -> bool:
    raw = options.get(key)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise ConfigError(f"option {name!r} must be true or false, got {raw!r}")
    return value == "true"


def parse_options(
    options: Mapping[str, str], *, streaming: bool = False, writing: bool = False
) -> SourceOptions:
    """Check and parse the options of a read (``streaming`` or batch) or a write.

    Keys are matched case-insensitively. Every problem raises :class:`~rocketq.errors.ConfigError`
    naming the option.
    """
    opts = {str(k).lower(): str(v) for k, v in options.items() if v is not None}
    unknown = sorted(set(opts) - _KNOWN)
    if unknown:
        raise ConfigError(
            f"unknown option(s) {', '.join(map(repr, unknown))} for the rocketmq data source "
            "(see docs/spark.md for the options)"
        )
    namesrv_text = opts.get("namesrv") or os.environ.get("NAMESRV_ADDR")
    if not namesrv_text or not namesrv_text.strip():
        raise ConfigError("no name server: set the 'namesrv' option or the NAMESRV_ADDR environment variable")
    namesrv = resolve_namesrv(namesrv_text)
    topics = tuple(t.strip() for t in opts.get("topic", "").split(",") if t.strip())
    if not topics and not writing:
        raise ConfigError("option 'topic' is required: one topic or several separated by commas")
    if writing and len(topics) > 1:
        raise ConfigError("option 'topic' of a write names one topic, got several")

    starting: StartingPosition
    if "startingtimestamp" in opts:
        ts = _int(opts, "startingtimestamp", "startingTimestamp", 0, low=0)
        starting = StartingPosition("timestamp", timestamp=ts)
    else:
        parsed = parse_offsets_option(
            opts.get("startingoffsets", "latest" if streaming else "earliest"), "startingOffsets"
        )
        if isinstance(parsed, str):
            starting = StartingPosition("earliest" if parsed == "earliest" else "latest")
        else:
            unlisted = {q.topic for q in parsed} - set(topics)
            if unlisted:
                raise ConfigError(f"option 'startingOffsets' names topics not in 'topic': {sorted(unlisted)}")
            starting = StartingPosition("offsets", offsets=parsed)

    ending: str | OffsetMap = "latest"
    if "endingoffsets" in opts:
        if streaming:
            raise ConfigError("option 'endingOffsets' applies to batch reads only")
        ending = parse_offsets_option(opts["endingoffsets"], "endingOffsets", allowed=("latest",))
        if not isinstance(ending, str) and any(v == -2 for v in ending.values()):
            raise ConfigError("option 'endingOffsets' cannot use -2 (earliest)")

    max_per_trigger: int | None = None
    if "maxoffsetspertrigger" in opts:
        if not streaming:
            raise ConfigError("option 'maxOffsetsPerTrigger' applies to streaming reads only")
        max_per_trigger = _int(opts, "maxoffsetspertrigger", "maxOffsetsPerTrigger", 0)

    tags = opts.get("tags", "*").strip() or "*"
    group = opts.get("group", "").strip() or None
    timeout_raw = opts.get("timeout", "10")
    try:
        timeout = float(timeout_raw)
    except ValueError:
        raise ConfigError(f"option 'timeout' must be a number of seconds, got {timeout_raw!r}") from None
    if not timeout > 0:
        raise ConfigError(f"option 'timeout' must be > 0, got {timeout_raw!r}")
    return SourceOptions(
        namesrv=namesrv,
        topics=topics,
        starting=starting,
        ending=ending,
        tags=tags,
        max_offsets_per_trigger=max_per_trigger,
        fail_on_data_loss=_bool(opts, "failondataloss", "failOnDataLoss", True),
        pull_batch_size=_int(opts, "pullbatchsize", "pullBatchSize", 4096),
        pull_batch_bytes=_int(opts, "pullbatchbytes", "pullBatchBytes", 1 << 20),
        max_messages_per_partition=_int(opts, "maxmessagesperpartition", "maxMessagesPerPartition", 100_000),
        group=group,
        producer_group=opts.get("producergroup", "").strip() or DEFAULT_PRODUCER_GROUP,
        send_batch_size=_int(opts, "sendbatchsize", "sendBatchSize", 128),
        send_batch_bytes=_int(opts, "sendbatchbytes", "sendBatchBytes", 1 << 20),
        timeout=timeout,
        arrow_batches=_bool(opts, "arrowbatches", "arrowBatches", True),
    )


class RocketMQDataSource(DataSource):
    """``format("rocketmq")``: read and write RocketMQ topics, batch and streaming.

    Register it with :func:`rocketq.spark.register`. The options are parsed (and checked) when
    Spark asks for a reader or writer, on the driver.
    """

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        self.options = options

    @classmethod
    def name(cls) -> str:
        return "rocketmq"

    def schema(self) -> str:
        return SCHEMA_DDL

    def reader(self, schema: StructType) -> DataSourceReader:
        return RocketMQBatchReader(parse_options(self.options), schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return RocketMQStreamReader(parse_options(self.options, streaming=True), schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return RocketMQWriter(parse_options(self.options, writing=True), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return RocketMQStreamWriter(parse_options(self.options, writing=True), schema)
