"""The rebalance analytics: Spark jobs that turn traces and rebalance records into tables.

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

Output tables (:func:`compute_tables`; every time is epoch ms):

``consumption``
    one row per delivery (a SubBefore, joined with its SubAfter by request id and msg id, and
    with the message): ``group, client_id, request_id, msg_id, topic, broker, queue_id,
    queue_offset, retry_times, start_ms, end_ms, cost_ms, success, context_code, store_ms,
    latency_ms`` (start - store), ``delivery`` (1 = first), ``first_client_id``,
    ``first_start_ms``, ``duplicate``. A delivery is a *duplicate* when an earlier delivery of
    the same message to the group did not fail (it succeeded, or its outcome is unknown):
    redeliveries after a failure are retries, not duplicates.
``rebalances``
    the records of the group (retry topics left out): ``group, client_id, seq, trigger, topic,
    strategy, n_clients, client_ids, owned, added, removed`` (queues as ``broker:queue_id``),
    ``changed, start_ms, end_ms, duration_ms, error``.
``ownership``
    one row per stretch of a queue owned by a client, from the record that added it to the
    first later record of that client that removed it (``to_ms`` null: still owned, or the
    client stopped without saying so): ``group, topic, broker, queue_id, client_id, from_ms,
    to_ms, added_by, added_seq, removed_by``.
``duplicates``
    the duplicate deliveries, each with the rebalance it is attributed to: the latest record of
    the group that added or removed the message's queue at or before the duplicate delivery
    began (``rebalance_client_id, rebalance_seq, rebalance_trigger, rebalance_ms,
    rebalance_kind``; null when none did), and the first delivery (``first_client_id,
    first_start_ms``).
``pauses``
    one row per move of a queue (a client added it while another had owned it): ``from_client,
    to_client, removed_ms, added_ms, trigger``, ``first_consumed_ms`` (the new owner's first
    delivery of the queue in its stretch), ``last_consumed_ms`` and ``last_consumed_by`` (the
    queue's last delivery before that by another consumer: the previous owner's, or an earlier
    owner's when the queue moved twice before anyone consumed it), ``pause_start_ms`` (that
    delivery's end, else the previous owner's removal, else the add), ``pause_ms`` (first - start; null
    when the new owner consumed nothing there yet) and ``pause_start_kind``. A queue without
    traffic around the move shows its idle time as pause too: ``first_message_store_ms``
    (the store time of what the new owner consumed first) tells the two apart.
``lag``
    per queue and time bucket: ``produced`` (messages stored), ``consumed`` (first deliveries
    ending then), their running totals and ``lag`` (produced - consumed so far).

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

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from rocketq.client.blocking import BlockingClient
from rocketq.client.trace import CLIENT_ID_PROPERTY, REBALANCE_TOPIC
from rocketq.errors import TopicNotExistError
from rocketq.protocol.trace import CONTENT_SPLITOR, FIELD_SPLITOR, RMQ_SYS_TRACE_TOPIC
from rocketq.spark.source import SCHEMA_DDL

__all__ = [
    "TABLES",
    "Inputs",
    "choose_bucket_ms",
    "compute_tables",
    "consumption_table",
    "duplicates_table",
    "lag_table",
    "ownership_table",
    "parse_rebalances",
    "parse_traces",
    "pauses_table",
    "queue_events",
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
_QUEUE_KEY = ["group", "topic", "broker", "queue_id"]


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
    spark: SparkSession, namesrv: str, topics: Sequence[str], *, since_ms: int | None = None
) -> DataFrame:
    """Every message of ``topics`` that exist (stored at or after ``since_ms`` when given), through
    the ``rocketmq`` source; an empty frame of the source's schema when none exists. A name server
    that does not answer raises (:class:`~rocketq.errors.RemotingError`)."""
    present = []
    with BlockingClient(namesrv) as io:
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
) -> Inputs:
    """Read the trace and rebalance topics, then the consumed topics: ``topic``, else those the
    group's rebalance records name and those its Pub traces name (two small driver collects)."""
    import rocketq.spark  # noqa: PLC0415 - registers the source

    rocketq.spark.register(spark)
    # read whole, as the rebalances: what happened before ``since`` explains what followed (a
    # delivery after it may duplicate one before it; a move after it ends a stretch begun before)
    traces = read_topic(spark, namesrv, [trace_topic])
    rebalances = read_topic(spark, namesrv, [rebalance_topic])
    if topic is not None:
        topics = [topic]
    else:
        records = parse_rebalances(rebalances).where(F.col("group") == group)
        found = {r.topic for r in records.select("topic").distinct().collect()}
        pubs = parse_traces(traces)[2]
        found |= {r.topic for r in pubs.select("topic").distinct().collect() if r.topic}
        topics = sorted(t for t in found if t and not t.startswith(("%RETRY%", "%DLQ%")))
    messages = read_topic(spark, namesrv, topics)
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
    since_ms: int | None = None,
) -> DataFrame:
    """One row per delivery to ``group`` (see the module docstring); with ``since_ms``, those
    starting then or later, judged (first delivery, duplicate) against all deliveries."""
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
    w = Window.partitionBy("group", "msg_id").orderBy("start_ms", "request_id")
    earlier = w.rowsBetween(Window.unboundedPreceding, -1)
    not_failed = F.when(F.col("success").isNull() | F.col("success"), 1).otherwise(0)
    out = d.select(
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
        F.row_number().over(w).alias("delivery"),
        F.first("client_id").over(w).alias("first_client_id"),
        F.first("start_ms").over(w).alias("first_start_ms"),
        (F.coalesce(F.max(not_failed).over(earlier), F.lit(0)) == 1).alias("duplicate"),
    )
    return out if since_ms is None else out.where(F.col("start_ms") >= since_ms)


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


def queue_events(records: DataFrame, group: str, *, topic: str | None = None) -> DataFrame:
    """Every queue a record added or removed: ``group, topic, broker, queue_id, client_id, seq,
    trigger, t`` (the record's end) and ``kind`` (``added``/``removed``)."""
    scoped = _in_scope(records, group, topic)
    parts = []
    for kind in ("added", "removed"):
        parts.append(
            scoped.select(
                "group",
                "client_id",
                "seq",
                "trigger",
                F.col("end_ms").alias("t"),
                F.explode(kind).alias("q"),
                F.lit(kind).alias("kind"),
            )
        )
    events = parts[0].unionByName(parts[1])
    return events.select(
        "group",
        F.col("q.topic").alias("topic"),
        F.col("q.broker").alias("broker"),
        F.col("q.queue_id").alias("queue_id"),
        "client_id",
        "seq",
        "trigger",
        "t",
        "kind",
    )


def ownership_table(events: DataFrame) -> DataFrame:
    """Stretches of ownership from queue events (see the module docstring)."""
    w = (
        Window.partitionBy(*_QUEUE_KEY, "client_id")
        .orderBy("t", "seq")
        .rowsBetween(1, Window.unboundedFollowing)
    )
    removed = F.col("kind") == "removed"
    return (
        events.select(
            *_QUEUE_KEY,
            "client_id",
            "kind",
            F.col("t").alias("from_ms"),
            F.col("trigger").alias("added_by"),
            F.col("seq").alias("added_seq"),
            F.min(F.when(removed, F.col("t"))).over(w).alias("to_ms"),
            F.first(F.when(removed, F.col("trigger")), ignorenulls=True).over(w).alias("removed_by"),
        )
        .where(F.col("kind") == "added")
        .drop("kind")
    )


def duplicates_table(consumption: DataFrame, events: DataFrame) -> DataFrame:
    """Duplicate deliveries with the rebalance each is attributed to (see the module docstring)."""
    dups = consumption.where(F.col("duplicate"))
    ev = events.select(
        *[F.col(c).alias(f"e_{c}") for c in _QUEUE_KEY],
        F.col("client_id").alias("rebalance_client_id"),
        F.col("seq").alias("rebalance_seq"),
        F.col("trigger").alias("rebalance_trigger"),
        F.col("t").alias("rebalance_ms"),
        F.col("kind").alias("rebalance_kind"),
    )
    cond = [dups[c] == ev[f"e_{c}"] for c in _QUEUE_KEY] + [ev["rebalance_ms"] <= dups["start_ms"]]
    joined = dups.join(ev, cond, "left")
    w = Window.partitionBy("group", "msg_id", "request_id").orderBy(
        F.col("rebalance_ms").desc_nulls_last(), F.col("rebalance_kind")
    )
    return (
        joined.withColumn("_rank", F.row_number().over(w))
        .where(F.col("_rank") == 1)
        .select(
            "group",
            "msg_id",
            "topic",
            "broker",
            "queue_id",
            "queue_offset",
            "client_id",
            "request_id",
            "start_ms",
            "retry_times",
            "delivery",
            "first_client_id",
            "first_start_ms",
            "rebalance_client_id",
            "rebalance_seq",
            "rebalance_trigger",
            "rebalance_ms",
            "rebalance_kind",
        )
    )


def pauses_table(ownership: DataFrame, consumption: DataFrame) -> DataFrame:
    """One row per move of a queue, with the pause it caused (see the module docstring)."""
    new = ownership.select(
        *_QUEUE_KEY,
        F.col("client_id").alias("to_client"),
        F.col("from_ms").alias("added_ms"),
        F.col("to_ms").alias("new_to_ms"),
        F.col("added_by").alias("trigger"),
    )
    old = ownership.select(
        *[F.col(c).alias(f"o_{c}") for c in _QUEUE_KEY],
        F.col("client_id").alias("from_client"),
        F.col("from_ms").alias("old_from_ms"),
        F.col("to_ms").alias("removed_ms"),
    )
    cond = [new[c] == old[f"o_{c}"] for c in _QUEUE_KEY] + [
        new["to_client"] != old["from_client"],
        old["old_from_ms"] < new["added_ms"],
    ]
    w = Window.partitionBy(*_QUEUE_KEY, "to_client", "added_ms").orderBy(F.col("old_from_ms").desc())
    moves = (
        new.join(old, cond, "inner")
        .withColumn("_rank", F.row_number().over(w))
        .where(F.col("_rank") == 1)
        .drop("_rank", *[f"o_{c}" for c in _QUEUE_KEY])
    )
    c = consumption.where(F.col("queue_id").isNotNull()).select(
        *[F.col(k).alias(f"c_{k}") for k in _QUEUE_KEY],
        F.col("client_id").alias("c_client"),
        F.col("start_ms").alias("c_start"),
        F.coalesce("end_ms", "start_ms").alias("c_end"),
        F.col("store_ms").alias("c_store"),
    )
    same_queue = [moves[k] == c[f"c_{k}"] for k in _QUEUE_KEY]
    key = [*_QUEUE_KEY, "to_client", "added_ms"]
    first_new = (
        moves.join(
            c,
            [
                *same_queue,
                moves["to_client"] == c["c_client"],
                c["c_start"] >= moves["added_ms"],
                moves["new_to_ms"].isNull() | (c["c_start"] <= moves["new_to_ms"]),
            ],
            "left",
        )
        .groupBy(*key)
        .agg(
            F.min("c_start").alias("first_consumed_ms"),
            F.min_by("c_store", "c_start").alias("first_message_store_ms"),
        )
    )
    # the queue's last delivery by another consumer before the new owner's first: the previous
    # owner's, or an earlier one's when a queue moved twice before anyone consumed it
    moved = moves.join(first_new, key, "left")
    bound = F.coalesce(moved["first_consumed_ms"], moved["added_ms"])
    last_old = (
        moved.join(
            c,
            [
                *[moved[k] == c[f"c_{k}"] for k in _QUEUE_KEY],
                moved["to_client"] != c["c_client"],
                c["c_start"] < bound,
            ],
            "left",
        )
        .groupBy(*key)
        .agg(
            F.max("c_end").alias("last_consumed_ms"), F.max_by("c_client", "c_end").alias("last_consumed_by")
        )
    )
    out = moved.join(last_old, key, "left")
    start = F.coalesce("last_consumed_ms", "removed_ms", "added_ms")
    return out.select(
        *_QUEUE_KEY,
        "from_client",
        "to_client",
        "removed_ms",
        "added_ms",
        "trigger",
        "last_consumed_ms",
        "last_consumed_by",
        "first_consumed_ms",
        "first_message_store_ms",
        start.alias("pause_start_ms"),
        (F.col("first_consumed_ms") - start).alias("pause_ms"),
        F.when(F.col("last_consumed_ms").isNotNull(), F.lit("last consumption"))
        .when(F.col("removed_ms").isNotNull(), F.lit("removal"))
        .otherwise(F.lit("add"))
        .alias("pause_start_kind"),
    )


def lag_table(
    consumption: DataFrame,
    messages: DataFrame,
    group: str,
    bucket_ms: int,
    *,
    topic: str | None = None,
    since_ms: int | None = None,
) -> DataFrame:
    """Produced and consumed per queue and bucket, with running totals and the lag."""
    msgs = messages.select("topic", "broker", "queue_id", F.unix_millis("store_timestamp").alias("ms"))
    if topic is not None:
        msgs = msgs.where(F.col("topic") == topic)
    firsts = consumption.where((F.col("delivery") == 1) & F.col("store_ms").isNotNull()).select(
        "topic", "broker", "queue_id", F.coalesce("end_ms", "start_ms").alias("ms"), "store_ms"
    )
    if since_ms is not None:
        msgs = msgs.where(F.col("ms") >= since_ms)
        firsts = firsts.where(F.col("store_ms") >= since_ms)
    b = F.lit(bucket_ms)
    bucket = (F.floor(F.col("ms") / b) * b).cast("long").alias("bucket_ms")
    key = ["topic", "broker", "queue_id", "bucket_ms"]
    produced = (
        msgs.select("topic", "broker", "queue_id", bucket).groupBy(key).agg(F.count("*").alias("produced"))
    )
    consumed = (
        firsts.select("topic", "broker", "queue_id", bucket).groupBy(key).agg(F.count("*").alias("consumed"))
    )
    w = Window.partitionBy("topic", "broker", "queue_id").orderBy("bucket_ms")
    return (
        produced.join(consumed, key, "full_outer")
        .na.fill(0, ["produced", "consumed"])
        .select(
            F.lit(group).alias("group"),
            *key,
            "produced",
            "consumed",
            F.sum("produced").over(w).alias("produced_total"),
            F.sum("consumed").over(w).alias("consumed_total"),
        )
        .withColumn("lag", F.col("produced_total") - F.col("consumed_total"))
    )


def compute_tables(
    inputs: Inputs,
    group: str,
    *,
    topic: str | None = None,
    since_ms: int | None = None,
    bucket_ms: int | None = None,
) -> tuple[dict[str, DataFrame], int, list[DataFrame]]:
    """The six tables (:data:`TABLES`) of ``group``'s activity, the lag's bucket in ms, and the
    frames cached on the way (``unpersist()`` them when the tables are written).

    With ``since_ms``, each table keeps what happened from then on (deliveries and duplicates that
    started, moves and rebalances that ended, stretches of ownership still running, messages
    stored), judged against the whole history: a delivery after ``since`` duplicates one before
    it; a pause may start before it.

    Nothing runs until the frames are used, except one aggregate that picks the bucket when
    ``bucket_ms`` is not given. Deliveries and queue events are cached: several tables use them.
    """
    sub_before, sub_after, _ = parse_traces(inputs.traces)
    records = parse_rebalances(inputs.rebalances)
    every = consumption_table(sub_before, sub_after, inputs.messages, group, topic=topic).cache()
    events = queue_events(records, group, topic=topic).cache()
    ownership = ownership_table(events)
    tables = {
        "consumption": every,
        "ownership": ownership,
        "rebalances": rebalances_table(records, group, topic=topic),
        "duplicates": duplicates_table(every, events),
        "pauses": pauses_table(ownership, every),
    }
    if since_ms is not None:
        since = F.lit(since_ms)
        tables["consumption"] = every.where(F.col("start_ms") >= since)
        tables["ownership"] = ownership.where(F.col("to_ms").isNull() | (F.col("to_ms") >= since))
        tables["rebalances"] = tables["rebalances"].where(F.col("end_ms") >= since)
        tables["duplicates"] = tables["duplicates"].where(F.col("start_ms") >= since)
        tables["pauses"] = tables["pauses"].where(F.col("added_ms") >= since)
    if bucket_ms is None:
        c = tables["consumption"]
        row = c.agg(F.min("start_ms").alias("lo"), F.max("start_ms").alias("hi")).first()
        lo: Any = row["lo"] if row is not None else None
        hi: Any = row["hi"] if row is not None else None
        bucket_ms = choose_bucket_ms(int(lo), int(hi)) if lo is not None and hi is not None else 1000
    tables["lag"] = lag_table(every, inputs.messages, group, bucket_ms, topic=topic, since_ms=since_ms)
    return tables, bucket_ms, [every, events]
