"""The helpers that replaced code written several times: each does what every copy did."""

from __future__ import annotations

import argparse
import asyncio
import inspect
from dataclasses import dataclass

import pytest

from rocketq.admin import Admin, AsyncAdmin
from rocketq.cli._output import group_name, non_negative_float, port_number, positive_float, positive_int
from rocketq.cli.server import positive_count, positive_seconds
from rocketq.lifecycle import AsyncStartClose, Closing
from rocketq.models import LocalTransactionState as State
from rocketq.models import MessageQueue, SendResult, SendStatus, TransactionSendResult, from_fields


def test_from_fields_copies_the_shared_fields_and_takes_the_rest() -> None:
    sent = SendResult(
        status=SendStatus.SEND_OK,
        msg_id="ID",
        offset_msg_id="OFFSET",
        message_queue=MessageQueue("T", "broker-a", 2),
        queue_offset=7,
        transaction_id="TX",
        region_id="R",
        trace_on=False,
    )
    tx = from_fields(TransactionSendResult, sent, local_transaction_state=State.COMMIT_MESSAGE)
    assert tx.local_transaction_state is State.COMMIT_MESSAGE
    assert {n: getattr(tx, n) for n in SendResult.__dataclass_fields__} == {
        n: getattr(sent, n) for n in SendResult.__dataclass_fields__
    }
    # a given value wins over the source's
    assert from_fields(MessageQueue, sent.message_queue, queue_id=5) == MessageQueue("T", "broker-a", 5)


def test_from_fields_names_a_field_the_source_lacks() -> None:
    @dataclass(frozen=True)
    class Wider:
        topic: str
        extra: int

    with pytest.raises(AttributeError, match="extra"):
        from_fields(Wider, MessageQueue("T", "b", 0))


class _Service(AsyncStartClose):
    def __init__(self) -> None:
        self.calls: list[str] = []

    async def start(self) -> None:
        self.calls.append("start")

    async def close(self) -> None:
        self.calls.append("close")


class _Thing(Closing):
    def __init__(self) -> None:
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


def test_async_start_close_starts_gives_itself_and_closes_even_on_error() -> None:
    service = _Service()

    async def run() -> None:
        async with service as entered:
            assert entered is service
            assert service.calls == ["start"]
            raise KeyError("boom")

    with pytest.raises(KeyError):
        asyncio.run(run())
    assert service.calls == ["start", "close"]


def test_closing_gives_itself_and_closes_once() -> None:
    thing = _Thing()
    with thing as entered:
        assert entered is thing
        assert thing.closed == 0
    assert thing.closed == 1


@pytest.mark.parametrize(
    ("parse", "text", "message"),
    [
        (positive_int, "x", "not an integer: 'x'"),
        (positive_int, "0", "must be positive, got 0"),
        (port_number, "70000", "port must be 0..65535, got 70000"),
        (port_number, "http", "not a port number: 'http'"),
        (positive_float, "nan", "must be positive, got nan"),
        (positive_float, "-1.5", "must be positive, got -1.5"),
        (positive_float, "inf", "must be a finite number, got inf"),
        (positive_float, "1e999", "must be a finite number, got 1e999"),
        (positive_int, "9223372036854775808", "must be at most 9223372036854775807, got 9223372036854775808"),
        (non_negative_float, "inf", "must be at most a year (31536000 seconds), got inf"),
        (non_negative_float, "-0.5", "must be 0 or more, got -0.5"),
        (positive_seconds, "31536000.5", "must be at most a year (31536000 seconds), got 31536000.5"),
        (positive_seconds, "0", "must be a positive number of seconds, got 0"),
        (positive_seconds, "soon", "not a number of seconds: 'soon'"),
        (positive_count, "0", "must be at least 1, got 0"),
        (positive_count, "1.5", "not a whole number: '1.5'"),
        (positive_count, "2147483648", "must be at most 2147483647, got 2147483648"),
        (group_name, "a b", "the group name 'a b' contains characters other than [%|a-zA-Z0-9_-]"),
    ],
)
def test_argparse_types_refuse_with_the_value_named(parse: object, text: str, message: str) -> None:
    assert callable(parse)
    with pytest.raises(argparse.ArgumentTypeError) as caught:
        parse(text)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("parse", "text", "value"),
    [
        (positive_int, "3", 3),
        (port_number, "0", 0),
        (positive_float, "0.25", 0.25),
        (non_negative_float, "0", 0.0),
        (positive_seconds, "1.5", 1.5),
        (positive_count, "1", 1),
        (group_name, "my-group", "my-group"),
    ],
)
def test_argparse_types_accept(parse: object, text: str, value: object) -> None:
    assert callable(parse)
    assert parse(text) == value


def test_every_async_admin_call_is_on_admin_with_its_signature() -> None:
    # AsyncAdmin is made of parts (admin/transport.py, topics.py, ...): every call of any of them
    calls = {
        name
        for name, fn in inspect.getmembers(AsyncAdmin, inspect.iscoroutinefunction)
        if not name.startswith("_") and name != "close"
    }
    assert calls, "AsyncAdmin has calls"
    for name in sorted(calls):
        blocking = getattr(Admin, name)
        assert not inspect.iscoroutinefunction(blocking), name
        assert inspect.signature(blocking) == inspect.signature(getattr(AsyncAdmin, name)), name
        assert blocking.__qualname__ == f"Admin.{name}"
        assert blocking.__doc__ == getattr(AsyncAdmin, name).__doc__
