"""The rebalance analytics on Spark: read and shape the records, then judge them in plain Python.

Inputs, read with the ``rocketmq`` data source (:func:`read_inputs`):

* the trace topic (``RMQ_SYS_TRACE_TOPIC``): RocketMQ's trace text, written by Java clients with
  ``enableMsgTrace`` and by rocketq clients with ``trace=True`` (:mod:`rocketq.client.trace`);
  lines are split and typed with Spark SQL functions, not Python;
* the rebalance topic (``RQ_SYS_REBALANCE_TOPIC``): the JSON rebalance records of traced rocketq
  consumers;
* the consumed topics themselves, for each message's queue, offset and store time: trace lines
  name a message only by its msg id, so deliveries are joined with the topic's rows on ``msg_id``.

Who consumed: a Sub line names the group, not the consumer. rocketq's trace messages carry the
consumer's client id (property ``rqClientId``); for other clients the trace message's born host
(the trace producer's ``ip:port``) stands in.

Spark parses, joins and writes; the figures are judged once, by :func:`rocketq.analytics.analyze`
(the code ``rocketq demo`` and ``rocketq lab rebalance-cost`` use on their own records), over the
deliveries, rebalance records and stored messages collected to the driver (:func:`compute_tables`:
three narrow columns sets, a few hundred bytes a message).

Output tables (every time is epoch ms):

``consumption``
    one row per delivery (a SubBefore, joined with its SubAfter by request id and msg id, and
    with the message): ``group, client_id, request_id, msg_id, topic, broker, queue_id,
    queue_offset, retry_times, start_ms, end_ms, cost_ms, success, context_code, store_ms,
    latency_ms`` (start - store), and as judged: ``delivery`` (1 = first), ``first_client_id``,
    ``first_start_ms``, ``duplicate``.
``rebalances``
    the records of the group (retry topics left out): ``group, client_id, seq, trigger, topic,
    strategy, n_clients, client_ids, owned, added, removed`` (queues as ``broker:queue_id``),
    ``changed, start_ms, end_ms, duration_ms, error``.
``ownership``
    one row per stretch of a queue owned by a client: ``group, topic, broker, queue_id,
    client_id, from_ms, to_ms, added_by, added_seq, removed_by``.
``duplicates``
    the duplicate deliveries, each with the rebalance record it is attributed to
    (``rebalance_client_id, rebalance_seq, rebalance_trigger, rebalance_ms, rebalance_kind``;
    null when none), the change of the group it falls in (``change``) and the first delivery
    (``first_client_id, first_start_ms``).
``pauses``
    one row per queue move: ``from_client, to_client, removed_ms, added_ms, trigger,
    last_consumed_ms, last_consumed_by, first_consumed_ms, first_message_store_ms,
    pause_start_ms, pause_ms, pause_start_kind, change``.
``lag``
    per queue and time bucket: ``produced`` (messages stored), ``consumed`` (first deliveries
    begun), ``lag`` (the backlog at the bucket's end) and ``peak`` (its highest value in it).

>>> choose_bucket_ms(0, 59_000)
1000
>>> choose_bucket_ms(0, 3_600_000)
60000
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from rocketq.analytics import Analysis, Delivery, RebalanceEvent, Stored, analyze, backlog_buckets
from rocketq.client.blocking import BlockingClient
from rocketq.client.trace import CLIENT_ID_PROPERTY, REBALANCE_TOPIC
from rocketq.errors import TopicNotExistError
from rocketq.models import MessageQueue
from rocketq.protocol.acl import Credentials
from rocketq.protocol.trace import CONTENT_SPLITOR, FIELD_SPLITOR, RMQ_SYS_TRACE_TOPIC
from rocketq.spark.source import SCHEMA_DDL

__all__ = [
    "TABLES",
    "Inputs",
    "choose_bucket_ms",
    "collect_records",
    "compute_tables",
    "consumption_table",
    "parse_rebalances",
    "parse_traces",
    "read_inputs",
    "read_topic",
    "rebalances_table",
]

logger = logging.getLogger(__name__)

TABLES: Final = ("consumption", "ownership", "rebalances", "duplicates", "pauses", "lag")
"""The tables :func:`compute_tables` returns, in the order they are written."""

_QUEUE = T.StructType(
    [
        T.StructField("topic", T.StringType()),
        T.StructField("broker", T.StringType()),
        T.StructField("queue_id", T.IntegerType()),
    ]
)
REBALANCE_SCHEMA: Final = T.StructType(
    [
        T.StructField("v", T.IntegerType()),
        T.StructField("seq", T.LongType()),
        T.StructField("trigger", T.StringType()),
        T.StructField("group", T.StringType()),
        T.StructField("client_id", T.StringType()),
        T.StructField("topic", T.StringType()),
        T.StructField("message_model", T.StringType()),
        T.StructField("strategy", T.StringType()),
        T.StructField("client_ids", T.ArrayType(T.StringType())),
        T.StructField("owned", T.ArrayType(_QUEUE)),
        T.StructField("added", T.ArrayType(_QUEUE)),
        T.StructField("removed", T.ArrayType(_QUEUE)),
        T.StructField("changed", T.BooleanType()),
        T.StructField("start_ms", T.LongType()),
        T.StructField("end_ms", T.LongType()),
        T.StructField("duration_ms", T.LongType()),
        T.StructField("error", T.StringType()),
    ]
)
"""The part of the rebalance JSON (see :mod:`rocketq.client.trace`) the jobs read."""

_BUCKETS = (100, 250, 500, 1000, 2000, 5000, 10_000, 15_000, 30_000, 60_000, 300_000, 600_000, 3_600_000)


def choose_bucket_ms(first_ms: int, last_ms: int, target: int = 60) -> int:
    """A round time bucket giving about ``target`` buckets (or fewer) over ``[first, last]``."""
    span = max(0, last_ms - first_ms)
    for b in _BUCKETS:
        if span / b <= target:
            return b
    return _BUCKETS[-1]


# ------------------------------------------------------------------------------------ reading


@dataclass(frozen=True)
class Inputs:
    """Raw rows (the data source's schema) of the trace, rebalance and consumed topics."""

    traces: DataFrame
    rebalances: DataFrame
    messages: DataFrame


def read_topic(
    spark: SparkSession,
    namesrv: str,
    topics: Sequence[str],
    *,
    since_ms: int | None = None,
    credentials: Credentials | None = None,
) -> DataFrame:
    """Every message of ``topics`` that exist (stored at or after ``since_ms`` when given), through
    the ``rocketmq`` source (its requests signed with ``credentials`` for a broker's ACL); an empty
    frame of the source's schema when none exists. A name server that does not answer raises
    (:class:`~rocketq.errors.RemotingError`)."""
    present = []
    with BlockingClient(namesrv, credentials=credentials) as io:
        for topic in topics:
            try:
                if io.read_queues(topic):
                    present.append(topic)
            except TopicNotExistError as exc:  # transport errors propagate: no name server answered
                logger.info("topic %s does not exist (%s); taken as empty", topic, exc)
    if not present:
        return spark.createDataFrame([], SCHEMA_DDL)
    reader = spark.read.format("rocketmq").option("namesrv", namesrv).option("topic", ",".join(present))
    if since_ms is not None:
        reader = reader.option("startingTimestamp", str(since_ms))
    if credentials is not None:
        reader = reader.option("accessKey", credentials.access_key).option(
            "secretKey", credentials.secret_key
        )
    return reader.load()


def read_inputs(
    spark: SparkSession,
    namesrv: str,
    group: str,
    *,
    topic: str | None = None,
    since_ms: int | None = None,
    trace_topic: str = RMQ_SYS_TRACE_TOPIC,
    rebalance_topic: str = REBALANCE_TOPIC,
    credentials: Credentials | None = None,
) -> Inputs:
    """Read the trace and rebalance topics, then the consumed topics: ``topic``, else those the
    group's rebalance records name and those its Pub traces name (two small driver collects)."""
    import rocketq.spark  # noqa: PLC0415 - registers the source

    rocketq.spark.register(spark)
    # read whole, as the rebalances: what happened before ``since`` explains what followed (a
    # delivery after it may duplicate one before it; a move after it ends a stretch begun before)
    traces = read_topic(spark, namesrv, [trace_topic], credentials=credentials)
    rebalances = read_topic(spark, namesrv, [rebalance_topic], credentials=credentials)
    if topic is not None:
        topics = [topic]
    else:
        records = parse_rebalances(rebalances).where(F.col("group") == group)
        found = {r.topic for r in records.select("topic").distinct().collect()}
        pubs = parse_traces(traces)[2]
        found |= {r.topic for r in pubs.select("topic").distinct().collect() if r.topic}
        topics = sorted(t for t in found if t and not t.startswith(("%RETRY%", "%DLQ%")))
    messages = read_topic(spark, namesrv, topics, credentials=credentials)
    return Inputs(traces=traces, rebalances=rebalances, messages=messages)


# ------------------------------------------------------------------------------------ parsing


def _field(i: int) -> Column:
    return F.try_element_at(F.col("f"), F.lit(i + 1))


def _long(i: int) -> Column:
    return _field(i).try_cast("long")


def parse_traces(traces: DataFrame) -> tuple[DataFrame, DataFrame, DataFrame]:
    """``(sub_before, sub_after, pub)``: the trace topic's lines, one row per line, typed.

    sub_before: ``client_id, group, request_id, msg_id, retry_times, start_ms``;
    sub_after: ``group, request_id, msg_id, cost_ms, success, context_code, end_ms``;
    pub: ``group, topic, msg_id`` (a batch's ids one row each), ``pub_ms, store_host, cost_ms,
    success``.
    """
    lines = (
        traces.select(
            F.coalesce(F.col("properties")[CLIENT_ID_PROPERTY], F.col("born_host")).alias("trace_client"),
            F.explode(F.split(F.decode(F.col("body"), "UTF-8"), FIELD_SPLITOR)).alias("line"),
        )
        .where(F.length("line") > 0)
        .select("trace_client", F.split("line", CONTENT_SPLITOR).alias("f"))
    )
    kind = _field(0)
    sub_before = lines.where(kind == "SubBefore").select(
        F.col("trace_client").alias("client_id"),
        _field(3).alias("group"),
        _field(4).alias("request_id"),
        _field(5).alias("msg_id"),
        _field(6).try_cast("int").alias("retry_times"),
        _long(1).alias("start_ms"),
    )
    sub_after = lines.where(kind == "SubAfter").select(
        _field(8).alias("group"),
        _field(1).alias("request_id"),
        _field(2).alias("msg_id"),
        _long(3).alias("cost_ms"),
        (F.lower(_field(4)) == "true").alias("success"),
        _field(6).try_cast("int").alias("context_code"),
        _long(7).alias("end_ms"),
    )
    pub = lines.where(kind == "Pub").select(
        _field(3).alias("group"),
        _field(4).alias("topic"),
        F.explode(F.split(_field(5), ",")).alias("msg_id"),
        _long(1).alias("pub_ms"),
        _field(8).alias("store_host"),
        _long(10).alias("cost_ms"),
        (F.lower(F.when(F.size("f") == 13, _field(12)).otherwise(_field(13))) == "true").alias("success"),
    )
    return sub_before, sub_after, pub


def parse_rebalances(rebalances: DataFrame) -> DataFrame:
    """The rebalance topic's JSON records as columns (:data:`REBALANCE_SCHEMA`), each once."""
    return (
        rebalances.select(F.from_json(F.decode(F.col("body"), "UTF-8"), REBALANCE_SCHEMA).alias("r"))
        .select("r.*")
        .where(F.col("group").isNotNull() & F.col("seq").isNotNull())
        .dropDuplicates(["client_id", "seq", "topic"])
    )


# ------------------------------------------------------------------------------------ tables


def _in_scope(df: DataFrame, group: str, topic: str | None) -> DataFrame:
    df = df.where(F.col("group") == group)
    if topic is not None:
        return df.where(F.col("topic") == topic)
    return df.where(~F.col("topic").startswith("%RETRY%") & ~F.col("topic").startswith("%DLQ%"))


def consumption_table(
    sub_before: DataFrame,
    sub_after: DataFrame,
    messages: DataFrame,
    group: str,
    *,
    topic: str | None = None,
) -> DataFrame:
    """One row per delivery to ``group``, with its outcome and its message's queue, offset and
    store time; not yet judged (see :func:`compute_tables`)."""
    before = sub_before.where(F.col("group") == group).dropDuplicates(["request_id", "msg_id"])
    after = (
        sub_after.where(F.col("group") == group)
        .dropDuplicates(["request_id", "msg_id"])
        .select("request_id", "msg_id", "end_ms", "cost_ms", "success", "context_code")
    )
    msgs = messages.select(
        "msg_id",
        "topic",
        "broker",
        "queue_id",
        "queue_offset",
        F.unix_millis("store_timestamp").alias("store_ms"),
    ).dropDuplicates(["msg_id"])
    d = before.join(after, ["request_id", "msg_id"], "left").join(msgs, "msg_id", "left")
    if topic is not None:
        d = d.where(F.col("topic") == topic)
    return d.select(
        "group",
        "client_id",
        "request_id",
        "msg_id",
        "topic",
        "broker",
        "queue_id",
        "queue_offset",
        "retry_times",
        "start_ms",
        "end_ms",
        "cost_ms",
        "success",
        "context_code",
        "store_ms",
        (F.col("start_ms") - F.col("store_ms")).alias("latency_ms"),
    )


def _queue_names(col: str) -> Column:
    return F.transform(F.col(col), lambda q: F.concat_ws(":", q["broker"], q["queue_id"].cast("string")))


def rebalances_table(records: DataFrame, group: str, *, topic: str | None = None) -> DataFrame:
    """The group's rebalance records, queues as ``broker:queue_id`` text."""
    return _in_scope(records, group, topic).select(
        "group",
        "client_id",
        "seq",
        "trigger",
        "topic",
        "strategy",
        F.size("client_ids").alias("n_clients"),
        "client_ids",
        _queue_names("owned").alias("owned"),
        _queue_names("added").alias("added"),
        _queue_names("removed").alias("removed"),
        "changed",
        "start_ms",
        "end_ms",
        "duration_ms",
        "error",
    )


def _mq(topic: Any, broker: Any, queue_id: Any) -> MessageQueue | None:
    if topic is None or broker is None or queue_id is None:
        return None
    return MessageQueue(str(topic), str(broker), int(queue_id))


def collect_records(
    consumption: DataFrame, records: DataFrame, messages: DataFrame, group: str, *, topic: str | None
) -> tuple[list[Delivery], list[RebalanceEvent], list[Stored]]:
    """The driver-side records :func:`rocketq.analytics.analyze` judges (three narrow collects)."""
    deliveries = [
        Delivery(
            r.client_id or "?",
            r.msg_id,
            _mq(r.topic, r.broker, r.queue_id),
            int(r.start_ms),
            r.success,
            r.store_ms,
            r.request_id or "",
        )
        for r in consumption.select(
            "client_id",
            "msg_id",
            "topic",
            "broker",
            "queue_id",
            "start_ms",
            "success",
            "store_ms",
            "request_id",
        ).collect()
        if r.start_ms is not None and r.msg_id
    ]
    events = [
        RebalanceEvent(
            client_id=r.client_id,
            seq=int(r.seq),
            trigger=r.trigger or "",
            topic=r.topic or "",
            client_ids=tuple(r.client_ids or ()),
            added=tuple(MessageQueue(q.topic, q.broker, q.queue_id) for q in r.added or ()),
            removed=tuple(MessageQueue(q.topic, q.broker, q.queue_id) for q in r.removed or ()),
            end_ms=int(r.end_ms),
            changed=bool(r.changed),
        )
        for r in _in_scope(records, group, topic)
        .select("client_id", "seq", "trigger", "topic", "client_ids", "added", "removed", "end_ms", "changed")
        .collect()
        if r.end_ms is not None and r.client_id
    ]
    msgs = messages.select(
        "msg_id", "topic", "broker", "queue_id", F.unix_millis("store_timestamp").alias("ms")
    )
    if topic is not None:
        msgs = msgs.where(F.col("topic") == topic)
    stored = [
        Stored(r.msg_id, MessageQueue(r.topic, r.broker, r.queue_id), int(r.ms))
        for r in msgs.dropDuplicates(["msg_id"]).collect()
        if r.msg_id and r.ms is not None
    ]
    return deliveries, events, stored


_CONSUMPTION_SCHEMA = (
    "group string, client_id string, request_id string, msg_id string, topic string, broker string, "
    "queue_id int, queue_offset long, retry_times int, start_ms long, end_ms long, cost_ms long, "
    "success boolean, context_code int, store_ms long, latency_ms long, delivery int, "
    "first_client_id string, first_start_ms long, duplicate boolean"
)
_OWNERSHIP_SCHEMA = (
    "group string, topic string, broker string, queue_id int, client_id string, from_ms long, to_ms long, "
    "added_by string, added_seq long, removed_by string"
)
_DUPLICATES_SCHEMA = (
    "group string, msg_id string, topic string, broker string, queue_id int, queue_offset long, "
    "client_id string, request_id string, start_ms long, retry_times int, delivery int, "
    "first_client_id string, first_start_ms long, rebalance_client_id string, rebalance_seq long, "
    "rebalance_trigger string, rebalance_ms long, rebalance_kind string, change int"
)
_PAUSES_SCHEMA = (
    "group string, topic string, broker string, queue_id int, from_client string, to_client string, "
    "removed_ms long, added_ms long, trigger string, last_consumed_ms long, last_consumed_by string, "
    "first_consumed_ms long, first_message_store_ms long, pause_start_ms long, pause_ms long, "
    "pause_start_kind string, change int"
)
_LAG_SCHEMA = (
    "group string, topic string, broker string, queue_id int, bucket_ms long, produced long, consumed long, "
    "lag long, peak long"
)


def compute_tables(
    inputs: Inputs,
    group: str,
    *,
    topic: str | None = None,
    since_ms: int | None = None,
    bucket_ms: int | None = None,
) -> tuple[dict[str, DataFrame], int, list[DataFrame], Analysis]:
    """The six tables (:data:`TABLES`) of ``group``'s activity, the lag's bucket in ms, the frames
    cached on the way (``unpersist()`` them when the tables are written) and the analysis.

    Spark parses the traces and joins each delivery with its message; the deliveries, the
    group's rebalance records and the topics' messages are then collected and judged by
    :func:`rocketq.analytics.analyze` (one definition of every figure), and the judged tables are
    made from its results. With ``since_ms``, each table keeps what happened from then on,
    judged against the whole history: a delivery after ``since`` duplicates one before it; a
    pause may start before it. ``bucket_ms`` (else about 60 buckets over the deliveries) is the
    ``lag`` table's bucket.
    """
    spark = inputs.messages.sparkSession
    sub_before, sub_after, _ = parse_traces(inputs.traces)
    records = parse_rebalances(inputs.rebalances).cache()
    raw = consumption_table(sub_before, sub_after, inputs.messages, group, topic=topic).cache()
    deliveries, events, stored = collect_records(raw, records, inputs.messages, group, topic=topic)
    analysis = analyze(deliveries, events, stored, since_ms=since_ms)
    if bucket_ms is None:
        starts = [v.delivery.start_ms for v in analysis.verdicts]
        bucket_ms = choose_bucket_ms(min(starts), max(starts)) if starts else 1000

    judged = {(v.delivery.msg_id, v.delivery.order): v for v in analysis.verdicts}
    rows = []
    for r in raw.collect():
        v = judged.get((r.msg_id, r.request_id or ""))
        if v is None:  # before --since, or without a start time
            continue
        rows.append((*r, v.rank, v.first_client_id, v.first_start_ms, v.duplicate))
    consumption = spark.createDataFrame(rows, _CONSUMPTION_SCHEMA)
    by_key = {(r[3], r[2] or ""): r for r in rows}

    def q(mq: MessageQueue | None) -> tuple[Any, Any, Any]:
        return (mq.topic, mq.broker_name, mq.queue_id) if mq is not None else (None, None, None)

    ownership = spark.createDataFrame(
        [
            (group, *q(s.queue), s.client_id, s.from_ms, s.to_ms, s.added_by, s.added_seq, s.removed_by)
            for s in analysis.stretches
        ],
        _OWNERSHIP_SCHEMA,
    )
    dup_rows = []
    for d in analysis.duplicates:
        row = by_key.get((d.delivery.msg_id, d.delivery.order))
        e = d.rebalance
        dup_rows.append(
            (
                group, d.delivery.msg_id, *q(d.delivery.queue), row[7] if row else None,
                d.delivery.client_id, d.delivery.order, d.delivery.start_ms, row[8] if row else None, d.rank,
                d.first_client_id, d.first_start_ms,
                e.client_id if e else None, e.seq if e else None, e.trigger if e else None,
                e.end_ms if e else None, d.rebalance_kind, d.change,
            )
        )  # fmt: skip
    duplicates = spark.createDataFrame(dup_rows, _DUPLICATES_SCHEMA)
    pauses = spark.createDataFrame(
        [
            (
                group,
                *q(m.queue),
                m.from_client,
                m.to_client,
                m.removed_ms,
                m.added_ms,
                m.trigger,
                m.last_consumed_ms,
                m.last_consumed_by,
                m.first_consumed_ms,
                m.first_message_store_ms,
                m.pause_start_ms,
                m.pause_ms,
                m.pause_start_kind,
                m.change,
            )
            for m in analysis.moves
        ],
        _PAUSES_SCHEMA,
    )
    lag = spark.createDataFrame(
        [
            (group, *q(mq), b, n_in, n_out, v, peak)
            for mq, b, n_in, n_out, v, peak in backlog_buckets(analysis, bucket_ms)
        ],
        _LAG_SCHEMA,
    )
    rebalances = rebalances_table(records, group, topic=topic)
    if since_ms is not None:
        rebalances = rebalances.where(F.col("end_ms") >= F.lit(since_ms))
    tables = {
        "consumption": consumption,
        "ownership": ownership,
        "rebalances": rebalances,
        "duplicates": duplicates,
        "pauses": pauses,
        "lag": lag,
    }
    return tables, bucket_ms, [raw, records], analysis
