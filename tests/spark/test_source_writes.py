"""Writes a Kafka user expects (topic precedence, a queue per row, keys in order, headers, the
save modes) and exactly-once stream writes killed and restarted at random points."""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import pytest

from rocketq.spark.writer import java_string_hash

from .conftest import ClusterThread

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.timeout(400)]


def _read(spark: Any, ct: ClusterThread, topic: str) -> list[Any]:
    return (
        spark.read.format("rocketmq")
        .option("namesrv", ct.namesrv)
        .option("topic", topic)
        .load()
        .select("queue_id", "queue_offset", "body", "keys", "properties")
        .collect()
    )


def _writer(df: Any, ct: ClusterThread, topic: str | None = None) -> Any:
    w = df.write.format("rocketmq").option("namesrv", ct.namesrv)
    return w.option("topic", topic) if topic is not None else w


def test_kafka_style_writes(spark: Any, cluster: ClusterThread) -> None:
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    rng = random.Random(seed)
    cluster.create_topic("WTarget", 4)
    n = rng.randrange(100, 300)
    keys = [f"user-{rng.randrange(10**6)}" for _ in range(rng.randrange(3, 9))]
    rows = []
    for i in range(n):
        key = rng.choice(keys)
        headers = [("h1", f"v{i}".encode()), ("trace", b"t")]
        rows.append((f"m-{i}", "WOther", key, i, headers, i % 4))
    df = spark.createDataFrame(
        rows,
        "value string, topic string, key string, seq int, headers array<struct<key:string,value:binary>>, "
        "qid int",
    )
    # the topic option overrides the topic column; the key picks the queue; headers become properties
    keyed = df.drop("qid").repartition(2, "key").sortWithinPartitions("seq")
    _writer(keyed, cluster, "WTarget").mode("append").save()
    got = _read(spark, cluster, "WTarget")
    assert len(got) == n
    by_key: dict[str, list[tuple[int, int, int]]] = {}
    for r in got:
        seq = int(r["body"].decode()[2:])
        assert r["keys"] == rows[seq][2]
        assert r["properties"]["h1"] == f"v{seq}"
        assert r["properties"]["trace"] == "t"
        by_key.setdefault(r["keys"], []).append((r["queue_offset"], seq, r["queue_id"]))
    for key, stored in by_key.items():
        assert {q for _, _, q in stored} == {abs(java_string_hash(key)) % 4}  # SelectMessageQueueByHash
        assert [s for _, s, _ in sorted(stored)] == sorted(s for _, s, _ in stored)  # in order
    # a queue_id column (and Kafka's partition) names the queue
    for column, topic in (("queue_id", "WQueue"), ("partition", "WPart")):
        cluster.create_topic(topic, 4)
        chosen = df.select("value", df["qid"].alias(column)).repartition(3)
        _writer(chosen, cluster, topic).mode("append").save()
        stored = _read(spark, cluster, topic)
        assert sorted((r["queue_id"], r["body"].decode()) for r in stored) == sorted(
            (i % 4, f"m-{i}") for i in range(n)
        )
    with pytest.raises(Exception, match="names queue 9; the topic has 4 writable queues"):
        _writer(spark.createDataFrame([("x", 9)], "body string, queue_id int"), cluster, "WQueue").mode(
            "append"
        ).save()
    with pytest.raises(Exception, match="save mode 'overwrite' is not supported"):
        _writer(df.select("value"), cluster, "WQueue").mode("overwrite").save()


def _stream_copy(spark: Any, ct: ClusterThread, ckpt: Path, available_now: bool) -> Any:
    df = (
        spark.readStream.format("rocketmq")
        .option("namesrv", ct.namesrv)
        .option("topic", "EoIn")
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "300")
        .load()
        .select("body", "keys")
    )
    w = (
        df.writeStream.format("rocketmq")
        .option("namesrv", ct.namesrv)
        .option("topic", "EoOut")
        .option("sendBatchSize", "8")
        .option("checkpointLocation", str(ckpt))
    )
    return (
        w.trigger(availableNow=True) if available_now else w.trigger(processingTime="10 milliseconds")
    ).start()


def _stop(query: Any) -> None:
    """Stop ``query`` and see it inactive: a stop cut short by a worker cut off mid-call (the
    kill's own noise) can leave it running, and the next query on its checkpoint would fail."""
    deadline = time.monotonic() + 60
    while query.isActive and time.monotonic() < deadline:
        try:
            query.stop()
        except Exception as exc:
            print(f"stop: {type(exc).__name__}")
    assert not query.isActive


def _copy_rest(spark: Any, cluster: ClusterThread, ckpt: Path) -> None:
    """Run the copy to its end (``availableNow``). Spark may still count a query stopped a moment
    ago as using the checkpoint; that refusal ("concurrently using") is tried again."""
    for attempt in range(10):
        query = _stream_copy(spark, cluster, ckpt, available_now=True)
        try:
            query.awaitTermination(180)
            return
        except Exception as exc:
            if "concurrently using" not in str(exc) or attempt == 9:
                raise
            print(f"the checkpoint was still held (attempt {attempt + 1}); starting again")
            time.sleep(0.5)


def _last(ckpt: Path, name: str) -> int:
    folder = ckpt / name
    ids = [int(f.name) for f in folder.iterdir() if f.name.isdigit()] if folder.exists() else []
    return max(ids, default=-1)


def test_exactly_once_stream_write_killed_and_restarted(
    spark: Any, cluster: ClusterThread, tmp_path: Path
) -> None:
    """A stream copying a topic is stopped at random points (mid-batch: some sends done, the batch
    not committed, so Spark replays it with the same ids), its last commit is removed once (a
    whole batch replayed), and the copy still holds every message exactly once."""
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    rng = random.Random(seed)
    cluster.create_topic("EoIn", 2)
    cluster.create_topic("EoOut", 3)
    total = rng.randrange(800, 1400)
    cluster.produce("EoIn", total, batch=50)
    ckpt = tmp_path / "ckpt"
    replays = 0
    for _ in range(2):
        query = _stream_copy(spark, cluster, ckpt, available_now=False)
        deadline = time.monotonic() + 60
        while query.status["message"].startswith("Initializing") and time.monotonic() < deadline:
            time.sleep(0.05)  # a stop before the sources are up is no test of the sink
        time.sleep(rng.uniform(0.5, 4.0))
        _stop(query)
        replays += _last(ckpt, "offsets") > _last(ckpt, "commits")
    last = _last(ckpt, "commits")
    if last >= 0:  # a crash after the batch's sends, before its commit: the whole batch again
        (ckpt / "commits" / str(last)).unlink()
        replays += 1
    _copy_rest(spark, cluster, ckpt)
    print(f"batches replayed: {replays}")
    copied = _read(spark, cluster, "EoOut")
    bodies = sorted(r["body"] for r in copied)
    assert len(bodies) == total
    assert bodies == sorted(f"m-{i}".encode() for i in range(total))
