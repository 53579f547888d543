"""Message look-ups: by key in a time range, by message id (offset id or producer's id), a
message's trace, a queue read from an offset as the tools' group, and a subscription check."""

from __future__ import annotations

import asyncio
import logging
import os
import time

from rocketq.admin.brokers import BrokerAdmin
from rocketq.admin.monitoring import (
    TOOLS_CONSUMER_GROUP,
    MessageTrace,
    QueueRead,
    trace_events,
)
from rocketq.admin.values import _JAVA_LONG_MAX
from rocketq.client.consumer.selector import MessageSelector, subscription_of
from rocketq.client.trace import CLIENT_ID_PROPERTY
from rocketq.client.validators import check_group, check_topic
from rocketq.errors import (
    BrokerError,
    ConfigError,
    RemoteProtocolError,
    RocketQError,
    UnknownTopicError,
)
from rocketq.models import MessageQueue, PullStatus
from rocketq.protocol import calls
from rocketq.protocol.codes import MASTER_ID, PullSysFlag
from rocketq.protocol.headers import PullMessageRequestHeader
from rocketq.protocol.message import MessageExt, decode_messages
from rocketq.protocol.message_id import parse_offset_msg_id, parse_uniq_id
from rocketq.protocol.topics import is_retry_or_dlq_topic, is_system_topic
from rocketq.protocol.trace import (
    RMQ_SYS_TRACE_TOPIC,
    TraceContext,
    decode_trace,
)

__all__ = ["MessageAdmin"]

logger = logging.getLogger("rocketq.admin.core")  # the admin's one logger name, whichever part logs


class MessageAdmin(BrokerAdmin):
    """Message calls of :class:`~rocketq.admin.core.AsyncAdmin` (see the module docstring)."""

    async def query_message(
        self,
        topic: str,
        key: str,
        begin: int | None = None,
        end: int | None = None,
        max_num: int = 64,
    ) -> list[MessageExt]:
        """Messages of ``topic`` with ``key`` among their keys, stored between ``begin`` and
        ``end`` (epoch ms; default: any time), from every broker of the topic's route, sorted by
        store time (QUERY_MESSAGE through the brokers' message index, as ``mqadmin
        queryMsgByKey`` and Java's ``MQAdminImpl.queryMessage`` ask it). At most ``max_num``
        come from each broker, the newest (a broker answers at most 64). None found is ``[]``.
        The index keeps store times to the second (as RocketMQ's): a message counts as stored
        at the start of its second, so a range that begins within that second misses it; give
        ranges a second to spare."""
        check_topic(topic)
        if not key or not key.strip():
            raise ConfigError("a query needs a key")
        if max_num < 1:
            raise ConfigError(f"max_num must be positive, got {max_num}")
        begin_ms = 0 if begin is None else begin
        end_ms = _JAVA_LONG_MAX if end is None else end
        if begin_ms < 0 or end_ms < begin_ms:
            raise ConfigError(f"the time range is empty: begin {begin_ms} is after end {end_ms}")
        return await self._query(topic, key, unique=False, max_num=max_num, begin_ms=begin_ms, end_ms=end_ms)

    async def view_message(self, msg_id: str, *, topic: str | None = None) -> list[MessageExt]:
        """The stored message(s) with ``msg_id``, as ``mqadmin queryMsgById`` finds them:

        * an **offset message id** (the broker's: its address and commit-log offset) is read at
          that broker with VIEW_MESSAGE_BY_ID, when the broker is one of the cluster's;
        * a **producer's unique id** (``UNIQ_KEY``, the ``msg_id`` a send returns) is looked up
          with QUERY_MESSAGE on the unique key (``_UNIQUE_KEY_QUERY``, from a second before the
          time the id holds) in ``topic``, on every broker of its route; without ``topic``, in
          every topic of every master broker but RocketMQ's own (a retry or dead-letter topic
          is searched: a message consumed with failures is stored there again, same id).

        Both ids are 32 hex digits for IPv4 hosts, so an id is tried both ways. The result is
        every stored copy found, earliest first (one, usually; Java's ``viewMessage`` returns
        the earliest); ``[]`` when none is."""
        msg_id = msg_id.strip().upper()
        if len(msg_id) not in (32, 56) or any(c not in "0123456789ABCDEF" for c in msg_id):
            raise ConfigError(
                f"{msg_id!r} is not a message id: an offset message id or a producer's message id is "
                "32 hex digits (56 for IPv6 hosts)"
            )
        if topic is not None:
            check_topic(topic)
        found = await self._view_offset_id(msg_id)
        if found is not None:
            return [found]
        try:
            begin = parse_uniq_id(msg_id).approx_timestamp(int(time.time() * 1000)) - 1000
        except RocketQError:
            return []  # neither an offset id of this cluster nor a producer's id
        if topic is not None:
            return await self._query(topic, msg_id, unique=True, begin_ms=max(begin, 0))
        return await self._query_everywhere(msg_id, max(begin, 0))

    async def _view_offset_id(self, msg_id: str) -> MessageExt | None:
        """The message an offset id names, when it names one of the cluster's brokers."""
        try:
            host, offset = parse_offset_msg_id(msg_id)
        except RocketQError:
            return None
        addr = str(host)
        known = {
            a
            for bd in (await self.cluster_info()).broker_addr_table.values()
            for a in bd.broker_addrs.values()
        }
        if addr not in known:
            return None
        try:
            found = await self._call(addr, calls.view_message_by_id(offset))
        except (BrokerError, RemoteProtocolError):
            return None  # no record starts there: not an offset id after all
        return found if found.offset_msg_id == msg_id else None

    async def _query_everywhere(self, msg_id: str, begin_ms: int) -> list[MessageExt]:
        """QUERY_MESSAGE of a unique id in every user, retry and dead-letter topic of every master
        (topics from each broker's GET_ALL_TOPIC_CONFIG; 16 queries in flight)."""
        limit = asyncio.Semaphore(16)

        async def ask(addr: str, topic: str) -> list[MessageExt]:
            async with limit:
                call = calls.query_message(topic, msg_id, unique=True, begin_ms=begin_ms)
                return await self._call(addr, call)

        asks = []
        for addr in (await self.master_addrs()).values():
            for topic in await self.topic_configs(addr):
                if not is_system_topic(topic) or is_retry_or_dlq_topic(topic):
                    asks.append(ask(addr, topic))
        found = [m for batch in await asyncio.gather(*asks) for m in batch]
        return sorted(found, key=lambda m: (m.store_timestamp, m.topic, m.queue_id, m.queue_offset))

    async def _query(
        self,
        topic: str,
        key: str,
        *,
        unique: bool,
        max_num: int = 32,
        begin_ms: int = 0,
        end_ms: int = _JAVA_LONG_MAX,
    ) -> list[MessageExt]:
        route = await self.topic_route(topic)
        found: list[MessageExt] = []
        for bd in route.broker_datas:
            addr = bd.broker_addrs.get(MASTER_ID)
            if addr is not None:
                call = calls.query_message(
                    topic, key, unique=unique, max_num=max_num, begin_ms=begin_ms, end_ms=end_ms
                )
                found.extend(await self._call(addr, call))
        return sorted(found, key=lambda m: (m.store_timestamp, m.queue_id, m.queue_offset))

    async def message_trace(
        self, msg_id: str, *, topic: str | None = None, trace_topic: str = RMQ_SYS_TRACE_TOPIC
    ) -> MessageTrace:
        """The trace of the message ``msg_id`` (RocketMQ dashboard's message trace): the records
        traced clients published about it to ``trace_topic`` - sent (by which producer group,
        to which broker, how long it took), transaction ends, consumed (by which group and
        client, when, how long, how it ended, which retry) - found through the index (trace
        messages are keyed by the ids they trace) and decoded from RocketMQ's trace format
        (:mod:`rocketq.protocol.trace`); and the message itself as stored, when it can be read
        (``topic`` helps for a producer's id: see :meth:`view_message`). An offset id is turned
        into the producer's id the records name. No record is an empty ``events``."""
        stored = await self.view_message(msg_id, topic=topic)
        message = stored[0] if stored else None
        key = message.msg_id if message is not None else msg_id.strip().upper()
        try:
            traces = await self._query(trace_topic, key, unique=False, max_num=64)
        except UnknownTopicError:
            traces = []  # nothing was ever traced in this cluster
        records: list[tuple[TraceContext, str]] = []
        for t in traces:
            client = t.properties.get(CLIENT_ID_PROPERTY) or t.born_host.ip
            try:
                contexts = decode_trace(t.body)
            except RemoteProtocolError as exc:
                logger.warning("trace message %s is not readable: %s", t.msg_id, exc)
                continue
            records.extend((ctx, client) for ctx in contexts)
        events = trace_events(records, key)
        if message is None and topic is None:
            sent = next((e for e in events if e.kind == "sent" and e.topic), None)
            if sent is not None:  # the records name the topic: read the message there
                found = await self.view_message(key, topic=sent.topic)
                message = found[0] if found else None
        return MessageTrace(key, trace_topic, message, tuple(events))

    async def check_subscription(self, group: str, topic: str, selector: MessageSelector | str) -> None:
        """Ask every master of ``topic``'s route whether it can serve ``group``'s subscription
        (CHECK_CLIENT_CONFIG, as a consumer asks at start): raises the refusal (SQL92 on a
        broker without ``enablePropertyFilter``, or an expression the broker cannot parse), so a
        tool can say so before it changes anything."""
        check_group(group)
        sub = subscription_of(topic, selector, sub_version=int(time.time() * 1000))
        if sub.expression_type in (None, "", "TAG"):
            return
        route = await self.topic_route(topic)
        for bd in route.broker_datas:
            addr = bd.broker_addrs.get(MASTER_ID)
            if addr is not None:
                await self._call(addr, calls.check_client_config(group, f"rocketq-admin@{os.getpid()}", sub))

    async def read_queue(self, mq: MessageQueue, offset: int, max_nums: int = 32) -> QueueRead:
        """Up to ``max_nums`` messages of queue ``mq`` from ``offset`` (a pull as the tools' group
        ``TOOLS_CONSUMER``, which commits nothing), with where to read next and the queue's bounds."""
        addr = await self._queue_master(mq)
        header = PullMessageRequestHeader(
            consumer_group=TOOLS_CONSUMER_GROUP,
            topic=mq.topic,
            queue_id=mq.queue_id,
            queue_offset=offset,
            max_msg_nums=max_nums,
            sys_flag=int(PullSysFlag.SUBSCRIPTION),
            commit_offset=0,
            suspend_timeout_millis=0,
            subscription="*",
            sub_version=0,
            expression_type="TAG",
        )
        result = await self._call(addr, calls.pull_message(header))
        messages = decode_messages(result.body) if result.status is PullStatus.FOUND else []
        return QueueRead(
            tuple(messages),
            result.next_begin_offset,
            result.min_offset,
            result.max_offset,
            in_range=result.status is not PullStatus.OFFSET_ILLEGAL and offset >= result.min_offset,
        )

    async def offset_at_time(self, mq: MessageQueue, timestamp_ms: int) -> int:
        """The offset in queue ``mq`` of the message stored at ``timestamp_ms`` or nearest to it
        (SEARCH_OFFSET_BY_TIMESTAMP, RocketMQ's ``searchOffset``; 0 for an empty queue)."""
        addr = await self._queue_master(mq)
        return await self._call(addr, calls.search_offset(mq, timestamp_ms))

    async def _queue_master(self, mq: MessageQueue) -> str:
        """The master of ``mq``'s broker; a queue id the route does not have is a ConfigError."""
        route = await self.topic_route(mq.topic)
        qd = next((q for q in route.queue_datas if q.broker_name == mq.broker_name), None)
        addr = next(
            (bd.broker_addrs.get(MASTER_ID) for bd in route.broker_datas if bd.broker_name == mq.broker_name),
            None,
        )
        if qd is None or addr is None:
            names = sorted(q.broker_name for q in route.queue_datas if q.broker_name)
            raise ConfigError(
                f"topic {mq.topic} has no queue on broker {mq.broker_name} "
                f"(its brokers: {', '.join(names) or 'none'})"
            )
        count = max(qd.read_queue_nums, qd.write_queue_nums)
        if not 0 <= mq.queue_id < count:
            held = f"queues 0..{count - 1}" if count else "no queue"
            raise ConfigError(
                f"queue {mq.queue_id} does not exist: topic {mq.topic} has {held} on {mq.broker_name}"
            )
        return addr

    async def message_at(self, mq: MessageQueue, offset: int) -> MessageExt | None:
        """The message at ``offset`` of queue ``mq`` (a pull of one message); ``None`` past the
        queue's last message. An offset below the queue's first message raises
        :class:`~rocketq.errors.ConfigError` with the queue's bounds."""
        read = await self.read_queue(mq, offset, 1)
        if read.messages:
            return read.messages[0]
        if not read.in_range:
            raise ConfigError(
                f"offset {offset} is outside queue {mq.short}: it holds offsets "
                f"{read.min_offset}..{max(read.max_offset - 1, read.min_offset)}"
            )
        return None
