"""``rocketq allocate`` through the real entry point, output captured."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from rocketq.cli import main
from rocketq.cli.allocate import broker_names, client_ids, compact_ranges
from rocketq.models import MessageQueue, java_string_compare


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["allocate", *args, "--json"]) == 0
    out = capsys.readouterr().out
    doc: dict[str, Any] = json.loads(out)
    return doc


def ranges(doc: dict[str, Any]) -> list[str]:
    return [c["ranges"] for c in doc["consumers"]]


def test_seed_16_queues_3_consumers(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "--queues", "16", "--consumers", "3")
    assert [c["count"] for c in doc["consumers"]] == [6, 5, 5]
    assert ranges(doc) == ["broker-a:[0..5]", "broker-a:[6..10]", "broker-a:[11..15]"]
    assert [c["client_id"] for c in doc["consumers"]] == [
        "127.0.0.1@consumer-01",
        "127.0.0.1@consumer-02",
        "127.0.0.1@consumer-03",
    ]
    assert doc["consumers"][1]["queues"][0] == {
        "topic": "TopicTest",
        "broker_name": "broker-a",
        "queue_id": 6,
    }
    assert (doc["max"], doc["min"], doc["spread"]) == (6, 5, 1)
    assert doc["idle"] == []
    assert doc["unowned"] == []
    assert doc["shared"] == []
    assert doc["strategy"] == "AVG"


def test_seed_12_queues_5_consumers(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "--queues", "12", "--consumers", "5")
    assert [c["count"] for c in doc["consumers"]] == [3, 3, 2, 2, 2]


def test_seed_more_consumers_than_queues(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "--queues", "2", "--consumers", "3")
    assert doc["idle"] == ["127.0.0.1@consumer-03"]
    doc = run_json(capsys, "--queues", "1", "--consumers", "2")
    assert ranges(doc) == ["broker-a:[0]", ""]
    assert doc["idle"] == ["127.0.0.1@consumer-02"]


def test_readme_command_prints_tables_and_moves(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["allocate", "--queues", "16", "--consumers", "3", "--from-consumers", "2"]) == 0
    out = capsys.readouterr().out
    for text in (
        "AVG · TopicTest · 16 queues on 1 broker · 3 consumers",
        "127.0.0.1@consumer-01",
        "broker-a:[0..5]",
        "broker-a:[6..10]",
        "broker-a:[11..15]",
        "spread: 6 − 5 = 1",
        "idle consumers: none",
        "unowned queues: none",
        "from 2 to 3 consumers: 7 of 16 queues change owner (STICKY would move 5)",
        "broker-a:[6..7]",
        "(new)",
    ):
        assert text in out, text


def test_from_consumers_json(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "--queues", "16", "--consumers", "3", "--from-consumers", "2")
    moved = doc["moves"]
    assert moved["from_consumers"] == 2
    assert moved["count"] == 7
    assert moved["sticky_count"] == 5
    assert moved["queues"][0] == {
        "queue": {"topic": "TopicTest", "broker_name": "broker-a", "queue_id": 6},
        "from": ["127.0.0.1@consumer-01"],
        "to": ["127.0.0.1@consumer-02"],
    }
    shrink = run_json(capsys, "--queues", "16", "--consumers", "2", "--from-consumers", "3")
    assert shrink["moves"]["count"] == 7


def test_sticky_strategy_moves_from_the_smaller_group(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(
        capsys, "--queues", "16", "--consumers", "3", "--from-consumers", "2", "--strategy", "sticky"
    )
    assert doc["strategy"] == "STICKY"
    assert doc["moves"]["count"] == 5
    assert "sticky_count" not in doc["moves"]
    assert [c["count"] for c in doc["consumers"]] == [6, 5, 5]


def test_brokers_and_topics(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "--queues", "4", "--consumers", "3", "--brokers", "2")
    assert doc["brokers"] == ["broker-a", "broker-b"]
    assert doc["queues_total"] == 8
    assert ranges(doc) == ["broker-a:[0..2]", "broker-a:[3] broker-b:[0..1]", "broker-b:[2..3]"]
    doc = run_json(capsys, "--queues", "2", "--consumers", "4", "--topics", "TopicS,TopicP")
    assert [c["count"] for c in doc["consumers"]] == [2, 2, 0, 0]
    assert ranges(doc)[0] == "TopicP/broker-a:[0] TopicS/broker-a:[0]"
    doc = run_json(
        capsys, "--queues", "2", "--consumers", "4", "--topics", "TopicS,TopicP", "--balance", "group"
    )
    assert [c["count"] for c in doc["consumers"]] == [1, 1, 1, 1]
    assert doc["balance"] == "group"
    doc = run_json(capsys, "--queues", "2", "--consumers", "2", "--topics", "Big:6,Small")
    assert doc["topics"] == {"Big": 6, "Small": 2}
    assert doc["queues_total"] == 8


def test_multi_topic_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["allocate", "--queues", "2", "--consumers", "4", "--topics", "TopicS,TopicP"]) == 0
    out = capsys.readouterr().out
    assert "TopicP, TopicS" in out
    assert "balance=topic" in out
    assert "idle consumers: 127.0.0.1@consumer-03, 127.0.0.1@consumer-04" in out


def test_duplicate_ids(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "--queues", "12", "--consumers", "3", "--duplicate-ids", "1")
    assert doc["duplicate_ids"] == {"127.0.0.1@consumer-01": 2}
    assert [u["queue_id"] for u in doc["unowned"]] == [4, 5, 6, 7]
    assert len(doc["shared"]) == 4
    assert main(["allocate", "--queues", "12", "--consumers", "3", "--duplicate-ids", "1"]) == 0
    out = capsys.readouterr().out
    assert "duplicated client ids" in out
    assert "unowned queues: 4 broker-a:[4..7]" in out


@pytest.mark.parametrize(
    "extra",
    [
        ["--strategy", "AVG_BY_CIRCLE"],
        ["--strategy", "CONSISTENT_HASH", "--virtual-nodes", "5"],
        ["--strategy", "MACHINE_ROOM", "--rooms", "2"],
        ["--strategy", "MACHINE_ROOM", "--rooms", "2", "--consume-rooms", "room1"],
        ["--strategy", "MACHINE_ROOM_NEARBY", "--rooms", "3"],
        ["--strategy", "MACHINE_ROOM_NEARBY", "--inner", "CONSISTENT_HASH"],
        ["--strategy", "CONFIG", "--config-queues", "broker-a:0..3,TopicTest/broker-b:1"],
        ["--strategy", "STICKY"],
    ],
)
def test_every_strategy_runs(capsys: pytest.CaptureFixture[str], extra: list[str]) -> None:
    doc = run_json(capsys, "--queues", "8", "--consumers", "3", "--brokers", "2", *extra)
    assert doc["strategy"].startswith(extra[1].upper())
    assert sum(c["count"] for c in doc["consumers"]) + len(doc["unowned"]) >= 1


def test_machine_room_json_shows_rooms(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(
        capsys,
        "--queues",
        "4",
        "--consumers",
        "2",
        "--brokers",
        "2",
        "--rooms",
        "2",
        "--strategy",
        "MACHINE_ROOM",
    )
    assert doc["brokers"] == ["room1@broker-a", "room2@broker-b"]
    assert [c["client_id"] for c in doc["consumers"]] == ["room1@consumer-01", "room2@consumer-02"]
    only_room1 = run_json(
        capsys,
        *("--queues", "4", "--consumers", "2", "--brokers", "2", "--rooms", "2"),
        *("--strategy", "MACHINE_ROOM", "--consume-rooms", "room1"),
    )
    assert len(only_room1["unowned"]) == 4
    nearby = run_json(
        capsys,
        *("--queues", "4", "--consumers", "2", "--brokers", "2", "--rooms", "2"),
        *("--strategy", "MACHINE_ROOM_NEARBY"),
    )
    assert ranges(nearby) == ["room1@broker-a:[0..3]", "room2@broker-b:[0..3]"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--queues", "0", "--consumers", "2"], "--queues must be between 1 and"),
        (["--queues", "4", "--consumers", "0"], "--consumers must be between 1 and"),
        (["--queues", "4", "--consumers", "2", "--brokers", "0"], "--brokers must be"),
        (["--queues", "4", "--consumers", "2", "--from-consumers", "0"], "--from-consumers must be"),
        (
            ["--queues", "4", "--consumers", "2", "--strategy", "NOPE"],
            "unknown strategy 'NOPE'; valid names: AVG",
        ),
        (["--queues", "4", "--consumers", "2", "--strategy", "CONFIG"], "CONFIG needs --config-queues"),
        (
            ["--queues", "4", "--consumers", "2", "--strategy", "CONFIG", "--config-queues", "x"],
            "cannot read 'x'",
        ),
        (["--queues", "4", "--consumers", "2", "--strategy", "MACHINE_ROOM"], "MACHINE_ROOM needs --rooms N"),
        (["--queues", "4", "--consumers", "2", "--topics", "bad topic"], "not a valid RocketMQ topic name"),
        (["--queues", "4", "--consumers", "2", "--topics", "a,a"], "listed twice"),
        (["--queues", "4", "--consumers", "2", "--topics", "a:x"], "must be a positive integer"),
        (
            ["--queues", "4", "--consumers", "2", "--duplicate-ids", "2"],
            "--duplicate-ids must be between 0 and 1",
        ),
        (
            ["--queues", "4", "--consumers", "2", "--virtual-nodes", "0", "--strategy", "CONSISTENT_HASH"],
            "between",
        ),
        (["--queues", "1000000", "--consumers", "2", "--brokers", "2"], "more than this command handles"),
        (
            ["--queues", "4", "--consumers", "2", "--strategy", "MACHINE_ROOM_NEARBY", "--inner", "CONFIG"],
            "--inner",
        ),
    ],
)
def test_bad_arguments_are_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert main(["allocate", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("rocketq allocate: error: ")
    assert message in lines[0]


@pytest.mark.parametrize(
    "args",
    [
        ["--queues", "x", "--consumers", "2"],
        ["--consumers", "2"],
        ["--queues", "2", "--consumers", "2", "--balance", "x"],
    ],
)
def test_argparse_errors_are_one_line_exit_2(capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["allocate", *args])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "error:" in err[0]


def test_synthetic_names_sort_numerically_in_java_order() -> None:
    ids = client_ids(300, 3, 0)
    assert ids[0] == "127.0.0.1@consumer-001"
    assert all(java_string_compare(a, b) < 0 for a, b in itertools.pairwise(ids))
    assert broker_names(3, 0) == ["broker-a", "broker-b", "broker-c"]
    assert broker_names(28, 0)[26:] == ["broker-aa", "broker-ab"]
    assert broker_names(3, 2) == ["room1@broker-a", "room2@broker-b", "room1@broker-c"]
    assert client_ids(3, 2, 0, duplicates=2) == ["127.0.0.1@consumer-01"] * 3


def test_compact_ranges() -> None:
    qs = [
        MessageQueue("T", "broker-b", 0),
        *[MessageQueue("T", "broker-a", i) for i in (9, 0, 1, 2, 5, 7, 8)],
    ]
    assert compact_ranges(qs) == "broker-a:[0..2, 5, 7..9] broker-b:[0]"
    assert compact_ranges(qs[:1], with_topic=True) == "T/broker-b:[0]"
    assert compact_ranges([]) == ""
