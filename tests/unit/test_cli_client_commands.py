"""Parsing and formatting of ``rocketq produce|consume|topic|group``, without servers."""

from __future__ import annotations

import argparse
import doctest
import importlib
import io
import json

import pytest

from rocketq.admin import parse_reset_target
from rocketq.cli._output import format_ms
from rocketq.cli.consume import ConsumeOutput, client_options, consumer_options
from rocketq.cli.group import queue_ranges
from rocketq.cli.main import CliError, build_parser, main
from rocketq.cli.produce import TokenBucket, body_maker, new_run_id
from rocketq.client import ConsumeFromWhere, MessageModel, RebalanceRecord, RebalanceTrigger
from rocketq.errors import ConfigError
from rocketq.lab.lines import body_text, shorten
from rocketq.models import MessageQueue
from rocketq.protocol.message import MessageExt


@pytest.mark.parametrize(
    "module",
    ["rocketq.lab.lines", "rocketq.cli.produce", "rocketq.cli.group", "rocketq.admin.values"],
)
def test_doctests(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module))
    assert result.failed == 0
    assert result.attempted > 0


# ------------------------------------------------------------------ pacing


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_token_bucket_paces_without_drift_whatever_the_sleep_error() -> None:
    clock = FakeClock()
    bucket = TokenBucket(1000.0, clock=clock)
    sent = 0
    # a sleeper that always oversleeps by 30 % plus 0.2 ms: the long-run rate must stay 1000/s
    while clock.now < 110.0:
        wait = bucket.take()
        if wait > 0:
            clock.now += wait * 1.3 + 0.0002
        sent += 1
    rate = sent / (clock.now - 100.0)
    assert rate == pytest.approx(1000.0, rel=0.005)


def test_token_bucket_burst_is_capped_and_debt_is_waited() -> None:
    clock = FakeClock()
    bucket = TokenBucket(100.0, burst=5.0, clock=clock)
    clock.now += 60.0  # a long idle time earns no more than the burst
    assert [bucket.take() for _ in range(5)] == [0.0] * 5
    assert bucket.take() == pytest.approx(0.01)
    assert bucket.take(10) == pytest.approx(0.11)  # a batch of 10 on top of one token owed
    with pytest.raises(ConfigError):
        TokenBucket(0.0)


def test_token_bucket_default_burst_is_20_ms_worth() -> None:
    assert TokenBucket(10_000.0).burst == pytest.approx(200.0)
    assert TokenBucket(5.0).burst == 1.0


# ------------------------------------------------------------------ bodies


def test_bodies_are_unique_and_sized() -> None:
    make = body_maker(1_000_000, text=None, size=32)
    bodies = [make(i) for i in (0, 1, 999_999)]
    assert bodies[0] == b"000000-" + b"x" * 25
    assert all(len(b) == 32 for b in bodies)
    assert len(set(bodies)) == 3
    assert body_maker(10_000_000, text="t", size=None)(42) == b"t-0000042"
    assert body_maker(1, text=None, size=None)(0) == b"message-000000"
    with pytest.raises(ConfigError, match="at least 7 bytes"):
        body_maker(10, text=None, size=6)
    # a run id keeps the bodies of two runs apart
    assert body_maker(5, text="hello", size=None, run="3f9a1c")(3) == b"hello-3f9a1c-000003"
    assert body_maker(5, text=None, size=20, run="ab")(3) == b"000003-ab-" + b"x" * 10
    assert len(new_run_id()) == 6
    assert new_run_id() != new_run_id()


def test_body_text_escapes_replaces_and_keeps_the_tail() -> None:
    assert body_text(b"a\nb\tc\r") == "a\\nb\\tc\\r"
    assert body_text(b"caf\xc3\xa9 \xff") == "café \ufffd"
    long = ("x" * 500 + "-000042").encode()
    text = body_text(long)
    assert len(text) == 200
    assert text.endswith("-000042")
    assert "…" in text
    assert shorten("short") == "short"


def test_format_ms() -> None:
    assert format_ms(0) == "-"
    assert format_ms(1_700_000_000_123).endswith(".123")


def test_queue_ranges() -> None:
    qs = [MessageQueue("T", "broker-a", i) for i in (7, 0, 1, 2, 4, 5)] + [MessageQueue("T", "broker-b", 3)]
    assert queue_ranges(qs) == "T@broker-a:0-2,4-5,7 T@broker-b:3"
    assert queue_ranges([]) == ""


# ------------------------------------------------------------------ consume output


def message(body: bytes, qid: int = 3, offset: int = 17, msg_id: str | None = None) -> MessageExt:
    return MessageExt(
        topic="T",
        body=body,
        properties={"UNIQ_KEY": msg_id or "ABCDEF", "TAGS": "TagA"},
        queue_id=qid,
        queue_offset=offset,
    )


def record(
    seq: int, owned: list[int], added: list[int], removed: list[int], topic: str = "T"
) -> RebalanceRecord:
    def q(ids: list[int]) -> tuple[MessageQueue, ...]:
        return tuple(MessageQueue(topic, "broker-a", i) for i in ids)

    return RebalanceRecord(
        seq=seq, trigger=RebalanceTrigger.START, group="g", client_id="10.0.0.1@c", topic=topic,
        message_model="CLUSTERING", strategy="AVG", client_ids=("10.0.0.1@c",), all_queues=q([0, 1]),
        owned=q(owned), added=q(added), removed=q(removed),
    )  # fmt: skip


def test_recv_and_rebalance_lines() -> None:
    out = io.StringIO()
    output = ConsumeOutput("10.0.0.1@c", "T", json=False, limit=None, out=out)
    output.rebalance(record(1, [], [], []))  # first: printed even without a change (an idle consumer)
    output.rebalance(record(2, [], [], []))  # unchanged: not printed
    output.rebalance(record(3, [0, 1], [0, 1], []))
    output.rebalance(record(4, [0], [0], [], topic="%RETRY%g"))  # the retry topic goes to the log only
    assert output.recv(message(b"hello\nworld"), "broker-a")
    assert out.getvalue().splitlines() == [
        "REBALANCE 10.0.0.1@c T owned=[] added=[] removed=[]",
        "REBALANCE 10.0.0.1@c T owned=[broker-a:0,broker-a:1] added=[broker-a:0,broker-a:1] removed=[]",
        "RECV 10.0.0.1@c broker-a 3 17 ABCDEF hello\\nworld",
    ]


def test_count_limit_hands_back_the_rest_and_counts_duplicates() -> None:
    out = io.StringIO()
    output = ConsumeOutput("c", "T", json=False, limit=3, out=out)
    # duplicates are counted by message id (a body may repeat across runs of `rocketq produce`)
    assert [output.recv(message(b, msg_id=f"ID{b.decode()}"), "b") for b in (b"1", b"2", b"1")] == [True] * 3
    assert output.done.is_set()
    assert not output.recv(message(b"4", msg_id="ID4"), "b")
    assert (output.received, output.duplicates, len(out.getvalue().splitlines())) == (3, 1, 3)


def test_json_lines() -> None:
    out = io.StringIO()
    output = ConsumeOutput("c", "T", json=True, limit=None, out=out)
    output.rebalance(record(1, [1], [1], []))
    output.recv(message(b"x" * 300), "broker-a")
    reb, recv = (json.loads(line) for line in out.getvalue().splitlines())
    assert reb["type"] == "rebalance"
    assert reb["owned"] == [{"topic": "T", "broker": "broker-a", "queue_id": 1}]
    assert (recv["type"], recv["broker"], recv["queue_id"], recv["queue_offset"]) == (
        "recv",
        "broker-a",
        3,
        17,
    )
    assert (recv["msg_id"], recv["tags"], recv["body_size"], len(recv["body"])) == (
        "ABCDEF",
        "TagA",
        300,
        200,
    )
    assert recv["ts_ms"] > 0


def test_a_closed_stdout_stops_the_consumer() -> None:
    class Broken(io.StringIO):
        def write(self, s: str) -> int:
            raise BrokenPipeError

    output = ConsumeOutput("c", "T", json=False, limit=None, out=Broken())
    output.recv(message(b"x"), "b")
    assert output.done.is_set()


# ------------------------------------------------------------------ options


def consume_ns(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["consume", "T", "--group", "g", *argv])


def test_consumer_options() -> None:
    assert consumer_options(consume_ns()) == {
        "allocate_strategy": "AVG",
        "consume_from_where": ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
    }
    opts = consumer_options(consume_ns("--from", "first", "--broadcast", "--strategy", "STICKY"))
    assert opts["consume_from_where"] is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    assert opts["message_model"] is MessageModel.BROADCASTING
    assert opts["allocate_strategy"] == "STICKY"
    opts = consumer_options(consume_ns("--from", "2024-01-02T03:04:05"))
    assert opts["consume_from_where"] is ConsumeFromWhere.CONSUME_FROM_TIMESTAMP
    assert opts["consume_timestamp"] == "20240102030405"
    opts = consumer_options(consume_ns("--handoff", "clean", "--orderly"))
    assert opts["handoff"] == "clean"
    assert "orderly" not in str(opts)  # orderly is the listener's kind, not a config field
    from rocketq.client import PushConsumerConfig

    for mode in ("per-broker", "union", "intersection", "off"):
        opts = consumer_options(consume_ns("--consistent-views", mode))
        assert opts["consistent_views"] == mode
        assert PushConsumerConfig(**opts).consistent_views == mode
    assert PushConsumerConfig().consistent_views == "per-broker"
    assert PushConsumerConfig().view_fence
    assert consumer_options(consume_ns("--no-view-fence"))["view_fence"] is False
    assert "view_fence" not in consumer_options(consume_ns())
    for bad in (["--from", "soon"], ["--strategy", "NOPE"]):
        with pytest.raises(CliError):
            consumer_options(consume_ns(*bad))


def test_client_options_default_to_rocketmqs_intervals_and_take_shorter_ones() -> None:
    from rocketq.client import ClientConfig

    defaults = ClientConfig()
    opts = client_options(consume_ns())
    assert opts["heartbeat_broker_interval"] == defaults.heartbeat_broker_interval == 30.0
    assert opts["poll_name_server_interval"] == defaults.poll_name_server_interval == 30.0
    assert opts["rebalance_interval"] == defaults.rebalance_interval == 20.0
    assert opts["rebalance_min_interval"] == defaults.rebalance_min_interval == 0.0
    opts = client_options(
        consume_ns(
            "--poll-name-server-interval", "1.5", "--rebalance-interval", "4", "--instance", "c1",
            "--rebalance-min-interval", "0",
        )
    )  # fmt: skip
    config = ClientConfig(**opts)
    assert (config.poll_name_server_interval, config.rebalance_interval) == (1.5, 4.0)
    assert config.rebalance_min_interval == 0.0
    assert config.instance_name == "c1"
    for bad in (
        ["--rebalance-interval", "0"],
        ["--poll-name-server-interval", "soon"],
        ["--rebalance-min-interval", "-1"],
    ):
        with pytest.raises(SystemExit):
            consume_ns(*bad)


def test_parse_reset_target_forms() -> None:
    assert parse_reset_target("latest") == -1
    assert parse_reset_target(" first ") == 0
    assert parse_reset_target(5) == 5
    with pytest.raises(ConfigError):
        parse_reset_target(-2)


@pytest.mark.parametrize(
    "argv",
    [
        ["produce", "T", "--count", "0"],
        ["produce", "T", "--body", "a", "--size", "10"],
        ["produce", "T", "--rate", "-1"],
        ["consume", "T"],
        ["consume", "T", "--group", "g", "--handoff", "dirty"],
        ["consume", "T", "--group", "g", "--seconds", "0"],
        ["topic", "create", "T"],
        ["topic", "create", "T", "--queues", "2", "--perm", "5"],
        ["topic", "create", "T", "--queues", "2", "--broker", "a:1", "--cluster", "C"],
        ["topic", "nope"],
        ["group", "reset", "g", "--to", "first"],
        ["group", "progress"],
    ],
)
def test_bad_arguments_exit_2_with_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "(see --help)" in err


def test_help_mentions_the_body_shortening(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["consume", "--help"])
    assert "ellipsis" in capsys.readouterr().out


def test_duplicate_tracking_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from rocketq.cli import consume

    monkeypatch.setattr(consume, "TRACKED_BODIES", 2)
    output = ConsumeOutput("c", "T", json=False, limit=None, out=io.StringIO())
    for body in (b"a", b"b", b"c", b"a", b"c"):
        output.recv(message(body, msg_id=f"ID-{body.decode()}"), "b")
    assert len(output.digests) == 2
    assert output.duplicates == 1  # "c" came after the cap: its repeat is not recognised
    assert "only repeats of the first 2 distinct messages" in output.tracking_note()
