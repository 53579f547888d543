"""A long run at ~70 % of the broker's capacity, with a consumer group that churns: nothing leaks.

    python bench/bench_soak.py [--minutes 60] [--load 0.7] [--producers 2] [--members 3]
                               [--churn 60] [--plot docs/soak.png] [--json soak.json]

One ``rocketq server`` (uvloop, async flush, temp dir, loopback), an 8-queue topic, ``--producers``
producer processes (rocketq's :class:`~rocketq.client.Producer`, ``send_future`` paced drift-free)
and a consumer group of ``--members`` push-consumer processes. First the capacity of this very
set-up is measured (the producers unpaced for ``--calibrate`` seconds, the group consuming);
then the producers send at ``--load`` of it for ``--minutes``, and every ``--churn`` seconds one
member of the group leaves (SIGTERM, a graceful shutdown) and a new one joins. Every
``--sample`` seconds the RSS, open file descriptors and threads of every process (this one, the
server, each producer and consumer) are read from ``/proc``; the producers report the latency of
their sends (call to answer) and the consumers the latency of delivery (born to consumed).

At the end the producers stop, the group drains, and every acknowledged message is looked for
among what the consumers received (each process writes its sequence numbers to a file, so no
process holds them in memory): **lost** must be 0; **duplicates** must be within the rebalance
bound (each change of the group may redeliver what the moved queues consumed since their last
offset commit: changes x rate x (commit interval + 1 s)). **RSS and fds flat**: after the warm-up
(the first ``--warmup`` share of the run), the median of the last tenth of the samples of each
long-lived process (server, producers, this one) against the median of the first tenth after
warm-up: anonymous RSS (the heap; the broker's mapped commit log is file-backed RSS, plotted, not
checked) within 10 % + 8 MiB, fds other than files (sockets, pipes, event fds) within 8 (the
store's files grow with the data: plotted, not checked). Consumers live a few minutes each: their RSS at
the end of each life is compared across generations the same way.

Prints the figures, writes a plot (the report's plotting style: matplotlib's Agg, 10-inch wide
panels, tab10, grey dotted lines at each change of the group) and, with ``--json``, the samples.
Exit code 0 when every check holds.
"""

from __future__ import annotations

import argparse
import array
import functools
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TOPIC = "SoakTopic"
GROUP = "soak-group"
QUEUES = 8
COMMIT_INTERVAL = 1.0  # the consumers' offset persist interval (seconds)


# --------------------------------------------------------------------------------- children


def _producer(args: argparse.Namespace) -> int:
    """A producer process: sends ``<id>:<seq>`` at ``--rate`` (0: as fast as back-pressure lets
    it), writes each acknowledged seq to ``--out`` (uint32), a JSON status line per second."""
    from rocketq.client import ClientConfig, Message, Producer

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    producer = Producer(f"soak-producer-{args.id}", client_config=ClientConfig(namesrv=args.namesrv))
    producer.start()
    lock = threading.Lock()
    acked = array.array("I")
    lat: list[float] = []
    counts = {"acked": 0, "failed": 0}
    out = open(args.out, "wb")  # noqa: SIM115
    payload = b"x" * args.size

    def done(fut: Any, seq: int, t0: float) -> None:
        ok = fut.exception() is None
        with lock:
            if ok:
                acked.append(seq)
                lat.append(time.monotonic() - t0)
                counts["acked"] += 1
            else:
                counts["failed"] += 1

    def report() -> None:
        while not stop.wait(1.0):
            with lock:
                chunk, lats = acked.tobytes(), sorted(lat)
                del acked[:]
                lat.clear()
                line: dict[str, Any] = dict(counts)
            out.write(chunk)
            out.flush()
            if lats:
                line["p50_ms"] = lats[len(lats) // 2] * 1000
                line["p99_ms"] = lats[min(len(lats) - 1, int(len(lats) * 0.99))] * 1000
                line["n"] = len(lats)
            print(json.dumps({"type": "status", **line}), flush=True)

    threading.Thread(target=report, daemon=True).start()
    print(json.dumps({"type": "started", "pid": os.getpid()}), flush=True)
    began = time.monotonic()
    seq = 0
    pending: list[Any] = []
    while not stop.is_set():
        if args.rate > 0:
            delay = began + seq / args.rate - time.monotonic()
            if delay > 0 and stop.wait(delay):
                break
        seq += 1
        t0 = time.monotonic()
        try:
            fut = producer.send_future(Message(TOPIC, f"{args.id}:{seq}:".encode() + payload))
        except Exception:
            with lock:
                counts["failed"] += 1
            continue
        fut.add_done_callback(functools.partial(done, seq=seq, t0=t0))
        pending.append(fut)
        if len(pending) > 4096:
            pending = [f for f in pending if not f.done()]
    for f in pending:
        try:
            f.result(5.0)
        except Exception:
            pass
    producer.shutdown()
    with lock:
        out.write(acked.tobytes())
        line = dict(counts)
    out.close()
    print(json.dumps({"type": "stopped", **line, "sent": seq}), flush=True)
    return 0


def _consumer(args: argparse.Namespace) -> int:
    """A group member: writes (producer id, seq) of each message to ``--out`` (uint32 pairs),
    a JSON status line per second with the delivery latency (born to consumed)."""
    from rocketq.client import ClientConfig, ConsumeConcurrentlyStatus, PushConsumer
    from rocketq.client.config import ConsumeFromWhere

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    config = ClientConfig(
        namesrv=args.namesrv,
        instance_name=args.instance,
        persist_consumer_offset_interval=COMMIT_INTERVAL,
        persist_consumer_offset_initial_delay=COMMIT_INTERVAL,
    )
    consumer = PushConsumer(
        GROUP, client_config=config, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    )
    lock = threading.Lock()
    got = array.array("I")
    lat: list[int] = []
    total = [0]
    out = open(args.out, "wb")  # noqa: SIM115

    def listener(msgs: list[Any], ctx: Any) -> Any:
        now = time.time_ns() // 1_000_000
        with lock:
            for m in msgs:
                pid, seq, _ = m.body.split(b":", 2)
                got.append(int(pid))
                got.append(int(seq))
                lat.append(now - m.born_timestamp)
            total[0] += len(msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer.subscribe(TOPIC, "*")
    consumer.register_listener(listener)
    consumer.start()
    print(json.dumps({"type": "started", "pid": os.getpid()}), flush=True)

    def flush() -> dict[str, Any]:
        with lock:
            chunk, lats = got.tobytes(), sorted(lat)
            del got[:]
            lat.clear()
            line: dict[str, Any] = {"received": total[0]}
        out.write(chunk)
        out.flush()
        if lats:
            line["p50_ms"] = lats[len(lats) // 2]
            line["p99_ms"] = lats[min(len(lats) - 1, int(len(lats) * 0.99))]
            line["n"] = len(lats)
        return line

    while not stop.wait(1.0):
        print(json.dumps({"type": "status", **flush()}), flush=True)
    consumer.shutdown()
    line = flush()
    out.close()
    print(json.dumps({"type": "stopped", **line}), flush=True)
    return 0


# --------------------------------------------------------------------------------- the run


@dataclass
class Child:
    """A child process of this bench and the JSON lines it printed (read by a thread)."""

    name: str
    kind: str
    proc: subprocess.Popen[str]
    out: Path
    lines: list[dict[str, Any]] = field(default_factory=list)
    born: float = field(default_factory=time.monotonic)
    end_rss: int | None = None

    def __post_init__(self) -> None:
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                self.lines.append(json.loads(raw))
            except ValueError:
                pass

    def wait_started(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not any(x.get("type") == "started" for x in list(self.lines)):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not start (exit {self.proc.poll()})")
            time.sleep(0.05)

    def last(self, key: str, default: Any = 0) -> Any:
        for x in reversed(list(self.lines)):
            if key in x:
                return x[key]
        return default

    def stop(self, timeout: float = 30.0) -> None:
        if self.proc.poll() is None:
            self.end_rss = _proc(self.proc.pid)[0]
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(5.0)  # the reader thread takes the last lines, then the pipe is closed
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def _proc(pid: int) -> tuple[int, int, int, int, int]:
    """(anonymous RSS bytes, open fds but files, threads, file-backed RSS bytes, open files) of
    ``pid`` from /proc (zeros if it is gone). Anonymous RSS is the heap: what a leak grows.
    File-backed RSS is mostly the broker's mapped commit log, which grows with the data written
    and is the page cache's to evict. Likewise the fds: sockets, pipes and event fds are what a
    leak grows; the store's files (a consume-queue file per 300,000 entries of a queue, a commit
    log per GiB) grow with the data until retention deletes them. The growing kinds are plotted,
    not checked."""
    try:
        anon = file = threads = 0
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    anon = int(line.split()[1]) * 1024
                elif line.startswith("RssFile:"):
                    file = int(line.split()[1]) * 1024
                elif line.startswith("Threads:"):
                    threads = int(line.split()[1])
        files = 0
        names = os.listdir(f"/proc/{pid}/fd")
        for fd in names:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("/"):
                    files += 1
            except OSError:
                pass
        return anon, len(names) - files, threads, file, files
    except (OSError, ValueError):
        return 0, 0, 0, 0, 0


class Soak:
    def __init__(self, args: argparse.Namespace, work: Path) -> None:
        self.args = args
        self.work = work
        self.children: list[Child] = []
        self.members: list[Child] = []
        self.producers: list[Child] = []
        self.samples: list[dict[str, Any]] = []
        self.changes: list[float] = []
        self.t0 = time.monotonic()
        self._n = 0
        self.server: Any = None
        self.rng = random.Random(args.seed)

    def spawn(self, kind: str, *extra: str) -> Child:
        self._n += 1
        name = f"{kind}-{self._n}"  # producer ids are these numbers, unique in the run
        out = self.work / f"{name}.bin"
        cmd = [
            sys.executable,
            os.path.abspath(__file__),
            kind,
            "--namesrv",
            self.server.namesrv_addr,
            "--out",
            str(out),
            *extra,
        ]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        child = Child(name, kind, proc, out)
        self.children.append(child)
        return child

    def producers_at(self, rate: float) -> list[Child]:
        n = self.args.producers
        each = rate / n if rate > 0 else 0.0
        kids = [
            self.spawn(
                "_producer", "--id", str(self._n + 1), "--rate", str(each), "--size", str(self.args.size)
            )
            for _ in range(n)
        ]
        for k in kids:
            k.wait_started()
        return kids

    def join(self) -> Child:
        member = self.spawn("_consumer", "--instance", f"soak-{self._n + 1}")
        member.wait_started()
        self.members.append(member)
        self.changes.append(time.monotonic() - self.t0)
        return member

    def leave(self) -> None:
        member = self.members.pop(self.rng.randrange(len(self.members)))
        member.stop()
        self.changes.append(time.monotonic() - self.t0)

    def sample(self, phase: str) -> None:
        t = time.monotonic() - self.t0
        procs: dict[str, tuple[int, int, int, int, int]] = {
            "bench": _proc(os.getpid()),
            "server": _proc(self.server.pid),
        }
        for c in self.producers + self.members:
            procs[c.name] = _proc(c.proc.pid)
        p99 = max((c.last("p99_ms", 0.0) for c in self.producers), default=0.0)
        d99 = max((c.last("p99_ms", 0.0) for c in self.members), default=0.0)
        acked = sum(c.last("acked") for c in self.producers)
        self.samples.append(
            {
                "t": round(t, 1),
                "phase": phase,
                "procs": procs,
                "send_p99_ms": p99,
                "deliver_p99_ms": d99,
                "acked": acked,
            }
        )


def _rate(children: list[Child], key: str, seconds: float) -> float:
    """Sum over ``children`` of ``key``'s growth over their last ``seconds`` status lines."""
    total = 0.0
    for c in children:
        vals = [x[key] for x in list(c.lines) if x.get("type") == "status" and key in x]
        k = int(seconds)
        if len(vals) > k:
            total += (vals[-1] - vals[-1 - k]) / k
    return total


def _flat(series: list[float], warm: float) -> tuple[float, float]:
    """(median of the first tenth after warm-up, median of the last tenth) of ``series``."""
    xs = series[int(len(series) * warm) :]
    if len(xs) < 4:
        return (xs[0], xs[-1]) if xs else (0.0, 0.0)
    k = max(1, len(xs) // 10)

    def med(v: list[float]) -> float:
        return sorted(v)[len(v) // 2]

    return med(xs[:k]), med(xs[-k:])


def _read_pairs(paths: list[Path]) -> dict[int, list[int]]:
    import numpy as np

    by: dict[int, list[Any]] = {}
    for p in paths:
        a = np.fromfile(p, dtype=np.uint32)
        a = a[: len(a) // 2 * 2].reshape(-1, 2)
        for pid in np.unique(a[:, 0]):
            by.setdefault(int(pid), []).append(a[a[:, 0] == pid][:, 1])
    return {k: np.concatenate(v) for k, v in by.items()}  # type: ignore[misc]


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The soak (see the module docstring); returns its figures and checks."""
    import numpy as np

    from rocketq.admin import Admin
    from rocketq.embedded import spawn_server

    work = Path(tempfile.mkdtemp(prefix="rocketq-soak-"))
    soak = Soak(args, work)
    soak.server = spawn_server(work / "data")
    result: dict[str, Any] = {"minutes": args.minutes, "load": args.load, "seed": args.seed}
    try:
        with Admin(soak.server.namesrv_addr) as admin:
            admin.create_topic(TOPIC, queues=QUEUES)
        for _ in range(args.members):
            soak.join()
        # capacity of this set-up: producers unpaced, the group consuming
        soak.producers = soak.producers_at(0.0)
        time.sleep(args.calibrate)
        capacity = _rate(soak.producers, "acked", max(2, int(args.calibrate) - 2))
        for p in soak.producers:
            p.stop()
        rate = capacity * args.load
        result.update(capacity=round(capacity), rate=round(rate))
        print(
            f"seed {args.seed}; capacity of this set-up: {capacity:,.0f} sends/s; "
            f"soak at {args.load:.0%}: {rate:,.0f}/s "
            f"for {args.minutes:g} min, a member leaves and one joins every {args.churn:g} s",
            flush=True,
        )
        all_producers = list(soak.producers)
        soak.producers = soak.producers_at(rate)
        all_producers += soak.producers
        soak.t0 = time.monotonic()
        soak.changes.clear()
        end = soak.t0 + args.minutes * 60
        next_sample = next_churn = soak.t0
        next_churn += args.churn
        while time.monotonic() < end:
            now = time.monotonic()
            if now >= next_churn:
                soak.leave()
                soak.join()
                next_churn += args.churn
            if now >= next_sample:
                soak.sample("soak")
                next_sample += args.sample
                s = soak.samples[-1]
                if len(soak.samples) % max(1, int(60 / args.sample)) == 1:
                    print(
                        f"t={s['t']:7.1f}s acked {s['acked']:,} "
                        f"server anon rss {s['procs']['server'][0] / 2**20:.0f} MiB "
                        f"fds {s['procs']['server'][1]} send p99 {s['send_p99_ms']:.0f} ms",
                        flush=True,
                    )
            time.sleep(min(0.2, max(0.0, min(next_sample, next_churn, end) - time.monotonic())))
        for p in soak.producers:
            p.stop()
        acked_total = sum(p.last("acked") for p in all_producers)
        # drain: until the group has received every acknowledged message (or 60 s pass)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            received = sum(c.last("received") for c in soak.children if c.kind == "_consumer")
            if received >= acked_total:
                break
            time.sleep(0.5)
        time.sleep(2 * COMMIT_INTERVAL)
        while soak.members:
            soak.leave()
        # loss and duplicates, from the files (the calibration's messages are checked too)
        got = _read_pairs([c.out for c in soak.children if c.kind == "_consumer"])
        lost = dups = total_acked = 0
        for p in all_producers:
            a = np.fromfile(p.out, dtype=np.uint32)
            r = got.get(int(p.name.split("-")[-1]), np.zeros(0, dtype=np.uint32))
            total_acked += len(a)
            uniq, counts = np.unique(r, return_counts=True)
            dups += int((counts - 1).sum())
            lost += len(np.setdiff1d(a, uniq))
        changes = len(soak.changes)
        bound = int(changes * rate * (COMMIT_INTERVAL + 1.0))
        result.update(acked=total_acked, lost=lost, duplicates=dups, dup_bound=bound, changes=changes)
        # flatness
        warm = args.warmup
        flat: dict[str, Any] = {}
        ok_flat = True
        for name in ["server", "bench"] + [p.name for p in soak.producers]:
            rss = [s["procs"][name][0] for s in soak.samples if name in s["procs"] and s["procs"][name][0]]
            fds = [s["procs"][name][1] for s in soak.samples if name in s["procs"] and s["procs"][name][0]]
            r0, r1 = _flat(rss, warm)
            f0, f1 = _flat(fds, warm)
            good = r1 <= r0 * 1.10 + 8 * 2**20 and f1 <= f0 + 8
            ok_flat &= good
            flat[name] = {
                "rss_mib": [round(r0 / 2**20, 1), round(r1 / 2**20, 1)],
                "fds": [f0, f1],
                "flat": good,
            }
        ends = [c.end_rss for c in soak.children if c.kind == "_consumer" and c.end_rss]
        if len(ends) >= 4:
            r0, r1 = _flat([float(x) for x in ends], 0.0)
            good = r1 <= r0 * 1.10 + 8 * 2**20
            ok_flat &= good
            flat["consumers (RSS at leaving)"] = {
                "rss_mib": [round(r0 / 2**20, 1), round(r1 / 2**20, 1)],
                "flat": good,
            }
        result["flat"] = flat
        sp = [s["send_p99_ms"] for s in soak.samples if s["send_p99_ms"]]
        dp = [s["deliver_p99_ms"] for s in soak.samples if s["deliver_p99_ms"]]
        result["send_p99_ms_median"] = round(sorted(sp)[len(sp) // 2], 1) if sp else None
        result["send_p99_ms_max"] = round(max(sp), 1) if sp else None
        result["deliver_p99_ms_median"] = round(sorted(dp)[len(dp) // 2], 1) if dp else None
        result["ok"] = bool(lost == 0 and dups <= bound and ok_flat)
        if args.plot:
            _plot(soak, result, Path(args.plot))
        if args.json:
            Path(args.json).write_text(
                json.dumps({**result, "samples": soak.samples, "changes": soak.changes})
            )
        return result
    finally:
        for c in soak.children:
            if c.proc.poll() is None:
                c.proc.kill()
                c.proc.wait()
            c.reader.join(5.0)
            if c.proc.stdout is not None:
                c.proc.stdout.close()
        soak.server.stop()
        import shutil

        shutil.rmtree(work, ignore_errors=True)


def _plot(soak: Soak, result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = plt.get_cmap("tab10")
    ts = [s["t"] / 60 for s in soak.samples]
    fig, axes = plt.subplots(4, 1, figsize=(10, 11), sharex=True)
    names = ["server", "bench"] + [p.name for p in soak.producers]
    for i, name in enumerate(names):
        xs = [s["t"] / 60 for s in soak.samples if name in s["procs"]]
        rss = [s["procs"][name][0] / 2**20 for s in soak.samples if name in s["procs"]]
        fds = [s["procs"][name][1] for s in soak.samples if name in s["procs"]]
        thr = [s["procs"][name][2] for s in soak.samples if name in s["procs"]]
        label = name.replace("_producer", "producer")
        axes[0].plot(xs, rss, label=label, color=colors(i % 10), lw=1)
        if name == "server":  # the mapped store, on its own scale (right)
            mapped = [s["procs"][name][3] / 2**20 for s in soak.samples if name in s["procs"]]
            right = axes[0].twinx()
            right.plot(xs, mapped, color="grey", lw=0.8, ls="--")
            right.set_ylabel("server file-backed RSS (MiB, dashed)", fontsize=7, color="grey")
            right.set_ylim(bottom=0)
        axes[1].plot(xs, fds, label=label, color=colors(i % 10), lw=1)
        if name == "server" and all(len(s["procs"][name]) > 4 for s in soak.samples if name in s["procs"]):
            files = [s["procs"][name][4] for s in soak.samples if name in s["procs"]]
            axes[1].plot(xs, files, label="server's store files", color=colors(i % 10), lw=0.8, ls="--")
        axes[2].plot(xs, thr, label=label, color=colors(i % 10), lw=1)
    cons = [
        (s["t"] / 60, v[0] / 2**20)
        for s in soak.samples
        for k, v in s["procs"].items()
        if k.startswith("_consumer")
    ]
    if cons:
        axes[0].scatter([c[0] for c in cons], [c[1] for c in cons], s=2, color="grey", label="consumers")
    axes[3].plot(
        ts, [s["send_p99_ms"] for s in soak.samples], color=colors(0), lw=1, label="send p99 (call to answer)"
    )
    axes[3].plot(
        ts,
        [s["deliver_p99_ms"] for s in soak.samples],
        color=colors(1),
        lw=1,
        label="delivery p99 (born to consumed)",
    )
    split = all(len(v) > 4 for s in soak.samples for v in s["procs"].values())
    fds_label = "open fds (sockets, pipes)" if split else "open fds (all, files included)"
    for ax, label in zip(axes, ("anonymous RSS (MiB)", fds_label, "threads", "latency (ms)"), strict=True):
        for c in soak.changes:
            ax.axvline(c / 60, color="grey", lw=0.5, ls=":")
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    axes[3].set_yscale("symlog", linthresh=10)
    axes[-1].set_xlabel("minutes")
    axes[0].set_title(
        f"soak: {result['rate']:,} sends/s ({result['load']:.0%} of {result['capacity']:,}), "
        f"{result['changes']} group changes, {result['acked']:,} acked, lost {result['lost']}, "
        f"duplicates {result['duplicates']:,} (bound {result['dup_bound']:,})",
        fontsize=9,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", dpi=96, bbox_inches="tight")
    plt.close(fig)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="mode")
    prod = sub.add_parser("_producer")
    prod.add_argument("--namesrv", required=True)
    prod.add_argument("--out", required=True)
    prod.add_argument("--id", type=int, required=True)
    prod.add_argument("--rate", type=float, default=0.0)
    prod.add_argument("--size", type=int, default=100)
    cons = sub.add_parser("_consumer")
    cons.add_argument("--namesrv", required=True)
    cons.add_argument("--out", required=True)
    cons.add_argument("--instance", required=True)
    p.add_argument("--minutes", type=float, default=60.0)
    p.add_argument("--load", type=float, default=0.7, help="share of the measured capacity (0.7)")
    p.add_argument("--producers", type=int, default=2)
    p.add_argument("--members", type=int, default=3)
    p.add_argument("--churn", type=float, default=60.0, help="seconds between group changes (60)")
    p.add_argument("--calibrate", type=float, default=12.0, help="seconds measuring the capacity (12)")
    p.add_argument("--sample", type=float, default=5.0, help="seconds between samples (5)")
    p.add_argument("--warmup", type=float, default=0.2, help="share of the run left out of flatness (0.2)")
    p.add_argument("--size", type=int, default=100, help="body bytes (100)")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--plot", default=None, help="write the plot here (PNG)")
    p.add_argument("--json", default=None, help="write the figures and samples here")
    p.add_argument("--replot", default=None, metavar="JSON", help="only redraw a saved run's plot")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.mode is None and args.seed is None:
        args.seed = random.randrange(2**32)
    if args.replot:  # redraw the plot of a saved run (--json) into --plot
        saved = json.loads(Path(args.replot).read_text())
        soak = Soak.__new__(Soak)
        soak.samples, soak.changes = saved["samples"], saved["changes"]
        producers = sorted({k for s in soak.samples for k in s["procs"] if k.startswith("_producer")})
        soak.producers = [Child.__new__(Child) for _ in producers]
        for child, name in zip(soak.producers, producers, strict=True):
            child.name = name
        _plot(soak, {**saved, "changes": len(saved["changes"])}, Path(args.plot))
        return 0
    if args.mode == "_producer":
        return _producer(args)
    if args.mode == "_consumer":
        return _consumer(args)

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt  # stop: the run's finally stops every process it started

    signal.signal(signal.SIGTERM, interrupt)
    result = run(args)
    print(json.dumps(result, indent=1))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
