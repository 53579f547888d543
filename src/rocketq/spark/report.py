"""``rocketq report``: run the rebalance analytics and write Parquet tables and an HTML report.

:func:`build_report` reads the trace and rebalance topics (and the consumed topics) through the
``rocketmq`` data source, computes the tables of :mod:`rocketq.spark.analytics` - Spark parses and
joins, :func:`rocketq.analytics.analyze` judges: the same definitions and code as ``rocketq demo``
and ``rocketq lab rebalance-cost`` - writes each as a Parquet folder under ``out_dir``
(``consumption/``, ``ownership/``, ``rebalances/``, ``duplicates/``, ``pauses/``, ``lag/``) and
writes ``report.html``: one self-contained page (plots drawn by matplotlib as inline SVG, text
as paths, so a browser lays out exactly what was drawn) made to be read in a 1280-pixel window,
with the key figures at the top (one row of cards) and the sentence defining each, the cost of
each change of the group, then deliveries per consumer over time, the lag of every queue around
each change, the ownership timeline of every queue, the pauses grouped by the change that caused
them, the backlog, and the first rows of the duplicates, pauses and rebalances tables (durations
in ms or s, times as times, queue lists as ranges). The labels of the changes (``1 -> 2``) sit in
rows above each plot's axes, placed so that none overlaps another, nor a bar or a line of data.

>>> result = build_report(None, "127.0.0.1:9876", "my_group", out_dir="report")   # doctest: +SKIP
>>> result.html_path, result.figures.duplicates                                   # doctest: +SKIP
(PosixPath('report/report.html'), 2)
"""

from __future__ import annotations

import html
import io
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from rocketq.analytics import (
    DEFINITIONS,
    Analysis,
    Change,
    Delivery,
    Figures,
    Move,
    counted,
    footnote,
    queue_ranges,
)
from rocketq.client.trace import REBALANCE_TOPIC
from rocketq.models import MessageQueue
from rocketq.protocol.acl import Credentials
from rocketq.protocol.trace import RMQ_SYS_TRACE_TOPIC

__all__ = ["KeyFigures", "ReportResult", "build_report", "heat_bucket_ms"]

logger = logging.getLogger(__name__)

KeyFigures = Figures
"""The numbers at the top of the report: :class:`rocketq.analytics.Figures`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReportResult:
    """What :func:`build_report` wrote: the HTML page, the table folders, the key figures."""

    out_dir: Path
    html_path: Path
    tables: dict[str, Path]
    figures: Figures
    bucket_ms: int
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    analysis: Analysis | None = None


def build_report(
    spark: Any,
    namesrv: str,
    group: str,
    *,
    topic: str | None = None,
    since_ms: int | None = None,
    out_dir: str | Path = "rocketq-report",
    bucket_ms: int | None = None,
    trace_topic: str = RMQ_SYS_TRACE_TOPIC,
    rebalance_topic: str = REBALANCE_TOPIC,
    progress: Callable[[str], None] | None = None,
    credentials: Credentials | None = None,
) -> ReportResult:
    """Run the analytics for ``group`` and write the tables and ``report.html`` under ``out_dir``.

    ``spark``: a ``SparkSession``, or ``None`` for :func:`rocketq.spark.session.local_session`.
    ``topic`` limits the report to one topic (else every topic the group's records and the Pub
    traces name); ``since_ms`` to what happened from then on (epoch ms; the history before still
    explains it: see :func:`~rocketq.spark.analytics.compute_tables`); ``bucket_ms`` fixes the time
    bucket of the lag table (else about 60 buckets over the deliveries). ``progress`` is told each
    step as it starts. ``credentials`` sign the reads for a broker's ACL.
    """
    from rocketq.spark.analytics import TABLES, compute_tables, read_inputs  # noqa: PLC0415
    from rocketq.spark.session import local_session  # noqa: PLC0415

    say = progress or (lambda step: None)
    began = time.monotonic()
    session = spark if spark is not None else local_session(app_name="rocketq-report")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    say("reading the trace, rebalance and consumed topics")
    inputs = read_inputs(
        session,
        namesrv,
        group,
        topic=topic,
        since_ms=since_ms,
        trace_topic=trace_topic,
        rebalance_topic=rebalance_topic,
        credentials=credentials,
    )
    say("joining deliveries with their messages and judging them")
    frames, bucket, cached, analysis = compute_tables(
        inputs, group, topic=topic, since_ms=since_ms, bucket_ms=bucket_ms
    )
    say("writing the Parquet tables")
    paths: dict[str, Path] = {}
    for name in TABLES:
        path = out / name
        frames[name].write.mode("overwrite").parquet(str(path))
        paths[name] = path
    rebalances = [r.asDict() for r in session.read.parquet(str(paths["rebalances"])).collect()]
    for frame in cached:
        frame.unpersist()
    figures = analysis.figures
    notes: list[str] = []
    if figures.deliveries == 0:
        notes.append(
            f"No delivery to group {group!r} was traced: start its consumers with trace=True "
            f"(Java: enableMsgTrace) and check that {trace_topic} holds records."
        )
    say("drawing the HTML report")
    html_path = out / "report.html"
    html_path.write_text(
        render_html(analysis, rebalances, group=group, topic=topic, since_ms=since_ms, notes=notes),
        encoding="utf-8",
    )
    return ReportResult(
        out_dir=out,
        html_path=html_path,
        tables=paths,
        figures=figures,
        bucket_ms=bucket,
        seconds=time.monotonic() - began,
        notes=notes,
        analysis=analysis,
    )


# ------------------------------------------------------------------------------------ formats


def _clock(ms: int | None) -> str:
    """Local wall-clock time with milliseconds (``08:50:51.854``); ``—`` for none."""
    if ms is None:
        return "—"
    return datetime.fromtimestamp(ms / 1000).strftime("%H:%M:%S.%f")[:-3]


def _duration(ms: int | None) -> str:
    """A duration: ``87 ms`` below a second, ``1.25 s`` above; ``—`` for none."""
    if ms is None:
        return "—"
    return f"{ms:,} ms" if abs(ms) < 1000 else f"{ms / 1000:,.2f} s"


class _Names:
    """Short names for client ids: the part after ``ip@`` when every id has the same ip."""

    def __init__(self, ids: Sequence[str]) -> None:
        ips = {i.partition("@")[0] for i in ids if "@" in i}
        self.common = next(iter(ips)) if len(ips) == 1 and all("@" in i for i in ids) else None

    def __call__(self, client_id: str | None) -> str:
        if client_id is None:
            return "—"
        if self.common is not None and client_id.startswith(self.common + "@"):
            return client_id[len(self.common) + 1 :]
        return client_id

    def note(self) -> str:
        return (
            f"Consumers are named by their client id without the common “{self.common}@”."
            if self.common
            else ""
        )


# ------------------------------------------------------------------------------------ plots


LAG_BEFORE_MS = 1000
"""The lag map's window starts this long before a change ..."""
LAG_AFTER_MS = 3000
"""... and ends this long after it (a pause is a fraction of a second; a slow one a few)."""
LAG_WINDOWS = 8
"""The lag map shows the first this many changes."""
_LAG_BUCKETS = (10, 20, 25, 50, 100, 200, 250, 500, 1000)

_HEAT_BUCKETS = (250, 500, 1000, 2000, 5000, 10_000, 15_000, 30_000, 60_000, 300_000, 600_000, 3_600_000)
HEAT_MIN_PER_CELL = 20
"""Mean deliveries per heat-map cell the bucket is chosen for: with fewer, ±1 message of rounding
(a message landing just before or after a bucket's edge) shows as a 15 % swing."""


def heat_bucket_ms(
    deliveries: int, queues: int, span_ms: int, *, min_per_cell: int = HEAT_MIN_PER_CELL
) -> int:
    """The smallest round bucket holding, on average, ``min_per_cell`` deliveries per queue.

    >>> heat_bucket_ms(5000, 16, 25_000)   # 200 msg/s over 16 queues: 12.5 per queue and second
    2000
    """
    rate = deliveries / max(queues, 1) / max(span_ms, 1)  # per queue and ms
    for b in _HEAT_BUCKETS:
        if rate * b >= min_per_cell:
            return b
    return _HEAT_BUCKETS[-1]


@dataclass
class _Plot:
    title: str
    caption: str
    svg: str
    points: int


def _svg(fig: Any, key: str) -> str:
    """``fig`` as an inline ``<svg>`` element: text drawn as paths (what the browser shows is what
    was measured when the labels were placed), ids salted with ``key`` so that several plots on one
    page do not share a clip path's id."""
    import matplotlib  # noqa: PLC0415
    import matplotlib.pyplot as plt  # noqa: PLC0415

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": key}):
        fig.savefig(buf, format="svg", bbox_inches="tight", dpi=120)  # dpi: the rasterized parts
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg") :]


def _plots(a: Analysis, names: _Names) -> list[_Plot]:
    """Each plot with its caption and how many data points it drew (none drawn without data)."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    dels = [v.delivery for v in a.verdicts]
    times = [d.start_ms for d in dels] + [s.from_ms for s in a.stretches] + [c.at_ms for c in a.changes]
    if not times:
        return []
    plotter = _Plotter(a, names, plt, dels, times)
    out: list[_Plot] = []
    if dels:
        out.append(plotter.per_consumer())
    lag = plotter.lag_around_changes()
    if lag is not None:
        out.append(lag)
    if a.stretches:
        out.append(plotter.ownership())
    moves = [m for m in a.moves if m.pause_ms is not None]
    if moves:
        out.append(plotter.pauses(moves))
    if a.backlog.steps:
        out.append(plotter.backlog())
    return out


class _Plotter:
    """Draws each plot of one analysis on a shared time axis (seconds since its first event), one
    colour per consumer, the changes of the group as dotted lines."""

    def __init__(self, a: Analysis, names: _Names, plt: Any, dels: list[Delivery], times: list[int]) -> None:
        """``times``: the start of every delivery and ownership and every change (not none)."""
        t0 = min(times)
        t_end = max(times + [t for t, _ in a.backlog.steps])
        self.a = a
        self.names = names
        self.plt = plt
        self.dels = dels
        self.t0 = t0
        self.t_end = t_end
        self.span = max(t_end - t0, 1)
        self.xlabel = f"seconds since {_clock(t0)}"
        self.clients = sorted({d.client_id for d in dels} | {s.client_id for s in a.stretches})
        self.colors = plt.get_cmap("tab10")

    def sec(self, ms: float) -> float:
        return (ms - self.t0) / 1000.0

    def color(self, client: str) -> Any:
        return self.colors(self.clients.index(client) % 10)

    def mark_changes(
        self, ax: Any, key: str, labels: bool = True, changes: list[Change] | None = None
    ) -> None:
        """A dotted line at each change of the group and, above the axes, its label (``1 -> 2``):
        in the lowest row where it overlaps no label already placed (so none overlaps another,
        and none sits on the data). ``key`` names the labels' SVG ids (``KEY-label-N``)."""
        shown = self.a.changes if changes is None else changes
        lo, hi = ax.get_xlim()
        for c in shown:
            ax.axvline(self.sec(c.at_ms), color="grey", lw=0.7, ls=":")
        if not labels:
            return
        renderer = ax.figure.canvas.get_renderer()
        rows: list[list[Any]] = []  # per row, the extents of the labels placed in it
        for c in sorted((c for c in shown if c.index), key=lambda c: c.at_ms):
            x = self.sec(c.at_ms)
            if not lo <= x <= hi:
                continue
            text = ax.annotate(
                c.label,
                (x, 1.0),
                xycoords=("data", "axes fraction"),
                xytext=(0, 3),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize=7,
                color="dimgrey",
                annotation_clip=False,
            )
            text.set_gid(f"{key}-label-{c.index}")
            row = 0
            while True:
                text.set_position((0, 3 + 9 * row))
                box = text.get_window_extent(renderer).expanded(1.0, 1.0).padded(2)
                if row == len(rows):
                    rows.append([])
                if not any(box.overlaps(other) for other in rows[row]):
                    rows[row].append(box)
                    break
                row += 1

    def per_consumer(self) -> _Plot:
        """Deliveries per second of each consumer over time (step lines)."""
        dels, sec = self.dels, self.sec
        bucket = heat_bucket_ms(len(dels), max(len({d.queue for d in dels}), 1), self.span) // 2 or 250
        per: dict[str, dict[int, int]] = {}
        for d in dels:
            b = d.start_ms - d.start_ms % bucket
            per.setdefault(d.client_id, {})
            per[d.client_id][b] = per[d.client_id].get(b, 0) + 1
        first_b = min(d.start_ms for d in dels) // bucket * bucket
        last_b = max(d.start_ms for d in dels) // bucket * bucket
        edges = list(range(first_b, last_b + bucket, bucket))
        fig, ax = self.plt.subplots(figsize=(10, 3.4))
        for client in self.clients:
            counts = per.get(client, {})
            ys = [counts.get(b, 0) * 1000 / bucket for b in edges[1:-1]]  # full buckets only
            ax.step(
                [sec(b) for b in edges[1:-1]],
                ys,
                where="post",
                label=self.names(client),
                color=self.color(client),
            )
        ax.set_xlabel(self.xlabel)
        ax.set_ylabel("deliveries per second")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        self.mark_changes(ax, "consumers")
        return _Plot(
            "Messages per consumer",
            f"Deliveries per second in {bucket:,} ms buckets (the partial first and last bucket left "
            "out). Dotted lines: changes of the group.",
            _svg(fig, "consumers"),
            len(dels),
        )

    def lag_around_changes(self) -> _Plot | None:
        """A heat map of each queue's lag around each change of the group (none without a change
        or a message waiting then): per window, per queue and bucket, the mean backlog (messages
        waiting, averaged over the bucket's time).

        Why this scale: a healthy group keeps every queue's backlog near 0 - each message waits a
        few ms - so a whole run's map of deliveries or lag is one colour, and what a rebalance costs
        is the few queues that wait for their new owner for a fraction of a second. So the map
        shows only the seconds around each change, in buckets of tens of ms; the mean (not the
        peak) keeps a message's few ms of normal latency near white, while a queue that waits for
        its owner fills its buckets; white is nothing waiting, and the colour scale ends at the
        99th percentile of the cells (at least one message), so one outlier does not wash out the
        rest (cells above it take the darkest colour)."""
        from matplotlib import colors  # noqa: PLC0415

        a, sec = self.a, self.sec
        changes = [c for c in a.changes if c.index][:LAG_WINDOWS]
        queues = sorted(q for q, series in a.queue_backlogs.items() if series.steps)
        if not changes or not queues:
            return None
        windows: list[tuple[int, int, list[Change]]] = []
        for c in changes:
            lo, hi = c.at_ms - LAG_BEFORE_MS, c.at_ms + LAG_AFTER_MS
            if windows and lo <= windows[-1][1]:
                windows[-1] = (windows[-1][0], max(hi, windows[-1][1]), [*windows[-1][2], c])
            else:
                windows.append((lo, hi, [c]))
        span = sum(hi - lo for lo, hi, _ in windows)
        bucket = next((b for b in _LAG_BUCKETS if span / b <= 160), _LAG_BUCKETS[-1])
        grids = []
        for lo, hi, _ in windows:
            edges = range(lo - lo % bucket, hi, bucket)
            grids.append(
                (
                    edges,
                    [[a.queue_backlogs[q].waited_ms(b, b + bucket) / bucket for b in edges] for q in queues],
                )
            )
        cells = sorted(v for _, grid in grids for row in grid for v in row)
        if not cells or cells[-1] <= 0:
            return None
        top = max(cells[min(len(cells) - 1, int(0.99 * len(cells)))], 1.0)
        cmap = self.plt.get_cmap("YlOrRd").with_extremes(under="white")
        norm = colors.Normalize(vmin=1e-9, vmax=top)
        fig, axes = self.plt.subplots(
            1,
            len(windows),
            sharey=True,
            squeeze=False,
            figsize=(10, 0.24 * len(queues) + 1.7),
            gridspec_kw={"width_ratios": [hi - lo for lo, hi, _ in windows], "wspace": 0.06},
        )
        im = None
        for n, (ax, (_lo, _hi, shown), (edges, grid)) in enumerate(zip(axes[0], windows, grids, strict=True)):
            first, last = edges[0], edges[-1] + bucket
            im = ax.imshow(
                grid,
                aspect="auto",
                interpolation="nearest",
                cmap=cmap,
                norm=norm,
                extent=(sec(first), sec(last), len(queues) - 0.5, -0.5),
            )
            ax.set_xlim(sec(first), sec(last))
            ax.tick_params(axis="x", labelsize=7)
            if n == 0:
                ax.set_yticks(range(len(queues)))
                ax.set_yticklabels([f"{q.broker_name}:{q.queue_id}" for q in queues], fontsize=7)
            self.mark_changes(ax, f"lag{n}", changes=shown)
        fig.supxlabel(self.xlabel, fontsize=9)
        bar = fig.colorbar(im, ax=list(axes[0]), extend="max", pad=0.015, fraction=0.03)
        bar.set_label("messages waiting (mean over the bucket)", fontsize=8)
        waiting = sum(1 for v in cells if v > 0)
        return _Plot(
            "Lag per queue around each change",
            f"Messages waiting in each queue (its backlog, averaged over each {bucket:,} ms), from "
            f"{LAG_BEFORE_MS / 1000:g} s before to {LAG_AFTER_MS / 1000:g} s after each change of the group "
            f"(close changes share a window; the first {LAG_WINDOWS} changes). White: nothing waiting; "
            f"the colours end at {top:,.1f} messages, the 99th percentile of the cells (at least 1), so that "
            "one outlier does not wash out the rest; a message's few ms of normal latency stay near white. "
            "Dotted lines: changes of the group.",
            _svg(fig, "lag"),
            waiting,
        )

    def ownership(self) -> _Plot:
        """One bar per stretch of a consumer owning a queue, duplicates marked with red crosses."""
        from matplotlib.patches import Patch  # noqa: PLC0415

        a, sec = self.a, self.sec
        queues_o = sorted({s.queue for s in a.stretches})
        fig, ax = self.plt.subplots(figsize=(10, 0.28 * len(queues_o) + 1.6))
        for n, s in enumerate(a.stretches):
            y = queues_o.index(s.queue)
            stop = s.to_ms if s.to_ms is not None else self.t_end
            (bar,) = ax.barh(
                y,
                sec(stop) - sec(s.from_ms),
                left=sec(s.from_ms),
                height=0.7,
                color=self.color(s.client_id),
                edgecolor="white",
                lw=0.4,
            )
            bar.set_gid(f"ownership-bar-{n}")
        dup_points = [
            (sec(d.delivery.start_ms), queues_o.index(d.delivery.queue))
            for d in a.duplicates
            if d.delivery.queue in queues_o
        ]
        if dup_points:
            ax.scatter(
                [x for x, _ in dup_points],
                [y for _, y in dup_points],
                marker="x",
                color="red",
                s=22,
                zorder=3,
            )
        ax.set_yticks(range(len(queues_o)))
        ax.set_yticklabels([f"{q.broker_name}:{q.queue_id}" for q in queues_o], fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel(self.xlabel)
        owners = sorted({s.client_id for s in a.stretches})
        handles: list[Any] = [Patch(color=self.color(c)) for c in owners]
        labels = [self.names(c) for c in owners]
        if dup_points:
            from matplotlib.lines import Line2D  # noqa: PLC0415

            handles.append(Line2D([], [], marker="x", color="red", ls=""))
            labels.append("duplicate")
        ax.legend(handles, labels, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        self.mark_changes(ax, "ownership")
        return _Plot(
            "Queue ownership",
            "Each bar: a consumer owning a queue (from its rebalance records). Dotted lines: changes of "
            "the group; red crosses: duplicate deliveries.",
            _svg(fig, "ownership"),
            len(self.a.stretches),
        )

    def pauses(self, moves: list[Move]) -> _Plot:
        """One bar per moved queue's pause, grouped under the change that moved it."""
        names = self.names
        by_change = {c.index: c for c in self.a.changes}
        order = sorted(moves, key=lambda m: (m.change, m.queue))
        fig, ax = self.plt.subplots(
            figsize=(10, 0.24 * len(order) + 0.3 * len({m.change for m in order}) + 1.2)
        )
        bar_ys: list[float] = []
        ticks: list[str] = []
        pos = 0.0
        current: int | None = None
        group_colors = self.plt.get_cmap("tab10")
        for m in order:
            if m.change != current:
                if current is not None:
                    pos += 0.8
                current = m.change
                c = by_change.get(m.change)
                ax.text(
                    -0.01,
                    pos - 0.35,
                    f"{c.label if c else '?'} at {self.sec(c.at_ms) if c else 0:.1f} s",
                    transform=ax.get_yaxis_transform(),
                    ha="right",
                    va="bottom",
                    fontsize=8,
                    fontweight="bold",
                )
                pos += 0.6
            bar_ys.append(pos)
            ticks.append(f"q{m.queue.queue_id} {names(m.from_client)} → {names(m.to_client)}")
            ax.barh(pos, m.pause_ms or 0, color=group_colors(m.change % 10), height=0.8)
            pos += 1
        ax.set_yticks(bar_ys)
        ax.set_yticklabels(ticks, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("pause (ms)")
        return _Plot(
            "Pause of every moved queue, by the change that caused it",
            DEFINITIONS["pause"][0].upper() + DEFINITIONS["pause"][1:] + ".",
            _svg(fig, "pauses"),
            len(order),
        )

    def backlog(self) -> _Plot:
        """The group's backlog (red) and each queue's (grey) over time."""
        from matplotlib.ticker import MaxNLocator  # noqa: PLC0415

        a, sec = self.a, self.sec
        fig, ax = self.plt.subplots(figsize=(10, 3.4))
        xs = [sec(t) for t, _ in a.backlog.steps]
        ys_b = [v for _, v in a.backlog.steps]
        for series in a.queue_backlogs.values():
            ax.step(
                [sec(t) for t, _ in series.steps],
                [v for _, v in series.steps],
                where="post",
                color="grey",
                lw=0.4,
                alpha=0.5,
                rasterized=True,  # thousands of steps per queue: pixels, not SVG paths
            )
        ax.step(
            xs, ys_b, where="post", color="tab:red", lw=1.4, label="all queues", rasterized=len(xs) > 2000
        )
        ax.set_xlabel(self.xlabel)
        ax.set_ylabel("messages stored, not yet delivered")
        ax.set_ylim(bottom=0, top=max(*ys_b, 1) * 1.15)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        self.mark_changes(ax, "backlog")
        return _Plot(
            "Backlog (lag)",
            "Red: the whole group, at every store and first delivery (not averaged over buckets); grey: "
            "each queue. Dotted lines: changes of the group. "
            + DEFINITIONS["backlog"][0].upper()
            + DEFINITIONS["backlog"][1:]
            + ".",
            _svg(fig, "backlog"),
            len(a.backlog.steps),
        )


# ------------------------------------------------------------------------------------ HTML


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:1.5em auto;max-width:1100px;
  padding:0 16px;color:#222;box-sizing:border-box}
h1{font-size:1.5em;margin-bottom:.2em} h2{font-size:1.15em;margin-top:1.8em;border-bottom:1px solid #ddd}
.muted{color:#666} .small{font-size:.85em}
.figs{display:grid;grid-template-columns:repeat(auto-fit,minmax(128px,1fr));gap:.5em;margin:1em 0}
.fig{border:1px solid #ddd;border-radius:6px;padding:.45em .65em}
.fig b{display:block;font-size:1.4em}
.plot svg{max-width:100%;height:auto;display:block}
table{border-collapse:collapse;font-size:.82em;margin:.5em 0;max-width:100%}
td,th{border:1px solid #ddd;padding:2px 7px;text-align:left;vertical-align:top}
th{background:#f4f4f4;white-space:nowrap} td.n{text-align:right;white-space:nowrap}
td.id,td.t{white-space:nowrap} tr.group td{background:#fafafa;font-weight:600}
dl.defs{font-size:.85em;color:#444} dl.defs dt{font-weight:600;float:left;margin-right:.4em}
"""


def _cell(value: object, kind: str = "") -> str:
    text = "" if value is None else str(value)
    cls = f" class={kind}" if kind else ""
    return f"<td{cls}>{html.escape(text)}</td>"


def _table(head: Sequence[str], rows: Sequence[str]) -> str:
    if not rows:
        return "<p class=muted>none</p>"
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    return f"<table><tr>{th}</tr>{''.join(rows)}</table>"


def _queues(items: Sequence[str] | None) -> str:
    """``broker:id`` texts as ranges: ``[0..15]`` (brokers named when there are several)."""
    qs = []
    for item in items or ():
        broker, _, qid = item.rpartition(":")
        if qid.isdigit():
            qs.append(MessageQueue("", broker, int(qid)))
    return queue_ranges(qs) if qs else "—"


def render_html(
    a: Analysis,
    rebalances: Sequence[dict[str, Any]],
    *,
    group: str,
    topic: str | None,
    since_ms: int | None,
    notes: Sequence[str] = (),
) -> str:
    """The report page (see the module docstring)."""
    f = a.figures
    ids = [v.delivery.client_id for v in a.verdicts] + [s.client_id for s in a.stretches]
    names = _Names(ids + [str(r.get("client_id") or "") for r in rebalances])
    cards = [
        (
            "delivered",
            f"{f.delivered:,}",
            f"{counted(f.deliveries, 'delivery', 'deliveries', grouped=True)} by "
            f"{counted(f.consumers, 'consumer')}",
        ),
        ("duplicates", f"{f.duplicates:,}", f"{f.attributed:,} attributed to a rebalance"),
        ("not consumed", f"{f.not_consumed:,}", "lost, or still waiting"),
        ("queue moves", f"{f.moves:,}", f"over {counted(max(len(a.changes) - 1, 0), 'change')} of the group"),
        ("longest pause", _duration(f.longest_pause_ms), "a moved queue's messages waited"),
        ("peak backlog", f"{f.peak_backlog:,}", "messages stored, not yet delivered"),
        ("rebalances", f"{f.rebalances:,}", "records that changed a consumer's queues"),
    ]
    offset = datetime.now().astimezone().strftime("%z")
    parts = [
        "<!doctype html><html><head><meta charset=utf-8>",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>rocketq report: {html.escape(group)}</title><style>{_CSS}</style></head><body>",
        f"<h1>Rebalance report — group <code>{html.escape(group)}</code></h1>",
        "<p class=muted>",
        f"topic: {html.escape(topic or 'every topic of the group')} · since: "
        f"{_clock(since_ms) if since_ms is not None else 'the beginning'} · times are local (UTC{offset}) · "
        f"generated {datetime.now().strftime('%Y-%m-%d %H:%M:%S')}</p>",
        "<div class=figs>",
        *(
            f"<div class=fig><span class=muted>{k}</span><b>{v}</b>"
            f"<span class='muted small'>{html.escape(s)}</span></div>"
            for k, v, s in cards
        ),
        "</div>",
        "<dl class=defs>",
        *(
            f"<dt>{html.escape(line.split(':', 1)[0])}:</dt><dd>{html.escape(line.split(':', 1)[1])}</dd>"
            for line in footnote()
        ),
        "</dl>",
        *(f"<p><b>Note:</b> {html.escape(n)}</p>" for n in notes),
    ]
    if names.note():
        parts.append(f"<p class='muted small'>{html.escape(names.note())}</p>")

    parts.append("<h2>What each change of the group cost</h2>")
    parts.append(
        "<p class='muted small'>A change: the group's member list changed; its cost runs until the next "
        "change.</p>"
    )
    parts.append(
        _table(
            [
                "at",
                "change",
                "joined",
                "left",
                "queue moves",
                "longest pause",
                "median pause",
                "duplicates",
                "peak backlog",
            ],
            [
                "<tr>"
                + _cell(_clock(c.change.at_ms), "t")
                + _cell(c.label, "t")
                + _cell(", ".join(names(x) for x in c.change.joined) or "—", "id")
                + _cell(", ".join(names(x) for x in c.change.left) or "—", "id")
                + _cell(c.moves, "n")
                + _cell(_duration(c.longest_pause_ms), "n")
                + _cell(_duration(c.median_pause_ms), "n")
                + _cell(c.duplicates, "n")
                + _cell(c.peak_backlog, "n")
                + "</tr>"
                for c in a.costs
            ],
        )
    )
    for plot in _plots(a, names):
        parts.append(
            f"<h2>{html.escape(plot.title)}</h2><p class='muted small'>{html.escape(plot.caption)}</p>"
        )
        parts.append(
            f'<div class=plot data-points="{plot.points}" data-title="{html.escape(plot.title)}" '
            f'role=img aria-label="{html.escape(plot.title)}">{plot.svg}</div>'
        )

    parts.append("<h2>Duplicates</h2>")
    parts.append(f"<p class='muted small'>{html.escape(DEFINITIONS['duplicate'])}. First 50.</p>")
    parts.append(
        _table(
            ["message id", "queue", "first delivered", "by", "again", "by", "attributed to"],
            [
                "<tr>"
                + _cell(d.delivery.msg_id, "id")
                + _cell(
                    f"{d.delivery.queue.broker_name}:{d.delivery.queue.queue_id}"
                    if d.delivery.queue
                    else "—",
                    "t",
                )
                + _cell(_clock(d.first_start_ms), "t")
                + _cell(names(d.first_client_id), "id")
                + _cell(
                    f"{_clock(d.delivery.start_ms)} (+{_duration(d.delivery.start_ms - d.first_start_ms)})",
                    "t",
                )
                + _cell(names(d.delivery.client_id), "id")
                + _cell(
                    f"{d.rebalance.trigger} of {names(d.rebalance.client_id)} at "
                    f"{_clock(d.rebalance.end_ms)} ({d.rebalance_kind} the queue)"
                    if d.rebalance
                    else "—"
                )
                + "</tr>"
                for d in a.duplicates[:50]
            ],
        )
    )

    parts.append("<h2>Pauses, by change</h2>")
    parts.append(f"<p class='muted small'>{html.escape(DEFINITIONS['pause'])}.</p>")
    by_change = {c.index: c for c in a.changes}
    rows: list[str] = []
    current: int | None = None
    for m in sorted(a.moves, key=lambda m: (m.change, m.added_ms, m.queue)):
        if m.change != current:
            current = m.change
            c = by_change.get(m.change)
            label = f"{c.label} at {_clock(c.at_ms)}" if c else "?"
            rows.append(f"<tr class=group><td colspan=7>{html.escape(label)}</td></tr>")
        rows.append(
            "<tr>"
            + _cell(f"{m.queue.broker_name}:{m.queue.queue_id}", "t")
            + _cell(f"{names(m.from_client)} → {names(m.to_client)}", "id")
            + _cell(m.trigger, "t")
            + _cell(_clock(m.added_ms), "t")
            + _cell(_duration(m.pause_ms), "n")
            + _cell(f"{m.pause_start_kind} at {_clock(m.pause_start_ms)}", "t")
            + _cell(_clock(m.first_consumed_ms), "t")
            + "</tr>"
        )
        if len(rows) > 120:
            break
    parts.append(
        _table(
            ["queue", "from → to", "trigger", "added", "pause", "pause began with", "first delivery"], rows
        )
    )

    parts.append("<h2>Rebalances</h2>")
    parts.append("<p class='muted small'>Records that changed a consumer's queues; queues as ranges.</p>")
    changed = sorted((r for r in rebalances if r.get("changed")), key=lambda r: r.get("end_ms") or 0)
    parts.append(
        _table(
            ["at", "consumer", "trigger", "members", "added", "removed", "took"],
            [
                "<tr>"
                + _cell(_clock(r.get("end_ms")), "t")
                + _cell(names(r.get("client_id")), "id")
                + _cell(r.get("trigger"), "t")
                + _cell(r.get("n_clients"), "n")
                + _cell(_queues(r.get("added")))
                + _cell(_queues(r.get("removed")))
                + _cell(_duration(r.get("duration_ms")), "n")
                + "</tr>"
                for r in changed[:100]
            ],
        )
    )
    parts.append(
        "<p class='muted small'>Tables (Parquet): consumption, ownership, rebalances, duplicates, pauses, "
        f"lag. Key figures: {html.escape(', '.join(f'{k} {v}' for k, v in f.to_dict().items()))}</p>"
        "</body></html>"
    )
    return "\n".join(parts)
