"""The orderly service's result rules (``processConsumeResult``) on a real process queue and offset store."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from rocketq.client.config import PushConsumerConfig
from rocketq.client.consumer.consume_orderly import (
    ConsumeMessageOrderlyService,
    adapt_orderly_listener,
    clamp_suspend,
)
from rocketq.client.consumer.offset_store import LocalFileOffsetStore
from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.consumer.stats import ConsumeStats
from rocketq.client.message import ConsumeOrderlyContext, ConsumeOrderlyStatus
from rocketq.models import MessageQueue
from rocketq.protocol.message import MessageExt

MQ = MessageQueue("T", "broker-a", 0)
S = ConsumeOrderlyStatus


def make(tmp_path: Path, **cfg: Any) -> tuple[ConsumeMessageOrderlyService, ProcessQueue, list[float]]:
    consumer = SimpleNamespace(
        group="g",
        config=PushConsumerConfig(**cfg),
        stats=ConsumeStats(),
        offset_store=LocalFileOffsetStore("g", "127.0.0.1@t", str(tmp_path)),
        message_model=None,
        lease=SimpleNamespace(handing_off=set()),
    )
    service = ConsumeMessageOrderlyService(consumer, lambda msgs, ctx: S.SUCCESS)  # type: ignore[arg-type]
    later: list[float] = []
    service.submit_later = lambda pq, mq, delay: later.append(delay)  # type: ignore[method-assign]
    pq = ProcessQueue(now=0.0)
    pq.put_messages([MessageExt("T", b"x", queue_offset=o, queue_id=0) for o in range(10, 16)])
    return service, pq, later


def run(service: ConsumeMessageOrderlyService, msgs: list[MessageExt], status: S | None, pq: ProcessQueue,
        ctx: ConsumeOrderlyContext | None = None) -> bool:  # fmt: skip
    ctx = ctx or ConsumeOrderlyContext(MQ)
    return asyncio.run(service.process_consume_result(msgs, status, ctx, pq, MQ))


def test_success_commits_past_the_batch_and_goes_on(tmp_path: Path) -> None:
    service, pq, later = make(tmp_path)
    msgs = pq.take_messages(2)
    assert [m.queue_offset for m in msgs] == [10, 11]
    assert run(service, msgs, S.SUCCESS, pq) is True
    assert service.consumer.offset_store.memory_offset(MQ) == 12
    assert pq.msg_count == 4
    assert later == []


def test_suspend_puts_the_batch_back_and_pauses_the_queue(tmp_path: Path) -> None:
    service, pq, later = make(tmp_path)
    msgs = pq.take_messages(2)
    assert run(service, msgs, S.SUSPEND_CURRENT_QUEUE_A_MOMENT, pq) is False
    assert later == [1.0]  # the consumer's suspend_current_queue_time
    assert [m.reconsume_times for m in msgs] == [1, 1]
    assert service.consumer.offset_store.memory_offset(MQ) == -1
    again = pq.take_messages(3)
    assert [m.queue_offset for m in again] == [10, 11, 12]  # the same ones first
    ctx = ConsumeOrderlyContext(MQ)
    ctx.suspend_current_queue_time = 0.25
    assert run(service, again, None, pq, ctx) is False  # None (or an exception) means suspend
    assert later == [1.0, 0.25]


def test_past_max_reconsume_times_the_batch_is_committed_once_sent_to_the_dlq(tmp_path: Path) -> None:
    service, pq, _later = make(tmp_path, max_reconsume_times=1)
    sent: list[int] = []

    async def to_dlq(msg: MessageExt) -> bool:
        sent.append(msg.queue_offset)
        return True

    service.send_to_dlq = to_dlq  # type: ignore[method-assign]
    msgs = pq.take_messages(1)
    assert run(service, msgs, S.SUSPEND_CURRENT_QUEUE_A_MOMENT, pq) is False  # first failure: retry
    msgs = pq.take_messages(1)
    assert msgs[0].reconsume_times == 1
    assert run(service, msgs, S.SUSPEND_CURRENT_QUEUE_A_MOMENT, pq) is True
    assert sent == [10]
    assert service.consumer.offset_store.memory_offset(MQ) == 11


def test_orderly_default_max_reconsume_times_is_unlimited(tmp_path: Path) -> None:
    service, _, _ = make(tmp_path)
    assert service.max_reconsume_times == 2**31 - 1


def test_manual_commit_success_moves_on_commit_commits_rollback_rewinds(tmp_path: Path) -> None:
    service, pq, later = make(tmp_path)
    ctx = ConsumeOrderlyContext(MQ)
    ctx.auto_commit = False
    store = service.consumer.offset_store
    assert run(service, pq.take_messages(2), S.SUCCESS, pq, ctx) is True
    assert store.memory_offset(MQ) == -1  # not committed yet
    assert run(service, pq.take_messages(1), S.COMMIT, pq, ctx) is True
    assert store.memory_offset(MQ) == 13  # everything taken so far
    assert run(service, pq.take_messages(2), S.ROLLBACK, pq, ctx) is False
    assert [m.queue_offset for m in pq.take_messages(2)] == [13, 14]
    assert later == [1.0]


def test_commit_and_rollback_with_auto_commit_count_as_success(tmp_path: Path) -> None:
    service, pq, _ = make(tmp_path)
    assert run(service, pq.take_messages(1), S.ROLLBACK, pq) is True
    assert service.consumer.offset_store.memory_offset(MQ) == 11


def test_a_dropped_queue_does_not_move_its_offset_unless_it_is_being_handed_over(tmp_path: Path) -> None:
    service, pq, _ = make(tmp_path)
    msgs = pq.take_messages(2)
    pq.dropped = True
    run(service, msgs, S.SUCCESS, pq)
    assert service.consumer.offset_store.memory_offset(MQ) == -1
    service.consumer.lease.handing_off.add(MQ)  # the rebalance waits for this batch, then commits
    run(service, pq.take_messages(1), S.SUCCESS, pq)
    assert service.consumer.offset_store.memory_offset(MQ) == 13


def test_suspend_time_is_clamped_and_listeners_adapted() -> None:
    assert clamp_suspend(-1, 1.0) == 1.0
    assert clamp_suspend(0.0, 1.0) == 0.01
    assert clamp_suspend(99, 1.0) == 30.0
    one_arg = adapt_orderly_listener(lambda msgs: S.SUCCESS)
    assert one_arg([], ConsumeOrderlyContext(MQ)) is S.SUCCESS
