"""``rocketq demo``: the whole system at once, on the embedded default, with nothing else started.

A rocketq server (name server + broker) in a temp data dir, a 16-queue topic, a producer at a
steady rate, and a consumer group of real processes that grows from 1 to 3 and shrinks to 2
(:func:`~rocketq.lab.scaling.run_scaling`), shown live: who owns which queue, messages per
consumer, lag per queue and every rebalance as it happens (a rich ``Live`` view on a terminal;
plain lines otherwise - a status line every two seconds); every rebalance record that changed a
consumer's queues is a ``REBALANCE`` line, with its time since the demo began (``+12.34 s``) and
its wall-clock time. Then a summary in the report's words - delivered, duplicates, not consumed,
the pause each change caused, rebalances (as many as the ``REBALANCE`` lines), messages per
consumer as a table, what each trigger word means - and the Spark analytics over the demo's own
traces (producer and consumers run with message tracing on) when ``rocketq[spark]`` and
``rocketq report`` are available, with the path of the HTML report.

Up front it says how long it will take here: ``--seconds`` of traffic plus the overhead (start,
settle, drain, stop) and the Spark step as the last complete demo on this machine measured them
(kept in ``$XDG_CACHE_HOME/rocketq/demo-timings.json``), else as measured on a two-core machine.
Every step longer than a moment shows progress: a spinner on a terminal (the Spark step with
Spark's stage and tasks), plain lines otherwise. Every process it starts is stopped by pid
before it returns, on errors and Ctrl-C too.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from rocketq.analytics import TRIGGERS, RebalanceEvent, counted, footnote, queue_ranges
from rocketq.lab.harness import Lab, Worker, queue_of
from rocketq.lab.report_step import run_report, spark_status, tracing_available
from rocketq.lab.scaling import ScalingRun, SteadyProducer, run_scaling
from rocketq.models import MessageQueue

__all__ = ["DemoOptions", "DemoResult", "LiveView", "Timings", "run_demo"]

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

    def __init__(
        self, lab: Lab, console: Console, *, live: bool, began: float | None = None, t0_ms: int | None = None
    ) -> None:
        self.lab = lab
        self.console = console
        self.live_mode = live
        self.live: Live | None = None
        #: the demo's start (monotonic): the status lines' ``t=`` count from it
        self.began = time.monotonic() if began is None else began
        #: the demo's start (epoch ms): REBALANCE lines say ``+12.34 s`` since then
        self.t0_ms = t0_ms if t0_ms is not None else time.time_ns() // 1_000_000
        #: the REBALANCE lines printed, and the trigger words they used
        self.rebalance_lines = 0
        self.triggers: set[str] = set()
        self._cursor: dict[str, int] = {}
        self._consumed: dict[str, int] = {}
        self._seen_bodies: set[str] = set()
        self._per_queue: dict[int, int] = {}
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
                elif e["type"] == "rebalance" and e["topic"] == TOPIC and RebalanceEvent.from_dict(e).changed:
                    # the records the figure "rebalances" counts (the demo topic's): one line each
                    line = self.rebalance_line(w.name, e)
                    self.triggers.add(str(e["trigger"]))
                    new_lines.append((int(e["end_ms"]), line))
        # workers are read one after the other: put what they said since the last tick in time order
        return [line for _, line in sorted(new_lines)]

    def rebalance_line(self, name: str, e: dict[str, Any]) -> str:
        """``+12.34 s 08:50:51.854 consumer-2 (notify, 3 in group): owns [5..9] +[8..9] -[0..4]``."""
        added = [queue_of(d) for d in e["added"]]
        removed = [queue_of(d) for d in e["removed"]]
        owned = [queue_of(d) for d in e["owned"]]
        end_ms = int(e["end_ms"])
        if e["client_ids"]:
            members = f", {len(e['client_ids'])} in group"
        elif e["trigger"] == "shutdown":
            members = ""
        else:  # a clean handoff's lease taken after a retry: the record repeats no member list
            members = ", a lease taken late"
        return (
            f"+{(end_ms - self.t0_ms) / 1000:6.2f} s {_clock(end_ms)} {name} ({e['trigger']}{members}): "
            f"owns {queue_ranges(owned)}"
            + (f" +{queue_ranges(added)}" if added else "")
            + (f" -{queue_ranges(removed)}" if removed else "")
        )

    def flush(self) -> None:
        """Print the REBALANCE lines of the records the last tick did not see (the consumers
        stopping at the end), so that every record the summary counts is a line."""
        for line in self._absorb(self.lab.workers):
            self._print_rebalance(line)

    def _print_rebalance(self, line: str) -> None:
        self.rebalance_lines += 1
        self.console.print(f"REBALANCE {line}", markup=False, highlight=False)

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
        for line in new_lines:  # above the live view on a terminal
            self._print_rebalance(line)
        if self.live is not None:
            self.live.update(self._render(sent))
            return
        if phase == "done":
            self.console.print("stopping the consumer processes ...", markup=False, highlight=False)
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
        phase = "done: stopping the consumer processes" if self.phase == "done" else self.phase
        head = Text.assemble(
            ("rocketq demo", "bold"),
            f"  {time.monotonic() - self.began:5.1f} s   group {phase}   sent {len(sent)}   "
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
        return Group(head, consumers, queues)


def _fmt(ms: int | None) -> str:
    return "-" if ms is None else f"{ms:,} ms"


def _clock(ms: int) -> str:
    """Local wall-clock time with milliseconds: ``08:50:51.854``."""
    return time.strftime("%H:%M:%S", time.localtime(ms / 1000)) + f".{ms % 1000:03d}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Timings:
    """How long the demo's parts took on this machine, beyond its ``--seconds`` of traffic."""

    #: starting the server and the consumers, settling each group size, draining, stopping
    overhead_s: float = 10.0
    #: ``rocketq report`` over the demo's records (a JVM's start, the Spark jobs, the plots)
    spark_s: float = 95.0
    #: where the figures come from
    basis: str = "as measured on a two-core machine (no demo has finished here yet)"

    @staticmethod
    def path() -> Path:
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return Path(cache) / "rocketq" / "demo-timings.json"

    @classmethod
    def load(cls) -> Timings:
        """The last complete demo's timings on this machine, else the defaults."""
        try:
            doc = json.loads(cls.path().read_text(encoding="utf-8"))
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(float(doc["at"])))
            return cls(
                overhead_s=float(doc["overhead_s"]),
                spark_s=float(doc["spark_s"]),
                basis=f"as the last demo here took them ({when})",
            )
        except (OSError, ValueError, KeyError, TypeError):
            return cls()

    def save(self, *, spark_measured: bool) -> None:
        """Keep these for the next demo's estimate (``spark_measured`` False: keep the last
        measured Spark time); a cache that cannot be written is no error."""
        spark_s = self.spark_s if spark_measured else Timings.load().spark_s
        doc = {"overhead_s": round(self.overhead_s, 1), "spark_s": round(spark_s, 1), "at": time.time()}
        try:
            self.path().parent.mkdir(parents=True, exist_ok=True)
            self.path().write_text(json.dumps(doc), encoding="utf-8")
        except OSError:
            pass

    def estimate(self, seconds: float, spark: bool) -> str:
        """The line that says up front how long the demo will take, and on what basis."""
        total = seconds + self.overhead_s + (self.spark_s if spark else 0.0)
        parts = [f"{seconds:.0f} s of traffic", f"~{self.overhead_s:.0f} s to start, settle, drain and stop"]
        if spark:
            parts.append(f"~{self.spark_s:.0f} s of Spark analytics")
        return f"this takes about {_minutes(total)} here: {' + '.join(parts)}, {self.basis}"


def _minutes(seconds: float) -> str:
    """``95 s`` -> ``1 min 35 s``; below a minute, seconds."""
    s = round(seconds)
    return f"{s} s" if s < 60 else f"{s // 60} min {s % 60:02d} s"


class _Progress:
    """What a step longer than a moment is doing: a spinner with the latest line and the seconds
    so far on a terminal; plain lines elsewhere - each new step line, Spark's stage lines at most
    one per ``every`` seconds, and after ``quiet`` seconds without a line, one that says the step
    still runs (a JVM's start prints nothing for tens of seconds)."""

    def __init__(self, console: Console, *, live: bool, every: float = 5.0, quiet: float = 10.0) -> None:
        self.console = console
        self.live = live
        self.every = every
        self.quiet = quiet

    @contextmanager
    def step(self, what: str) -> Iterator[Callable[[str], None]]:
        began = time.monotonic()
        lock = threading.Lock()
        state: dict[str, Any] = {"line": "", "printed": began, "stage": 0.0}
        done = threading.Event()

        def plain(text: str) -> None:
            self.console.print(f"  {text}", markup=False, highlight=False)

        def tell(line: str) -> None:
            now = time.monotonic()
            with lock:
                state["line"] = line.strip()
                if self.live:
                    return
                if "Spark stage" in line:
                    if now - float(state["stage"]) < self.every:
                        return
                    state["stage"] = now
                state["printed"] = now
                plain(line.strip())

        def heartbeat(status: Any) -> None:
            while not done.wait(0.5):
                now = time.monotonic()
                with lock:
                    latest = f": {state['line']}" if state["line"] else ""
                    if status is not None:
                        status.update(f"{what} ({now - began:.0f} s){latest}")
                    elif now - float(state["printed"]) >= self.quiet:
                        state["printed"] = now
                        plain(f"still running after {now - began:.0f} s{latest}")

        if not self.live:
            self.console.print(f"{what} ...", markup=False, highlight=False)
        with self.console.status(what) if self.live else nullcontext() as status:
            ticker = threading.Thread(target=heartbeat, args=(status,), daemon=True)
            ticker.start()
            try:
                yield tell
            finally:
                done.set()
                ticker.join()
        self.console.print(f"{what}: {time.monotonic() - began:.1f} s", markup=False, highlight=False)


def run_demo(options: DemoOptions, console: Console | None = None) -> DemoResult:
    """Run the demo (see the module docstring); never leaves a process running."""
    console = console or Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)
    live = console.is_terminal and not options.plain
    progress = _Progress(console, live=live)
    result = DemoResult()
    began = time.monotonic()
    t0_ms = time.time_ns() // 1_000_000
    trace = tracing_available() and options.spark and spark_status() is None
    timings = Timings.load()
    spark_s: float | None = None
    console.print("[bold]rocketq demo[/bold]: a server, a 16-queue topic, a steady producer, and a consumer "
                  "group that grows from 1 to 3 processes and shrinks to 2")  # fmt: skip
    console.print(timings.estimate(options.seconds, trace), markup=False)
    lab = Lab(data_dir=options.data_dir, trace=trace)
    view: LiveView | None = None
    try:
        with progress.step("starting the server (a name server and a broker)"):
            lab.__enter__()
        try:
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
            with LiveView(lab, console, live=live, began=began, t0_ms=t0_ms) as view:
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
            view.flush()
            result.run = run
            _summary(console, run, view)
            if not options.spark:
                result.spark = "skipped (--no-spark)"
            else:
                why = spark_status()
                if why is not None:
                    result.spark = f"skipped ({why})"
                else:
                    spark_began = time.monotonic()
                    with progress.step(
                        "Spark analytics: `rocketq report` over the demo's traces and rebalance records"
                    ) as show:
                        outcome = run_report(
                            lab.namesrv, GROUP, TOPIC, options.report_dir, env=lab.acl_env(), progress=show
                        )
                    spark_s = time.monotonic() - spark_began
                    for line in outcome.lines():
                        console.print(f"  {line}", markup=False)
                    result.spark, result.report = outcome.status, outcome.html
                    result.extra["report_figures"] = outcome.figures or None
            console.print(f"Spark analytics: {result.spark}", markup=False)
            if result.report is not None:
                console.print(f"HTML report: {result.report}", markup=False)
        except BaseException as exc:
            lab.__exit__(type(exc), exc, exc.__traceback__)
            raise
        with progress.step("stopping the server"):
            lab.__exit__(None, None, None)
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
    if result.run is not None and result.spark in ("done", "skipped (--no-spark)"):
        overhead = result.seconds - options.seconds - (spark_s or 0.0)
        Timings(overhead_s=overhead, spark_s=spark_s or 0.0).save(spark_measured=spark_s is not None)
    console.print(
        f"demo finished in {result.seconds:.1f} s; every process it started has stopped", markup=False
    )
    return result


def _summary(console: Console, run: ScalingRun, view: LiveView) -> None:
    assert run.analysis is not None
    a = run.analysis
    f = a.figures
    names = {w.client_id: w.name for w in run.workers if w.client_id}
    console.print()
    console.print("[bold]summary[/bold]")
    console.print(
        f"sent {len(run.sent)} at {run.rate:g} msg/s, delivered {f.delivered}, duplicates {f.duplicates}, "
        f"not consumed {f.not_consumed}" + (f", {run.failed_sends} sends failed" if run.failed_sends else ""),
        markup=False,
    )
    shown = (
        f" (the {counted(view.rebalance_lines, 'REBALANCE line')} above)"
        if view.rebalance_lines == f.rebalances
        else f" ({view.rebalance_lines} REBALANCE lines above: the others came after the view stopped)"
    )
    console.print(
        f"queue moves {f.moves}, longest pause {_fmt(f.longest_pause_ms)}, peak backlog {f.peak_backlog}, "
        f"rebalances {f.rebalances}{shown}",
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
            f"+{(c.change.at_ms - view.t0_ms) / 1000:.2f} s {_clock(c.change.at_ms)}",
            label,
            str(c.moves),
            *pauses,
            str(c.duplicates),
            str(c.peak_backlog),
        )
    console.print(table)
    per = run.to_dict()["received_per_consumer"]
    total = sum(per.values()) or 1
    consumers = Table(title="messages per consumer (deliveries to its listener)", title_justify="left")
    for col in ("consumer", "client id", "messages", "share"):
        consumers.add_column(col, justify="right" if col in ("messages", "share") else "left")
    for w in run.workers:
        n = per.get(w.name, 0)
        consumers.add_row(w.name, w.client_id or "-", f"{n:,}", f"{100 * n / total:.0f} %")
    console.print(consumers)
    for line in footnote("change", "move", "pause", "duplicate", "backlog", "not consumed", "rebalance"):
        console.print(f"  {line}", markup=False)
    for word in sorted(view.triggers):
        console.print(f"  trigger {word}: {TRIGGERS.get(word, 'see docs/rebalance.md')}", markup=False)
    console.print(
        "  (the same definitions and code as `rocketq report`; `rocketq lab rebalance-cost` compares the "
        "clean handoff, rocketq's default, with RocketMQ's)",
        markup=False,
    )
