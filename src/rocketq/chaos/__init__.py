"""Rebalance under faults: a seeded chaos harness with invariants (``rocketq chaos``).

A run starts a name server and two brokers, a producer of sequence-numbered messages, and a
consumer group of separate processes (``rocketq consume``, or any program printing the RECV /
REBALANCE line contract) whose every connection crosses a fault-injecting proxy; it plays a
scenario's schedule of faults, drawn from a seed, then judges what happened::

    from rocketq.chaos import ChaosOptions, run_chaos
    result = run_chaos("split-view", ChaosOptions(seed=3, short=True))
    result.passed, [r.line() for r in result.invariants]

The parts, bottom up: :mod:`~rocketq.chaos.timeline` (what a run saw, as values, and the line
contract's parser), :mod:`~rocketq.chaos.proxy` (the proxy's policy: route rewriting, faults,
observations; the sockets are :mod:`rocketq.remoting.relay`'s), :mod:`~rocketq.chaos.invariants`
(pure functions of a timeline), :mod:`~rocketq.chaos.scenarios` (the seeded plans),
:mod:`~rocketq.chaos.harness` (running one), :mod:`~rocketq.chaos.report` (lines and summaries),
and :mod:`~rocketq.chaos.simple_consumer` (a second consumer program, on the raw call layer).
See ``docs/chaos.md``.
"""

from __future__ import annotations

from rocketq.chaos.harness import ChaosOptions, ChaosResult, run_chaos
from rocketq.chaos.invariants import Expectations, InvariantResult, evaluate
from rocketq.chaos.scenarios import SCENARIOS, Form, Plan, make_plan, scenario_names
from rocketq.chaos.timeline import Timeline, parse_line

__all__ = [
    "SCENARIOS",
    "ChaosOptions",
    "ChaosResult",
    "Expectations",
    "Form",
    "InvariantResult",
    "Plan",
    "Timeline",
    "evaluate",
    "make_plan",
    "parse_line",
    "run_chaos",
    "scenario_names",
]
