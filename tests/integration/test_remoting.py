"""The asyncio transport over loopback: real sockets, real servers on port 0.

Every scenario runs on asyncio's own loop and on uvloop. Waiting is done on events the handlers
set; the few polls (for kernel-side states such as a full socket buffer) are bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import struct
import time
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import pytest

from rocketq.client.loop_thread import LoopThread
from rocketq.errors import (
    ConfigError,
    NoPermissionError,
    RemoteProtocolError,
    RemotingClosedError,
    RemotingConnectError,
    RemotingTimeoutError,
    TopicNotExistError,
)
from rocketq.protocol import (
    FrameDecoder,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    SerializeType,
    encode_frame,
)
from rocketq.remoting import (
    BlockingRemotingClient,
    ConnectionListener,
    RemotingClient,
    RemotingClientConfig,
    RemotingConnection,
    RemotingServer,
    RPCHook,
    ServerConfig,
    run,
)
from rocketq.remoting.loop import uvloop_available
from tests import wirecaps

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

HEART_BEAT = RequestCode.HEART_BEAT
PULL = RequestCode.PULL_MESSAGE


@pytest.fixture(
    params=[
        "asyncio",
        pytest.param(
            "uvloop",
            marks=pytest.mark.skipif(
                not uvloop_available(),
                reason="uvloop not installed (Windows, or uninstalled); asyncio's loop runs the same cases",
            ),
        ),
    ]
)
def arun(request: pytest.FixtureRequest) -> Callable[[Coroutine[Any, Any, Any]], Any]:
    use_uvloop = request.param == "uvloop"

    def runner(coro: Coroutine[Any, Any, Any]) -> Any:
        return run(coro, use_uvloop=use_uvloop)

    return runner


class Recorder(ConnectionListener):
    """Connection events as asyncio events, for tests to await."""

    def __init__(self) -> None:
        self.connected: list[RemotingConnection] = []
        self.closed: list[RemotingConnection] = []
        self.idle: list[RemotingConnection] = []
        self.connect_event = asyncio.Event()
        self.close_event = asyncio.Event()
        self.idle_event = asyncio.Event()

    def on_connect(self, conn: RemotingConnection) -> None:
        self.connected.append(conn)
        self.connect_event.set()

    def on_close(self, conn: RemotingConnection) -> None:
        self.closed.append(conn)
        self.close_event.set()

    def on_idle(self, conn: RemotingConnection) -> None:
        self.idle.append(conn)
        self.idle_event.set()


async def eventually(predicate: Callable[[], bool], timeout: float = 3.0) -> None:
    """Wait for a state the kernel or the loop reaches without telling us (bounded poll)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.002)


def echo(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
    return request.response(ext_fields=dict(request.ext_fields), body=request.body)


async def open_raw(server: RemotingServer) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", server.port)


async def read_command(reader: asyncio.StreamReader) -> RemotingCommand:
    prefix = await reader.readexactly(4)
    (length,) = struct.unpack(">i", prefix)
    rest = await reader.readexactly(length)
    decoder = FrameDecoder()
    decoder.receive_data(prefix + rest)
    cmd = decoder.next_command()
    assert cmd is not None
    return cmd


# ---------------------------------------------------------------------------------- round trips


def test_concurrent_requests_answered_out_of_order(arun: Callable[..., Any]) -> None:
    n = 40

    async def scenario() -> None:
        arrived: dict[int, asyncio.Future[None]] = {}
        all_arrived = asyncio.Event()

        async def held(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
            i = int(request.ext_fields["i"])
            gate = asyncio.get_running_loop().create_future()
            arrived[i] = gate
            if len(arrived) == n:
                all_arrived.set()
            await gate
            return request.response(ext_fields={"i": str(i)}, body=b"x" * i)

        async with RemotingServer() as server, RemotingClient() as client:
            server.register_handler(PULL, held)
            finished: list[int] = []

            async def call(i: int) -> RemotingCommand:
                response = await client.invoke(
                    server.address, RemotingCommand.request(PULL, {"i": str(i)}), 5.0
                )
                finished.append(i)
                return response

            calls = [asyncio.ensure_future(call(i)) for i in range(n)]
            await asyncio.wait_for(all_arrived.wait(), 5.0)
            for i in reversed(range(n)):  # answer the last request first
                arrived[i].set_result(None)
                await asyncio.sleep(0)
            responses = await asyncio.gather(*calls)
            assert [r.ext_fields["i"] for r in responses] == [str(i) for i in range(n)]
            assert [r.body for r in responses] == [b"x" * i for i in range(n)]
            assert finished[0] == n - 1
            assert finished[-1] == 0
            assert len(server.connections) == 1  # all on one connection
            conn = client.connections[server.address]
            assert conn.pending_count == 0

    arun(scenario())


def test_sync_handler_many_concurrent_and_json_and_rocketmq_headers(arun: Callable[..., Any]) -> None:
    async def scenario() -> None:
        # binary bodies up to 70 KB under HEART_BEAT's code: without its (JSON) request limit
        config = ServerConfig(request_limits={})
        async with RemotingServer(config=config) as server, RemotingClient() as client:
            server.register_handler(HEART_BEAT, echo)
            requests = [
                RemotingCommand.request(
                    HEART_BEAT,
                    {"k": str(i)},
                    body=bytes([i % 256]) * (i * 997 % 70000),
                    serialize_type=SerializeType.ROCKETMQ if i % 2 else SerializeType.JSON,
                )
                for i in range(300)
            ]
            responses = await asyncio.gather(*(client.invoke(server.address, r, 5.0) for r in requests))
            for request, response in zip(requests, responses, strict=True):
                assert response.code == ResponseCode.SUCCESS
                assert response.is_response
                assert response.opaque == request.opaque
                assert response.ext_fields == request.ext_fields
                assert response.body == request.body
                assert response.serialize_type == request.serialize_type  # answered in the caller's kind
            assert len({r.opaque for r in requests}) == len(requests)

    arun(scenario())


def test_concurrent_callers_share_one_connect(arun: Callable[..., Any]) -> None:
    async def scenario() -> None:
        recorder = Recorder()
        async with RemotingServer(listener=recorder) as server, RemotingClient() as client:
            server.register_handler(HEART_BEAT, echo)
            await asyncio.gather(
                *(client.invoke(server.address, RemotingCommand.request(HEART_BEAT), 5.0) for _ in range(25))
            )
            assert len(recorder.connected) == 1

    arun(scenario())


# ---------------------------------------------------------------------------------- timeouts, oneway


def test_timeout_cleans_pending_and_late_response_is_dropped(
    arun: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        release = asyncio.Event()
        started = asyncio.Event()

        async def stuck(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
            started.set()
            await release.wait()
            return request.response(remark="late")

        async with RemotingServer() as server, RemotingClient() as client:
            server.register_handler(PULL, stuck)
            server.register_handler(HEART_BEAT, echo)
            t0 = time.monotonic()
            with pytest.raises(RemotingTimeoutError, match=r"request code 11 .*within 0\.100s"):
                await client.invoke(server.address, RemotingCommand.request(PULL), 0.1)
            assert 0.09 <= time.monotonic() - t0 < 2.0
            conn = client.connections[server.address]
            assert conn.pending_count == 0
            assert started.is_set()
            with caplog.at_level(logging.DEBUG, logger="rocketq.remoting.connection"):
                release.set()
                # expected, so quiet: a late answer to a request nobody waits for is a DEBUG line
                await eventually(lambda: "whose caller stopped waiting" in caplog.text)
            assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
            # the connection is still fine
            response = await client.invoke(
                server.address, RemotingCommand.request(HEART_BEAT, body=b"ok"), 2.0
            )
            assert response.body == b"ok"
            assert client.connections[server.address] is conn

    arun(scenario())


def test_close_on_timeout_option_closes_the_connection(arun: Callable[..., Any]) -> None:
    async def scenario() -> None:
        async def never(conn: RemotingConnection, request: RemotingCommand) -> None:
            await asyncio.Event().wait()

        async with RemotingServer() as server:
            server.register_handler(PULL, never)
            async with RemotingClient(config=RemotingClientConfig(close_on_timeout=True)) as client:
                with pytest.raises(RemotingTimeoutError):
                    await client.invoke(server.address, RemotingCommand.request(PULL), 0.05)
                conn = client._connections.get(server.address)
                assert conn is None or conn.is_closed

    arun(scenario())


def test_oneway_is_delivered_and_never_answered(arun: Callable[..., Any]) -> None:
    async def scenario() -> None:
        got: asyncio.Queue[RemotingCommand] = asyncio.Queue()

        def record(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
            got.put_nowait(request)
            return request.response(remark="must not be sent")

        async with RemotingServer() as server, RemotingClient() as client:
            server.register_handler(RequestCode.UNREGISTER_CLIENT, record)
            server.register_handler(HEART_BEAT, echo)
            request = RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, {"clientID": "c1"})
            await client.invoke_oneway(server.address, request)
            received = await asyncio.wait_for(got.get(), 2.0)
            assert received.is_oneway
            assert received.ext_fields == {"clientID": "c1"}

            # raw peer: a oneway request then a normal one; the first frame back answers the second
            reader, writer = await open_raw(server)
            oneway = RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, oneway=True, opaque=5)
            normal = RemotingCommand.request(HEART_BEAT, opaque=6)
            writer.write(encode_frame(oneway) + encode_frame(normal))
            answer = await asyncio.wait_for(read_command(reader), 2.0)
            assert answer.opaque == 6
            writer.close()

    arun(scenario())


# ---------------------------------------------------------------------------------- server push


def test_server_pushes_notify_and_asks_running_info_over_the_client_connection(
    arun: Callable[..., Any],
) -> None:
    async def scenario() -> None:
        recorder = Recorder()
        notified = asyncio.Event()
        seen_group: list[str] = []

        def on_notify(conn: RemotingConnection, request: RemotingCommand) -> None:
            seen_group.append(request.ext_fields["consumerGroup"])
            notified.set()

        async def on_running_info(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
            await asyncio.sleep(0)
            return request.response(body=b'{"properties":{}}', remark=request.ext_fields["clientId"])

        async with RemotingServer(listener=recorder) as server, RemotingClient() as client:
            server.register_handler(HEART_BEAT, echo)
            client.register_handler(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, on_notify)
            client.register_handler(RequestCode.GET_CONSUMER_RUNNING_INFO, on_running_info)
            await client.invoke(server.address, RemotingCommand.request(HEART_BEAT), 2.0)
            (conn,) = recorder.connected

            await conn.invoke_oneway(
                RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": "g1"})
            )
            await asyncio.wait_for(notified.wait(), 2.0)
            assert seen_group == ["g1"]

            info = await conn.invoke(
                RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, {"clientId": "c-7"}), 2.0
            )
            assert (info.code, info.remark, info.body) == (0, "c-7", b'{"properties":{}}')

            unknown = await conn.invoke(RemotingCommand.request(4242), 2.0)
            assert unknown.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
            assert unknown.remark == " request type 4242 not supported"

    arun(scenario())


def test_rpc_hooks_sign_and_check_requests(arun: Callable[..., Any]) -> None:
    """The shape of RocketMQ's ACL: the client's hook signs, the server's hook rejects unsigned requests."""

    class Sign(RPCHook):
        def __init__(self) -> None:
            self.responses: list[tuple[str, int]] = []

        def before_request(self, addr: str, request: RemotingCommand) -> None:
            request.ext_fields["AccessKey"] = "rocketq"

        def after_response(self, addr: str, request: RemotingCommand, response: RemotingCommand) -> None:
            self.responses.append((addr, response.code))

    class Check(RPCHook):
        def __init__(self) -> None:
            self.answered: list[int] = []

        def before_request(self, addr: str, request: RemotingCommand) -> None:
            if request.ext_fields.get("AccessKey") != "rocketq":
                raise NoPermissionError(ResponseCode.NO_PERMISSION, "AccessKey is missing")

        def after_response(self, addr: str, request: RemotingCommand, response: RemotingCommand) -> None:
            self.answered.append(response.code)

    async def scenario() -> None:
        sign, check = Sign(), Check()
        async with RemotingServer() as server, RemotingClient() as signed, RemotingClient() as unsigned:
            server.register_handler(HEART_BEAT, echo)
            server.add_hook(check)
            signed.add_hook(sign)
            ok = await signed.invoke(server.address, RemotingCommand.request(HEART_BEAT), 2.0)
            assert ok.code == ResponseCode.SUCCESS
            assert ok.ext_fields == {"AccessKey": "rocketq"}  # echoed: the hook's field went out
            refused = await unsigned.invoke(server.address, RemotingCommand.request(HEART_BEAT), 2.0)
            assert (refused.code, refused.remark) == (ResponseCode.NO_PERMISSION, "AccessKey is missing")
            assert sign.responses == [(server.address, 0)]
            assert check.answered == [0, ResponseCode.NO_PERMISSION]  # every answer, refusals too

    arun(scenario())


# ---------------------------------------------------------------------------------- errors


def test_unknown_code_handler_errors_and_default_handler(
    arun: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        def boom(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
            raise ValueError("boom")

        async def async_boom(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
            await asyncio.sleep(0)
            raise KeyError("missing")

        def no_topic(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
            raise TopicNotExistError(ResponseCode.TOPIC_NOT_EXIST, "No topic route info for T")

        def wrong_type(conn: RemotingConnection, request: RemotingCommand) -> Any:
            return 42

        def undecodable(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
            raise RemoteProtocolError("QueryHeader: field 'queueId' is bad")

        async with RemotingServer() as server, RemotingClient() as client:
            server.register_handler(1001, boom)
            server.register_handler(1002, async_boom)
            server.register_handler(1003, no_topic)
            server.register_handler(1004, wrong_type)
            server.register_handler(1005, undecodable)
            addr = server.address
            with caplog.at_level(logging.WARNING):
                r = await client.invoke(addr, RemotingCommand.request(9999), 2.0)
                assert (r.code, r.remark) == (
                    ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                    " request type 9999 not supported",
                )
                # a fault of ours: the peer learns no Python exception text, class or function name
                internal = (
                    "the server failed to process this request (an internal error; its log has the details)"
                )
                for code in (1001, 1002, 1004):
                    r = await client.invoke(addr, RemotingCommand.request(code), 2.0)
                    assert (r.code, r.remark) == (ResponseCode.SYSTEM_ERROR, internal)
                r = await client.invoke(addr, RemotingCommand.request(1003), 2.0)
                assert (r.code, r.remark) == (ResponseCode.TOPIC_NOT_EXIST, "No topic route info for T")
                # a request that does not decode: its reason, and no traceback in the log
                r = await client.invoke(addr, RemotingCommand.request(1005), 2.0)
                assert (r.code, r.remark) == (
                    ResponseCode.SYSTEM_ERROR,
                    "QueryHeader: field 'queueId' is bad",
                )
            assert "request type 9999 not supported" in caplog.text
            # the log keeps what the peer does not get: the exception and its traceback
            assert "handler for request code 1001" in caplog.text
            assert "ValueError: boom" in caplog.text
            assert "KeyError: 'missing'" in caplog.text
            assert "returned int" in caplog.text
            undecodable = [r for r in caplog.records if "could not be decoded" in r.getMessage()]
            assert [(r.levelno, r.exc_info) for r in undecodable] == [(logging.WARNING, None)]
            server.set_default_handler(lambda conn, req: req.response(remark=f"default {req.code}"))
            r = await client.invoke(addr, RemotingCommand.request(9999), 2.0)
            assert (r.code, r.remark) == (0, "default 9999")
            assert len(server.connections) == 1  # none of this cost the connection

    arun(scenario())


def test_garbage_frame_closes_only_that_connection(
    arun: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        recorder = Recorder()
        async with RemotingServer(listener=recorder) as server, RemotingClient() as client:
            server.register_handler(HEART_BEAT, echo)
            await client.invoke(server.address, RemotingCommand.request(HEART_BEAT), 2.0)
            good = client.connections[server.address]
            with caplog.at_level(logging.WARNING, logger="rocketq.remoting.connection"):
                for garbage in (
                    b"\xff\xff\xff\xff" + b"junk" * 4,  # negative length
                    struct.pack(">ii", 12, 5) + b"notjsonat",  # header that does not parse
                    struct.pack(">i", 64 * 1024 * 1024) + b"\x00" * 8,  # longer than the 16 MiB bound
                ):
                    reader, writer = await open_raw(server)
                    writer.write(garbage)
                    assert await asyncio.wait_for(reader.read(), 2.0) == b""  # the server closed it
                    writer.close()
            # logged once per peer (host), not once per connection: the other two are counted
            assert caplog.text.count("closing the connection, its peer sent bytes that are not a frame") == 1
            assert server.peer_log.suppressed("127.0.0.1", "not-a-frame") == 2
            assert len(recorder.closed) == 3
            assert good not in recorder.closed
            r = await client.invoke(server.address, RemotingCommand.request(HEART_BEAT, body=b"still"), 2.0)
            assert r.body == b"still"
            assert client.connections[server.address] is good

    arun(scenario())


def test_many_clients_keep_working_while_one_sends_garbage(arun: Callable[..., Any]) -> None:
    async def scenario() -> None:
        async def slow_echo(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
            await asyncio.sleep(0)
            return echo(conn, request)

        async with RemotingServer() as server:
            server.register_handler(HEART_BEAT, echo)
            server.register_handler(PULL, slow_echo)
            clients = [RemotingClient() for _ in range(8)]

            async def traffic(client: RemotingClient, c: int) -> None:
                for round_ in range(5):
                    calls = [
                        client.invoke(
                            server.address,
                            RemotingCommand.request(
                                HEART_BEAT if i % 2 else PULL, {"who": f"{c}.{round_}.{i}"}
                            ),
                            5.0,
                        )
                        for i in range(20)
                    ]
                    responses = await asyncio.gather(*calls)
                    assert [r.ext_fields["who"] for r in responses] == [
                        f"{c}.{round_}.{i}" for i in range(20)
                    ]

            async def vandal() -> None:
                reader, writer = await open_raw(server)
                writer.write(struct.pack(">ii", 20, 200) + b"\xff" * 16)  # header longer than its frame
                assert await asyncio.wait_for(reader.read(), 2.0) == b""
                writer.close()

            try:
                await asyncio.gather(*(traffic(client, c) for c, client in enumerate(clients)), vandal())
            finally:
                for client in clients:
                    await client.close()

    arun(scenario())


def test_peer_disconnecting_mid_frame(arun: Callable[..., Any]) -> None:
    async def scenario() -> None:
        recorder = Recorder()
        async with RemotingServer(listener=recorder) as server, RemotingClient() as client:
            server.register_handler(HEART_BEAT, echo)
            frame = encode_frame(RemotingCommand.request(HEART_BEAT, body=b"y" * 1000))
            _reader, writer = await open_raw(server)
            writer.write(frame[: len(frame) // 2])
            await writer.drain()
            writer.close()
            await asyncio.wait_for(recorder.close_event.wait(), 2.0)
            r = await client.invoke(server.address, RemotingCommand.request(HEART_BEAT, body=b"alive"), 2.0)
            assert r.body == b"alive"

    arun(scenario())


def test_connection_loss_fails_pending_requests_at_once(arun: Callable[..., Any]) -> None:
    async def scenario() -> None:
        async def half_answer_then_drop(conn: RemotingConnection, request: RemotingCommand) -> None:
            frame = encode_frame(request.response(body=b"z" * 500))
            assert conn.transport is not None
            conn.transport.write(frame[:100])  # half a response frame, then the connection dies
            conn.abort("test drops the connection")

        async with RemotingServer() as server, RemotingClient() as client:
            server.register_handler(PULL, half_answer_then_drop)
            closed = asyncio.Event()

            class Watch(ConnectionListener):
                def on_close(self, conn: RemotingConnection) -> None:
                    closed.set()

            client.add_listener(Watch())
            t0 = time.monotonic()
            with pytest.raises(RemotingClosedError) as info:
                await client.invoke(server.address, RemotingCommand.request(PULL), 30.0)
            assert time.monotonic() - t0 < 2.0  # not at the 30 s timeout
            message = str(info.value)
            assert server.address in message
            assert "request code 11" in message
            await asyncio.wait_for(closed.wait(), 2.0)
            assert server.address not in client.connections

    arun(scenario())


def test_client_close_fails_pending_and_refuses_new_calls(arun: Callable[..., Any]) -> None:
    async def scenario() -> None:
        started = asyncio.Event()

        async def hold(conn: RemotingConnection, request: RemotingCommand) -> None:
            started.set()
            await asyncio.Event().wait()

        async with RemotingServer() as server:
            server.register_handler(PULL, hold)
            client = RemotingClient()
            calls = [
                asyncio.ensure_future(client.invoke(server.address, RemotingCommand.request(PULL), 30.0))
                for _ in range(3)
            ]
            await asyncio.wait_for(started.wait(), 2.0)
            await client.close()
            results = await asyncio.gather(*calls, return_exceptions=True)
            for result in results:
                assert isinstance(result, RemotingClosedError)
                assert "client closed" in str(result)
                assert server.address in str(result)
                assert "request code 11" in str(result)
            with pytest.raises(RemotingClosedError):
                await client.invoke(server.address, RemotingCommand.request(PULL), 1.0)

    arun(scenario())


# ------------------------------------------------------------------ blocking callers on threads


def test_threads_get_their_own_answers_through_invoke_threadsafe(arun: Callable[..., Any]) -> None:
    """8 plain threads x 40 blocking calls over one connection, answered out of order."""

    async def scenario() -> None:
        async def shuffled_echo(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
            await asyncio.sleep(0.001 * (request.body[-1] % 3))
            return echo(conn, request)

        async with RemotingServer() as server, RemotingClient() as client:
            server.register_handler(HEART_BEAT, shuffled_echo)
            await client.invoke(server.address, RemotingCommand.request(HEART_BEAT, body=b"x"), 5.0)
            conn = client.open_connection(server.address)
            assert conn is not None

            def worker(k: int) -> list[bytes]:
                got = []
                for i in range(40):
                    body = f"{k}-{i}".encode()
                    response = conn.invoke_threadsafe(RemotingCommand.request(HEART_BEAT, body=body), 5.0)
                    assert response.is_response
                    got.append(response.body)
                return got

            results = await asyncio.gather(*(asyncio.to_thread(worker, k) for k in range(8)))
            for k, got in enumerate(results):
                assert got == [f"{k}-{i}".encode() for i in range(40)]
            assert conn.pending_count == 0
            assert client.open_connection("127.0.0.1:1") is None  # never dialled: None, no connect

    arun(scenario())


def test_invoke_threadsafe_timeout_forgets_the_request(
    arun: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        release = asyncio.Event()

        async def stuck(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
            await release.wait()
            return request.response(remark="late")

        async with RemotingServer() as server, RemotingClient() as client:
            server.register_handler(PULL, stuck)
            server.register_handler(HEART_BEAT, echo)
            await client.invoke(server.address, RemotingCommand.request(HEART_BEAT), 5.0)
            conn = client.open_connection(server.address)
            assert conn is not None
            t0 = time.monotonic()
            with pytest.raises(RemotingTimeoutError, match=r"request code 11 .*within 0\.100s"):
                await asyncio.to_thread(conn.invoke_threadsafe, RemotingCommand.request(PULL), 0.1)
            assert 0.09 <= time.monotonic() - t0 < 2.0
            await eventually(lambda: conn.pending_count == 0)
            with caplog.at_level(logging.DEBUG, logger="rocketq.remoting.connection"):
                release.set()
                # expected, so quiet: a late answer to a request nobody waits for is a DEBUG line
                await eventually(lambda: "whose caller stopped waiting" in caplog.text)
            assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
            ok = RemotingCommand.request(HEART_BEAT, body=b"ok")
            assert (await asyncio.to_thread(conn.invoke_threadsafe, ok, 2.0)).body == b"ok"

    arun(scenario())


def test_invoke_threadsafe_fails_at_once_when_the_connection_drops(arun: Callable[..., Any]) -> None:
    async def scenario() -> None:
        async def drop(conn: RemotingConnection, request: RemotingCommand) -> None:
            conn.abort("test drops the connection")

        async with RemotingServer() as server, RemotingClient() as client:
            server.register_handler(PULL, drop)
            server.register_handler(HEART_BEAT, echo)
            await client.invoke(server.address, RemotingCommand.request(HEART_BEAT), 5.0)
            conn = client.open_connection(server.address)
            assert conn is not None
            t0 = time.monotonic()
            with pytest.raises(RemotingClosedError, match="request code 11"):
                await asyncio.to_thread(conn.invoke_threadsafe, RemotingCommand.request(PULL), 30.0)
            assert time.monotonic() - t0 < 2.0  # not at the 30 s timeout
            await eventually(lambda: conn.is_closed)
            with pytest.raises(RemotingClosedError):
                conn.invoke_threadsafe(RemotingCommand.request(HEART_BEAT), 1.0)
            assert client.open_connection(server.address) is None

    arun(scenario())


@contextlib.contextmanager
def remote_loop_client(
    handlers: dict[int, Any],
) -> Iterator[tuple[LoopThread, RemotingServer, RemotingClient]]:
    """A server and a client living on a loop thread of their own (as a rocketq client's do)."""
    thread = LoopThread("test-remote-loop")
    server = RemotingServer()
    client = RemotingClient()

    async def start() -> None:
        await server.start()
        for code, handler in handlers.items():
            server.register_handler(code, handler)
        await client.invoke(server.address, RemotingCommand.request(HEART_BEAT), 5.0)

    async def stop() -> None:
        await client.close()
        await server.close()

    thread.call(start(), timeout=10)
    try:
        yield thread, server, client
    finally:
        thread.call(stop(), timeout=10)
        thread.stop()


def test_other_loops_get_their_own_answers_through_invoke_from_loop(arun: Callable[..., Any]) -> None:
    """32 tasks of this loop x 20 calls over a connection living on another loop's thread."""

    async def shuffled_echo(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        await asyncio.sleep(0.001 * (request.body[-1] % 3) if request.body else 0)
        return echo(conn, request)

    with remote_loop_client({HEART_BEAT: shuffled_echo}) as (_thread, server, client):
        conn = client.open_connection(server.address)
        assert conn is not None

        async def scenario() -> None:
            async def worker(k: int) -> list[bytes]:
                got = []
                for i in range(20):
                    body = f"{k}-{i}".encode()
                    response = await conn.invoke_from_loop(
                        RemotingCommand.request(HEART_BEAT, body=body), 5.0
                    )
                    got.append(response.body)
                return got

            results = await asyncio.gather(*(worker(k) for k in range(32)))
            for k, got in enumerate(results):
                assert got == [f"{k}-{i}".encode() for i in range(20)]

        arun(scenario())
        assert conn.pending_count == 0


def test_invoke_from_loop_timeout_and_cancellation_forget_the_request(arun: Callable[..., Any]) -> None:
    async def stuck(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        await asyncio.Event().wait()
        raise AssertionError("never answered")

    with remote_loop_client({PULL: stuck, HEART_BEAT: echo}) as (_thread, server, client):
        conn = client.open_connection(server.address)
        assert conn is not None

        async def scenario() -> None:
            t0 = time.monotonic()
            with pytest.raises(RemotingTimeoutError, match=r"request code 11 .*within 0\.100s"):
                await conn.invoke_from_loop(RemotingCommand.request(PULL), 0.1)
            assert 0.09 <= time.monotonic() - t0 < 2.0
            call = asyncio.ensure_future(conn.invoke_from_loop(RemotingCommand.request(PULL), 30.0))
            await eventually(lambda: conn.pending_count == 1)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            await eventually(lambda: conn.pending_count == 0)
            response = await conn.invoke_from_loop(RemotingCommand.request(HEART_BEAT, body=b"ok"), 2.0)
            assert response.body == b"ok"

        arun(scenario())
        assert not conn.is_closed


def test_invoke_from_loop_fails_at_once_when_the_connection_drops(arun: Callable[..., Any]) -> None:
    async def drop(conn: RemotingConnection, request: RemotingCommand) -> None:
        conn.abort("test drops the connection")

    with remote_loop_client({PULL: drop, HEART_BEAT: echo}) as (_thread, server, client):
        conn = client.open_connection(server.address)
        assert conn is not None

        async def scenario() -> None:
            t0 = time.monotonic()
            with pytest.raises(RemotingClosedError, match="request code 11"):
                await conn.invoke_from_loop(RemotingCommand.request(PULL), 30.0)
            assert time.monotonic() - t0 < 2.0
            await eventually(lambda: conn.is_closed)
            with pytest.raises(RemotingClosedError):
                await conn.invoke_from_loop(RemotingCommand.request(HEART_BEAT), 1.0)

        arun(scenario())


def test_invoke_from_loop_on_the_connections_own_loop_is_a_plain_invoke(arun: Callable[..., Any]) -> None:
    async def scenario() -> None:
        async with RemotingServer() as server, RemotingClient() as client:
            server.register_handler(HEART_BEAT, echo)
            await client.invoke(server.address, RemotingCommand.request(HEART_BEAT), 5.0)
            conn = client.open_connection(server.address)
            assert conn is not None
            response = await conn.invoke_from_loop(RemotingCommand.request(HEART_BEAT, body=b"same"), 2.0)
            assert response.body == b"same"

    arun(scenario())


def test_connect_error_and_reconnect_after_server_restart(arun: Callable[..., Any]) -> None:
    async def scenario() -> None:
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        free_port = probe.getsockname()[1]
        probe.close()
        async with RemotingClient(config=RemotingClientConfig(connect_timeout=1.0)) as client:
            with pytest.raises(RemotingConnectError, match=f"127.0.0.1:{free_port}"):
                await client.invoke(f"127.0.0.1:{free_port}", RemotingCommand.request(HEART_BEAT), 2.0)
            with pytest.raises(ConfigError):
                await client.invoke("no-port", RemotingCommand.request(HEART_BEAT), 2.0)

            server = RemotingServer()
            server.register_handler(HEART_BEAT, echo)
            await server.start()
            port = server.port
            addr = server.address
            assert (
                await client.invoke(addr, RemotingCommand.request(HEART_BEAT, body=b"1"), 2.0)
            ).body == b"1"
            first = client.connections[addr]
            await server.close()
            await asyncio.wait_for(first.wait_closed(), 2.0)
            with pytest.raises(RemotingConnectError):
                await client.invoke(addr, RemotingCommand.request(HEART_BEAT), 2.0)

            again = RemotingServer(port=port)
            again.register_handler(HEART_BEAT, echo)
            await again.start()
            try:
                r = await client.invoke(addr, RemotingCommand.request(HEART_BEAT, body=b"2"), 2.0)
                assert r.body == b"2"
                assert client.connections[addr] is not first
            finally:
                await again.close()

    arun(scenario())


# ---------------------------------------------------------------------------------- events, bounds


def test_idle_connection_reported_and_closed(arun: Callable[..., Any]) -> None:
    async def scenario() -> None:
        recorder = Recorder()
        config = ServerConfig(idle_timeout=0.1)
        async with RemotingServer(config=config, listener=recorder) as server, RemotingClient() as client:
            server.register_handler(HEART_BEAT, echo)
            await client.invoke(server.address, RemotingCommand.request(HEART_BEAT), 2.0)
            t0 = time.monotonic()
            await asyncio.wait_for(recorder.idle_event.wait(), 2.0)
            assert time.monotonic() - t0 >= 0.05
            await asyncio.wait_for(recorder.close_event.wait(), 2.0)
            assert recorder.idle == recorder.closed
            assert "idle" in (recorder.closed[0].close_reason or "")

    arun(scenario())


def test_long_poll_is_not_idleness(arun: Callable[..., Any]) -> None:
    async def scenario() -> None:
        recorder = Recorder()

        async def long_poll(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
            await asyncio.sleep(0.3)  # three idle periods with nothing on the wire
            return request.response(remark="held")

        config = ServerConfig(idle_timeout=0.1)
        client_config = RemotingClientConfig(idle_timeout=0.1)
        async with RemotingServer(config=config, listener=recorder) as server:
            server.register_handler(PULL, long_poll)
            async with RemotingClient(config=client_config) as client:
                response = await client.invoke(server.address, RemotingCommand.request(PULL), 5.0)
                assert response.remark == "held"
                assert not recorder.idle
                await asyncio.wait_for(recorder.idle_event.wait(), 2.0)  # idle once it is over

    arun(scenario())


def test_in_flight_bound_pauses_reading(arun: Callable[..., Any]) -> None:
    async def scenario() -> None:
        gate = asyncio.Event()
        running: list[int] = []

        async def held(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
            running.append(1)
            await gate.wait()
            return request.response()

        config = ServerConfig(max_in_flight=4)
        recorder = Recorder()
        async with RemotingServer(config=config, listener=recorder) as server, RemotingClient() as client:
            server.register_handler(PULL, held)
            calls = [
                asyncio.ensure_future(client.invoke(server.address, RemotingCommand.request(PULL), 10.0))
                for _ in range(10)
            ]
            await eventually(lambda: len(running) == 4)
            (conn,) = recorder.connected
            assert conn.reading_paused
            assert conn.in_flight == 4
            await asyncio.sleep(0.02)
            assert len(running) == 4  # no fifth handler while at the bound
            gate.set()
            responses = await asyncio.gather(*calls)
            assert all(r.code == 0 for r in responses)
            assert len(running) == 10

    arun(scenario())


def test_peer_that_stops_reading_cannot_grow_the_server_buffer(arun: Callable[..., Any]) -> None:
    body = b"b" * 40_000
    most = 2000  # requests: 80 MB of responses, far beyond what the kernel buffers on loopback

    async def scenario() -> None:
        handled: list[int] = []

        def big(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
            handled.append(1)
            return request.response(body=body)

        config = ServerConfig(
            write_buffer_high=256 * 1024, write_buffer_low=64 * 1024, max_write_buffer=4 << 20
        )
        recorder = Recorder()
        async with RemotingServer(config=config, listener=recorder) as server:
            server.register_handler(PULL, big)
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
            sock.connect(("127.0.0.1", server.port))
            sock.setblocking(False)
            request = encode_frame(RemotingCommand.request(PULL, {"q": "1"}))
            payload = request * most
            sent = 0
            stalls = 0
            try:
                # send until the kernel refuses more for a while: the server stopped reading us
                while stalls < 20 and sent < len(payload):
                    try:
                        sent += sock.send(payload[sent:])
                        stalls = 0
                    except BlockingIOError:
                        stalls += 1
                        await asyncio.sleep(0.01)
                await asyncio.wait_for(recorder.connect_event.wait(), 2.0)
                (conn,) = recorder.connected
                await eventually(lambda: conn.reading_paused)
                asked = sent // len(request)  # whole requests sent; a partial last one is never handled
                assert 0 < len(handled) < asked  # the server stopped taking requests
                # unsent output: at most one flush of collected responses past the high-water mark
                assert conn.write_buffer_size <= 2 * config.write_buffer_high + len(body) + 4096
                assert not conn.is_closed
                # the reader comes back: every request asked so far is answered
                decoder = FrameDecoder()
                answered = 0
                while answered < asked:
                    data = await asyncio.wait_for(asyncio.get_running_loop().sock_recv(sock, 1 << 20), 5.0)
                    assert data
                    decoder.receive_data(data)
                    while (cmd := decoder.next_command()) is not None:
                        assert cmd.body == body
                        answered += 1
                assert len(handled) == asked
            finally:
                sock.close()

    arun(scenario())


def test_output_beyond_the_hard_bound_closes_the_connection(arun: Callable[..., Any]) -> None:
    body = b"c" * 200_000

    async def scenario() -> None:
        gate = asyncio.Event()

        async def big_later(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
            await gate.wait()
            return request.response(body=body)

        config = ServerConfig(
            write_buffer_high=64 * 1024, write_buffer_low=16 * 1024, max_write_buffer=1 << 20
        )
        recorder = Recorder()
        async with RemotingServer(config=config, listener=recorder) as server:
            server.register_handler(PULL, big_later)
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 * 1024)
            sock.connect(("127.0.0.1", server.port))
            try:
                sock.sendall(encode_frame(RemotingCommand.request(PULL)) * 40)
                await asyncio.wait_for(recorder.connect_event.wait(), 2.0)
                (conn,) = recorder.connected
                await eventually(lambda: conn.in_flight == 40)
                gate.set()  # 40 x 200 kB of responses to a peer that reads nothing
                await asyncio.wait_for(recorder.close_event.wait(), 5.0)
                assert "stopped reading" in (conn.close_reason or "")
            finally:
                sock.close()

    arun(scenario())


def test_server_close_does_not_wait_forever_for_a_peer_that_does_not_read(arun: Callable[..., Any]) -> None:
    body = b"d" * 100_000

    async def scenario() -> None:
        config = ServerConfig(
            write_buffer_high=64 * 1024, write_buffer_low=16 * 1024, max_write_buffer=8 << 20
        )
        recorder = Recorder()
        server = RemotingServer(config=config, listener=recorder)
        server.register_handler(PULL, lambda conn, req: req.response(body=body))
        await server.start()
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 * 1024)
        sock.connect(("127.0.0.1", server.port))
        try:
            sock.sendall(encode_frame(RemotingCommand.request(PULL)) * 60)
            await asyncio.wait_for(recorder.connect_event.wait(), 2.0)
            (conn,) = recorder.connected
            await eventually(lambda: conn.reading_paused)
            assert conn.write_buffer_size > 0  # output the peer will never take
            t0 = time.monotonic()
            await asyncio.wait_for(server.close(), 5.0)
            assert time.monotonic() - t0 < 3.0
            assert conn.is_closed
        finally:
            sock.close()

    arun(scenario())


# ---------------------------------------------------------------------------------- lifecycle


def test_server_close_cancels_running_handlers_and_closes_connections(arun: Callable[..., Any]) -> None:
    async def scenario() -> None:
        cancelled = asyncio.Event()
        started = asyncio.Event()

        async def forever(conn: RemotingConnection, request: RemotingCommand) -> None:
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.set()
                raise

        server = RemotingServer()
        server.register_handler(PULL, forever)
        serving = asyncio.ensure_future(server.serve_forever())
        await eventually(lambda: server.is_serving)
        async with RemotingClient() as client:
            call = asyncio.ensure_future(client.invoke(server.address, RemotingCommand.request(PULL), 30.0))
            await asyncio.wait_for(started.wait(), 2.0)
            await asyncio.wait_for(server.close(), 5.0)
            assert cancelled.is_set()
            with pytest.raises(RemotingClosedError):
                await asyncio.wait_for(call, 2.0)
            assert not server.is_serving
            assert not server.connections
            await asyncio.wait_for(serving, 1.0)  # serve_forever returns once closed

    arun(scenario())


def test_server_close_with_grace_lets_handlers_answer(arun: Callable[..., Any]) -> None:
    async def scenario() -> None:
        started = asyncio.Event()
        gate = asyncio.Event()
        calls: list[int] = []

        async def held(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
            calls.append(1)
            started.set()
            await gate.wait()
            return request.response(remark="done")

        server = RemotingServer()
        server.register_handler(PULL, held)
        await server.start()
        async with RemotingClient() as client:
            first = asyncio.ensure_future(client.invoke(server.address, RemotingCommand.request(PULL), 5.0))
            await asyncio.wait_for(started.wait(), 2.0)
            closing = asyncio.ensure_future(server.close(grace=2.0))
            await asyncio.sleep(0)  # close() has stopped reading
            second = asyncio.ensure_future(client.invoke(server.address, RemotingCommand.request(PULL), 5.0))
            await asyncio.sleep(0.05)  # the second request reaches the server, which must not take it
            gate.set()
            assert (await first).remark == "done"
            await asyncio.wait_for(closing, 5.0)
            with pytest.raises(RemotingClosedError):
                await second
            assert len(calls) == 1

    arun(scenario())


# ---------------------------------------------------------------------------------- interop


def _captured(file: str, seq: int) -> dict[str, Any]:
    return next(line for line in wirecaps.load(file) if line["seq"] == seq)


@pytest.mark.parametrize(("request_seq", "response_seq"), [(11, 12), (13, 14)])
def test_captured_java_request_gets_the_java_answer(
    arun: Callable[..., Any], request_seq: int, response_seq: int
) -> None:
    """A real client's request bytes get the response a 4.9.4 broker gave (JSON and ROCKETMQ)."""
    request_line = _captured("errors.jsonl", request_seq)
    java_response = _captured("errors.jsonl", response_seq)

    async def scenario() -> None:
        async with RemotingServer() as server:
            reader, writer = await open_raw(server)
            writer.write(wirecaps.frame_bytes(request_line))
            response = await asyncio.wait_for(read_command(reader), 2.0)
            writer.close()
        assert response.code == java_response["header"]["code"] == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        assert response.remark == java_response["header"]["remark"]
        assert response.opaque == java_response["header"]["opaque"]
        assert response.flag == 1
        assert int(response.serialize_type) == java_response["serialize_type"]

    arun(scenario())


def test_captured_java_heartbeat_reaches_the_handler(arun: Callable[..., Any]) -> None:
    line = next(
        ln
        for ln in wirecaps.load("produce.jsonl")
        if ln["from"] == "client" and ln["header"].get("code") == 34
    )

    async def scenario() -> None:
        seen: list[RemotingCommand] = []

        def heartbeat(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
            seen.append(request)
            return request.response()

        async with RemotingServer() as server:
            server.register_handler(HEART_BEAT, heartbeat)
            reader, writer = await open_raw(server)
            writer.write(wirecaps.frame_bytes(line))
            response = await asyncio.wait_for(read_command(reader), 2.0)
            writer.close()
        assert response.code == 0
        assert response.opaque == line["header"]["opaque"]
        (request,) = seen
        assert request.body
        assert b"clientID" in request.body

    arun(scenario())


def test_every_captured_java_request_is_dispatched_and_answered(arun: Callable[..., Any]) -> None:
    """All 677 requests Java peers sent in the captures, pipelined on one connection."""
    requests = [
        line
        for _, line in wirecaps.all_frames()
        if line["to"] != "client" and not line["header"].get("flag", 0) & 1
    ]
    expected_answers = [
        (line["header"]["opaque"], line["serialize_type"])
        for line in requests
        if not line["header"]["flag"] & 2
    ]

    async def scenario() -> None:
        seen: list[int] = []

        def anything(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
            seen.append(request.code)
            return request.response(remark="ok")

        async with RemotingServer() as server:
            server.set_default_handler(anything)
            reader, writer = await open_raw(server)
            writer.write(b"".join(wirecaps.frame_bytes(line) for line in requests))
            answers = [await asyncio.wait_for(read_command(reader), 5.0) for _ in expected_answers]
            writer.close()
        assert seen == [line["header"]["code"] for line in requests]
        assert [(a.opaque, int(a.serialize_type)) for a in answers] == expected_answers
        assert all(a.is_response and a.remark == "ok" for a in answers)

    arun(scenario())


def test_captured_broker_pushes_reach_the_client_handlers(arun: Callable[..., Any]) -> None:
    """What 4.9.4 brokers sent to clients (NOTIFY_CONSUMER_IDS_CHANGED, GET_CONSUMER_RUNNING_INFO, ...)."""
    pushes = [
        line for _, line in wirecaps.all_frames() if line["to"] == "client" and not line["header"]["flag"] & 1
    ]
    two_way = [line["header"]["opaque"] for line in pushes if not line["header"]["flag"] & 2]
    assert len(pushes) == 23
    assert len(two_way) == 2

    async def scenario() -> None:
        answers: asyncio.Future[list[RemotingCommand]] = asyncio.get_running_loop().create_future()

        async def broker(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(b"".join(wirecaps.frame_bytes(line) for line in pushes))
            answers.set_result([await read_command(reader) for _ in two_way])
            writer.close()

        raw_broker = await asyncio.start_server(broker, "127.0.0.1", 0)
        addr = f"127.0.0.1:{raw_broker.sockets[0].getsockname()[1]}"
        got: list[int] = []

        def handle(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
            got.append(request.code)
            return request.response(remark=f"handled {request.code}")

        try:
            async with RemotingClient() as client:
                client.set_default_handler(handle)
                await client.get_connection(addr)
                replies = await asyncio.wait_for(answers, 5.0)
        finally:
            raw_broker.close()
            await raw_broker.wait_closed()
        assert got == [line["header"]["code"] for line in pushes]
        assert [r.opaque for r in replies] == two_way
        assert [r.remark for r in replies] == ["handled 307", "handled 326"]

    arun(scenario())


# ---------------------------------------------------------------------------------- blocking client


def test_blocking_client(arun: Callable[..., Any]) -> None:
    async def scenario() -> None:
        recorder = Recorder()
        release = asyncio.Event()

        async def push_first(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
            # ask the blocking client something before answering it
            info = await conn.invoke(RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO), 5.0)
            return request.response(remark=f"client said {info.remark}")

        async def slow(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
            await release.wait()
            return request.response(remark="late")

        def drop(conn: RemotingConnection, request: RemotingCommand) -> None:
            conn.abort("test")

        async with RemotingServer(listener=recorder) as server:
            server.register_handler(HEART_BEAT, echo)
            server.register_handler(PULL, push_first)
            server.register_handler(1001, slow)
            server.register_handler(1002, drop)

            def blocking_part() -> None:
                with BlockingRemotingClient(server.address) as client:
                    client.register_handler(
                        RequestCode.GET_CONSUMER_RUNNING_INFO, lambda c, req: req.response(remark="running")
                    )
                    r = client.invoke(RemotingCommand.request(HEART_BEAT, {"a": "1"}, b"body"), 2.0)
                    assert (r.ext_fields, r.body) == ({"a": "1"}, b"body")
                    r = client.invoke(RemotingCommand.request(PULL), 5.0)
                    assert r.remark == "client said running"
                    with pytest.raises(RemotingTimeoutError):
                        client.invoke(RemotingCommand.request(1001), 0.1)
                    server_loop.call_soon_threadsafe(release.set)
                    # the late response to 1001 is skipped, this one is ours
                    r = client.invoke(RemotingCommand.request(HEART_BEAT, body=b"after"), 2.0)
                    assert r.body == b"after"
                    client.invoke_oneway(RemotingCommand.request(HEART_BEAT))
                    with pytest.raises(RemotingClosedError, match="peer closed"):
                        client.invoke(RemotingCommand.request(1002), 2.0)
                    assert not client.is_connected
                    r = client.invoke(RemotingCommand.request(HEART_BEAT, body=b"again"), 2.0)  # reconnects
                    assert r.body == b"again"
                with pytest.raises(RemotingClosedError):
                    client.invoke(RemotingCommand.request(HEART_BEAT), 1.0)

            server_loop = asyncio.get_running_loop()
            await asyncio.to_thread(blocking_part)
            assert len(recorder.connected) == 2

    arun(scenario())


def test_blocking_client_errors() -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    with pytest.raises(RemotingConnectError):
        BlockingRemotingClient(f"127.0.0.1:{port}").invoke(RemotingCommand.request(HEART_BEAT), 1.0)
    # a peer that answers garbage
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    try:
        client = BlockingRemotingClient(f"127.0.0.1:{listener.getsockname()[1]}")
        client.connect()
        peer, _ = listener.accept()
        peer.sendall(b"\xff\xff\xff\xff....")
        with pytest.raises(RemotingClosedError, match="not a frame"):
            client.invoke(RemotingCommand.request(HEART_BEAT), 1.0)
        assert not client.is_connected
        peer.close()
        client.close()
    finally:
        listener.close()


def test_blocking_client_deadlines_use_the_kernels_timeouts() -> None:
    """The blocking client sets ``SO_RCVTIMEO``/``SO_SNDTIMEO`` only when a deadline needs a
    different one: each call still gives up at its own deadline, whether shorter or longer than
    the call's before, and a send that cannot finish in time drops the connection."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    try:
        with BlockingRemotingClient(f"127.0.0.1:{listener.getsockname()[1]}") as client:
            client.connect()
            peer, _ = listener.accept()  # reads nothing, answers nothing
            for timeout in (0.3, 1.0, 0.1, 0.1, 0.6):
                began = time.monotonic()
                with pytest.raises(RemotingTimeoutError, match="within"):
                    client.invoke(RemotingCommand.request(HEART_BEAT), timeout)
                waited = time.monotonic() - began
                assert timeout <= waited < timeout + 1.0, (timeout, waited)
                assert client.is_connected  # a late answer would be skipped: the stream is sound
            # more than the socket buffers hold, to a peer that does not read
            big = RemotingCommand.request(HEART_BEAT, body=b"x" * (12 * 1024 * 1024))
            with pytest.raises(RemotingTimeoutError, match="not sent in time"):
                client.invoke(big, 0.3)
            assert not client.is_connected
            peer.close()
    finally:
        listener.close()
