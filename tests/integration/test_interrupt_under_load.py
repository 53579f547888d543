"""Ctrl-C stops every main command within a second, whatever the load, and it says what it did.

One ``rocketq server`` is flooded by two ``rocketq produce`` processes sending as fast as they can
(its capacity, and more). Under that load ``rocketq produce --rate R``, ``rocketq consume`` (of
the flooded topic, traced), ``rocketq report`` (Spark, over that consumer's traces), ``rocketq
demo --rate R``, ``rocketq lab rebalance-cost``, ``rocketq chaos split-view``, ``rocketq
dashboard``, ``rocketq exporter``, ``rocketq namesrv``, ``rocketq broker`` (one more broker joining
the flooded cluster) and then the flooded ``rocketq server`` itself each get SIGINT once they
are at work; each must exit within 1 s of it and say what it did. ``R`` - at least ten times what
a broker on this machine takes - is drawn at random and printed.
"""

from __future__ import annotations

import random
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketq.admin import Admin
from rocketq.embedded import ServerProcess, spawn_server
from rocketq.errors import RocketQError
from tests.integration.clikit import CliProcess

pytestmark = pytest.mark.integration

TOPIC = "FloodTopic"
PROBE = "ProbeTopic"  # what the produce under test sends to: its messages there say it is at work
LIMIT = 1.0  # seconds from SIGINT to exit (issue 24)


@pytest.fixture
def flooded(tmp_path: Path) -> Iterator[ServerProcess]:
    server = spawn_server(tmp_path / "data")
    floods: list[CliProcess] = []
    try:
        for _ in range(2):
            floods.append(
                CliProcess(
                    [
                        "produce",
                        TOPIC,
                        "--count",
                        "100000000",
                        "--size",
                        "100",
                        "--namesrv",
                        server.namesrv_addr,
                    ]
                )
            )
        time.sleep(3.0)  # the floods' first sends: the topic exists, the flood is on
        assert all(f.proc.poll() is None for f in floods), [f.errors[-3:] for f in floods]
        yield server
    finally:
        for f in floods:
            f.close()
        server.stop()


def _wait_for_messages(namesrv: str, topic: str, p: CliProcess, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    with Admin(namesrv) as admin:
        while time.monotonic() < deadline:
            assert p.proc.poll() is None, p.errors[-5:]
            try:
                if admin.topic_stats(topic).total_messages > 0:
                    return
            except RocketQError:
                pass  # no route yet
            time.sleep(0.2)
    raise AssertionError(f"nothing reached {topic}: {p.errors[-5:]}")


def _wait_for_stderr(p: CliProcess, text: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not any(text in line for line in p.errors):
        assert p.proc.poll() is None, p.errors[-5:]
        assert time.monotonic() < deadline, f"no {text!r} within {timeout} s: {p.errors[-5:]}"
        time.sleep(0.1)


def _stop_time(p: CliProcess) -> float:
    t0 = time.monotonic()
    p.signal(signal.SIGINT)
    try:
        p.wait(30.0)
    finally:
        took = time.monotonic() - t0
    return took


def test_ctrl_c_stops_each_command_within_a_second_under_overload(
    flooded: ServerProcess, tmp_path: Path
) -> None:
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    rate = rng.randint(60_000, 600_000)
    print(f"seed {seed}: offered rate {rate:,} msg/s (the broker takes a few thousand)")
    namesrv = flooded.namesrv_addr
    ns = ["--namesrv", namesrv]
    broker_dir = ["--data-dir", str(tmp_path / "broker")]
    took: dict[str, float] = {}
    commands = {
        "produce": ["produce", PROBE, "--count", "100000000", "--rate", str(rate), "--namesrv", namesrv],
        "consume": ["consume", TOPIC, "--group", f"g{seed}", "--from", "first", "--trace", *ns],
        "report": ["report", "--group", f"g{seed}", "--out", str(tmp_path / "report"), "--namesrv", namesrv],
        "demo": ["demo", "--rate", str(rate), "--no-spark", "--plain", "--seconds", "60"],
        "lab": ["lab", "rebalance-cost", "--rate", str(min(rate, 20_000)), "--phase-seconds", "30"],
        "chaos": ["chaos", "split-view", "--seed", str(seed)],
        "dashboard": ["dashboard", "--namesrv", namesrv, "--port", "0"],
        "exporter": ["exporter", "--namesrv", namesrv, "--port", "0"],
        "namesrv": ["namesrv", "--port", "0"],
        "broker": ["broker", "--broker-port", "0", "--broker-name", f"b{seed}", *broker_dir, *ns],
    }
    ready = {  # at work: sending, receiving, its producer sending
        "produce": lambda lines: False,
        "consume": lambda lines: any(line.startswith("RECV ") for line in lines),
        "demo": lambda lines: any(line.startswith("t=") and "sent 0," not in line for line in lines),
        "lab": lambda lines: any("rocketq server (pid" in line for line in lines),
        "chaos": lambda lines: any(line.startswith("consumers up:") for line in lines),
        "dashboard": lambda lines: any("dashboard ready:" in line for line in lines),
        "exporter": lambda lines: any("exporter ready:" in line for line in lines),
        "namesrv": lambda lines: any("name server listening on" in line for line in lines),
        "broker": lambda lines: any(" listening on " in line for line in lines),
    }
    said = {  # what each says when stopped (stdout or stderr)
        "produce": "Ctrl-C",
        "report": "the tables under",
        "demo": "interrupted",
        "lab": "interrupted after",
        "chaos": "interrupted after",
        "dashboard": "dashboard stopped",
        "exporter": "exporter stopped",
        "namesrv": "name server stopped",
        "broker": "stopped",
    }
    said_too = {  # a SIGINT before the command put its handlers in place: main's one line
        "demo": "demo finished",
        "dashboard": "dashboard: interrupted after",
        "exporter": "exporter: interrupted after",
    }
    for name, args in commands.items():
        p = CliProcess(args)
        try:
            if name == "produce":
                _wait_for_messages(namesrv, PROBE, p)
            elif name == "report":  # its steps go to stderr; Spark's start takes a while
                _wait_for_stderr(p, "reading the trace", 180.0)
            else:
                assert p.wait_for(ready[name], 60.0), (name, p.snapshot()[-5:], p.errors[-5:])
            took[name] = _stop_time(p)
            out = "\n".join(p.snapshot() + p.errors)
            print(f"{name}: stopped {took[name]:.2f} s after SIGINT, exit {p.proc.returncode}")
            if name in said:
                assert said[name] in out or said_too.get(name, said[name]) in out, out[-500:]
        finally:
            p.close()
    t0 = time.monotonic()  # the flooded server itself
    flooded.proc.send_signal(signal.SIGINT)
    flooded.proc.wait(30.0)
    took["server"] = time.monotonic() - t0
    print(f"server: stopped {took['server']:.2f} s after SIGINT")
    slow = {k: round(v, 2) for k, v in took.items() if v > LIMIT}
    assert not slow, f"over {LIMIT} s after SIGINT: {slow} (seed {seed}, rate {rate})"


def _second_stop(proc: subprocess.Popen[str], gap: float) -> tuple[bool, float]:
    """SIGINT, then after ``gap`` s a second SIGINT if it still runs: (whether the second was sent,
    seconds from the last SIGINT to the process's end)."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(gap)
        return False, 0.0
    except subprocess.TimeoutExpired:
        pass
    proc.send_signal(signal.SIGINT)
    t0 = time.monotonic()
    proc.wait(30.0)
    return True, time.monotonic() - t0


def test_a_second_ctrl_c_stops_at_once(flooded: ServerProcess) -> None:
    """A second Ctrl-C (at least 0.2 s after the first: one key press can deliver two) ends the
    consumer and the flooded server at once, whatever the first was still doing. The gap between
    the two is drawn at random and printed."""
    seed = random.randrange(2**32)
    gap = random.Random(seed).uniform(0.2, 0.6)
    print(f"seed {seed}: second SIGINT {gap:.2f} s after the first")
    namesrv = flooded.namesrv_addr
    p = CliProcess(["consume", TOPIC, "--group", f"g2{seed}", "--from", "first", "--namesrv", namesrv])
    try:
        assert p.wait_for(lambda lines: any(line.startswith("RECV ") for line in lines), 60.0), p.errors[-5:]
        second, took = _second_stop(p.proc, gap)
        print(f"consume: second SIGINT sent {second}, ended {took:.2f} s after it, exit {p.proc.returncode}")
        assert took <= 0.5, (took, p.errors[-5:])
    finally:
        p.close()
    second, took = _second_stop(flooded.proc, gap)
    print(f"server: second SIGINT sent {second}, ended {took:.2f} s after it")
    assert took <= 0.5, took
