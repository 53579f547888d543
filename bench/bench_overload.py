"""Goodput under overload: the broker's capacity, then 2x and 10x of it offered, same run.

    python bench/bench_overload.py [--seconds 10] [--producers 4] [--threads 8] [--json FILE]

One ``rocketq server`` (uvloop, async flush, temp dir, loopback) and an 8-queue topic. Load comes
from ``--producers`` processes, each with rocketq's own :class:`~rocketq.client.Producer`:

1. **capacity** - closed loop: each process runs ``--threads`` threads calling the blocking
   ``send`` back to back for ``--seconds``. Accepted sends per second is the capacity ``C`` of
   this set-up (client and broker share the machine's cores, so the clients' cost is in it).
2. **2x** and **10x** - open loop, as an application that produces at a fixed rate does (and as
   ``rocketq demo --rate N`` does): each process calls ``send_future`` on a drift-free schedule
   of ``k * C / producers`` per second for ``--seconds``, whatever the answers. The offered rate
   is what the schedule asks; **accepted** is the sends the broker acknowledged per second;
   **latency** is from the ``send_future`` call to the acknowledgement (a call held by the
   producer's back-pressure counts its wait); **failed** are the sends that raised; **behind**
   is how far the schedule fell behind at the end (the load the producer refused to take on).

Afterwards every message is read back from the broker (pulls of every queue from offset 0) and
every acknowledged send is looked for among them: **lost** must be 0. Goals (issue 24): accepted
>= 90 % of ``C`` at 2x and 10x, p99 latency of accepted sends < 1 s, nothing acknowledged lost.

Each phase runs on a fresh topic. Ratios are printed against ``C`` of the same run; the machine
is shared and noisy. The script uses only the public client API, so the same file measures an
older checkout (``PYTHONPATH=<checkout>/src python bench/bench_overload.py``) for before/after.
"""

from __future__ import annotations

import argparse
import array
import asyncio
import functools
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

QUEUES = 8
BODY = 100


# ----------------------------------------------------------------------------- the load child


def _child(args: argparse.Namespace) -> int:
    """One load process: closed loop (``--rate 0``: threads of blocking sends) or open loop
    (``send_future`` at ``--rate``). Writes acknowledged seqs to ``--out``, prints one JSON line."""
    from rocketq.client import ClientConfig, Message, Producer

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    producer = Producer(f"overload-{args.id}", client_config=ClientConfig(namesrv=args.namesrv))
    producer.start()
    producer.send(Message(args.topic, b"warm-up"))  # route fetched, connection open
    lock = threading.Lock()
    acked = array.array("I")
    lat: list[float] = []
    failed = [0]
    errors: dict[str, int] = {}
    payload = b"x" * BODY
    tag = f"{args.id}:".encode()
    begun: list[float] = []  # open loop: when each acknowledged send began

    def done(fut: Any, seq: int, t0: float) -> None:
        exc = fut.exception()
        with lock:
            if exc is None:
                acked.append(seq)
                lat.append(time.monotonic() - t0)
                begun.append(t0)
            else:
                failed[0] += 1
                name = type(exc).__name__
                errors[name] = errors.get(name, 0) + 1

    print(json.dumps({"type": "ready"}), flush=True)
    sys.stdin.readline()  # go
    began = time.monotonic()
    end = began + args.seconds
    seq = [0]

    def closed() -> None:
        while time.monotonic() < end and not stop.is_set():
            with lock:
                seq[0] += 1
                n = seq[0]
            t0 = time.monotonic()
            try:
                producer.send(Message(args.topic, tag + str(n).encode() + b":" + payload))
            except Exception as exc:
                with lock:
                    failed[0] += 1
                    errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1
                continue
            with lock:
                acked.append(n)
                lat.append(time.monotonic() - t0)

    behind = 0.0
    if args.rate == 0:
        threads = [threading.Thread(target=closed) for _ in range(args.threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        pending = []
        n = 0
        while not stop.is_set():
            now = time.monotonic()
            if now >= end:
                break
            due = began + n / args.rate if args.rate > 0 else now  # < 0: unpaced
            if due > now:
                time.sleep(min(due - now, end - now))
                continue
            n += 1
            t0 = time.monotonic()
            try:
                fut = producer.send_future(Message(args.topic, tag + str(n).encode() + b":" + payload))
            except Exception as exc:
                with lock:
                    failed[0] += 1
                    errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1
                continue
            fut.add_done_callback(functools.partial(done, seq=n, t0=t0))
            pending.append(fut)
        behind = max(0.0, (time.monotonic() - began) - n / args.rate) if args.rate > 0 else 0.0
        seq[0] = n
        wait_until = time.monotonic() + 15.0  # answers of the sends in flight (bounded)
        for f in pending:
            try:
                f.result(max(0.01, wait_until - time.monotonic()))
            except Exception:
                pass
    took = time.monotonic() - began
    with lock:
        Path(args.out).write_bytes(acked.tobytes())
        lats = sorted(lat)
        line = {
            "type": "done",
            "offered": seq[0],
            "acked": len(acked),
            "failed": failed[0],
            "errors": errors,
            "behind_s": round(behind, 3),
            "took": took,
            "lat": [lats[int(len(lats) * q)] for q in (0.5, 0.99)] if lats else [0, 0],
            "lat_max": lats[-1] if lats else 0,
        }
        if lat and len(begun) == len(lat):
            cut = lats[int(len(lats) * 0.99)]
            slow = [int(b - began) for b, x in zip(begun, lat, strict=False) if x >= cut]
            line["slow_at"] = {s: slow.count(s) for s in sorted(set(slow))}
    t_stop = time.monotonic()
    producer.shutdown()
    line["shutdown_s"] = round(time.monotonic() - t_stop, 3)
    print(json.dumps(line), flush=True)
    return 0


# ----------------------------------------------------------------------------- the run


def _phase(namesrv: str, topic: str, rate: float, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """Run ``--producers`` load processes at ``rate`` in total (0: closed loop) on ``topic``."""
    kids = []
    for i in range(args.producers):
        out = work / f"{topic}-{i}.bin"
        cmd = [
            sys.executable,
            os.path.abspath(__file__),
            "_child",
            "--namesrv",
            namesrv,
            "--topic",
            topic,
            "--id",
            str(i + 1),
            "--rate",
            str(rate / args.producers),
            "--seconds",
            str(args.seconds),
            "--threads",
            str(args.threads),
            "--out",
            str(out),
        ]
        kids.append((subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True), out))
    for proc, _ in kids:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if '"ready"' not in line:
            raise RuntimeError(f"a load process did not start: {line!r}")
    t0 = time.monotonic()
    for proc, _ in kids:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    results = []
    for proc, out in kids:
        assert proc.stdout is not None
        try:
            line = proc.stdout.readline()
            proc.wait(120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
        results.append((json.loads(line), out))
    wall = time.monotonic() - t0
    acked = sum(r["acked"] for r, _ in results)
    return {
        "rate": rate,
        "offered": sum(r["offered"] for r, _ in results),
        "acked": acked,
        "failed": sum(r["failed"] for r, _ in results),
        "errors": _merge([r["errors"] for r, _ in results]),
        "accepted_per_s": acked / args.seconds,
        "p50_ms": max(r["lat"][0] for r, _ in results) * 1000,
        "p99_ms": max(r["lat"][1] for r, _ in results) * 1000,
        "max_ms": max(r["lat_max"] for r, _ in results) * 1000,
        "behind_s": max(r["behind_s"] for r, _ in results),
        "wall_s": wall,
        "shutdown_s": max(r.get("shutdown_s", 0) for r, _ in results),
        "files": [str(o) for _, o in results],
        # when (second of the phase) the slowest 1 % of each process's sends began
        "slow_at": _merge([{str(k): v for k, v in r.get("slow_at", {}).items()} for r, _ in results]),
    }


def _merge(ds: list[dict[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for d in ds:
        for k, v in d.items():
            out[k] = out.get(k, 0) + v
    return out


async def _read_back(broker: str, topic: str) -> set[bytes]:
    """Every body stored in ``topic``'s queues (pulls from offset 0 to the end)."""
    from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode
    from rocketq.protocol.headers import PullMessageRequestHeader
    from rocketq.protocol.message import decode_messages
    from rocketq.remoting import RemotingClient

    seen: set[bytes] = set()
    async with RemotingClient() as client:

        async def puller(qid: int) -> None:
            offset = 0
            while True:
                h = PullMessageRequestHeader(
                    consumer_group="overload_check",
                    topic=topic,
                    queue_id=qid,
                    queue_offset=offset,
                    max_msg_nums=32,
                    sys_flag=4,
                    commit_offset=0,
                    suspend_timeout_millis=0,
                    subscription="*",
                    sub_version=0,
                    expression_type="TAG",
                )
                r = await client.invoke(
                    broker, RemotingCommand.request(RequestCode.PULL_MESSAGE, h.to_ext_fields()), 30
                )
                if r.code == ResponseCode.SUCCESS:
                    for m in decode_messages(r.body):
                        parts = m.body.split(b":", 2)
                        if len(parts) == 3:  # not the warm-up message
                            seen.add(parts[0] + b":" + parts[1])
                    offset = int(r.ext_fields["nextBeginOffset"])
                elif r.code in (ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_OFFSET_MOVED):
                    return
                else:
                    offset = int(r.ext_fields.get("nextBeginOffset", offset))
                    if r.code != ResponseCode.PULL_RETRY_IMMEDIATELY:
                        raise RuntimeError(f"pull failed: {r.code} {r.remark}")

        await asyncio.gather(*(puller(q) for q in range(QUEUES)))
    return seen


def _lost(phase: dict[str, Any], stored: set[bytes]) -> int:
    lost = 0
    for i, f in enumerate(phase["files"]):
        seqs = array.array("I")
        seqs.frombytes(Path(f).read_bytes())
        tag = f"{i + 1}:".encode()
        lost += sum(1 for s in seqs if tag + str(s).encode() not in stored)
    return lost


def _consumer_flow_control(namesrv: str, topics: list[str], seconds: float) -> dict[str, Any]:
    """A push consumer with a slow listener (1 ms a message) on the flooded topics: the most
    messages it caches per queue and in all, sampled from its running info (what the broker
    relays of the client's process queues) - RocketMQ's pull flow control keeps a queue's cache
    at ``pullThresholdForQueue`` (1000) and its size at 100 MiB."""
    from rocketq.admin import Admin
    from rocketq.client import ClientConfig, ConsumeConcurrentlyStatus, PushConsumer
    from rocketq.client.config import ConsumeFromWhere

    def slow(msgs: list[Any], ctx: Any) -> Any:
        time.sleep(0.001 * len(msgs))
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        "overload-flow",
        client_config=ClientConfig(namesrv=namesrv),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )
    for t in topics:
        consumer.subscribe(t, "*")
    consumer.register_listener(slow)
    consumer.start()
    worst_queue = worst_total = samples = 0
    try:
        with Admin(namesrv) as admin:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                try:
                    info = admin.running_info("overload-flow", consumer.client_id)
                except Exception:
                    time.sleep(0.2)
                    continue
                counts = [q.cached_msg_count for q in info.mq_table.values()]
                if counts:
                    samples += 1
                    worst_queue = max(worst_queue, *counts)
                    worst_total = max(worst_total, sum(counts))
                time.sleep(0.2)
    finally:
        consumer.shutdown()
    return {
        "samples": samples,
        "max_cached_per_queue": worst_queue,
        "max_cached_total": worst_total,
        "queues": QUEUES * len(topics),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("mode", nargs="?", default="run", choices=["run", "_child"])
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--producers", type=int, default=4)
    p.add_argument("--threads", type=int, default=8, help="threads per process in the capacity phase")
    p.add_argument("--loads", default="2,10", help="multiples of the capacity to offer (2,10)")
    p.add_argument("--json", default=None)
    # the child's
    p.add_argument("--namesrv")
    p.add_argument("--topic")
    p.add_argument("--id", type=int, default=0)
    p.add_argument("--rate", type=float, default=0.0)
    p.add_argument("--out")
    args = p.parse_args(argv)
    if args.mode == "_child":
        return _child(args)

    from rocketq.admin import Admin
    from rocketq.embedded import spawn_server
    from rocketq.remoting import run

    work = Path(tempfile.mkdtemp(prefix="rocketq-overload-"))
    server = spawn_server(work / "data")
    out: dict[str, Any] = {"seconds": args.seconds, "producers": args.producers}
    try:
        phases: list[tuple[str, float]] = [("capacity", 0.0), ("async", -1.0)]
        capacity = async_capacity = 0.0
        rows = []
        for name, k in phases + [(f"{x}x", float(x)) for x in args.loads.split(",")]:
            topic = f"Overload{name.replace('.', '_')}"
            with Admin(server.namesrv_addr) as admin:
                admin.create_topic(topic, queues=QUEUES)
            rate = k if k <= 0 else k * capacity
            ph = _phase(server.namesrv_addr, topic, rate, args, work)
            stored = run(_read_back(server.broker_addr, topic))
            ph["lost"] = _lost(ph, stored)
            ph["stored"] = len(stored)
            if name == "capacity":
                capacity = ph["accepted_per_s"]
            ph["ratio"] = ph["accepted_per_s"] / capacity if capacity else 0.0
            if name == "async":
                async_capacity = ph["accepted_per_s"]
            ph["ratio_async"] = (
                ph["accepted_per_s"] / async_capacity if name not in ("capacity", "async") else None
            )
            del ph["files"]
            out[name] = ph
            rows.append((name, ph))
            print(
                f"{name:>8}: offered {max(ph['rate'], 0) or ph['offered'] / args.seconds:>9,.0f}/s  accepted "
                f"{ph['accepted_per_s']:>8,.0f}/s ({ph['ratio']:.2f} of capacity"
                + (f", {ph['ratio_async']:.2f} of async" if ph["ratio_async"] is not None else "")
                + ")  "
                f"p50 {ph['p50_ms']:7.1f} ms  "
                f"p99 {ph['p99_ms']:7.1f} ms  max {ph['max_ms']:7.0f} ms  failed {ph['failed']:,}  "
                f"lost {ph['lost']}  behind {ph['behind_s']:.1f} s  stop {ph['shutdown_s']:.1f} s  "
                f"{ph['errors'] or ''}"
                + (f"  slowest 1 % began at second {ph['slow_at']}" if ph["slow_at"] else ""),
                flush=True,
            )
        out["capacity"]["capacity_per_s"] = capacity
        flooded = [f"Overload{name.replace('.', '_')}" for name, _ in rows]
        flow = _consumer_flow_control(server.namesrv_addr, flooded, args.seconds)
        out["consumer"] = flow
        print(
            f"consumer of the flooded topics, listener 1 ms a message: at most "
            f"{flow['max_cached_per_queue']:,} "
            f"messages cached per queue (pullThresholdForQueue 1000), {flow['max_cached_total']:,} in all "
            f"over {flow['queues']} queues ({flow['samples']} samples)",
            flush=True,
        )
        if args.json:
            Path(args.json).write_text(json.dumps(out, indent=1))
        ok = all(
            ph["ratio"] >= 0.9 and ph["p99_ms"] < 1000 and ph["lost"] == 0
            for name, ph in rows
            if name not in ("capacity", "async")
        )
        print("goals (>= 0.90 of capacity, p99 < 1 s, 0 lost):", "met" if ok else "NOT met", flush=True)
        return 0
    finally:
        server.stop()
        import shutil

        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
