"""Refusals: sends the broker rejects, topics that do not exist, messages removed by retention."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from rocketq.broker import BrokerConfig
from rocketq.errors import DataLossError
from rocketq.protocol import calls
from rocketq.spark.reader import QueueRange, read_positions, read_range
from rocketq.spark.source import parse_options
from rocketq.store.config import StoreConfig

from .conftest import ClusterThread

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def strict(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterThread]:
    """A broker with auto-creation off, 2 KiB messages at most and 64 KiB commit-log segments."""
    config = replace(
        BrokerConfig(),
        auto_create_topic_enable=False,
        max_message_size=2048,
        store=replace(StoreConfig(), commit_log_segment_size=64 * 1024),
    )
    ct = ClusterThread(tmp_path_factory.mktemp("strict"), config).start()
    yield ct
    ct.stop()


def write(spark: Any, ct: ClusterThread, topic: str, bodies: list[str]) -> None:
    df = spark.createDataFrame([(b,) for b in bodies], "body string").coalesce(1)
    df.write.format("rocketmq").option("namesrv", ct.namesrv).option("topic", topic).mode("append").save()


def test_refused_send_fails_the_job_with_the_brokers_code_and_remark(
    spark: Any, strict: ClusterThread
) -> None:
    strict.create_topic("Small", 1)
    with pytest.raises(Exception, match=r"CODE: 13 DESC: .*") as info:
        write(spark, strict, "Small", ["x" * 4000])
    assert "Small" in str(info.value)


def test_unknown_topic_with_auto_create_off_fails_with_the_name_servers_answer(
    spark: Any, strict: ClusterThread
) -> None:
    with pytest.raises(
        Exception, match=r"CODE: 17 DESC: No topic route info in name server for the topic: Nowhere"
    ):
        write(spark, strict, "Nowhere", ["hello"])


def _remove_old_segments(ct: ClusterThread) -> int:
    broker = ct.cluster.broker
    assert broker is not None

    async def clean() -> int:
        return broker.store.clean_expired_files(now=time.time() + 10**9, force=True)

    return int(ct.call(clean()))


def test_fail_on_data_loss_both_ways(spark: Any, strict: ClusterThread) -> None:
    routes = strict.create_topic("Retained", 1)
    strict.produce("Retained", 200, body=b"z" * 1000, batch=1)  # ~230 KiB: four segments or so
    assert _remove_old_segments(strict) >= 1
    with strict.io() as io:
        low = io.call(routes[0].addr, calls.get_min_offset(routes[0].queue))
    assert 0 < low < 200
    start = '{"Retained": {"broker-a": {"0": 0}}}'

    def read(fail: str) -> Any:
        return (
            spark.read.format("rocketmq")
            .option("namesrv", strict.namesrv)
            .option("topic", "Retained")
            .option("startingOffsets", start)
            .option("failOnDataLoss", fail)
            .load()
            .select("queue_offset")
        )

    with pytest.raises(
        Exception, match=rf"offsets 0\.\.{low - 1} \({low} messages\) are no longer on the broker"
    ):
        read("true").collect()
    offsets = sorted(r[0] for r in read("false").collect())
    assert offsets == list(range(low, 200))

    # an executor whose planned range lost its start meanwhile (the broker answers PULL_OFFSET_MOVED)
    part = QueueRange("Retained", "broker-a", 0, routes[0].addr, 0, 200)
    with pytest.raises(DataLossError, match=rf"offsets 0\.\.{low - 1}"):
        list(read_range(part, parse_options({"namesrv": strict.namesrv, "topic": "Retained"})))
    lenient = parse_options({"namesrv": strict.namesrv, "topic": "Retained", "failOnDataLoss": "false"})
    got = [o for batch in read_range(part, lenient) for o in batch.column("queue_offset").to_pylist()]
    assert got == list(range(low, 200))
    # the same from the offsets alone (a schema of position columns: nothing pulled)
    strict_opts = parse_options({"namesrv": strict.namesrv, "topic": "Retained"})
    with pytest.raises(DataLossError, match=rf"offsets 0\.\.{low - 1}"):
        list(read_positions(part, strict_opts, ["queue_offset"]))
    got = [o for b in read_positions(part, lenient, ["queue_offset"]) for o in b.column(0).to_pylist()]
    assert got == list(range(low, 200))
    longer = QueueRange("Retained", "broker-a", 0, routes[0].addr, low, 250)  # planned past the end
    with pytest.raises(DataLossError, match=r"offsets 200\.\.249 were planned but the queue now ends at 200"):
        list(read_positions(longer, strict_opts, ["queue_offset"]))
    got = [o for b in read_positions(longer, lenient, ["queue_offset"]) for o in b.column(0).to_pylist()]
    assert got == list(range(low, 200))
    for fail in ("true", "false"):  # and through Spark, with the planner's own check
        slim = (
            spark.read.format("rocketmq")
            .schema("queue_offset long")
            .options(namesrv=strict.namesrv, topic="Retained", startingOffsets=start, failOnDataLoss=fail)
            .load()
        )
        if fail == "true":
            with pytest.raises(Exception, match=rf"offsets 0\.\.{low - 1} \({low} messages\)"):
                slim.count()
        else:
            assert sorted(r[0] for r in slim.collect()) == list(range(low, 200))
