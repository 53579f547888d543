"""Request-reply (RocketMQ 4.6+ ``DefaultMQProducer.request`` and ``MessageUtil.createReplyMessage``).

A *request* is an ordinary message that names who waits for its answer:
:func:`prepare_request` adds ``CORRELATION_ID`` (a fresh UUID), ``REPLY_TO_CLIENT`` (the
requester's client id) and ``TTL`` (the requester's timeout in ms), as Java's
``prepareSendRequest`` does, and :meth:`Producer.request <rocketq.client.Producer.request>` sends
it and waits. A consumer of the request topic answers with :func:`create_reply`: a message to
the cluster's reply topic ``<cluster>_REPLY_TOPIC`` (the request carries its cluster in the
``CLUSTER`` property the broker adds) with ``MSG_TYPE=reply`` and the request's correlation id,
client id and TTL. Any producer sends it (``producer.send(create_reply(msg, b"..."))``); a
message whose ``MSG_TYPE`` is ``reply`` goes as ``SEND_REPLY_MESSAGE_V2``, and the broker pushes
it to the requester's connection (``PUSH_REPLY_MESSAGE_TO_CLIENT``), where it completes the
waiting request.

>>> from rocketq.protocol.message import Message
>>> request = Message("Orders", b"?", properties={"CLUSTER": "DefaultCluster"})
>>> prepare_request(request.properties, "10.0.0.1@app", 3.0, correlation_id="c-1")
>>> reply = create_reply(request, b"42")
>>> reply.topic, reply.properties
('DefaultCluster_REPLY_TOPIC', {'MSG_TYPE': 'reply', 'CORRELATION_ID': 'c-1', \
'REPLY_TO_CLIENT': '10.0.0.1@app', 'TTL': '3000'})
"""

from __future__ import annotations

import uuid
from collections.abc import MutableMapping

from rocketq.errors import ConfigError
from rocketq.protocol.calls import REPLY_MESSAGE_FLAG
from rocketq.protocol.message import Message
from rocketq.protocol.properties import MessageConst
from rocketq.protocol.topics import reply_topic

__all__ = ["REPLY_MESSAGE_FLAG", "create_reply", "prepare_request"]


def prepare_request(
    properties: MutableMapping[str, str],
    client_id: str,
    timeout: float,
    *,
    correlation_id: str | None = None,
) -> str:
    """Mark a message's ``properties`` as a request of ``client_id`` waiting ``timeout`` seconds;
    returns the correlation id (a new UUID unless given)."""
    cid = correlation_id if correlation_id is not None else str(uuid.uuid4())
    properties[MessageConst.CORRELATION_ID] = cid
    properties[MessageConst.REPLY_TO_CLIENT] = client_id
    properties[MessageConst.TTL] = str(round(timeout * 1000))
    return cid


def create_reply(request: Message, body: bytes | bytearray | memoryview | str) -> Message:
    """The reply to ``request`` (a message a consumer received) with ``body``, to send with any
    producer. Raises :class:`~rocketq.errors.ConfigError` when ``request`` has no ``CLUSTER``
    property (it did not come from a broker) or is not a request (no ``REPLY_TO_CLIENT``:
    nobody waits for an answer)."""
    props = request.properties
    cluster = props.get(MessageConst.CLUSTER)
    if cluster is None:
        raise ConfigError(
            "cannot create a reply: the request has no CLUSTER property (the broker adds it to "
            "every message it stores; reply to a message a consumer received)"
        )
    if MessageConst.REPLY_TO_CLIENT not in props:
        raise ConfigError(
            "cannot create a reply: the message is not a request (it has no REPLY_TO_CLIENT; "
            "requests are sent with Producer.request)"
        )
    data = body.encode() if isinstance(body, str) else bytes(body)
    reply = Message(reply_topic(cluster), data)
    reply.properties[MessageConst.MSG_TYPE] = REPLY_MESSAGE_FLAG
    for name in (MessageConst.CORRELATION_ID, MessageConst.REPLY_TO_CLIENT, MessageConst.TTL):
        value = props.get(name)
        if value is not None:
            reply.properties[name] = value
    return reply
