"""Every lab scenario, run as a user runs it (``python -m rocketq lab NAME --json``): PASS, exit
code 0, the key facts of its JSON result, and no process left behind."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.clikit import processes_mentioning

pytestmark = pytest.mark.integration


def _why(stdout: str) -> str:
    """The verdict, error and failed checks of a lab's JSON line (the whole line is long)."""
    try:
        result = json.loads(stdout.strip().splitlines()[-1])
        failed = [check for check in result.get("checks", []) if not check.get("ok")]
        return f"{result.get('verdict')} {result.get('error')} failed checks: {failed}\n"
    except (ValueError, IndexError, AttributeError):
        return ""


def lab(name: str, tmp_path: Path, *extra: str, expect: int = 0, timeout: float = 240.0) -> dict[str, Any]:
    data = tmp_path / "data"
    proc = subprocess.run(
        [sys.executable, "-m", "rocketq", "lab", name, "--json", "--data-dir", str(data), *extra],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == expect, _why(proc.stdout) + proc.stdout[-2000:] + proc.stderr[-3000:]
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert processes_mentioning(str(data)) == [], "a server outlived the lab"
    namesrv = result["steps"][0]["namesrv"]
    assert processes_mentioning(f"--namesrv {namesrv}") == [], "a consumer or broker outlived the lab"
    return result


def _passed(result: dict[str, Any]) -> None:
    failed = [c for c in result["checks"] if c["ok"] is False]
    assert result["verdict"] == "PASS", (result["error"], failed)
    assert result["error"] is None
    assert any(c["ok"] for c in result["checks"])


def _owned_ids(step: dict[str, Any], consumer: str) -> list[int]:
    return [int(q.rsplit(":", 1)[1]) for q in step["ownership"][consumer]]


def test_two_consumers(tmp_path: Path) -> None:
    result = lab("two-consumers", tmp_path)
    _passed(result)
    step1, step2, step3 = (s for s in result["steps"] if s["title"].startswith("step"))
    assert _owned_ids(step1, "consumer-1") == list(range(16))
    assert _owned_ids(step2, "consumer-1") == list(range(8))
    assert _owned_ids(step2, "consumer-2") == list(range(8, 16))
    assert sum(step2["message_counts"].values()) == 6
    assert sum(step3["message_counts"].values()) == 12
    for step in (step2, step3):  # every message on the queue of the consumer that got it
        for consumer, msgs in step["messages"].items():
            assert {m["queue_id"] for m in msgs} <= set(_owned_ids(step, consumer))
    assert result["data"]["sent"] == 24
    assert result["data"]["duplicates"] == 0


def test_fewer_queues(tmp_path: Path) -> None:
    result = lab("fewer-queues", tmp_path)
    _passed(result)
    assert result["data"]["idle"] == ["consumer-2"]
    assert result["data"]["rounds"] == [{"consumer-1": 2, "consumer-2": 2}] * 3


def test_three_consumers(tmp_path: Path) -> None:
    result = lab("three-consumers", tmp_path)
    _passed(result)
    assert result["data"]["owned"] == {
        "consumer-1": list(range(6)),
        "consumer-2": list(range(6, 11)),
        "consumer-3": list(range(11, 16)),
    }
    assert sum(result["data"]["messages"].values()) == 32


def test_three_consumers_avg_by_circle(tmp_path: Path) -> None:
    result = lab("three-consumers", tmp_path, "--strategy", "AVG_BY_CIRCLE")
    _passed(result)
    assert result["strategy"] == "AVG_BY_CIRCLE"
    assert result["data"]["owned"]["consumer-1"] == list(range(0, 16, 3))


def test_duplicate_client_id(tmp_path: Path) -> None:
    result = lab("duplicate-client-id", tmp_path)
    _passed(result)
    data = result["data"]
    assert data["shared_client_id"].endswith("@shared")
    assert data["flagged"] == [data["shared_client_id"]]
    assert data["unowned"] == [4, 5, 6, 7]
    first, second = data["lag_rounds"]
    assert all(second[q] > first[q] > 0 for q in ("4", "5", "6", "7"))
    assert all(first[q] == 0 == second[q] for q in ("0", "1", "2", "3"))
    last = result["steps"][-1]
    assert last["lag"] == {str(q): 0 for q in range(8)}


def test_multi_topic(tmp_path: Path) -> None:
    result = lab("multi-topic", tmp_path)
    _passed(result)
    per = result["data"]["queues_per_consumer"]
    assert per["topic"] == {"consumer-1": 2, "consumer-2": 2, "consumer-3": 0, "consumer-4": 0}
    assert per["group"] == {"consumer-1": 1, "consumer-2": 1, "consumer-3": 1, "consumer-4": 1}


@pytest.mark.slow
def test_strategies(tmp_path: Path) -> None:
    result = lab("strategies", tmp_path)
    _passed(result)
    plans = result["data"]["plans"]
    assert set(plans) == {
        "AVG",
        "AVG_BY_CIRCLE",
        "CONFIG",
        "MACHINE_ROOM",
        "MACHINE_ROOM_NEARBY",
        "CONSISTENT_HASH",
    }
    assert plans["CONFIG"]["room1-c1"] == [f"room1@broker-a:{i}" for i in range(4)]
    assert all(q.startswith("room1@") for qs in plans["MACHINE_ROOM"].values() for q in qs)
    assert plans["MACHINE_ROOM_NEARBY"]["room2-c3"] == [f"room2@broker-b:{i}" for i in range(4)]
    everyone = sorted(q for qs in plans["AVG"].values() for q in qs)
    assert len(everyone) == 8 == len(set(everyone))


@pytest.mark.slow
def test_rebalance_cost(tmp_path: Path) -> None:
    result = lab("rebalance-cost", tmp_path, "--rate", "150", "--phase-seconds", "2")
    _passed(result)
    modes = result["data"]["modes"]
    for mode in modes.values():
        assert mode["lost"] == 0
        assert mode["sent"] > 0
        assert mode["consumed"] == mode["sent"]
        changes = mode["changes"]
        # member lists as the records report them: 1, then 3 (maybe by way of 2), then 2
        assert changes[0]["change"] == "start 1"
        assert changes[-1]["change"] == "3 -> 2"
        assert changes[-1]["moved_queues"] == 7  # AVG 6/5/5 -> 8/8
        # a queue's last move (it may have moved on before its owner consumed it) paused, then resumed
        last = {(m["broker"], m["queue_id"]): m for c in changes for m in c["moves"]}
        assert all(m["pause_ms"] is not None for m in last.values())
    if result["data"]["clean_handoff_available"]:
        assert modes["clean"]["duplicates"] == 0
    else:
        skipped = [c for c in result["checks"] if c["ok"] is None]
        assert skipped
        assert "clean handoff" in skipped[0]["name"]


def test_usage_errors(tmp_path: Path) -> None:
    for args in (["no-such-scenario"], ["two-consumers", "--strategy", "NOPE"]):
        proc = subprocess.run(
            [sys.executable, "-m", "rocketq", "lab", *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1
    listing = subprocess.run(
        [sys.executable, "-m", "rocketq", "lab", "list"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert len(listing.stdout.splitlines()) == 7
