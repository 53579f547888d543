"""The lite pull consumer against the embedded rocketq broker: assign, subscribe, poll, seek,
commit, pause/resume, and what the broker sees of its offsets."""

from __future__ import annotations

import time

import pytest

from rocketq import ConsumeFromWhere, Message, MessageQueue, Producer
from rocketq.client.api import ClientAPI
from rocketq.client.consumer.lite_pull import LitePullConsumer
from rocketq.errors import ClientStateError, ConfigError
from rocketq.protocol import calls
from rocketq.protocol.message import MessageExt
from rocketq.remoting import RemotingClient
from tests.integration.clientkit import ClusterThread, wait_until

pytestmark = pytest.mark.integration


def mq(topic: str, q: int) -> MessageQueue:
    return MessageQueue(topic, "broker-a", q)


def produce(cluster: ClusterThread, topic: str, queues: int, per_queue: int, start: int = 0) -> None:
    with Producer(
        f"lp_producer_{topic}_{start}", client_config=cluster.client_config(f"p-{topic}-{start}")
    ) as p:
        for i in range(start, start + per_queue):
            for q in range(queues):
                p.send(Message(topic, f"{q}:{i}"), queue=mq(topic, q))


def drain(consumer: LitePullConsumer, want: int, timeout: float = 10.0) -> list[MessageExt]:
    out: list[MessageExt] = []
    deadline = time.monotonic() + timeout
    while len(out) < want and time.monotonic() < deadline:
        out += consumer.poll(0.2)
    return out


def broker_offset(cluster: ClusterThread, group: str, queue: MessageQueue) -> int:
    """QUERY_CONSUMER_OFFSET as a tool would send it (-1: none)."""

    async def query() -> int:
        remoting = RemotingClient()
        try:
            offset = await ClientAPI(remoting, (cluster.namesrv,), timeout=3.0).call(
                cluster.broker_addr, calls.query_consumer_offset(group, queue)
            )
            return -1 if offset is None else offset
        except Exception:
            return -1
        finally:
            await remoting.close()

    return cluster.thread.call(query())


def test_assign_poll_commit_sync_and_committed(cluster: ClusterThread) -> None:
    cluster.create_topic("TopicLP1", 2)
    produce(cluster, "TopicLP1", 2, 25)
    c = LitePullConsumer(
        "lp_g1",
        client_config=cluster.client_config("c1"),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )
    c.assign([mq("TopicLP1", 0), mq("TopicLP1", 1)])
    with c:
        assert c.fetch_message_queues("TopicLP1") == [mq("TopicLP1", 0), mq("TopicLP1", 1)]
        msgs = drain(c, 50)
        assert len(msgs) == 50
        for q in (0, 1):
            assert [m.body.decode() for m in msgs if m.queue_id == q] == [f"{q}:{i}" for i in range(25)]
        assert max(len(b) for b in [msgs]) >= 10  # batches of pull_batch_size (10)
        done = c.commit_sync()
        assert done == {mq("TopicLP1", 0): 25, mq("TopicLP1", 1): 25}
        assert broker_offset(cluster, "lp_g1", mq("TopicLP1", 0)) == 25  # on the broker already
        assert c.committed(mq("TopicLP1", 1)) == 25
        assert c.poll(0.1) == []
        with pytest.raises(ClientStateError):
            c.subscribe("TopicLP1")  # assign and subscribe are exclusive


def test_seek_pause_resume_and_offset_for_timestamp(cluster: ClusterThread) -> None:
    cluster.create_topic("TopicLP2", 1)
    produce(cluster, "TopicLP2", 1, 30)
    q0 = mq("TopicLP2", 0)
    c = LitePullConsumer(
        "lp_g2",
        client_config=cluster.client_config("c1"),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        auto_commit=False,
    )
    c.assign([q0])
    with c:
        first = drain(c, 30)
        assert [m.queue_offset for m in first] == list(range(30))
        c.seek(q0, 5)
        again = drain(c, 25)
        assert [m.queue_offset for m in again] == list(range(5, 30))
        c.seek_to_begin(q0)
        assert drain(c, 30)[0].queue_offset == 0
        c.seek_to_end(q0)
        assert c.poll(0.3) == []
        with pytest.raises(ConfigError):
            c.seek(q0, 31)  # past the max offset
        with pytest.raises(ClientStateError):
            c.seek(mq("TopicLP2", 7), 0)  # not assigned
        c.pause([q0])
        assert c.is_paused(q0)
        time.sleep(0.3)  # a pull in flight when pausing may still deliver
        c.poll(0.1)
        produce(cluster, "TopicLP2", 1, 5, start=30)
        assert c.poll(0.5) == []  # paused: not pulled
        c.resume([q0])
        assert [m.queue_offset for m in drain(c, 5)] == list(range(30, 35))
        ts = first[10].store_timestamp
        assert c.offset_for_timestamp(q0, ts) <= 10
        # auto_commit off, nothing committed: the broker answers 0 for a group without an offset on
        # a queue whose first message it still holds (as RocketMQ's broker does)
        assert broker_offset(cluster, "lp_g2", q0) == 0
        c.commit({q0: 12})
        assert broker_offset(cluster, "lp_g2", q0) == 12


def test_subscribe_rebalances_and_auto_commit_reaches_the_broker(cluster: ClusterThread) -> None:
    cluster.create_topic("TopicLP3", 4)
    produce(cluster, "TopicLP3", 4, 10)
    opts = {"consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, "auto_commit_interval": 1.0}
    c1 = LitePullConsumer("lp_g3", client_config=cluster.client_config("c1"), **opts)
    c1.subscribe("TopicLP3")
    c1.start()
    c2 = LitePullConsumer("lp_g3", client_config=cluster.client_config("c2"), **opts)
    try:
        assert c1.assignment() == [mq("TopicLP3", q) for q in range(4)]
        assert len(drain(c1, 40)) == 40
        time.sleep(1.0)
        c1.poll(0.05)  # auto-commit is due: the consumed offsets go to the broker
        assert wait_until(lambda: broker_offset(cluster, "lp_g3", mq("TopicLP3", 3)) == 10, 5)
        c2.subscribe("TopicLP3")
        c2.start()
        assert wait_until(lambda: len(c1.assignment()) == 2 and len(c2.assignment()) == 2, 5)
        assert c2.assignment() == [mq("TopicLP3", 2), mq("TopicLP3", 3)]
        produce(cluster, "TopicLP3", 4, 5, start=10)
        got2 = drain(c2, 10)
        assert sorted(m.body.decode() for m in got2) == sorted(
            f"{q}:{i}" for q in (2, 3) for i in range(10, 15)
        )
        assert len(drain(c1, 10)) == 10
        records = c2.rebalance_records("TopicLP3")
        assert records[0].added == (mq("TopicLP3", 2), mq("TopicLP3", 3))
    finally:
        c2.shutdown()
        c1.shutdown()
    # shutdown committed what was polled
    assert broker_offset(cluster, "lp_g3", mq("TopicLP3", 2)) == 15
