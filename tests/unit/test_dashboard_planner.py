"""The dashboard's planner shows what ``rocketq allocate`` prints for the same inputs (one code path)."""

from __future__ import annotations

import json

import pytest

from rocketq.cli.main import main
from rocketq.dashboard.views import planner_view
from rocketq.errors import ConfigError


@pytest.mark.parametrize(
    ("strategy", "queues", "brokers", "before", "after", "duplicates"),
    [
        ("AVG", 16, 1, 2, 3, 0),
        ("AVG_BY_CIRCLE", 8, 2, 3, 2, 0),
        ("STICKY", 12, 1, 2, 4, 0),
        ("AVG", 12, 1, 3, 4, 1),
    ],
)
def test_planner_equals_rocketq_allocate(
    capsys: pytest.CaptureFixture[str],
    strategy: str,
    queues: int,
    brokers: int,
    before: int,
    after: int,
    duplicates: int,
) -> None:
    args = ["allocate", "--strategy", strategy, "--queues", str(queues), "--brokers", str(brokers)]
    args += [
        "--consumers",
        str(after),
        "--from-consumers",
        str(before),
        "--duplicate-ids",
        str(duplicates),
        "--json",
    ]
    assert main(args) == 0
    cli = json.loads(capsys.readouterr().out)
    view = planner_view(
        {"strategy": strategy, "queues": str(queues), "brokers": str(brokers), "before": str(before),
         "after": str(after), "duplicates": str(duplicates)}
    )  # fmt: skip
    assert view["moves"] == cli["moves"]["count"]
    assert view["sticky_moves"] == cli["moves"].get("sticky_count")
    assert {c["client_id"]: c["count"] for c in view["consumers"]} == {
        c["client_id"]: c["count"] for c in cli["consumers"]
    }
    cli_owner = {
        f"TopicTest@{q['broker_name']}:{q['queue_id']}": c["client_id"]
        for c in cli["consumers"]
        for q in c["queues"]
    }
    assert {q["key"]: q["after"][0] for q in view["queues"] if q["after"]} == cli_owner
    assert view["spread"] == cli["spread"]


def test_planner_refuses_what_it_cannot_plan_with_one_line() -> None:
    with pytest.raises(ConfigError, match="planner offers"):
        planner_view({"strategy": "CONFIG"})
    with pytest.raises(ConfigError, match="queues must be between 1 and 4,096"):
        planner_view({"queues": "0"})
    with pytest.raises(ConfigError, match="whole number"):
        planner_view({"after": "three"})
