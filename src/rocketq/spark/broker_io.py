"""Blocking calls to name servers and brokers, for Spark drivers and executors (and other tools).

No event loop and no client instance: routes come from a name server (``GET_ROUTEINFO_BY_TOPIC``),
then every call goes straight to the master of the queue's broker over
:class:`~rocketq.remoting.BlockingRemotingClient` (one connection per address, made on first
use), with the typed headers of :mod:`rocketq.protocol`:

* queue bounds: ``GET_MIN_OFFSET``, ``GET_MAX_OFFSET``, ``SEARCH_OFFSET_BY_TIMESTAMP``;
* reading: ``PULL_MESSAGE`` with the subscription in the request (``sysFlag`` 4, as a pull consumer
  sends it), no suspension, so an empty queue answers at once; :meth:`BrokerIO.pull_range` pulls
  a whole ``[start, end)`` range, keeping several pulls in flight;
* consumer offsets: ``QUERY_CONSUMER_OFFSET``, ``UPDATE_CONSUMER_OFFSET``;
* writing: ``SEND_BATCH_MESSAGE`` / ``SEND_MESSAGE_V2`` with the header a Java producer sends.

A response code other than the expected ones raises the :class:`~rocketq.errors.BrokerError` for
that code; its text is ``CODE: <code> DESC: <remark>`` (the broker's own words) and a note names
the call and the peer. Transport failures raise :class:`~rocketq.errors.RemotingError`.

>>> from rocketq.protocol.bodies import BrokerData, QueueData
>>> queues_from_route("T", TopicRouteData(
...     queue_datas=(QueueData(broker_name="b", read_queue_nums=1, write_queue_nums=1, perm=6),
...                  QueueData(broker_name="a", read_queue_nums=2, write_queue_nums=1, perm=6)),
...     broker_datas=(BrokerData(broker_name="a", broker_addrs={0: "10.0.0.1:10911"}),
...                   BrokerData(broker_name="b", broker_addrs={0: "10.0.0.2:10911"}))))
[QueueRoute(queue=MessageQueue(topic='T', broker_name='a', queue_id=0), addr='10.0.0.1:10911'), \
QueueRoute(queue=MessageQueue(topic='T', broker_name='a', queue_id=1), addr='10.0.0.1:10911'), \
QueueRoute(queue=MessageQueue(topic='T', broker_name='b', queue_id=0), addr='10.0.0.2:10911')]
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from types import TracebackType
from typing import Final, NoReturn

from rocketq.errors import (
    BrokerError,
    ConfigError,
    RemoteProtocolError,
    RemotingClosedError,
    RemotingConnectError,
    RemotingError,
    RemotingTimeoutError,
    TopicNotExistError,
)
from rocketq.models import MessageQueue
from rocketq.protocol.bodies import TopicRouteData
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.command import FLAG_RESPONSE, RemotingCommand
from rocketq.protocol.frame import FrameDecoder, encode_frame
from rocketq.protocol.headers import (
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    GetRouteInfoRequestHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketq.protocol.message import Message, decode_messages, encode_batch
from rocketq.protocol.message_id import UniqIdGenerator
from rocketq.protocol.properties import MessageConst, properties_to_string
from rocketq.remoting.blocking import BlockingRemotingClient
from rocketq.remoting.client import parse_address

__all__ = [
    "DEFAULT_TOPIC",
    "DEFAULT_TOPIC_QUEUE_NUMS",
    "PULL_FLAG_SUBSCRIPTION",
    "BrokerIO",
    "PullResult",
    "PullStatus",
    "QueueRoute",
    "SendResult",
    "new_uniq_id_generator",
    "parse_namesrv",
    "queues_from_route",
]

logger = logging.getLogger(__name__)

PERM_READ: Final = 0x4
PERM_WRITE: Final = 0x2
MASTER_ID: Final = 0
PULL_FLAG_SUBSCRIPTION: Final = 0x4
"""``PullSysFlag`` bit: the subscription expression travels in the request."""
DEFAULT_TOPIC: Final = "TBW102"
"""The topic whose route a Java producer borrows for a topic that does not exist yet."""
DEFAULT_TOPIC_QUEUE_NUMS: Final = 4
"""Queues a Java producer asks the broker to auto-create (``defaultTopicQueueNums``)."""


@dataclass(frozen=True, slots=True)
class QueueRoute:
    """A message queue and the address of its broker's master."""

    queue: MessageQueue
    addr: str


class PullStatus(Enum):
    """How a pull ended (RocketMQ's ``PullStatus``)."""

    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


_PULL_STATUS: Final = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}


@dataclass(frozen=True, slots=True)
class PullResult:
    """One pull's answer: ``body`` holds the stored records when ``status`` is FOUND."""

    status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    body: bytes = b""
    remark: str = ""


@dataclass(frozen=True, slots=True)
class SendResult:
    """Where a send was stored: ``msg_id`` is the broker's (offset) id list for a batch."""

    queue: MessageQueue
    msg_id: str
    queue_offset: int
    count: int


def parse_namesrv(value: str | None) -> list[str]:
    """Name server addresses from ``"host:port;host:port"`` (``,`` also separates), each checked.

    >>> parse_namesrv("127.0.0.1:9876; 10.0.0.2:9876")
    ['127.0.0.1:9876', '10.0.0.2:9876']
    """
    if not value or not value.strip():
        raise ConfigError("no name server: set the 'namesrv' option or the NAMESRV_ADDR environment variable")
    addrs = [a.strip() for a in value.replace(",", ";").split(";") if a.strip()]
    for addr in addrs:
        parse_address(addr)
    return addrs


def queues_from_route(topic: str, route: TopicRouteData, *, writable: bool = False) -> list[QueueRoute]:
    """The readable (or writable) queues of ``topic`` whose broker has a master, sorted."""
    masters = {b.broker_name: b.broker_addrs.get(MASTER_ID) for b in route.broker_datas}
    out: list[QueueRoute] = []
    for qd in route.queue_datas:
        name = qd.broker_name
        addr = masters.get(name) if name else None
        if name is None or addr is None:
            continue
        if writable:
            if not qd.perm & PERM_WRITE:
                continue
            count = qd.write_queue_nums
        else:
            if not qd.perm & PERM_READ:
                continue
            count = qd.read_queue_nums
        out.extend(QueueRoute(MessageQueue(topic, name, i), addr) for i in range(count))
    out.sort(key=lambda r: r.queue)
    return out


def new_uniq_id_generator() -> UniqIdGenerator:
    """A unique-id generator for this process (the host's address, pid and a random salt)."""
    try:
        ip = socket.gethostbyname(socket.gethostname())
    except OSError:
        ip = "127.0.0.1"
    return UniqIdGenerator(ip=ip, pid=os.getpid(), salt=int.from_bytes(os.urandom(4), "big"))


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class BrokerIO:
    """Blocking access to a RocketMQ cluster: routes, queue offsets, pulls, sends.

    Not thread-safe beyond what :class:`BlockingRemotingClient` gives (one call at a time per
    address); make one per task. Close it (or use ``with``) to drop its connections.
    """

    def __init__(self, namesrv: str | Sequence[str], *, timeout: float = 5.0) -> None:
        self.namesrv = parse_namesrv(namesrv) if isinstance(namesrv, str) else list(namesrv)
        if not self.namesrv:
            raise ConfigError("no name server address given")
        self.timeout = timeout
        self._clients: dict[str, BlockingRemotingClient] = {}

    def __enter__(self) -> BrokerIO:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        clients, self._clients = self._clients, {}
        for client in clients.values():
            client.close()

    def client(self, addr: str) -> BlockingRemotingClient:
        client = self._clients.get(addr)
        if client is None:
            client = BlockingRemotingClient(addr, connect_timeout=self.timeout, request_timeout=self.timeout)
            self._clients[addr] = client
        return client

    def _invoke(self, addr: str, request: RemotingCommand, what: str) -> RemotingCommand:
        """Send and return the response, retrying once on a connection the peer had closed."""
        try:
            return self.client(addr).invoke(request)
        except RemotingClosedError:
            logger.debug("connection to %s was closed; retrying %s once", addr, what)
            return self.client(addr).invoke(request)

    @staticmethod
    def _raise(response: RemotingCommand, what: str, addr: str) -> NoReturn:
        error = BrokerError.for_code(response.code, response.remark)
        error.add_note(f"{what} at {addr}")
        raise error

    # ------------------------------------------------------------------ routes

    def route(self, topic: str) -> TopicRouteData:
        """The topic's route from the first name server that answers; a topic no name server
        knows raises :class:`~rocketq.errors.TopicNotExistError` with the name server's remark."""
        header = GetRouteInfoRequestHeader(topic=topic, accept_standard_json_only=True)
        last: Exception | None = None
        for addr in self.namesrv:
            request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, header.to_ext_fields())
            try:
                response = self._invoke(addr, request, f"route of topic {topic!r}")
            except RemotingError as exc:  # try the next name server
                last = exc
                continue
            if response.code == ResponseCode.SUCCESS:
                return TopicRouteData.decode(response.body)
            self._raise(response, f"route of topic {topic!r}", addr)
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
                default = self.route(DEFAULT_TOPIC)
            except TopicNotExistError:
                raise exc from None
            routes = queues_from_route(topic, default, writable=True)
            # a Java producer uses min(defaultTopicQueueNums, the default topic's queues) per broker
            routes = [r for r in routes if r.queue.queue_id < DEFAULT_TOPIC_QUEUE_NUMS]
            if not routes:
                raise
            return routes, True

    # ------------------------------------------------------------------ queue bounds

    def _offset_call(self, q: QueueRoute, code: int, ext: dict[str, str], what: str) -> RemotingCommand:
        response = self._invoke(q.addr, RemotingCommand.request(code, ext), what)
        if response.code != ResponseCode.SUCCESS:
            self._raise(response, f"{what} of {q.queue.broker_name}:{q.queue.queue_id}", q.addr)
        return response

    def min_offset(self, q: QueueRoute) -> int:
        """The queue's smallest offset still stored (``GET_MIN_OFFSET``)."""
        ext = GetMinOffsetRequestHeader(topic=q.queue.topic, queue_id=q.queue.queue_id).to_ext_fields()
        response = self._offset_call(q, RequestCode.GET_MIN_OFFSET, ext, "min offset")
        return GetMinOffsetResponseHeader.from_ext_fields(response.ext_fields).offset

    def max_offset(self, q: QueueRoute) -> int:
        """The offset the queue's next message will get (``GET_MAX_OFFSET``)."""
        ext = GetMaxOffsetRequestHeader(topic=q.queue.topic, queue_id=q.queue.queue_id).to_ext_fields()
        response = self._offset_call(q, RequestCode.GET_MAX_OFFSET, ext, "max offset")
        return GetMaxOffsetResponseHeader.from_ext_fields(response.ext_fields).offset

    def search_offset(self, q: QueueRoute, timestamp_ms: int) -> int:
        """The broker's offset for a store time (``SEARCH_OFFSET_BY_TIMESTAMP``)."""
        ext = SearchOffsetRequestHeader(
            topic=q.queue.topic, queue_id=q.queue.queue_id, timestamp=timestamp_ms
        ).to_ext_fields()
        response = self._offset_call(q, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, ext, "offset by time")
        return SearchOffsetResponseHeader.from_ext_fields(response.ext_fields).offset

    def offset_at_or_after(self, q: QueueRoute, timestamp_ms: int, *, group: str) -> int:
        """The offset of the queue's first message stored at or after ``timestamp_ms``.

        The broker's search answers the message *nearest* that time (RocketMQ's
        ``getOffsetInQueueByTime``), which may be stored just before it; one pull of that message
        tells, and the next offset is taken when it is early.
        """
        offset = self.search_offset(q, timestamp_ms)
        result = self.pull(q, group=group, offset=offset, max_nums=1)
        if result.status is PullStatus.FOUND:
            messages = decode_messages(result.body, read_body=False)
            if messages and messages[0].queue_offset == offset and messages[0].store_timestamp < timestamp_ms:
                return offset + 1
        return offset

    def consumer_offset(self, q: QueueRoute, group: str) -> int | None:
        """The group's committed offset on the queue, ``None`` when the broker has none (a RocketMQ
        broker answers 0 instead while the queue still starts at offset 0, in memory)."""
        ext = QueryConsumerOffsetRequestHeader(
            consumer_group=group, topic=q.queue.topic, queue_id=q.queue.queue_id
        ).to_ext_fields()
        request = RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, ext)
        response = self._invoke(q.addr, request, "consumer offset")
        if response.code == ResponseCode.QUERY_NOT_FOUND:
            return None
        if response.code != ResponseCode.SUCCESS:
            self._raise(response, f"consumer offset of group {group!r}", q.addr)
        return QueryConsumerOffsetResponseHeader.from_ext_fields(response.ext_fields).offset

    def update_consumer_offset(self, q: QueueRoute, group: str, offset: int) -> None:
        """Record ``offset`` as the group's committed offset on the queue (``UPDATE_CONSUMER_OFFSET``)."""
        ext = UpdateConsumerOffsetRequestHeader(
            consumer_group=group, topic=q.queue.topic, queue_id=q.queue.queue_id, commit_offset=offset
        ).to_ext_fields()
        self._offset_call(q, RequestCode.UPDATE_CONSUMER_OFFSET, ext, f"commit offset for {group!r}")

    # ------------------------------------------------------------------ pulls

    @staticmethod
    def pull_request(
        q: QueueRoute, *, group: str, offset: int, max_nums: int, expression: str = "*"
    ) -> RemotingCommand:
        """A ``PULL_MESSAGE`` as a pull consumer sends it: subscription inline, not suspended."""
        header = PullMessageRequestHeader(
            consumer_group=group,
            topic=q.queue.topic,
            queue_id=q.queue.queue_id,
            queue_offset=offset,
            max_msg_nums=max_nums,
            sys_flag=PULL_FLAG_SUBSCRIPTION,
            commit_offset=0,
            suspend_timeout_millis=0,
            subscription=expression,
            sub_version=0,
            expression_type="TAG",
        )
        return RemotingCommand.request(RequestCode.PULL_MESSAGE, header.to_ext_fields())

    @staticmethod
    def pull_result(response: RemotingCommand, q: QueueRoute) -> PullResult:
        """The :class:`PullResult` of a pull response (other codes raise BrokerError)."""
        status = _PULL_STATUS.get(response.code)  # type: ignore[call-overload]
        if status is None:
            error = BrokerError.for_code(response.code, response.remark)
            error.add_note(f"pull of {q.queue.topic} {q.queue.broker_name}:{q.queue.queue_id} at {q.addr}")
            raise error
        header = PullMessageResponseHeader.from_ext_fields(response.ext_fields)
        return PullResult(
            status,
            header.next_begin_offset,
            header.min_offset,
            header.max_offset,
            response.body if status is PullStatus.FOUND else b"",
            response.remark or "",
        )

    def pull(
        self, q: QueueRoute, *, group: str, offset: int, max_nums: int, expression: str = "*"
    ) -> PullResult:
        """One pull of up to ``max_nums`` messages from ``offset`` (the broker may cap the count)."""
        request = self.pull_request(q, group=group, offset=offset, max_nums=max_nums, expression=expression)
        return self.pull_result(self._invoke(q.addr, request, "pull"), q)

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
    ) -> Iterator[PullResult]:
        """Pull ``[start, end)`` of a queue, yielding each answer in offset order.

        Up to ``depth`` pulls are in flight on one connection (each asks from where the previous
        one's range ends, assuming the broker returns a full batch; when it returns less, the
        answers after it are dropped and pulling resumes from its ``next_begin_offset``). A FOUND
        body may hold messages at or past ``end`` (with a tag filter the broker skips ahead):
        callers stop at ``end``. Non-FOUND answers are yielded too (``NO_MATCHED_MSG`` advances,
        ``OFFSET_ILLEGAL`` and a ``NO_NEW_MSG`` before ``end`` are the caller's to judge), and
        iteration ends there when the answer does not move the position forward.
        """
        if start >= end:
            return
        if expression not in ("*", ""):
            depth = 1  # with a filter the next start is only known from the answer
        pipe = _PullPipe(q.addr, self.timeout)
        try:
            pos = ask = start
            batch = batch_size
            inflight: deque[tuple[int, int]] = deque()  # (offset, count) asked, oldest first
            while pos < end:
                while len(inflight) < depth and ask < end:
                    count = min(batch, end - ask)
                    pipe.send(
                        self.pull_request(q, group=group, offset=ask, max_nums=count, expression=expression)
                    )
                    inflight.append((ask, count))
                    ask += count
                asked, count = inflight.popleft()
                response = pipe.receive()
                if asked != pos:
                    # asked past a short answer: every such pull precedes the re-asked ones in the
                    # pipe and starts beyond ``pos``, so skipping them is safe
                    continue
                result = self.pull_result(response, q)
                yield result
                nxt = result.next_begin_offset
                if result.status not in (PullStatus.FOUND, PullStatus.NO_MATCHED_MSG) or nxt <= pos:
                    return
                if not inflight or inflight[0][0] != nxt:
                    if depth > 1 and result.status is PullStatus.FOUND and nxt - pos < count and nxt < end:
                        batch = nxt - pos  # the broker caps a pull below our batch: ask for its size
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

        One message goes as ``SEND_MESSAGE_V2``, several as ``SEND_BATCH_MESSAGE``. A refusal
        raises the broker's :class:`~rocketq.errors.BrokerError`.
        """
        if not messages:
            raise ConfigError("send_batch needs at least one message")
        batch = len(messages) > 1
        if batch:
            props = properties_to_string({MessageConst.WAIT: "true"})
            body = encode_batch(messages)
            flag = 0
        else:
            props = properties_to_string(messages[0].properties)
            body = messages[0].body
            flag = messages[0].flag
        header = SendMessageRequestHeaderV2(
            producer_group=producer_group,
            topic=q.queue.topic,
            default_topic=DEFAULT_TOPIC,
            default_topic_queue_nums=DEFAULT_TOPIC_QUEUE_NUMS,
            queue_id=q.queue.queue_id,
            sys_flag=0,
            born_timestamp=_now_ms(),
            flag=flag,
            properties=props,
            reconsume_times=0,
            unit_mode=False,
            batch=batch,
        )
        code = RequestCode.SEND_BATCH_MESSAGE if batch else RequestCode.SEND_MESSAGE_V2
        request = RemotingCommand.request(code, header.to_ext_fields(), body)
        what = (
            f"send of {len(messages)} message(s) to {q.queue.topic} {q.queue.broker_name}:{q.queue.queue_id}"
        )
        response = self.client(q.addr).invoke(request)  # no blind retry: a send is not idempotent
        if response.code != ResponseCode.SUCCESS:
            self._raise(response, what + (" (topic to be auto-created)" if default_topic else ""), q.addr)
        result = SendMessageResponseHeader.from_ext_fields(response.ext_fields)
        return SendResult(q.queue, result.msg_id, result.queue_offset, len(messages))


class _PullPipe:
    """One socket carrying pipelined pulls: requests out in order, responses matched by opaque.

    A broker answers pulls on one connection in order, but the opaque check makes that an
    assertion rather than an assumption."""

    def __init__(self, addr: str, timeout: float) -> None:
        host, port = parse_address(addr)
        self.addr = addr
        self.timeout = timeout
        try:
            self._sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as exc:
            raise RemotingConnectError(f"cannot connect to {addr}: {exc}") from exc
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._decoder = FrameDecoder()
        self._opaque = 0
        self._sent: list[int] = []
        self._pending: dict[int, RemotingCommand] = {}

    def send(self, request: RemotingCommand) -> None:
        self._opaque += 1
        request.opaque = self._opaque
        self._sent.append(self._opaque)
        try:
            self._sock.sendall(encode_frame(request))
        except OSError as exc:
            raise RemotingClosedError(f"cannot send a pull to {self.addr}: {exc}") from exc

    def receive(self) -> RemotingCommand:
        """The response to the oldest request not yet received."""
        want = self._sent.pop(0)
        deadline = time.monotonic() + self.timeout
        while want not in self._pending:
            cmd = self._decoder.next_command()
            if cmd is not None:
                if cmd.flag & FLAG_RESPONSE:
                    self._pending[cmd.opaque] = cmd
                continue  # requests the broker pushes (none expected here) are ignored
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RemotingTimeoutError(f"no pull response from {self.addr} within {self.timeout:g}s")
            self._sock.settimeout(remaining)
            try:
                data = self._sock.recv(1 << 20)
            except TimeoutError:
                continue
            except OSError as exc:
                raise RemotingClosedError(f"pull connection to {self.addr} failed: {exc}") from exc
            if not data:
                raise RemotingClosedError(f"{self.addr} closed the pull connection")
            try:
                self._decoder.receive_data(data)
            except RemoteProtocolError as exc:
                raise RemotingClosedError(f"{self.addr} sent bytes that are not a frame: {exc}") from exc
        return self._pending.pop(want)

    def close(self) -> None:
        try:
            self._sock.close()
        except OSError:  # pragma: no cover
            pass
