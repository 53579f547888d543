"""``rocketq demo``: the whole system at once, on the embedded default, with nothing else started.

A rocketq server (name server + broker) in a temp data dir, a 16-queue topic, a producer at a
steady rate, and a consumer group of real processes that grows from 1 to 3 and shrinks to 2
(:func:`~rocketq.lab.scaling.run_scaling`), shown live: who owns which queue, messages per
consumer, lag per queue and every rebalance as it happens (a rich ``Live`` view on a terminal;
plain lines otherwise - a rebalance line as each happens and a status line every two seconds).
Then a summary - delivered, duplicates, lost, the pause each change caused - and the Spark
analytics over the demo's own traces (producer and consumers run with message tracing on) when
``rocketq[spark]`` and ``rocketq report`` are available, with the path of the HTML report.
Every process it starts is stopped by pid before it returns, on errors and Ctrl-C too.
"""

from __future__ import annotations

import sys
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from rocketq.analytics import footnote, queue_ranges
from rocketq.lab.harness import Lab, Worker, queue_of
from rocketq.lab.report_step import run_report, spark_status, tracing_available
from rocketq.lab.scaling import ScalingRun, SteadyProducer, run_scaling
from rocketq.models import MessageQueue

__all__ = ["DemoOptions", "DemoResult", "LiveView", "run_demo"]

TOPIC = "DemoTopic"
GROUP = "demo-group"
QUEUES = 16


@dataclass(frozen=True, slots=True, kw_only=True)
class DemoOptions:
    #: Seconds of steady traffic in total, split over the three group sizes.
    seconds: float = 24.0
    #: Messages per second.
    rate: float = 200.0
    #: Skip the Spark analytics.
    spark: bool = True
    #: Where the servers keep their data (default: a temp dir, removed afterwards).
    data_dir: Path | None = None
    #: Where the HTML report goes.
    report_dir: Path = Path("rocketq-demo-report")
    #: Force the plain line output even on a terminal.
    plain: bool = False


@dataclass
class DemoResult:
    run: ScalingRun | None = None
    spark: str = ""
    report: Path | None = None
    seconds: float = 0.0
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "scaling": self.run.to_dict() if self.run is not None else None,
            "spark": self.spark,
            "report": str(self.report) if self.report is not None else None,
            "report_figures": self.extra.get("report_figures"),
            "seconds": round(self.seconds, 2),
            "error": self.error,
        }


class LiveView:
    """The demo's view of the group, fed by the scaling run's ticks (see the module docstring)."""

    def __init__(self, lab: Lab, console: Console, *, live: bool) -> None:
        self.lab = lab
        self.console = console
        self.live_mode = live
        self.live: Live | None = None
        self.began = time.monotonic()
        self._cursor: dict[str, int] = {}
        self._consumed: dict[str, int] = {}
        self._seen_bodies: set[str] = set()
        self._per_queue: dict[int, int] = {}
        self._events: list[tuple[int, str]] = []
        self._last_status = 0.0
        self.phase = "starting"
        self.sent = 0  # acknowledged sends at the last tick
        self._acks: deque[tuple[float, int]] = deque()  # (time, acknowledged) of the last seconds
        self.saturated: str | None = None  # the line that said the broker is saturated, once

    def __enter__(self) -> LiveView:
        if self.live_mode:
            self.live = Live(self._render(None), console=self.console, refresh_per_second=4, transient=False)
            self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.__exit__(None, None, None)
            self.live = None

    def _absorb(self, workers: Sequence[Worker]) -> list[str]:
        new_lines: list[tuple[int, str]] = []
        for w in workers:
            events = w.snapshot()
            start = self._cursor.get(w.name, 0)
            self._cursor[w.name] = len(events)
            for e in events[start:]:
                if e["type"] == "recv":
                    self._consumed[w.name] = self._consumed.get(w.name, 0) + 1
                    if e["body"] not in self._seen_bodies:
                        self._seen_bodies.add(e["body"])
                        self._per_queue[int(e["queue_id"])] = self._per_queue.get(int(e["queue_id"]), 0) + 1
                elif e["type"] == "rebalance" and (e["added"] or e["removed"]):
                    added = [queue_of(d) for d in e["added"]]
                    removed = [queue_of(d) for d in e["removed"]]
                    owned = [queue_of(d) for d in e["owned"]]
                    clock = _clock(int(e["end_ms"]))
                    line = (
                        f"{clock} {w.name} ({e['trigger']}, {len(e['client_ids'])} in group): "
                        f"owns {queue_ranges(owned)}"
                        + (f" +{queue_ranges(added)}" if added else "")
                        + (f" -{queue_ranges(removed)}" if removed else "")
                    )
                    self._events.append((int(e["end_ms"]), line))
                    new_lines.append((int(e["end_ms"]), line))
        self._events.sort()
        del self._events[:-8]
        # workers are read one after the other: put what they said since the last tick in time order
        return [line for _, line in sorted(new_lines)]

    def tick(self, phase: str, active: list[Worker], producer: SteadyProducer) -> None:
        self.phase = phase
        workers = self.lab.workers
        new_lines = self._absorb(workers)
        sent = producer.snapshot()
        self.sent = len(sent)
        now = time.monotonic()
        self._acks.append((now, self.sent))
        while len(self._acks) > 2 and now - self._acks[1][0] >= 3.0:
            self._acks.popleft()
        if self.saturated is None and producer.behind > 2.0 and now - self._acks[0][0] >= 2.0:
            # one line, once: the rate asked is more than the broker takes, and the producer waits
            t0, n0 = self._acks[0]
            self.saturated = (
                f"the broker is saturated: {(self.sent - n0) / (now - t0):,.0f} msg/s acknowledged of "
                f"the {producer.rate:,.0f} asked; the producer waits for it (back-pressure) instead of "
                "piling up sends"
            )
            self.console.print(self.saturated, markup=False, highlight=False)
        if self.live is not None:
            self.live.update(self._render(sent))
            return
        for line in new_lines:
            self.console.print(f"REBALANCE {line}", markup=False, highlight=False)
        now = time.monotonic()
        if now - self._last_status >= 2.0 or phase in ("done",):
            self._last_status = now
            per = ", ".join(
                f"{w.name} {len(w.owned(TOPIC) or [])}q {self._consumed.get(w.name, 0)} msgs"
                for w in workers
                if w.running
            )
            lag = len(sent) - len(self._seen_bodies & sent.keys())
            self.console.print(
                f"t={now - self.began:5.1f}s group {phase}: sent {len(sent)}, consumed "
                f"{len(self._seen_bodies)}, lag {max(lag, 0)}; {per}",
                markup=False,
                highlight=False,
            )

    def _render(self, sent: dict[str, tuple[MessageQueue, int, str]] | None) -> Group:
        sent = sent or {}
        workers = self.lab.workers
        owner: dict[int, str] = {}
        for w in workers:
            if w.running:
                for q in w.owned(TOPIC) or []:
                    owner[q.queue_id] = w.name
        sent_per_queue: dict[int, int] = {}
        for q, _, _ in sent.values():
            sent_per_queue[q.queue_id] = sent_per_queue.get(q.queue_id, 0) + 1
        head = Text.assemble(
            ("rocketq demo", "bold"),
            f"  {time.monotonic() - self.began:5.1f} s   group {self.phase}   sent {len(sent)}   "
            f"consumed {len(self._seen_bodies)}",
        )
        consumers = Table(title="consumers", title_justify="left")
        for col in ("consumer", "client id", "state", "queues", "messages"):
            consumers.add_column(col, justify="right" if col == "messages" else "left")
        for w in workers:
            owned = w.owned(TOPIC) or []
            consumers.add_row(
                w.name,
                w.client_id or "starting",
                "running" if w.running else "stopped",
                queue_ranges(owned) if w.running else "-",
                str(self._consumed.get(w.name, 0)),
            )
        queues = Table(title="queues", title_justify="left")
        queues.add_column("queue", justify="right")
        queues.add_column("owner")
        queues.add_column("sent", justify="right")
        queues.add_column("consumed", justify="right")
        queues.add_column("lag", justify="right")
        for qid in range(QUEUES):
            s, c = sent_per_queue.get(qid, 0), self._per_queue.get(qid, 0)
            queues.add_row(str(qid), owner.get(qid, "-"), str(s), str(c), str(max(s - c, 0)))
        events = Table(title="rebalances (latest last)", title_justify="left", show_header=False)
        events.add_column("event")
        for _, line in self._events:
            events.add_row(line)
        return Group(head, consumers, queues, events)


def _fmt(ms: int | None) -> str:
    return "-" if ms is None else f"{ms:,} ms"


def _clock(ms: int) -> str:
    """Local wall-clock time with milliseconds: ``08:50:51.854``."""
    return time.strftime("%H:%M:%S", time.localtime(ms / 1000)) + f".{ms % 1000:03d}"


def run_demo(options: DemoOptions, console: Console | None = None) -> DemoResult:
    """Run the demo (see the module docstring); never leaves a process running."""
    console = console or Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)
    live = console.is_terminal and not options.plain
    result = DemoResult()
    began = time.monotonic()
    trace = tracing_available() and options.spark and spark_status() is None
    console.print("[bold]rocketq demo[/bold]: a server, a 16-queue topic, a steady producer, and a consumer "
                  "group that grows from 1 to 3 processes and shrinks to 2")  # fmt: skip
    lab = Lab(data_dir=options.data_dir, trace=trace)
    view: LiveView | None = None
    try:
        with lab:
            console.print(
                f"server: name server {lab.namesrv}, broker {lab.broker_addrs.get('broker-a')}, "
                f"data and server log in {lab.root} (pid {lab.server.pid if lab.server else '?'})",
                markup=False,
            )
            console.print(
                f"producer: {options.rate:g} msg/s; consumers: separate processes, AVG strategy; "
                f"{options.seconds / 3:.0f} s per group size" + ("; tracing on" if trace else ""),
                markup=False,
            )
            with LiveView(lab, console, live=live) as view:
                run = run_scaling(
                    lab,
                    TOPIC,
                    GROUP,
                    sizes=(1, 3, 2),
                    rate=options.rate,
                    phase_seconds=options.seconds / 3,
                    queues=QUEUES,
                    tick=view.tick,
                    trace=trace,
                )
            result.run = run
            _summary(console, run)
            if not options.spark:
                result.spark = "skipped (--no-spark)"
            else:
                why = spark_status()
                if why is not None:
                    result.spark = f"skipped ({why})"
                else:
                    console.print(
                        "Spark analytics: `rocketq report` over the demo's traces and rebalance records ...",
                        markup=False,
                    )
                    outcome = run_report(lab.namesrv, GROUP, TOPIC, options.report_dir, env=lab.acl_env())
                    for line in outcome.lines():
                        console.print(f"  {line}", markup=False)
                    result.spark, result.report = outcome.status, outcome.html
                    result.extra["report_figures"] = outcome.figures or None
            console.print(f"Spark analytics: {result.spark}", markup=False)
            if result.report is not None:
                console.print(f"HTML report: {result.report}", markup=False)
    except KeyboardInterrupt:
        result.error = "interrupted"
        result.seconds = time.monotonic() - began
        if view is not None:
            console.print(
                f"interrupted after {result.seconds:.1f} s: sent {view.sent:,}, consumed "
                f"{len(view._seen_bodies):,}; every process it started has stopped",
                markup=False,
            )
        raise
    finally:
        result.seconds = time.monotonic() - began
    console.print(
        f"demo finished in {result.seconds:.1f} s; every process it started has stopped", markup=False
    )
    return result


def _summary(console: Console, run: ScalingRun) -> None:
    assert run.analysis is not None
    a = run.analysis
    f = a.figures
    names = {w.client_id: w.name for w in run.workers if w.client_id}
    console.print()
    console.print("[bold]summary[/bold]")
    console.print(
        f"sent {len(run.sent)} at {run.rate:g} msg/s, delivered {f.delivered}, duplicates {f.duplicates}, "
        f"lost {len(run.lost)}" + (f", {run.failed_sends} sends failed" if run.failed_sends else ""),
        markup=False,
    )
    console.print(
        f"queue moves {f.moves}, longest pause {_fmt(f.longest_pause_ms)}, peak backlog {f.peak_backlog}, "
        f"rebalances {f.rebalances}",
        markup=False,
    )
    table = Table(title="what each change of the group cost", title_justify="left")
    for col in (
        "at",
        "change",
        "queues moved",
        "longest pause",
        "median pause",
        "duplicates",
        "peak backlog",
    ):
        table.add_column(col, justify="left" if col in ("at", "change") else "right")
    for c in a.costs:
        who = [f"+{names.get(x, x)}" for x in c.change.joined] + [
            f"-{names.get(x, x)}" for x in c.change.left
        ]
        label = c.label + (f" ({' '.join(who)})" if who and c.change.index else "")
        pauses = (_fmt(c.longest_pause_ms), _fmt(c.median_pause_ms))
        table.add_row(
            _clock(c.change.at_ms), label, str(c.moves), *pauses, str(c.duplicates), str(c.peak_backlog)
        )
    console.print(table)
    per = run.to_dict()["received_per_consumer"]
    console.print(f"messages per consumer: {per}", markup=False)
    for line in footnote("change", "move", "pause", "duplicate", "backlog"):
        console.print(f"  {line}", markup=False)
    console.print(
        "  (the same definitions and code as `rocketq report`; `rocketq lab rebalance-cost` compares the "
        "clean handoff, rocketq's default, with RocketMQ's)",
        markup=False,
    )
