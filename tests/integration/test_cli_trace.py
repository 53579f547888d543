"""``rocketq produce --trace`` and ``rocketq consume --trace`` (in-process) against the embedded broker.

The traced commands publish RocketMQ trace records to ``RMQ_SYS_TRACE_TOPIC`` (auto-created through
TBW102) and the consumer its rebalance records to ``RQ_SYS_REBALANCE_TOPIC``; the test reads both
back and matches them with the messages the commands reported.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from rocketq.admin import Admin
from rocketq.cli.main import main
from rocketq.client.trace import REBALANCE_TOPIC
from rocketq.protocol.trace import RMQ_SYS_TRACE_TOPIC, TraceType, decode_trace
from tests.integration.clientkit import ClusterThread
from tests.integration.clikit import parse_recv
from tests.integration.test_trace import read_topic

pytestmark = pytest.mark.integration


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    code = main(list(argv))
    out, _ = capsys.readouterr()
    return code, out.splitlines()


def test_trace_flag_publishes_pub_sub_and_rebalance_records(
    cluster: ClusterThread, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with Admin(cluster.namesrv) as admin:
        admin.create_topic("CliTraceT", queues=2)
    code, out = run(
        capsys, "produce", "CliTraceT", "--count", "12", "--body", "t", "--keys", "k1 k2", "--group",
        "cli_trace_pg", "--trace", "--namesrv", cluster.namesrv,
    )  # fmt: skip
    assert code == 0, out
    code, out = run(
        capsys, "consume", "CliTraceT", "--group", "cli_trace_cg", "--from", "first", "--count", "12",
        "--trace", "--namesrv", cluster.namesrv,
    )  # fmt: skip
    assert code == 0
    recvs = [r for r in map(parse_recv, out) if r is not None]
    msg_ids = {r.msg_id for r in recvs}
    assert len(msg_ids) == 12

    contexts = [c for m in read_topic(cluster.namesrv, RMQ_SYS_TRACE_TOPIC) for c in decode_trace(m.body)]
    pubs = [c for c in contexts if c.trace_type is TraceType.PUB]
    assert {c.beans[0].msg_id for c in pubs} == msg_ids
    assert all(c.group_name == "cli_trace_pg" and c.beans[0].keys == "k1 k2" for c in pubs)
    assert all(c.beans[0].topic == "CliTraceT" and c.success for c in pubs)
    for kind in (TraceType.SUB_BEFORE, TraceType.SUB_AFTER):
        subs = [c for c in contexts if c.trace_type is kind]
        assert sorted(c.beans[0].msg_id for c in subs) == sorted(msg_ids)
        assert all(c.group_name == "cli_trace_cg" for c in subs)
    assert all(c.success for c in contexts if c.trace_type is TraceType.SUB_AFTER)

    docs = [json.loads(m.body) for m in read_topic(cluster.namesrv, REBALANCE_TOPIC)]
    mine = sorted((d for d in docs if d["topic"] == "CliTraceT"), key=lambda d: d["seq"])
    assert mine
    assert {d["group"] for d in mine} == {"cli_trace_cg"}
    assert {d["client_id"] for d in mine} == {recvs[0].client_id}
    assert mine[0]["trigger"] == "start"
    assert mine[-1]["trigger"] == "shutdown"

    # `report` on a group the cluster does not know: one line, exit 2, before Spark starts (it used
    # to run Spark for about a minute and print zeros for the group); on a known one it goes on
    began = time.monotonic()
    code = main(
        ["report", "--group", "cli_trace_nosuch", "--out", str(tmp_path / "r"), "--namesrv", cluster.namesrv]
    )
    _, err = capsys.readouterr()
    assert code == 2
    assert err.splitlines() == [
        f"rocketq report: error: group cli_trace_nosuch has no data: no broker on {cluster.namesrv} knows "
        "it (no member ever connected: no subscription config, retry topic or online member) and "
        "RQ_SYS_REBALANCE_TOPIC holds no rebalance record of it"
    ]
    assert time.monotonic() - began < 10.0
    assert not (tmp_path / "r").exists()
    with Admin(cluster.namesrv) as admin:
        assert admin.group_exists("cli_trace_cg")
        assert not admin.group_exists("cli_trace_nosuch")
