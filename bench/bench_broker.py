"""Broker throughput and latency: ``rocketq server`` in its own process, driven over loopback.

    python bench/bench_broker.py [--quick] [--duration SECONDS] [--concurrency N]
    python bench/bench_broker.py --brokers N[,N...] [--rounds R] [--duration SECONDS]

With ``--brokers``, the **CPU per stored message** of ``rocketq server --brokers N`` for N = 1 and
each N given (see :func:`brokers_main`): the brokers' own CPU (``/proc/<pid>/stat`` utime + stime
of the broker processes only, the driving client excluded), the efficiency
``CPU/msg(1) / CPU/msg(N)`` and the capacity per core it implies. Otherwise:

For each flush mode (async, sync) a fresh ``rocketq server`` runs in a subprocess (uvloop, temp
data dir, free ports). This process drives it with rocketq's asyncio ``RemotingClient`` (uvloop):

* **send**: ``N`` concurrent senders (default 32, like the Java bar's 32 threads) each loop
  SEND_MESSAGE_V2 requests shaped like the Java producer's (tags, keys, unique key, ``WAIT``),
  128 B and 1 KiB bodies, spread over 8 queues; rate in messages/s and MB/s, and the p50/p99
  latency of a send (request written to response read, client side);
* **batch**: the same with SEND_BATCH_MESSAGE of 16 messages per request;
* **consume**: 8 concurrent pullers (one per queue) read everything back in pulls of 32
  (PULL_MESSAGE with a ``*`` subscription, as a push consumer's pull service does);
* **long-poll wake**: a pull held at the end of a queue (suspend 15 s), then one send: the time
  from the send's request to the held pull's answer, p50/p99 over 200 rounds;
* **producer**: rocketq's own :class:`~rocketq.Producer` (routes from the name server), ``N``
  plain threads each calling the blocking ``send`` of 1 KiB messages, as the Java bar's 32
  threads do: the client's full cost (its thread hand-off included) and the latency it sees;
  then ``N`` asyncio tasks of this process's loop (uvloop when installed) awaiting
  ``send_async``, the same sends from an asyncio application;
* **baseline**: the same ``N`` concurrent clients calling GET_MAX_OFFSET, a round trip through the
  same server, transport and codec with no store work - the ceiling for any request type here.
  Send rates are printed as a ratio of it. For sync flush a second baseline: this disk's
  ``fdatasync`` latency, measured in the same run in the same file system; with ``N`` senders
  each waiting for an fsync, ``N / fdatasync`` bounds sync sends per second whatever the broker.
  Under sync flush the send lines are followed by the broker's group commit: fsyncs a second
  and sends per fsync (from GET_BROKER_RUNTIME_INFO's ``commitLogGroupCommitFsyncs``), to set
  beside the disk's own fsync rate.

The bar from the issue: RocketMQ 4.9.4's own broker did ~20,000 sync sends/s of 1 KiB from 32
threads (p50 1.0 ms, p99 9 ms) and delivered ~97,000 msgs/s to one push consumer, on a machine
like this one (2 cores, client on the same machine). "Sync sends" are the producer's blocking
``send`` (it waits for the broker's answer); the broker ran with its defaults, so with
``flushDiskType=ASYNC_FLUSH``: the "vs Java" ratios are printed on the async-flush lines. The
sync-flush lines (every answer after an fsync) are a stricter mode the bar did not measure.
Figures are wall-clock rates; client and broker share the machine's cores, so the client's own
cost is part of every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

from rocketq.client import Producer
from rocketq.embedded import spawn_server
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode, calls
from rocketq.protocol.headers import (
    CreateTopicRequestHeader,
    GetMaxOffsetRequestHeader,
    PullMessageRequestHeader,
    SendMessageRequestHeaderV2,
)
from rocketq.protocol.message import Message, encode_batch
from rocketq.protocol.properties import properties_to_string
from rocketq.remoting import RemotingClient, run

TOPIC = "BenchTopic"
QUEUES = 8
BATCH = 16
JAVA_SYNC_SENDS = 20_000
JAVA_PUSH_CONSUME = 97_000


def _send_fields(queue_id: int, batch: bool, counter: int) -> dict[str, str]:
    props = {
        "KEYS": f"order-{counter}",
        "UNIQ_KEY": f"FD0000000000000000000000000000021B2E4E0E2F2A68BC{counter:08X}",
        "WAIT": "true",
        "TAGS": "TagA",
    }
    header = SendMessageRequestHeaderV2(
        producer_group="bench_producer_group",
        topic=TOPIC,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=queue_id,
        sys_flag=0,
        born_timestamp=int(time.time() * 1000),
        flag=0,
        properties="WAIT\x01true" if batch else properties_to_string(props),
        reconsume_times=0,
        unit_mode=False,
        batch=batch,
    )
    return header.to_ext_fields()


async def _create_topic(client: RemotingClient, addr: str) -> None:
    header = CreateTopicRequestHeader(
        topic=TOPIC,
        default_topic="TBW102",
        read_queue_nums=QUEUES,
        write_queue_nums=QUEUES,
        perm=6,
        topic_filter_type="SINGLE_TAG",
        topic_sys_flag=0,
        order=False,
    )
    r = await client.invoke(
        addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext_fields())
    )
    assert r.code == ResponseCode.SUCCESS, r.remark


async def _drive(
    client: RemotingClient, addr: str, concurrency: int, duration: float, make: object
) -> tuple[int, float, list[float]]:
    """Run ``concurrency`` loops of ``make(worker, i) -> (request, messages)`` for ``duration``."""
    build = make
    latencies: list[float] = []
    done = 0
    stop_at = time.perf_counter() + duration

    async def worker(w: int) -> None:
        nonlocal done
        i = 0
        while time.perf_counter() < stop_at:
            request, count = build(w, i)  # type: ignore[operator]
            t0 = time.perf_counter()
            r = await client.invoke(addr, request, 30)
            latencies.append(time.perf_counter() - t0)
            if r.code != ResponseCode.SUCCESS:
                raise RuntimeError(f"request failed: {r.code} {r.remark}")
            done += count
            i += 1

    t0 = time.perf_counter()
    await asyncio.gather(*(worker(w) for w in range(concurrency)))
    return done, time.perf_counter() - t0, latencies


async def _group_commit_fsyncs(client: RemotingClient, addr: str) -> int:
    """The broker's sync-flush fsyncs so far (rocketq's ``commitLogGroupCommitFsyncs``)."""
    call = calls.get_broker_runtime_info()
    table = call.parse(await client.invoke(addr, call.request))
    return int(table.get("commitLogGroupCommitFsyncs", "0"))


def _fdatasync_p50(directory: Path) -> float:
    """Median latency of a 4 KiB write + ``fdatasync`` in ``directory`` (seconds)."""
    path = directory / "fsync-probe"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        times: list[float] = []
        for i in range(100):
            os.pwrite(fd, b"x" * 4096, i * 4096)
            t0 = time.perf_counter()
            os.fdatasync(fd)
            times.append(time.perf_counter() - t0)
    finally:
        os.close(fd)
        path.unlink()
    return statistics.median(times)


def _lat(values: list[float]) -> str:
    return f"p50 {_pct(values, 0.5) * 1000:5.2f} ms  p99 {_pct(values, 0.99) * 1000:5.2f} ms"


def _pct(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


async def _bench_server(addr: str, flush: str, concurrency: int, duration: float) -> list[str]:
    out: list[str] = []
    async with RemotingClient() as client:
        await _create_topic(client, addr)

        def max_offset(w: int, i: int) -> tuple[RemotingCommand, int]:
            h = GetMaxOffsetRequestHeader(topic=TOPIC, queue_id=w % QUEUES)
            return RemotingCommand.request(RequestCode.GET_MAX_OFFSET, h.to_ext_fields()), 1

        await _drive(client, addr, concurrency, 0.3, max_offset)  # warm up connection and caches
        n, secs, lat = await _drive(client, addr, concurrency, duration, max_offset)
        baseline = n / secs
        out.append(
            f"{flush:5} baseline GET_MAX_OFFSET round trips  {baseline:>9,.0f} req/s   "
            f"p50 {_pct(lat, 0.5) * 1000:5.2f} ms  p99 {_pct(lat, 0.99) * 1000:5.2f} ms"
        )
        sent = 0
        for size in (128, 1024):
            body = bytes(size)

            def single(w: int, i: int, body: bytes = body) -> tuple[RemotingCommand, int]:
                fields = _send_fields((w + i) % QUEUES, False, w * 1_000_000 + i)
                return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, fields, body), 1

            fsyncs = await _group_commit_fsyncs(client, addr)
            n, secs, lat = await _drive(client, addr, concurrency, duration, single)
            fsyncs = await _group_commit_fsyncs(client, addr) - fsyncs
            sent += n
            rate = n / secs
            bar = f"  vs Java {rate / JAVA_SYNC_SENDS:4.2f}x" if size == 1024 and flush == "async" else ""
            out.append(
                f"{flush:5} send  {size:>5} B x{concurrency:<3}         {rate:>9,.0f} msg/s "
                f"{rate * size / 1e6:7.1f} MB/s  {_lat(lat)}  "
                f"= {rate / baseline:4.2f} of baseline{bar}"
            )
            if fsyncs:
                out.append(
                    f"{flush:5}   group commit: {fsyncs / secs:>7,.0f} fsyncs/s, "
                    f"{n / fsyncs:5.1f} sends per fsync"
                )
            batch_body = encode_batch(
                [Message(TOPIC, body, 0, {"UNIQ_KEY": f"B{k:030X}", "TAGS": "TagB"}) for k in range(BATCH)]
            )

            def batched(w: int, i: int, batch_body: bytes = batch_body) -> tuple[RemotingCommand, int]:
                fields = _send_fields((w + i) % QUEUES, True, w * 1_000_000 + i)
                return RemotingCommand.request(RequestCode.SEND_BATCH_MESSAGE, fields, batch_body), BATCH

            n, secs, lat = await _drive(client, addr, concurrency, duration, batched)
            sent += n
            rate = n / secs
            out.append(
                f"{flush:5} batch {size:>5} B x{BATCH} x{concurrency:<3}     {rate:>9,.0f} msg/s "
                f"{rate * size / 1e6:7.1f} MB/s  {_lat(lat)}  (per batch request)"
            )
        # consume everything back: one puller per queue, pulls of 32
        pulled = 0

        async def puller(qid: int) -> None:
            nonlocal pulled
            offset = 0
            while True:
                h = PullMessageRequestHeader(
                    consumer_group="bench_consumer_group",
                    topic=TOPIC,
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
                    addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, h.to_ext_fields()), 30
                )
                nxt = int(r.ext_fields["nextBeginOffset"])
                if r.code == ResponseCode.SUCCESS:
                    pulled += nxt - offset
                    offset = nxt
                elif r.code == ResponseCode.PULL_NOT_FOUND:
                    return
                else:
                    raise RuntimeError(f"pull failed: {r.code} {r.remark}")

        t0 = time.perf_counter()
        await asyncio.gather(*(puller(q) for q in range(QUEUES)))
        secs = time.perf_counter() - t0
        rate = pulled / secs
        out.append(
            f"{flush:5} consume pulls of 32 x{QUEUES} queues     {rate:>9,.0f} msg/s  "
            f"({pulled:,} messages, sizes mixed)  vs Java push consumer {rate / JAVA_PUSH_CONSUME:4.2f}x"
        )
        assert pulled == sent, f"pulled {pulled} of {sent}"
        out.append(await _wake_latency(client, addr, flush))
    return out


async def _wake_latency(client: RemotingClient, addr: str, flush: str, rounds: int = 200) -> str:
    """Long polling: a pull held at the end of a queue, then one send; the time from the send's
    request to the held pull's answer (the send's own round trip included)."""
    waits: list[float] = []
    queue_id = 0
    offset = int(
        (
            await client.invoke(
                addr,
                RemotingCommand.request(
                    RequestCode.GET_MAX_OFFSET,
                    GetMaxOffsetRequestHeader(topic=TOPIC, queue_id=queue_id).to_ext_fields(),
                ),
            )
        ).ext_fields["offset"]
    )
    for i in range(rounds):
        h = PullMessageRequestHeader(
            consumer_group="bench_wake_group",
            topic=TOPIC,
            queue_id=queue_id,
            queue_offset=offset,
            max_msg_nums=32,
            sys_flag=4 | 2,
            commit_offset=0,
            suspend_timeout_millis=15000,
            subscription="*",
            sub_version=0,
            expression_type="TAG",
        )
        held = asyncio.ensure_future(
            client.invoke(addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, h.to_ext_fields()), 30)
        )
        await asyncio.sleep(0.002)  # let the pull reach the broker and be parked
        t0 = time.perf_counter()
        fields = _send_fields(queue_id, False, 9_000_000 + i)
        await client.invoke(addr, RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, fields, b"wake"), 30)
        r = await held
        waits.append(time.perf_counter() - t0)
        if r.code != ResponseCode.SUCCESS:
            raise RuntimeError(f"held pull answered {r.code} {r.remark}")
        offset = int(r.ext_fields["nextBeginOffset"])
    return (
        f"{flush:5} long-poll wake: send -> held pull answered   {_lat(waits)}  "
        f"({rounds} rounds, suspend 15 s)"
    )


def _warm_producer(group: str, namesrv: str) -> Producer:
    """A started producer whose route, connection and caches are warm."""
    producer = Producer(group, namesrv).start()
    for i in range(100):
        producer.send(Message(TOPIC, bytes(1024), 0, {"TAGS": "TagA", "KEYS": f"warm-{i}"}))
    return producer


def _producer_figure(flush: str, what: str, latencies: list[float], secs: float, cpu: float) -> str:
    rate = len(latencies) / secs
    per_send = cpu / len(latencies) * 1e6
    bar = f"  vs Java {rate / JAVA_SYNC_SENDS:4.2f}x" if flush == "async" else ""
    return (
        f"{flush:5} {what:<32} {rate:>9,.0f} msg/s {rate * 1024 / 1e6:7.1f} MB/s  {_lat(latencies)}  "
        f"client CPU {per_send:4.0f} us/send{bar}"
    )


def _producer_threads(namesrv: str, flush: str, concurrency: int, duration: float) -> str:
    """``concurrency`` threads sending 1 KiB messages with the blocking ``Producer.send``."""
    body = bytes(1024)
    producer = _warm_producer("bench_thread_producer", namesrv)
    try:
        latencies: list[list[float]] = [[] for _ in range(concurrency)]
        stop_at = time.perf_counter() + duration

        def worker(w: int) -> None:
            mine = latencies[w]
            i = 0
            while time.perf_counter() < stop_at:
                msg = Message(TOPIC, body, 0, {"TAGS": "TagA", "KEYS": f"order-{w}-{i}"})
                t0 = time.perf_counter()
                producer.send(msg)
                mine.append(time.perf_counter() - t0)
                i += 1

        cpu0 = time.process_time()
        t0 = time.perf_counter()
        threads = [threading.Thread(target=worker, args=(w,)) for w in range(concurrency)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        secs = time.perf_counter() - t0
        cpu = time.process_time() - cpu0
    finally:
        producer.shutdown()
    flat = [x for xs in latencies for x in xs]
    return _producer_figure(flush, f"Producer.send 1024 B x{concurrency} threads", flat, secs, cpu)


def _producer_async(namesrv: str, flush: str, concurrency: int, duration: float) -> str:
    """``concurrency`` asyncio tasks on this process's own loop awaiting ``Producer.send_async``."""
    body = bytes(1024)
    producer = _warm_producer("bench_async_producer", namesrv)
    try:
        latencies: list[float] = []

        async def drive() -> None:
            stop_at = time.perf_counter() + duration

            async def task(w: int) -> None:
                i = 0
                while time.perf_counter() < stop_at:
                    msg = Message(TOPIC, body, 0, {"TAGS": "TagA", "KEYS": f"order-{w}-{i}"})
                    t0 = time.perf_counter()
                    await producer.send_async(msg)
                    latencies.append(time.perf_counter() - t0)
                    i += 1

            await asyncio.gather(*(task(w) for w in range(concurrency)))

        cpu0 = time.process_time()
        t0 = time.perf_counter()
        run(drive())
        secs = time.perf_counter() - t0
        cpu = time.process_time() - cpu0
    finally:
        producer.shutdown()
    return _producer_figure(flush, f"Producer.send_async 1024 B x{concurrency} tasks", latencies, secs, cpu)


def _cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` so far, in seconds (``/proc/<pid>/stat`` fields 14 and 15)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _drive_brokers(
    addrs: list[str], concurrency: int, duration: float, sample: object, rate: float = 0.0
) -> tuple[int, float]:
    """``concurrency`` senders of 1 KiB SEND_MESSAGE_V2 per broker, over its 8 queues, for
    ``duration`` after a warm-up; ``sample()`` is called when the measured stretch begins and ends
    (its results are the caller's). With ``rate`` > 0 each broker's sends are paced to ``rate``
    a second (each send waits for its slot). Returns the messages sent in the stretch and its
    seconds."""
    body = bytes(1024)
    async with RemotingClient() as client:
        for addr in addrs:
            await _create_topic(client, addr)
        counting = False
        stop = False
        done = 0
        next_at = dict.fromkeys(addrs, time.perf_counter())  # each broker's next send slot

        async def sender(addr: str, w: int) -> None:
            nonlocal done
            i = 0
            while not stop:
                if rate > 0:  # one slot every 1/rate s; a late sender takes the next, never catches up
                    now = time.perf_counter()
                    at = max(next_at[addr], now)
                    next_at[addr] = at + 1 / rate
                    if at > now:
                        await asyncio.sleep(at - now)
                fields = _send_fields((w + i) % QUEUES, False, w * 1_000_000 + i)
                r = await client.invoke(
                    addr, RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, fields, body), 30
                )
                if r.code != ResponseCode.SUCCESS:
                    raise RuntimeError(f"send failed: {r.code} {r.remark}")
                if counting:
                    done += 1
                i += 1

        tasks = [asyncio.create_task(sender(a, w)) for a in addrs for w in range(concurrency)]
        await asyncio.sleep(min(1.0, duration / 4))  # warm-up: connections, caches, first segment
        sample()  # type: ignore[operator]
        counting = True
        t0 = time.perf_counter()
        await asyncio.sleep(duration)
        counting = False
        secs = time.perf_counter() - t0
        sample()  # type: ignore[operator]
        stop = True
        await asyncio.gather(*tasks)
    return done, secs


def _cpu_per_message(
    count: int, concurrency: int, duration: float, rate: float
) -> tuple[float, float, float, float]:
    """One run of ``rocketq server --brokers count``: (broker CPU us per message, messages/s,
    broker cores busy, the supervisor's own cores busy)."""
    with (
        tempfile.TemporaryDirectory() as tmp,
        spawn_server(Path(tmp) / "data", brokers=count, timeout=90) as server,
    ):
        pids = [server.pid] if count == 1 else list(server.broker_pids().values())
        assert len(pids) == count, f"expected {count} broker processes, found {pids}"
        samples: list[tuple[float, float]] = []

        def sample() -> None:
            samples.append((sum(_cpu_seconds(p) for p in pids), _cpu_seconds(server.pid)))

        sent, secs = run(_drive_brokers(list(server.broker_addrs), concurrency, duration, sample, rate))
        assert list(server.broker_pids().values()) == ([] if count == 1 else pids), "a broker restarted"
        server.stop()
    cpu = samples[1][0] - samples[0][0]
    own = samples[1][1] - samples[0][1] if count > 1 else 0.0
    return cpu / sent * 1e6, sent / secs, cpu / secs, own / secs


def brokers_main(counts: list[int], concurrency: int, duration: float, rounds: int, rate: float) -> None:
    """CPU per stored message of 1 and of N brokers, alternated ``rounds`` times in one session
    (the machine is shared and noisy: the median of the rounds is reported).

    A broker's CPU per message falls as its load rises (more requests per wake-up of its event
    loop), so 1 and N brokers compare fairly at the same load per broker: ``rate`` paces each
    broker to that many sends a second (0: as fast as the one driving process goes, which on a
    small machine gives each of N brokers less load than the one broker got)."""
    counts = sorted({1, *counts})
    cores = len(os.sched_getaffinity(0))
    print(
        f"rocketq brokers bench: 1 KiB SEND_MESSAGE_V2, {concurrency} in flight per broker"
        + (f" paced to {rate:,.0f}/s per broker" if rate > 0 else " as fast as they go")
        + f", {duration:g} s "
        f"per run, {rounds} round(s) of {counts} brokers, {cores} cores; broker CPU = /proc utime+stime of "
        "the broker processes only (the driving client excluded)"
    )
    results: dict[int, list[tuple[float, float, float, float]]] = {n: [] for n in counts}
    for r in range(rounds):
        for n in counts:
            results[n].append(_cpu_per_message(n, concurrency, duration, rate))
            us, rate, busy, own = results[n][-1]
            print(
                f"  round {r + 1} brokers {n}: {rate:>8,.0f} msg/s  broker CPU {us:6.1f} us/msg  "
                f"({busy:4.2f} cores busy; supervisor + name server {own:4.2f})",
                flush=True,
            )
    base = statistics.median(x[0] for x in results[1])
    for n in counts:
        us = statistics.median(x[0] for x in results[n])
        rate = statistics.median(x[1] for x in results[n])
        eff = base / us
        print(
            f"brokers {n}: {rate:>8,.0f} msg/s here, broker CPU {us:6.1f} us/msg (median), "
            f"efficiency {eff:4.2f} = CPU/msg(1) / CPU/msg({n}); implies {1e6 / us:>7,.0f} msg/s per core, "
            f"{cores} cores here ~{cores * 1e6 / us:,.0f} msg/s, 16 cores ~{16 * 1e6 / us:,.0f} msg/s "
            "(brokers' CPU only: clients elsewhere)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--brokers",
        type=lambda text: [int(n) for n in text.split(",")],
        default=None,
        metavar="N[,N...]",
        help="measure broker CPU per message for 1 and these broker counts instead",
    )
    parser.add_argument(
        "--rounds", type=int, default=2, help="with --brokers: runs of each count (default 2)"
    )
    parser.add_argument(
        "--rate", type=float, default=0.0, help="with --brokers: sends/s per broker (default 0: unpaced)"
    )
    parser.add_argument("--quick", action="store_true", help="short runs (1 s each)")
    parser.add_argument("--duration", type=float, default=4.0, help="seconds per measurement (default 4)")
    parser.add_argument("--concurrency", type=int, default=32, help="concurrent requests (default 32)")
    parser.add_argument("--flush", choices=("async", "sync", "both"), default="both")
    args = parser.parse_args()
    duration = 1.0 if args.quick else args.duration
    if args.brokers is not None:
        brokers_main(args.brokers, args.concurrency, duration, args.rounds, args.rate)
        return
    modes = ("async", "sync") if args.flush == "both" else (args.flush,)
    print(f"rocketq broker bench: {args.concurrency} concurrent requests, {duration:g} s per figure")
    for flush in modes:
        with tempfile.TemporaryDirectory() as tmp, spawn_server(Path(tmp) / "data", flush=flush) as server:  # type: ignore[arg-type]
            lines = run(_bench_server(server.broker_addr, flush, args.concurrency, duration))
            after = 1 + next(i for i, line in enumerate(lines) if "batch  1024" in line)
            lines.insert(after, _producer_threads(server.namesrv_addr, flush, args.concurrency, duration))
            lines.insert(after + 1, _producer_async(server.namesrv_addr, flush, args.concurrency, duration))
            code = server.stop()
            for line in lines:
                print(line, flush=True)
            if flush == "sync":
                p50 = _fdatasync_p50(Path(tmp))
                print(
                    f"sync  baseline fdatasync of 4 KiB on this disk  p50 {p50 * 1000:5.2f} ms "
                    f"(~{1 / p50:,.0f} fsyncs/s one after another): "
                    f"{args.concurrency} waiting senders get at most ~{args.concurrency / p50:,.0f} sends/s"
                )
            if code != 0:
                print(f"server exited with {code}")
    print(
        f"bar (RocketMQ 4.9.4, 2 cores): {JAVA_SYNC_SENDS:,} sync sends/s of 1 KiB from 32 threads "
        f"(p50 1.0 ms, p99 9 ms); {JAVA_PUSH_CONSUME:,} msgs/s to one push consumer"
    )


if __name__ == "__main__":
    main()
