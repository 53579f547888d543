"""SEND_REPLY_MESSAGE and SEND_REPLY_MESSAGE_V2: request-reply (RocketMQ 4.9.4's
``ReplyMessageProcessor``).

A requester (``DefaultMQProducer.request``) sends a message carrying ``CORRELATION_ID`` and its
own client id in ``REPLY_TO_CLIENT``; the consumer that handles it sends the reply to
``<cluster>_REPLY_TOPIC`` with SEND_REPLY_MESSAGE_V2 (a send header, long names for the V1 code).
The broker checks it as a send, then pushes it to the requester at once -
PUSH_REPLY_MESSAGE_TO_CLIENT over the connection the requester's producer heartbeat registered
(found by client id), header: the reply's send fields plus ``bornHost``, ``storeHost`` and
``storeTimestamp``, properties with ``PUSH_REPLY_TIME`` added; body: the reply's body - and waits
for the requester's answer (at most 10 s, as Java's ``callClient``). With
``store_reply_message_enable`` (RocketMQ's ``storeReplyMessageEnable``, on by default) the reply
is also stored in the reply topic, with its property string as the replier sent it.

The replier's answer says how the push went: SUCCESS (``msgId`` / ``queueId`` / ``queueOffset``
of the stored reply, or ``0`` / the queue / ``0`` when replies are not stored), or SYSTEM_ERROR
with RocketMQ's remark - ``push reply message fail, channel of <CLIENT_ID> not found.`` when the
requester is not connected, ``push reply message to CLIENT_IDfail.`` when it did not take the
reply, ``reply message properties[REPLY_TO_CLIENT] is null`` without one - the reply still stored.
"""

from __future__ import annotations

import dataclasses
import logging

from rocketq.broker.context import ReplyContext
from rocketq.errors import BrokerError, ConfigError, RemotingError
from rocketq.models import from_fields
from rocketq.protocol.codes import RequestCode, ResponseCode, SerializeType
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import (
    ReplyMessageRequestHeader,
    java_hashmap_order,
)
from rocketq.protocol.message import encode_message
from rocketq.protocol.properties import MessageConst, string_to_properties, tags_code
from rocketq.remoting import RemotingConnection

from .send import SendProcessor, java_properties_string

__all__ = ["PUSH_REPLY_TIMEOUT", "ReplyProcessor"]

log = logging.getLogger(__name__)

PUSH_REPLY_TIMEOUT = 10.0
"""Seconds the broker waits for the requester to take a reply (``Broker2Client.callClient``)."""


class ReplyProcessor:
    """The reply handlers, over a :class:`~rocketq.broker.context.ReplyContext` and the send
    processor (its checks and appends)."""

    def __init__(self, broker: ReplyContext, send: SendProcessor) -> None:
        self._b = broker
        self._send = send
        cfg = broker.config
        self._store_replies = cfg.store_reply_message_enable
        self._trace = "true" if cfg.trace_on else "false"
        self._region = cfg.region_id

    async def reply(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        b = self._b
        # the send header (V1 or V2 by the code), checked as a send is (msgCheck); a negative
        # queue id is replaced by a random write queue
        h, queue_id = self._send.parse_and_check(conn, request)
        props = string_to_properties(h.properties) if h.properties else {}
        born_host = self._send.born_host(conn)
        store_host = b.store_host
        push = from_fields(
            ReplyMessageRequestHeader,
            h,
            born_host=f"{born_host.ip}:{born_host.port}",
            store_host=f"{store_host.ip}:{store_host.port}",
            store_timestamp=b.wall_ms(),
        )
        failure = await self._push(props, push, request.body)
        fields: dict[str, str] = {"MSG_REGION": self._region, "TRACE_ON": self._trace}
        if failure is None:
            fields.update(msgId="0", queueId=str(queue_id), queueOffset="0")
        if self._store_replies:
            try:
                record = encode_message(
                    topic=h.topic,
                    body=request.body,
                    properties=h.properties or "",  # as the replier sent it: no CLUSTER, WAIT kept
                    queue_id=queue_id,
                    flag=h.flag,
                    born_timestamp=h.born_timestamp,
                    born_host=born_host,
                    store_host=store_host,
                    reconsume_times=h.reconsume_times or 0,
                )
                code = tags_code(props.get(MessageConst.TAGS))
                put = self._send.put_record(h.topic, queue_id, record, code, props)
                fields.update(
                    msgId=self._send.msg_id(put.commit_log_offset),
                    queueId=str(queue_id),
                    queueOffset=str(put.queue_offset),
                )
            except (BrokerError, ConfigError) as exc:  # RocketMQ only logs a failed store
                log.warning(
                    "reply to %s could not be stored: %s", props.get(MessageConst.REPLY_TO_CLIENT), exc
                )
        return request.response(
            code=ResponseCode.SUCCESS if failure is None else ResponseCode.SYSTEM_ERROR,
            remark=failure,
            ext_fields=_ordered(fields, request.serialize_type),
        )

    async def _push(
        self, props: dict[str, str], header: ReplyMessageRequestHeader, body: bytes
    ) -> str | None:
        """Hand the reply to the requester; ``None`` when it took it, else RocketMQ's remark."""
        sender = props.get(MessageConst.REPLY_TO_CLIENT)
        if sender is None:
            log.warning("a reply without REPLY_TO_CLIENT cannot be pushed")
            return f"reply message properties[{MessageConst.REPLY_TO_CLIENT}] is null"
        conn = self._b.producers.find_channel(sender)
        if conn is None or conn.is_closed:
            remark = f"push reply message fail, channel of <{sender}> not found."
            log.warning("%s", remark)
            return remark
        pushed = dict(props)
        # one clock reading for the push: Java reads the clock twice, a millisecond apart at times
        pushed[MessageConst.PUSH_REPLY_TIME] = str(header.store_timestamp)
        header = dataclasses.replace(header, properties=java_properties_string(pushed, len(pushed)))
        request = RemotingCommand.request(
            RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, header.to_ext_fields(), body
        )
        try:
            answer = await conn.invoke(request, PUSH_REPLY_TIMEOUT)
        except (RemotingError, TimeoutError) as exc:
            log.warning("push reply message to <%s> failed: %s", sender, exc)
            return f"push reply message to {sender}fail."
        if answer.code != ResponseCode.SUCCESS:
            log.warning("push reply message to <%s> answered %d: %s", sender, answer.code, answer.remark)
            return f"push reply message to {sender}fail."
        return None


def _ordered(fields: dict[str, str], serialize_type: SerializeType) -> dict[str, str]:
    """The response's ext fields in the order a Java broker writes them: the send response
    header's own fields first in the binary serialization, else ``HashMap`` order."""
    if serialize_type == SerializeType.ROCKETMQ:
        first = [k for k in ("msgId", "queueId", "queueOffset") if k in fields]
        rest = java_hashmap_order([k for k in fields if k not in first])
        return {k: fields[k] for k in [*first, *rest]}
    return {k: fields[k] for k in java_hashmap_order(list(fields))}
