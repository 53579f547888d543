"""How a chaos run is told: its header (plan, settings, schedule), its invariant lines, and a
summary over several runs (the figures ``--runs`` and ``bench/bench_chaos.py`` print)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from rocketq.chaos.harness import ChaosResult
from rocketq.chaos.scenarios import SCENARIOS, Plan

__all__ = ["FIGURES", "header_lines", "result_lines", "summary", "summary_lines"]

FIGURES = (
    ("duplicates", "dups"),
    ("overlap", "overlap s"),
    ("orphan", "orphan s"),
    ("convergence", "converge s"),
    ("notifications", "notifies"),
    ("rebalances", "member queries"),
)
"""The figures summarised per scenario: (invariant name, column title)."""


def header_lines(plan: Plan, mode: str) -> list[str]:
    """What the run will do, before it starts."""
    info = SCENARIOS[plan.scenario]
    lines = [
        f"rocketq chaos {plan.scenario} (seed {plan.seed}, {mode}): {info.summary}",
        f"reproduces: {info.issue}",
        f"cluster: a name server, broker-a and broker-b, {plan.queues} queues each; consumers "
        f"{', '.join(plan.consumers)}; {plan.rate:g} msg/s for {plan.produce_seconds:g} s",
    ]
    lines.extend(f"setting: {s}" for s in plan.settings)
    lines.append("schedule (seconds after the producer starts):")
    lines.extend(f"  {line}" for line in plan.schedule_lines())
    return lines


def result_lines(result: ChaosResult) -> list[str]:
    """The invariant lines and the verdict."""
    lines = []
    if result.invariants:
        lines.append("invariants:")
        lines.extend(f"  {r.line()}" for r in result.invariants)
    if result.error:
        lines.append(f"error: {result.error}")
    seed = result.options.seed
    lines.append(f"rocketq chaos {result.scenario}: {result.verdict} (seed {seed}, {result.seconds:.1f} s)")
    return lines


def _mode(result: ChaosResult) -> str:
    words = [f"handoff {result.options.handoff}"]
    if result.options.orderly:
        words.append("orderly")
    if result.options.consumer_cmd:
        words.append("custom consumer")
    if result.options.fixes():
        words.append(result.options.fixes())
    return ", ".join(words)


def summary(results: Sequence[ChaosResult]) -> list[dict[str, Any]]:
    """Per scenario and mode: the runs, how many passed, and each figure's mean and max."""
    groups: dict[tuple[str, str], list[ChaosResult]] = {}
    for r in results:
        groups.setdefault((r.scenario, _mode(r)), []).append(r)
    out = []
    for (scenario, mode), runs in groups.items():
        row: dict[str, Any] = {
            "scenario": scenario,
            "mode": mode,
            "runs": len(runs),
            "passed": sum(r.passed for r in runs),
            "seeds": [r.options.seed for r in runs],
        }
        for name, _ in FIGURES:
            values = [v for r in runs if (v := r.figure(name)) is not None]
            finite = [v for v in values if not math.isinf(v)]
            row[name] = {
                "mean": round(statistics.fmean(finite), 3) if finite else None,
                "max": (math.inf if len(finite) < len(values) else round(max(finite), 3)) if values else None,
            }
        failing: dict[str, int] = {}
        for r in runs:
            for inv in r.invariants:
                if inv.ok is False:
                    failing[inv.name] = failing.get(inv.name, 0) + 1
            if r.error:
                failing["error"] = failing.get("error", 0) + 1
        row["failing"] = failing
        out.append(row)
    return out


def summary_lines(results: Sequence[ChaosResult]) -> list[str]:
    """A table: per scenario and mode, passes and each figure as mean (max)."""

    def cell(fig: dict[str, Any]) -> str:
        if fig["mean"] is None:
            return "-" if fig["max"] is None else "never"
        top = "inf" if math.isinf(fig["max"]) else f"{fig['max']:g}"
        return f"{fig['mean']:g} ({top})"

    rows = summary(results)
    titles = ["scenario", "mode", "pass", *(t for _, t in FIGURES), "failing"]
    table = [titles]
    for row in rows:
        failing = ", ".join(f"{k} {v}" for k, v in sorted(row["failing"].items())) or "-"
        table.append(
            [
                row["scenario"],
                row["mode"],
                f"{row['passed']}/{row['runs']}",
                *(cell(row[name]) for name, _ in FIGURES),
                failing,
            ]
        )
    widths = [max(len(r[i]) for r in table) for i in range(len(titles))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in table]
    lines.append(
        "figures: mean (max) over the runs; seeds " + ", ".join(str(s) for s in rows[0]["seeds"])
        if rows
        else ""
    )
    return lines
