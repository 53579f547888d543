"""Filter pushdown: filters on topic, broker, queue_id, queue_offset, store_timestamp and tags
decide which queues and offset ranges are pulled; the broker's pull counter shows how many."""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from pyspark.sql import functions as F

from .conftest import ClusterThread

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.timeout(300)]


def test_filters_choose_what_is_pulled(spark: Any, cluster: ClusterThread) -> None:
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    rng = random.Random(seed)
    cluster.create_topic("Pushed", 4)
    cluster.create_topic("PushedToo", 1)
    n = rng.randrange(200, 400) // 16 * 16  # batches of 4 round-robin: the same count on each queue
    cluster.produce("Pushed", n, tags=("TagA", "TagB", "TagC"), batch=4)
    cluster.produce("PushedToo", 10, batch=10)
    time.sleep(0.02)
    cut = datetime.now(UTC)
    time.sleep(0.02)
    late = rng.randrange(16, 48) // 16 * 16
    cluster.produce("Pushed", late, batch=4, start=n)
    total = n + late
    broker = cluster.cluster.broker
    assert broker is not None
    df = (
        spark.read.format("rocketmq")
        .option("namesrv", cluster.namesrv)
        .option("topic", "Pushed,PushedToo")
        .load()
    )

    def pulled(query: Any) -> tuple[int, Any]:
        before = broker.stats.get_total
        result = query()
        return broker.stats.get_total - before, result

    count, everything = pulled(df.count)
    assert everything == total + 10
    assert count == total + 10
    q = rng.randrange(4)
    count, rows = pulled(lambda: df.where(F.col("queue_id") == q).where(F.col("topic") == "Pushed").count())
    assert rows == total // 4
    assert count == total // 4
    low = rng.randrange(0, n // 8)
    count, rows = pulled(
        lambda: df.where(
            (F.col("queue_offset") >= low) & (F.col("queue_offset") < low + 5) & (F.col("topic") == "Pushed")
        ).count()
    )
    assert rows == 4 * 5
    assert count == 4 * 5
    count, rows = pulled(lambda: df.where(F.col("store_timestamp") >= F.lit(cut)).count())
    assert rows == late
    assert late <= count <= late + 5  # the look-up pulls one message per queue to check its time
    count, rows = pulled(
        lambda: df.where(F.col("store_timestamp") > F.lit(datetime(2100, 1, 1, tzinfo=UTC))).count()
    )
    assert rows == 0
    assert count <= 5
    count, rows = pulled(
        lambda: df.where(F.col("tags") == "TagB").where(F.col("broker") == "broker-a").count()
    )
    want = sum(1 for i in range(n) if i % 3 == 1)  # the late messages are all TagA
    assert rows == want
    assert count == want  # the broker filters by tag before it sends
    count, rows = pulled(lambda: df.where(F.col("broker") == "broker-z").count())
    assert rows == 0
    assert count == 0


def test_position_columns_are_answered_from_offsets_without_a_pull(
    spark: Any, cluster: ClusterThread
) -> None:
    """A schema of position columns only (topic, broker, queue_id, queue_offset) is read from the
    queues' offsets: the same rows as a read that pulls, none pulled; a tag filter still pulls."""
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    rng = random.Random(seed)
    cluster.create_topic("Positions", 3)
    n = rng.randrange(100, 300)
    cluster.produce("Positions", n, tags=("TagA", "TagB"), batch=rng.randrange(1, 9))
    broker = cluster.cluster.broker
    assert broker is not None
    low, high = sorted(rng.sample(range(n // 3 + 1), 2))
    opts = {
        "namesrv": cluster.namesrv,
        "topic": "Positions",
        "maxMessagesPerPartition": str(rng.randrange(20, 100)),
    }

    def load(schema: str | None = None, **more: str) -> Any:
        reader = spark.read.format("rocketmq").options(**opts, **more)
        return (reader.schema(schema) if schema else reader).load()

    def pulled(query: Any) -> tuple[int, Any]:
        before = broker.stats.get_total
        result = query()
        return broker.stats.get_total - before, result

    position = "topic string, broker string, queue_id int, queue_offset long"

    def full() -> Any:  # a new load() each time: Spark reuses a pushed-down scan (docs/spark.md)
        return load().select("topic", "broker", "queue_id", "queue_offset")

    count, rows = pulled(lambda: sorted(tuple(r) for r in load(position).collect()))
    assert count == 0
    assert rows == sorted(tuple(r) for r in full().collect())
    assert len(rows) == n
    # rows from offsets are cheap: one task for every range, unless minPartitions asks for more
    assert full().rdd.getNumPartitions() > 1
    assert load(position).rdd.getNumPartitions() == 1
    assert load(position, minPartitions="5").rdd.getNumPartitions() >= 5
    narrowed = (F.col("queue_offset") >= low) & (F.col("queue_offset") < high) & (F.col("queue_id") != 1)
    count, total = pulled(lambda: load("queue_offset long, queue_id int").where(narrowed).count())
    assert count == 0
    assert total == full().where(narrowed).count()
    count, total = pulled(lambda: load("queue_id int").groupBy("queue_id").count().collect())
    assert count == 0
    assert sorted(tuple(r) for r in total) == sorted(
        tuple(r) for r in full().groupBy("queue_id").count().collect()
    )
    # a tag filter needs the messages: the option, or a filter on the tags column, pulls
    tagged = sum(1 for i in range(n) if i % 2 == 1)
    count, total = pulled(lambda: load("queue_offset long", tags="TagB").count())
    assert total == tagged
    assert count >= tagged > 0  # pulled (a pull may run past a small partition's end)
    count, total = pulled(
        lambda: load("queue_offset long, tags string").where(F.col("tags") == "TagB").count()
    )
    assert total == tagged
    assert count >= tagged > 0  # pulled (a pull may run past a small partition's end)
