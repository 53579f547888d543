"""The Python client against redis-py on Redis Streams, in the same run (ratios are the figures).

    python bench/bench_vs_redis.py [--quick] [--messages N] [--size BYTES] [--batch K]

Needs a ``redis-server`` binary and the ``redis`` Python package, neither of which rocketq
depends on (``apt-get install redis-server``, ``pip install redis``); without them it says so
in one line and exits 0.

It starts both servers itself, each in its own temp dir on a free 127.0.0.1 port, and stops
both by pid at the end:

* ``redis-server`` with ``appendonly yes``, ``appendfsync everysec`` and no RDB snapshots: every
  write goes to the append-only file and is fsynced once a second, which is what rocketq's
  ``--flush async`` does with its commit log (written at once, flushed in the background);
* ``rocketq server --flush async`` (broker and name server in one child process).

Then, with ``--size`` byte bodies (1 KiB by default), one thread, one client each:

* **send**: ``Producer.send`` one message at a time (blocking; ``WAIT=true``, as a new user
  calls it) against ``XADD`` one command at a time;
* the same from a producer with ``ProducerConfig(thread_sockets=False)``: the blocking send's
  first attempt handed to the client's loop, as before the thread sockets (same run, same XADD);
* **send x N threads** (``--threads``, 32): ``N`` threads calling ``Producer.send`` (both ways)
  against ``N`` threads calling ``XADD`` through one redis-py client (a pool of ``N``
  connections), for a few seconds each;
* **send_batch**: ``Producer.send_batch`` of ``--batch`` messages against a redis-py pipeline
  (no transaction) of the same number of ``XADD``;
* **consume**: a ``LitePullConsumer`` assigned the topic's queues, ``poll`` until it has read the
  ``--messages`` sent by ``send_batch`` (32 per pull), against ``XRANGE`` in batches of 32 over the
  stream the pipeline filled (the same number of entries).

Rates are messages per second of wall-clock time, best of ``--repeat`` rounds; the ratio is
rocketq / redis, so above 1.0 rocketq is faster.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

HINT = (
    "bench_vs_redis: needs redis-server and the redis package "
    "(apt-get install -y redis-server; pip install redis); skipped"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class RedisServer:
    """``redis-server`` on a free loopback port in ``data_dir``, AOF with an fsync every second."""

    def __init__(self, binary: str, data_dir: Path) -> None:
        self.port = free_port()
        args = [
            binary, "--bind", "127.0.0.1", "--port", str(self.port), "--dir", str(data_dir),
            "--appendonly", "yes", "--appendfsync", "everysec", "--save", "",
            "--daemonize", "no", "--logfile", str(data_dir / "redis.log"),
        ]  # fmt: skip
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def client(self) -> Any:
        import redis

        r = redis.Redis(host="127.0.0.1", port=self.port)
        deadline = time.monotonic() + 10.0
        while True:
            try:
                r.ping()
                return r
            except redis.ConnectionError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10.0)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def create_topic(broker: str, namesrv: str, topic: str, queues: int = 4) -> None:
    """Create ``topic`` (as ``rocketq admin`` would) and wait until the name server routes it."""
    from rocketq.client.blocking import BlockingClient
    from rocketq.errors import RocketQError
    from rocketq.protocol import ResponseCode, calls
    from rocketq.remoting import BlockingRemotingClient

    with BlockingRemotingClient(broker) as client:
        r = client.invoke(calls.create_topic(topic, queues, queues).request)
    if r.code != ResponseCode.SUCCESS:
        raise SystemExit(f"cannot create {topic}: {r.remark}")
    with BlockingClient(namesrv) as io:
        deadline = time.monotonic() + 30
        while True:
            try:
                if len(io.read_queues(topic)) == queues:
                    return
            except RocketQError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"route of {topic} did not appear")
            time.sleep(0.05)


def threaded(fn: Callable[[], object], threads: int, seconds: float) -> float:
    """Calls per second of ``fn`` from ``threads`` threads, each calling it for ``seconds``."""
    counts = [0] * threads

    def worker(k: int) -> None:
        end = time.perf_counter() + seconds
        n = 0
        while time.perf_counter() < end:
            fn()
            n += 1
        counts[k] = n

    workers = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    began = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return sum(counts) / (time.perf_counter() - began)


def best(fn: Callable[[], float], repeat: int) -> float:
    return max(fn() for _ in range(repeat))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=20_000, help="messages per batch/consume round")
    parser.add_argument("--sends", type=int, default=5_000, help="messages per one-at-a-time round")
    parser.add_argument("--size", type=int, default=1024, help="body bytes (1024)")
    parser.add_argument("--batch", type=int, default=32, help="messages per send_batch / pipeline (32)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds; the best is kept (3)")
    parser.add_argument(
        "--threads", type=int, default=32, help="threads of the many-threads rows (32; 1: none)"
    )
    parser.add_argument("--quick", action="store_true", help="smaller rounds")
    args = parser.parse_args()
    if args.quick:
        args.messages, args.sends, args.repeat = 5_000, 1_500, 2

    binary = shutil.which("redis-server")
    try:
        import redis
    except ImportError:
        binary = None
    if binary is None:
        print(HINT)
        return 0

    from rocketq import ClientConfig, ConsumeFromWhere, LitePullConsumer, Message, Producer
    from rocketq.client.config import ProducerConfig
    from rocketq.embedded import spawn_server

    body = b"x" * args.size
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "redis").mkdir()
        (Path(tmp) / "rocketq").mkdir()
        rs = RedisServer(binary, Path(tmp) / "redis")
        try:
            with spawn_server(Path(tmp) / "rocketq", flush="async") as server:
                r = rs.client()
                cfg = ClientConfig(
                    namesrv=server.namesrv_addr, client_ip="127.0.0.1", instance_name="vs_redis"
                )
                rows: list[tuple[str, float, float]] = []
                legacy_cfg = replace(cfg, instance_name="vs_redis_legacy")
                legacy_config = ProducerConfig(thread_sockets=False)
                with (
                    Producer("bench_vs_redis", client_config=cfg) as producer,
                    Producer(
                        "bench_vs_redis_legacy", client_config=legacy_cfg, config=legacy_config
                    ) as legacy,
                ):
                    # --- one at a time
                    topic_one = "VsRedisOne"
                    create_topic(server.broker_addr, server.namesrv_addr, topic_one)
                    producer.send(Message(topic_one, body))  # topic created on use, route cached
                    r.xadd("one", {"b": body})

                    def rq_send(prod: Producer = producer) -> float:
                        n = args.sends
                        began = time.perf_counter()
                        for _ in range(n):
                            prod.send(Message(topic_one, body))
                        return n / (time.perf_counter() - began)

                    def redis_xadd() -> float:
                        n = args.sends
                        began = time.perf_counter()
                        for _ in range(n):
                            r.xadd("one", {"b": body})
                        return n / (time.perf_counter() - began)

                    xadd_rate = best(redis_xadd, args.repeat)
                    rows.append(("send / XADD", best(rq_send, args.repeat), xadd_rate))
                    legacy.send(Message(topic_one, body))
                    rows.append(
                        (
                            "  send, thread_sockets=False / XADD",
                            best(lambda: rq_send(legacy), args.repeat),
                            xadd_rate,
                        )
                    )

                    # --- many threads at once
                    t = args.threads
                    if t > 1:
                        rt = redis.Redis(
                            connection_pool=redis.BlockingConnectionPool(
                                host="127.0.0.1", port=rs.port, max_connections=t
                            )
                        )
                        span = 1.0 if args.quick else 3.0
                        rt_rate = threaded(lambda: rt.xadd("many", {"b": body}), t, span)
                        rows.append(
                            (
                                f"send x{t} threads / XADD x{t}",
                                threaded(lambda: producer.send(Message(topic_one, body)), t, span),
                                rt_rate,
                            )
                        )
                        rows.append(
                            (
                                f"  send x{t}, thread_sockets=False",
                                threaded(lambda: legacy.send(Message(topic_one, body)), t, span),
                                rt_rate,
                            )
                        )
                        rt.close()

                    # --- batches; the last round's data is what the consume rows read
                    k = args.batch
                    rounds = max(1, args.messages // k)
                    topics: list[str] = []
                    streams: list[str] = []

                    def rq_batch() -> float:
                        topic = f"VsRedisBatch{len(topics)}"
                        create_topic(server.broker_addr, server.namesrv_addr, topic)
                        producer.send(Message(topic, body))  # route cached
                        topics.append(topic)
                        began = time.perf_counter()
                        for _ in range(rounds):
                            producer.send_batch([Message(topic, body) for _ in range(k)])
                        return rounds * k / (time.perf_counter() - began)

                    def redis_pipeline() -> float:
                        stream = f"batch{len(streams)}"
                        streams.append(stream)
                        began = time.perf_counter()
                        for _ in range(rounds):
                            pipe = r.pipeline(transaction=False)
                            for _ in range(k):
                                pipe.xadd(stream, {"b": body})
                            pipe.execute()
                        return rounds * k / (time.perf_counter() - began)

                    rows.append(
                        (f"send_batch({k}) / pipeline of {k} XADD", best(rq_batch, args.repeat),
                         best(redis_pipeline, args.repeat))
                    )  # fmt: skip

                # --- consume what the batch rounds wrote
                total = rounds * k
                groups = iter(range(1_000))

                def rq_consume() -> float:
                    topic = topics[-1]
                    with LitePullConsumer(
                        f"bench_vs_redis_pull{next(groups)}",
                        client_config=cfg,
                        pull_batch_size=32,
                        auto_commit=False,
                        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                    ) as consumer:
                        queues = consumer.fetch_message_queues(topic)
                        began = time.perf_counter()
                        consumer.assign(queues)
                        got = 0
                        while got < total + 1:  # +1: the creating send
                            got += len(consumer.poll(5.0))
                        return got / (time.perf_counter() - began)

                def redis_xrange() -> float:
                    stream = streams[-1]
                    began = time.perf_counter()
                    got = 0
                    start = "-"
                    while True:
                        entries = r.xrange(stream, min=start, max="+", count=32)
                        if not entries:
                            break
                        got += len(entries)
                        last = entries[-1][0].decode()
                        ms, seq = last.split("-")
                        start = f"{ms}-{int(seq) + 1}"
                    assert got == total, (got, total)
                    return got / (time.perf_counter() - began)

                rows.append(
                    (
                        "consume / XRANGE COUNT 32",
                        best(rq_consume, args.repeat),
                        best(redis_xrange, args.repeat),
                    )
                )
                r.close()
        finally:
            rs.stop()

    print(
        f"\nrocketq vs redis {rs_version(binary)} (AOF, appendfsync everysec; rocketq --flush async), "
        f"{args.size} B bodies, one thread unless said, best of {args.repeat}, msgs/s:"
    )
    print(f"  {'what':40s} {'rocketq':>10s} {'redis':>10s} {'ratio':>7s}")
    for what, ours, theirs in rows:
        print(f"  {what:40s} {ours:10.0f} {theirs:10.0f} {ours / theirs:6.2f}x")
    return 0


def rs_version(binary: str) -> str:
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, check=False).stdout
    for part in out.split():
        if part.startswith("v="):
            return part[2:]
    return "?"


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
