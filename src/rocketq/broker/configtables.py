"""The broker's config tables: configs by name, with a data version every write advances.

Topic configs and subscription group configs are kept alike (RocketMQ's ``TopicConfigManager``
and ``SubscriptionGroupManager`` each hold a map and a ``DataVersion``, and ``ConfigManager``
writes them as JSON): :class:`VersionedTable` is that table, in memory. The tables of
:mod:`~rocketq.broker.topics` and :mod:`~rocketq.broker.subscriptions` add their body (the
``TopicConfigSerializeWrapper`` / ``SubscriptionGroupWrapper`` they are written as) and come in
two kinds: kept in memory only, or in a file of the store's ``config/`` directory
(:class:`~rocketq.store.configfiles.ConfigTable`), which the store loads and writes for the broker
(:meth:`~rocketq.store.MessageStore.add_config_table`) without knowing what they hold: the store
depends on no body of the protocol.

Thread safety: the broker's loop writes; the store's flush thread reads a snapshot (``all``,
the body) under the table's lock. ``get`` takes no lock: it is on every send and pull path, and a
dict look-up is atomic.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path
from typing import ClassVar, Generic, Protocol, TypeVar

from rocketq.errors import ConfigError
from rocketq.protocol.bodies import DataVersion
from rocketq.store.configfiles import ConfigTable

__all__ = ["StoredTable", "VersionedTable"]

V = TypeVar("V")


class _Body(Protocol):
    def encode(self) -> bytes: ...


class VersionedTable(Generic[V]):
    """Configs by name and a :class:`DataVersion` advanced by every write (kept in memory).

    Subclasses say what a config's name is (:meth:`name_of`) and how to call it in an error
    (``NAMED``); :meth:`_written` runs, under the lock, after every write.
    """

    NAMED: ClassVar[str] = "config without a name"

    def __init__(self, data_version: DataVersion | None = None) -> None:
        self._table: dict[str, V] = {}
        self.data_version = data_version or DataVersion()
        self._lock = threading.RLock()

    @staticmethod
    def name_of(config: V) -> str | None:
        """The name ``config`` is kept under (``None`` or empty: it cannot be kept)."""
        raise NotImplementedError

    def get(self, name: str) -> V | None:
        return self._table.get(name)

    def all(self) -> dict[str, V]:
        """A snapshot of the whole table."""
        with self._lock:
            return dict(self._table)

    def put(self, config: V, *, now_ms: int) -> None:
        """Add or replace a config and advance the data version."""
        self.put_all((config,), now_ms=now_ms)

    def put_all(self, configs: Iterable[V], *, now_ms: int) -> None:
        """Add or replace several configs with one version step; :class:`ConfigError` (and
        nothing changed) if one has no name."""
        batch = [(self.name_of(config), config) for config in configs]
        for name, config in batch:
            if not name:
                raise ConfigError(f"{self.NAMED}: {config!r}")
        with self._lock:
            self._table.update((name or "", config) for name, config in batch)
            self.data_version = self.data_version.next_version(now_ms)
            self._written()

    def delete(self, name: str, *, now_ms: int) -> V | None:
        """Remove a config; return it (``None``, and no version step, if there was none)."""
        with self._lock:
            old = self._table.pop(name, None)
            if old is not None:
                self.data_version = self.data_version.next_version(now_ms)
                self._written()
            return old

    def _replace(self, table: dict[str, V], data_version: DataVersion) -> None:
        """Take a whole table read back from a file (no version step: it is the file's)."""
        with self._lock:
            self._table = dict(table)
            self.data_version = data_version

    def _written(self) -> None:
        """A write happened (the lock is held): a persisted table marks itself dirty."""

    def __contains__(self, name: object) -> bool:
        return name in self._table

    def __len__(self) -> int:
        return len(self._table)


class StoredTable(VersionedTable[V], ConfigTable):
    """A :class:`VersionedTable` in a file of the store's ``config/`` directory: its content is
    the body :meth:`wrapper` gives (RocketMQ's format), read back by :meth:`unwrap`; the store
    loads it and writes it whenever it changed
    (:meth:`~rocketq.store.MessageStore.add_config_table`)."""

    def __init__(self, path: Path) -> None:
        VersionedTable.__init__(self)
        ConfigTable.__init__(self, path)

    def wrapper(self) -> _Body:
        """The table and its version as the body the file holds."""
        raise NotImplementedError

    @staticmethod
    def unwrap(data: bytes) -> tuple[dict[str, V], DataVersion]:
        """The table and the version in a file's content."""
        raise NotImplementedError

    def encode(self) -> bytes:
        return self.wrapper().encode()

    def snapshot(self) -> object:
        return self.wrapper()  # a copy of the table: serialized after the lock is released

    def serialize(self, snapshot: object) -> bytes:
        body: _Body = snapshot  # type: ignore[assignment]  # what snapshot() returned
        return body.encode()

    def decode(self, data: bytes) -> None:
        self._replace(*self.unwrap(data))

    def _written(self) -> None:
        self._changed()
