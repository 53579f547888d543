"""The producer's overload guards (retry budget, broker back-off, adaptive window) and the log
summary, on random sequences of events with time passed in."""

from __future__ import annotations

import doctest
import logging
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.client.config import ProducerConfig
from rocketq.client.producer import overload
from rocketq.client.producer.overload import BrokerBackoff, InFlightLimit, RetryBudget
from rocketq.errors import ConfigError, RemotingTooMuchRequestError
from rocketq.logsummary import LogSummary


def test_module_doctests() -> None:
    failures, tried = doctest.testmod(overload)
    assert tried
    assert not failures


events = st.lists(
    st.tuples(st.sampled_from(["send", "retry"]), st.floats(min_value=0.0, max_value=0.5)),
    min_size=1,
    max_size=400,
)


@given(events, st.floats(min_value=0.0, max_value=0.5), st.floats(min_value=0.0, max_value=20.0))
def test_retries_never_exceed_the_budget_of_the_sends_begun(
    seq: list[tuple[str, float]], ratio: float, per_second: float
) -> None:
    budget = RetryBudget(ratio=ratio, min_per_second=per_second, max_tokens=100.0)
    start = budget.tokens
    now = sends = retries = 0.0
    for kind, dt in seq:
        now += dt
        if kind == "send":
            budget.deposit(now)
            sends += 1
        elif budget.withdraw(now):
            retries += 1
    # every retry allowed was earned: the start, a share of each send, and the time passed
    assert retries <= start + ratio * sends + per_second * now + 1e-9
    assert 0.0 <= budget.tokens <= budget.max_tokens


@given(st.lists(st.tuples(st.booleans(), st.floats(min_value=0.0, max_value=2.0)), max_size=100))
def test_a_busy_broker_backs_off_longer_each_time_until_an_answer(seq: list[tuple[bool, float]]) -> None:
    backoff = BrokerBackoff(first=0.05, longest=1.0)
    now = 0.0
    last = 0.0  # the length of the back-off in force (0: none since the last answer)
    ends = 0.0
    for busy, dt in seq:
        now += dt
        if busy:
            length = backoff.failed("b", now)
            if now < ends:  # a busy answer during a back-off is the same signal: nothing doubles
                assert length == pytest.approx(ends - now)
                assert backoff.until("b", now) == ends
                continue
            assert length == (0.05 if last == 0.0 else min(1.0, last * 2))
            assert backoff.until("b", now) == now + length
            last, ends = length, now + length
        else:
            backoff.succeeded("b")
            assert backoff.until("b", now) is None
            last = ends = 0.0
    assert backoff.until("other", now) is None


def test_a_burst_of_busy_answers_is_one_back_off_not_a_doubling_each() -> None:
    backoff = BrokerBackoff(first=0.05, longest=1.0)
    lengths = [backoff.failed("b", 10.0 + i * 0.001) for i in range(40)]  # 40 answers in 40 ms
    assert lengths[0] == 0.05
    assert max(lengths) == 0.05
    assert backoff.failed("b", 10.06) == 0.1  # the next one after it ended doubles


@settings(max_examples=50)
@given(st.lists(st.sampled_from(["busy", "answer"]), min_size=1, max_size=3000), st.integers(8, 2048))
def test_the_window_halves_on_congestion_and_grows_one_per_window(seq: list[str], bound: int) -> None:
    t = [0.0]
    limit = InFlightLimit(bound, 1 << 30, min_window=8, decrease_interval=0.1, clock=lambda: t[0])
    assert limit.window == 8.0
    assert limit.slow_start
    for event in seq:
        t[0] += 0.05
        before, slow = limit.window, limit.slow_start
        if event == "busy":
            limit.congested()
            assert not limit.slow_start
            assert limit.window in (before, max(8.0, before / 2))  # once per decrease_interval
        else:
            limit.answered()
            step = 1.0 if slow else 1.0 / before
            assert before <= limit.window <= min(float(bound), before + step + 1e-9)
        assert 8.0 <= limit.window <= bound


@settings(max_examples=50)
@given(
    st.floats(min_value=0.0005, max_value=0.05),  # the round trip without a queue
    st.floats(min_value=0.0, max_value=0.5),  # the queue that stands
    st.integers(min_value=8, max_value=4096),
)
def test_a_standing_queue_halves_the_window_before_the_broker_says_busy(
    base: float, queue: float, bound: int
) -> None:
    """Sojourns ``queue`` above the base for a second: the window shrinks iff the queue is over
    the target (50 ms), at most once per interval; without one it only grows."""
    print(f"drew base={base:.4f} queue={queue:.3f} bound={bound}")
    t = [0.0]
    limit = InFlightLimit(bound, 1 << 30, min_window=8, clock=lambda: t[0])
    for _ in range(200):  # quiet traffic: the base is learnt, the window grows
        t[0] += 0.001
        limit.acquire(1, 1.0)
        limit.answered()
        limit.release(1, base)
    assert limit.base_rtt() == pytest.approx(base)
    grown = limit.window
    halvings = 0
    for _ in range(1000):
        t[0] += 0.001
        before = limit.window
        limit.acquire(1, 1.0)
        limit.release(1, base + queue)
        if limit.window < before:
            halvings += 1
            assert limit.window == max(8.0, before / 2)
    if queue > limit.queue_delay_target + 1e-9:
        # one halving per 100 ms interval of the second, down to the least window
        assert not limit.slow_start
        assert halvings >= 1 or grown == 8.0
        assert limit.window <= max(8.0, grown / 2**5)
    else:
        assert halvings == 0
        assert limit.window == grown


def test_a_full_window_makes_the_caller_wait_then_gives_one_clear_error() -> None:
    limit = InFlightLimit(2, 1 << 20)
    limit.acquire(10, 1.0)
    limit.acquire(10, 1.0)
    assert not limit.try_acquire(10)
    released = threading.Timer(0.05, limit.release, args=(10,))
    released.start()
    limit.acquire(10, 2.0)  # waited for the slot the timer freed
    assert limit.waited == 1
    with pytest.raises(RemotingTooMuchRequestError, match="max_async_in_flight 2"):
        limit.acquire(10, 0.05)
    released.join()


def test_the_producer_config_checks_its_overload_settings() -> None:
    for bad in (
        {"max_async_in_flight": 0},
        {"busy_backoff": 0.0},
        {"busy_backoff": 1.0, "busy_backoff_max": 0.5},
        {"retry_budget_ratio": -0.1},
    ):
        with pytest.raises(ConfigError):
            ProducerConfig(**bad)  # type: ignore[arg-type]


@given(st.lists(st.tuples(st.sampled_from("abc"), st.floats(min_value=0.0, max_value=4.0)), max_size=300))
def test_a_repeated_warning_is_one_line_per_window_and_a_count(seq: list[tuple[str, float]]) -> None:
    records: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    log = logging.getLogger(f"test.summary.{id(records)}")
    log.propagate = False
    log.setLevel(logging.WARNING)
    log.addHandler(Collect())
    t = [0.0]
    summary = LogSummary(log, window=10.0, clock=lambda: t[0])
    per_key: dict[str, int] = {}
    for key, dt in seq:
        t[0] += dt
        summary.warning(key, f"{key} things failed", "%s failed at %.1f", key, t[0])
        per_key[key] = per_key.get(key, 0) + 1
    summary.flush()
    # each occurrence is either a line of its own or counted in a summary line: none lost
    counted = sum(int(r.split(" more ")[0].replace(",", "")) for r in records if " more " in r)
    plain = sum(1 for r in records if " more " not in r)
    assert plain + counted == sum(per_key.values())
    # at most one plain line per key per window
    span = t[0]
    for key in per_key:
        assert sum(1 for r in records if r.startswith(f"{key} failed")) <= span / 10.0 + 1
