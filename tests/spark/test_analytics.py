"""The analytics' parsing on small in-memory frames (no broker): Java-shaped trace messages, the
born-host fallback for clients without ``rqClientId``, batch Pub ids, the old 13-field Pub line,
and which repeated deliveries are duplicates once the collected deliveries are judged."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

pytest.importorskip("pyspark")

from rocketq.analytics import analyze
from rocketq.client.trace import CLIENT_ID_PROPERTY
from rocketq.protocol.trace import (
    CONTENT_SPLITOR,
    FIELD_SPLITOR,
    TraceBean,
    TraceContext,
    TraceType,
    encode_trace,
)
from rocketq.spark.analytics import collect_records, consumption_table, parse_rebalances, parse_traces
from rocketq.spark.source import SCHEMA_DDL

pytestmark = [pytest.mark.spark]

T = datetime(2026, 1, 1, tzinfo=UTC)


def row(body: str, born_host: str, props: dict[str, str]) -> tuple[Any, ...]:
    return (
        "RMQ_SYS_TRACE_TOPIC",
        "broker-a",
        0,
        0,
        "id",
        None,
        None,
        body.encode(),
        T,
        T,
        born_host,
        0,
        props,
    )


def sub(
    kind: TraceType, msg_id: str, req: str, ts: int, *, success: bool = True, retry: int = 0
) -> TraceContext:
    bean = TraceBean(msg_id=msg_id, keys="null", retry_times=retry)
    return TraceContext(
        trace_type=kind, timestamp=ts, group_name="G", request_id=req, success=success, beans=(bean,)
    )


def test_parsing_and_duplicate_rules(spark: Any) -> None:
    ours = {CLIENT_ID_PROPERTY: "10.0.0.1@ours"}
    S, A = TraceType.SUB_BEFORE, TraceType.SUB_AFTER
    c = CONTENT_SPLITOR
    old_pub = (
        c.join(["Pub", "5", "r", "PG", "T", "M9", "t", "k", "b:1", "3", "1", "0", "true"]) + FIELD_SPLITOR
    )
    batch_pub = TraceContext(
        trace_type=TraceType.PUB, timestamp=6, group_name="PG",
        beans=(TraceBean(topic="T", msg_id="M1,M2,M3", store_host="b:1"),),
    )  # fmt: skip
    frames = [
        # ours: M1 delivered, failed, retried (not a duplicate); M2 delivered twice (a duplicate)
        row(
            encode_trace([sub(S, "M1", "R1", 100), sub(A, "M1", "R1", 105, success=False)]),
            "10.0.0.1:1",
            ours,
        ),
        row(encode_trace([sub(S, "M1", "R2", 200, retry=1), sub(A, "M1", "R2", 205)]), "10.0.0.1:1", ours),
        row(encode_trace([sub(S, "M2", "R3", 300), sub(A, "M2", "R3", 305)]), "10.0.0.1:1", ours),
        # a Java consumer: no rqClientId, named by its trace producer's address; its SubAfter never came
        row(encode_trace([sub(S, "M2", "R4", 400)]), "10.0.0.9:777", {}),
        row(encode_trace([sub(S, "M2", "R5", 500), sub(A, "M2", "R5", 505)]), "10.0.0.9:777", {}),
        row(old_pub + encode_trace([batch_pub]), "10.0.0.5:5", {}),
    ]
    traces = spark.createDataFrame(frames, SCHEMA_DDL)
    before, after, pub = parse_traces(traces)
    pubs = sorted((r.msg_id, r.topic, r.success, r.pub_ms) for r in pub.collect())
    assert pubs == [("M1", "T", True, 6), ("M2", "T", True, 6), ("M3", "T", True, 6), ("M9", "T", True, 5)]
    messages = spark.createDataFrame(
        [("T", "broker-a", 1, i, f"M{i}", None, None, b"x", T, T, "h:1", 0, {}) for i in (1, 2)], SCHEMA_DDL
    )
    raw = consumption_table(before, after, messages, "G")
    empty = parse_rebalances(spark.createDataFrame([], SCHEMA_DDL))
    deliveries, _, stored = collect_records(raw, empty, messages, "G", topic=None)
    verdicts = sorted(analyze(deliveries, [], stored).verdicts, key=lambda v: v.delivery.start_ms)
    offsets = {r.msg_id: r.queue_offset for r in raw.collect()}
    got = [
        (
            v.delivery.msg_id,
            v.delivery.client_id,
            v.rank,
            v.duplicate,
            v.delivery.success,
            offsets[v.delivery.msg_id],
        )
        for v in verdicts
    ]
    assert got == [
        ("M1", "10.0.0.1@ours", 1, False, False, 1),
        ("M1", "10.0.0.1@ours", 2, False, True, 1),  # a retry after a failure
        ("M2", "10.0.0.1@ours", 1, False, True, 2),
        ("M2", "10.0.0.9:777", 2, True, None, 2),  # outcome unknown: still a delivery
        ("M2", "10.0.0.9:777", 3, True, True, 2),  # earlier deliveries did not fail: duplicate
    ]
    assert [v.first_client_id for v in verdicts if v.delivery.msg_id == "M2"] == ["10.0.0.1@ours"] * 3
    assert {s.msg_id: s.queue.queue_id for s in stored} == {"M1": 1, "M2": 1}
