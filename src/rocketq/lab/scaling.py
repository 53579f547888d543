"""A consumer group scaled while a steady producer runs, and what each rebalance cost.

:func:`run_scaling` is what ``rocketq lab rebalance-cost`` and ``rocketq demo`` share: a topic, a
:class:`SteadyProducer` at a fixed rate (drift-free pacing, asynchronous sends), and a group of
consumer processes taken through a list of sizes (``(1, 3, 2)``: start one, add two, stop one),
each change followed by a wait until every member owns its planned share and then a steady
phase. Afterwards :func:`measure` hands the consumers' own records - every delivery with the
start of its listener call and its store time, every rebalance record - and the producer's
acknowledged sends to :func:`rocketq.analytics.analyze`, the one computation of the figures that
``rocketq report`` also uses: per change of the group's member list, the queues moved, the pause
of each, the duplicates and the peak backlog; in total sent, consumed, lost (sent, acknowledged,
never consumed) and duplicates.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rocketq.analytics import Analysis, Delivery, Move, RebalanceEvent, Stored, analyze
from rocketq.client import Message
from rocketq.lab.harness import Lab, Received, Worker
from rocketq.models import MessageQueue

__all__ = ["ScalingRun", "SteadyProducer", "measure", "run_scaling"]


class SteadyProducer:
    """Sends ``<prefix>-<n>`` to ``topic`` at ``rate`` per second from a thread until stopped.

    Pacing is drift-free (message *n* is due at ``start + n / rate``); sends are asynchronous, so
    a slow answer does not slow the rate. ``sent`` maps each acknowledged body to its queue, send
    time (epoch ms) and message id; ``failed`` counts sends the broker did not acknowledge.
    """

    def __init__(self, lab: Lab, topic: str, rate: float, prefix: str) -> None:
        self.lab = lab
        self.topic = topic
        self.rate = rate
        self.prefix = prefix
        self.sent: dict[str, tuple[MessageQueue, int, str]] = {}
        self.failed = 0
        self.attempted = 0
        self.began: float | None = None
        self._due = 0.0  # when the next send is due (monotonic)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._pending: list[Any] = []
        self._thread = threading.Thread(target=self._run, name="lab-producer", daemon=True)

    def start(self) -> None:
        self.lab.producer  # start the producer (and fetch its route) before the clock starts  # noqa: B018
        self._thread.start()

    def _run(self) -> None:
        producer = self.lab.producer
        self.began = began = time.monotonic()
        n = 0
        while not self._stop.is_set():
            self._due = due = began + n / self.rate
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
                result = future.result()
                self.sent[body] = (result.message_queue, ts, result.msg_id)

    @property
    def behind(self) -> float:
        """Seconds the schedule is behind: the producer waits for the broker (back-pressure: the
        client's window of sends in flight is full), so the rate asked is more than it takes."""
        if self.began is None or self._stop.is_set():
            return 0.0
        return max(0.0, time.monotonic() - self._due)

    @property
    def achieved_rate(self) -> float:
        """Acknowledged sends per second since the start."""
        if self.began is None:
            return 0.0
        with self._lock:
            n = len(self.sent)
        return n / max(time.monotonic() - self.began, 1e-9)

    def stop(self, wait: float = 10.0) -> None:
        """Stop sending and wait up to ``wait`` seconds in all for the answers of the sends in
        flight (the ones still out count as neither sent nor failed)."""
        self._stop.set()
        deadline = time.monotonic() + wait
        if self._thread.ident is not None:  # started (Ctrl-C can come before the first phase began)
            self._thread.join(wait)
        for f in self._pending:
            try:
                f.result(max(0.0, deadline - time.monotonic()))
            except Exception:  # counted as failed by the callback, or still out
                pass
        self._pending.clear()

    def snapshot(self) -> dict[str, tuple[MessageQueue, int, str]]:
        with self._lock:
            return dict(self.sent)


@dataclass
class ScalingRun:
    """A finished scaling run: what was sent, who consumed what, and the cost of each change
    (``analysis``: :func:`rocketq.analytics.analyze` over the run's records)."""

    topic: str
    group: str
    handoff: str
    rate: float
    sizes: tuple[int, ...]
    sent: dict[str, tuple[MessageQueue, int, str]]
    failed_sends: int
    receipts: list[Received]
    plans: list[dict[str, list[MessageQueue]]]
    workers: list[Worker]
    analysis: Analysis | None = None
    steps: list[tuple[str, int]] = field(default_factory=list)
    """Each planned step (``"1 -> 3"``) and when the lab began it (epoch ms): consumers join and
    leave one by one, so one step can be several changes of the member list."""
    teardown_ms: int | None = None
    """When the lab began stopping the workers: a change from then on is the teardown's (stopping
    the workers one by one), not one the run made."""

    def before_teardown(self) -> list[Move]:
        """The moves of the run's own changes (those that began before the teardown)."""
        assert self.analysis is not None
        end = self.teardown_ms
        return [m for m in self.analysis.moves if end is None or m.added_ms < end]

    def step_moves(self) -> list[tuple[str, int]]:
        """Each step after the first with the queues its changes moved."""
        assert self.analysis is not None
        starts = [t for _, t in self.steps]
        out = []
        for i, (label, start) in enumerate(self.steps[1:], 1):
            end = starts[i + 1] if i + 1 < len(starts) else self.teardown_ms
            out.append(
                (
                    label,
                    sum(
                        c.moves
                        for c in self.analysis.costs
                        if c.change.at_ms >= start and (end is None or c.change.at_ms < end)
                    ),
                )
            )
        return out

    @property
    def consumed(self) -> int:
        return len({r.body for r in self.receipts} & set(self.sent))

    @property
    def lost(self) -> list[str]:
        got = {r.body for r in self.receipts}
        return sorted(b for b in self.sent if b not in got)

    @property
    def duplicates(self) -> int:
        return self.analysis.figures.duplicates if self.analysis is not None else 0

    @property
    def longest_pause_ms(self) -> int | None:
        return self.analysis.figures.longest_pause_ms if self.analysis is not None else None

    def _changes(self) -> list[dict[str, Any]]:
        a = self.analysis
        if a is None:
            return []
        names = {w.client_id: w.name for w in self.workers if w.client_id}
        return [
            {
                **c.to_dict(),
                "moves": [
                    {
                        "queue_id": m.queue.queue_id,
                        "broker": m.queue.broker_name,
                        "from": names.get(m.from_client, m.from_client),
                        "to": names.get(m.to_client, m.to_client),
                        "pause_ms": m.pause_ms,
                        "pause_start": m.pause_start_kind,
                    }
                    for m in a.moves
                    if m.change == c.change.index
                ],
            }
            for c in a.costs
        ]

    def to_dict(self) -> dict[str, Any]:
        a = self.analysis
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
            "figures": a.figures.to_dict() if a is not None else None,
            "changes": self._changes(),
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
    producer = SteadyProducer(lab, topic, rate, f"{group}")
    phases = _Phases(lab, topic, group, producer, options, tick, tick_interval)
    workers = phases.workers
    teardown_ms: int | None = None
    interrupted = False
    try:
        for i, size in enumerate(sizes):
            phases.run(i, size, phase_seconds)
        producer.stop()
        phases.drain(producer.snapshot(), drain_timeout)
    except KeyboardInterrupt:
        # Ctrl-C: a bounded wait for the sends out; the lab stops the workers (fast) as it unwinds
        interrupted = True
        producer.stop(wait=0.1)
        raise
    finally:
        if not interrupted:
            producer.stop()
            teardown_ms = _now_ms()
            lab.stop_workers(workers)
    receipts = sorted((r for w in workers for r in w.received()), key=lambda r: r.ts_ms)
    run = ScalingRun(
        topic=topic,
        group=group,
        handoff=handoff or "clean",
        rate=rate,
        sizes=tuple(sizes),
        sent=producer.snapshot(),
        failed_sends=producer.failed,
        receipts=receipts,
        plans=phases.plans,
        workers=workers,
        steps=phases.steps,
        teardown_ms=teardown_ms,
    )
    run.analysis = measure(run)
    return run


@dataclass
class _Phases:
    """The phases of one scaling run: the group resized to each size in turn, settled, then run
    steadily, the live view ticked all along; then the drain."""

    lab: Lab
    topic: str
    group: str
    producer: SteadyProducer
    options: dict[str, Any]
    tick: Tick | None
    tick_interval: float
    workers: list[Worker] = field(default_factory=list)
    active: list[Worker] = field(default_factory=list)
    plans: list[dict[str, list[MessageQueue]]] = field(default_factory=list)
    steps: list[tuple[str, int]] = field(default_factory=list)
    previous: int = 0

    def _tick(self, label: str) -> None:
        if self.tick is not None:
            self.tick(label, self.active, self.producer)

    def run(self, i: int, size: int, seconds: float) -> None:
        """Phase ``i``: from the previous size to ``size`` (consumers spawned or terminated), the
        group settled, the producer started after the first, ``seconds`` of steady running."""
        previous = self.previous
        label = f"{previous} -> {size}" if i else f"start {size}"
        self.steps.append((label, _now_ms()))
        if size > previous:
            for _ in range(size - previous):
                w = self.lab.spawn_consumer(
                    f"consumer-{len(self.workers) + 1}", self.group, [self.topic], **self.options
                )
                self.workers.append(w)
                self.active.append(w)
        else:
            leaving = self.active[size:]
            del self.active[size:]
            for w in leaving:
                w.terminate()
        self.settle(label)
        if i == 0:
            self.producer.start()
        self.steady(label, seconds)
        self.previous = size

    def steady(self, label: str, seconds: float) -> None:
        end = time.monotonic() + seconds
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return
            self._tick(label)
            time.sleep(min(self.tick_interval, left))

    def settle(self, label: str) -> None:
        """Until the group's plan is stable (on a thread: the live view ticks meanwhile)."""
        done = threading.Event()
        result: list[dict[str, list[MessageQueue]]] = []
        error: list[BaseException] = []

        def wait() -> None:
            try:
                result.append(self.lab.wait_stable(self.group, self.active, [self.topic])[self.topic])
            except BaseException as exc:
                error.append(exc)
            finally:
                done.set()

        threading.Thread(target=wait, daemon=True).start()
        while not done.wait(self.tick_interval):
            self._tick(label)
        if error:
            raise error[0]
        self.plans.append(result[0])

    def drain(self, sent: Iterable[str], timeout: float) -> None:
        """Until every message sent (its body) was received by a worker, or ``timeout``."""

        def drained() -> bool:
            got = {r.body for w in self.workers for r in w.received()}
            return all(b in got for b in sent)

        drain_end = time.monotonic() + timeout
        while not drained() and time.monotonic() < drain_end:
            self._tick("draining")
            with self.lab.changed:
                self.lab.changed.wait(self.tick_interval)
        self._tick("done")


def measure(run: ScalingRun) -> Analysis:
    """The figures of ``run`` from its records, by :func:`rocketq.analytics.analyze`: the workers'
    deliveries and rebalance records of the topic (the teardown's too, as ``rocketq report`` reads
    them: :meth:`ScalingRun.step_moves` and :meth:`ScalingRun.before_teardown` leave them out), and
    every acknowledged send as a stored
    message (its store time from a delivery of it, else its send time)."""
    deliveries = [
        Delivery(r.client_id, r.msg_id or r.body, r.queue, r.start_ms, True, r.stored_ms, r.worker)
        for r in run.receipts
    ]
    stored_ms: dict[str, int] = {}
    for r in run.receipts:
        if r.stored_ms is not None:
            stored_ms.setdefault(r.msg_id, r.stored_ms)
    stored = [Stored(mid, q, stored_ms.get(mid, ts)) for q, ts, mid in run.sent.values()]
    events = [RebalanceEvent.from_dict(rec) for w in run.workers for rec in w.rebalances(run.topic)]
    return analyze(deliveries, events, stored)
