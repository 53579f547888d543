"""A server's defences against peers that hold memory or misbehave: frame read timeout (swept with
the time passed in), the input budget, the connection limit, request limits, and warnings once
per peer."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from collections.abc import Callable
from typing import Any

import pytest

from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketq.remoting import RemotingClient, RemotingConnection, RemotingServer, ServerConfig, run
from rocketq.remoting.guard import PeerLog, RequestLimit

pytestmark = pytest.mark.integration
HB = RequestCode.HEART_BEAT


@pytest.fixture
def arun() -> Callable[[Any], Any]:
    return run


def echo(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
    return request.response(body=request.body)


async def _half_frame(addr: str, size: int = 1 << 20) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    host, port = addr.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(struct.pack(">iI", size, 10) + b"x" * 1000)  # a frame that never finishes
    await writer.drain()
    return reader, writer


def test_a_frame_that_does_not_arrive_in_time_closes_its_connection(arun: Callable[..., Any]) -> None:
    async def scenario() -> None:
        config = ServerConfig(frame_read_timeout=15.0)
        async with RemotingServer(config=config) as server:
            server.register_handler(RequestCode.HEART_BEAT, echo)
            reader, writer = await _half_frame(server.address)
            while not server.connections or next(iter(server.connections)).frame_started is None:
                await asyncio.sleep(0)
            (conn,) = server.connections
            started = conn.frame_started
            assert started is not None
            assert server.sweep(started + 14.9) == []  # the time is passed in: no sleeping
            assert server.sweep(started + 15.1) == [conn]
            assert await asyncio.wait_for(reader.read(), 2.0) == b""
            await conn.wait_closed()
            assert server.buffered_input == 0  # its bytes left the budget
            writer.close()
            await writer.wait_closed()

    arun(scenario())


def test_the_connection_taking_the_input_budget_past_its_bound_is_closed(arun: Callable[..., Any]) -> None:
    async def scenario() -> None:
        config = ServerConfig(max_buffered_total=3 << 20)
        async with RemotingServer(config=config) as server, RemotingClient() as client:
            server.register_handler(RequestCode.HEART_BEAT, echo)
            holders = [await _half_frame(server.address, 8 << 20) for _ in range(2)]
            for _, writer in holders:
                writer.write(b"y" * (1 << 20))
                await writer.drain()
            while server.buffered_input < 2 << 20:
                await asyncio.sleep(0.01)
            third = await _half_frame(server.address, 8 << 20)
            third[1].write(b"z" * (2 << 20))
            with contextlib.suppress(ConnectionError):  # the server may abort it while we write
                await third[1].drain()
                assert await asyncio.wait_for(third[0].read(), 5.0) == b""  # the one over the bound
            assert server.buffered_input <= 3 << 20
            # a good client still gets through
            r = await client.invoke(server.address, RemotingCommand.request(HB, body=b"{}"), 3.0)
            assert r.code == ResponseCode.SUCCESS
            assert len(server.connections) == 3  # the two holders and the client
            for _, writer in [*holders, third]:
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()

    arun(scenario())


def test_connections_over_the_limit_are_refused_and_logged_once(
    arun: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        config = ServerConfig(max_connections=2)
        async with RemotingServer(config=config) as server:
            host, port = server.address.rsplit(":", 1)
            kept = [await asyncio.open_connection(host, int(port)) for _ in range(2)]
            while len(server.connections) < 2:
                await asyncio.sleep(0.01)
            with caplog.at_level(logging.WARNING, logger="rocketq.remoting.connection"):
                for _ in range(5):
                    reader, writer = await asyncio.open_connection(host, int(port))
                    assert await asyncio.wait_for(reader.read(), 2.0) == b""
                    writer.close()
                    await writer.wait_closed()
            assert len(server.connections) == 2
            assert caplog.text.count("refusing a connection") == 1
            assert server.peer_log.suppressed("127.0.0.1", "max-connections") == 4
            for _, writer in kept:
                writer.close()
                await writer.wait_closed()

    arun(scenario())


def test_a_request_over_its_code_limit_is_refused_before_decoding(arun: Callable[..., Any]) -> None:
    async def scenario() -> None:
        limits = {
            RequestCode.HEART_BEAT: RequestLimit(max_body=10_000, max_json_objects=100, max_json_values=500)
        }
        decoded: list[int] = []

        def handler(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
            decoded.append(len(request.body))
            return request.response()

        async with (
            RemotingServer(config=ServerConfig(request_limits=limits)) as server,
            RemotingClient() as client,
        ):
            server.register_handler(RequestCode.HEART_BEAT, handler)
            cases = {
                b"x"
                * 10_001: "HEART_BEAT(34) body of 10001 bytes is over this server's limit of 10000 bytes",
                b"["
                + b",".join([b"{}"] * 101)
                + b"]"
                + b" " * 5000: "HEART_BEAT(34) body holds 102 JSON objects and arrays",
                b"["
                + b",".join([b"1"] * 600)
                + b"]"
                + b" " * 5000: "HEART_BEAT(34) body holds about 600 JSON values",
            }
            for body, remark in cases.items():
                r = await client.invoke(server.address, RemotingCommand.request(HB, body=body), 3.0)
                assert r.code == ResponseCode.SYSTEM_ERROR
                assert (r.remark or "").startswith(remark)
            ok = await client.invoke(server.address, RemotingCommand.request(HB, body=b"{}" * 100), 3.0)
            assert ok.code == ResponseCode.SUCCESS
            assert decoded == [200]

    arun(scenario())


def test_peer_log_warns_once_per_host_and_kind_per_window(caplog: pytest.LogCaptureFixture) -> None:
    log = PeerLog(logging.getLogger("test.peerlog"), window=60.0)
    with caplog.at_level(logging.WARNING, logger="test.peerlog"):
        assert log.report("10.0.0.1:1", "frame", 0.0, "bad frame from %s", "a")
        assert not log.report("10.0.0.1:2", "frame", 10.0, "bad frame from %s", "b")
        assert log.report("10.0.0.1:3", "other", 10.0, "other kind")
        assert log.report("10.0.0.2:1", "frame", 10.0, "another host")
        assert log.report("10.0.0.1:4", "frame", 60.5, "bad frame from %s", "c")
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "bad frame from a",
        "other kind",
        "another host",
        "bad frame from c (and 1 more like it from 10.0.0.1 in the 60s before)",
    ]
