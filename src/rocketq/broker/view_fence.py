"""The view fence's two checks, shared by the pull and offset handlers (rocketq only).

A rocketq push consumer sends, with each pull and each offset commit, the
:func:`~rocketq.protocol.calls.view_stamp` it allocated this broker's queues under: the group's
epoch on this broker (:meth:`~rocketq.broker.consumers.ConsumerRegistry.epoch`, raised on every
change of the group's members or of the topic's queues, never repeated, not even across restarts)
and this broker's read queue count of the topic. The broker compares it with its own now:

* a pull on a stamp that is no longer the broker's is refused (``PULL_VIEW_CHANGED``), so a
  consumer acting on a stale view - a lost notification, a long pause, a cut connection, a stale
  route - fetches nothing another member may own now. Because the epoch counts changes rather
  than describing the list, a list that went A -> B -> A while the consumer was away is still a
  new view: its position from before may be behind what the member that had the queue under B
  consumed, and it must resume from the group's committed offset;
* a commit on such a stamp may move the group's offset forward, not back: an old owner dropping a
  queue it lost long ago commits the offset it had then, which would throw away the new owner's
  progress and make it read everything again.

Requests without the field (RocketMQ's clients, rocketq's with ``view_fence=False``) are served as
RocketMQ serves them.
"""

from __future__ import annotations

from pathlib import Path

from rocketq.broker.consumers import ConsumerRegistry
from rocketq.broker.topics import TopicConfigManager
from rocketq.protocol.calls import view_stamp
from rocketq.remoting import RemotingConnection
from rocketq.store import ConsumerOffsetTable
from rocketq.store.configfiles import write_atomically

__all__ = ["GENERATION_FILE", "commit_allowed", "current_view", "next_boot_generation"]


def current_view(
    consumers: ConsumerRegistry[RemotingConnection], topics: TopicConfigManager, group: str, topic: str
) -> str | None:
    """This broker's view stamp of ``group`` consuming ``topic`` (None: it has no such topic)."""
    config = topics.select(topic)
    if config is None:
        return None
    return view_stamp(consumers.epoch(group), config.read_queue_nums)


def commit_allowed(
    offsets: ConsumerOffsetTable, group: str, topic: str, queue_id: int, offset: int, stale: bool
) -> bool:
    """Whether a commit of ``offset`` is stored: always, unless it comes on a ``stale`` view and
    would move the stored offset back."""
    return not stale or offset >= offsets.query_offset(group, topic, queue_id)


GENERATION_FILE = "rqBootGeneration"
"""The file in the store's ``config/`` directory that counts the broker's starts: the high 32 bits
of every epoch, so that an epoch never repeats across restarts."""


def next_boot_generation(config_dir: Path, now: float) -> int:
    """Count one more start of the broker whose config directory is ``config_dir`` and return the
    new count: one more than the last, and at least ``now`` in whole seconds (the wall clock), so
    that a count file lost with a data directory restored from a backup cannot make a count come
    back either. Written atomically (a rename)."""
    path = config_dir / GENERATION_FILE
    try:
        last = int(path.read_text(encoding="ascii").strip())
    except (OSError, ValueError, UnicodeDecodeError):
        last = 0
    generation = max(last + 1, int(now))
    write_atomically(path, f"{generation}\n".encode())
    return generation
