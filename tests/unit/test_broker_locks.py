"""The queue lock table (LOCK_BATCH_MQ / UNLOCK_BATCH_MQ) with time driven by the test."""

from __future__ import annotations

import doctest

import pytest

import rocketq.broker.locks as locks_module
from rocketq.broker.locks import REBALANCE_LOCK_MAX_LIVE_TIME, QueueLockConfig, QueueLockTable
from rocketq.errors import ConfigError
from rocketq.models import MessageQueue

Q = [MessageQueue("T", "broker-a", i) for i in range(4)]


def test_default_max_live_time_is_rocketmqs() -> None:
    assert REBALANCE_LOCK_MAX_LIVE_TIME == 60.0
    assert QueueLockConfig().rebalance_lock_max_live_time == 60.0
    with pytest.raises(ConfigError):
        QueueLockConfig(rebalance_lock_max_live_time=0)


def test_free_queues_are_locked_and_owned() -> None:
    table = QueueLockTable()
    assert table.try_lock_batch("G", Q[:2], "c1", now=100.0) == set(Q[:2])
    assert table.owner_of("G", Q[0], now=100.0) == "c1"
    assert table.is_locked("G", Q[1], "c1", now=100.0)
    assert not table.is_locked("G", Q[1], "c2", now=100.0)
    assert table.owner_of("G", Q[2], now=100.0) is None
    assert len(table) == 2


def test_held_queue_is_refused_to_another_client_until_expiry() -> None:
    table = QueueLockTable()
    table.try_lock_batch("G", Q[:2], "c1", now=0.0)
    # c2 gets only the free queue; c1's live locks are excluded.
    assert table.try_lock_batch("G", Q[1:3], "c2", now=59.0) == {Q[2]}
    # Exactly 60 s old is still live: expiry is "strictly more than" the max live time.
    assert table.try_lock_batch("G", [Q[0]], "c2", now=60.0) == set()
    assert table.owner_of("G", Q[0], now=60.0) == "c1"
    # Past 60 s the lock is dead: the other client takes it over.
    assert table.try_lock_batch("G", [Q[0]], "c2", now=60.001) == {Q[0]}
    assert table.owner_of("G", Q[0], now=60.001) == "c2"


def test_relocking_renews_the_lock() -> None:
    table = QueueLockTable()
    table.try_lock_batch("G", [Q[0]], "c1", now=0.0)
    assert table.try_lock_batch("G", [Q[0]], "c1", now=50.0) == {Q[0]}  # renewed at 50
    assert table.try_lock_batch("G", [Q[0]], "c2", now=100.0) == set()  # 50 s after renewal: live
    assert table.owner_of("G", Q[0], now=110.0) == "c1"
    assert table.owner_of("G", Q[0], now=110.5) is None  # 60.5 s after renewal
    assert table.try_lock_batch("G", [Q[0]], "c2", now=110.5) == {Q[0]}


def test_owner_may_retake_its_own_expired_lock() -> None:
    table = QueueLockTable()
    table.try_lock_batch("G", [Q[0]], "c1", now=0.0)
    assert not table.is_locked("G", Q[0], "c1", now=61.0)
    assert table.try_lock_batch("G", [Q[0]], "c1", now=61.0) == {Q[0]}
    assert table.is_locked("G", Q[0], "c1", now=61.0)


def test_queries_do_not_renew() -> None:
    table = QueueLockTable()
    table.try_lock_batch("G", [Q[0]], "c1", now=0.0)
    assert table.is_locked("G", Q[0], "c1", now=59.0)
    assert table.owner_of("G", Q[0], now=59.0) == "c1"
    assert table.try_lock_batch("G", [Q[0]], "c2", now=60.5) == {Q[0]}


def test_locks_are_per_group() -> None:
    table = QueueLockTable()
    assert table.try_lock_batch("G1", [Q[0]], "c1", now=0.0) == {Q[0]}
    assert table.try_lock_batch("G2", [Q[0]], "c2", now=1.0) == {Q[0]}
    assert table.owner_of("G1", Q[0], now=1.0) == "c1"
    assert table.owner_of("G2", Q[0], now=1.0) == "c2"


def test_unlock_only_releases_the_owners_locks() -> None:
    table = QueueLockTable()
    table.try_lock_batch("G", Q[:2], "c1", now=0.0)
    table.try_lock_batch("G", [Q[2]], "c2", now=0.0)
    # c2 asks to unlock everything: only its own queue is released.
    assert table.unlock_batch("G", Q[:3], "c2") == {Q[2]}
    assert table.owner_of("G", Q[0], now=1.0) == "c1"
    assert table.owner_of("G", Q[1], now=1.0) == "c1"
    assert table.owner_of("G", Q[2], now=1.0) is None
    # Once released, anyone may lock at once (no waiting for expiry).
    assert table.try_lock_batch("G", [Q[0]], "c2", now=2.0) == set()
    assert table.unlock_batch("G", [Q[0], Q[3]], "c1") == {Q[0]}
    assert table.try_lock_batch("G", [Q[0]], "c2", now=2.0) == {Q[0]}


def test_unlock_of_unknown_group_or_queue_is_harmless() -> None:
    table = QueueLockTable()
    assert table.unlock_batch("nope", Q, "c1") == set()
    table.try_lock_batch("G", [Q[0]], "c1", now=0.0)
    assert table.unlock_batch("G", [Q[1]], "c1") == set()
    assert table.owner_of("G", Q[0], now=0.0) == "c1"


def test_owner_may_unlock_after_its_lock_expired() -> None:
    table = QueueLockTable()
    table.try_lock_batch("G", [Q[0]], "c1", now=0.0)
    assert table.owner_of("G", Q[0], now=1000.0) is None  # long expired, still c1's entry
    assert table.unlock_batch("G", [Q[0]], "c1") == {Q[0]}
    assert len(table) == 0


def test_configurable_live_time() -> None:
    table = QueueLockTable(QueueLockConfig(rebalance_lock_max_live_time=5.0))
    table.try_lock_batch("G", [Q[0]], "c1", now=0.0)
    assert table.try_lock_batch("G", [Q[0]], "c2", now=5.0) == set()
    assert table.try_lock_batch("G", [Q[0]], "c2", now=5.5) == {Q[0]}


def test_try_lock_single() -> None:
    table = QueueLockTable()
    assert table.try_lock("G", Q[0], "c1", now=0.0)
    assert not table.try_lock("G", Q[0], "c2", now=1.0)
    assert table.try_lock("G", Q[0], "c1", now=1.0)


def test_purge_expired_changes_no_answer() -> None:
    table = QueueLockTable()
    table.try_lock_batch("G", Q[:2], "c1", now=0.0)
    table.try_lock_batch("G", [Q[2]], "c2", now=30.0)
    views = {lock.queue: lock for lock in table.locks(now=70.0)}
    assert views[Q[0]].expired
    assert views[Q[1]].expired
    assert not views[Q[2]].expired
    before = [table.owner_of("G", q, now=70.0) for q in Q]
    assert table.purge_expired(now=70.0) == 2
    assert [table.owner_of("G", q, now=70.0) for q in Q] == before
    assert len(table) == 1
    assert [lock.queue for lock in table.locks(now=70.0, group="G")] == [Q[2]]
    assert table.purge_expired(now=100.0) == 1
    assert table.locks(now=100.0) == []


def test_empty_batch_locks_nothing() -> None:
    table = QueueLockTable()
    assert table.try_lock_batch("G", [], "c1", now=0.0) == set()
    assert len(table) == 0


def test_module_doctests() -> None:
    failures, tried = doctest.testmod(locks_module)
    assert tried > 0
    assert failures == 0


def test_a_departed_members_leases_are_freed_and_orderly_locks_kept() -> None:
    """release_departed frees the leases (clean handoff) of clients no longer in the group, keeps
    their orderly locks (they may still be processing) and everyone's locks who stayed."""
    table = QueueLockTable()
    q = [MessageQueue("T", "b", i) for i in range(4)]
    assert table.try_lock_batch("g", q[:1], "gone", 0.0, lease=True) == {q[0]}
    assert table.try_lock_batch("g", q[1:2], "gone", 0.0) == {q[1]}  # orderly
    assert table.try_lock_batch("g", q[2:3], "stays", 0.0, lease=True) == {q[2]}
    assert table.try_lock_batch("h", q[3:], "gone", 0.0, lease=True) == {q[3]}  # another group
    assert table.release_departed("g", ["stays"]) == {q[0]}
    assert table.owner_of("g", q[0], 1.0) is None
    assert table.owner_of("g", q[1], 1.0) == "gone"
    assert table.owner_of("g", q[2], 1.0) == "stays"
    assert table.owner_of("h", q[3], 1.0) == "gone"
    assert table.release_departed("nosuch", []) == set()
