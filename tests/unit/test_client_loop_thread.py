"""LoopThread: the thread hand-off under the synchronous client (results, errors, timeouts, shutdown)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import traceback
from collections.abc import Iterator

import pytest

from rocketq.client.loop_thread import LoopThread
from rocketq.errors import ClientStateError


@pytest.fixture(params=[False, None], ids=["asyncio", "default-loop"])
def lt(request: pytest.FixtureRequest) -> Iterator[LoopThread]:
    thread = LoopThread("test-loop", use_uvloop=request.param)
    yield thread
    thread.stop()


class Boom(ValueError):
    pass


async def echo(value: int) -> int:
    await asyncio.sleep(0)
    return value


async def failing_coroutine() -> None:
    await asyncio.sleep(0)
    raise Boom("bad")


def test_call_returns_the_result_on_the_loop_thread(lt: LoopThread) -> None:
    async def where() -> int:
        return threading.get_ident()

    assert lt.call(echo(7)) == 7
    assert lt.call(where()) == lt._thread.ident


def test_many_threads_each_get_their_own_results(lt: LoopThread) -> None:
    errors: list[str] = []

    def worker(w: int) -> None:
        for i in range(200):
            got = lt.call(echo(w * 1000 + i), timeout=10.0)
            if got != w * 1000 + i:
                errors.append(f"thread {w} call {i} got {got}")

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_exception_keeps_its_type_and_traceback(lt: LoopThread) -> None:
    with pytest.raises(Boom, match="bad") as info:
        lt.call(failing_coroutine())
    names = [frame.name for frame in traceback.extract_tb(info.value.__traceback__)]
    assert "failing_coroutine" in names


def test_timeout_cancels_the_coroutine(lt: LoopThread) -> None:
    started = threading.Event()
    cancelled = threading.Event()

    async def slow() -> None:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with pytest.raises(TimeoutError):
        lt.call(slow(), timeout=0.05)
    assert started.is_set()
    assert cancelled.wait(5.0)
    assert lt.call(echo(1)) == 1  # the loop still serves calls


def test_caller_giving_up_before_the_loop_starts_the_call(lt: LoopThread) -> None:
    release = threading.Event()
    lt.loop.call_soon_threadsafe(release.wait, 5.0)  # hold the loop busy
    ran = threading.Event()

    async def body() -> None:
        ran.set()

    try:
        with pytest.raises(TimeoutError):
            lt.call(body(), timeout=0.01)
    finally:
        release.set()
    assert lt.call(echo(2)) == 2
    assert not ran.is_set()


def test_call_from_the_loop_thread_is_refused(lt: LoopThread) -> None:
    async def nested() -> str:
        inner = echo(3)
        try:
            lt.call(inner)
        except ClientStateError as exc:
            return str(exc)
        return "not refused"

    assert "own event loop thread" in lt.call(nested())


def test_stop_cancels_calls_in_flight_and_refuses_new_ones() -> None:
    lt = LoopThread("test-stop", use_uvloop=False)
    started = threading.Event()
    outcome: list[BaseException] = []

    async def forever() -> None:
        started.set()
        await asyncio.sleep(60)

    def caller() -> None:
        try:
            lt.call(forever())
        except BaseException as exc:
            outcome.append(exc)

    t = threading.Thread(target=caller)
    t.start()
    assert started.wait(5.0)
    lt.stop()
    t.join(5.0)
    assert not t.is_alive()
    assert len(outcome) == 1
    assert isinstance(outcome[0], concurrent.futures.CancelledError)
    coro = echo(4)
    with pytest.raises(ClientStateError):
        lt.call(coro)
    assert coro.cr_frame is None  # closed, not left un-awaited


def test_calls_still_queued_at_shutdown_fail_cleanly() -> None:
    lt = LoopThread("test-queued", use_uvloop=False)
    blocked = threading.Event()
    release = threading.Event()

    def stop_and_hold() -> None:
        lt.loop.stop()  # the loop ends after this iteration, before any later wake-up runs
        blocked.set()
        release.wait(5.0)

    lt.loop.call_soon_threadsafe(stop_and_hold)
    assert blocked.wait(5.0)
    outcomes: list[BaseException] = []
    ran = threading.Event()

    async def body() -> None:
        ran.set()

    def caller() -> None:
        try:
            lt.call(body(), timeout=10.0)
        except BaseException as exc:
            outcomes.append(exc)

    threads = [threading.Thread(target=caller) for _ in range(4)]
    for t in threads:
        t.start()
    while len(lt._queue) < 4:
        threading.Event().wait(0.001)
    release.set()
    for t in threads:
        t.join(5.0)
    assert len(outcomes) == 4
    assert all(isinstance(exc, ClientStateError) for exc in outcomes)
    assert not ran.is_set()
    lt.stop()


def test_submit_and_wrap_still_work(lt: LoopThread) -> None:
    assert lt.submit(echo(5)).result(5.0) == 5

    async def from_another_loop() -> int:
        return await lt.wrap(echo(6))

    assert asyncio.run(from_another_loop()) == 6


def test_submit_propagates_errors_and_cancels_through_the_future(lt: LoopThread) -> None:
    with pytest.raises(Boom):
        lt.submit(failing_coroutine()).result(5.0)
    started = threading.Event()
    cancelled = threading.Event()

    async def slow() -> None:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    future = lt.submit(slow())
    assert started.wait(5.0)
    assert future.cancel()
    assert cancelled.wait(5.0)
    with pytest.raises(concurrent.futures.CancelledError):
        future.result(5.0)


def test_submit_cancelled_before_the_loop_starts_it(lt: LoopThread) -> None:
    release = threading.Event()
    lt.loop.call_soon_threadsafe(release.wait, 5.0)
    ran = threading.Event()

    async def body() -> None:
        ran.set()

    try:
        future = lt.submit(body())
        assert future.cancel()
    finally:
        release.set()
    assert lt.call(echo(8)) == 8
    assert not ran.is_set()


def test_submit_after_stop_and_while_queued_at_shutdown() -> None:
    lt = LoopThread("test-submit-stop", use_uvloop=False)
    blocked = threading.Event()
    release = threading.Event()

    def stop_and_hold() -> None:
        lt.loop.stop()
        blocked.set()
        release.wait(5.0)

    lt.loop.call_soon_threadsafe(stop_and_hold)
    assert blocked.wait(5.0)
    queued = lt.submit(echo(9))
    release.set()
    with pytest.raises(ClientStateError):
        queued.result(5.0)
    lt.stop()
    with pytest.raises(ClientStateError):
        lt.submit(echo(10))
