"""Whatever a newcomer types, ``rocketq`` answers with one clear line - never a traceback - and
changes nothing: a table of bad inputs per command, each run as a real ``rocketq`` process
against a live ``rocketq server`` (its own process) where a server is needed.

Every case must exit with code 2 within its timeout, print nothing on stdout and exactly one
line on stderr that names the problem. Afterwards the server's state is what it was: the topics,
the test topic's route and the test group's committed offsets (refused ``group reset``\\ s and
``topic create``\\ s must not have touched them).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from rocketq.admin import Admin
from rocketq.embedded import ServerProcess, spawn_server

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

TOPIC = "BadInT"
GROUP = "bad_in_g"
SQL_GROUP = "bad_in_sql_g"  # refused before it was seeded: it must have no offsets afterwards


@dataclass
class Live:
    server: ServerProcess
    silent: str  # a port that accepts connections and never answers
    tmp: Path

    @property
    def ns(self) -> str:
        return self.server.namesrv_addr

    @property
    def broker(self) -> str:
        return self.server.broker_addr


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    tmp = tmp_path_factory.mktemp("bad-input")
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # connections queue up; nothing ever reads or answers them
    server = spawn_server(tmp / "data")
    try:
        with Admin(server.namesrv_addr) as admin:
            admin.create_topic(TOPIC, queues=8)
        assert _rocketq("produce", TOPIC, "--count", "20", "--namesrv", server.namesrv_addr).returncode == 0
        with Admin(server.namesrv_addr) as admin:
            admin.seed_new_group(GROUP, TOPIC, "first")  # the group's committed offsets: 0 on each queue
        (tmp / "commitlog-file").mkdir()
        (tmp / "commitlog-file" / "commitlog").write_text("not a directory")
        (tmp / "a-file").write_text("not a directory")
        yield Live(server, f"127.0.0.1:{silent.getsockname()[1]}", tmp)
    finally:
        server.stop()
        silent.close()


def _rocketq(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("rocketq")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "rocketq"]
    env = {k: v for k, v in os.environ.items() if k != "NAMESRV_ADDR"}
    return subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
        env=env,
    )


def _cases(live: Live) -> list[tuple[str, list[str], str]]:
    """(name, arguments, what the one error line must say)."""
    ns, broker, silent, tmp = live.ns, live.broker, live.silent, live.tmp
    at = ["--namesrv", ns]
    cases = [
        # the command line itself
        ("unknown command", ["frobnicate"], "invalid choice: 'frobnicate'"),
        ("unknown option", ["topic", "list", "--bogus", *at], "unrecognized arguments: --bogus"),
        ("unknown subcommand", ["topic", "frobnicate"], "invalid choice"),
        # allocate
        (
            "allocate: no queues",
            ["allocate", "--queues", "0", "--consumers", "2"],
            "--queues must be between 1",
        ),
        (
            "allocate: not a number",
            ["allocate", "--queues", "x", "--consumers", "2"],
            "invalid int value: 'x'",
        ),
        (
            "allocate: negative",
            ["allocate", "--queues", "4", "--consumers", "-2"],
            "--consumers must be between",
        ),
        (
            "allocate: huge",
            ["allocate", "--queues", "9" * 20, "--consumers", "2"],
            "--queues must be between",
        ),
        ("allocate: no rooms", ["allocate", "--queues", "4", "--consumers", "2", "--rooms", "0"], "--rooms"),
        (
            "allocate: strategy",
            ["allocate", "--queues", "4", "--consumers", "2", "--strategy", "BOGUS"],
            "BOGUS",
        ),
        (
            "allocate: bad group",
            ["allocate", "--queues", "4", "--consumers", "2", "--group", "a b"],
            "characters",
        ),
        # servers: ports and data dirs
        (
            "server: /proc",
            ["server", "--data-dir", "/proc/nonexistent/x"],
            "/proc does not take new directories",
        ),
        ("server: /sys", ["server", "--data-dir", "/sys/rocketq-test"], "/sys does not take new directories"),
        (
            "server: commitlog is a file",
            ["server", "--data-dir", str(tmp / "commitlog-file")],
            "commitlog is a file",
        ),
        ("server: data dir is a file", ["server", "--data-dir", str(tmp / "a-file")], "is not a directory"),
        ("server: port range", ["server", "--broker-port", "70000"], "port must be 0..65535, got 70000"),
        ("server: port text", ["server", "--namesrv-port", "http"], "not a port number: 'http'"),
        ("chaos: unknown scenario", ["chaos", "nosuch"], "unknown scenario 'nosuch'"),
        ("chaos: no runs", ["chaos", "kill", "--runs", "0"], "argument --runs: must be positive, got 0"),
        ("chaos: negative seed", ["chaos", "kill", "--seed", "-1"], "must not be negative, got -1"),
        (
            "chaos: consumer command",
            ["chaos", "kill", "--consumer-cmd", "python 'unclosed"],
            "--consumer-cmd does not split like a shell line",
        ),
        (
            "chaos: negative window",
            ["chaos", "kill", "--notify-coalesce-window", "-1"],
            "argument --notify-coalesce-window: must be 0 or more, got -1",
        ),
        (
            "chaos: views fallback",
            ["chaos", "kill", "--consistent-views", "maybe"],
            "invalid choice: 'maybe'",
        ),
        (
            "server: window text",
            ["server", "--notify-coalesce-window", "soon"],
            "argument --notify-coalesce-window: not a number: 'soon'",
        ),
        (
            "consume: negative min interval",
            ["consume", "T", "--group", "g", "--rebalance-min-interval", "-0.5"],
            "argument --rebalance-min-interval: must be 0 or more, got -0.5",
        ),
        (
            "server: expiry zero",
            ["server", "--channel-expired-timeout", "0"],
            "argument --channel-expired-timeout: must be positive, got 0",
        ),
        ("server: slave role", ["server", "--role", "slave"], "rocketq server runs a master"),
        (
            "broker: slave with id 0",
            ["broker", "--namesrv", ns, "--role", "slave", "--broker-id", "0", "--data-dir", str(tmp / "ha")],
            "a slave's broker_id must be 1 or more, got 0",
        ),
        (
            "broker: master with id 1",
            ["broker", "--namesrv", ns, "--broker-id", "1", "--data-dir", str(tmp / "ha")],
            "a master's broker_id must be 0, got 1",
        ),
        (
            "broker: scan text",
            ["broker", "--namesrv", ns, "--client-scan-interval", "soon"],
            "not a number: 'soon'",
        ),
        (
            "server: broker port in use",
            [
                "server",
                "--data-dir",
                str(tmp / "d1"),
                "--namesrv-port",
                "0",
                "--broker-port",
                broker.split(":")[1],
            ],
            "(broker port): Address already in use",
        ),
        (
            "server: name server port in use",
            [
                "server",
                "--data-dir",
                str(tmp / "d2"),
                "--broker-port",
                "0",
                "--namesrv-port",
                ns.split(":")[1],
            ],
            "(name server port): Address already in use",
        ),
        ("namesrv: port in use", ["namesrv", "--port", ns.split(":")[1]], "address already in use"),
        ("namesrv: negative port", ["namesrv", "--port", "-1"], "port must be 0..65535, got -1"),
        (
            "broker: bad name server",
            ["broker", "--namesrv", "nowhere", "--data-dir", str(tmp / "d3")],
            "nowhere",
        ),
        ("broker: /proc", ["broker", *at, "--data-dir", "/proc/nonexistent/x"], "/proc does not take"),
        # topic
        (
            "topic create on an existing topic",
            ["topic", "create", TOPIC, "--queues", "2", *at],
            "read queues 8 -> 2, messages in queues [2..7] stop being read",
        ),
        ("topic: blank name", ["topic", "create", "", "--queues", "2", *at], "the topic is blank"),
        (
            "topic: illegal characters",
            ["topic", "create", "bad topic!", "--queues", "2", *at],
            "characters other",
        ),
        ("topic: too long", ["topic", "create", "T" * 200, "--queues", "2", *at], "longer than 127"),
        (
            "topic: no queues",
            ["topic", "create", "NewT", "--queues", "0", *at],
            "queue count must be 1..1024",
        ),
        (
            "topic: negative queues",
            ["topic", "create", "NewT", "--queues", "-3", *at],
            "must be 1..1024, got -3",
        ),
        ("topic: huge queues", ["topic", "create", "NewT", "--queues", "9" * 15, *at], "must be 1..1024"),
        (
            "topic: queues text",
            ["topic", "create", "NewT", "--queues", "two", *at],
            "not a queue count: 'two'",
        ),
        ("topic: perm", ["topic", "create", "NewT", "--queues", "2", "--perm", "7", *at], "perm must be 2"),
        (
            "topic: name server is a broker",
            ["topic", "create", "NewT", "--queues", "2", "--namesrv", broker],
            f"{broker} is a broker, not a name server",
        ),
        (
            "topic: unreachable",
            ["topic", "list", "--namesrv", "127.0.0.1:1"],
            "cannot reach name server 127.0.0.1:1",
        ),
        (
            "topic: silent name server",
            ["topic", "list", "--namesrv", silent],
            f"name server {silent} did not answer",
        ),
        ("topic: bad address", ["topic", "list", "--namesrv", "localhost"], "must look like host:port"),
        ("topic: unknown", ["topic", "stats", "NoSuchT", *at], "topic NoSuchT does not exist"),
        ("topic update: unknown", ["topic", "update", "NoSuchT", "--queues", "2", *at], "does not exist"),
        # produce
        ("produce: zero", ["produce", TOPIC, "--count", "0", *at], "must be positive, got 0"),
        ("produce: negative", ["produce", TOPIC, "--count", "-5", *at], "must be positive, got -5"),
        ("produce: text", ["produce", TOPIC, "--count", "ten", *at], "not an integer: 'ten'"),
        ("produce: NaN rate", ["produce", TOPIC, "--rate", "nan", *at], "must be positive, got nan"),
        ("produce: small size", ["produce", TOPIC, "--size", "3", *at], "--size must be at least"),
        ("produce: illegal topic", ["produce", "a/b", *at], "characters other"),
        (
            "produce: name server is a broker",
            ["produce", TOPIC, "--namesrv", broker],
            "is a broker, not a name server",
        ),
        (
            "produce: unreachable",
            ["produce", TOPIC, "--namesrv", "127.0.0.1:1"],
            "is `rocketq server` running?",
        ),
        ("produce: property without =", ["produce", TOPIC, "--property", "region", *at], "is NAME=VALUE"),
        ("produce: property no value", ["produce", TOPIC, "--property", "region=", *at], "has no value"),
        ("produce: property blank name", ["produce", TOPIC, "--property", "=eu", *at], "is NAME=VALUE"),
        ("produce: reserved property", ["produce", TOPIC, "--property", "TAGS=x", *at], "RocketMQ's own"),
        (
            "produce: control character in a property",
            ["produce", TOPIC, "--property", "a=x\x01y", *at],
            "control character",
        ),
        (
            "produce: transaction state",
            ["produce", TOPIC, "--transaction", "maybe", *at],
            "invalid choice: 'maybe'",
        ),
        (
            "produce: check answer alone",
            ["produce", TOPIC, "--check-answer", "commit", *at],
            "add --transaction",
        ),
        (
            "produce: transactions in batches",
            ["produce", TOPIC, "--transaction", "commit", "--batch", "4", *at],
            "--batch does not apply",
        ),
        (
            "produce: transaction, name server is a broker",
            ["produce", TOPIC, "--transaction", "commit", "--namesrv", broker],
            "is a broker, not a name server",
        ),
        # consume
        ("consume: blank group", ["consume", TOPIC, "--group", "", *at], "the group name is blank"),
        (
            "consume: SQL92 on a broker without the property filter",
            ["consume", TOPIC, "--group", SQL_GROUP, "--sql", "a > 5", *at],
            "--enable-property-filter",
        ),
        ("consume: blank SQL92", ["consume", TOPIC, "--group", SQL_GROUP, "--sql", " ", *at], "is blank"),
        (
            "consume: SQL92 and a tag",
            ["consume", TOPIC, "--group", SQL_GROUP, "--sql", "a > 5", "--tag", "TagA", *at],
            "not allowed with argument",
        ),
        ("consume: illegal group", ["consume", TOPIC, "--group", "a b", *at], "characters other"),
        ("consume: no group", ["consume", TOPIC, *at], "the following arguments are required: --group"),
        (
            "consume: far future",
            ["consume", TOPIC, "--group", "g1", "--from", "9" * 17, *at],
            "in the future",
        ),
        (
            "consume: future date",
            ["consume", TOPIC, "--group", "g1", "--from", "2999-01-01T00:00", *at],
            "future",
        ),
        ("consume: bad time", ["consume", TOPIC, "--group", "g1", "--from", "yesterday", *at], "'yesterday'"),
        ("consume: strategy", ["consume", TOPIC, "--group", "g1", "--strategy", "BOGUS", *at], "BOGUS"),
        ("consume: seconds", ["consume", TOPIC, "--group", "g1", "--seconds", "-1", *at], "must be positive"),
        (
            "consume: broker as name server",
            ["consume", TOPIC, "--group", "g1", "--namesrv", broker],
            "is a broker",
        ),
        # message
        ("message show: not an id", ["message", "show", "xyz", *at], "'xyz' is not a message id"),
        ("message show: too short", ["message", "show", "ABCD" * 7, *at], "is not a message id"),
        ("message show: bad topic", ["message", "show", "0" * 32, "--topic", "a b", *at], "characters other"),
        (
            "message show: unknown topic",
            ["message", "show", "0" * 32, "--topic", "NoSuchT", *at],
            "topic NoSuchT does not exist",
        ),
        (
            "message show: unreachable",
            ["message", "show", "0" * 32, "--namesrv", "127.0.0.1:1"],
            "cannot reach name server 127.0.0.1:1",
        ),
        ("message query: no key", ["message", "query", "--topic", TOPIC, *at], "required: --key"),
        ("message query: blank key", ["message", "query", "--topic", TOPIC, "--key", " ", *at], "blank"),
        (
            "message query: bad time",
            ["message", "query", "--topic", TOPIC, "--key", "k", "--begin", "yesterday", *at],
            "a time must be epoch ms",
        ),
        (
            "message query: empty range",
            ["message", "query", "--topic", TOPIC, "--key", "k", "--begin", "now", "--end", "1h", *at],
            "the time range is empty",
        ),
        (
            "message query: max",
            ["message", "query", "--topic", TOPIC, "--key", "k", "--max", "0", *at],
            "must be positive, got 0",
        ),
        (
            "message query: unknown topic",
            ["message", "query", "--topic", "NoSuchT", "--key", "k", *at],
            "topic NoSuchT does not exist",
        ),
        ("message trace: not an id", ["message", "trace", "G" * 32, *at], "is not a message id"),
        # group
        (
            "group reset: far future",
            ["group", "reset", GROUP, "--topic", TOPIC, "--to", "9" * 17, *at],
            "is in the future",
        ),
        (
            "group reset: future date",
            ["group", "reset", GROUP, "--topic", TOPIC, "--to", "2999-12-31T00:00:00", *at],
            "is in the future",
        ),
        ("group reset: bad time", ["group", "reset", GROUP, "--topic", TOPIC, "--to", "soon", *at], "'soon'"),
        (
            "group reset: unknown topic",
            ["group", "reset", GROUP, "--topic", "NoSuchT", "--to", "first", *at],
            "NoSuchT",
        ),
        (
            "group reset: blank group",
            ["group", "reset", " ", "--topic", TOPIC, "--to", "first", *at],
            "blank",
        ),
        ("group members: strategy", ["group", "members", GROUP, "--strategy", "BOGUS", *at], "BOGUS"),
        ("group members: unknown", ["group", "members", "nobody_here", *at], "unknown to every broker"),
        (
            "group progress: unreachable",
            ["group", "progress", GROUP, "--namesrv", "127.0.0.1:1"],
            "cannot reach",
        ),
        # report (before Spark starts)
        (
            "report: unreachable",
            ["report", "--group", GROUP, "--namesrv", "127.0.0.1:1"],
            "cannot reach name server",
        ),
        (
            "report: nothing traced",
            ["report", "--group", GROUP, "--out", str(tmp / "r"), *at],
            "no trace records",
        ),
        ("report: since", ["report", "--group", GROUP, "--since", "whenever", *at], "--since must be"),
        (
            "report: bucket",
            ["report", "--group", GROUP, "--bucket", "0", *at],
            "--bucket must be a positive number",
        ),
        # demo and lab
        ("demo: seconds", ["demo", "--seconds", "0"], "must be positive, got 0"),
        ("demo: rate", ["demo", "--rate", "-1"], "must be positive, got -1"),
        ("lab: unknown scenario", ["lab", "no-such-scenario"], "no-such-scenario"),
    ]
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        cases = [c for c in cases if not c[0].startswith("report")]
    return cases


def _state(live: Live) -> tuple[object, ...]:
    with Admin(live.ns) as admin:
        route = admin.topic_route(TOPIC)
        return (
            sorted(admin.topic_list()),
            sorted(
                (qd.broker_name, qd.read_queue_nums, qd.write_queue_nums, qd.perm) for qd in route.queue_datas
            ),
            admin.committed_offsets(GROUP, TOPIC),
            admin.committed_offsets(SQL_GROUP, TOPIC),
        )


def test_bad_inputs_get_one_line_exit_2_and_change_nothing(live: Live) -> None:
    before = _state(live)
    assert before[-1] == {}  # the SQL92 consumer's group has no offsets, and must not get any
    cases = _cases(live)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda c: (c, _rocketq(*c[1])), cases))
    problems = []
    for (name, args, expected), proc in results:
        lines = proc.stderr.splitlines()
        if (
            proc.returncode != 2
            or len(lines) != 1
            or expected not in lines[0]
            or "Traceback" in proc.stderr
            or proc.stdout
        ):
            problems.append(
                f"{name}: rocketq {' '.join(args)!r} -> exit {proc.returncode}, "
                f"stdout {proc.stdout[-300:]!r}, stderr {proc.stderr[-600:]!r} (wanted {expected!r})"
            )
    assert not problems, "\n".join(problems)
    assert _state(live) == before
    for leftover in ("d1", "d2", "d3", "r", "ha"):  # refused before anything was created
        assert not (live.tmp / leftover / "commitlog").exists(), leftover
