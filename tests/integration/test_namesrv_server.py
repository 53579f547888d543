"""The name server on a real loopback socket, driven by rocketq's own remoting client.

Brokers are played by :class:`RemotingClient` connections sending REGISTER_BROKER built with the
protocol layer's encoders; time-dependent behaviour (expiry) runs on an injected clock, and waits
are on connection events, not sleeps.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from rocketq.errors import RemotingError
from rocketq.namesrv import ORDER_TOPIC_CONFIG, NameServer, NamesrvConfig, topic_not_exist_remark
from rocketq.protocol import FrameDecoder, RemotingCommand, RequestCode, ResponseCode, encode_frame
from rocketq.protocol.bodies import (
    ClusterInfo,
    DataVersion,
    KVTable,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicList,
    TopicRouteData,
)
from rocketq.protocol.codes import MQVersion
from rocketq.protocol.headers import (
    GetKVConfigRequestHeader,
    GetRouteInfoRequestHeader,
    PutKVConfigRequestHeader,
    QueryDataVersionRequestHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnRegisterBrokerRequestHeader,
)
from rocketq.remoting import ConnectionListener, RemotingClient, RemotingConnection, run
from rocketq.remoting.loop import uvloop_available

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

CLUSTER = "DefaultCluster"


@pytest.fixture(
    params=[
        "asyncio",
        pytest.param(
            "uvloop",
            marks=pytest.mark.skipif(
                not uvloop_available(),
                reason="uvloop not installed (Windows, or uninstalled); asyncio's loop runs the same cases",
            ),
        ),
    ]
)
def arun(request: pytest.FixtureRequest) -> Callable[[Coroutine[Any, Any, Any]], Any]:
    use_uvloop = request.param == "uvloop"

    def runner(coro: Coroutine[Any, Any, Any]) -> Any:
        return run(coro, use_uvloop=use_uvloop)

    return runner


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Closed(ConnectionListener):
    """Sets an event per closed server-side connection (after the name server's own listener ran)."""

    def __init__(self) -> None:
        self.closed: asyncio.Queue[RemotingConnection] = asyncio.Queue()

    def on_close(self, conn: RemotingConnection) -> None:
        self.closed.put_nowait(conn)

    async def next(self) -> RemotingConnection:
        return await asyncio.wait_for(self.closed.get(), timeout=10)


def registration(
    broker_name: str,
    broker_addr: str,
    topics: dict[str, int],
    *,
    counter: int = 1,
    broker_id: int = 0,
    compressed: bool = False,
    filter_servers: tuple[str, ...] = (),
) -> RemotingCommand:
    table = {t: TopicConfig(topic_name=t, read_queue_nums=n, write_queue_nums=n) for t, n in topics.items()}
    body = RegisterBrokerBody(
        topic_config_serialize_wrapper=TopicConfigSerializeWrapper(
            topic_config_table=table, data_version=DataVersion(timestamp=1_700_000_000_000, counter=counter)
        ),
        filter_server_list=filter_servers,
    ).encode(compress=compressed)
    header = RegisterBrokerRequestHeader(
        broker_name=broker_name,
        broker_addr=broker_addr,
        cluster_name=CLUSTER,
        ha_server_addr=broker_addr.replace(":109", ":119"),
        broker_id=broker_id,
        compressed=compressed,
    )
    return RemotingCommand.request(RequestCode.REGISTER_BROKER, header.to_ext_fields(), body)


def route_request(topic: str, *, version: int = MQVersion.V4_9_4) -> RemotingCommand:
    ext = GetRouteInfoRequestHeader(topic=topic).to_ext_fields()
    return RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, ext, version=version)


async def ask_route(client: RemotingClient, addr: str, topic: str) -> TopicRouteData | None:
    response = await client.invoke(addr, route_request(topic), timeout=5)
    if response.code == ResponseCode.TOPIC_NOT_EXIST:
        assert response.remark == topic_not_exist_remark(topic)
        return None
    assert response.code == ResponseCode.SUCCESS, response.remark
    return TopicRouteData.decode(response.body)


def test_register_then_route_then_connection_close_removes_it_at_once(arun: Any) -> None:
    async def scenario() -> None:
        async with NameServer(NamesrvConfig(port=0)) as ns:
            closed = Closed()
            ns.remoting.add_listener(closed)
            addr = ns.address
            async with RemotingClient() as broker_a, RemotingClient() as broker_b, RemotingClient() as client:
                ok = await broker_a.invoke(
                    addr, registration("broker-a", "127.0.0.1:10911", {"Shared": 4, "A": 2})
                )
                assert ok.code == ResponseCode.SUCCESS
                assert ok.ext_fields == {}  # a master learns no master address
                assert ok.body == b""  # no ORDER_TOPIC_CONFIG namespace yet
                ok = await broker_b.invoke(
                    addr, registration("broker-b", "127.0.0.1:10921", {"Shared": 8}, compressed=True)
                )
                assert ok.code == ResponseCode.SUCCESS

                route = await ask_route(client, addr, "Shared")
                assert route is not None
                assert [(q.broker_name, q.read_queue_nums) for q in route.queue_datas] == [
                    ("broker-b", 8),
                    ("broker-a", 4),
                ]
                assert {b.broker_name: dict(b.broker_addrs) for b in route.broker_datas} == {
                    "broker-a": {0: "127.0.0.1:10911"},
                    "broker-b": {0: "127.0.0.1:10921"},
                }
                assert await ask_route(client, addr, "Missing") is None

                # broker-a's process dies: its connection closes, its routes go at once.
                broker_a.close_connection(addr)
                await closed.next()
                route = await ask_route(client, addr, "Shared")
                assert route is not None
                assert [q.broker_name for q in route.queue_datas] == ["broker-b"]
                assert await ask_route(client, addr, "A") is None
                info = ClusterInfo.decode((await client.invoke(addr, cluster_info_request())).body)
                assert list(info.broker_addr_table) == ["broker-b"]

    arun(scenario())


def cluster_info_request() -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO)


def test_slave_registration_learns_master_and_unregister(arun: Any) -> None:
    async def scenario() -> None:
        async with NameServer(NamesrvConfig(port=0)) as ns, RemotingClient() as broker:
            addr = ns.address
            await broker.invoke(addr, registration("broker-a", "127.0.0.1:10911", {"T": 4}))
            slave = await broker.invoke(addr, registration("broker-a", "127.0.0.1:10915", {}, broker_id=1))
            result = RegisterBrokerResponseHeader.from_ext_fields(slave.ext_fields)
            assert result == RegisterBrokerResponseHeader(
                master_addr="127.0.0.1:10911", ha_server_addr="127.0.0.1:11911"
            )
            header = UnRegisterBrokerRequestHeader(
                broker_name="broker-a", broker_addr="127.0.0.1:10911", cluster_name=CLUSTER, broker_id=0
            )
            done = await broker.invoke(
                addr, RemotingCommand.request(RequestCode.UNREGISTER_BROKER, header.to_ext_fields())
            )
            assert done.code == ResponseCode.SUCCESS
            route = ns.routes.topic_route("T")
            assert route is not None  # the slave still serves broker-a
            assert dict(route.broker_datas[0].broker_addrs) == {1: "127.0.0.1:10915"}

    arun(scenario())


def test_expired_broker_is_dropped_and_its_connection_closed(arun: Any) -> None:
    async def scenario() -> None:
        clock = FakeClock()
        config = NamesrvConfig(port=0, scan_initial_delay=0.0, scan_interval=0.01)
        async with (
            NameServer(config, clock=clock) as ns,
            RemotingClient() as broker,
            RemotingClient() as client,
        ):
            closed = Closed()
            ns.remoting.add_listener(closed)
            addr = ns.address
            await broker.invoke(addr, registration("broker-a", "127.0.0.1:10911", {"T": 4}))
            broker_conn = broker.connections[addr]
            clock.now += 120.0  # exactly the limit: still alive
            assert ns.scan_now() == 0
            assert await ask_route(client, addr, "T") is not None
            clock.now += 0.5
            await closed.next()  # the periodic scan closed the broker's connection ...
            assert await ask_route(client, addr, "T") is None  # ... and dropped its routes
            await asyncio.wait_for(broker_conn.wait_closed(), timeout=10)
            assert broker_conn.is_closed

    arun(scenario())


def test_query_data_version_refreshes_liveness(arun: Any) -> None:
    async def scenario() -> None:
        clock = FakeClock()
        async with NameServer(NamesrvConfig(port=0), clock=clock) as ns, RemotingClient() as broker:
            addr = ns.address
            await broker.invoke(addr, registration("broker-a", "127.0.0.1:10911", {"T": 4}, counter=7))
            header = QueryDataVersionRequestHeader(
                broker_name="broker-a", broker_addr="127.0.0.1:10911", cluster_name=CLUSTER, broker_id=0
            )
            same = DataVersion(timestamp=1_700_000_000_000, counter=7)
            clock.now += 100
            answer = await broker.invoke(
                addr,
                RemotingCommand.request(
                    RequestCode.QUERY_DATA_VERSION, header.to_ext_fields(), same.encode()
                ),
            )
            assert answer.ext_fields == {"changed": "false"}
            assert DataVersion.decode(answer.body) == same
            clock.now += 100  # 200 s after registering, 100 s after the query
            assert ns.scan_now() == 0
            newer = DataVersion(timestamp=1_700_000_000_001, counter=8)
            answer = await broker.invoke(
                addr,
                RemotingCommand.request(
                    RequestCode.QUERY_DATA_VERSION, header.to_ext_fields(), newer.encode()
                ),
            )
            assert answer.ext_fields == {"changed": "true"}
            assert DataVersion.decode(answer.body) == same

    arun(scenario())


def test_kv_config_and_order_topics(arun: Any, tmp_path: Path) -> None:
    async def scenario() -> None:
        config = NamesrvConfig(port=0, order_message_enable=True, kv_config_path=tmp_path / "kvConfig.json")
        async with NameServer(config) as ns, RemotingClient() as client:
            addr = ns.address
            put = PutKVConfigRequestHeader(namespace=ORDER_TOPIC_CONFIG, key="Orders", value="broker-a:4")
            answer = await client.invoke(
                addr, RemotingCommand.request(RequestCode.PUT_KV_CONFIG, put.to_ext_fields())
            )
            assert answer.code == ResponseCode.SUCCESS
            get = GetKVConfigRequestHeader(namespace=ORDER_TOPIC_CONFIG, key="Orders")
            answer = await client.invoke(
                addr, RemotingCommand.request(RequestCode.GET_KV_CONFIG, get.to_ext_fields())
            )
            assert answer.ext_fields == {"value": "broker-a:4"}

            # Brokers learn the order-topic table from every registration's response body ...
            registered = await client.invoke(addr, registration("broker-a", "127.0.0.1:10911", {"Orders": 4}))
            assert KVTable.decode(registered.body).table == {"Orders": "broker-a:4"}
            # ... and clients get it in the route.
            route = await ask_route(client, addr, "Orders")
            assert route is not None
            assert route.order_topic_conf == "broker-a:4"

            listing = await client.invoke(
                addr,
                RemotingCommand.request(
                    RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": ORDER_TOPIC_CONFIG}
                ),
            )
            assert KVTable.decode(listing.body).table == {"Orders": "broker-a:4"}
            missing = await client.invoke(
                addr, RemotingCommand.request(RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "nope"})
            )
            assert (missing.code, missing.remark) == (
                ResponseCode.QUERY_NOT_FOUND,
                "No config item, Namespace: nope",
            )

            deleted = await client.invoke(
                addr, RemotingCommand.request(RequestCode.DELETE_KV_CONFIG, get.to_ext_fields())
            )
            assert deleted.code == ResponseCode.SUCCESS
            gone = await client.invoke(
                addr, RemotingCommand.request(RequestCode.GET_KV_CONFIG, get.to_ext_fields())
            )
            assert gone.code == ResponseCode.QUERY_NOT_FOUND
            assert gone.remark == f"No config item, Namespace: {ORDER_TOPIC_CONFIG} Key: Orders"
        assert (tmp_path / "kvConfig.json").read_text() == '{"configTable":{"ORDER_TOPIC_CONFIG":{}}}'

    arun(scenario())


def test_topic_lists_delete_and_write_permission(arun: Any) -> None:
    async def scenario() -> None:
        async with NameServer(NamesrvConfig(port=0)) as ns, RemotingClient() as client:
            addr = ns.address
            await client.invoke(addr, registration("broker-a", "127.0.0.1:10911", {"T": 4, "U": 2}))

            async def topics(
                code: int, ext: dict[str, str] | None = None
            ) -> tuple[TopicList, RemotingCommand]:
                answer = await client.invoke(addr, RemotingCommand.request(code, ext))
                assert answer.code == ResponseCode.SUCCESS
                return TopicList.decode(answer.body), answer

            everything, _ = await topics(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
            assert set(everything.topic_list) == {"T", "U"}
            by_cluster, _ = await topics(RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": CLUSTER})
            assert set(by_cluster.topic_list) == {"T", "U"}
            system, _ = await topics(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS)
            assert set(system.topic_list) == {CLUSTER, "broker-a"}
            assert system.broker_addr == "127.0.0.1:10911"

            wiped = await client.invoke(
                addr,
                RemotingCommand.request(RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"}),
            )
            assert wiped.ext_fields == {"wipeTopicCount": "2"}
            route = await ask_route(client, addr, "T")
            assert route is not None
            assert route.queue_datas[0].perm == 4
            added = await client.invoke(
                addr,
                RemotingCommand.request(RequestCode.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"}),
            )
            assert added.ext_fields == {"addTopicCount": "2"}

            deleted = await client.invoke(
                addr, RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": "T"})
            )
            assert deleted.code == ResponseCode.SUCCESS
            assert await ask_route(client, addr, "T") is None
            assert await ask_route(client, addr, "U") is not None

    arun(scenario())


def test_route_dialect_follows_client_version(arun: Any) -> None:
    async def scenario() -> None:
        async with NameServer(NamesrvConfig(port=0)) as ns, RemotingClient() as client:
            addr = ns.address
            await client.invoke(addr, registration("broker-a", "127.0.0.1:10911", {"T": 4}))
            new = await client.invoke(addr, route_request("T"))
            old = await client.invoke(addr, route_request("T", version=MQVersion.V4_9_3))
            assert b'"brokerAddrs":{"0":"127.0.0.1:10911"}' in new.body
            assert b'"brokerAddrs":{0:"127.0.0.1:10911"}' in old.body
            asked = RemotingCommand.request(
                RequestCode.GET_ROUTEINFO_BY_TOPIC,
                GetRouteInfoRequestHeader(topic="T", accept_standard_json_only=True).to_ext_fields(),
                version=MQVersion.V4_9_3,
            )
            assert (await client.invoke(addr, asked)).body == new.body

    arun(scenario())


def test_bad_requests_get_clear_errors_and_the_server_keeps_serving(arun: Any) -> None:
    async def scenario() -> None:
        async with NameServer(NamesrvConfig(port=0)) as ns, RemotingClient() as client:
            addr = ns.address
            # Unknown code: answered at once (RocketMQ's name server would stay silent).
            unknown = await client.invoke(addr, RemotingCommand.request(9999, {"foo": "bar"}))
            assert unknown.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
            # A missing required header field.
            missing = await client.invoke(
                addr, RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {})
            )
            assert missing.code == ResponseCode.SYSTEM_ERROR
            assert "'topic' is missing" in (missing.remark or "")
            # A registration whose body does not match its CRC, and one whose body is garbage.
            bad_crc = registration("broker-a", "127.0.0.1:10911", {"T": 4})
            bad_crc.ext_fields["bodyCrc32"] = "12345"
            answer = await client.invoke(addr, bad_crc)
            assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR, "crc32 not match")
            garbage = registration("broker-a", "127.0.0.1:10911", {"T": 4}, compressed=True)
            garbage.body = b"not zlib"
            answer = await client.invoke(addr, garbage)
            assert answer.code == ResponseCode.SYSTEM_ERROR
            assert "compressed body" in (answer.remark or "")
            assert ns.routes.topic_route("T") is None

            # Bytes that are not a frame close that connection only.
            reader, writer = await asyncio.open_connection("127.0.0.1", ns.port)
            writer.write(b"\x00\x00\x00\x02GET / HTTP/1.1\r\n\r\n")
            await writer.drain()
            assert await asyncio.wait_for(reader.read(), timeout=10) == b""
            writer.close()
            await writer.wait_closed()

            # Half a frame, then the rest: still one good request.
            reader, writer = await asyncio.open_connection("127.0.0.1", ns.port)
            frame = encode_frame(cluster_info_request())
            writer.write(frame[:7])
            await writer.drain()
            writer.write(frame[7:])
            decoder = FrameDecoder()
            while (cmd := decoder.next_command()) is None:
                decoder.receive_data(await asyncio.wait_for(reader.read(4096), timeout=10))
            assert cmd.code == ResponseCode.SUCCESS
            writer.close()
            await writer.wait_closed()

            ok = await client.invoke(addr, registration("broker-a", "127.0.0.1:10911", {"T": 4}))
            assert ok.code == ResponseCode.SUCCESS

    arun(scenario())


def test_port_in_use_is_a_remoting_error(arun: Any) -> None:
    async def scenario() -> None:
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            ns = NameServer(NamesrvConfig(port=taken.getsockname()[1]))
            with pytest.raises(RemotingError, match="cannot listen"):
                await ns.start()
            await ns.close()

    arun(scenario())
