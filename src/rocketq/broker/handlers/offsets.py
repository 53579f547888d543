"""Offsets and message look-ups: QUERY_CONSUMER_OFFSET, UPDATE_CONSUMER_OFFSET, GET_MAX_OFFSET,
GET_MIN_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP, GET_EARLIEST_MSG_STORETIME and VIEW_MESSAGE_BY_ID
(RocketMQ 4.9.4's ``ConsumerManageProcessor`` and ``QueryMessageProcessor``/``AdminBrokerProcessor``).

QUERY_CONSUMER_OFFSET for a queue the group never committed: RocketMQ answers offset 0 when the
queue still starts at offset 0 and its first message is "in memory" (it always is here: rocketq
reads through the page cache), else QUERY_NOT_FOUND so the client applies its
consume-from-where. rocketq does the same with "still starts at 0" as the whole test.

QUERY_MESSAGE (by key, or by unique key with ``_UNIQUE_KEY_QUERY=true``): RocketMQ looks keys up
in its hash index files; rocketq keeps no index yet and scans the topic's queues instead, from
the first message stored at ``beginTimestamp`` on, reading properties only, at most
:data:`QUERY_SCAN_LIMIT` messages per query - cheap for the admin tools' occasional look-ups,
not meant for high rates. Matches are returned as stored records, as RocketMQ does, up to
``maxNum`` (32 for a unique key); none answers QUERY_NOT_FOUND with RocketMQ's remark.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import (
    GetEarliestMsgStoretimeRequestHeader,
    GetMaxOffsetRequestHeader,
    GetMinOffsetRequestHeader,
    QueryConsumerOffsetRequestHeader,
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
    SearchOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
    ViewMessageRequestHeader,
)
from rocketq.protocol.message import decode_messages
from rocketq.protocol.properties import KEY_SEPARATOR, MessageConst
from rocketq.remoting import RemotingConnection

from .common import parse_header, system_error

if TYPE_CHECKING:
    from rocketq.broker.server import Broker

__all__ = ["QUERY_SCAN_LIMIT", "OffsetProcessor"]

QUERY_SCAN_LIMIT = 100_000
"""Most messages one QUERY_MESSAGE reads (rocketq scans instead of keeping an index)."""
_UNIQUE_KEY_QUERY = "_UNIQUE_KEY_QUERY"  # MixAll.UNIQUE_MSG_QUERY_FLAG
_UNIQUE_MAX_NUM = 32  # defaultQueryMaxNum
_MAX_MSGS_NUM_BATCH = 64  # maxMsgsNumBatch


class OffsetProcessor:
    """Consumer offsets and queue bounds."""

    def __init__(self, broker: Broker) -> None:
        self._b = broker

    def handlers(self) -> dict[int, object]:
        return {
            RequestCode.QUERY_CONSUMER_OFFSET: self.query_consumer_offset,
            RequestCode.UPDATE_CONSUMER_OFFSET: self.update_consumer_offset,
            RequestCode.GET_MAX_OFFSET: self.max_offset,
            RequestCode.GET_MIN_OFFSET: self.min_offset,
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: self.search_offset,
            RequestCode.GET_EARLIEST_MSG_STORETIME: self.earliest_store_time,
            RequestCode.VIEW_MESSAGE_BY_ID: self.view_message,
            RequestCode.QUERY_MESSAGE: self.query_message,
        }

    def query_consumer_offset(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        h = parse_header(QueryConsumerOffsetRequestHeader, request)
        store = self._b.store
        offset = store.consumer_offsets.query_offset(h.consumer_group, h.topic, h.queue_id)
        if offset >= 0:
            return request.response(ext_fields={"offset": str(offset)})
        if store.min_offset(h.topic, h.queue_id) <= 0:
            return request.response(ext_fields={"offset": "0"})
        return request.response(
            code=ResponseCode.QUERY_NOT_FOUND,
            remark="Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first",
            ext_fields={},
        )

    def update_consumer_offset(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        h = parse_header(UpdateConsumerOffsetRequestHeader, request)
        self._b.store.consumer_offsets.commit_offset(h.consumer_group, h.topic, h.queue_id, h.commit_offset)
        return request.response(ext_fields={})

    def max_offset(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        h = parse_header(GetMaxOffsetRequestHeader, request)
        return request.response(ext_fields={"offset": str(self._b.store.max_offset(h.topic, h.queue_id))})

    def min_offset(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        h = parse_header(GetMinOffsetRequestHeader, request)
        return request.response(ext_fields={"offset": str(self._b.store.min_offset(h.topic, h.queue_id))})

    def search_offset(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        h = parse_header(SearchOffsetRequestHeader, request)
        offset = self._b.store.offset_by_time(h.topic, h.queue_id, h.timestamp)
        return request.response(ext_fields={"offset": str(offset)})

    def earliest_store_time(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        h = parse_header(GetEarliestMsgStoretimeRequestHeader, request)
        ts = self._b.store.earliest_message_time(h.topic, h.queue_id)
        return request.response(ext_fields={"timestamp": str(ts)})

    async def query_message(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        """The scan runs in a worker thread (the store is thread-safe): the loop keeps serving."""
        h = parse_header(QueryMessageRequestHeader, request)
        unique = request.ext_fields.get(_UNIQUE_KEY_QUERY) == "true"
        max_num = _UNIQUE_MAX_NUM if unique else min(max(h.max_num, 1), _MAX_MSGS_NUM_BATCH)
        found = await asyncio.to_thread(self._scan, h, unique, max_num)
        store = self._b.store
        ext = QueryMessageResponseHeader(
            index_last_update_timestamp=max(self._b.stats.last_put_ms, 0),
            index_last_update_phyoffset=store.commit_log_max_offset,
        ).to_ext_fields()
        if not found:
            return request.response(
                code=ResponseCode.QUERY_NOT_FOUND,
                remark="can not find message, maybe time range not correct",
                ext_fields=ext,
            )
        return request.response(ext_fields=ext, body=b"".join(found))

    def _scan(self, h: QueryMessageRequestHeader, unique: bool, max_num: int) -> list[bytes]:
        store = self._b.store
        found: list[bytes] = []
        scanned = 0
        for queue_id in store.queue_ids(h.topic):
            offset = (
                store.offset_by_time(h.topic, queue_id, h.begin_timestamp) if h.begin_timestamp > 0 else 0
            )
            offset = max(offset, store.min_offset(h.topic, queue_id))
            end = store.max_offset(h.topic, queue_id)
            while offset < end and len(found) < max_num and scanned < QUERY_SCAN_LIMIT:
                result = store.get_messages(h.topic, queue_id, offset, 32)
                if not result.message_count:
                    break
                for msg in decode_messages(result.data, read_body=False):
                    scanned += 1
                    if not h.begin_timestamp <= msg.store_timestamp <= h.end_timestamp:
                        continue
                    props = msg.properties
                    hit = (
                        props.get(MessageConst.UNIQ_KEY) == h.key
                        if unique
                        else h.key in (props.get(MessageConst.KEYS) or "").split(KEY_SEPARATOR)
                    )
                    if hit and len(found) < max_num:
                        data = store.read_message_bytes(msg.commit_log_offset)
                        if data is not None:
                            found.append(data)
                offset = result.next_begin_offset
        return found

    def view_message(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        h = parse_header(ViewMessageRequestHeader, request)
        data = self._b.store.read_message_bytes(h.offset)
        if data is None:
            raise system_error(f"can not find message by the offset, {h.offset}")
        return request.response(body=data)
