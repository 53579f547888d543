"""A master and its slave on RocketMQ 4.9's HA link, in one process: registration, streaming,
sync replication's answers, the slave's table sync, reading from the slave with the master gone."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from rocketq import ConsumeFromWhere, LitePullConsumer, Message, Producer, SendStatus
from rocketq.broker import Broker
from rocketq.broker.config import BrokerConfig
from rocketq.broker.ha import HAConfig
from rocketq.protocol import ResponseCode, calls
from rocketq.protocol.bodies import TopicRouteData
from rocketq.protocol.ha import encode_report
from rocketq.remoting import RemotingClient
from tests.integration.brokerkit import pull_request, send_request
from tests.integration.clientkit import FAST_DELAY_LEVELS, ClusterThread, wait_until

pytestmark = pytest.mark.integration

FAST_HA = HAConfig(
    heartbeat_interval=0.5, housekeeping_interval=3.0, slave_timeout=1.0, reconnect_interval=0.3
)


def slave_config(cluster: ClusterThread, tmp_path: Path, **overrides: object) -> BrokerConfig:
    cfg = BrokerConfig(
        port=0,
        role="slave",
        broker_id=1,
        broker_name="broker-a",
        data_dir=tmp_path / "slave",
        namesrv_addrs=(cluster.namesrv,),
        message_delay_level=FAST_DELAY_LEVELS,
        ha=FAST_HA,
        slave_sync_period=0.5,
    )
    return replace(cfg, **overrides)  # type: ignore[arg-type]


def wait_linked(cluster: ClusterThread) -> Broker:
    """The cluster's master, once a slave's HA link has reported its offset to it."""
    master = cluster.cluster.broker
    assert master is not None
    assert master.ha_master is not None
    ha = master.ha_master
    assert wait_until(lambda: bool(ha.slaves) and ha.slaves[0].ack_offset >= 0, 10)
    return master


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[ClusterThread, Broker]]:
    cluster = ClusterThread(tmp_path / "master", role="sync-master", ha=FAST_HA)
    slave = Broker(slave_config(cluster, tmp_path))
    cluster.thread.call(slave.start(), timeout=30)
    try:
        wait_linked(cluster)
        yield cluster, slave
    finally:
        cluster.thread.call(slave.close(), timeout=30)
        cluster.close()


def test_a_sync_master_answers_send_ok_once_the_slave_has_the_bytes(
    pair: tuple[ClusterThread, Broker],
) -> None:
    cluster, slave = pair
    master = cluster.cluster.broker
    assert master is not None
    cluster.create_topic("HaTopic", 4)
    n = random.randint(20, 60)
    print("messages", n)
    with Producer("ha_producer", client_config=cluster.client_config()) as producer:
        results = [
            producer.send(Message("HaTopic", f"m{i}".encode() * random.randint(1, 400))) for i in range(n)
        ]
    assert all(r.status is SendStatus.SEND_OK for r in results)
    # every SEND_OK message is on the slave already, in the same queue at the same offset
    for r in results:
        qid, off = r.message_queue.queue_id, r.queue_offset
        got = slave.store.get_messages("HaTopic", qid, off, 1)
        assert got.message_count == 1
    assert slave.store.commit_log_max_offset == master.store.commit_log_max_offset
    # the route names both, master as 0 and slave as 1, under one broker name
    route = cluster.thread.call(_route(cluster.namesrv, "HaTopic"), timeout=10)
    (bd,) = route.broker_datas
    assert dict(bd.broker_addrs) == {0: master.address, 1: slave.address}
    # the slave learnt its master's HA address from its registration answer
    assert slave.ha_client is not None
    assert slave.ha_client.master_address is not None
    assert slave.ha_client.master_address.endswith(f":{master.ha_master.port}")  # type: ignore[union-attr]
    # and copies the master's topics, offsets and groups
    assert wait_until(lambda: slave.topics.select("HaTopic") is not None, 10)
    # the runtime tables (what the dashboard's /metrics reads) say the roles and the slave's lag
    on_master = cluster.thread.call(_runtime(master.address), timeout=10)
    on_slave = cluster.thread.call(_runtime(slave.address), timeout=10)
    assert (on_master["brokerRole"], on_slave["brokerRole"]) == ("SYNC_MASTER", "SLAVE")
    assert on_master["haSlaveLagBytes"] == on_slave["haSlaveLagBytes"] == "0"


def test_a_slave_refuses_sends_and_a_sync_master_without_slave_says_so(
    pair: tuple[ClusterThread, Broker],
) -> None:
    cluster, slave = pair
    cluster.create_topic("HaAlone", 1)

    async def send(addr: str) -> tuple[int, str | None]:
        client = RemotingClient()
        try:
            response = await client.invoke(addr, send_request("HaAlone", b"x"), 5.0)
            return response.code, response.remark
        finally:
            await client.close()

    code, remark = cluster.thread.call(send(slave.address), timeout=10)
    assert code == ResponseCode.SERVICE_NOT_AVAILABLE, remark
    # a pull's commit flag is ignored on a slave (4.9's storeOffsetEnable), as the master's
    # offsets are what the slave copies
    assert wait_until(lambda: slave.topics.select("HaAlone") is not None, 10)

    async def pull_committing(addr: str) -> int:
        client = RemotingClient()
        try:
            request = pull_request("ha_alone_group", "HaAlone", 0, 0, commit_offset=1)
            return (await client.invoke(addr, request, 5.0)).code
        finally:
            await client.close()

    assert cluster.thread.call(pull_committing(slave.address), timeout=10) != ResponseCode.SYSTEM_ERROR
    assert slave.store.consumer_offsets.query_offset("ha_alone_group", "HaAlone", 0) == -1
    cluster.thread.call(slave.close(), timeout=30)
    master = cluster.cluster.broker
    assert master is not None
    assert master.ha_master is not None
    assert wait_until(lambda: not master.ha_master.slaves, 10)  # type: ignore[union-attr]
    with Producer("ha_alone", client_config=cluster.client_config()) as producer:
        result = producer.send(Message("HaAlone", b"y"))
    assert result.status is SendStatus.SLAVE_NOT_AVAILABLE  # stored on the master, reported


def test_consumers_read_from_the_slave_while_the_master_is_gone(
    pair: tuple[ClusterThread, Broker], tmp_path: Path
) -> None:
    cluster, slave = pair
    master = cluster.cluster.broker
    assert master is not None
    cluster.create_topic("HaRead", 2)
    n = random.randint(10, 30)
    with Producer("ha_read", client_config=cluster.client_config()) as producer:
        sent = {producer.send(Message("HaRead", f"r{i}".encode())).msg_id for i in range(n)}
    assert wait_until(lambda: slave.topics.select("HaRead") is not None, 10)
    cluster.thread.call(master.close(), timeout=30)  # unregisters: the route keeps the slave only
    config = replace(cluster.client_config("reader"), poll_name_server_interval=0.5, rebalance_interval=0.5)
    got: set[str] = set()
    consumer = LitePullConsumer(
        "ha_read_group",
        client_config=config,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        auto_commit=False,
    )
    consumer.subscribe("HaRead", "*")
    with consumer:

        def polled() -> bool:
            got.update(m.msg_id for m in consumer.poll(0.2))
            return got >= sent

        assert wait_until(polled, 15)
        assert got >= sent
        consumer.commit_sync()  # to the slave: the master is gone
        # the slave keeps them (RocketMQ 4.9's slave takes UPDATE_CONSUMER_OFFSET as any broker does)
        on_slave = slave.store.consumer_offsets
        assert sum(on_slave.query_offset("ha_read_group", "HaRead", q) for q in (0, 1)) == n
        # the master comes back (same data, same port): the consumer's next commit goes to it
        back = Broker(replace(master.config, port=master.port))
        cluster.thread.call(back.start(), timeout=30)
        try:
            mq0 = next(iter(consumer.assignment()))
            assert wait_until(
                lambda: consumer.core.instance.find_broker_address_in_publish(mq0.broker_name) is not None, 10
            )
            consumer.commit_sync()
            on_master = back.store.consumer_offsets
            assert sum(on_master.query_offset("ha_read_group", "HaRead", q) for q in (0, 1)) == n
        finally:
            cluster.thread.call(back.close(), timeout=30)


async def _route(namesrv: str, topic: str) -> TopicRouteData:
    client = RemotingClient()
    try:
        return await client.call(namesrv, calls.get_route_info(topic), 5.0)
    finally:
        await client.close()


async def _runtime(addr: str) -> dict[str, str]:
    client = RemotingClient()
    try:
        return await client.call(addr, calls.get_broker_runtime_info(), 5.0)
    finally:
        await client.close()


def test_a_slave_that_does_not_ack_in_time_gets_flush_slave_timeout(tmp_path: Path) -> None:
    cluster = ClusterThread(tmp_path / "master", role="sync-master", ha=FAST_HA)
    try:
        master = cluster.cluster.broker
        assert master is not None
        assert master.ha_master is not None
        ha = master.ha_master
        cluster.create_topic("HaSlow", 1)

        async def mute_slave() -> asyncio.StreamWriter:
            # a slave (this test, on the HA codec) that reports once and never acknowledges again
            _reader, writer = await asyncio.open_connection("127.0.0.1", ha.port)
            writer.write(encode_report(master.store.commit_log_max_offset))
            await writer.drain()
            return writer

        writer = cluster.thread.call(mute_slave(), timeout=10)
        assert wait_until(lambda: bool(ha.slaves) and ha.slaves[0].ack_offset >= 0, 10)
        began = time.monotonic()
        with Producer("ha_slow", client_config=cluster.client_config()) as producer:
            result = producer.send(Message("HaSlow", b"z" * random.randint(1, 2000)))
        assert result.status is SendStatus.FLUSH_SLAVE_TIMEOUT
        assert time.monotonic() - began >= FAST_HA.slave_timeout * 0.9
        writer.close()
    finally:
        cluster.close()
