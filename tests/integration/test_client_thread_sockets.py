"""``Producer.send``'s first attempt on a socket of the calling thread's own
(:mod:`rocketq.client.producer.direct`), against real brokers: it is used, it is per thread and
closed at shutdown, a refusal on it is retried on the other broker, a
timeout on it raises the send's timeout and the next send makes a new socket, and with
``thread_sockets=False`` - or while another thread's send is out - the loop's connection carries
the send as before."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from pathlib import Path

import pytest

from rocketq import ConsumeFromWhere, LitePullConsumer, Message, Producer, SendResult, SendStatus
from rocketq.broker import Broker
from rocketq.broker.config import BrokerConfig
from rocketq.client.config import ProducerConfig
from rocketq.client.producer import core as producer_core
from rocketq.errors import ConfigError, RemotingClosedError, RemotingTimeoutError
from rocketq.logsummary import LogSummary
from rocketq.protocol import RemotingCommand, RequestCode
from rocketq.remoting import RPCHook
from tests.integration.clientkit import FAST_DELAY_LEVELS, ClusterThread, wait_until

pytestmark = pytest.mark.integration


class CountingHook(RPCHook):
    """An RPC hook that counts the requests it saw and the responses after them."""

    def __init__(self) -> None:
        self.before: list[int] = []
        self.after: list[int] = []

    def before_request(self, addr: str, request: RemotingCommand) -> None:
        self.before.append(request.code)

    def after_response(self, addr: str, request: RemotingCommand, response: RemotingCommand) -> None:
        self.after.append(request.code)


def open_sockets(producer: Producer) -> int:
    tc = producer.core._thread_connections
    return 0 if tc is None else tc.open_count()


def test_blocking_sends_use_one_socket_per_thread_run_the_hooks_and_close_them_at_shutdown(
    cluster: ClusterThread,
) -> None:
    cluster.create_topic("TopicTS", 4)
    with Producer("ts_producer", client_config=cluster.client_config()) as producer:
        producer.send(Message("TopicTS", b"warm"))  # route and loop connection
        hook = CountingHook()
        api = producer.core.instance.api
        assert api is not None
        api.remoting.add_hook(hook)
        results = [producer.send(Message("TopicTS", f"m{i}")) for i in range(20)]
        assert all(r.status is SendStatus.SEND_OK for r in results)
        assert len({r.msg_id for r in results}) == 20
        assert open_sockets(producer) == 1
        assert (
            hook.before.count(RequestCode.SEND_MESSAGE_V2)
            == hook.after.count(RequestCode.SEND_MESSAGE_V2)
            == 20
        )
        tc = producer.core._thread_connections
        assert tc is not None

        def other_thread() -> None:
            producer.send(Message("TopicTS", b"from another thread"))

        t = threading.Thread(target=other_thread)
        t.start()
        t.join(10)
        assert open_sockets(producer) == 2
    assert tc.open_count() == 0  # shutdown closed them all


def test_without_thread_sockets_the_loop_connection_carries_the_send(cluster: ClusterThread) -> None:
    cluster.create_topic("TopicNoTS", 4)
    config = ProducerConfig(thread_sockets=False)
    with Producer("nots_producer", client_config=cluster.client_config(), config=config) as producer:
        results = [producer.send(Message("TopicNoTS", f"m{i}")) for i in range(10)]
        assert all(r.status is SendStatus.SEND_OK for r in results)
        assert open_sockets(producer) == 0


def test_a_refusal_on_a_thread_socket_is_retried_on_the_other_broker(
    cluster: ClusterThread, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    second = Broker(
        BrokerConfig(
            port=0,
            broker_name="broker-b",
            data_dir=tmp_path / "b",
            namesrv_addrs=(cluster.namesrv,),
            message_delay_level=FAST_DELAY_LEVELS,
        )
    )
    cluster.thread.call(second.start(), timeout=30)
    saved = cluster.broker_addr
    try:
        cluster.create_topic("TopicTSRO", 2)
        cluster.broker_addr = second.address
        cluster.create_topic("TopicTSRO", 2)
        with Producer("tsro_producer", client_config=cluster.client_config()) as producer:
            assert wait_until(lambda: len(producer.fetch_publish_queues("TopicTSRO")) == 4, 5.0)
            warm = [producer.send(Message("TopicTSRO", f"w{i}")) for i in range(8)]
            assert {r.message_queue.broker_name for r in warm} == {"broker-a", "broker-b"}
            assert open_sockets(producer) == 2  # this thread's, one per broker
            api = producer.core.instance.api
            assert api is not None

            async def frozen_route(topic: str, timeout: float | None = None) -> None:
                raise RemotingClosedError("routes frozen by the test")

            monkeypatch.setattr(api, "get_topic_route", frozen_route)
            cluster.create_topic("TopicTSRO", 2, perm=4)  # broker-b read only; the route still says writable
            # the producer's warnings are one line per kind per 10 s across the process: an earlier
            # test's refusal by a broker-b must not fold this one into its summary
            monkeypatch.setattr(producer_core, "_warnings", LogSummary(producer_core.logger))
            with caplog.at_level(logging.WARNING, logger="rocketq.client.producer"):
                results: list[SendResult] = [producer.send(Message("TopicTSRO", f"t{i}")) for i in range(8)]
            assert {r.message_queue.broker_name for r in results} == {"broker-a"}
            assert all(r.status is SendStatus.SEND_OK for r in results)
            logged = [r.getMessage() for r in caplog.records]
            assert any("refused" in m and "broker-b" in m for m in logged), logged
    finally:
        cluster.broker_addr = saved
        cluster.thread.call(second.close(), timeout=30)


def test_a_timeout_on_a_thread_socket_raises_the_sends_timeout_and_the_next_send_reconnects(
    cluster: ClusterThread,
) -> None:
    cluster.create_topic("TopicTSTimeout", 4)
    config = ProducerConfig(send_msg_timeout=0.5)
    with Producer("tst_producer", client_config=cluster.client_config(), config=config) as producer:
        producer.send(Message("TopicTSTimeout", b"warm"))  # on the loop: no route yet
        producer.send(Message("TopicTSTimeout", b"warm"))  # on this thread's socket
        tc = producer.core._thread_connections
        assert tc is not None
        assert tc.open_count() == 1
        stalled = threading.Event()
        release = threading.Event()

        async def stall_the_broker() -> None:  # the broker's loop answers nothing meanwhile
            stalled.set()
            release.wait(10)

        stall = cluster.thread.submit(stall_the_broker())
        assert stalled.wait(10)
        began = time.monotonic()
        try:
            with pytest.raises(RemotingTimeoutError):
                producer.send(Message("TopicTSTimeout", b"late"))
        finally:
            release.set()
            stall.result(10)
        assert time.monotonic() - began < 5.0
        assert tc.open_count() == 0  # the socket with a late answer on it was dropped
        after = producer.send(Message("TopicTSTimeout", b"after"))
        assert after.status is SendStatus.SEND_OK
        assert tc.open_count() == 1


def test_a_send_from_an_event_loop_thread_of_its_own_is_unchanged(cluster: ClusterThread) -> None:
    """``send_async`` from the application's loop keeps its own first-attempt path (no thread socket)."""
    cluster.create_topic("TopicTSAsync", 4)
    with Producer("tsa_producer", client_config=cluster.client_config()) as producer:
        producer.send(Message("TopicTSAsync", b"warm"))
        before = open_sockets(producer)

        async def sends() -> list[SendResult]:
            return list(
                await asyncio.gather(*(producer.send_async(Message("TopicTSAsync", b"a")) for _ in range(8)))
            )

        assert all(r.status is SendStatus.SEND_OK for r in asyncio.run(sends()))
        assert open_sockets(producer) == before


def test_send_batch_goes_on_the_thread_socket_and_every_message_arrives(cluster: ClusterThread) -> None:
    cluster.create_topic("TopicTSBatch", 1)
    with Producer("tsb_producer", client_config=cluster.client_config()) as producer:
        producer.send(Message("TopicTSBatch", b"warm"))  # route and loop connection
        bodies = [f"b{i}".encode() for i in range(16)]
        result = producer.send_batch([Message("TopicTSBatch", b) for b in bodies])
        assert result.status is SendStatus.SEND_OK
        assert len(result.msg_id.split(",")) == 16
        assert open_sockets(producer) == 1
        with pytest.raises(ConfigError):  # the batch's checks still run before anything is sent
            producer.send_batch([Message("TopicTSBatch", b"x"), Message("OtherTopic", b"y")])
    with LitePullConsumer(
        "tsb_reader",
        client_config=cluster.client_config("reader"),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    ) as reader:
        reader.assign(reader.fetch_message_queues("TopicTSBatch"))
        got: list[bytes] = []
        deadline = time.monotonic() + 10
        while len(got) < 17 and time.monotonic() < deadline:
            got += [m.body for m in reader.poll(1.0)]
    assert got == [b"warm", *bodies]


def test_while_another_threads_send_is_out_a_send_goes_through_the_loops_connection(
    cluster: ClusterThread,
) -> None:
    """Thread A's send waits on its own socket (the broker's loop is held); thread B's, made
    meanwhile, is handed to the client's loop and makes no socket; both are answered."""
    cluster.create_topic("TopicTSTwo", 4)
    with Producer("tstwo_producer", client_config=cluster.client_config()) as producer:
        producer.send(Message("TopicTSTwo", b"warm"))  # route and loop connection
        stalled = threading.Event()
        release = threading.Event()

        async def stall_the_broker() -> None:
            stalled.set()
            release.wait(10)

        results: dict[str, SendResult] = {}

        def sender(name: str) -> None:
            results[name] = producer.send(Message("TopicTSTwo", name.encode()))

        stall = cluster.thread.submit(stall_the_broker())
        assert stalled.wait(10)
        a = threading.Thread(target=sender, args=("a",))
        b = threading.Thread(target=sender, args=("b",))
        try:
            a.start()
            assert wait_until(lambda: producer.core._blocking_in_flight == 1, 5.0)
            b.start()
            assert wait_until(lambda: producer.core._blocking_in_flight == 2, 5.0)
        finally:
            release.set()
            stall.result(10)
        a.join(10)
        b.join(10)
        assert {k: r.status for k, r in results.items()} == {"a": SendStatus.SEND_OK, "b": SendStatus.SEND_OK}
        tc = producer.core._thread_connections
        assert tc is not None
        # a's socket; b went through the loop (this thread's warm send, its route fetched on the
        # loop, may have made one of its own too)
        assert [e.thread for e in tc._all if e.thread in (a, b)] == [a]


def test_a_socket_idle_past_max_idle_is_remade_before_it_is_used(cluster: ClusterThread) -> None:
    cluster.create_topic("TopicTSIdle", 4)
    with Producer("tsi_producer", client_config=cluster.client_config()) as producer:
        producer.send(Message("TopicTSIdle", b"warm"))
        producer.send(Message("TopicTSIdle", b"on the socket"))
        tc = producer.core._thread_connections
        assert tc is not None
        (first,) = [e.client for e in tc._all]
        producer.send(Message("TopicTSIdle", b"same socket"))
        assert [e.client for e in tc._all] == [first]
        tc.max_idle = 0.0  # every socket is now idle too long
        assert producer.send(Message("TopicTSIdle", b"new socket")).status is SendStatus.SEND_OK
        (second,) = [e.client for e in tc._all]
        assert second is not first
        assert not first.is_connected  # the old one was closed
