"""Message look-ups through ``rocketq.Admin`` against a real ``rocketq server`` process: by key
within a time range (``query_message``), by the producer's message id with and without the
topic, and by the broker's offset id (``view_message``) - before and after a clean restart, and
after a SIGKILL (the index recovered from the commit log)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from rocketq import Admin, ClientConfig, Message, Producer, SendResult
from rocketq.embedded import ServerProcess, spawn_server
from rocketq.errors import ConfigError, UnknownTopicError

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

TOPIC = "IndexTopic"


def _same_ports(server: ServerProcess) -> tuple[str, ...]:
    """Restart on the ports the server had: offset message ids name the broker's address."""
    return (
        "--namesrv-port",
        server.namesrv_addr.rsplit(":", 1)[1],
        "--broker-port",
        server.broker_addr.rsplit(":", 1)[1],
    )


def _send(namesrv: str, n: int, start: int = 0) -> list[SendResult]:
    config = ClientConfig(namesrv=namesrv, client_ip="127.0.0.1", instance_name="index-producer")
    with Producer("index_producer", client_config=config) as p:
        return [
            p.send(Message(TOPIC, f"body-{i}", keys=[f"order-{i % 5}", f"user-{i}"]))
            for i in range(start, start + n)
        ]


def _check_lookups(admin: Admin, sent: list[SendResult]) -> None:
    # by key: every message with the key, in store order
    bodies = [m.body for m in admin.query_message(TOPIC, "order-3")]
    assert bodies == [f"body-{i}".encode() for i in range(len(sent)) if i % 5 == 3]
    assert [m.body for m in admin.query_message(TOPIC, "user-7")] == [b"body-7"]
    assert admin.query_message(TOPIC, "order-9") == []
    assert len(admin.query_message(TOPIC, "order-3", max_num=2)) == 2  # the newest two
    # by the producer's id (in the topic, or searched everywhere) and by the offset id
    for r in (sent[0], sent[-1]):
        (in_topic,) = admin.view_message(r.msg_id, topic=TOPIC)
        (anywhere,) = admin.view_message(r.msg_id)
        (by_offset,) = admin.view_message(r.offset_msg_id)
        assert in_topic.msg_id == anywhere.msg_id == by_offset.msg_id == r.msg_id
        assert by_offset.offset_msg_id == r.offset_msg_id
        assert (by_offset.queue_id, by_offset.queue_offset) == (r.message_queue.queue_id, r.queue_offset)


def test_lookups_by_key_and_id_survive_a_restart_and_a_crash(tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = spawn_server(data)
    ports = _same_ports(server)
    try:
        sent = _send(server.namesrv_addr, 20)
        with Admin(server.namesrv_addr) as admin:
            _check_lookups(admin, sent)
            # a time range (the index keeps store times to the second, as RocketMQ's)
            stored = {m.body: m.store_timestamp for m in admin.query_message(TOPIC, "order-0")}
            first, last = min(stored.values()), max(stored.values())
            within = admin.query_message(TOPIC, "order-0", begin=first - 1000, end=last + 1000)
            assert {m.body for m in within} == set(stored)
            assert admin.query_message(TOPIC, "order-0", begin=last + 1000) == []
            assert admin.query_message(TOPIC, "order-0", end=first - 1000) == []
            with pytest.raises(ConfigError, match="time range is empty"):
                admin.query_message(TOPIC, "order-0", begin=last, end=last - 1)
            with pytest.raises(UnknownTopicError):
                admin.query_message("NoSuchTopic", "order-0")
            assert admin.view_message("F" * 32) == []  # neither an offset id here nor a producer's
    finally:
        server.stop()  # SIGTERM: a clean shutdown
    server = spawn_server(data, extra_args=ports)
    try:
        more = _send(server.namesrv_addr, 5, start=20)
        with Admin(server.namesrv_addr) as admin:
            _check_lookups(admin, sent + more)
        os.kill(server.pid, signal.SIGKILL)  # then a crash: the index is recovered at start
        server.proc.wait(10)
    finally:
        server.stop()
    assert (data / "abort").exists()
    server = spawn_server(data, extra_args=ports)
    try:
        began = time.monotonic()
        with Admin(server.namesrv_addr) as admin:
            _check_lookups(admin, sent + more)
            assert [m.body for m in admin.query_message(TOPIC, "user-24")] == [b"body-24"]
        assert time.monotonic() - began < 30
    finally:
        server.stop()


def test_a_server_without_the_index_keeps_none_and_finds_nothing_by_key(tmp_path: Path) -> None:
    """``rocketq server --no-message-index`` (RocketMQ's ``messageIndexEnable=false``): no index
    directory, look-ups by key find nothing, and look-ups by offset id still work (they need no
    index)."""
    data = tmp_path / "data"
    server = spawn_server(data, extra_args=("--no-message-index",))
    try:
        sent = _send(server.namesrv_addr, 5)
        with Admin(server.namesrv_addr) as admin:
            assert admin.query_message(TOPIC, "order-3") == []
            (by_offset,) = admin.view_message(sent[0].offset_msg_id)
            assert by_offset.msg_id == sent[0].msg_id
    finally:
        server.stop()
    assert not (data / "index").exists()
