"""Broker leases, pure parts driven by an injected clock (used by orderly consumption and the clean
handoff): lease retries, lock renewal results and the client-side lock expiry."""

from __future__ import annotations

import pytest

from rocketq.client.config import PushConsumerConfig
from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.rebalance.leases import LeaseRetry, apply_lock_result
from rocketq.client.rebalance.log import RebalanceTrigger
from rocketq.models import MessageQueue

Q = [MessageQueue("T", "broker-a", i) for i in range(4)]


def test_lease_retry_backs_off_from_50_ms_to_1_s() -> None:
    r = LeaseRetry(min_delay=0.05, max_delay=1.0)
    assert [round(r.delay(n), 4) for n in range(1, 10)] == [
        0.05, 0.075, 0.1125, 0.1688, 0.2531, 0.3797, 0.5695, 0.8543, 1.0,
    ]  # fmt: skip
    r.want([Q[0]], RebalanceTrigger.NOTIFY, now=0.0)
    times = []
    now = 0.0
    for _ in range(12):
        delay = r.next_delay(now)
        assert delay is not None
        now += delay
        assert r.due(now) == [Q[0]]
        times.append(round(now, 4))
        r.failed([Q[0]], now=now)
    assert times[:3] == [0.05, 0.125, 0.2375]
    assert times[-1] - times[-2] == pytest.approx(1.0)  # capped


def test_lease_retry_forgets_queues_no_longer_allocated_and_keeps_backoff_of_others() -> None:
    r = LeaseRetry()
    r.want([Q[0], Q[1]], RebalanceTrigger.NOTIFY, now=0.0)
    r.failed([Q[0]], now=0.05)
    r.want([Q[0], Q[2]], RebalanceTrigger.PERIODIC, now=0.06)  # Q1 went elsewhere, Q2 is new
    assert len(r) == 2
    assert r.due(0.11) == [Q[2]]  # Q0 keeps its grown back-off (due at 0.125)
    assert r.due(0.125) == [Q[0], Q[2]]
    assert r.trigger_of(Q[0]) is RebalanceTrigger.NOTIFY
    assert r.trigger_of(Q[2]) is RebalanceTrigger.PERIODIC
    r.acquired([Q[0]])
    r.keep_only([])
    assert r.next_delay(1.0) is None
    assert r.due(9.0) == []


def test_lock_renewal_confirms_held_queues_and_reports_lost_ones() -> None:
    table = {mq: ProcessQueue(now=0.0) for mq in Q[:3]}
    for pq in table.values():
        pq.lock_confirmed(0.0)
    lost = apply_lock_result(table, Q[:3], {Q[0], Q[2]}, now=20.0)
    assert lost == [Q[1]]
    assert table[Q[0]].last_lock_timestamp == 20.0
    assert table[Q[0]].locked
    assert not table[Q[1]].locked
    assert table[Q[1]].last_lock_timestamp == 0.0
    assert apply_lock_result(table, [Q[1], Q[3]], set(), now=40.0) == []  # already lost; not ours


def test_client_side_lock_expiry_is_30_s_after_the_last_confirmation() -> None:
    cfg = PushConsumerConfig()
    assert (cfg.rebalance_lock_interval, cfg.rebalance_lock_max_live_time, cfg.unlock_delay) == (
        20.0,
        30.0,
        20.0,
    )
    pq = ProcessQueue(now=0.0)
    assert not pq.holds_valid_lock(0.0, 30.0)  # never locked
    pq.lock_confirmed(100.0)
    assert pq.holds_valid_lock(130.0, 30.0)
    assert pq.is_lock_expired(130.001, 30.0)
    assert not pq.holds_valid_lock(130.001, 30.0)
    pq.lock_confirmed(120.0)  # a renewal (every 20 s) keeps it valid
    assert pq.holds_valid_lock(149.0, 30.0)
    pq.locked = False
    assert not pq.holds_valid_lock(121.0, 30.0)
