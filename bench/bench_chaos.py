"""Rebalance under faults, measured: every chaos scenario over a range of seeds, per mode.

Modes:

- ``default``: rocketq's consumers as they ship - the clean handoff, per-broker views and the view
  fence (epochs);
- ``rocketmq``: RocketMQ's behaviour - its handoff, one random broker's member list, no fence (the
  anchor);
- ``at-least-once``: rocketq's views and fence with RocketMQ's handoff (``--handoff rocketmq``);
- ``no-fence``: per-broker views without the fence; ``fence-only``: the fence with RocketMQ's
  one random broker (each fix alone, on RocketMQ's handoff);
- ``union`` / ``intersection``: every broker asked, wait for agreement, then that fallback (on
  RocketMQ's handoff);
- ``coalesce``: ``default`` plus the brokers' notification window (0.3 s, ``--window``).

It runs the same seeds - the same fault schedules - in every mode and prints per scenario: runs
passed, duplicates, overlap s, orphan s, convergence s, notifications sent and member-list
queries, each as the mean over the seeds with the worst in brackets, then the invariants that
failed and how often. The seeds are ``--start-seed`` .. ``--start-seed`` + ``--seeds`` - 1; without
``--start-seed`` the first is drawn at random and printed, so the bench keeps trying seeds nobody
tuned for (and a failure replays with ``rocketq chaos NAME --seed N``). ``--json`` writes every
run's full result.

Each run starts its own name server, two brokers and consumer processes on loopback and stops them
all; a run takes about 15 s in the short form and 35 s in the full form.

Run: ``python bench/bench_chaos.py`` (``--seeds 5``, ``--start-seed N``, ``--scenario NAME``
(repeatable), ``--modes rocketmq,default``, ``--orderly``, ``--window S``, ``--min-interval S``,
``--full`` for RocketMQ's 20 s periodic rebalance and 30 s runs, ``--consumer-cmd CMD``,
``--json FILE``).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

from rocketq.chaos import SCENARIOS, ChaosOptions, ChaosResult, run_chaos
from rocketq.chaos.report import summary, summary_lines

MODES = (
    "default",
    "rocketmq",
    "at-least-once",
    "no-fence",
    "fence-only",
    "union",
    "intersection",
    "coalesce",
)
#: the modes on RocketMQ's handoff (the rest use rocketq's default, the clean handoff)
_ROCKETMQ_HANDOFF = ("rocketmq", "at-least-once", "no-fence", "fence-only", "union", "intersection")
#: each mode's consumer switches: (--consistent-views, view fence)
_VIEWS: dict[str, tuple[str | None, bool]] = {
    "rocketmq": ("off", False),
    "at-least-once": (None, True),
    "no-fence": (None, False),
    "fence-only": ("off", True),
    "union": ("union", True),
    "intersection": ("intersection", True),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--seeds", type=int, default=3, help="how many seeds per scenario and mode (default 3)"
    )
    parser.add_argument("--start-seed", type=int, help="the first seed (default: drawn at random, printed)")
    parser.add_argument("--orderly", action="store_true", help="orderly consumption in every mode")
    parser.add_argument(
        "--scenario", action="append", choices=list(SCENARIOS), help="only these (repeatable)"
    )
    parser.add_argument(
        "--modes",
        default="rocketmq,default",
        help=f"comma-separated, of: {', '.join(MODES)} (default rocketmq,default)",
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
    start = args.start_seed if args.start_seed is not None else random.randint(1, 999_999)
    seeds = range(start, start + args.seeds)
    print(f"seeds {seeds.start}..{seeds.stop - 1} (--start-seed {start})", file=sys.stderr, flush=True)
    results: list[ChaosResult] = []
    began = time.monotonic()
    for name in names:
        for mode in modes:
            for seed in seeds:
                options = ChaosOptions(
                    seed=seed,
                    handoff="rocketmq" if mode in _ROCKETMQ_HANDOFF else "clean",
                    orderly=args.orderly,
                    short=not args.full,
                    consumer_cmd=args.consumer_cmd,
                    notify_coalesce_window=args.window if mode == "coalesce" else 0.0,
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
    form = "full" if args.full else "short"
    print(
        f"chaos figures, {form} form, seeds {seeds.start}..{seeds.stop - 1}, "
        f"{time.monotonic() - began:.0f} s in all"
    )
    for line in summary_lines(results):
        print(line)
    if args.json is not None:
        doc = {"runs": [r.to_dict() for r in results], "summary": summary(results)}
        args.json.write_text(json.dumps(doc, indent=1, default=str), encoding="utf-8")


if __name__ == "__main__":
    main()
