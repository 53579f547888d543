"""The store's table of consume queues, one per (topic, queue id), under ``<root>/consumequeue``.

Readers look a queue up without a lock (a dict read); a queue is created, and a topic's queues
deleted, under the store lock the table shares with the appending thread, so two first sends to
one queue never make two objects for its files.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterable
from pathlib import Path

from rocketq.errors import ConfigError
from rocketq.store.consumequeue import ConsumeQueue
from rocketq.store.records import check_topic_name
from rocketq.store.segments import FileIO

__all__ = ["QueueTable"]

log = logging.getLogger("rocketq.store.message_store")


class QueueTable:
    """The consume queues of one store (see the module docstring)."""

    def __init__(self, directory: Path, entries_per_file: int, io: FileIO, lock: threading.Lock) -> None:
        self.directory = directory
        self._entries_per_file = entries_per_file
        self._io = io
        self._lock = lock
        #: topic -> queue id -> queue.
        self.by_topic: dict[str, dict[int, ConsumeQueue]] = {}
        #: Queues whose re-dispatched records did not follow on (warned about once each).
        self.misordered: set[tuple[str, int]] = set()

    def load(self) -> None:
        """Open and recover every consume queue found on disk (the first step of recovery)."""
        self.directory.mkdir(exist_ok=True)
        for topic_dir in sorted(self.directory.iterdir()):
            if not topic_dir.is_dir():
                continue
            for queue_dir in sorted(topic_dir.iterdir()):
                if queue_dir.is_dir() and queue_dir.name.isdigit():
                    self.new(topic_dir.name, int(queue_dir.name)).load_and_recover()

    def all(self) -> list[ConsumeQueue]:
        """Every queue (a snapshot: safe while another thread adds one)."""
        return [cq for queues in list(self.by_topic.values()) for cq in list(queues.values())]

    def new(self, topic: str, queue_id: int) -> ConsumeQueue:
        """Make the queue of ``(topic, queue_id)`` (caller holds the lock, or recovery runs alone)."""
        cq = ConsumeQueue(
            self.directory / topic / str(queue_id), topic, queue_id, self._entries_per_file, self._io
        )
        queues = self.by_topic.get(topic)
        if queues is None:
            queues = self.by_topic[topic] = {}
        queues[queue_id] = cq
        return cq

    def get(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        """The queue of ``(topic, queue_id)``, ``None`` if it has none."""
        queues = self.by_topic.get(topic)
        return queues.get(queue_id) if queues is not None else None

    def get_or_create(self, topic: str, queue_id: int) -> ConsumeQueue:
        """The queue of ``(topic, queue_id)``, made (under the lock) on first use. Raises
        :class:`~rocketq.errors.ConfigError` for a negative queue id or an unusable topic name."""
        queues = self.by_topic.get(topic)
        if queues is not None:
            cq = queues.get(queue_id)
            if cq is not None:
                return cq
        if queue_id < 0:
            raise ConfigError(f"queue id must not be negative, got {queue_id}")
        check_topic_name(topic)
        with self._lock:
            cq = self.get(topic, queue_id)
            return cq if cq is not None else self.new(topic, queue_id)

    def topics(self) -> list[str]:
        return list(self.by_topic)

    def queue_ids(self, topic: str) -> list[int]:
        return sorted(self.by_topic.get(topic, {}))

    def delete_topics(self, topics: Iterable[str]) -> None:
        """Delete the queues of ``topics`` and their directories (takes the lock)."""
        with self._lock:
            for topic in topics:
                queues = self.by_topic.pop(topic, None)
                if not queues:
                    continue
                for cq in queues.values():
                    cq.destroy()
                with contextlib.suppress(OSError):
                    (self.directory / topic).rmdir()

    def destroy_all(self) -> None:
        """Delete every queue (recovery found an empty commit log: nothing they name exists)."""
        if any(self.by_topic.values()):
            log.warning("the commit log is empty: deleting every consume queue in %s", self.directory)
            for cq in self.all():
                cq.destroy()
        self.by_topic.clear()

    def close(self) -> None:
        for cq in self.all():
            cq.close()
