"""The rocketmq data source's offsets, starting positions, read limits and option parsing (no Spark run)."""

from __future__ import annotations

import doctest
import json
import logging
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.client import routes
from rocketq.errors import ConfigError, DataLossError
from rocketq.models import MessageQueue as Q
from rocketq.spark import offsets
from rocketq.spark.offsets import (
    EARLIEST,
    LATEST,
    StartingPosition,
    check_data_loss,
    fair_limit,
    from_json,
    is_symbolic,
    parse_offsets_option,
    resolve_start,
    split_range,
    to_json,
)


def parse_options(options: dict[str, str], **kw: bool) -> Any:
    """``rocketq.spark.source.parse_options`` (the source module needs pyspark)."""
    pytest.importorskip("pyspark")
    from rocketq.spark.source import parse_options as parse

    return parse(options, **kw)


def test_doctests() -> None:
    assert doctest.testmod(offsets).failed == 0
    assert doctest.testmod(routes).failed == 0


def test_json_is_canonical_whatever_the_insertion_order() -> None:
    a = {Q("b", "x", 10): 1, Q("a", "y", 2): 2, Q("a", "x", 1): 3, Q("a", "x", 0): 4}
    b = dict(reversed(list(a.items())))
    assert json.dumps(to_json(a)) == json.dumps(to_json(b))
    assert json.dumps(to_json(a)) == '{"a": {"x": {"0": 4, "1": 3}, "y": {"2": 2}}, "b": {"x": {"10": 1}}}'
    # a dict that went through JSON text (as Spark's checkpoint does) comes back equal
    assert from_json(json.loads(json.dumps(to_json(a)))) == a


@given(st.dictionaries(st.tuples(st.sampled_from("ab"), st.sampled_from(["x", "y"]), st.integers(0, 40)),
                       st.integers(0, 2**62), max_size=20))  # fmt: skip
def test_json_round_trip(raw: dict[tuple[str, str, int], int]) -> None:
    offs = {Q(*k): v for k, v in raw.items()}
    assert from_json(to_json(offs)) == offs


@pytest.mark.parametrize(
    ("obj", "match"),
    [
        ([], "JSON object"),
        ({"T": 1}, "broker names"),
        ({"T": {"b": 1}}, "queue ids"),
        ({"T": {"b": {"x": 1}}}, "not a number"),
        ({"T": {"b": {"0": -1}}}, "offset >= 0"),
        ({"T": {"b": {"0": "3"}}}, "offset >= 0"),
    ],
)
def test_bad_offsets_json_is_refused(obj: object, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        from_json(obj)


def test_offsets_option_words_and_markers() -> None:
    assert parse_offsets_option(" Earliest ", "startingOffsets") == "earliest"
    parsed = parse_offsets_option('{"T": {"b": {"0": -2, "1": -1, "2": 7}}}', "startingOffsets")
    assert parsed == {Q("T", "b", 0): EARLIEST, Q("T", "b", 1): LATEST, Q("T", "b", 2): 7}
    with pytest.raises(ConfigError, match="'startingOffsets'"):
        parse_offsets_option("newest", "startingOffsets")
    with pytest.raises(ConfigError, match="not valid JSON"):
        parse_offsets_option("{oops", "endingOffsets")
    with pytest.raises(ConfigError, match="'endingOffsets'"):
        parse_offsets_option("earliest", "endingOffsets", allowed=("latest",))


def test_starting_positions_round_trip_through_symbolic_offsets() -> None:
    for pos in (
        StartingPosition("earliest"),
        StartingPosition("latest"),
        StartingPosition("timestamp", timestamp=1700000000000),
        StartingPosition("offsets", offsets={Q("T", "b", 1): 5, Q("T", "a", 0): EARLIEST}),
    ):
        symbolic = json.loads(json.dumps(pos.to_offset()))
        assert is_symbolic(symbolic)
        assert StartingPosition.from_offset(symbolic) == pos
    assert not is_symbolic(to_json({Q("T", "b", 0): 1}))
    with pytest.raises(ConfigError):
        StartingPosition.from_offset({"$initial": "sometime"})


def test_resolve_start_uses_the_given_lookups() -> None:
    queues = [Q("T", "b", 0), Q("T", "b", 1), Q("T", "b", 2)]
    mins = {queues[0]: 3, queues[1]: 0, queues[2]: 10}
    ends = {queues[0]: 50, queues[1]: 60, queues[2]: 70}
    calls: list[tuple[Q, int]] = []

    def search(q: Q, ts: int) -> int:
        calls.append((q, ts))
        return 20

    kw = {"min_offset": mins.__getitem__, "latest": ends.__getitem__, "search": search}
    assert resolve_start(StartingPosition("earliest"), queues, **kw) == mins  # type: ignore[arg-type]
    assert resolve_start(StartingPosition("latest"), queues, **kw) == ends  # type: ignore[arg-type]
    assert resolve_start(StartingPosition("timestamp", timestamp=99), queues, **kw) == dict.fromkeys(
        queues, 20
    )  # type: ignore[arg-type]
    assert calls == [(q, 99) for q in queues]
    pos = StartingPosition("offsets", offsets={queues[0]: LATEST, queues[1]: 7})
    # a queue the JSON leaves out starts at its earliest offset
    assert resolve_start(pos, queues, **kw) == {queues[0]: 50, queues[1]: 7, queues[2]: 10}  # type: ignore[arg-type]


def test_fair_limit_shares_evenly_and_passes_on_what_a_queue_cannot_use() -> None:
    q = [Q("T", "b", i) for i in range(4)]
    start = {q[0]: 0, q[1]: 10, q[2]: 5, q[3]: 7}
    end = {q[0]: 100, q[1]: 12, q[2]: 105, q[3]: 7}
    cut = fair_limit(start, end, 41)
    grants = {x: cut[x] - start[x] for x in q}
    assert sum(grants.values()) == 41
    assert grants == {q[0]: 20, q[1]: 2, q[2]: 19, q[3]: 0}
    assert fair_limit(start, end, 10_000) == end
    assert fair_limit(start, end, 0) == start
    with pytest.raises(ConfigError):
        fair_limit(start, end, -1)


@given(
    st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 1000)), min_size=1, max_size=8),
    st.integers(0, 3000),
)
def test_fair_limit_properties(ranges: list[tuple[int, int]], limit: int) -> None:
    start = {Q("T", "b", i): s for i, (s, _n) in enumerate(ranges)}
    end = {Q("T", "b", i): s + n for i, (s, n) in enumerate(ranges)}
    cut = fair_limit(start, end, limit)
    total = sum(end[x] - start[x] for x in end)
    taken = {x: cut[x] - start[x] for x in end}
    assert all(0 <= taken[x] <= end[x] - start[x] for x in end)
    assert sum(taken.values()) == min(limit, total)
    # fairness: a queue that got less than another was given all it had
    for x, x_end in end.items():
        if any(taken[x] + 1 < taken[y] for y in end):
            assert taken[x] == x_end - start[x]


def test_data_loss_fails_by_default_and_skips_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    q = Q("T", "broker-a", 3)
    assert check_data_loss(q, 10, 5, fail=True) == 10
    with pytest.raises(DataLossError, match=r"broker-a:3: offsets 2\.\.4 \(3 messages\).*failOnDataLoss"):
        check_data_loss(q, 2, 5, fail=True)
    with caplog.at_level(logging.WARNING, logger="rocketq.spark.offsets"):
        assert check_data_loss(q, 2, 5, fail=False) == 5
    assert "skipping them" in caplog.text


def test_split_range() -> None:
    assert split_range(5, 5, 3) == []
    assert split_range(0, 7, 3) == [(0, 3), (3, 6), (6, 7)]
    with pytest.raises(ConfigError):
        split_range(0, 7, 0)


# ------------------------------------------------------------------------------------ options


def test_options_defaults_and_case_insensitive_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NAMESRV_ADDR", "127.0.0.1:9876")
    opts = parse_options({"topic": "A, B", "PullBatchSize": "64"})
    assert opts.namesrv == ("127.0.0.1:9876",)
    assert opts.topics == ("A", "B")
    assert opts.starting == StartingPosition("earliest")
    assert opts.pull_batch_size == 64
    assert opts.tag_set is None
    stream = parse_options({"topic": "A", "maxoffsetspertrigger": "10", "tags": "x || y"}, streaming=True)
    assert stream.starting == StartingPosition("latest")
    assert stream.max_offsets_per_trigger == 10
    assert stream.tag_set == frozenset({"x", "y"})
    ts = parse_options({"topic": "A", "startingtimestamp": "123", "startingoffsets": "latest"})
    assert ts.starting == StartingPosition("timestamp", timestamp=123)


@pytest.mark.parametrize(
    ("options", "kw", "match"),
    [
        ({"topic": "A"}, {}, "name server"),
        ({"namesrv": "nowhere", "topic": "A"}, {}, "host:port"),
        ({"namesrv": "h:1"}, {}, "'topic' is required"),
        ({"namesrv": "h:1", "topic": "A", "pullbatchsize": "many"}, {}, "'pullBatchSize' must be an integer"),
        (
            {"namesrv": "h:1", "topic": "A", "pullbatchsize": "0"},
            {},
            "'pullBatchSize' must be an integer >= 1, got 0",
        ),
        ({"namesrv": "h:1", "topic": "A", "failondataloss": "maybe"}, {}, "'failOnDataLoss' must be true"),
        ({"namesrv": "h:1", "topic": "A", "maxoffsetspertrigger": "5"}, {}, "streaming reads only"),
        (
            {"namesrv": "h:1", "topic": "A", "endingoffsets": "latest"},
            {"streaming": True},
            "batch reads only",
        ),
        (
            {"namesrv": "h:1", "topic": "A", "startingoffsets": '{"B": {"b": {"0": 1}}}'},
            {},
            "names topics not read",
        ),
        ({"namesrv": "h:1", "topic": "A", "endingoffsets": '{"A": {"b": {"0": -2}}}'}, {}, "-2"),
        (
            {"namesrv": "h:1", "topic": "A", "startingoffset": "latest"},
            {},
            "unknown option.*'startingoffset'",
        ),
        ({"namesrv": "h:1", "topic": "A", "timeout": "-1"}, {}, "'timeout'"),
        ({"namesrv": "h:1", "topic": "A,B"}, {"writing": True}, "one topic"),
    ],
)
def test_bad_options_name_the_option(options: dict[str, str], kw: dict[str, bool], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        parse_options(options, **kw)


def test_core_package_does_not_import_pyspark() -> None:
    import subprocess
    import sys

    code = (
        "import sys, rocketq, rocketq.cli.main, rocketq.protocol.trace, rocketq.client.blocking, "
        "rocketq.spark.offsets; sys.exit(1 if any(m.split('.')[0] in ('pyspark', 'pyarrow') "
        "for m in sys.modules) else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
