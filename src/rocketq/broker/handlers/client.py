"""Client management: HEART_BEAT, UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP, CHECK_CLIENT_CONFIG,
LOCK_BATCH_MQ and UNLOCK_BATCH_MQ (RocketMQ 4.9.4's ``ClientManageProcessor`` and the lock part of
``AdminBrokerProcessor``), over the consumer and producer registries and the lock table.

A heartbeat or an unregistration that changes a group's members or subscriptions makes the
broker send NOTIFY_CONSUMER_IDS_CHANGED (oneway, header ``consumerGroup``) to every member's
connection; as in RocketMQ the notices go out before the heartbeat's own response.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Iterator
from dataclasses import replace
from typing import TypeVar

from rocketq.broker.consumers import Changes, apply_heartbeat, apply_unregister_client, check_heartbeat
from rocketq.broker.context import ClientContext
from rocketq.broker.filter import Sql92Error, is_tag_type
from rocketq.errors import BrokerError, RemoteProtocolError
from rocketq.models import MessageQueue
from rocketq.protocol.bodies import (
    CheckClientRequestBody,
    GetConsumerListByGroupResponseBody,
    HeartbeatData,
    LockBatchRequestBody,
    LockBatchResponseBody,
    SubscriptionData,
    UnlockBatchRequestBody,
)
from rocketq.protocol.calls import LEASE_FIELD, VIEW_FIELD, VIEW_QUEUES_FIELD, VIEW_TOPIC_FIELD, view_stamp
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import GetConsumerListByGroupRequestHeader, UnregisterClientRequestHeader
from rocketq.remoting import RemotingConnection

from .common import parse_body, parse_header, system_error, with_body
from .pull import property_filter_disabled_remark, selector_of

__all__ = ["ClientProcessor"]

log = logging.getLogger(__name__)


def _expression_error(sub: SubscriptionData) -> Sql92Error | None:
    """Why the broker cannot compile the (non-tag) expression of ``sub``, or ``None``."""
    try:
        selector_of(sub.expression_type, sub.sub_string)
    except Sql92Error as exc:
        return exc
    return None


class ClientProcessor:
    """Heartbeats, unregistrations, group membership queries and queue locks."""

    def __init__(self, broker: ClientContext) -> None:
        self._b = broker
        self._max_json = broker.config.remoting.max_nonstandard_json

    def _answer_after(
        self, changes: Changes[RemotingConnection], response: RemotingCommand
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        if not changes.notifications():
            return response

        async def notify_then_answer() -> RemotingCommand:
            await self._b.notify_groups(changes)
            return response

        return notify_then_answer()

    def heartbeat(
        self, conn: RemotingConnection, request: RemotingCommand
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        if conn.offloads(len(request.body)):
            return conn.large_request(request, lambda: self._large_heartbeat(conn, request))
        data = parse_body(HeartbeatData, request, "HEART_BEAT", self._max_json)
        return self._answer_after(self._apply(conn, request, data), request.response())

    def _apply(
        self, conn: RemotingConnection, request: RemotingCommand, data: HeartbeatData
    ) -> Changes[RemotingConnection]:
        b = self._b
        try:
            changes = apply_heartbeat(
                data,
                conn,
                conn.remote_address,
                request.language.name,
                request.version,
                b.wall(),
                consumers=b.consumers,
                producers=b.producers,
                topics=b.topics,
                groups=b.groups,
            )
        except RemoteProtocolError as exc:
            raise system_error(f"HEART_BEAT: {exc}") from None
        for consumer in data.consumer_data_set:
            for sub in consumer.subscription_data_set:
                if not is_tag_type(sub.expression_type):
                    # RocketMQ answers SUCCESS and registers no filter: the group's pulls then
                    # get FILTER_DATA_NOT_EXIST (CHECK_CLIENT_CONFIG is where a client learns why)
                    error = _expression_error(sub)
                    if error is not None:
                        log.warning(
                            "group %s subscribes to %s with a bad expression: %s",
                            consumer.group_name,
                            sub.topic,
                            error,
                        )
        return changes

    def _checked_heartbeat(self, request: RemotingCommand) -> HeartbeatData:
        """The heartbeat of ``request``, decoded in steps and checked whole (on the worker thread)."""
        data = parse_body(HeartbeatData, request, "HEART_BEAT", self._max_json, chunked=True)
        try:
            check_heartbeat(data)
        except RemoteProtocolError as exc:
            raise system_error(f"HEART_BEAT: {exc}") from None
        return data

    async def _large_heartbeat(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        """A heartbeat over the offload threshold: decoded on the worker thread, then applied a
        few groups at a time (each group whole, as RocketMQ registers them one by one), yielding
        the loop between slices; checked whole first, so a malformed one changes nothing."""
        data = await conn.off_loop(self._checked_heartbeat, request)
        changes: Changes[RemotingConnection] = Changes()
        ticks = conn.time_slice()
        for part in _heartbeat_parts(data):
            changes += self._apply(conn, request, part)
            await ticks.tick()
        answer = self._answer_after(changes, request.response())
        return await answer if inspect.isawaitable(answer) else answer

    def unregister(
        self, conn: RemotingConnection, request: RemotingCommand
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        b = self._b
        h = parse_header(UnregisterClientRequestHeader, request)
        changes = apply_unregister_client(
            h.client_id,
            h.producer_group,
            h.consumer_group,
            conn,
            b.wall(),
            consumers=b.consumers,
            producers=b.producers,
            groups=b.groups,
        )
        return self._answer_after(changes, request.response(ext_fields={}))

    def consumer_list(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        h = parse_header(GetConsumerListByGroupRequestHeader, request)
        ids = self._b.consumers.client_ids(h.consumer_group)
        if not ids:
            raise system_error(f"no consumer for this group, {h.consumer_group}")
        body = GetConsumerListByGroupResponseBody(consumer_id_list=tuple(ids)).encode()
        ext: dict[str, str] = {}
        topic = request.ext_fields.get(VIEW_TOPIC_FIELD)
        if topic is not None:  # a rocketq consumer's rebalance: this broker's queues of its topic too
            config = self._b.topics.select(topic)
            if config is not None:
                ext[VIEW_QUEUES_FIELD] = str(config.read_queue_nums)
                epoch = self._b.consumers.epoch(h.consumer_group)
                ext[VIEW_FIELD] = view_stamp(epoch, config.read_queue_nums)
        return request.response(ext_fields=ext, body=body)

    def check_client_config(
        self, conn: RemotingConnection, request: RemotingCommand
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        """A Java consumer asks before it starts whether its subscription can be served
        (``ClientManageProcessor.checkClientConfig``): tag filters always; SQL92 when
        ``enablePropertyFilter`` is on (else SYSTEM_ERROR) and the expression compiles (else
        SUBSCRIPTION_PARSE_FAILED, the remark saying where it went wrong)."""

        def check(body: CheckClientRequestBody) -> RemotingCommand:
            sub = body.subscription_data
            if sub is None or is_tag_type(sub.expression_type):
                return request.response()
            if not self._b.config.enable_property_filter:
                raise system_error(property_filter_disabled_remark(sub.expression_type))
            error = _expression_error(sub)
            if error is not None:
                log.warning(
                    "client %s of group %s subscribes with a bad expression: %s",
                    body.client_id,
                    body.group,
                    error,
                )
                raise BrokerError(ResponseCode.SUBSCRIPTION_PARSE_FAILED, str(error))
            return request.response()

        return with_body(conn, request, CheckClientRequestBody, "CHECK_CLIENT_CONFIG", self._max_json, check)

    def lock_batch(
        self, conn: RemotingConnection, request: RemotingCommand
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        if conn.offloads(len(request.body)):
            return conn.large_request(request, lambda: self._large_lock_batch(conn, request))
        body = parse_body(LockBatchRequestBody, request, "LOCK_BATCH_MQ", self._max_json)
        group, client_id = _lock_owner(body, "LOCK_BATCH_MQ")
        lease = LEASE_FIELD in request.ext_fields
        locked = self._b.locks.try_lock_batch(group, body.mq_set, client_id, self._b.wall(), lease=lease)
        return request.response(body=_locked_answer(body.mq_set, locked))

    async def _large_lock_batch(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        """A lock batch over the offload threshold: decoded and answered on the worker thread,
        its queues locked a slice at a time (each queue's lock is its own, as in RocketMQ)."""
        body = await conn.off_loop(
            parse_body, LockBatchRequestBody, request, "LOCK_BATCH_MQ", self._max_json, chunked=True
        )
        group, client_id = _lock_owner(body, "LOCK_BATCH_MQ")
        locked: set[MessageQueue] = set()
        now = self._b.wall()
        lease = LEASE_FIELD in request.ext_fields
        ticks = conn.time_slice()
        for part in _parts(body.mq_set, _LOCK_PART):
            locked |= self._b.locks.try_lock_batch(group, part, client_id, now, lease=lease)
            await ticks.tick()
        return request.response(body=await conn.off_loop(_locked_answer, body.mq_set, locked))

    def unlock_batch(
        self, conn: RemotingConnection, request: RemotingCommand
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        if conn.offloads(len(request.body)):
            return conn.large_request(request, lambda: self._large_unlock_batch(conn, request))
        body = parse_body(UnlockBatchRequestBody, request, "UNLOCK_BATCH_MQ", self._max_json)
        group, client_id = _lock_owner(body, "UNLOCK_BATCH_MQ")
        self._b.locks.unlock_batch(group, body.mq_set, client_id)
        return request.response()

    async def _large_unlock_batch(
        self, conn: RemotingConnection, request: RemotingCommand
    ) -> RemotingCommand:
        body = await conn.off_loop(
            parse_body, UnlockBatchRequestBody, request, "UNLOCK_BATCH_MQ", self._max_json
        )
        group, client_id = _lock_owner(body, "UNLOCK_BATCH_MQ")
        ticks = conn.time_slice()
        for part in _parts(body.mq_set, _LOCK_PART):
            self._b.locks.unlock_batch(group, part, client_id)
            await ticks.tick()
        return request.response()


#: Consumer groups and producer groups of a large heartbeat applied between two looks at the clock
#: (a new consumer group costs about 70 µs: its subscription group config and retry topic).
_GROUP_PART = 8
_PRODUCER_PART = 256
#: Queues of a large lock batch locked between two looks at the clock (a few µs each).
_LOCK_PART = 1024

P = TypeVar("P")


def _parts(items: tuple[P, ...], size: int) -> Iterator[tuple[P, ...]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _heartbeat_parts(data: HeartbeatData) -> Iterator[HeartbeatData]:
    """``data`` as heartbeats of a few consumer groups each, then of the producer groups."""
    for groups in _parts(data.consumer_data_set, _GROUP_PART):
        yield replace(data, consumer_data_set=groups, producer_data_set=())
    for producers in _parts(data.producer_data_set, _PRODUCER_PART):
        yield replace(data, consumer_data_set=(), producer_data_set=producers)


def _lock_owner(body: LockBatchRequestBody | UnlockBatchRequestBody, what: str) -> tuple[str, str]:
    if not body.consumer_group or not body.client_id:
        raise system_error(f"{what}: consumerGroup and clientId are required")
    return body.consumer_group, body.client_id


def _locked_answer(asked: tuple[MessageQueue, ...], locked: set[MessageQueue]) -> bytes:
    """The LOCK_BATCH_MQ answer's body: the queues locked, in the order asked."""
    return LockBatchResponseBody(lock_ok_mq_set=tuple(mq for mq in asked if mq in locked)).encode()
