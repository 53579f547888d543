"""``rocketq chaos SCENARIO``: rebalance under faults, judged by invariants.

Starts a name server and two brokers, a producer of sequence-numbered messages, and a consumer
group of separate processes whose traffic all crosses a fault-injecting proxy; plays the
scenario's seeded schedule of faults; then prints one line per invariant (PASS / FAIL / INFO and
its figure) and exits 1 if any failed (2 for usage errors). ``--runs K`` runs seeds N..N+K-1 and
ends with a table of the figures; ``--json`` prints everything as one JSON document. See
``docs/chaos.md``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from rocketq.chaos.harness import PLACEHOLDERS, ChaosOptions, ChaosResult, consumer_command, run_chaos
from rocketq.chaos.report import header_lines, result_lines, summary, summary_lines
from rocketq.chaos.scenarios import SCENARIOS, Form, make_plan
from rocketq.cli._output import (
    add_view_options,
    non_negative_float,
    number_type,
    positive_int,
    print_json,
)
from rocketq.cli.main import CliError
from rocketq.errors import ConfigError
from rocketq.lab.harness import interrupt_on_sigterm
from rocketq.models import from_fields

__all__ = ["register"]


_seed = number_type(int, "not an integer", lambda v: v >= 0, "must not be negative, got {value}")


def register(subparsers: Any) -> None:
    listing = "\n".join(f"  {s.name:<16} {s.summary}" for s in SCENARIOS.values())
    parser = subparsers.add_parser(
        "chaos",
        help="rebalance under faults: a seeded fault schedule against a consumer group, judged by invariants",
        description=(
            "Run a chaos scenario: a name server and two brokers, a producer of numbered messages, and a "
            "consumer group of separate processes whose traffic crosses a fault-injecting proxy. Faults "
            "follow a schedule drawn from --seed (the same seed, the same schedule). Afterwards each "
            "invariant is a line - lost, duplicates, overlap, orphan, convergence (and for --orderly: "
            "exclusive, order) with PASS/FAIL and its figure, plus figures (notifications, member-list "
            "queries, split view) - and the exit code is 1 if any failed.\n\n"
            "scenarios ('all' runs each):\n" + listing
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("scenario", metavar="SCENARIO", help="a scenario (see above), 'all', or 'list'")
    parser.add_argument("--seed", type=_seed, default=1, metavar="N", help="the schedule's seed (default 1)")
    parser.add_argument(
        "--runs",
        type=positive_int,
        default=1,
        metavar="K",
        help="run seeds N..N+K-1 and summarise (default 1)",
    )
    parser.add_argument(
        "--consumer-cmd",
        metavar="CMD",
        help="run this consumer program instead of `rocketq consume`; it must print the RECV/REBALANCE "
        f"line contract and stop gracefully on SIGTERM. Placeholders: {' '.join(PLACEHOLDERS)}; "
        "NAMESRV_ADDR is set too",
    )
    parser.add_argument(
        "--handoff",
        choices=("clean", "rocketmq"),
        default=None,
        help="the consumers' handoff mode (passed to rocketq consume; with --consumer-cmd, what the "
        "program does): clean (rocketq consume's default; with --consumer-cmd: rocketmq) owes 0 "
        "duplicates and 0 overlap on graceful changes; rocketmq: RocketMQ's handoff, duplicates "
        "within the handoff bound",
    )
    parser.add_argument(
        "--orderly", action="store_true", help="orderly consumption (adds the exclusive and order invariants)"
    )
    parser.add_argument(
        "--short",
        action="store_true",
        help="the short form CI runs: 10 s of messages, consumers rebalancing every 5 s on their own",
    )
    parser.add_argument(
        "--notify-coalesce-window",
        type=non_negative_float,
        default=0.0,
        metavar="S",
        help="the brokers gather a group's member changes for S seconds into one notification per "
        "member (default 0: RocketMQ's one notification per change)",
    )
    add_view_options(
        parser,
        "passed to rocketq consume: which member list its rebalances share the queues over "
        "(default per-broker; off: RocketMQ's one random broker; ignored with --consumer-cmd)",
        "passed to rocketq consume: pulls without the consumer's view, so the broker cannot "
        "refuse a stale one (ignored with --consumer-cmd)",
    )
    parser.add_argument(
        "--rebalance-min-interval",
        type=non_negative_float,
        metavar="S",
        help="passed to rocketq consume: never two rebalances closer than S seconds (its default: 0, "
        "every notification at once, as RocketMQ 4.9.4; 1 is RocketMQ 5's minInterval)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as one JSON document")
    parser.add_argument(
        "--data-dir", type=Path, metavar="DIR", help="keep the servers' data and logs here (default: temp)"
    )
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    if args.scenario == "list":
        for s in SCENARIOS.values():
            print(f"{s.name:<16} {s.summary}")
        return 0
    names, options = _checked(args)
    quiet = args.json
    if args.verbose == 0:
        # the producer's retries while a broker is down are expected here; say them only with -v
        logging.getLogger("rocketq.client").setLevel(logging.ERROR)

    def say(text: str) -> None:
        if not quiet:
            print(text, flush=True)

    with interrupt_on_sigterm():
        results = [result for name in names for result in _scenario_runs(args, name, options, say)]
    if len(results) > 1:
        for line in summary_lines(results):
            say(line)
    if quiet:
        doc: Any = (
            results[0].to_dict()
            if len(results) == 1
            else {
                "runs": [r.to_dict() for r in results],
                "summary": summary(results),
            }
        )
        print_json(doc)
    sys.stdout.flush()
    return 0 if all(r.passed for r in results) else 1


def _checked(args: argparse.Namespace) -> tuple[list[str], ChaosOptions]:
    """The scenarios to run and their options, refused (one line) before anything starts:
    an unknown scenario, a data dir that is a file, a bad ``--consumer-cmd``."""
    names = list(SCENARIOS) if args.scenario == "all" else [args.scenario]
    if args.scenario != "all" and args.scenario not in SCENARIOS:
        raise CliError(f"unknown scenario {args.scenario!r}; scenarios: {', '.join(SCENARIOS)}, all")
    if args.data_dir is not None and args.data_dir.exists() and not args.data_dir.is_dir():
        raise CliError(f"data dir {args.data_dir} exists and is not a directory")
    if args.handoff is None:
        args.handoff = "rocketmq" if args.consumer_cmd else "clean"
    options = from_fields(ChaosOptions, args)  # its fields are the options of the same names
    try:
        plan = make_plan(names[0], args.seed, Form(short=args.short))
        consumer_command(plan, options, "c1", "127.0.0.1:9876")
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    return names, options


def _scenario_runs(
    args: argparse.Namespace, name: str, options: ChaosOptions, say: Callable[[str], None]
) -> Iterator[ChaosResult]:
    """Run scenario ``name`` once per seed (``--seed`` .. ``--seed + --runs``), each result said
    as it ends (with its plan first, unless ``--json``)."""
    mode = ", ".join(
        [f"handoff {args.handoff}"]
        + (["orderly"] if args.orderly else [])
        + ([options.fixes()] if options.fixes() else [])
    )
    for seed in range(args.seed, args.seed + args.runs):
        opts = replace(options, seed=seed)
        if not args.json:
            for line in header_lines(make_plan(name, seed, Form(short=args.short)), mode):
                say(line)
        run_dir = None
        if args.data_dir is not None:
            run_dir = args.data_dir / f"{name}-{seed}"
        result = run_chaos(name, replace(opts, data_dir=run_dir), say)
        for line in result_lines(result):
            say(line)
        say("")
        yield result
