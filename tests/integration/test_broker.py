"""The broker on loopback, driven by the protocol layer's RemotingClient (see brokerkit.py).

Waits are on events with time bounds; expiry, delays and long-poll deadlines use short configured
values instead of sleeping through RocketMQ's defaults.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from rocketq.broker import Broker, BrokerConfig
from rocketq.embedded import EmbeddedCluster
from rocketq.models import MessageQueue
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode, calls, decode_messages
from rocketq.protocol.bodies import (
    ConsumerConnection,
    ConsumeStats,
    GetConsumerListByGroupResponseBody,
    LockBatchRequestBody,
    LockBatchResponseBody,
    TopicRouteData,
    TopicStatsTable,
)
from rocketq.protocol.codes import RocketQRequestCode
from rocketq.protocol.headers import (
    ConsumerSendMsgBackRequestHeader,
    CreateTopicRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumerListByGroupRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumeStatsRequestHeader,
    GetMaxOffsetRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicStatsInfoRequestHeader,
    QueryConsumerOffsetRequestHeader,
    QueryMessageRequestHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketq.remoting import RemotingClient, RemotingConnection, run

from .brokerkit import batch_request, heartbeat_request, pull_request, send_request

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

GROUP = "test_consumer_group"


def arun(coro: Coroutine[Any, Any, Any]) -> Any:
    return run(coro)


@asynccontextmanager
async def broker_at(data_dir: Path, **overrides: Any) -> AsyncIterator[Broker]:
    config = BrokerConfig(host="127.0.0.1", port=0, data_dir=data_dir, **overrides)
    async with Broker(config) as broker:
        yield broker


async def create_topic(client: RemotingClient, addr: str, topic: str, queues: int = 2) -> None:
    header = CreateTopicRequestHeader(
        topic=topic,
        default_topic="TBW102",
        read_queue_nums=queues,
        write_queue_nums=queues,
        perm=6,
        topic_filter_type="SINGLE_TAG",
        topic_sys_flag=0,
        order=False,
    )
    resp = await client.invoke(
        addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext_fields())
    )
    assert resp.code == ResponseCode.SUCCESS, resp.remark


def test_send_then_pull_single_v1_v2_and_batch(tmp_path: Path) -> None:
    async def main() -> None:
        async with broker_at(tmp_path) as broker, RemotingClient() as client:
            addr = broker.address
            await create_topic(client, addr, "T1")
            r1 = await client.invoke(addr, send_request("T1", b"hello", tags="TagA", properties={"k": "v"}))
            assert r1.code == ResponseCode.SUCCESS, r1.remark
            assert list(r1.ext_fields) == ["queueId", "TRACE_ON", "MSG_REGION", "msgId", "queueOffset"]
            assert r1.ext_fields["queueOffset"] == "0"
            assert r1.ext_fields["queueId"] == "0"
            r2 = await client.invoke(addr, send_request("T1", b"legacy", code=RequestCode.SEND_MESSAGE))
            assert r2.code == ResponseCode.SUCCESS
            assert r2.ext_fields["queueOffset"] == "1"
            r3 = await client.invoke(addr, batch_request("T1", [b"b0", b"b1", b"b2"]))
            assert r3.code == ResponseCode.SUCCESS, r3.remark
            ids = r3.ext_fields["msgId"].split(",")
            assert len(ids) == 3
            assert r3.ext_fields["queueOffset"] == "2"

            resp = await client.invoke(addr, pull_request(GROUP, "T1", 0, 0))
            assert resp.code == ResponseCode.SUCCESS
            assert resp.remark == "FOUND"
            assert resp.ext_fields["nextBeginOffset"] == "5"
            assert resp.ext_fields["maxOffset"] == "5"
            msgs = decode_messages(resp.body)
            assert [m.body for m in msgs] == [b"hello", b"legacy", b"b0", b"b1", b"b2"]
            assert msgs[0].properties["CLUSTER"] == "DefaultCluster"
            assert "WAIT" not in msgs[0].properties
            assert msgs[0].properties["k"] == "v"
            assert msgs[0].offset_msg_id == r1.ext_fields["msgId"]
            assert [m.offset_msg_id for m in msgs[2:]] == ids
            assert msgs[0].store_host.port == broker.port

            # tag filter from the request's subscription
            tagged = await client.invoke(addr, pull_request(GROUP, "T1", 0, 0, subscription="TagA || TagX"))
            assert [m.body for m in decode_messages(tagged.body)] == [b"hello"]
            none = await client.invoke(addr, pull_request(GROUP, "T1", 0, 1, subscription="TagX"))
            assert none.code == ResponseCode.PULL_RETRY_IMMEDIATELY
            assert none.ext_fields["nextBeginOffset"] == "5"
            at_end = await client.invoke(addr, pull_request(GROUP, "T1", 0, 5))
            assert at_end.code == ResponseCode.PULL_NOT_FOUND
            assert at_end.remark == "OFFSET_OVERFLOW_ONE"
            moved = await client.invoke(addr, pull_request(GROUP, "T1", 0, 105))
            assert moved.code == ResponseCode.PULL_OFFSET_MOVED

    arun(main())


def test_long_polling_answers_on_arrival_and_at_deadline(tmp_path: Path) -> None:
    async def main() -> None:
        async with broker_at(tmp_path) as broker, RemotingClient() as client, RemotingClient() as producer:
            addr = broker.address
            await create_topic(client, addr, "LP", 1)
            started = time.monotonic()
            held = asyncio.ensure_future(
                client.invoke(addr, pull_request(GROUP, "LP", 0, 0, suspend_ms=15000), 20)
            )
            for _ in range(100):
                if broker.held_pulls:
                    break
                await asyncio.sleep(0.01)
            assert broker.held_pulls == 1
            assert not held.done()
            sent = await producer.invoke(addr, send_request("LP", b"wake"))
            assert sent.code == ResponseCode.SUCCESS
            resp = await asyncio.wait_for(held, 2.0)
            assert time.monotonic() - started < 3.0  # far below the 15 s suspension
            assert resp.code == ResponseCode.SUCCESS
            assert [m.body for m in decode_messages(resp.body)] == [b"wake"]

            started = time.monotonic()
            timed = await client.invoke(addr, pull_request(GROUP, "LP", 0, 1, suspend_ms=300), 5)
            waited = time.monotonic() - started
            assert timed.code == ResponseCode.PULL_NOT_FOUND
            assert 0.25 <= waited < 2.0
            assert broker.held_pulls == 0

    arun(main())


class Notices:
    def __init__(self) -> None:
        self.groups: list[str] = []
        self.event = asyncio.Event()

    def handler(self, conn: RemotingConnection, request: RemotingCommand) -> None:
        self.groups.append(request.ext_fields["consumerGroup"])
        self.event.set()

    async def wait(self, timeout: float = 3.0) -> None:
        await asyncio.wait_for(self.event.wait(), timeout)
        self.event.clear()


def _client_with_notices() -> tuple[RemotingClient, Notices]:
    client = RemotingClient()
    notices = Notices()
    client.register_handler(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, notices.handler)
    return client, notices


def test_heartbeat_notifies_members_and_close_and_unregister_notify_the_rest(tmp_path: Path) -> None:
    async def main() -> None:
        async with broker_at(tmp_path) as broker:
            addr = broker.address
            c1, n1 = _client_with_notices()
            c2, n2 = _client_with_notices()
            async with c1, c2:
                await create_topic(c1, addr, "HB")
                r = await c1.invoke(addr, heartbeat_request("client-1", GROUP, {"HB": "*"}))
                assert r.code == ResponseCode.SUCCESS
                await n1.wait()
                r = await c2.invoke(addr, heartbeat_request("client-2", GROUP, {"HB": "*"}))
                await n1.wait()
                await n2.wait()
                ids = await c1.invoke(
                    addr,
                    RemotingCommand.request(
                        RequestCode.GET_CONSUMER_LIST_BY_GROUP,
                        GetConsumerListByGroupRequestHeader(consumer_group=GROUP).to_ext_fields(),
                    ),
                )
                assert GetConsumerListByGroupResponseBody.decode(ids.body).consumer_id_list == (
                    "client-1",
                    "client-2",
                )
                # the retry topic was created by the heartbeat
                assert broker.topics.select(f"%RETRY%{GROUP}") is not None
                # a repeated heartbeat changes nothing: no notice
                await c1.invoke(addr, heartbeat_request("client-1", GROUP, {"HB": "*"}))
                assert not n1.event.is_set()
                # unregister of client-2 notifies client-1
                unreg = UnregisterClientRequestHeader(client_id="client-2", consumer_group=GROUP)
                r = await c2.invoke(
                    addr, RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, unreg.to_ext_fields())
                )
                assert r.code == ResponseCode.SUCCESS
                await n1.wait()
                await c2.invoke(addr, heartbeat_request("client-2", GROUP, {"HB": "*"}))
                await n1.wait()
            # c2 closed with c1: the broker notices the close; nothing left to assert on c1 (closed too)
            for _ in range(100):
                if GROUP not in broker.consumers:
                    break
                await asyncio.sleep(0.01)
            assert GROUP not in broker.consumers

    arun(main())


def test_a_notification_window_sends_one_notice_per_member_to_the_members_at_its_end(tmp_path: Path) -> None:
    """``notify_coalesce_window``: three joins and a leave inside one window are one notice to each
    member the group has when it ends (latest wins: the one that left is not told); a later
    change opens a new window."""

    def unregister(client_id: str) -> RemotingCommand:
        header = UnregisterClientRequestHeader(client_id=client_id, consumer_group=GROUP)
        return RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, header.to_ext_fields())

    async def main() -> None:
        async with broker_at(tmp_path, notify_coalesce_window=0.5) as broker:
            addr = broker.address
            (c1, n1), (c2, n2), (c3, n3) = (_client_with_notices() for _ in range(3))
            async with c1, c2, c3:
                for i, c in enumerate((c1, c2, c3), 1):
                    r = await c.invoke(addr, heartbeat_request(f"client-{i}", GROUP, {"CW": "*"}))
                    assert r.code == ResponseCode.SUCCESS
                assert (await c2.invoke(addr, unregister("client-2"))).code == ResponseCode.SUCCESS
                await n1.wait()
                await n3.wait()
                assert broker.consumers.client_ids(GROUP) == ["client-1", "client-3"]
                assert broker.coalescer is not None
                assert broker.coalescer.stats.changes == 4
                assert broker.coalescer.stats.rounds == 1
                # the next change, after the window: a second round, to client-1 only
                assert (await c3.invoke(addr, unregister("client-3"))).code == ResponseCode.SUCCESS
                await n1.wait()
                assert (n1.groups, n2.groups, n3.groups) == ([GROUP, GROUP], [], [GROUP])
                assert broker.coalescer.stats.rounds == 2

    arun(main())


def test_connection_close_notifies_the_remaining_member(tmp_path: Path) -> None:
    async def main() -> None:
        async with broker_at(tmp_path) as broker:
            addr = broker.address
            c1, n1 = _client_with_notices()
            c2, _ = _client_with_notices()
            async with c1:
                await c1.invoke(addr, heartbeat_request("client-1", GROUP, {"X": "*"}))
                await n1.wait()
                await c2.invoke(addr, heartbeat_request("client-2", GROUP, {"X": "*"}))
                await n1.wait()
                await c2.close()
                await n1.wait()
                assert broker.consumers.client_ids(GROUP) == ["client-1"]

    arun(main())


def test_heartbeat_expiry_with_short_timeouts_notifies(tmp_path: Path) -> None:
    async def main() -> None:
        async with broker_at(tmp_path, channel_expired_timeout=0.3, client_scan_interval=0.1) as broker:
            addr = broker.address
            c1, n1 = _client_with_notices()
            c2, _ = _client_with_notices()
            async with c1, c2:
                await c2.invoke(addr, heartbeat_request("client-2", GROUP, {"X": "*"}))
                await c1.invoke(addr, heartbeat_request("client-1", GROUP, {"X": "*"}))
                await n1.wait()
                # keep client-1 alive, let client-2 go silent
                deadline = time.monotonic() + 3.0
                while "client-2" in broker.consumers.client_ids(GROUP):
                    assert time.monotonic() < deadline
                    await c1.invoke(addr, heartbeat_request("client-1", GROUP, {"X": "*"}))
                    await asyncio.sleep(0.1)
                await n1.wait()
                assert broker.consumers.client_ids(GROUP) == ["client-1"]

    arun(main())


def test_duplicate_client_id_is_visible(tmp_path: Path) -> None:
    async def main() -> None:
        async with broker_at(tmp_path) as broker, RemotingClient() as c1, RemotingClient() as c2:
            addr = broker.address
            await c1.invoke(addr, heartbeat_request("same-id", GROUP, {"D": "*"}))
            await c2.invoke(addr, heartbeat_request("same-id", GROUP, {"D": "*"}))
            req = RemotingCommand.request(
                RequestCode.GET_CONSUMER_CONNECTION_LIST,
                GetConsumerConnectionListRequestHeader(consumer_group=GROUP).to_ext_fields(),
            )
            conns = ConsumerConnection.decode((await c1.invoke(addr, req)).body)
            assert [c.client_id for c in conns.connection_set] == ["same-id", "same-id"]
            assert len({c.client_addr for c in conns.connection_set}) == 2
            code = RocketQRequestCode.QUERY_DUPLICATE_CLIENT_IDS
            query = RemotingCommand.request(code, {"consumerGroup": GROUP})
            dup = await c1.invoke(addr, query)
            body = json.loads(dup.body)
            assert body["duplicates"][0]["clientId"] == "same-id"
            assert len(body["duplicates"][0]["addresses"]) == 2

    arun(main())


def test_locks(tmp_path: Path) -> None:
    async def main() -> None:
        async with broker_at(tmp_path) as broker, RemotingClient() as client:
            addr = broker.address
            mqs = (
                MessageQueue("L", broker.config.broker_name, 0),
                MessageQueue("L", broker.config.broker_name, 1),
            )

            async def lock(client_id: str) -> tuple[MessageQueue, ...]:
                body = LockBatchRequestBody(consumer_group=GROUP, client_id=client_id, mq_set=mqs).encode()
                resp = await client.invoke(
                    addr, RemotingCommand.request(RequestCode.LOCK_BATCH_MQ, None, body)
                )
                return LockBatchResponseBody.decode(resp.body).lock_ok_mq_set

            assert await lock("a") == mqs
            assert await lock("b") == ()
            body = LockBatchRequestBody(consumer_group=GROUP, client_id="a", mq_set=mqs[:1]).encode()
            resp = await client.invoke(addr, RemotingCommand.request(RequestCode.UNLOCK_BATCH_MQ, None, body))
            assert resp.code == ResponseCode.SUCCESS
            assert await lock("b") == mqs[:1]

    arun(main())


def test_delay_levels_deliver_on_time(tmp_path: Path) -> None:
    async def main() -> None:
        async with (
            broker_at(tmp_path, message_delay_level="200ms 400ms 600ms") as broker,
            RemotingClient() as client,
        ):
            addr = broker.address
            await create_topic(client, addr, "DL", 1)
            sent_at = time.monotonic()
            r = await client.invoke(addr, send_request("DL", b"later", properties={"DELAY": "1"}))
            assert r.code == ResponseCode.SUCCESS
            assert broker.store.max_offset("SCHEDULE_TOPIC_XXXX", 0) == 1
            assert broker.store.max_offset("DL", 0) == 0
            held = await client.invoke(addr, pull_request(GROUP, "DL", 0, 0, suspend_ms=5000), 10)
            waited = time.monotonic() - sent_at
            assert held.code == ResponseCode.SUCCESS
            assert 0.15 <= waited < 2.0
            (msg,) = decode_messages(held.body)
            assert msg.topic == "DL"
            assert msg.body == b"later"
            assert msg.properties["REAL_TOPIC"] == "DL"
            assert msg.properties["REAL_QID"] == "0"

    arun(main())


def test_send_back_retries_then_dead_letters(tmp_path: Path) -> None:
    async def main() -> None:
        levels = "100ms 100ms 100ms 100ms 100ms"
        async with broker_at(tmp_path, message_delay_level=levels) as broker, RemotingClient() as client:
            addr = broker.address
            await create_topic(client, addr, "RT", 1)
            await client.invoke(addr, heartbeat_request("c-1", GROUP, {"RT": "*"}))
            sent = await client.invoke(addr, send_request("RT", b"fail me", tags="T"))
            offset = int(sent.ext_fields["msgId"][-16:], 16)
            back = ConsumerSendMsgBackRequestHeader(
                offset=offset, group=GROUP, delay_level=0, max_reconsume_times=2
            )
            r = await client.invoke(
                addr, RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, back.to_ext_fields())
            )
            assert r.code == ResponseCode.SUCCESS, r.remark
            retry = f"%RETRY%{GROUP}"
            resp = await client.invoke(addr, pull_request(GROUP, retry, 0, 0, suspend_ms=3000), 5)
            assert resp.code == ResponseCode.SUCCESS
            (msg,) = decode_messages(resp.body)
            assert msg.topic == retry
            assert msg.reconsume_times == 1
            assert msg.body == b"fail me"
            assert msg.properties["RETRY_TOPIC"] == "RT"
            assert msg.properties["ORIGIN_MESSAGE_ID"] == sent.ext_fields["msgId"]
            assert msg.properties["DELAY"] == "3"
            # second failure: reconsume 1 -> delay level 4; third: reconsume 2 >= max 2 -> DLQ
            back2 = replace(back, offset=msg.commit_log_offset)
            await client.invoke(
                addr, RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, back2.to_ext_fields())
            )
            resp = await client.invoke(addr, pull_request(GROUP, retry, 0, 1, suspend_ms=3000), 5)
            (msg2,) = decode_messages(resp.body)
            assert msg2.reconsume_times == 2
            back3 = replace(back, offset=msg2.commit_log_offset)
            await client.invoke(
                addr, RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, back3.to_ext_fields())
            )
            dlq = f"%DLQ%{GROUP}"
            assert broker.store.max_offset(dlq, 0) == 1
            resp = await client.invoke(addr, pull_request(GROUP, dlq, 0, 0))
            (dead,) = decode_messages(resp.body)
            assert dead.body == b"fail me"
            assert dead.reconsume_times == 3
            assert dead.properties["ORIGIN_MESSAGE_ID"] == sent.ext_fields["msgId"]

    arun(main())


def test_auto_create_on_and_off_and_bad_sends(tmp_path: Path) -> None:
    async def main() -> None:
        async with broker_at(tmp_path / "on") as broker, RemotingClient() as client:
            r = await client.invoke(broker.address, send_request("AutoMade", b"x"))
            assert r.code == ResponseCode.SUCCESS
            config = broker.topics.select("AutoMade")
            assert config is not None
            assert config.write_queue_nums == 4
            big = await client.invoke(
                broker.address, send_request("AutoMade", b"x" * (4 * 1024 * 1024 + 1)), 10
            )
            assert big.code == ResponseCode.MESSAGE_ILLEGAL
            assert "maxMessageSize" in (big.remark or "")
            bad = await client.invoke(broker.address, send_request("bad topic", b"x"))
            assert bad.code == ResponseCode.SYSTEM_ERROR
            assert "illegal characters" in (bad.remark or "")
            sched = await client.invoke(broker.address, send_request("SCHEDULE_TOPIC_XXXX", b"x"))
            assert sched.code == ResponseCode.NO_PERMISSION
            q = await client.invoke(broker.address, send_request("AutoMade", b"x", queue_id=99))
            assert q.code == ResponseCode.SYSTEM_ERROR
            assert "queueId[99] is illegal" in (q.remark or "")
            # the broker keeps serving after all that
            ok = await client.invoke(broker.address, send_request("AutoMade", b"y"))
            assert ok.code == ResponseCode.SUCCESS
        async with (
            broker_at(tmp_path / "off", auto_create_topic_enable=False) as broker,
            RemotingClient() as client,
        ):
            r = await client.invoke(broker.address, send_request("NotMade", b"x"))
            assert r.code == ResponseCode.TOPIC_NOT_EXIST
            assert r.remark == (
                "topic[NotMade] not exist, apply first please!\nSee http://rocketmq.apache.org/docs/faq/ "
                "for further details."
            )

    arun(main())


def test_bad_requests_get_clear_errors(tmp_path: Path) -> None:
    async def main() -> None:
        async with broker_at(tmp_path) as broker, RemotingClient() as client:
            addr = broker.address
            r = await client.invoke(addr, RemotingCommand.request(9999, {}))
            assert r.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
            r = await client.invoke(
                addr, RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, {"topic": "T"})
            )
            assert r.code == ResponseCode.SYSTEM_ERROR
            assert "consumerGroup" in (r.remark or "")
            r = await client.invoke(addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, {"topic": "T"}))
            assert r.code == ResponseCode.SYSTEM_ERROR
            r = await client.invoke(addr, RemotingCommand.request(RequestCode.HEART_BEAT, None, b"{not json"))
            assert r.code == ResponseCode.SYSTEM_ERROR
            r = await client.invoke(addr, pull_request(GROUP, "NoSuchTopic", 0, 0))
            assert r.code == ResponseCode.TOPIC_NOT_EXIST
            # a connection sending garbage is closed; others go on
            reader, writer = await asyncio.open_connection("127.0.0.1", broker.port)
            writer.write(b"\x00\x00\x00\x08\xff\xff\xff\xffgarbage!")
            await writer.drain()
            assert await asyncio.wait_for(reader.read(), 3.0) == b""
            writer.close()
            r = await client.invoke(addr, send_request("Fine", b"ok"))
            assert r.code == ResponseCode.SUCCESS

    arun(main())


def test_offsets_admin_and_stats(tmp_path: Path) -> None:
    async def main() -> None:
        async with broker_at(tmp_path) as broker, RemotingClient() as client:
            addr = broker.address
            await create_topic(client, addr, "AD", 2)
            for i in range(3):
                await client.invoke(addr, send_request("AD", b"m%d" % i, queue_id=0))
            q = QueryConsumerOffsetRequestHeader(consumer_group=GROUP, topic="AD", queue_id=0)
            r = await client.invoke(
                addr, RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, q.to_ext_fields())
            )
            assert r.ext_fields == {"offset": "0"}
            u = UpdateConsumerOffsetRequestHeader(
                consumer_group=GROUP, topic="AD", queue_id=0, commit_offset=2
            )
            await client.invoke(
                addr, RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, u.to_ext_fields())
            )
            r = await client.invoke(
                addr, RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, q.to_ext_fields())
            )
            assert r.ext_fields == {"offset": "2"}
            # the piggy-backed commit offset of a pull
            await client.invoke(addr, pull_request(GROUP, "AD", 0, 2, commit_offset=3))
            assert broker.store.consumer_offsets.query_offset(GROUP, "AD", 0) == 3
            m = GetMaxOffsetRequestHeader(topic="AD", queue_id=0)
            r = await client.invoke(
                addr, RemotingCommand.request(RequestCode.GET_MAX_OFFSET, m.to_ext_fields())
            )
            assert r.ext_fields == {"offset": "3"}
            st = GetTopicStatsInfoRequestHeader(topic="AD")
            r = await client.invoke(
                addr, RemotingCommand.request(RequestCode.GET_TOPIC_STATS_INFO, st.to_ext_fields())
            )
            stats = TopicStatsTable.decode(r.body)
            assert stats.offset_table[MessageQueue("AD", "broker-a", 0)].max_offset == 3
            cs = GetConsumeStatsRequestHeader(consumer_group=GROUP, topic="AD")
            r = await client.invoke(
                addr, RemotingCommand.request(RequestCode.GET_CONSUME_STATS, cs.to_ext_fields())
            )
            consume = ConsumeStats.decode(r.body)
            assert consume.offset_table[MessageQueue("AD", "broker-a", 0)].consumer_offset == 3
            assert consume.total_diff() == 0
            r = await client.invoke(addr, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO, None))
            assert r.code == ResponseCode.SUCCESS
            assert b"commitLogMaxOffset" in r.body
            d = await client.invoke(
                addr, RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "AD"})
            )
            assert d.code == ResponseCode.SUCCESS
            assert broker.topics.select("AD") is None

    arun(main())


def test_consumer_running_info_is_relayed_to_the_client(tmp_path: Path) -> None:
    async def main() -> None:
        async with broker_at(tmp_path) as broker:
            consumer = RemotingClient()

            def answer(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
                assert request.ext_fields["clientId"] == "runner"
                return request.response(body=b'{"properties":{"x":"1"}}')

            consumer.register_handler(RequestCode.GET_CONSUMER_RUNNING_INFO, answer)
            async with consumer, RemotingClient() as admin:
                await consumer.invoke(broker.address, heartbeat_request("runner", GROUP, {"R": "*"}))
                h = GetConsumerRunningInfoRequestHeader(consumer_group=GROUP, client_id="runner")
                r = await admin.invoke(
                    broker.address,
                    RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, h.to_ext_fields()),
                )
                assert r.code == ResponseCode.SUCCESS
                assert r.body == b'{"properties":{"x":"1"}}'
                h2 = replace(h, client_id="nobody")
                r = await admin.invoke(
                    broker.address,
                    RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, h2.to_ext_fields()),
                )
                assert r.code == ResponseCode.SYSTEM_ERROR
                assert "not online" in (r.remark or "")

    arun(main())


def test_registration_routes_and_two_brokers_in_one_cluster(tmp_path: Path) -> None:
    async def main() -> None:
        async with EmbeddedCluster(data_dir=tmp_path / "a", namesrv_port=0, broker_port=0) as cluster:
            second = BrokerConfig(
                port=0, broker_name="broker-b", data_dir=tmp_path / "b", namesrv_addrs=(cluster.namesrv_addr,)
            )
            async with Broker(second) as broker_b, RemotingClient() as client:
                for addr in (cluster.broker_addr, broker_b.address):
                    await create_topic(client, addr, "Both", 2)
                route_req = RemotingCommand.request(
                    RequestCode.GET_ROUTEINFO_BY_TOPIC,
                    GetRouteInfoRequestHeader(topic="Both").to_ext_fields(),
                )
                for _ in range(100):  # registration after a topic change is asynchronous
                    r = await client.invoke(cluster.namesrv_addr, route_req)
                    if r.code == ResponseCode.SUCCESS and len(TopicRouteData.decode(r.body).queue_datas) == 2:
                        break
                    await asyncio.sleep(0.05)
                route = TopicRouteData.decode(r.body)
                assert sorted(q.broker_name for q in route.queue_datas) == ["broker-a", "broker-b"]
                addrs = {b.broker_name: b.broker_addrs[0] for b in route.broker_datas}
                assert addrs == {"broker-a": cluster.broker_addr, "broker-b": broker_b.address}
            # broker-b unregistered at close: its queues leave the route
            r = await client_route(cluster.namesrv_addr, "Both")
            assert [q.broker_name for q in r.queue_datas] == ["broker-a"]

    async def client_route(addr: str, topic: str) -> TopicRouteData:
        async with RemotingClient() as c:
            req = RemotingCommand.request(
                RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic).to_ext_fields()
            )
            return TopicRouteData.decode((await c.invoke(addr, req)).body)

    arun(main())


def test_restart_keeps_messages_offsets_and_topics(tmp_path: Path) -> None:
    async def main() -> None:
        async with broker_at(tmp_path, flush="sync") as broker, RemotingClient() as client:
            await create_topic(client, broker.address, "Keep", 1)
            for i in range(5):
                r = await client.invoke(broker.address, send_request("Keep", b"k%d" % i))
                assert r.code == ResponseCode.SUCCESS
            # every answer came after its fsync: five one at a time took five group commits
            runtime = calls.get_broker_runtime_info().parse(
                await client.invoke(broker.address, calls.get_broker_runtime_info().request)
            )
            assert runtime["flushDiskType"] == "SYNC_FLUSH"
            assert int(runtime["commitLogGroupCommitFsyncs"]) >= 5
            u = UpdateConsumerOffsetRequestHeader(
                consumer_group=GROUP, topic="Keep", queue_id=0, commit_offset=3
            )
            await client.invoke(
                broker.address, RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, u.to_ext_fields())
            )
        async with broker_at(tmp_path) as broker, RemotingClient() as client:
            assert broker.topics.select("Keep") is not None
            r = await client.invoke(broker.address, pull_request(GROUP, "Keep", 0, 0))
            assert [m.body for m in decode_messages(r.body)] == [b"k%d" % i for i in range(5)]
            q = QueryConsumerOffsetRequestHeader(consumer_group=GROUP, topic="Keep", queue_id=0)
            r = await client.invoke(
                broker.address, RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, q.to_ext_fields())
            )
            assert r.ext_fields == {"offset": "3"}

    arun(main())


def test_compressed_and_periodic_registration(tmp_path: Path) -> None:
    async def main() -> None:
        base = BrokerConfig(compressed_register=True, register_period=0.2, register_initial_delay=0.0)
        async with EmbeddedCluster(data_dir=tmp_path, namesrv_port=0, broker_port=0, broker=base) as cluster:
            assert cluster.broker is not None
            registrar = cluster.broker.registrar
            assert registrar is not None
            first = registrar.registrations
            for _ in range(100):
                if registrar.registrations >= first + 2:
                    break
                await asyncio.sleep(0.05)
            assert registrar.registrations >= first + 2
            async with RemotingClient() as client:
                fields = GetRouteInfoRequestHeader(topic="TBW102").to_ext_fields()
                req = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, fields)
                route = TopicRouteData.decode((await client.invoke(cluster.namesrv_addr, req)).body)
                assert route.broker_datas[0].broker_addrs[0] == cluster.broker_addr
                assert route.queue_datas[0].write_queue_nums == 8

    arun(main())


def test_query_message_by_key_and_unique_key(tmp_path: Path) -> None:
    async def main() -> None:
        async with broker_at(tmp_path) as broker, RemotingClient() as client:
            addr = broker.address
            await create_topic(client, addr, "QM", 2)
            await client.invoke(
                addr, send_request("QM", b"a", properties={"KEYS": "k1 k2", "UNIQ_KEY": "U1"})
            )
            await client.invoke(addr, send_request("QM", b"b", queue_id=1, properties={"KEYS": "k2"}))

            async def query(key: str, unique: bool = False) -> RemotingCommand:
                h = QueryMessageRequestHeader(
                    topic="QM", key=key, max_num=32, begin_timestamp=0, end_timestamp=2**63 - 1
                )
                fields = h.to_ext_fields(extra={"_UNIQUE_KEY_QUERY": "true" if unique else "false"})
                return await client.invoke(addr, RemotingCommand.request(RequestCode.QUERY_MESSAGE, fields))

            assert sorted(m.body for m in decode_messages((await query("k2")).body)) == [b"a", b"b"]
            assert [m.body for m in decode_messages((await query("k1")).body)] == [b"a"]
            assert [m.body for m in decode_messages((await query("U1", unique=True)).body)] == [b"a"]
            missing = await query("nope")
            assert missing.code == ResponseCode.QUERY_NOT_FOUND
            assert missing.remark == "can not find message, maybe time range not correct"

    arun(main())


def test_a_held_pull_ignores_messages_its_filter_refuses(tmp_path: Path) -> None:
    async def main() -> None:
        async with broker_at(tmp_path) as broker, RemotingClient() as client, RemotingClient() as producer:
            addr = broker.address
            await create_topic(client, addr, "TF", 1)
            held = asyncio.ensure_future(
                client.invoke(
                    addr, pull_request(GROUP, "TF", 0, 0, suspend_ms=10000, subscription="TagA"), 15
                )
            )
            while not broker.held_pulls:
                await asyncio.sleep(0.01)
            await producer.invoke(addr, send_request("TF", b"not for me", tags="TagB"))
            await asyncio.sleep(0.2)
            assert not held.done()
            assert broker.held_pulls == 1
            await producer.invoke(addr, send_request("TF", b"mine", tags="TagA"))
            resp = await asyncio.wait_for(held, 2.0)
            assert resp.code == ResponseCode.SUCCESS
            assert [m.body for m in decode_messages(resp.body)] == [b"mine"]

    arun(main())
