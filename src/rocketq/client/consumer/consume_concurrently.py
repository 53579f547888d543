"""Concurrent consumption (``ConsumeMessageConcurrentlyService``) and the consume-service seam.

Messages a pull brings are cut into batches of ``consume_message_batch_max_size`` (1) and each
batch is handed to the listener on a thread pool (``consume_thread_max`` threads, 20; how the
work travels to the threads and back cheaply is told in :class:`ConsumeMessageConcurrentlyService`).
The result comes back to the event loop, which:

* on ``CONSUME_SUCCESS`` (up to the context's ``ack_index``) forgets the messages;
* on ``RECONSUME_LATER`` or an exception (clustering) sends each message back to the broker
  (``CONSUMER_SEND_MSG_BACK``: the broker re-queues it on ``%RETRY%<group>`` with a growing delay,
  or to ``%DLQ%<group>`` after ``max_reconsume_times``); a message the broker would not take back
  is consumed again locally 5 s later. Broadcasting consumers just log and drop failures;
* commits ``ProcessQueue.remove_messages``' answer — the lowest offset still in flight — unless
  the queue was dropped meanwhile (its new owner decides from the committed offset).

Consume timeout (``consume_timeout``, 15 min): every ``consume_timeout`` the service looks at the
oldest cached messages of each queue (up to 16) and sends back (delay level 3) those whose
listener started more than ``consume_timeout`` ago, then removes them, as Java's
``cleanExpireMsg`` does. A listener thread that hangs is not interrupted (Python cannot).

:class:`ConsumeService` is what a push consumer needs of a service; the orderly service
implements the same interface.
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import logging
import queue
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from rocketq.client.config import PushConsumerConfig
from rocketq.client.consumer.offset_store import OffsetStore
from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.consumer.stats import ConsumeStats
from rocketq.client.message import ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus
from rocketq.client.rebalance.impl import RebalanceImpl
from rocketq.client.trace import consume_return_type
from rocketq.models import MessageQueue
from rocketq.protocol.bodies import CMResult, ConsumeMessageDirectlyResult, MessageModel
from rocketq.protocol.message import MessageExt
from rocketq.protocol.properties import MessageConst
from rocketq.protocol.topics import retry_topic

__all__ = [
    "ConcurrentListener",
    "ConsumeMessageConcurrentlyService",
    "ConsumeService",
    "ConsumerContext",
    "reset_retry_topic",
]

logger = logging.getLogger(__name__)

ConcurrentListener = Callable[
    [list[MessageExt], ConsumeConcurrentlyContext], ConsumeConcurrentlyStatus | None
]
"""``listener(msgs, context) -> status``; returning ``None`` or raising means RECONSUME_LATER."""

_TIMEOUT_SCAN_MAX = 16

C = TypeVar("C")
S = TypeVar("S")


def reset_retry_topic(msgs: Sequence[MessageExt], group: str) -> None:
    """Give messages pulled from ``%RETRY%<group>`` their original topic back (``resetRetryAndNamespace``)."""
    retry = retry_topic(group)
    for msg in msgs:
        original = msg.properties.get(MessageConst.RETRY_TOPIC)
        if original is not None and msg.topic == retry:
            msg.topic = original


async def consume_directly(
    group: str,
    msg: MessageExt,
    ctx: C,
    listener: Callable[[list[MessageExt], C], S],
    verdict: Callable[[S], CMResult],
) -> ConsumeMessageDirectlyResult:
    """CONSUME_MESSAGE_DIRECTLY: ``listener`` run on one message a tool pushed, on the default
    executor, and ``verdict`` of what it returned; nothing is sent back or committed. The answer
    is a concurrent listener's (the orderly service marks its own)."""
    reset_retry_topic([msg], group)
    begin = time.monotonic()
    remark = None
    try:
        status = await asyncio.get_running_loop().run_in_executor(None, listener, [msg], ctx)
        result = verdict(status)
    except Exception as exc:
        result = CMResult.CR_THROW_EXCEPTION
        remark = repr(exc)
    return ConsumeMessageDirectlyResult(
        order=False,
        auto_commit=True,
        consume_result=result,
        remark=remark,
        spent_time_mills=int((time.monotonic() - begin) * 1000),
    )


def _concurrent_verdict(status: ConsumeConcurrentlyStatus | None) -> CMResult:
    return CMResult.CR_SUCCESS if status is ConsumeConcurrentlyStatus.CONSUME_SUCCESS else CMResult.CR_LATER


def adapt_listener(fn: Callable[..., Any]) -> Callable[[list[MessageExt], Any], Any]:
    """Accept ``fn(msgs, context)`` and also the simpler ``fn(msgs)`` (any listener, concurrent
    or orderly)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return fn
    params = [
        p
        for p in sig.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    varargs = any(p.kind is p.VAR_POSITIONAL for p in sig.parameters.values())
    if len(params) == 1 and not varargs:
        return lambda msgs, _ctx: fn(msgs)
    return fn


class ConsumerContext(Protocol):
    """What a consume service needs of its consumer (a push consumer's engine,
    :class:`~rocketq.client.consumer.push_core.PushConsumerCore`)."""

    @property
    def group(self) -> str: ...

    @property
    def config(self) -> PushConsumerConfig: ...

    @property
    def message_model(self) -> MessageModel: ...

    @property
    def stats(self) -> ConsumeStats: ...

    @property
    def offset_store(self) -> OffsetStore: ...

    @property
    def rebalance(self) -> RebalanceImpl: ...

    async def send_message_back(self, msg: MessageExt, delay_level: int, broker_name: str | None) -> bool:
        """CONSUMER_SEND_MSG_BACK (or a re-send to the retry topic); ``False`` when both failed."""
        ...


class ConsumeService(Protocol):
    """What a push consumer needs of its consume service (concurrent or orderly)."""

    def start(self) -> None: ...

    async def shutdown(self, await_termination: float) -> None: ...

    def submit_consume_request(
        self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue, dispatch_to_consume: bool
    ) -> None: ...

    async def consume_message_directly(
        self, msg: MessageExt, broker_name: str | None
    ) -> ConsumeMessageDirectlyResult: ...

    @property
    def core_pool_size(self) -> int: ...


@dataclass(slots=True)
class _Request:
    """One listener call whose result needs more than forgetting its messages (failure, partial
    ``ack_index``, dropped queue): Java's ``ConsumeRequest`` and its outcome."""

    msgs: list[MessageExt]
    pq: ProcessQueue
    mq: MessageQueue
    ctx: ConsumeConcurrentlyContext
    status: ConsumeConcurrentlyStatus
    rt: float


@dataclass(slots=True)
class _Chunk:
    """Listener calls to make for one queue: ``msgs`` cut into calls of ``size`` messages.

    ``rest``: the remainder of a chunk a worker split; it waits at the front of the shared
    remainders and travels through the queue only as a wake-up (see ``_work``)."""

    msgs: list[MessageExt]
    pq: ProcessQueue
    mq: MessageQueue
    size: int
    rest: bool = False


class _Done:
    """What a worker's run over (part of) a chunk came to: the messages of successful calls, a
    :class:`_Request` for every failed one, and the calls skipped because the queue was dropped."""

    __slots__ = ("mq", "ok", "ok_calls", "others", "pq", "rt", "skipped_calls", "skipped_msgs")

    def __init__(self, pq: ProcessQueue, mq: MessageQueue) -> None:
        self.pq = pq
        self.mq = mq
        self.ok: list[MessageExt] = []
        self.ok_calls = 0
        self.rt = 0.0  # listener seconds over the successful calls
        self.others: list[_Request] = []
        self.skipped_calls = 0
        self.skipped_msgs = 0


class ConsumeMessageConcurrentlyService:
    """Runs a concurrent listener on worker threads and applies its results (see the module doc).

    What the listener sees is RocketMQ's: ``consume_message_batch_max_size`` messages per call,
    calls running on ``consume_thread_max`` threads, a fresh context per call. How the work
    travels is cheaper than a task per call:

    * a pull's messages go to the workers as one chunk (one ``SimpleQueue`` put, so at most one
      thread wake-up per pull rather than per call). The worker that gets a chunk keeps as many
      calls as it expects to finish in :attr:`RUN_TARGET` seconds (from the listener's recent
      time per call) and leaves the rest to the other workers at once, ahead of newer chunks; a
      run that overstays (past :attr:`RUN_TARGET` and two GIL switch intervals: the listener got
      slower) leaves its remaining calls too. So a slow listener still spreads a pull one call
      per thread, as Java's pool does, while a fast one works through a pull in one run, and
      with one thread messages are consumed in offset order, as with Java's FIFO pool;
    * a run's outcome comes back to the event loop in one step, waking the loop only when no
      wake-up is pending, so a busy consumer costs no asyncio task and no loop wake-up per
      message;
    * the loop applies the successful calls of a run at once: one ``remove_messages``, one
      offset update (the offset the calls applied one by one would leave: the lowest still
      cached) and one statistics entry. Results that need the broker (send-back) become tasks.
    """

    RUN_TARGET = 0.002
    """Seconds of listener calls a worker takes on at once from a chunk (at least one call)."""

    def __init__(self, consumer: ConsumerContext, listener: ConcurrentListener) -> None:
        self.consumer = consumer
        self.listener = listener
        cfg = consumer.config
        self.batch_size = cfg.consume_message_batch_max_size
        self._pool_size = cfg.consume_thread_max
        self._requests: queue.SimpleQueue[_Chunk | None] = queue.SimpleQueue()
        self._rests: collections.deque[_Chunk] = collections.deque()  # split chunks' remainders
        self._results: list[_Done] = []
        self._results_lock = threading.Lock()
        self._wake_scheduled = False
        self._threads: list[threading.Thread] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending = 0  # listener calls submitted whose result is not applied yet (loop thread only)
        # listener seconds per call, smoothed; written by any worker (a hint: a lost update is harmless)
        self._rt_per_call = self.RUN_TARGET
        self._idle: asyncio.Event | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._timers: set[asyncio.TimerHandle] = set()
        self._stopping = False
        self._clean_task: asyncio.Task[None] | None = None

    @property
    def core_pool_size(self) -> int:
        return self._pool_size

    @property
    def in_flight(self) -> int:
        """Listener calls submitted whose result is not applied yet."""
        return self._pending

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._idle = asyncio.Event()
        self._idle.set()
        self._clean_task = self._loop.create_task(self._clean_expired_loop())
        for i in range(self._pool_size):
            t = threading.Thread(
                target=self._work, name=f"ConsumeMessageThread_{self.consumer.group}_{i + 1}", daemon=True
            )
            t.start()
            self._threads.append(t)

    async def shutdown(self, await_termination: float) -> None:
        """Stop taking requests, wait up to ``await_termination`` s for queued and running ones to
        finish and their results to be applied, then let the workers go."""
        self._stopping = True
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()
        if self._clean_task is not None:
            self._clean_task.cancel()
        if self._pending and self._idle is not None:
            try:
                await asyncio.wait_for(self._idle.wait(), await_termination)
            except TimeoutError:
                logger.warning(
                    "group %s: %d consume request(s) unfinished after %.1fs; their offsets are not committed",
                    self.consumer.group,
                    self._pending,
                    await_termination,
                )
        for _ in self._threads:
            self._requests.put(None)
        self._threads = []

    # ---------------------------------------------------------------- requests

    def submit_consume_request(
        self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue, dispatch_to_consume: bool
    ) -> None:
        if self._stopping or not msgs:
            return
        size = self.batch_size
        self._requests.put(_Chunk(msgs, pq, mq, size))
        self._pending += (len(msgs) + size - 1) // size
        if self._idle is not None:
            self._idle.clear()

    def _submit_later(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        loop = asyncio.get_running_loop()
        delay = self.consumer.config.consume_retry_local_delay

        def fire() -> None:
            self._timers.discard(handle)
            self.submit_consume_request(msgs, pq, mq, True)

        handle = loop.call_later(delay, fire)
        self._timers.add(handle)

    def _call_listener(
        self, msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext
    ) -> ConsumeConcurrentlyStatus | None:
        return self.listener(msgs, ctx)

    def _work(self) -> None:
        """A worker thread: run chunks (or the part of one it keeps) until told to stop (``None``)."""
        group = self.consumer.group
        timeout = self.consumer.config.consume_timeout
        retry = retry_topic(group)
        retry_prop = MessageConst.RETRY_TOPIC
        start_prop = MessageConst.CONSUME_START_TIME
        success = ConsumeConcurrentlyStatus.CONSUME_SUCCESS
        # the listener itself unless a subclass wraps the call (one frame less per call)
        overridden = type(self)._call_listener is not ConsumeMessageConcurrentlyService._call_listener
        call = self._call_listener if overridden else self.listener
        monotonic, time_ns = time.monotonic, time.time_ns
        # a run is "overstaying" past this: never less than two GIL switch intervals, so a thread
        # merely made to wait for the GIL does not count as a slow listener
        overstay = max(self.RUN_TARGET, 2 * sys.getswitchinterval())
        start_ms, start_text = -1, ""
        while (run := self._next_run()) is not None:
            msgs, pq, mq, size = run
            hook = getattr(self.consumer, "trace_hook", None)  # PushConsumerCore's; absent elsewhere
            done = _Done(pq, mq)
            ok, ok_calls, ok_rt = done.ok, 0, 0.0
            run_begin = end = monotonic()
            ran = 0
            for i in range(0, len(msgs), size):
                if end - run_begin > overstay:  # slower than expected: share the rest
                    self._share(_Chunk(msgs[i:], pq, mq, size, rest=True))
                    break
                ran += 1
                batch = msgs[i : i + size]
                if pq.dropped:
                    done.skipped_calls += 1
                    done.skipped_msgs += len(batch)
                    continue
                ctx = ConsumeConcurrentlyContext(mq)
                for msg in batch:
                    if msg.topic == retry:  # back from %RETRY%<group>: its own topic again
                        original = msg.properties.get(retry_prop)
                        if original is not None:
                            msg.topic = original
                now_ms = time_ns() // 1_000_000  # the trace's SubBefore time and CONSUME_START_TIME
                token = hook.before(batch, now_ms) if hook is not None else None
                if now_ms != start_ms:
                    start_ms, start_text = now_ms, str(now_ms)
                for msg in batch:
                    msg.properties[start_prop] = start_text
                begin = monotonic()
                raised = False
                try:
                    status: object = call(batch, ctx)
                except Exception:
                    logger.exception("group %s: listener failed on %s; reconsuming later", group, mq)
                    status = None
                    raised = True
                end = monotonic()
                rt = end - begin
                if hook is not None:
                    hook.after(
                        token, len(batch), success=status is success,
                        return_type=consume_return_type(status, raised, rt, timeout),
                    )  # fmt: skip
                if rt > timeout:
                    logger.warning("group %s: listener took %.1fs on %s (consume timeout)", group, rt, mq)
                if status is success and ctx.ack_index >= len(batch) - 1:
                    ok += batch
                    ok_calls += 1
                    ok_rt += rt
                    continue
                done.others.append(_Request(batch, pq, mq, ctx, self._status_of(status), rt))
            self._end_run(done, ok_calls, ok_rt, monotonic() - run_begin, ran)

    def _end_run(self, done: _Done, ok_calls: int, ok_rt: float, seconds: float, calls: int) -> None:
        """A run is over: learn its time per call and hand its outcome to the loop."""
        done.ok_calls, done.rt = ok_calls, ok_rt
        self._rt_per_call = (self._rt_per_call + seconds / calls) / 2
        self._deliver(done)

    def _next_run(self) -> tuple[list[MessageExt], ProcessQueue, MessageQueue, int] | None:
        """What a worker runs next (``None``: stop): what another run started first, else the
        next chunk queued; of it, as many calls as it expects to finish in :attr:`RUN_TARGET`
        (at least one), the rest left to the other workers at once."""
        while True:
            try:
                chunk = self._rests.popleft()
                break
            except IndexError:
                queued = self._requests.get()
                if queued is None:
                    return None
                if not queued.rest:
                    chunk = queued
                    break
                try:  # a wake-up for a remainder: take the front one, if still there
                    chunk = self._rests.popleft()
                    break
                except IndexError:
                    continue
        msgs, pq, mq, size = chunk.msgs, chunk.pq, chunk.mq, chunk.size
        calls = (len(msgs) + size - 1) // size
        keep = min(calls, max(1, int(self.RUN_TARGET / max(self._rt_per_call, 1e-9))))
        if keep < calls:
            self._share(_Chunk(msgs[keep * size :], pq, mq, size, rest=True))
            msgs = msgs[: keep * size]
        return msgs, pq, mq, size

    def _status_of(self, status: object) -> ConsumeConcurrentlyStatus:
        """What a call that did not consume everything returned; anything that is not a status
        (nothing, after the listener raised) is RECONSUME_LATER."""
        if isinstance(status, ConsumeConcurrentlyStatus):
            return status
        if status is not None:
            logger.warning("group %s: listener returned %r; reconsuming later", self.consumer.group, status)
        return ConsumeConcurrentlyStatus.RECONSUME_LATER

    def _share(self, rest: _Chunk) -> None:
        """Leave the rest of a chunk to the other workers: at the front of the remainders (taken
        before new chunks, so a started pull is finished first and, with one thread, messages
        are consumed exactly in order, as by Java's FIFO pool), plus a wake-up through the queue."""
        self._rests.appendleft(rest)
        self._requests.put(rest)

    def _deliver(self, done: _Done) -> None:
        """Hand a finished run to the loop, waking it only if no wake-up is pending."""
        with self._results_lock:
            self._results.append(done)
            if self._wake_scheduled:
                return
            self._wake_scheduled = True
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(self._apply_results)
            except RuntimeError:  # the loop closed meanwhile
                pass

    def _apply_results(self) -> None:
        with self._results_lock:
            results = self._results
            self._results = []
            self._wake_scheduled = False
        now = time.time()
        stats, offsets = self.consumer.stats, self.consumer.offset_store
        finished = 0
        for done in results:
            for request in done.others:
                self._apply(request)
            if done.skipped_calls:
                logger.info("group %s: %s dropped; %d message(s) not consumed", self.consumer.group, done.mq,
                            done.skipped_msgs)  # fmt: skip
                finished += done.skipped_calls
            if not done.ok_calls:
                continue
            finished += done.ok_calls
            pq, mq = done.pq, done.mq
            if pq.dropped:
                logger.info(
                    "group %s: %s dropped while consuming; result not applied", self.consumer.group, mq
                )
                continue
            # the common case, applied inline: no broker call needed
            stats.add(mq.topic, "ok", len(done.ok), done.rt * 1000.0, events=done.ok_calls)
            offset = pq.remove_messages(done.ok, now=now)
            if offset >= 0:
                offsets.update_offset(mq, offset, True)
        if finished:
            self._finished(finished)

    def _apply(self, request: _Request) -> None:
        """Apply one call's result that is not a plain success."""
        status, pq, mq = request.status, request.pq, request.mq
        if pq.dropped:
            logger.info("group %s: %s dropped while consuming; result not applied", self.consumer.group, mq)
            self._finished()
        else:
            task = asyncio.get_running_loop().create_task(
                self.process_consume_result(status, request.ctx, request.msgs, pq, mq, request.rt * 1000.0)
            )
            self._tasks.add(task)
            task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.error("applying a consume result failed", exc_info=task.exception())
        self._finished()

    def _finished(self, n: int = 1) -> None:
        self._pending -= n
        if self._pending <= 0 and self._idle is not None:
            self._pending = 0
            self._idle.set()

    async def process_consume_result(
        self,
        status: ConsumeConcurrentlyStatus,
        ctx: ConsumeConcurrentlyContext,
        msgs: list[MessageExt],
        pq: ProcessQueue,
        mq: MessageQueue,
        rt_ms: float = 0.0,
    ) -> None:
        if not msgs:
            return
        stats = self.consumer.stats
        if status is ConsumeConcurrentlyStatus.CONSUME_SUCCESS:
            ack_index = min(ctx.ack_index, len(msgs) - 1)
            ok = ack_index + 1
            stats.add(mq.topic, "ok", ok, rt_ms)
            if len(msgs) - ok:
                stats.add(mq.topic, "failed", len(msgs) - ok)
        else:
            ack_index = -1
            stats.add(mq.topic, "failed", len(msgs))
        failed = msgs[ack_index + 1 :]
        keep = msgs
        if failed:
            if self.consumer.message_model is MessageModel.BROADCASTING:
                for msg in failed:
                    logger.warning("BROADCASTING: consume failed, dropping message %s", msg.msg_id)
            else:
                back_failed = []
                for msg in failed:
                    if not await self.consumer.send_message_back(
                        msg, ctx.delay_level_when_next_consume, mq.broker_name
                    ):
                        msg.reconsume_times += 1
                        back_failed.append(msg)
                if back_failed:
                    ids = {id(m) for m in back_failed}
                    keep = [m for m in msgs if id(m) not in ids]
                    self._submit_later(back_failed, pq, mq)
        offset = pq.remove_messages(keep, now=time.time())
        if offset >= 0 and not pq.dropped:
            self.consumer.offset_store.update_offset(mq, offset, True)

    # ---------------------------------------------------------------- consume timeout

    async def _clean_expired_loop(self) -> None:
        interval = self.consumer.config.consume_timeout
        while True:
            await asyncio.sleep(interval)
            try:
                await self.clean_expired_messages(time.time())
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("consume-timeout scan failed")

    async def clean_expired_messages(self, now: float) -> int:
        """Send back and forget cached messages whose listener started over ``consume_timeout`` ago."""
        timeout_ms = self.consumer.config.consume_timeout * 1000.0
        cleaned = 0
        for mq, pq in list(self.consumer.rebalance.process_queue_table.items()):
            for _ in range(_TIMEOUT_SCAN_MAX):
                cached = pq.cached()[:1]
                if not cached:
                    break
                msg = cached[0]
                started = msg.properties.get(MessageConst.CONSUME_START_TIME)
                if started is None or not started.isdigit() or now * 1000.0 - int(started) <= timeout_ms:
                    break
                logger.warning(
                    "message %s of %s exceeded the consume timeout; sending it back", msg.msg_id, mq
                )
                await self.consumer.send_message_back(msg, 3, mq.broker_name)
                offset = pq.remove_messages([msg], now=now)
                if offset >= 0 and not pq.dropped:
                    self.consumer.offset_store.update_offset(mq, offset, True)
                cleaned += 1
        return cleaned

    # ---------------------------------------------------------------- CONSUME_MESSAGE_DIRECTLY

    async def consume_message_directly(
        self, msg: MessageExt, broker_name: str | None
    ) -> ConsumeMessageDirectlyResult:
        """Run the listener on one message a tool pushed (nothing is sent back or committed)."""
        ctx = ConsumeConcurrentlyContext(MessageQueue(msg.topic, broker_name or "", msg.queue_id))
        return await consume_directly(self.consumer.group, msg, ctx, self._call_listener, _concurrent_verdict)
