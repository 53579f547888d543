"""The requests brokers send a client instance: NOTIFY_CONSUMER_IDS_CHANGED (rebalance now),
GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY, RESET_CONSUMER_CLIENT_OFFSET,
GET_CONSUMER_STATUS_FROM_CLIENT, CHECK_TRANSACTION_STATE (handed to the producer of the half
message's group) and PUSH_REPLY_MESSAGE_TO_CLIENT (handed to the request waiting for it).
``BrokerRequests._register_handlers`` registers them with the instance's remoting client."""

from __future__ import annotations

import logging
import time

from rocketq.client.instance_rebalance import Rebalancing
from rocketq.client.rebalance.log import RebalanceTrigger
from rocketq.errors import RemoteProtocolError, RocketQError
from rocketq.models import MessageQueue
from rocketq.protocol.bodies import (
    GetConsumerStatusBody,
    ResetOffsetBody,
)
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import (
    CheckTransactionStateRequestHeader,
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
    NotifyConsumerIdsChangedRequestHeader,
    ReplyMessageRequestHeader,
    ResetOffsetRequestHeader,
)
from rocketq.protocol.message import MessageExt, decode_message, decompress_body
from rocketq.protocol.message_id import HostPort
from rocketq.protocol.properties import MessageConst, string_to_properties
from rocketq.remoting.client import RemotingClient
from rocketq.remoting.connection import RemotingConnection

__all__ = ["BrokerRequests"]

logger = logging.getLogger("rocketq.client.instance")  # the instance's one logger name, whichever part logs


class BrokerRequests(Rebalancing):
    """Handlers of broker-initiated requests (see the module docstring)."""

    def _register_handlers(self, remoting: RemotingClient) -> None:
        """Answer the brokers' requests to this client on ``remoting``'s connections."""
        r = remoting
        r.register_handler(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, self._on_notify_consumer_ids_changed)
        r.register_handler(RequestCode.GET_CONSUMER_RUNNING_INFO, self._on_get_consumer_running_info)
        r.register_handler(RequestCode.CONSUME_MESSAGE_DIRECTLY, self._on_consume_message_directly)
        r.register_handler(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, self._on_reset_offset)
        r.register_handler(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, self._on_get_consumer_status)
        r.register_handler(RequestCode.CHECK_TRANSACTION_STATE, self._on_check_transaction_state)
        r.register_handler(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, self._on_push_reply_message)

    def _on_notify_consumer_ids_changed(self, conn: RemotingConnection, request: RemotingCommand) -> None:
        try:
            group = NotifyConsumerIdsChangedRequestHeader.from_ext_fields(request.ext_fields).consumer_group
        except RemoteProtocolError:
            group = "?"
        logger.info(
            "broker %s: consumer ids of group %s changed; rebalancing now", conn.remote_address, group
        )
        self.rebalance_immediately(RebalanceTrigger.NOTIFY)

    def _on_get_consumer_running_info(
        self, conn: RemotingConnection, request: RemotingCommand
    ) -> RemotingCommand:
        try:
            header = GetConsumerRunningInfoRequestHeader.from_ext_fields(request.ext_fields)
        except RemoteProtocolError as exc:
            return request.response(ResponseCode.SYSTEM_ERROR, str(exc))
        consumer = self.consumers.get(header.consumer_group)
        if consumer is None:
            return self._no_such_consumer(request, header.consumer_group)
        info = consumer.running_info()
        return request.response(ResponseCode.SUCCESS, body=info.encode())

    async def _on_consume_message_directly(
        self, conn: RemotingConnection, request: RemotingCommand
    ) -> RemotingCommand:
        try:
            header = ConsumeMessageDirectlyResultRequestHeader.from_ext_fields(request.ext_fields)
            msg, _ = decode_message(request.body)
        except RemoteProtocolError as exc:
            return request.response(ResponseCode.SYSTEM_ERROR, str(exc))
        consumer = self.consumers.get(header.consumer_group)
        if consumer is None:
            return self._no_such_consumer(request, header.consumer_group)
        result = await consumer.consume_message_directly(msg, header.broker_name)
        return request.response(ResponseCode.SUCCESS, body=result.encode())

    @staticmethod
    def _no_such_consumer(request: RemotingCommand, group: str) -> RemotingCommand:
        return request.response(
            ResponseCode.SYSTEM_ERROR, f"The Consumer Group <{group}> not exist in this consumer"
        )

    async def _on_reset_offset(self, conn: RemotingConnection, request: RemotingCommand) -> None:
        try:
            header = ResetOffsetRequestHeader.from_ext_fields(request.ext_fields)
            body = ResetOffsetBody.decode(request.body) if request.body else ResetOffsetBody()
        except RemoteProtocolError as exc:
            logger.warning("bad RESET_CONSUMER_CLIENT_OFFSET from %s: %s", conn.remote_address, exc)
            return
        consumer = self.consumers.get(header.group)
        if consumer is not None:
            await consumer.reset_offset(header.topic, dict(body.offset_table))

    def _on_get_consumer_status(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        try:
            header = GetConsumerStatusRequestHeader.from_ext_fields(request.ext_fields)
        except RemoteProtocolError as exc:
            return request.response(ResponseCode.SYSTEM_ERROR, str(exc))
        consumer = self.consumers.get(header.group)
        table: dict[MessageQueue, int] = {}
        if consumer is not None:
            offsets = getattr(consumer, "offset_table", None)
            if callable(offsets):
                table = {mq: o for mq, o in offsets().items() if mq.topic == header.topic}
        return request.response(
            ResponseCode.SUCCESS, body=GetConsumerStatusBody(message_queue_table=table).encode()
        )

    def _on_check_transaction_state(self, conn: RemotingConnection, request: RemotingCommand) -> None:
        """CHECK_TRANSACTION_STATE (oneway): the broker asks about a half message; the producer of
        its group (``PGROUP``) asks its checker and answers with END_TRANSACTION (Java's
        ``ClientRemotingProcessor.checkTransactionState``)."""
        try:
            header = CheckTransactionStateRequestHeader.from_ext_fields(request.ext_fields)
            msg, _ = decode_message(request.body)
        except RemoteProtocolError as exc:
            logger.warning("bad CHECK_TRANSACTION_STATE from %s: %s", conn.remote_address, exc)
            return
        group = msg.properties.get(MessageConst.PGROUP)
        if group is None:
            logger.warning("CHECK_TRANSACTION_STATE from %s names no producer group", conn.remote_address)
            return
        producer = self.producers.get(group)
        if producer is None:
            logger.debug("CHECK_TRANSACTION_STATE for producer group %s, which is not here", group)
            return
        producer.check_transaction_state(conn.remote_address, msg, header)

    def _on_push_reply_message(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        """PUSH_REPLY_MESSAGE_TO_CLIENT: a reply to a request of this client, handed to the request
        waiting for it by its ``CORRELATION_ID`` (Java's ``receiveReplyMessage``); a reply no
        request waits for (it timed out) is logged and dropped."""
        arrived = int(time.time() * 1000)
        try:
            h = ReplyMessageRequestHeader.from_ext_fields(request.ext_fields)
            properties = string_to_properties(h.properties or "")
            properties[MessageConst.ARRIVE_TIME] = str(arrived)
            reply = MessageExt(
                h.topic,
                decompress_body(request.body, h.sys_flag),
                h.flag,
                properties,
                queue_id=h.queue_id,
                sys_flag=h.sys_flag,
                born_timestamp=h.born_timestamp,
                born_host=HostPort.parse(h.born_host),
                store_timestamp=h.store_timestamp,
                store_host=HostPort.parse(h.store_host),
                reconsume_times=h.reconsume_times or 0,
            )
        except (RocketQError, ValueError) as exc:
            logger.warning("bad PUSH_REPLY_MESSAGE_TO_CLIENT from %s: %s", conn.remote_address, exc)
            return request.response(ResponseCode.SYSTEM_ERROR, "process reply message fail")
        correlation_id = properties.get(MessageConst.CORRELATION_ID, "")
        future = self.requests.pop(correlation_id, None)
        if future is None or future.done():
            logger.warning(
                "reply %s from %s matches no waiting request (it may have timed out)",
                correlation_id,
                h.born_host,
            )
        else:
            future.set_result(reply)
        return request.response()
