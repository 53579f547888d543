"""SQL92 subscriptions through the broker: the differential table end to end, the registered-
subscription path, long polling, CHECK_CLIENT_CONFIG and the refusals RocketMQ gives."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from rocketq.broker import Broker, BrokerConfig
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode, decode_messages
from rocketq.protocol.bodies import CheckClientRequestBody
from rocketq.remoting import RemotingClient, run
from tests.unit.test_broker_sql92 import TABLE

from .brokerkit import heartbeat_request, pull_request, send_request, subscription

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

GROUP = "sql_group"


@asynccontextmanager
async def broker_at(data_dir: Path, **overrides: Any) -> AsyncIterator[Broker]:
    config = BrokerConfig(host="127.0.0.1", port=0, data_dir=data_dir, **overrides)
    async with Broker(config) as broker:
        yield broker


def sql_pull(
    topic: str, expression: str | None, offset: int = 0, *, suspend_ms: int = 0, **kw: Any
) -> RemotingCommand:
    return pull_request(
        GROUP, topic, 0, offset, subscription=expression, expression_type="SQL92", suspend_ms=suspend_ms, **kw
    )


def test_the_differential_table_end_to_end(tmp_path: Path) -> None:
    """Every row of the unit table: one message with the row's properties, pulled with the row's
    expression in the request; delivered exactly when RocketMQ's evaluator says true."""

    async def main() -> list[str]:
        wrong: list[str] = []
        async with broker_at(tmp_path, enable_property_filter=True) as broker, RemotingClient() as client:
            addr = broker.address
            for i, (expression, properties, value, rule) in enumerate(TABLE):
                topic = f"Sql92Row{i}"
                sent = await client.invoke(addr, send_request(topic, b"row-%d" % i, properties=properties))
                assert sent.code == ResponseCode.SUCCESS, sent.remark
                got = await client.invoke(addr, sql_pull(topic, expression))
                bodies = (
                    [m.body for m in decode_messages(got.body)] if got.code == ResponseCode.SUCCESS else []
                )
                delivered = bodies == [b"row-%d" % i]
                if delivered != (value is True):
                    wrong.append(f"{expression!r} {properties}: delivered={delivered} ({rule})")
                if not delivered:  # the non-matching message is skipped, as Java's broker does
                    assert got.code == ResponseCode.PULL_RETRY_IMMEDIATELY, (expression, got.code, got.remark)
                    assert got.remark == "NO_MATCHED_MESSAGE"
                    assert got.ext_fields["nextBeginOffset"] == "1"
        return wrong

    wrong = run(main())
    assert not wrong, "\n".join(wrong)


def test_an_empty_property_is_a_missing_one(tmp_path: Path) -> None:
    """RocketMQ's property decoding (``string2messageProperties``) drops pairs with an empty
    value, so an SQL92 filter never sees one: ``a = ''`` cannot match, ``a IS NULL`` does."""

    async def main() -> None:
        async with broker_at(tmp_path, enable_property_filter=True) as broker, RemotingClient() as client:
            addr = broker.address
            await client.invoke(addr, send_request("SqlEmpty", b"e", properties={"a": "", "b": "1"}))
            for expression, delivered in (("a IS NULL", True), ("a = ''", False), ("b = 1", True)):
                got = await client.invoke(addr, sql_pull("SqlEmpty", expression))
                assert (got.code == ResponseCode.SUCCESS) is delivered, expression

    run(main())


def test_registered_subscription_filters_pulls_and_wakes_held_pulls_only_for_matches(tmp_path: Path) -> None:
    async def main() -> None:
        async with (
            broker_at(tmp_path, enable_property_filter=True) as broker,
            RemotingClient() as client,
            RemotingClient() as producer,
        ):
            addr = broker.address
            for n in range(6):
                await producer.invoke(addr, send_request("SqlT", b"m%d" % n, properties={"n": str(n)}))
            hb = heartbeat_request("c1", GROUP, {"SqlT": "n >= 2 AND n < 5"}, expression_type="SQL92")
            assert (await client.invoke(addr, hb)).code == ResponseCode.SUCCESS
            got = await client.invoke(addr, pull_request(GROUP, "SqlT", 0, 0, subscription=None))
            assert got.code == ResponseCode.SUCCESS
            assert [m.body for m in decode_messages(got.body)] == [b"m2", b"m3", b"m4"]
            assert got.ext_fields["nextBeginOffset"] == "6"
            # a pull held at the end: a message the filter refuses leaves it held, a match wakes it
            held = asyncio.ensure_future(
                client.invoke(
                    addr, pull_request(GROUP, "SqlT", 0, 6, subscription=None, suspend_ms=10_000), 15
                )
            )
            while not broker.held_pulls:
                await asyncio.sleep(0.01)
            await producer.invoke(addr, send_request("SqlT", b"no", properties={"n": "9"}))
            await producer.invoke(addr, send_request("SqlT", b"none"))
            await asyncio.sleep(0.2)
            assert not held.done()
            assert broker.held_pulls == 1
            await producer.invoke(addr, send_request("SqlT", b"yes", properties={"n": "3"}))
            woke = await asyncio.wait_for(held, 3)
            assert woke.code == ResponseCode.SUCCESS
            assert [m.body for m in decode_messages(woke.body)] == [b"yes"]

    run(main())


def test_refusals_are_rocketmqs_and_say_what_is_wrong(tmp_path: Path) -> None:
    async def main() -> None:
        async with broker_at(tmp_path / "off") as broker, RemotingClient() as client:
            addr = broker.address
            await client.invoke(addr, send_request("SqlOff", b"x", properties={"a": "1"}))
            got = await client.invoke(addr, sql_pull("SqlOff", "a = 1"))
            assert got.code == ResponseCode.SYSTEM_ERROR
            assert (got.remark or "").startswith(
                "The broker does not support consumer to filter message by SQL92"
            )
            assert "--enable-property-filter" in (got.remark or "")
            check = await client.invoke(addr, check_request("a = 1"))
            assert (check.code, check.remark) == (got.code, got.remark)
            assert (await client.invoke(addr, check_request("*", "TAG"))).code == ResponseCode.SUCCESS

        async with (
            broker_at(tmp_path / "on", enable_property_filter=True) as broker,
            RemotingClient() as client,
        ):
            addr = broker.address
            await client.invoke(addr, send_request("SqlOn", b"x", properties={"a": "1"}))
            assert (await client.invoke(addr, check_request("a = 1"))).code == ResponseCode.SUCCESS
            bad = await client.invoke(addr, check_request("a = 1 AND b > 'x'"))
            assert bad.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
            assert bad.remark == (
                "invalid SQL92 selector \"a = 1 AND b > 'x'\", column 15: 'x' cannot be compared with >: "
                "only numbers can"
            )
            # a bad expression in the request
            got = await client.invoke(addr, sql_pull("SqlOn", "a >"))
            assert got.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
            assert (got.remark or "").startswith(
                "parse the consumer's subscription failed: invalid SQL92 selector 'a >'"
            )
            # a bad one registered by a heartbeat: accepted (as RocketMQ does), refused at pull
            hb = heartbeat_request("c1", GROUP, {"SqlOn": "a = = 1"}, expression_type="SQL92")
            assert (await client.invoke(addr, hb)).code == ResponseCode.SUCCESS
            got = await client.invoke(addr, pull_request(GROUP, "SqlOn", 0, 0, subscription=None))
            assert got.code == ResponseCode.FILTER_DATA_NOT_EXIST
            assert (got.remark or "").startswith(
                "The broker's consumer filter data is not exist!Your expression may be wrong! (invalid SQL92"
            )
            # an expression type the broker does not know
            got = await client.invoke(
                addr, pull_request(GROUP, "SqlOn", 0, 0, expression_type="BLOOM", subscription="x")
            )
            assert got.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
            assert "'BLOOM' is not supported" in (got.remark or "")

    run(main())


def check_request(expression: str, expression_type: str = "SQL92") -> RemotingCommand:
    body = CheckClientRequestBody(
        client_id="c1",
        group=GROUP,
        subscription_data=subscription("SqlT", expression, expression_type=expression_type),
    )
    return RemotingCommand.request(RequestCode.CHECK_CLIENT_CONFIG, None, body.encode())
