"""Message tracing for rocketq clients, as Java clients do it with ``enableMsgTrace``.

A producer or push consumer created with ``trace=True`` describes what it does in RocketMQ's own
trace records (:mod:`rocketq.protocol.trace`) and publishes them to ``RMQ_SYS_TRACE_TOPIC``
(or the configured ``trace_topic``), so traces of Java clients and of rocketq clients feed the same
tools. What is recorded, and when (RocketMQ 4.9.4's ``SendMessageTraceHookImpl`` and
``ConsumeMessageTraceHookImpl``):

* **Pub** after a send the broker answered (not oneway, not a failed send; skipped when the broker
  answered ``TRACE_ON=false`` or without a region): the time the send began, the broker's region,
  the producer group, topic, msg id (a batch's ids joined by commas), tags, keys, the broker address
  as store host, body length, cost ms, message type and the offset msg id. Java 4.9.4 leaves
  asynchronous sends untraced (its hook runs before the answer); rocketq traces them when they
  complete, in the same record.
* **SubBefore** just before a listener call, one bean per message: time, the message's region
  (its ``MSG_REGION`` property, which brokers do not store, so usually ``null``), the group, a
  fresh request id shared by the call's beans, msg id, retry times, keys. Messages stored with
  ``TRACE_ON=false`` are left out.
* **SubAfter** after the call: the same request id, msg ids and keys, cost ms per message,
  success (``CONSUME_SUCCESS``), the context code (:class:`ConsumeReturnType`: SUCCESS, TIME_OUT,
  EXCEPTION, RETURNNULL, FAILED) and the group.
* **EndTransaction** when a transactional producer ends a transaction, after its local
  transaction or answering the broker's check (``EndTransactionTraceHookImpl``): time, the
  message's region (``DefaultRegion`` when it names none), group, topic, msg id, tags, keys, the
  broker, the transaction id, the state sent and whether a check asked for it.

A missing tag or key is written as the text ``null``, as Java's ``StringBuilder`` writes a null.

:class:`TraceDispatcher` is Java's ``AsyncTraceDispatcher``: ``append`` queues a context (at most
16,384 waiting — Java holds 1,024, but its worker does not share a GIL with the listeners, so bursts
need more room here; more are dropped and counted); a worker thread wakes every 100 ms (sooner when
a quarter of the queue fills), takes what waits, and packs the encoded contexts per trace topic
until the text reaches 118,000 characters or the oldest waited 0.5 s (:class:`TraceBatcher`); each
pack is one message, keyed by every traced msg id and key (``KEYS``, space-separated, Java
``HashSet`` order), sent asynchronously through the ``send`` it was given - for a traced client,
a trace producer of its own (:func:`rocketq.client.producer.facade.trace_dispatcher` makes both):
group ``_INNER_TRACE_PRODUCER-<group>-<PRODUCER|CONSUMER>-<n>``, instance name
``PID_CLIENT_INNER_TRACE_PRODUCER_<name servers>``, 5 s send timeout. The trace topic needs no
setup: without a route, the send goes through ``TBW102`` and the broker creates it (4 queues), as
with Java; a broker started with ``traceTopicEnable`` has it from the start (1 queue).

Two additions of ours, outside the trace text (so Java tools read these messages unchanged):

* every trace message carries the user property :data:`CLIENT_ID_PROPERTY` (``rqClientId``), the
  traced client's id (``ip@instance``): Sub lines name a group but not the consumer, and the
  trace producer's address (the message's born host) is shared by every client of a process;
* a traced push consumer publishes its rebalance log (:class:`~rocketq.client.RebalanceRecord`)
  to :data:`REBALANCE_TOPIC` (``RQ_SYS_REBALANCE_TOPIC``): one message per record (one per topic
  per rebalance, changed or not), body the UTF-8 JSON of :meth:`RebalanceRecord.to_dict` plus
  ``"v": 1``, tags the consumer group, keys the group and the client id. The fields: ``v``,
  ``seq``, ``trigger`` (start, notify, periodic, subscription, route, correction, manual,
  shutdown), ``group``, ``client_id``, ``topic``, ``message_model``, ``strategy``, ``client_ids``
  (the group as the broker listed it), ``all_queues``, ``owned`` (after), ``added``, ``removed``,
  ``expired`` (queues as ``{"topic", "broker", "queue_id"}``), ``pull_from`` and ``committed``
  (queues with an ``offset``), ``changed``, ``start_ms``, ``end_ms``, ``duration_ms`` (epoch ms)
  and ``error`` (null, or why no assignment could be computed).

>>> b = TraceBatcher(max_chars=40, wait_threshold=0.5)
>>> ctx = TraceContext(trace_type=TraceType.SUB_AFTER, timestamp=1, group_name="G", request_id="R",
...                    beans=(TraceBean(msg_id="M1", keys="k1"),))
>>> b.add(ctx, now=10.0)
[]
>>> [m.keys for m in b.add(ctx, now=10.1)]     # two lines of 30 characters reach 40
[('M1', 'k1')]
>>> b.add(ctx, now=10.2), b.due(now=10.6), [m.keys for m in b.due(now=10.7)]
([], [], [('M1', 'k1')])
"""

from __future__ import annotations

import collections
import concurrent.futures
import itertools
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from rocketq.client.ids import next_uniq_id
from rocketq.client.message import AnsweredSend, ConsumeConcurrentlyStatus, EndedTransaction, SendStatus
from rocketq.client.rebalance.log import RebalanceRecord
from rocketq.clock import now_ms
from rocketq.protocol.bodies import java_hash_order
from rocketq.protocol.message import Message as ProtocolMessage
from rocketq.protocol.message import MessageExt
from rocketq.protocol.properties import KEY_SEPARATOR, MessageConst
from rocketq.protocol.trace import (
    CONTENT_SPLITOR,
    FIELD_SPLITOR,
    RMQ_SYS_TRACE_TOPIC,
    TRACE_GROUP_PREFIX,
    TRACE_MAX_MESSAGE_SIZE,
    ConsumeReturnType,
    TraceBean,
    TraceContext,
    TraceMessage,
    TraceMessageType,
    TraceType,
    encode_trace,
    trace_keys,
)

if TYPE_CHECKING:
    from rocketq.client.rebalance.log import RebalanceLog

__all__ = [
    "CLIENT_ID_PROPERTY",
    "REBALANCE_RECORD_VERSION",
    "REBALANCE_TOPIC",
    "TRACE_INSTANCE_NAME",
    "TRACE_SEND_TIMEOUT",
    "ConsumeTraceHook",
    "ConsumerTracing",
    "ProducerTracing",
    "TraceBatcher",
    "TraceDispatcher",
    "consume_return_type",
    "rebalance_message",
]

logger = logging.getLogger(__name__)

REBALANCE_TOPIC: Final = "RQ_SYS_REBALANCE_TOPIC"
"""Where traced consumers publish their rebalance records (ours; see the module docstring)."""
REBALANCE_RECORD_VERSION: Final = 1
"""The ``"v"`` of the rebalance JSON this module writes."""
CLIENT_ID_PROPERTY: Final = "rqClientId"
"""User property naming the traced client on trace and rebalance messages (ours)."""
TRACE_INSTANCE_NAME: Final = "PID_CLIENT_INNER_TRACE_PRODUCER"
"""Java's ``TraceConstants.TRACE_INSTANCE_NAME``: the trace producer's instance name prefix."""
NULL_TEXT: Final = "null"
"""How Java writes a missing tag or key into a trace line."""
DEFAULT_REGION: Final = "DefaultRegion"
"""The region of an EndTransaction line whose message names none (``MixAll.DEFAULT_TRACE_REGION_ID``)."""

_QUEUE_SIZE = 16_384  # AsyncTraceDispatcher's traceContextQueue holds 1,024 (see the docstring)
_POLL = 0.1  # pollingTimeMil
_WAIT_THRESHOLD = 0.5  # waitTimeThresholdMil
TRACE_SEND_TIMEOUT: Final = 5.0
"""Seconds a trace producer's send may take (``AsyncTraceDispatcher``'s producer: 5000 ms)."""
_counter = itertools.count(1)  # Java's static COUNTER for trace producer group names

_Item = TraceContext | ProtocolMessage | tuple[str, tuple[str, ...]]
Sender = Callable[[ProtocolMessage], "concurrent.futures.Future[Any] | None"]
"""Sends one trace or rebalance message; may return a future that completes with the send."""


def trace_producer_group(group: str, kind: str) -> str:
    """The group of a traced client's trace producer (``_INNER_TRACE_PRODUCER-<group>-<kind>-<n>``,
    ``n`` counting in this process, as Java's static counter)."""
    return f"{TRACE_GROUP_PREFIX}-{group}-{kind}-{next(_counter)}"


class TraceBatcher:
    """Packs encoded contexts into trace messages by size and age (Java's ``TraceDataSegment``).

    Pure: the caller passes the time. One batcher serves one trace topic. Message keys are every
    context's msg ids and keys (split on spaces), without empties, in Java ``HashSet`` order.
    """

    __slots__ = ("_count", "_first_add", "_keys", "_size", "_texts", "max_chars", "wait_threshold")

    def __init__(
        self, *, max_chars: int = TRACE_MAX_MESSAGE_SIZE, wait_threshold: float = _WAIT_THRESHOLD
    ) -> None:
        self.max_chars = max_chars
        self.wait_threshold = wait_threshold
        self._texts: list[str] = []
        self._keys: dict[str, None] = {}
        self._count = 0
        self._size = 0
        self._first_add: float | None = None

    def __len__(self) -> int:
        return self._count

    def add(self, ctx: TraceContext, now: float) -> list[TraceMessage]:
        """Add one context; the message it completes (size reached), if any."""
        if not ctx.beans:
            return []
        return self.add_encoded(encode_trace((ctx,)), trace_keys((ctx,)), now)

    def add_encoded(self, text: str, keys: Iterable[str], now: float) -> list[TraceMessage]:
        """Add one context already encoded (``text``) with its message keys."""
        if self._first_add is None:
            self._first_add = now
        self._texts.append(text)
        for key in keys:
            self._keys[key] = None
        self._count += 1
        self._size += len(text)
        if self._size >= self.max_chars:
            return self.drain()
        return []

    def due(self, now: float) -> list[TraceMessage]:
        """Everything held, if the oldest context waited ``wait_threshold`` seconds."""
        if self._first_add is not None and now - self._first_add >= self.wait_threshold:
            return self.drain()
        return []

    def drain(self) -> list[TraceMessage]:
        """Everything held, now."""
        if not self._count:
            return []
        self._keys.pop("", None)
        message = TraceMessage("".join(self._texts).encode(), tuple(java_hash_order(self._keys)))
        self._texts.clear()
        self._keys = {}
        self._count = 0
        self._size = 0
        self._first_add = None
        return [message]


def rebalance_message(record: RebalanceRecord, topic: str = REBALANCE_TOPIC) -> ProtocolMessage:
    """The message that publishes ``record`` (format in the module docstring)."""
    body = json.dumps({"v": REBALANCE_RECORD_VERSION, **record.to_dict()}, separators=(",", ":"))
    props = {
        MessageConst.TAGS: record.group,
        MessageConst.KEYS: f"{record.group} {record.client_id}",
        CLIENT_ID_PROPERTY: record.client_id,
        MessageConst.WAIT: "true",
    }
    return ProtocolMessage(topic, body.encode(), 0, props)


class TraceDispatcher:
    """Queues trace contexts and rebalance records and publishes them (``AsyncTraceDispatcher``).

    ``send`` publishes one message (a trace producer's ``send_future``; see
    :func:`rocketq.client.producer.facade.trace_dispatcher`); ``close``, if given, is called once
    :meth:`shutdown` has waited for the sends. ``client_id`` is the traced client's id, written as
    :data:`CLIENT_ID_PROPERTY`.
    """

    def __init__(
        self,
        group: str,
        kind: Literal["PRODUCER", "CONSUMER"],
        *,
        client_id: str,
        send: Sender,
        close: Callable[[], object] | None = None,
        trace_topic: str | None = None,
        max_chars: int = TRACE_MAX_MESSAGE_SIZE,
        wait_threshold: float = _WAIT_THRESHOLD,
        queue_size: int = _QUEUE_SIZE,
    ) -> None:
        self.group = group
        self.kind = kind
        self.client_id = client_id
        self.trace_topic = trace_topic or RMQ_SYS_TRACE_TOPIC
        self._send = send
        self._close = close
        self._batcher = TraceBatcher(max_chars=max_chars, wait_threshold=wait_threshold)
        self._queue: collections.deque[_Item] = collections.deque()
        self._capacity = queue_size
        self._wake_at = max(1, queue_size // 4)  # queue length that wakes the worker early
        self._wakeup = threading.Event()
        self._handling = False  # the worker holds items taken from the queue
        self._worker: threading.Thread | None = None
        self._stopped = threading.Event()
        self._pending: set[concurrent.futures.Future[Any]] = set()
        self._pending_lock = threading.Lock()
        self.discarded = 0
        self.sent_messages = 0
        self.failed_messages = 0

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> TraceDispatcher:
        if self._worker is not None:
            return self
        self._worker = threading.Thread(
            target=self._run, name=f"rocketq-trace-{self.kind.lower()}-{self.group}", daemon=True
        )
        self._worker.start()
        return self

    def shutdown(self, timeout: float = 5.0) -> None:
        """Publish what is queued (waiting up to ``timeout`` s for the sends), then stop."""
        self._stopped.set()
        self._wakeup.set()
        if self._worker is not None:
            self._worker.join(timeout)
            self._worker = None
        self._wait_pending(timeout)
        close, self._close = self._close, None
        if close is not None:
            close()

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until everything appended so far is sent (or ``timeout`` passes); whether it was."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            # the worker sets _handling before it takes items and clears it once they are handed on
            if not self._queue and not self._handling and not len(self._batcher):
                break
            time.sleep(0.01)
        return self._wait_pending(max(0.0, deadline - time.monotonic()))

    # ---------------------------------------------------------------- input

    def append(self, item: TraceContext | ProtocolMessage) -> bool:
        """Queue a context (or a ready message, such as a rebalance record); ``False`` when the
        queue is full and it was dropped. Cheap and thread-safe: the worker picks items up every
        100 ms, as Java's does."""
        if len(self._queue) >= self._capacity:
            self.discarded += 1
            if self.discarded % 1000 == 1:
                logger.info("trace buffer full; %d context(s) dropped so far", self.discarded)
            return False
        self._queue.append(item)
        if len(self._queue) >= self._wake_at:
            self._wakeup.set()
        return True

    def append_encoded(self, text: str, keys: tuple[str, ...]) -> bool:
        """Queue one context already encoded as trace text, with its message keys (the hooks'
        fast path; the text must be what :func:`~rocketq.protocol.trace.encode_trace` writes)."""
        return self.append((text, keys))  # type: ignore[arg-type]

    def publish_rebalance(self, record: RebalanceRecord) -> None:
        """Queue ``record`` for :data:`REBALANCE_TOPIC` (a rebalance-log listener)."""
        self.append(rebalance_message(record))

    # ---------------------------------------------------------------- worker

    def _run(self) -> None:
        batcher = self._batcher
        pending = self._queue
        while True:
            self._wakeup.wait(_POLL)
            self._wakeup.clear()
            stopping = self._stopped.is_set()
            self._handling = True
            try:
                while pending:
                    item = pending.popleft()
                    now = time.monotonic()
                    if isinstance(item, tuple):
                        ready = batcher.add_encoded(item[0], item[1], now)
                    elif isinstance(item, TraceContext):
                        ready = batcher.add(item, now)
                    else:
                        self._dispatch(item)
                        continue
                    for message in ready:
                        self._dispatch(self._trace_message(message))
                for message in batcher.drain() if stopping else batcher.due(time.monotonic()):
                    self._dispatch(self._trace_message(message))
            finally:
                self._handling = False
            if stopping and not pending:
                return

    def _trace_message(self, message: TraceMessage) -> ProtocolMessage:
        props = {CLIENT_ID_PROPERTY: self.client_id, MessageConst.WAIT: "true"}
        if message.keys:
            props[MessageConst.KEYS] = message.keys_property
        return ProtocolMessage(self.trace_topic, message.body, 0, props)

    def _dispatch(self, message: ProtocolMessage) -> None:
        try:
            future = self._send(message)
        except Exception as exc:
            self.failed_messages += 1
            logger.warning("sending a %s message failed: %s", message.topic, exc)
            return
        with self._pending_lock:
            if future is None:
                self.sent_messages += 1
                return
            self._pending.add(future)
        future.add_done_callback(self._sent)

    def _sent(self, future: concurrent.futures.Future[Any]) -> None:
        exc = future.exception() if not future.cancelled() else None
        ok = exc is None and not future.cancelled()
        with self._pending_lock:  # callbacks run on the trace producer's loop, the worker elsewhere
            self._pending.discard(future)
            if ok:
                self.sent_messages += 1
            else:
                self.failed_messages += 1
        if not ok:
            logger.warning("sending trace data failed: %s", exc)

    def _wait_pending(self, timeout: float) -> bool:
        with self._pending_lock:
            pending = set(self._pending)
        if not pending:
            return True
        _, not_done = concurrent.futures.wait(pending, timeout)
        return not not_done


# -------------------------------------------------------------------------------------- hooks


def _text(value: str | None) -> str:
    return NULL_TEXT if value is None else value


def _trans_keys(items: Iterable[tuple[str, str | None]]) -> tuple[str, ...]:
    """A context's message keys from ``(msg id, KEYS property)`` pairs: the msg id, and the keys
    split on spaces when there are any (Java's ``TraceTransferBean`` keys; a null has none)."""
    out: list[str] = []
    for msg_id, keys in items:
        out.append(msg_id)
        if keys:
            out.extend(keys.split(KEY_SEPARATOR))
    return tuple(out)


def _msg_type(props: dict[str, str] | None) -> TraceMessageType:
    if props is None:
        return TraceMessageType.NORMAL
    if props.get(MessageConst.TRAN_MSG) == "true":
        return TraceMessageType.TRANS_HALF
    if MessageConst.DELAY in props or "__STARTDELIVERTIME" in props:
        return TraceMessageType.DELAY
    return TraceMessageType.NORMAL


class ProducerTracing:
    """A traced producer's part: builds Pub contexts and owns the producer's dispatcher.

    The producer calls it as its :class:`~rocketq.client.producer.core.SendTraceHook`.
    """

    def __init__(self, dispatcher: TraceDispatcher) -> None:
        self.dispatcher = dispatcher

    def on_send(self, send: AnsweredSend) -> None:
        """Record one answered send (``sendMessageAfter``)."""
        topic, result, begin_ms = send.topic, send.result, send.begin_ms
        if topic.startswith(self.dispatcher.trace_topic) or topic == REBALANCE_TOPIC:
            return
        if not result.region_id or not result.trace_on:
            return
        props = None if send.batch else send.properties
        cost = now_ms() - begin_ms
        bean = TraceBean(
            topic=topic,
            msg_id=result.msg_id,
            offset_msg_id=result.offset_msg_id,
            tags=_text(props.get(MessageConst.TAGS) if props else None),
            keys=_text(props.get(MessageConst.KEYS) if props else None),
            store_host=send.broker_addr,
            store_time=begin_ms + cost // 2,
            body_length=send.body_length,
            msg_type=_msg_type(props),
        )
        ctx = TraceContext(
            trace_type=TraceType.PUB,
            timestamp=begin_ms,
            region_id=result.region_id,
            group_name=send.group,
            cost_time=cost,
            success=result.status is SendStatus.SEND_OK,
            request_id=next_uniq_id(),
            beans=(bean,),
        )
        raw_keys = props.get(MessageConst.KEYS) if props else None
        self.dispatcher.append_encoded(encode_trace((ctx,)), _trans_keys(((result.msg_id, raw_keys),)))

    def on_end_transaction(self, ended: EndedTransaction) -> None:
        """Record the end of a transaction, sent after the local transaction or answering the
        broker's check (``EndTransactionTraceHookImpl``): an EndTransaction line with the
        message's topic, tags and keys, the broker, the state and whether a check asked."""
        msg, msg_id = ended.msg, ended.msg_id
        props = msg.properties
        bean = TraceBean(
            topic=msg.topic,
            msg_id=msg_id,
            tags=_text(props.get(MessageConst.TAGS)),
            keys=_text(props.get(MessageConst.KEYS)),
            store_host=ended.broker_addr,
            msg_type=TraceMessageType.TRANS_COMMIT,
            transaction_id=_text(props.get(MessageConst.UNIQ_KEY)),
            transaction_state=ended.state,
            from_transaction_check=ended.from_check,
        )
        ctx = TraceContext(
            trace_type=TraceType.END_TRANSACTION,
            timestamp=now_ms(),
            region_id=props.get(MessageConst.MSG_REGION) or DEFAULT_REGION,
            group_name=ended.group,
            beans=(bean,),
        )
        self.dispatcher.append_encoded(
            encode_trace((ctx,)), _trans_keys(((msg_id, props.get(MessageConst.KEYS)),))
        )

    def shutdown(self) -> None:
        self.dispatcher.shutdown()


def consume_return_type(status: object, raised: bool, rt: float, timeout: float) -> ConsumeReturnType:
    """How a listener call ended, as Java's consume services classify it (``ConsumeReturnType``):
    no status → EXCEPTION (it raised) or RETURNNULL; ran ``timeout`` seconds or more → TIME_OUT;
    RECONSUME_LATER (or any other answer) → FAILED; CONSUME_SUCCESS → SUCCESS."""
    if status is None:
        return ConsumeReturnType.EXCEPTION if raised else ConsumeReturnType.RETURNNULL
    if rt >= timeout:
        return ConsumeReturnType.TIME_OUT
    if status is ConsumeConcurrentlyStatus.CONSUME_SUCCESS or getattr(status, "name", "") == "SUCCESS":
        return ConsumeReturnType.SUCCESS
    return ConsumeReturnType.FAILED


@dataclass(frozen=True, slots=True)
class _Before:
    request_id: str
    begin_ms: int
    items: tuple[tuple[str, str | None], ...]  # (msg id, KEYS property) of each traced message


class ConsumeTraceHook:
    """Called by a consume service around each listener call (``ConsumeMessageTraceHookImpl``).

    ``before(msgs)`` → a token (``None`` when nothing is traced) to hand to ``after``. A consume
    service calls them on its worker thread. Both write the trace text directly (the lines
    :func:`~rocketq.protocol.trace.encode_trace` would write for the equivalent contexts; a test
    holds them equal) and queue it: tracing a message costs a few microseconds.
    """

    def __init__(self, dispatcher: TraceDispatcher, group: str) -> None:
        self.dispatcher = dispatcher
        self.group = group

    def before(self, msgs: Sequence[MessageExt], start_ms: int | None = None) -> object:
        """Before the listener call of ``msgs``; ``start_ms`` is the call's start (the time the
        consume service also gives the messages as ``CONSUME_START_TIME``), else the clock's now."""
        c, f = CONTENT_SPLITOR, FIELD_SPLITOR
        region: str | None = None
        lines: list[str] = []
        items: list[tuple[str, str | None]] = []
        for msg in msgs:
            props = msg.properties
            if props.get(MessageConst.TRACE_ON) == "false":
                continue
            region = props.get(MessageConst.MSG_REGION)  # Java keeps the last message's
            keys = props.get(MessageConst.KEYS)
            msg_id = msg.msg_id
            items.append((msg_id, keys))
            lines.append(f"{msg_id}{c}{msg.reconsume_times}{c}{_text(keys)}{f}")
        if not items:
            return None
        now = now_ms() if start_ms is None else start_ms
        request_id = next_uniq_id()  # as Java's MessageClientIDSetter.createUniqID
        head = f"{TraceType.SUB_BEFORE.value}{c}{now}{c}{_text(region)}{c}{self.group}{c}{request_id}{c}"
        self.dispatcher.append_encoded(head + head.join(lines), _trans_keys(items))
        return _Before(request_id, now, tuple(items))

    def after(self, token: object, count: int, *, success: bool, return_type: ConsumeReturnType) -> None:
        """After the listener call of ``count`` messages; ``success`` is CONSUME_SUCCESS."""
        if not isinstance(token, _Before) or count <= 0:
            return
        c, f = CONTENT_SPLITOR, FIELD_SPLITOR
        now = now_ms()
        cost = (now - token.begin_ms) // count
        head = f"{TraceType.SUB_AFTER.value}{c}{token.request_id}{c}"
        mid = f"{c}{cost}{c}{'true' if success else 'false'}{c}"
        tail = f"{c}{int(return_type)}{c}{now}{c}{self.group}{f}"
        text = "".join(f"{head}{msg_id}{mid}{_text(keys)}{tail}" for msg_id, keys in token.items)
        self.dispatcher.append_encoded(text, _trans_keys(token.items))


class ConsumerTracing:
    """A traced push consumer's part: the dispatcher, the consume hook, the rebalance listener."""

    def __init__(self, dispatcher: TraceDispatcher, log: RebalanceLog) -> None:
        self.dispatcher = dispatcher
        self.hook = ConsumeTraceHook(dispatcher, dispatcher.group)
        self._log = log
        log.add_listener(dispatcher.publish_rebalance)

    def shutdown(self) -> None:
        try:
            self._log.remove_listener(self.dispatcher.publish_rebalance)
        except ValueError:
            pass
        self.dispatcher.shutdown()
