"""The view fence's two checks, shared by the pull and offset handlers (rocketq only).

A rocketq push consumer sends, with each pull and each offset commit, the
:func:`~rocketq.protocol.calls.view_digest` of what it allocated this broker's queues with: the
group's members as this broker listed them and this broker's read queue count of the topic. The
broker compares it with its own now:

* a pull on a view that is no longer the broker's is refused (``PULL_VIEW_CHANGED``), so a
  consumer acting on a stale view - a lost notification, a long pause, a stale route - fetches
  nothing another member may own now;
* a commit on such a view may move the group's offset forward, not back: an old owner dropping a
  queue it lost long ago commits the offset it had then, which would throw away the new owner's
  progress and make it read everything again.

Requests without the field (RocketMQ's clients, rocketq's with ``view_fence=False``) are served as
RocketMQ serves them.
"""

from __future__ import annotations

from rocketq.broker.consumers import ConsumerRegistry
from rocketq.broker.topics import TopicConfigManager
from rocketq.protocol.calls import view_digest
from rocketq.remoting import RemotingConnection
from rocketq.store import ConsumerOffsetTable

__all__ = ["commit_allowed", "current_view"]


def current_view(
    consumers: ConsumerRegistry[RemotingConnection], topics: TopicConfigManager, group: str, topic: str
) -> str | None:
    """This broker's view digest of ``group`` consuming ``topic`` (None: it has no such topic)."""
    config = topics.select(topic)
    if config is None:
        return None
    return view_digest(consumers.client_ids(group), config.read_queue_nums)


def commit_allowed(
    offsets: ConsumerOffsetTable, group: str, topic: str, queue_id: int, offset: int, stale: bool
) -> bool:
    """Whether a commit of ``offset`` is stored: always, unless it comes on a ``stale`` view and
    would move the stored offset back."""
    return not stale or offset >= offsets.query_offset(group, topic, queue_id)
