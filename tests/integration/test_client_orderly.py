"""Orderly consumption against the embedded rocketq broker: broker locks, per-queue order, suspend.

Each consumer has its own client id (its own client instance), as separate processes would.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from rocketq import (
    ClientConfig,
    ConsumeFromWhere,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    Message,
    MessageModel,
    MessageQueue,
    Producer,
    PushConsumer,
)
from rocketq.client.consumer.consume_orderly import OrderlyPushConsumerCore
from rocketq.protocol.message import MessageExt
from tests.integration.clientkit import ClusterThread, wait_until

pytestmark = pytest.mark.integration

SUCCESS = ConsumeOrderlyStatus.SUCCESS
SUSPEND = ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT


def produce(cluster: ClusterThread, topic: str, queues: int, per_queue: int, tag: str = "o") -> None:
    with Producer(f"{tag}_producer", client_config=cluster.client_config(f"{tag}-p")) as producer:
        for i in range(per_queue):
            for q in range(queues):
                producer.send(Message(topic, f"{q}:{i}"), queue=MessageQueue(topic, "broker-a", q))


class Seen:
    """Per queue, the sequence numbers a group's orderly listeners saw, and who saw them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by_queue: dict[int, list[int]] = {}
        self.by_client: dict[str, set[int]] = {}
        self.concurrent: dict[int, int] = {}
        self.max_concurrent = 0

    def listener(self, name: str, delay: float = 0.0):  # type: ignore[no-untyped-def]
        def fn(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
            qid = ctx.message_queue.queue_id
            with self.lock:
                self.concurrent[qid] = self.concurrent.get(qid, 0) + 1
                self.max_concurrent = max(self.max_concurrent, self.concurrent[qid])
            try:
                if delay:
                    time.sleep(delay)
                with self.lock:
                    for m in msgs:
                        q, n = m.body.decode().split(":")
                        assert int(q) == m.queue_id == qid
                        self.by_queue.setdefault(qid, []).append(int(n))
                        self.by_client.setdefault(name, set()).add(qid)
            finally:
                with self.lock:
                    self.concurrent[qid] -= 1
            return SUCCESS

        return fn

    def total(self) -> int:
        with self.lock:
            return sum(len(v) for v in self.by_queue.values())


def orderly_consumer(
    cluster: ClusterThread, group: str, topic: str, name: str, fn, **options
) -> PushConsumer:  # type: ignore[no-untyped-def]
    c = PushConsumer(
        group,
        client_config=cluster.client_config(name),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        **options,
    )
    c.subscribe(topic)
    c.register_listener(fn, orderly=True)
    return c


def test_each_queue_is_consumed_in_order_one_thread_at_a_time(cluster: ClusterThread) -> None:
    cluster.create_topic("TopicOrd", 4)
    produce(cluster, "TopicOrd", 4, 100)
    seen = Seen()
    c = orderly_consumer(
        cluster, "ord_g1", "TopicOrd", "c1", seen.listener("c1", 0.0005), consume_thread_max=8
    )
    with c:
        assert isinstance(c.core, OrderlyPushConsumerCore)
        assert c.running_info().properties["PROP_CONSUMEORDERLY"] == "true"
        assert wait_until(lambda: seen.total() == 400, 20)
        for qid in range(4):
            assert seen.by_queue[qid] == list(range(100)), qid
        assert seen.max_concurrent == 1
        assert wait_until(lambda: sum(c.committed_offsets().values()) == 400)
        info = c.running_info()
        assert all(pq.locked for pq in info.mq_table.values())


def test_only_one_consumer_holds_a_queue_and_a_moved_queue_continues_in_order(cluster: ClusterThread) -> None:
    cluster.create_topic("TopicOrd2", 4)
    seen = Seen()
    c1 = orderly_consumer(cluster, "ord_g2", "TopicOrd2", "c1", seen.listener("c1"))
    c1.start()
    c2 = None
    try:
        produce(cluster, "TopicOrd2", 4, 20, "a")
        assert wait_until(lambda: seen.total() == 80, 15)
        c2 = orderly_consumer(cluster, "ord_g2", "TopicOrd2", "c2", seen.listener("c2"), handoff="clean")
        c2.start()
        # c2 gets queues 2 and 3 once c1 has committed and unlocked them (c1 has nothing cached)
        assert wait_until(lambda: len(c2.assigned_queues()) >= 2 and len(c1.assigned_queues()) == 3, 15)
        owned1 = {q.queue_id for q in c1.assigned_queues("TopicOrd2")}
        owned2 = {q.queue_id for q in c2.assigned_queues("TopicOrd2")}
        assert owned1 == {0, 1}
        assert owned2 == {2, 3}
        produce(cluster, "TopicOrd2", 4, 20, "b")
        assert wait_until(lambda: seen.total() == 160, 15)
        for qid in range(4):
            assert seen.by_queue[qid] == list(range(20)) * 2, qid  # each round in order, nothing twice
        assert seen.by_client["c2"] <= {2, 3}
    finally:
        if c2 is not None:
            c2.shutdown()
        c1.shutdown()


def test_suspend_consumes_the_same_messages_again_after_the_pause(cluster: ClusterThread) -> None:
    cluster.create_topic("TopicOrd3", 1)
    produce(cluster, "TopicOrd3", 1, 3)
    calls: list[tuple[float, list[int]]] = []

    def fn(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
        calls.append((time.monotonic(), [m.queue_offset for m in msgs]))
        if len(calls) <= 2:
            ctx.suspend_current_queue_time = 0.2
            return SUSPEND
        return SUCCESS

    c = orderly_consumer(cluster, "ord_g3", "TopicOrd3", "c1", fn)
    with c:
        assert wait_until(lambda: len(calls) >= 5, 10)
        offsets = [o for _, o in calls]
        assert offsets[:3] == [[0], [0], [0]]
        assert offsets[3:5] == [[1], [2]]
        assert calls[1][0] - calls[0][0] >= 0.19
        assert calls[2][0] - calls[1][0] >= 0.19
        assert wait_until(lambda: c.committed_offsets().get(MessageQueue("TopicOrd3", "broker-a", 0)) == 3)


def test_a_message_failing_past_max_reconsume_times_goes_to_the_dlq(cluster: ClusterThread) -> None:
    cluster.create_topic("TopicOrd4", 1)
    produce(cluster, "TopicOrd4", 1, 2)
    attempts: dict[int, int] = {}

    def fn(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
        off = msgs[0].queue_offset
        attempts[off] = attempts.get(off, 0) + 1
        ctx.suspend_current_queue_time = 0.01
        return SUSPEND if off == 0 else SUCCESS

    c = orderly_consumer(cluster, "ord_g4", "TopicOrd4", "c1", fn, max_reconsume_times=2)
    with c:
        assert wait_until(lambda: attempts.get(1) == 1, 10)
        assert attempts[0] == 3  # the first try and two reconsumes, then the dead-letter queue
        assert wait_until(lambda: c.committed_offsets().get(MessageQueue("TopicOrd4", "broker-a", 0)) == 2)
    broker = cluster.cluster.broker
    assert broker is not None

    async def dlq_depth() -> int:
        return broker.store.max_offset("%DLQ%ord_g4", 0)

    assert wait_until(lambda: cluster.thread.call(dlq_depth()) == 1)


def test_a_lost_lock_stops_consumption_until_it_is_taken_again(cluster: ClusterThread) -> None:
    cluster.create_topic("TopicOrd5", 1)
    seen = Seen()
    c = orderly_consumer(cluster, "ord_g5", "TopicOrd5", "c1", seen.listener("c1"))
    with c:
        mq = MessageQueue("TopicOrd5", "broker-a", 0)
        assert wait_until(lambda: mq in c.assigned_queues())
        core = c.core
        pq = core.rebalance.process_queue_table[mq]
        # another client takes the broker lock (as after a lease expiry), and ours is judged lost
        broker = cluster.cluster.broker
        assert broker is not None
        thief = broker.locks

        async def steal() -> None:
            thief.unlock_batch("ord_g5", [mq], c.client_id)
            assert thief.try_lock_batch("ord_g5", [mq], "127.0.0.1@thief", now=broker.wall()) == {mq}

        cluster.thread.call(steal())
        core.instance.loop_thread.call(core.lease.renew())
        assert not pq.locked
        produce(cluster, "TopicOrd5", 1, 5)
        time.sleep(0.5)
        assert seen.total() == 0  # not consumed without the lock
        cluster.thread.call(_release(thief, "ord_g5", mq))
        assert wait_until(lambda: seen.total() == 5, 10)
        assert seen.by_queue[0] == list(range(5))


async def _release(locks, group: str, mq: MessageQueue) -> None:  # type: ignore[no-untyped-def]
    locks.unlock_batch(group, [mq], "127.0.0.1@thief")


def test_default_orderly_moves_a_locked_queue_once_its_owner_unlocked_it(cluster: ClusterThread) -> None:
    """RocketMQ's own behaviour: the newcomer locks the queue only once the old owner has
    committed and unlocked it — at once when the old owner was quicker, else at its next periodic
    rebalance (1 s here; 20 s by default). Order holds across the move; shutdown unlocks all."""
    cluster.create_topic("TopicOrd6", 2)
    seen = Seen()

    def consumer(name: str) -> PushConsumer:
        config = ClientConfig(
            namesrv=cluster.namesrv, client_ip="127.0.0.1", instance_name=name, rebalance_interval=1.0
        )
        c = PushConsumer(
            "ord_g6", client_config=config, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        )
        c.subscribe("TopicOrd6")
        c.register_listener(seen.listener(name), orderly=True)
        return c.start()

    c1 = consumer("c1")
    c2 = None
    try:
        produce(cluster, "TopicOrd6", 2, 10, "a")
        assert wait_until(lambda: seen.total() == 20, 10)
        c2 = consumer("c2")
        q1 = MessageQueue("TopicOrd6", "broker-a", 1)
        assert wait_until(lambda: c2.assigned_queues("TopicOrd6") == [q1], 5)
        produce(cluster, "TopicOrd6", 2, 10, "b")
        assert wait_until(lambda: seen.total() == 40, 10)
        assert seen.by_queue[1] == list(range(10)) * 2
        assert seen.by_client["c2"] == {1}
    finally:
        if c2 is not None:
            c2.shutdown()
        c1.shutdown()
    broker = cluster.cluster.broker
    assert broker is not None

    async def held() -> list[str | None]:
        now = broker.wall()
        return [
            broker.locks.owner_of("ord_g6", MessageQueue("TopicOrd6", "broker-a", q), now) for q in (0, 1)
        ]

    assert cluster.thread.call(held()) == [None, None]  # shutdown unlocked everything


def test_broadcasting_orderly_needs_no_broker_lock(cluster: ClusterThread, tmp_path: Path) -> None:
    cluster.create_topic("TopicOrd7", 2)
    produce(cluster, "TopicOrd7", 2, 10)
    seen = Seen()
    c = orderly_consumer(
        cluster,
        "ord_g7",
        "TopicOrd7",
        "c1",
        seen.listener("c1"),
        message_model=MessageModel.BROADCASTING,
        offset_store_dir=str(tmp_path / "offsets"),
    )
    with c:
        assert wait_until(lambda: seen.total() == 20, 10)
        assert seen.by_queue == {0: list(range(10)), 1: list(range(10))}
    broker = cluster.cluster.broker
    assert broker is not None

    async def lock_count() -> int:
        return len(broker.locks.locks(broker.wall(), "ord_g7"))

    assert cluster.thread.call(lock_count()) == 0


def test_shutdown_unlocks_a_queue_whose_listener_is_still_running(cluster: ClusterThread) -> None:
    cluster.create_topic("TopicOrd8", 1)
    produce(cluster, "TopicOrd8", 1, 3)
    release = threading.Event()
    entered = threading.Event()

    def stuck(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
        entered.set()
        release.wait(10)
        return SUCCESS

    c = orderly_consumer(cluster, "ord_g8", "TopicOrd8", "c1", stuck)
    c.start()
    try:
        assert entered.wait(10)
        c.shutdown(await_termination=0.1)
        broker = cluster.cluster.broker
        assert broker is not None

        async def owner() -> str | None:
            return broker.locks.owner_of("ord_g8", MessageQueue("TopicOrd8", "broker-a", 0), broker.wall())

        assert cluster.thread.call(owner()) is None  # not held until the broker's 60 s expiry
    finally:
        release.set()
        c.shutdown()
