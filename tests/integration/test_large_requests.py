"""Large requests decoded off the event loop (``rocketq.remoting.offload``): the mechanism on a bare
RemotingServer, then the broker's and the name server's large paths, which must give exactly what
the inline paths give. The offload threshold is set low here so that small bodies take the large
path (the default is 64 KiB)."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from rocketq.broker import Broker, BrokerConfig
from rocketq.errors import RemotingClosedError
from rocketq.models import MessageQueue
from rocketq.namesrv import NameServer, NamesrvConfig
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode, decode_messages
from rocketq.protocol.bodies import (
    CheckClientRequestBody,
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    DataVersion,
    HeartbeatData,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageModel,
    ProducerData,
    RegisterBrokerBody,
    SubscriptionData,
    SubscriptionGroupConfig,
    TopicConfig,
    TopicConfigSerializeWrapper,
)
from rocketq.protocol.headers import QueryDataVersionRequestHeader, RegisterBrokerRequestHeader
from rocketq.remoting import RemotingClient, RemotingConnection, RemotingServer, ServerConfig, run
from rocketq.remoting.guard import RequestLimit
from rocketq.remoting.offload import OVERLOAD_REMARK, TimeSlice

from .brokerkit import batch_request, pull_request

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

HB = RequestCode.HEART_BEAT
SMALL = ServerConfig(offload_threshold=256)


def arun(coro: Any) -> Any:
    return run(coro)


# ------------------------------------------------------------------------------------ mechanism


def test_a_large_request_is_decoded_off_the_loop_in_its_turn_and_holds_its_connection() -> None:
    async def scenario() -> None:
        loop_thread = threading.get_ident()
        order: list[str] = []
        threads: list[int] = []
        running = 0
        most_running = 0
        gc_during: list[bool] = []

        def decode(body: bytes) -> bytes:
            threads.append(threading.get_ident())
            time.sleep(0.05)  # a long decode (sleeping releases the GIL, as a slice of work would)
            return body

        async def work(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
            nonlocal running, most_running
            running += 1
            most_running = max(most_running, running)
            gc_during.append(gc.isenabled())
            body = await conn.off_loop(decode, request.body)
            ticks = TimeSlice(0.0)
            for _ in range(3):
                await ticks.tick()
            assert ticks.yields == 3
            order.append(request.ext_fields["n"])
            running -= 1
            return request.response(body=body)

        def handler(conn: RemotingConnection, request: RemotingCommand) -> Any:
            if conn.offloads(len(request.body)):
                return conn.large_request(request, lambda: work(conn, request))
            order.append(request.ext_fields["n"])
            return request.response(body=request.body)

        async with RemotingServer(config=SMALL) as server, RemotingClient() as a, RemotingClient() as b:
            server.register_handler(HB, handler)
            big, small = b"x" * 1000, b"y" * 10

            def req(n: str, body: bytes) -> RemotingCommand:
                return RemotingCommand.request(HB, {"n": n}, body=body)

            # pipelined on one connection: the small request behind a large one waits for it
            answers = await asyncio.gather(
                a.invoke(server.address, req("a-large", big), 5.0),
                a.invoke(server.address, req("a-small", small), 5.0),
                b.invoke(server.address, req("b-large", big), 5.0),
            )
            assert [r.body for r in answers] == [big, small, big]
            assert order.index("a-large") < order.index("a-small")
            assert most_running == 1  # one large request of a code at a time, whatever the peer
            assert threads
            assert loop_thread not in threads
            assert gc_during == [False, False]  # automatic collection waits meanwhile
            assert gc.isenabled()
            assert server.offloader is not None
            assert server.offloader.admitted == 2
            assert server.buffered_input == 0  # the bodies left the input budget

    arun(scenario())


def test_garbage_collection_can_be_left_running() -> None:
    async def scenario() -> None:
        seen: list[bool] = []

        async def work(request: RemotingCommand) -> RemotingCommand:
            seen.append(gc.isenabled())
            return request.response()

        def handler(conn: RemotingConnection, request: RemotingCommand) -> Any:
            return conn.large_request(request, lambda: work(request))

        config = ServerConfig(offload_threshold=256, pause_gc_for_large_requests=False)
        async with RemotingServer(config=config) as server, RemotingClient() as client:
            server.register_handler(HB, handler)
            answer = await client.invoke(server.address, RemotingCommand.request(HB, body=b"x" * 1000), 5.0)
            assert answer.code == ResponseCode.SUCCESS
            assert seen == [True]

    arun(scenario())


def test_a_large_body_is_checked_against_its_limit_off_the_loop_in_order() -> None:
    async def scenario() -> None:
        seen: list[int] = []

        def handler(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
            seen.append(len(request.body))
            return request.response()

        config = ServerConfig(
            offload_threshold=256, request_limits={HB: RequestLimit(min_bytes_per_object=16)}
        )
        async with RemotingServer(config=config) as server, RemotingClient() as client:
            server.register_handler(HB, handler)
            dense = b"[" + b",".join([b"{}"] * 3000) + b"]"
            fine = b"[" + b",".join([b'{"groupName":"g"}'] * 300) + b"]"
            answers = await asyncio.gather(
                *(
                    client.invoke(server.address, RemotingCommand.request(HB, body=body), 5.0)
                    for body in (dense, fine, b"{}")
                )
            )
            assert [a.code for a in answers] == [ResponseCode.SYSTEM_ERROR, ResponseCode.SUCCESS, 0]
            assert (answers[0].remark or "").startswith("HEART_BEAT(34) body holds 3001 JSON objects")
            assert seen == [len(fine), 2]  # in the order sent, the refused one never handled

    arun(scenario())


def test_a_large_request_over_the_input_budget_is_answered_system_busy() -> None:
    async def scenario() -> None:
        config = ServerConfig(offload_threshold=256, max_buffered_total=2000)
        release = asyncio.Event()

        async def work(request: RemotingCommand) -> RemotingCommand:
            await release.wait()
            return request.response()

        def handler(conn: RemotingConnection, request: RemotingCommand) -> Any:
            return conn.large_request(request, lambda: work(request))

        async with RemotingServer(config=config) as server, RemotingClient() as a, RemotingClient() as b:
            server.register_handler(HB, handler)
            first = asyncio.ensure_future(
                a.invoke(server.address, RemotingCommand.request(HB, body=b"x" * 1500), 5.0)
            )
            while server.buffered_input < 1500:
                await asyncio.sleep(0.01)
            busy = await b.invoke(server.address, RemotingCommand.request(HB, body=b"y" * 1000), 5.0)
            assert busy.code == ResponseCode.SYSTEM_BUSY
            assert busy.remark == OVERLOAD_REMARK
            release.set()
            assert (await first).code == ResponseCode.SUCCESS

    arun(scenario())


def test_a_large_request_whose_connection_closed_meanwhile_is_not_applied() -> None:
    """While a large request holds its connection's reading the server does not see the peer
    leave (it reads nothing); a connection the server closed (idle, input budget, shutdown) is
    seen, and what was decoded for it is dropped."""

    async def scenario() -> None:
        applied: list[bytes] = []
        gate = threading.Event()

        def decode(body: bytes) -> bytes:
            gate.wait(5)
            return body

        async def work(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
            body = await conn.off_loop(decode, request.body)
            applied.append(body)
            return request.response()

        def handler(conn: RemotingConnection, request: RemotingCommand) -> Any:
            return conn.large_request(request, lambda: work(conn, request))

        async with RemotingServer(config=SMALL) as server, RemotingClient() as client:
            server.register_handler(HB, handler)
            call = asyncio.ensure_future(
                client.invoke(server.address, RemotingCommand.request(HB, body=b"x" * 1000), 5.0)
            )
            while server.offloader is None or not server.offloader.admitted:
                await asyncio.sleep(0.01)
            (conn,) = server.connections
            conn.abort("closed by the test")
            gate.set()
            with pytest.raises(RemotingClosedError):
                await call
            for _ in range(100):
                if server.buffered_input == 0:
                    break
                await asyncio.sleep(0.01)
            assert applied == []
            assert server.buffered_input == 0

    arun(scenario())


# ------------------------------------------------------------------------------------ broker


@asynccontextmanager
async def broker_at(data_dir: Path, remoting: ServerConfig) -> AsyncIterator[Broker]:
    config = BrokerConfig(host="127.0.0.1", port=0, data_dir=data_dir, remoting=remoting)
    async with Broker(config) as broker:
        yield broker


def _heartbeat(client_id: str, groups: int, producers: int, subs: int) -> bytes:
    consumers = tuple(
        ConsumerData(
            group_name=f"G{g}",
            consume_type=ConsumeType.CONSUME_PASSIVELY,
            message_model=MessageModel.CLUSTERING,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            subscription_data_set=tuple(
                SubscriptionData(topic=f"T{g}-{s}", sub_string="*", sub_version=1) for s in range(subs)
            ),
        )
        for g in range(groups)
    )
    return HeartbeatData(
        client_id=client_id,
        consumer_data_set=consumers,
        producer_data_set=tuple(ProducerData(group_name=f"P{p}") for p in range(producers)),
    ).encode()


async def _broker_story(broker: Broker) -> dict[str, Any]:
    """The same requests, whichever path the broker takes; what the broker made of them."""
    addr = broker.address
    seen: dict[str, Any] = {}
    async with RemotingClient() as client:

        async def call(code: int, body: bytes, ext: dict[str, str] | None = None) -> RemotingCommand:
            return await client.invoke(addr, RemotingCommand.request(code, ext, body=body), 10.0)

        r = await call(HB, _heartbeat("c1", groups=30, producers=300, subs=5))
        seen["heartbeat"] = r.code
        seen["groups"] = sorted(g for g in broker.consumers.groups() if g.startswith("G"))
        seen["subs"] = sorted(broker.consumers.subscriptions("G7"))
        seen["producers"] = sorted(g for g in broker.producers.groups() if g.startswith("P"))
        seen["retry topics"] = sum(1 for g in range(30) if broker.topics.select(f"%RETRY%G{g}") is not None)
        bad = HeartbeatData(
            client_id="c2",
            producer_data_set=(*(ProducerData(group_name=f"Q{p}") for p in range(40)), ProducerData()),
        ).encode()
        r = await call(HB, bad)
        seen["bad heartbeat"] = (r.code, r.remark)
        seen["bad heartbeat changed"] = any(g.startswith("Q") for g in broker.producers.groups())
        mqs = tuple(MessageQueue("L", "broker-a", i) for i in range(50))
        lock = LockBatchRequestBody(consumer_group="LG", client_id="a", mq_set=mqs).encode()
        r = await call(RequestCode.LOCK_BATCH_MQ, lock)
        seen["locked a"] = LockBatchResponseBody.decode(r.body).lock_ok_mq_set
        lock_b = LockBatchRequestBody(consumer_group="LG", client_id="b", mq_set=mqs[::-1]).encode()
        r = await call(RequestCode.LOCK_BATCH_MQ, lock_b)
        seen["locked b"] = LockBatchResponseBody.decode(r.body).lock_ok_mq_set
        unlock = LockBatchRequestBody(consumer_group="LG", client_id="a", mq_set=mqs[:20]).encode()
        seen["unlock"] = (await call(RequestCode.UNLOCK_BATCH_MQ, unlock)).code
        r = await call(RequestCode.LOCK_BATCH_MQ, lock_b)
        seen["locked b after"] = LockBatchResponseBody.decode(r.body).lock_ok_mq_set
        sql = SubscriptionData(topic="T", sub_string="a > 1" + " " * 300, expression_type="SQL92")
        check = CheckClientRequestBody(client_id="c1", group="G1", subscription_data=sql).encode()
        r = await call(RequestCode.CHECK_CLIENT_CONFIG, check)
        seen["check"] = (r.code, r.remark)
        group = SubscriptionGroupConfig(group_name="SG" + "x" * 300, retry_max_times=3).encode()
        seen["update group"] = (await call(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, group)).code
        seen["group"] = broker.groups.find("SG" + "x" * 300, 0.0) is not None
        # a batch is handled inline up to 400 records, whatever its size; this one is large
        r = await client.invoke(addr, batch_request("B", [b"m%d" % i for i in range(500)]), 10.0)
        seen["batch"] = (
            r.code,
            r.ext_fields.get("queueOffset"),
            len(r.ext_fields.get("msgId", "").split(",")),
        )
        pulled = await client.invoke(addr, pull_request("PG", "B", 0, 0, max_nums=64), 10.0)
        seen["pulled"] = [m.body for m in decode_messages(pulled.body)]
    return seen


def test_the_broker_answers_large_requests_as_it_answers_small_ones(tmp_path: Path) -> None:
    async def main() -> tuple[dict[str, Any], dict[str, Any], int]:
        async with broker_at(tmp_path / "inline", ServerConfig(offload_threshold=None)) as inline:
            expected = await _broker_story(inline)
        async with broker_at(tmp_path / "large", SMALL) as large:
            seen = await _broker_story(large)
            offloader = large.remoting.offloader
            assert offloader is not None
            return expected, seen, offloader.admitted

    expected, seen, admitted = arun(main())
    assert seen == expected
    assert admitted == 9  # every body above took the large path
    assert expected["heartbeat"] == ResponseCode.SUCCESS
    assert len(expected["groups"]) == 30
    assert len(expected["producers"]) == 300
    assert expected["retry topics"] == 30
    assert expected["bad heartbeat"][0] == ResponseCode.SYSTEM_ERROR
    assert "producer data without a group name" in expected["bad heartbeat"][1]
    assert expected["bad heartbeat changed"] is False  # checked whole before any part applied
    assert len(expected["locked a"]) == 50
    assert expected["locked b"] == ()
    assert len(expected["locked b after"]) == 20
    assert expected["check"][0] == ResponseCode.SYSTEM_ERROR
    assert expected["batch"] == (ResponseCode.SUCCESS, "0", 500)
    assert expected["pulled"] == [b"m%d" % i for i in range(32)]  # a pull's most


# ------------------------------------------------------------------------------------ name server


def _registration(topics: int, version: int, *, compressed: bool, name: str = "big") -> RemotingCommand:
    table = {
        f"T{i:05d}": TopicConfig(topic_name=f"T{i:05d}", read_queue_nums=4, write_queue_nums=4)
        for i in range(topics)
    }
    wrapper = TopicConfigSerializeWrapper(
        topic_config_table=table, data_version=DataVersion(counter=version, timestamp=version)
    )
    body = RegisterBrokerBody(topic_config_serialize_wrapper=wrapper).encode(compress=compressed)
    header = RegisterBrokerRequestHeader(
        broker_name=name,
        broker_addr=f"127.0.0.1:{10911 + compressed}",
        cluster_name="C",
        ha_server_addr="127.0.0.1:10912",
        broker_id=0,
        compressed=compressed,
    )
    return RemotingCommand.request(RequestCode.REGISTER_BROKER, header.to_ext_fields(), body=body)


async def _namesrv_story(namesrv: NameServer) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    async with RemotingClient() as client:
        r = await client.invoke(namesrv.address, _registration(3000, 1, compressed=False), 10.0)
        seen["json"] = r.code
        seen["topics"] = len(namesrv.routes.all_topics().topic_list)
        route = namesrv.routes.topic_route("T02999")
        seen["route"] = route is not None and [q.broker_name for q in route.queue_datas]
        r = await client.invoke(namesrv.address, _registration(3000, 1, compressed=False), 10.0)
        seen["same version"] = r.code
        r = await client.invoke(namesrv.address, _registration(2000, 2, compressed=True, name="zip"), 10.0)
        seen["compressed"] = r.code
        seen["topics after"] = len(namesrv.routes.all_topics().topic_list)
        bomb = _registration(10, 3, compressed=True)
        bomb.body = bomb.body[:-10]
        r = await client.invoke(namesrv.address, bomb, 10.0)
        seen["truncated"] = (r.code, r.remark)
        query = QueryDataVersionRequestHeader(
            broker_name="big", broker_addr="127.0.0.1:10911", cluster_name="C", broker_id=0
        )
        body = DataVersion(counter=1, timestamp=1).encode() + b" " * 400
        r = await client.invoke(
            namesrv.address,
            RemotingCommand.request(RequestCode.QUERY_DATA_VERSION, query.to_ext_fields(), body=body),
            10.0,
        )
        seen["query"] = (r.code, r.ext_fields.get("changed"))
    return seen


def test_the_name_server_registers_large_brokers_as_it_registers_small_ones() -> None:
    async def main() -> tuple[dict[str, Any], dict[str, Any], int]:
        async with NameServer(NamesrvConfig(port=0, remoting=ServerConfig(offload_threshold=None))) as inline:
            expected = await _namesrv_story(inline)
        async with NameServer(NamesrvConfig(port=0, remoting=SMALL)) as large:
            seen = await _namesrv_story(large)
            assert large.remoting.offloader is not None
            return expected, seen, large.remoting.offloader.admitted

    expected, seen, admitted = arun(main())
    assert seen == expected
    assert admitted == 5
    assert expected["json"] == expected["same version"] == expected["compressed"] == ResponseCode.SUCCESS
    assert expected["topics"] == 3000
    assert expected["topics after"] == 3000
    assert expected["route"] == ["big", "zip"] or expected["route"] == ["big"]
    assert expected["truncated"][0] == ResponseCode.SYSTEM_ERROR
    assert "truncated" in (expected["truncated"][1] or "")
    assert expected["query"] == (ResponseCode.SUCCESS, "false")


def test_a_time_slice_yields_the_loop_once_its_time_is_used() -> None:
    async def scenario() -> None:
        ran: list[int] = []

        async def other() -> None:
            ran.append(len(done))

        done: list[int] = []
        ticks = TimeSlice(0.001)
        asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(other()))
        for i in range(20):
            time.sleep(0.0005)
            done.append(i)
            await ticks.tick()
        await asyncio.sleep(0)
        assert ticks.yields >= 5
        assert ran
        assert ran[0] < 20  # the other task ran before the parts were all done

    arun(scenario())
