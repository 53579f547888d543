"""Committed consumer offsets (the broker's ``ConsumerOffsetManager``), in
``config/consumerOffset.json``: ``{"offsetTable":{"topic@group":{0:12,1:7}}}`` with the queue
ids as bare integers, exactly as fastjson writes RocketMQ's ``ConcurrentMap<Integer, Long>``
(the shape of the protocol's ``ConsumerOffsetSerializeWrapper``, which GET_ALL_CONSUMER_OFFSET
answers with; the file is written and read here with the protocol's JSON dialect,
:mod:`rocketq.protocol.fastjson`, so the store needs no body of the protocol).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rocketq.errors import RemoteProtocolError
from rocketq.protocol.fastjson import dumps_bytes, loads
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
        return dumps_bytes({"offsetTable": snapshot})

    def decode(self, data: bytes) -> None:
        self._table = _read_offset_table(loads(data))

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

    def put_all(self, table: dict[str, dict[int, int]]) -> None:
        """Take every ``topic@group`` entry of ``table`` in place of ours (keys it lacks are
        kept): what a slave does with its master's offsets (RocketMQ's ``putAll``)."""
        with self._lock:
            for key, queues in table.items():
                self._table[key] = dict(queues)
            self._changed()

    def table(self) -> dict[str, dict[int, int]]:
        """A copy of the whole table, keyed ``topic@group``."""
        with self._lock:
            return {key: dict(queues) for key, queues in self._table.items()}

    def topics_of_group(self, group: str) -> set[str]:
        """Topics in which ``group`` committed offsets (``whichTopicByConsumer``)."""
        return {topic for topic, grp in self._pairs() if grp == group}

    def groups_of_topic(self, topic: str) -> set[str]:
        """Groups that committed offsets in ``topic`` (``whichGroupByTopic``)."""
        return {grp for tpc, grp in self._pairs() if tpc == topic}

    def remove_group(self, group: str) -> None:
        """Forget every offset of ``group`` (``removeOffset``)."""
        self._remove(lambda topic, grp: grp == group)

    def remove_topic(self, topic: str) -> None:
        """Forget every group's offsets in ``topic`` (``cleanOffsetByTopic``)."""
        self._remove(lambda tpc, grp: tpc == topic)

    def _pairs(self) -> list[tuple[str, str]]:
        """``(topic, group)`` of every key."""
        with self._lock:
            keys = list(self._table)
        return [(t, g) for t, sep, g in (k.rpartition(TOPIC_GROUP_SEPARATOR) for k in keys) if sep]

    def _remove(self, which: Callable[[str, str], bool]) -> None:
        with self._lock:
            for key in list(self._table):
                topic, sep, group = key.rpartition(TOPIC_GROUP_SEPARATOR)
                if sep and which(topic, group):
                    del self._table[key]
                    self._changed()

    def clone_offsets(self, src_group: str, dest_group: str, topic: str) -> None:
        """Copy ``src_group``'s offsets in ``topic`` to ``dest_group`` (``cloneOffset``)."""
        with self._lock:
            queues = self._table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{src_group}")
            if queues is not None:
                self._table[f"{topic}{TOPIC_GROUP_SEPARATOR}{dest_group}"] = dict(queues)
                self._changed()


def _read_offset_table(doc: Any) -> dict[str, dict[int, int]]:
    """``offsetTable`` of a parsed ``consumerOffset.json``: ``topic@group`` to queue id to offset
    (keys bare or quoted, values numbers or numeric strings, as fastjson reads them)."""
    table = doc.get("offsetTable", {}) if isinstance(doc, dict) else None
    if not isinstance(table, dict):
        raise RemoteProtocolError("consumerOffset.json: no offsetTable object")
    out: dict[str, dict[int, int]] = {}
    for key, queues in table.items():
        if not isinstance(key, str) or not isinstance(queues, dict):
            raise RemoteProtocolError(f"consumerOffset.json: bad entry {key!r}")
        out[key] = {_integer(qid, key): _integer(offset, key) for qid, offset in queues.items()}
    return out


def _integer(raw: Any, key: str) -> int:
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.lstrip("-").isdigit():
        return int(raw)
    raise RemoteProtocolError(f"consumerOffset.json: {key}: not an integer: {raw!r}")
