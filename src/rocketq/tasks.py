"""Stopping an asyncio task, written once.

Every service of the house that runs a background task (the HA client and the slave's
synchronizer, the delay-level scheduler, the name server's scanner, the broker's registration,
the dashboard's monitor) ends it the same way: take the task out of the object first (so a second
``close`` finds nothing to do), cancel it, and wait until it has finished, swallowing the
``CancelledError`` the wait raises.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

__all__ = ["cancel_and_wait"]


async def cancel_and_wait(task: asyncio.Task[Any] | None) -> None:
    """Cancel ``task`` (nothing when ``None``) and wait until it has ended.

    >>> async def forever() -> None:
    ...     await asyncio.Event().wait()
    >>> async def main() -> bool:
    ...     task = asyncio.get_running_loop().create_task(forever())
    ...     await asyncio.sleep(0)
    ...     await cancel_and_wait(task)
    ...     return task.cancelled()
    >>> asyncio.run(main())
    True
    """
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
