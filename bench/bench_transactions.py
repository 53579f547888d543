"""Transactional sends against plain sends, same broker, same run, through the client API.

    python bench/bench_transactions.py [--duration SECONDS] [--threads N] [--rounds R]

A ``rocketq server`` runs in a subprocess (temp data dir, free ports). This process drives it
from ``N`` threads (default 32) sharing one producer, 1 KiB bodies over 8 queues, each case for
``--duration`` seconds:

* **plain**: ``Producer.send`` (``DefaultMQProducer.send``), each thread waiting for its answer;
* **transactional**: ``TransactionProducer.send_in_transaction`` (``TransactionMQProducer``):
  the half message (``TRAN_MSG=true``, ``PGROUP``) and its answer, the local transaction (instant
  here: it answers ``COMMIT_MESSAGE``), then END_TRANSACTION commit *oneway*. The rate counts
  transactions whose committed message is readable in the real topic: the run ends when the
  last one is.

Each transaction costs the broker two requests and three appends (half message, committed
message, op record) and a message-index look-up for exactly-once, against one request and one
append for a plain send; the client, one send and one oneway request handed to its event loop.
The ratio below is transactions/s over plain sends/s.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path

from rocketq import Admin, ClientConfig, LocalTransactionState, Message, Producer, TransactionProducer
from rocketq.embedded import spawn_server

QUEUES = 8
BODY = bytes(1024)


def _readable(admin: Admin, topic: str) -> int:
    return sum(q.max_offset for q in admin.topic_stats(topic).queues)


def _case(
    config: ClientConfig, admin: Admin, topic: str, *, transactional: bool, threads: int, duration: float
) -> tuple[int, float, list[float]]:
    admin.create_topic(topic, queues=QUEUES)
    commit = LocalTransactionState.COMMIT_MESSAGE
    producer = (
        TransactionProducer("bench_tx_group", client_config=config, checker=lambda m: commit)
        if transactional
        else Producer("bench_plain_group", client_config=config)
    ).start()
    done = 0
    lock = threading.Lock()
    latencies: list[float] = []
    try:
        producer.send(Message(topic, BODY))  # route and connection, before the clock starts
        stop_at = time.perf_counter() + duration
        t0 = time.perf_counter()

        def sender() -> None:
            nonlocal done
            mine: list[float] = []
            while time.perf_counter() < stop_at:
                start = time.perf_counter()
                if isinstance(producer, TransactionProducer):
                    producer.send_in_transaction(Message(topic, BODY), execute=lambda m, a: commit)
                else:
                    producer.send(Message(topic, BODY))
                mine.append(time.perf_counter() - start)
            with lock:
                done += len(mine)
                latencies.extend(mine)

        workers = [threading.Thread(target=sender) for _ in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        while _readable(admin, topic) < done + 1:  # the last commits are on their way
            time.sleep(0.005)
        return done, time.perf_counter() - t0, latencies
    finally:
        producer.shutdown()


def _lat(latencies: list[float]) -> str:
    ordered = sorted(latencies)
    p50, p99 = ordered[len(ordered) // 2], ordered[int(len(ordered) * 0.99)]
    return f"p50 {p50 * 1000:5.2f} ms  p99 {p99 * 1000:5.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration", type=float, default=4.0, help="seconds per case (default 4)")
    parser.add_argument("--threads", type=int, default=32, help="sending threads (default 32)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of both cases (best is kept)")
    args = parser.parse_args()
    best: dict[str, tuple[float, str]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-tx-") as tmp, spawn_server(Path(tmp) / "data") as server:
        config = ClientConfig(namesrv=server.namesrv_addr, client_ip="127.0.0.1", instance_name="bench")
        with Admin(server.namesrv_addr) as admin:
            for r in range(args.rounds):
                for name, transactional in (("plain", False), ("transactional", True)):
                    n, secs, lat = _case(
                        config, admin, f"BenchTx{name}{r}", transactional=transactional,
                        threads=args.threads, duration=args.duration,
                    )  # fmt: skip
                    rate = n / secs
                    if rate > best.get(name, (0.0, ""))[0]:
                        best[name] = (rate, _lat(lat))
    print(f"{args.threads} sending threads, 1 KiB, best of {args.rounds} rounds of {args.duration:g} s")
    for name in ("plain", "transactional"):
        rate, latency = best[name]
        unit = "sends/s" if name == "plain" else "transactions/s (half + commit, committed readable)"
        print(f"{name:14} {rate:>9,.0f} {unit}   {latency} (call returned)")
    print(f"transactional / plain: {best['transactional'][0] / best['plain'][0]:.2f}x")


if __name__ == "__main__":
    main()
