"""The writer's column-wise encoding (Arrow columns straight to SEND_BATCH_MESSAGE records), its
byte-sized, pipelined batches against a real broker, and bulk pulls (rocketq's broker answers
more than 32 messages to a pull that asks with ``rqPullBytes``; without it, RocketMQ's cap)."""

from __future__ import annotations

import logging
import re
import socket
from typing import Any

import pyarrow as pa
import pytest

from rocketq.client.blocking import BlockingClient
from rocketq.errors import ConfigError
from rocketq.models import MessageQueue, PullStatus, QueueRoute
from rocketq.protocol import calls
from rocketq.protocol.message import Message, decode_batch, decode_messages, encode_batch
from rocketq.protocol.properties import MessageConst
from rocketq.spark.source import parse_options
from rocketq.spark.writer import SendCommitMessage, _TopicSender, encode_rows, send_rows

from .conftest import ClusterThread

_ID = re.compile(r"^[0-9A-F]{32}$")
_MAP = pa.map_(pa.string(), pa.string())


def expected(row: dict[str, Any]) -> dict[str, str]:
    """The properties the per-message writer gives a row (a dict's update order and values), as
    decoded (a pair with an empty value is skipped, as RocketMQ's parser skips it)."""
    props: dict[str, str] = {}
    if row.get("tags") is not None:
        props[MessageConst.TAGS] = row["tags"]
    if row.get("keys") is not None:
        props[MessageConst.KEYS] = row["keys"]
    props[MessageConst.WAIT] = "true"
    props.update((k, v) for k, v in (row.get("properties") or []) if v is not None)
    return {k: v for k, v in props.items() if v}


def decoded(batch: pa.RecordBatch, default_topic: str | None) -> dict[str, list[Message]]:
    out: dict[str, list[Message]] = {}
    for rows in encode_rows(batch, default_topic):
        body = rows.data.to_pybytes()
        assert len(body) == int(rows.ends[-1])
        out[rows.topic] = decode_batch(body, rows.topic)
    return out


ROWS: list[dict[str, Any]] = [
    {"topic": None, "body": "hé", "tags": "A", "keys": None, "properties": [("u", "1"), ("v", None)]},
    {"topic": "T2", "body": "x", "tags": None, "keys": "k1 k2", "properties": None},
    {"topic": None, "body": "", "tags": "C", "keys": "k3", "properties": [("TAGS", "Z"), ("w", "")]},
    {"topic": "T2", "body": "y" * 5000, "tags": "", "keys": "k4", "properties": []},
]


@pytest.mark.parametrize("large", [False, True])
def test_column_wise_records_carry_what_the_per_message_encoder_would(large: bool) -> None:
    text = pa.large_string() if large else pa.string()
    batch = pa.record_batch(
        {
            "topic": pa.array([r["topic"] for r in ROWS], text),
            "body": pa.array([r["body"] for r in ROWS], text),
            "tags": pa.array([r["tags"] for r in ROWS], text),
            "keys": pa.array([r["keys"] for r in ROWS], text),
            "properties": pa.array([r["properties"] for r in ROWS], _MAP),
        }
    )
    # the topic option overrides the column (Kafka's precedence)
    overridden = decoded(batch, "T1")
    assert list(overridden) == ["T1"]
    assert [m.body for m in overridden["T1"]] == [r["body"].encode() for r in ROWS]
    # without it, the column splits the rows
    filled = batch.set_column(0, "topic", pa.array([r["topic"] or "T1" for r in ROWS], text))
    got = decoded(filled, None)
    assert sorted(got) == ["T1", "T2"]
    want = {"T1": [ROWS[0], ROWS[2]], "T2": [ROWS[1], ROWS[3]]}
    ids: set[str] = set()
    for topic, messages in got.items():
        assert [m.body for m in messages] == [r["body"].encode() for r in want[topic]]
        for m, row in zip(messages, want[topic], strict=True):
            props = dict(m.properties)
            uniq = props.pop(MessageConst.UNIQ_KEY)
            assert _ID.match(uniq)
            ids.add(uniq)
            assert props == expected(row)
            # the same message through the per-message encoder makes the same record
            again = encode_batch([Message(topic, m.body, 0, m.properties)])
            assert decode_batch(again, topic)[0].properties == m.properties
    assert len(ids) == 4


def test_binary_bodies_sliced_batches_and_no_optional_columns() -> None:
    bodies = [bytes([i]) * i for i in range(50)]
    batch = pa.record_batch({"body": pa.array(bodies, pa.binary())}).slice(7, 30)
    (messages,) = decoded(batch, "Only").values()
    assert [m.body for m in messages] == bodies[7:37]
    assert all(set(m.properties) == {MessageConst.WAIT, MessageConst.UNIQ_KEY} for m in messages)
    assert decoded(batch.slice(0, 0), "Only") == {}


def test_rows_the_writer_cannot_send_are_refused_by_name() -> None:
    with pytest.raises(ConfigError, match="null 'body'"):
        encode_rows(pa.record_batch({"body": pa.array([b"a", None])}), "T")
    with pytest.raises(ConfigError, match="null 'topic' and no 'topic' option"):
        encode_rows(pa.record_batch({"body": pa.array([b"a"]), "topic": pa.array([None], pa.string())}), None)
    with pytest.raises(ConfigError, match="null 'topic' and no 'topic' option"):
        encode_rows(pa.record_batch({"body": pa.array([b"a"])}), None)
    with pytest.raises(ConfigError, match=r"properties of 400\d\d bytes, at most 32767 fit"):
        encode_rows(pa.record_batch({"body": pa.array([b"a"]), "keys": pa.array(["k" * 40000])}), "T")


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_batches_are_sized_by_bytes_pipelined_and_all_stored(cluster: ClusterThread) -> None:
    routes = cluster.create_topic("Sized", 2)
    sizes = [100] * 300 + [30_000] * 20 + [100] * 300
    bodies = [bytes([i % 251]) * n for i, n in enumerate(sizes)]
    keys = [f"k{i}" for i in range(len(bodies))]
    batches = pa.table({"body": pa.array(bodies, pa.binary()), "keys": pa.array(keys)}).to_batches(100)
    opts = parse_options(
        {"namesrv": cluster.namesrv, "topic": "Sized", "sendBatchSize": "64", "sendBatchBytes": "65536"},
        writing=True,
    )
    stats = send_rows(iter(batches), opts)
    assert stats.messages == len(bodies)
    # 100 B rows: 64 a batch; 30 kB rows: two a batch (about 64 KiB stored)
    assert stats.batches >= 600 // 64 + 20 // 2
    assert sum(stats.per_queue.values()) == len(bodies)
    stored: dict[str, bytes] = {}
    with cluster.io() as io:
        for route in routes:
            for result in io.pull_range(
                route, 0, stats.per_queue[route.queue.short], group="g", batch_size=64
            ):
                assert result.status is PullStatus.FOUND
                for m in decode_messages(result.body):
                    stored[m.properties[MessageConst.KEYS]] = m.body
    assert stored == dict(zip(keys, bodies, strict=True))


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_a_row_over_the_batch_budget_goes_alone_and_the_brokers_limit_is_its_error(
    cluster: ClusterThread,
) -> None:
    cluster.create_topic("Big", 1)
    opts = parse_options({"namesrv": cluster.namesrv, "topic": "Big", "sendBatchBytes": "1000"}, writing=True)
    stats = send_rows(iter([pa.record_batch({"body": pa.array([b"a" * 5000, b"b" * 5000])})]), opts)
    assert (stats.messages, stats.batches) == (2, 2)
    with pytest.raises(Exception, match="maxMessageSize"):
        send_rows(iter([pa.record_batch({"body": pa.array([b"c" * (5 << 20)])})]), opts)


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_bulk_pulls_go_past_the_cap_of_32_only_when_asked(cluster: ClusterThread) -> None:
    (route,) = cluster.create_topic("Bulk", 1)
    cluster.produce("Bulk", 3000, batch=500)
    with cluster.io() as io:
        usual = io.pull(route, group="g", offset=0, max_nums=1000)
        assert len(decode_messages(usual.body, read_body=False)) == 32
        call = io.pull_call(route, group="g", offset=0, max_nums=1000, bulk_bytes=1 << 20)
        bulk = io.call(route.addr, call)
        assert [m.queue_offset for m in decode_messages(bulk.body, read_body=False)] == list(range(1000))
        assert bulk.next_begin_offset == 1000
        # a small byte budget bounds the answer (at least one message)
        call = io.pull_call(route, group="g", offset=5, max_nums=1000, bulk_bytes=1)
        assert len(decode_messages(io.call(route.addr, call).body, read_body=False)) == 1
        offsets = []
        for result in io.pull_range(route, 10, 2990, group="g", batch_size=700, depth=3, bulk_bytes=1 << 20):
            offsets += [m.queue_offset for m in decode_messages(result.body, read_body=False)]
        assert [o for o in offsets if o < 2990] == list(range(10, 2990))
        # answers capped by bytes (a few kB) rather than by count: still every offset once, in order
        offsets = []
        for result in io.pull_range(route, 3, 2000, group="g", batch_size=4096, depth=4, bulk_bytes=5000):
            offsets += [m.queue_offset for m in decode_messages(result.body, read_body=False)]
        assert [o for o in offsets if o < 2000] == list(range(3, 2000))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_a_failed_send_is_retried_on_the_next_queue_while_others_are_in_flight(
    cluster: ClusterThread, caplog: pytest.LogCaptureFixture
) -> None:
    (good,) = cluster.create_topic("Retried", 1)
    # a queue whose broker address refuses connections, first in turn: its sends move on
    dead = QueueRoute(MessageQueue("Retried", "broker-gone", 0), f"127.0.0.1:{_free_port()}")
    opts = parse_options(
        {"namesrv": cluster.namesrv, "topic": "Retried", "sendBatchSize": "10", "timeout": "2"}, writing=True
    )
    stats = SendCommitMessage()
    batch = pa.record_batch(
        {
            "body": pa.array([f"r{i}".encode() for i in range(95)]),
            "keys": pa.array([f"k{i}" for i in range(95)]),
        }
    )
    with BlockingClient(list(opts.namesrv), timeout=opts.timeout) as io:
        sender = _TopicSender(io, "Retried", opts, 0, stats)
        sender.queues = [dead, good]
        with caplog.at_level(logging.WARNING, logger="rocketq.spark.writer"):
            for rows in encode_rows(batch, "Retried"):
                sender.send_rows(rows)
            sender.flush()
    assert (stats.messages, stats.batches, stats.per_queue) == (95, 10, {good.queue.short: 95})
    assert "trying the next queue" in caplog.text
    with cluster.io() as io:
        found = io.call(good.addr, io.pull_call(good, group="g", offset=0, max_nums=200, bulk_bytes=1 << 20))
    assert sorted(int(m.properties["KEYS"][1:]) for m in decode_messages(found.body)) == list(range(95))


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_a_new_topic_is_created_by_the_first_batch_then_its_own_route_is_used(cluster: ClusterThread) -> None:
    opts = parse_options(
        {"namesrv": cluster.namesrv, "topic": "MadeByWriter", "sendBatchSize": "50"}, writing=True
    )
    batch = pa.record_batch({"body": pa.array([b"n"] * 500)})
    stats = send_rows(iter([batch]), opts)
    assert (stats.messages, stats.batches) == (500, 10)
    with cluster.io() as io:
        routes = io.read_queues("MadeByWriter")
        stored = sum(io.call(r.addr, calls.get_max_offset(r.queue)) for r in routes)
    assert stored == 500
