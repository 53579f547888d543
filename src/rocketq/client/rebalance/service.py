"""The rebalance service (``RebalanceService``): when the consumers of one client instance rebalance.

One per :class:`~rocketq.client.instance.ClientInstance`, on its loop. It rebalances every
consumer of the instance

* every ``rebalance_interval`` seconds (20 s, ``rocketmq.client.rebalance.waitInterval``) after
  the last rebalance it ran - the safety net for a lost notification;
* **at once** when woken (:meth:`RebalanceService.wakeup`): a broker's
  NOTIFY_CONSUMER_IDS_CHANGED, a route change, an offset correction, ``resume()``;
* but never sooner than ``rebalance_min_interval`` seconds after the end of the last one, when
  set: a burst of wake-ups (a group of ten starting at once notifies each member ten times) then
  costs one rebalance now and one when the interval has passed, not one each. As RocketMQ 5.x's
  ``RebalanceService.run`` (``rocketmq.client.rebalance.minInterval``, 1 s there); rocketq's
  default is 0, as RocketMQ 4.9.4, which has no minimum (``ClientConfig.rebalance_min_interval``).
  A consumer's own rebalance at start runs directly, not through the service, so the first
  wake-up after a start is served at once.

The timing is :class:`RebalanceSchedule`, pure with ``now`` passed in; :class:`RebalanceService`
only waits and calls. RocketMQ 5.x also shortens the next wait to the minimum interval when a
rebalance left a consumer unbalanced; rocketq does not (a queue whose lock was refused is retried
by the lease keeper, :mod:`rocketq.client.rebalance.leases`, and a topic without a route yet by
the consumer's route lookups).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from rocketq.client.rebalance.log import RebalanceTrigger

__all__ = ["RebalanceSchedule", "RebalanceService"]

logger = logging.getLogger(__name__)


class RebalanceSchedule:
    """When the rebalance service runs next, and with which trigger (pure; times in seconds).

    >>> s = RebalanceSchedule(wait_interval=20.0, min_interval=1.0, now=100.0)
    >>> s.delay(now=100.0)              # nothing asked for: the periodic one, 20 s from start
    20.0
    >>> s.wake(RebalanceTrigger.NOTIFY)
    >>> s.delay(now=100.5)              # asked for, none ran yet: now
    0.0
    >>> s.begin(now=100.5)
    <RebalanceTrigger.NOTIFY: 'notify'>
    >>> s.end(now=100.75)
    >>> s.wake(RebalanceTrigger.ROUTE)
    >>> s.delay(now=101.0)              # 0.25 s after the last one ended: wait out the minimum
    0.75
    >>> s.begin(now=101.75), s.end(now=101.75), s.delay(now=101.75)
    (<RebalanceTrigger.ROUTE: 'route'>, None, 20.0)
    """

    __slots__ = ("_last_end", "_pending", "_started", "min_interval", "wait_interval")

    def __init__(self, *, wait_interval: float, min_interval: float, now: float) -> None:
        self.wait_interval = wait_interval
        self.min_interval = min_interval
        self._started = now
        self._last_end: float | None = None
        self._pending: RebalanceTrigger | None = None

    @property
    def pending(self) -> RebalanceTrigger | None:
        """The trigger of the rebalance asked for and not begun yet (the last one asked)."""
        return self._pending

    def wake(self, trigger: RebalanceTrigger) -> None:
        """A rebalance is wanted as soon as the minimum interval allows (a later wake-up's trigger
        replaces an earlier one's)."""
        self._pending = trigger

    def due_at(self) -> float:
        """When the next rebalance is due."""
        if self._pending is None:
            since = self._started if self._last_end is None else self._last_end
            return since + self.wait_interval
        if self._last_end is None:
            return self._started
        return self._last_end + self.min_interval

    def delay(self, now: float) -> float:
        """Seconds until the next rebalance (0 when it is due)."""
        return max(0.0, self.due_at() - now)

    def begin(self, now: float) -> RebalanceTrigger:
        """A rebalance starts now: its trigger (the one asked for, else PERIODIC)."""
        trigger = self._pending if self._pending is not None else RebalanceTrigger.PERIODIC
        self._pending = None
        return trigger

    def end(self, now: float) -> None:
        """The rebalance that began last has ended; intervals count from here."""
        self._last_end = now


class RebalanceService:
    """Runs ``rebalance(trigger)`` when :class:`RebalanceSchedule` says so, on the running loop.

    :meth:`start` and :meth:`close` on the loop; :meth:`wakeup` from the loop's thread (the client
    instance's ``rebalance_immediately`` hops there from any thread).
    """

    def __init__(
        self,
        rebalance: Callable[[RebalanceTrigger], Awaitable[object]],
        *,
        wait_interval: float,
        min_interval: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._rebalance = rebalance
        self._clock = clock
        self.schedule = RebalanceSchedule(wait_interval=wait_interval, min_interval=min_interval, now=clock())
        self._wakeup: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._wakeup = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="rocketq-rebalance-service")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    def wakeup(self, trigger: RebalanceTrigger) -> None:
        """Ask for a rebalance now (or when the minimum interval has passed)."""
        self.schedule.wake(trigger)
        if self._wakeup is not None:
            self._wakeup.set()

    async def _run(self) -> None:
        assert self._wakeup is not None
        wakeup, schedule, clock = self._wakeup, self.schedule, self._clock
        while True:
            delay = schedule.delay(clock())
            if delay > 0:
                wakeup.clear()
                try:
                    await asyncio.wait_for(wakeup.wait(), delay)
                except TimeoutError:
                    pass
                continue
            trigger = schedule.begin(clock())
            try:
                await self._rebalance(trigger)
            except Exception:
                logger.exception("rebalance (%s) failed", trigger)
            finally:
                schedule.end(clock())
