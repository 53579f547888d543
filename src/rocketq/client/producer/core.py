"""The producer's engine (``DefaultMQProducerImpl``): prepare a message, build its request, send it.

:class:`ProducerCore` runs on its client instance's loop (the synchronous
:class:`~rocketq.client.producer.facade.Producer` is a thin front over it). A send finds the topic's
publish info (route from the name server; for a topic without a route, the ``TBW102`` default
topic's route so that the broker auto-creates it), picks a queue (:mod:`.selection`), gives the
message a unique id (``UNIQ_KEY``, :func:`rocketq.client.ids.next_uniq_id`), compresses a body of
4 KiB or more, and sends ``SEND_MESSAGE_V2`` to the queue's master. Whether a failed attempt is
retried on another broker, and when to give up, is decided by :mod:`.send_policy` alone; the
drivers here are loops over it:

* :meth:`ProducerCore.send` - on the client's loop (``send_future``, ``send_callback``,
  oneway sends, the consumers' inner producer);
* :meth:`ProducerCore.send_blocking` - ``Producer.send``: the first attempt runs in the calling
  thread (``invoke_threadsafe``), the rest, if any, on the loop;
* :meth:`ProducerCore.send_from_loop` - ``Producer.send_async``: the first attempt runs on the
  caller's own event loop (``invoke_from_loop``), the rest, if any, on the client's loop.

:meth:`ProducerCore.request` sends a request and waits for its reply (:mod:`.request`); the
transactional producer's engine (:mod:`.transaction`) builds on this one.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from rocketq.client.api import ClientAPI
from rocketq.client.config import ProducerConfig
from rocketq.client.ids import next_uniq_id
from rocketq.client.loop_thread import LoopThread
from rocketq.client.message import SendResult, SendStatus
from rocketq.client.producer.direct import ThreadConnections
from rocketq.client.producer.overload import BrokerBackoff, InFlightLimit, RetryBudget
from rocketq.client.producer.request import REPLY_MESSAGE_FLAG, prepare_request
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
from rocketq.models import LocalTransactionState, MessageQueue
from rocketq.protocol.bodies import TopicRouteData
from rocketq.protocol.calls import Call, SendResponse, parse_send_response, send_message_request
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import CheckTransactionStateRequestHeader, SendMessageRequestHeaderV2
from rocketq.protocol.message import Message as ProtocolMessage
from rocketq.protocol.message import MessageExt, MessageSysFlag, encode_batch, maybe_compress
from rocketq.protocol.properties import MessageConst, properties_to_string
from rocketq.protocol.topics import RETRY_GROUP_TOPIC_PREFIX

if TYPE_CHECKING:
    from rocketq.remoting import RemotingConnection, RPCHook

__all__ = ["ProducerContext", "ProducerCore", "SendTraceHook"]

logger = logging.getLogger(__name__)
#: failed attempts, summarised per broker and kind (never one line per message under overload)
_warnings = LogSummary(logger)

_BORN_KEY = SendMessageRequestHeaderV2.wire_name_of("born_timestamp")
_PROPERTIES_KEY = SendMessageRequestHeaderV2.wire_name_of("properties")
_MAX_SEND_TEMPLATES = 4096
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

    def on_send(
        self,
        *,
        group: str,
        topic: str,
        properties: dict[str, str] | None,
        body_length: int,
        broker_addr: str,
        begin_ms: int,
        result: SendResult,
        batch: bool = False,
    ) -> None: ...

    def on_end_transaction(
        self,
        *,
        group: str,
        msg: ProtocolMessage,
        msg_id: str,
        broker_addr: str,
        state: LocalTransactionState,
        from_check: bool,
    ) -> None: ...

    def shutdown(self) -> None: ...


class ProducerCore:
    """The producer's asynchronous implementation; runs on its client instance's loop."""

    def __init__(self, instance: ProducerContext, group: str, config: ProducerConfig) -> None:
        self.instance = instance
        self.group = group
        self.config = config
        self.publish_table: dict[str, TopicPublishInfo] = {}
        self._ip = instance.client_id.partition("@")[0]
        self.trace: SendTraceHook | None = None  # set by Producer.start when tracing
        # (topic, queue id, sys flag, flag, batch) -> the send header's ext fields (see _request)
        self._send_fields: dict[tuple[str, int, int, int, bool], dict[str, str]] = {}
        # blocking sends' own sockets (config.thread_sockets), made on the first such send
        self._thread_connections: ThreadConnections | None = None
        self._thread_connections_lock = threading.Lock()
        self._blocking_in_flight = 0  # first attempts out from plain threads (either way)
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

    # ---------------------------------------------------------------- sending

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
        return _Prepared(msg, props, body, sys_flag, props[MessageConst.UNIQ_KEY], batch=False)

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

    async def send(
        self,
        msg: ProtocolMessage,
        *,
        timeout: float | None = None,
        oneway: bool = False,
        queue: MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
        retries: int | None = None,
    ) -> SendResult | None:
        """Send one message on the client's loop; ``None`` when ``oneway`` (rules:
        :mod:`.send_policy`)."""
        p = self._prepare(msg)
        single = queue is not None or selector is not None or oneway
        policy = self._policy(p.msg.topic, timeout, single=single, retries=retries)
        return await self._send_with_retries(
            p, policy, oneway=oneway, queue=queue, selector=selector, arg=arg
        )

    def send_blocking(
        self,
        msg: ProtocolMessage,
        *,
        timeout: float | None = None,
        queue: MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
    ) -> SendResult:
        """:meth:`send` for a plain thread: the blocking sends' hot path.

        The first attempt runs in the calling thread when it can (:meth:`_first_attempt`): the
        thread prepares and encodes the request itself and, when no other thread's blocking send
        is out, sends it on a socket of its own (:mod:`rocketq.client.producer.direct`); else, or
        with ``config.thread_sockets`` off, it waits on the loop's connection through
        :meth:`~rocketq.remoting.RemotingConnection.invoke_threadsafe` (the loop writes it, with
        the other threads' requests, and wakes the thread). Anything else - no route or connection yet,
        a failure to retry on another broker - continues on the loop with :meth:`send`'s own retry
        loop, from the attempt reached and under the same policy. Calling it on the client's loop
        thread raises :class:`~rocketq.errors.ClientStateError` (use :meth:`send` there).
        """
        first = self._first_attempt(
            msg, timeout, queue, selector, arg, None, outside=not self.instance.loop_thread.in_loop_thread
        )
        return self._blocking(first)

    def _blocking(self, first: _FirstAttempt) -> SendResult:
        """Make ``first`` from this thread when it can go from here, and the rest on the loop."""
        loop_thread = self.instance.loop_thread
        outcome: SendResult | Coroutine[Any, Any, SendResult | None]
        if first.request is None:
            outcome = first.on_loop()
        else:
            conn = first.conn
            assert conn is not None
            # Alone, a thread is fastest on its own socket; while other threads' blocking sends
            # are out, the loop's connection is (it writes many threads' requests per wake-up:
            # 32 threads on their own sockets made about half the sends, bench_vs_redis --threads).
            with self._thread_connections_lock:
                alone = self._blocking_in_flight == 0
                self._blocking_in_flight += 1
            try:
                if alone and self.config.thread_sockets:
                    answer = self._thread_sockets().invoke(
                        conn, first.request, first.policy.timeout, self._hooks()
                    )
                else:
                    answer = conn.invoke_threadsafe(first.request, first.policy.timeout)
                outcome = first.finish(answer)
            except RemotingError as exc:
                outcome = first.finish(exc)
            finally:
                with self._thread_connections_lock:
                    self._blocking_in_flight -= 1
        if isinstance(outcome, SendResult):
            return outcome
        result = loop_thread.call(outcome, timeout=first.policy.timeout + 5.0)
        assert result is not None
        return result

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
                        connect_timeout=cfg.connect_timeout, max_frame_size=cfg.max_frame_size
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

    async def send_from_loop(
        self,
        msg: ProtocolMessage,
        *,
        timeout: float | None = None,
        queue: MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
        retries: int | None = None,
    ) -> SendResult:
        """:meth:`send` awaited on any event loop: on the client's own loop it is :meth:`send`;
        on another loop the first attempt runs there (as :meth:`send_blocking`'s runs in its
        thread, through :meth:`~rocketq.remoting.RemotingConnection.invoke_from_loop`) and the
        rest, if any, on the client's loop."""
        loop_thread = self.instance.loop_thread
        if loop_thread.in_loop_thread:
            result = await self.send(
                msg, timeout=timeout, queue=queue, selector=selector, arg=arg, retries=retries
            )
            assert result is not None
            return result
        first = self._first_attempt(msg, timeout, queue, selector, arg, retries, outside=True)
        outcome: SendResult | Coroutine[Any, Any, SendResult | None]
        if first.request is None:
            outcome = first.on_loop()
        else:
            assert first.conn is not None
            try:
                outcome = first.finish(await first.conn.invoke_from_loop(first.request, first.policy.timeout))
            except RemotingError as exc:
                outcome = first.finish(exc)
        if isinstance(outcome, SendResult):
            return outcome
        result = await asyncio.wrap_future(loop_thread.submit(outcome))
        assert result is not None
        return result

    def _first_attempt(
        self,
        msg: ProtocolMessage,
        timeout: float | None,
        queue: MessageQueue | None,
        selector: MessageQueueSelector | None,
        arg: Any,
        retries: int | None,
        *,
        outside: bool,
    ) -> _FirstAttempt:
        """Prepare a send made outside the client's loop and, when it can go from there (route
        cached, broker connected, no tracing, ``outside`` the loop thread), its first request."""
        p = self._prepare(msg)
        policy = self._policy(
            p.msg.topic, timeout, single=queue is not None or selector is not None, retries=retries
        )
        return self._first_attempt_of(p, policy, queue, selector, arg, outside=outside)

    def _first_attempt_of(
        self,
        p: _Prepared,
        policy: SendPolicy,
        queue: MessageQueue | None,
        selector: MessageQueueSelector | None,
        arg: Any,
        *,
        outside: bool,
    ) -> _FirstAttempt:
        """:meth:`_first_attempt` of a message (or batch) already prepared."""
        first = _FirstAttempt(self, p, policy, queue, selector, arg)
        info = self.publish_table.get(p.msg.topic)
        api = self.instance.api
        if not outside or info is None or not info.ok or self.trace is not None or api is None:
            return first
        mq = pick_queue(info, p.msg, queue, selector, arg, None)
        if self.backoff.any_active() and queue is None and selector is None:
            mq = self._avoid_backoff(info, mq)
        addr = self.instance.find_broker_address_in_publish(mq.broker_name)
        conn = api.remoting.open_connection(addr) if addr is not None else None
        if conn is not None:
            first.mq, first.conn, first.request = mq, conn, self._request(p, mq)
        return first

    async def request(
        self,
        msg: ProtocolMessage,
        timeout: float,
        *,
        queue: MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
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
                request, timeout=max(remaining, 0.001), queue=queue, selector=selector, arg=arg,
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

    async def send_batch(
        self,
        msgs: Sequence[ProtocolMessage],
        *,
        timeout: float | None = None,
        queue: MessageQueue | None = None,
    ) -> SendResult:
        """Send messages of one topic as one SEND_BATCH_MESSAGE (no delay, no retry topic)."""
        prepared = self._prepare_batch(msgs)
        policy = self._policy(prepared.msg.topic, timeout, single=queue is not None, retries=None)
        result = await self._send_with_retries(prepared, policy, queue=queue)
        assert result is not None
        return result

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
        return _Prepared(msgs[0], {MessageConst.WAIT: wait}, body, 0, ",".join(ids), batch=True)

    def send_batch_blocking(
        self,
        msgs: Sequence[ProtocolMessage],
        *,
        timeout: float | None = None,
        queue: MessageQueue | None = None,
    ) -> SendResult:
        """:meth:`send_batch` for a plain thread: the first attempt from the calling thread, as
        :meth:`send_blocking` makes it (the same checks, policy and fallbacks to the loop)."""
        prepared = self._prepare_batch(msgs)
        policy = self._policy(prepared.msg.topic, timeout, single=queue is not None, retries=None)
        outside = not self.instance.loop_thread.in_loop_thread
        return self._blocking(self._first_attempt_of(prepared, policy, queue, None, None, outside=outside))

    async def _send_with_retries(
        self,
        p: _Prepared,
        policy: SendPolicy,
        *,
        oneway: bool = False,
        queue: MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
        first_attempt: int = 0,
        last_broker: str | None = None,
        last_error: BaseException | None = None,
    ) -> SendResult | None:
        """Attempts ``first_attempt``.. of a send on the client's loop (a blocking send's first one
        may have run in its thread), each on another broker after a failure, as ``policy`` says."""
        topic = p.msg.topic
        info = self.publish_table.get(topic)
        if info is None or not info.ok:  # a cached, usable route needs no coroutine round (hot path)
            info = await self.find_publish_info(topic)
        if not info.ok:
            raise TopicNotExistError(
                ResponseCode.TOPIC_NOT_EXIST,
                f"No route info of this topic: {topic} (and no default topic route)",
            )
        for attempt in range(first_attempt, policy.attempts):
            mq = pick_queue(info, p.msg, queue, selector, arg, last_broker)
            if attempt and last_broker is not None:
                if _busy(last_error):
                    # the broker stored nothing and said so at once: wait out its back-off (within
                    # the send's time), then retry; no retry token (busy answers cost it little)
                    until = self.backoff.until(last_broker, time.monotonic())
                    left = policy.timeout - (time.monotonic() - policy.begin)
                    if until is not None and left > 0:
                        await asyncio.sleep(min(until - time.monotonic(), left))
                elif not self._may_retry(mq, last_error):
                    assert last_error is not None
                    raise last_error
            if self.backoff.any_active() and queue is None and selector is None:
                mq = self._avoid_backoff(info, mq)
            last_broker = mq.broker_name
            go = policy.before(attempt, now=time.monotonic(), last_error=last_error)
            if go.error is not None:
                raise go.error
            outcome: Outcome
            try:
                outcome = await self._send_kernel(p, mq, oneway=oneway, timeout=go.budget)
            except (RemotingError, BrokerError) as exc:
                outcome = last_error = exc
            self._observe(mq, outcome)
            decision = policy.after(attempt, outcome)
            _note(mq, outcome, decision)
            if decision.error is not None:
                raise decision.error
            if decision.verdict is Verdict.DONE:
                assert not isinstance(outcome, BaseException)
                return outcome
        raise AssertionError("the send policy allowed no attempt")

    def _request(self, p: _Prepared, mq: MessageQueue, *, oneway: bool = False) -> RemotingCommand:
        """The SEND_MESSAGE_V2 (or SEND_BATCH_MESSAGE) request of ``p`` for queue ``mq``.

        Apart from the born timestamp and the properties, a send's header fields are the same
        for every message to one queue with the same flags: the header class writes them once,
        in its wire order, and each send copies that and sets its two fields (a retry topic's
        header, which carries counts from the properties, is written whole every time)."""
        if p.msg.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            reply = p.props.get(MessageConst.MSG_TYPE) == REPLY_MESSAGE_FLAG
            return send_message_request(
                self._header(p, mq), p.body, batch=p.batch, oneway=oneway, reply=reply
            )
        key = (p.msg.topic, mq.queue_id, p.sys_flag, p.msg.flag, p.batch)
        template = self._send_fields.get(key)
        if template is None:
            if len(self._send_fields) >= _MAX_SEND_TEMPLATES:
                self._send_fields.clear()
            template = self._send_fields[key] = self._header(p, mq, born=0, properties="").to_ext_fields()
        fields = template.copy()
        fields[_BORN_KEY] = str(time.time_ns() // 1_000_000)
        fields[_PROPERTIES_KEY] = properties_to_string(p.props)
        if p.batch:
            code = RequestCode.SEND_BATCH_MESSAGE
        elif p.props.get(MessageConst.MSG_TYPE) == REPLY_MESSAGE_FLAG:
            code = RequestCode.SEND_REPLY_MESSAGE_V2  # a reply to a request (see .request)
        else:
            code = RequestCode.SEND_MESSAGE_V2
        return RemotingCommand.request(code, fields, p.body, oneway=oneway)

    def _header(
        self, p: _Prepared, mq: MessageQueue, *, born: int | None = None, properties: str | None = None
    ) -> SendMessageRequestHeaderV2:
        """The SEND_MESSAGE_V2 (or SEND_BATCH_MESSAGE) header of ``p`` for queue ``mq`` (born
        now, with ``p``'s properties, unless given)."""
        topic = p.msg.topic
        props = p.props
        reconsume_times = 0
        max_reconsume: int | None = None
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            props = dict(props)
            rt = props.pop(MessageConst.RECONSUME_TIME, None)
            if rt is not None and rt.isdigit():
                reconsume_times = int(rt)
            mr = props.pop(MessageConst.MAX_RECONSUME_TIMES, None)
            if mr is not None and mr.lstrip("-").isdigit():
                max_reconsume = int(mr)
        return SendMessageRequestHeaderV2(
            producer_group=self.group,
            topic=topic,
            default_topic=self.config.create_topic_key,
            default_topic_queue_nums=self.config.default_topic_queue_nums,
            queue_id=mq.queue_id,
            sys_flag=p.sys_flag,
            born_timestamp=time.time_ns() // 1_000_000 if born is None else born,
            flag=p.msg.flag if not p.batch else 0,
            properties=properties_to_string(props) if properties is None else properties,
            reconsume_times=reconsume_times,
            unit_mode=False,
            max_reconsume_times=max_reconsume,
            batch=p.batch,
        )

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
                group=self.group, topic=topic, properties=p.props, body_length=len(p.body), broker_addr=addr,
                begin_ms=begin_ms, result=result, batch=p.batch,
            )  # fmt: skip
        return result

    async def _send_kernel(
        self, p: _Prepared, mq: MessageQueue, *, oneway: bool, timeout: float
    ) -> SendResult | None:
        addr = self.instance.find_broker_address_in_publish(mq.broker_name)
        if addr is None:  # not known yet: refresh the route (off the hot path)
            addr = await self.instance.locate_master(mq)
        if addr is None:
            raise ClientStateError(f"The broker[{mq.broker_name}] not exist")
        api = self.instance.api
        assert api is not None
        request = self._request(p, mq, oneway=oneway)
        begin_ms = time.time_ns() // 1_000_000
        if oneway:
            await api.remoting.invoke_oneway(addr, request)
            return None
        call = Call(request, parse_send_response, f"send to {mq.topic} {mq.short}")
        return self._result(p, mq, addr, await api.call(addr, call, timeout), begin_ms=begin_ms)


@dataclass(slots=True)
class _Prepared:
    """One send's message, ready to go: its properties (with ``UNIQ_KEY``), body as sent
    (compressed or not), sys flag and unique id(s); a batch's body is the encoded batch."""

    msg: ProtocolMessage
    props: dict[str, str]
    body: bytes
    sys_flag: int
    uniq: str
    batch: bool = field(kw_only=True)


@dataclass(slots=True)
class _FirstAttempt:
    """A send's first attempt made outside the client's loop (a thread's, or another loop's):
    what it needs, and what follows from its outcome (as the send's policy says). ``mq``,
    ``conn`` and ``request`` are set when it can go from there; it may take the whole timeout
    (it begins with the send)."""

    core: ProducerCore
    p: _Prepared
    policy: SendPolicy
    queue: MessageQueue | None
    selector: MessageQueueSelector | None
    arg: Any
    mq: MessageQueue | None = None
    conn: RemotingConnection | None = None
    request: RemotingCommand | None = None

    def on_loop(self) -> Coroutine[Any, Any, SendResult | None]:
        """The whole send, on the client's loop (no route or connection here yet)."""
        return self.core._send_with_retries(
            self.p, self.policy, queue=self.queue, selector=self.selector, arg=self.arg
        )

    def finish(
        self, answer: RemotingCommand | RemotingError
    ) -> SendResult | Coroutine[Any, Any, SendResult | None]:
        """The first attempt's answer (or transport error): the result, an exception raised,
        or the coroutine of the remaining attempts on the client's loop (another broker)."""
        core, mq = self.core, self.mq
        assert mq is not None
        outcome: Outcome
        if isinstance(answer, RemotingError):
            outcome = answer
        else:
            try:
                parsed = parse_send_response(answer)
            except BrokerError as exc:
                outcome = exc
            else:
                address = self.conn.remote_address if self.conn else ""
                outcome = core._result(self.p, mq, address, parsed, begin_ms=0)
        core._observe(mq, outcome)
        decision = self.policy.after(0, outcome)
        _note(mq, outcome, decision)
        if decision.error is not None:
            raise decision.error
        if decision.verdict is Verdict.DONE:
            assert isinstance(outcome, SendResult)
            return outcome
        return core._send_with_retries(
            self.p, self.policy, queue=self.queue, selector=self.selector, arg=self.arg, first_attempt=1,
            last_broker=mq.broker_name, last_error=outcome if isinstance(outcome, BaseException) else None,
        )  # fmt: skip


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
