"""The order in which Java's ``HashMap``/``HashSet`` iterate their keys, in one place.

RocketMQ peers write ext fields, message properties and fastjson bodies in the iteration order of
the Java map that held them; rocketq reproduces it so its bytes match a Java peer's. Java's rule
(OpenJDK 8 and later): a table of ``capacity`` buckets (a power of two; 16 for ``new HashMap<>()``)
puts a key in bucket ``(h ^ (h >>> 16)) & (capacity - 1)``, ``h`` being its ``hashCode()``, and
iterates buckets in index order, keys sharing a bucket in insertion order (a resize keeps that
relative order). The table doubles whenever the size passes 3/4 of it and never shrinks.

Not modelled: tree bins (eight or more keys colliding in one bucket of a table of 64 or more, whose
iteration order differs) and the resize Java does instead in a smaller table. A
``ConcurrentHashMap`` spreads hashes the same way, so its order is this one at its table size
(``new ConcurrentHashMap<>(1024)`` has 2048 buckets), except that its resizing may reorder keys
sharing a bucket.

>>> java_hash_order(["broker-a", "broker-b"])
['broker-b', 'broker-a']
>>> java_hash_order([3, 1 << 40, 2], long_keys=True)
[1099511627776, 2, 3]
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Final, TypeVar

from rocketq.models import MessageQueue

__all__ = [
    "DEFAULT_CAPACITY",
    "MAX_CAPACITY",
    "hashmap_capacity",
    "java_bucket",
    "java_bucket_order",
    "java_hash",
    "java_hash_order",
    "java_long_hash",
    "java_string_hash",
    "string_bucket",
    "table_size_for",
]

T = TypeVar("T")

DEFAULT_CAPACITY: Final = 16
"""The table size of ``new HashMap<>()`` (Java's ``DEFAULT_INITIAL_CAPACITY``)."""

MAX_CAPACITY: Final = 1 << 30
"""The largest table Java allocates (``MAXIMUM_CAPACITY``)."""


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode()``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units,
    wrapped to a signed 32-bit int.

    >>> java_string_hash(""), java_string_hash("TagA"), java_string_hash("\\U0001F600")
    (0, 2598919, 1772899)
    """
    h = 0
    if text.isascii():
        for ch in text.encode("ascii"):
            h = (31 * h + ch) & 0xFFFFFFFF
    else:
        units = text.encode("utf-16-be", "surrogatepass")
        for i in range(0, len(units), 2):
            h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


def java_long_hash(value: int) -> int:
    """Java's ``Long.hashCode()``: ``(int) (value ^ (value >>> 32))`` as a signed 32-bit int.

    >>> java_long_hash(0), java_long_hash(1), java_long_hash(-1)
    (0, 1, 0)
    """
    v = value & 0xFFFFFFFFFFFFFFFF
    h = (v ^ (v >> 32)) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


def java_hash(key: object, *, long_keys: bool = False) -> int:
    """Java's ``hashCode()`` of ``key`` as a signed 32-bit int.

    ``str`` is a ``String``, ``bool`` a ``Boolean``, ``int`` an ``Integer`` (a ``Long`` when it does
    not fit 32 bits, or always with ``long_keys=True``), and a :class:`~rocketq.models.MessageQueue`
    hashes as RocketMQ's (31-based over broker name, queue id, topic). Raises :class:`TypeError`
    for any other type.

    >>> java_hash("hello"), java_hash(True), java_hash(-5), java_hash(-5, long_keys=True)
    (99162322, 1231, -5, 4)
    """
    if isinstance(key, str):
        return java_string_hash(key)
    if isinstance(key, bool):
        return 1231 if key else 1237
    if isinstance(key, int):
        if not long_keys and -(1 << 31) <= key < (1 << 31):
            return key
        return java_long_hash(key)
    if isinstance(key, MessageQueue):
        h = 31 + java_string_hash(key.broker_name)
        h = (31 * h + key.queue_id) & 0xFFFFFFFF
        h = (31 * h + java_string_hash(key.topic)) & 0xFFFFFFFF
        return h - 0x100000000 if h & 0x80000000 else h
    raise TypeError(f"no Java hashCode known for {type(key).__name__}")


@lru_cache(maxsize=65536)
def string_bucket(key: str, capacity: int) -> int:
    """:func:`java_bucket` of a string key, memoised: peers hash the same few hundred names
    (header fields, property names, topics, brokers) over and over."""
    h = java_string_hash(key) & 0xFFFFFFFF
    return (h ^ (h >> 16)) & (capacity - 1)


def java_bucket(key: object, capacity: int, *, long_keys: bool = False) -> int:
    """The bucket of ``key`` in a Java table of ``capacity`` (a power of two) buckets:
    ``(h ^ (h >>> 16)) & (capacity - 1)`` with ``h`` = :func:`java_hash` of ``key``."""
    if type(key) is str:
        return string_bucket(key, capacity)
    h = java_hash(key, long_keys=long_keys) & 0xFFFFFFFF
    return (h ^ (h >> 16)) & (capacity - 1)


def table_size_for(capacity: int) -> int:
    """The table size Java picks for ``new HashMap<>(capacity)``: the next power of two (at least 1).

    >>> table_size_for(0), table_size_for(17), table_size_for(1024)
    (1, 32, 1024)
    """
    if capacity <= 1:
        return 1
    return min(1 << (capacity - 1).bit_length(), MAX_CAPACITY)


def hashmap_capacity(size: int, capacity: int = DEFAULT_CAPACITY) -> int:
    """The table size of a Java map that started at ``capacity`` buckets once it has held ``size``
    entries: doubled while ``size`` exceeds 3/4 of it (load factor 0.75), up to :data:`MAX_CAPACITY`.

    >>> hashmap_capacity(12), hashmap_capacity(13), hashmap_capacity(3, 1)
    (16, 32, 4)
    """
    while size > capacity * 3 // 4 and capacity < MAX_CAPACITY:
        capacity <<= 1
    return capacity


def java_bucket_order(keys: Iterable[T], capacity: int, *, long_keys: bool = False) -> list[T]:
    """``keys`` (distinct, in insertion order) in the iteration order of a Java table of exactly
    ``capacity`` buckets: a stable sort by :func:`java_bucket`."""
    return sorted(keys, key=lambda key: java_bucket(key, capacity, long_keys=long_keys))


def java_hash_order(
    keys: Iterable[T],
    *,
    long_keys: bool = False,
    capacity: int = DEFAULT_CAPACITY,
    max_entries: int | None = None,
) -> list[T]:
    """``keys``, inserted in the given order (a repeated key keeps its first place), in the order a
    Java ``HashMap``/``HashSet`` iterates them.

    The table starts at ``capacity`` buckets and grows with the number of keys; the table only
    grows, so if keys were removed before iteration pass the most entries the map ever held as
    ``max_entries``. Keys hash as :func:`java_hash` says (``long_keys=True`` for ``Long`` keys).

    >>> java_hash_order(["TAGS", "KEYS", "UNIQ_KEY", "WAIT", "color", "KEYS"])
    ['color', 'KEYS', 'UNIQ_KEY', 'WAIT', 'TAGS']
    """
    items = list(dict.fromkeys(keys))
    size = len(items) if max_entries is None or max_entries < len(items) else max_entries
    return java_bucket_order(items, hashmap_capacity(size, capacity), long_keys=long_keys)
