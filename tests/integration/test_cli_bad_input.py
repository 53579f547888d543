"""Whatever a newcomer types, ``rocketq`` answers with one clear line - never a traceback - and
changes nothing: a table of bad inputs per command, each run as a real ``rocketq`` process
against a live ``rocketq server`` (its own process) where a server is needed.

Every case must exit with code 2 within its timeout, print nothing on stdout and exactly one
line on stderr that names the problem. Afterwards the server's state is what it was: the topics,
the test topic's route and the test group's committed offsets (refused ``group reset``\\ s and
``topic create``\\ s must not have touched them).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import os
import random
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.admin import Admin
from rocketq.cli.main import build_parser, main
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
        (
            "topic delete of the auto-creation template",
            ["topic", "delete", "TBW102", *at],
            "TBW102 is a system topic (the template every auto-created topic is made from",
        ),
        (
            "topic delete of TBW102, the override naming another topic",
            ["topic", "delete", "TBW102", "--force-system-topic", "TBW10", *at],
            "not deleted (the override given names 'TBW10')",
        ),
        (
            "topic update shrinking the delay topic",
            ["topic", "update", "SCHEDULE_TOPIC_XXXX", "--queues", "1", *at],
            "add --force-system-topic SCHEDULE_TOPIC_XXXX",
        ),
        (
            "topic delete of the cluster's topic",
            ["topic", "delete", "DefaultCluster", *at],
            "the topic of cluster DefaultCluster",
        ),
        (
            "topic create over the broker's topic",
            ["topic", "create", "broker-a", "--queues", "4", *at],
            "broker-a",
        ),
        ("topic delete of a retry topic", ["topic", "delete", f"%RETRY%{GROUP}", *at], "retry topic"),
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
        (
            "produce: huge size (was a MemoryError)",
            ["produce", TOPIC, "--size", "99999999999", *at],
            "--size: must be at most 4194304 bytes",
        ),
        (
            "produce: batches over maxMessageSize",
            ["produce", TOPIC, "--count", "99999999999", "--batch", "99999999", *at],
            "over RocketMQ's maxMessageSize",
        ),
        ("produce: count=--", ["produce", TOPIC, "--count=--", *at], "expected one argument"),
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
        system = [
            admin.topic_route(t).queue_datas for t in ("TBW102", "SCHEDULE_TOPIC_XXXX", "DefaultCluster")
        ]
        return (
            system,
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


# ------------------------------------------------------------------------- every numeric option
# Each numeric option of every command with the values it accepts; the tests below draw values
# outside them (negative, zero where meaningless, huge, not finite, not numbers at all) and run
# the command in this process (``rocketq.cli.main.main``, what the ``rocketq`` script runs), so
# hundreds of draws take seconds: each must be one line on stderr, exit 2, nothing else.

_MAX_BODY = 4 * 1024 * 1024
_LONG = (1 << 63) - 1
_YEAR = 365 * 24 * 3600.0


@dataclass(frozen=True)
class Numeric:
    argv: tuple[str, ...]  # the command up to the option (a valid command otherwise)
    option: str
    kind: type  # int or float
    low: float  # the smallest value accepted (floats: see low_open)
    high: float  # the largest
    low_open: bool = False  # floats: low itself refused (positive numbers)

    def refused(self, value: float) -> bool:
        if self.kind is float and not math.isfinite(value):
            return True
        below = value <= self.low if self.low_open else value < self.low
        return below or value > self.high


def _numeric_options(ns: str, data: Path) -> list[Numeric]:
    at = ("--namesrv", ns)
    alloc = ("allocate", "--queues", "4", "--consumers", "2")
    server = ("server", "--data-dir", str(data / "s"), "--namesrv-port", "0", "--broker-port", "0")
    broker = ("broker", *at, "--data-dir", str(data / "b"), "--broker-port", "0")
    consume = ("consume", TOPIC, "--group", "num_g", *at)
    seconds = {"kind": float, "low": 0.0, "high": _YEAR, "low_open": True}
    window = {"kind": float, "low": 0.0, "high": _YEAR}
    rate = {"kind": float, "low": 0.0, "high": sys.float_info.max, "low_open": True}
    count = {"kind": int, "low": 1, "high": _LONG}
    port = {"kind": int, "low": 0, "high": 65535}
    queues = {"kind": int, "low": 1, "high": 1024}
    options = [
        Numeric(alloc, "--queues", int, 1, 1_000_000),
        Numeric(alloc, "--consumers", int, 1, 100_000),
        Numeric(alloc, "--brokers", int, 1, 26 * 27),
        Numeric(alloc, "--from-consumers", int, 1, 100_000),
        Numeric(alloc, "--duplicate-ids", int, 0, 1),
        Numeric(alloc, "--virtual-nodes", int, 1, 10_000),
        Numeric(alloc, "--rooms", int, 1, 1_000),
        Numeric(("namesrv",), "--port", **port),
        Numeric(("dashboard", *at), "--port", **port),
        Numeric(("dashboard", *at), "--metrics-interval", **seconds),
        Numeric(("dashboard", *at), "--poll", **seconds),
        Numeric(("dashboard", *at), "--session-idle", **seconds),
        Numeric(("exporter", *at), "--port", **port),
        Numeric(("exporter", *at), "--metrics-interval", **seconds),
        Numeric(("topic", "create", "NumT", *at), "--queues", **queues),
        Numeric(("topic", "create", "NumT", "--queues", "2", *at), "--read-queues", **queues),
        Numeric(("topic", "create", "NumT", "--queues", "2", *at), "--write-queues", **queues),
        Numeric(("topic", "update", TOPIC, *at), "--queues", **queues),
        Numeric(("topic", "update", TOPIC, *at), "--read-queues", **queues),
        Numeric(("topic", "update", TOPIC, *at), "--write-queues", **queues),
        Numeric(("produce", TOPIC, *at), "--count", **count),
        Numeric(("produce", TOPIC, *at), "--size", int, 1, _MAX_BODY),
        Numeric(
            ("produce", TOPIC, "--count", "1000000", "--size", "4096", *at),
            "--batch",
            int,
            1,
            _MAX_BODY // (4096 + 20),
        ),
        Numeric(("produce", TOPIC, *at), "--rate", **rate),
        Numeric(consume, "--count", **count),
        *(
            Numeric(consume, o, **seconds)
            for o in (
                "--seconds",
                "--heartbeat-interval",
                "--poll-name-server-interval",
                "--rebalance-interval",
            )
        ),
        Numeric(consume, "--rebalance-min-interval", **window),
        Numeric(("message", "query", "--topic", TOPIC, "--key", "k", *at), "--max", int, 1, 64),
        Numeric(("report", "--group", GROUP, *at), "--bucket", int, 1, 31_536_000_000),
        Numeric(("lab", "rebalance-cost"), "--rate", **rate),
        Numeric(("lab", "rebalance-cost"), "--phase-seconds", **seconds),
        Numeric(("demo",), "--seconds", **seconds),
        Numeric(("demo",), "--rate", **rate),
        Numeric(("chaos", "kill"), "--runs", **count),
        Numeric(("chaos", "kill"), "--seed", int, 0, math.inf),  # any seed of 0 or more is a schedule
        Numeric(("chaos", "kill"), "--notify-coalesce-window", **window),
        Numeric(("chaos", "kill"), "--rebalance-min-interval", **window),
    ]
    for base in (server, broker):
        options += [
            Numeric(base, "--broker-port", **port),
            Numeric(base, "--transaction-timeout", **seconds),
            Numeric(base, "--transaction-check-interval", **seconds),
            Numeric(base, "--transaction-check-max", int, 1, (1 << 31) - 1),
            Numeric(base, "--channel-expired-timeout", **seconds),
            Numeric(base, "--client-scan-interval", **seconds),
            Numeric(base, "--rebalance-lock-max-live-time", **seconds),
            Numeric(base, "--notify-coalesce-window", **window),
            Numeric(base, "--access-message-in-memory-max-ratio", int, 0, 100),
        ]
    options.append(Numeric(server, "--namesrv-port", **port))
    return options


_NOT_NUMBERS = ("", " ", "x", "ten", "0x10", "5 apples", "1,5", "--", "one.5", "٣.x", "-", "1e", "+-1")


def _bad_value(o: Numeric, rng: random.Random) -> str:
    """A value ``o`` must refuse, drawn from every way of being wrong."""
    way = rng.randrange(5)
    if way == 0:
        return rng.choice(_NOT_NUMBERS + (("1.5", "1e3", "nan", "inf") if o.kind is int else ()))
    if o.kind is float and way == 1:
        return rng.choice(["nan", "-nan", "inf", "-inf", "1e999", "-1e999", "NaN", "Infinity"])
    if way <= 2 and (o.low > 0 or o.low_open):  # zero or just below the least accepted
        value = o.low - (rng.random() if o.kind is float else 1) if rng.random() < 0.5 else 0
        return repr(float(value)) if o.kind is float else str(int(value))
    if way == 3 or not math.isfinite(o.high):  # negative
        value = -rng.choice([1, rng.randint(1, 1000), rng.randint(1, 1 << 70)])
        return repr(value * rng.random()) if o.kind is float and rng.random() < 0.5 else str(value)
    # huge: just above the most accepted, or far above
    if o.kind is int:
        return str(int(o.high) + rng.choice([1, rng.randint(1, 1000), rng.randint(1, 1 << 80)]))
    return repr(o.high * rng.choice([1.0 + 1e-9, 2.0, 1e10])) if o.high < 1e300 else "1e999"


_PARSER: list[argparse.ArgumentParser] = []  # built once: building it again for each draw costs 20 ms


def _run_in_process(argv: list[str]) -> tuple[int, str, str]:
    """``rocketq ARGV`` in this process: exit code, stdout, stderr. A command the parser accepts
    runs (``main``) only if it is one that refuses in its handler (allocate, produce, report); any
    other accepted here would start a server or a client, and is reported as accepted instead."""
    if not _PARSER:
        _PARSER.append(build_parser())
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            args = _PARSER[0].parse_args(argv)
        except SystemExit as stop:
            return int(stop.code or 0), out.getvalue(), err.getvalue()
        if args.command not in ("allocate", "produce", "report"):
            return -1, out.getvalue(), "accepted by the parser"
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _judge(o: Numeric, value: str) -> str | None:
    """Why ``rocketq ... OPTION=VALUE`` misbehaved, or None when it answered one line, exit 2."""
    argv = [*o.argv, f"{o.option}={value}"]
    try:
        code, out, err = _run_in_process(argv)
    except BaseException as exc:  # what would have been a traceback
        return f"rocketq {' '.join(argv)!r} raised {type(exc).__name__}: {exc}"
    lines = err.splitlines()
    if code != 2 or out or len(lines) != 1 or o.option not in lines[0]:
        return f"rocketq {' '.join(argv)!r} -> exit {code}, stdout {out[-200:]!r}, stderr {err[-300:]!r}"
    return None


def test_every_numeric_option_refuses_every_kind_of_bad_value(live: Live) -> None:
    """Each numeric option of each command, three values drawn at random from each way of being
    wrong (the seed is printed; ROCKETQ_TEST_SEED replays it)."""
    seed = int(os.environ.get("ROCKETQ_TEST_SEED") or random.randrange(1 << 32))
    print(f"\nnumeric options: seed {seed} (ROCKETQ_TEST_SEED={seed} replays it)")
    rng = random.Random(seed)
    before = _state(live)
    options = _numeric_options(live.ns, live.tmp / "numeric")
    problems = []
    for o in options:
        for _ in range(3):
            value = _bad_value(o, rng)
            assert not _is_number(value, o), (o, value)
            why = _judge(o, value)
            if why is not None:
                problems.append(why)
    assert not problems, f"seed {seed}:\n" + "\n".join(problems)
    assert _state(live) == before
    assert not (live.tmp / "numeric").exists()  # no server made its data dir


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_numeric_options_under_hypothesis(live: Live, data: st.DataObject) -> None:
    """The same property with Hypothesis choosing the option and the bad value (it shrinks a
    failure to the simplest value that shows it)."""
    options = _numeric_options(live.ns, live.tmp / "numeric")
    o = data.draw(st.sampled_from(options), label="option")
    number = st.integers() if o.kind is int else st.floats(allow_nan=True, allow_infinity=True)
    value = data.draw(
        st.one_of(
            number.filter(lambda v: o.refused(float(v))).map(str),
            st.sampled_from(_NOT_NUMBERS),
            st.text(alphabet="0123456789.-+eExna ", max_size=8).filter(lambda t: not _is_number(t, o)),
        ),
        label="value",
    )
    assert _judge(o, value) is None


def _is_number(text: str, o: Numeric) -> bool:
    """Whether ``text`` is a value ``o`` accepts."""
    try:
        value = o.kind(text)
    except (ValueError, OverflowError):
        return False
    return not o.refused(float(value))
