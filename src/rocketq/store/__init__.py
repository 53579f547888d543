"""rocketq's message store: commit log, consume queues, message index, checkpoint, recovery, config files.

Pure storage: no networking and no asyncio. The broker composes a :class:`MessageStore`; see
:mod:`rocketq.store.message_store` for how appends, durability and reads work.
"""

from __future__ import annotations

from rocketq.store import message_store
from rocketq.store.config import CQ_ENTRY_SIZE, FlushMode, StoreConfig
from rocketq.store.configfiles import ConfigTable, read_with_backup, write_atomically
from rocketq.store.message_store import *  # noqa: F403 - re-exported below, from message_store.__all__
from rocketq.store.offsets import ConsumerOffsetTable
from rocketq.store.segments import FileIO

__all__ = [
    "CQ_ENTRY_SIZE",
    "ConfigTable",
    "ConsumerOffsetTable",
    "FileIO",
    "FlushMode",
    "StoreConfig",
    "read_with_backup",
    "write_atomically",
]
__all__ += message_store.__all__
__all__.remove("RecordProperties")
__all__.remove("record_properties")
