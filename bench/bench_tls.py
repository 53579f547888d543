"""What TLS costs: sends/s, round-trip latency and connecting, with TLS against without, same run.

One ``rocketq server`` subprocess in TLS **permissive** mode serves both: a plaintext client and a
TLS client talk to the same broker, so the only difference between the two is TLS. Rounds
alternate which client goes first (the shared machine's load drifts); the ratio of each round is
TLS over plaintext, and the median round is reported with the range.

* **sends/s**: 1 KiB ``SEND_MESSAGE_V2`` pipelined 32 deep from one blocking client (as
  ``bench_acl.py`` measures), and 16 KiB ones (TLS's cost grows with the bytes);
* **round trip**: one 1 KiB send at a time, blocking client: median and p99 in microseconds;
* **async round trip**: the same through the asyncio ``RemotingClient`` (the producer's loop);
* **connect**: a new connection and its first request (TLS: the handshake, ECDSA P-256 from
  ``rocketq tls make-test-certs``, TLS 1.3).

Run: ``python bench/bench_tls.py`` (``--sends``, ``--rounds``, ``--quick``).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from rocketq.embedded import spawn_server
from rocketq.protocol import RemotingCommand, ResponseCode, calls
from rocketq.protocol.headers import SendMessageRequestHeaderV2
from rocketq.remoting import RemotingClient, RemotingClientConfig, TlsClientConfig
from rocketq.remoting.blocking import BlockingRemotingClient
from rocketq.remoting.certs import make_test_certs

TOPIC = "BenchTls"
#: SYSTEM_BUSY answers seen, by TLS or not (counted, not retried: sends/s counts stored sends)
BUSY = {False: 0, True: 0}


def _send(body: bytes) -> RemotingCommand:
    header = SendMessageRequestHeaderV2(
        producer_group="BenchPG",
        topic=TOPIC,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=0,
        sys_flag=0,
        born_timestamp=int(time.time() * 1000),
        flag=0,
        properties="UNIQ_KEY\u00017F0000010000000000000000\u0002WAIT\u0001true\u0002",
    )
    return calls.send_message_request(header, body)


def pipelined(client: BlockingRemotingClient, sends: int, size: int, window: int = 32) -> float:
    requests = [_send(b"x" * size) for _ in range(sends)]  # built before the clock starts
    start = time.perf_counter()
    tickets = []
    codes: list[int] = []
    for req in requests:
        tickets.append(client.send_request(req))
        if len(tickets) >= window:
            codes.append(client.receive(tickets.pop(0)).code)
    codes.extend(client.receive(t).code for t in tickets)
    elapsed = time.perf_counter() - start
    busy = codes.count(ResponseCode.SYSTEM_BUSY)  # the broker's fast failure on a loaded machine
    assert codes.count(ResponseCode.SUCCESS) + busy == sends, set(codes)
    BUSY[client.ssl_enabled] += busy
    return (sends - busy) / elapsed


def round_trips(client: BlockingRemotingClient, n: int) -> list[float]:
    requests = [_send(b"x" * 1024) for _ in range(n)]
    out = []
    for req in requests:
        start = time.perf_counter()
        assert client.invoke(req).code == ResponseCode.SUCCESS
        out.append(time.perf_counter() - start)
    return out


def async_round_trips(addr: str, tls: TlsClientConfig, n: int) -> list[float]:
    async def run() -> list[float]:
        async with RemotingClient(config=RemotingClientConfig(tls=tls)) as client:
            await client.invoke(addr, _send(b"x" * 1024))  # connected before the clock starts
            out = []
            for _ in range(n):
                req = _send(b"x" * 1024)
                start = time.perf_counter()
                assert (await client.invoke(addr, req)).code == ResponseCode.SUCCESS
                out.append(time.perf_counter() - start)
            return out

    return asyncio.run(run())


def connects(addr: str, tls: TlsClientConfig | None, n: int) -> list[float]:
    out = []
    for _ in range(n):
        req = _send(b"x")
        start = time.perf_counter()
        with BlockingRemotingClient(addr, tls=tls) as client:
            client.invoke(req)
        out.append(time.perf_counter() - start)
    return out


def _p(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def _rounds(
    rounds: int, plain: Callable[[], float], secure: Callable[[], float]
) -> tuple[list[float], list[float], list[float]]:
    """``rounds`` of both, alternating which goes first; (plain figures, TLS figures, TLS/plain)."""
    plains: list[float] = []
    tlss: list[float] = []
    ratios: list[float] = []
    for i in range(rounds):
        if i % 2:
            tlss.append(secure())
            plains.append(plain())
        else:
            plains.append(plain())
            tlss.append(secure())
        ratios.append(tlss[-1] / plains[-1])
    return plains, tlss, ratios


def _line(what: str, unit: str, plains: list[float], tlss: list[float], ratios: list[float]) -> None:
    plain, secure = statistics.median(plains), statistics.median(tlss)
    print(
        f"{what:<34} plain {plain:>10,.0f} {unit:<5} TLS {secure:>10,.0f} {unit:<5} "
        f"TLS/plain median {statistics.median(ratios):.2f} "
        f"(rounds {min(ratios):.2f}-{max(ratios):.2f}, n={len(ratios)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sends", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="fewer sends and rounds (a smoke run)")
    args = parser.parse_args()
    sends, rounds = (300, 2) if args.quick else (args.sends, args.rounds)
    with tempfile.TemporaryDirectory() as tmp:
        certs = make_test_certs(Path(tmp) / "certs")
        tls = TlsClientConfig(enable=True, trust_cert_path=str(certs.ca))
        server_args = (
            *("--tls-mode", "permissive", "--tls-cert", str(certs.server_cert)),
            *("--tls-key", str(certs.server_key), "--tls-ca", str(certs.ca)),
        )
        with (
            spawn_server(Path(tmp) / "data", extra_args=server_args) as server,
            BlockingRemotingClient(server.broker_addr) as c_plain,
            BlockingRemotingClient(server.broker_addr, tls=tls) as c_tls,
        ):
            addr = server.broker_addr
            assert c_plain.invoke(calls.create_topic(TOPIC, 4, 4).request).code == ResponseCode.SUCCESS
            for client in (c_plain, c_tls):
                pipelined(client, 500, 1024)  # warm up
            print(f"one rocketq server (TLS permissive) at {addr}; {rounds} alternating rounds")
            for size in (1024, 16 * 1024):
                n = sends if size == 1024 else max(sends // 4, 100)
                p, t, r = _rounds(
                    rounds, partial(pipelined, c_plain, n, size), partial(pipelined, c_tls, n, size)
                )
                _line(f"sends/s, {size // 1024} KiB, 32 deep", "/s", p, t, r)
            trips = max(sends // 4, 100)
            latency_cases: list[tuple[str, Callable[[], list[float]], Callable[[], list[float]]]] = [
                (
                    "round trip, blocking, 1 KiB",
                    lambda: round_trips(c_plain, trips),
                    lambda: round_trips(c_tls, trips),
                ),
                (
                    "round trip, asyncio, 1 KiB",
                    lambda: async_round_trips(addr, TlsClientConfig(), trips),
                    lambda: async_round_trips(addr, tls, trips),
                ),
                (
                    "connect + first request",
                    lambda: connects(addr, None, max(trips // 10, 20)),
                    lambda: connects(addr, tls, max(trips // 10, 20)),
                ),
            ]
            for name, plain_fn, tls_fn in latency_cases:
                latency(name, rounds, plain_fn, tls_fn)
            print(f"SYSTEM_BUSY answers (not counted as sends): plain {BUSY[False]}, TLS {BUSY[True]}")


def latency(
    name: str, rounds: int, plain_fn: Callable[[], list[float]], tls_fn: Callable[[], list[float]]
) -> None:
    """Median and p99 of each round's samples, in microseconds, TLS against plaintext."""
    runs: list[tuple[list[float], list[float]]] = []
    for i in range(rounds):  # alternate which goes first
        if i % 2:
            secure = tls_fn()
            runs.append((plain_fn(), secure))
        else:
            plain = plain_fn()
            runs.append((plain, tls_fn()))
    for label, stat in (("median", statistics.median), ("p99", lambda v: _p(v, 0.99))):
        plains = [stat(a) * 1e6 for a, _ in runs]
        tlss = [stat(b) * 1e6 for _, b in runs]
        _line(f"{name}, {label}", "us", plains, tlss, [t / p for p, t in zip(plains, tlss, strict=True)])


if __name__ == "__main__":
    main()
