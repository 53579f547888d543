"""Rebalance: the pure allocation and diff, and RebalanceImpl applying them to a process-queue table."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rocketq.allocate import get_strategy
from rocketq.client.config import ReadOffsetType
from rocketq.client.consumer.offset_store import OffsetStore
from rocketq.client.consumer.process_queue import DropReason, ProcessQueue
from rocketq.client.rebalance.impl import PullRequest, RebalanceImpl, allocate_topic, diff_queues
from rocketq.client.rebalance.log import RebalanceLog, RebalanceRecord, RebalanceTrigger
from rocketq.models import MessageQueue
from rocketq.protocol.bodies import ConsumeType, MessageModel, SubscriptionData
from rocketq.protocol.calls import view_stamp as calls_view_stamp
from rocketq.protocol.topics import retry_topic

T = "TopicTest"


def qs(n: int, topic: str = T, broker: str = "broker-a") -> list[MessageQueue]:
    return [MessageQueue(topic, broker, i) for i in range(n)]


# ------------------------------------------------------------------------------------ pure parts


def test_allocate_topic_sorts_queues_and_ids_as_java_before_avg() -> None:
    queues = list(reversed(qs(8, broker="b"))) + qs(8, broker="a")
    ids = ["127.0.0.1@c3", "127.0.0.1@c1", "127.0.0.1@c2"]
    mine, mq_all, cid_all = allocate_topic(get_strategy("AVG"), "g", "127.0.0.1@c1", T, queues, ids)
    assert cid_all == ["127.0.0.1@c1", "127.0.0.1@c2", "127.0.0.1@c3"]
    assert mq_all[0] == MessageQueue(T, "a", 0)
    assert mq_all[-1] == MessageQueue(T, "b", 7)
    assert mine == [MessageQueue(T, "a", i) for i in range(6)]  # 16 over 3: 6/5/5, first id first


def test_allocate_topic_id_not_in_list_gets_nothing_and_empty_inputs_are_safe() -> None:
    strategy = get_strategy("AVG")
    assert allocate_topic(strategy, "g", "x@1", T, qs(4), ["y@2"])[0] == []
    assert allocate_topic(strategy, "g", "x@1", T, [], ["x@1"])[0] == []
    assert allocate_topic(strategy, "g", "x@1", T, qs(4), [])[0] == []


def test_group_balance_rotates_ids_by_the_queues_of_earlier_topics() -> None:
    strategy = get_strategy("AVG")
    ids = ["c@1", "c@2"]
    topics = {"A": qs(3, "A"), "B": qs(3, "B")}
    per_topic = {
        cid: sum(
            len(allocate_topic(strategy, "g", cid, t, q, ids, balance="topic")[0]) for t, q in topics.items()
        )
        for cid in ids
    }
    grouped = {
        cid: sum(
            len(allocate_topic(strategy, "g", cid, t, q, ids, balance="group", other_topics=topics)[0])
            for t, q in topics.items()
        )
        for cid in ids
    }
    assert per_topic == {"c@1": 4, "c@2": 2}  # RocketMQ: the first id gets both extras
    assert grouped == {"c@1": 3, "c@2": 3}


def test_diff_queues_removed_added_kept_expired() -> None:
    q = qs(4)
    owned = {q[0]: ProcessQueue(now=0.0), q[1]: ProcessQueue(now=100.0), q[2]: ProcessQueue(now=100.0)}
    owned[MessageQueue("Other", "broker-a", 0)] = ProcessQueue(now=0.0)
    d = diff_queues(owned, T, [q[0], q[1], q[3]], now=150.0, pull_max_idle=120.0)
    assert d.removed == (q[2],)
    assert d.expired == (q[0],)
    assert d.kept == (q[1],)
    assert d.added == (q[3],)
    # pull consumers never expire
    assert diff_queues(owned, T, [q[0]], now=1e9, pull_max_idle=None).expired == ()


# ------------------------------------------------------------------------------------ RebalanceImpl


class MemoryOffsets(OffsetStore):
    """An offset store whose persisted side is a dict (what a broker would hold)."""

    def __init__(
        self, stored: dict[MessageQueue, int] | None = None, unreadable: set[MessageQueue] | None = None
    ):
        super().__init__("g")
        self.stored = dict(stored or {})
        self.unreadable = unreadable or set()
        self.persisted: list[tuple[MessageQueue, int]] = []

    async def _read_from_store(self, mq: MessageQueue) -> int:
        if mq in self.unreadable:
            return -2
        return self.stored.get(mq, -1)

    async def persist_all(self, mqs, *, oneway: bool = True) -> None:  # type: ignore[no-untyped-def]
        for mq in mqs:
            await self.persist(mq)

    async def persist(self, mq: MessageQueue, *, oneway: bool = True) -> None:
        if mq in self._table:
            self.stored[mq] = self._table[mq]
            self.persisted.append((mq, self._table[mq]))


class Context:
    def __init__(
        self, client_id: str, ids: list[str] | None, lockable: set[MessageQueue] | None = None
    ) -> None:
        self.client_id = client_id
        self.ids = ids
        self.lockable = lockable
        self.unlocked: list[MessageQueue] = []

    async def find_consumer_id_list(self, topic: str, group: str) -> list[str] | None:
        return self.ids

    async def lock_queues(self, group: str, mqs: Sequence[MessageQueue]) -> set[MessageQueue]:
        return {mq for mq in mqs if self.lockable is None or mq in self.lockable}

    async def unlock_queues(self, group: str, mqs: Sequence[MessageQueue], *, oneway: bool) -> None:
        self.unlocked.extend(mqs)


class Hooks:
    """RebalancePushImpl's rules over a MemoryOffsets store: persist + forget on drop,
    committed offset else 0 (FIRST_OFFSET) for a new queue."""

    consume_type = ConsumeType.CONSUME_PASSIVELY

    def __init__(self, store: MemoryOffsets, orderly: bool = False) -> None:
        self.store = store
        self.orderly = orderly
        self.dispatched: list[PullRequest] = []
        self.changed: list[tuple[str, frozenset[MessageQueue]]] = []
        self.events: list[str] = []

    @property
    def consume_orderly(self) -> bool:
        return self.orderly

    async def remove_unnecessary_message_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        assert pq.dropped
        await self.store.persist(mq)
        self.store.remove_offset(mq)
        return True

    def remove_dirty_offset(self, mq: MessageQueue) -> None:
        self.store.remove_offset(mq)

    async def compute_pull_from_where(self, mq: MessageQueue) -> int:
        last = await self.store.read_offset(mq, ReadOffsetType.READ_FROM_STORE)
        if last >= 0:
            return last
        return 0 if last == -1 else -1

    def dispatch_pull_requests(self, requests: Sequence[PullRequest]) -> None:
        self.events.append("dispatch")
        self.dispatched.extend(requests)

    async def message_queue_changed(
        self, topic: str, mq_all: frozenset[MessageQueue], mq_divided: frozenset[MessageQueue]
    ) -> None:
        self.events.append("changed")
        self.changed.append((topic, mq_divided))


def make(
    ids: list[str] | None,
    *,
    me: str = "c@1",
    queues: int = 16,
    stored: dict[MessageQueue, int] | None = None,
    unreadable: set[MessageQueue] | None = None,
    model: MessageModel = MessageModel.CLUSTERING,
    orderly: bool = False,
    lockable: set[MessageQueue] | None = None,
) -> tuple[RebalanceImpl, Hooks, MemoryOffsets, Context]:
    store = MemoryOffsets(stored, unreadable)
    hooks = Hooks(store, orderly)
    ctx = Context(me, ids, lockable)
    impl = RebalanceImpl(
        group="g",
        message_model=model,
        strategy=get_strategy("AVG"),
        context=ctx,
        hooks=hooks,
        log=RebalanceLog(16),
        offset_store=store,
    )
    impl.set_subscription(SubscriptionData.build(T, "*", sub_version=1))
    impl.topic_subscribe_info[T] = frozenset(qs(queues))
    return impl, hooks, store, ctx


def run(impl: RebalanceImpl, trigger: RebalanceTrigger = RebalanceTrigger.PERIODIC) -> list[RebalanceRecord]:
    return asyncio.run(impl.do_rebalance(trigger))


def test_first_rebalance_adds_the_share_with_start_offsets_and_dispatches_after_the_change_hook() -> None:
    q = qs(16)
    impl, hooks, _store, _ = make(["c@2", "c@1"], stored={q[3]: 42})
    [record] = run(impl, RebalanceTrigger.START)
    assert sorted(impl.process_queue_table) == q[:8]
    assert {r.mq: r.next_offset for r in hooks.dispatched} == {**dict.fromkeys(q[:8], 0), q[3]: 42}
    assert hooks.events == ["changed", "dispatch"]  # the subscription version is heartbeated first
    assert record.trigger is RebalanceTrigger.START
    assert record.client_ids == ("c@1", "c@2")
    assert record.added == tuple(q[:8])
    assert record.removed == ()
    assert record.pull_from[q[3]] == 42
    assert record.changed
    assert record.seq == 1
    assert record.line().startswith("REBALANCE c@1 TopicTest owned=[broker-a:0,")


def test_a_joining_consumer_makes_us_drop_queues_marking_them_and_persisting_offsets() -> None:
    q = qs(16)
    impl, hooks, store, ctx = make(["c@1", "c@2"])
    run(impl)
    pqs = dict(impl.process_queue_table)
    for mq in q[:8]:
        store.update_offset(mq, 100 + mq.queue_id, True)
    ctx.ids = ["c@1", "c@2", "c@3"]
    hooks.dispatched.clear()
    [record] = run(impl, RebalanceTrigger.NOTIFY)
    assert sorted(impl.process_queue_table) == q[:6]
    assert pqs[q[6]].dropped
    assert pqs[q[7]].dropped
    assert not pqs[q[5]].dropped
    assert record.removed == (q[6], q[7])
    assert record.committed == {q[6]: 106, q[7]: 107}
    assert store.stored[q[6]] == 106
    assert q[6] not in store.clone_offset_table()
    assert hooks.dispatched == []
    assert record.owned == tuple(q[:6])


def test_unchanged_rebalance_reports_no_change_and_does_not_call_hooks() -> None:
    impl, hooks, _, _ = make(["c@1"])
    run(impl)
    hooks.events.clear()
    [record] = run(impl)
    assert not record.changed
    assert hooks.events == []
    assert len(record.owned) == 16


def test_expired_pull_drops_the_queue_until_the_next_rebalance() -> None:
    q = qs(2)
    impl, _hooks, _, _ = make(["c@1"], queues=2)
    run(impl)
    impl.process_queue_table[q[1]].last_pull_timestamp -= 121.0
    [record] = run(impl)
    assert record.expired == (q[1],)
    assert q[1] in record.removed
    assert q[1] not in impl.process_queue_table
    [again] = run(impl)
    assert again.added == (q[1],)


def test_unreadable_offsets_skip_the_queue_until_later() -> None:
    q = qs(4)
    impl, hooks, _, _ = make(["c@1"], queues=4, unreadable={q[2]})
    [record] = run(impl)
    assert q[2] not in impl.process_queue_table
    assert q[2] not in {r.mq for r in hooks.dispatched}
    assert len(record.owned) == 3


def test_no_ids_or_no_route_keeps_ownership_and_says_why() -> None:
    impl, _, _, ctx = make(["c@1"], queues=4)
    run(impl)
    ctx.ids = None
    [record] = run(impl)
    assert record.error == "no consumer ids from the brokers"
    assert len(impl.process_queue_table) == 4
    assert not record.changed
    del impl.topic_subscribe_info[T]
    [record] = run(impl)
    assert record.error == "no route for the topic"


def test_broadcasting_owns_every_queue_without_asking_for_ids() -> None:
    impl, _, _, _ = make(None, model=MessageModel.BROADCASTING, queues=5)
    [record] = run(impl)
    assert len(impl.process_queue_table) == 5
    assert record.client_ids == ()


def test_orderly_adds_only_queues_it_could_lock() -> None:
    q = qs(4)
    impl, hooks, _, _ = make(["c@1"], queues=4, orderly=True, lockable={q[0], q[3]})
    run(impl)
    assert sorted(impl.process_queue_table) == [q[0], q[3]]
    assert all(r.previously_locked and r.pq.locked for r in hooks.dispatched)


def test_unsubscribed_topics_are_truncated_and_release_all_reports_shutdown() -> None:
    impl, _, store, _ = make(["c@1"], queues=4)
    other = MessageQueue("Gone", "broker-a", 0)
    impl.process_queue_table[other] = ProcessQueue(now=0.0)
    run(impl)
    assert other not in impl.process_queue_table
    for mq in impl.process_queue_table:
        store.update_offset(mq, 7, True)
    [record] = asyncio.run(impl.release_all())
    assert record.trigger is RebalanceTrigger.SHUTDOWN
    assert len(record.removed) == 4
    assert record.owned == ()
    assert set(record.committed.values()) == {7}
    assert impl.process_queue_table == {}


def test_every_queue_the_rebalance_lets_go_is_dropped_with_its_reason() -> None:
    q = qs(4)
    impl, _, _, ctx = make(["c@1"], queues=4)
    other = MessageQueue("Gone", "broker-a", 0)
    impl.process_queue_table[other] = gone = ProcessQueue(now=0.0)
    run(impl)
    pqs = dict(impl.process_queue_table)
    pqs[q[0]].last_pull_timestamp -= 121.0
    ctx.ids = ["c@1", "c@2"]  # q[2], q[3] go to c@2
    run(impl)
    assert gone.drop_reason is DropReason.UNSUBSCRIBED
    assert pqs[q[0]].drop_reason is DropReason.PULL_EXPIRED
    assert (pqs[q[2]].drop_reason, pqs[q[3]].drop_reason) == (DropReason.REBALANCED,) * 2
    left = impl.process_queue_table[q[1]]
    impl.remove_process_queue(q[1], DropReason.OFFSET_ILLEGAL)
    assert left.dropped
    assert left.drop_reason is DropReason.OFFSET_ILLEGAL
    asyncio.run(impl.do_rebalance(RebalanceTrigger.CORRECTION))  # re-added, then released at shutdown
    last = dict(impl.process_queue_table)
    asyncio.run(impl.release_all())
    assert {pq.drop_reason for pq in last.values()} == {DropReason.SHUTDOWN}


def test_hooks_that_drain_removed_queues_drop_them_themselves() -> None:
    impl, hooks, _, ctx = make(["c@1"], queues=2)
    run(impl)
    seen: list[bool] = []

    async def drain_then_drop(mq: MessageQueue, pq: ProcessQueue) -> bool:
        seen.append(pq.dropped)  # still consumable while it drains
        pq.drop(DropReason.HANDED_OVER)
        return True

    hooks.drains_removed_queues = True  # type: ignore[attr-defined]
    hooks.remove_unnecessary_message_queue = drain_then_drop  # type: ignore[method-assign]
    removed = impl.process_queue_table[qs(2)[1]]
    ctx.ids = ["c@1", "c@2"]
    run(impl)
    assert seen == [False]
    assert removed.drop_reason is DropReason.HANDED_OVER


@settings(max_examples=30, deadline=None)
@given(
    st.integers(min_value=2, max_value=16),
    st.lists(st.sampled_from(["c@0", "c@2", "c@3", "c@4"]), min_size=1, unique=True),
    st.lists(st.sampled_from(["c@0", "c@2", "c@3", "c@4"]), unique=True),
)
def test_removed_queues_drain_at_once_while_the_new_queues_already_pull(
    queues: int, before: list[str], after: list[str]
) -> None:
    """A clean handoff's drain of a removed queue waits (a slow listener: seconds). The queues the
    same rebalance adds must not wait behind it: their pulls are dispatched while every drain is
    still under way, and the drains run at once, not in turn. The group before and after the
    change is drawn."""
    me = "c@1"
    impl, hooks, _, ctx = make([me, *before], queues=queues)
    run(impl)
    owned = set(impl.process_queue_table)
    ctx.ids = [me, *after]
    mine, _, _ = allocate_topic(impl.strategy, "g", me, T, frozenset(qs(queues)), ctx.ids)
    assume(owned - set(mine))  # something to drain
    print(f"drew {queues} queues, group {[me, *before]} -> {ctx.ids}")
    draining: list[MessageQueue] = []
    release = asyncio.Event()
    dispatched_while_draining: list[bool] = []

    async def slow_drain(mq: MessageQueue, pq: ProcessQueue) -> bool:
        draining.append(mq)
        await release.wait()
        pq.drop(DropReason.HANDED_OVER)
        return True

    def dispatch(requests: Sequence[PullRequest]) -> None:
        dispatched_while_draining.append(not release.is_set())
        hooks.dispatched.extend(requests)

    hooks.drains_removed_queues = True  # type: ignore[attr-defined]
    hooks.remove_unnecessary_message_queue = slow_drain  # type: ignore[method-assign]
    hooks.dispatch_pull_requests = dispatch  # type: ignore[method-assign]

    async def scenario() -> tuple[list[RebalanceRecord], list[MessageQueue]]:
        task = asyncio.ensure_future(impl.do_rebalance(RebalanceTrigger.NOTIFY))
        for _ in range(1000):  # the loop turns until the rebalance waits on the drains alone
            await asyncio.sleep(0)
        begun = list(draining)
        release.set()
        return await task, begun

    [record], begun = asyncio.run(scenario())
    assert sorted(begun) == sorted(owned - set(mine))  # every drain began before any ended
    assert record.removed == tuple(sorted(owned - set(mine)))
    assert record.added == tuple(sorted(set(mine) - owned))
    if record.added:
        assert dispatched_while_draining == [True]  # the new queues pulled during the drains
    assert sorted(impl.process_queue_table) == sorted(mine)


def test_retry_topic_name() -> None:
    assert retry_topic("g") == "%RETRY%g"


def test_records_go_to_listeners_and_a_bounded_ring() -> None:
    log = RebalanceLog(maxlen=2)
    heard: list[int] = []
    log.add_listener(lambda r: heard.append(r.seq))
    log.add_listener(lambda r: 1 / 0)  # a failing listener is logged, the others still hear
    for _ in range(3):
        impl, _, _, _ = make(["c@1"], queues=1)
        impl.log = log
        run(impl)
    assert heard == [1, 2, 3]
    assert [r.seq for r in log.records()] == [2, 3]
    d = log.records()[-1].to_dict()
    assert d["trigger"] == "periodic"
    assert d["owned"][0] == {"topic": T, "broker": "broker-a", "queue_id": 0}
    assert isinstance(d["start_ms"], int)
    assert d["duration_ms"] >= 0


@pytest.mark.parametrize("n_consumers", [1, 2, 3, 5, 16, 17])
def test_every_queue_owned_exactly_once_across_the_group(n_consumers: int) -> None:
    ids = [f"10.0.0.{i}@c" for i in range(n_consumers)]
    owned: list[MessageQueue] = []
    for cid in ids:
        impl, _, _, _ = make(ids, me=cid)
        run(impl)
        owned.extend(impl.process_queue_table)
    assert sorted(owned) == qs(16)


# ------------------------------------------------------------------ consistent views


class ViewsContext(Context):
    """Every broker's answer, one scripted list of answers per rebalance attempt (the last repeats)."""

    def __init__(self, client_id: str, rounds: list[dict[str, list[str] | None]]) -> None:
        super().__init__(client_id, ["unused"])
        self.rounds = rounds
        self.asked = 0
        #: the read queue count each broker says (absent: -1, a broker that does not say)
        self.queue_nums: dict[str, int] = {}
        #: the view stamp each broker says (absent: None, a broker without epochs)
        self.stamps: dict[str, str] = {}

    async def find_consumer_views(
        self, topic: str, group: str
    ) -> dict[str, tuple[list[str], int, str | None] | None]:
        answers = self.rounds[min(self.asked, len(self.rounds) - 1)]
        self.asked += 1
        return {
            b: None if ids is None else (ids, self.queue_nums.get(b, -1), self.stamps.get(b))
            for b, ids in answers.items()
        }


def make_views(
    me: str, rounds: list[dict[str, list[str] | None]], timeout: float = 0.5, fallback: str = "union"
) -> tuple[RebalanceImpl, ViewsContext]:
    impl, hooks, store, _ = make(None, me=me)
    ctx = ViewsContext(me, rounds)
    impl = RebalanceImpl(
        group="g",
        message_model=MessageModel.CLUSTERING,
        strategy=get_strategy("AVG"),
        context=ctx,
        hooks=hooks,
        log=RebalanceLog(16),
        offset_store=store,
        consistent_views=fallback,
        view_agreement_timeout=timeout,
    )
    impl.set_subscription(SubscriptionData.build(T, "*", sub_version=1))
    impl.topic_subscribe_info[T] = frozenset(qs(16))
    return impl, ctx


@pytest.mark.parametrize(
    ("answers", "timed_out", "view"),
    [
        ({"a": ["c1", "c2"], "b": ["c2", "c1"]}, False, ["c1", "c2"]),  # agreement: order does not matter
        ({"a": ["c1", "c2"], "b": ["c2"]}, False, None),  # disagreement: wait
        ({"a": ["c1", "c2"], "b": None}, False, None),  # a broker did not answer yet: wait
        ({"a": ["c1", "c2"], "b": ["c2", "c3"]}, True, ["c1", "c2", "c3"]),  # timed out: the union
        ({"a": ["c1", "c2"], "b": None}, True, ["c1", "c2"]),  # the silent broker is left out
        ({"a": None, "b": None}, True, []),
        ({"a": None}, False, None),
    ],
)
def test_agreed_view(answers: dict[str, list[str] | None], timed_out: bool, view: list[str] | None) -> None:
    from rocketq.client.rebalance.impl import agreed_view

    assert agreed_view(answers, timed_out=timed_out) == view
    if timed_out and view:
        inter = agreed_view(answers, timed_out=True, fallback="intersection")
        assert inter == [c for c in view if all(a is None or c in a for a in answers.values())]


def test_consistent_views_wait_for_the_brokers_to_agree_then_share_over_their_list() -> None:
    split = {"broker-a": ["c@1", "c@2", "c@3"], "broker-b": ["c@1", "c@2"]}
    agreed = {"broker-a": ["c@1", "c@2"], "broker-b": ["c@2", "c@1"]}
    impl, ctx = make_views("c@1", [split, split, agreed], timeout=5.0)
    [record] = run(impl)
    assert ctx.asked == 3  # asked again until they agreed, well within the timeout
    assert record.client_ids == ("c@1", "c@2")
    assert sorted(impl.process_queue_table) == qs(16)[:8]


def test_consistent_views_after_the_timeout_the_union_keeps_a_member_one_broker_lost() -> None:
    split = {"broker-a": ["c@1", "c@2", "c@3"], "broker-b": ["c@1", "c@2"]}
    impl, ctx = make_views("c@1", [split], timeout=0.3)
    [record] = run(impl)
    assert ctx.asked >= 2
    assert record.client_ids == ("c@1", "c@2", "c@3")
    # the lost member, cut off from broker-b, sees broker-a's list only: the same three
    cut_off = {"broker-a": ["c@1", "c@2", "c@3"], "broker-b": None}
    impl3, _ = make_views("c@3", [cut_off], timeout=0.3)
    [record3] = run(impl3)
    assert record3.client_ids == record.client_ids
    assert set(impl3.process_queue_table).isdisjoint(impl.process_queue_table)


def test_consistent_views_after_the_timeout_the_intersection_leaves_it_out() -> None:
    split = {"broker-a": ["c@1", "c@2", "c@3"], "broker-b": ["c@1", "c@2"]}
    impl, ctx = make_views("c@1", [split], timeout=0.3, fallback="intersection")
    [record] = run(impl)
    assert ctx.asked >= 2
    assert record.client_ids == ("c@1", "c@2")  # c@3 is held by broker-a only
    assert sorted(impl.process_queue_table) == qs(16)[:8]
    # and c@3 itself, seeing the same split, takes nothing: no queue gets two owners
    impl3, _ = make_views("c@3", [split], timeout=0.3, fallback="intersection")
    run(impl3)
    assert impl3.process_queue_table == {}


# ------------------------------------------------------------------ per-broker views


@pytest.mark.parametrize("n_consumers", [1, 2, 3, 5])
def test_per_broker_views_share_exactly_as_the_strategy_when_the_brokers_agree(n_consumers: int) -> None:
    ids = [f"c@{i}" for i in range(n_consumers)]
    lists: dict[str, list[str] | None] = {"broker-a": ids, "broker-b": list(reversed(ids))}
    for cid in ids:
        impl, ctx = make_views(cid, [lists], fallback="per-broker")
        [record] = run(impl)
        expected, _, _ = allocate_topic(get_strategy("AVG"), "g", cid, T, qs(16), ids)
        assert sorted(impl.process_queue_table) == sorted(expected)
        assert ctx.asked == 1  # no waiting for agreement
        assert record.client_ids == tuple(sorted(ids))


def test_per_broker_views_give_every_queue_one_owner_while_the_brokers_disagree() -> None:
    # c@3 is cut off from broker-b: broker-b lists c@1 and c@2 only and c@3 cannot ask it
    seen_by_others = {"broker-a": ["c@1", "c@2", "c@3"], "broker-b": ["c@1", "c@2"]}
    seen_by_c3: dict[str, list[str] | None] = {"broker-a": ["c@1", "c@2", "c@3"], "broker-b": None}
    owned: list[MessageQueue] = []
    for cid, answers in (("c@1", seen_by_others), ("c@2", seen_by_others), ("c@3", seen_by_c3)):
        impl, _ = make_views(cid, [answers], fallback="per-broker")
        run(impl)
        owned.extend(impl.process_queue_table)
        if cid == "c@3":
            assert {mq.broker_name for mq in impl.process_queue_table} == {"broker-a"}
    assert sorted(owned) == qs(16)  # each queue exactly once, none orphaned


def test_per_broker_views_record_each_brokers_stamp_for_the_fence() -> None:
    answers: dict[str, list[str] | None] = {"broker-a": ["c@2", "c@1"], "broker-b": None}
    impl, ctx = make_views("c@1", [answers], fallback="per-broker")
    ctx.stamps = {"broker-a": "7/8", "broker-b": "3/8"}
    run(impl)
    assert impl.views == {(T, "broker-a"): "7/8"}  # broker-b did not answer: no stamp learnt from it
    ctx.stamps = {}  # broker-a answers without a stamp now (a RocketMQ broker): no fence for it
    run(impl)
    assert impl.views == {}


@settings(max_examples=40, deadline=None)
@given(steps=st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=8))
def test_a_queue_kept_over_an_epoch_jump_resumes_from_the_committed_offset(steps: list[int]) -> None:
    """The group's epoch on broker-a moves by a drawn step between rebalances; the members stay
    the same, so every rebalance keeps the same queues. A step of 0 or 1 means this consumer saw
    every change: it keeps its position. A larger step means changes it did not see (another
    member may have pulled its queues meanwhile): it drops them and adds them again at the
    committed offset."""
    print(f"drawn: epoch steps {steps}")
    answers: dict[str, list[str] | None] = {"broker-a": ["c@1", "c@2"]}
    impl, ctx = make_views("c@1", [answers], fallback="per-broker")
    store = impl.offset_store
    assert isinstance(store, MemoryOffsets)
    epoch = 2**32 + 5
    ctx.stamps = {"broker-a": calls_view_stamp(epoch, 16)}
    [first] = run(impl)
    mine = sorted(first.owned)
    for step in steps:
        for mq in mine:  # consumed ahead of what the group committed
            store.update_offset(mq, 100, False)
            store.stored[mq] = 40
        epoch += step
        ctx.stamps = {"broker-a": calls_view_stamp(epoch, 16)}
        [record] = run(impl)
        assert sorted(record.owned) == mine
        if step > 1:
            assert sorted(record.removed) == sorted(record.added) == mine
            assert record.pull_from == dict.fromkeys(mine, 100)  # its own commit went first, forward
        else:
            assert record.removed == record.added == ()
            assert all(store.memory_offset(mq) == 100 for mq in mine)
        assert impl.views[(T, "broker-a")] == calls_view_stamp(epoch, 16)


def test_a_brokers_own_queue_count_outranks_a_stale_route_until_the_route_agrees() -> None:
    impl, _ = make_views("c@1", [{"broker-a": ["c@1"]}], fallback="per-broker")
    route = frozenset(MessageQueue(T, "broker-a", i) for i in range(4))
    impl.set_topic_queues(T, route)
    assert impl.broker_said_queue_nums(T, "broker-a", 6)
    assert len(impl.topic_subscribe_info[T]) == 6
    assert not impl.broker_said_queue_nums(T, "broker-a", 6)  # already known
    assert not impl.set_topic_queues(T, route)  # the stale route again: the broker's word stands
    assert len(impl.topic_subscribe_info[T]) == 6
    fresh = frozenset(MessageQueue(T, "broker-a", i) for i in range(6))
    impl.set_topic_queues(T, fresh)
    assert impl.broker_queue_nums == {}  # the route caught up: no correction left
    assert impl.set_topic_queues(T, route)  # and a later shrink of the route is believed again
    assert len(impl.topic_subscribe_info[T]) == 4


def test_wait_rebalanced_returns_when_the_next_rebalance_ends() -> None:
    impl, _ = make_views("c@1", [{"broker-a": ["c@1"], "broker-b": ["c@1"]}], fallback="per-broker")

    async def scenario() -> tuple[bool, bool]:
        waiter = asyncio.ensure_future(impl.wait_rebalanced(5.0))
        await asyncio.sleep(0)
        await impl.do_rebalance(RebalanceTrigger.VIEW)
        return await waiter, await impl.wait_rebalanced(0.01)

    assert asyncio.run(scenario()) == (True, False)


def test_per_broker_views_take_each_brokers_own_queue_count_over_a_stale_route() -> None:
    impl, ctx = make_views("c@1", [{"broker-a": ["c@1"], "broker-b": ["c@1"]}], fallback="per-broker")
    stale = frozenset(MessageQueue(T, b, i) for b in ("broker-a", "broker-b") for i in range(2))
    impl.set_topic_queues(T, stale)
    ctx.queue_nums = {"broker-a": 3, "broker-b": 2}  # broker-a grew; the route does not know yet
    [record] = run(impl)
    assert len(record.all_queues) == 5
    assert sorted(mq.short for mq in impl.process_queue_table) == [
        f"broker-{q}" for q in ("a:0", "a:1", "a:2", "b:0", "b:1")
    ]
