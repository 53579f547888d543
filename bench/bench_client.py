"""End-to-end client figures through a rocketq broker running in a subprocess (``rocketq server``).

    python bench/bench_client.py [--quick] [--consume] [--handoff]

What it measures, each beside a baseline taken in the same run against the same broker:

* **send**: ``Producer.send_future`` (32 in flight) and ``Producer.send`` (blocking, one at a
  time), against **raw send** with the same concurrency: SEND_MESSAGE_V2 requests fired through
  the bare :class:`~rocketq.remoting.RemotingClient` (no routing, ids, retries or thread hop);
* **drain**: one push consumer draining a ready backlog (200,000 messages, 128 B and 1 KiB bodies,
  on a 16-queue topic; pull → decode → process queue → thread-pool listener → offset commit) at
  steady state (first delivery to last), against **raw pull**: PULL_MESSAGE requests through
  the bare transport on every queue at once, decoding the bodies and nothing else; and against
  RocketMQ 4.9.4's Java push consumer (~97,000 msg/s on 2 cores). ``--consume`` runs only this;
* **end-to-end latency**: producer ``send`` → listener call, for a steady trickle of messages
  (p50 / p99);
* **time to balance**: a third consumer joins a two-member group on a 16-queue topic; the time
  from its ``start()`` call until all three own 6/5/5 (by the broker's notification);
* **scaling under load**: the issue's scenario — a 16-queue group scaled 1 → 3 → 2 (graceful
  stop) under a steady 200 msg/s producer: messages lost, duplicates, and the longest delivery
  delay (send → listener), which bounds how long any queue paused; once with RocketMQ's handoff
  and once with ``handoff="clean"``. RocketMQ 4.9.4's Java push consumers on its own broker:
  1 duplicate, 0 lost, longest queue pause 1.14 s;
* **thread hand-off** (``--handoff``, no broker): 32 threads each calling a trivial coroutine
  through :meth:`~rocketq.client.loop_thread.LoopThread.call`, against ``run_coroutine_threadsafe``
  + ``Future.result`` (one loop wake-up and one condition variable per call) on the same loop:
  calls/s and process CPU per call.

Rates are messages per second of wall-clock time (the broker runs in its own process).
"""

from __future__ import annotations

import asyncio
import itertools
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from rocketq import ClientConfig, ConsumeConcurrentlyStatus, ConsumeFromWhere, Message, Producer, PushConsumer
from rocketq.embedded import spawn_server
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode, calls, decode_messages
from rocketq.protocol.headers import (
    PullMessageRequestHeader,
    SendMessageRequestHeaderV2,
)
from rocketq.protocol.properties import properties_to_string
from rocketq.remoting import RemotingClient
from rocketq.remoting.loop import new_event_loop

QUICK = "--quick" in sys.argv
N = 5_000 if QUICK else 20_000
BODY = b"x" * 128
DRAIN_N = 100_000 if QUICK else 200_000
DRAIN_QUEUES = 16
DRAIN_BODIES = (128, 1024)
JAVA_PUSH_RATE = 97_000
"""RocketMQ 4.9.4's Java push consumer on its own broker, 2 cores, client on the same machine."""


def run(coro):  # type: ignore[no-untyped-def]
    loop = new_event_loop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


async def create_topic(broker: str, topic: str, queues: int) -> None:
    async with RemotingClient() as admin:
        response = await admin.invoke(broker, calls.create_topic(topic, queues, queues).request, 5.0)
        assert response.code == ResponseCode.SUCCESS, response.remark


async def raw_send(broker: str, topic: str, n: int, queues: int, window: int = 32) -> float:
    async with RemotingClient() as client:
        props = properties_to_string({"WAIT": "true"})
        began = time.perf_counter()
        pending: set[asyncio.Task[RemotingCommand]] = set()
        for i in range(n):
            header = SendMessageRequestHeaderV2(
                producer_group="raw", topic=topic, default_topic="TBW102", default_topic_queue_nums=4,
                queue_id=i % queues, sys_flag=0, born_timestamp=int(time.time() * 1000), flag=0,
                properties=props, reconsume_times=0, unit_mode=False, batch=False,
            )  # fmt: skip
            req = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, header.to_ext_fields(), BODY)
            pending.add(asyncio.ensure_future(client.invoke(broker, req, 10.0)))
            if len(pending) >= window:
                _, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        await asyncio.gather(*pending)
        return n / (time.perf_counter() - began)


async def raw_pull(broker: str, topic: str, queues: int, total: int) -> tuple[float, float]:
    """``(msg/s, CPU us per message)`` of PULL_MESSAGE (32 per pull) + ``decode_messages`` through
    the bare transport: every queue pulled at once, one request in flight per queue, as a push
    consumer pulls, but with nothing done with the messages."""
    async with RemotingClient() as client:
        got = [0]

        async def drain_queue(q: int) -> None:
            offset = 0
            while True:
                header = PullMessageRequestHeader(
                    consumer_group="raw_pull", topic=topic, queue_id=q, queue_offset=offset,
                    max_msg_nums=32, sys_flag=4, commit_offset=0, suspend_timeout_millis=0,
                    sub_version=0, expression_type="TAG", subscription="*",
                )  # fmt: skip
                resp = await client.invoke(
                    broker, RemotingCommand.request(RequestCode.PULL_MESSAGE, header.to_ext_fields()), 10.0
                )
                if resp.code != ResponseCode.SUCCESS:
                    assert resp.code == ResponseCode.PULL_NOT_FOUND, (resp.code, resp.remark)
                    return
                msgs = decode_messages(resp.body)
                got[0] += len(msgs)
                offset = int(resp.ext_fields["nextBeginOffset"])

        began, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(drain_queue(q) for q in range(queues)))
        elapsed, cpu = time.perf_counter() - began, time.process_time() - cpu
        assert got[0] >= total, (got[0], total)
        return got[0] / elapsed, cpu / got[0] * 1e6


def client_config(namesrv: str, name: str = "DEFAULT") -> ClientConfig:
    # no minimum interval between rebalances, as RocketMQ 4.9.4 (the reference of the balance and
    # scaling rows); with the client's default, RocketMQ 5.x's 1 s, a member that rebalanced less
    # than a second ago waits out the rest before it serves the next notification
    return ClientConfig(
        namesrv=namesrv, client_ip="127.0.0.1", instance_name=name, rebalance_min_interval=0.0
    )


def bench_sends(namesrv: str, topic: str, n: int) -> tuple[float, float]:
    with Producer("bench_producer", client_config=client_config(namesrv)) as producer:
        producer.send(Message(topic, BODY))  # route warm-up
        m = max(n // 4, 500)
        began = time.perf_counter()
        for _ in range(m):
            producer.send(Message(topic, BODY))
        sync_rate = m / (time.perf_counter() - began)
        began = time.perf_counter()
        window: list = []  # type: ignore[type-arg]
        for _ in range(n):
            window.append(producer.send_future(Message(topic, BODY)))
            if len(window) >= 32:
                window.pop(0).result(10)
        for f in window:
            f.result(10)
        async_rate = n / (time.perf_counter() - began)
    return sync_rate, async_rate


def fill_backlog(namesrv: str, topic: str, queues: int, n: int, body: bytes, batch: int = 128) -> float:
    """Put ``n`` messages on ``topic`` (evenly over its queues) with ``Producer.send_batch`` from
    four threads, as a real producer would write them (``UNIQ_KEY`` and ``WAIT`` properties);
    returns the fill rate in msg/s."""
    cfg = client_config(namesrv, "fill")
    with Producer("bench_fill", client_config=cfg) as producer:
        mqs = sorted(producer.fetch_publish_queues(topic))[:queues]
        assert len(mqs) == queues, mqs
        jobs = [
            (mqs[q], min(batch, n // queues - k)) for q in range(queues) for k in range(0, n // queues, batch)
        ]

        def worker(part: list[tuple[object, int]]) -> None:
            for mq, size in part:
                producer.send_batch([Message(topic, body) for _ in range(size)], queue=mq)  # type: ignore[arg-type]

        began = time.perf_counter()
        threads = [threading.Thread(target=worker, args=(jobs[i::4],)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return n / (time.perf_counter() - began)


class DrainResult:
    """What :func:`bench_consume` saw: steady drain rate, client CPU per message, start-up time."""

    def __init__(self, rate: float, cpu_us: float, startup: float, total: float) -> None:
        self.rate, self.cpu_us, self.startup, self.total = rate, cpu_us, startup, total


def bench_consume(namesrv: str, topic: str, total: int, group: str = "bench_drain") -> DrainResult:
    """One ``PushConsumer`` (RocketMQ's defaults: pulls of 32, 1 message per listener call,
    20 consume threads, 1,000 messages cached per queue) drains a ready backlog of ``total``.

    The listener only counts and returns CONSUME_SUCCESS, as a Java benchmark listener would. The
    rate is messages over the time from the first delivery to the last (steady state: start-up
    and rebalance are reported apart); CPU is this process's (the broker runs in another)."""
    done = threading.Event()
    counter = itertools.count(1)
    stamps: list[float] = [0.0, 0.0]
    cpu: list[float] = [0.0, 0.0]

    def listener(msgs: list) -> ConsumeConcurrentlyStatus:  # type: ignore[type-arg]
        for _ in msgs:
            k = next(counter)  # atomic under the GIL, like Java's AtomicLong
            if k == 1:
                stamps[0], cpu[0] = time.perf_counter(), time.process_time()
            elif k == total:
                stamps[1], cpu[1] = time.perf_counter(), time.process_time()
                done.set()
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        group,
        client_config=client_config(namesrv, group),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )
    consumer.subscribe(topic)
    consumer.register_listener(listener)
    began = time.perf_counter()
    with consumer:
        assert done.wait(300), next(counter) - 1
        ended = time.perf_counter()
    rate = (total - 1) / (stamps[1] - stamps[0])
    return DrainResult(rate, (cpu[1] - cpu[0]) / (total - 1) * 1e6, stamps[0] - began, ended - began)


def bench_latency(namesrv: str, topic: str, n: int) -> tuple[float, float]:
    lat: list[float] = []
    lock = threading.Lock()

    def listener(msgs: list) -> ConsumeConcurrentlyStatus:  # type: ignore[type-arg]
        now = time.perf_counter_ns()
        with lock:
            lat.extend((now - int(m.body)) / 1e6 for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = PushConsumer("bench_latency", client_config=client_config(namesrv, "lat"))
    consumer.subscribe(topic)
    consumer.register_listener(listener)
    with consumer, Producer("bench_lat_producer", client_config=client_config(namesrv)) as producer:
        time.sleep(0.5)
        for _ in range(n):
            producer.send(Message(topic, str(time.perf_counter_ns())))
            time.sleep(0.002)
        deadline = time.monotonic() + 10
        while len(lat) < n and time.monotonic() < deadline:
            time.sleep(0.01)
    lat.sort()
    return statistics.median(lat), lat[int(len(lat) * 0.99) - 1]


def bench_balance(namesrv: str, topic: str, rounds: int) -> list[float]:
    times = []
    for r in range(rounds):
        group = f"bench_balance_{r}"
        consumers = []
        try:
            for name in ("b1", "b2"):
                c = PushConsumer(group, client_config=client_config(namesrv, f"{name}-{r}"))
                c.subscribe(topic)
                c.register_listener(lambda msgs: ConsumeConcurrentlyStatus.CONSUME_SUCCESS)
                c.start()
                consumers.append(c)
            while sorted(len(c.assigned_queues(topic)) for c in consumers) != [8, 8]:
                time.sleep(0.005)
            third = PushConsumer(group, client_config=client_config(namesrv, f"b3-{r}"))
            third.subscribe(topic)
            third.register_listener(lambda msgs: ConsumeConcurrentlyStatus.CONSUME_SUCCESS)
            began = time.perf_counter()
            third.start()
            consumers.append(third)
            while sorted((len(c.assigned_queues(topic)) for c in consumers), reverse=True) != [6, 5, 5]:
                time.sleep(0.002)
            times.append(time.perf_counter() - began)
        finally:
            for c in consumers:
                c.shutdown()
    return times


def bench_scaling(
    namesrv: str, topic: str, phase: float, handoff: str = "rocketmq"
) -> tuple[int, int, int, float]:
    """``(sent, lost, duplicates, longest delay s)`` for 1 → 3 → 2 consumers at 200 msg/s, with the
    given handoff mode (``"clean"``: leases, commit-then-unlock; see
    ``rocketq.client.consumer.clean_handoff``)."""
    seen: dict[bytes, int] = {}
    worst = [0.0]
    lock = threading.Lock()

    def listener(msgs: list) -> ConsumeConcurrentlyStatus:  # type: ignore[type-arg]
        now = time.perf_counter_ns()
        with lock:
            for m in msgs:
                seen[m.body] = seen.get(m.body, 0) + 1
                worst[0] = max(worst[0], (now - int(m.body.split(b":")[1])) / 1e9)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    def consumer(name: str) -> PushConsumer:
        config = client_config(namesrv, f"{handoff}-{name}")
        c = PushConsumer(f"bench_scaling_{handoff}", client_config=config, handoff=handoff)
        c.subscribe(topic)
        c.register_listener(listener)
        return c.start()

    sent: list[bytes] = []
    stop = threading.Event()

    def produce() -> None:
        with Producer("bench_scaling_producer", client_config=client_config(namesrv)) as producer:
            next_at = time.perf_counter()
            i = 0
            while not stop.is_set():
                body = f"{i}:{time.perf_counter_ns()}".encode()
                producer.send(Message(topic, body))
                sent.append(body)
                i += 1
                next_at += 1 / 200
                time.sleep(max(0.0, next_at - time.perf_counter()))

    first = consumer("s1")
    worker = threading.Thread(target=produce)
    worker.start()
    time.sleep(phase)
    others = [consumer("s2"), consumer("s3")]
    time.sleep(phase)
    first.shutdown()
    time.sleep(phase)
    stop.set()
    worker.join()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not set(sent) <= set(seen):
        time.sleep(0.05)
    for c in others:
        c.shutdown()
    lost = len(set(sent) - set(seen))
    duplicates = sum(n - 1 for n in seen.values())
    return len(sent), lost, duplicates, worst[0]


def bench_handoff(threads: int = 32, calls: int = 1_000 if QUICK else 4_000) -> list[str]:
    """Calls/s and CPU µs per call of the sync hand-off, against ``run_coroutine_threadsafe``."""
    from rocketq.client.loop_thread import LoopThread

    lt = LoopThread("bench-handoff")

    async def noop() -> None:
        return None

    def via_future() -> None:
        asyncio.run_coroutine_threadsafe(noop(), lt.loop).result(10.0)

    def via_call() -> None:
        lt.call(noop(), 10.0)

    def measure(fn) -> tuple[float, float]:  # type: ignore[no-untyped-def]
        def worker() -> None:
            for _ in range(calls):
                fn()

        pool = [threading.Thread(target=worker) for _ in range(threads)]
        cpu0, t0 = time.process_time(), time.perf_counter()
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        secs, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        return threads * calls / secs, cpu / (threads * calls) * 1e6

    try:
        for fn in (via_future, via_call):  # warm up
            for _ in range(200):
                fn()
        base_rate, base_cpu = measure(via_future)
        rate, cpu = measure(via_call)
    finally:
        lt.stop()
    return [
        f"thread hand-off ({threads} threads x {calls} calls of a no-op coroutine)",
        f"  run_coroutine_threadsafe+result {base_rate:10.0f} calls/s  {base_cpu:5.1f} us CPU/call"
        "   baseline",
        f"  LoopThread.call                 {rate:10.0f} calls/s  {cpu:5.1f} us CPU/call   "
        f"{rate / base_rate:5.2f}x",
    ]


def drain_rows(namesrv: str, broker: str) -> list[str]:
    """Fill a 16-queue backlog per body size, then raw pull + decode it (baseline) and drain it
    with one PushConsumer; one row pair per body size."""
    rows = [
        f"drain: {DRAIN_N} messages per body size on {DRAIN_QUEUES} queues, one PushConsumer with "
        "RocketMQ's defaults (pulls of 32, 1 message per listener call, 20 threads)"
    ]
    for size in DRAIN_BODIES:
        topic = f"BenchDrain{size}"
        run(create_topic(broker, topic, DRAIN_QUEUES))
        time.sleep(0.3)
        fill_rate = fill_backlog(namesrv, topic, DRAIN_QUEUES, DRAIN_N, b"x" * size)
        raw_rate, raw_cpu = run(raw_pull(broker, topic, DRAIN_QUEUES, DRAIN_N))
        d = bench_consume(namesrv, topic, DRAIN_N, group=f"bench_drain_{size}")
        rows += [
            f"  {size:5d} B bodies (filled by Producer.send_batch at {fill_rate:.0f} msg/s)",
            f"    raw pull + decode            {raw_rate:10.0f} msg/s  {raw_cpu:5.2f} us CPU/msg   baseline",
            f"    PushConsumer drain (steady)  {d.rate:10.0f} msg/s  {d.cpu_us:5.2f} us CPU/msg  "
            f"{d.rate / raw_rate:5.2f}x raw  {d.rate / JAVA_PUSH_RATE:5.2f}x Java push consumer "
            f"({JAVA_PUSH_RATE:,} msg/s)",
            f"    (start -> first message {d.startup * 1000:.0f} ms; start -> drained {d.total:.2f} s)",
        ]
    return rows


def main() -> None:
    if "--handoff" in sys.argv:
        print("\n".join(bench_handoff()))
        return
    mode = "quick" if QUICK else "full"
    with tempfile.TemporaryDirectory() as tmp, spawn_server(Path(tmp)) as server:
        namesrv, broker = server.namesrv_addr, server.broker_addr
        if "--consume" in sys.argv:
            print(f"bench_client --consume ({mode}, broker in a subprocess)")
            print("\n".join(drain_rows(namesrv, broker)))
            return
        topics = (
            ("BenchRaw", 8),
            ("BenchClient", 8),
            ("BenchLatency", 4),
            ("BenchBalance", 16),
            ("BenchScale", 16),
            ("BenchScaleClean", 16),
        )
        for topic, queues in topics:
            run(create_topic(broker, topic, queues))
        time.sleep(0.5)
        raw_send_rate = run(raw_send(broker, "BenchRaw", N, 8))
        raw_send_one = run(raw_send(broker, "BenchRaw", max(N // 4, 500), 8, window=1))
        sync_rate, async_rate = bench_sends(namesrv, "BenchClient", N)
        drain = drain_rows(namesrv, broker)
        p50, p99 = bench_latency(namesrv, "BenchLatency", 300 if QUICK else 1000)
        balance = bench_balance(namesrv, "BenchBalance", 3 if QUICK else 5)
        sent, lost, duplicates, worst = bench_scaling(namesrv, "BenchScale", 2.0 if QUICK else 5.0)
        c_sent, c_lost, c_dups, c_worst = bench_scaling(
            namesrv, "BenchScaleClean", 2.0 if QUICK else 5.0, "clean"
        )
    rows = [
        f"bench_client ({mode}, {N} messages of {len(BODY)} bytes, broker in a subprocess)",
        f"  raw send (32 in flight)        {raw_send_rate:10.0f} msg/s   baseline",
        f"  Producer.send_future (32)      {async_rate:10.0f} msg/s   {async_rate / raw_send_rate:5.2f}x raw",
        f"  raw send (one at a time)       {raw_send_one:10.0f} msg/s   baseline",
        f"  Producer.send (blocking)       {sync_rate:10.0f} msg/s   {sync_rate / raw_send_one:5.2f}x raw",
        *drain,
        f"  send -> listener latency       p50 {p50:6.2f} ms   p99 {p99:6.2f} ms",
        f"  third consumer joins -> 6/5/5  median {statistics.median(balance) * 1000:6.1f} ms"
        f"   max {max(balance) * 1000:6.1f} ms   (RocketMQ's timer alone: up to 20000 ms)",
        f"  scale 1 -> 3 -> 2 at 200 msg/s  sent {sent}, lost {lost}, duplicates {duplicates}, "
        f"longest delay {worst:.2f} s   (RocketMQ 4.9.4: 0 lost, 1 duplicate, longest pause 1.14 s)",
        f'  same, handoff="clean"          sent {c_sent}, lost {c_lost}, duplicates {c_dups}, '
        f"longest delay {c_worst:.2f} s   (target: 0 duplicates, <= 0.6 s)",
    ]
    print("\n".join(rows))


if __name__ == "__main__":
    main()
