"""Helpers shared by the broker's request handlers: header and body parsing with clear errors,
large bodies decoded off the event loop."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from rocketq.errors import BrokerError, RemoteProtocolError
from rocketq.protocol.bodies import JsonBody
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import CommandHeader
from rocketq.remoting import RemotingConnection

__all__ = ["parse_body", "parse_header", "system_error", "with_body"]

H = TypeVar("H", bound=CommandHeader)
B = TypeVar("B", bound=JsonBody)
R = TypeVar("R")


def system_error(remark: str) -> BrokerError:
    """A SYSTEM_ERROR answer with ``remark`` (raise it from a handler)."""
    return BrokerError(ResponseCode.SYSTEM_ERROR, remark)


def parse_header(cls: type[H], request: RemotingCommand) -> H:
    """``cls`` from the request's ext fields; a missing or malformed field answers SYSTEM_ERROR
    naming it (RocketMQ answers SYSTEM_ERROR with its ``RemotingCommandException`` text)."""
    try:
        return cls.from_ext_fields(request.ext_fields)
    except RemoteProtocolError as exc:
        raise system_error(str(exc)) from None


def parse_body(
    cls: type[B], request: RemotingCommand, what: str, max_nonstandard: int, *, chunked: bool = False
) -> B:
    """``cls`` decoded from ``request.body``; a missing body or bad JSON answers SYSTEM_ERROR. JSON
    in fastjson's non-standard syntax is read only up to ``max_nonstandard`` characters
    (``ServerConfig.max_nonstandard_json``): real clients send standard JSON. ``chunked`` parses
    in small steps, for the worker thread (:func:`~rocketq.protocol.fastjson.loads`)."""
    if not request.body:
        raise system_error(f"{what}: the request has no body")
    try:
        return cls.decode(request.body, max_fallback=max_nonstandard, chunked=chunked)
    except RemoteProtocolError as exc:
        raise system_error(f"{what}: bad body: {exc}") from None


def with_body(
    conn: RemotingConnection,
    request: RemotingCommand,
    cls: type[B],
    what: str,
    max_nonstandard: int,
    then: Callable[[B], R],
) -> R | Awaitable[R]:
    """``then(body)`` with ``request.body`` decoded as ``cls`` (as :func:`parse_body`): inline for
    a small body, or for a large one (``conn.offloads``) on the server's worker thread in the
    request code's turn, ``then`` following on the loop (see :mod:`rocketq.remoting.offload`)."""
    if not conn.offloads(len(request.body)):
        return then(parse_body(cls, request, what, max_nonstandard))

    async def large() -> R:
        body = await conn.off_loop(parse_body, cls, request, what, max_nonstandard, chunked=True)
        return then(body)

    return conn.large_request(request, large)
