"""Spark's monitoring of a rocketmq stream: latestOffset and the offsets-behind-latest metrics in a
real query's progress, and Kafka's minOffsetsPerTrigger / maxTriggerDelay admission."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows
from pyspark.sql.types import StructType

from rocketq.errors import ConfigError
from rocketq.protocol import calls
from rocketq.spark.offsets import from_json
from rocketq.spark.reader import METRICS_KEY, RocketMQStreamReader
from rocketq.spark.source import parse_options

from .conftest import ClusterThread

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.timeout(300)]


def test_progress_shows_latest_offset_and_how_far_behind(
    spark: Any, cluster: ClusterThread, tmp_path: Path
) -> None:
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    rng = random.Random(seed)
    routes = cluster.create_topic("Lagging", 3)
    total = rng.randrange(60, 300)
    limit = rng.randrange(total // 3 + 1, total // 2 + 1)  # two or three batches
    cluster.produce("Lagging", total, batch=rng.randrange(5, 20))
    with cluster.io() as io:
        latest = {r.queue: io.call(r.addr, calls.get_max_offset(r.queue)) for r in routes}
    query = (
        spark.readStream.format("rocketmq")
        .option("namesrv", cluster.namesrv)
        .option("topic", "Lagging")
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(limit))
        .option("group", "lagging_pipeline")
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    progress = [p for p in query.recentProgress if p["numInputRows"]]
    assert sum(p["numInputRows"] for p in progress) == total
    consumed = 0
    for i, p in enumerate(progress):
        source = p["sources"][0]
        reported = source["latestOffset"]
        if isinstance(reported, str):
            reported = json.loads(reported)
        metrics = reported.pop(METRICS_KEY)
        assert from_json(reported) == latest  # Kafka's latestOffset: every queue's end
        end = from_json(
            json.loads(source["endOffset"]) if isinstance(source["endOffset"], str) else source["endOffset"]
        )
        behind = [latest[q] - end[q] for q in latest]
        assert metrics["minOffsetsBehindLatest"] == str(min(behind))
        assert metrics["maxOffsetsBehindLatest"] == str(max(behind))
        assert float(metrics["avgOffsetsBehindLatest"]) == pytest.approx(sum(behind) / len(behind), abs=0.05)
        consumed += p["numInputRows"]
        assert sum(behind) == total - consumed
        # the group's committed lag: Spark commits a batch's end when the next batch is planned
        assert int(metrics["groupOffsetsBehindLatest"]) >= total - consumed
        if i == 0:
            assert int(metrics["groupOffsetsBehindLatest"]) == total


def test_min_offsets_per_trigger_waits_up_to_max_trigger_delay(cluster: ClusterThread) -> None:
    """Kafka's admission rule on the driver-side reader, with its clock injected."""
    cluster.create_topic("Admitted", 2)
    options = parse_options(
        {
            "namesrv": cluster.namesrv,
            "topic": "Admitted",
            "startingOffsets": "earliest",
            "minOffsetsPerTrigger": "50",
            "maxTriggerDelay": "30s",
        },
        streaming=True,
    )
    reader = RocketMQStreamReader(options, StructType())
    now = [1000.0]
    reader.clock = lambda: now[0]
    try:
        start = reader.initialOffset()
        first = reader.latestOffset(start, ReadAllAvailable())  # the first batch is never held back
        cluster.produce("Admitted", 20, batch=10)
        assert reader.latestOffset(first, ReadAllAvailable()) == first  # 20 < 50, 0 s since the last
        now[0] += 29.0
        assert reader.latestOffset(first, ReadAllAvailable()) == first
        cluster.produce("Admitted", 40, batch=10, start=20)
        second = reader.latestOffset(first, ReadMaxRows(1000))  # 60 >= 50: admitted at once
        assert sum(from_json(second).values()) == 60
        cluster.produce("Admitted", 10, batch=10, start=60)
        assert reader.latestOffset(second, ReadAllAvailable()) == second
        now[0] += 30.0  # maxTriggerDelay passed: whatever waits goes
        third = reader.latestOffset(second, ReadAllAvailable())
        assert sum(from_json(third).values()) == 70
        assert reader.reportLatestOffset() is not None
    finally:
        reader.stop()


def test_a_stream_refuses_queues_its_topic_does_not_hold(cluster: ClusterThread) -> None:
    cluster.create_topic("StreamNamed", 2)
    options = parse_options(
        {
            "namesrv": cluster.namesrv,
            "topic": "StreamNamed",
            "startingOffsets": '{"StreamNamed": {"broker-a": {"5": 0}}}',
        },
        streaming=True,
    )
    reader = RocketMQStreamReader(options, StructType())
    try:
        with pytest.raises(ConfigError, match="names queues that are not read: StreamNamed broker-a:5"):
            reader.latestOffset(reader.initialOffset(), ReadAllAvailable())
    finally:
        reader.stop()
