"""plan(), plan_group(), moves(), the duplicate-id check and STICKY's worked cases."""

from __future__ import annotations

import pytest

from rocketq.allocate import (
    AllocateAveragely,
    AllocateAveragelyByCircle,
    AllocateByConfig,
    AllocateConsistentHash,
    AllocateSticky,
    GroupPlan,
    Plan,
    QueueMove,
    allocate_group,
    check_duplicate_client_ids,
    get_strategy,
    java_sorted,
    moves,
    plan,
    plan_group,
    sorted_queues,
    sticky_assignment,
)
from rocketq.errors import ConfigError
from rocketq.models import MessageQueue, java_string_compare


def mqs(n: int, topic: str = "TopicTest", broker: str = "broker-a") -> list[MessageQueue]:
    return [MessageQueue(topic, broker, i) for i in range(n)]


def ids(share: list[MessageQueue]) -> list[int]:
    return [q.queue_id for q in share]


# -- plan() ---------------------------------------------------------------------------------------


def test_plan_is_a_dict_of_shares_with_diagnostics() -> None:
    result = plan(AllocateAveragely(), "g", mqs(16), ["c3", "c1", "c2"])
    assert isinstance(result, dict)
    assert isinstance(result, Plan)
    assert {c: ids(v) for c, v in result.items()} == {
        "c1": list(range(6)),
        "c2": list(range(6, 11)),
        "c3": list(range(11, 16)),
    }
    assert result == {"c1": mqs(16)[:6], "c2": mqs(16)[6:11], "c3": mqs(16)[11:]}
    assert result.counts == {"c1": 6, "c2": 5, "c3": 5}
    assert result.spread == 1
    assert result.idle == ()
    assert result.unowned == ()
    assert result.shared == {}
    assert result.ok
    assert result.strategy == "AVG"
    assert result.group == "g"
    assert result.consumers == ("c1", "c2", "c3")
    assert "Plan(AVG" in repr(result)


def test_plan_sorts_like_rebalance_impl() -> None:
    # Queues: de-duplicated (a Set in RocketMQ) and sorted by topic, broker, queue id.
    queues = [
        MessageQueue("T", "broker-b", 0),
        MessageQueue("T", "broker-a", 10),
        MessageQueue("T", "broker-a", 2),
        MessageQueue("S", "broker-z", 5),
        MessageQueue("T", "broker-a", 2),
    ]
    result = plan(AllocateAveragelyByCircle(), "g", queues, ["b", "a"])
    assert result.queues == (
        MessageQueue("S", "broker-z", 5),
        MessageQueue("T", "broker-a", 2),
        MessageQueue("T", "broker-a", 10),
        MessageQueue("T", "broker-b", 0),
    )
    assert result["a"] == [result.queues[0], result.queues[2]]
    assert result.queues == tuple(sorted(set(queues)))


def test_plan_sorts_client_ids_by_utf16_code_units() -> None:
    # Java puts U+FFFF after U+1F600 (a surrogate pair starts with U+D83D); Python's code point order
    # would not.
    high, astral = "\uffff@1", "\U0001f600@1"
    result = plan(AllocateAveragely(), "g", mqs(2), [high, astral])
    assert list(result) == [astral, high]
    assert result[astral] == mqs(2)[:1]
    assert java_sorted([high, astral, "a"]) == ["a", astral, high]
    assert java_string_compare(astral, high) < 0


def test_sorted_queues_agrees_with_message_queue_order() -> None:
    queues = [
        MessageQueue("\uffff", "b", 1),
        MessageQueue("\U0001f600", "b", 1),
        MessageQueue("a", "\U0001f600", 3),
        MessageQueue("a", "\uffff", 3),
        MessageQueue("a", "a", 11),
        MessageQueue("a", "a", 2),
    ]
    assert sorted_queues(queues) == sorted(queues)
    ascii_queues = [MessageQueue("t", b, q) for b in ("b", "a", "aa") for q in (10, 2, 1)]
    assert sorted_queues(ascii_queues) == sorted(ascii_queues)


def test_plan_reports_duplicates_unowned_and_shared() -> None:
    # seed 003: two consumers with the same client id take the same queues; others pile up.
    result = plan(AllocateAveragely(), "g", mqs(12), ["10.0.0.1@x", "10.0.0.1@x", "10.0.0.2@y"])
    assert ids(result["10.0.0.1@x"]) == [0, 1, 2, 3]
    assert ids(result["10.0.0.2@y"]) == [8, 9, 10, 11]
    assert ids(list(result.unowned)) == [4, 5, 6, 7]
    assert result.shared == dict.fromkeys(mqs(12)[:4], ("10.0.0.1@x", "10.0.0.1@x"))
    assert result.duplicate_ids == {"10.0.0.1@x": 2}
    assert result.consumers == ("10.0.0.1@x", "10.0.0.1@x", "10.0.0.2@y")
    assert not result.ok


def test_plan_idle_consumers_and_config_sharing() -> None:
    result = plan(AllocateAveragely(), "g", mqs(2), ["a", "b", "c"])
    assert result.idle == ("c",)
    assert result.spread == 1
    single = plan(AllocateAveragely(), "g", mqs(1), ["a", "b"])
    assert ids(single["a"]) == [0]
    assert single.idle == ("b",)
    config = plan(AllocateByConfig([*mqs(2), MessageQueue("Other", "x", 0)]), "g", mqs(3), ["a", "b"])
    assert config.unowned == (mqs(3)[2],)
    assert set(config.shared) == {*mqs(2), MessageQueue("Other", "x", 0)}


def test_plan_with_no_queues_or_no_consumers_owns_nothing() -> None:
    empty = plan(AllocateAveragely(), "g", [], ["a", "b"])
    assert empty == {"a": [], "b": []}
    assert empty.idle == ("a", "b")
    nobody = plan(AllocateAveragely(), "g", mqs(3), [])
    assert nobody == {}
    assert nobody.unowned == tuple(mqs(3))
    assert nobody.spread == 0


def test_plan_propagates_strategy_errors() -> None:
    with pytest.raises(ValueError, match="currentCID is empty"):
        plan(AllocateAveragely(), "g", mqs(3), ["a", ""])


# -- the duplicate client id check ----------------------------------------------------------------


def test_check_duplicate_client_ids() -> None:
    report = check_duplicate_client_ids(["10.0.0.1@1", "10.0.0.1@1"], mqs(8))
    assert report.duplicates == {"10.0.0.1@1": 2}
    assert ids(list(report.unconsumed)) == [4, 5, 6, 7]
    assert ids(list(report.consumed_twice)) == [0, 1, 2, 3]
    assert not report.ok
    assert check_duplicate_client_ids(["a", "b"], mqs(8)).ok
    ids_only = check_duplicate_client_ids(["a", "b", "a", "c", "c", "c"])
    assert ids_only.duplicates == {"a": 2, "c": 3}
    assert ids_only.unconsumed == ()
    hashed = check_duplicate_client_ids(["a", "a", "b"], mqs(20), strategy=AllocateConsistentHash())
    assert hashed.unconsumed == ()  # hashing loses nothing, but a's queues are consumed twice
    assert hashed.consumed_twice
    assert set(hashed.consumed_twice) == set(
        plan(AllocateConsistentHash(), "g", mqs(20), ["a", "a", "b"])["a"]
    )


# -- plan_group and group-wide balance ------------------------------------------------------------


def seed_topics() -> dict[str, list[MessageQueue]]:
    # seed 001: group A of four consumers subscribes TopicS and TopicP, 2 queues each
    return {"TopicS": mqs(2, "TopicS"), "TopicP": mqs(2, "TopicP")}


CONSUMERS = ["10.0.0.1@1", "10.0.0.2@2", "10.0.0.3@3", "10.0.0.4@4"]


def test_group_per_topic_is_rocketmq_and_piles_on_the_first_consumers() -> None:
    result = plan_group(AllocateAveragely(), "A", seed_topics(), CONSUMERS)
    assert isinstance(result, GroupPlan)
    assert list(result.topics) == ["TopicP", "TopicS"]  # Java string order
    assert list(result.counts.values()) == [2, 2, 0, 0]
    assert result.idle == ("10.0.0.3@3", "10.0.0.4@4")
    assert result["10.0.0.1@1"] == [
        MessageQueue("TopicP", "broker-a", 0),
        MessageQueue("TopicS", "broker-a", 0),
    ]
    assert result.balance == "topic"


def test_group_balance_spreads_the_seed_case_one_each() -> None:
    result = plan_group(AllocateAveragely(), "A", seed_topics(), CONSUMERS, balance="group")
    assert list(result.counts.values()) == [1, 1, 1, 1]
    assert result["10.0.0.1@1"] == [MessageQueue("TopicP", "broker-a", 0)]
    assert result["10.0.0.3@3"] == [MessageQueue("TopicS", "broker-a", 0)]
    assert result.ok
    assert result.spread == 0
    assert "balance='group'" in repr(result)


def test_group_balance_rotation_is_by_cumulative_queue_count() -> None:
    # T1 has 5 queues over 3 consumers (2, 2, 1); T2 starts where T1's extras stopped (offset 5 % 3 = 2).
    topics = {"T1": mqs(5, "T1"), "T2": mqs(4, "T2")}
    result = plan_group(AllocateAveragely(), "g", topics, ["a", "b", "c"], balance="group")
    assert {c: ids(v) for c, v in result.topics["T1"].items()} == {"a": [0, 1], "b": [2, 3], "c": [4]}
    assert {c: ids(v) for c, v in result.topics["T2"].items()} == {"a": [2], "b": [3], "c": [0, 1]}
    assert list(result.counts.values()) == [3, 3, 3]


def test_allocate_group_is_what_each_consumer_computes_alone() -> None:
    topics = {"T1": mqs(5, "T1"), "T2": mqs(4, "T2"), "T0": []}
    for balance in ("topic", "group"):
        whole = plan_group(AllocateAveragely(), "g", topics, ["c", "a", "b"], balance=balance)  # type: ignore[arg-type]
        for cid in ("a", "b", "c"):
            mine = allocate_group(AllocateAveragely(), "g", cid, topics, ["b", "c", "a"], balance=balance)  # type: ignore[arg-type]
            assert list(mine) == ["T0", "T1", "T2"]
            assert mine["T0"] == []
            assert [mq for share in mine.values() for mq in share] == whole[cid]


def test_group_balance_rejects_unknown_mode() -> None:
    with pytest.raises(ConfigError, match="balance must be"):
        plan_group(AllocateAveragely(), "g", seed_topics(), CONSUMERS, balance="queue")  # type: ignore[arg-type]


def test_empty_group_plan() -> None:
    result = plan_group(AllocateAveragely(), "g", {}, ["a"])
    assert result == {}
    assert result.topics == {}


# -- moves() --------------------------------------------------------------------------------------


def test_moves_between_two_and_three_consumers() -> None:
    before = plan(AllocateAveragely(), "g", mqs(16), ["c1", "c2"])
    after = plan(AllocateAveragely(), "g", mqs(16), ["c1", "c2", "c3"])
    changes = moves(before, after)
    assert [(m.queue.queue_id, m.before, m.after) for m in changes] == [
        (6, ("c1",), ("c2",)),
        (7, ("c1",), ("c2",)),
        *[(q, ("c2",), ("c3",)) for q in range(11, 16)],
    ]
    assert moves(after, after) == []
    gone = moves({"a": mqs(1)}, {})
    assert gone == [QueueMove(mqs(1)[0], ("a",), ())]


# -- STICKY worked cases ---------------------------------------------------------------------------


def test_sticky_moves_only_what_balance_needs() -> None:
    before = plan(AllocateSticky(), "g", mqs(16), ["c1", "c2"])
    assert before == plan(AllocateAveragely(), "g", mqs(16), ["c1", "c2"])
    after = plan(AllocateSticky(before), "g", mqs(16), ["c1", "c2", "c3"])
    assert after.counts == {"c1": 6, "c2": 5, "c3": 5}
    assert len(moves(before, after)) == 5  # AVG moves 7
    assert len(moves(before, plan(AllocateAveragely(), "g", mqs(16), ["c1", "c2", "c3"]))) == 7


def test_sticky_when_a_consumer_leaves_only_its_queues_move() -> None:
    before = plan(AllocateSticky(), "g", mqs(12), ["a", "b", "c"])
    after = plan(get_strategy("STICKY", previous=before), "g", mqs(12), ["a", "c"])
    assert {m.queue for m in moves(before, after)} == set(before["b"])
    assert after.counts == {"a": 6, "c": 6}


def test_sticky_gives_extra_quota_to_those_holding_most() -> None:
    q = mqs(7)
    previous = {"a": q[:1], "b": q[1:5], "c": q[5:]}  # a holds 1, b 4, c 2
    after = sticky_assignment(previous, q, ["a", "b", "c"])  # quotas 3, 2, 2; the 3 goes to b
    assert {c: ids(v) for c, v in after.items()} == {"a": [0, 4], "b": [1, 2, 3], "c": [5, 6]}


def test_sticky_ignores_vanished_queues_departed_consumers_and_double_claims() -> None:
    q = mqs(4)
    previous = {"gone": q[:2], "a": [q[2], MessageQueue("Old", "x", 0)], "b": [q[2], q[3]]}
    after = sticky_assignment(previous, q, ["b", "a", "a"])
    assert {c: ids(v) for c, v in after.items()} == {"a": [0, 2], "b": [1, 3]}
    assert sticky_assignment({}, q, []) == {}
