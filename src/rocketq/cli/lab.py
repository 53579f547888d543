"""``rocketq lab NAME``: the seeds' rebalance experiments, run for real and narrated.

Each scenario starts a rocketq server and real consumer processes on 127.0.0.1 (free ports, a
temp data dir unless ``--data-dir``), sends real messages, tells what happened and why, checks
its expected outcome and ends with PASS (exit 0) or FAIL (exit 1); usage errors exit 2.
``--json`` prints only the result: steps, ownership, messages per consumer, checks, verdict.
``rocketq lab list`` names the scenarios.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rocketq.allocate import strategy_names
from rocketq.cli._output import positive_duration, positive_float, print_json
from rocketq.cli.main import CliError
from rocketq.lab.harness import interrupt_on_sigterm
from rocketq.lab.narrate import Narrator
from rocketq.lab.scenario import INTERRUPTED, SCENARIOS, LabOptions, run_scenario

__all__ = ["register"]


def register(subparsers: Any) -> None:
    listing = "\n".join(f"  {info.name:<20} {info.summary}" for info in SCENARIOS.values())
    parser = subparsers.add_parser(
        "lab",
        help="run a rebalance experiment for real (servers, consumer processes, messages) and narrate it",
        description=(
            "Run one of the classic rebalance experiments against a real rocketq server with real "
            "consumer processes, narrate what happened and why, and check the expected outcome "
            "(PASS exit 0, FAIL exit 1).\n\nscenarios:\n" + listing
        ),
    )
    parser.add_argument("name", metavar="NAME", help="a scenario (see above), or 'list'")
    parser.add_argument(
        "--strategy",
        default="AVG",
        metavar="STRATEGY",
        help=f"the group's allocation strategy: {', '.join(strategy_names())} (default AVG; "
        "'strategies' runs them all)",
    )
    parser.add_argument("--json", action="store_true", help="print the result as one JSON document")
    parser.add_argument(
        "--data-dir", type=Path, metavar="DIR", help="keep the servers' data here (default: temp)"
    )
    parser.add_argument(
        "--rate",
        type=positive_float,
        metavar="MSGS_PER_S",
        help="rebalance-cost: messages per second (default 200)",
    )
    parser.add_argument(
        "--phase-seconds",
        type=positive_duration,
        metavar="SECONDS",
        help="rebalance-cost: seconds between scaling steps (default 3)",
    )
    parser.add_argument(
        "--spark",
        action="store_true",
        help="rebalance-cost: trace the clients and run rocketq report (Spark) over each group",
    )
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    if args.name == "list":
        for info in SCENARIOS.values():
            print(f"{info.name:<20} {info.summary}")
        return 0
    if args.name not in SCENARIOS:
        raise CliError(f"unknown scenario {args.name!r}; scenarios: {', '.join(SCENARIOS)}")
    strategy = args.strategy.upper()
    if strategy not in strategy_names():
        raise CliError(f"unknown strategy {args.strategy!r}; strategies: {', '.join(strategy_names())}")
    if strategy in ("CONFIG", "MACHINE_ROOM", "MACHINE_ROOM_NEARBY") and args.name != "strategies":
        raise CliError(
            f"--strategy {strategy} needs options only the 'strategies' scenario sets; run that one"
        )
    if args.data_dir is not None and args.data_dir.exists() and not args.data_dir.is_dir():
        raise CliError(f"data dir {args.data_dir} exists and is not a directory")
    extra: dict[str, float | bool] = {}
    if args.spark:
        if args.name != "rebalance-cost":
            raise CliError("--spark applies to rebalance-cost only")
        extra["spark"] = True
    if args.rate is not None:
        extra["rate"] = args.rate
    if args.phase_seconds is not None:
        extra["phase_seconds"] = args.phase_seconds
    options = LabOptions(strategy=strategy, data_dir=args.data_dir, extra=extra)
    with interrupt_on_sigterm():
        result = run_scenario(args.name, options, Narrator(quiet=args.json))
    if args.json:
        print_json(result.to_dict())
    sys.stdout.flush()
    if result.error == INTERRUPTED:
        return 130
    return 0 if result.passed else 1
