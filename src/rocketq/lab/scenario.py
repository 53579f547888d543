"""What every lab scenario shares: its options, its result, the registry, and :func:`run_scenario`.

A scenario is a module of this package with a ``run(run: Run) -> None`` function. It starts what
it needs through :attr:`Run.lab` (a :class:`~rocketq.lab.harness.Lab`), records and narrates each
step with :meth:`Run.step`, and states its expectations with :meth:`Run.check`; the verdict is
PASS when every check that ran held (a check may be *skipped*, ``ok=None``, when this build
lacks what it needs - the narration says so) and at least one ran. An exception fails the
scenario with its message as the error. The result is JSON-ready (:meth:`ScenarioResult.to_dict`).
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocketq.analytics import counted
from rocketq.errors import ConfigError
from rocketq.lab.harness import Lab, LabError, Received, Worker, queue_key
from rocketq.lab.narrate import Narrator, queue_ranges
from rocketq.models import MessageQueue

__all__ = [
    "INTERRUPTED",
    "SCENARIOS",
    "Check",
    "LabOptions",
    "Run",
    "ScenarioInfo",
    "ScenarioResult",
    "run_scenario",
    "scenario_names",
]


@dataclass(frozen=True, slots=True)
class ScenarioInfo:
    name: str
    module: str
    summary: str


SCENARIOS: dict[str, ScenarioInfo] = {
    info.name: info
    for info in (
        ScenarioInfo(
            "two-consumers",
            "two_consumers",
            "16 queues; a second consumer process joins: new messages go exactly where the allocation says",
        ),
        ScenarioInfo(
            "fewer-queues",
            "fewer_queues",
            "1 queue for 2 consumers (the second idles), then 2 queues (one each, stable across sends)",
        ),
        ScenarioInfo(
            "three-consumers", "three_consumers", "16 queues over 3 consumers: 6/5/5, [0..5] [6..10] [11..15]"
        ),
        ScenarioInfo(
            "duplicate-client-id",
            "duplicate_client_id",
            "two processes share one client id: both take 4 of 8 queues, 4 pile up until ids are unique",
        ),
        ScenarioInfo(
            "multi-topic",
            "multi_topic",
            "one group of 4 on two 2-queue topics: per-topic AVG loads two; group balance spreads 1/1/1/1",
        ),
        ScenarioInfo(
            "rebalance-cost",
            "rebalance_cost",
            "steady producer, group scaled 1 -> 3 -> 2: pauses, duplicates, lost, backlog per handoff",
        ),
        ScenarioInfo(
            "strategies",
            "strategies",
            "one group under each of RocketMQ's six strategies over two brokers in two machine rooms",
        ),
    )
}


def scenario_names() -> tuple[str, ...]:
    return tuple(SCENARIOS)


@dataclass(frozen=True, slots=True, kw_only=True)
class LabOptions:
    """What the command line passes to a scenario."""

    #: The allocation strategy the group uses (scenarios that compare strategies ignore it).
    strategy: str = "AVG"
    #: Where the servers keep their data (default: a temp dir removed afterwards).
    data_dir: Path | None = None
    #: Scenario-specific knobs (``rebalance-cost``: ``rate``, ``phase_seconds``).
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Check:
    """An expectation and whether it held (``ok=None``: skipped, with the reason in ``detail``)."""

    name: str
    ok: bool | None
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "detail": self.detail}


@dataclass
class ScenarioResult:
    """A scenario's steps, checks, data and verdict."""

    name: str
    strategy: str
    steps: list[dict[str, Any]] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        ran = [c for c in self.checks if c.ok is not None]
        return self.error is None and bool(ran) and all(c.ok for c in ran)

    @property
    def verdict(self) -> str:
        return "PASS" if self.passed else "FAIL"

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.name,
            "strategy": self.strategy,
            "verdict": self.verdict,
            "error": self.error,
            "seconds": round(self.seconds, 2),
            "steps": self.steps,
            "checks": [c.to_dict() for c in self.checks],
            "data": self.data,
        }


class Run:
    """One scenario run: the lab, the narrator and the result being built."""

    def __init__(self, name: str, options: LabOptions, narrator: Narrator, lab: Lab) -> None:
        self.name = name
        self.options = options
        self.narrator = narrator
        self.lab = lab
        self.result = ScenarioResult(name, options.strategy)

    @property
    def strategy(self) -> str:
        return self.options.strategy

    def step(
        self,
        title: str,
        *,
        workers: Sequence[Worker] = (),
        topics: Sequence[str] = (),
        messages: Mapping[str, Sequence[Received]] | None = None,
        notes: Sequence[str] = (),
        **facts: Any,
    ) -> dict[str, Any]:
        """Record and narrate a step: who owns what now (of ``topics``), messages, why."""
        n = self.narrator
        n.heading(title)
        step: dict[str, Any] = {"title": title}
        if workers and topics:
            owned = {w.name: [q for t in topics for q in (w.owned(t) or [])] for w in workers}
            ids = {w.name: w.client_id or "?" for w in workers}
            n.ownership("queues owned", owned, ids)
            step["ownership"] = {name: [queue_key(q) for q in qs] for name, qs in owned.items()}
            step["client_ids"] = ids
        if messages is not None:
            rows = []
            for consumer, recs in messages.items():
                for r in recs:
                    rows.append((consumer, r.queue.queue_id, r.offset, r.body))
            if rows:
                n.table(
                    "messages received",
                    ("consumer", "queue", "offset", "body"),
                    rows,
                    right=("queue", "offset"),
                )
            else:
                n.say("no messages received")
            step["messages"] = {c: [r.to_dict() for r in recs] for c, recs in messages.items()}
            step["message_counts"] = {c: len(recs) for c, recs in messages.items()}
        for text in notes:
            n.note(text)
        step["notes"] = list(notes)
        step.update(facts)
        self.result.steps.append(step)
        return step

    def check(self, name: str, ok: bool | None, detail: str) -> bool:
        self.result.checks.append(Check(name, ok, detail))
        self.narrator.check(name, ok, detail)
        return bool(ok)


def describe(queues: Sequence[MessageQueue]) -> str:
    """Queues for a narration sentence."""
    return queue_ranges(queues)


INTERRUPTED = "interrupted"
"""``ScenarioResult.error`` of a run stopped by Ctrl-C or SIGTERM (the command exits 130)."""


def run_scenario(
    name: str, options: LabOptions | None = None, narrator: Narrator | None = None
) -> ScenarioResult:
    """Run scenario ``name`` against a fresh lab; always returns a result (failures included)."""
    info = SCENARIOS.get(name)
    if info is None:
        raise ConfigError(f"unknown lab scenario {name!r}; scenarios: {', '.join(SCENARIOS)}")
    options = options or LabOptions()
    narrator = narrator or Narrator()
    module = importlib.import_module(f"rocketq.lab.{info.module}")
    began = time.monotonic()
    brokers: Sequence[str] = getattr(module, "BROKERS", ("broker-a",))
    lab = Lab(data_dir=options.data_dir, brokers=brokers)
    run = Run(name, options, narrator, lab)
    narrator.heading(f"rocketq lab {name}: {info.summary}")
    try:
        with lab:
            run.step(
                "setup",
                notes=[
                    f"rocketq server (pid {lab.server.pid if lab.server else '?'}) on name server "
                    f"{lab.namesrv}, brokers {', '.join(f'{b}={a}' for b, a in lab.broker_addrs.items())}; "
                    f"server logs in {', '.join(str(p) for p in lab.server_logs())}"
                ],
                namesrv=lab.namesrv,
                brokers=dict(lab.broker_addrs),
            )
            module.run(run)
    except (LabError, ConfigError) as exc:
        run.result.error = str(exc)
    except KeyboardInterrupt:
        # Ctrl-C (or SIGTERM): the lab has stopped what it started; say what was done so far
        run.result.seconds = time.monotonic() - began
        run.result.error = INTERRUPTED
        ok = sum(1 for c in run.result.checks if c.ok)
        narrator.say(
            f"rocketq lab {name}: interrupted after {run.result.seconds:.1f} s: "
            f"{counted(len(run.result.steps), 'step')} done, {ok} of {len(run.result.checks)} checks "
            "passed so far"
        )
        return run.result
    except Exception as exc:  # a scenario's own bug still ends as a FAIL with the reason, not a traceback
        run.result.error = f"{type(exc).__name__}: {exc}"
    run.result.seconds = time.monotonic() - began
    if run.result.error:
        narrator.say(f"error: {run.result.error}")
    narrator.verdict(f"rocketq lab {name}", run.result.passed)
    return run.result
