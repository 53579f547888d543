"""The rebalance service's timing (RocketMQ 5.x ``RebalanceService``: 20 s wait, 1 s minimum interval)."""

from __future__ import annotations

import asyncio

import pytest

from rocketq.client.config import ClientConfig
from rocketq.client.rebalance.log import RebalanceTrigger
from rocketq.client.rebalance.service import RebalanceSchedule, RebalanceService
from rocketq.errors import ConfigError

T = RebalanceTrigger


def test_defaults_are_rocketmq_4_9_4s_wait_and_no_minimum_interval() -> None:
    cfg = ClientConfig()
    assert (cfg.rebalance_interval, cfg.rebalance_min_interval) == (20.0, 0.0)
    assert ClientConfig(rebalance_min_interval=1.0).rebalance_min_interval == 1.0
    with pytest.raises(ConfigError, match="rebalance_min_interval"):
        ClientConfig(rebalance_min_interval=-1.0)


def test_periodic_rebalances_come_every_wait_interval_after_the_last_one_ended() -> None:
    s = RebalanceSchedule(wait_interval=20.0, min_interval=1.0, now=0.0)
    assert s.delay(now=0.0) == 20.0
    assert s.delay(now=19.0) == 1.0
    assert s.delay(now=20.5) == 0.0
    assert s.begin(now=20.5) is T.PERIODIC
    s.end(now=21.0)  # the rebalance took 0.5 s: the next one is 20 s after its end
    assert s.due_at() == 41.0


def test_the_first_wake_up_is_served_at_once() -> None:
    s = RebalanceSchedule(wait_interval=20.0, min_interval=1.0, now=0.0)
    s.wake(T.NOTIFY)
    assert s.delay(now=0.001) == 0.0
    assert s.begin(now=0.001) is T.NOTIFY
    assert s.pending is None


def test_wake_ups_within_the_minimum_interval_wait_for_it_and_become_one_rebalance() -> None:
    s = RebalanceSchedule(wait_interval=20.0, min_interval=1.0, now=0.0)
    s.wake(T.NOTIFY)
    s.begin(now=5.0)
    s.end(now=5.2)
    for at, trigger in ((5.3, T.NOTIFY), (5.4, T.ROUTE), (5.5, T.NOTIFY)):
        s.wake(trigger)
        assert s.delay(now=at) == pytest.approx(6.2 - at)
    assert s.delay(now=6.2) == 0.0
    assert s.begin(now=6.2) is T.NOTIFY  # the last trigger asked for
    s.end(now=6.3)
    assert s.delay(now=6.3) == pytest.approx(20.0)  # nothing pending: back to the periodic wait


def test_a_wake_up_during_a_rebalance_runs_after_it_within_the_minimum_interval() -> None:
    s = RebalanceSchedule(wait_interval=20.0, min_interval=1.0, now=0.0)
    s.wake(T.MANUAL)
    assert s.begin(now=1.0) is T.MANUAL
    s.wake(T.CORRECTION)  # while the rebalance runs
    s.end(now=1.5)
    assert s.pending is T.CORRECTION
    assert s.due_at() == 2.5


def test_a_zero_minimum_interval_serves_every_wake_up_at_once() -> None:
    s = RebalanceSchedule(wait_interval=20.0, min_interval=0.0, now=0.0)
    for at in (1.0, 1.01, 1.02):
        s.wake(T.NOTIFY)
        assert s.delay(now=at) == 0.0
        s.begin(now=at)
        s.end(now=at)


def test_the_service_turns_a_burst_of_wake_ups_into_two_rebalances() -> None:
    async def run() -> list[RebalanceTrigger]:
        ran: list[RebalanceTrigger] = []
        first, second = asyncio.Event(), asyncio.Event()

        async def rebalance(trigger: RebalanceTrigger) -> None:
            ran.append(trigger)
            (first if len(ran) == 1 else second).set()

        service = RebalanceService(rebalance, wait_interval=60.0, min_interval=0.05)
        service.start()
        try:
            service.wakeup(T.NOTIFY)
            await asyncio.wait_for(first.wait(), 5.0)
            for trigger in (T.NOTIFY, T.ROUTE, T.NOTIFY, T.MANUAL):
                service.wakeup(trigger)
                await asyncio.sleep(0)  # let the service run between wake-ups
            await asyncio.wait_for(second.wait(), 5.0)
            assert service.schedule.pending is None
            return ran
        finally:
            await service.close()

    assert asyncio.run(run()) == [T.NOTIFY, T.MANUAL]


def test_a_failing_rebalance_does_not_stop_the_service() -> None:
    async def run() -> int:
        calls = 0
        again = asyncio.Event()

        async def rebalance(trigger: RebalanceTrigger) -> None:
            nonlocal calls
            calls += 1
            if calls == 2:
                again.set()
            raise RuntimeError("boom")

        service = RebalanceService(rebalance, wait_interval=60.0, min_interval=0.0)
        service.start()
        try:
            service.wakeup(T.NOTIFY)
            await asyncio.sleep(0.01)
            service.wakeup(T.NOTIFY)
            await asyncio.wait_for(again.wait(), 5.0)
            return calls
        finally:
            await service.close()

    assert asyncio.run(run()) == 2
