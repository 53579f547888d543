"""The pull both consumers share (``PULL_MESSAGE``): its flag, flow control, and a FOUND answer.

The push consumer's pull loop (:meth:`~rocketq.client.consumer.push_core.PushConsumerCore.pull_once`)
and the lite pull consumer's differ in what they do with messages (a consume service, a buffer
for ``poll``) and in their header fields, not in these rules:

* :func:`pull_sys_flag` - ``PullSysFlag.buildSysFlag``;
* :func:`flow_control_reason` - whether a queue's cache is too full to pull (``pullMessage``'s
  count, size and span checks);
* :func:`found_messages` - what a FOUND answer holds for the consumer: its messages decoded,
  counted in the pull statistics, filtered by the subscription's tags (the broker filters by tag
  hash only), each stamped with the queue's min and max offsets (``MIN_OFFSET``/``MAX_OFFSET``).
"""

from __future__ import annotations

import logging
import time

from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.consumer.stats import ConsumeStats
from rocketq.errors import RemoteProtocolError
from rocketq.models import MessageQueue, PullResult
from rocketq.protocol.bodies import SubscriptionData
from rocketq.protocol.codes import PullSysFlag
from rocketq.protocol.message import MessageExt, decode_messages
from rocketq.protocol.properties import MessageConst

__all__ = ["flow_control_reason", "found_messages", "pull_sys_flag"]

logger = logging.getLogger(__name__)


def pull_sys_flag(
    *, commit_offset: bool, suspend: bool, subscription: bool, class_filter: bool = False
) -> int:
    """``PullSysFlag.buildSysFlag``.

    >>> pull_sys_flag(commit_offset=True, suspend=True, subscription=False)
    3
    """
    flag = 0
    if commit_offset:
        flag |= PullSysFlag.COMMIT_OFFSET
    if suspend:
        flag |= PullSysFlag.SUSPEND
    if subscription:
        flag |= PullSysFlag.SUBSCRIPTION
    if class_filter:
        flag |= PullSysFlag.CLASS_FILTER
    return int(flag)


def flow_control_reason(
    pq: ProcessQueue, *, max_count: int, max_size_mib: int, max_span: int | None
) -> str | None:
    """Why a queue must not be pulled now (``"count"``, ``"size"``, ``"span"``), or ``None``.

    RocketMQ's checks in ``pullMessage``: more cached messages than ``max_count``, more cached MiB
    than ``max_size_mib``, or (concurrent consumption; ``max_span=None`` for orderly) a distance
    between the lowest and highest cached offset above ``max_span``.

    >>> from rocketq.protocol.message import MessageExt
    >>> pq = ProcessQueue(now=0.0)
    >>> _ = pq.put_messages([MessageExt("T", b"x", queue_offset=0), MessageExt("T", b"x", queue_offset=2001)])
    >>> flow_control_reason(pq, max_count=1000, max_size_mib=100, max_span=2000)
    'span'
    """
    if pq.msg_count > max_count:
        return "count"
    if pq.msg_size > max_size_mib * 1024 * 1024:
        return "size"
    if max_span is not None and pq.max_span() > max_span:
        return "span"
    return None


def found_messages(
    response: PullResult, sub: SubscriptionData, mq: MessageQueue, stats: ConsumeStats, began: float
) -> list[MessageExt] | None:
    """The messages of a FOUND answer to a pull sent at ``began`` (``time.monotonic``), ready to
    cache; ``None`` when the body does not decode (logged; the caller pulls again later)."""
    try:
        msgs = decode_messages(response.body)
    except RemoteProtocolError as exc:
        logger.error("undecodable pull body from %s: %s", mq, exc)
        return None
    stats.add(mq.topic, "pull", len(msgs), (time.monotonic() - began) * 1000.0)
    if sub.tags_set and not sub.class_filter_mode:
        tags = set(sub.tags_set)
        msgs = [m for m in msgs if m.tags is not None and m.tags in tags]
    min_text, max_text = str(response.min_offset), str(response.max_offset)
    for m in msgs:
        m.properties[MessageConst.MIN_OFFSET] = min_text
        m.properties[MessageConst.MAX_OFFSET] = max_text
    return msgs
