"""Clients spread evenly over a cluster of many brokers: no hot broker.

Eight real brokers (in process, one background loop, their own data dirs and ports) register with
one name server; a topic is created on all of them through the admin layer, as ``rocketq server
--brokers 8`` and ``mqadmin updateTopic -c`` do. Then, over a run:

* a producer's sends land on each broker within ±10 % of an even share, and each message costs one
  SEND round trip (the brokers' stored counts equal the acknowledged sends: no retry, no extra
  request per message);
* a consumer group's AVG allocation gives every queue of every broker to exactly one member, the
  members' shares differing by at most one queue;
* the Spark writer's tasks (``send_rows`` for each partition, the executor side of
  ``df.write.format("rocketmq")``) land on each broker within ±10 %.

Sizes, member count and partition count are drawn at random (the seed is printed).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketq import (
    Admin,
    ClientConfig,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    Message,
    Producer,
    PushConsumer,
)
from rocketq.broker import Broker, BrokerConfig
from rocketq.client.loop_thread import LoopThread
from rocketq.models import MessageQueue
from rocketq.namesrv import NameServer, NamesrvConfig
from rocketq.protocol import RemotingCommand, RequestCode
from rocketq.remoting import RPCHook
from tests.integration.clientkit import Received, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

BROKERS = 8
QUEUES = 4  # per broker, as a topic created with --queues 4 on every broker of the cluster


class RequestCounter(RPCHook):
    """Requests a broker handled, by request code (RocketMQ's RPC hook point, on the broker)."""

    def __init__(self) -> None:
        self.by_code: Counter[int] = Counter()

    def before_request(self, addr: str, request: RemotingCommand) -> None:
        self.by_code[request.code] += 1


class ManyBrokers:
    """A name server and :data:`BROKERS` brokers on one background loop."""

    def __init__(self, root: Path) -> None:
        self.thread = LoopThread("many-brokers", use_uvloop=False)
        self.namesrv = NameServer(NamesrvConfig(port=0))
        self.brokers: list[Broker] = []
        self.requests: list[RequestCounter] = []

        async def start() -> None:
            await self.namesrv.start()
            for i in range(BROKERS):
                config = BrokerConfig(
                    port=0,
                    broker_name=f"broker-{chr(ord('a') + i)}",
                    data_dir=root / f"b{i}",
                    namesrv_addrs=(self.namesrv.address,),
                )
                broker = Broker(config)
                counter = RequestCounter()
                broker.remoting.add_hook(counter)
                await broker.start()
                self.brokers.append(broker)
                self.requests.append(counter)

        self.thread.call(start(), timeout=60)
        self.addr = self.namesrv.address

    def config(self, name: str) -> ClientConfig:
        return ClientConfig(namesrv=self.addr, client_ip="127.0.0.1", instance_name=name)

    def close(self) -> None:
        async def stop() -> None:
            for broker in self.brokers:
                await broker.close()
            await self.namesrv.close()

        try:
            self.thread.call(stop(), timeout=60)
        finally:
            self.thread.stop()


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ManyBrokers]:
    m = ManyBrokers(tmp_path_factory.mktemp("many"))
    try:
        yield m
    finally:
        m.close()


def create(many: ManyBrokers, topic: str) -> None:
    with Admin(many.addr) as admin:
        assert len(admin.create_topic(topic, queues=QUEUES)) == BROKERS


def stored_per_broker(many: ManyBrokers, topic: str) -> Counter[str]:
    with Admin(many.addr) as admin:
        stats = admin.topic_stats(topic)
    out: Counter[str] = Counter()
    for q in stats.queues:
        out[q.queue.broker_name] += q.max_offset
    return out


def assert_even(counts: Counter[str], total: int, what: str) -> None:
    share = total / BROKERS
    assert len(counts) == BROKERS, f"{what}: {dict(counts)}"
    for broker, n in counts.items():
        assert abs(n - share) <= 0.1 * share, f"{what}: {broker} got {n} of {total} ({dict(counts)})"


def test_a_producer_spreads_its_sends_evenly_one_round_trip_each(many: ManyBrokers) -> None:
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    topic = "SpreadSends"
    create(many, topic)
    total = rng.randrange(400, 1200)
    with Producer("spread_sends", client_config=many.config("p")) as p:
        before = [counter.by_code.copy() for counter in many.requests]
        sent = Counter(p.send(Message(topic, f"m{i}")).message_queue.broker_name for i in range(total))
        during = [counter.by_code - b for counter, b in zip(many.requests, before, strict=True)]
    assert_even(sent, total, f"seed {seed}: sends")
    assert stored_per_broker(many, topic) == sent, f"seed {seed}"  # one stored message per send
    # one round trip per message: each broker saw one SEND per message it stored and, besides,
    # at most the client's periodic heartbeat
    for broker, requests in zip(many.brokers, during, strict=True):
        name = broker.config.broker_name
        assert requests[RequestCode.SEND_MESSAGE_V2] == sent[name], f"seed {seed}: {name} {requests}"
        assert sum(requests.values()) - sent[name] <= 2, f"seed {seed}: {name} {requests}"


def test_a_group_allocates_every_queue_of_every_broker_once(many: ManyBrokers) -> None:
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    topic = "SpreadGroup"
    create(many, topic)
    members = rng.randrange(2, 6)
    got = Received()
    consumers = []
    for i in range(members):
        c = PushConsumer(
            "spread_group",
            client_config=many.config(f"c{i}"),
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        )
        c.subscribe(topic)
        c.register_listener(
            lambda msgs, name=f"c{i}": got.add(name, msgs) or ConsumeConcurrentlyStatus.CONSUME_SUCCESS  # type: ignore[func-returns-value]
        )
        consumers.append(c.start())
    try:
        every = {
            MessageQueue(topic, f"broker-{chr(ord('a') + b)}", q)
            for b in range(BROKERS)
            for q in range(QUEUES)
        }

        def owned() -> list[set[MessageQueue]]:
            return [{mq for mq in c.running_info().mq_table if mq.topic == topic} for c in consumers]

        def settled() -> bool:
            # every queue owned once, and balanced: with the clean handoff a queue stays with its
            # old owner until that one has handed it over, so an exact cover can come first
            mine = owned()
            sizes = sorted(len(o) for o in mine)
            exact = sum(sizes) == len(every) and set().union(*mine) == every
            return exact and sizes[-1] - sizes[0] <= 1

        assert wait_until(settled, 40), f"seed {seed}: {[len(o) for o in owned()]}"
        with Producer("spread_group_p", client_config=many.config("gp")) as p:
            for i in range(len(every) * 4):
                p.send(Message(topic, f"g{i}"))
        assert wait_until(lambda: got.distinct() == len(every) * 4, 30), f"seed {seed}"
    finally:
        for c in consumers:
            c.shutdown()


@pytest.mark.spark
def test_the_spark_writer_spreads_its_tasks_batches_evenly(many: ManyBrokers) -> None:
    pa = pytest.importorskip("pyarrow")
    from rocketq.spark.source import parse_options
    from rocketq.spark.writer import send_rows

    seed = random.randrange(2**32)
    rng = random.Random(seed)
    topic = "SpreadSpark"
    create(many, topic)
    partitions = rng.randrange(1, 9)
    # per partition: 100-200 batches of 4 rows, so that one batch more or less on a broker is
    # within the 10 % (a task gives each broker its share of batches, give or take one)
    rows = rng.randrange(400, 800)
    opts = parse_options({"namesrv": many.addr, "topic": topic, "sendBatchSize": "4"}, writing=True)
    per_broker: Counter[str] = Counter()
    for part in range(partitions):
        table = pa.table({"body": pa.array([f"{part}-{i}".encode() for i in range(rows)], pa.binary())})
        stats = send_rows(iter(table.to_batches()), opts, part)
        for short, n in stats.per_queue.items():
            per_broker[short.rsplit(":", 1)[0]] += n
    total = partitions * rows
    assert sum(per_broker.values()) == total
    assert_even(per_broker, total, f"seed {seed}: {partitions} tasks of {rows} rows")
    assert stored_per_broker(many, topic) == per_broker, f"seed {seed}"
