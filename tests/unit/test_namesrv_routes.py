"""The name server's route table, with time driven by the tests (``now`` in float seconds)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.namesrv.routes import (
    BROKER_CHANNEL_EXPIRED_TIME,
    BrokerLiveInfo,
    ExpiredBroker,
    RegisterBrokerResult,
    RouteTable,
)
from rocketq.protocol.bodies import BrokerData, DataVersion, QueueData, TopicConfig
from rocketq.protocol.topics import Perm

PERM_READ, PERM_WRITE = int(Perm.READ), int(Perm.WRITE)

V1 = DataVersion(timestamp=1_000, counter=1)
V2 = DataVersion(timestamp=2_000, counter=2)


def topic(name: str, queues: int = 4, perm: int = 6, sys_flag: int = 0) -> TopicConfig:
    return TopicConfig(
        topic_name=name, read_queue_nums=queues, write_queue_nums=queues, perm=perm, topic_sys_flag=sys_flag
    )


def register(
    table: RouteTable,
    name: str = "broker-a",
    *,
    addr: str | None = None,
    broker_id: int = 0,
    cluster: str = "DefaultCluster",
    topics: list[TopicConfig] | None = None,
    version: DataVersion = V1,
    conn: object = None,
    now: float = 0.0,
    filter_servers: list[str] | None = None,
    ha: str | None = None,
) -> RegisterBrokerResult:
    port = {"broker-a": 10911, "broker-b": 10921, "broker-c": 10931}.get(name, 10991) + broker_id * 100
    addr = addr or f"127.0.0.1:{port}"
    return table.register_broker(
        cluster_name=cluster,
        broker_addr=addr,
        broker_name=name,
        broker_id=broker_id,
        ha_server_addr=ha if ha is not None else f"127.0.0.1:{port + 1}",
        data_version=version,
        topic_configs=topics if topics is not None else [topic("TopicTest")],
        filter_servers=filter_servers,
        conn=conn if conn is not None else f"conn-{addr}",
        now=now,
    )


def queue_brokers(table: RouteTable, name: str) -> list[str | None]:
    route = table.topic_route(name)
    assert route is not None
    return [q.broker_name for q in route.queue_datas]


# ---------------------------------------------------------------------------- registration


def test_master_registration_publishes_its_topics() -> None:
    table = RouteTable()
    result = register(table, topics=[topic("TopicTest", 8), topic("Other", 2, perm=4, sys_flag=1)])
    assert result == RegisterBrokerResult(None, None)
    route = table.topic_route("TopicTest")
    assert route is not None
    assert route.queue_datas == (
        QueueData(broker_name="broker-a", read_queue_nums=8, write_queue_nums=8, perm=6, topic_sys_flag=0),
    )
    assert route.broker_datas == (
        BrokerData(cluster="DefaultCluster", broker_name="broker-a", broker_addrs={0: "127.0.0.1:10911"}),
    )
    assert route.filter_server_table == {}
    assert route.order_topic_conf is None
    other = table.topic_route("Other")
    assert other is not None
    assert other.queue_datas[0].perm == 4
    assert other.queue_datas[0].topic_sys_flag == 1
    assert table.topic_route("Missing") is None


def test_slave_learns_its_master_and_does_not_publish_topics() -> None:
    table = RouteTable()
    # A slave registering before its master learns nothing yet.
    early = register(table, broker_id=1, topics=[topic("SlaveOnly")])
    assert early == RegisterBrokerResult(None, None)
    assert table.topic_route("SlaveOnly") is None
    register(table, topics=[topic("TopicTest")], ha="127.0.0.1:10912")
    result = register(table, broker_id=1, now=1.0)
    assert result == RegisterBrokerResult(master_addr="127.0.0.1:10911", ha_server_addr="127.0.0.1:10912")
    route = table.topic_route("TopicTest")
    assert route is not None
    assert route.broker_datas[0].broker_addrs == {0: "127.0.0.1:10911", 1: "127.0.0.1:11011"}


def test_unchanged_data_version_only_refreshes_liveness() -> None:
    table = RouteTable()
    register(table, topics=[topic("TopicTest", 4)], version=V1, now=0.0)
    # Same data version, different content: the name server trusts the version and keeps its table.
    register(table, topics=[topic("TopicTest", 16), topic("Sneaky")], version=V1, now=100.0)
    route = table.topic_route("TopicTest")
    assert route is not None
    assert route.queue_datas[0].read_queue_nums == 4
    assert table.topic_route("Sneaky") is None
    live = table.live_broker("127.0.0.1:10911")
    assert live is not None
    assert live.last_update == 100.0
    # ... and the refreshed liveness postpones expiry.
    assert table.scan_not_active(now=200.0) == []


def test_changed_data_version_updates_and_never_removes_topics() -> None:
    table = RouteTable()
    register(table, topics=[topic("TopicTest", 4), topic("Kept")], version=V1)
    # An incremental registration (only the topic just created or changed) under a new version.
    register(table, topics=[topic("TopicTest", 16), topic("Created", 2)], version=V2, now=1.0)
    assert table.data_version("127.0.0.1:10911") == V2
    route = table.topic_route("TopicTest")
    assert route is not None
    assert route.queue_datas[0].read_queue_nums == 16
    assert table.topic_route("Kept") is not None
    assert table.topic_route("Created") is not None


def test_promoted_slave_keeps_one_entry_per_address() -> None:
    table = RouteTable()
    register(table, topics=[topic("TopicTest")])
    register(table, addr="127.0.0.1:20000", broker_id=1, topics=[])
    table.unregister_broker(
        cluster_name="DefaultCluster", broker_addr="127.0.0.1:10911", broker_name="broker-a", broker_id=0
    )
    # The slave's address comes back as the new master (id 0).
    register(table, addr="127.0.0.1:20000", broker_id=0, topics=[topic("TopicTest")], version=V2, now=1.0)
    (data,) = table.cluster_info().broker_addr_table.values()
    assert data.broker_addrs == {0: "127.0.0.1:20000"}


def test_filter_servers_are_set_kept_and_cleared() -> None:
    table = RouteTable()
    register(table, filter_servers=["127.0.0.1:30000", "127.0.0.1:30001"])
    route = table.topic_route("TopicTest")
    assert route is not None
    assert route.filter_server_table == {"127.0.0.1:10911": ("127.0.0.1:30000", "127.0.0.1:30001")}
    register(table, filter_servers=None, now=1.0)  # a body without a list leaves them
    route = table.topic_route("TopicTest")
    assert route is not None
    assert route.filter_server_table
    register(table, filter_servers=[], now=2.0)  # an empty list clears them
    route = table.topic_route("TopicTest")
    assert route is not None
    assert route.filter_server_table == {}


def test_query_data_version_refreshes_only_when_unchanged() -> None:
    table = RouteTable()
    register(table, version=V1, now=0.0)
    assert table.query_data_version("127.0.0.1:10911", V1, now=50.0) == (False, V1)
    assert table.live_broker("127.0.0.1:10911") == BrokerLiveInfo(
        "127.0.0.1:10911", 50.0, V1, "conn-127.0.0.1:10911", "127.0.0.1:10912"
    )
    assert table.query_data_version("127.0.0.1:10911", V2, now=60.0) == (True, V1)
    live = table.live_broker("127.0.0.1:10911")
    assert live is not None
    assert live.last_update == 50.0
    assert table.query_data_version("127.0.0.1:9", V1, now=60.0) == (True, None)


# ---------------------------------------------------------------------------- expiry and connections


def test_broker_expires_after_120_seconds_and_not_before() -> None:
    assert BROKER_CHANNEL_EXPIRED_TIME == 120.0
    table = RouteTable()
    register(table, now=10.0, conn="c1")
    assert table.scan_not_active(now=10.0 + 120.0) == []
    assert table.topic_route("TopicTest") is not None
    assert table.scan_not_active(now=10.0 + 120.001) == [ExpiredBroker("127.0.0.1:10911", "c1")]
    assert table.topic_route("TopicTest") is None
    info = table.cluster_info()
    assert info.broker_addr_table == {}
    assert info.cluster_addr_table == {}
    assert table.live_brokers() == []
    assert table.scan_not_active(now=1000.0) == []


def test_expiry_is_configurable() -> None:
    table = RouteTable(broker_expiry=5.0)
    register(table, now=0.0)
    assert table.scan_not_active(now=5.0) == []
    assert len(table.scan_not_active(now=5.5)) == 1
    with pytest.raises(ValueError, match="positive"):
        RouteTable(broker_expiry=0)


def test_connection_close_removes_that_broker_at_once() -> None:
    table = RouteTable()
    register(table, "broker-a", topics=[topic("Shared"), topic("OnlyA")], conn="ca")
    register(table, "broker-b", topics=[topic("Shared"), topic("OnlyB")], conn="cb")
    assert sorted(queue_brokers(table, "Shared")) == ["broker-a", "broker-b"]  # type: ignore[type-var]
    assert table.on_connection_closed("someone-else") == []
    assert table.on_connection_closed("ca") == ["127.0.0.1:10911"]
    assert queue_brokers(table, "Shared") == ["broker-b"]
    assert table.topic_route("OnlyA") is None
    assert table.topic_route("OnlyB") is not None
    assert list(table.cluster_info().cluster_addr_table["DefaultCluster"]) == ["broker-b"]
    assert table.on_connection_closed("ca") == []


def test_slave_leaving_or_master_leaving_with_a_slave_keeps_topics() -> None:
    table = RouteTable()
    register(table, topics=[topic("TopicTest")], conn="master")
    register(table, broker_id=1, conn="slave")
    table.on_connection_closed("slave")
    assert table.topic_route("TopicTest") is not None
    register(table, broker_id=1, conn="slave", now=1.0)
    table.on_connection_closed("master")
    route = table.topic_route("TopicTest")
    assert route is not None  # the broker name still has an address: its slave
    assert route.broker_datas[0].broker_addrs == {1: "127.0.0.1:11011"}


def test_unregister_removes_broker_cluster_and_orphaned_topics() -> None:
    table = RouteTable()
    register(table, "broker-a", topics=[topic("Shared"), topic("OnlyA")])
    register(table, "broker-c", cluster="OtherCluster", topics=[topic("Shared")])
    table.unregister_broker(
        cluster_name="DefaultCluster", broker_addr="127.0.0.1:10911", broker_name="broker-a", broker_id=0
    )
    assert table.topic_route("OnlyA") is None
    assert queue_brokers(table, "Shared") == ["broker-c"]
    assert dict(table.cluster_info().cluster_addr_table) == {"OtherCluster": ("broker-c",)}
    assert table.live_broker("127.0.0.1:10911") is None
    # Unregistering what is not there is harmless.
    table.unregister_broker(cluster_name="X", broker_addr="127.0.0.1:1", broker_name="nobody", broker_id=0)


def test_queue_data_without_a_broker_is_no_route() -> None:
    table = RouteTable()
    register(table, "broker-a", topics=[topic("T")])
    register(table, "broker-a", addr="127.0.0.1:10999", broker_id=1, topics=[])
    # The master goes; its slave keeps the broker name (and the topic) alive.
    table.unregister_broker(
        cluster_name="DefaultCluster", broker_addr="127.0.0.1:10911", broker_name="broker-a", broker_id=0
    )
    assert table.topic_route("T") is not None


# ---------------------------------------------------------------------------- queries and Java order


def test_routes_across_brokers_and_clusters_in_java_order() -> None:
    table = RouteTable()
    register(table, "broker-a", topics=[topic("Shared", 4)])
    register(table, "broker-b", topics=[topic("Shared", 8)])
    register(table, "broker-c", cluster="OtherCluster", topics=[topic("Shared", 2), topic("OnlyC")])
    route = table.topic_route("Shared")
    assert route is not None
    # Java HashMap order of the broker names, for queue datas and broker datas alike: String.hashCode
    # of "broker-a/b/c" is 0x1636eb6d/6e/6f, spread to buckets 11, 8 and 9 of a 16-bucket table.
    assert [q.broker_name for q in route.queue_datas] == ["broker-b", "broker-c", "broker-a"]
    assert [b.broker_name for b in route.broker_datas] == ["broker-b", "broker-c", "broker-a"]
    assert [b.cluster for b in route.broker_datas] == ["DefaultCluster", "OtherCluster", "DefaultCluster"]
    assert [q.read_queue_nums for q in route.queue_datas] == [8, 2, 4]
    assert table.topics_by_cluster("DefaultCluster").topic_list == ("Shared",)
    assert set(table.topics_by_cluster("OtherCluster").topic_list) == {"Shared", "OnlyC"}
    assert table.topics_by_cluster("NoSuchCluster").topic_list == ()


def test_cluster_info_and_topic_lists_match_rocketmq_order() -> None:
    # The topic table of the two-broker cluster in admin.jsonl, in the order RocketMQ answered.
    expected = (
        "SCHEDULE_TOPIC_XXXX",
        "DefaultCluster_REPLY_TOPIC",
        "broker-b",
        "BenchmarkTest",
        "OFFSET_MOVED_EVENT",
        "WireAdmin",
        "broker-a",
        "TBW102",
        "SELF_TEST_TOPIC",
        "DefaultCluster",
        "%RETRY%WireAdminGroup",
    )
    table = RouteTable()
    for name in ("broker-a", "broker-b"):
        register(table, name, topics=[topic(t) for t in sorted(expected)])
    assert table.all_topics().topic_list == expected
    info = table.cluster_info()
    assert list(info.broker_addr_table) == ["broker-b", "broker-a"]
    assert info.cluster_addr_table == {"DefaultCluster": ("broker-b", "broker-a")}
    assert (
        info.encode()
        == b'{"brokerAddrTable":{"broker-b":{"brokerAddrs":{0:"127.0.0.1:10921"},"brokerName":"broker-b",'
        b'"cluster":"DefaultCluster"},"broker-a":{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"broker-a",'
        b'"cluster":"DefaultCluster"}},"clusterAddrTable":{"DefaultCluster":["broker-b","broker-a"]}}'
    )


def test_system_topics_are_clusters_and_broker_names() -> None:
    table = RouteTable()
    assert table.system_topics().topic_list == ()
    assert table.system_topics().broker_addr is None
    register(table, "broker-a")
    register(table, "broker-b")
    system = table.system_topics()
    assert set(system.topic_list) == {"DefaultCluster", "broker-a", "broker-b"}
    assert system.broker_addr == "127.0.0.1:10921"  # the first broker in Java order is broker-b


def test_delete_topic_everywhere_or_per_cluster() -> None:
    table = RouteTable()
    register(table, "broker-a", topics=[topic("T"), topic("U")])
    register(table, "broker-c", cluster="OtherCluster", topics=[topic("T"), topic("U")])
    assert table.delete_topic("T", "OtherCluster")
    assert queue_brokers(table, "T") == ["broker-a"]
    assert not table.delete_topic("T", "NoSuchCluster")
    assert table.delete_topic("T", "DefaultCluster")
    assert table.topic_route("T") is None
    assert not table.delete_topic("T")
    assert table.delete_topic("U", "")  # an empty cluster name means everywhere, as in RocketMQ
    assert table.topic_route("U") is None
    assert table.all_topics().topic_list == ()


def test_wipe_and_add_write_permission() -> None:
    table = RouteTable()
    register(table, "broker-a", topics=[topic("T", perm=6), topic("U", perm=PERM_READ)])
    register(table, "broker-b", topics=[topic("T", perm=6)])
    assert table.wipe_write_perm("broker-a") == 2
    perms = {q.broker_name: q.perm for q in table.topic_route("T").queue_datas}  # type: ignore[union-attr]
    assert perms == {"broker-a": PERM_READ, "broker-b": PERM_READ | PERM_WRITE}
    assert table.add_write_perm("broker-a") == 2
    perms = {q.broker_name: q.perm for q in table.topic_route("U").queue_datas}  # type: ignore[union-attr]
    assert perms == {"broker-a": PERM_READ | PERM_WRITE}
    assert table.wipe_write_perm("nobody") == 0


def test_unit_topic_lists() -> None:
    table = RouteTable()
    register(
        table,
        topics=[
            topic("Plain"),
            topic("Unit", sys_flag=1),
            topic("Sub", sys_flag=2),
            topic("Both", sys_flag=3),
        ],
    )
    assert set(table.unit_topics().topic_list) == {"Unit", "Both"}
    assert set(table.has_unit_sub_topics().topic_list) == {"Sub", "Both"}
    assert set(table.has_unit_sub_ununit_topics().topic_list) == {"Sub"}


def test_topic_config_without_a_name_is_ignored() -> None:
    table = RouteTable()
    register(table, topics=[TopicConfig(topic_name=None), topic("Named")])
    assert table.all_topics().topic_list == ("Named",)


# ---------------------------------------------------------------------------- invariants under any history

_BROKERS = [("broker-a", "DefaultCluster"), ("broker-b", "DefaultCluster"), ("broker-c", "OtherCluster")]
_TOPICS = ["T0", "T1", "T2", "%RETRY%G"]

_op = st.one_of(
    st.tuples(
        st.just("register"),
        st.integers(0, 2),  # broker
        st.integers(0, 1),  # broker id
        st.lists(st.sampled_from(_TOPICS), max_size=4, unique=True),
        st.integers(1, 3),  # data version counter
    ),
    st.tuples(st.just("unregister"), st.integers(0, 2), st.integers(0, 1)),
    st.tuples(st.just("close"), st.integers(0, 2), st.integers(0, 1)),
    st.tuples(st.just("advance"), st.floats(0, 200)),
    st.tuples(
        st.just("delete"), st.sampled_from(_TOPICS), st.sampled_from([None, "DefaultCluster", "OtherCluster"])
    ),
)


@settings(max_examples=300)
@given(st.lists(_op, max_size=40))
def test_tables_stay_consistent_under_any_history(ops: list[tuple[Any, ...]]) -> None:
    table = RouteTable()
    now = 0.0
    for op in ops:
        kind = op[0]
        if kind == "register":
            _, b, broker_id, topics, counter = op
            name, cluster = _BROKERS[b]
            register(
                table,
                name,
                cluster=cluster,
                broker_id=broker_id,
                topics=[topic(t) for t in topics],
                version=DataVersion(timestamp=0, counter=counter),
                conn=(b, broker_id),
                now=now,
            )
        elif kind in ("unregister", "close"):
            _, b, broker_id = op
            name, cluster = _BROKERS[b]
            port = {"broker-a": 10911, "broker-b": 10921, "broker-c": 10931}[name] + broker_id * 100
            if kind == "unregister":
                table.unregister_broker(
                    cluster_name=cluster,
                    broker_addr=f"127.0.0.1:{port}",
                    broker_name=name,
                    broker_id=broker_id,
                )
            else:
                table.on_connection_closed((b, broker_id))
        elif kind == "advance":
            now += op[1]
            for expired in table.scan_not_active(now):
                assert table.live_broker(expired.broker_addr) is None
        else:
            table.delete_topic(op[1], op[2])

        info = table.cluster_info()
        live = {b.broker_addr for b in table.live_brokers()}
        registered = {addr for data in info.broker_addr_table.values() for addr in data.broker_addrs.values()}
        assert live == registered  # every address is both registered and live, or neither
        for data in info.broker_addr_table.values():
            assert data.broker_addrs, "a broker name without any address must be gone"
            assert data.broker_name in info.cluster_addr_table[data.cluster or ""]
        for cluster, names in info.cluster_addr_table.items():
            assert names, f"empty cluster {cluster} must be gone"
        for name in table.all_topics().topic_list:
            route = table.topic_route(name)
            assert route is not None, f"topic {name} is listed but has no broker left"
            assert route.queue_datas
            assert {b.broker_name for b in route.broker_datas} <= {q.broker_name for q in route.queue_datas}
            for b in route.broker_datas:
                assert info.broker_addr_table[b.broker_name or ""] == b
