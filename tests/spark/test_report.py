"""The rebalance analytics on real Spark against a real broker.

1. A scripted scenario with known answers: real messages on a 4-queue topic, and trace and
   rebalance records describing two consumers published through the real trace dispatcher (so in
   the real formats, through a real producer): consumer A owns every queue; B joins and takes
   queues 2 and 3; A gives them up 200 ms later, after consuming one more message of queue 2.
   B restarts queue 2 at that message and queue 3 at the last one A consumed there (A had not
   committed them): exactly two duplicates, both attributed to A's NOTIFY rebalance, and pauses of
   200 ms (queue 2) and 540 ms (queue 3), from delivery start to delivery start. A failed delivery
   and its retry are not duplicates. These are the numbers ``rocketq.analytics`` gives for the same
   records (tests/unit/test_analytics.py): the report judges with that code.
2. Real traced push consumers across a rebalance: every consumed message is in the report and
   every duplicate is attributed to a rebalance.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from rocketq import ClientConfig, ConsumeConcurrentlyStatus, ConsumeFromWhere, Message, Producer, PushConsumer
from rocketq.client.producer.facade import trace_dispatcher
from rocketq.client.rebalance.log import RebalanceRecord, RebalanceTrigger
from rocketq.models import MessageQueue
from rocketq.protocol.message import MessageExt
from rocketq.protocol.trace import TraceBean, TraceContext, TraceType
from rocketq.spark.report import ReportResult, build_report
from tests.spark.conftest import ClusterThread

pytestmark = [pytest.mark.spark, pytest.mark.integration]

GROUP = "report_scripted"
TOPIC = "ReportT"
A, B = "10.0.0.1@consumer-a", "10.0.0.2@consumer-b"


@pytest.fixture(scope="module")
def scripted(spark: Any, cluster: ClusterThread, tmp_path_factory: pytest.TempPathFactory) -> Any:
    cluster.create_topic(TOPIC, 4)
    client = ClientConfig(namesrv=cluster.namesrv, client_ip="127.0.0.1")
    ids: dict[tuple[int, int], str] = {}  # (queue id, offset) -> msg id
    with Producer("report_pg", client_config=client) as producer:
        for qid in range(4):
            for i in range(10):
                r = producer.send(
                    Message(TOPIC, f"q{qid}-{i}".encode()), queue=MessageQueue(TOPIC, "broker-a", qid)
                )
                ids[(qid, r.queue_offset)] = r.msg_id
    t0 = int(time.time() * 1000) + 5_000
    queues = [MessageQueue(TOPIC, "broker-a", q) for q in range(4)]

    # (client, queue, offset, start offset from t0, success, retry times); each ends 5 ms later
    # A consumes offsets 0-4 of each queue, 40 ms apart: queue 3 offset 4 at 860
    deliveries = [(A, q, o, 100 + 40 * (q * 5 + o), True, 0) for q in range(4) for o in range(5)]
    deliveries.append((A, 2, 5, 1100, True, 0))  # A still consumes queue 2 after B took it
    deliveries.append((B, 2, 5, 1300, True, 0))  # duplicate 1: B restarts at the uncommitted offset 5
    deliveries += [(B, 2, o, 1300 + 10 * (o - 5), True, 0) for o in range(6, 10)]
    deliveries.append((B, 3, 4, 1400, True, 0))  # duplicate 2
    deliveries += [(B, 3, o, 1400 + 10 * (o - 4), True, 0) for o in range(5, 10)]
    deliveries.append((A, 0, 5, 1500, False, 0))  # failed ...
    deliveries.append((A, 0, 5, 1600, True, 1))  # ... and retried: not a duplicate
    deliveries += [(A, 0, o, 1600 + 10 * (o - 5), True, 0) for o in range(6, 10)]
    deliveries += [(A, 1, o, 1700 + 10 * (o - 5), True, 0) for o in range(5, 10)]

    def record(client_id: str, seq: int, trigger: RebalanceTrigger, at: int, owned: list[int],
               added: list[int], removed: list[int], ids_: tuple[str, ...]) -> RebalanceRecord:  # fmt: skip
        return RebalanceRecord(
            seq=seq, trigger=trigger, group=GROUP, client_id=client_id, topic=TOPIC,
            message_model="CLUSTERING", strategy="AVG", client_ids=ids_, all_queues=tuple(queues),
            owned=tuple(queues[i] for i in owned), added=tuple(queues[i] for i in added),
            removed=tuple(queues[i] for i in removed), start_ms=t0 + at - 2, end_ms=t0 + at,
        )  # fmt: skip

    dispatchers = {
        c: trace_dispatcher(GROUP, "CONSUMER", client_id=c, client_config=client, wait_threshold=0.05).start()
        for c in (A, B)
    }
    dispatchers[A].publish_rebalance(
        record(A, 1, RebalanceTrigger.START, 0, [0, 1, 2, 3], [0, 1, 2, 3], [], (A,))
    )
    dispatchers[B].publish_rebalance(record(B, 1, RebalanceTrigger.START, 1000, [2, 3], [2, 3], [], (A, B)))
    dispatchers[A].publish_rebalance(record(A, 2, RebalanceTrigger.NOTIFY, 1200, [0, 1], [], [2, 3], (A, B)))
    dispatchers[A].publish_rebalance(record(A, 3, RebalanceTrigger.PERIODIC, 2500, [0, 1], [], [], (A, B)))
    for n, (c, q, off, at, ok, retry) in enumerate(deliveries):
        bean = TraceBean(msg_id=ids[(q, off)], keys="null", retry_times=retry)
        req = f"REQ{n:05d}"
        before = TraceContext(
            trace_type=TraceType.SUB_BEFORE, timestamp=t0 + at, region_id="null", group_name=GROUP,
            request_id=req, beans=(bean,),
        )  # fmt: skip
        after = TraceContext(
            trace_type=TraceType.SUB_AFTER, timestamp=t0 + at + 5, group_name=GROUP, request_id=req,
            success=ok, cost_time=5, context_code=0 if ok else 4, beans=(bean,),
        )  # fmt: skip
        dispatchers[c].append(before)
        dispatchers[c].append(after)
    for d in dispatchers.values():
        d.shutdown()
        assert d.failed_messages == 0
    out = tmp_path_factory.mktemp("report")
    result = build_report(spark, cluster.namesrv, GROUP, topic=TOPIC, out_dir=out, bucket_ms=500)
    tables = {name: spark.read.parquet(str(path)) for name, path in result.tables.items()}
    return result, tables, ids, t0, len(deliveries)


def test_scripted_duplicates_are_the_two_known_ones_attributed_to_the_notify(scripted: Any) -> None:
    _result, tables, ids, t0, _ = scripted
    dups = sorted(tables["duplicates"].collect(), key=lambda r: r.start_ms)
    assert [(r.msg_id, r.queue_id, r.queue_offset) for r in dups] == [
        (ids[(2, 5)], 2, 5),
        (ids[(3, 4)], 3, 4),
    ]
    for r in dups:
        assert (r.client_id, r.first_client_id) == (B, A)
        assert (r.rebalance_client_id, r.rebalance_trigger, r.rebalance_kind) == (A, "notify", "removed")
        assert r.rebalance_ms == t0 + 1200
    assert [r.start_ms - t0 for r in dups] == [1300, 1400]
    assert [r.first_start_ms - t0 for r in dups] == [1100, 860]


def test_scripted_pauses_and_ownership(scripted: Any) -> None:
    result, tables, _, t0, _ = scripted
    pauses = sorted(tables["pauses"].collect(), key=lambda r: r.queue_id)
    assert [(r.queue_id, r.from_client, r.to_client, r.trigger) for r in pauses] == [
        (2, A, B, "start"), (3, A, B, "start"),
    ]  # fmt: skip
    assert [(r.last_consumed_ms - t0, r.first_consumed_ms - t0, r.pause_ms) for r in pauses] == [
        (1100, 1300, 200), (860, 1400, 540),
    ]  # fmt: skip
    assert {r.change for r in pauses} == {1}
    assert {(r.pause_start_kind, r.last_consumed_by) for r in pauses} == {("last consumption", A)}
    own = {
        (r.client_id, r.queue_id): (r.from_ms - t0, None if r.to_ms is None else r.to_ms - t0, r.removed_by)
        for r in tables["ownership"].collect()
    }
    assert own == {
        (A, 0): (0, None, None), (A, 1): (0, None, None),
        (A, 2): (0, 1200, "notify"), (A, 3): (0, 1200, "notify"),
        (B, 2): (1000, None, None), (B, 3): (1000, None, None),
    }  # fmt: skip
    assert result.figures.longest_pause_ms == 540


def test_scripted_consumption_lag_rebalances_and_figures(scripted: Any) -> None:
    result, tables, ids, _, n_deliveries = scripted
    rows = tables["consumption"].collect()
    assert len(rows) == n_deliveries
    assert {r.msg_id for r in rows} == set(ids.values())
    assert all(ids[(r.queue_id, r.queue_offset)] == r.msg_id for r in rows)  # queue and offset from the topic
    retried = sorted((r for r in rows if r.msg_id == ids[(0, 5)]), key=lambda r: r.start_ms)
    assert [(r.success, r.retry_times, r.delivery, r.duplicate) for r in retried] == [
        (False, 0, 1, False), (True, 1, 2, False),
    ]  # fmt: skip
    lag = tables["lag"].collect()
    assert sum(r.produced for r in lag) == 40
    assert sum(r.consumed for r in lag) == 40
    last = {}
    for r in sorted(lag, key=lambda r: r.bucket_ms):
        last[r.queue_id] = r.lag
    assert last == {0: 0, 1: 0, 2: 0, 3: 0}
    reb = tables["rebalances"].collect()
    assert sorted((r.client_id, r.seq, r.changed) for r in reb) == [
        (A, 1, True), (A, 2, True), (A, 3, False), (B, 1, True),
    ]  # fmt: skip
    f = result.figures
    assert (f.delivered, f.deliveries, f.duplicates, f.attributed) == (40, n_deliveries, 2, 2)
    assert (f.not_consumed, f.moves, f.rebalances, f.consumers) == (0, 2, 3, 2)
    assert f.peak_backlog == 40  # the 40 messages were stored before the scripted deliveries began
    page = result.html_path.read_text()
    assert page.count("<div class=plot ") >= 4  # each plot an inline SVG
    assert "<b>2</b>" in page
    assert "540 ms" in page
    assert "pause: how long a moved queue had messages waiting" in page  # the definition beside the figure


def test_real_traced_consumers_across_a_rebalance(spark: Any, cluster: ClusterThread, tmp_path: Path) -> None:
    topic, group = "ReportLive", "report_live"
    cluster.create_topic(topic, 4)
    client = ClientConfig(namesrv=cluster.namesrv, client_ip="127.0.0.1")
    lock = threading.Lock()
    got: list[tuple[str, str]] = []

    def consumer(name: str) -> PushConsumer:
        config = ClientConfig(namesrv=cluster.namesrv, client_ip="127.0.0.1", instance_name=name)
        c = PushConsumer(
            group,
            client_config=config,
            trace=True,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        )
        c.subscribe(topic, "*")

        def listen(msgs: list[MessageExt]) -> ConsumeConcurrentlyStatus:
            with lock:
                got.extend((name, m.msg_id) for m in msgs)
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        c.register_listener(listen)
        return c.start()

    sent: list[str] = []
    first = consumer("live-a")
    second = None
    try:
        with Producer("report_live_pg", client_config=client) as producer:
            for i in range(120):
                sent.append(producer.send(Message(topic, f"live-{i}".encode())).msg_id)
                if i == 40:
                    second = consumer("live-b")
                time.sleep(0.01)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not set(sent) <= {m for _, m in got}:
            time.sleep(0.05)
    finally:
        if second is not None:
            second.shutdown()
        first.shutdown()
    assert set(sent) <= {m for _, m in got}
    result: ReportResult = build_report(spark, cluster.namesrv, group, topic=topic, out_dir=tmp_path / "r")
    consumption = spark.read.parquet(str(result.tables["consumption"]))
    rows = consumption.select("msg_id", "client_id", "queue_id", "duplicate").collect()
    assert len(rows) == len(got)  # every delivery the listeners saw was traced, once
    assert {r.msg_id for r in rows} == set(sent)
    assert all(r.queue_id is not None for r in rows)
    assert {r.client_id for r in rows} == {first.client_id, second.client_id if second else ""}
    dups = spark.read.parquet(str(result.tables["duplicates"])).collect()
    assert len(dups) == sum(r.duplicate for r in rows) == len(got) - len(set(sent))
    assert all(d.rebalance_ms is not None for d in dups)
    assert result.figures.not_consumed == 0
    assert result.figures.rebalances >= 3  # a START for each, and a's NOTIFY (plus the SHUTDOWN handoff)
    pauses = spark.read.parquet(str(result.tables["pauses"])).collect()
    assert {p.to_client for p in pauses} >= {second.client_id if second else ""}


def test_cli_report_since_keeps_later_events_judged_against_the_history(
    scripted: Any, cluster: ClusterThread, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rocketq.cli.main import main

    _, _, _, t0, _ = scripted
    argv = ["report", "--group", GROUP, "--topic", TOPIC, "--since", str(t0 + 1250), "--bucket", "500",
            "--out", str(tmp_path / "cli"), "--namesrv", cluster.namesrv, "--json"]  # fmt: skip
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    # from 1250 on: B's queues 2 and 3 (11 deliveries), A's queue 0 with the failure (6) and queue 1 (5);
    # both duplicates still count (their first deliveries were before); the moves ended before
    assert doc["figures"] == {
        "delivered": 21, "deliveries": 22, "duplicates": 2, "attributed": 2, "not_consumed": 0,
        "longest_pause_ms": None, "moves": 0, "rebalances": 0, "consumers": 2, "peak_backlog": 19,
    }  # fmt: skip
    assert Path(doc["html"]).is_file()
    assert set(doc["tables"]) == {"consumption", "ownership", "rebalances", "duplicates", "pauses", "lag"}


def test_cli_report_keeps_spark_off_the_terminal(
    scripted: Any, cluster: ClusterThread, tmp_path: Path
) -> None:
    """``rocketq report`` as a user runs it (its own process, its own JVM): stderr holds only its
    own progress lines - Spark's log goes to spark.log, its progress bars are off - and stdout
    the figures with their definitions."""
    import subprocess
    import sys

    out = tmp_path / "cli-proc"
    proc = subprocess.run(
        [sys.executable, "-m", "rocketq", "report", "--group", GROUP, "--topic", TOPIC, "--out", str(out),
         "--namesrv", cluster.namesrv],
        capture_output=True, text=True, timeout=300, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stderr.strip(), "no progress shown"
    assert all(line.startswith("rocketq report: ") for line in proc.stderr.splitlines()), proc.stderr[-3000:]
    assert (out / "spark.log").is_file()
    assert "queue moves 2, longest pause 540 ms" in proc.stdout
    assert "  pause: how long a moved queue had messages waiting" in proc.stdout
    assert f"report: {out / 'report.html'}" in proc.stdout
