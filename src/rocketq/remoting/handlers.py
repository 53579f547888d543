"""What a connection's owner plugs in: request handlers by code, RPC hooks, the request guard,
connection listeners, and how a handler's failure is told to the peer.

These are the names layers above the transport implement (a broker's handlers, its ACL guard and
hook, a client's listeners); :class:`~rocketq.remoting.RemotingConnection` and its dispatch
(:mod:`rocketq.remoting.dispatch`) call them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeAlias

from rocketq.errors import RemoteProtocolError
from rocketq.protocol.command import RemotingCommand

if TYPE_CHECKING:
    from rocketq.remoting.connection import RemotingConnection

__all__ = [
    "ConnectionListener",
    "Handler",
    "HandlerResult",
    "HandlerTable",
    "RPCHook",
    "RequestGuard",
    "describe_exception",
    "format_address",
]

HandlerResult: TypeAlias = RemotingCommand | None
#: ``handler(connection, request)``: returns the response (or ``None`` to send none), either
#: directly or as an awaitable.
Handler: TypeAlias = Callable[
    ["RemotingConnection", RemotingCommand], HandlerResult | Awaitable[HandlerResult]
]


class RPCHook:
    """Code run around every request, as RocketMQ's ``RPCHook`` (ACL signs and checks requests so).

    ``before_request`` runs before a request is sent (on the sending side: it may add ext fields,
    and an exception it raises fails the call) and before a received request reaches its handler
    (on the receiving side: an exception answers the request as a handler's exception would, so
    raising a :class:`~rocketq.errors.BrokerError` such as ``NoPermissionError`` rejects it with
    that code). ``after_response`` sees each response received for a sent request, and each
    response made for a received one, error responses included (exceptions there are logged).
    ``addr`` is the connection's ``remote_address``. Subclass and override what you need.
    """

    def before_request(self, addr: str, request: RemotingCommand) -> None:
        """Called before ``request`` is sent, or before it is handled."""

    def after_response(self, addr: str, request: RemotingCommand, response: RemotingCommand) -> None:
        """Called with the response to ``request``, received or made."""


#: ``guard(connection, request)``: raises to refuse a received request before its handler runs.
RequestGuard: TypeAlias = Callable[["RemotingConnection", RemotingCommand], None]


class HandlerTable:
    """Request handlers by request code, a fallback for codes not registered, the RPC hooks, and
    the request guard (one check every received request passes before its handler)."""

    __slots__ = ("_by_code", "default", "guard", "hooks")

    def __init__(self) -> None:
        self._by_code: dict[int, Handler] = {}
        self.default: Handler | None = None
        self.hooks: list[RPCHook] = []
        self.guard: RequestGuard | None = None

    def register(self, code: int, handler: Handler) -> None:
        """Handle requests with ``code`` by ``handler`` (replacing any handler it had)."""
        self._by_code[int(code)] = handler

    def unregister(self, code: int) -> None:
        self._by_code.pop(int(code), None)

    def get(self, code: int) -> Handler | None:
        """The handler for ``code``: its own, else the default, else ``None``."""
        return self._by_code.get(code, self.default)

    def __contains__(self, code: object) -> bool:
        return code in self._by_code

    def codes(self) -> list[int]:
        """The request codes with a handler of their own, in ascending order."""
        return sorted(self._by_code)


class ConnectionListener:
    """Connection events for the layers above, as RocketMQ's ``ChannelEventListener``.

    Subclass and override what you need; every method is called on the event loop, must not
    block, and any exception it raises is logged and ignored. ``on_close`` is called once for
    every connection, whatever closed it (the peer, an error, idleness, ``close()``).
    """

    def on_connect(self, conn: RemotingConnection) -> None:
        """A connection was established."""

    def on_close(self, conn: RemotingConnection) -> None:
        """A connection is gone; :attr:`RemotingConnection.close_reason` says why."""

    def on_idle(self, conn: RemotingConnection) -> None:
        """Nothing was read or written on ``conn`` for the configured idle time."""


def describe_exception(exc: BaseException) -> str:
    """The remark of the ``SYSTEM_ERROR`` answer to a request whose handler raised ``exc``.

    A :class:`~rocketq.errors.RemoteProtocolError` (the request's header or body does not decode)
    gives its own text, which names the offending field. Anything else is a fault of ours, and the
    peer learns only that: RocketMQ sends the exception's text and innermost frame
    (``RemotingHelper.exceptionSimpleDesc``), but no Python exception text, class or function name
    leaves rocketq; the server's log has them, with the traceback.
    """
    if isinstance(exc, RemoteProtocolError):
        return str(exc)
    return "the server failed to process this request (an internal error; its log has the details)"


def format_address(sockaddr: object) -> str:
    """``"host:port"`` for a socket address tuple (IPv6 hosts in brackets)."""
    if isinstance(sockaddr, tuple) and len(sockaddr) >= 2:
        host, port = sockaddr[0], sockaddr[1]
        return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
    return str(sockaddr)
