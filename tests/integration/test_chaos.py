"""``rocketq chaos``: every scenario once, short form, against real processes, on a seed drawn fresh
for each run (printed, and in every failure's message: replay it with ``ROCKETQ_CHAOS_SEED=N`` or
``rocketq chaos NAME --short --seed N``), plus the seeds that once found a bug, fixed.

Each run starts a name server and two brokers, real consumer processes and the proxy, and stops
every process it started (checked by pid). The tests check that the run happened as planned
(the faults fired, the schedule ran, nothing was lost), that rocketq's consumers repeated no
message beyond the handoff bound (per-broker views and the view fence, their defaults), and what
each scenario is there to show. The timing verdicts (overlap, orphan, convergence) pass too in
the bench's runs (``docs/chaos.md``) but depend on the machine's load, so CI does not assert them.
Bounded: about 15-20 s a run, all of them under 5 minutes.
"""

from __future__ import annotations

import json
import os
import random
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from rocketq.chaos import SCENARIOS, ChaosOptions, ChaosResult, run_chaos

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(180)]

SEED = int(os.environ.get("ROCKETQ_CHAOS_SEED") or random.SystemRandom().randrange(1, 1_000_000))
"""The run's seed: drawn fresh unless ``ROCKETQ_CHAOS_SEED`` replays one."""
print(f"chaos tests: seed {SEED} (replay with ROCKETQ_CHAOS_SEED={SEED})")

#: (scenario, seed) pairs that found a bug once: they stay fixed tests
FOUND = [
    # the view fence compared a digest of the member list: a consumer cut off while the list went
    # A -> B -> A pulled on from its position before the cut (issue 23)
    ("split-view", 4),
    # lease renewals went without rqLease, so a killed clean-handoff consumer's renewed leases
    # outlived it and its queues were never consumed again (issue 23)
    ("kill", 557434),
]
SIMPLE_CONSUMER = (
    f"{shlex.quote(sys.executable)} -m rocketq.chaos.simple_consumer --namesrv {{namesrv}} --topic {{topic}} "
    "--group {group} --instance {name} --heartbeat-interval {heartbeat_interval} "
    "--rebalance-interval {rebalance_interval} --poll-interval {poll_interval}"
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _check_ran(result: ChaosResult, *, nothing_lost: bool = True) -> dict[str, float]:
    assert result.error is None, f"seed {result.plan.seed}: {result.error}"
    names = [r.name for r in result.invariants]
    for name in ("faults", "lost", "duplicates", "overlap", "orphan", "convergence", "notifications"):
        assert name in names
    faults = result.invariant("faults")
    assert faults is not None
    assert faults.ok, f"seed {result.plan.seed}: {faults.detail}"  # every fault of the plan fired
    assert len(result.happened) == len(result.plan.actions)
    for happened, action in zip(
        result.happened, sorted(result.plan.actions, key=lambda a: a.at), strict=True
    ):
        assert happened["at"] >= action.at - 0.05
    lost = result.invariant("lost")
    assert lost is not None
    # every acknowledged message was consumed once the faults healed
    assert lost.ok or not nothing_lost, f"seed {result.plan.seed}: {lost.detail}"
    assert lost.data["sent"] >= 0.9 * result.plan.rate * result.plan.produce_seconds
    for info in result.consumers.values():
        assert info["exit_code"] is not None
        assert not _alive(info["pid"])
    assert result.timeline is not None
    assert result.timeline.pulls  # the proxy saw the consumers' traffic
    return {r.name: r.figure for r in result.invariants}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_scenario_runs_as_planned(name: str) -> None:
    _scenario_runs_as_planned(name, SEED)


@pytest.mark.parametrize(("name", "seed"), FOUND)
def test_the_seeds_that_found_bugs_pass(name: str, seed: int) -> None:
    _scenario_runs_as_planned(name, seed)


def _scenario_runs_as_planned(name: str, seed: int) -> None:
    print(f"{name}: seed {seed}")
    result = run_chaos(name, ChaosOptions(seed=seed, short=True))
    figures = _check_ran(result)
    repeats = result.invariant("duplicates")
    assert repeats is not None
    assert repeats.ok, f"seed {seed}: {repeats.detail}"  # no two consumers pulled one queue at once
    tl = result.timeline
    assert tl is not None
    events = [e.what for e in tl.wire_events]
    if name == "notify-lost":
        assert sum(n.dropped for n in tl.notifies) >= 1
    elif name in ("heartbeat-loss", "split-view"):
        assert figures["split-view"] > 0  # the brokers answered different member lists
    elif name == "stale-route":
        assert "stale-route" in events
        assert len(tl.queues) == 12
    elif name == "gc-pause":
        (paused,) = [life for life in tl.lives if life.pauses]
        ((stopped, resumed),) = paused.pauses
        assert resumed - stopped > 3.0  # longer than the brokers' 3 s expiry ...
        # ... so the brokers dropped the frozen consumer and told the others meanwhile
        assert any(stopped < n.t < resumed and n.consumer != paused.consumer for n in tl.notifies)
    elif name == "kill":
        # the others take the dead consumer's queues at once (its connections closed)
        lines = [r.line() for r in result.invariants]
        verdicts = {r.name: r.ok for r in result.invariants}
        assert verdicts["orphan"], (seed, lines)
        assert verdicts["convergence"], (seed, lines)
        assert [life.how for life in tl.lives].count("killed") == 1
    elif name == "broker-restart":
        resume = result.invariant("resume")
        assert resume is not None
        # issue 11: heartbeats on reconnect / "group info not exist" - served again within seconds,
        # not after the 30 s heartbeat interval
        assert resume.ok, (seed, resume.detail)
        assert [w.what for w in tl.windows].count("broker-down") == 1
    elif name == "slow-listener":
        assert [w.what for w in tl.windows].count("slow") == 1
    elif name == "rolling-deploy":
        verdicts = {r.name: r.ok for r in result.invariants}
        assert verdicts["convergence"], (seed, [r.line() for r in result.invariants])
        assert figures["notifications"] >= 20
        assert sorted(life.how for life in tl.lives) == ["running"] * 3 + ["stopped"] * 3


def test_the_default_clean_handoff_rolling_deploy_has_no_duplicates_and_no_overlap() -> None:
    result = run_chaos("rolling-deploy", ChaosOptions(seed=SEED, short=True))
    assert result.options.handoff == "clean"
    figures = _check_ran(result)
    assert figures["duplicates"] == 0
    assert figures["overlap"] == 0
    overlap = result.invariant("overlap")
    assert overlap is not None
    assert "clean handoff: none allowed" in overlap.detail


def test_the_fixes_switched_on_reach_the_servers_and_the_consumers() -> None:
    """Both fixes on (the brokers' notification window, consistent views in rocketq consume): the
    run still loses nothing, a broker notifies a member at most once per window, and the
    consumers ask both brokers for the member list together at each rebalance. (Their effect on
    the figures, against the same seeds with the fixes off, is bench_chaos's; docs/chaos.md.)"""
    options = ChaosOptions(seed=SEED, short=True, notify_coalesce_window=0.3, consistent_views="union")
    result = run_chaos("rolling-deploy", options)
    _check_ran(result)
    assert result.options.fixes() == "coalesce 0.3s, consistent views (union)"
    tl = result.timeline
    assert tl is not None
    # the window: one broker's notices to one member are a window apart (the relay's jitter aside)
    by_pair: dict[tuple[str, str], list[float]] = {}
    for n in tl.notifies:
        by_pair.setdefault((n.consumer, n.broker), []).append(n.t)
    gaps = [b - a for ts in by_pair.values() for a, b in zip(sorted(ts), sorted(ts)[1:], strict=False)]
    assert gaps
    assert min(gaps) >= 0.25, gaps
    # consistent views: each member-list query has its twin to the other broker, sent together
    assert tl.queries
    for q in tl.queries:
        assert any(
            o.consumer == q.consumer and o.broker != q.broker and abs(o.sent - q.sent) < 0.2
            for o in tl.queries
        ), q


def test_orderly_adds_its_invariants() -> None:
    result = run_chaos("rolling-deploy", ChaosOptions(seed=SEED, short=True, orderly=True))
    # an orderly queue whose lock the old owner has not released yet waits for the next rebalance
    # (RocketMQ's behaviour), sometimes past the run: a finding of docs/chaos.md, not checked here
    figures = _check_ran(result, nothing_lost=False)
    assert figures["exclusive"] == 0
    assert figures["order"] == 0


def test_a_second_consumer_program_is_judged_through_the_line_contract(tmp_path: Path) -> None:
    """``--consumer-cmd`` with :mod:`rocketq.chaos.simple_consumer` (no rocketq consumer code: the
    raw call layer and AVG), through the CLI, with ``--json``."""
    proc = subprocess.run(
        [
            sys.executable, "-m", "rocketq", "chaos", "rolling-deploy", "--short", "--seed", str(SEED),
            "--json", "--data-dir", str(tmp_path), "--consumer-cmd", SIMPLE_CONSUMER,
        ],
        capture_output=True, text=True, timeout=150, check=False,
    )  # fmt: skip
    doc = json.loads(proc.stdout)
    assert proc.returncode == (0 if doc["verdict"] == "PASS" else 1), proc.stderr[-2000:]
    assert doc["error"] is None
    assert doc["options"]["consumer_cmd"] == SIMPLE_CONSUMER
    verdicts = {r["name"]: r for r in doc["invariants"]}
    assert verdicts["lost"]["verdict"] == "PASS", verdicts["lost"]
    assert verdicts["faults"]["verdict"] == "PASS"
    # the program's own client ids (<ip>@<name>), seen in its heartbeats at the proxy
    assert {c["client_id"] for c in doc["consumers"].values()} == {f"127.0.0.1@c{i}" for i in range(1, 7)}
    assert all(c["exit_code"] == 0 for c in doc["consumers"].values())
    timeline = json.loads((tmp_path / f"rolling-deploy-{SEED}" / "timeline.json").read_text())
    assert {r["client_id"] for r in timeline["rebalances"]} >= {"127.0.0.1@c1", "127.0.0.1@c6"}
    assert len(timeline["recvs"]) >= verdicts["lost"]["sent"]
