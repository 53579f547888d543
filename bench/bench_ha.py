"""The cost of a slave: send throughput without one, with an async master's, with a sync master's.

    python bench/bench_ha.py [--duration SECONDS] [--concurrency N] [--flush async|sync]

Three ``rocketq server`` processes in turn (free loopback ports, temp data dirs, same flush mode):
``--role async-master`` alone (the baseline, today's broker), ``--role async-master --with-slave``
and ``--role sync-master --with-slave`` (the slave in the same process, streamed over the HA
link on loopback). Each is driven as ``bench/bench_broker.py`` drives a broker: ``N``
concurrent senders (default 32) of 1 KiB SEND_MESSAGE_V2 requests over 8 queues, for
``--duration`` seconds after a warm-up; rate, p50/p99 latency, and the rate as a ratio of the
baseline measured in the same run. Under sync-master every answer waits for the slave's ack of
the message's bytes (the group commit over the link: one ack answers every send below it).
"""

from __future__ import annotations

import argparse
import asyncio
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--flush", choices=("async", "sync"), default="async")
    args = parser.parse_args()
    baseline = None
    for name, extra in SETUPS:
        with tempfile.TemporaryDirectory(prefix="bench-ha-") as tmp:
            server = spawn_server(Path(tmp) / "data", flush=args.flush, extra_args=extra)
            try:
                if "--with-slave" in extra:
                    asyncio.run(asyncio.sleep(2.0))  # the slave registers and links
                rate, lat = asyncio.run(_measure(server.broker_addr, args.concurrency, args.duration))
            finally:
                server.stop()
        baseline = baseline or rate
        print(
            f"{args.flush:5} flush  {name:26} {rate:>9,.0f} msg/s of 1 KiB x{args.concurrency}  "
            f"{_lat(lat)}  = {rate / baseline:4.2f} of no slave",
            flush=True,
        )


if __name__ == "__main__":
    main()
