"""The transport: RocketMQ remoting over TCP, the only rocketq code that touches sockets.

Thin adapters around the sans-I/O codec of :mod:`rocketq.protocol`:

* :class:`RemotingClient` — asyncio; one connection per ``"host:port"``, requests matched to
  responses by opaque, timeouts, oneway sends, handlers for requests the server pushes;
* :class:`RemotingServer` — asyncio; dispatch by request code, connection events, back-pressure;
* :class:`RemotingConnection` — one connection of either (what handlers and listeners receive);
* :class:`BlockingRemotingClient` — a plain blocking socket, for code without an event loop;
* :func:`new_event_loop` / :func:`run` — uvloop when installed (``ROCKETQ_NO_UVLOOP=1`` to opt out).
"""

from __future__ import annotations

from rocketq.remoting.blocking import BlockingHandler, BlockingRemotingClient
from rocketq.remoting.client import RemotingClient, parse_address
from rocketq.remoting.config import RemotingClientConfig, ServerConfig
from rocketq.remoting.connection import (
    ConnectionListener,
    Handler,
    HandlerResult,
    HandlerTable,
    RemotingConnection,
    RPCHook,
    describe_exception,
)
from rocketq.remoting.loop import new_event_loop, run, uvloop_enabled
from rocketq.remoting.server import RemotingServer

__all__ = [
    "BlockingHandler",
    "BlockingRemotingClient",
    "ConnectionListener",
    "Handler",
    "HandlerResult",
    "HandlerTable",
    "RPCHook",
    "RemotingClient",
    "RemotingClientConfig",
    "RemotingConnection",
    "RemotingServer",
    "ServerConfig",
    "describe_exception",
    "new_event_loop",
    "parse_address",
    "run",
    "uvloop_enabled",
]
