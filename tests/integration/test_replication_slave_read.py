"""Reading from the slave while the master is up, when the master says so: RocketMQ 4.9's
``slaveReadEnable`` / ``accessMessageInMemoryMaxRatio`` rule, with a real master and slave and a
rocketq push consumer that follows the brokers' ``suggestWhichBrokerId``.

The threshold is ``ratio`` percent of an injected memory figure (``StoreConfig.physical_memory``),
drawn at random against the backlog's size, so no test fills 40% of the machine's RAM.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from rocketq import (
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    LitePullConsumer,
    Message,
    Producer,
    PushConsumer,
    SendStatus,
)
from rocketq.broker import Broker
from rocketq.protocol import ResponseCode
from rocketq.remoting import RemotingClient
from rocketq.store import StoreConfig
from tests.integration.brokerkit import pull_request
from tests.integration.clientkit import ClusterThread, Received, wait_until
from tests.integration.test_replication import FAST_HA, slave_config, wait_linked

pytestmark = pytest.mark.integration

TOPIC = "SlaveRead"
OK = ConsumeConcurrentlyStatus.CONSUME_SUCCESS


@dataclass
class Pair:
    cluster: ClusterThread
    master: Broker
    slave: Broker
    rng: random.Random
    sizes: list[int]
    queues: int


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Pair]:
    seed = random.randrange(1 << 32)
    print("seed", seed)
    rng = random.Random(seed)
    queues = rng.randint(1, 3)
    sizes = [rng.randint(100, 1200) for _ in range(rng.randint(120, 300))]
    backlog = sum(sizes) + 150 * len(sizes)  # about: a record adds its header and properties
    ratio = rng.choice((5, 20, 40))
    threshold = max(6000, int(backlog * rng.uniform(0.15, 0.5)))
    store = StoreConfig(physical_memory=threshold * 100 // ratio, access_message_in_memory_max_ratio=ratio)
    print(f"queues {queues} messages {len(sizes)} ~{backlog} bytes, threshold {threshold} ({ratio}%)")
    cluster = ClusterThread(
        tmp_path / "master", role="sync-master", ha=FAST_HA, slave_read_enable=True, store=store
    )
    config = slave_config(cluster, tmp_path, slave_read_enable=True, store=store)
    # a slave started once before: its boot generation, so its group epochs, differ from the
    # master's - a consumer sent there must not carry the master's view stamp (rocketq's fence)
    first = Broker(config)
    cluster.thread.call(first.start(), timeout=30)
    cluster.thread.call(first.close(), timeout=30)
    slave = Broker(config)
    cluster.thread.call(slave.start(), timeout=30)
    try:
        master = wait_linked(cluster)
        yield Pair(cluster, master, slave, rng, sizes, queues)
    finally:
        cluster.thread.call(slave.close(), timeout=30)
        cluster.close()


async def _suggestion(addr: str, group: str, queue_id: int, offset: int) -> tuple[int, str]:
    client = RemotingClient()
    try:
        response = await client.invoke(addr, pull_request(group, TOPIC, queue_id, offset), 5.0)
        return response.code, response.ext_fields["suggestWhichBrokerId"]
    finally:
        await client.close()


def test_a_consumer_far_behind_reads_from_the_slave_and_comes_back(pair: Pair) -> None:
    cluster, master, slave, rng = pair.cluster, pair.master, pair.slave, pair.rng
    cluster.create_topic(TOPIC, pair.queues)
    with Producer("slave_read_p", client_config=cluster.client_config()) as producer:
        results = [
            producer.send(Message(TOPIC, f"{i}:".encode() + b"b" * s)) for i, s in enumerate(pair.sizes)
        ]
        assert all(r.status is SendStatus.SEND_OK for r in results)  # sync master: the slave has them
        assert wait_until(lambda: slave.topics.select(TOPIC) is not None, 10)

        # what each broker answers a pull, at random offsets: the store's flag, turned into
        # whichBrokerWhenConsumeSlowly (1) or the group's brokerId (0), on master and slave alike
        for _ in range(6):
            qid = rng.randrange(pair.queues)
            top = master.store.max_offset(TOPIC, qid)
            offset = rng.randrange(top) if top else 0
            slow = master.store.get_messages(TOPIC, qid, offset, 32).suggest_pulling_from_slave
            for broker in (master, slave):
                code, suggest = cluster.thread.call(
                    _suggestion(broker.address, "raw_g", qid, offset), timeout=10
                )
                assert code == ResponseCode.SUCCESS
                assert suggest == ("1" if slow else "0"), (broker.config.role, qid, offset)
        # the first messages are far behind the log's end, the last ones are not
        assert cluster.thread.call(_suggestion(master.address, "raw_g", 0, 0), timeout=10)[1] == "1"
        last = master.store.max_offset(TOPIC, 0) - 1
        assert cluster.thread.call(_suggestion(slave.address, "raw_g", 0, last), timeout=10)[1] == "0"

        slave_before, master_before = slave.stats.get_total, master.stats.get_total
        got = Received()
        consumer = PushConsumer(
            "slave_read_g",
            client_config=cluster.client_config("c1"),
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        )
        consumer.subscribe(TOPIC)
        consumer.register_listener(lambda msgs: (got.add("c1", msgs), OK)[1])
        with consumer:
            n = len(pair.sizes)
            assert wait_until(lambda: got.distinct() == n, 30), got.distinct()
            served_by_slave = slave.stats.get_total - slave_before
            served_by_master = master.stats.get_total - master_before
            print("messages served by the slave", served_by_slave, "by the master", served_by_master)
            assert served_by_slave > 0  # told to go to the slave, it went
            assert served_by_master > 0  # its first pulls, before the suggestion
            assert served_by_slave + served_by_master >= n
            # caught up, the slave sent it back: every queue's long poll is parked on the master
            assert wait_until(lambda: master.held_pulls >= pair.queues and slave.held_pulls == 0, 15)
            more = rng.randint(3, 12)
            for i in range(more):
                assert producer.send(Message(TOPIC, f"more{i}".encode())).status is SendStatus.SEND_OK
            assert wait_until(lambda: got.distinct() == n + more, 15)
            assert slave.stats.get_total - slave_before == served_by_slave  # the tail: from the master
        assert got.duplicates() == 0
        n += more

        # a lite pull consumer follows the suggestions too (Java's does, through PullAPIWrapper)
        slave_before = slave.stats.get_total
        lite = LitePullConsumer(
            "slave_read_lite",
            client_config=cluster.client_config("c2"),
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        )
        lite.subscribe(TOPIC, "*")
        seen: dict[bytes, int] = {}
        with lite:

            def polled() -> bool:
                for m in lite.poll(0.2):
                    seen[m.body] = seen.get(m.body, 0) + 1
                return len(seen) >= n

            assert wait_until(polled, 30), len(seen)
        print("the lite pull consumer: messages served by the slave", slave.stats.get_total - slave_before)
        assert slave.stats.get_total > slave_before
        assert max(seen.values()) == 1


def test_without_slave_read_enable_every_pull_suggests_the_master(tmp_path: Path) -> None:
    # RocketMQ's default (slaveReadEnable false): a threshold of 0 bytes flags every read, and
    # still the master is suggested, by master and slave alike
    store = StoreConfig(physical_memory=0)
    cluster = ClusterThread(tmp_path / "master", role="sync-master", ha=FAST_HA, store=store)
    slave = Broker(replace(slave_config(cluster, tmp_path), store=store))
    cluster.thread.call(slave.start(), timeout=30)
    try:
        cluster.create_topic(TOPIC, 1)
        with Producer("slave_read_off", client_config=cluster.client_config()) as producer:
            for i in range(random.randint(3, 20)):
                assert producer.send(Message(TOPIC, f"x{i}".encode())).status is SendStatus.SEND_OK
        assert wait_until(lambda: slave.topics.select(TOPIC) is not None, 10)
        master = cluster.cluster.broker
        assert master is not None
        assert master.store.get_messages(TOPIC, 0, 0, 1).suggest_pulling_from_slave
        for broker in (master, slave):
            code, suggest = cluster.thread.call(_suggestion(broker.address, "raw_off", 0, 0), timeout=10)
            assert (code, suggest) == (ResponseCode.SUCCESS, "0")
    finally:
        cluster.thread.call(slave.close(), timeout=30)
        cluster.close()
