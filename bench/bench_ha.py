"""The cost of a slave: send throughput without one, with an async master's, with a sync master's.

    python bench/bench_ha.py [--duration SECONDS] [--concurrency N] [--flush async|sync] [--repeat N]

Three ``rocketq server`` processes in turn (free loopback ports, temp data dirs, same flush mode):
``--role async-master`` alone (the baseline, today's broker), ``--role async-master --with-slave``
and ``--role sync-master --with-slave`` (the slave in the same process, streamed over the HA
link on loopback). Each is driven as ``bench/bench_broker.py`` drives a broker: ``N``
concurrent senders (default 32) of 1 KiB SEND_MESSAGE_V2 requests over 8 queues, for
``--duration`` seconds after a warm-up; the three are interleaved ``--repeat`` times (3) and the
median rate of each is printed with its p50/p99 latency and as a ratio of the baseline's
median. Under sync-master every answer waits for the slave's ack of the message's bytes (the
group commit over the link: one ack answers every send below it).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_broker import QUEUES, _create_topic, _drive, _lat, _send_fields
from rocketq.embedded import spawn_server
from rocketq.protocol import RemotingCommand, RequestCode
from rocketq.remoting import RemotingClient

SETUPS = (
    ("no slave (async-master)", ("--role", "async-master")),
    ("async-master + slave", ("--role", "async-master", "--with-slave")),
    ("sync-master + slave", ("--role", "sync-master", "--with-slave")),
)


async def _measure(addr: str, concurrency: int, duration: float) -> tuple[float, list[float]]:
    body = bytes(1024)
    async with RemotingClient() as client:
        await _create_topic(client, addr)

        def single(w: int, i: int) -> tuple[RemotingCommand, int]:
            fields = _send_fields((w + i) % QUEUES, False, w * 1_000_000 + i)
            return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, fields, body), 1

        await _drive(client, addr, concurrency, 1.0, single)  # warm up (and let the slave link)
        n, secs, lat = await _drive(client, addr, concurrency, duration, single)
    return n / secs, lat


def _one(extra: tuple[str, ...], flush: str, concurrency: int, duration: float) -> tuple[float, list[float]]:
    with tempfile.TemporaryDirectory(prefix="bench-ha-") as tmp:
        server = spawn_server(Path(tmp) / "data", flush=flush, extra_args=extra)  # type: ignore[arg-type]
        try:
            if "--with-slave" in extra:
                asyncio.run(asyncio.sleep(2.0))  # the slave registers and links
            return asyncio.run(_measure(server.broker_addr, concurrency, duration))
        finally:
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--flush", choices=("async", "sync"), default="async")
    parser.add_argument(
        "--repeat", type=int, default=3, help="rounds of the three setups, interleaved (medians are shown)"
    )
    args = parser.parse_args()
    rates: dict[str, list[float]] = {name: [] for name, _ in SETUPS}
    lats: dict[str, list[float]] = {name: [] for name, _ in SETUPS}
    for _ in range(args.repeat):
        for name, extra in SETUPS:
            rate, lat = _one(extra, args.flush, args.concurrency, args.duration)
            rates[name].append(rate)
            lats[name].extend(lat)
    baseline = statistics.median(rates[SETUPS[0][0]])
    for name, _ in SETUPS:
        rate = statistics.median(rates[name])
        spread = ", ".join(f"{r:,.0f}" for r in rates[name])
        print(
            f"{args.flush:5} flush  {name:26} {rate:>9,.0f} msg/s of 1 KiB x{args.concurrency} "
            f"(runs: {spread})  {_lat(lats[name])}  = {rate / baseline:4.2f} of no slave",
            flush=True,
        )


if __name__ == "__main__":
    main()
