"""The producer's engine (``DefaultMQProducerImpl``): prepare a message, run its send, carry it.

:class:`ProducerCore` runs on its client instance's loop (the synchronous
:class:`~rocketq.client.producer.facade.Producer` is a thin front over it). A send finds the topic's
publish info (route from the name server; for a topic without a route, the ``TBW102`` default
topic's route so that the broker auto-creates it), picks a queue (:mod:`.selection`), gives the
message a unique id (``UNIQ_KEY``, :func:`rocketq.client.ids.next_uniq_id`), compresses a body of
4 KiB or more, and sends ``SEND_MESSAGE_V2`` to the queue's master, the request built by
:func:`rocketq.protocol.calls.send_request` (the one place a send header is written).

Every send - one message, a batch, a half message, a request, from any thread or loop - is one
loop, :meth:`ProducerCore._attempts`: whether a failed attempt is retried on another broker, and
when to give up, is decided by :mod:`.send_policy` alone; the back-off of busy brokers, the retry
budget and the window of asynchronous sends are :mod:`.overload`'s. The loop yields steps (an
attempt to carry, a coroutine for the client's loop, a pause) and three drivers carry them,
differing only in how they wait:

* :meth:`ProducerCore._drive_on_loop` - on the client's loop (:meth:`ProducerCore.send`:
  ``send_future``, ``send_callback``, oneway sends, requests, the consumers' inner producer);
* :meth:`ProducerCore._drive_in_thread` - in a plain thread, blocking (:meth:`ProducerCore.send_blocking`:
  ``Producer.send``, ``send_batch``): each attempt on the thread's own socket (:mod:`.direct`) or
  handed over to the loop's connection (``invoke_threadsafe``);
* :meth:`ProducerCore._drive_from_loop` - on the caller's own event loop
  (:meth:`ProducerCore.send` awaited there: ``Producer.send_async``, ``invoke_from_loop``).

What only the client's loop can do (fetch a route, locate a master, connect) is handed to it by
the thread and other-loop drivers. :meth:`ProducerCore.request` sends a request and waits for its
reply (:mod:`.request`); the transactional producer's engine (:mod:`.transaction`) builds on this
one.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Generator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

from rocketq.client.api import ClientAPI
from rocketq.client.config import ProducerConfig
from rocketq.client.ids import next_uniq_id
from rocketq.client.loop_thread import LoopThread
from rocketq.client.message import AnsweredSend, EndedTransaction, SendResult, SendStatus
from rocketq.client.producer.direct import ThreadConnections
from rocketq.client.producer.overload import BrokerBackoff, InFlightLimit, RetryBudget
from rocketq.client.producer.request import prepare_request
from rocketq.client.producer.selection import MessageQueueSelector, pick_queue
from rocketq.client.producer.send_policy import Decision, Outcome, SendPolicy, Verdict
from rocketq.client.routes import TopicPublishInfo, publish_info_from_route, route_for_auto_create
from rocketq.client.validators import check_message
from rocketq.errors import (
    BrokerError,
    ClientStateError,
    ConfigError,
    RemotingError,
    RemotingTimeoutError,
    RequestTimeoutError,
    RocketQError,
    TopicNotExistError,
)
from rocketq.logsummary import LogSummary
from rocketq.models import MessageQueue
from rocketq.protocol.bodies import TopicRouteData
from rocketq.protocol.calls import SendOrigin, SendPayload, SendResponse, parse_send_response, send_request
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import CheckTransactionStateRequestHeader
from rocketq.protocol.message import Message as ProtocolMessage
from rocketq.protocol.message import MessageExt, MessageSysFlag, encode_batch, maybe_compress
from rocketq.protocol.properties import MessageConst
from rocketq.protocol.topics import RETRY_GROUP_TOPIC_PREFIX

if TYPE_CHECKING:
    from rocketq.remoting import RemotingConnection, RPCHook

__all__ = ["ANYWHERE", "ProducerContext", "ProducerCore", "SendTarget", "SendTraceHook"]

logger = logging.getLogger(__name__)
#: failed attempts, summarised per broker and kind (never one line per message under overload)
_warnings = LogSummary(logger)

_STATUS_BY_CODE: dict[int, SendStatus] = {
    ResponseCode.SUCCESS: SendStatus.SEND_OK,
    ResponseCode.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE,
}


class ProducerContext(Protocol):
    """What a producer needs of its client instance (:class:`~rocketq.client.instance.ClientInstance`,
    which registers it as a ``ProducerInner``)."""

    @property
    def client_id(self) -> str: ...

    @property
    def api(self) -> ClientAPI | None: ...

    @property
    def loop_thread(self) -> LoopThread: ...

    @property
    def topic_route_table(self) -> dict[str, TopicRouteData]: ...

    @property
    def requests(self) -> dict[str, asyncio.Future[MessageExt]]: ...

    def register_producer(self, group: str, producer: ProducerCore) -> None: ...

    def unregister_producer_local(self, group: str) -> None: ...

    async def unregister_client(
        self, *, producer_group: str | None = None, consumer_group: str | None = None
    ) -> None: ...

    async def send_heartbeat_to_all_brokers(self) -> None: ...

    async def update_topic_route(self, topic: str, route: TopicRouteData | None = None) -> bool: ...

    def refresh_route_soon(self, topic: str) -> None: ...

    def find_broker_address_in_publish(self, broker_name: str) -> str | None: ...

    async def locate_master(self, mq: MessageQueue) -> str | None: ...


class SendTraceHook(Protocol):
    """What a traced producer calls after each answered send (``SendMessageHook``) and at the end
    of each transaction (``EndTransactionHook``); implemented by
    :class:`rocketq.client.trace.ProducerTracing`."""

    def on_send(self, send: AnsweredSend) -> None: ...

    def on_end_transaction(self, ended: EndedTransaction) -> None: ...

    def shutdown(self) -> None: ...


@dataclass(frozen=True, slots=True)
class SendTarget:
    """Where a send may go: a queue the caller chose, a selector and its argument, or (all
    ``None``, :data:`ANYWHERE`) anywhere: the producer picks, and may avoid a broker that backs
    off."""

    queue: MessageQueue | None = None
    selector: MessageQueueSelector | None = None
    arg: Any = None

    @property
    def chosen(self) -> bool:
        """The caller chose the queue (given, or by a selector): the send is not moved to another
        broker after a failure (RocketMQ retries only sends that choose no queue)."""
        return self.queue is not None or self.selector is not None


ANYWHERE: Final = SendTarget()
"""A send the producer places (no queue, no selector)."""


class ProducerCore:
    """The producer's asynchronous implementation; runs on its client instance's loop."""

    def __init__(self, instance: ProducerContext, group: str, config: ProducerConfig) -> None:
        self.instance = instance
        self.group = group
        self.config = config
        self.publish_table: dict[str, TopicPublishInfo] = {}
        self._ip = instance.client_id.partition("@")[0]
        self.trace: SendTraceHook | None = None  # set by Producer.start when tracing
        #: the group and default topic of every send header, and its templates (protocol.calls)
        self.origin = SendOrigin(
            group,
            default_topic=config.create_topic_key,
            default_topic_queue_nums=config.default_topic_queue_nums,
        )
        # blocking sends' own sockets (config.thread_sockets), made on the first such send
        self._thread_connections: ThreadConnections | None = None
        self._thread_connections_lock = threading.Lock()
        self._blocking_in_flight = 0  # attempts out from plain threads (either way)
        # overload (see .overload): asynchronous sends out at once, the retry budget, busy brokers
        self.in_flight = InFlightLimit(config.max_async_in_flight, config.max_async_in_flight_bytes)
        ratio = config.retry_budget_ratio
        self._budget = None if ratio is None else RetryBudget(ratio=ratio)
        self.backoff = BrokerBackoff(first=config.busy_backoff, longest=config.busy_backoff_max)
        #: retries the budget refused (the sends failed with their last error instead)
        self.retries_refused = 0

    # ---------------------------------------------------------------- ProducerInner

    def publish_topics(self) -> list[str]:
        return list(self.publish_table)

    def is_publish_topic_need_update(self, topic: str) -> bool:
        info = self.publish_table.get(topic)
        return info is None or not info.ok

    def update_topic_publish_info(self, topic: str, route: TopicRouteData) -> None:
        self.publish_table[topic] = publish_info_from_route(topic, route)

    # ---------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        """Register with the instance and say hello to the brokers. The default topic (``TBW102``)
        is a publish topic from the start, as in Java's ``start``: its route names the brokers,
        so a producer that has sent nothing yet is known to them (the broker's transaction
        checks look for a live producer of the group)."""
        self.publish_table.setdefault(self.config.create_topic_key, TopicPublishInfo([], None))
        self.instance.register_producer(self.group, self)
        await self.instance.send_heartbeat_to_all_brokers()
        # not awaited: a name server that does not answer must not hold the start up
        self.instance.refresh_route_soon(self.config.create_topic_key)

    async def unregister(self) -> None:
        """UNREGISTER_CLIENT for this producer group on every broker, and forget it locally."""
        self.instance.unregister_producer_local(self.group)
        await self.instance.unregister_client(producer_group=self.group)

    def check_transaction_state(
        self, addr: str, msg: MessageExt, header: CheckTransactionStateRequestHeader
    ) -> None:
        """The broker at ``addr`` asks about a half message of this group: a plain producer has
        no checker to ask (a :class:`~.transaction.TransactionProducerCore` has), so the broker
        asks again at its next check round, as Java's producer without a listener leaves it."""
        logger.warning(
            "broker %s asks producer group %s about transaction %s, but this producer has no "
            "transaction checker (use TransactionProducer)",
            addr,
            self.group,
            msg.msg_id,
        )

    # ---------------------------------------------------------------- routes

    async def find_publish_info(self, topic: str) -> TopicPublishInfo:
        """``tryToFindTopicPublishInfo``: the route, else the default topic's (auto-create)."""
        info = self.publish_table.get(topic)
        if info is None or not info.ok:
            self.publish_table.setdefault(topic, TopicPublishInfo([], None))
            await self.instance.update_topic_route(topic)
            info = self.publish_table[topic]
        if info.have_route or info.ok:
            return info
        api = self.instance.api
        assert api is not None
        try:
            default_route = await api.get_topic_route(self.config.create_topic_key)
        except RocketQError as exc:
            logger.warning("route of the default topic %s not found: %s", self.config.create_topic_key, exc)
            default_route = None
        if default_route is not None:
            route = route_for_auto_create(default_route, self.config.default_topic_queue_nums)
            await self.instance.update_topic_route(topic, route)
        return self.publish_table[topic]

    # ---------------------------------------------------------------- sending: preparing

    def _properties_for(self, msg: ProtocolMessage, *, batch: bool) -> dict[str, str]:
        props = dict(msg.properties)
        if not batch and MessageConst.UNIQ_KEY not in props:
            props[MessageConst.UNIQ_KEY] = next_uniq_id(self._ip)
        return props

    def _prepare(self, msg: ProtocolMessage) -> _Prepared:
        """Checks, properties (a new ``UNIQ_KEY``), compression and sys flag of one message."""
        check_message(msg, self.config.max_message_size)
        props = self._properties_for(msg, batch=False)
        body, sys_flag = maybe_compress(
            msg.body, threshold=self.config.compress_msg_body_over_howmuch, level=self.config.compress_level
        )
        if props.get(MessageConst.TRAN_MSG) == "true":
            sys_flag |= int(MessageSysFlag.TRANSACTION_PREPARED_TYPE)
        return _Prepared(
            topic=msg.topic, body=body, properties=props, flag=msg.flag, sys_flag=sys_flag, msg=msg,
            uniq=props[MessageConst.UNIQ_KEY],
        )  # fmt: skip

    def _prepare_batch(self, msgs: Sequence[ProtocolMessage]) -> _Prepared:
        """Checks, properties and the encoded body of a batch (raises ConfigError when it is not one)."""
        if not msgs:
            raise ConfigError("a batch needs at least one message")
        topic = msgs[0].topic
        encoded = []
        ids = []
        for m in msgs:
            if m.topic != topic:
                raise ConfigError("every message of a batch must have the same topic")
            if m.delay_time_level > 0:
                raise ConfigError("delayed messages cannot be sent in a batch")
            if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                raise ConfigError("retry-group messages cannot be sent in a batch")
            check_message(m, self.config.max_message_size)
            props = self._properties_for(m, batch=False)
            props.setdefault(MessageConst.WAIT, "true")
            ids.append(props[MessageConst.UNIQ_KEY])
            encoded.append(ProtocolMessage(topic, m.body, m.flag, props))
        body = encode_batch(encoded)
        if len(body) > self.config.max_message_size:
            raise ConfigError(
                f"the batch is {len(body)} bytes; the maximum is {self.config.max_message_size}"
            )
        wait = "true" if msgs[0].wait_store_msg_ok else "false"
        return _Prepared(
            topic=topic, body=body, properties={MessageConst.WAIT: wait}, batch=True, msg=msgs[0],
            uniq=",".join(ids),
        )  # fmt: skip

    def _policy(self, topic: str, timeout: float | None, *, single: bool, retries: int | None) -> SendPolicy:
        """The :class:`~.send_policy.SendPolicy` of a send beginning now (a deposit in the
        retry budget)."""
        now = time.monotonic()
        if self._budget is not None:
            self._budget.deposit(now)
        return SendPolicy.of(
            topic,
            retries=self.config.retry_times_when_send_failed if retries is None else retries,
            single=single,
            timeout=self.config.send_msg_timeout if timeout is None else timeout,
            begin=now,
            retry_not_stored=self.config.retry_another_broker_when_not_store_ok,
        )

    def _observe(self, mq: MessageQueue, outcome: Outcome) -> None:
        """A busy answer or a timeout starts (or lengthens) the broker's back-off and halves the
        window of asynchronous sends; an answer ends the back-off and grows the window."""
        backoff = self.backoff
        if isinstance(outcome, RemotingTimeoutError) or (
            isinstance(outcome, BrokerError) and outcome.code == ResponseCode.SYSTEM_BUSY
        ):
            backoff.failed(mq.broker_name, time.monotonic())
            self.in_flight.congested()
        elif not isinstance(outcome, BaseException):
            self.in_flight.answered()
            if backoff.any_active():
                backoff.succeeded(mq.broker_name)

    def _may_retry(self, mq: MessageQueue, last_error: BaseException | None) -> bool:
        """Whether the retry budget allows another attempt after ``last_error``: transport errors
        (timeouts above all: the retries that pile load on a broker already behind) spend it."""
        budget = self._budget
        if budget is None or not isinstance(last_error, RemotingError) or budget.withdraw(time.monotonic()):
            return True  # a broker's answer (a refusal) is quick and cheap: only transport errors spend
        self.retries_refused += 1
        _warnings.warning(
            f"budget:{mq.broker_name}",
            f"sends to {mq.broker_name} failed without a retry (the retry budget is spent)",
            "send to %s failed (%s); not retried: this producer's retry budget is spent "
            "(retries are at most %.0f%% of its sends)",
            mq,
            last_error,
            (budget.ratio * 100),
        )
        return False

    def _avoid_backoff(self, info: TopicPublishInfo, mq: MessageQueue) -> MessageQueue:
        """``mq``'s broker backs off: a queue of another broker that does not, if there is one,
        else ``mq`` after all (as RocketMQ's latency fault tolerance picks when every broker is
        marked): the window of sends in flight, not a pause, holds the load back then."""
        now = time.monotonic()
        backoff = self.backoff
        if backoff.until(mq.broker_name, now) is None:
            return mq
        for other in info.queues:
            if other.broker_name != mq.broker_name and backoff.until(other.broker_name, now) is None:
                return other
        return mq

    # ---------------------------------------------------------------- sending: the entry points

    async def send(
        self,
        msg: ProtocolMessage,
        target: SendTarget = ANYWHERE,
        *,
        timeout: float | None = None,
        oneway: bool = False,
        retries: int | None = None,
    ) -> SendResult | None:
        """Send one message, awaited on any event loop; ``None`` when ``oneway`` (rules:
        :mod:`.send_policy`). On the client's own loop (``send_future``, ``send_callback``,
        oneway sends, requests, the consumers' inner producer) the attempts run there; on another
        loop (``Producer.send_async``) they run on the caller's loop (:meth:`_drive_from_loop`,
        through :meth:`~rocketq.remoting.RemotingConnection.invoke_from_loop`), handing the
        client's loop only what needs it, and a traced send runs on the client's loop whole."""
        attempts, _ = self._plan(self._prepare(msg), target, timeout, retries, oneway=oneway)
        loop_thread = self.instance.loop_thread
        if loop_thread.in_loop_thread:
            return await self._drive_on_loop(attempts)
        if self.trace is not None:
            return await asyncio.wrap_future(loop_thread.submit(self._drive_on_loop(attempts)))
        return await self._drive_from_loop(attempts)

    async def send_batch(
        self,
        msgs: Sequence[ProtocolMessage],
        *,
        timeout: float | None = None,
        queue: MessageQueue | None = None,
    ) -> SendResult:
        """Send messages of one topic as one SEND_BATCH_MESSAGE (no delay, no retry topic), on the
        client's loop."""
        attempts, _ = self._plan(self._prepare_batch(msgs), SendTarget(queue), timeout, None)
        result = await self._drive_on_loop(attempts)
        assert result is not None
        return result

    def send_blocking(
        self, msg: ProtocolMessage, target: SendTarget = ANYWHERE, *, timeout: float | None = None
    ) -> SendResult:
        """:meth:`send` for a plain thread (``Producer.send``): the blocking sends' hot path.

        The thread prepares the message and runs the send's attempts itself
        (:meth:`_drive_in_thread`): each attempt's request is encoded in the thread and carried on
        a socket of the thread's own while no other thread's blocking send is out
        (:mod:`rocketq.client.producer.direct`), else on the loop's connection through
        :meth:`~rocketq.remoting.RemotingConnection.invoke_threadsafe` (the loop writes it, with
        the other threads' requests, and wakes the thread). Only what needs the loop - a route to
        fetch, a broker to connect to - is handed to it. Calling it on the client's loop thread
        raises :class:`~rocketq.errors.ClientStateError` (use :meth:`send` there).
        """
        return self._blocking(*self._plan(self._prepare(msg), target, timeout, None))

    def send_batch_blocking(
        self,
        msgs: Sequence[ProtocolMessage],
        *,
        timeout: float | None = None,
        queue: MessageQueue | None = None,
    ) -> SendResult:
        """:meth:`send_batch` for a plain thread, carried as :meth:`send_blocking` carries a send."""
        return self._blocking(*self._plan(self._prepare_batch(msgs), SendTarget(queue), timeout, None))

    def _plan(
        self,
        p: _Prepared,
        target: SendTarget,
        timeout: float | None,
        retries: int | None,
        *,
        oneway: bool = False,
    ) -> tuple[_Attempts, SendPolicy]:
        """The attempts of a send of ``p`` beginning now, and the policy they follow."""
        policy = self._policy(p.topic, timeout, single=target.chosen or oneway, retries=retries)
        return self._attempts(p, policy, target, oneway=oneway), policy

    def _blocking(self, attempts: _Attempts, policy: SendPolicy) -> SendResult:
        loop_thread = self.instance.loop_thread
        if self.trace is not None or loop_thread.in_loop_thread:
            # a traced send runs on the loop whole (its trace hook is the loop's); on the loop's
            # own thread, ``call`` raises ClientStateError
            result = loop_thread.call(self._drive_on_loop(attempts), timeout=policy.timeout + _LOOP_GRACE)
        else:
            result = self._drive_in_thread(attempts)
        assert result is not None
        return result

    # ---------------------------------------------------------------- sending: the one loop

    def _attempts(
        self, p: _Prepared, policy: SendPolicy, target: SendTarget, *, oneway: bool = False
    ) -> _Attempts:
        """The attempts of one send, whoever carries them: the one loop over ``policy``.

        A generator of steps (:class:`_Attempt`, :class:`_Run`, :class:`_Pause`) that a driver
        carries out and answers - an attempt with the broker's response or the transport error, a
        coroutine of the client's loop with its value, a pause with ``None`` - returning the send's
        result (``None`` oneway) or raising its error. Each attempt picks a queue (another broker
        after a failure: :mod:`.selection`), avoids a broker that backs off, spends the retry budget
        on transport errors, waits out a busy broker's back-off within the send's time, asks
        ``policy`` before and after, and feeds the overload window (:mod:`.overload`). The request
        is :func:`rocketq.protocol.calls.send_request`'s."""
        topic = p.topic
        info = self.publish_table.get(topic)
        if info is None or not info.ok:  # a cached, usable route needs no loop round (hot path)
            found = yield _Run(self.find_publish_info(topic), policy.timeout + _LOOP_GRACE)
            assert isinstance(found, TopicPublishInfo)
            info = found
        if not info.ok:
            raise TopicNotExistError(
                ResponseCode.TOPIC_NOT_EXIST,
                f"No route info of this topic: {topic} (and no default topic route)",
            )
        free = not target.chosen
        last_broker: str | None = None
        last_error: BaseException | None = None
        for attempt in range(policy.attempts):
            mq = pick_queue(info, p.msg, target.queue, target.selector, target.arg, last_broker)
            if last_broker is not None:
                pause = self._retry_pause(mq, last_broker, last_error, policy)
                if pause > 0:
                    yield _Pause(pause)
            if free and self.backoff.any_active():
                mq = self._avoid_backoff(info, mq)
            last_broker = mq.broker_name
            now = time.monotonic()
            budget = policy.remaining(now)
            if budget <= 0:  # the send's time is spent: the policy's timeout error
                go = policy.before(attempt, now=now, last_error=last_error)
                assert go.error is not None
                raise go.error
            addr = self.instance.find_broker_address_in_publish(mq.broker_name)
            if addr is None:  # not known yet: refresh the route (off the hot path)
                located = yield _Run(self.instance.locate_master(mq), budget + _LOOP_GRACE)
                addr = located if isinstance(located, str) else None
            if addr is None:
                raise ClientStateError(f"The broker[{mq.broker_name}] not exist")
            born = time.time_ns() // 1_000_000
            request = send_request(self.origin, p, mq.queue_id, born, oneway=oneway)
            step = _Attempt(mq, addr, request, budget, oneway, born)
            outcome = self._outcome(p, step, (yield step))
            self._observe(mq, outcome)
            decision = policy.after(attempt, outcome)
            _note(mq, outcome, decision)
            if decision.error is not None:
                raise decision.error
            if decision.verdict is Verdict.DONE:
                assert not isinstance(outcome, BaseException)
                return outcome
            if isinstance(outcome, BaseException):
                last_error = outcome
        raise AssertionError("the send policy allowed no attempt")

    def _retry_pause(
        self, mq: MessageQueue, last_broker: str, last_error: BaseException | None, policy: SendPolicy
    ) -> float:
        """Before a retry to ``mq``: the seconds to wait first (a busy broker, which stored
        nothing and said so at once: its back-off, within the send's time; no retry token, busy
        answers cost it little), else 0 - or raise ``last_error`` when the retry budget is spent."""
        if _busy(last_error):
            now = time.monotonic()
            until = self.backoff.until(last_broker, now)
            left = policy.timeout - (now - policy.begin)
            return 0.0 if until is None or left <= 0 else min(until - now, left)
        if not self._may_retry(mq, last_error):
            assert last_error is not None
            raise last_error
        return 0.0

    def _outcome(self, p: _Prepared, step: _Attempt, answer: object) -> Outcome:
        """What an attempt came to: its result, or the broker's refusal or transport error."""
        if answer is None or isinstance(answer, RemotingError):
            return answer
        assert isinstance(answer, RemotingCommand)
        try:
            response = parse_send_response(answer)
        except BrokerError as exc:
            exc.add_note(f"send to {step.mq.topic} {step.mq.short} at {step.addr}")
            return exc
        return self._result(p, step.mq, step.addr, response, begin_ms=step.born)

    def _result(
        self, p: _Prepared, mq: MessageQueue, addr: str, response: SendResponse, *, begin_ms: int
    ) -> SendResult:
        topic = p.msg.topic
        result = SendResult(
            status=_STATUS_BY_CODE.get(response.code, SendStatus.SEND_OK),
            msg_id=p.uniq,
            offset_msg_id=response.offset_msg_id,
            message_queue=(
                mq
                if response.queue_id == mq.queue_id and mq.topic == topic
                else MessageQueue(topic, mq.broker_name, response.queue_id)
            ),
            queue_offset=response.queue_offset,
            transaction_id=response.transaction_id,
            region_id=response.region_id,
            trace_on=response.trace_on,
        )
        if self.trace is not None:
            self.trace.on_send(
                AnsweredSend(
                    group=self.group, topic=topic, properties=p.properties,
                    body_length=len(p.body), broker_addr=addr, begin_ms=begin_ms, result=result,
                    batch=p.batch,
                )
            )  # fmt: skip
        return result

    # ---------------------------------------------------------------- sending: the drivers
    #
    # Each carries the steps of _attempts; they differ only in how they wait.

    async def _drive_on_loop(self, attempts: _Attempts) -> SendResult | None:
        """Carry a send on the client's loop (its connections, ``await``)."""
        return await self._drive_awaiting(attempts, self._carry_on_loop, _itself)

    def _drive_in_thread(self, attempts: _Attempts) -> SendResult | None:
        """Carry a send from a plain thread, which blocks: attempts on its own socket or handed
        over to the loop's connection (:meth:`_carry_in_thread`); coroutines run on the loop."""
        loop_thread = self.instance.loop_thread
        try:
            step = next(attempts)
            while True:
                if isinstance(step, _Attempt):
                    step = attempts.send(self._carry_in_thread(step))
                elif isinstance(step, _Run):
                    step = attempts.send(loop_thread.call(step.coro, timeout=step.wait))
                else:
                    time.sleep(step.seconds)  # a busy broker's back-off, as the loop's asyncio.sleep
                    step = attempts.send(None)
        except StopIteration as stop:
            result: SendResult | None = stop.value
            return result

    async def _drive_from_loop(self, attempts: _Attempts) -> SendResult | None:
        """Carry a send from another event loop than the client's: attempts through
        :meth:`~rocketq.remoting.RemotingConnection.invoke_from_loop`; coroutines on the client's loop."""
        submit = self.instance.loop_thread.submit
        return await self._drive_awaiting(
            attempts, self._carry_from_loop, lambda coro: asyncio.wrap_future(submit(coro))
        )

    @staticmethod
    async def _drive_awaiting(
        attempts: _Attempts,
        carry: Callable[[_Attempt], Awaitable[_Answer]],
        run: Callable[[Coroutine[Any, Any, Any]], Awaitable[Any]],
    ) -> SendResult | None:
        """The drivers on an event loop: ``carry`` makes an attempt, ``run`` runs a coroutine for
        the client's loop; a pause is an ``asyncio.sleep``."""
        try:
            step = next(attempts)
            while True:
                if isinstance(step, _Attempt):
                    step = attempts.send(await carry(step))
                elif isinstance(step, _Run):
                    step = attempts.send(await run(step.coro))
                else:
                    await asyncio.sleep(step.seconds)
                    step = attempts.send(None)
        except StopIteration as stop:
            result: SendResult | None = stop.value
            return result

    async def _carry_on_loop(self, step: _Attempt) -> _Answer:
        """One attempt on the client's loop (connecting first if need be, within its time)."""
        api = self.instance.api
        if api is None:
            raise ClientStateError("the producer's client instance is shut down")
        try:
            if step.oneway:
                await api.remoting.invoke_oneway(step.addr, step.request)
                return None
            return await api.remoting.invoke(step.addr, step.request, step.timeout)
        except RemotingError as exc:
            return exc

    def _open_connection(self, step: _Attempt) -> RemotingConnection | None:
        api = self.instance.api
        return None if api is None or step.oneway else api.remoting.open_connection(step.addr)

    def _carry_in_thread(self, step: _Attempt) -> _Answer:
        """One attempt from a plain thread: on the thread's own socket when it is alone (see
        :mod:`.direct`), else handed over to the loop's open connection; the loop connects first
        when no connection is open."""
        conn = self._open_connection(step)
        if conn is None:
            coro = self._carry_on_loop(step)
            return self.instance.loop_thread.call(coro, timeout=step.timeout + _LOOP_GRACE)
        # Alone, a thread is fastest on its own socket; while other threads' blocking sends are
        # out, the loop's connection is (it writes many threads' requests per wake-up: 32
        # threads on their own sockets made about half the sends, bench_vs_redis --threads).
        with self._thread_connections_lock:
            alone = self._blocking_in_flight == 0
            self._blocking_in_flight += 1
        try:
            if alone and self.config.thread_sockets:
                return self._thread_sockets().invoke(conn, step.request, step.timeout, self._hooks())
            return conn.invoke_threadsafe(step.request, step.timeout)
        except RemotingError as exc:
            return exc
        finally:
            with self._thread_connections_lock:
                self._blocking_in_flight -= 1

    async def _carry_from_loop(self, step: _Attempt) -> _Answer:
        """One attempt from another event loop: handed over to the loop's open connection, the
        answer delivered to this loop; the client's loop connects first when none is open."""
        conn = self._open_connection(step)
        if conn is None:
            return await asyncio.wrap_future(self.instance.loop_thread.submit(self._carry_on_loop(step)))
        try:
            return await conn.invoke_from_loop(step.request, step.timeout)
        except RemotingError as exc:
            return exc

    def _thread_sockets(self) -> ThreadConnections:
        tc = self._thread_connections
        if tc is None:
            with self._thread_connections_lock:
                tc = self._thread_connections
                if tc is None:
                    api = self.instance.api
                    assert api is not None
                    cfg = api.remoting.config
                    tc = ThreadConnections(
                        connect_timeout=cfg.connect_timeout, max_frame_size=cfg.max_frame_size, tls=cfg.tls
                    )
                    self._thread_connections = tc
        return tc

    def _hooks(self) -> Sequence[RPCHook]:
        api = self.instance.api
        return api.remoting.handlers.hooks if api is not None else ()

    def close_thread_sockets(self) -> None:
        """Close the blocking sends' own sockets (the producer is shutting down)."""
        with self._thread_connections_lock:
            tc, self._thread_connections = self._thread_connections, None
        if tc is not None:
            tc.close()

    # ---------------------------------------------------------------- request-reply

    async def request(
        self, msg: ProtocolMessage, timeout: float, target: SendTarget = ANYWHERE
    ) -> MessageExt:
        """Send ``msg`` as a request and wait up to ``timeout`` seconds (sending included) for
        its reply (``DefaultMQProducerImpl.request``).

        The message (a copy; ``msg`` is not changed) gets ``CORRELATION_ID``,
        ``REPLY_TO_CLIENT`` and ``TTL``; a topic this client has no route for yet has it fetched
        and the client's heartbeat sent to every broker first, so the brokers know where to push
        the reply. The send is asynchronous with ``retry_times_when_send_async_failed`` retries;
        its failure is raised as is. No reply in time raises
        :class:`~rocketq.errors.RequestTimeoutError`."""
        if timeout <= 0:
            raise ConfigError(f"a request's timeout must be positive, got {timeout}")
        begin = time.monotonic()
        request = ProtocolMessage(msg.topic, msg.body, msg.flag, dict(msg.properties))
        correlation_id = prepare_request(request.properties, self.instance.client_id, timeout)
        if request.topic not in self.instance.topic_route_table:
            await self.find_publish_info(request.topic)
            await self.instance.send_heartbeat_to_all_brokers()
        future: asyncio.Future[MessageExt] = asyncio.get_running_loop().create_future()
        self.instance.requests[correlation_id] = future
        try:
            remaining = timeout - (time.monotonic() - begin)
            await self.send(
                request, target, timeout=max(remaining, 0.001),
                retries=self.config.retry_times_when_send_async_failed,
            )  # fmt: skip
            remaining = timeout - (time.monotonic() - begin)
            try:
                async with asyncio.timeout(max(remaining, 0.0)):
                    return await future
            except TimeoutError:
                raise RequestTimeoutError(
                    f"send request message to <{request.topic}> OK, but wait reply message timeout, "
                    f"{round(timeout * 1000)} ms (correlation id {correlation_id})"
                ) from None
        finally:
            self.instance.requests.pop(correlation_id, None)
            if not future.done():
                future.cancel()


@dataclass(slots=True, kw_only=True)
class _Prepared(SendPayload):
    """One send's message, ready to go: what goes on the wire (the :class:`SendPayload`:
    properties with ``UNIQ_KEY``, the body as sent - compressed or not, a batch's encoded
    records - and the sys flag), the message as given (for selectors and traces) and its unique
    id(s)."""

    msg: ProtocolMessage
    uniq: str


@dataclass(slots=True)
class _Attempt:
    """A step of :meth:`ProducerCore._attempts`: send ``request`` to ``addr`` (``mq``'s broker)
    and answer with the response (``None`` oneway) or the transport error, within ``timeout``
    seconds. ``born`` is when it was built (epoch ms), for the trace."""

    mq: MessageQueue
    addr: str
    request: RemotingCommand
    timeout: float
    oneway: bool
    born: int


@dataclass(slots=True)
class _Run:
    """A step: run ``coro`` on the client's loop (a route to fetch, a master to locate) and answer
    with its value (waiting at most ``wait`` seconds from another thread)."""

    coro: Coroutine[Any, Any, object]
    wait: float


@dataclass(slots=True)
class _Pause:
    """A step: wait ``seconds`` (a busy broker's back-off), then answer ``None``."""

    seconds: float


_Step = _Attempt | _Run | _Pause


def _itself(coro: Coroutine[Any, Any, Any]) -> Awaitable[Any]:
    """On the client's loop a coroutine for it is simply awaited."""
    return coro


_Answer = RemotingCommand | RemotingError | None
_Attempts = Generator[_Step, object, SendResult | None]
_LOOP_GRACE: Final = 5.0  # what a thread waits for the loop beyond a send's own time


def _busy(error: BaseException | None) -> bool:
    return isinstance(error, BrokerError) and error.code == ResponseCode.SYSTEM_BUSY


def _note(mq: MessageQueue, outcome: Outcome, decision: Decision) -> None:
    """Log a failed attempt: a transport error with what follows, a refusal that is retried
    elsewhere - summarised per broker and kind (:class:`~rocketq.logsummary.LogSummary`), so
    that a broker that times out every send gives one line per 10 s, not one per message."""
    if isinstance(outcome, RemotingError):
        retry = decision.verdict is Verdict.RETRY
        kind = "timed out" if isinstance(outcome, RemotingTimeoutError) else "failed"
        _warnings.warning(
            f"{kind}:{mq.broker_name}",
            f"sends to {mq.broker_name} {kind}",
            "send to %s failed (%s); %s",
            mq,
            outcome,
            "retrying" if retry else "giving up",
        )
    elif isinstance(outcome, BrokerError) and decision.verdict is Verdict.RETRY:
        _warnings.warning(
            f"refused:{mq.broker_name}:{outcome.code}",
            f"sends to {mq.broker_name} refused with code {outcome.code}",
            "send to %s refused (%s); retrying on another broker",
            mq,
            outcome,
        )
