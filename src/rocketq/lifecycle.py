"""``with`` and ``async with`` for the house's services, written once.

A server or client that starts with ``await x.start()`` and ends with ``await x.close()`` inherits
:class:`AsyncStartClose`; an object that is ready when built and ends with ``x.close()`` inherits
:class:`Closing`. The mixins add only the context-manager methods; each class keeps its own
``start`` and ``close``.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

__all__ = ["AsyncStartClose", "Closing"]


class _AsyncService(Protocol):
    async def start(self) -> None: ...

    async def close(self) -> None: ...


class _Closable(Protocol):
    def close(self) -> None: ...


_A = TypeVar("_A", bound=_AsyncService)
_C = TypeVar("_C", bound=_Closable)


class AsyncStartClose:
    """``async with service:`` awaits ``service.start()``, and ``service.close()`` at the end."""

    __slots__ = ()

    async def __aenter__(self: _A) -> _A:
        await self.start()
        return self

    async def __aexit__(self: _AsyncService, *exc_info: object) -> None:
        await self.close()


class Closing:
    """``with thing:`` gives ``thing`` and calls ``thing.close()`` at the end."""

    __slots__ = ()

    def __enter__(self: _C) -> _C:
        return self

    def __exit__(self: _Closable, *exc_info: object) -> None:
        self.close()
