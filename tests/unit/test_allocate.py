"""Golden parity tests for RocketMQ's strategies.

Expected lists come from reading RocketMQ 4.9.4's classes (``client/.../consumer/rebalance``)
and their unit tests, and from working the Java arithmetic by hand for the cases those tests do
not cover (duplicated ids, unsorted input, remainders). Each case says where it comes from.
"""

from __future__ import annotations

import doctest
import importlib
import logging
from collections.abc import Sequence

import pytest

import rocketq.allocate
from rocketq.allocate import (
    AllocateAveragely,
    AllocateAveragelyByCircle,
    AllocateByConfig,
    AllocateByMachineRoom,
    AllocateConsistentHash,
    AllocateMachineRoomNearby,
    AllocateSticky,
    AllocationStrategy,
    AtSignRoomResolver,
    get_strategy,
    registry,
    strategy_names,
)
from rocketq.allocate.machine_room import java_split_at
from rocketq.errors import ConfigError
from rocketq.models import MessageQueue


def mqs(n: int, topic: str = "topic", broker: str = "brokerName") -> list[MessageQueue]:
    return [MessageQueue(topic, broker, i) for i in range(n)]


def cids(n: int, prefix: str = "CID_PREFIX") -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


def ids(queues: Sequence[MessageQueue]) -> list[int]:
    return [q.queue_id for q in queues]


def shares(strategy: AllocationStrategy, queues: list[MessageQueue], clients: list[str]) -> list[list[int]]:
    return [ids(strategy.allocate("group", c, queues, clients)) for c in clients]


ALL_ROCKETMQ: list[AllocationStrategy] = [
    AllocateAveragely(),
    AllocateAveragelyByCircle(),
    AllocateByMachineRoom({"room1"}),
    AllocateMachineRoomNearby(AllocateAveragely()),
    AllocateConsistentHash(),
]


# -- every module's worked examples are true ------------------------------------------------------


@pytest.mark.parametrize(
    "module",
    [
        "",
        ".average",
        ".base",
        ".config",
        ".consistent_hash",
        ".machine_room",
        ".plan",
        ".registry",
        ".sticky",
    ],
)
def test_docstring_examples(module: str) -> None:
    loaded = importlib.import_module(f"rocketq.allocate{module}")
    failures, tried = doctest.testmod(loaded, optionflags=doctest.ELLIPSIS)
    assert tried > 0
    assert failures == 0


# -- AbstractAllocateMessageQueueStrategy.check ---------------------------------------------------


@pytest.mark.parametrize("strategy", [*ALL_ROCKETMQ, AllocateSticky()], ids=lambda s: s.name)
def test_argument_checks_raise_rocketmq_messages(strategy: AllocationStrategy) -> None:
    with pytest.raises(ValueError, match=r"^currentCID is empty$"):
        strategy.allocate("g", "", mqs(3), ["a"])
    with pytest.raises(ValueError, match=r"^mqAll is null or mqAll empty$"):
        strategy.allocate("g", "a", [], ["a"])
    with pytest.raises(ValueError, match=r"^cidAll is null or cidAll empty$"):
        strategy.allocate("g", "a", mqs(3), [])
    # RocketMQ checks in this order: the current id first.
    with pytest.raises(ValueError, match=r"^currentCID is empty$"):
        strategy.allocate("g", "", [], [])


@pytest.mark.parametrize("strategy", [*ALL_ROCKETMQ, AllocateSticky()], ids=lambda s: s.name)
def test_current_id_not_in_list_gets_nothing_and_a_warning(
    strategy: AllocationStrategy, caplog: pytest.LogCaptureFixture
) -> None:
    # AllocateMessageQueueAveragelyByCircleTest / ConsitentHashTest: an unknown id gets no queue.
    with caplog.at_level(logging.WARNING, logger="rocketq.allocate.base"):
        assert strategy.allocate("my-group", "2147483647", mqs(6), cids(2)) == []
    assert any(
        r.levelno == logging.WARNING and "my-group" in r.getMessage() and "2147483647" in r.getMessage()
        for r in caplog.records
    )


@pytest.mark.parametrize("strategy", [*ALL_ROCKETMQ, AllocateSticky()], ids=lambda s: s.name)
def test_allocate_all_fails_as_the_per_consumer_loop_would(strategy: AllocationStrategy) -> None:
    assert strategy.allocate_all("g", mqs(3), []) == {}
    with pytest.raises(ValueError, match=r"^mqAll is null or mqAll empty$"):
        strategy.allocate_all("g", [], ["a", ""])
    with pytest.raises(ValueError, match=r"^currentCID is empty$"):
        strategy.allocate_all("g", [], ["", "a"])
    # An empty id later in the list: the loop first serves "a@1", then fails on "" -- unless
    # serving "a@1" already fails, as MACHINE_ROOM_NEARBY's resolver does for the id "".
    expected = (
        "Machine room is null for consumer id "
        if isinstance(strategy, AllocateMachineRoomNearby)
        else "currentCID is empty"
    )
    with pytest.raises(ValueError, match=f"^{expected}$"):  # noqa: PT012 - the loop is the point
        for cid in ("a@1", ""):
            strategy.allocate("g", cid, mqs(3), ["a@1", ""])
    with pytest.raises(ValueError, match=f"^{expected}$"):
        strategy.allocate_all("g", mqs(3), ["a@1", ""])


# -- AVG ------------------------------------------------------------------------------------------


def test_avg_rocketmq_unit_test_case() -> None:
    # AllocateMessageQueueAveragelyTest: 10 queues, 4 consumers -> sizes 3, 3, 2, 2.
    assert shares(AllocateAveragely(), mqs(10), cids(4)) == [[0, 1, 2], [3, 4, 5], [6, 7], [8, 9]]


@pytest.mark.parametrize(
    ("n_mq", "n_cid", "expected"),
    [
        # seed 000: 16 queues, 3 consumers -> [0..5] [6..10] [11..15]
        (16, 3, [list(range(6)), list(range(6, 11)), list(range(11, 16))]),
        # seed 003: 12 queues, 5 consumers -> 3, 3, 2, 2, 2
        (12, 5, [[0, 1, 2], [3, 4, 5], [6, 7], [8, 9], [10, 11]]),
        # seed 003: 7 queues, 2 consumers -> 4, 3
        (7, 2, [[0, 1, 2, 3], [4, 5, 6]]),
        # seed 002: 4 queues, 3 consumers -> 2, 1, 1
        (4, 3, [[0, 1], [2], [3]]),
        # seed 000: 2 queues, 3 consumers -> the third consumer is idle (startIndex 4, range -2)
        (2, 3, [[0], [1], []]),
        # seed 000: 1 queue, 2 consumers -> everything to the first
        (1, 2, [[0], []]),
        # as many queues as consumers: averageSize 1, mod 0
        (3, 3, [[0], [1], [2]]),
        # fewer queues than consumers: index >= mod -> startIndex = index + mod, past the end
        (3, 5, [[0], [1], [2], [], []]),
    ],
)
def test_avg_worked_examples(n_mq: int, n_cid: int, expected: list[list[int]]) -> None:
    assert shares(AllocateAveragely(), mqs(n_mq), cids(n_cid)) == expected


def test_avg_duplicated_client_id_takes_the_same_block_and_leaves_one_unowned() -> None:
    # cidAll.indexOf("b") == 1 for both processes named b: both take [2, 3]; [4, 5] (index 2) is lost.
    clients = ["a", "b", "b", "c"]
    strategy = AllocateAveragely()
    got = {c: ids(strategy.allocate("g", c, mqs(8), clients)) for c in clients}
    assert got == {"a": [0, 1], "b": [2, 3], "c": [6, 7]}


def test_avg_works_on_the_lists_as_given_without_sorting() -> None:
    queues = [MessageQueue("t", "b", i) for i in (3, 1, 2, 0)]
    strategy = AllocateAveragely()
    assert ids(strategy.allocate("g", "c2", queues, ["c2", "c1"])) == [3, 1]
    assert ids(strategy.allocate("g", "c1", queues, ["c2", "c1"])) == [2, 0]


def test_avg_does_not_de_duplicate_queues() -> None:
    q = mqs(2)
    queues = [q[0], q[0], q[1], q[1]]
    assert shares(AllocateAveragely(), queues, ["a", "b"]) == [[0, 0], [1, 1]]


# -- AVG_BY_CIRCLE --------------------------------------------------------------------------------


def test_avg_by_circle_rocketmq_unit_test_case() -> None:
    # AllocateMessageQueueAveragelyByCircleTest
    assert shares(AllocateAveragelyByCircle(), mqs(10), cids(4)) == [[0, 4, 8], [1, 5, 9], [2, 6], [3, 7]]


def test_avg_by_circle_duplicates_and_few_queues() -> None:
    clients = ["a", "a", "b"]
    strategy = AllocateAveragelyByCircle()
    assert {c: ids(strategy.allocate("g", c, mqs(6), clients)) for c in clients} == {"a": [0, 3], "b": [2, 5]}
    assert shares(strategy, mqs(2), cids(3)) == [[0], [1], []]


# -- CONFIG ---------------------------------------------------------------------------------------


def test_config_rocketmq_unit_test_case() -> None:
    # AllocateMessageQueueByConfigTest: every consumer gets the configured list.
    strategy = AllocateByConfig(mqs(4))
    assert shares(strategy, mqs(4), cids(2)) == [[0, 1, 2, 3], [0, 1, 2, 3]]


def test_config_checks_nothing_and_returns_a_copy() -> None:
    strategy = AllocateByConfig([MessageQueue("other", "x", 9)])
    first = strategy.allocate("g", "", [], [])
    assert first == [MessageQueue("other", "x", 9)]
    first.clear()
    assert strategy.allocate("g", "nobody", mqs(1), ["a"]) == [MessageQueue("other", "x", 9)]
    assert strategy.name == "CONFIG"


# -- MACHINE_ROOM ---------------------------------------------------------------------------------


def machine_room_queues(n: int) -> list[MessageQueue]:
    return [MessageQueue("topic", "room1@broker-a" if i < n // 2 else "room2@broker-b", i) for i in range(n)]


def test_machine_room_rocketmq_unit_test_case() -> None:
    # AllocateMessageQueueByMachineRoomTest: rooms {room1}, 10 queues, 2 consumers.
    strategy = AllocateByMachineRoom({"room1"})
    assert shares(strategy, machine_room_queues(10), cids(2)) == [[0, 1, 4], [2, 3]]
    with pytest.raises(ValueError, match=r"^mqAll is null or mqAll empty$"):
        strategy.allocate("", "CID_PREFIX0", [], cids(2))


def test_machine_room_remainder_is_dealt_from_the_end() -> None:
    # 7 eligible queues, 3 consumers: mod 2, rem 1 -> [0, 1] + [0 + 2*3], [2, 3], [4, 5].
    queues = [MessageQueue("t", "r@b", i) for i in range(7)]
    assert shares(AllocateByMachineRoom({"r"}), queues, ["a", "b", "c"]) == [[0, 1, 6], [2, 3], [4, 5]]
    # more consumers than eligible queues: mod 0, each of the first `rem` takes one
    assert shares(AllocateByMachineRoom({"r"}), queues[:2], ["a", "b", "c"]) == [[0], [1], []]


def test_machine_room_uses_java_split_semantics() -> None:
    names = ["room1@b", "room1@b@", "room1@", "room1@x@y", "@b", "room1", "room2@b"]
    queues = [MessageQueue("t", name, i) for i, name in enumerate(names)]
    # "room1@b@" splits to [room1, b] (Java drops trailing empties); "@b" to ["", b].
    strategy = AllocateByMachineRoom({"room1", ""})
    assert ids(strategy.allocate("g", "c", queues, ["c"])) == [0, 1, 4]


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("room1@broker-a", ["room1", "broker-a"]),
        ("room1@", ["room1"]),
        ("@broker", ["", "broker"]),
        ("@", []),
        ("", [""]),
        ("a@b@c", ["a", "b", "c"]),
        ("room@broker@", ["room", "broker"]),
        ("room@@", ["room"]),
        ("noat", ["noat"]),
        ("@@x", ["", "", "x"]),
    ],
)
def test_java_split_at_matches_java(text: str, parts: list[str]) -> None:
    # Recorded from Java 17: Arrays.toString(text.split("@")).
    assert java_split_at(text) == parts


# -- MACHINE_ROOM_NEARBY --------------------------------------------------------------------------


class DashResolver:
    """The resolver of RocketMQ's AllocateMachineRoomNearByTest: text before the first '-'."""

    def broker_room(self, mq: MessageQueue) -> str:
        return mq.broker_name.split("-")[0]

    def consumer_room(self, client_id: str) -> str:
        return client_id.split("-", maxsplit=1)[0]


def idc_queues(idcs: int, per: int) -> list[MessageQueue]:
    return [
        MessageQueue("topic_test", f"IDC{k}-brokerName", i) for k in range(1, idcs + 1) for i in range(per)
    ]


def idc_consumers(idcs: int, per: int) -> list[str]:
    return [f"IDC{k}-CID-{i}" for k in range(1, idcs + 1) for i in range(per)]


def _nearby_run(broker_idcs: int, consumer_idcs: int, queues: int, consumers: int) -> None:
    strategy = AllocateMachineRoomNearby(AllocateAveragely(), DashResolver())
    resolver = DashResolver()
    mq_all = idc_queues(broker_idcs, queues)
    cid_all = idc_consumers(consumer_idcs, consumers)
    consumer_rooms = {resolver.consumer_room(c) for c in cid_all}
    taken: list[MessageQueue] = []
    for cid in cid_all:
        got = strategy.allocate("Test-C-G", cid, mq_all, cid_all)
        for mq in got:
            room = resolver.broker_room(mq)
            if room in consumer_rooms:  # a room with consumers keeps its queues to itself
                assert room == resolver.consumer_room(cid)
        taken += got
    # every queue exactly once (hasAllocateAllQ)
    assert sorted(taken) == sorted(mq_all)


@pytest.mark.parametrize("consumers", [10, 20, 30])
def test_nearby_rocketmq_case_rooms_equal(consumers: int) -> None:
    _nearby_run(5, 5, 20, consumers)  # test1


@pytest.mark.parametrize("consumers", [10, 5, 20])
def test_nearby_rocketmq_case_more_consumer_rooms(consumers: int) -> None:
    _nearby_run(5, 6, 10, consumers)  # test2


@pytest.mark.parametrize("consumers", [10, 5, 20])
def test_nearby_rocketmq_case_fewer_consumer_rooms(consumers: int) -> None:
    _nearby_run(5, 3, 10, consumers)  # test3


def test_nearby_orders_orphan_rooms_as_a_java_treemap() -> None:
    # Rooms without consumers are visited in sorted room order ("a" before "b"), whatever the
    # order the queues came in; the consumer's own room comes first.
    queues = [
        MessageQueue("t", "b@x", 0),
        MessageQueue("t", "z@x", 0),
        MessageQueue("t", "a@x", 0),
        MessageQueue("t", "a@x", 1),
    ]
    strategy = AllocateMachineRoomNearby(AllocateAveragely())
    got = strategy.allocate("g", "z@1", queues, ["z@1", "z@2"])
    assert got == [MessageQueue("t", "z@x", 0), MessageQueue("t", "a@x", 0), MessageQueue("t", "b@x", 0)]
    assert strategy.allocate("g", "z@2", queues, ["z@1", "z@2"]) == [MessageQueue("t", "a@x", 1)]
    assert strategy.name == "MACHINE_ROOM_NEARBY-AVG"


def test_nearby_rejects_empty_rooms_with_rocketmq_messages() -> None:
    strategy = AllocateMachineRoomNearby(AllocateAveragely())
    q = MessageQueue("t", "@broker", 0)
    with pytest.raises(ValueError, match=r"^Machine room is null for mq MessageQueue \[topic=t"):
        strategy.allocate("g", "a@1", [q], ["a@1"])
    with pytest.raises(ValueError, match=r"^Machine room is null for consumer id @1$"):
        strategy.allocate("g", "a@1", [MessageQueue("t", "a@b", 0)], ["a@1", "@1"])


def test_at_sign_resolver() -> None:
    r = AtSignRoomResolver()
    assert r.broker_room(MessageQueue("t", "hz@broker-a@x", 0)) == "hz"
    assert r.broker_room(MessageQueue("t", "broker-a", 0)) == "broker-a"
    assert r.consumer_room("127.0.0.1@12345#123456789") == "127.0.0.1"
    assert r.consumer_room("") == ""


# -- the registry ---------------------------------------------------------------------------------


def test_registry_names_and_types() -> None:
    assert strategy_names()[:6] == rocketq.allocate.ROCKETMQ_STRATEGIES
    assert "STICKY" in strategy_names()
    assert isinstance(get_strategy("AVG"), AllocateAveragely)
    assert isinstance(get_strategy("avg_by_circle"), AllocateAveragelyByCircle)
    for name in strategy_names():
        options: dict[str, object] = {}
        if name == "CONFIG":
            options = {"queues": mqs(2)}
        elif name == "MACHINE_ROOM":
            options = {"rooms": {"room1"}}
        strategy = get_strategy(name, **options)
        assert strategy.name.startswith(name)


def test_registry_options() -> None:
    ch = get_strategy("CONSISTENT_HASH", virtual_nodes=3, hash_function=len)
    assert isinstance(ch, AllocateConsistentHash)
    assert (ch.virtual_nodes, ch.hash_function) == (3, len)
    assert get_strategy("CONSISTENT_HASH").virtual_nodes == 10  # type: ignore[attr-defined]
    cfg = get_strategy("CONFIG", queues=mqs(2))
    assert isinstance(cfg, AllocateByConfig)
    assert cfg.queues == tuple(mqs(2))
    room = get_strategy("MACHINE_ROOM", rooms={"room1", "room2"})
    assert isinstance(room, AllocateByMachineRoom)
    assert room.rooms == {"room1", "room2"}
    nearby = get_strategy("MACHINE_ROOM_NEARBY")
    assert isinstance(nearby, AllocateMachineRoomNearby)
    assert isinstance(nearby.inner, AllocateAveragely)
    assert isinstance(nearby.resolver, AtSignRoomResolver)
    custom = get_strategy(
        "MACHINE_ROOM_NEARBY", inner=get_strategy("CONSISTENT_HASH"), resolver=DashResolver()
    )
    assert custom.name == "MACHINE_ROOM_NEARBY-CONSISTENT_HASH"
    sticky_strategy = get_strategy("STICKY", previous={"a": mqs(1)})
    assert isinstance(sticky_strategy, AllocateSticky)
    assert sticky_strategy.previous == {"a": (mqs(1)[0],)}


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("ROUND_ROBIN", {}, r"unknown allocation strategy 'ROUND_ROBIN'; valid names: AVG, AVG_BY_CIRCLE, "),
        ("AVG", {"virtual_nodes": 3}, "AVG does not take virtual_nodes"),
        ("CONSISTENT_HASH", {"vnodes": 3}, r"does not take vnodes \(it takes virtual_nodes, hash_function\)"),
        ("CONSISTENT_HASH", {"virtual_nodes": -1}, "illegal virtualNodeCnt :-1"),
        ("CONSISTENT_HASH", {"virtual_nodes": "3"}, "must be an int"),
        ("CONFIG", {}, "CONFIG needs queues="),
        ("MACHINE_ROOM", {}, "MACHINE_ROOM needs rooms="),
        ("MACHINE_ROOM", {"rooms": "room1"}, "not one string"),
        ("MACHINE_ROOM_NEARBY", {"inner": "AVG"}, "must be an AllocationStrategy"),
        ("MACHINE_ROOM_NEARBY", {"resolver": object()}, "resolver needs"),
    ],
)
def test_registry_errors(name: str, options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        get_strategy(name, **options)
    assert isinstance(info.value, ValueError)


def test_register_strategy() -> None:
    class Nobody(AllocationStrategy):
        @property
        def name(self) -> str:
            return "NOBODY"

        def allocate(
            self,
            consumer_group: str,
            current_cid: str,
            mq_all: Sequence[MessageQueue],
            cid_all: Sequence[str],
        ) -> list[MessageQueue]:
            return []

    rocketq.allocate.register_strategy("nobody", Nobody)
    try:
        assert get_strategy("NOBODY").allocate_all("g", mqs(2), ["a"]) == {"a": []}
        with pytest.raises(ConfigError, match="already registered"):
            rocketq.allocate.register_strategy("NOBODY", Nobody)
    finally:
        registry._REGISTRY.pop("NOBODY")
