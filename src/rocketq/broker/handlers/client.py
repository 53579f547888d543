"""Client management: HEART_BEAT, UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP, CHECK_CLIENT_CONFIG,
LOCK_BATCH_MQ and UNLOCK_BATCH_MQ (RocketMQ 4.9.4's ``ClientManageProcessor`` and the lock part of
``AdminBrokerProcessor``), over the consumer and producer registries and the lock table.

A heartbeat or an unregistration that changes a group's members or subscriptions makes the
broker send NOTIFY_CONSUMER_IDS_CHANGED (oneway, header ``consumerGroup``) to every member's
connection; as in RocketMQ the notices go out before the heartbeat's own response.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable

from rocketq.broker.consumers import Changes, apply_heartbeat, apply_unregister_client
from rocketq.broker.context import ClientContext
from rocketq.broker.filter import Sql92Error, is_tag_type
from rocketq.errors import BrokerError, RemoteProtocolError
from rocketq.protocol.bodies import (
    CheckClientRequestBody,
    GetConsumerListByGroupResponseBody,
    HeartbeatData,
    LockBatchRequestBody,
    LockBatchResponseBody,
    UnlockBatchRequestBody,
)
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import GetConsumerListByGroupRequestHeader, UnregisterClientRequestHeader
from rocketq.remoting import RemotingConnection

from .common import parse_body, parse_header, system_error
from .pull import property_filter_disabled_remark, selector_of

__all__ = ["ClientProcessor"]

log = logging.getLogger(__name__)


class ClientProcessor:
    """Heartbeats, unregistrations, group membership queries and queue locks."""

    def __init__(self, broker: ClientContext) -> None:
        self._b = broker

    def handlers(self) -> dict[int, object]:
        return {
            RequestCode.HEART_BEAT: self.heartbeat,
            RequestCode.UNREGISTER_CLIENT: self.unregister,
            RequestCode.GET_CONSUMER_LIST_BY_GROUP: self.consumer_list,
            RequestCode.CHECK_CLIENT_CONFIG: self.check_client_config,
            RequestCode.LOCK_BATCH_MQ: self.lock_batch,
            RequestCode.UNLOCK_BATCH_MQ: self.unlock_batch,
        }

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
        b = self._b
        data = parse_body(HeartbeatData.decode, request, "HEART_BEAT")
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
                    try:
                        selector_of(sub.expression_type, sub.sub_string)
                    except Sql92Error as exc:
                        log.warning(
                            "group %s subscribes to %s with a bad expression: %s",
                            consumer.group_name,
                            sub.topic,
                            exc,
                        )
        return self._answer_after(changes, request.response())

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
        return request.response(ext_fields={}, body=body)

    def check_client_config(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        """A Java consumer asks before it starts whether its subscription can be served
        (``ClientManageProcessor.checkClientConfig``): tag filters always; SQL92 when
        ``enablePropertyFilter`` is on (else SYSTEM_ERROR) and the expression compiles (else
        SUBSCRIPTION_PARSE_FAILED, the remark saying where it went wrong)."""
        body = parse_body(CheckClientRequestBody.decode, request, "CHECK_CLIENT_CONFIG")
        sub = body.subscription_data
        if sub is None or is_tag_type(sub.expression_type):
            return request.response()
        if not self._b.config.enable_property_filter:
            raise system_error(property_filter_disabled_remark(sub.expression_type))
        try:
            selector_of(sub.expression_type, sub.sub_string)
        except Sql92Error as exc:
            log.warning(
                "client %s of group %s subscribes with a bad expression: %s", body.client_id, body.group, exc
            )
            raise BrokerError(ResponseCode.SUBSCRIPTION_PARSE_FAILED, str(exc)) from None
        return request.response()

    def lock_batch(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        body = parse_body(LockBatchRequestBody.decode, request, "LOCK_BATCH_MQ")
        if not body.consumer_group or not body.client_id:
            raise system_error("LOCK_BATCH_MQ: consumerGroup and clientId are required")
        b = self._b
        locked = b.locks.try_lock_batch(body.consumer_group, body.mq_set, body.client_id, b.wall())
        ok = tuple(mq for mq in body.mq_set if mq in locked)
        return request.response(body=LockBatchResponseBody(lock_ok_mq_set=ok).encode())

    def unlock_batch(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        body = parse_body(UnlockBatchRequestBody.decode, request, "UNLOCK_BATCH_MQ")
        if not body.consumer_group or not body.client_id:
            raise system_error("UNLOCK_BATCH_MQ: consumerGroup and clientId are required")
        self._b.locks.unlock_batch(body.consumer_group, body.mq_set, body.client_id)
        return request.response()
