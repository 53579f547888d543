"""The concurrent consume service over real process queues and an offset store.

The consumer the service reports to is a plain namespace holding what the service reads (its
config, statistics, offset store, message model, and a send-back that records what it was
asked and answers as a broker would).
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from rocketq.client.config import PushConsumerConfig
from rocketq.client.consumer.consume_concurrently import (
    ConsumeMessageConcurrentlyService,
    consume_directly,
    reset_retry_topic,
)
from rocketq.client.consumer.consume_orderly import _orderly_verdict
from rocketq.client.consumer.offset_store import LocalFileOffsetStore
from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.consumer.stats import ConsumeStats
from rocketq.client.message import (
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
)
from rocketq.models import MessageQueue
from rocketq.protocol.bodies import CMResult, MessageModel
from rocketq.protocol.message import MessageExt
from rocketq.protocol.properties import MessageConst

MQ = MessageQueue("T", "broker-a", 0)
OK = ConsumeConcurrentlyStatus.CONSUME_SUCCESS
LATER = ConsumeConcurrentlyStatus.RECONSUME_LATER


def consumer(tmp_path: Path, *, accept_back: bool = True, **config: Any) -> SimpleNamespace:
    sent_back: list[tuple[int, int]] = []

    async def send_message_back(msg: MessageExt, delay_level: int, broker_name: str | None) -> bool:
        sent_back.append((msg.queue_offset, delay_level))
        return accept_back

    return SimpleNamespace(
        group="g",
        config=PushConsumerConfig(**config),
        stats=ConsumeStats(),
        message_model=MessageModel.CLUSTERING,
        offset_store=LocalFileOffsetStore("g", "c@1", str(tmp_path)),
        send_message_back=send_message_back,
        sent_back=sent_back,
        rebalance=SimpleNamespace(process_queue_table={}),
    )


def batch(*offsets: int) -> list[MessageExt]:
    return [MessageExt("T", f"m{o}".encode(), queue_offset=o) for o in offsets]


async def drain(service: ConsumeMessageConcurrentlyService) -> None:
    while service.in_flight:
        await asyncio.sleep(0.001)


def test_out_of_order_completion_commits_only_past_finished_prefixes(tmp_path: Path) -> None:
    gates = {o: threading.Event() for o in range(5)}

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        gates[msgs[0].queue_offset].wait(5)
        return OK

    c = consumer(tmp_path)

    async def scenario() -> list[int]:
        service = ConsumeMessageConcurrentlyService(c, listener)  # type: ignore[arg-type]
        service.start()
        pq = ProcessQueue(now=0.0)
        msgs = batch(0, 1, 2, 3, 4)
        pq.put_messages(msgs)
        service.submit_consume_request(msgs, pq, MQ, True)
        seen = []
        for o in (3, 1, 4, 0, 2):
            gates[o].set()
            await asyncio.sleep(0.05)
            seen.append(c.offset_store.memory_offset(MQ))
        await drain(service)
        await service.shutdown(1.0)
        return seen

    # 3 done → 0 is the lowest in flight; 1 → still 0; 4 → 0; 0 → 2 is lowest; 2 → all done: 5
    assert asyncio.run(scenario()) == [0, 0, 0, 2, 5]


def test_results_for_a_dropped_queue_do_not_move_its_offset(tmp_path: Path) -> None:
    release = threading.Event()
    c = consumer(tmp_path)

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        release.wait(5)
        return OK

    async def scenario() -> int:
        service = ConsumeMessageConcurrentlyService(c, listener)  # type: ignore[arg-type]
        service.start()
        pq = ProcessQueue(now=0.0)
        msgs = batch(7)
        pq.put_messages(msgs)
        service.submit_consume_request(msgs, pq, MQ, True)
        await asyncio.sleep(0.02)
        pq.dropped = True  # rebalance gave the queue away while the listener ran
        release.set()
        await drain(service)
        await service.shutdown(1.0)
        return c.offset_store.memory_offset(MQ)

    assert asyncio.run(scenario()) == -1


def test_failures_are_sent_back_and_exceptions_count_as_failures(tmp_path: Path) -> None:
    c = consumer(tmp_path)

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus | None:
        o = msgs[0].queue_offset
        if o == 1:
            ctx.delay_level_when_next_consume = 5
            return LATER
        if o == 2:
            raise RuntimeError("boom")
        if o == 3:
            return None
        return OK

    async def scenario() -> None:
        service = ConsumeMessageConcurrentlyService(c, listener)  # type: ignore[arg-type]
        service.start()
        pq = ProcessQueue(now=0.0)
        msgs = batch(0, 1, 2, 3)
        pq.put_messages(msgs)
        service.submit_consume_request(msgs, pq, MQ, True)
        await drain(service)
        await service.shutdown(1.0)

    asyncio.run(scenario())
    assert sorted(c.sent_back) == [(1, 5), (2, 0), (3, 0)]
    assert c.offset_store.memory_offset(MQ) == 4  # sent back = done here; the retry topic has them
    assert c.stats.status("T").consume_failed_msgs == 3


def test_a_message_the_broker_will_not_take_back_stays_in_flight_and_is_retried_locally(
    tmp_path: Path,
) -> None:
    c = consumer(tmp_path, accept_back=False, consume_retry_local_delay=0.05)
    calls: list[tuple[int, int]] = []

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        calls.append((msgs[0].queue_offset, msgs[0].reconsume_times))
        return LATER if len(calls) == 1 else OK

    async def scenario() -> list[int]:
        service = ConsumeMessageConcurrentlyService(c, listener)  # type: ignore[arg-type]
        service.start()
        pq = ProcessQueue(now=0.0)
        msgs = batch(0)
        pq.put_messages(msgs)
        service.submit_consume_request(msgs, pq, MQ, True)
        await drain(service)
        first = c.offset_store.memory_offset(MQ)
        await asyncio.sleep(0.2)
        await drain(service)
        await service.shutdown(1.0)
        return [first, c.offset_store.memory_offset(MQ)]

    assert asyncio.run(scenario()) == [0, 1]  # stays the next offset to consume until consumed
    assert calls == [(0, 0), (0, 1)]


def test_batches_and_ack_index(tmp_path: Path) -> None:
    c = consumer(tmp_path, consume_message_batch_max_size=4)
    sizes: list[int] = []

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        sizes.append(len(msgs))
        ctx.ack_index = 1  # the first two succeeded, the rest failed
        return OK

    async def scenario() -> None:
        service = ConsumeMessageConcurrentlyService(c, listener)  # type: ignore[arg-type]
        service.start()
        pq = ProcessQueue(now=0.0)
        msgs = batch(*range(6))
        pq.put_messages(msgs)
        service.submit_consume_request(msgs, pq, MQ, True)
        await drain(service)
        await service.shutdown(1.0)

    asyncio.run(scenario())
    assert sorted(sizes) == [2, 4]
    assert sorted(o for o, _ in c.sent_back) == [2, 3]


def test_consume_timeout_sends_back_stuck_messages(tmp_path: Path) -> None:
    c = consumer(tmp_path, consume_timeout=1.0)
    pq = ProcessQueue(now=0.0)
    msgs = batch(0, 1)
    msgs[0].properties[MessageConst.CONSUME_START_TIME] = "1000"  # started at t=1 s
    msgs[1].properties[MessageConst.CONSUME_START_TIME] = "5000"
    pq.put_messages(msgs)
    c.rebalance.process_queue_table[MQ] = pq

    async def scenario() -> int:
        service = ConsumeMessageConcurrentlyService(c, lambda m, x: OK)  # type: ignore[arg-type]
        service.start()
        cleaned = await service.clean_expired_messages(now=5.5)
        await service.shutdown(0.1)
        return cleaned

    assert asyncio.run(scenario()) == 1
    assert c.sent_back == [(0, 3)]
    assert c.offset_store.memory_offset(MQ) == 1


def test_consume_directly_and_retry_topic_restore(tmp_path: Path) -> None:
    c = consumer(tmp_path)
    msg = MessageExt("%RETRY%g", b"x", properties={MessageConst.RETRY_TOPIC: "T"})
    reset_retry_topic([msg], "g")
    assert msg.topic == "T"

    async def scenario() -> CMResult | None:
        service = ConsumeMessageConcurrentlyService(c, lambda m, x: OK)  # type: ignore[arg-type]
        service.start()
        result = await service.consume_message_directly(MessageExt("T", b"y"), "broker-a")
        await service.shutdown(0.1)
        return result.consume_result

    assert asyncio.run(scenario()) is CMResult.CR_SUCCESS


def test_consume_directly_answers_an_orderly_listener_by_its_status() -> None:
    """The orderly verdicts (RocketMQ's ``ConsumeMessageOrderlyService.consumeMessageDirectly``),
    and a listener that raises: CR_THROW_EXCEPTION with its repr, the retry topic restored."""
    expected = {
        ConsumeOrderlyStatus.SUCCESS: CMResult.CR_SUCCESS,
        ConsumeOrderlyStatus.COMMIT: CMResult.CR_COMMIT,
        ConsumeOrderlyStatus.ROLLBACK: CMResult.CR_ROLLBACK,
        ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT: CMResult.CR_LATER,
        None: CMResult.CR_LATER,
    }
    for status, want in expected.items():

        def listener(
            msgs: list[MessageExt], ctx: ConsumeOrderlyContext, s: ConsumeOrderlyStatus | None = status
        ) -> ConsumeOrderlyStatus | None:
            return s

        answer = asyncio.run(
            consume_directly(
                "g", MessageExt("T", b"y"), ConsumeOrderlyContext(MQ), listener, _orderly_verdict
            )
        )
        assert (answer.consume_result, answer.remark) == (want, None)

    def boom(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
        raise ValueError("no")

    msg = MessageExt("%RETRY%g", b"x", properties={MessageConst.RETRY_TOPIC: "T"})
    answer = asyncio.run(consume_directly("g", msg, ConsumeOrderlyContext(MQ), boom, _orderly_verdict))
    assert (answer.consume_result, answer.remark, msg.topic) == (
        CMResult.CR_THROW_EXCEPTION,
        "ValueError('no')",
        "T",
    )


def test_stats_sum_into_second_buckets_over_a_minute() -> None:
    stats = ConsumeStats()
    for i in range(10_000):
        stats.add("T", "ok", 1, 2.0, now=100.0 + i / 1000)  # 10 s of 1,000 msg/s
    stats.add("T", "failed", 3, now=105.0)
    status = stats.status("T", now=110.0)
    assert status.consume_ok_tps == 10_000 / 60
    assert status.consume_rt == 2.0
    assert status.consume_failed_msgs == 3
    assert len(stats._buckets["T"]["ok"]) == 10
    assert stats.status("T", now=200.0).consume_ok_tps == 0


def test_a_slow_listener_gets_one_thread_per_call_even_within_one_pull(tmp_path: Path) -> None:
    # eight calls of one pull can only all pass the barrier if they run on eight threads at once,
    # as in Java's pool: the chunk a pull travels in is shared out when calls are slow
    barrier = threading.Barrier(8, timeout=5)
    threads: set[str] = set()
    c = consumer(tmp_path)

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        threads.add(threading.current_thread().name)
        barrier.wait()
        return OK

    async def scenario() -> int:
        service = ConsumeMessageConcurrentlyService(c, listener)  # type: ignore[arg-type]
        service.start()
        pq = ProcessQueue(now=0.0)
        msgs = batch(*range(8))
        pq.put_messages(msgs)
        service.submit_consume_request(msgs, pq, MQ, True)
        await drain(service)
        await service.shutdown(1.0)
        return c.offset_store.memory_offset(MQ)

    assert asyncio.run(scenario()) == 8
    assert len(threads) == 8


def test_a_listener_that_turns_slow_shares_the_rest_of_a_run(tmp_path: Path) -> None:
    # fast calls teach the workers to take whole pulls; when calls turn slow, a run past its
    # time budget leaves its remaining calls to idle threads instead of holding them
    slow = threading.Event()
    running = [0, 0]  # now, most at once
    lock = threading.Lock()
    c = consumer(tmp_path)

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        if slow.is_set():
            with lock:
                running[0] += 1
                running[1] = max(running)
            threading.Event().wait(0.05)
            with lock:
                running[0] -= 1
        return OK

    async def scenario() -> None:
        service = ConsumeMessageConcurrentlyService(c, listener)  # type: ignore[arg-type]
        service.start()
        pq = ProcessQueue(now=0.0)
        for start in range(0, 640, 32):
            fast = batch(*range(start, start + 32))
            pq.put_messages(fast)
            service.submit_consume_request(fast, pq, MQ, True)
            await drain(service)
        slow.set()
        msgs = batch(*range(640, 672))
        pq.put_messages(msgs)
        service.submit_consume_request(msgs, pq, MQ, True)
        await drain(service)
        await service.shutdown(1.0)

    asyncio.run(scenario())
    assert running[1] >= 4
    assert c.offset_store.memory_offset(MQ) == 672


def test_with_one_thread_messages_are_consumed_in_offset_order(tmp_path: Path) -> None:
    seen: list[int] = []
    c = consumer(tmp_path, consume_thread_max=1)

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        seen.extend(m.queue_offset for m in msgs)
        threading.Event().wait(0.0005 if len(seen) % 7 == 0 else 0)  # uneven calls split chunks
        return OK

    async def scenario() -> None:
        service = ConsumeMessageConcurrentlyService(c, listener)  # type: ignore[arg-type]
        service.start()
        pq = ProcessQueue(now=0.0)
        for start in range(0, 320, 32):
            msgs = batch(*range(start, start + 32))
            pq.put_messages(msgs)
            service.submit_consume_request(msgs, pq, MQ, True)
        await drain(service)
        await service.shutdown(1.0)

    asyncio.run(scenario())
    assert seen == list(range(320))
    assert c.offset_store.memory_offset(MQ) == 320


def test_every_call_gets_the_batch_size_and_results_apply_per_call_stats(tmp_path: Path) -> None:
    calls: list[list[int]] = []
    c = consumer(tmp_path, consume_message_batch_max_size=3)

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        calls.append([m.queue_offset for m in msgs])
        assert ctx.ack_index == 2**31 - 1  # a fresh context per call
        ctx.ack_index = 5
        return OK

    async def scenario() -> None:
        service = ConsumeMessageConcurrentlyService(c, listener)  # type: ignore[arg-type]
        service.start()
        queues = [MessageQueue("T", "broker-a", q) for q in range(3)]
        pqs = [ProcessQueue(now=0.0) for _ in queues]
        for mq, pq in zip(queues, pqs, strict=True):
            msgs = batch(*range(100, 110))
            pq.put_messages(msgs)
            service.submit_consume_request(msgs, pq, mq, True)
        await drain(service)
        await service.shutdown(1.0)
        assert [c.offset_store.memory_offset(mq) for mq in queues] == [110, 110, 110]
        assert all(pq.msg_count == 0 and pq.msg_size == 0 for pq in pqs)

    asyncio.run(scenario())
    assert sorted(len(x) for x in calls) == [1] * 3 + [3] * 9  # 10 messages: 3 + 3 + 3 + 1, per queue
    assert sorted(o for x in calls for o in x) == sorted(list(range(100, 110)) * 3)
    status = c.stats.status("T")
    assert status.consume_ok_tps * ConsumeStats.WINDOW == 30
    assert c.stats._buckets["T"]["ok"][-1][3] == 12  # one response-time event per listener call


def test_calls_for_a_queue_dropped_before_they_ran_are_skipped(tmp_path: Path) -> None:
    gate = threading.Event()
    called: list[int] = []
    c = consumer(tmp_path, consume_thread_max=1)

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        called.extend(m.queue_offset for m in msgs)
        gate.wait(5)
        return OK

    async def scenario() -> None:
        service = ConsumeMessageConcurrentlyService(c, listener)  # type: ignore[arg-type]
        service.start()
        pq = ProcessQueue(now=0.0)
        msgs = batch(*range(5))
        pq.put_messages(msgs)
        service.submit_consume_request(msgs, pq, MQ, True)
        while not called:
            await asyncio.sleep(0.001)
        pq.dropped = True
        gate.set()
        await drain(service)
        await service.shutdown(1.0)

    asyncio.run(scenario())
    assert called == [0]
    assert c.offset_store.memory_offset(MQ) == -1
