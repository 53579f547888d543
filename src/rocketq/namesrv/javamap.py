"""Java ``HashMap`` / ``HashSet`` iteration order, so the name server's JSON lists come out as RocketMQ's.

RocketMQ's name server keeps its tables in ``java.util.HashMap``s and writes them with fastjson in
iteration order: topic lists, cluster info, the queue and broker lists of a route. A Java client
does not care about that order, but golden captures and people diffing two name servers' answers
do, so rocketq reproduces it.

Java's rule (OpenJDK 8 and later), which :mod:`rocketq.protocol.javahash` implements: a map with
table size ``cap`` (a power of two) iterates its buckets in index order, the index of a key being
``(h ^ (h >>> 16)) & (cap - 1)`` where ``h`` is the key's ``hashCode()``; keys sharing a bucket
come in the order they were inserted (a resize splits each bucket keeping that relative order, and
a removed key that is put again goes to the end of its bucket). ``cap`` starts at the
constructor's initial capacity rounded up to a power of two (16 by default), doubles whenever the
size passes ``0.75 * cap``, and never shrinks.

A Python dict remembers insertion order with the same "re-insertion goes last" rule, so the Java
order is a stable sort of the dict's keys by bucket index. Not modelled: the tree bins Java
builds when eight or more keys collide in one bucket of a table of 64 or more (their iteration
order differs), and the resize Java performs instead when that happens in a smaller table. Both
need many keys with colliding hashes; the name server's tables never come close.

>>> m = JavaHashMap[str, int]()
>>> for name in ("broker-a", "broker-b"):
...     m[name] = 0
>>> list(m.java_keys())
['broker-b', 'broker-a']
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, MutableMapping
from typing import TypeVar

from rocketq.protocol.javahash import (
    DEFAULT_CAPACITY,
    hashmap_capacity,
    java_long_hash,
    java_string_hash,
    table_size_for,
)
from rocketq.protocol.javahash import java_bucket_order as _bucket_order
from rocketq.protocol.javahash import java_hash as _java_hash

__all__ = [
    "JavaHashMap",
    "JavaHashSet",
    "java_bucket_order",
    "java_hash",
    "java_long_hash",
    "java_string_hash",
    "table_size_for",
]

K = TypeVar("K", str, int)
V = TypeVar("V")


def java_hash(key: str | int) -> int:
    """``hashCode()`` of a ``String`` (for ``str``) or a ``Long`` (for ``int``) key."""
    return _java_hash(key, long_keys=True)


def java_bucket_order(keys: Iterable[K], cap: int) -> list[K]:
    """``keys`` (given in insertion order) in the iteration order of a Java table of size ``cap``
    (``int`` keys are ``Long``s)."""
    return _bucket_order(keys, cap, long_keys=True)


class JavaHashMap(MutableMapping[K, V]):
    """A dict that also knows the order a Java ``HashMap`` with the same history would iterate in.

    ``initial_capacity`` is the argument RocketMQ passes to the constructor (16 when it passes
    none). Mapping methods behave as a dict's and iterate in *insertion* order; :meth:`java_keys`,
    :meth:`java_values` and :meth:`java_items` give Java's order. The table size only grows, as
    Java's does, so removing keys does not change the order of the others.
    """

    __slots__ = ("_cap", "_data", "_order")

    def __init__(self, initial_capacity: int = DEFAULT_CAPACITY) -> None:
        self._data: dict[K, V] = {}
        self._cap = table_size_for(initial_capacity)
        self._order: list[K] | None = []

    @property
    def capacity(self) -> int:
        """The current table size."""
        return self._cap

    def __getitem__(self, key: K) -> V:
        return self._data[key]

    def __setitem__(self, key: K, value: V) -> None:
        data = self._data
        if key not in data:
            self._order = None
            data[key] = value
            self._cap = hashmap_capacity(len(data), self._cap)
        else:
            data[key] = value

    def __delitem__(self, key: K) -> None:
        del self._data[key]
        self._order = None

    def __iter__(self) -> Iterator[K]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def get(self, key: K, default: V | None = None) -> V | None:  # type: ignore[override]
        return self._data.get(key, default)

    def java_keys(self) -> list[K]:
        """The keys in Java's iteration order (cached until the key set changes)."""
        order = self._order
        if order is None:
            order = self._order = java_bucket_order(self._data, self._cap)
        return order

    def java_values(self) -> list[V]:
        """The values in Java's iteration order."""
        data = self._data
        return [data[k] for k in self.java_keys()]

    def java_items(self) -> list[tuple[K, V]]:
        """The items in Java's iteration order."""
        data = self._data
        return [(k, data[k]) for k in self.java_keys()]

    def __repr__(self) -> str:
        return f"JavaHashMap({dict(self.java_items())!r}, capacity={self._cap})"


class JavaHashSet(Iterable[K]):
    """A set of strings or ints remembering Java ``HashSet`` order (a ``HashMap`` of its elements)."""

    __slots__ = ("_map",)

    def __init__(self, items: Iterable[K] = (), initial_capacity: int = DEFAULT_CAPACITY) -> None:
        self._map: JavaHashMap[K, None] = JavaHashMap(initial_capacity)
        for item in items:
            self._map[item] = None

    def add(self, item: K) -> None:
        """``HashSet.add``: a no-op when ``item`` is already there (it keeps its place)."""
        if item not in self._map:
            self._map[item] = None

    def discard(self, item: K) -> bool:
        """Remove ``item``; returns whether it was there."""
        if item in self._map:
            del self._map[item]
            return True
        return False

    def __contains__(self, item: object) -> bool:
        return item in self._map

    def __len__(self) -> int:
        return len(self._map)

    def __iter__(self) -> Iterator[K]:
        """Iterate in Java's order."""
        return iter(self._map.java_keys())

    def __repr__(self) -> str:
        return f"JavaHashSet({list(self)!r})"
