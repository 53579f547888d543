"""The process-wide message id generator (``MessageClientIDSetter``): one counter per process.

Every ``UNIQ_KEY`` this process gives a message - producer sends, trace records, request ids,
Spark writes - comes from one :class:`~rocketq.protocol.message_id.UniqIdGenerator`, made on first
use from the client's IP and the pid, as Java's static generator is.
"""

from __future__ import annotations

import os
import threading

from rocketq.client.config import local_ip
from rocketq.clock import now_ms
from rocketq.errors import ConfigError
from rocketq.protocol.message_id import UniqIdGenerator

__all__ = ["next_uniq_id", "next_uniq_ids"]

_lock = threading.Lock()
_generator: UniqIdGenerator | None = None


def _make(ip: str | None) -> UniqIdGenerator:
    salt = id(_lock) & 0xFFFFFFFF
    if ip is None:
        ip = local_ip()
    try:
        return UniqIdGenerator(ip=ip, pid=os.getpid(), salt=salt)
    except ConfigError:  # an address UniqIdGenerator cannot pack
        return UniqIdGenerator(ip="127.0.0.1", pid=os.getpid(), salt=salt)


def next_uniq_id(ip: str | None = None) -> str:
    """A new unique message id (``ip`` is used the first time only; default: the local IP)."""
    global _generator
    with _lock:
        if _generator is None:
            _generator = _make(ip)
        return _generator.next_id(now_ms())


def next_uniq_ids(count: int) -> tuple[str, list[int]]:
    """``count`` new unique ids made now, as :meth:`UniqIdGenerator.next_ids
    <rocketq.protocol.message_id.UniqIdGenerator.next_ids>` gives them (common head, counters)."""
    global _generator
    with _lock:
        if _generator is None:
            _generator = _make(None)
        return _generator.next_ids(now_ms(), count)
