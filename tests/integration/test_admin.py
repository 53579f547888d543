"""rocketq.admin against real servers: an embedded name server and broker on port 0, plus a second
broker for the cluster-wide calls, and an AsyncAdmin on its own event loop."""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketq import ClientConfig, ConsumeConcurrentlyStatus, ConsumeFromWhere, Message, Producer, PushConsumer
from rocketq.admin import Admin, AsyncAdmin, parse_reset_target
from rocketq.broker import Broker, BrokerConfig
from rocketq.embedded import EmbeddedCluster
from rocketq.errors import (
    ConfigError,
    RemotingConnectError,
    RocketQError,
    SystemTopicError,
    TopicExistsError,
    UnknownGroupError,
    UnknownTopicError,
)
from rocketq.models import MessageQueue
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode, calls
from rocketq.protocol.headers import ResetOffsetRequestHeader
from rocketq.remoting.client import RemotingClient
from tests.integration.clientkit import ClusterThread, Received, wait_until

pytestmark = pytest.mark.integration

OK = ConsumeConcurrentlyStatus.CONSUME_SUCCESS


@pytest.fixture
def admin(cluster: ClusterThread) -> Iterator[Admin]:
    with Admin(cluster.namesrv) as a:
        yield a


def consumer(cluster: ClusterThread, group: str, topic: str, name: str, got: Received) -> PushConsumer:
    c = PushConsumer(
        group,
        client_config=ClientConfig(namesrv=cluster.namesrv, client_ip="127.0.0.1", instance_name=name),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )
    c.subscribe(topic)
    c.register_listener(lambda msgs: (got.add(name, msgs), OK)[1])
    return c.start()


def test_topic_lifecycle_on_one_broker(cluster: ClusterThread, admin: Admin) -> None:
    assert admin.create_topic("AdmT", queues=4) == {"broker-a": cluster.broker_addr}
    assert "AdmT" in admin.topic_list()
    route = admin.topic_route("AdmT")
    assert [(q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm) for q in route.queue_datas] == [
        ("broker-a", 4, 4, 6)
    ]
    with Producer("adm_p", client_config=ClientConfig(namesrv=cluster.namesrv, client_ip="127.0.0.1")) as p:
        for i in range(10):
            p.send(Message("AdmT", f"m{i}"), queue=MessageQueue("AdmT", "broker-a", i % 3))
    stats = admin.topic_stats("AdmT")
    assert [(q.queue.queue_id, q.min_offset, q.max_offset) for q in stats.queues] == [
        (0, 0, 4), (1, 0, 3), (2, 0, 3), (3, 0, 0)
    ]  # fmt: skip
    assert stats.total_messages == 10
    assert all(q.last_update_ms > 0 for q in stats.queues[:3])
    assert stats.queues[3].last_update_ms == 0
    # update keeps what it is not told: read queues stay 4
    admin.update_topic("AdmT", write_queues=2, perm=4)
    assert [
        (q.read_queue_nums, q.write_queue_nums, q.perm) for q in admin.topic_route("AdmT").queue_datas
    ] == [(4, 2, 4)]
    assert admin.delete_topic("AdmT") == {"broker-a/0": cluster.broker_addr}
    assert "AdmT" not in admin.topic_list()
    with pytest.raises(UnknownTopicError, match="topic AdmT does not exist"):
        admin.topic_route("AdmT")
    with pytest.raises(UnknownTopicError):
        admin.update_topic("AdmT", queues=2)


def test_cluster_wide_create_order_conf_stats_and_delete_over_two_brokers(
    cluster: ClusterThread, admin: Admin, tmp_path: Path
) -> None:
    second = Broker(
        BrokerConfig(
            port=0, broker_name="broker-b", data_dir=tmp_path / "b", namesrv_addrs=(cluster.namesrv,)
        )
    )
    cluster.thread.call(second.start(), timeout=30)
    try:
        assert wait_until(lambda: len(admin.master_addrs()) == 2, 15.0)
        created = admin.create_topic("AdmTwo", queues=3, order=True, cluster="DefaultCluster")
        assert created == {"broker-a": cluster.broker_addr, "broker-b": second.address}
        route = admin.topic_route("AdmTwo")
        assert sorted((q.broker_name, q.write_queue_nums) for q in route.queue_datas) == [
            ("broker-a", 3), ("broker-b", 3)
        ]  # fmt: skip
        assert admin.order_conf("AdmTwo") == "broker-a:3;broker-b:3"
        # a create on a broker that holds the topic changes nothing and says what would change
        with pytest.raises(TopicExistsError, match="on broker-b: read queues 3 -> 5") as refused:
            admin.create_topic("AdmTwo", queues=5, order=True, broker=second.address)
        assert refused.value.changes == ("on broker-b: read queues 3 -> 5, write queues 3 -> 5",)
        assert admin.order_conf("AdmTwo") == "broker-a:3;broker-b:3"
        # one broker only: its entry merges into the order config
        admin.create_topic("AdmTwo", queues=5, order=True, broker=second.address, update=True)
        assert admin.order_conf("AdmTwo") == "broker-a:3;broker-b:5"
        stats = admin.topic_stats("AdmTwo")
        assert [q.queue.short for q in stats.queues] == [f"broker-a:{i}" for i in range(3)] + [
            f"broker-b:{i}" for i in range(5)
        ]
        with pytest.raises(ConfigError, match="a broker or a cluster, not both"):
            admin.create_topic("AdmTwo", queues=1, broker=second.address, cluster="DefaultCluster")
        with pytest.raises(ConfigError, match="no cluster named"):
            admin.create_topic("AdmX", queues=1, cluster="Nope")
        deleted = admin.delete_topic("AdmTwo", cluster="DefaultCluster")
        assert set(deleted.values()) == {cluster.broker_addr, second.address}
        assert "AdmTwo" not in admin.topic_list()
        assert admin.order_conf("AdmTwo") is None
        assert second.topics.select("AdmTwo") is None
    finally:
        cluster.thread.call(second.close(), timeout=30)


def test_group_members_progress_and_reset(cluster: ClusterThread, admin: Admin) -> None:
    admin.create_topic("AdmG", queues=8)
    got = Received()
    c1 = consumer(cluster, "adm_g", "AdmG", "c1", got)
    c2 = consumer(cluster, "adm_g", "AdmG", "c2", got)
    try:
        assert wait_until(lambda: len(c1.assigned_queues("AdmG")) == 4 == len(c2.assigned_queues("AdmG")), 10)
        view = admin.group_members("adm_g")
        assert [m.client_id for m in view.members] == ["127.0.0.1@c1", "127.0.0.1@c2"]
        for m, c in zip(view.members, (c1, c2), strict=True):
            assert [q for q in m.queues if q.topic == "AdmG"] == c.assigned_queues("AdmG")
            assert (m.queues_source, m.strategy, m.language, m.version_name) == (
                "running-info", "AVG", "PYTHON", "V4_9_4"
            )  # fmt: skip
            assert not m.duplicate
            assert len(m.addresses) == 1
        assert view.subscriptions == {"%RETRY%adm_g": "*", "AdmG": "*"}
        assert view.message_model == "CLUSTERING"
        assert view.duplicates == ()

        with Producer(
            "adm_gp", client_config=ClientConfig(namesrv=cluster.namesrv, client_ip="127.0.0.1")
        ) as p:
            for i in range(40):
                p.send(Message("AdmG", f"g{i}"), queue=MessageQueue("AdmG", "broker-a", i % 8))
        assert wait_until(lambda: got.distinct() == 40, 10)
        for c in (c1, c2):
            c.core.instance.loop_thread.call(c.core.persist_consumer_offset())
        progress = admin.group_progress("adm_g", "AdmG")
        assert [(q.broker_offset, q.consumer_offset, q.lag) for q in progress.queues] == [(5, 5, 0)] * 8
        owners = {q.queue: q.owner for q in progress.queues}
        assert all(owners[q] == "127.0.0.1@c1" for q in c1.assigned_queues("AdmG"))
        assert progress.owners_source == "running-info"

        # online reset: the members drop the queues, commit, and consume everything again
        result = admin.reset_offsets("adm_g", "AdmG", "first")
        assert sorted(result.offsets.values()) == [0] * 8
        assert result.timestamp_ms == 0
        assert wait_until(lambda: sum(got.bodies.values()) == 80, 15)
        assert got.distinct() == 40
    finally:
        c1.shutdown()
        c2.shutdown()
    # offline: the broker commits the reset itself
    assert admin.group_members("adm_g").members == ()
    admin.reset_offsets("adm_g", "AdmG", "first")
    assert admin.group_progress("adm_g", "AdmG").total_lag == 40
    admin.reset_offsets("adm_g", "AdmG", "last")
    assert admin.group_progress("adm_g", "AdmG").total_lag == 0


def test_reset_of_an_offline_group_on_a_broker_that_leaves_it_to_the_tool(
    cluster: ClusterThread, admin: Admin
) -> None:
    """RocketMQ 4.9.4's broker answers CONSUMER_NOT_ONLINE to a reset of a group without members
    (rocketq's broker commits the offsets itself); the admin then commits them queue by queue, as
    ``mqadmin resetOffsetByTime`` falls back to doing."""
    admin.create_topic("AdmOff", queues=2)
    got = Received()
    c = consumer(cluster, "adm_off", "AdmOff", "c1", got)
    with Producer(
        "adm_offp", client_config=ClientConfig(namesrv=cluster.namesrv, client_ip="127.0.0.1")
    ) as p:
        for i in range(10):
            p.send(Message("AdmOff", f"o{i}"))
    assert wait_until(lambda: got.distinct() == 10, 10)
    c.shutdown()
    assert admin.group_progress("adm_off", "AdmOff").total_lag == 0

    def like_rocketmq(conn: object, request: RemotingCommand) -> RemotingCommand:
        h = ResetOffsetRequestHeader.from_ext_fields(request.ext_fields)
        return request.response(
            code=ResponseCode.CONSUMER_NOT_ONLINE,
            remark=f"Consumer not online, so can not reset offset, Group: {h.group} Topic: {h.topic} "
            f"Timestamp: {h.timestamp}",
        )

    assert cluster.cluster.broker is not None
    cluster.cluster.broker.register_handler(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, like_rocketmq)
    result = admin.reset_offsets("adm_off", "AdmOff", "first")
    assert sorted(result.offsets.values()) == [0, 0]
    assert admin.group_progress("adm_off", "AdmOff").total_lag == 10
    result = admin.reset_offsets("adm_off", "AdmOff", "last")
    assert sum(result.offsets.values()) == 10
    assert admin.group_progress("adm_off", "AdmOff").total_lag == 0


def test_unknown_names_and_unreachable_servers(cluster: ClusterThread, admin: Admin) -> None:
    with pytest.raises(UnknownGroupError, match="consumer group nobody is unknown"):
        admin.group_members("nobody")
    with pytest.raises(UnknownGroupError):
        admin.group_progress("nobody")
    admin.create_topic("KnownTopic", queues=1)
    with pytest.raises(UnknownGroupError):
        admin.group_progress("nobody", "KnownTopic")
    with pytest.raises(UnknownTopicError):
        admin.topic_stats("NoSuchTopic")
    with pytest.raises(UnknownTopicError):
        admin.reset_offsets("g", "NoSuchTopic", "first")
    with Admin("127.0.0.1:1") as dead, pytest.raises(RemotingConnectError, match="cannot reach name server"):
        dead.topic_list()
    with pytest.raises(ConfigError):
        Admin("not-an-address")


def test_parse_reset_target() -> None:
    assert parse_reset_target("first") == 0
    assert parse_reset_target("last") == -1
    assert parse_reset_target("1700000000123") == 1700000000123
    assert parse_reset_target("2023-11-14T22:13:20.5+00:00") == 1700000000500
    with pytest.raises(ConfigError):
        parse_reset_target("soon")


def test_async_admin_on_the_callers_loop(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = EmbeddedCluster(data_dir=tmp_path / "a", namesrv_port=0, broker_port=0)
        async with cluster as c, AsyncAdmin(c.namesrv_addr) as admin:
            await admin.create_topic("AsyncT", queues=2)
            assert "AsyncT" in await admin.topic_list()
            info = await admin.cluster_info()
            assert dict(info.cluster_addr_table) == {"DefaultCluster": ("broker-a",)}
            stats = await admin.topic_stats("AsyncT")
            assert [q.max_offset for q in stats.queues] == [0, 0]
            await admin.delete_topic("AsyncT")
            assert "AsyncT" not in await admin.topic_list()

    asyncio.run(scenario())


# ------------------------------------------------------------------------ monitoring calls


def test_monitoring_calls_see_brokers_topics_groups_producers_and_messages(
    cluster: ClusterThread, admin: Admin
) -> None:
    admin.create_topic("MonT", queues=2)
    config = ClientConfig(namesrv=cluster.namesrv, client_ip="127.0.0.1", instance_name="mon")
    got = Received()
    c = consumer(cluster, "mon_g", "MonT", "c1", got)
    try:
        with Producer("mon_p", client_config=config) as p:
            queues = [MessageQueue("MonT", "broker-a", i % 2) for i in range(6)]
            messages = [Message("MonT", f"body-{i}", keys=f"key-{i}") for i in range(6)]
            sent = [p.send(m, queue=q) for m, q in zip(messages, queues, strict=True)]
            # the producer group is online while the producer runs
            (conn,) = admin.producer_connections("mon_p").values()
            assert [x.language for x in conn.connection_set] == ["PYTHON"]
        assert wait_until(lambda: got.distinct() == 6)
        runtime = admin.broker_runtime(cluster.broker_addr)
        assert runtime.version == "V4_9_4"
        assert runtime.put_tps is not None
        assert runtime.put_tps >= 0
        assert runtime.disk_ratio is not None
        assert 0 <= runtime.disk_ratio <= 1
        configs = admin.topic_configs(cluster.broker_addr)
        assert (configs["MonT"].read_queue_nums, configs["MonT"].write_queue_nums) == (2, 2)
        assert "mon_g" in admin.consumer_groups()
        assert admin.topic_consumers("MonT") == ["mon_g"]
        assert admin.producer_connections("no_such_producer_group") == {}
        # look-ups: by the producer's id (in its topic), by offset id, by key, by queue and offset
        first = sent[0]
        (by_id,) = admin.view_message(first.msg_id, topic="MonT")
        assert (by_id.body, by_id.queue_id, by_id.queue_offset) == (b"body-0", 0, 0)
        (by_offset_id,) = admin.view_message(first.offset_msg_id)
        assert by_offset_id.msg_id == first.msg_id
        assert [m.body for m in admin.query_message("MonT", "key-3")] == [b"body-3"]
        assert admin.query_message("MonT", "no-such-key") == []
        at = admin.message_at(MessageQueue("MonT", "broker-a", 1), 2)
        assert at is not None
        assert at.body == b"body-5"
        assert admin.message_at(MessageQueue("MonT", "broker-a", 1), 3) is None  # past the end
        with pytest.raises(ConfigError, match="is not a message id"):
            admin.view_message(first.msg_id + "00")
    finally:
        c.shutdown()


def _shape(admin: Admin, topic: str) -> list[tuple[str | None, int, int, int]]:
    return [
        (q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm)
        for q in admin.topic_route(topic).queue_datas
    ]


def test_create_on_an_existing_topic_changes_nothing_and_says_what_would(
    cluster: ClusterThread, admin: Admin
) -> None:
    """The dashboard's and Admin's create used to overwrite: 4 queues with 20 messages became 1."""
    seed = random.randrange(1 << 32)
    print(f"seed {seed}")  # shown with a failure
    rng = random.Random(seed)
    held = rng.randint(2, 16)
    fewer = rng.randint(1, held - 1)
    count = rng.randint(held, 40)
    admin.create_topic("AdmExists", queues=held)
    with Producer("adm_x", client_config=cluster.client_config("adm_x")) as p:
        for i in range(count):
            p.send(Message("AdmExists", f"m{i}"), queue=MessageQueue("AdmExists", "broker-a", i % held))
    before = admin.topic_stats("AdmExists")
    lost = f"[{fewer}..{held - 1}]" if held - fewer > 1 else f"[{fewer}]"
    with pytest.raises(TopicExistsError, match=re.escape(f"messages in queues {lost} stop being read")) as e:
        admin.create_topic("AdmExists", queues=fewer)
    assert e.value.changes == (
        f"on broker-a: read queues {held} -> {fewer}, messages in queues {lost} stop being read, "
        f"write queues {held} -> {fewer}",
    ), seed
    with pytest.raises(TopicExistsError, match="perm 6 -> 4"):
        admin.create_topic("AdmExists", queues=held, perm=4)
    assert _shape(admin, "AdmExists") == [("broker-a", held, held, 6)], seed
    assert admin.topic_stats("AdmExists") == before, seed
    # the same settings again: no error, nothing written; an explicit update applies the change
    assert admin.create_topic("AdmExists", queues=held) == {"broker-a": cluster.broker_addr}
    admin.create_topic("AdmExists", queues=fewer, update=True)
    assert _shape(admin, "AdmExists") == [("broker-a", fewer, fewer, 6)], seed


SYSTEM_TOPICS = ("TBW102", "SCHEDULE_TOPIC_XXXX", "DefaultCluster", "broker-a", "OFFSET_MOVED_EVENT",
                 "SELF_TEST_TOPIC", "BenchmarkTest", "DefaultCluster_REPLY_TOPIC")  # fmt: skip


def test_system_topics_need_an_override_naming_them(cluster: ClusterThread, admin: Admin) -> None:
    shapes = {t: _shape(admin, t) for t in SYSTEM_TOPICS}
    seed = random.randrange(1 << 32)
    print(f"seed {seed}")  # shown with a failure
    rng = random.Random(seed)
    for topic in SYSTEM_TOPICS:
        slips = [None, topic[:-1], topic.lower(), topic + " ", "TBW102" if topic != "TBW102" else "broker-a"]
        slip = rng.choice([x for x in slips if x != topic])  # near misses: none passes
        with pytest.raises(SystemTopicError, match=f"topic {re.escape(topic)} is a system topic"):
            admin.delete_topic(topic, force_system_topic=slip)
        with pytest.raises(SystemTopicError, match="not changed"):
            admin.update_topic(topic, queues=1, force_system_topic=slip)
        with pytest.raises(SystemTopicError):
            admin.create_topic(topic, queues=rng.randint(1, 64), force_system_topic=slip)
    with pytest.raises(SystemTopicError, match="retry topic"):
        admin.delete_topic("%RETRY%some_group")
    assert {t: _shape(admin, t) for t in SYSTEM_TOPICS} == shapes, seed
    # the broker itself refuses, as RocketMQ 4.9's does, a tool that does not ask first
    for topic in ("TBW102", "SCHEDULE_TOPIC_XXXX", "DefaultCluster"):
        for request in (
            calls.delete_topic_in_broker(topic).request,
            calls.create_topic(topic, 1, 1).request,
        ):
            response = cluster.thread.call(_invoke(cluster.broker_addr, request))
            assert (response.code, response.remark) == (
                ResponseCode.SYSTEM_ERROR,
                f"The topic[{topic}] is conflict with system topic.",
            )
    assert {t: _shape(admin, t) for t in SYSTEM_TOPICS} == shapes, seed


def test_a_forced_delete_of_tbw102_and_its_forced_recreation_need_no_restart(
    cluster: ClusterThread, admin: Admin
) -> None:
    """Before: TBW102 deleted, auto-creation failed, and made again (perm 6) it still failed."""
    admin.delete_topic("TBW102", force_system_topic="TBW102")
    with (
        Producer("adm_auto", client_config=cluster.client_config("adm_auto")) as p,
        pytest.raises(RocketQError),
    ):
        p.send(Message("AdmAutoOne", b"x"))
    admin.create_topic("TBW102", queues=8, force_system_topic="TBW102")
    assert _shape(admin, "TBW102") == [("broker-a", 8, 8, 7)]  # the template again (INHERIT kept)
    with Producer("adm_auto2", client_config=cluster.client_config("adm_auto2")) as p:
        assert p.send(Message("AdmAutoTwo", b"x")).status.name == "SEND_OK"
    # the cluster's own topic, deleted with its override, can be made again too
    admin.delete_topic("DefaultCluster", force_system_topic="DefaultCluster")
    admin.create_topic("DefaultCluster", queues=16, force_system_topic="DefaultCluster")
    assert _shape(admin, "DefaultCluster") == [("broker-a", 16, 16, 7)]


async def _invoke(addr: str, request: RemotingCommand) -> RemotingCommand:
    client = RemotingClient()
    try:
        return await client.invoke(addr, request, 5.0)
    finally:
        await client.close()
