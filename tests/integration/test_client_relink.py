"""A consumer whose broker went away registers again within about a second of its return, whatever
its heartbeat and rebalance intervals: the client tries a lost broker again soon."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from rocketq import ClientConfig, PushConsumer
from rocketq.broker import Broker, BrokerConfig
from tests.integration.clientkit import ClusterThread, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

GROUP = "relink_group"


def _broker_b(cluster: ClusterThread, data_dir: Path, port: int = 0) -> Broker:
    broker = Broker(
        BrokerConfig(port=port, broker_name="broker-b", data_dir=data_dir, namesrv_addrs=(cluster.namesrv,))
    )
    cluster.thread.call(broker.start(), timeout=30)
    return broker


def _members(cluster: ClusterThread, broker: Broker) -> set[str]:
    async def ids() -> set[str]:
        return set(broker.consumers.client_ids(GROUP))

    result: set[str] = cluster.thread.call(ids(), timeout=5)
    return result


def test_a_consumer_registers_again_soon_after_its_broker_returns(
    cluster: ClusterThread, tmp_path: Path
) -> None:
    rng = random.Random()
    seed = rng.randrange(1_000_000)
    rng.seed(seed)
    down = rng.uniform(0.3, 2.0)
    print(f"seed {seed}: broker-b down {down:.2f} s")
    b = _broker_b(cluster, tmp_path / "b")
    port = int(b.address.rsplit(":", 1)[1])
    cluster.create_topic("RelinkTopic", 2)  # on broker-a only: no pull of ours goes to broker-b
    # broker-b must be in the client's routes to be heartbeated: a topic there too
    saved, cluster.broker_addr = cluster.broker_addr, b.address
    cluster.create_topic("RelinkOther", 1)
    cluster.broker_addr = saved
    config = ClientConfig(
        namesrv=cluster.namesrv,
        client_ip="127.0.0.1",
        instance_name="relink",
        heartbeat_broker_interval=30.0,  # RocketMQ's: no periodic heartbeat within the test
        rebalance_interval=30.0,
        poll_name_server_interval=30.0,  # the route it has keeps broker-b throughout
    )
    # a failed pull waits 30 s: no pull reconnects to broker-b within the test either
    consumer = PushConsumer(GROUP, client_config=config, pull_time_delay_when_exception=30.0)
    consumer.subscribe("RelinkTopic")
    consumer.subscribe("RelinkOther")
    consumer.register_listener(lambda msgs, ctx: None)
    with consumer:
        client_id = consumer.client_id
        assert wait_until(lambda: client_id in _members(cluster, b), 10.0)
        cluster.thread.call(b.close(), timeout=30)
        time.sleep(down)  # the outage itself: what the test varies
        b = _broker_b(cluster, tmp_path / "b", port)
        back = time.monotonic()
        try:
            assert wait_until(lambda: client_id in _members(cluster, b), 5.0), f"seed {seed}"
            took = time.monotonic() - back
            print(f"registered again {took:.2f} s after broker-b returned")
            assert took < 2.0, f"seed {seed}: {took:.2f} s"
        finally:
            cluster.thread.call(b.close(), timeout=30)
