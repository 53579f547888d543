"""The transport: RocketMQ remoting over TCP, the only rocketq code that touches sockets.

Thin adapters, one per way of waiting, around the sans-I/O connection core of
:mod:`rocketq.protocol.connection` (which decides; these only move bytes and wait):

* :class:`RemotingClient` — asyncio; one connection per ``"host:port"``, requests matched to
  responses by opaque, timeouts, oneway sends, handlers for requests the server pushes;
* :class:`RemotingServer` — asyncio; dispatch by request code, connection events, back-pressure;
* :class:`RemotingConnection` — one connection of either (what handlers and listeners receive),
  with its parts in their own modules: ``dispatch`` (handlers and answers), ``outbox`` (batched
  writes), ``handover`` (callers on other threads and loops), ``idle`` (the idle timer);
* :class:`BlockingRemotingClient` — a plain blocking socket over the same core, for code without
  an event loop (the Spark source, the producer's per-thread sockets);
* :class:`AclSigningHook` — signs every request for RocketMQ 4.9's ACL (``credentials`` in a
  client's config);
* :func:`new_event_loop` / :func:`run` — uvloop when installed (``ROCKETQ_NO_UVLOOP=1`` to opt out).
"""

from __future__ import annotations

from rocketq.remoting.acl import AclSigningHook
from rocketq.remoting.blocking import BlockingHandler, BlockingRemotingClient
from rocketq.remoting.client import RemotingClient, parse_address
from rocketq.remoting.config import RemotingClientConfig, ServerConfig
from rocketq.remoting.connection import RemotingConnection
from rocketq.remoting.handlers import (
    ConnectionListener,
    Handler,
    HandlerResult,
    HandlerTable,
    RPCHook,
    describe_exception,
)
from rocketq.remoting.loop import new_event_loop, run, uvloop_enabled
from rocketq.remoting.server import RemotingServer
from rocketq.remoting.tls import ClientAuth, TlsClientConfig, TlsMode, TlsServerConfig

__all__ = [
    "AclSigningHook",
    "BlockingHandler",
    "BlockingRemotingClient",
    "ClientAuth",
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
    "TlsClientConfig",
    "TlsMode",
    "TlsServerConfig",
    "describe_exception",
    "new_event_loop",
    "parse_address",
    "run",
    "uvloop_enabled",
]
