"""The command line of transactions, SQL92 filters, message look-ups and traces, as real processes
against a real ``rocketq server`` (short transaction checks, the property filter on):

``rocketq produce --transaction ... --property ...``, ``rocketq consume --sql``, ``rocketq message
show|query|trace``, and ``--transaction unknown --check-answer unknown`` stopped by SIGINT.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from rocketq.admin import Admin
from rocketq.embedded import ServerProcess, spawn_server
from tests.integration.clikit import CliProcess, consume_args

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

TOPIC = "CliTx"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    data = tmp_path_factory.mktemp("cli-features") / "data"
    settings = (
        "--enable-property-filter",
        "--transaction-timeout",
        "1",
        "--transaction-check-interval",
        "0.5",
    )
    s = spawn_server(data, extra_args=settings)
    try:
        with Admin(s.namesrv_addr) as admin:
            admin.create_topic(TOPIC, queues=2)
        yield s
    finally:
        s.stop()


def rocketq(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rocketq", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def _tx_lines(out: str, kind: str) -> dict[str, str]:
    return {p[1]: p[2] for p in (line.split() for line in out.splitlines()) if p and p[0] == kind}


def test_transactions_filters_lookups_and_traces_from_the_shell(server: ServerProcess) -> None:
    ns = ("--namesrv", server.namesrv_addr)
    # two transactions left unknown: the command waits for the broker's checks and commits them
    unknown = rocketq(
        "produce", TOPIC, "--count", "2", "--transaction", "unknown", "--keys", "cli-k", "--property",
        "region=eu", "--property", "amount=150", "--body", "eu", "--trace", *ns,
    )  # fmt: skip
    assert unknown.returncode == 0, unknown.stderr
    txs = _tx_lines(unknown.stdout, "TX")
    assert sorted(txs.values()) == ["UNKNOW", "UNKNOW"]
    assert _tx_lines(unknown.stdout, "CHECK") == dict.fromkeys(txs, "COMMIT_MESSAGE")
    assert "in transactions (2 UNKNOW; 2 checks answered 2 COMMIT_MESSAGE)" in unknown.stdout
    assert "waiting for the broker to check 2 transactions left UNKNOW" in unknown.stderr
    # one rolled back, and plain messages that the filter below does not select
    rolled = rocketq("produce", TOPIC, "--transaction", "rollback", "--property", "region=eu",
                     "--property", "amount=500", "--body", "rolled", *ns)  # fmt: skip
    assert rolled.returncode == 0, rolled.stderr
    assert list(_tx_lines(rolled.stdout, "TX").values()) == ["ROLLBACK_MESSAGE"]
    plain = rocketq("produce", TOPIC, "--count", "3", "--property", "region=us", "--property", "amount=900",
                    "--keys", "cli-k", *ns)  # fmt: skip
    assert plain.returncode == 0, plain.stderr
    # an SQL92 consumer gets the two committed transactions only
    consumer = CliProcess(
        consume_args(
            server.namesrv_addr,
            TOPIC,
            "cli_sql_g",
            "--from",
            "first",
            "--trace",
            "--count",
            "2",
            "--sql",
            "region = 'eu' AND amount BETWEEN 100 AND 200",
        )
    )
    try:
        assert consumer.wait(60) == 0, consumer.errors
    finally:
        consumer.close()
    recvs = consumer.recvs()
    assert sorted(r.msg_id for r in recvs) == sorted(txs)
    # message query by key: the two transactions and the three plain messages
    query = rocketq("message", "query", "--topic", TOPIC, "--key", "cli-k", "--json", *ns)
    assert query.returncode == 0, query.stderr
    found = json.loads(query.stdout)
    assert len(found) == 5
    assert {m["msg_id"] for m in found} >= set(txs)
    since = rocketq(
        "message", "query", "--topic", TOPIC, "--key", "cli-k", "--begin", "1d", "--end", "now", *ns
    )
    assert since.returncode == 0
    assert "5 messages of CliTx with key cli-k" in since.stdout
    # message show: by the producer's id and by the offset id
    tx_id = sorted(txs)[0]
    shown = rocketq("message", "show", tx_id, *ns)
    assert shown.returncode == 0, shown.stderr
    assert f"Message ID:          {tx_id}" in shown.stdout
    assert "region=eu" in shown.stdout
    offset_id = next(m["offset_msg_id"] for m in found if m["msg_id"] == tx_id)
    by_offset = json.loads(rocketq("message", "show", offset_id, "--json", *ns).stdout)
    assert [m["msg_id"] for m in by_offset] == [tx_id]
    # message trace: sent (a half message), ended UNKNOW, committed answering a check, consumed
    trace = rocketq("message", "trace", tx_id, "--topic", TOPIC, "--json", *ns)
    assert trace.returncode == 0, trace.stderr
    events = json.loads(trace.stdout)["events"]
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "sent"
    assert kinds.count("transaction") == 2
    assert kinds[-1] == "consumed"
    statuses = [e["status"] for e in events]
    assert "UNKNOW" in statuses
    assert "COMMIT_MESSAGE (answering a check)" in statuses
    consumed = events[-1]
    assert (consumed["group"], consumed["client"], consumed["status"]) == (
        "cli_sql_g", recvs[0].client_id, "CONSUME_SUCCESS",
    )  # fmt: skip
    table = rocketq("message", "trace", tx_id, *ns)
    assert table.returncode == 0
    assert "COMMIT_MESSAGE (answering a check)" in table.stdout
    # nothing found: exit 1 and one line saying so
    missing = rocketq("message", "show", "0" * 32, *ns)
    assert (missing.returncode, missing.stdout) == (1, "")
    assert missing.stderr.strip() == (
        f"rocketq message show: no message with id {'0' * 32} at the broker it names nor in any topic"
    )
    untraced = rocketq(
        "message", "trace", sorted(r["msg_id"] for r in found if r["msg_id"] not in txs)[0], *ns
    )
    assert untraced.returncode == 1
    assert "no trace records" in untraced.stderr


def test_a_transaction_left_unknown_keeps_being_asked_until_ctrl_c(server: ServerProcess) -> None:
    producer = CliProcess(
        [
            "produce",
            TOPIC,
            "--transaction",
            "unknown",
            "--check-answer",
            "unknown",
            "--namesrv",
            server.namesrv_addr,
        ]
    )
    try:
        assert producer.wait_for(lambda lines: sum(line.startswith("CHECK ") for line in lines) >= 2, 30.0)
        producer.signal(signal.SIGINT)
        assert producer.wait(30) == 130
    finally:
        producer.close()
    lines = producer.snapshot()
    (tx,) = [line.split()[1] for line in lines if line.startswith("TX ")]
    assert {line for line in lines if line.startswith("CHECK ")} == {f"CHECK {tx} UNKNOW"}
    assert "1 still UNKNOW" in lines[-1]
    assert any("answering UNKNOW until Ctrl-C" in e for e in producer.errors)
