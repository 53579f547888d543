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
