"""The frame relay and the chaos proxy between a real client and a real server on loopback."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import pytest

from rocketq.chaos.proxy import ChaosProxy, Fault
from rocketq.errors import RemotingClosedError, RemotingConnectError, RemotingTimeoutError
from rocketq.protocol import RemotingCommand, RequestCode
from rocketq.remoting import RemotingClient, RemotingConnection, RemotingServer, run
from rocketq.remoting.relay import FrameRelay, PassThrough, RelayThread

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

ECHO = 9999


async def _server(seen: list[RemotingCommand]) -> RemotingServer:
    server = RemotingServer()

    def echo(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        seen.append(request)
        return request.response(remark="echo", ext_fields=dict(request.ext_fields), body=request.body)

    async def beat(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        # answer, then tell the client its group changed, over the same connection
        notify = RemotingCommand.request(
            RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": "g"}, oneway=True
        )
        await conn.invoke_oneway(notify)
        return request.response()

    server.register_handler(ECHO, echo)
    server.register_handler(RequestCode.HEART_BEAT, beat)
    await server.start()
    return server


def test_frames_cross_the_relay_unchanged_both_ways() -> None:
    async def scenario() -> None:
        seen: list[RemotingCommand] = []
        server = await _server(seen)
        relay = FrameRelay(PassThrough())
        addr = await relay.listen(("c1", "broker-a"), server.address)
        notified = asyncio.Event()
        async with RemotingClient() as client:
            client.register_handler(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, lambda conn, req: notified.set())
            request = RemotingCommand.request(ECHO, {"b": "2", "a": "1"}, b"\x00body\xff")
            response = await client.invoke(addr, request, 5.0)
            assert (response.remark, response.ext_fields, response.body) == (
                "echo",
                {"b": "2", "a": "1"},
                b"\x00body\xff",
            )
            assert list(seen[0].ext_fields) == ["b", "a"]  # order kept: re-encoded byte for byte
            await client.invoke(addr, RemotingCommand.request(RequestCode.HEART_BEAT), 5.0)
            await asyncio.wait_for(notified.wait(), 5.0)  # the server's own request came through
            assert [link.tag for link in relay.links] == [("c1", "broker-a")]
        await relay.close()
        await server.close()

    run(scenario())


def test_faults_drop_delay_and_cut() -> None:
    async def scenario() -> None:
        server = await _server([])
        proxy = ChaosProxy()
        relay = FrameRelay(proxy)
        addr = await relay.listen(("c1", "broker-a"), server.address)
        async with RemotingClient() as client:
            echo = RemotingCommand.request(ECHO, {"k": "v"})
            await client.invoke(addr, echo, 5.0)
            proxy.activate("drop", Fault(kind="drop", code=ECHO, direction="to-server"), time.monotonic())
            with pytest.raises(RemotingTimeoutError):
                await client.invoke(addr, RemotingCommand.request(ECHO), 0.3)
            proxy.heal("drop", time.monotonic())
            proxy.activate("slow", Fault(kind="delay", code=ECHO, seconds=0.4), time.monotonic())
            began = time.monotonic()
            await client.invoke(addr, RemotingCommand.request(ECHO), 5.0)
            assert time.monotonic() - began >= 0.8  # the request and its answer, 0.4 s each
            proxy.heal("slow", time.monotonic())
            conn = await client.get_connection(addr)
            cut = Fault(kind="cut", consumer="c1", target="broker-a")
            proxy.activate("cut", cut, time.monotonic())
            assert relay.close_links(proxy.hits(cut)) == 1
            await asyncio.wait_for(conn.wait_closed(), 5.0)
            with pytest.raises((RemotingClosedError, RemotingConnectError, RemotingTimeoutError)):
                await client.invoke(addr, RemotingCommand.request(ECHO), 1.0)  # refused at once
            proxy.heal("cut", time.monotonic())
            assert (await client.invoke(addr, RemotingCommand.request(ECHO), 5.0)).remark == "echo"
        kinds = [e.what for e in proxy.snapshot(time.monotonic())["events"]]
        assert kinds[:2] == ["dropped", "delayed"]
        assert "refused" in kinds
        await relay.close()
        await server.close()

    run(scenario())


def test_a_garbage_stream_closes_only_its_own_link_and_an_unreachable_upstream_closes_the_client() -> None:
    async def scenario() -> None:
        server = await _server([])
        relay = FrameRelay(PassThrough())
        addr = await relay.listen("good", server.address)
        host, port = addr.rsplit(":", 1)
        loop = asyncio.get_running_loop()
        with socket.create_connection((host, int(port))) as raw:
            raw.sendall(b"\x00\x00\x00\x02\xff\xff")  # a length below the minimum: not a frame
            raw.settimeout(5.0)
            assert await loop.run_in_executor(None, raw.recv, 16) == b""  # the relay closed it
        async with RemotingClient() as client:
            assert (await client.invoke(addr, RemotingCommand.request(ECHO), 5.0)).remark == "echo"
            free = socket.socket()
            free.bind(("127.0.0.1", 0))
            dead = f"127.0.0.1:{free.getsockname()[1]}"
            free.close()  # nothing listens there now
            nowhere = await relay.listen("dead", dead)
            with pytest.raises((RemotingClosedError, RemotingTimeoutError)):
                await client.invoke(nowhere, RemotingCommand.request(ECHO), 3.0)
        await relay.close()
        await server.close()

    run(scenario())


def test_relay_thread_serves_blocking_callers() -> None:
    async def serve(ready: asyncio.Event, stop: asyncio.Event, box: list[str]) -> None:
        server = await _server([])
        box.append(server.address)
        ready.set()
        await stop.wait()
        await server.close()

    loop = asyncio.new_event_loop()
    ready, stop = asyncio.Event(), asyncio.Event()
    box: list[str] = []
    task = loop.create_task(serve(ready, stop, box))
    loop.run_until_complete(ready.wait())
    runner = threading.Thread(target=loop.run_until_complete, args=(task,), daemon=True)
    with RelayThread(PassThrough()) as relay:
        addr = relay.listen("t", box[0])
        runner.start()

        async def ask() -> str | None:
            async with RemotingClient() as client:
                response = await client.invoke(addr, RemotingCommand.request(ECHO), 5.0)
                assert relay.close_links(lambda link: link.tag == "t") == 1
                return response.remark

        assert run(ask()) == "echo"
    loop.call_soon_threadsafe(stop.set)
    runner.join(10.0)
    loop.close()
