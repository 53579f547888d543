"""Where a consumer keeps its consume offsets (RocketMQ's ``OffsetStore`` implementations).

* :class:`RemoteBrokerOffsetStore` (clustering): offsets live on the broker that hosts the
  queue. The in-memory table is the truth while the consumer runs; it is sent to the brokers
  every 5 s (oneway ``UPDATE_CONSUMER_OFFSET``, as Java), piggy-backed on pulls, and synchronously
  at shutdown.
* :class:`LocalFileOffsetStore` (broadcasting): offsets in
  ``<dir>/<client id>/<group>/offsets.json`` in RocketMQ's own format (fastjson pretty-printed
  ``{"offsetTable":{{"brokerName":..,"queueId":..,"topic":..}:offset,...}}``, previous file kept
  as ``offsets.json.bak``).

``read_offset`` returns the offset, ``-1`` when there is none (a new group), or ``-2`` when it
could not be read (the broker did not answer): the caller then retries later rather than
guessing, as Java's ``computePullFromWhere`` does.
"""

from __future__ import annotations

import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path

from rocketq.client.api import ClientAPI
from rocketq.client.config import ReadOffsetType
from rocketq.errors import BrokerError, RemoteProtocolError, RocketQError
from rocketq.models import MessageQueue
from rocketq.protocol import calls
from rocketq.protocol.bodies import ResetOffsetBody

__all__ = ["LocalFileOffsetStore", "OffsetStore", "RemoteBrokerOffsetStore", "default_offset_dir"]

logger = logging.getLogger(__name__)

OFFSET_NOT_FOUND = -1
OFFSET_READ_ERROR = -2

BrokerLocator = Callable[[MessageQueue], Awaitable[str | None]]
"""Finds the master address of the broker hosting a queue (refreshing routes if needed)."""


class OffsetStore(ABC):
    """Consume offsets of one consumer group, by queue."""

    def __init__(self, group: str) -> None:
        self.group = group
        self._table: dict[MessageQueue, int] = {}

    async def load(self) -> None:  # noqa: B027 (optional hook)
        """Read persisted offsets (local file stores); nothing for the broker store."""

    def update_offset(self, mq: MessageQueue, offset: int, increase_only: bool) -> None:
        """Set the in-memory offset; with ``increase_only`` it never moves backwards."""
        current = self._table.get(mq)
        if current is None or not increase_only or offset > current:
            self._table[mq] = offset

    def remove_offset(self, mq: MessageQueue) -> None:
        """Forget the in-memory offset (a queue given away, or a stale one before re-adding)."""
        self._table.pop(mq, None)

    def memory_offset(self, mq: MessageQueue) -> int:
        """The in-memory offset, -1 when none."""
        return self._table.get(mq, OFFSET_NOT_FOUND)

    def clone_offset_table(self, topic: str | None = None) -> dict[MessageQueue, int]:
        return {mq: o for mq, o in self._table.items() if topic is None or mq.topic == topic}

    async def read_offset(self, mq: MessageQueue, how: ReadOffsetType) -> int:
        if how is not ReadOffsetType.READ_FROM_STORE:
            offset = self._table.get(mq)
            if offset is not None:
                return offset
            if how is ReadOffsetType.READ_FROM_MEMORY:
                return OFFSET_NOT_FOUND
        return await self._read_from_store(mq)

    @abstractmethod
    async def _read_from_store(self, mq: MessageQueue) -> int: ...

    @abstractmethod
    async def persist_all(self, mqs: Iterable[MessageQueue], *, oneway: bool = True) -> None:
        """Persist the offsets of ``mqs``; offsets of other queues are dropped from memory."""

    @abstractmethod
    async def persist(self, mq: MessageQueue, *, oneway: bool = True) -> None:
        """Persist one queue's in-memory offset (if it has one)."""

    async def update_consume_offset_to_broker(self, mq: MessageQueue, offset: int, *, oneway: bool) -> None:
        """Write ``offset`` for ``mq`` to where offsets persist (the pull consumer's seek/commit)."""
        self.update_offset(mq, offset, False)
        await self.persist(mq, oneway=oneway)


class RemoteBrokerOffsetStore(OffsetStore):
    """Clustering offsets, kept by the brokers (``RemoteBrokerOffsetStore``)."""

    def __init__(self, group: str, api: ClientAPI, locate: BrokerLocator) -> None:
        super().__init__(group)
        self._api = api
        self._locate = locate
        #: the view fence: the view stamp a queue was last pulled under, sent with its commits
        #: (set by a push consumer with ``view_fence``; None: commits carry no view)
        self.view_of: Callable[[MessageQueue], str | None] | None = None

    async def _read_from_store(self, mq: MessageQueue) -> int:
        try:
            addr = await self._locate(mq)
            if addr is None:
                logger.warning("no broker address for %s; cannot read its offset", mq)
                return OFFSET_READ_ERROR
            offset = await self._api.call(addr, calls.query_consumer_offset(self.group, mq))
        except BrokerError as exc:
            logger.debug("no offset for %s in group %s: %s", mq, self.group, exc)
            return OFFSET_NOT_FOUND
        except RocketQError as exc:
            logger.warning("cannot read the offset of %s for group %s: %s", mq, self.group, exc)
            return OFFSET_READ_ERROR
        if offset is None:  # QUERY_NOT_FOUND: the group has no offset here yet
            logger.debug("no offset for %s in group %s", mq, self.group)
            return OFFSET_NOT_FOUND
        self.update_offset(mq, offset, False)
        return offset

    async def _send(self, mq: MessageQueue, offset: int, oneway: bool) -> None:
        addr = await self._locate(mq)
        if addr is None:
            raise RocketQError(f"broker {mq.broker_name} not found for {mq}")
        view = self.view_of(mq) if self.view_of is not None else None
        call = calls.update_consumer_offset(self.group, mq, offset, oneway=oneway, view=view)
        await self._api.call(addr, call)

    async def persist_all(self, mqs: Iterable[MessageQueue], *, oneway: bool = True) -> None:
        keep = set(mqs)
        unused = []
        for mq, offset in list(self._table.items()):
            if mq in keep:
                try:
                    await self._send(mq, offset, oneway)
                except RocketQError as exc:
                    logger.warning("persisting offset %d of %s failed: %s", offset, mq, exc)
            else:
                unused.append(mq)
        for mq in unused:
            self._table.pop(mq, None)

    async def persist(self, mq: MessageQueue, *, oneway: bool = True) -> None:
        offset = self._table.get(mq)
        if offset is None:
            return
        try:
            await self._send(mq, offset, oneway)
        except RocketQError as exc:
            logger.warning("persisting offset %d of %s failed: %s", offset, mq, exc)


def default_offset_dir() -> str:
    """``$ROCKETMQ_CLIENT_LOCAL_OFFSET_STORE_DIR`` or ``~/.rocketmq_offsets`` (Java's default)."""
    return os.environ.get("ROCKETMQ_CLIENT_LOCAL_OFFSET_STORE_DIR") or str(Path.home() / ".rocketmq_offsets")


class LocalFileOffsetStore(OffsetStore):
    """Broadcasting offsets in a local file (``LocalFileOffsetStore``)."""

    def __init__(self, group: str, client_id: str, directory: str | None = None) -> None:
        super().__init__(group)
        base = Path(directory or default_offset_dir())
        self.path = base / client_id.replace(":", "_") / group / "offsets.json"

    def _read_file(self) -> dict[MessageQueue, int] | None:
        for candidate in (self.path, self.path.with_name(self.path.name + ".bak")):
            try:
                data = candidate.read_bytes()
            except FileNotFoundError:
                continue
            except OSError as exc:
                logger.warning("cannot read %s: %s", candidate, exc)
                continue
            if not data.strip():
                continue
            try:
                return dict(ResetOffsetBody.decode(data).offset_table)
            except RemoteProtocolError as exc:
                logger.warning("offset file %s is damaged (%s); trying the backup", candidate, exc)
        return None

    async def load(self) -> None:
        table = self._read_file()
        if table:
            self._table.update(table)

    async def _read_from_store(self, mq: MessageQueue) -> int:
        table = self._read_file()
        if table is None or mq not in table:
            return OFFSET_NOT_FOUND
        offset = table[mq]
        self.update_offset(mq, offset, False)
        return offset

    def _write(self, keep: set[MessageQueue]) -> None:
        table = {mq: o for mq, o in sorted(self._table.items()) if mq in keep}
        body = ResetOffsetBody(offset_table=table).encode(pretty=True)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_bytes(body)
        if self.path.exists():
            os.replace(self.path, self.path.with_name(self.path.name + ".bak"))
        os.replace(tmp, self.path)

    async def persist_all(self, mqs: Iterable[MessageQueue], *, oneway: bool = True) -> None:
        keep = set(mqs)
        if not self._table or not keep:
            return
        try:
            self._write(keep)
        except OSError as exc:
            logger.warning("cannot write offsets to %s: %s", self.path, exc)

    async def persist(self, mq: MessageQueue, *, oneway: bool = True) -> None:
        """Nothing, as in Java: the file holds every owned queue and is rewritten by
        :meth:`persist_all` (every 5 s and at shutdown); writing one queue would drop the others."""
