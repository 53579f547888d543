"""The order in which Java's ``HashMap``/``HashSet`` iterate, which is the order fastjson writes them in."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from rocketq.models import MessageQueue
from rocketq.protocol.properties import java_string_hash

__all__ = ["java_hash_order"]


T = TypeVar("T")


def _java_hash(key: object) -> int:
    if isinstance(key, str):
        return java_string_hash(key)
    if isinstance(key, bool):
        return 1231 if key else 1237
    if isinstance(key, int):
        if -(1 << 31) <= key < (1 << 31):
            return key  # Integer.hashCode
        value = key & 0xFFFFFFFFFFFFFFFF
        h = (value ^ (value >> 32)) & 0xFFFFFFFF  # Long.hashCode
        return h - (1 << 32) if h & 0x80000000 else h
    if isinstance(key, MessageQueue):
        # MessageQueue.hashCode: 31-based over brokerName, queueId, topic
        h = 31 + java_string_hash(key.broker_name)
        h = (31 * h + key.queue_id) & 0xFFFFFFFF
        h = (31 * h + java_string_hash(key.topic)) & 0xFFFFFFFF
        return h - (1 << 32) if h & 0x80000000 else h
    raise TypeError(f"no Java hashCode known for {type(key).__name__}")


def java_hash_order(keys: Iterable[T], *, long_keys: bool = False, capacity: int = 16) -> list[T]:
    """``keys`` (distinct, in insertion order) in the order a Java ``HashMap``/``HashSet`` iterates them.

    The table starts at ``capacity`` buckets and doubles whenever the size exceeds 3/4 of it; a key
    goes to bucket ``(h ^ (h >>> 16)) & (buckets - 1)`` with ``h`` its Java ``hashCode()``; a
    bucket keeps insertion order. Strings, ints (``Integer``, or ``Long`` with ``long_keys=True``)
    and :class:`~rocketq.models.MessageQueue` are supported. Tree bins (eight or more keys in one
    bucket) are not modelled. A ``ConcurrentHashMap`` spreads hashes the same way, so pass its
    table size (``new ConcurrentHashMap<>(1024)``, the broker's topic table, has 2048 buckets); its
    resizing may reorder keys that share a bucket, which this does not model either.

    >>> java_hash_order(["broker-a", "broker-b"])
    ['broker-b', 'broker-a']
    """
    items = list(keys)
    buckets = capacity
    while len(items) > buckets * 3 // 4:
        buckets *= 2
    mask = buckets - 1

    def bucket(key: T) -> int:
        h = _java_hash(key)
        if long_keys and isinstance(key, int) and not isinstance(key, bool):
            value = key & 0xFFFFFFFFFFFFFFFF
            h = (value ^ (value >> 32)) & 0xFFFFFFFF
        h &= 0xFFFFFFFF
        return (h ^ (h >> 16)) & mask

    indexed = sorted(range(len(items)), key=lambda i: (bucket(items[i]), i))
    return [items[i] for i in indexed]
