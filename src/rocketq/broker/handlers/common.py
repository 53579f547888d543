"""Helpers shared by the broker's request handlers: header and body parsing with clear errors."""

from __future__ import annotations

from typing import TypeVar

from rocketq.errors import BrokerError, RemoteProtocolError
from rocketq.protocol.bodies import JsonBody
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import CommandHeader

__all__ = ["parse_body", "parse_header", "system_error"]

H = TypeVar("H", bound=CommandHeader)
B = TypeVar("B", bound=JsonBody)


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


def parse_body(cls: type[B], request: RemotingCommand, what: str, max_nonstandard: int) -> B:
    """``cls`` decoded from ``request.body``; a missing body or bad JSON answers SYSTEM_ERROR. JSON
    in fastjson's non-standard syntax is read only up to ``max_nonstandard`` characters
    (``ServerConfig.max_nonstandard_json``): real clients send standard JSON."""
    if not request.body:
        raise system_error(f"{what}: the request has no body")
    try:
        return cls.decode(request.body, max_fallback=max_nonstandard)
    except RemoteProtocolError as exc:
        raise system_error(f"{what}: bad body: {exc}") from None
