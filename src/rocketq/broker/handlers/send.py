"""SEND_MESSAGE, SEND_MESSAGE_V2, SEND_BATCH_MESSAGE and CONSUMER_SEND_MSG_BACK.

RocketMQ 4.9.4's ``SendMessageProcessor`` and ``AbstractSendMessageProcessor.msgCheck``, on the
store's synchronous append:

* checks, in Java's order: topic name (SYSTEM_ERROR with ``TopicValidator``'s remark), topics no
  client may send to (NO_PERMISSION), the topic's config - auto-created from the request's
  ``defaultTopic`` when missing and allowed, else TOPIC_NOT_EXIST with RocketMQ's remark - and
  the queue id (SYSTEM_ERROR when beyond the topic's queues; a negative one picks a write queue);
* a ``%RETRY%<group>`` topic whose message has been retried ``maxReconsumeTimes`` times goes to
  ``%DLQ%<group>`` instead (``handleRetryAndDLQ``);
* the stored properties are the request's plus ``CLUSTER``, written in Java ``HashMap`` order,
  with ``WAIT=true`` dropped for a single send (as 4.9.4 does, to save 9 bytes); a ``DELAY``
  level rewrites the message for ``SCHEDULE_TOPIC_XXXX`` (:mod:`rocketq.broker.schedule`);
* one store append per request (a batch is one append of all its records);
* the response: ``msgId`` (offset message ids, comma-joined for a batch), ``queueId``,
  ``queueOffset`` and the ``MSG_REGION`` / ``TRACE_ON`` fields, in the key order a Java broker
  writes them for the request's serialization;
* under sync flush, a producer waiting for the store (``WAIT`` not ``false``) is answered after
  the group commit's fsync: the handler returns at once and the fsync round's shared future
  writes every waiting response when it completes (no task per send, the loop never blocks);
  no fsync within ``sync_flush_timeout`` answers FLUSH_DISK_TIMEOUT (the message is stored, as
  in RocketMQ).

**Stored once (rocketq's extension).** A ``SEND_BATCH_MESSAGE`` whose header carries the field
``rqUniqWindow`` (seconds; RocketMQ's broker ignores fields it does not know) asks for its messages
to be stored once: a message whose ``UNIQ_KEY`` the topic already holds, stored within that
window, is dropped, found through the message index (the look-up ``QUERY_MESSAGE`` makes). The
answer's ``msgId`` lists only the records stored (empty, with ``queueOffset`` -1, when every one
was a copy). The check and the append run under one lock, so two copies sent at once are stored
once too. The Spark writer uses it for exactly-once writes (docs/spark.md).

Store failures are answers, not crashes: an oversized message MESSAGE_ILLEGAL, a full disk or a
store that stopped accepting writes SERVICE_NOT_AVAILABLE, another write error SYSTEM_ERROR.

A transaction's half message (``TRAN_MSG=true``) goes to ``RMQ_SYS_TRANS_HALF_TOPIC`` with its
real topic and queue in ``REAL_TOPIC`` / ``REAL_QID`` (:mod:`rocketq.broker.transactions`); the
answer names the half queue's offset, which the producer's END_TRANSACTION quotes back. With
``reject_transaction_message`` (RocketMQ's ``rejectTransactionMessage``) it is refused with
NO_PERMISSION instead.
"""

from __future__ import annotations

import functools
import logging
import random
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Final

from rocketq.broker.context import SendContext
from rocketq.broker.topics import PERM_RW
from rocketq.broker.transactions import TRANSACTION_TYPE_MASK, half_message_properties, is_half_message
from rocketq.errors import BrokerError, ConfigError, RemoteProtocolError, StoreError, StoreFullError
from rocketq.protocol.bodies import TopicConfig, TopicFilterType
from rocketq.protocol.codes import MQVersion, RequestCode, ResponseCode, SerializeType
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import (
    ConsumerSendMsgBackRequestHeader,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
)
from rocketq.protocol.message import (
    MessageExt,
    MessageSysFlag,
    batch_properties,
    batch_record_count,
    decode_message,
    encode_message,
    encode_stored_batch,
)
from rocketq.protocol.message_id import HostPort
from rocketq.protocol.properties import (
    MessageConst,
    java_hashmap_order,
    string_to_properties,
    tags_code,
)
from rocketq.protocol.topics import (
    DLQ_NUMS_PER_GROUP,
    RETRY_GROUP_TOPIC_PREFIX,
    RMQ_SYS_SCHEDULE_TOPIC,
    RMQ_SYS_TRANS_HALF_TOPIC,
    Perm,
    TopicSysFlag,
    dlq_topic,
    is_not_allowed_send_topic,
    is_writeable,
    retry_topic,
    validate_topic,
)
from rocketq.remoting import RemotingConnection
from rocketq.store import PutResult

from .common import parse_header, system_error

#: queue choices (its own generator: a library does not move the global ``random`` state)
_rng = random.Random()

__all__ = ["SendProcessor", "java_properties_string", "topic_not_exist_remark"]

log = logging.getLogger(__name__)

_CLUSTER = MessageConst.CLUSTER
_WAIT = MessageConst.WAIT
_DELAY = MessageConst.DELAY
_MULTI_TAGS = int(MessageSysFlag.MULTI_TAGS)
_V3_4_9 = int(MQVersion.V3_4_9)
_FAQ_HINT = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."  # FAQUrl.suggestTodo
#: The smallest stored record (a one-byte topic, no body, no properties, IPv4 hosts): what bounds
#: the messages a batch of ``maxMessageSize`` stored bytes can hold (RocketMQ's only batch bound).
_MIN_STORED_RECORD = 92
#: Records of a batch handled inline whatever its size (at most ~5 ms of the event loop).
_INLINE_RECORDS = 400
# Flags and codes as module constants: IntFlag arithmetic and enum member look-ups
# (``RequestCode.SEND_MESSAGE``) are Python-level calls, and every send made several.
_WRITE: Final = int(Perm.WRITE)
_V1_CODES: Final = frozenset({int(RequestCode.SEND_MESSAGE), int(RequestCode.SEND_REPLY_MESSAGE)})
_SEND_BATCH: Final = int(RequestCode.SEND_BATCH_MESSAGE)
_MULTI_TAG: Final = TopicFilterType.MULTI_TAG
_ROCKETMQ: Final = SerializeType.ROCKETMQ
UNIQ_WINDOW_FIELD: Final = "rqUniqWindow"
"""Header field of a batch send asking for its messages to be stored once (seconds of window)."""
MAX_UNIQ_WINDOW: Final = 7 * 24 * 3600
"""The longest window honoured (a week): older copies are looked for no further."""


@functools.lru_cache(maxsize=4096)
def _order(keys: tuple[str, ...], max_entries: int) -> tuple[str, ...]:
    return tuple(java_hashmap_order(keys, max_entries=max_entries))


def java_properties_string(properties: dict[str, str], max_entries: int = 0) -> str:
    """``MessageDecoder.messageProperties2String`` of a Java ``HashMap`` that was filled with
    ``properties`` in their dict order (and held at most ``max_entries`` entries at some point):
    the pairs in the map's iteration order. Orders are cached per key tuple, so the usual few
    property layouts cost one dict lookup each."""
    order = _order(tuple(properties), max(max_entries, len(properties)))
    return "\x02".join([f"{k}\x01{properties[k]}" for k in order])


#: A send request's header: SEND_MESSAGE's long keys or SEND_MESSAGE_V2's single letters, parsed
#: by the header's compiled reader (:meth:`~rocketq.protocol.headers.CommandHeader.from_ext_fields`).
SendHeader = SendMessageRequestHeader | SendMessageRequestHeaderV2


class SendProcessor:
    """The send handlers, over a :class:`~rocketq.broker.context.SendContext` (the broker)."""

    def __init__(self, broker: SendContext) -> None:
        self._b = broker
        cfg = broker.config
        self._cluster = cfg.broker_cluster_name
        self._region = cfg.region_id
        self._trace = "true" if cfg.trace_on else "false"
        self._id_prefix: str | None = None
        self._max_level = len(broker.delay_levels)
        self._delays_ms = [int(d * 1000) for d in broker.delay_levels]
        self._valid_topics: set[str] = set()
        self._hosts: dict[RemotingConnection, HostPort] = {}
        self._reject_transactions = cfg.reject_transaction_message
        self._max_size = broker.config.max_message_size
        self._once_lock = threading.Lock()

    def forget(self, conn: RemotingConnection) -> None:
        """Drop what is cached for a closed connection."""
        self._hosts.pop(conn, None)

    # ------------------------------------------------------------------ helpers

    def born_host(self, conn: RemotingConnection) -> HostPort:
        host = self._hosts.get(conn)
        if host is None:
            try:
                host = HostPort.parse(conn.remote_address)
            except ConfigError:
                host = HostPort("0.0.0.0", 0)
            self._hosts[conn] = host
        return host

    def msg_id(self, commit_log_offset: int) -> str:
        prefix = self._id_prefix
        if prefix is None:
            prefix = self._id_prefix = self._b.store_host.packed.hex().upper()
        return f"{prefix}{commit_log_offset:016X}"

    @staticmethod
    def _parse(request: RemotingCommand) -> SendHeader:
        if request.code in _V1_CODES:
            return parse_header(SendMessageRequestHeader, request)
        return parse_header(SendMessageRequestHeaderV2, request)

    def parse_and_check(self, conn: RemotingConnection, request: RemotingCommand) -> tuple[SendHeader, int]:
        """A send-shaped request's header (V1 or V2, by its code) and queue id, checked as a send
        is (``msgCheck``: topic name, permission, config - auto-created - and queue id, a negative
        one replaced by a random write queue). For the reply handler."""
        h = self._parse(request)
        return h, self._check_topic(h, conn)[1]

    def _check_topic(self, h: SendHeader, conn: RemotingConnection) -> tuple[TopicConfig, int]:
        """``msgCheck``: name, permission, config (auto-created) and queue id; returns the config
        and the queue to store in (a negative queue id picks a random write queue)."""
        b = self._b
        topic = h.topic
        if topic not in self._valid_topics:
            problem = validate_topic(topic)
            if problem is not None:
                raise system_error(problem)
            if is_not_allowed_send_topic(topic):
                raise BrokerError(
                    ResponseCode.NO_PERMISSION, f"Sending message to topic[{topic}] is forbidden."
                )
            if len(self._valid_topics) < 100_000:
                self._valid_topics.add(topic)
        config = b.topics.select(topic)
        if config is None:
            config = b.topics.resolve_for_send(
                topic,
                h.default_topic,
                h.default_topic_queue_nums,
                b.wall(),
                unit_mode=h.unit_mode,
                remote_addr=conn.remote_address,
            )
            if config is None:
                raise BrokerError(ResponseCode.TOPIC_NOT_EXIST, topic_not_exist_remark(topic))
        if not config.perm & _WRITE:
            raise BrokerError(ResponseCode.NO_PERMISSION, f"the topic[{topic}] sending message is forbidden")
        queue_id = h.queue_id
        valid = max(config.write_queue_nums, config.read_queue_nums)
        if queue_id >= valid:
            raise system_error(
                f"request queueId[{queue_id}] is illegal, {_describe(config)} Producer: {conn.remote_address}"
            )
        if queue_id < 0:
            queue_id = _rng.randrange(max(config.write_queue_nums, 1))
        return config, queue_id

    # ------------------------------------------------------------------ sends

    def send(
        self, conn: RemotingConnection, request: RemotingCommand
    ) -> RemotingCommand | Awaitable[RemotingCommand | None] | None:
        """Every producer send; returns the response, or ``None`` when it is answered later
        (after the flush, under sync flush), or an awaitable of either (a large batch)."""
        if self._b.is_slave:
            raise _slave_refuses()
        h = self._parse(request)
        config, queue_id = self._check_topic(h, conn)
        if h.batch or request.code == _SEND_BATCH:
            return self._send_batch(conn, request, h, queue_id)
        topic = h.topic
        props = string_to_properties(h.properties) if h.properties else {}
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            topic, queue_id = self._retry_or_dlq(request, h, queue_id)
        sys_flag = h.sys_flag
        if config.topic_filter_type == _MULTI_TAG:
            sys_flag |= _MULTI_TAGS
        half = is_half_message(props, sys_flag)
        if not half and sys_flag & TRANSACTION_TYPE_MASK == TRANSACTION_TYPE_MASK:
            # RocketMQ would store it where no consumer ever reads it
            remark = "the message is illegal: a rolled back transaction cannot be sent"
            raise BrokerError(ResponseCode.MESSAGE_ILLEGAL, remark)
        if half and self._reject_transactions:
            raise BrokerError(
                ResponseCode.NO_PERMISSION,
                f"the broker[{self._b.config.advertised_ip}] sending transaction message is forbidden",
            )
        max_entries = len(props) + (0 if _CLUSTER in props else 1)
        props[_CLUSTER] = self._cluster
        wait = props.get(_WAIT)
        store_topic, store_queue = topic, queue_id
        level = self._delay_level(props) if _DELAY in props and not half else 0
        if half:
            # TransactionalMessageBridge.parseHalfMessageInner: to the half topic, the real
            # place in the properties, the transaction bits cleared; the property string is
            # rebuilt from the whole map (WAIT included), as for a delayed message
            if wait is not None:
                del props[_WAIT]
                props[_WAIT] = wait
            half_message_properties(props, topic, queue_id)
            stored = java_properties_string(props, max_entries + 2)
            code = tags_code(props.get(MessageConst.TAGS))
            store_topic, store_queue = RMQ_SYS_TRANS_HALF_TOPIC, 0
            sys_flag &= ~TRANSACTION_TYPE_MASK
        elif level:
            # CommitLog.asyncPutMessage: to the schedule topic, the real place in properties;
            # the property string is rebuilt from the whole map (WAIT included).
            if wait is not None:
                del props[_WAIT]
                props[_WAIT] = wait
            props[MessageConst.REAL_TOPIC] = topic
            props[MessageConst.REAL_QID] = str(queue_id)
            stored = java_properties_string(props, max_entries + 2)
            code = self._b.wall_ms() + self._delays_ms[level - 1]
            store_topic, store_queue = RMQ_SYS_SCHEDULE_TOPIC, level - 1
        else:
            if wait is not None:
                del props[_WAIT]
            stored = java_properties_string(props, max_entries)
            code = tags_code(props.get(MessageConst.TAGS))
        if len(request.body) > self._max_size:
            raise _too_big("message body", len(request.body), self._max_size)
        record = self._encode(conn, h, store_topic, store_queue, sys_flag, stored, request.body)
        put = self._put(store_topic, store_queue, record, code, props)
        if level:
            self._b.schedule_kick()
        # As Java: the request's queue id, but the offset where the message went (the schedule
        # queue's for a delayed message).
        msg_id = self.msg_id(put.commit_log_offset)
        return self._respond(conn, request, put, queue_id, msg_id, wait != "false")

    def _delay_level(self, props: dict[str, str]) -> int:
        try:
            level = int(props[_DELAY])
        except ValueError:
            return 0
        return min(level, self._max_level) if level > 0 else 0

    def _retry_or_dlq(self, request: RemotingCommand, h: SendHeader, queue_id: int) -> tuple[str, int]:
        """``handleRetryAndDLQ``: a retry message past its maximum goes to the group's DLQ (a
        random queue of it); returns where the message goes."""
        b = self._b
        group = h.topic[len(RETRY_GROUP_TOPIC_PREFIX) :]
        config = b.groups.find(group, b.wall())
        if config is None:
            raise BrokerError(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {group}"
            )
        max_times = config.retry_max_times
        if request.version >= _V3_4_9 and h.max_reconsume_times is not None:
            max_times = h.max_reconsume_times
        if (h.reconsume_times or 0) >= max_times:
            b.topics.ensure_dlq_topic(group, b.wall())
            return dlq_topic(group), _rng.randrange(DLQ_NUMS_PER_GROUP)
        return h.topic, queue_id

    def _encode(
        self,
        conn: RemotingConnection,
        h: SendHeader,
        topic: str,
        queue_id: int,
        sys_flag: int,
        properties: str,
        body: bytes,
    ) -> bytes:
        try:
            return encode_message(
                topic=topic,
                body=body,
                properties=properties,
                queue_id=queue_id,
                flag=h.flag,
                sys_flag=sys_flag,
                born_timestamp=h.born_timestamp,
                born_host=self.born_host(conn),
                store_host=self._b.store_host,
                reconsume_times=h.reconsume_times or 0,
            )
        except ConfigError as exc:
            raise BrokerError(ResponseCode.MESSAGE_ILLEGAL, f"the message is illegal: {exc}") from None

    def put_record(
        self, topic: str, queue_id: int, record: bytes, code: int, props: Mapping[str, str] | None = None
    ) -> PutResult:
        """Append a record made by another part of the broker (transactions, replies) as a send
        is appended: size limit, statistics, held pulls woken by its tag and properties."""
        return self._put(topic, queue_id, record, code, props)

    def _put(
        self, topic: str, queue_id: int, record: bytes, code: int, props: Mapping[str, str] | None = None
    ) -> PutResult:
        b = self._b
        limit = b.config.max_message_size
        if len(record) > limit:
            raise BrokerError(
                ResponseCode.MESSAGE_ILLEGAL,
                f"the message is illegal: {len(record)} bytes stored, over the broker's maxMessageSize "
                f"of {limit} bytes",
            )
        try:
            # the tag code and properties reach the held pulls of the queue (their filters decide)
            put = b.store.put_message(topic, queue_id, record, code, props)
        except (StoreError, ConfigError, OSError) as exc:
            raise _store_failure(exc) from None
        b.stats.on_put(topic, 1, put.wrote_bytes, put.store_timestamp)
        return put

    def _send_batch(
        self, conn: RemotingConnection, request: RemotingCommand, h: SendHeader, queue_id: int
    ) -> RemotingCommand | Awaitable[RemotingCommand | None] | None:
        topic = h.topic
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            raise BrokerError(
                ResponseCode.MESSAGE_ILLEGAL, f"batch request does not support retry group {topic}"
            )
        if len(topic.encode()) > 127:
            raise BrokerError(ResponseCode.MESSAGE_ILLEGAL, "message topic length too long")
        header_props = string_to_properties(h.properties) if h.properties else {}
        if header_props.get(_DELAY, "0") not in ("", "0"):
            raise BrokerError(ResponseCode.MESSAGE_ILLEGAL, "a batch of messages cannot be delayed")
        if h.sys_flag & TRANSACTION_TYPE_MASK:
            raise BrokerError(ResponseCode.MESSAGE_ILLEGAL, "a batch of messages cannot be a transaction")
        max_entries = len(header_props) + (0 if _CLUSTER in header_props else 1)
        header_props[_CLUSTER] = self._cluster
        batch_props = java_properties_string(header_props, max_entries)
        wait = header_props.get(_WAIT) != "false"
        window = _uniq_window(request.ext_fields.get(UNIQ_WINDOW_FIELD))
        store = functools.partial(
            self._store_batch_once if window else self._store_batch,
            request.body,
            topic,
            queue_id,
            h.sys_flag,
            h.born_timestamp,
            self.born_host(conn),
            batch_props,
            **({"window": window} if window else {}),
        )
        # a batch costs by its records (about 12 µs each to decode, encode and append): a few
        # hundred are cheaper inline than handed to the worker thread, however large their bodies
        if (
            conn.offloads(len(request.body))
            and batch_record_count(request.body, _INLINE_RECORDS) > _INLINE_RECORDS
        ):
            # no turn: the batches of many producers are appended side by side, as small ones are
            return conn.large_request(
                request, lambda: self._large_batch(conn, request, topic, queue_id, store, wait), in_turn=False
            )
        put, ids = store()
        if put.message_count:
            self._b.stats.on_put(topic, put.message_count, put.wrote_bytes, put.store_timestamp)
        return self._respond(conn, request, put, queue_id, ids, wait)

    async def _large_batch(
        self,
        conn: RemotingConnection,
        request: RemotingCommand,
        topic: str,
        queue_id: int,
        store: Callable[[], tuple[PutResult, str]],
        wait: bool,
    ) -> RemotingCommand | None:
        """A batch over the offload threshold: decoded, encoded and appended on the worker thread
        (the store may be called from any thread), answered on the loop."""
        put, ids = await conn.off_loop(store)
        if put.message_count:
            self._b.stats.on_put(topic, put.message_count, put.wrote_bytes, put.store_timestamp)
        return self._respond(conn, request, put, queue_id, ids, wait)

    def _store_batch(
        self,
        body: bytes,
        topic: str,
        queue_id: int,
        sys_flag: int,
        born_timestamp: int,
        born_host: HostPort,
        batch_props: str,
        *,
        window: int = 0,
    ) -> tuple[PutResult, str]:
        """Decode a batch, encode its stored records, append them; the put and the ids of its
        messages. Thread-safe: touches only the store (thread-safe) and this call's values.
        With ``window`` (seconds), the records whose ``UNIQ_KEY`` the topic holds already are left
        out (see the module docstring); the caller holds the lock that makes it atomic."""
        limit = self._b.config.max_message_size
        if len(body) > limit:  # refused before any record is decoded
            raise _too_big("batch body", len(body), limit)
        # every stored record takes at least _MIN_STORED_RECORD bytes: a batch of more records
        # cannot pass the stored-size check below, so it is refused before any is decoded
        most = limit // _MIN_STORED_RECORD
        try:
            properties = batch_properties(body, max_messages=most)
            records = encode_stored_batch(
                body,
                topic=topic,
                queue_id=queue_id,
                sys_flag=sys_flag,
                born_timestamp=born_timestamp,
                born_host=born_host,
                store_timestamp=0,
                store_host=self._b.store_host,
                batch_properties=batch_props,
                max_messages=most,
            )
        except (RemoteProtocolError, ConfigError) as exc:
            raise BrokerError(ResponseCode.MESSAGE_ILLEGAL, f"the batch is illegal: {exc}") from None
        if not records:
            raise BrokerError(ResponseCode.MESSAGE_ILLEGAL, "the batch holds no message")
        total = sum(len(r) for r in records)
        if total > limit:
            raise BrokerError(
                ResponseCode.MESSAGE_ILLEGAL,
                f"the batch is illegal: {total} bytes stored, over the broker's maxMessageSize "
                f"of {limit} bytes",
            )
        if window:
            keep = self._not_stored(topic, properties, window)
            if len(keep) < len(records):
                if not keep:
                    return PutResult(-1, -1, 0, 0, 0, ()), ""
                records = [records[i] for i in keep]
                properties = [properties[i] for i in keep]
        tags = MessageConst.TAGS
        codes = [tags_code(p.get(tags)) for p in properties]
        try:
            put = self._b.store.put_messages(topic, queue_id, records, codes)
        except (StoreError, ConfigError, OSError) as exc:
            raise _store_failure(exc) from None
        return put, ",".join([self.msg_id(o) for o in put.commit_log_offsets])

    def _store_batch_once(self, *args: object, window: int) -> tuple[PutResult, str]:
        """:meth:`_store_batch` with copies left out, under the lock that makes the look-up and
        the append one step (two copies sent at once are stored once)."""
        with self._once_lock:
            return self._store_batch(*args, window=window)  # type: ignore[arg-type]

    def _not_stored(self, topic: str, properties: list[dict[str, str]], window: int) -> list[int]:
        """Indexes of the messages whose unique key ``topic`` does not hold from the last
        ``window`` seconds (nor an earlier message of the same batch)."""
        store = self._b.store
        now = int(time.time() * 1000)
        begin = now - window * 1000
        seen: set[str] = set()
        keep: list[int] = []
        for i, props in enumerate(properties):
            key = props.get(MessageConst.UNIQ_KEY)
            if key is None:
                keep.append(i)
                continue
            if key in seen or store.query_message(topic, key, 1, begin, now + 60_000).messages:
                continue
            seen.add(key)
            keep.append(i)
        return keep

    def _respond(
        self,
        conn: RemotingConnection,
        request: RemotingCommand,
        put: PutResult,
        queue_id: int,
        msg_id: str,
        wait: bool,
    ) -> RemotingCommand | None:
        if request.serialize_type == _ROCKETMQ:
            ext = {
                "msgId": msg_id,
                "queueId": str(queue_id),
                "queueOffset": str(put.queue_offset),
                "TRACE_ON": self._trace,
                "MSG_REGION": self._region,
            }
        else:
            ext = {
                "queueId": str(queue_id),
                "TRACE_ON": self._trace,
                "MSG_REGION": self._region,
                "msgId": msg_id,
                "queueOffset": str(put.queue_offset),
            }
        response = request.response(ext_fields=ext)
        if wait and self._b.replicates_sync:  # a sync master answers once a slave has it
            self._b.answer_when_replicated(put, conn, request, response)
            return None
        if put.durable is None or not wait:
            return response
        self._after_flush(conn, request, put, response)
        return None

    def _after_flush(
        self, conn: RemotingConnection, request: RemotingCommand, put: PutResult, response: RemotingCommand
    ) -> None:
        """Answer once the group commit's fsync covers the message (``None``: answered later).

        No task and no callback per send: the sends of one fsync round wait in one list that the
        round's completion answers (:meth:`~rocketq.broker.context.SendContext.answer_when_durable`)."""
        assert put.durable is not None
        self._b.answer_when_durable(put.durable, conn, request, response)

    # ------------------------------------------------------------------ send back (retries)

    def send_back(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand | None:
        """CONSUMER_SEND_MSG_BACK: re-store a message for ``%RETRY%<group>`` (delayed by level
        3 + its reconsume count, or the requested level), or for ``%DLQ%<group>`` once it was
        retried ``maxReconsumeTimes`` times (or the level is negative)."""
        b = self._b
        if b.is_slave:
            raise _slave_refuses()
        h = parse_header(ConsumerSendMsgBackRequestHeader, request)
        now = b.wall()
        group_config = b.groups.find(h.group, now)
        if group_config is None:
            raise BrokerError(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {h.group}"
            )
        if group_config.retry_queue_nums <= 0:
            return request.response()
        new_topic = retry_topic(h.group)
        queue_id = _rng.randrange(99_999_999) % group_config.retry_queue_nums
        sys_flag_topic = int(TopicSysFlag.FLAG_UNIT_SUB) if h.unit_mode else 0
        topic_config = b.topics.ensure_topic(
            new_topic, group_config.retry_queue_nums, PERM_RW, sys_flag_topic, now
        )
        if not is_writeable(topic_config.perm):
            raise BrokerError(
                ResponseCode.NO_PERMISSION, f"the topic[{new_topic}] sending message is forbidden"
            )
        msg = self._stored_message(h.offset)
        props = dict(msg.properties)
        max_entries = len(props)
        if MessageConst.RETRY_TOPIC not in props:
            props[MessageConst.RETRY_TOPIC] = msg.topic
        props[_WAIT] = "false"
        max_times = group_config.retry_max_times
        if request.version >= _V3_4_9 and h.max_reconsume_times is not None:
            max_times = h.max_reconsume_times
        if msg.reconsume_times >= max_times or h.delay_level < 0:
            new_topic, queue_id, delay = dlq_topic(h.group), 0, 0
            b.topics.ensure_dlq_topic(h.group, now)
        else:
            delay = min(h.delay_level or 3 + msg.reconsume_times, self._max_level)
        props[_DELAY] = str(delay)
        if not props.get(MessageConst.ORIGIN_MESSAGE_ID):
            props[MessageConst.ORIGIN_MESSAGE_ID] = msg.offset_msg_id
        topic, qid, code = self._retry_target(props, new_topic, queue_id, delay)
        put = self._put(topic, qid, self._retry_record(msg, h.offset, topic, qid, props, max_entries), code)
        if delay > 0:
            b.schedule_kick()
        log.debug(
            "send back of %s for group %s -> %s (delay level %d)",
            msg.offset_msg_id,
            h.group,
            new_topic,
            delay,
        )
        response = request.response()
        if put.durable is None:
            return response
        self._after_flush(conn, request, put, response)
        return None

    def _stored_message(self, offset: int) -> MessageExt:
        """The message stored at commit-log ``offset`` (a send back names it so)."""
        data = self._b.store.read_message_bytes(offset)
        if data is None:
            raise system_error(f"look message by offset failed, {offset}")
        try:
            return decode_message(data, decompress=False)[0]
        except RemoteProtocolError as exc:
            raise system_error(f"look message by offset failed, {offset}: {exc}") from None

    def _retry_target(
        self, props: dict[str, str], new_topic: str, queue_id: int, delay: int
    ) -> tuple[str, int, int]:
        """Where a sent-back message is stored and its tags code: the schedule topic's queue of
        its delay level (its real topic and queue in ``props``, its code the time it is due), or
        ``new_topic`` itself when it is not delayed."""
        if delay > 0:
            props[MessageConst.REAL_TOPIC] = new_topic
            props[MessageConst.REAL_QID] = str(queue_id)
            return RMQ_SYS_SCHEDULE_TOPIC, delay - 1, self._b.wall_ms() + self._delays_ms[delay - 1]
        return new_topic, queue_id, tags_code(props.get(MessageConst.TAGS))

    @staticmethod
    def _retry_record(
        msg: MessageExt, offset: int, topic: str, qid: int, props: dict[str, str], max_entries: int
    ) -> bytes:
        """The stored record of a sent-back message: its body, flags and birth as they were, its
        new properties, one more reconsume."""
        stored = java_properties_string(props, max(max_entries, len(props)))
        try:
            return encode_message(
                topic=topic,
                body=msg.body,
                properties=stored,
                queue_id=qid,
                flag=msg.flag,
                sys_flag=msg.sys_flag,
                born_timestamp=msg.born_timestamp,
                born_host=msg.born_host,
                store_host=msg.store_host,
                reconsume_times=msg.reconsume_times + 1,
            )
        except ConfigError as exc:
            raise system_error(f"cannot re-store message at offset {offset}: {exc}") from None


def _uniq_window(raw: str | None) -> int:
    """Seconds of a batch's ``rqUniqWindow`` field (0: absent or not a positive number)."""
    if not raw:
        return 0
    try:
        return max(0, min(int(raw), MAX_UNIQ_WINDOW))
    except ValueError:
        return 0


def _slave_refuses() -> BrokerError:
    """RocketMQ's store in role SLAVE refuses every put (SERVICE_NOT_AVAILABLE)."""
    return BrokerError(
        ResponseCode.SERVICE_NOT_AVAILABLE, "this broker is a slave: send to its master (brokerId 0)"
    )


def topic_not_exist_remark(topic: str, *, pull: bool = False) -> str:
    """RocketMQ's remark for a send to a topic the broker does not have and could not auto-create
    (``AbstractSendMessageProcessor.msgCheck``), or for a pull (``PullMessageProcessor``, which
    puts a space before the FAQ hint)."""
    return f"topic[{topic}] not exist, apply first please!{' ' if pull else ''}{_FAQ_HINT}"


def _describe(config: TopicConfig) -> str:
    return (
        f"TopicConfig [topicName={config.topic_name}, readQueueNums={config.read_queue_nums}, "
        f"writeQueueNums={config.write_queue_nums}, perm={config.perm}, "
        f"topicFilterType={config.topic_filter_type.name}, topicSysFlag={config.topic_sys_flag}, "
        f"order={'true' if config.order else 'false'}]"
    )


def _too_big(what: str, size: int, limit: int) -> BrokerError:
    """MESSAGE_ILLEGAL for a body over ``maxMessageSize``, as RocketMQ refuses one."""
    return BrokerError(
        ResponseCode.MESSAGE_ILLEGAL,
        f"the message is illegal: the {what} is {size} bytes, over the broker's maxMessageSize of "
        f"{limit} bytes",
    )


def _store_failure(exc: Exception) -> BrokerError:
    """The answer to a failed append. The store's and the OS's error texts (paths, errno text)
    go to the log, not to the peer."""
    if isinstance(exc, ConfigError):
        return BrokerError(ResponseCode.MESSAGE_ILLEGAL, f"the message is illegal: {exc}")
    if isinstance(exc, StoreFullError):
        log.warning("store append refused: %s", exc)
        return BrokerError(
            ResponseCode.SERVICE_NOT_AVAILABLE, "service not available now: the broker's disk is full"
        )
    if isinstance(exc, StoreError) and ("closed" in str(exc) or "accepting" in str(exc)):
        return BrokerError(
            ResponseCode.SERVICE_NOT_AVAILABLE,
            "service not available now: the broker's store is not accepting messages",
        )
    log.error("store append failed: %s", exc)
    return BrokerError(
        ResponseCode.SYSTEM_ERROR, "the message could not be stored (the broker's log has the details)"
    )
