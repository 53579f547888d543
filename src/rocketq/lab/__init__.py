"""The lab: the classic rebalance experiments as commands, and the demo.

Each scenario (:data:`SCENARIOS`, ``rocketq lab NAME``) starts the real system - a rocketq
server, consumer **processes** (:mod:`rocketq.lab.worker`), real messages - through the harness
(:class:`Lab`), narrates what happened and why (:class:`Narrator`), and checks its own expected
outcome (:func:`run_scenario` returns a :class:`ScenarioResult` with a PASS/FAIL verdict).
"""

from __future__ import annotations

from rocketq.lab.harness import Lab, LabError, Received, Worker
from rocketq.lab.narrate import Narrator, queue_ranges
from rocketq.lab.scenario import SCENARIOS, Check, LabOptions, ScenarioResult, run_scenario, scenario_names

__all__ = [
    "SCENARIOS",
    "Check",
    "Lab",
    "LabError",
    "LabOptions",
    "Narrator",
    "Received",
    "ScenarioResult",
    "Worker",
    "queue_ranges",
    "run_scenario",
    "scenario_names",
]
