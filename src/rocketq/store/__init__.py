"""rocketq's message store: commit log, consume queues, message index, checkpoint, recovery, config files.

Pure storage: no networking and no asyncio. The broker composes a :class:`MessageStore`; see
:mod:`rocketq.store.message_store` for how appends, durability and reads work.
"""

from __future__ import annotations

from rocketq.store.config import CQ_ENTRY_SIZE, FlushMode, StoreConfig
from rocketq.store.configfiles import ConfigTable, read_with_backup, write_atomically
from rocketq.store.message_store import (
    ArrivalListener,
    GetMessageResult,
    GetMessageStatus,
    MessageStore,
    PropertyFilter,
    PutResult,
    QueryMessageResult,
    TagsCodeFunction,
    default_tags_code,
)
from rocketq.store.offsets import ConsumerOffsetTable
from rocketq.store.segments import FileIO

__all__ = [
    "CQ_ENTRY_SIZE",
    "ArrivalListener",
    "ConfigTable",
    "ConsumerOffsetTable",
    "FileIO",
    "FlushMode",
    "GetMessageResult",
    "GetMessageStatus",
    "MessageStore",
    "PropertyFilter",
    "PutResult",
    "QueryMessageResult",
    "StoreConfig",
    "TagsCodeFunction",
    "default_tags_code",
    "read_with_backup",
    "write_atomically",
]
