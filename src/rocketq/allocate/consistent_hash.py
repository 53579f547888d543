"""``CONSISTENT_HASH``: RocketMQ's ``AllocateMessageQueueConsistentHash`` and its hash ring.

Facts reproduced from RocketMQ 4.9.4 (``common/.../consistenthash``):

* The default hash is MD5 of the key's bytes (``String.getBytes()``, the platform charset; we
  use UTF-8, Java 18's fixed default and the usual Linux one), of which the first four digest
  bytes, big-endian, make an unsigned 32-bit number held in a Java ``long``.
* Consumer ``cid``'s virtual node *k* hashes the string ``f"{cid}-{k}"``. Virtual nodes are
  numbered on from the ones the id already has on the ring, so a client id listed twice owns
  ``2 * virtual_nodes`` points (``cid-0`` ... ``cid-19`` for the default 10), which shifts the
  other consumers' shares; both processes then take the same queues.
* Points live in a ``TreeMap<Long, ...>``: a later point with the same hash replaces the earlier.
* A queue hashes ``str(mq)`` (RocketMQ's ``MessageQueue.toString()``) and belongs to the first
  point at or after its hash (``tailMap(h).firstKey()``), wrapping to the smallest point.
"""

from __future__ import annotations

import hashlib
import struct
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence

from rocketq.allocate.base import (
    AllocationStrategy,
    check_arguments,
    check_arguments_all,
    first_indexes,
    reject_empty_ids,
)
from rocketq.errors import ConfigError
from rocketq.models import MessageQueue

__all__ = [
    "DEFAULT_VIRTUAL_NODES",
    "AllocateConsistentHash",
    "HashFunction",
    "HashRing",
    "md5_hash",
    "to_java_long",
]

HashFunction = Callable[[str], int]
"""A hash of a string to a Java ``long``; results outside the ``long`` range wrap as Java's would."""

DEFAULT_VIRTUAL_NODES = 10
"""RocketMQ's default number of virtual nodes per consumer."""

_MASK64 = (1 << 64) - 1
_SIGN64 = 1 << 63


def to_java_long(value: int) -> int:
    """``value`` wrapped to a signed 64-bit integer, as a Java ``long`` would hold it.

    >>> to_java_long(2**63), to_java_long(-1), to_java_long(2**64 + 5)
    (-9223372036854775808, -1, 5)
    """
    value &= _MASK64
    return value - (1 << 64) if value & _SIGN64 else value


def _java_bytes(key: str) -> bytes:
    """The UTF-8 bytes Java's ``getBytes`` gives: surrogate pairs joined, lone surrogates as ``?``."""
    if key.isascii():
        return key.encode("ascii")
    joined = key.encode("utf-16-be", "surrogatepass").decode("utf-16-be", "surrogatepass")
    return joined.encode("utf-8", "replace")


_md5 = hashlib.md5
_first_u32 = struct.Struct(">I").unpack_from


def md5_hash(key: str) -> int:
    """RocketMQ's default ring hash: the first 4 bytes of MD5(key), big-endian, unsigned.

    >>> md5_hash("CID-0-0")
    1900518137
    """
    data = key.encode("ascii") if key.isascii() else _java_bytes(key)
    value: int = _first_u32(_md5(data).digest())[0]
    return value


class HashRing:
    """The ring of RocketMQ's ``ConsistentHashRouter``, built once from a list of client ids.

    >>> ring = HashRing(["c1", "c2"], 3)
    >>> len(ring), ring.route("MessageQueue [topic=T, brokerName=broker-a, queueId=0]") in {"c1", "c2"}
    (6, True)
    """

    __slots__ = ("_hash", "_keys", "_owners")

    def __init__(
        self, client_ids: Iterable[str], virtual_nodes: int, hash_function: HashFunction | None = None
    ) -> None:
        if virtual_nodes < 0:
            raise ConfigError(f"illegal virtual node counts :{virtual_nodes}")
        fn = md5_hash if hash_function is None else hash_function
        custom = hash_function is not None
        ring: dict[int, str] = {}
        points: dict[str, int] = {}  # how many ring points each id owns right now
        for cid in client_ids:
            existing = points.get(cid, 0)
            for i in range(existing, existing + virtual_nodes):
                h = fn(f"{cid}-{i}")
                if custom:
                    h = to_java_long(h)
                replaced = ring.get(h)
                if replaced is not None:
                    points[replaced] -= 1
                ring[h] = cid
                points[cid] = points.get(cid, 0) + 1
        self._hash = (lambda key: to_java_long(fn(key))) if custom else fn
        self._keys = sorted(ring)
        self._owners = [ring[k] for k in self._keys]

    def __len__(self) -> int:
        return len(self._keys)

    def route(self, key: str) -> str | None:
        """The client id owning ``key``: first point at or after its hash, else the first point."""
        if not self._keys:
            return None
        i = bisect_left(self._keys, self._hash(key))
        return self._owners[i if i < len(self._keys) else 0]

    def points(self) -> list[tuple[int, str]]:
        """The ring's ``(hash, client id)`` points in ring order."""
        return list(zip(self._keys, self._owners, strict=True))


class AllocateConsistentHash(AllocationStrategy):
    """``CONSISTENT_HASH``: each queue goes to the consumer whose ring point follows its hash.

    Adding or removing a consumer moves only the queues next to its points; shares are uneven
    (a consumer may get nothing). ``hash_function`` replaces MD5 (a ``str -> int`` callable).

    >>> qs = [MessageQueue("topic_test", "brokerName", i) for i in range(6)]
    >>> s = AllocateConsistentHash(3)
    >>> [[q.queue_id for q in s.allocate("g", c, qs, ["CID-0", "CID-1"])] for c in ["CID-0", "CID-1"]]
    [[0, 3, 5], [1, 2, 4]]
    """

    __slots__ = ("_hash_function", "_virtual_nodes")

    def __init__(
        self, virtual_nodes: int = DEFAULT_VIRTUAL_NODES, hash_function: HashFunction | None = None
    ) -> None:
        if virtual_nodes < 0:
            raise ConfigError(f"illegal virtualNodeCnt :{virtual_nodes}")
        self._virtual_nodes = virtual_nodes
        self._hash_function = hash_function

    @property
    def name(self) -> str:
        return "CONSISTENT_HASH"

    @property
    def virtual_nodes(self) -> int:
        """Ring points per consumer (RocketMQ's ``virtualNodeCnt``, default 10)."""
        return self._virtual_nodes

    @property
    def hash_function(self) -> HashFunction | None:
        """The custom hash, or ``None`` for RocketMQ's MD5-based default."""
        return self._hash_function

    def ring(self, cid_all: Iterable[str]) -> HashRing:
        """The hash ring this strategy builds for ``cid_all``."""
        return HashRing(cid_all, self._virtual_nodes, self._hash_function)

    def allocate(
        self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        if not check_arguments(consumer_group, current_cid, mq_all, cid_all):
            return []
        route = self.ring(cid_all).route
        return [mq for mq in mq_all if route(str(mq)) == current_cid]

    def allocate_all(
        self, consumer_group: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> dict[str, list[MessageQueue]]:
        # Every consumer builds the same ring from the same list, so build it once.
        if not check_arguments_all(mq_all, cid_all, empty_ids=False):
            return {}
        route = self.ring(cid_all).route  # a custom hash may fail here, as the first call would
        reject_empty_ids(cid_all)
        result: dict[str, list[MessageQueue]] = {cid: [] for cid in first_indexes(cid_all)}
        for mq in mq_all:
            owner = route(str(mq))
            if owner is not None:
                result[owner].append(mq)
        return result
