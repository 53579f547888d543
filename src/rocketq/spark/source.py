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

Options (keys are case-insensitive; docs/spark.md has the table, and Kafka's options one by one):

* where: ``namesrv`` (name servers, else ``NAMESRV_ADDR``), ``topic`` / ``subscribe`` (a comma
  list), ``subscribePattern`` (a regular expression over the name server's topics), ``assign``
  (``{"T": {"broker-a": [0, 1]}}``);
* from: ``startingOffsets`` (``earliest``, ``latest`` in streams, offsets JSON
  ``{"topic": {"broker-a": {"0": 42}}}`` with -2/-1), ``startingTimestamp``,
  ``startingOffsetsByTimestamp`` and ``startingOffsetsByTimestampStrategy`` (``error`` / ``latest``);
* to (batch reads): ``endingOffsets``, ``endingTimestamp``, ``endingOffsetsByTimestamp``;
* how much (streams): ``maxOffsetsPerTrigger``, ``minOffsetsPerTrigger`` with ``maxTriggerDelay``;
* how: ``tags``, ``failOnDataLoss``, ``minPartitions``, ``pullBatchSize``, ``pullBatchBytes``,
  ``maxMessagesPerPartition``, ``group``, ``timeout``, ``arrowBatches``; ``tls.enable`` and
  ``tls.client.*`` (RocketMQ's names: TLS to the servers, docs/security.md);
* writes: ``producerGroup``, ``sendBatchSize``, ``sendBatchBytes``, ``exactlyOnce``;
* who (a broker with ACL on): ``accessKey`` and ``secretKey``, which sign every request
  (Spark's ``spark.redaction.regex`` hides ``secretKey``'s value in plans and the UI).

Every option that does not depend on batch vs stream (or read vs write) is checked when Spark
creates the source, at ``load()``: :func:`parse_options` raises one line naming the option in
this spelling and the values it accepts.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, NoReturn

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.streaming.datasource import ReadLimit
from pyspark.sql.types import StructType

from rocketq.client.config import TlsClientConfig, credentials_of, resolve_namesrv
from rocketq.errors import ConfigError
from rocketq.models import MessageQueue
from rocketq.protocol.acl import Credentials
from rocketq.spark.offsets import (
    EARLIEST,
    LATEST,
    OffsetMap,
    StartingPosition,
    parse_offsets_option,
    queue_name,
)

if TYPE_CHECKING:
    from rocketq.client.blocking import BlockingClient

# The reader, the writer and the blocking client (pyarrow, numpy, the remoting client) are
# imported when Spark asks for them: Spark creates the source in a Python worker of its own at
# load(), where only the options are checked.

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

_NAMES: Final = (
    "namesrv",
    "nameServer",
    "topic",
    "subscribe",
    "subscribePattern",
    "assign",
    "startingOffsets",
    "endingOffsets",
    "startingTimestamp",
    "endingTimestamp",
    "startingOffsetsByTimestamp",
    "endingOffsetsByTimestamp",
    "startingOffsetsByTimestampStrategy",
    "tags",
    "maxOffsetsPerTrigger",
    "minOffsetsPerTrigger",
    "maxTriggerDelay",
    "minPartitions",
    "failOnDataLoss",
    "pullBatchSize",
    "pullBatchBytes",
    "maxMessagesPerPartition",
    "maxRecordsPerPartition",
    "group",
    "producerGroup",
    "sendBatchSize",
    "sendBatchBytes",
    "exactlyOnce",
    "timeout",
    "arrowBatches",
    # TLS, by RocketMQ's client property names (tls.enable, tls.client.*)
    "tls.enable",
    "tls.client.trustCertPath",
    "tls.client.certPath",
    "tls.client.keyPath",
    "tls.client.authServer",
    # ACL: the account every request is signed for
    "accessKey",
    "secretKey",
    # options Spark itself (or users by habit) pass to every source and sink
    "path",
    "checkpointLocation",
)
"""Every option, in rocketq's spelling (Spark hands a data source its keys lower-cased)."""
OPTION_NAMES: Final = {name.lower(): name for name in _NAMES}
ALIASES: Final = {"nameserver": "namesrv", "maxrecordsperpartition": "maxmessagesperpartition"}
"""Other connectors' names for an option (rocketmq-spark's ``nameServer``, Kafka's
``maxRecordsPerPartition``), read as rocketq's (``subscribe`` is handled with ``topic``)."""

KAFKA_ONLY: Final = {
    "kafka.bootstrap.servers": "use 'namesrv' (name servers, host:port separated by ';')",
    "kafka.group.id": "use 'group'",
    "groupidprefix": "use 'group' (a stream's progress is stored as that group's offsets)",
    "includeheaders": "the 'properties' column always holds every property",
    "kafkaconsumer.polltimeoutms": "use 'timeout' (seconds)",
    "fetchoffset.numretries": "rocketq asks each broker once per plan (see 'timeout')",
    "fetchoffset.retryintervalms": "rocketq asks each broker once per plan (see 'timeout')",
    "maxoffsetspertrigger.bytes": "no byte limit: use 'maxOffsetsPerTrigger'",
    "key.serializer": "keys are strings: the 'key' / 'keys' columns",
    "value.serializer": "bodies are bytes or UTF-8 strings: the 'body' (or 'value') column",
    "key.deserializer": "the 'keys' column is a string",
    "value.deserializer": "the 'body' column is binary",
}
"""Kafka options with no RocketMQ meaning, and what to use instead (the unknown-option error)."""

DEFAULT_MAX_TRIGGER_DELAY: Final = 15 * 60.0
"""Kafka's ``maxTriggerDelay`` default (15 minutes), in seconds."""

_DURATION: Final = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h|d)?\s*$", re.IGNORECASE)
_UNITS: Final = {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceOptions:
    """The parsed options (see the module docstring); built by :func:`parse_options`."""

    namesrv: tuple[str, ...]
    topics: tuple[str, ...]
    starting: StartingPosition
    topic_pattern: str | None = None
    assign: frozenset[MessageQueue] | None = None
    ending: str | OffsetMap = "latest"
    ending_timestamp: int | None = None
    ending_timestamps: OffsetMap | None = None
    timestamp_strategy: str = "error"
    tags: str = "*"
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay: float = DEFAULT_MAX_TRIGGER_DELAY
    min_partitions: int | None = None
    fail_on_data_loss: bool = True
    pull_batch_size: int = 4096
    pull_batch_bytes: int = 1 << 20
    max_messages_per_partition: int = 100_000
    group: str | None = None
    producer_group: str = DEFAULT_PRODUCER_GROUP
    send_batch_size: int = 128
    send_batch_bytes: int = 1 << 20
    exactly_once: bool = True
    timeout: float = 10.0
    arrow_batches: bool = True
    tls: TlsClientConfig | None = None
    #: The ACL account every request is signed for (``accessKey`` / ``secretKey``).
    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)

    @property
    def credentials(self) -> Credentials | None:
        """The keys requests are signed with (``None``: unsigned)."""
        return credentials_of(self.access_key, self.secret_key)

    def client(self) -> BlockingClient:
        """A blocking client of these name servers, with this timeout, account and TLS."""
        from rocketq.client.blocking import BlockingClient  # noqa: PLC0415 - on demand (see the imports)

        return BlockingClient(
            list(self.namesrv), timeout=self.timeout, credentials=self.credentials, tls=self.tls
        )

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


def _int(options: Mapping[str, str], key: str, default: int, low: int = 1) -> int:
    raw = options.get(key)
    name = OPTION_NAMES[key]
    if raw is None:
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ConfigError(f"option {name!r} must be an integer >= {low}, got {raw!r}") from None
    if value < low:
        raise ConfigError(f"option {name!r} must be an integer >= {low}, got {value}")
    return value


def _bool(options: Mapping[str, str], key: str, default: bool) -> bool:
    raw = options.get(key)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise ConfigError(f"option {OPTION_NAMES[key]!r} must be true or false, got {raw!r}")
    return value == "true"


def parse_duration(text: str, option: str) -> float:
    """Seconds of a Spark-style duration (``15m``, ``30s``, ``500ms``, ``1h``; a bare number is
    milliseconds, as Spark's ``timeStringAsMs`` reads it)."""
    m = _DURATION.match(text)
    if m is None:
        raise ConfigError(f"option {option!r} must be a duration like 500ms, 30s, 15m or 1h, got {text!r}")
    return float(m.group(1)) * _UNITS[(m.group(2) or "ms").lower()]


def _unknown(key: str) -> str:
    hint = KAFKA_ONLY.get(key)
    if hint is not None:
        return f"{key!r} is a Kafka option with no RocketMQ meaning: {hint}"
    close = difflib.get_close_matches(key, list(OPTION_NAMES), n=1, cutoff=0.75)
    guess = f" (did you mean {OPTION_NAMES[close[0]]!r}?)" if close else ""
    return f"{key!r}{guess}"


def _timestamps_option(opts: Mapping[str, str], key: str) -> OffsetMap:
    value = parse_offsets_option(opts[key], OPTION_NAMES[key], allowed=())
    assert not isinstance(value, str)
    bad = sorted(queue_name(q) for q, ts in value.items() if ts < 0)
    if bad:
        raise ConfigError(f"option {OPTION_NAMES[key]!r} holds negative timestamps for {', '.join(bad)}")
    return value


def parse_assign(text: str) -> frozenset[MessageQueue]:
    """The queues of an ``assign`` option: ``{"T": {"broker-a": [0, 1]}}`` (Kafka's
    ``{"T": [0, 1]}`` with the broker level RocketMQ queues have)."""
    shape = 'JSON like {"T": {"broker-a": [0, 1]}}'
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"option 'assign' must be {shape}: {exc}") from None
    if not isinstance(obj, dict) or not obj:
        raise ConfigError(f"option 'assign' must be {shape}")
    out: set[MessageQueue] = set()
    for topic, brokers in obj.items():
        if not isinstance(brokers, dict) or not brokers:
            raise ConfigError(f"option 'assign': topic {topic!r} must map broker names to lists of queue ids")
        for broker, ids in brokers.items():
            if not isinstance(ids, list) or not ids or any(type(i) is not int or i < 0 for i in ids):
                raise ConfigError(f"option 'assign': {topic}/{broker} must be a list of queue ids >= 0")
            out.update(MessageQueue(topic, broker, i) for i in ids)
    return frozenset(out)


def parse_options(
    options: Mapping[str, str], *, streaming: bool | None = False, writing: bool = False
) -> SourceOptions:
    """Check and parse the options of a read (``streaming`` or batch) or a write; with
    ``streaming=None`` (the data source being created at ``load()``, mode unknown), every check
    that does not depend on the mode.

    Keys are matched case-insensitively. Every problem raises :class:`~rocketq.errors.ConfigError`
    naming the option (in rocketq's spelling) and the values it accepts. The checks run in this
    order (the first problem is the one reported): the names, the name server, what is read, where
    it starts, where it ends, how much a trigger reads, then the single-valued options.
    """
    opts = _normalised(options)
    reading = not writing
    batch = streaming is False and reading
    stream = streaming is True
    namesrv = _namesrv(opts)
    sub = _subscription(opts, reading=reading, writing=writing)
    starting = _starting(opts, sub, batch=batch, stream=stream)
    strategy = _timestamp_strategy(opts)
    ending, ending_timestamp, ending_timestamps = _ending(opts, sub, starting, stream=stream)
    max_per_trigger, min_per_trigger, max_delay = _trigger_limits(opts, batch=batch)
    timeout = _timeout(opts)
    access_key, secret_key = _keys(opts)
    return SourceOptions(
        namesrv=namesrv,
        topics=sub.topics,
        starting=starting,
        topic_pattern=sub.pattern,
        assign=sub.assign,
        ending=ending,
        ending_timestamp=ending_timestamp,
        ending_timestamps=ending_timestamps,
        timestamp_strategy=strategy,
        tags=opts.get("tags", "*").strip() or "*",
        max_offsets_per_trigger=max_per_trigger,
        min_offsets_per_trigger=min_per_trigger,
        max_trigger_delay=max_delay,
        min_partitions=_int(opts, "minpartitions", 0) if "minpartitions" in opts else None,
        fail_on_data_loss=_bool(opts, "failondataloss", True),
        pull_batch_size=_int(opts, "pullbatchsize", 4096),
        pull_batch_bytes=_int(opts, "pullbatchbytes", 1 << 20),
        max_messages_per_partition=_int(opts, "maxmessagesperpartition", 100_000),
        group=opts.get("group", "").strip() or None,
        producer_group=opts.get("producergroup", "").strip() or DEFAULT_PRODUCER_GROUP,
        send_batch_size=_int(opts, "sendbatchsize", 128),
        send_batch_bytes=_int(opts, "sendbatchbytes", 1 << 20),
        exactly_once=_bool(opts, "exactlyonce", True),
        timeout=timeout,
        arrow_batches=_bool(opts, "arrowbatches", True),
        tls=_tls(opts),
        access_key=access_key,
        secret_key=secret_key,
    )


def _keys(opts: Mapping[str, str]) -> tuple[str | None, str | None]:
    """``accessKey`` and ``secretKey``: both or neither (the error never shows the secret)."""
    access_key, secret_key = opts.get("accesskey"), opts.get("secretkey")
    if access_key is None and secret_key is None:
        return None, None
    if not access_key or not access_key.strip():
        raise ConfigError("option 'secretKey' needs option 'accessKey' (the ACL account it signs for)")
    if not secret_key:
        raise ConfigError("option 'accessKey' needs option 'secretKey' (the key requests are signed with)")
    return access_key.strip(), secret_key


def _normalised(options: Mapping[str, str]) -> dict[str, str]:
    """The options keyed by lower-cased rocketq name: unknown names refused (with a guess or the
    Kafka hint), other connectors' aliases renamed (refused when both spellings are given)."""
    opts = {str(k).lower(): str(v) for k, v in options.items() if v is not None}
    unknown = sorted(set(opts) - set(OPTION_NAMES))
    if unknown:
        raise ConfigError(
            f"unknown option {'; '.join(_unknown(k) for k in unknown)} for the rocketmq data source "
            "(docs/spark.md lists the options)"
        )
    for alias, name in ALIASES.items():
        if alias in opts:
            if name in opts:
                raise ConfigError(
                    f"options {OPTION_NAMES[name]!r} and {OPTION_NAMES[alias]!r} are the same: "
                    "give one of them"
                )
            opts[name] = opts.pop(alias)
    return opts


def _namesrv(opts: Mapping[str, str]) -> tuple[str, ...]:
    """The ``namesrv`` option, else ``NAMESRV_ADDR``, as ``host:port`` addresses."""
    namesrv_text = opts.get("namesrv") or os.environ.get("NAMESRV_ADDR")
    if not namesrv_text or not namesrv_text.strip():
        raise ConfigError("no name server: set the 'namesrv' option or the NAMESRV_ADDR environment variable")
    try:
        return resolve_namesrv(namesrv_text)
    except ConfigError as exc:
        raise ConfigError(f"option 'namesrv': {exc} (name servers separated by ';')") from None


@dataclass(frozen=True, slots=True)
class _Subscription:
    """What is read or written: named topics, a topic pattern, or assigned queues (their topics)."""

    topics: tuple[str, ...]
    pattern: str | None
    assign: frozenset[MessageQueue] | None

    def check(self, what: str, queues: Iterable[MessageQueue]) -> None:
        """Refuse option ``what`` naming queues this subscription does not read."""
        known_topics = None if self.pattern is not None else set(self.topics)
        unlisted = {q.topic for q in queues} - known_topics if known_topics is not None else set()
        if unlisted:
            raise ConfigError(f"option {what!r} names topics not read: {sorted(unlisted)}")
        if self.assign is not None:
            extra = sorted(queue_name(q) for q in queues if q not in self.assign)
            if extra:
                raise ConfigError(f"option {what!r} names queues not in 'assign': {', '.join(extra)}")


def _subscription(opts: Mapping[str, str], *, reading: bool, writing: bool) -> _Subscription:
    """``topic`` / ``subscribe``, ``subscribePattern`` or ``assign``: a read gives exactly one, a
    write at most one topic."""
    if "topic" in opts and "subscribe" in opts:
        raise ConfigError("options 'topic' and 'subscribe' are the same: give one of them")
    topic_text = opts.get("topic", opts.get("subscribe", ""))
    topics = tuple(t.strip() for t in topic_text.split(",") if t.strip())
    subscribers = [n for n in ("topic", "subscribe", "subscribepattern", "assign") if n in opts]
    pattern = _topic_pattern(opts["subscribepattern"]) if "subscribepattern" in opts else None
    assign = parse_assign(opts["assign"]) if "assign" in opts else None
    if reading and len(subscribers) > 1:
        raise ConfigError(
            "give one of the options 'topic' (or 'subscribe'), 'subscribePattern' and 'assign', got "
            + ", ".join(OPTION_NAMES[n] for n in subscribers)
        )
    if reading and not subscribers:
        raise ConfigError(
            "option 'topic' is required: one topic or several separated by commas "
            "(or 'subscribePattern' / 'assign')"
        )
    if "topic" in opts and not topics and reading:
        raise ConfigError("option 'topic' names no topic: one topic or several separated by commas")
    if writing and len(topics) > 1:
        raise ConfigError("option 'topic' of a write names one topic, got several")
    if assign is not None:
        topics = tuple(sorted({q.topic for q in assign}))
    return _Subscription(topics, pattern, assign)


def _topic_pattern(text: str) -> str:
    pattern = text.strip()
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"option 'subscribePattern' is not a regular expression: {exc}") from None
    if not pattern:
        raise ConfigError("option 'subscribePattern' must be a non-empty regular expression")
    return pattern


def _starting(opts: Mapping[str, str], sub: _Subscription, *, batch: bool, stream: bool) -> StartingPosition:
    """``startingTimestamp``, ``startingOffsetsByTimestamp`` or ``startingOffsets`` (one of them)."""
    starters = [n for n in ("startingoffsetsbytimestamp", "startingtimestamp") if n in opts]
    if len(starters) > 1:
        raise ConfigError("give one of 'startingTimestamp' and 'startingOffsetsByTimestamp'")
    if "startingtimestamp" in opts:
        return StartingPosition("timestamp", timestamp=_int(opts, "startingtimestamp", 0, low=0))
    if "startingoffsetsbytimestamp" in opts:
        per_queue = _timestamps_option(opts, "startingoffsetsbytimestamp")
        sub.check("startingOffsetsByTimestamp", per_queue)
        return StartingPosition("timestamps", offsets=per_queue)
    return _starting_offsets(opts, sub, batch=batch, stream=stream)


def _starting_offsets(
    opts: Mapping[str, str], sub: _Subscription, *, batch: bool, stream: bool
) -> StartingPosition:
    """``startingOffsets``: earliest (a batch's default), latest (a stream's, refused in a batch),
    or offsets JSON (-1 refused in a batch)."""
    default = "latest" if stream else "earliest"
    parsed_start = parse_offsets_option(opts.get("startingoffsets", default), "startingOffsets")
    if isinstance(parsed_start, str):
        if parsed_start == "latest" and batch:
            raise ConfigError(
                "option 'startingOffsets' cannot be latest in a batch read (it would read nothing): "
                "use earliest, offsets JSON or a timestamp"
            )
        return StartingPosition("earliest" if parsed_start == "earliest" else "latest")
    sub.check("startingOffsets", parsed_start)
    if batch and any(v == LATEST for v in parsed_start.values()):
        raise ConfigError("option 'startingOffsets' cannot use -1 (latest) in a batch read")
    return StartingPosition("offsets", offsets=parsed_start)


def _timestamp_strategy(opts: Mapping[str, str]) -> str:
    strategy = opts.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise ConfigError(
            f"option 'startingOffsetsByTimestampStrategy' must be error or latest, got "
            f"{opts['startingoffsetsbytimestampstrategy']!r}"
        )
    return strategy


def _ending(
    opts: Mapping[str, str], sub: _Subscription, starting: StartingPosition, *, stream: bool
) -> tuple[str | OffsetMap, int | None, OffsetMap | None]:
    """A batch read's end: (``endingOffsets``, ``endingTimestamp``, ``endingOffsetsByTimestamp``),
    at most one of them given (refused in a stream)."""
    enders = [n for n in ("endingoffsets", "endingtimestamp", "endingoffsetsbytimestamp") if n in opts]
    if stream and enders:
        raise ConfigError(f"option {OPTION_NAMES[enders[0]]!r} applies to batch reads only")
    if len(enders) > 1:
        raise ConfigError(
            "give one of 'endingOffsets', 'endingTimestamp' and 'endingOffsetsByTimestamp', got "
            + ", ".join(OPTION_NAMES[n] for n in enders)
        )
    if "endingoffsets" in opts:
        return _ending_offsets(opts, sub, starting), None, None
    if "endingtimestamp" in opts:
        ending_timestamp = _int(opts, "endingtimestamp", 0, low=0)
        if (
            starting.kind == "timestamp"
            and starting.timestamp is not None
            and starting.timestamp > ending_timestamp
        ):
            raise ConfigError(
                f"options 'startingTimestamp' ({starting.timestamp}) and 'endingTimestamp' "
                f"({ending_timestamp}): the start is past the end"
            )
        return "latest", ending_timestamp, None
    if "endingoffsetsbytimestamp" in opts:
        ending_timestamps = _timestamps_option(opts, "endingoffsetsbytimestamp")
        sub.check("endingOffsetsByTimestamp", ending_timestamps)
        return "latest", None, ending_timestamps
    return "latest", None, None


def _ending_offsets(
    opts: Mapping[str, str], sub: _Subscription, starting: StartingPosition
) -> str | OffsetMap:
    """``endingOffsets``: latest or offsets JSON (-2 refused, none before its queue's start)."""
    ending = parse_offsets_option(opts["endingoffsets"], "endingOffsets", allowed=("latest",))
    if isinstance(ending, str):
        return ending
    if any(v == EARLIEST for v in ending.values()):
        raise ConfigError("option 'endingOffsets' cannot use -2 (earliest)")
    sub.check("endingOffsets", ending)
    if starting.kind == "offsets":
        for q, end in ending.items():
            begin = starting.offsets.get(q, EARLIEST)
            if end != LATEST and begin >= 0 and begin > end:
                raise ConfigError(
                    f"options 'startingOffsets' and 'endingOffsets': {queue_name(q)} would start "
                    f"at {begin}, past its end {end}"
                )
    return ending


def _trigger_limits(opts: Mapping[str, str], *, batch: bool) -> tuple[int | None, int | None, float]:
    """A stream's (``maxOffsetsPerTrigger``, ``minOffsetsPerTrigger``, ``maxTriggerDelay``)
    (refused in a batch read)."""
    for key in ("maxoffsetspertrigger", "minoffsetspertrigger", "maxtriggerdelay"):
        if batch and key in opts:
            raise ConfigError(f"option {OPTION_NAMES[key]!r} applies to streaming reads only")
    max_per_trigger = _int(opts, "maxoffsetspertrigger", 0) if "maxoffsetspertrigger" in opts else None
    min_per_trigger: int | None = None
    if "minoffsetspertrigger" in opts:
        min_per_trigger = _int(opts, "minoffsetspertrigger", 0)
        if max_per_trigger is not None and min_per_trigger > max_per_trigger:
            raise ConfigError(
                f"option 'minOffsetsPerTrigger' ({min_per_trigger}) is over 'maxOffsetsPerTrigger' "
                f"({max_per_trigger})"
            )
    max_delay = DEFAULT_MAX_TRIGGER_DELAY
    if "maxtriggerdelay" in opts:
        max_delay = parse_duration(opts["maxtriggerdelay"], "maxTriggerDelay")
    return max_per_trigger, min_per_trigger, max_delay


def _tls(opts: Mapping[str, str]) -> TlsClientConfig | None:
    """The ``tls.*`` options: ``None`` (plaintext) unless ``tls.enable`` is true. The files are
    read by each executor's client; a file missing on the driver is refused here already."""
    if not _bool(opts, "tls.enable", False):
        given = [OPTION_NAMES[k] for k in opts if k.startswith("tls.")]
        if given:
            raise ConfigError(f"option {given[0]!r} needs 'tls.enable' set to true")
        return None
    auth_server = _bool(opts, "tls.client.authserver", True)
    try:
        config = TlsClientConfig(
            enable=True,
            trust_cert_path=opts.get("tls.client.trustcertpath") or None,
            cert_path=opts.get("tls.client.certpath") or None,
            key_path=opts.get("tls.client.keypath") or None,
            auth_server=auth_server,
        )
        config.context()  # the files read now: one that cannot be is this ConfigError
    except ConfigError as exc:  # "tls.client.trustCertPath: no such file ..." -> "option '...': ..."
        name, sep, rest = str(exc).partition(": ")
        if sep and name in OPTION_NAMES.values():
            raise ConfigError(f"option {name!r}: {rest}") from None
        raise
    return config


def _timeout(opts: Mapping[str, str]) -> float:
    timeout_raw = opts.get("timeout", "10")
    try:
        timeout = float(timeout_raw)
    except ValueError:
        raise ConfigError(f"option 'timeout' must be a number of seconds > 0, got {timeout_raw!r}") from None
    if not timeout > 0:
        raise ConfigError(f"option 'timeout' must be a number of seconds > 0, got {timeout_raw!r}")
    return timeout


class RocketMQDataSource(DataSource):
    """``format("rocketmq")``: read and write RocketMQ topics, batch and streaming.

    Register it with :func:`rocketq.spark.register`. Spark creates it at ``load()``: the options
    that do not depend on batch vs stream (or read vs write) are checked there, the rest when
    Spark asks for a reader or writer, on the driver.
    """

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        self.options = options
        try:
            parse_options(options, streaming=None, writing="topic" not in _lower(options))
        except ConfigError as exc:
            raise ConfigError(str(exc)) from None  # one frame in the traceback Spark prints

    @classmethod
    def name(cls) -> str:
        return "rocketmq"

    def schema(self) -> str:
        return SCHEMA_DDL

    def reader(self, schema: StructType) -> DataSourceReader:
        from rocketq.spark.reader import RocketMQBatchReader  # noqa: PLC0415 - on demand (see the imports)

        return RocketMQBatchReader(_checked(self.options, streaming=False), schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from rocketq.spark.reader import RocketMQStreamReader  # noqa: PLC0415 - on demand (see the imports)

        try:
            return RocketMQStreamReader(parse_options(self.options, streaming=True), schema)
        except ConfigError as exc:
            # raised from here, PySpark's stream runner hides it behind its own UnboundLocalError
            return _RefusedStreamReader(str(exc))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from rocketq.spark.writer import RocketMQWriter  # noqa: PLC0415 - on demand (see the imports)

        _no_overwrite(overwrite)
        return RocketMQWriter(_checked(self.options, writing=True), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from rocketq.spark.writer import RocketMQStreamWriter  # noqa: PLC0415 - on demand (see the imports)

        _no_overwrite(overwrite)
        return RocketMQStreamWriter(_checked(self.options, writing=True), schema)


def _lower(options: Mapping[str, str]) -> set[str]:
    return {str(k).lower() for k in options}


def _checked(options: Mapping[str, str], *, streaming: bool = False, writing: bool = False) -> SourceOptions:
    try:
        return parse_options(options, streaming=streaming, writing=writing)
    except ConfigError as exc:
        raise ConfigError(str(exc)) from None  # one frame in the traceback Spark prints


def _no_overwrite(overwrite: bool) -> None:
    if overwrite:
        raise ConfigError(
            "save mode 'overwrite' is not supported: a RocketMQ topic is append-only (use mode('append'))"
        )


class _RefusedStreamReader(DataSourceStreamReader):
    """A stream whose options were refused: every call raises the one-line error."""

    def __init__(self, message: str) -> None:
        self.message = message

    def _fail(self) -> NoReturn:
        raise ConfigError(self.message)

    def initialOffset(self) -> dict[str, Any]:
        self._fail()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        self._fail()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        self._fail()

    def read(self, partition: InputPartition) -> Iterator[Any]:
        self._fail()
