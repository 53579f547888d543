"""``rocketq demo``: servers, a producer, a consumer group scaling 1 -> 3 -> 2 live, then Spark.

See :mod:`rocketq.lab.demo`. Runs on the embedded default with nothing else started, in under
two minutes on two cores, and stops every process it started. Without a terminal (CI, a pipe)
the live view becomes plain lines.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rocketq.cli._output import positive_duration, positive_float, print_json
from rocketq.lab.demo import DemoOptions, run_demo
from rocketq.lab.harness import interrupt_on_sigterm

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="watch a consumer group rebalance live: server, producer, 1 -> 3 -> 2 consumers, Spark report",
        description=(
            "Start a rocketq server in a temp dir, a 16-queue topic, a producer at a steady rate and a "
            "consumer group of separate processes that grows from 1 to 3 and shrinks to 2; show who owns "
            "which queue, messages per consumer, lag and every rebalance as it happens; then a summary "
            "(delivered, duplicates, pauses) and the Spark analytics over the demo's traces."
        ),
    )
    parser.add_argument(
        "--seconds",
        type=positive_duration,
        default=24.0,
        metavar="SECONDS",
        help="seconds of traffic (default 24)",
    )
    parser.add_argument(
        "--rate",
        type=positive_float,
        default=200.0,
        metavar="MSGS_PER_S",
        help="messages per second (default 200)",
    )
    parser.add_argument("--no-spark", action="store_true", help="skip the Spark analytics")
    parser.add_argument("--plain", action="store_true", help="plain lines even on a terminal")
    parser.add_argument(
        "--json", action="store_true", help="also print the result as one JSON document at the end"
    )
    parser.add_argument(
        "--data-dir", type=Path, metavar="DIR", help="keep the server's data here (default: temp)"
    )
    parser.add_argument(
        "--report-dir",
        type=Path,
        default=Path("rocketq-demo-report"),
        metavar="DIR",
        help="where the HTML report goes (default ./rocketq-demo-report)",
    )
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    options = DemoOptions(
        seconds=args.seconds,
        rate=args.rate,
        spark=not args.no_spark,
        data_dir=args.data_dir,
        report_dir=args.report_dir,
        plain=args.plain,
    )
    with interrupt_on_sigterm():
        result = run_demo(options)
    if args.json:
        print_json(result.to_dict())
    return 0 if result.error is None and result.run is not None and not result.run.lost else 1
