"""``rocketq.tasks.cancel_and_wait``: the task has ended when it returns, whatever it was doing."""

from __future__ import annotations

import asyncio
import doctest

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq import tasks
from rocketq.tasks import cancel_and_wait


def test_module_doctests() -> None:
    failures, tried = doctest.testmod(tasks)
    assert tried
    assert not failures


@given(steps=st.integers(min_value=0, max_value=5), finished=st.booleans())
def test_the_task_has_ended(steps: int, finished: bool) -> None:
    """A task cancelled after ``steps`` turns of the loop (or one that already ended) is done
    when ``cancel_and_wait`` returns, and the caller is not cancelled."""

    async def work() -> None:
        if finished:
            return
        await asyncio.Event().wait()

    async def main() -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(work())
        for _ in range(steps):
            await asyncio.sleep(0)
        await cancel_and_wait(task)
        await cancel_and_wait(None)
        return task

    task = asyncio.run(main())
    assert task.done()


def test_an_error_of_the_task_is_raised() -> None:
    """A task that failed before it was cancelled: its error reaches the caller, not swallowed."""

    async def fails() -> None:
        raise ValueError("boom")

    async def main() -> None:
        task = asyncio.get_running_loop().create_task(fails())
        await asyncio.sleep(0)
        await cancel_and_wait(task)

    with pytest.raises(ValueError, match="boom"):
        asyncio.run(main())
