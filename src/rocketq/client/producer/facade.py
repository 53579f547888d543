"""The producer you use (``DefaultMQProducer``): sync, async and oneway sends, batches, selectors.

:class:`Producer` is a thin synchronous front over :class:`~rocketq.client.producer.core.ProducerCore`,
which runs on the client instance's event loop. Synchronous and asynchronous sends retry on another
broker up to ``retry_times_when_send_failed`` times (2) after a transport error or a retriable
broker answer, all within ``send_msg_timeout`` (3 s); the rules are in
:mod:`~rocketq.client.producer.send_policy`.

A traced client's trace records travel through a producer of its own:
:func:`trace_dispatcher` makes it and hands its ``send_future`` to a
:class:`~rocketq.client.trace.TraceDispatcher` (the producer plugs the dispatcher in through
:class:`~rocketq.client.producer.core.SendTraceHook`; :mod:`rocketq.client.trace` never imports
the producer).

>>> from rocketq import Producer, Message                       # doctest: +SKIP
>>> with Producer("my-group", namesrv="127.0.0.1:9876") as producer:  # doctest: +SKIP
...     result = producer.send(Message("TopicTest", b"hello", tags="TagA", keys="order-1"))
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Literal, TypedDict

from rocketq.client._facade import SyncFacade, client_config_for
from rocketq.client.config import ClientConfig, ProducerConfig
from rocketq.client.instance import ClientInstance
from rocketq.client.message import SendResult
from rocketq.client.producer.core import ProducerCore, SendTarget
from rocketq.client.producer.selection import MessageQueueSelector
from rocketq.client.trace import (
    TRACE_INSTANCE_NAME,
    TRACE_SEND_TIMEOUT,
    ProducerTracing,
    TraceDispatcher,
    trace_producer_group,
)
from rocketq.client.validators import check_group
from rocketq.logsummary import LogSummary
from rocketq.models import MessageQueue
from rocketq.protocol.message import Message as ProtocolMessage
from rocketq.protocol.message import MessageExt

__all__ = ["Producer", "ProducerOptions", "SendCallback", "start_tracing", "trace_dispatcher"]

logger = logging.getLogger(__name__)
_callback_warnings = LogSummary(logger)  # failed callback sends: one line per kind per 10 s

SendCallback = Callable[[SendResult], object]
"""Called with the result of an asynchronous send (``SendCallback.onSuccess``)."""


def trace_dispatcher(
    group: str,
    kind: Literal["PRODUCER", "CONSUMER"],
    *,
    client_id: str,
    client_config: ClientConfig,
    trace_topic: str | None = None,
    **tuning: Any,
) -> TraceDispatcher:
    """A :class:`~rocketq.client.trace.TraceDispatcher` for the traced client ``client_id`` of
    ``group``, publishing through a trace producer of its own, started now and shut down with
    the dispatcher: group ``_INNER_TRACE_PRODUCER-<group>-<kind>-<n>``, instance name
    ``PID_CLIENT_INNER_TRACE_PRODUCER_<name servers>`` (the traced client's name servers and
    IP), 5 s send timeout (``AsyncTraceDispatcher``'s producer). ``tuning``: the dispatcher's
    ``max_chars``, ``wait_threshold``, ``queue_size``."""
    namesrv = ";".join(client_config.namesrv_addrs)
    trace_client = ClientConfig(
        namesrv=client_config.namesrv,
        client_ip=client_config.client_ip,
        instance_name=f"{TRACE_INSTANCE_NAME}_{namesrv}",
        tls=client_config.tls,
    )
    # Java caps its trace producer at 118,000 bytes too, yet packs until a message *reaches* that
    # size, so a full pack is refused; ours keeps the producer's default limit
    config = ProducerConfig(send_msg_timeout=TRACE_SEND_TIMEOUT)
    producer = Producer(trace_producer_group(group, kind), client_config=trace_client, config=config).start()
    return TraceDispatcher(
        group,
        kind,
        client_id=client_id,
        send=producer.send_future,
        close=producer.shutdown,
        trace_topic=trace_topic,
        **tuning,
    )


def start_tracing(
    group: str, client_id: str, client_config: ClientConfig, trace_topic: str | None
) -> ProducerTracing:
    """The tracing of a traced producer of ``group``: a started dispatcher (:func:`trace_dispatcher`)."""
    dispatcher = trace_dispatcher(
        group, "PRODUCER", client_id=client_id, client_config=client_config, trace_topic=trace_topic
    )
    return ProducerTracing(dispatcher.start())


class ProducerOptions(TypedDict, total=False):
    """:class:`Producer`'s keyword options after ``group`` and ``namesrv``, as a class that passes
    them on (:class:`~rocketq.client.producer.transaction.TransactionProducer`) takes them."""

    instance_name: str | None
    client_ip: str | None
    config: ProducerConfig | None
    client_config: ClientConfig | None
    trace: bool | None
    access_key: str | None
    secret_key: str | None


class Producer(SyncFacade[ProducerCore]):
    """A producer usable from plain synchronous code (and from asyncio via ``send_async``).

    ``Producer(group, namesrv=None, *, instance_name=None, client_ip=None, config=None,
    client_config=None, trace=None, access_key=None, secret_key=None)`` (the keys sign every
    request for a broker's ACL, as Java's ``AclClientRPCHook``); call :meth:`start` (or use
    ``with``), then :meth:`send` (blocks),
    :meth:`send_future` / :meth:`send_callback` / ``await`` :meth:`send_async` (asynchronous),
    :meth:`send_oneway`, :meth:`send_batch`, :meth:`request` (send and wait for a reply, also
    ``await`` :meth:`request_async`); :meth:`shutdown` when done.
    """

    role = "producer"

    def __init__(  # noqa: PLR0913  (Java's shortcuts for the client config, and the ACL keys)
        self,
        group: str,
        namesrv: str | None = None,
        *,
        instance_name: str | None = None,
        client_ip: str | None = None,
        config: ProducerConfig | None = None,
        client_config: ClientConfig | None = None,
        trace: bool | None = None,
        access_key: str | None = None,
        secret_key: str | None = None,
    ) -> None:
        check_group(group)  # Java also refuses DEFAULT_PRODUCER; we allow it (the CLI's default group)
        self.group = group
        self.config = config or ProducerConfig()
        if trace is not None:  # Java's enableMsgTrace; see rocketq.client.trace
            self.config = replace(self.config, trace=trace)
        self.client_config = client_config_for(
            client_config,
            namesrv=namesrv,
            client_ip=client_ip,
            instance_name=instance_name,
            access_key=access_key,
            secret_key=secret_key,
        ).with_pid_instance_name()
        self._instance: ClientInstance | None = None
        self._core: ProducerCore | None = None
        self._lock = threading.Lock()

    def _start_core(self, instance: ClientInstance) -> ProducerCore:
        core = ProducerCore(instance, self.group, self.config)
        instance.loop_thread.call(core.start())
        if self.config.trace:
            core.trace = start_tracing(
                self.group, instance.client_id, self.client_config, self.config.trace_topic
            )
        return core

    def shutdown(self) -> None:
        self._stop(lambda core: core.unregister(), 10.0)

    def _stopped(self, core: ProducerCore) -> None:
        core.close_thread_sockets()
        if core.trace is not None:
            core.trace.shutdown()

    close = shutdown

    # ---------------------------------------------------------------- sends

    def send(
        self,
        msg: ProtocolMessage,
        timeout: float | None = None,
        *,
        queue: MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
    ) -> SendResult:
        """Send and wait for the broker's answer; raises on failure after the retries.

        Safe from many threads at once (they share the client's connections, as Java's do); each
        call encodes its own request in its own thread (see :meth:`ProducerCore.send_blocking`)."""
        return self.core.send_blocking(msg, SendTarget(queue, selector, arg), timeout=timeout)

    def send_future(
        self,
        msg: ProtocolMessage,
        timeout: float | None = None,
        *,
        queue: MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
    ) -> concurrent.futures.Future[SendResult]:
        """Send asynchronously (retrying ``retry_times_when_send_async_failed`` times); a future.

        Back-pressure: while ``max_async_in_flight`` sends (or ``max_async_in_flight_bytes``) are
        out, this waits for one to finish, up to the send's timeout, then raises
        :class:`~rocketq.errors.RemotingTooMuchRequestError` (on the client's own loop thread,
        which must not wait, it raises at once)."""
        core = self.core
        limit = core.in_flight
        size = len(msg.body)
        wait = self.config.send_msg_timeout if timeout is None else timeout
        loop_thread = core.instance.loop_thread
        if loop_thread.in_loop_thread:
            if not limit.try_acquire(size):
                raise limit.too_many(0.0)
        else:
            limit.acquire(size, wait)
        took = time.monotonic()
        try:
            coro = core.send(
                msg, SendTarget(queue, selector, arg), timeout=timeout,
                retries=self.config.retry_times_when_send_async_failed,
            )  # fmt: skip
            future: concurrent.futures.Future[SendResult] = loop_thread.submit(coro)  # type: ignore[arg-type]
        except BaseException:
            limit.release(size)
            raise
        future.add_done_callback(lambda _f: limit.release(size, time.monotonic() - took))
        return future

    def send_callback(
        self,
        msg: ProtocolMessage,
        on_success: SendCallback,
        on_exception: Callable[[BaseException], object] | None = None,
        timeout: float | None = None,
    ) -> None:
        """Send asynchronously and call ``on_success(result)`` or ``on_exception(exc)`` (loop thread)."""
        future = self.send_future(msg, timeout)

        def done(f: concurrent.futures.Future[SendResult]) -> None:
            exc = f.exception()
            try:
                if exc is not None:
                    if on_exception is not None:
                        on_exception(exc)
                    else:
                        _callback_warnings.warning(
                            f"async:{type(exc).__name__}",
                            f"asynchronous sends failed ({type(exc).__name__})",
                            "async send failed: %s",
                            exc,
                        )
                else:
                    on_success(f.result())
            except Exception:
                logger.exception("send callback failed")

        future.add_done_callback(done)

    async def send_async(
        self,
        msg: ProtocolMessage,
        timeout: float | None = None,
        *,
        queue: MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
    ) -> SendResult:
        """``await producer.send_async(msg)`` from any asyncio loop (retrying, and waiting at the
        in-flight bound, as :meth:`send_future` does). The attempts are made from the caller's loop
        through the client's open connections; only a route fetch or a connect is handed to the
        client's loop (:meth:`ProducerCore.send`)."""
        limit = self.core.in_flight
        size = len(msg.body)
        await limit.acquire_async(size, self.config.send_msg_timeout if timeout is None else timeout)
        took = time.monotonic()
        try:
            result = await self.core.send(
                msg, SendTarget(queue, selector, arg), timeout=timeout,
                retries=self.config.retry_times_when_send_async_failed,
            )  # fmt: skip
            assert result is not None
            return result
        finally:
            limit.release(size, time.monotonic() - took)

    def send_oneway(
        self,
        msg: ProtocolMessage,
        *,
        queue: MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
    ) -> None:
        """Send without waiting for an answer (the frame is written before this returns)."""
        core = self.core
        core.instance.loop_thread.call(
            core.send(msg, SendTarget(queue, selector, arg), oneway=True),
            timeout=self.config.send_msg_timeout + 5.0,
        )

    def send_batch(
        self,
        msgs: Sequence[ProtocolMessage],
        timeout: float | None = None,
        *,
        queue: MessageQueue | None = None,
    ) -> SendResult:
        """Send messages of one topic in one request; ``msg_id`` lists their ids joined by commas."""
        return self.core.send_batch_blocking(msgs, timeout=timeout, queue=queue)

    # ---------------------------------------------------------------- request-reply

    def request(
        self,
        msg: ProtocolMessage,
        timeout: float | None = None,
        *,
        queue: MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
    ) -> MessageExt:
        """Send ``msg`` as a request and wait for its reply (``DefaultMQProducer.request``): the
        reply message a consumer sent with :func:`~rocketq.client.producer.request.create_reply`.

        ``timeout`` (seconds, default ``send_msg_timeout``) bounds the send and the wait; the
        message carries it as ``TTL``. No reply in time raises
        :class:`~rocketq.errors.RequestTimeoutError` (a :class:`~rocketq.errors.RemotingTimeoutError`);
        a failed send raises its error. ``msg`` is not changed (a copy is sent)."""
        core = self.core
        wait = self.config.send_msg_timeout if timeout is None else timeout
        return core.instance.loop_thread.call(
            core.request(msg, wait, SendTarget(queue, selector, arg)), timeout=wait + 5.0
        )

    async def request_async(
        self,
        msg: ProtocolMessage,
        timeout: float | None = None,
        *,
        queue: MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
    ) -> MessageExt:
        """``await producer.request_async(msg)`` from any asyncio loop: :meth:`request` without
        blocking the caller's loop."""
        core = self.core
        wait = self.config.send_msg_timeout if timeout is None else timeout
        coro = core.request(msg, wait, SendTarget(queue, selector, arg))
        if core.instance.loop_thread.in_loop_thread:
            return await coro
        return await asyncio.wrap_future(core.instance.loop_thread.submit(coro))

    def fetch_publish_queues(self, topic: str) -> list[MessageQueue]:
        """The queues a send to ``topic`` may pick (``fetchPublishMessageQueues``)."""
        core = self.core
        info = core.instance.loop_thread.call(core.find_publish_info(topic))
        return list(info.queues)
