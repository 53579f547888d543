"""CONSISTENT_HASH against an independent reference and against numbers recorded from Java.

The golden constants were produced by a throwaway Java 17 program (kept out of the repository)
that applies RocketMQ 4.9.4's documented ``MD5Hash`` formula (first four digest bytes shifted
into a ``long``) and a ``TreeMap<Long, String>`` ring with ``tailMap(h).firstKey()`` routing,
virtual node keys ``cid + "-" + (i + existingReplicas)``, and queue keys
``MessageQueue.toString()``.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable, Sequence

import pytest

from rocketq.allocate import AllocateConsistentHash, HashRing, md5_hash, plan
from rocketq.allocate.consistent_hash import to_java_long
from rocketq.errors import ConfigError
from rocketq.models import MessageQueue


def mqs(n: int, topic: str = "topic_test", broker: str = "brokerName") -> list[MessageQueue]:
    return [MessageQueue(topic, broker, i) for i in range(n)]


# -- an independent reference, written differently -----------------------------------------------


def reference_md5(key: str) -> int:
    """Java: long h = 0; for 4 bytes: h <<= 8; h |= b & 0xFF  — emulated with explicit 64-bit wrap."""
    digest = hashlib.md5(key.encode("utf-8", "surrogatepass")).digest()
    h = 0
    for signed in struct.unpack(">4b", digest[:4]):  # Java bytes are signed
        h = (h << 8) & 0xFFFFFFFFFFFFFFFF
        h |= (signed & 0xFF) & 0xFFFFFFFFFFFFFFFF  # ((int) b) & 0xFF, widened to long
    return h - (1 << 64) if h >= 1 << 63 else h


def reference_allocate(
    current: str,
    mq_all: Sequence[MessageQueue],
    cid_all: Sequence[str],
    vnodes: int,
    fn: Callable[[str], int] = reference_md5,
) -> list[MessageQueue]:
    """A literal ring: a list of (hash, cid) pairs searched linearly, Java's put/replace semantics."""
    ring: dict[int, str] = {}
    for cid in cid_all:
        existing = sum(1 for owner in ring.values() if owner == cid)
        for i in range(vnodes):
            ring[fn(f"{cid}-{i + existing}")] = cid
    points = sorted(ring.items())
    result = []
    for mq in mq_all:
        if not points:
            continue
        h = fn(str(mq))
        owner = next((cid for point, cid in points if point >= h), points[0][1])
        if owner == current:
            result.append(mq)
    return result


# -- numbers recorded from Java 17 ---------------------------------------------------------------

JAVA_MD5 = {
    "CID-0-0": 1900518137,
    "CID-0-1": 2611424514,
    "CID-1-0": 1110034835,
    "CID-1-10": 338945811,
    "CID-1-19": 2465261147,
    "127.0.0.1@consumer-01-9": 1986980556,
    "MessageQueue [topic=topic_test, brokerName=brokerName, queueId=0]": 2171879703,
    "MessageQueue [topic=topic_test, brokerName=brokerName, queueId=5]": 1643945739,
    "MessageQueue [topic=TopicTest, brokerName=broker-a, queueId=3]": 3652785994,
    "": 3558706393,
    "héllo-0": 3737035519,
    "été@hôte-3": 4263812015,
    "\U0001f600-1": 3148222057,
    "\ud83d\ude00-1": 3148222057,  # a surrogate pair spelled as two code points: same Java string
    "\ud800-0": 118126210,  # a lone surrogate: Java's getBytes writes '?'
    "?-0": 118126210,
}


@pytest.mark.parametrize(("key", "expected"), list(JAVA_MD5.items()))
def test_md5_hash_matches_java(key: str, expected: int) -> None:
    assert md5_hash(key) == expected


@pytest.mark.parametrize("key", [k for k in JAVA_MD5 if "\ud800" not in k and "\ud83d" not in k])
def test_md5_hash_matches_the_reference(key: str) -> None:
    assert md5_hash(key) == reference_md5(key)


# Ownership recorded from the Java reproduction (queue ids per client id).
JAVA_RINGS: list[tuple[list[str], int, str, str, int, dict[str, list[int]]]] = [
    (["CID-0", "CID-1"], 3, "topic_test", "brokerName", 6, {"CID-0": [0, 3, 5], "CID-1": [1, 2, 4]}),
    (
        ["CID-0", "CID-1", "CID-2", "CID-3"],
        10,
        "topic_test",
        "brokerName",
        20,
        {
            "CID-0": [1, 13, 16, 18, 19],
            "CID-1": [11, 15, 17],
            "CID-2": [0, 3, 4, 5, 8],
            "CID-3": [2, 6, 7, 9, 10, 12, 14],
        },
    ),
    (
        ["127.0.0.1@consumer-1", "127.0.0.1@consumer-2", "127.0.0.1@consumer-3"],
        10,
        "TopicTest",
        "broker-a",
        16,
        {
            "127.0.0.1@consumer-1": [1, 4, 10, 13],
            "127.0.0.1@consumer-2": [0, 7, 8, 9, 12, 15],
            "127.0.0.1@consumer-3": [2, 3, 5, 6, 11, 14],
        },
    ),
    # A duplicated id owns CID-1-0 ... CID-1-19: twice the points, a bigger share for both processes.
    (
        ["CID-0", "CID-1", "CID-1", "CID-2"],
        10,
        "topic_test",
        "brokerName",
        20,
        {
            "CID-0": [1, 13, 16, 18, 19],
            "CID-1": [0, 2, 6, 7, 9, 10, 11, 12, 15, 17],
            "CID-2": [3, 4, 5, 8, 14],
        },
    ),
    # Unsorted ids: the ring does not care about list order.
    (
        ["CID-2", "CID-0", "CID-1"],
        3,
        "topic_test",
        "brokerName",
        10,
        {"CID-2": [4], "CID-0": [0, 3, 5, 6, 7, 8], "CID-1": [1, 2, 9]},
    ),
]


@pytest.mark.parametrize(("clients", "vnodes", "topic", "broker", "n", "expected"), JAVA_RINGS)
def test_allocation_matches_java(
    clients: list[str], vnodes: int, topic: str, broker: str, n: int, expected: dict[str, list[int]]
) -> None:
    queues = mqs(n, topic, broker)
    strategy = AllocateConsistentHash(vnodes)
    for cid in clients:
        got = strategy.allocate("g", cid, queues, clients)
        assert [q.queue_id for q in got] == expected[cid]
        assert got == reference_allocate(cid, queues, clients, vnodes)
    whole = strategy.allocate_all("g", queues, clients)
    assert {c: [q.queue_id for q in v] for c, v in whole.items()} == expected


def test_default_is_ten_virtual_nodes() -> None:
    assert AllocateConsistentHash().virtual_nodes == 10
    assert len(HashRing(["a", "b", "c"], 10)) == 30


def test_zero_virtual_nodes_route_nothing() -> None:
    strategy = AllocateConsistentHash(0)
    assert strategy.allocate("g", "a", mqs(3), ["a"]) == []
    assert HashRing(["a"], 0).route("x") is None
    assert plan(strategy, "g", mqs(3), ["a"]).unowned == tuple(mqs(3))


def test_negative_virtual_nodes_rejected_like_java() -> None:
    with pytest.raises(ConfigError, match="illegal virtualNodeCnt :-1"):
        AllocateConsistentHash(-1)
    with pytest.raises(ConfigError, match="illegal virtual node counts :-2"):
        HashRing(["a"], -2)


def test_the_first_point_at_or_after_the_hash_wins_and_the_ring_wraps() -> None:
    def by_number(key: str) -> int:
        # vnode keys "x-N" hash to N*10; queue keys hash to their queue id
        if key.startswith("MessageQueue"):
            return int(key.rsplit("=", 1)[1].rstrip("]"))
        cid, n = key.rsplit("-", 1)
        return int(n) * 10 + (5 if cid == "b" else 0)

    # ring: a-0 -> 0, b-0 -> 5, a-1 -> 10, b-1 -> 15
    strategy = AllocateConsistentHash(2, by_number)
    queues = mqs(17)
    got = strategy.allocate_all("g", queues, ["a", "b"])
    assert [q.queue_id for q in got["a"]] == [0, 6, 7, 8, 9, 10, 16]  # 16 > 15 wraps to the first point
    assert [q.queue_id for q in got["b"]] == [1, 2, 3, 4, 5, 11, 12, 13, 14, 15]
    for cid in ("a", "b"):
        assert got[cid] == reference_allocate(cid, queues, ["a", "b"], 2, by_number)


def test_colliding_points_are_replaced_and_counted_as_java_counts_them() -> None:
    def index_hash(key: str) -> int:
        if key.startswith("MessageQueue"):
            return int(key.rsplit("=", 1)[1].rstrip("]"))
        return int(key.rsplit("-", 1)[1])

    queues = mqs(4)
    # [a, b]: b's points 0 and 1 replace a's: b owns every point.
    assert [c for _, c in HashRing(["a", "b"], 2, index_hash).points()] == ["b", "b"]
    # [a, a, b]: the second a numbers its points from 2 (a-2, a-3); b then replaces 0 and 1.
    ring = HashRing(["a", "a", "b"], 2, index_hash)
    assert ring.points() == [(0, "b"), (1, "b"), (2, "a"), (3, "a")]
    # [a, b, a]: b replaced all of a's points, so the second a finds none and reuses a-0, a-1.
    assert HashRing(["a", "b", "a"], 2, index_hash).points() == [(0, "a"), (1, "a")]
    strategy = AllocateConsistentHash(2, index_hash)
    for clients in (["a", "b"], ["a", "a", "b"], ["a", "b", "a"]):
        for cid in set(clients):
            expected = reference_allocate(cid, queues, clients, 2, index_hash)
            assert strategy.allocate("g", cid, queues, clients) == expected


def test_custom_hash_results_wrap_to_java_long() -> None:
    # 2**64 + 7 is 7 as a Java long; 2**63 is Long.MIN_VALUE and sorts first.
    values = {"a-0": 2**64 + 7, "b-0": 2**63}
    ring = HashRing(["a", "b"], 1, lambda key: values.get(key, 3))
    assert ring.points() == [(-(2**63), "b"), (7, "a")]
    assert ring.route("anything") == "a"  # hashes to 3: next point is 7
    assert to_java_long(-(2**63) - 1) == 2**63 - 1


def test_plan_builds_the_ring_once_and_matches_per_consumer_results() -> None:
    calls = 0

    def counting(key: str) -> int:
        nonlocal calls
        calls += 1
        return md5_hash(key)

    clients = [f"c{i}" for i in range(20)]
    strategy = AllocateConsistentHash(10, counting)
    result = plan(strategy, "g", mqs(50), clients)
    assert calls == 20 * 10 + 50
    for cid in clients:
        assert result[cid] == AllocateConsistentHash(10).allocate("g", cid, mqs(50), sorted(clients))
