"""Property tests: parity with literal transcriptions of the Java loops, and the group-level promises.

The ``java_*`` functions below transcribe RocketMQ 4.9.4's ``allocate`` bodies statement by
statement (``indexOf``, Java's ``/`` and ``%`` on non-negative ints, the ``(startIndex + i) %
size`` indexing), deliberately unlike the library's slicing code, so the two can be compared on
arbitrary — unsorted, duplicated — inputs.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.allocate import (
    AllocateAveragely,
    AllocateAveragelyByCircle,
    AllocateByMachineRoom,
    AllocateConsistentHash,
    AllocateMachineRoomNearby,
    AllocateSticky,
    AllocationStrategy,
    plan,
    plan_group,
    sticky_assignment,
)
from rocketq.models import MessageQueue

SETTINGS = settings(max_examples=150, deadline=None)


def java_index_of(items: Sequence[str], item: str) -> int:
    for i, x in enumerate(items):
        if x == item:
            return i
    return -1


def java_avg(current: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]) -> list[MessageQueue]:
    if current not in cid_all:
        return []
    index = java_index_of(cid_all, current)
    mod = len(mq_all) % len(cid_all)
    if len(mq_all) <= len(cid_all):
        average_size = 1
    elif mod > 0 and index < mod:
        average_size = len(mq_all) // len(cid_all) + 1
    else:
        average_size = len(mq_all) // len(cid_all)
    start_index = index * average_size if (mod > 0 and index < mod) else index * average_size + mod
    range_ = min(average_size, len(mq_all) - start_index)
    result = []
    i = 0
    while i < range_:
        result.append(mq_all[(start_index + i) % len(mq_all)])
        i += 1
    return result


def java_circle(current: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]) -> list[MessageQueue]:
    if current not in cid_all:
        return []
    index = java_index_of(cid_all, current)
    return [mq_all[i] for i in range(index, len(mq_all)) if i % len(cid_all) == index]


def java_machine_room(
    rooms: set[str], current: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
) -> list[MessageQueue]:
    if current not in cid_all:
        return []
    current_index = java_index_of(cid_all, current)
    premq = []
    for mq in mq_all:
        temp = mq.broker_name.split("@")
        while len(temp) > 1 and temp[-1] == "":
            temp.pop()
        if len(temp) == 2 and temp[0] in rooms:
            premq.append(mq)
    mod = len(premq) // len(cid_all)
    rem = len(premq) % len(cid_all)
    result = [premq[i] for i in range(mod * current_index, mod * current_index + mod)]
    if rem > current_index:
        result.append(premq[current_index + mod * len(cid_all)])
    return result


# -- input generators -----------------------------------------------------------------------------

brokers = st.sampled_from(["broker-a", "broker-b", "room1@broker-a", "room2@broker-b", "room1@x@", "@b"])
queues = st.builds(MessageQueue, st.sampled_from(["TopicA", "TopicB"]), brokers, st.integers(0, 40))
queue_lists = st.lists(queues, min_size=1, max_size=60)
client_ids = st.sampled_from([f"10.0.0.{i}@{i}" for i in range(12)] + ["room1@c", "room2@c", "ü@7"])
client_lists = st.lists(client_ids, min_size=1, max_size=14)
distinct_client_lists = st.lists(client_ids, min_size=1, max_size=14, unique=True)
distinct_queue_lists = st.lists(queues, min_size=1, max_size=60, unique=True)


# -- parity with the Java transcriptions, on raw (unsorted, duplicated) lists --------------------


@SETTINGS
@given(queue_lists, client_lists, st.data())
def test_avg_matches_java_transcription(
    mq_all: list[MessageQueue], cid_all: list[str], data: st.DataObject
) -> None:
    strategy = AllocateAveragely()
    current = data.draw(st.sampled_from([*cid_all, "absent@0"]))
    assert strategy.allocate("g", current, mq_all, cid_all) == java_avg(current, mq_all, cid_all)


@SETTINGS
@given(queue_lists, client_lists, st.data())
def test_circle_matches_java_transcription(
    mq_all: list[MessageQueue], cid_all: list[str], data: st.DataObject
) -> None:
    strategy = AllocateAveragelyByCircle()
    current = data.draw(st.sampled_from([*cid_all, "absent@0"]))
    assert strategy.allocate("g", current, mq_all, cid_all) == java_circle(current, mq_all, cid_all)


@SETTINGS
@given(queue_lists, client_lists, st.sets(st.sampled_from(["room1", "room2", ""])), st.data())
def test_machine_room_matches_java_transcription(
    mq_all: list[MessageQueue], cid_all: list[str], rooms: set[str], data: st.DataObject
) -> None:
    strategy = AllocateByMachineRoom(rooms)
    current = data.draw(st.sampled_from(cid_all))
    assert strategy.allocate("g", current, mq_all, cid_all) == java_machine_room(
        rooms, current, mq_all, cid_all
    )


def _strategies() -> list[AllocationStrategy]:
    return [
        AllocateAveragely(),
        AllocateAveragelyByCircle(),
        AllocateByMachineRoom({"room1"}),
        AllocateMachineRoomNearby(AllocateAveragely()),
        AllocateMachineRoomNearby(AllocateConsistentHash(3)),
        AllocateConsistentHash(4),
        AllocateSticky(),
    ]


@SETTINGS
@given(
    queue_lists,
    st.lists(st.one_of(client_ids, st.just("")), min_size=1, max_size=14),
    st.sampled_from(range(7)),
)
def test_allocate_all_equals_the_per_consumer_loop(
    mq_all: list[MessageQueue], cid_all: list[str], k: int
) -> None:
    strategy = _strategies()[k]
    expected: object
    try:
        expected = {cid: strategy.allocate("g", cid, mq_all, cid_all) for cid in dict.fromkeys(cid_all)}
    except ValueError as exc:  # e.g. MACHINE_ROOM_NEARBY on a broker with no room: the same error
        expected = str(exc)
    try:
        got: object = strategy.allocate_all("g", mq_all, cid_all)
    except ValueError as exc:
        got = str(exc)
    assert got == expected


# -- group-level promises, with distinct client ids -----------------------------------------------


def _random_previous(rng: random.Random, mq_all: list[MessageQueue], cid_all: list[str]) -> dict[str, list]:
    pool = [*cid_all, "gone@1", "gone@2"]
    previous: dict[str, list[MessageQueue]] = {}
    for mq in mq_all:
        if rng.random() < 0.8:
            previous.setdefault(rng.choice(pool), []).append(mq)
    previous.setdefault(rng.choice(pool), []).append(MessageQueue("Gone", "broker-z", 0))
    return previous


@SETTINGS
@given(
    distinct_queue_lists,
    distinct_client_lists,
    st.sampled_from(["AVG", "CIRCLE", "HASH", "STICKY"]),
    st.randoms(),
)
def test_every_queue_has_exactly_one_owner(
    mq_all: list[MessageQueue], cid_all: list[str], which: str, rng: random.Random
) -> None:
    strategy: AllocationStrategy = {
        "AVG": AllocateAveragely(),
        "CIRCLE": AllocateAveragelyByCircle(),
        "HASH": AllocateConsistentHash(),
        "STICKY": AllocateSticky(_random_previous(rng, mq_all, cid_all)),
    }[which]
    # every consumer computes its own share from the same (sorted) inputs
    shuffled_mq, shuffled_cid = list(mq_all), list(cid_all)
    rng.shuffle(shuffled_mq)
    rng.shuffle(shuffled_cid)
    result = plan(strategy, "g", shuffled_mq, shuffled_cid)
    taken = Counter(mq for share in result.values() for mq in share)
    assert set(taken) == set(mq_all)
    assert set(taken.values()) == {1}
    assert result.ok
    assert not result.unowned
    assert not result.shared
    # deterministic: any input order, any run
    assert plan(strategy, "g", mq_all, cid_all) == result
    if which != "HASH":
        assert result.spread <= 1


@SETTINGS
@given(distinct_queue_lists, distinct_client_lists, st.randoms())
def test_sticky_keeps_the_most_queues_possible(
    mq_all: list[MessageQueue], cid_all: list[str], rng: random.Random
) -> None:
    previous = _random_previous(rng, mq_all, cid_all)
    after = sticky_assignment(previous, mq_all, cid_all)
    n, c = len(mq_all), len(cid_all)
    base, extra = divmod(n, c)
    assert sorted(len(v) for v in after.values()) == sorted([base + 1] * extra + [base] * (c - extra))
    # Upper bound on queues any balanced assignment can leave in place (previous is disjoint here).
    offered = set(mq_all)
    held = [len([mq for mq in previous.get(cid, ()) if mq in offered]) for cid in cid_all]
    best = sum(min(h, base) for h in held) + min(extra, sum(1 for h in held if h > base))
    kept = sum(1 for cid in cid_all for mq in after[cid] if mq in previous.get(cid, ()))
    assert kept == best


@SETTINGS
@given(distinct_queue_lists, distinct_client_lists)
def test_sticky_without_history_is_avg(mq_all: list[MessageQueue], cid_all: list[str]) -> None:
    assert plan(AllocateSticky(), "g", mq_all, cid_all) == plan(AllocateAveragely(), "g", mq_all, cid_all)


@SETTINGS
@given(
    st.dictionaries(st.sampled_from(["T1", "T2", "T3", "%RETRY%g"]), st.integers(0, 9), min_size=1),
    st.integers(1, 12),
    st.sampled_from(["AVG", "AVG_BY_CIRCLE"]),
)
def test_group_balance_keeps_topics_and_totals_balanced(
    sizes: dict[str, int], consumers: int, name: str
) -> None:
    strategy = AllocateAveragely() if name == "AVG" else AllocateAveragelyByCircle()
    topics = {t: [MessageQueue(t, "broker-a", i) for i in range(n)] for t, n in sizes.items()}
    cid_all = [f"10.0.0.1@c{i:02d}" for i in range(consumers)]
    grouped = plan_group(strategy, "g", topics, cid_all, balance="group")
    assert grouped.spread <= 1
    assert grouped.ok or not grouped.queues
    for topic_plan in grouped.topics.values():
        assert topic_plan.spread <= 1
        assert not topic_plan.unowned
        assert not topic_plan.shared
