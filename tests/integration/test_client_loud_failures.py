"""What used to fail silently in a consumer now works or says so.

* ``consume_from_where`` given as a string (as users write it) is converted at construction, and
  the consumer receives messages (it used to accept the string, then fail every heartbeat).
* A heartbeat that cannot even be built (a bug of ours) fails ``start()`` instead of leaving a
  consumer that silently receives nothing.
* A broker that forgot the consumer (as after its restart) answers the next pull with
  SUBSCRIPTION_NOT_EXIST; the consumer sends that broker its heartbeat at once, logs it once, and
  goes on receiving - not after the next 30 s heartbeat round.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from rocketq import ConsumeConcurrentlyStatus, Message, Producer, PushConsumer
from rocketq.client.consumer.push_core import PushConsumerCore
from rocketq.protocol.message import MessageExt
from tests.integration.clientkit import ClusterThread, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


class Got:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.bodies: list[bytes] = []

    def __call__(self, msgs: list[MessageExt], ctx: Any = None) -> ConsumeConcurrentlyStatus:
        with self.lock:
            self.bodies.extend(m.body for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS


@pytest.fixture
def consumer_and_got(cluster: ClusterThread) -> Iterator[tuple[PushConsumer, Got]]:
    cluster.create_topic("LoudT", 2)
    got = Got()
    consumer = PushConsumer(
        "loud_g",
        client_config=cluster.client_config("loud-c1"),
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
    )
    consumer.subscribe("LoudT", "*")
    consumer.register_listener(got)
    consumer.start()
    try:
        yield consumer, got
    finally:
        consumer.shutdown()


def _send(cluster: ClusterThread, *bodies: bytes) -> None:
    with Producer("loud_pg", client_config=cluster.client_config("loud-p")) as producer:
        for body in bodies:
            producer.send(Message("LoudT", body))


def test_a_string_consume_from_where_is_converted_and_messages_arrive(
    cluster: ClusterThread, consumer_and_got: tuple[PushConsumer, Got]
) -> None:
    _, got = consumer_and_got
    _send(cluster, b"a", b"b", b"c")
    assert wait_until(lambda: sorted(got.bodies) == [b"a", b"b", b"c"], 20.0), got.bodies


def test_a_heartbeat_that_cannot_be_built_fails_start(
    cluster: ClusterThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster.create_topic("LoudT", 2)

    def broken(self: PushConsumerCore) -> Any:
        raise AttributeError("'str' object has no attribute 'name'")

    monkeypatch.setattr(PushConsumerCore, "consumer_data", broken)
    consumer = PushConsumer("loud_broken", client_config=cluster.client_config("loud-c2"))
    consumer.subscribe("LoudT", "*")
    consumer.register_listener(Got())
    with pytest.raises(AttributeError, match="has no attribute 'name'"):
        consumer.start()
    consumer.shutdown()


def test_a_broker_that_forgot_the_group_gets_a_heartbeat_at_once(
    cluster: ClusterThread, consumer_and_got: tuple[PushConsumer, Got], caplog: pytest.LogCaptureFixture
) -> None:
    consumer, got = consumer_and_got
    _send(cluster, b"before")
    assert wait_until(lambda: got.bodies == [b"before"], 20.0), got.bodies
    assert cluster.cluster.broker is not None
    registry = cluster.cluster.broker.consumers

    async def forget() -> None:  # what a broker restart does to its consumer table
        for info in registry.connections("loud_g"):
            registry.unregister("loud_g", info.conn, info.client_id, notify=False)

    with caplog.at_level(logging.INFO, logger="rocketq.client.instance"):
        cluster.thread.call(forget(), timeout=5)
        assert registry.client_ids("loud_g") == []
        for i in range(5):
            _send(cluster, f"after-{i}".encode())
        # the default heartbeat round is 30 s; the pulls' SUBSCRIPTION_NOT_EXIST brings it at once
        assert wait_until(lambda: len(got.bodies) == 6, 15.0), got.bodies
        assert registry.client_ids("loud_g") == [consumer.client_id]
    told = [r for r in caplog.records if "does not know group loud_g" in r.getMessage()]
    assert len(told) == 1, [r.getMessage() for r in told]
