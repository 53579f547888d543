"""``rocketq topic ...`` and ``rocketq group ...`` against the embedded broker (in-process commands,
plus ``rocketq consume`` child processes where a group needs separate processes)."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketq.admin import Admin
from rocketq.cli.main import main
from tests.integration.clientkit import ClusterThread, wait_until
from tests.integration.clikit import CliProcess, consume_args, parse_recv, without_run

pytestmark = pytest.mark.integration


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ClusterThread]:
    # the broker answers a relayed running-info request that the client ignores within 1 s
    c = ClusterThread(tmp_path / "cluster", client_call_timeout=1.0)
    try:
        yield c
    finally:
        c.close()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()  # only this command's output
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    result: dict[str, object] = json.loads(out)
    return result


def bodies(out: str) -> list[str]:
    return sorted(without_run(r.body) for r in map(parse_recv, out.splitlines()) if r is not None)


def test_topic_create_list_route_stats_update_delete(
    cluster: ClusterThread, capsys: pytest.CaptureFixture[str]
) -> None:
    ns = cluster.namesrv
    code, out, _ = run(capsys, "topic", "create", "TopT", "--queues", "4", "--namesrv", ns)
    assert code == 0
    assert out == f"topic TopT created on broker-a ({cluster.broker_addr}): 4 read / 4 write queues, perm 6\n"
    code, out, _ = run(capsys, "topic", "list", "--namesrv", ns)
    assert "TopT" in out.split()
    assert "TopT" in run_json(capsys, "topic", "list", "--namesrv", ns)["topics"]  # type: ignore[operator]
    route = run_json(capsys, "topic", "route", "TopT", "--namesrv", ns)
    assert route["queueDatas"] == [
        {"brokerName": "broker-a", "perm": 6, "readQueueNums": 4, "topicSysFlag": 0, "writeQueueNums": 4}
    ]
    code, out, _ = run(capsys, "topic", "route", "TopT", "--namesrv", ns)
    assert "broker-a" in out
    assert cluster.broker_addr in out
    assert main(["produce", "TopT", "--count", "8", "--namesrv", ns]) == 0
    capsys.readouterr()
    stats = run_json(capsys, "topic", "stats", "TopT", "--namesrv", ns)
    assert stats["total_messages"] == 8
    assert [q["queue_id"] for q in stats["queues"]] == [0, 1, 2, 3]  # type: ignore[attr-defined]
    code, out, _ = run(capsys, "topic", "stats", "TopT", "--namesrv", ns)
    assert code == 0
    assert "total" in out
    changed = run_json(capsys, "topic", "update", "TopT", "--write-queues", "2", "--namesrv", ns)
    assert changed["updated"] == [
        {"broker": "broker-a", "addr": cluster.broker_addr, "read_queues": 4, "write_queues": 2, "perm": 6}
    ]
    code, out, _ = run(capsys, "topic", "create", "TopO", "--queues", "2", "--order", "--namesrv", ns)
    assert "order config: broker-a:2" in out
    code, out, _ = run(capsys, "topic", "delete", "TopT", "--namesrv", ns)
    assert out.startswith("topic TopT deleted on broker-a")
    assert "TopT" not in run_json(capsys, "topic", "list", "--namesrv", ns)["topics"]  # type: ignore[operator]


def test_topic_errors_are_one_line_exit_2(cluster: ClusterThread, capsys: pytest.CaptureFixture[str]) -> None:
    ns = cluster.namesrv
    code, _, err = run(capsys, "topic", "stats", "Nope", "--namesrv", ns)
    assert (code, err) == (
        2,
        "rocketq topic stats: error: topic Nope does not exist (the name server has no route for it)\n",
    )
    code, _, err = run(capsys, "topic", "update", "Nope", "--queues", "2", "--namesrv", ns)
    assert code == 2
    code, _, err = run(capsys, "topic", "update", "Nope", "--namesrv", ns)
    assert "nothing to change" in err
    code, _, err = run(capsys, "topic", "create", "T", "--queues", "2", "--cluster", "Nope", "--namesrv", ns)
    assert (code, "no cluster named 'Nope'" in err) == (2, True)
    code, _, err = run(capsys, "topic", "list", "--namesrv", "127.0.0.1:1")
    assert (code, err.count("\n")) == (2, 1)
    assert "is `rocketq server` running?" in err
    with pytest.raises(SystemExit) as exit_info:
        main(["topic", "create", "T", "--queues", "2000"])
    assert exit_info.value.code == 2
    assert "queue count must be 1..1024, got 2000" in capsys.readouterr().err
    code, _, err = run(capsys, "group", "members", "nobody", "--namesrv", ns)
    assert (code, err) == (
        2,
        "rocketq group members: error: consumer group nobody is unknown to every broker\n",
    )


def test_group_members_progress_and_the_plan_fallback(
    cluster: ClusterThread, capsys: pytest.CaptureFixture[str]
) -> None:
    ns = cluster.namesrv
    assert main(["topic", "create", "GrpT", "--queues", "8", "--namesrv", ns]) == 0
    procs = [
        CliProcess(consume_args(ns, "GrpT", "grp_g", "--from", "first", "--instance", name))
        for name in ("m1", "m2")
    ]
    try:
        for p in procs:
            assert p.wait_for(lambda _l, p=p: len(p.owned("GrpT") or ()) == 4, 30.0), p.errors
        view = run_json(capsys, "group", "members", "grp_g", "--namesrv", ns)
        members = view["members"]
        assert isinstance(members, list)
        assert [m["client_id"].split("@")[1] for m in members] == ["m1", "m2"]
        for m, p in zip(members, procs, strict=True):
            owned = sorted(f"{q['broker']}:{q['queue_id']}" for q in m["queues"] if q["topic"] == "GrpT")
            assert owned == sorted(p.owned("GrpT") or ())
            assert (m["queues_source"], m["language"], m["version"], m["duplicate"]) == (
                "running-info", "PYTHON", "V4_9_4", False
            )  # fmt: skip
        code, out, _ = run(capsys, "group", "members", "grp_g", "--namesrv", ns)
        assert "GrpT@broker-a:0-3" in out
        assert "GrpT@broker-a:4-7" in out

        # N produced, M consumed: the lag is exact
        assert main(["produce", "GrpT", "--count", "40", "--body", "x", "--namesrv", ns]) == 0
        assert procs[0].wait_for(lambda _l: sum(len(p.recvs()) for p in procs) == 40, 30.0)
        for p in procs:
            p.signal(signal.SIGTERM)
        assert [p.wait(30.0) for p in procs] == [0, 0]
        assert main(["produce", "GrpT", "--count", "24", "--body", "y", "--namesrv", ns]) == 0
        capsys.readouterr()
        progress = run_json(capsys, "group", "progress", "grp_g", "--topic", "GrpT", "--namesrv", ns)
        totals = (progress["total_broker_offset"], progress["total_consumer_offset"], progress["total_lag"])
        assert totals == (64, 40, 24)
        queues = progress["queues"]
        assert isinstance(queues, list)
        assert all(
            q["lag"] == q["broker_offset"] - q["consumer_offset"] and q["owner"] is None for q in queues
        )
        code, out, _ = run(capsys, "group", "progress", "grp_g", "--namesrv", ns)
        assert code == 0
        assert "total" in out
        assert "24" in out

        # a member that stops answering: its queues are computed with the group's strategy
        for p in procs:
            p.close()
        procs = [
            CliProcess(consume_args(ns, "GrpT", "grp_g", "--instance", name, "--strategy", "AVG_BY_CIRCLE"))
            for name in ("m1", "m2")
        ]
        for p in procs:
            assert p.wait_for(lambda _l, p=p: len(p.owned("GrpT") or ()) == 4, 30.0), p.errors
        before = sorted(procs[1].owned("GrpT") or ())
        procs[1].pause()
        view = run_json(capsys, "group", "members", "grp_g", "--namesrv", ns)
        stopped = view["members"][1]  # type: ignore[index]
        assert (stopped["queues_source"], stopped["strategy"]) == ("plan", "AVG_BY_CIRCLE")
        assert (
            sorted(f"{q['broker']}:{q['queue_id']}" for q in stopped["queues"] if q["topic"] == "GrpT")
            == before
        )
        assert stopped["error"]
        assert view["members"][0]["queues_source"] == "running-info"  # type: ignore[index]
        progress = run_json(capsys, "group", "progress", "grp_g", "--topic", "GrpT", "--namesrv", ns)
        assert progress["owners_source"] == "plan"
        owners = {q["queue_id"]: q["owner"].split("@")[1] for q in progress["queues"]}  # type: ignore[attr-defined]
        assert owners == {
            i: "m1" if i % 2 == 0 else "m2" for i in range(8)
        }  # AVG_BY_CIRCLE deals alternately
        procs[1].signal(signal.SIGCONT)
    finally:
        for p in procs:
            p.close()


def test_duplicate_client_ids_are_flagged(cluster: ClusterThread, capsys: pytest.CaptureFixture[str]) -> None:
    ns = cluster.namesrv
    assert main(["topic", "create", "DupT", "--queues", "4", "--namesrv", ns]) == 0
    # same instance name, same host: both processes get the client id <ip>@twin
    procs = [CliProcess(consume_args(ns, "DupT", "dup_g", "--instance", "twin")) for _ in range(2)]
    try:
        # the broker lists the id twice, so AVG gives both "halves" to index 0: both processes
        # take queues 0 and 1, and nobody takes 2 and 3 (RocketMQ's behaviour, made visible)
        for p in procs:
            assert p.wait_for(lambda _l, p=p: p.owned("DupT") == ("broker-a:0", "broker-a:1"), 30.0), p.errors
        view = run_json(capsys, "group", "members", "dup_g", "--namesrv", ns)
        members = view["members"]
        assert isinstance(members, list)
        assert len(members) == 1
        assert members[0]["client_id"].endswith("@twin")
        assert members[0]["duplicate"] is True
        assert len(members[0]["addresses"]) == 2
        duplicates = view["duplicates"]
        assert isinstance(duplicates, list)
        assert [(d["client_id"], len(d["addresses"])) for d in duplicates] == [(members[0]["client_id"], 2)]
        _, out, _ = run(capsys, "group", "members", "dup_g", "--namesrv", ns)
        assert "DUPLICATE" in out
        assert "they consume the same queues" in out
        progress = run_json(capsys, "group", "progress", "dup_g", "--topic", "DupT", "--namesrv", ns)
        owners = [q["owner"] for q in progress["queues"]]  # type: ignore[attr-defined]
        assert owners == [members[0]["client_id"]] * 2 + [None, None]
    finally:
        for p in procs:
            p.close()


def test_group_reset_first_last_and_timestamp_change_what_comes_next(
    cluster: ClusterThread, capsys: pytest.CaptureFixture[str]
) -> None:
    ns = cluster.namesrv
    assert main(["topic", "create", "RstT", "--queues", "1", "--namesrv", ns]) == 0
    assert main(["produce", "RstT", "--count", "5", "--body", "a", "--namesrv", ns]) == 0
    capsys.readouterr()
    stats = run_json(capsys, "topic", "stats", "RstT", "--namesrv", ns)
    last_a = stats["queues"][0]["last_update_ms"]  # type: ignore[index]
    while time.time() * 1000 <= last_a + 1:  # the next batch is stored at a later millisecond
        time.sleep(0.001)
    assert main(["produce", "RstT", "--count", "5", "--body", "b", "--namesrv", ns]) == 0

    def consume(n: int, *extra: str) -> list[str]:
        capsys.readouterr()
        code, out, err = run(
            capsys, "consume", "RstT", "--group", "rst_g", "--from", "first", "--count", str(n), *extra,
            "--namesrv", ns,
        )  # fmt: skip
        assert code == 0, err
        return bodies(out)

    a = [f"a-{i:06d}" for i in range(5)]
    b = [f"b-{i:06d}" for i in range(5)]
    assert consume(10) == a + b
    # everything consumed; the group is offline now: reset to first → all ten again
    run_json(capsys, "group", "reset", "rst_g", "--topic", "RstT", "--to", "first", "--namesrv", ns)
    code, out, err = run(
        capsys, "consume", "RstT", "--group", "rst_g", "--count", "10", "--json", "--namesrv", ns
    )
    recvs = [e for e in map(json.loads, out.splitlines()) if e["type"] == "recv"]
    assert sorted(without_run(e["body"]) for e in recvs) == a + b
    first_b = min(e["stored_ms"] for e in recvs if e["body"].startswith("b"))
    # to the time stamp of the first b message: exactly the b messages come next
    result = run_json(
        capsys, "group", "reset", "rst_g", "--topic", "RstT", "--to", str(first_b), "--namesrv", ns
    )
    assert result["offsets"] == [{"topic": "RstT", "broker": "broker-a", "queue_id": 0, "offset": 5}]
    assert consume(5) == b
    # to last: what was produced meanwhile is skipped
    assert main(["produce", "RstT", "--count", "3", "--body", "c", "--namesrv", ns]) == 0
    code, out, _ = run(capsys, "group", "reset", "rst_g", "--topic", "RstT", "--to", "last", "--namesrv", ns)
    assert code == 0
    assert "offsets reset to last" in out
    assert main(["produce", "RstT", "--count", "2", "--body", "d", "--namesrv", ns]) == 0
    assert consume(2) == [f"d-{i:06d}" for i in range(2)]
    # ISO-8601 works too, and a bad target is a one-line error
    iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(first_b / 1000 - 3600))
    result = run_json(capsys, "group", "reset", "rst_g", "--topic", "RstT", "--to", iso, "--namesrv", ns)
    assert result["offsets"][0]["offset"] == 0  # type: ignore[index]
    code, _, err = run(capsys, "group", "reset", "rst_g", "--topic", "RstT", "--to", "soon", "--namesrv", ns)
    assert code == 2
    assert "soon" in err


def test_online_reset_makes_a_running_consumer_receive_again(
    cluster: ClusterThread, capsys: pytest.CaptureFixture[str]
) -> None:
    ns = cluster.namesrv
    assert main(["topic", "create", "OnT", "--queues", "2", "--namesrv", ns]) == 0
    assert main(["produce", "OnT", "--count", "10", "--body", "o", "--namesrv", ns]) == 0
    p = CliProcess(consume_args(ns, "OnT", "on_g", "--from", "first"))
    try:
        assert p.wait_for(lambda _l: len(p.recvs()) == 10, 30.0), p.errors
        # the broker resets only offsets it has: wait for the consumer's first commit (10 s after start)
        with Admin(ns) as admin:
            assert wait_until(lambda: admin.group_progress("on_g", "OnT").total_consumer_offset == 10, 20.0)
        run_json(capsys, "group", "reset", "on_g", "--topic", "OnT", "--to", "first", "--namesrv", ns)
        assert p.wait_for(lambda _l: len(p.recvs()) == 20, 30.0), p.errors
        assert sorted(without_run(r.body) for r in p.recvs()) == sorted([f"o-{i:06d}" for i in range(10)] * 2)
        p.signal(signal.SIGTERM)
        assert p.wait(30.0) == 0
    finally:
        p.close()
