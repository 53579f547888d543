"""Where a newly owned queue starts (``RebalancePushImpl.computePullFromWhere``), for every consumer.

One rule, used by the push consumer (and its orderly and clean engines) and the lite pull
consumer alike, as RocketMQ's ``RebalancePushImpl`` and ``RebalanceLitePullImpl`` share it:

* the group's committed offset, when the offset store has one;
* none (a new group, the store answers -1), by ``consume_from_where``:
  ``CONSUME_FROM_FIRST_OFFSET`` → 0; ``CONSUME_FROM_TIMESTAMP`` → the first offset stored at
  ``consume_timestamp`` (a retry topic: its max offset); ``CONSUME_FROM_LAST_OFFSET`` and the
  deprecated aliases → the queue's max offset (a retry topic: 0);
* an offset that could not be read (-2), or no broker to ask → -1: the queue is skipped until
  the next rebalance rather than started at a guess.
"""

from __future__ import annotations

from typing import Protocol

from rocketq.client.api import ClientAPI
from rocketq.client.config import ReadOffsetType
from rocketq.client.consumer.offset_store import BrokerLocator, OffsetStore
from rocketq.models import MessageQueue
from rocketq.protocol import calls
from rocketq.protocol.bodies import ConsumeFromWhere
from rocketq.protocol.topics import RETRY_GROUP_TOPIC_PREFIX

__all__ = ["StartFrom", "compute_pull_from_where"]


class StartFrom(Protocol):
    """The settings the rule reads (both consumers' configs have them)."""

    @property
    def consume_from_where(self) -> ConsumeFromWhere: ...

    def consume_timestamp_ms(self) -> int: ...


async def compute_pull_from_where(
    mq: MessageQueue,
    *,
    start: StartFrom,
    offset_store: OffsetStore,
    api: ClientAPI,
    locate_master: BrokerLocator,
) -> int:
    """The offset ``mq``'s first pull starts at, or -1 to skip it this time (see the module doc)."""
    last = await offset_store.read_offset(mq, ReadOffsetType.READ_FROM_STORE)
    if last >= 0:
        return last
    if last != -1:
        return -1
    where = start.consume_from_where
    if where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
        return 0
    is_retry = mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
    timestamp = where is ConsumeFromWhere.CONSUME_FROM_TIMESTAMP
    if is_retry and not timestamp:
        return 0
    addr = await locate_master(mq)
    if addr is None:
        return -1
    if timestamp and not is_retry:
        return await api.call(addr, calls.search_offset(mq, start.consume_timestamp_ms()))
    return await api.call(addr, calls.get_max_offset(mq))
