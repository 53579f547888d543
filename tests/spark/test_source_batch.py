"""Batch reads and writes of the rocketmq data source against a real broker."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import ClusterThread

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.timeout(300)]


def reader(spark: Any, cluster: ClusterThread, topic: str, **options: str) -> Any:
    r = spark.read.format("rocketmq").option("namesrv", cluster.namesrv).option("topic", topic)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def test_batch_read_returns_every_message_with_its_columns(spark: Any, cluster: ClusterThread) -> None:
    routes = cluster.create_topic("BatchRead", 4)
    sent = cluster.produce("BatchRead", 1000, tags=("TagA", "TagB", None), batch=50)
    df = reader(spark, cluster, "BatchRead", maxMessagesPerPartition="100")
    rows = df.collect()
    assert len(rows) == 1000
    assert df.schema.simpleString().startswith(
        "struct<topic:string,broker:string,queue_id:int,queue_offset:bigint"
    )
    by_body = {r["body"]: r for r in rows}
    assert len(by_body) == 1000
    for msg in sent:
        row = by_body[msg.body]
        assert row["topic"] == "BatchRead"
        assert row["broker"] == "broker-a"
        assert row["msg_id"] == msg.properties["UNIQ_KEY"]
        assert row["tags"] == msg.properties.get("TAGS")
        assert row["keys"] == msg.properties["KEYS"]
        assert row["properties"]["seq"] == msg.properties["seq"]
        assert row["reconsume_times"] == 0
    offsets = sorted((r["queue_id"], r["queue_offset"]) for r in rows)
    assert offsets == sorted((q.queue.queue_id, o) for q in routes for o in range(250))


def test_offset_ranges_earliest_latest_json_and_ending(spark: Any, cluster: ClusterThread) -> None:
    cluster.create_topic("Ranges", 2)
    cluster.produce("Ranges", 40, batch=10)  # 20 per queue, offsets 0..19

    def qs(df: Any) -> list[tuple[int, int]]:
        return sorted(
            (r["queue_id"], r["queue_offset"]) for r in df.select("queue_id", "queue_offset").collect()
        )

    assert len(qs(reader(spark, cluster, "Ranges", startingOffsets="earliest"))) == 40
    with pytest.raises(Exception, match="'startingOffsets' cannot be latest in a batch read"):
        reader(spark, cluster, "Ranges", startingOffsets="latest").collect()
    start = '{"Ranges": {"broker-a": {"0": 15, "1": 20}}}'
    assert qs(reader(spark, cluster, "Ranges", startingOffsets=start)) == [(0, o) for o in range(15, 20)]
    end = '{"Ranges": {"broker-a": {"0": 3, "1": -1}}}'
    got = qs(reader(spark, cluster, "Ranges", endingOffsets=end))
    assert got == [(0, 0), (0, 1), (0, 2)] + [(1, o) for o in range(20)]


def test_starting_timestamp_starts_at_the_first_message_stored_then(
    spark: Any, cluster: ClusterThread
) -> None:
    import time

    cluster.create_topic("Stamps", 1)
    cluster.produce("Stamps", 10, batch=1)
    time.sleep(0.05)
    cut = int(time.time() * 1000)
    time.sleep(0.05)
    cluster.produce("Stamps", 5, batch=1, start=10)
    rows = (
        reader(spark, cluster, "Stamps", startingTimestamp=str(cut))
        .select("queue_offset", "store_timestamp")
        .collect()
    )
    assert [r["queue_offset"] for r in rows] == [10, 11, 12, 13, 14]
    assert all(r["store_timestamp"].timestamp() * 1000 >= cut for r in rows)


def test_tag_filter_keeps_exactly_the_tags_asked_for(spark: Any, cluster: ClusterThread) -> None:
    cluster.create_topic("Tagged", 2)
    cluster.produce("Tagged", 300, tags=("TagA", "TagB", "TagC", None), batch=25)
    rows = (
        reader(spark, cluster, "Tagged", tags="TagA || TagC", pullBatchSize="16")
        .select("tags", "body")
        .collect()
    )
    assert sorted(r["body"] for r in rows) == sorted(f"m-{i}".encode() for i in range(300) if i % 4 in (0, 2))
    assert {r["tags"] for r in rows} == {"TagA", "TagC"}


def test_write_round_trip(spark: Any, cluster: ClusterThread) -> None:
    cluster.create_topic("Written", 3)
    data = [(f"body-{i}", f"T{i % 2}", f"key-{i}", {"n": str(i)}) for i in range(500)]
    df = spark.createDataFrame(data, "body string, tags string, keys string, properties map<string,string>")
    (
        df.repartition(2)
        .write.format("rocketmq")
        .option("namesrv", cluster.namesrv)
        .option("topic", "Written")
        .option("sendBatchSize", "32")
        .mode("append")
        .save()
    )
    rows = reader(spark, cluster, "Written").collect()
    assert len(rows) == 500
    got = sorted((r["body"].decode(), r["tags"], r["keys"], r["properties"]["n"]) for r in rows)
    assert got == sorted((b, t, k, p["n"]) for b, t, k, p in data)
    assert len({r["msg_id"] for r in rows}) == 500
    assert {r["queue_id"] for r in rows} == {0, 1, 2}
    # a binary body and a topic column
    bin_df = spark.createDataFrame(
        [(bytes([i, 0, 255]), "Written") for i in range(7)], "body binary, topic string"
    )
    bin_df.write.format("rocketmq").option("namesrv", cluster.namesrv).mode("append").save()
    assert reader(spark, cluster, "Written").count() == 507


def test_several_topics_in_one_read(spark: Any, cluster: ClusterThread) -> None:
    cluster.create_topic("MultiA", 1)
    cluster.create_topic("MultiB", 2)
    cluster.produce("MultiA", 7, batch=7)
    cluster.produce("MultiB", 12, batch=3)
    rows = reader(spark, cluster, "MultiA, MultiB").groupBy("topic").count().collect()
    assert {r["topic"]: r["count"] for r in rows} == {"MultiA": 7, "MultiB": 12}


def test_writer_refuses_a_dataframe_without_body(spark: Any, cluster: ClusterThread) -> None:
    df = spark.createDataFrame([("x",)], "payload string")
    with pytest.raises(Exception, match="needs a 'body' column"):
        df.write.format("rocketmq").option("namesrv", cluster.namesrv).option("topic", "X").mode(
            "append"
        ).save()


def test_bad_option_fails_with_its_name(spark: Any, cluster: ClusterThread) -> None:
    with pytest.raises(Exception, match="'pullBatchSize' must be an integer"):
        reader(spark, cluster, "Ranges", pullBatchSize="lots").collect()


def test_trace_messages_read_back_through_the_source(spark: Any, cluster: ClusterThread) -> None:
    """Trace records published as Java's dispatcher packs them decode from the rows the source reads."""
    from rocketq.protocol.message import Message
    from rocketq.protocol.trace import (
        RMQ_SYS_TRACE_TOPIC,
        TraceBean,
        TraceContext,
        TraceType,
        decode_trace,
        pack_traces,
    )

    contexts = [
        TraceContext(
            trace_type=TraceType.SUB_BEFORE if i % 2 else TraceType.PUB,
            timestamp=1_700_000_000_000 + i,
            region_id="DefaultRegion",
            group_name="G",
            request_id=f"R{i}" if i % 2 else "",
            cost_time=0 if i % 2 else 3,
            beans=(
                TraceBean(
                    topic="" if i % 2 else "T",
                    msg_id=f"M{i}",
                    keys=f"k{i}",
                    store_host="" if i % 2 else "h:1",
                ),
            ),
        )
        for i in range(40)
    ]
    routes = cluster.create_topic(RMQ_SYS_TRACE_TOPIC, 1, force_system_topic=True)
    packed = pack_traces(contexts, max_chars=600)
    assert len(packed) > 1
    with cluster.io() as io:
        for n, tm in enumerate(packed):
            props = {"KEYS": tm.keys_property, "WAIT": "true", "UNIQ_KEY": f"TRACE{n:027d}"}
            io.send_batch(
                routes[0], [Message(RMQ_SYS_TRACE_TOPIC, tm.body, 0, props)], producer_group="trace"
            )
    rows = reader(spark, cluster, RMQ_SYS_TRACE_TOPIC).orderBy("queue_offset").collect()
    decoded = [ctx for row in rows for ctx in decode_trace(row["body"])]
    assert decoded == contexts
    assert rows[0]["keys"] == packed[0].keys_property
