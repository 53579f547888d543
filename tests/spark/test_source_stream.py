"""Streaming reads and writes of the rocketmq data source against a real broker."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from rocketq.protocol import calls

from .conftest import ClusterThread

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.timeout(300)]


def stream(spark: Any, cluster: ClusterThread, topic: str, **options: str) -> Any:
    r = spark.readStream.format("rocketmq").option("namesrv", cluster.namesrv).option("topic", topic)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def to_parquet(df: Any, out: Path, ckpt: Path, **trigger: Any) -> Any:
    return (
        df.select("queue_id", "queue_offset", "body")
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(ckpt))
        .trigger(**trigger)
        .start()
    )


def test_restart_from_checkpoint_neither_skips_nor_repeats(
    spark: Any, cluster: ClusterThread, tmp_path: Path
) -> None:
    cluster.create_topic("Restart", 3)
    cluster.produce("Restart", 300, batch=20)
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    df = stream(spark, cluster, "Restart", startingOffsets="earliest", maxOffsetsPerTrigger="120")
    q = to_parquet(df, out, ckpt, availableNow=True)
    q.awaitTermination(120)
    sizes = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    assert sizes == [120, 120, 60]  # the limit, shared across queues, then the rest
    cluster.produce("Restart", 200, batch=20, start=300)
    q = to_parquet(
        stream(spark, cluster, "Restart", startingOffsets="earliest"), out, ckpt, availableNow=True
    )
    q.awaitTermination(120)
    bodies = [r["body"] for r in spark.read.parquet(str(out)).collect()]
    assert len(bodies) == 500
    assert sorted(bodies) == sorted(f"m-{i}".encode() for i in range(500))


def test_latest_start_reads_only_what_comes_after(spark: Any, cluster: ClusterThread, tmp_path: Path) -> None:
    cluster.create_topic("FromLatest", 2)
    cluster.produce("FromLatest", 50, batch=10)
    q = to_parquet(
        stream(spark, cluster, "FromLatest"),
        tmp_path / "out",
        tmp_path / "ckpt",
        processingTime="200 milliseconds",
    )
    try:
        q.processAllAvailable()
        cluster.produce("FromLatest", 30, batch=10, start=1000)
        q.processAllAvailable()
    finally:
        q.stop()
    bodies = sorted(r["body"] for r in spark.read.parquet(str(tmp_path / "out")).collect())
    assert bodies == sorted(f"m-{i}".encode() for i in range(1000, 1030))


def test_new_queues_are_picked_up_and_group_progress_is_recorded(
    spark: Any, cluster: ClusterThread, tmp_path: Path
) -> None:
    cluster.create_topic("Growing", 2)
    cluster.produce("Growing", 40, batch=10)
    df = stream(spark, cluster, "Growing", startingOffsets="earliest", group="spark_pipeline")
    q = to_parquet(df, tmp_path / "out", tmp_path / "ckpt", processingTime="200 milliseconds")
    try:
        q.processAllAvailable()
        routes = cluster.create_topic("Growing", 4)
        cluster.produce("Growing", 80, batch=10, start=100)  # 20 to each of the four queues
        q.processAllAvailable()
        # one more micro-batch (one send, so one batch), whose start commits the previous batch's end
        cluster.produce("Growing", 4, batch=4, start=900)
        q.processAllAvailable()
        deadline = time.monotonic() + 20
        with cluster.io() as io:
            while True:
                committed = {
                    r.queue.queue_id: io.call(r.addr, calls.query_consumer_offset("spark_pipeline", r.queue))
                    for r in routes
                }
                if committed == {0: 40, 1: 40, 2: 20, 3: 20} or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
    finally:
        q.stop()
    rows = spark.read.parquet(str(tmp_path / "out")).collect()
    assert sorted(r["body"] for r in rows) == sorted(
        [f"m-{i}".encode() for i in range(40)]
        + [f"m-{i}".encode() for i in range(100, 180)]
        + [f"m-{i}".encode() for i in range(900, 904)]
    )
    assert {r["queue_id"] for r in rows} == {0, 1, 2, 3}
    # commit(end) runs one batch late: the batch that read the new queues is recorded by now
    assert committed == {0: 40, 1: 40, 2: 20, 3: 20}


def test_stream_copy_between_topics(spark: Any, cluster: ClusterThread, tmp_path: Path) -> None:
    cluster.create_topic("CopySrc", 2)
    cluster.create_topic("CopyDst", 2)
    cluster.produce("CopySrc", 100, batch=10, tags=("A", "B"))
    q = (
        stream(spark, cluster, "CopySrc", startingOffsets="earliest")
        .select("body", "tags", "keys")
        .writeStream.format("rocketmq")
        .option("namesrv", cluster.namesrv)
        .option("topic", "CopyDst")
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination(120)
    rows = (
        spark.read.format("rocketmq")
        .option("namesrv", cluster.namesrv)
        .option("topic", "CopyDst")
        .load()
        .collect()
    )
    assert sorted((r["body"], r["tags"], r["keys"]) for r in rows) == sorted(
        (f"m-{i}".encode(), "AB"[i % 2], f"k{i}") for i in range(100)
    )


def test_replayed_first_batch_reads_the_same_messages(
    spark: Any, cluster: ClusterThread, tmp_path: Path
) -> None:
    """Spark re-runs a batch whose commit is missing; for the first batch it asks initialOffset()
    again, and the symbolic start must give the same range as the first time."""
    import shutil

    cluster.create_topic("Replay", 2)
    cluster.produce("Replay", 50, batch=5)
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"

    def run() -> list[int]:
        df = stream(spark, cluster, "Replay", startingOffsets="earliest", maxOffsetsPerTrigger="20")
        q = to_parquet(df, out, ckpt, availableNow=True)
        q.awaitTermination(120)
        return [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]

    assert run() == [20, 20, 10]
    first = (ckpt / "offsets" / "0").read_text()
    # a crash right after batch 0 was planned: only its offsets survive, nothing was written
    for name in ("offsets", "commits"):
        for f in (ckpt / name).iterdir():
            if not (name == "offsets" and f.name == "0"):
                f.unlink()
    shutil.rmtree(out)
    cluster.produce("Replay", 30, batch=5, start=50)
    assert run() == [20, 20, 20, 20]
    assert (ckpt / "offsets" / "0").read_text() == first
    bodies = [r["body"] for r in spark.read.parquet(str(out)).collect()]
    assert sorted(bodies) == sorted(f"m-{i}".encode() for i in range(80))


def test_stream_from_a_timestamp(spark: Any, cluster: ClusterThread, tmp_path: Path) -> None:
    cluster.create_topic("StreamStamps", 2)
    cluster.produce("StreamStamps", 10, batch=1)
    time.sleep(0.05)
    cut = int(time.time() * 1000)
    time.sleep(0.05)
    cluster.produce("StreamStamps", 6, batch=1, start=10)
    df = stream(spark, cluster, "StreamStamps", startingTimestamp=str(cut))
    to_parquet(df, tmp_path / "out", tmp_path / "ckpt", availableNow=True).awaitTermination(120)
    bodies = sorted(r["body"] for r in spark.read.parquet(str(tmp_path / "out")).collect())
    assert bodies == sorted(f"m-{i}".encode() for i in range(10, 16))
