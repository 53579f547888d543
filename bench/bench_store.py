"""How fast the message store appends and serves pulls, against raw file writes in the same run.

Cases (records are encoded once beforehand: the store's work starts at an encoded record):

* **async**: ``put_message`` one record at a time, and ``put_messages`` batches of 32, under
  ``flush="async"`` (a background fsync every 500 ms);
* **sync**: ``put_message`` under ``flush="sync"`` from 1 and from 32 threads, each waiting for
  its group-commit future, and from 32 coroutines on one asyncio loop awaiting
  ``asyncio.wrap_future`` (how the broker will drive it); also reports appends per fsync;
* **pull**: ``get_messages`` in batches of 32 over a queue filled beforehand (stored bytes, no
  decoding), messages/s and MB/s;
* **recovery**: MB/s of commit log checked when reopening after a crash with no usable
  checkpoint, with the consume queues intact and with them lost (rebuilt from the log).

Baselines, measured on the same disk in the same run: ``os.write`` of the same bytes to a file
one record per call (the floor for any append path that makes a syscall per message), and for
sync flush ``os.pwrite`` + ``os.fdatasync`` per record into a pre-sized file (what acknowledging
each message after its own fsync would cost). Ratios are store / baseline throughput. The
"mmap slice copy" row times the write path the store does *not* use (a memory copy into a
shared mapping, unsafe on a full disk - see :mod:`rocketq.store.segments`) for comparison.

The sync rows depend on how soon the group-commit thread gets the GIL back after an fsync:
``--switch-interval 0.0005`` shows the effect of a shorter CPython switch interval, which the
broker process should set.

Run: ``python bench/bench_store.py`` (``--seconds`` per case, ``--dir`` for the disk to test).
"""

from __future__ import annotations

import argparse
import asyncio
import mmap
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

from rocketq.protocol.message import encode_message
from rocketq.protocol.properties import tags_code
from rocketq.store import MessageStore, StoreConfig

SEGMENT = 256 * 1024 * 1024


def make_record(size: int) -> bytes:
    """A stored record of about ``size`` bytes in total (headers included)."""
    probe = encode_message(topic="BenchTopic", body=b"", properties={"TAGS": "TagA"})
    body = b"x" * max(0, size - len(probe))
    return encode_message(topic="BenchTopic", body=body, properties={"TAGS": "TagA"}, queue_id=0)


def timed(seconds: float, step: Callable[[], int]) -> tuple[int, float]:
    """Call ``step`` (returns messages done) until ``seconds`` pass; (messages, elapsed)."""
    done = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(50):
            done += step()
        now = time.perf_counter()
        if now >= deadline:
            return done, now - start


def baseline_write(directory: Path, record: bytes, seconds: float, sync: bool) -> float:
    """Raw appends of ``record``: ``os.write`` per record, or (``sync``) ``os.pwrite`` +
    ``os.fdatasync`` per record into a pre-sized file, the shape of a commit-log segment."""
    path = directory / "baseline.bin"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    size = len(record)
    try:
        if sync:
            os.ftruncate(fd, SEGMENT)
            pos = [0]

            def step() -> int:
                os.pwrite(fd, record, pos[0])
                os.fdatasync(fd)
                pos[0] = (pos[0] + size) % (SEGMENT - size)
                return 1

        else:

            def step() -> int:
                os.write(fd, record)
                return 1

        n, elapsed = timed(seconds, step)
    finally:
        os.close(fd)
        path.unlink()
    return n / elapsed


def baseline_mmap(directory: Path, record: bytes, seconds: float) -> float:
    """The alternative write path: copy each record into a shared writable ``mmap``."""
    path = directory / "mmap.bin"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    size = len(record)
    try:
        os.ftruncate(fd, SEGMENT)
        with mmap.mmap(fd, SEGMENT) as mm:
            pos = [0]

            def step() -> int:
                p = pos[0]
                mm[p : p + size] = record
                pos[0] = (p + size) % (SEGMENT - size)
                return 1

            n, elapsed = timed(seconds, step)
    finally:
        os.close(fd)
        path.unlink()
    return n / elapsed


def fresh(directory: Path, flush: str) -> MessageStore:
    shutil.rmtree(directory / "store", ignore_errors=True)
    return MessageStore(directory / "store", StoreConfig(flush=flush, commit_log_segment_size=SEGMENT))  # type: ignore[arg-type]


def bench_async(directory: Path, record: bytes, seconds: float, batch: int) -> float:
    code = tags_code("TagA")
    with fresh(directory, "async") as store:
        if batch == 1:

            def step() -> int:
                store.put_message("BenchTopic", 0, record, code)
                return 1

        else:
            records = [record] * batch
            codes = [code] * batch

            def step() -> int:
                store.put_messages("BenchTopic", 0, records, codes)
                return batch

        n, elapsed = timed(seconds, step)
    return n / elapsed


def bench_sync(directory: Path, record: bytes, seconds: float, threads: int) -> tuple[float, float]:
    code = tags_code("TagA")
    with fresh(directory, "sync") as store:
        counts = [0] * threads
        stop = threading.Event()

        def worker(index: int) -> None:
            queue_id = index % 8
            while not stop.is_set():
                result = store.put_message("BenchTopic", queue_id, record, code)
                assert result.durable is not None
                result.durable.result()
                counts[index] += 1

        workers = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
        fsyncs_before = store.group_commit_fsyncs
        start = time.perf_counter()
        for w in workers:
            w.start()
        time.sleep(seconds)
        stop.set()
        for w in workers:
            w.join()
        elapsed = time.perf_counter() - start
        fsyncs = store.group_commit_fsyncs - fsyncs_before
    total = sum(counts)
    return total / elapsed, total / max(fsyncs, 1)


def bench_sync_asyncio(
    directory: Path, record: bytes, seconds: float, inflight: int, shared: bool
) -> tuple[float, float]:
    """Sync flush driven as the broker drives it: one event loop appends in line and awaits the
    group-commit future, ``inflight`` senders at once. ``shared=False`` wraps every send's future
    with ``asyncio.wrap_future`` (one cross-thread wake-up per send); ``shared=True`` makes one
    loop future per distinct group-commit future (one wake-up per fsync round)."""
    code = tags_code("TagA")
    with fresh(directory, "sync") as store:
        counts = [0] * inflight

        async def run() -> float:
            loop = asyncio.get_running_loop()
            waiters: dict[Future[None], asyncio.Future[None]] = {}

            def resolve(fut: Future[None], waiter: asyncio.Future[None]) -> None:
                waiters.pop(fut, None)
                exc = fut.exception()
                if exc is not None:
                    waiter.set_exception(exc)
                else:
                    waiter.set_result(None)

            def durable(fut: Future[None]) -> asyncio.Future[None]:
                if not shared:
                    return asyncio.wrap_future(fut)
                waiter = waiters.get(fut)
                if waiter is None:
                    waiter = waiters[fut] = loop.create_future()
                    fut.add_done_callback(lambda f, w=waiter: loop.call_soon_threadsafe(resolve, f, w))
                return waiter

            async def sender(index: int, deadline: float) -> None:
                queue_id = index % 8
                while time.perf_counter() < deadline:
                    result = store.put_message("BenchTopic", queue_id, record, code)
                    assert result.durable is not None
                    await durable(result.durable)
                    counts[index] += 1

            start = time.perf_counter()
            await asyncio.gather(*(sender(i, start + seconds) for i in range(inflight)))
            return time.perf_counter() - start

        fsyncs_before = store.group_commit_fsyncs
        elapsed = asyncio.run(run())
        fsyncs = store.group_commit_fsyncs - fsyncs_before
    total = sum(counts)
    return total / elapsed, total / max(fsyncs, 1)


def bench_pull(directory: Path, record: bytes, seconds: float, count: int) -> float:
    code = tags_code("TagA")
    with fresh(directory, "async") as store:
        records = [record] * 32
        codes = [code] * 32
        for _ in range(count // 32):
            store.put_messages("BenchTopic", 0, records, codes)
        max_offset = store.max_offset("BenchTopic", 0)
        state = {"offset": 0}

        def step() -> int:
            got = store.get_messages("BenchTopic", 0, state["offset"], 32)
            nxt = got.next_begin_offset
            state["offset"] = 0 if nxt >= max_offset else nxt
            return got.message_count

        n, elapsed = timed(seconds, step)
    return n / elapsed


def bench_recovery(directory: Path, record: bytes, megabytes: int) -> tuple[float, float]:
    """Crash-recovery speed: MB/s of commit log scanned (magic, sizes, CRC) when reopening after
    a crash, and when the consume queues are lost too and must be rebuilt from it."""
    root = directory / "store"
    shutil.rmtree(root, ignore_errors=True)
    with MessageStore(root, StoreConfig(commit_log_segment_size=SEGMENT), start_services=False) as store:
        records = [record] * 32
        while store.commit_log_max_offset < megabytes * 1_000_000:
            store.put_messages("BenchTopic", 0, records)
        size = store.commit_log_max_offset / 1e6
    rates = []
    for lose_queues in (False, True):
        if lose_queues:
            shutil.rmtree(root / "consumequeue")
        (root / "abort").touch()
        (root / "checkpoint").write_bytes(bytes(4096))  # no safe point: scan everything
        start = time.perf_counter()
        MessageStore(root, StoreConfig(commit_log_segment_size=SEGMENT), start_services=False).close()
        rates.append(size / (time.perf_counter() - start))
    shutil.rmtree(root, ignore_errors=True)
    return rates[0], rates[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.5, help="duration of each case")
    parser.add_argument("--dir", default=None, help="directory on the disk to measure (default: a temp dir)")
    parser.add_argument("--pull-messages", type=int, default=50_000)
    parser.add_argument("--recovery-mb", type=int, default=64, help="commit log size for the recovery case")
    parser.add_argument(
        "--switch-interval",
        type=float,
        default=None,
        help="sys.setswitchinterval for the run (CPython's default is 0.005 s)",
    )
    args = parser.parse_args()
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval)

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        directory = Path(tmp)
        print(f"store benchmark in {directory}, {args.seconds:.1f} s per case\n")
        header = f"{'case':<34}{'msgs/s':>12}{'MB/s':>9}{'vs baseline':>13}"
        for size in (128, 1024):
            record = make_record(size)
            mb = len(record) / 1e6
            print(f"--- records of {len(record)} bytes ---")
            print(header)
            base = baseline_write(directory, record, args.seconds, sync=False)
            base_sync = baseline_write(directory, record, args.seconds, sync=True)
            rows: list[tuple[str, float, float, str]] = [
                ("baseline os.write per record", base, 1.0, ""),
                ("baseline pwrite+fdatasync", base_sync, base_sync / base, ""),
            ]
            rate = baseline_mmap(directory, record, args.seconds)
            rows.append(("(mmap slice copy per record)", rate, rate / base, ""))
            rate = bench_async(directory, record, args.seconds, 1)
            rows.append(("async put_message", rate, rate / base, ""))
            rate = bench_async(directory, record, args.seconds, 32)
            rows.append(("async put_messages x32", rate, rate / base, ""))
            for threads in (1, 32):
                rate, per_fsync = bench_sync(directory, record, args.seconds, threads)
                rows.append(
                    (
                        f"sync put_message {threads} thread{'s' if threads > 1 else ''}",
                        rate,
                        rate / base_sync,
                        f"  (x fsync/rec; {per_fsync:.1f} appends per fsync)",
                    )
                )
            for shared in (False, True):
                rate, per_fsync = bench_sync_asyncio(directory, record, args.seconds, 32, shared)
                rows.append(
                    (
                        f"sync asyncio 32 in flight{', shared' if shared else ''}",
                        rate,
                        rate / base_sync,
                        f"  (x fsync/rec; {per_fsync:.1f} appends per fsync)",
                    )
                )
            rate = bench_pull(directory, record, args.seconds, args.pull_messages)
            rows.append(("pull get_messages x32", rate, rate / base, ""))
            for name, rate, ratio, note in rows:
                print(f"{name:<34}{rate:>12,.0f}{rate * mb:>9.1f}{ratio:>12.2f}x{note}")
            scan, rebuild = bench_recovery(directory, record, args.recovery_mb)
            print(
                f"crash recovery of {args.recovery_mb} MB: scan {scan:,.0f} MB/s, "
                f"rebuilding lost queues {rebuild:,.0f} MB/s"
            )
            print()


if __name__ == "__main__":
    main()
