"""Rebalance under faults, measured: every chaos scenario over several seeds, per mode.

Modes (all on the default handoff unless named ``clean``):

- ``default``: rocketq's consumers as they ship - per-broker views and the view fence;
- ``rocketmq``: RocketMQ's behaviour - one random broker's member list, no fence (the "before");
- ``no-fence``: per-broker views without the fence; ``fence-only``: the fence with RocketMQ's
  one random broker (each fix alone);
- ``union`` / ``intersection``: every broker asked, wait for agreement, then that fallback;
- ``clean``: the clean handoff (with the defaults); ``coalesce`` / ``clean-coalesce``: the
  brokers' notification window (0.3 s, ``--window``) on top of ``default`` / ``clean``.

It runs the same seeds - the same fault schedules - in every mode and prints per scenario: runs
passed, duplicates, overlap s, orphan s, convergence s, notifications sent and member-list
queries, each as the mean over the seeds with the worst in brackets, then the invariants that
failed and how often. The figures of two modes are comparable because their seeds are the same:
that is the before/after of a fix. ``--json`` writes every run's full result.

Each run starts its own name server, two brokers and consumer processes on loopback and stops them
all; a run takes about 15 s in the short form and 35 s in the full form (clean handoff after a kill:
up to 60 s more, while the dead consumer's leases expire).

Run: ``python bench/bench_chaos.py`` (``--seeds 5``, ``--scenario NAME`` (repeatable),
``--modes rocketmq,default,clean``, ``--window S``, ``--min-interval S``,
``--full`` for RocketMQ's 20 s periodic rebalance and 30 s runs,
``--consumer-cmd CMD``, ``--json FILE``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from rocketq.chaos import SCENARIOS, ChaosOptions, ChaosResult, run_chaos
from rocketq.chaos.report import summary, summary_lines

MODES = (
    "default",
    "rocketmq",
    "no-fence",
    "fence-only",
    "union",
    "intersection",
    "clean",
    "coalesce",
    "clean-coalesce",
)
#: each mode's consumer switches: (--consistent-views, view fence)
_VIEWS: dict[str, tuple[str | None, bool]] = {
    "rocketmq": ("off", False),
    "no-fence": (None, False),
    "fence-only": ("off", True),
    "union": ("union", True),
    "intersection": ("intersection", True),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="seeds 1..N per scenario and mode (default 3)")
    parser.add_argument(
        "--scenario", action="append", choices=list(SCENARIOS), help="only these (repeatable)"
    )
    parser.add_argument(
        "--modes",
        default="rocketmq,default,clean",
        help=f"comma-separated, of: {', '.join(MODES)} (default rocketmq,default,clean)",
    )
    parser.add_argument(
        "--min-interval",
        type=float,
        help="rocketq consume's --rebalance-min-interval in every mode (default: its own, 0 as 4.9.4)",
    )
    parser.add_argument(
        "--window", type=float, default=0.3, help="the notification window of coalesce/fixes (default 0.3 s)"
    )
    parser.add_argument("--full", action="store_true", help="the full form (RocketMQ's intervals, 30 s runs)")
    parser.add_argument("--consumer-cmd", help="judge another consumer program (see docs/chaos.md)")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write every run's result here")
    args = parser.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for mode in modes:
        if mode not in MODES:
            parser.error(f"unknown mode {mode!r}: one of {', '.join(MODES)}")
    names = args.scenario or list(SCENARIOS)
    results: list[ChaosResult] = []
    began = time.monotonic()
    for name in names:
        for mode in modes:
            for seed in range(1, args.seeds + 1):
                options = ChaosOptions(
                    seed=seed,
                    handoff="clean" if mode.startswith("clean") else "default",
                    short=not args.full,
                    consumer_cmd=args.consumer_cmd,
                    notify_coalesce_window=args.window if mode in ("coalesce", "clean-coalesce") else 0.0,
                    rebalance_min_interval=args.min_interval,
                    consistent_views=_VIEWS.get(mode, (None, True))[0],
                    view_fence=_VIEWS.get(mode, (None, True))[1],
                )
                result = run_chaos(name, options)
                results.append(result)
                failing = [r.name for r in result.invariants if r.ok is False]
                print(
                    f"{name:<15} {mode:<12} seed {seed}: {result.verdict} in {result.seconds:.1f} s"
                    + (f" (failing: {', '.join(failing)})" if failing else "")
                    + (f" error: {result.error}" if result.error else ""),
                    file=sys.stderr,
                    flush=True,
                )
    print(f"chaos figures, {'full' if args.full else 'short'} form, {time.monotonic() - began:.0f} s in all")
    for line in summary_lines(results):
        print(line)
    if args.json is not None:
        doc = {"runs": [r.to_dict() for r in results], "summary": summary(results)}
        args.json.write_text(json.dumps(doc, indent=1, default=str), encoding="utf-8")


if __name__ == "__main__":
    main()
