"""Request-reply through rocketq's clients against our broker: ``Producer.request`` and
``request_async`` answered by a consumer that sends ``create_reply`` (SEND_REPLY_MESSAGE_V2,
pushed back with PUSH_REPLY_MESSAGE_TO_CLIENT), several requests in flight matched by their
correlation ids, and a request nobody answers timing out."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from rocketq import (
    ConsumeConcurrentlyStatus,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
    RemotingTimeoutError,
    RequestTimeoutError,
    create_reply,
)
from tests.integration.clientkit import ClusterThread

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

TOPIC = "RequestTopic"


class Replier:
    """A consumer of the request topic answering each request with ``re:<body>`` through its own
    producer (as a Java replier does); ``hold`` delays the answers until set."""

    def __init__(self, cluster: ClusterThread) -> None:
        self.hold = threading.Event()
        self.hold.set()
        self.requests: list[MessageExt] = []
        self.producer = Producer("replier_producer", client_config=cluster.client_config("replier")).start()
        self.consumer = PushConsumer("replier_group", client_config=cluster.client_config("replier"))
        self.consumer.subscribe(TOPIC)
        self.consumer.register_listener(self._on_requests)
        self.consumer.start()

    def _on_requests(self, msgs: list[MessageExt]) -> ConsumeConcurrentlyStatus:
        for m in msgs:
            self.requests.append(m)
            self.hold.wait(30)
            self.producer.send(create_reply(m, b"re:" + m.body))
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    def close(self) -> None:
        self.hold.set()
        self.consumer.shutdown()
        self.producer.shutdown()


@pytest.fixture
def replier(cluster: ClusterThread) -> Iterator[Replier]:
    cluster.create_topic(TOPIC, 2)
    r = Replier(cluster)
    try:
        yield r
    finally:
        r.close()


def test_a_request_gets_its_reply(cluster: ClusterThread, replier: Replier) -> None:
    with Producer("requester", client_config=cluster.client_config("requester")) as p:
        began = time.monotonic()
        request = Message(TOPIC, "ping", keys="req-1")
        reply = p.request(request, 10.0)
        took = time.monotonic() - began
    assert reply.body == b"re:ping"
    assert reply.topic == "DefaultCluster_REPLY_TOPIC"
    assert reply.properties["MSG_TYPE"] == "reply"
    assert "ARRIVE_TIME" in reply.properties  # stamped by the requester on arrival, as Java
    assert "PUSH_REPLY_TIME" in reply.properties  # stamped by the broker
    assert took < 10.0
    # the request as the replier saw it: Java's properties, and the requester's message unchanged
    (seen,) = replier.requests
    assert seen.properties["REPLY_TO_CLIENT"] == p.client_id
    assert seen.properties["TTL"] == "10000"
    assert reply.properties["CORRELATION_ID"] == seen.properties["CORRELATION_ID"]
    assert "CORRELATION_ID" not in request.properties


def test_requests_in_flight_get_their_own_replies(cluster: ClusterThread, replier: Replier) -> None:
    with Producer("requester", client_config=cluster.client_config("requester")) as p:
        p.request(Message(TOPIC, "warm-up"), 10.0)
        with ThreadPoolExecutor(8) as pool:
            replies = list(pool.map(lambda i: p.request(Message(TOPIC, f"q{i}"), 10.0).body, range(16)))

        async def from_a_loop() -> list[bytes]:
            answers = await asyncio.gather(
                *(p.request_async(Message(TOPIC, f"a{i}"), 10.0) for i in range(4))
            )
            return [a.body for a in answers]

        async_replies = asyncio.run(from_a_loop())
    assert replies == [f"re:q{i}".encode() for i in range(16)]
    assert async_replies == [f"re:a{i}".encode() for i in range(4)]


def test_a_request_nobody_answers_in_time_times_out(
    cluster: ClusterThread, replier: Replier, caplog: pytest.LogCaptureFixture
) -> None:
    replier.hold.clear()  # the replier answers only after the requester gave up
    with Producer("requester", client_config=cluster.client_config("requester")) as p:
        began = time.monotonic()
        with pytest.raises(RequestTimeoutError, match="wait reply message timeout, 500 ms") as info:
            p.request(Message(TOPIC, "late"), 0.5)
        assert 0.45 <= time.monotonic() - began < 5.0
        assert isinstance(info.value, RemotingTimeoutError)
        with caplog.at_level(logging.WARNING, logger="rocketq.client.instance"):
            replier.hold.set()  # the late reply arrives and matches nothing
            deadline = time.monotonic() + 10
            while "matches no waiting request" not in caplog.text and time.monotonic() < deadline:
                time.sleep(0.05)
        assert "matches no waiting request" in caplog.text
        assert p.request(Message(TOPIC, "again"), 10.0).body == b"re:again"  # the client is fine


def test_a_request_to_a_topic_without_a_consumer_times_out(cluster: ClusterThread) -> None:
    cluster.create_topic("NobodyListens", 1)
    with Producer("requester", client_config=cluster.client_config("requester")) as p:
        with pytest.raises(RequestTimeoutError):
            p.request(Message("NobodyListens", "anyone?"), 0.3)
        assert p.core.instance.requests == {}  # nothing left waiting
