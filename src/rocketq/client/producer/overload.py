"""What keeps a producer from turning a busy broker into a retry storm.

Offered load above what the brokers take must become *waiting* (the caller is held) or one clear
error, never more load. Three parts, each small, the first two pure (``now`` passed in):

* :class:`RetryBudget` - retries are a share of the sends begun, not a number per send: each send
  begun deposits ``ratio`` of a retry (10 %), plus ``min_per_second`` so a quiet producer can still
  retry; a retry takes one. RocketMQ retries every failed send up to ``retryTimesWhenSendFailed``
  times, so under overload (every send timing out) it triples the load; with the budget the
  retries are at most ~10 % more, and a send whose retry finds the budget empty fails with its
  last error at once. Only transport errors (timeouts, lost connections) spend it: a broker's
  refusal is a quick, cheap answer, retried as RocketMQ retries it. (The budget is Finagle's
  ``RetryBudget`` idea; ours.)
* :class:`BrokerBackoff` - RocketMQ's latency fault tolerance (``sendLatencyFaultEnable``,
  ``MQFaultStrategy``): a broker that answered ``SYSTEM_BUSY`` or timed out is left alone for a
  while; the first back-off is ``first`` (50 ms) and each further one without a success in
  between doubles, up to ``longest`` (1 s; RocketMQ 5's ``notAvailableDuration`` runs 2..30 s,
  too long for a single-broker cluster). Sends choose another broker while one backs off; when
  every broker of the topic backs off they go anyway, as RocketMQ's do (a pause there made
  goodput fall by half in ``bench/bench_overload.py``): :class:`InFlightLimit`'s window holds
  the load back.
* :class:`InFlightLimit` - asynchronous sends out at once (``send_future``, ``send_callback``,
  ``send_async``) are bounded in number and bytes, as RocketMQ 5's
  ``enableBackpressureForAsyncMode`` / ``backPressureForAsyncSendNum`` (10000) /
  ``backPressureForAsyncSendSize`` (100 MiB) bound them: at the bound the caller waits for a slot
  (up to the send's timeout; then :class:`~rocketq.errors.RemotingTooMuchRequestError`, as Java's
  ``RemotingTooMuchRequestException``). Ours is on by default, its bound lower (1024), and the
  count actually allowed is a *window* that adapts as TCP's congestion window does (additive
  increase, multiplicative decrease): a busy answer or a timeout halves it (at most once per
  ``decrease_interval``), each answered send grows it by ``1 / window`` (one per window of
  answers), between ``min_window`` and the bound. A fixed bound cannot be right: 1024 sends out
  from each of four producers is ~0.6 s of queue at 6,500 sends/s, past the broker's 200 ms
  ``waitTimeMillsInSendQueue``, so every send came back busy; the window finds the share of the
  broker each producer can have. Two more signals keep the queue short, not only bounded:
  the window *starts* at ``min_window`` and grows by one per answer (TCP's slow start) until the
  first congestion, so a producer's first second is not a burst of 1024 sends per process (it
  was where the slowest 1 % of sends began, at 1.2-2.4 s); and a *standing queue* halves it as
  a busy answer does: when even the quickest send of a ``decrease_interval`` stayed in the
  window ``queue_delay_target`` (50 ms) longer than the quickest of the last ``base_period``
  (CoDel's and Vegas's idea, with the sojourn from slot to answer, so a queue in the client's
  own loop or in the sockets counts as much as one in the broker), which is well before the
  broker's 200 ms make it answer busy and the busy retries make the tail.

>>> budget = RetryBudget(ratio=0.1, min_per_second=0.0, max_tokens=10.0, tokens=0.0)
>>> for _ in range(20):
...     budget.deposit(now=0.0)
>>> [budget.withdraw(now=0.0) for _ in range(3)]
[True, True, False]
>>> backoff = BrokerBackoff(first=0.05, longest=1.0)
>>> backoff.failed("broker-a", now=10.0), backoff.failed("broker-a", now=10.1)
(0.05, 0.1)
>>> backoff.until("broker-a", now=10.15), backoff.until("broker-a", now=10.3)
(10.2, None)
>>> backoff.succeeded("broker-a"); backoff.failed("broker-a", now=11.0)
0.05
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from rocketq.errors import RemotingTooMuchRequestError

__all__ = ["BrokerBackoff", "InFlightLimit", "RetryBudget"]


@dataclass(slots=True, kw_only=True)
class RetryBudget:
    """Retries as a share of sends begun (see the module docstring); thread-safe enough for its
    use (a lost deposit under a race changes nothing that matters), pure in time."""

    #: Retries earned per send begun.
    ratio: float = 0.1
    #: Retries earned per second whatever the traffic.
    min_per_second: float = 10.0
    #: The most retries saved up.
    max_tokens: float = 100.0
    tokens: float = 10.0
    _at: float | None = None

    def _refill(self, now: float) -> None:
        if self._at is not None and now > self._at:
            self.tokens = min(self.max_tokens, self.tokens + (now - self._at) * self.min_per_second)
        self._at = now

    def deposit(self, now: float) -> None:
        """A send begins."""
        self._refill(now)
        self.tokens = min(self.max_tokens, self.tokens + self.ratio)

    def withdraw(self, now: float) -> bool:
        """A send would retry: ``True`` if the budget allows it (one retry taken)."""
        self._refill(now)
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


@dataclass(slots=True, kw_only=True)
class BrokerBackoff:
    """Brokers to leave alone for a while, by name (see the module docstring); pure in time."""

    first: float = 0.05
    longest: float = 1.0
    #: broker name -> (back off until, the last back-off's length)
    _until: dict[str, tuple[float, float]] | None = None

    def failed(self, broker: str, now: float) -> float:
        """``broker`` answered busy or timed out at ``now``: its back-off begins; its length."""
        table = self._until
        if table is None:
            table = self._until = {}
        last = table.get(broker)
        if last is not None and now < last[0]:
            # already backing off: the answers of the sends that were out when it began are one
            # signal, not one doubling each (a burst of them made 50 ms a whole second at once)
            return last[0] - now
        length = self.first if last is None else min(self.longest, last[1] * 2)
        table[broker] = (now + length, length)
        return length

    def succeeded(self, broker: str) -> None:
        """``broker`` answered a send: no back-off."""
        if self._until and broker in self._until:
            del self._until[broker]

    def until(self, broker: str, now: float) -> float | None:
        """When ``broker``'s back-off ends, if it is backing off at ``now``."""
        table = self._until
        if not table:
            return None
        entry = table.get(broker)
        if entry is None or entry[0] <= now:
            return None
        return entry[0]

    def any_active(self) -> bool:
        """Some broker backs off (or did lately: cheap check for the hot path)."""
        return bool(self._until)


class InFlightLimit:
    """Asynchronous sends out at once, bounded in count and bytes (see the module docstring).

    :meth:`acquire` blocks a plain thread; :meth:`acquire_async` waits on an event loop without
    blocking it; :meth:`try_acquire` never waits (the client's own loop, which must not block).
    """

    def __init__(
        self,
        max_count: int,
        max_bytes: int,
        *,
        min_window: int = 64,
        decrease_interval: float = 0.1,
        queue_delay_target: float = 0.05,
        base_period: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_count = max_count
        self.max_bytes = max_bytes
        self.min_window = min(min_window, max_count)
        self.decrease_interval = decrease_interval
        self.queue_delay_target = queue_delay_target
        self.base_period = base_period
        self._clock = clock
        #: sends allowed out now (the adaptive window, ``min_window`` .. ``max_count``); it starts
        #: at ``min_window`` and doubles each round trip (slow start) until the first congestion
        self.window = float(self.min_window)
        self.slow_start = True
        self._decreased_at = -1e18
        # the round trip without queueing: the least seen in this base period and the last one
        self._base_now = math.inf
        self._base_last = math.inf
        self._base_began: float | None = None
        # the least round trip of the current decrease interval (CoDel's idea: a queue that
        # stands keeps even the quickest answer of an interval late; one slow answer is noise)
        self._interval_min = math.inf
        self._interval_began: float | None = None
        self.count = 0
        self.bytes = 0
        self.waited = 0  # sends that had to wait for a slot (back-pressure applied)
        self._cond = threading.Condition(threading.Lock())
        self._loop_waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    def _fits(self, size: int) -> bool:
        # a send larger than the byte bound alone still goes, alone
        return self.count < self.window and (self.bytes + size <= self.max_bytes or self.count == 0)

    def congested(self) -> None:
        """A send was answered busy or timed out: halve the window (once per ``decrease_interval``:
        the answers of one window's sends are one signal) and end the slow start."""
        self._decrease(self._clock())

    def _decrease(self, now: float) -> None:
        self.slow_start = False
        if now - self._decreased_at >= self.decrease_interval:
            self._decreased_at = now
            self.window = max(float(self.min_window), self.window / 2)

    def base_rtt(self) -> float:
        """The round trip without queueing, as far as seen (the least of the last two base
        periods; ``inf`` before any answer)."""
        return min(self._base_now, self._base_last)

    def answered(self) -> None:
        """A send was answered: grow the window by one per window of answers (by one per answer
        in the slow start)."""
        window = self.window
        if window < self.max_count:
            step = 1.0 if self.slow_start else 1.0 / window
            self.window = min(float(self.max_count), window + step)

    def _late(self, rtt: float) -> bool:
        """Take a sojourn; whether it showed a standing queue (the window halved)."""
        now = self._clock()
        if self._base_began is None or now - self._base_began >= self.base_period:
            self._base_last, self._base_now, self._base_began = self._base_now, rtt, now
        elif rtt < self._base_now:
            self._base_now = rtt
        self._interval_min = min(self._interval_min, rtt)
        if self.slow_start and rtt > self.base_rtt() + self.queue_delay_target:
            # the slow start ends at the first late answer (HyStart's idea): doubling once more
            # per round trip would overshoot by a whole window before an interval's verdict
            self.slow_start = False
        if self._interval_began is None:
            self._interval_began = now
            return False
        if now - self._interval_began < self.decrease_interval:
            return False
        late = self._interval_min > self.base_rtt() + self.queue_delay_target
        self._interval_min, self._interval_began = math.inf, now
        if late:
            self._decrease(now)
        return late

    def try_acquire(self, size: int) -> bool:
        with self._cond:
            if self._fits(size):
                self.count += 1
                self.bytes += size
                return True
            return False

    def acquire(self, size: int, timeout: float) -> None:
        """Take a slot for a send of ``size`` bytes, waiting up to ``timeout`` seconds."""
        with self._cond:
            if not self._fits(size):
                self.waited += 1
                deadline = time.monotonic() + timeout
                while not self._fits(size):
                    left = deadline - time.monotonic()
                    if left <= 0 or not self._cond.wait(left):
                        if self._fits(size):
                            break
                        raise self.too_many(timeout)
            self.count += 1
            self.bytes += size

    async def acquire_async(self, size: int, timeout: float) -> None:
        """:meth:`acquire` on an event loop (the loop runs on while this waits)."""
        if self.try_acquire(size):
            return
        self.waited += 1
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            future: asyncio.Future[None] = loop.create_future()
            with self._cond:
                if self._fits(size):
                    self.count += 1
                    self.bytes += size
                    return
                self._loop_waiters.append((loop, future))
            left = deadline - loop.time()
            if left <= 0:
                raise self.too_many(timeout)
            try:
                async with asyncio.timeout(left):
                    await future
            except TimeoutError:
                if self.try_acquire(size):
                    return
                raise self.too_many(timeout) from None

    def release(self, size: int, sojourn: float | None = None) -> None:
        """A send that took a slot is over, ``sojourn`` seconds after it took it (its answer,
        retries and the client's own queues included). When the quickest sojourn of the last
        ``decrease_interval`` stood ``queue_delay_target`` above the base, a queue stands
        somewhere - in the client, the sockets or the broker, before the broker's 200 ms wait
        makes it say busy: the window halves as on :meth:`congested`."""
        with self._cond:
            self.count -= 1
            self.bytes -= size
            if sojourn is not None:
                self._late(sojourn)
            self._cond.notify()
            waiters, self._loop_waiters = self._loop_waiters, []
        for loop, future in waiters:
            if not loop.is_closed():
                loop.call_soon_threadsafe(_wake, future)

    def too_many(self, timeout: float) -> RemotingTooMuchRequestError:
        return RemotingTooMuchRequestError(
            f"{self.count} asynchronous sends in flight ({self.bytes} bytes), the most this producer "
            f"sends at once now (window {self.window:.0f} of max_async_in_flight {self.max_count}, "
            f"max_async_in_flight_bytes {self.max_bytes}); none finished within {timeout:.3f}s"
        )


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
