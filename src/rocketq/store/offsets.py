"""Committed consumer offsets (the broker's ``ConsumerOffsetManager``), in
``config/consumerOffset.json``: ``{"offsetTable":{"topic@group":{0:12,1:7}}}`` with the queue
ids as bare integers, exactly as fastjson writes RocketMQ's ``ConcurrentMap<Integer, Long>``.
"""

from __future__ import annotations

from pathlib import Path

from rocketq.protocol.bodies import ConsumerOffsetSerializeWrapper
from rocketq.store.configfiles import ConfigTable

__all__ = ["TOPIC_GROUP_SEPARATOR", "ConsumerOffsetTable"]

#: Separator of the ``topic@group`` keys.
TOPIC_GROUP_SEPARATOR = "@"


class ConsumerOffsetTable(ConfigTable):
    """Offsets committed by consumer groups, per topic and queue; thread-safe."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._table: dict[str, dict[int, int]] = {}

    def encode(self) -> bytes:
        snapshot = {key: dict(queues) for key, queues in self._table.items()}
        return ConsumerOffsetSerializeWrapper(offset_table=snapshot).encode()

    def decode(self, data: bytes) -> None:
        wrapper = ConsumerOffsetSerializeWrapper.decode(data)
        self._table = {key: dict(queues) for key, queues in wrapper.offset_table.items()}

    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """Record ``offset`` as the group's next offset to consume in ``topic``/``queue_id``."""
        key = f"{topic}{TOPIC_GROUP_SEPARATOR}{group}"
        with self._lock:
            queues = self._table.get(key)
            if queues is None:
                queues = self._table[key] = {}
            queues[queue_id] = offset
            self._changed()

    def query_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, or -1 when the group never committed one for that queue."""
        queues = self._table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}")
        if queues is None:
            return -1
        return queues.get(queue_id, -1)

    def query_offsets(self, group: str, topic: str) -> dict[int, int]:
        """Every queue's committed offset of ``group`` in ``topic`` (a copy)."""
        with self._lock:
            return dict(self._table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {}))

    def table(self) -> dict[str, dict[int, int]]:
        """A copy of the whole table, keyed ``topic@group``."""
        with self._lock:
            return {key: dict(queues) for key, queues in self._table.items()}

    def topics_of_group(self, group: str) -> set[str]:
        """Topics in which ``group`` committed offsets (``whichTopicByConsumer``)."""
        with self._lock:
            keys = list(self._table)
        out: set[str] = set()
        for key in keys:
            topic, sep, grp = key.rpartition(TOPIC_GROUP_SEPARATOR)
            if sep and grp == group:
                out.add(topic)
        return out

    def groups_of_topic(self, topic: str) -> set[str]:
        """Groups that committed offsets in ``topic`` (``whichGroupByTopic``)."""
        with self._lock:
            keys = list(self._table)
        out: set[str] = set()
        for key in keys:
            tpc, sep, grp = key.rpartition(TOPIC_GROUP_SEPARATOR)
            if sep and tpc == topic:
                out.add(grp)
        return out

    def remove_group(self, group: str) -> None:
        """Forget every offset of ``group`` (``removeOffset``)."""
        with self._lock:
            for key in [k for k in self._table if k.rpartition(TOPIC_GROUP_SEPARATOR)[2] == group]:
                del self._table[key]
                self._changed()

    def remove_topic(self, topic: str) -> None:
        """Forget every group's offsets in ``topic`` (``cleanOffsetByTopic``)."""
        with self._lock:
            for key in [k for k in self._table if k.rpartition(TOPIC_GROUP_SEPARATOR)[0] == topic]:
                del self._table[key]
                self._changed()

    def clone_offsets(self, src_group: str, dest_group: str, topic: str) -> None:
        """Copy ``src_group``'s offsets in ``topic`` to ``dest_group`` (``cloneOffset``)."""
        with self._lock:
            queues = self._table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{src_group}")
            if queues is not None:
                self._table[f"{topic}{TOPIC_GROUP_SEPARATOR}{dest_group}"] = dict(queues)
                self._changed()
