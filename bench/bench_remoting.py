"""Loopback request/response round trips through rocketq's transport, against same-run baselines.

    python bench/bench_remoting.py [--quick]

Client and server share one process and one event loop (the usual loopback setup), so each figure
is the whole cost of a round trip: encode, write, read, decode, dispatch, answer, and back. Every
figure is printed beside a baseline measured in the same run:

* **raw echo**: the same request bytes through bare ``asyncio.Protocol`` objects that only split
  frames by their length word and echo them (no header encoding or decoding, no dispatch): the
  floor the event loop sets; **streams echo** is the same echo server written with
  ``StreamReader.readexactly``, which isolates Protocol against streams from the codec's cost;
* **streams server**: the same codec and handler behind an ``asyncio.start_server`` /
  ``StreamReader`` loop, the alternative to our ``Protocol``-based server;
* **async handler**: the same handler written as a coroutine, which costs a task per request
  (the sync fast path avoids it).

Each case runs sequentially (one request at a time) and 32-way concurrent (32 callers sharing the
connection), on asyncio's loop and on uvloop when it is installed. Rates are round trips per
second of process CPU time (client and server together), best of several runs, so that other
work on a shared machine does not skew them as wall-clock rates would.
"""

from __future__ import annotations

import asyncio
import struct
import sys
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from functools import partial
from typing import Any

from rocketq.protocol import FrameDecoder, RemotingCommand, RequestCode, encode_frame
from rocketq.remoting import BlockingRemotingClient, RemotingClient, RemotingConnection, RemotingServer
from rocketq.remoting.loop import new_event_loop, uvloop_available

CONCURRENCY = 32

# A SEND_MESSAGE_V2 request shaped like the captured Java producer's (single-letter header fields).
REQUEST_FIELDS = {
    "a": "wire_producer_group",
    "b": "BenchTopic",
    "c": "TBW102",
    "d": "4",
    "e": "1",
    "f": "0",
    "g": "1795000000000",
    "h": "0",
    "i": "TAGS\u0001TagA\u0002KEYS\u0001order-1001\u0002WAIT\u0001true\u0002UNIQ_KEY\u0001"
    "FD0000000000000000000000000000021B2E4E0E2F2A68BC77610000\u0002",
    "j": "0",
    "k": "false",
    "m": "false",
    "n": "broker-a",
}
REQUEST_BODY = b"hello rocketq " * 16
RESPONSE_FIELDS = {
    "msgId": "7F00000100002A9F0000000000000000",
    "queueId": "1",
    "queueOffset": "42",
    "MSG_REGION": "DefaultRegion",
    "TRACE_ON": "true",
}


def make_request() -> RemotingCommand:
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, dict(REQUEST_FIELDS), REQUEST_BODY)


def sync_handler(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
    return request.response(ext_fields=dict(RESPONSE_FIELDS))


async def async_handler(conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
    return request.response(ext_fields=dict(RESPONSE_FIELDS))


# ---------------------------------------------------------------------------------- drivers


async def drive(call: Callable[[], Awaitable[Any]], total: int, concurrency: int) -> float:
    """Round trips per second of ``call`` run ``total`` times by ``concurrency`` callers."""
    per_caller = total // concurrency

    async def caller() -> None:
        for _ in range(per_caller):
            await call()

    await call()  # warm up: connect
    start = time.process_time()
    await asyncio.gather(*(caller() for _ in range(concurrency)))
    return per_caller * concurrency / (time.process_time() - start)


async def rocketq_rate(total: int, concurrency: int, handler: Any) -> float:
    async with RemotingServer() as server, RemotingClient() as client:
        server.register_handler(RequestCode.SEND_MESSAGE_V2, handler)
        addr = server.address

        async def call() -> None:
            await client.invoke(addr, make_request(), 5.0)

        return await drive(call, total, concurrency)


async def streams_server_rate(total: int, concurrency: int) -> float:
    """Same codec and handler, served by a StreamReader loop instead of our Protocol."""

    served = asyncio.Event()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        decoder = FrameDecoder()
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    return
                decoder.receive_data(data)
                out = []
                while (cmd := decoder.next_command()) is not None:
                    out.append(encode_frame(sync_handler(None, cmd)))  # type: ignore[arg-type]
                writer.write(b"".join(out))
                await writer.drain()
        finally:
            writer.close()
            served.set()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with RemotingClient() as client:
            addr = f"127.0.0.1:{port}"

            async def call() -> None:
                await client.invoke(addr, make_request(), 5.0)

            return await drive(call, total, concurrency)
    finally:
        await served.wait()  # the client closed its connection on leaving the block
        server.close()
        await server.wait_closed()


class _EchoServer(asyncio.Protocol):
    """Splits frames by their length word and writes each one back, untouched."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: asyncio.Transport = transport  # type: ignore[assignment]
        self.buffer = bytearray()

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        buffer += data
        end = 0
        while len(buffer) - end >= 4:
            (length,) = struct.unpack_from(">i", buffer, end)
            if len(buffer) - end < length + 4:
                break
            end += length + 4
        if end:
            self.transport.write(bytes(buffer[:end]))
            del buffer[:end]


class _EchoClient(asyncio.Protocol):
    """Sends frames and resolves one future per frame echoed back (echo keeps the order)."""

    def __init__(self) -> None:
        self.waiters: deque[asyncio.Future[None]] = deque()
        self.buffer = bytearray()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: asyncio.Transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        buffer += data
        while len(buffer) >= 4:
            (length,) = struct.unpack_from(">i", buffer, 0)
            if len(buffer) < length + 4:
                break
            del buffer[: length + 4]
            self.waiters.popleft().set_result(None)

    async def call(self, frame: bytes) -> None:
        waiter = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        self.transport.write(frame)
        await waiter


async def raw_echo_rate(total: int, concurrency: int) -> float:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(_EchoServer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    transport, client = await loop.create_connection(_EchoClient, "127.0.0.1", port)
    frame = encode_frame(make_request())
    try:
        return await drive(lambda: client.call(frame), total, concurrency)
    finally:
        transport.close()
        server.close()
        await server.wait_closed()


async def streams_echo_rate(total: int, concurrency: int) -> float:
    """The raw echo server written with StreamReader (readexactly per frame) instead of a Protocol."""

    served = asyncio.Event()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                prefix = await reader.readexactly(4)
                (length,) = struct.unpack(">i", prefix)
                writer.write(prefix + await reader.readexactly(length))
                await writer.drain()
        except asyncio.IncompleteReadError:
            pass
        finally:
            writer.close()
            served.set()

    loop = asyncio.get_running_loop()
    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    transport, client = await loop.create_connection(_EchoClient, "127.0.0.1", port)
    frame = encode_frame(make_request())
    try:
        return await drive(lambda: client.call(frame), total, concurrency)
    finally:
        transport.close()
        await served.wait()
        server.close()
        await server.wait_closed()


def blocking_rate(total: int) -> float:
    """The blocking client, sequential, against our server running in another thread's loop."""
    ready = threading.Event()
    box: dict[str, Any] = {}

    async def serve() -> None:
        async with RemotingServer() as server:
            server.register_handler(RequestCode.SEND_MESSAGE_V2, sync_handler)
            box["addr"], box["stop"] = server.address, asyncio.Event()
            box["loop"] = asyncio.get_running_loop()
            ready.set()
            await box["stop"].wait()

    thread = threading.Thread(target=lambda: asyncio.run(serve()))
    thread.start()
    ready.wait()
    try:
        with BlockingRemotingClient(box["addr"]) as client:
            client.invoke(make_request())
            start = time.process_time()  # both threads: the client's and the server's
            for _ in range(total):
                client.invoke(make_request())
            return total / (time.process_time() - start)
    finally:
        box["loop"].call_soon_threadsafe(box["stop"].set)
        thread.join()


def codec_only_rate(total: int) -> float:
    """The codec's share of a round trip: encode and decode the request and the response, no I/O."""
    decoder = FrameDecoder()
    start = time.process_time()
    for _ in range(total):
        decoder.receive_data(encode_frame(make_request()))
        request = decoder.next_command()
        assert request is not None
        decoder.receive_data(encode_frame(sync_handler(None, request)))  # type: ignore[arg-type]
        assert decoder.next_command() is not None
    return total / (time.process_time() - start)


# ---------------------------------------------------------------------------------- report


def _run(coro: Coroutine[Any, Any, float], use_uvloop: bool) -> float:
    loop = new_event_loop(use_uvloop=use_uvloop)
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


def _best(make: Callable[[], Coroutine[Any, Any, float]], use_uvloop: bool, repeat: int) -> float:
    return max(_run(make(), use_uvloop) for _ in range(repeat))


def bench_round_trips(quick: bool = False) -> None:
    """Print the loopback round-trip section (the bench_codec section calls this)."""
    total = 2_000 if quick else 10_000
    repeat = 2 if quick else 5
    loops = [("asyncio", False)] + ([("uvloop", True)] if uvloop_available() else [])
    print("\n== loopback request/response round trips (SEND_MESSAGE_V2-shaped, 256-byte body) ==")
    print(f"{total} round trips per run, best of {repeat}, per CPU second; client and server in one loop\n")
    header = f"{'loop':8} {'mode':12} {'raw echo':>10} {'streams echo':>12} {'rocketq':>10} {'ratio':>6}"
    header += f" {'streams srv':>11}"
    header += f" {'async hdlr':>10} {'sync/async':>10}"
    print(header)
    rates: dict[tuple[str, str], float] = {}
    costs: list[str] = []
    codec = max(codec_only_rate(total) for _ in range(repeat))
    for loop_name, use_uvloop in loops:
        for mode, concurrency in (("sequential", 1), (f"{CONCURRENCY}-way", CONCURRENCY)):
            raw = _best(partial(raw_echo_rate, total, concurrency), use_uvloop, repeat)
            raw_streams = _best(partial(streams_echo_rate, total, concurrency), use_uvloop, repeat)
            ours = _best(partial(rocketq_rate, total, concurrency, sync_handler), use_uvloop, repeat)
            streams = _best(partial(streams_server_rate, total, concurrency), use_uvloop, repeat)
            coro = _best(partial(rocketq_rate, total, concurrency, async_handler), use_uvloop, repeat)
            rates[(loop_name, mode)] = ours
            costs.append(
                f"{loop_name:8} {mode:12} {1e6 / ours:6.1f} us per round trip, "
                f"of which the codec's encode+decode of both frames {100 * ours / codec:3.0f}%"
            )
            print(
                f"{loop_name:8} {mode:12} {raw:>8.0f}/s {raw_streams:>10.0f}/s {ours:>8.0f}/s"
                f" {ours / raw:>6.2f} {streams:>9.0f}/s"
                f" {coro:>8.0f}/s {ours / coro:>10.2f}"
            )
    print(f"\nCPU per round trip (the codec alone, no I/O: {codec:.0f} round trips/s):")
    for line in costs:
        print(line)
    if ("uvloop", "sequential") in rates:
        for mode in ("sequential", f"{CONCURRENCY}-way"):
            print(
                f"uvloop / asyncio, rocketq {mode}: {rates[('uvloop', mode)] / rates[('asyncio', mode)]:.2f}x"
            )
    blocking = max(blocking_rate(total // 2) for _ in range(repeat))
    print(
        f"blocking client, sequential: {blocking:.0f}/s "
        f"({blocking / rates[('asyncio', 'sequential')]:.2f}x the asyncio client's sequential rate)"
    )
    print(
        "\nratio = rocketq / raw echo on the same loop; 'streams srv' = our client against a StreamReader "
        "server with the same codec; sync/async = sync-handler fast path over a coroutine handler;\n"
        "raw echo / streams echo = what a Protocol saves over StreamReader at the I/O layer"
    )


def section_round_trips(seconds: float) -> None:
    """The round-trip section in ``bench_codec.py``'s form (a time budget per measurement)."""
    bench_round_trips(quick=seconds < 0.5)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    bench_round_trips(quick="--quick" in args)


if __name__ == "__main__":
    main()
