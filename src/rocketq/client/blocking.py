"""The client API's blocking facade: the same calls with no event loop, for Spark and tools.

:class:`BlockingClient` runs the calls of :mod:`rocketq.protocol.calls` over
:class:`~rocketq.remoting.BlockingRemotingClient` (one connection per address, made on first use;
one more per :meth:`~BlockingClient.pull_range` for its pipelined pulls). Routes come from the
name servers (tried in turn), every other call goes to the master of the queue's broker:

* ``client.call(addr, calls.get_max_offset(mq))`` - any call, typed;
* routes: :meth:`~BlockingClient.route`, :meth:`~BlockingClient.read_queues`,
  :meth:`~BlockingClient.write_queues` (borrowing ``TBW102``'s route for a topic to be auto-created);
* reading: :meth:`~BlockingClient.pull` (the subscription in the request, ``sysFlag`` 4 as a pull
  consumer sends it, no suspension, so an empty queue answers at once) and
  :meth:`~BlockingClient.pull_range`, a whole ``[start, end)`` range with several pulls in flight;
  :meth:`~BlockingClient.offset_at_or_after` turns a time into the first offset stored then;
* writing: :meth:`~BlockingClient.send_batch`, with the header a Java producer sends, and
  :meth:`~BlockingClient.batch_call` for an already encoded batch (pipelined writers send calls
  with :meth:`~BlockingClient.start` and read their answers with :meth:`~BlockingClient.finish`).

No client instance, heartbeat or rebalance: Spark's executors read and write ranges they were
given. A refusal raises the code's :class:`~rocketq.errors.BrokerError` (``CODE: <code> DESC:
<remark>``, the broker's own words) with a note naming the call and the peer; transport failures
raise :class:`~rocketq.errors.RemotingError`.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from rocketq.client.config import TlsClientConfig, resolve_namesrv
from rocketq.client.routes import queues_from_route
from rocketq.clock import now_ms
from rocketq.errors import BrokerError, ConfigError, RemotingClosedError, RemotingError, TopicNotExistError
from rocketq.lifecycle import Closing
from rocketq.models import PullResult, PullStatus, QueueRoute, SendResult, SendStatus
from rocketq.protocol import calls
from rocketq.protocol.acl import Credentials
from rocketq.protocol.bodies import TopicRouteData
from rocketq.protocol.calls import Call, SendOrigin, SendPayload, SendResponse
from rocketq.protocol.codes import PullSysFlag, ResponseCode
from rocketq.protocol.headers import PullMessageRequestHeader
from rocketq.protocol.message import Message, decode_messages, encode_batch
from rocketq.protocol.properties import MessageConst
from rocketq.protocol.topics import AUTO_CREATE_TOPIC_KEY_TOPIC, DEFAULT_TOPIC_QUEUE_NUMS
from rocketq.remoting.blocking import BlockingRemotingClient, Ticket

__all__ = ["BlockingClient", "Pending", "not_confirmed"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

_SUBSCRIPTION = int(PullSysFlag.SUBSCRIPTION)


def not_confirmed(code: int, what: str, addr: str) -> BrokerError:
    """The error of a send the broker stored but did not confirm in time (flush or slave
    timeout, slave not available: ``code``), noted with the call and the broker."""
    error = BrokerError.for_code(code, "the broker stored the messages but did not confirm them")
    error.add_note(f"{what} at {addr}")
    return error


@dataclass(frozen=True, slots=True)
class Pending(Generic[T]):
    """A call :meth:`BlockingClient.start` sent and whose answer is not read yet."""

    addr: str
    call: Call[T]
    ticket: Ticket


class BlockingClient(Closing):
    """Blocking access to a RocketMQ cluster: any call, plus routes, ranges of pulls and sends.

    ``namesrv`` is RocketMQ's ``;``-separated list (or a sequence of addresses). Not thread-safe
    beyond what :class:`BlockingRemotingClient` gives (one call at a time per address); make one
    per task. Close it (or use ``with``) to drop its connections. With ``credentials`` every
    request is signed for a broker's ACL (as RocketMQ 4.9's ``AclClientRPCHook``).
    """

    def __init__(
        self,
        namesrv: str | Sequence[str],
        *,
        timeout: float = 5.0,
        credentials: Credentials | None = None,
        tls: TlsClientConfig | None = None,
    ) -> None:
        self.namesrv = list(resolve_namesrv(namesrv if isinstance(namesrv, str) else ";".join(namesrv)))
        self.timeout = timeout
        #: The ACL keys every request is signed with (``None``: unsigned).
        self.credentials = credentials
        #: TLS to every server (``tls.enable``); ``None``: plaintext
        self.tls = tls
        self._clients: dict[str, BlockingRemotingClient] = {}

    def close(self) -> None:
        clients, self._clients = self._clients, {}
        for client in clients.values():
            client.close()

    def start(self, addr: str, call: Call[T]) -> Pending[T]:
        """Send ``call`` to ``addr`` and return at once; :meth:`finish` waits for its answer.
        Several calls may be in flight on the address's one connection (pipelining)."""
        return Pending(addr, call, self._client(addr).send_request(call.request))

    def finish(self, pending: Pending[T]) -> T:
        """The parsed answer of a call :meth:`start` sent (answers to other calls that come
        first are kept for theirs); a refusal raises its BrokerError, noted with the call and
        the peer, as :meth:`call` does."""
        try:
            return pending.call.parse(self._client(pending.addr).receive(pending.ticket))
        except BrokerError as exc:
            exc.add_note(f"{pending.call.what} at {pending.addr}")
            raise

    def _client(self, addr: str) -> BlockingRemotingClient:
        client = self._clients.get(addr)
        if client is None:
            client = self._new_remoting(addr)
            self._clients[addr] = client
        return client

    def _new_remoting(self, addr: str) -> BlockingRemotingClient:
        return BlockingRemotingClient(
            addr,
            connect_timeout=self.timeout,
            request_timeout=self.timeout,
            credentials=self.credentials,
            tls=self.tls,
        )

    def call(self, addr: str, call: Call[T], *, retry_closed: bool = True) -> T:
        """Run ``call`` at ``addr``; once more on a fresh connection when the peer had closed the
        old one (``retry_closed``; never for sends, which are not idempotent)."""
        try:
            return self._client(addr).call(call)
        except RemotingClosedError:
            if not retry_closed:
                raise
            logger.debug("connection to %s was closed; retrying %s once", addr, call.what)
            return self._client(addr).call(call)

    # ------------------------------------------------------------------ routes

    def route(self, topic: str) -> TopicRouteData:
        """The topic's route from the first name server that answers; a topic no name server
        knows raises :class:`~rocketq.errors.TopicNotExistError` with the name server's remark."""
        last: Exception | None = None
        for addr in self.namesrv:
            try:
                return self.call(addr, calls.get_route_info(topic, standard_json_only=True))
            except TopicNotExistError:
                raise
            except RemotingError as exc:  # try the next name server
                last = exc
        assert last is not None
        raise last

    def read_queues(self, topic: str) -> list[QueueRoute]:
        """The readable queues of ``topic`` (a missing topic raises TopicNotExistError)."""
        return queues_from_route(topic, self.route(topic))

    def write_queues(self, topic: str) -> tuple[list[QueueRoute], bool]:
        """The writable queues of ``topic``, and whether they are borrowed from the default topic's
        route (the topic does not exist yet: brokers with auto-creation on will create it)."""
        try:
            return queues_from_route(topic, self.route(topic), writable=True), False
        except TopicNotExistError as exc:
            try:
                default = self.route(AUTO_CREATE_TOPIC_KEY_TOPIC)
            except TopicNotExistError:
                raise exc from None
            routes = queues_from_route(topic, default, writable=True)
            # a Java producer uses min(defaultTopicQueueNums, the default topic's queues) per broker
            routes = [r for r in routes if r.queue.queue_id < DEFAULT_TOPIC_QUEUE_NUMS]
            if not routes:
                raise
            return routes, True

    # ------------------------------------------------------------------ offsets

    def offset_at_or_after(self, q: QueueRoute, timestamp_ms: int, *, group: str) -> int:
        """The offset of the queue's first message stored at or after ``timestamp_ms``.

        The broker's search answers the message *nearest* that time (RocketMQ's
        ``getOffsetInQueueByTime``), which may be stored just before it; one pull of that message
        tells, and the next offset is taken when it is early.
        """
        offset = self.call(q.addr, calls.search_offset(q.queue, timestamp_ms))
        result = self.pull(q, group=group, offset=offset, max_nums=1)
        if result.status is PullStatus.FOUND:
            messages = decode_messages(result.body, read_body=False)
            if messages and messages[0].queue_offset == offset and messages[0].store_timestamp < timestamp_ms:
                return offset + 1
        return offset

    # ------------------------------------------------------------------ pulls

    @staticmethod
    def pull_call(
        q: QueueRoute,
        *,
        group: str,
        offset: int,
        max_nums: int,
        expression: str = "*",
        bulk_bytes: int | None = None,
    ) -> Call[PullResult]:
        """A ``PULL_MESSAGE`` as a pull consumer sends it: subscription inline, not suspended;
        ``bulk_bytes`` asks rocketq's broker for a bulk answer (``rqPullBytes``, which a RocketMQ
        broker ignores)."""
        header = PullMessageRequestHeader(
            consumer_group=group,
            topic=q.queue.topic,
            queue_id=q.queue.queue_id,
            queue_offset=offset,
            max_msg_nums=max_nums,
            sys_flag=_SUBSCRIPTION,
            commit_offset=0,
            suspend_timeout_millis=0,
            subscription=expression,
            sub_version=0,
            expression_type="TAG",
        )
        return calls.pull_message(header, bulk_bytes=bulk_bytes)

    def pull(
        self, q: QueueRoute, *, group: str, offset: int, max_nums: int, expression: str = "*"
    ) -> PullResult:
        """One pull of up to ``max_nums`` messages from ``offset`` (the broker may cap the count)."""
        return self.call(
            q.addr, self.pull_call(q, group=group, offset=offset, max_nums=max_nums, expression=expression)
        )

    def pull_range(
        self,
        q: QueueRoute,
        start: int,
        end: int,
        *,
        group: str,
        batch_size: int = 32,
        expression: str = "*",
        depth: int = 16,
        bulk_bytes: int | None = None,
    ) -> Iterator[PullResult]:
        """Pull ``[start, end)`` of a queue, yielding each answer in offset order.

        ``bulk_bytes`` asks for bulk answers of about that many bytes and up to ``batch_size``
        messages (:data:`~rocketq.protocol.calls.PULL_BYTES_FIELD`): rocketq's broker returns them,
        a RocketMQ broker its usual 32 messages at most, which the pipeline then adapts to.

        Up to ``depth`` pulls are in flight on a connection of its own (each asks from where the
        previous one's range ends, assuming the broker returns a full batch; when it returns less,
        the answers after it are dropped and pulling resumes from its ``next_begin_offset``). A
        FOUND body may hold messages at or past ``end`` (with a tag filter the broker skips ahead):
        callers stop at ``end``. Non-FOUND answers are yielded too (``NO_MATCHED_MSG`` advances,
        ``OFFSET_ILLEGAL`` and a ``NO_NEW_MSG`` before ``end`` are the caller's to judge), and
        iteration ends there when the answer does not move the position forward.
        """
        if start >= end:
            return
        if expression not in ("*", ""):
            depth = 1  # with a filter the next start is only known from the answer
        pipe = self._new_remoting(q.addr)
        try:
            pos = ask = start
            batch = batch_size
            inflight: deque[tuple[int, int, Ticket, Call[PullResult]]] = deque()  # oldest first
            while pos < end:
                while len(inflight) < depth and ask < end:
                    count = min(batch, end - ask)
                    call = self.pull_call(
                        q,
                        group=group,
                        offset=ask,
                        max_nums=count,
                        expression=expression,
                        bulk_bytes=bulk_bytes,
                    )
                    inflight.append((ask, count, pipe.send_request(call.request), call))
                    ask += count
                asked, count, ticket, call = inflight.popleft()
                response = pipe.receive(ticket)
                if asked != pos:
                    # asked past a short answer: every such pull precedes the re-asked ones in the
                    # pipe and starts beyond ``pos``, so skipping them is safe
                    continue
                try:
                    result = call.parse(response)
                except Exception as exc:
                    exc.add_note(f"pull of {q.queue.topic} {q.queue.short} at {q.addr}")
                    raise
                yield result
                nxt = result.next_begin_offset
                if result.status not in (PullStatus.FOUND, PullStatus.NO_MATCHED_MSG) or nxt <= pos:
                    return
                if not inflight or inflight[0][0] != nxt:
                    if depth > 1 and result.status is PullStatus.FOUND and nxt - pos < count and nxt < end:
                        # the broker caps a pull below our batch: ask for its size; when bytes
                        # capped it, a tenth less, so that slightly larger messages still fit
                        batch = nxt - pos
                        if bulk_bytes is not None and len(result.body) * 2 > bulk_bytes:
                            batch = max(1, batch * 9 // 10)
                    ask = nxt
                pos = nxt
        finally:
            pipe.close()

    # ------------------------------------------------------------------ sends

    def send_batch(
        self,
        q: QueueRoute,
        messages: Sequence[Message],
        *,
        producer_group: str,
        default_topic: bool = False,
    ) -> SendResult:
        """Store ``messages`` (one topic, already carrying ``UNIQ_KEY``) in queue ``q``.

        One message goes as ``SEND_MESSAGE_V2``, several as ``SEND_BATCH_MESSAGE``; the request
        is :func:`rocketq.protocol.calls.send_request`'s, as a :class:`~rocketq.client.Producer`'s
        (its body is not compressed here). A refusal raises the broker's
        :class:`~rocketq.errors.BrokerError`; a lost connection is not retried (a send is not
        idempotent).
        """
        if not messages:
            raise ConfigError("send_batch needs at least one message")
        if len(messages) > 1:
            call = self.batch_call(q, encode_batch(messages), producer_group=producer_group)
        else:
            msg = messages[0]
            payload = SendPayload(msg.topic, msg.body, msg.properties, msg.flag)
            call = calls.send_call(_origin(producer_group), payload, q.queue.queue_id, now_ms())
        try:
            answer = self.call(q.addr, call, retry_closed=False)
        except Exception as exc:
            if default_topic:
                exc.add_note("(the topic was to be auto-created from TBW102's route)")
            raise
        if answer.code != ResponseCode.SUCCESS:  # stored, but not flushed or replicated in time
            raise not_confirmed(answer.code, call.what, q.addr)
        ids = ",".join(m.properties.get(MessageConst.UNIQ_KEY, "") for m in messages)
        return SendResult(SendStatus.SEND_OK, ids, answer.offset_msg_id, q.queue, answer.queue_offset)

    @staticmethod
    def batch_call(q: QueueRoute, body: bytes, *, producer_group: str) -> Call[SendResponse]:
        """The ``SEND_BATCH_MESSAGE`` of an encoded batch ``body`` (records as
        :func:`~rocketq.protocol.message.encode_batch` writes them, each with its ``UNIQ_KEY``) to
        queue ``q``, with the header a Java producer's batch carries (``WAIT=true``), built by
        :func:`rocketq.protocol.calls.send_request`."""
        payload = SendPayload(q.queue.topic, body, {MessageConst.WAIT: "true"}, batch=True)
        return calls.send_call(_origin(producer_group), payload, q.queue.queue_id, now_ms())


_origins: dict[str, SendOrigin] = {}


def _origin(producer_group: str) -> SendOrigin:
    """The :class:`~rocketq.protocol.calls.SendOrigin` of ``producer_group`` (with ``TBW102``'s
    defaults), kept so that its header templates serve every call of the group."""
    origin = _origins.get(producer_group)
    if origin is None:
        if len(_origins) >= 64:
            _origins.clear()
        origin = _origins[producer_group] = SendOrigin(producer_group)
    return origin
