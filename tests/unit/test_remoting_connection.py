"""RemotingConnection driven through an in-memory transport: no sockets, exact control of bytes.

The transport below records what the protocol writes and how it pauses, the way asyncio's own
protocol tests do; the integration tests run the same code over real sockets.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from rocketq.errors import ConfigError, RemoteProtocolError, RemotingClosedError, RemotingTimeoutError
from rocketq.protocol import FrameDecoder, OpaqueSequence, RemotingCommand, RequestCode, encode_frame
from rocketq.remoting import (
    HandlerTable,
    RemotingClientConfig,
    RemotingConnection,
    ServerConfig,
    describe_exception,
    parse_address,
)
from rocketq.remoting.handlers import format_address
from rocketq.remoting.loop import loop_factory, new_event_loop, run, uvloop_available, uvloop_enabled
from rocketq.remoting.settings import ConnectionEvents, ConnectionSettings


class MemoryTransport(asyncio.Transport):
    """Records writes; flow control is driven by the test through the protocol's callbacks."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False
        self.aborted = False
        self.reading = True
        self.buffer_size = 0
        self.protocol: RemotingConnection | None = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        assert not self.closed
        self.writes.append(bytes(data))

    def writelines(self, list_of_data: Any) -> None:
        self.write(b"".join(list_of_data))

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            assert self.protocol is not None
            asyncio.get_running_loop().call_soon(self.protocol.connection_lost, None)

    def abort(self) -> None:
        self.aborted = True
        self.close()

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def is_reading(self) -> bool:
        return self.reading

    def get_write_buffer_size(self) -> int:
        return self.buffer_size

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self.limits = (high, low)

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("10.0.0.7", 51234), "sockname": ("10.0.0.1", 10911)}.get(name, default)

    def frames(self) -> list[RemotingCommand]:
        decoder = FrameDecoder()
        decoder.receive_data(b"".join(self.writes))
        return list(decoder)


def make_connection(
    handlers: HandlerTable | None = None,
    *,
    server: bool = True,
    max_in_flight: int = 8,
    write_batch_frames: int = 8,
    remote_address: str | None = None,
    **events: Any,
) -> tuple[RemotingConnection, MemoryTransport]:
    settings = ConnectionSettings(
        max_frame_size=1 << 20,
        max_in_flight=max_in_flight,
        write_buffer_high=64 * 1024,
        write_buffer_low=16 * 1024,
        max_write_buffer=1 << 20,
        write_batch_frames=write_batch_frames,
        pause_reads_on_write_pressure=server,
    )
    conn = RemotingConnection(
        handlers=handlers or HandlerTable(),
        opaques=OpaqueSequence(),
        settings=settings,
        events=ConnectionEvents(**events),
        remote_address=remote_address,
    )
    transport = MemoryTransport()
    transport.protocol = conn
    conn.connection_made(transport)
    return conn, transport


def arun(coro: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run(coro)


def echo(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
    return request.response(body=request.body)


def test_frame_split_byte_by_byte_is_dispatched_once() -> None:
    async def scenario() -> None:
        handlers = HandlerTable()
        handlers.register(RequestCode.HEART_BEAT, echo)
        conn, transport = make_connection(handlers)
        assert conn.remote_address == "10.0.0.7:51234"
        assert conn.local_address == "10.0.0.1:10911"
        frame = encode_frame(RemotingCommand.request(RequestCode.HEART_BEAT, body=b"abc", opaque=9))
        for i in range(len(frame)):
            conn.data_received(frame[i : i + 1])
        (response,) = transport.frames()
        assert (response.opaque, response.body, response.is_response) == (9, b"abc", True)

    arun(scenario())


def _frame_counts(writes: list[bytes]) -> list[int]:
    counts = []
    for data in writes:
        decoder = FrameDecoder()
        decoder.receive_data(data)
        counts.append(len(list(decoder)))
    return counts


@pytest.mark.parametrize(("batch", "expected"), [(8, [8, 8, 4]), (100, [20]), (1, [1] * 20)])
def test_responses_to_one_read_leave_in_groups_of_write_batch_frames(batch: int, expected: list[int]) -> None:
    """20 pipelined requests in one read: the answers leave ``write_batch_frames`` at a time, so
    the peer can start on the first while the rest are made (one write each group, in order)."""

    async def scenario() -> None:
        handlers = HandlerTable()
        handlers.register(RequestCode.HEART_BEAT, echo)
        conn, transport = make_connection(handlers, write_batch_frames=batch)
        data = b"".join(
            encode_frame(RemotingCommand.request(RequestCode.HEART_BEAT, body=bytes([i]), opaque=i))
            for i in range(20)
        )
        conn.data_received(data)
        assert _frame_counts(transport.writes) == expected
        assert [c.opaque for c in transport.frames()] == list(range(20))

    arun(scenario())


def test_requests_of_many_callers_leave_in_groups_of_write_batch_frames() -> None:
    """Client side: 20 invokes in one loop turn go out as writes of at most 8 frames."""

    async def scenario() -> None:
        conn, transport = make_connection(server=False)
        calls = [
            asyncio.ensure_future(conn.invoke(RemotingCommand.request(RequestCode.HEART_BEAT), 5))
            for _ in range(20)
        ]
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert _frame_counts(transport.writes) == [8, 8, 4]
        for request in transport.frames():
            conn.data_received(encode_frame(request.response()))
        assert all(r.is_response for r in await asyncio.gather(*calls))

    arun(scenario())


def test_write_pressure_pauses_requests_until_drained() -> None:
    async def scenario() -> None:
        handlers = HandlerTable()
        handlers.register(RequestCode.HEART_BEAT, echo)
        conn, transport = make_connection(handlers)
        conn.pause_writing()  # the peer stopped reading our responses
        assert conn.reading_paused
        assert not transport.is_reading()
        frames = [encode_frame(RemotingCommand.request(RequestCode.HEART_BEAT, opaque=i)) for i in range(3)]
        conn.data_received(b"".join(frames))  # bytes already in flight when we paused
        assert transport.writes == []  # nothing processed while paused
        conn.resume_writing()
        assert transport.is_reading()
        await asyncio.sleep(0)  # the buffered frames are processed on the next loop turn
        assert [c.opaque for c in transport.frames()] == [0, 1, 2]

    arun(scenario())


def test_client_role_keeps_reading_under_write_pressure() -> None:
    async def scenario() -> None:
        conn, transport = make_connection(server=False)
        conn.pause_writing()
        assert transport.is_reading()  # else both ends could wait on each other
        assert not conn.reading_paused

    arun(scenario())


def test_in_flight_bound_pauses_and_resumes() -> None:
    async def scenario() -> None:
        gate = asyncio.Event()

        async def held(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
            await gate.wait()
            return request.response()

        handlers = HandlerTable()
        handlers.register(RequestCode.PULL_MESSAGE, held)
        conn, transport = make_connection(handlers, max_in_flight=2)
        conn.data_received(
            b"".join(
                encode_frame(RemotingCommand.request(RequestCode.PULL_MESSAGE, opaque=i)) for i in range(5)
            )
        )
        assert conn.in_flight == 2
        assert not transport.is_reading()
        gate.set()
        for _ in range(20):
            await asyncio.sleep(0)
        assert sorted(c.opaque for c in transport.frames()) == [0, 1, 2, 3, 4]
        assert transport.is_reading()
        assert conn.in_flight == 0

    arun(scenario())


def test_protocol_error_closes_and_logs_once(caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> None:
        closed: list[RemotingConnection] = []
        conn, transport = make_connection(on_close=closed.append)
        with caplog.at_level(logging.WARNING):
            conn.data_received(b"\x00\x00\x00\x02xx")  # a length below the 4-byte header word
            conn.data_received(b"more garbage after the error")
        await asyncio.sleep(0)
        assert transport.closed
        assert closed == [conn]
        assert caplog.text.count("not a frame") == 1
        assert conn.close_reason is not None
        assert conn.close_reason.startswith("protocol error from 10.0.0.7:51234")

    arun(scenario())


def test_connection_lost_fails_pending_and_timeouts_clean_up() -> None:
    async def scenario() -> None:
        conn, _transport = make_connection(server=False, remote_address="broker-a:10911")
        with pytest.raises(RemotingTimeoutError, match="broker-a:10911 to request code 11"):
            await conn.invoke(RemotingCommand.request(RequestCode.PULL_MESSAGE), 0.01)
        assert conn.pending_count == 0
        waiting = asyncio.ensure_future(conn.invoke(RemotingCommand.request(RequestCode.HEART_BEAT), 30.0))
        await asyncio.sleep(0)
        assert conn.pending_count == 1
        conn.connection_lost(ConnectionResetError("reset by peer"))
        with pytest.raises(
            RemotingClosedError, match=r"request code 34 \(opaque 1\) from broker-a:10911.*reset"
        ):
            await waiting
        with pytest.raises(RemotingClosedError):
            await conn.invoke_oneway(RemotingCommand.request(RequestCode.HEART_BEAT))

    arun(scenario())


def test_responses_match_by_opaque_and_requests_are_renumbered() -> None:
    async def scenario() -> None:
        conn, transport = make_connection(server=False)
        first = RemotingCommand.request(RequestCode.HEART_BEAT, opaque=777)
        second = RemotingCommand.request(RequestCode.HEART_BEAT, oneway=True)
        calls = asyncio.ensure_future(conn.invoke(first, 5.0))
        await asyncio.sleep(0)
        assert first.opaque == 0  # the transport numbers requests, whatever the caller put there
        await conn.invoke_oneway(second)
        assert second.opaque == 1
        assert second.is_oneway
        conn.data_received(encode_frame(first.response(remark="yes")))
        assert (await calls).remark == "yes"
        await asyncio.sleep(0)
        assert [c.opaque for c in transport.frames()] == [0, 1]

    arun(scenario())


# ---------------------------------------------------------------------------------- small helpers


def test_parse_address() -> None:
    assert parse_address("127.0.0.1:9876") == ("127.0.0.1", 9876)
    assert parse_address("[::1]:10911") == ("::1", 10911)
    assert parse_address("broker-a.local:10911") == ("broker-a.local", 10911)
    for bad in ("127.0.0.1", ":9876", "host:", "host:99999", "host:x1"):
        with pytest.raises(ConfigError):
            parse_address(bad)


def test_format_address() -> None:
    assert format_address(("127.0.0.1", 5)) == "127.0.0.1:5"
    assert format_address(("::1", 5, 0, 0)) == "[::1]:5"


def test_describe_exception_tells_a_peer_no_python_details() -> None:
    def fails() -> None:
        raise ValueError("bad queue id")

    try:
        fails()
    except ValueError as exc:
        text = describe_exception(exc)
    assert text == "the server failed to process this request (an internal error; its log has the details)"
    assert describe_exception(KeyError("k")) == text
    # a request that does not decode is the peer's to know: the reason, naming the field
    bad = RemoteProtocolError("GetMaxOffsetRequestHeader: field 'queueId' is not a Java Integer: 'x'")
    assert describe_exception(bad) == str(bad)


def test_handler_table_default() -> None:
    table = HandlerTable()
    assert table.get(34) is None
    table.register(RequestCode.HEART_BEAT, echo)
    assert table.get(34) is echo
    assert 34 in table
    table.default = echo
    assert table.get(999) is echo
    table.unregister(34)
    assert 34 not in table


@pytest.mark.parametrize(
    "make",
    [
        lambda: ServerConfig(idle_timeout=0),
        lambda: ServerConfig(max_in_flight=0),
        lambda: ServerConfig(write_buffer_low=10, write_buffer_high=5),
        lambda: ServerConfig(write_buffer_high=100, max_write_buffer=50),
        lambda: RemotingClientConfig(connect_timeout=-1.0),
        lambda: RemotingClientConfig(request_timeout=0),
        lambda: ServerConfig(write_batch_frames=0),
        lambda: RemotingClientConfig(write_batch_frames=-1),
    ],
)
def test_config_rejects_nonsense(make: Callable[[], object]) -> None:
    with pytest.raises(ConfigError):
        make()


def test_config_defaults_are_rocketmqs() -> None:
    server, client = ServerConfig(), RemotingClientConfig()
    assert server.idle_timeout == 120.0  # serverChannelMaxIdleTimeSeconds
    assert server.max_frame_size == 16 * 1024 * 1024
    assert server.backlog == 1024
    assert client.connect_timeout == 3.0  # connectTimeoutMillis
    assert client.idle_timeout == 120.0  # clientChannelMaxIdleTimeSeconds


def test_loop_helpers(monkeypatch: pytest.MonkeyPatch) -> None:
    async def which() -> str:
        return type(asyncio.get_running_loop()).__module__

    monkeypatch.setenv("ROCKETQ_NO_UVLOOP", "1")
    assert not uvloop_enabled()
    assert loop_factory() is asyncio.new_event_loop
    assert run(which()).startswith("asyncio")
    monkeypatch.delenv("ROCKETQ_NO_UVLOOP")
    assert uvloop_enabled() == uvloop_available()
    if uvloop_available():
        assert run(which()).startswith("uvloop")
        loop = new_event_loop()
        try:
            assert type(loop).__module__.startswith("uvloop")
        finally:
            loop.close()
    assert os.environ.get("ROCKETQ_NO_UVLOOP") is None


def test_cancelled_invoke_forgets_its_request() -> None:
    async def scenario() -> None:
        conn, _transport = make_connection(server=False)
        call = asyncio.ensure_future(conn.invoke(RemotingCommand.request(RequestCode.PULL_MESSAGE), 30.0))
        await asyncio.sleep(0)
        assert conn.pending_count == 1
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert conn.pending_count == 0

    arun(scenario())


def test_handler_may_answer_later_with_send_response() -> None:
    """The Java broker's pattern: return nothing now, write the response when data arrives."""

    async def scenario() -> None:
        parked: list[tuple[RemotingConnection, RemotingCommand]] = []

        def park(conn: RemotingConnection, request: RemotingCommand) -> None:
            parked.append((conn, request))

        handlers = HandlerTable()
        handlers.register(RequestCode.PULL_MESSAGE, park)
        conn, transport = make_connection(handlers)
        request = RemotingCommand.request(RequestCode.PULL_MESSAGE, opaque=41)
        conn.data_received(encode_frame(request))
        assert transport.writes == []
        ((held_conn, held_request),) = parked
        # a response built without the request's opaque still goes out as its answer
        held_conn.send_response(held_request, RemotingCommand(code=0, remark="found"))
        await asyncio.sleep(0)
        (response,) = transport.frames()
        assert (response.opaque, response.is_response, response.remark) == (41, True, "found")

    arun(scenario())
