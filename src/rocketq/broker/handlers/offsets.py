"""Offsets and message look-ups: QUERY_CONSUMER_OFFSET, UPDATE_CONSUMER_OFFSET, GET_MAX_OFFSET,
GET_MIN_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP, GET_EARLIEST_MSG_STORETIME and VIEW_MESSAGE_BY_ID
(RocketMQ 4.9.4's ``ConsumerManageProcessor`` and ``QueryMessageProcessor``/``AdminBrokerProcessor``).

QUERY_CONSUMER_OFFSET for a queue the group never committed: RocketMQ answers offset 0 when the
queue still starts at offset 0 and its first message is "in memory" (it always is here: rocketq
reads through the page cache), else QUERY_NOT_FOUND so the client applies its
consume-from-where. rocketq does the same with "still starts at 0" as the whole test.

QUERY_MESSAGE (by key, or by unique key with ``_UNIQUE_KEY_QUERY=true``) goes through the store's
message index (:mod:`rocketq.store.index`): RocketMQ's ``QueryMessageProcessor``. A unique-key
query returns up to ``defaultQueryMaxNum`` (32) messages, a key query up to ``maxNum``; both at
most ``maxMsgsNumBatch`` (64). Found messages are returned as stored records in commit-log order
with the index's last update (time stamp and commit-log offset) in the header; none answers
QUERY_NOT_FOUND with RocketMQ's remark and both fields 0, as Java does. VIEW_MESSAGE_BY_ID reads
the record at the offset of an offset message id.
"""

from __future__ import annotations

import asyncio

from rocketq.broker.context import OffsetContext
from rocketq.broker.view_fence import commit_allowed, current_view
from rocketq.protocol.calls import VIEW_FIELD
from rocketq.protocol.codes import ResponseCode
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
from rocketq.remoting import RemotingConnection

from .common import parse_header, system_error

__all__ = ["OffsetProcessor"]

_UNIQUE_KEY_QUERY = "_UNIQUE_KEY_QUERY"  # MixAll.UNIQUE_MSG_QUERY_FLAG


class OffsetProcessor:
    """Consumer offsets and queue bounds."""

    def __init__(self, broker: OffsetContext) -> None:
        self._b = broker

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
        b = self._b
        offsets = b.store.consumer_offsets
        their_view = request.ext_fields.get(VIEW_FIELD)  # a rocketq consumer's (the view fence)
        if their_view is not None:
            stale = their_view != current_view(b.consumers, b.topics, h.consumer_group, h.topic)
            if not commit_allowed(offsets, h.consumer_group, h.topic, h.queue_id, h.commit_offset, stale):
                return request.response(
                    ext_fields={}, remark="not applied: a commit on a stale view may not move the offset back"
                )
        offsets.commit_offset(h.consumer_group, h.topic, h.queue_id, h.commit_offset)
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
        """The look-up runs in a worker thread (it reads the index and the records it names from
        mapped files, which may fault pages in): the loop keeps serving."""
        h = parse_header(QueryMessageRequestHeader, request)
        store = self._b.store
        max_num = h.max_num
        if request.ext_fields.get(_UNIQUE_KEY_QUERY) == "true":
            max_num = store.config.default_query_max_num
        result = await asyncio.to_thread(
            store.query_message, h.topic, h.key, max_num, h.begin_timestamp, h.end_timestamp
        )
        if not result.messages:
            ext = QueryMessageResponseHeader(
                index_last_update_timestamp=0, index_last_update_phyoffset=0
            ).to_ext_fields()
            return request.response(
                code=ResponseCode.QUERY_NOT_FOUND,
                remark="can not find message, maybe time range not correct",
                ext_fields=ext,
            )
        ext = QueryMessageResponseHeader(
            index_last_update_timestamp=result.index_last_update_timestamp,
            index_last_update_phyoffset=result.index_last_update_phyoffset,
        ).to_ext_fields()
        return request.response(ext_fields=ext, body=b"".join(result.messages))

    def view_message(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        h = parse_header(ViewMessageRequestHeader, request)
        data = self._b.store.read_message_bytes(h.offset)
        if data is None:
            raise system_error(f"can not find message by the offset, {h.offset}")
        return request.response(body=data)
