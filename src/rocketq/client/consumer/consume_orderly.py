"""Orderly consumption (``ConsumeMessageOrderlyService`` with ``RebalancePushImpl``'s lock rules).

Each queue is consumed by one thread at a time, in offset order, and — in a clustering group —
only while this client holds the queue's lock on the broker:

* a rebalance locks a new queue (LOCK_BATCH_MQ) before reading its offset and pulling it; a
  queue locked by another client is skipped until it is released;
* every ``rebalance_lock_interval`` (20 s) the locks of all owned queues are renewed
  (``lockAll``); the process queue keeps ``locked`` and the time of the last confirmation, and a
  lock not confirmed for ``rebalance_lock_max_live_time`` (30 s) counts as expired;
* a consume request (one per queue at a time; :meth:`ConsumeMessageOrderlyService.submit_consume_request`
  starts one when a pull finds the queue idle) takes up to ``consume_message_batch_max_size``
  messages in offset order (``ProcessQueue.take_messages``) and runs the listener on the thread
  pool while holding the queue's ``consume_lock``. It stops when the queue is dropped, when its
  lock is lost or expired (it then re-locks and goes on 10 ms later, or retries in 3 s:
  ``tryLockLaterAndReconsume``), and yields after ``max_time_consume_continuously`` (60 s);
* the listener returns ``SUCCESS`` (the batch is committed: the offset moves past it) or
  ``SUSPEND_CURRENT_QUEUE_A_MOMENT`` (or ``None``, or raises): the same messages are consumed
  again after ``suspend_current_queue_time`` (1 s; the context may set another) — unless a message
  has been reconsumed ``max_reconsume_times`` times (unlimited by default for orderly, as Java's
  -1), which is then sent to the retry topic marked as exhausted, so the broker moves it to the
  group's dead-letter queue, and the batch is committed. With ``context.auto_commit = False``,
  ``COMMIT`` commits, ``SUCCESS`` only moves on, ``ROLLBACK`` puts the batch back;
* a rebalance that takes a queue away takes its ``consume_lock`` (waiting up to 1 s for a running
  listener): got it → the offset is committed and awaited, then the queue is unlocked — after
  ``unlock_delay`` (20 s) when messages are still cached, as Java, so that the next owner starts
  after them; not got → the queue stays (dropped) until the next rebalance tries again;
* shutdown persists every offset synchronously, then unlocks every queue (Java unlocks first),
  then unregisters.

Broadcasting consumers need no lock: every client owns every queue.

A consumer created with ``trace=True`` traces each listener call (SubBefore/SubAfter, see
:mod:`rocketq.client.trace`) as Java's orderly service does: success means SUCCESS or COMMIT, and
the context code is :func:`orderly_return_type`'s.

With ``handoff="clean"`` the orderly consumer also retries a lock another client holds every
50 ms (growing to 1 s) instead of waiting for the next rebalance, and unlocks a queue taken away at
once after the commit (no ``unlock_delay``): the committed offset is exactly where the next owner
must start. See :mod:`rocketq.client.consumer.clean_handoff`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from rocketq.client.consumer.consume_concurrently import adapt_listener, consume_directly, reset_retry_topic
from rocketq.client.consumer.leased_core import LeasedPushConsumerCore
from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.consumer.pull import flow_control_reason
from rocketq.client.consumer.push_core import retry_message
from rocketq.client.message import ConsumeOrderlyContext, ConsumeOrderlyStatus
from rocketq.client.rebalance.impl import PullRequest
from rocketq.client.rebalance.leases import commit_offset_sync
from rocketq.client.rebalance.log import RebalanceRecord
from rocketq.errors import ConfigError, RocketQError
from rocketq.models import MessageQueue
from rocketq.protocol.bodies import CMResult, ConsumeMessageDirectlyResult, MessageModel
from rocketq.protocol.message import MessageExt
from rocketq.protocol.properties import MessageConst
from rocketq.protocol.trace import ConsumeReturnType

__all__ = [
    "ConsumeMessageOrderlyService",
    "OrderlyListener",
    "OrderlyPushConsumerCore",
    "adapt_orderly_listener",
    "orderly_return_type",
]

logger = logging.getLogger(__name__)

OrderlyListener = Callable[[list[MessageExt], ConsumeOrderlyContext], ConsumeOrderlyStatus | None]
"""``listener(msgs, context) -> status``; ``None`` or an exception means SUSPEND_CURRENT_QUEUE_A_MOMENT."""

#: Delay before going on after re-locking a queue, and before retrying a failed re-lock
#: (``tryLockLaterAndReconsume``: 10 ms / 3000 ms).
_RECONSUME_AFTER_LOCK = 0.01
_RETRY_LOCK_LATER = 3.0
#: How long a rebalance waits for a running listener before keeping a queue (Java's tryLock(1000 ms)).
_CONSUME_LOCK_WAIT = 1.0
#: What -1 means for orderly ``max_reconsume_times`` (Java: ``Integer.MAX_VALUE``).
_UNLIMITED = 2**31 - 1
#: Delay when the consume lock is not yet locked or expired at dispatch (Java 100 ms).
_LOCK_LATER_AT_START = 0.1


def adapt_orderly_listener(fn: Callable[..., Any]) -> OrderlyListener:
    """Accept ``fn(msgs, context)`` and also ``fn(msgs)`` (:func:`adapt_listener`'s rule)."""
    return adapt_listener(fn)


def orderly_return_type(
    status: ConsumeOrderlyStatus | None, raised: bool, rt: float, timeout: float
) -> ConsumeReturnType:
    """The SubAfter context code of an orderly listener call, classified as Java's orderly service
    does: no status → EXCEPTION (it raised) or RETURNNULL; ran ``timeout`` seconds or more →
    TIME_OUT; SUSPEND_CURRENT_QUEUE_A_MOMENT → FAILED; SUCCESS, and also COMMIT and ROLLBACK
    (Java's default is never overwritten for those two) → SUCCESS.

    >>> orderly_return_type(ConsumeOrderlyStatus.ROLLBACK, False, 0.1, 900.0).name
    'SUCCESS'
    >>> orderly_return_type(ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT, False, 0.1, 900.0).name
    'FAILED'
    """
    if status is None:
        return ConsumeReturnType.EXCEPTION if raised else ConsumeReturnType.RETURNNULL
    if rt >= timeout:
        return ConsumeReturnType.TIME_OUT
    if status is ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT:
        return ConsumeReturnType.FAILED
    return ConsumeReturnType.SUCCESS


def clamp_suspend(seconds: float, default: float) -> float:
    """The pause of a suspended queue: ``-1`` → the consumer's default, then kept in 10 ms..30 s.

    >>> clamp_suspend(-1, 1.0), clamp_suspend(0.001, 1.0), clamp_suspend(60, 1.0)
    (1.0, 0.01, 30.0)
    """
    if seconds == -1:
        seconds = default
    return min(max(seconds, 0.01), 30.0)


_SKIPPED = object()  # the queue was dropped before the listener could run


class ConsumeMessageOrderlyService:
    """Runs an orderly listener: one consume request per queue at a time (see the module doc)."""

    def __init__(self, consumer: OrderlyPushConsumerCore, listener: OrderlyListener) -> None:
        self.consumer = consumer
        self.listener = listener
        cfg = consumer.config
        self.batch_size = cfg.consume_message_batch_max_size
        self._pool_size = cfg.consume_thread_max
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._running: set[asyncio.Task[None]] = set()
        self._queue_locks: dict[MessageQueue, asyncio.Lock] = {}
        self._timers: set[asyncio.TimerHandle] = set()
        self._idle: asyncio.Event | None = None
        self._stopped = False
        max_times = cfg.max_reconsume_times
        self.max_reconsume_times = _UNLIMITED if max_times == -1 else max_times

    @property
    def core_pool_size(self) -> int:
        return self._pool_size

    def start(self) -> None:
        self._pool = concurrent.futures.ThreadPoolExecutor(
            self._pool_size, thread_name_prefix=f"ConsumeMessageThread_{self.consumer.group}"
        )
        self._idle = asyncio.Event()
        self._idle.set()

    async def shutdown(self, await_termination: float) -> None:
        """Stop starting requests; wait up to ``await_termination`` s for running listeners."""
        self._stopped = True
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()
        if self._running and self._idle is not None:
            try:
                await asyncio.wait_for(self._idle.wait(), await_termination)
            except TimeoutError:
                logger.warning(
                    "group %s: %d orderly queue(s) still consuming after %.1fs; batches not committed",
                    self.consumer.group,
                    len(self._running),
                    await_termination,
                )
        for task in list(self._running):
            task.cancel()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    # ---------------------------------------------------------------- requests

    def submit_consume_request(
        self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue, dispatch_to_consume: bool
    ) -> None:
        if dispatch_to_consume:
            self._start(pq, mq)

    def _start(self, pq: ProcessQueue, mq: MessageQueue) -> None:
        if self._stopped:
            return
        # a second request for the same queue waits on the queue's lock
        task = asyncio.get_running_loop().create_task(self._consume(pq, mq))
        self._running.add(task)
        if self._idle is not None:
            self._idle.clear()
        task.add_done_callback(lambda t: self._request_done(mq, t))

    def _request_done(self, mq: MessageQueue, task: asyncio.Task[None]) -> None:
        self._running.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.error("orderly consume request of %s failed", mq, exc_info=task.exception())
        if not self._running and self._idle is not None:
            self._idle.set()

    def submit_later(self, pq: ProcessQueue, mq: MessageQueue, delay: float) -> None:
        """Start a consume request for ``mq`` after ``delay`` seconds (``submitConsumeRequestLater``)."""
        if self._stopped:
            return
        loop = asyncio.get_running_loop()

        def fire() -> None:
            self._timers.discard(handle)
            self._start(pq, mq)

        handle = loop.call_later(delay, fire)
        self._timers.add(handle)

    def try_lock_later_and_reconsume(self, pq: ProcessQueue, mq: MessageQueue, delay: float) -> None:
        """Re-lock ``mq`` after ``delay``; go on 10 ms later if locked, else try again in 3 s."""
        if self._stopped:
            return
        loop = asyncio.get_running_loop()

        async def relock() -> None:
            ok = await self.consumer.lock_queue(mq, pq)
            self.submit_later(pq, mq, _RECONSUME_AFTER_LOCK if ok else _RETRY_LOCK_LATER)

        def fire() -> None:
            self._timers.discard(handle)
            if not self._stopped and not pq.dropped:
                self.consumer.spawn(relock())

        handle = loop.call_later(delay, fire)
        self._timers.add(handle)

    def queue_lock(self, mq: MessageQueue) -> asyncio.Lock:
        """Held by the consume request of ``mq`` from taking messages until their result is
        applied (Java's ``MessageQueueLock`` object)."""
        return self._lock_for(mq)

    def _lock_for(self, mq: MessageQueue) -> asyncio.Lock:
        lock = self._queue_locks.get(mq)
        if lock is None:
            lock = self._queue_locks[mq] = asyncio.Lock()
        return lock

    async def _consume(self, pq: ProcessQueue, mq: MessageQueue) -> None:
        """One ``ConsumeRequest.run``: consume ``mq`` while it stays ours and has messages."""
        if pq.dropped:
            return
        consumer = self.consumer
        cfg = consumer.config
        clustering = consumer.message_model is MessageModel.CLUSTERING
        max_live = cfg.rebalance_lock_max_live_time
        async with self._lock_for(mq):
            if clustering and not pq.holds_valid_lock(time.time(), max_live):
                if not pq.dropped:
                    self.try_lock_later_and_reconsume(pq, mq, _LOCK_LATER_AT_START)
                return
            begin = time.monotonic()
            while self._may_go_on(pq, mq, begin, clustering=clustering):
                msgs = pq.take_messages(self.batch_size)
                if not msgs:
                    return
                reset_retry_topic(msgs, consumer.group)
                ctx = ConsumeOrderlyContext(mq)
                assert self._pool is not None
                loop = asyncio.get_running_loop()
                started = time.monotonic()
                try:
                    status = await loop.run_in_executor(self._pool, self._run_listener, msgs, ctx, pq)
                except RuntimeError:  # the pool was shut down
                    pq.make_messages_to_consume_again(msgs)
                    return
                if status is _SKIPPED:
                    return
                rt_ms = (time.monotonic() - started) * 1000.0
                assert status is None or isinstance(status, ConsumeOrderlyStatus)
                if not await self.process_consume_result(msgs, status, ctx, pq, mq, rt_ms):
                    return

    def _may_go_on(self, pq: ProcessQueue, mq: MessageQueue, begin: float, *, clustering: bool) -> bool:
        """Whether a consume request that began at ``begin`` takes more messages: not when the
        queue was dropped or the service stopped, nor (trying again later) when its lock expired
        or it has run for ``max_time_consume_continuously``."""
        if pq.dropped or self._stopped:
            return False
        cfg = self.consumer.config
        if clustering and not pq.holds_valid_lock(time.time(), cfg.rebalance_lock_max_live_time):
            self.try_lock_later_and_reconsume(pq, mq, _RECONSUME_AFTER_LOCK)
            return False
        if time.monotonic() - begin > cfg.max_time_consume_continuously:
            self.submit_later(pq, mq, _RECONSUME_AFTER_LOCK)
            return False
        return True

    def _run_listener(self, msgs: list[MessageExt], ctx: ConsumeOrderlyContext, pq: ProcessQueue) -> object:
        """On a worker thread, holding the queue's consume lock (a rebalance waits for it).

        A traced consumer's hook runs around the call as in Java's orderly service: ``before``
        ahead of the consume lock, ``after`` once the listener answered (not when the queue was
        dropped meanwhile: Java leaves that SubBefore without its SubAfter too).
        """
        group = self.consumer.group
        hook = getattr(self.consumer, "trace_hook", None)  # PushConsumerCore's; absent in unit fakes
        now_ms = time.time_ns() // 1_000_000  # the trace's SubBefore time and CONSUME_START_TIME
        token = hook.before(msgs, now_ms) if hook is not None else None
        start_ms = str(now_ms)
        for msg in msgs:
            msg.properties[MessageConst.CONSUME_START_TIME] = start_ms
        begin = time.monotonic()
        raised = False
        with pq.consume_lock:
            if pq.dropped:
                return _SKIPPED
            try:
                answer: object = self.listener(msgs, ctx)
            except Exception:
                logger.exception(
                    "group %s: orderly listener failed on %s; suspending the queue", group, ctx.message_queue
                )
                answer = None
                raised = True
        status = answer if isinstance(answer, ConsumeOrderlyStatus) else None
        if answer is not None and status is None:
            logger.warning("group %s: orderly listener returned %r; suspending the queue", group, answer)
        if hook is not None:
            rt = time.monotonic() - begin
            hook.after(
                token, len(msgs),
                success=status in (ConsumeOrderlyStatus.SUCCESS, ConsumeOrderlyStatus.COMMIT),
                return_type=orderly_return_type(status, raised, rt, self.consumer.config.consume_timeout),
            )  # fmt: skip
        return status

    async def process_consume_result(
        self,
        msgs: list[MessageExt],
        status: ConsumeOrderlyStatus | None,
        ctx: ConsumeOrderlyContext,
        pq: ProcessQueue,
        mq: MessageQueue,
        rt_ms: float = 0.0,
    ) -> bool:
        """Apply a listener's answer; whether the request goes on with the next batch."""
        consumer = self.consumer
        stats = consumer.stats
        if status is None:
            status = ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        suspend = clamp_suspend(ctx.suspend_current_queue_time, consumer.config.suspend_current_queue_time)
        commit_offset = -1
        go_on = True
        if ctx.auto_commit:
            if status in (ConsumeOrderlyStatus.COMMIT, ConsumeOrderlyStatus.ROLLBACK):
                logger.warning(
                    "group %s: %s is for auto_commit=False; treated as SUCCESS", consumer.group, status
                )
                status = ConsumeOrderlyStatus.SUCCESS
            if status is ConsumeOrderlyStatus.SUCCESS:
                commit_offset = pq.commit()
                stats.add(mq.topic, "ok", len(msgs), rt_ms)
            elif await self._failed(msgs, pq, mq, suspend):
                go_on = False
            else:
                commit_offset = pq.commit()
        elif status is ConsumeOrderlyStatus.SUCCESS:
            stats.add(mq.topic, "ok", len(msgs), rt_ms)
        elif status is ConsumeOrderlyStatus.COMMIT:
            commit_offset = pq.commit()
            stats.add(mq.topic, "ok", len(msgs), rt_ms)
        elif status is ConsumeOrderlyStatus.ROLLBACK:
            pq.rollback()
            self.submit_later(pq, mq, suspend)
            go_on = False
        elif await self._failed(msgs, pq, mq, suspend):
            go_on = False
        # a queue being handed over is dropped but still commits the batches finished before the
        # rebalance took its lock (the hand-over commits right after)
        if commit_offset >= 0 and (not pq.dropped or mq in consumer.lease.handing_off):
            consumer.offset_store.update_offset(mq, commit_offset, False)
        return go_on

    async def _failed(
        self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue, suspend: float
    ) -> bool:
        """A batch the listener did not finish: counted as failed, then put back and the queue
        suspended for ``suspend`` s (``True``), unless every message went to the dead-letter queue."""
        self.consumer.stats.add(mq.topic, "failed", len(msgs))
        if await self.check_reconsume_times(msgs):
            pq.make_messages_to_consume_again(msgs)
            self.submit_later(pq, mq, suspend)
            return True
        return False

    async def check_reconsume_times(self, msgs: list[MessageExt]) -> bool:
        """Count one more attempt per message; those past ``max_reconsume_times`` go to the
        dead-letter queue. Whether the batch must be suspended (something is left to retry)."""
        suspend = False
        for msg in msgs:
            if msg.reconsume_times >= self.max_reconsume_times:
                if not await self.send_to_dlq(msg):
                    suspend = True
                    msg.reconsume_times += 1
            else:
                suspend = True
                msg.reconsume_times += 1
        return suspend

    async def send_to_dlq(self, msg: MessageExt) -> bool:
        """Send an exhausted message to ``%RETRY%<group>`` with its reconsume count at the maximum:
        the broker stores it in ``%DLQ%<group>`` (``handleRetryAndDLQ``), as Java's orderly
        ``sendMessageBack`` does through the client's producer."""
        consumer = self.consumer
        producer = consumer.instance.inner_producer
        if producer is None:
            return False
        retry = retry_message(
            msg,
            consumer.group,
            reconsume_times=msg.reconsume_times,
            max_reconsume_times=self.max_reconsume_times,
        )
        try:
            await producer.send(retry)
        except (RocketQError, ConfigError) as exc:
            logger.warning(
                "group %s: sending exhausted message %s back failed: %s", consumer.group, msg.msg_id, exc
            )
            return False
        logger.warning(
            "group %s: message %s consumed %d times without success; sent to the dead-letter queue",
            consumer.group,
            msg.msg_id,
            msg.reconsume_times,
        )
        return True

    # ---------------------------------------------------------------- CONSUME_MESSAGE_DIRECTLY

    async def consume_message_directly(
        self, msg: MessageExt, broker_name: str | None
    ) -> ConsumeMessageDirectlyResult:
        """Run the listener on one message a tool pushed (nothing committed)."""
        ctx = ConsumeOrderlyContext(MessageQueue(msg.topic, broker_name or "", msg.queue_id))
        answer = await consume_directly(self.consumer.group, msg, ctx, self.listener, _orderly_verdict)
        return replace(answer, order=True, auto_commit=ctx.auto_commit)


class OrderlyPushConsumerCore(LeasedPushConsumerCore):
    """The push consumer with an orderly listener (``PushConsumer.register_listener(fn, orderly=True)``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.clean = self.config.handoff == "clean"
        self._delayed_unlocks: set[asyncio.Task[None]] = set()

    @property
    def consume_orderly(self) -> bool:
        return True

    @property
    def retries_leases(self) -> bool:
        return self.config.handoff == "clean"

    def make_consume_service(self) -> ConsumeMessageOrderlyService:
        return ConsumeMessageOrderlyService(self, adapt_orderly_listener(self.listener))

    def spawn(self, coro: Any) -> None:
        self._spawn(coro)

    # ---------------------------------------------------------------- lifecycle

    async def shutdown(self, await_termination: float) -> list[RebalanceRecord]:
        """As the push consumer's: the release of every queue (after the synchronous persist)
        unlocks it on the broker at once."""
        records = await super().shutdown(await_termination)
        for task in list(self._delayed_unlocks):
            task.cancel()
        return records

    # ---------------------------------------------------------------- pulling

    async def pull_precheck(self, request: PullRequest) -> float | None:
        """Flow control by count and size (no span: orderly), then the lock: an unlocked queue is
        not pulled (3 s); the first pull after locking re-reads the offset."""
        why = flow_control_reason(
            request.pq,
            max_count=self.pull_threshold_for_queue,
            max_size_mib=self.pull_threshold_size_for_queue,
            max_span=None,
        )
        if why is not None:
            return self._flow_controlled(why, request)
        if self.message_model is not MessageModel.CLUSTERING:
            return None
        pq = request.pq
        if not pq.locked:
            logger.debug("%s is not locked yet; pulling later", request.mq)
            return self.config.pull_time_delay_when_exception
        if not request.previously_locked:
            offset = await self.compute_pull_from_where(request.mq)
            if offset < 0:
                return self.config.pull_time_delay_when_exception
            if offset < request.next_offset:
                logger.info(
                    "%s: the broker's offset %d is behind %d; starting there",
                    request.mq,
                    offset,
                    request.next_offset,
                )
            request.next_offset = offset
            request.previously_locked = True
        return None

    # ---------------------------------------------------------------- rebalance

    async def remove_unnecessary_message_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        """``RebalancePushImpl.removeUnnecessaryMessageQueue`` for orderly consumers."""
        if self.message_model is not MessageModel.CLUSTERING:
            return await super().remove_unnecessary_message_queue(mq, pq)
        self.lease.handing_off.add(mq)
        # the queue's consume request holds this lock until its batch's result is applied: with
        # it, the offset committed below includes every batch a listener finished
        service = self.consume_service
        qlock = service.queue_lock(mq) if isinstance(service, ConsumeMessageOrderlyService) else None
        consume_lock_held = False
        try:
            if qlock is not None:
                try:
                    await asyncio.wait_for(qlock.acquire(), _CONSUME_LOCK_WAIT)
                except TimeoutError:
                    qlock = None
            if qlock is not None:
                consume_lock_held = await self._take_consume_lock(pq)
            if not consume_lock_held:
                if self.stopping:
                    # shutting down: the listener's batch will not be committed; release the
                    # queue anyway rather than hold it until the broker expires the lock (60 s)
                    logger.warning(
                        "group %s: %s still in a listener at shutdown; unlocking it", self.group, mq
                    )
                else:
                    pq.try_unlock_times += 1
                    logger.warning(
                        "group %s: %s is being consumed; keeping it until the next rebalance (try %d)",
                        self.group,
                        mq,
                        pq.try_unlock_times,
                    )
                    return False
            try:
                offset = self.offset_store.memory_offset(mq)
                if offset >= 0:
                    await commit_offset_sync(self.instance, self.group, mq, offset)
                self.offset_store.remove_offset(mq)
                if pq.has_temp_message() and not self.clean and not self.stopping:
                    # Java's unlockDelay: the cached messages may still be in a listener's hands
                    logger.info("group %s: unlocking %s in %.0fs (messages still cached)", self.group, mq,
                                self.config.unlock_delay)  # fmt: skip
                    self._unlock_later(mq)
                else:
                    async with self.lease.renew_lock:
                        await self.instance.unlock_queues(self.group, [mq], oneway=False)
                pq.locked = False
            finally:
                if consume_lock_held:
                    pq.consume_lock.release()
            return True
        finally:
            if qlock is not None:
                qlock.release()
            self.lease.handing_off.discard(mq)

    async def _take_consume_lock(self, pq: ProcessQueue) -> bool:
        """``consumeLock.tryLock(1000 ms)`` without blocking the loop."""
        deadline = time.monotonic() + _CONSUME_LOCK_WAIT
        while True:
            if pq.consume_lock.acquire(blocking=False):
                return True
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.005)

    def _unlock_later(self, mq: MessageQueue) -> None:
        async def unlock() -> None:
            await asyncio.sleep(self.config.unlock_delay)
            if mq in self.rebalance.process_queue_table:
                return  # ours again meanwhile
            await self.instance.unlock_queues(self.group, [mq], oneway=True)

        task = asyncio.get_running_loop().create_task(unlock())
        self._delayed_unlocks.add(task)
        task.add_done_callback(self._delayed_unlocks.discard)


_ORDERLY_VERDICTS: dict[ConsumeOrderlyStatus | None, CMResult] = {
    ConsumeOrderlyStatus.SUCCESS: CMResult.CR_SUCCESS,
    ConsumeOrderlyStatus.COMMIT: CMResult.CR_COMMIT,
    ConsumeOrderlyStatus.ROLLBACK: CMResult.CR_ROLLBACK,
}


def _orderly_verdict(status: ConsumeOrderlyStatus | None) -> CMResult:
    return _ORDERLY_VERDICTS.get(status, CMResult.CR_LATER)
