"""Which queue a send goes to (``MQFaultStrategy.selectOneMessageQueue`` without fault latency).

In order of precedence: the queue the caller named; the caller's selector
(:data:`MessageQueueSelector`, e.g. :func:`select_by_hash` for ordered messages), given every
queue of the topic; else round robin over the writable queues of every broker
(:meth:`~rocketq.client.routes.TopicPublishInfo.select_one`), avoiding the broker of the previous
attempt when the send is retried.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rocketq.client.routes import TopicPublishInfo
from rocketq.models import MessageQueue
from rocketq.protocol.message import Message as ProtocolMessage
from rocketq.protocol.properties import java_string_hash

__all__ = ["MessageQueueSelector", "pick_queue", "select_by_hash"]

MessageQueueSelector = Callable[[Sequence[MessageQueue], ProtocolMessage, Any], MessageQueue]
"""Picks a queue for a message: ``selector(queues, message, arg)`` (``MessageQueueSelector``)."""


def select_by_hash(queues: Sequence[MessageQueue], msg: ProtocolMessage, arg: Any) -> MessageQueue:
    """``SelectMessageQueueByHash``: ``abs(arg.hashCode()) % len(queues)`` (Java hash for str/int).

    Messages with the same key go to the same queue, which is what ordered messages need.

    >>> qs = [MessageQueue("T", "b", i) for i in range(4)]
    >>> select_by_hash(qs, ProtocolMessage("T"), "order-1").queue_id
    2
    """
    if isinstance(arg, str):
        h = java_string_hash(arg)
    elif isinstance(arg, int) and not isinstance(arg, bool):
        h = ((arg ^ (arg >> 32)) & 0xFFFFFFFF) if not -(2**31) <= arg < 2**31 else arg
        if h >= 2**31:
            h -= 2**32
    else:
        h = java_string_hash(str(arg))
    return queues[abs(h) % len(queues)]


def pick_queue(
    info: TopicPublishInfo,
    msg: ProtocolMessage,
    queue: MessageQueue | None,
    selector: MessageQueueSelector | None,
    arg: Any,
    last_broker: str | None,
) -> MessageQueue:
    """The queue of one attempt: ``queue``, else ``selector``'s pick, else the next one round robin
    (on another broker than ``last_broker`` when there is one)."""
    if queue is not None:
        return queue
    if selector is not None:
        return selector(list(info.queues), msg, arg)
    return info.select_one(last_broker)
