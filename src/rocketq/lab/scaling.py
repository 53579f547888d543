"""A consumer group scaled while a steady producer runs, and what each rebalance cost.

:func:`run_scaling` is what ``rocketq lab rebalance-cost`` and ``rocketq demo`` share: a topic, a
:class:`SteadyProducer` at a fixed rate (drift-free pacing, asynchronous sends), and a group of
consumer processes taken through a list of sizes (``(1, 3, 2)``: start one, add two, stop one),
each change followed by a wait until every member owns its planned share and then a steady
phase. Afterwards :func:`measure` reads the consumers' own records and computes, per change:

* **moved queues** - queues whose owner differs between the plans before and after;
* **pause** per moved queue - from the old owner's last consumption of it (or its drop, when it
  consumed nothing there) to the new owner's first consumption;
* **duplicates** - receipts of a body already received (attributed to the change whose window
  the second receipt falls in);
* **backlog** - the peak of (sent - consumed) during the change's window;

and in total: sent, consumed, lost (sent, acknowledged, never consumed), duplicates.
"""

from __future__ import annotations

import bisect
import functools
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rocketq.client import Message
from rocketq.lab.harness import Lab, Received, Worker
from rocketq.models import MessageQueue

__all__ = [
    "QueueHandoff",
    "ScalingRun",
    "SteadyProducer",
    "TransitionCost",
    "change_costs",
    "measure",
    "run_scaling",
]


class SteadyProducer:
    """Sends ``<prefix>-<n>`` to ``topic`` at ``rate`` per second from a thread until stopped.

    Pacing is drift-free (message *n* is due at ``start + n / rate``); sends are asynchronous, so
    a slow answer does not slow the rate. ``sent`` maps each acknowledged body to its queue and
    send time (epoch ms); ``failed`` counts sends the broker did not acknowledge.
    """

    def __init__(self, lab: Lab, topic: str, rate: float, prefix: str) -> None:
        self.lab = lab
        self.topic = topic
        self.rate = rate
        self.prefix = prefix
        self.sent: dict[str, tuple[MessageQueue, int]] = {}
        self.failed = 0
        self.attempted = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._pending: list[Any] = []
        self._thread = threading.Thread(target=self._run, name="lab-producer", daemon=True)

    def start(self) -> None:
        self.lab.producer  # start the producer (and fetch its route) before the clock starts  # noqa: B018
        self._thread.start()

    def _run(self) -> None:
        producer = self.lab.producer
        began = time.monotonic()
        n = 0
        while not self._stop.is_set():
            due = began + n / self.rate
            delay = due - time.monotonic()
            if delay > 0 and self._stop.wait(delay):
                break
            n += 1
            body = f"{self.prefix}-{n}"
            ts = time.time_ns() // 1_000_000
            self.attempted += 1
            future = producer.send_future(Message(self.topic, body.encode()))
            future.add_done_callback(functools.partial(self._done, body=body, ts=ts))
            self._pending.append(future)

    def _done(self, future: Any, body: str, ts: int) -> None:
        with self._lock:
            if future.exception() is not None:
                self.failed += 1
            else:
                self.sent[body] = (future.result().message_queue, ts)

    def stop(self) -> None:
        """Stop sending and wait (bounded) for the answers of the sends in flight."""
        self._stop.set()
        self._thread.join(10.0)
        for f in self._pending:
            try:
                f.result(10.0)
            except Exception:  # counted as failed by the callback
                pass
        self._pending.clear()

    def snapshot(self) -> dict[str, tuple[MessageQueue, int]]:
        with self._lock:
            return dict(self.sent)


@dataclass(frozen=True, slots=True)
class QueueHandoff:
    """One moved queue in one change of the group."""

    queue: MessageQueue
    old_owner: str
    new_owner: str
    pause_ms: int | None
    backlog: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "queue_id": self.queue.queue_id,
            "broker": self.queue.broker_name,
            "from": self.old_owner,
            "to": self.new_owner,
            "pause_ms": self.pause_ms,
            "backlog": self.backlog,
        }


@dataclass
class TransitionCost:
    """What one change of the group's size cost."""

    label: str
    at_ms: int
    settled_ms: int
    end_ms: int
    handoffs: list[QueueHandoff] = field(default_factory=list)
    duplicates: int = 0
    peak_backlog: int = 0

    @property
    def longest_pause_ms(self) -> int | None:
        pauses = [h.pause_ms for h in self.handoffs if h.pause_ms is not None]
        return max(pauses) if pauses else None

    @property
    def median_pause_ms(self) -> int | None:
        pauses = sorted(h.pause_ms for h in self.handoffs if h.pause_ms is not None)
        return pauses[len(pauses) // 2] if pauses else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "change": self.label,
            "at_ms": self.at_ms,
            "settle_ms": self.settled_ms - self.at_ms,
            "moved_queues": len(self.handoffs),
            "longest_pause_ms": self.longest_pause_ms,
            "median_pause_ms": self.median_pause_ms,
            "duplicates": self.duplicates,
            "peak_backlog": self.peak_backlog,
            "handoffs": [h.to_dict() for h in self.handoffs],
        }


@dataclass
class ScalingRun:
    """A finished scaling run: what was sent, who consumed what, and the cost of each change."""

    topic: str
    group: str
    handoff: str
    rate: float
    sizes: tuple[int, ...]
    sent: dict[str, tuple[MessageQueue, int]]
    failed_sends: int
    receipts: list[Received]
    transitions: list[TransitionCost]
    plans: list[dict[str, list[MessageQueue]]]
    workers: list[Worker]

    @property
    def consumed(self) -> int:
        return len({r.body for r in self.receipts} & set(self.sent))

    @property
    def lost(self) -> list[str]:
        got = {r.body for r in self.receipts}
        return sorted(b for b in self.sent if b not in got)

    @property
    def duplicates(self) -> int:
        return len([r for r in self.receipts if r.body in self.sent]) - self.consumed

    @property
    def longest_pause_ms(self) -> int | None:
        pauses = [t.longest_pause_ms for t in self.transitions if t.longest_pause_ms is not None]
        return max(pauses) if pauses else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "group": self.group,
            "handoff": self.handoff,
            "rate": self.rate,
            "sizes": list(self.sizes),
            "sent": len(self.sent),
            "failed_sends": self.failed_sends,
            "consumed": self.consumed,
            "lost": len(self.lost),
            "duplicates": self.duplicates,
            "longest_pause_ms": self.longest_pause_ms,
            "transitions": [t.to_dict() for t in self.transitions],
            "received_per_consumer": {
                w.name: len([r for r in self.receipts if r.worker == w.name]) for w in self.workers
            },
        }


Tick = Callable[[str, list[Worker], SteadyProducer], None]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def run_scaling(
    lab: Lab,
    topic: str,
    group: str,
    *,
    sizes: Sequence[int] = (1, 3, 2),
    rate: float = 200.0,
    phase_seconds: float = 3.0,
    handoff: str | None = None,
    queues: int = 16,
    tick: Tick | None = None,
    tick_interval: float = 0.25,
    drain_timeout: float = 20.0,
    work_ms: float = 0.0,
    trace: bool = False,
) -> ScalingRun:
    """Run the scaling experiment (see the module docstring); ``tick(phase, workers, producer)``
    is called every ``tick_interval`` seconds while it runs (the demo's live view)."""
    lab.create_topic(topic, queues)
    options: dict[str, Any] = {"handoff": handoff, "work_ms": work_ms, "trace": trace}
    workers: list[Worker] = []
    active: list[Worker] = []
    producer = SteadyProducer(lab, topic, rate, f"{group}")
    plans: list[dict[str, list[MessageQueue]]] = []
    marks: list[tuple[str, int, int]] = []  # (label, change began, settled)

    def steady(label: str, seconds: float) -> None:
        end = time.monotonic() + seconds
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return
            if tick is not None:
                tick(label, active, producer)
            time.sleep(min(tick_interval, left))

    def settle(label: str) -> None:
        began = _now_ms()
        done = threading.Event()
        result: list[dict[str, list[MessageQueue]]] = []
        error: list[BaseException] = []

        def wait() -> None:
            try:
                result.append(lab.wait_stable(group, active, [topic])[topic])
            except BaseException as exc:
                error.append(exc)
            finally:
                done.set()

        threading.Thread(target=wait, daemon=True).start()
        while not done.wait(tick_interval):
            if tick is not None:
                tick(label, active, producer)
        if error:
            raise error[0]
        plans.append(result[0])
        marks.append((label, began, _now_ms()))

    try:
        previous = 0
        for i, size in enumerate(sizes):
            label = f"{previous} -> {size}" if i else f"start {size}"
            if size > previous:
                for _ in range(size - previous):
                    w = lab.spawn_consumer(f"consumer-{len(workers) + 1}", group, [topic], **options)
                    workers.append(w)
                    active.append(w)
            else:
                leaving = active[size:]
                del active[size:]
                for w in leaving:
                    w.terminate()
            settle(label)
            if i == 0:
                producer.start()
            steady(label, phase_seconds)
            previous = size
        producer.stop()
        sent = producer.snapshot()

        def drained() -> bool:
            got = {r.body for w in workers for r in w.received()}
            return all(b in got for b in sent)

        drain_end = time.monotonic() + drain_timeout
        while not drained() and time.monotonic() < drain_end:
            if tick is not None:
                tick("draining", active, producer)
            with lab.changed:
                lab.changed.wait(tick_interval)
        if tick is not None:
            tick("done", active, producer)
    finally:
        producer.stop()
        lab.stop_workers(workers)
    receipts = sorted((r for w in workers for r in w.received()), key=lambda r: r.ts_ms)
    run = ScalingRun(
        topic=topic,
        group=group,
        handoff=handoff or "default",
        rate=rate,
        sizes=tuple(sizes),
        sent=producer.snapshot(),
        failed_sends=producer.failed,
        receipts=receipts,
        transitions=[],
        plans=plans,
        workers=workers,
    )
    run.transitions = measure(run, marks)
    return run


def measure(run: ScalingRun, marks: Sequence[tuple[str, int, int]]) -> list[TransitionCost]:
    """The cost of each change after the first, from the run's workers' records."""
    names = {w.client_id or w.name: w.name for w in run.workers}
    # drop time of a queue by a consumer: the rebalance record that removed it
    drops: dict[tuple[str, MessageQueue], list[int]] = {}
    for w in run.workers:
        for rec in w.rebalances(run.topic):
            for d in rec["removed"]:
                q = MessageQueue(str(d["topic"]), str(d["broker"]), int(d["queue_id"]))
                drops.setdefault((w.name, q), []).append(int(rec["end_ms"]))
    return change_costs(run.receipts, run.sent, run.plans, marks, names, drops)


def change_costs(
    receipts: Sequence[Received],
    sent: Mapping[str, tuple[MessageQueue, int]],
    plans: Sequence[Mapping[str, Sequence[MessageQueue]]],
    marks: Sequence[tuple[str, int, int]],
    names: Mapping[str, str],
    drops: Mapping[tuple[str, MessageQueue], Sequence[int]],
) -> list[TransitionCost]:
    """The cost of each change after the first (see the module docstring), from plain records.

    ``receipts`` sorted by time; ``sent`` body -> (queue, send time); ``plans[k]`` the settled
    plan (client id -> queues) after change ``k``; ``marks[k]`` (label, began, settled) in epoch
    ms; ``names`` client id -> consumer name; ``drops`` (consumer, queue) -> times it dropped it.
    """
    by_queue: dict[MessageQueue, list[Received]] = {}
    for r in receipts:
        by_queue.setdefault(r.queue, []).append(r)
    sent_times = sorted(ts for _, ts in sent.values())
    first_seen: dict[str, int] = {}
    dup_times: list[int] = []
    for r in receipts:
        if r.body not in sent:
            continue
        if r.body in first_seen:
            dup_times.append(r.ts_ms)
        else:
            first_seen[r.body] = r.ts_ms
    consumed_times = sorted(first_seen.values())
    out: list[TransitionCost] = []
    end_of_run = receipts[-1].ts_ms if receipts else _now_ms()
    for k in range(1, len(marks)):
        label, began, settled = marks[k]
        end = marks[k + 1][1] if k + 1 < len(marks) else end_of_run
        cost = TransitionCost(label, began, settled, end)
        before, after = plans[k - 1], plans[k]
        owner_before = {q: names.get(cid, cid) for cid, qs in before.items() for q in qs}
        owner_after = {q: names.get(cid, cid) for cid, qs in after.items() for q in qs}
        for q in sorted(owner_after):
            old, new = owner_before.get(q), owner_after[q]
            if old is None or old == new:
                continue
            recs = by_queue.get(q, [])
            first_new = next((r.ts_ms for r in recs if r.worker == new and r.ts_ms >= began), None)
            pause: int | None = None
            backlog = 0
            if first_new is not None:
                olds = [r.ts_ms for r in recs if r.worker == old and began - 60_000 <= r.ts_ms <= first_new]
                start = (
                    max(olds)
                    if olds
                    else max((t for t in drops.get((old, q), []) if t <= first_new), default=None)
                )
                if start is not None:
                    pause = max(first_new - start, 0)
                    backlog = sum(1 for bq, ts in sent.values() if bq == q and start < ts <= first_new)
            cost.handoffs.append(QueueHandoff(q, old, new, pause, backlog))
        cost.duplicates = sum(1 for t in dup_times if began <= t < end)
        peak = 0
        for t in [began, *(ts for ts in sent_times if began <= ts < end)]:
            backlog_now = bisect.bisect_right(sent_times, t) - bisect.bisect_right(consumed_times, t)
            peak = max(peak, backlog_now)
        cost.peak_backlog = peak
        out.append(cost)
    return out
