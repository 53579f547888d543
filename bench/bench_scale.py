"""Cost as work grows: broker memory and restart time by log size, pulls of old data, plan() at
scale, a consumer group of 50.

    python bench/bench_scale.py [--quick] [--sizes 1,4] [--only log,pull,plan,group]

Every process is real and on 127.0.0.1 (free ports, temp data dirs, removed at the end); every
process this bench starts is stopped by pid. Sections (``--only`` picks some):

* **log**: a ``rocketq server --flush async`` is filled through its front door - rocketq's
  :class:`~rocketq.Producer`, ``send_batch`` of 64 messages of 1 KiB from ``--fill-threads``
  threads (the producer's own path: unique ids, routes, the broker's decode, store and index) -
  until the commit log holds each size of ``--sizes`` (GiB, ascending, one data dir grown from
  one size to the next). At each size: the broker's memory (``VmRSS`` from ``/proc/PID/status``,
  split into anonymous memory and mapped file pages, ``RssAnon`` / ``RssFile``) right after the
  fill; then SIGKILL and a restart (crash recovery: the abort marker is left behind), then
  SIGTERM (its clean stop timed) and a restart (normal recovery). A restart is timed from the
  spawn of ``python -m rocketq server`` to its ready line (:func:`rocketq.embedded.parse_ready_line`);
  the **baseline**, measured in the same run, is the same restart on an empty data dir (the
  interpreter's start and imports). The store's size on disk (allocated blocks) per directory.
* **pull**: on the largest log, PULL_MESSAGE round trips of 32 messages (one in flight, no
  long polling) at random offsets among each queue's newest messages ("head") and among its
  oldest ("old", offset ~0): p50 / p99. First with the page cache as the fill left it (warm: the
  machine's RAM holds the whole log); then "cold": the broker is stopped, the store's files
  dropped from the page cache with ``posix_fadvise(POSIX_FADV_DONTNEED)`` (needs no privilege;
  ``fincore`` checks it), the broker restarted (that restart timed as "cold restart") and the
  old offsets pulled again. The disk is a virtual one: the host may still cache what the guest
  dropped, so "cold" is the guest's page cache only.
* **plan**: :func:`rocketq.allocate.plan` of 1,000 consumers x 10,000 queues (10 brokers) for
  every strategy of the registry (:func:`rocketq.allocate.strategy_names`), median of
  ``--repeat`` runs, and the same at a tenth of both sizes: the ratio tells linear (~10x) from
  quadratic (~100x).
* **group**: a consumer group of 50 members (the lab's worker processes,
  :mod:`rocketq.lab.worker`: one :class:`~rocketq.PushConsumer` each, RocketMQ's default
  intervals) on one broker, a topic of 64 queues, strategy AVG. The broker's CPU while idle
  (baseline) and during the group's steady state (heartbeats, rebalances, held pulls, offset
  commits); then a 51st member joins: the time from its spawn until every member's latest
  rebalance record shows all 51 client ids and the share :func:`~rocketq.allocate.plan` gives
  it (so the shares agree and cover every queue), also from the joiner's "started" line.

The machine is 2 cores shared with other work: figures move between runs; the big sections are
meant to be run once and read with that in mind.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from rocketq import ClientConfig, Message, Producer
from rocketq.allocate import get_strategy, java_sorted, plan, sorted_queues, strategy_names
from rocketq.embedded import READY_PREFIX, ServerProcess, parse_ready_line
from rocketq.models import MessageQueue
from rocketq.protocol import calls
from rocketq.protocol.headers import PullMessageRequestHeader
from rocketq.remoting import BlockingRemotingClient

GiB = 1 << 30
MiB = 1 << 20
TOPIC = "ScaleTopic"
QUEUES = 8
BATCH = 64
BODY = 1024
BROKER = "broker-a"
_LOGGER_PREFIX = re.compile(r"^.*? rocketq[.][\w.]+: ")


# ---------------------------------------------------------------------------------- helpers


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] if ordered else 0.0


def proc_memory(pid: int) -> dict[str, int]:
    """``VmRSS``, ``RssAnon``, ``RssFile`` (bytes) of ``pid`` from ``/proc/PID/status``."""
    out: dict[str, int] = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
                out[key] = int(rest.split()[0]) * 1024
    return out


def proc_cpu(pid: int) -> float:
    """User + system CPU seconds of ``pid`` so far."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def disk_usage(root: Path) -> dict[str, int]:
    """Allocated bytes (``st_blocks``) per top-level directory of ``root``, and ``total``."""
    usage: dict[str, int] = {}
    for dirpath, _, files in os.walk(root):
        rel = Path(dirpath).relative_to(root)
        top = rel.parts[0] if rel.parts else "."
        for name in files:
            with contextlib.suppress(FileNotFoundError):
                usage[top] = usage.get(top, 0) + os.lstat(os.path.join(dirpath, name)).st_blocks * 512
    usage["total"] = sum(usage.values())
    return usage


def drop_from_page_cache(root: Path) -> int:
    """``posix_fadvise(DONTNEED)`` on every file under ``root`` (clean pages leave the page
    cache; pages a process maps or that are dirty stay). Files done."""
    done = 0
    for dirpath, _, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                continue
            try:
                os.fdatasync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                done += 1
            finally:
                os.close(fd)
    return done


def cached_bytes(paths: list[Path]) -> int | None:
    """Bytes of ``paths`` in the page cache (``fincore``), ``None`` without ``fincore``."""
    fincore = shutil.which("fincore")
    if fincore is None or not paths:
        return None
    r = subprocess.run(
        [fincore, "--bytes", "--noheadings", "--output", "RES,SIZE", *map(str, paths)],
        capture_output=True,
        text=True,
        check=False,
    )
    res = size = 0
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2:
            res += int(parts[0])
            size += int(parts[1])
    return res if size else None


class Server:
    """``python -m rocketq server`` on free ports with its log in a file; restartable on one data dir."""

    def __init__(self, data_dir: Path, log_path: Path) -> None:
        self.data_dir = data_dir
        self.log_path = log_path
        self.proc: ServerProcess | None = None
        self._log: IO[str] | None = None

    def start(self, timeout: float = 900.0) -> float:
        """Spawn the server and wait for its ready line; seconds from spawn to ready."""
        self._log = self.log_path.open("a", encoding="utf-8")
        self._log.write(f"--- start {time.strftime('%H:%M:%S')}\n")
        self._log.flush()
        args = [sys.executable, "-m", "rocketq", "server", "--brokers", "1", "--data-dir", str(self.data_dir)]
        args += ["--namesrv-port", "0", "--broker-port", "0", "--flush", "async"]
        t0 = time.perf_counter()
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self._log, text=True)
        assert proc.stdout is not None
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            readable, _, _ = select.select([proc.stdout], [], [], max(remaining, 0))
            line = proc.stdout.readline() if readable else ""
            if line.startswith(READY_PREFIX):
                elapsed = time.perf_counter() - t0
                self.proc = ServerProcess(proc, parse_ready_line(line.strip()))
                return elapsed
            if (readable and not line) or time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                proc.stdout.close()
                raise SystemExit(f"rocketq server did not start; its log: {self.log_path}")

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def broker_addr(self) -> str:
        assert self.proc is not None
        return self.proc.broker_addr

    @property
    def namesrv_addr(self) -> str:
        assert self.proc is not None
        return self.proc.namesrv_addr

    def stop(self, *, kill: bool = False) -> float:
        """SIGTERM (clean stop: flush, checkpoint) or SIGKILL; seconds until the process is gone."""
        assert self.proc is not None
        t0 = time.perf_counter()
        if kill:
            self.proc.proc.kill()
        code = self.proc.stop(timeout=600.0)
        elapsed = time.perf_counter() - t0
        if not kill and code != 0:
            print(f"  (server exited with {code}; log {self.log_path})")
        self.proc = None
        if self._log is not None:
            self._log.close()
            self._log = None
        return elapsed

    def close(self) -> None:
        """Stop the server if it runs (SIGTERM, SIGKILL after the timeout); idempotent."""
        if self.proc is not None:
            self.stop()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def recovery_lines(self) -> list[str]:
        """What the last start's recovery logged (rebuilt queue entries, re-indexed messages)."""
        text = self.log_path.read_text(encoding="utf-8", errors="replace")
        last = text.rpartition("--- start")[2]
        keys = ("recovering from", "rebuilt", "indexed", "truncating")
        return [line.strip() for line in last.splitlines() if any(k in line for k in keys)]


def _mem(pid: int) -> str:
    m = proc_memory(pid)
    return f"RSS {m['VmRSS'] / MiB:6.0f} MiB (anon {m['RssAnon'] / MiB:5.0f}, file {m['RssFile'] / MiB:6.0f})"


def commit_log_max(addr: str) -> int:
    with BlockingRemotingClient(addr) as client:
        return int(client.call(calls.get_broker_runtime_info())["commitLogMaxOffset"])


def create_topic(server: Server, topic: str, queues: int) -> None:
    with BlockingRemotingClient(server.broker_addr) as client:
        client.call(calls.create_topic(topic, queues, queues))


@contextlib.contextmanager
def producer_for(server: Server) -> Iterator[Producer]:
    cfg = ClientConfig(namesrv=server.namesrv_addr, client_ip="127.0.0.1", instance_name="bench_scale")
    with Producer("bench_scale_producer", client_config=cfg) as producer:
        deadline = time.monotonic() + 30
        while True:  # the route reaches the name server with the broker's next registration
            try:
                producer.send(Message(TOPIC, b"route"))
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        yield producer


def fill(server: Server, target: int, threads: int) -> tuple[int, float, float]:
    """Send batches until the commit log reaches ``target`` bytes; (bytes added, seconds, broker
    CPU seconds)."""
    start = commit_log_max(server.broker_addr)
    if start >= target:
        return 0, 0.0, 0.0
    body = bytes(BODY)
    stop = threading.Event()
    errors: list[BaseException] = []
    with producer_for(server) as producer:

        def worker() -> None:
            try:
                while not stop.is_set():
                    producer.send_batch([Message(TOPIC, body) for _ in range(BATCH)])
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)
                stop.set()

        cpu0 = proc_cpu(server.pid)
        t0 = time.perf_counter()
        pool = [threading.Thread(target=worker, name=f"fill-{i}") for i in range(threads)]
        for t in pool:
            t.start()
        try:
            while not stop.wait(0.2):
                if commit_log_max(server.broker_addr) >= target:
                    break
        finally:
            stop.set()
            for t in pool:
                t.join()
        secs = time.perf_counter() - t0
        cpu = proc_cpu(server.pid) - cpu0
    if errors:
        raise errors[0]
    return commit_log_max(server.broker_addr) - start, secs, cpu


def baseline_restart(tmp: Path) -> float:
    """Spawn-to-ready of a server on an empty data dir (stopped and started once, like the others)."""
    with Server(tmp / "empty", tmp / "empty.log") as s:
        s.start()
        s.stop()
        secs = s.start()
    shutil.rmtree(tmp / "empty", ignore_errors=True)
    return secs


# ---------------------------------------------------------------------------------- log + pull


def bench_log(tmp: Path, sizes: list[float], threads: int, restarts: bool, pull: bool, samples: int) -> None:
    data = tmp / "store"
    base = baseline_restart(tmp)
    print(f"\nbaseline: spawn to ready line on an empty data dir: {base:.2f} s")
    print(
        f"fill: Producer.send_batch of {BATCH} x {BODY} B from {threads} threads into "
        f"{QUEUES} queues, broker --flush async"
    )
    with Server(data, tmp / "server.log") as server:
        server.start()
        create_topic(server, TOPIC, QUEUES)
        _grow(server, sizes, threads, restarts, base)
        if pull:
            bench_pull(server, samples)
    shutil.rmtree(data, ignore_errors=True)


def _grow(server: Server, sizes: list[float], threads: int, restarts: bool, base: float) -> None:
    for size in sizes:
        target = int(size * GiB)
        added, secs, cpu = fill(server, target, threads)
        total = commit_log_max(server.broker_addr)
        print(f"\ncommit log {total / GiB:.2f} GiB ({size:g} GiB asked)")
        if added:
            print(
                f"  fill +{added / GiB:.2f} GiB in {secs:.1f} s: {added / secs / MiB:.0f} MiB/s, "
                f"~{added / secs / (BODY + 160):,.0f} msg/s; broker CPU {cpu / (added / GiB):.1f} s per GiB"
            )
        print(f"  after fill            {_mem(server.pid)}")
        if not restarts:
            continue
        server.stop(kill=True)
        secs = server.start()
        print(
            f"  SIGKILL, restart      {secs:6.2f} s to ready  ({secs / base:5.1f} x baseline)  "
            f"{_mem(server.pid)}"
        )
        for line in server.recovery_lines():
            print(f"      log: {_LOGGER_PREFIX.sub('', line)[:150]}")
        stop_secs = server.stop()
        secs = server.start()
        print(
            f"  SIGTERM ({stop_secs:4.2f} s), restart {secs:6.2f} s to ready  "
            f"({secs / base:5.1f} x baseline)  {_mem(server.pid)}"
        )
        usage = disk_usage(server.data_dir)
        parts = ", ".join(f"{k} {v / MiB:,.0f}" for k, v in sorted(usage.items()) if k != "total" and v)
        print(f"  on disk               {usage['total'] / GiB:.2f} GiB allocated ({parts} MiB)")


def _pull_offsets(server: Server) -> dict[int, tuple[int, int]]:
    with BlockingRemotingClient(server.broker_addr) as client:
        return {
            q: (
                client.call(calls.get_min_offset(MessageQueue(TOPIC, BROKER, q))),
                client.call(calls.get_max_offset(MessageQueue(TOPIC, BROKER, q))),
            )
            for q in range(QUEUES)
        }


def pull_latency(server: Server, where: str, samples: int, window: int) -> list[float]:
    """Round trips of PULL_MESSAGE (32) at random offsets in the oldest or newest ``window``
    messages of each queue."""
    bounds = _pull_offsets(server)
    rng = random.Random(17)
    times: list[float] = []
    with BlockingRemotingClient(server.broker_addr) as client:
        for i in range(samples):
            q = i % QUEUES
            lo, hi = bounds[q]
            first, last = (lo, lo + window) if where == "old" else (hi - window, hi - 32)
            header = PullMessageRequestHeader(
                consumer_group="bench_scale_puller",
                topic=TOPIC,
                queue_id=q,
                queue_offset=rng.randrange(max(lo, first), max(lo + 1, last)),
                max_msg_nums=32,
                sys_flag=4,  # subscription in the request: no heartbeat of the group needed
                commit_offset=0,
                suspend_timeout_millis=0,
                subscription="*",
                sub_version=0,
                expression_type="TAG",
            )
            t0 = time.perf_counter()
            result = client.call(calls.pull_message(header))
            times.append(time.perf_counter() - t0)
            if not result.body:
                raise SystemExit(f"pull at {header.queue_offset} of queue {q} found nothing: {result.status}")
    return times


def bench_pull(server: Server, samples: int) -> None:
    bounds = _pull_offsets(server)
    per_queue = min(hi - lo for lo, hi in bounds.values())
    window = max(64, per_queue // 100)
    total = commit_log_max(server.broker_addr)
    print(
        f"\npulls of 32 x {BODY} B on the {total / GiB:.2f} GiB log ({per_queue:,} messages a queue): "
        f"{samples} round trips each, one in flight, random offsets among a queue's "
        f"{window:,} newest (head) / oldest (old)"
    )
    segments = sorted((server.data_dir / "commitlog").iterdir())
    first_seg = segments[:1]

    def line(label: str, times: list[float]) -> str:
        return f"  {label:<34} p50 {_pct(times, 0.5) * 1e3:6.2f} ms  p99 {_pct(times, 0.99) * 1e3:6.2f} ms"

    cached = cached_bytes(first_seg)
    note = f" ({cached / MiB:,.0f} MiB of segment 0 cached)" if cached is not None else ""
    head = pull_latency(server, "head", samples, window)
    old = pull_latency(server, "old", samples, window)
    print(line("head, warm", head))
    print(line("old (offset ~0), warm" + note, old))
    print(f"  old / head p50: {_pct(old, 0.5) / _pct(head, 0.5):.2f}x (warm)")
    server.stop()
    files = drop_from_page_cache(server.data_dir)
    cached = cached_bytes(segments)
    note = f", {cached / MiB:,.0f} MiB of the commit log cached after" if cached is not None else ""
    print(f"  cold: posix_fadvise(DONTNEED) on {files} store files{note}")
    secs = server.start()
    cached = cached_bytes(first_seg)
    note = f"; {cached / MiB:,.0f} MiB of segment 0 cached after it" if cached is not None else ""
    print(f"  cold restart: {secs:.2f} s to ready  {_mem(server.pid)}{note}")
    cold = pull_latency(server, "old", samples, window)
    head = pull_latency(server, "head", samples, window)
    print(line("old (offset ~0), cold", cold))
    print(line("head, after the cold restart", head))
    print(f"  old cold / head p50: {_pct(cold, 0.5) / _pct(head, 0.5):.2f}x")


# ---------------------------------------------------------------------------------- plan()


def _plan_inputs(consumers: int, queues: int, brokers: int = 10) -> tuple[list[MessageQueue], list[str]]:
    rng = random.Random(7)
    rooms = ("hz", "sh")
    per_broker = queues // brokers
    mqs = [
        MessageQueue("TopicScale", f"{rooms[b % 2]}@broker-{b:02d}", q)
        for b in range(brokers)
        for q in range(per_broker)
    ]
    cids = [
        f"{rooms[i % 2]}@10.0.{i // 250}.{i % 250}@{4000 + i}#{rng.getrandbits(40)}" for i in range(consumers)
    ]
    rng.shuffle(mqs)  # as a client holds them: a hash set, in no useful order
    rng.shuffle(cids)
    return mqs, cids


def _strategy(name: str, mqs: list[MessageQueue], cids: list[str]) -> Any:
    options: dict[str, Any] = {}
    if name == "CONFIG":
        options["queues"] = sorted_queues(mqs)[:16]
    elif name == "MACHINE_ROOM":
        options["rooms"] = {"hz"}
    elif name == "STICKY":  # the group before its last consumer joined
        options["previous"] = plan(get_strategy("AVG"), "bench", mqs, java_sorted(cids)[:-1])
    return get_strategy(name, **options)


def _median_time(repeat: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_plan(consumers: int, queues: int, repeat: int) -> None:
    big = _plan_inputs(consumers, queues)
    small = _plan_inputs(consumers // 10, queues // 10)
    print(
        f"\nplan(): every consumer's share, {consumers:,} consumers x {queues:,} queues on 10 brokers, "
        f"median of {repeat}; 'x for 10x' is the time over the same plan at "
        f"{consumers // 10:,} x {queues // 10:,} (linear ~10, quadratic ~100)"
    )
    print(f"  {'strategy':<22}{'s per plan':>11}{'x for 10x':>11}")
    for name in strategy_names():
        s_big = _strategy(name, *big)
        s_small = _strategy(name, *small)
        t_big = _median_time(repeat, lambda s=s_big: plan(s, "bench", big[0], big[1]))  # type: ignore[misc]
        t_small = _median_time(max(repeat, 5), lambda s=s_small: plan(s, "bench", small[0], small[1]))  # type: ignore[misc]
        print(f"  {name:<22}{t_big:>11.3f}{t_big / t_small:>10.1f}x")


# ---------------------------------------------------------------------------------- group


def bench_group(members: int, queues: int, steady: float) -> None:
    from rocketq.lab import Lab

    topic, group = "ScaleGroupTopic", "scale_group"
    print(
        f"\ngroup: {members} lab worker processes (one PushConsumer each, AVG, offsets persisted "
        f"every 5 s as RocketMQ's default) on one broker, topic of {queues} queues"
    )
    with Lab() as lab:
        assert lab.server is not None
        broker_pid = lab.server.pid
        lab.create_topic(topic, queues)
        idle = min(steady, 30.0)
        cpu0 = proc_cpu(broker_pid)
        time.sleep(idle)
        idle_cpu = (proc_cpu(broker_pid) - cpu0) / idle
        print(f"  baseline: broker CPU idle, no consumer  {idle_cpu * 100:5.2f} % of a core ({idle:.0f} s)")
        t0 = time.monotonic()
        workers = [
            lab.spawn_consumer(f"m{i:02d}", group, [topic], persist_interval=5.0) for i in range(members)
        ]
        lab.wait_stable(group, workers, [topic], timeout=600.0)
        print(f"  {members} members started and agreed in {time.monotonic() - t0:.1f} s (spawned at once)")
        time.sleep(2.0)
        cpu0 = proc_cpu(broker_pid)
        time.sleep(steady)
        busy = (proc_cpu(broker_pid) - cpu0) / steady
        rss = sum(proc_memory(w.pid)["VmRSS"] for w in workers)
        ratio = f"{busy / idle_cpu:.1f} x idle" if idle_cpu > 0 else "idle: below the clock tick"
        print(
            f"  steady state: broker CPU                 {busy * 100:5.2f} % of a core over {steady:.0f} s "
            f"({ratio}); broker {_mem(broker_pid)}; "
            f"the {members} workers {rss / MiB:,.0f} MiB RSS in all"
        )
        spawn_ms = time.time_ns() // 1_000_000
        joiner = lab.spawn_consumer(f"m{members:02d}", group, [topic], persist_interval=5.0)
        everyone = [*workers, joiner]
        result = lab.wait_stable(group, everyone, [topic], timeout=600.0)[topic]
        wanted = sorted(w.client_id or "" for w in everyone)
        covered = sorted(q for qs in result.values() for q in qs)
        assert covered == sorted(lab.queues(topic)), "the plan does not cover every queue once"
        settled: list[int] = []
        records = 0
        for w in [joiner, *workers]:
            mine = [e for e in w.rebalances(topic) if e["ts_ms"] >= spawn_ms]
            records += len(mine)
            for e in mine:
                owned = sorted(
                    MessageQueue(str(q["topic"]), str(q["broker"]), int(q["queue_id"])) for q in e["owned"]
                )
                if sorted(e["client_ids"]) == wanted and owned == result[w.client_id or ""]:
                    settled.append(int(e["ts_ms"]))
                    break
        assert len(settled) == len(everyone), "a member's records never showed the final plan"
        own, others = settled[0], settled[1:]
        print(
            f"  a member joins: every member agrees on {members + 1} ids and its share covers the "
            f"{queues} queues {(max(settled) - spawn_ms) / 1000:.2f} s after the joiner's spawn "
            f"(the joiner's own rebalance at {(own - spawn_ms) / 1000:.2f} s: process start, imports, "
            f"client start; the {len(others)} others' at {(min(others) - spawn_ms) / 1000:.2f}-"
            f"{(max(others) - spawn_ms) / 1000:.2f} s; {records} rebalance records)"
        )


# ---------------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (0.1 GiB, 100 x 1,000, 8 members)")
    parser.add_argument("--sizes", default="1,4", help="commit-log sizes, GiB (default 1,4)")
    parser.add_argument("--only", default="log,pull,plan,group", help="sections: log,pull,plan,group")
    parser.add_argument("--fill-threads", type=int, default=4, help="producer threads filling the log (4)")
    parser.add_argument("--samples", type=int, default=400, help="pull round trips per figure (400)")
    parser.add_argument("--repeat", type=int, default=5, help="plan() runs per figure, median (5)")
    parser.add_argument("--members", type=int, default=50, help="consumer group size (50)")
    parser.add_argument("--steady", type=float, default=60.0, help="seconds of steady state measured (60)")
    parser.add_argument("--tmp", default=None, help="where the data dirs go (default: temp)")
    args = parser.parse_args()
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    unknown = only - {"log", "pull", "plan", "group"}
    if unknown:
        parser.error(f"unknown sections: {', '.join(sorted(unknown))}")
    try:
        sizes = sorted(float(s) for s in args.sizes.split(","))
    except ValueError:
        parser.error(f"--sizes takes GiB numbers such as 1,4, not {args.sizes!r}")
    if args.quick:
        sizes, samples, members, steady, repeat = [0.1], 100, 8, 10.0, 1
        consumers, queues = 100, 1_000
    else:
        samples, members, steady, repeat = args.samples, args.members, args.steady, args.repeat
        consumers, queues = 1_000, 10_000
    ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / GiB
    chosen = ",".join(s for s in ("log", "pull", "plan", "group") if s in only)
    today = time.strftime("%Y-%m-%d")
    print(f"rocketq scale bench: {os.cpu_count()} cores, {ram:.0f} GiB RAM, {today}: {chosen}")
    if "plan" in only:
        bench_plan(consumers, queues, repeat)
    if "group" in only:
        bench_group(members, 64, steady)
    if only & {"log", "pull"}:
        with tempfile.TemporaryDirectory(prefix="rocketq-scale-", dir=args.tmp) as tmp:
            if "log" not in only:
                sizes = sizes[-1:]
            bench_log(Path(tmp), sizes, args.fill_threads, "log" in only, "pull" in only, samples)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        main()
