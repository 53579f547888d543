"""``rocketq produce`` and ``rocketq consume`` against the embedded broker.

Commands run in-process (``rocketq.cli.main``, output captured) where no signal is involved, and
as child processes (:mod:`tests.integration.clikit`) where two consumers or a signal are.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rocketq.admin import Admin
from rocketq.cli.main import main
from tests.integration.clientkit import ClusterThread
from tests.integration.clikit import CliProcess, consume_args, parse_rebalance, parse_recv, without_run

pytestmark = pytest.mark.integration


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str], str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def create_topic(cluster: ClusterThread, topic: str, queues: int) -> None:
    with Admin(cluster.namesrv) as admin:
        admin.create_topic(topic, queues=queues)


def test_produce_n_then_consume_n_with_unique_bodies(
    cluster: ClusterThread, capsys: pytest.CaptureFixture[str]
) -> None:
    create_topic(cluster, "CliT", 4)
    code, out, _ = run(
        capsys, "produce", "CliT", "--count", "200", "--body", "hi", "--namesrv", cluster.namesrv
    )
    assert code == 0
    assert out[-1].startswith("sent 200 messages to CliT, 0 failed")
    code, out, err = run(
        capsys, "consume", "CliT", "--group", "cli_g1", "--from", "first", "--count", "200",
        "--namesrv", cluster.namesrv,
    )  # fmt: skip
    assert code == 0
    recvs = [r for r in map(parse_recv, out) if r is not None]
    assert sorted(without_run(r.body) for r in recvs) == [f"hi-{i:06d}" for i in range(200)]
    assert len({(r.queue_id, r.queue_offset) for r in recvs}) == 200
    assert {r.broker for r in recvs} == {"broker-a"}
    first = parse_rebalance(out[0])
    assert first is not None
    assert first.topic == "CliT"
    assert first.owned == tuple(f"broker-a:{i}" for i in range(4))
    assert first.client_id == recvs[0].client_id
    # the consumer shut down: its last line gives every queue back
    last = parse_rebalance(out[-1])
    assert last is not None
    assert last.owned == ()
    assert len(last.removed) == 4
    assert "200 messages (200 distinct by message id, 0 duplicates)" in err


def test_produce_sizes_batches_and_json_summary(
    cluster: ClusterThread, capsys: pytest.CaptureFixture[str]
) -> None:
    create_topic(cluster, "CliSizes", 2)
    code, out, _ = run(
        capsys, "produce", "CliSizes", "--count", "100", "--size", "64", "--batch", "16", "--tag", "TagA",
        "--keys", "k1 k2", "--json", "--namesrv", cluster.namesrv,
    )  # fmt: skip
    assert code == 0
    summary = json.loads(out[-1])
    assert (summary["sent"], summary["failed"], summary["bytes"]) == (100, 0, 6400)
    code, out, _ = run(
        capsys, "consume", "CliSizes", "--group", "cli_sizes", "--from", "first", "--count", "100", "--json",
        "--tag", "TagA", "--namesrv", cluster.namesrv,
    )  # fmt: skip
    assert code == 0
    events = [json.loads(line) for line in out]
    recvs = [e for e in events if e["type"] == "recv"]
    assert len(recvs) == 100
    assert all(e["body_size"] == 64 and e["tags"] == "TagA" and e["keys"] == "k1 k2" for e in recvs)
    assert sorted(e["body"][:7] for e in recvs) == [f"{i:06d}-" for i in range(100)]
    assert all(e["stored_ms"] >= e["born_ms"] > 0 and e["ts_ms"] >= e["stored_ms"] for e in recvs)
    rebalances = [e for e in events if e["type"] == "rebalance"]
    assert rebalances[0]["trigger"] == "start"
    assert len(rebalances[0]["owned"]) == 2
    # a tag the messages do not carry filters everything out
    code, out, _ = run(
        capsys, "consume", "CliSizes", "--group", "cli_sizes_b", "--from", "first", "--seconds", "1.5",
        "--tag", "TagB", "--namesrv", cluster.namesrv,
    )  # fmt: skip
    assert code == 0
    assert not [line for line in out if line.startswith("RECV")]


def test_seconds_stops_an_idle_consumer_with_exit_0(
    cluster: ClusterThread, capsys: pytest.CaptureFixture[str]
) -> None:
    create_topic(cluster, "CliIdle", 2)
    code, out, err = run(
        capsys, "consume", "CliIdle", "--group", "cli_idle", "--seconds", "1", "--namesrv", cluster.namesrv
    )
    assert code == 0
    assert [parse_rebalance(line) is not None for line in out] == [True, True]
    assert "0 messages" in err


def test_two_consumers_split_16_queues_8_8_then_sigterm_exits_0(cluster: ClusterThread) -> None:
    create_topic(cluster, "CliSplit", 16)
    procs = [
        CliProcess(
            consume_args(cluster.namesrv, "CliSplit", "cli_split", "--from", "first", "--instance", name)
        )
        for name in ("c1", "c2")
    ]
    try:
        for p in procs:
            assert p.wait_for(lambda _l, p=p: len(p.owned("CliSplit") or ()) == 8, 30.0), (p.lines, p.errors)
        owned = [set(p.owned("CliSplit") or ()) for p in procs]
        assert not owned[0] & owned[1]
        assert owned[0] | owned[1] == {f"broker-a:{i}" for i in range(16)}
        assert main(["produce", "CliSplit", "--count", "160", "--namesrv", cluster.namesrv]) == 0
        assert procs[0].wait_for(lambda _l: sum(len(p.recvs()) for p in procs) >= 160, 30.0)
        with Admin(cluster.namesrv) as admin:
            per_queue = {q.queue.short: q.max_offset for q in admin.topic_stats("CliSplit").queues}
        for p in procs:
            got = p.recvs()
            mine = set(p.owned("CliSplit") or ())
            assert {f"broker-a:{r.queue_id}" for r in got} <= mine
            assert len(got) == sum(per_queue[q] for q in mine)
        bodies = [without_run(r.body) for p in procs for r in p.recvs()]
        assert sorted(bodies) == [f"message-{i:06d}" for i in range(160)]
        for p in procs:
            p.signal(signal.SIGTERM)
        assert [p.wait(30.0) for p in procs] == [0, 0]
        # the last to leave hands back everything it owned
        assert all(p.rebalances("CliSplit")[-1].owned == () for p in procs)
    finally:
        for p in procs:
            p.close()


def test_sigterm_persists_offsets_and_a_restarted_consumer_does_not_re_receive(
    cluster: ClusterThread, capsys: pytest.CaptureFixture[str]
) -> None:
    create_topic(cluster, "CliRestart", 4)
    assert main(["produce", "CliRestart", "--count", "50", "--body", "a", "--namesrv", cluster.namesrv]) == 0
    p = CliProcess(consume_args(cluster.namesrv, "CliRestart", "cli_restart", "--from", "first"))
    try:
        assert p.wait_for(lambda _l: len(p.recvs()) >= 50, 30.0), p.errors
        p.signal(signal.SIGTERM)
        assert p.wait(30.0) == 0
        assert any("50 messages (50 distinct by message id" in line for line in p.errors)
    finally:
        p.close()
    with Admin(cluster.namesrv) as admin:
        progress = admin.group_progress("cli_restart", "CliRestart")
    assert (progress.total_consumer_offset, progress.total_lag) == (50, 0)
    capsys.readouterr()
    assert main(["produce", "CliRestart", "--count", "10", "--body", "b", "--namesrv", cluster.namesrv]) == 0
    code, out, _ = run(
        capsys, "consume", "CliRestart", "--group", "cli_restart", "--from", "first", "--count", "10",
        "--namesrv", cluster.namesrv,
    )  # fmt: skip
    assert code == 0
    bodies = sorted(without_run(r.body) for r in map(parse_recv, out) if r is not None)
    assert bodies == [f"b-{i:06d}" for i in range(10)]


def test_unreachable_name_server_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (
        ["produce", "T", "--namesrv", "127.0.0.1:1"],
        ["consume", "T", "--group", "g", "--namesrv", "127.0.0.1:1"],
    ):
        code, _out, err = run(capsys, *argv)
        assert code == 2
        lines = [line for line in err.splitlines() if "error" in line]
        assert lines == [
            f"rocketq {argv[0]}: error: cannot reach name server 127.0.0.1:1 "
            "(is `rocketq server` running? set --namesrv or $NAMESRV_ADDR)"
        ]


def test_bad_arguments_are_one_line_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["produce", "T", "--size", "3", "--namesrv", "127.0.0.1:1"]) == 2
    assert "--size must be at least 14 bytes" in capsys.readouterr().err
    assert main(["consume", "T", "--group", "g", "--strategy", "NOPE", "--namesrv", "127.0.0.1:1"]) == 2
    assert "NOPE" in capsys.readouterr().err
    assert main(["consume", "T", "--group", "g", "--from", "yesterday", "--namesrv", "127.0.0.1:1"]) == 2
    assert "yesterday" in capsys.readouterr().err


def test_from_timestamp_and_last_hold_for_a_new_group(
    cluster: ClusterThread, capsys: pytest.CaptureFixture[str]
) -> None:
    create_topic(cluster, "CliFrom", 1)
    ns = cluster.namesrv
    assert main(["produce", "CliFrom", "--count", "5", "--body", "old", "--namesrv", ns]) == 0
    with Admin(ns) as admin:
        last_old = admin.topic_stats("CliFrom").queues[0].last_update_ms
        while time.time() * 1000 <= last_old + 1:  # the next message is stored at a later millisecond
            time.sleep(0.001)
        assert main(["produce", "CliFrom", "--count", "1", "--body", "new", "--namesrv", ns]) == 0
        first_new = admin.topic_stats("CliFrom").queues[0].last_update_ms
    code, out, err = run(
        capsys, "consume", "CliFrom", "--group", "cli_from", "--from", str(first_new), "--count", "1",
        "--namesrv", ns,
    )  # fmt: skip
    assert code == 0
    assert [(without_run(r.body), r.queue_offset) for r in map(parse_recv, out) if r is not None] == [
        ("new-000000", 5)
    ]
    assert "group cli_from is new on CliFrom; committed its start offsets" in err
    assert "broker-a:0=5" in err
    # --from last: only what is produced after the start
    p = CliProcess(consume_args(ns, "CliFrom", "cli_last", "--from", "last"))
    try:
        assert p.wait_for(lambda _l: p.owned("CliFrom") == ("broker-a:0",), 30.0), p.errors
        assert main(["produce", "CliFrom", "--count", "2", "--body", "later", "--namesrv", ns]) == 0
        assert p.wait_for(lambda _l: len(p.recvs()) == 2, 30.0), p.errors
        assert [without_run(r.body) for r in p.recvs()] == ["later-000000", "later-000001"]
    finally:
        p.close()
    # a group with offsets resumes from them whatever --from says
    capsys.readouterr()
    code, out, err = run(
        capsys, "consume", "CliFrom", "--group", "cli_from", "--from", "last", "--count", "2", "--namesrv", ns
    )
    assert code == 0
    assert [without_run(r.body) for r in map(parse_recv, out) if r is not None] == [
        "later-000000",
        "later-000001",
    ]
    assert "committed its start offsets" not in err


def test_broadcast_consumers_each_get_every_message(cluster: ClusterThread, tmp_path: Path) -> None:
    create_topic(cluster, "CliCast", 4)
    env = {"HOME": str(tmp_path)}  # broadcasting offsets live in ~/.rocketmq_offsets
    procs = [
        CliProcess(
            consume_args(
                cluster.namesrv, "CliCast", "cli_cast", "--broadcast", "--from", "first", "--instance", n
            ),
            env=env,
        )
        for n in ("b1", "b2")
    ]
    try:
        for p in procs:
            assert p.wait_for(lambda _l, p=p: len(p.owned("CliCast") or ()) == 4, 30.0), p.errors
        assert main(["produce", "CliCast", "--count", "40", "--namesrv", cluster.namesrv]) == 0
        for p in procs:
            assert p.wait_for(lambda _l, p=p: len(p.recvs()) == 40, 30.0), p.errors
            assert sorted(without_run(r.body) for r in p.recvs()) == [f"message-{i:06d}" for i in range(40)]
            p.signal(signal.SIGINT)
        assert [p.wait(30.0) for p in procs] == [0, 0]
        assert list((tmp_path / ".rocketmq_offsets").iterdir())
    finally:
        for p in procs:
            p.close()


def test_a_consumer_whose_reader_goes_away_stops_even_when_idle(cluster: ClusterThread) -> None:
    create_topic(cluster, "CliPipe", 2)
    assert main(["produce", "CliPipe", "--count", "3", "--namesrv", cluster.namesrv]) == 0
    args = [
        sys.executable,
        "-m",
        "rocketq",
        *consume_args(cluster.namesrv, "CliPipe", "cli_pipe", "--from", "first"),
    ]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(4)]  # the REBALANCE line and the 3 messages
        assert sum(line.startswith("RECV ") for line in lines) == 3
        proc.stdout.close()  # like `| head -4`: nothing more will be written, the topic is quiet
        _, err = proc.communicate(timeout=20)
        assert proc.returncode == 0
        assert "3 messages" in err
        assert "Exception" not in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


def test_consume_json_piped_into_head_exits_quietly(cluster: ClusterThread) -> None:
    """``rocketq consume T --json | head -2`` on a busy topic: the broken pipe ends the consumer
    gracefully and stderr holds its summary only - no warnings about answers to pulls it stopped
    waiting for while shutting down."""
    create_topic(cluster, "CliHead", 4)
    assert main(["produce", "CliHead", "--count", "400", "--namesrv", cluster.namesrv]) == 0
    args = [sys.executable, "-m", "rocketq", *consume_args(cluster.namesrv, "CliHead", "cli_head", "--json")]
    args += ["--from", "first"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(2)]
        assert all(line.startswith("{") for line in lines), lines
        proc.stdout.close()  # `head -2` exits
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert [line for line in err.splitlines() if not line.startswith("rocketq consume: ")] == [], err
        assert "messages (" in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


def test_orderly_consumes_each_queue_in_offset_order(
    cluster: ClusterThread, capsys: pytest.CaptureFixture[str]
) -> None:
    create_topic(cluster, "CliOrder", 2)
    assert main(["produce", "CliOrder", "--count", "60", "--namesrv", cluster.namesrv]) == 0
    code, out, _ = run(
        capsys, "consume", "CliOrder", "--group", "cli_order", "--orderly", "--from", "first",
        "--count", "60", "--namesrv", cluster.namesrv,
    )  # fmt: skip
    assert code == 0
    recvs = [r for r in map(parse_recv, out) if r is not None]
    assert len({r.body for r in recvs}) == 60
    for qid in (0, 1):
        offsets = [r.queue_offset for r in recvs if r.queue_id == qid]
        assert offsets == list(range(len(offsets)))  # in order, none skipped, none twice
    with Admin(cluster.namesrv) as admin:
        assert admin.group_progress("cli_order", "CliOrder").total_lag == 0


def test_clean_handoff_has_no_duplicates_when_a_consumer_joins_and_leaves(cluster: ClusterThread) -> None:
    create_topic(cluster, "CliClean", 8)
    ns = cluster.namesrv
    args = ("--from", "first", "--handoff", "clean")
    first = CliProcess(consume_args(ns, "CliClean", "cli_clean", *args, "--instance", "h1"))
    second: CliProcess | None = None
    producer = CliProcess(["produce", "CliClean", "--count", "600", "--rate", "200", "--namesrv", ns])
    try:
        assert first.wait_for(lambda _l: len(first.owned("CliClean") or ()) == 8, 30.0), first.errors
        # scale out in the middle of the stream ...
        assert first.wait_for(lambda _l: len(first.recvs()) >= 100, 30.0)
        second = CliProcess(consume_args(ns, "CliClean", "cli_clean", *args, "--instance", "h2"))
        assert second.wait_for(lambda _l: len(second.owned("CliClean") or ()) == 4, 30.0), second.errors
        assert first.wait_for(lambda _l: len(first.owned("CliClean") or ()) == 4, 30.0)
        # ... and back in, gracefully
        assert second.wait_for(lambda _l: len(second.recvs()) >= 50, 30.0)
        second.signal(signal.SIGTERM)
        assert second.wait(30.0) == 0
        assert first.wait_for(lambda _l: len(first.owned("CliClean") or ()) == 8, 30.0)
        assert producer.wait(60.0) == 0
        procs = [first, second]
        assert first.wait_for(lambda _l: len({r.body for p in procs for r in p.recvs()}) == 600, 30.0)
        bodies = [without_run(r.body) for p in procs for r in p.recvs()]
        assert sorted(set(bodies)) == [f"message-{i:06d}" for i in range(600)]
        assert len(bodies) == 600, f"{len(bodies) - 600} duplicates with --handoff clean"
    finally:
        for p in (first, second, producer):
            if p is not None:
                p.close()
