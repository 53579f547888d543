"""The waiters of callers outside a connection's loop (rocketq.remoting.handover)."""

from __future__ import annotations

import asyncio
import gc
import threading

from rocketq.protocol import RemotingCommand, RequestCode
from rocketq.remoting import handover
from rocketq.remoting.handover import LoopWaiter, ThreadWaiter, mailbox_of


def _response(opaque: int) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.HEART_BEAT, opaque=opaque).response()


def test_thread_waiter_wakes_its_thread_once() -> None:
    waiter = ThreadWaiter()
    assert not waiter.done()
    assert not waiter.lock.acquire(blocking=False)  # the thread would block
    response = _response(7)
    threading.Thread(target=waiter.set_result, args=(response,)).start()
    assert waiter.lock.acquire(timeout=5)
    assert waiter.done()
    assert waiter.response is response
    assert waiter.error is None


def test_completions_posted_from_another_thread_reach_their_futures_in_batches() -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        waiters = [LoopWaiter(loop) for _ in range(100)]
        waiters[3].future.cancel()  # its caller gave up: the delivery skips it
        delivered: list[int] = []
        real_deliver = handover.LoopMailbox._deliver

        def counting_deliver(box: handover.LoopMailbox) -> None:
            delivered.append(len(box._items))
            real_deliver(box)

        handover.LoopMailbox._deliver = counting_deliver  # type: ignore[method-assign]
        try:

            def complete_all() -> None:
                for i, waiter in enumerate(waiters):
                    if i == 50:
                        waiter.set_exception(ConnectionError("boom"))
                    else:
                        waiter.set_result(_response(i))

            thread = threading.Thread(target=complete_all)
            thread.start()
            thread.join()
            results = await asyncio.gather(*(w.future for w in waiters), return_exceptions=True)
        finally:
            handover.LoopMailbox._deliver = real_deliver  # type: ignore[method-assign]
        assert all(w.done() for w in waiters)
        assert isinstance(results[3], asyncio.CancelledError)
        assert isinstance(results[50], ConnectionError)
        assert [r.opaque for i, r in enumerate(results) if i not in (3, 50)] == [  # type: ignore[union-attr]
            i for i in range(100) if i not in (3, 50)
        ]
        assert sum(delivered) == 100
        assert len(delivered) < 100  # one wake-up of the loop served many completions

    asyncio.run(scenario())


def test_posting_to_a_closed_loop_is_harmless_and_loops_are_not_kept_alive() -> None:
    async def make_waiter() -> LoopWaiter:
        waiter = LoopWaiter(asyncio.get_running_loop())
        waiter.future.cancel()
        return waiter

    waiter = asyncio.run(make_waiter())  # its loop is closed now
    waiter.set_result(_response(1))  # nobody awaits it: no error
    assert waiter.done()
    del waiter
    gc.collect()
    assert len(handover._mailboxes) == 0

    async def same_box() -> bool:
        loop = asyncio.get_running_loop()
        return mailbox_of(loop) is mailbox_of(loop)

    assert asyncio.run(same_box())
