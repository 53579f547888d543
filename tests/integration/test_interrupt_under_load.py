"""Ctrl-C stops every main command within a second, whatever the load, and it says what it did.

One ``rocketq server`` is flooded by two ``rocketq produce`` processes sending as fast as they can
(its capacity, and more). Under that load ``rocketq produce --rate R``, ``rocketq consume`` (of
the flooded topic), ``rocketq demo --rate R`` and then the flooded ``rocketq server`` itself each
get SIGINT once they are at work; each must exit within 1 s of it and print its summary. ``R`` -
at least ten times what a broker on this machine takes - is drawn at random and printed.
"""

from __future__ import annotations

import random
import signal
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


def _stop_time(p: CliProcess) -> float:
    t0 = time.monotonic()
    p.signal(signal.SIGINT)
    try:
        p.wait(30.0)
    finally:
        took = time.monotonic() - t0
    return took


def test_ctrl_c_stops_each_command_within_a_second_under_overload(flooded: ServerProcess) -> None:
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    rate = rng.randint(60_000, 600_000)
    print(f"seed {seed}: offered rate {rate:,} msg/s (the broker takes a few thousand)")
    namesrv = flooded.namesrv_addr
    took: dict[str, float] = {}
    commands = {
        "produce": ["produce", PROBE, "--count", "100000000", "--rate", str(rate), "--namesrv", namesrv],
        "consume": ["consume", TOPIC, "--group", f"g{seed}", "--from", "first", "--namesrv", namesrv],
        "demo": ["demo", "--rate", str(rate), "--no-spark", "--plain", "--seconds", "60"],
    }
    ready = {  # at work: sending, receiving, its producer sending
        "produce": lambda lines: False,
        "consume": lambda lines: any(line.startswith("RECV ") for line in lines),
        "demo": lambda lines: any(line.startswith("t=") and "sent 0," not in line for line in lines),
    }
    for name, args in commands.items():
        p = CliProcess(args)
        try:
            if name == "produce":
                _wait_for_messages(namesrv, PROBE, p)
            else:
                assert p.wait_for(ready[name], 60.0), (name, p.snapshot()[-5:], p.errors[-5:])
            took[name] = _stop_time(p)
            out = "\n".join(p.snapshot())
            print(f"{name}: stopped {took[name]:.2f} s after SIGINT, exit {p.proc.returncode}")
            if name == "produce":
                assert "Ctrl-C" in out, out[-500:]
            if name == "demo":
                assert "demo finished" in out or "interrupted" in out, out[-500:]
        finally:
            p.close()
    t0 = time.monotonic()  # the flooded server itself
    flooded.proc.send_signal(signal.SIGINT)
    flooded.proc.wait(30.0)
    took["server"] = time.monotonic() - t0
    print(f"server: stopped {took['server']:.2f} s after SIGINT")
    slow = {k: round(v, 2) for k, v in took.items() if v > LIMIT}
    assert not slow, f"over {LIMIT} s after SIGINT: {slow} (seed {seed}, rate {rate})"
