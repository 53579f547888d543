"""``rocketq report``: run the rebalance analytics and write Parquet tables and an HTML report.

:func:`build_report` reads the trace and rebalance topics (and the consumed topics) through the
``rocketmq`` data source, computes the tables of :mod:`rocketq.spark.analytics`, writes each as a
Parquet folder under ``out_dir`` (``consumption/``, ``ownership/``, ``rebalances/``,
``duplicates/``, ``pauses/``, ``lag/``) and writes ``report.html``: one self-contained page (PNG
plots embedded as base64, drawn with matplotlib's Agg backend) with the key figures at the top —
messages delivered, duplicates (and how many a rebalance explains), messages not consumed (lost,
or still waiting), the longest pause of a moved queue, rebalances — then messages per consumer
and per queue over time, the ownership timeline of every queue with rebalances marked, the
pauses, the lag, and the first rows of the duplicates and pauses tables.

The figures and plots come from small Spark aggregates of the written tables; pandas only carries
those few rows to matplotlib.

>>> result = build_report(None, "127.0.0.1:9876", "my_group", out_dir="report")   # doctest: +SKIP
>>> result.html_path, result.figures.duplicates                                   # doctest: +SKIP
(PosixPath('report/report.html'), 2)
"""

from __future__ import annotations

import base64
import html
import io
import logging
import math
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rocketq.client.trace import REBALANCE_TOPIC
from rocketq.protocol.trace import RMQ_SYS_TRACE_TOPIC

__all__ = ["KeyFigures", "ReportResult", "build_report", "key_figures"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class KeyFigures:
    """The numbers at the top of the report.

    ``delivered``: distinct messages consumed successfully at least once; ``deliveries``: listener
    deliveries in all; ``duplicates``: deliveries of a message that had already been delivered
    without failing; ``attributed``: duplicates with a rebalance to blame; ``not_consumed``:
    messages of the topics (stored since ``since``) the group never received — lost, or still
    waiting; ``longest_pause_ms``: the longest pause of a moved queue (``None``: no move);
    ``rebalances``: records of the group that changed a consumer's queues; ``consumers``:
    distinct consumers seen.
    """

    delivered: int
    deliveries: int
    duplicates: int
    attributed: int
    not_consumed: int
    longest_pause_ms: int | None
    moves: int
    rebalances: int
    consumers: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ReportResult:
    """What :func:`build_report` wrote: the HTML page, the table folders, the key figures."""

    out_dir: Path
    html_path: Path
    tables: dict[str, Path]
    figures: KeyFigures
    bucket_ms: int
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)


def key_figures(
    tables: dict[str, Any], messages: Any, *, topic: str | None, since_ms: int | None
) -> KeyFigures:
    """The key figures from the (written and re-read) tables and the topics' rows."""
    from pyspark.sql import functions as F  # noqa: PLC0415

    c = tables["consumption"]
    row = c.agg(
        F.count("*").alias("deliveries"),
        F.countDistinct(F.when(F.col("success"), F.col("msg_id"))).alias("delivered"),
        F.sum(F.col("duplicate").cast("int")).alias("duplicates"),
        F.countDistinct("client_id").alias("consumers"),
    ).first()
    d = tables["duplicates"].agg(F.count(F.col("rebalance_ms")).alias("attributed")).first()
    p = tables["pauses"].agg(F.max("pause_ms").alias("longest"), F.count("*").alias("moves")).first()
    r = tables["rebalances"].agg(F.sum(F.col("changed").cast("int")).alias("changed")).first()
    msgs = messages.select("msg_id", F.unix_millis("store_timestamp").alias("ms"), "topic")
    if topic is not None:
        msgs = msgs.where(F.col("topic") == topic)
    if since_ms is not None:
        msgs = msgs.where(F.col("ms") >= since_ms)
    not_consumed = msgs.join(c.select("msg_id"), "msg_id", "left_anti").count()
    return KeyFigures(
        delivered=int(row["delivered"] or 0) if row else 0,
        deliveries=int(row["deliveries"] or 0) if row else 0,
        duplicates=int(row["duplicates"] or 0) if row else 0,
        attributed=int(d["attributed"] or 0) if d else 0,
        not_consumed=int(not_consumed),
        longest_pause_ms=int(p["longest"]) if p and p["longest"] is not None else None,
        moves=int(p["moves"] or 0) if p else 0,
        rebalances=int(r["changed"] or 0) if r else 0,
        consumers=int(row["consumers"] or 0) if row else 0,
    )


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
) -> ReportResult:
    """Run the analytics for ``group`` and write the tables and ``report.html`` under ``out_dir``.

    ``spark``: a ``SparkSession``, or ``None`` for :func:`rocketq.spark.session.local_session`.
    ``topic`` limits the report to one topic (else every topic the group's records and the Pub
    traces name); ``since_ms`` to what happened from then on (epoch ms; the history before still
    explains it: see :func:`~rocketq.spark.analytics.compute_tables`); ``bucket_ms`` fixes the time
    bucket of the lag table and the plots (else about 60 buckets over the deliveries).
    """
    from rocketq.spark.analytics import TABLES, compute_tables, read_inputs  # noqa: PLC0415
    from rocketq.spark.session import local_session  # noqa: PLC0415

    began = time.monotonic()
    session = spark if spark is not None else local_session(app_name="rocketq-report")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    inputs = read_inputs(
        session,
        namesrv,
        group,
        topic=topic,
        since_ms=since_ms,
        trace_topic=trace_topic,
        rebalance_topic=rebalance_topic,
    )
    frames, bucket, cached = compute_tables(
        inputs, group, topic=topic, since_ms=since_ms, bucket_ms=bucket_ms
    )
    paths: dict[str, Path] = {}
    written: dict[str, Any] = {}
    for name in TABLES:
        path = out / name
        frames[name].write.mode("overwrite").parquet(str(path))
        paths[name] = path
        written[name] = session.read.parquet(str(path))
    figures = key_figures(written, inputs.messages, topic=topic, since_ms=since_ms)
    notes: list[str] = []
    if figures.deliveries == 0:
        notes.append(
            f"No delivery to group {group!r} was traced: start its consumers with trace=True "
            f"(Java: enableMsgTrace) and check that {trace_topic} holds records."
        )
    html_path = out / "report.html"
    html_path.write_text(
        _render(written, figures, group=group, topic=topic, since_ms=since_ms, bucket_ms=bucket, notes=notes),
        encoding="utf-8",
    )
    for frame in cached:
        frame.unpersist()
    return ReportResult(
        out_dir=out,
        html_path=html_path,
        tables=paths,
        figures=figures,
        bucket_ms=bucket,
        seconds=time.monotonic() - began,
        notes=notes,
    )


# ------------------------------------------------------------------------------------ HTML


def _fmt_ms(ms: Any) -> str:
    if ms is None:
        return "—"
    return datetime.fromtimestamp(int(ms) / 1000, UTC).strftime("%H:%M:%S.%f")[:-3]


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=96, bbox_inches="tight")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _plots(t: dict[str, Any], bucket_ms: int) -> list[tuple[str, str, str]]:
    """``(title, caption, base64 PNG)`` for each plot; each from a small aggregate."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415
    from matplotlib.lines import Line2D  # noqa: PLC0415
    from matplotlib.patches import Patch  # noqa: PLC0415
    from pyspark.sql import functions as F  # noqa: PLC0415

    out: list[tuple[str, str, str]] = []
    c = t["consumption"]
    b = F.lit(bucket_ms)
    bucket = (F.floor(F.col("start_ms") / b) * b).cast("long").alias("bucket_ms")
    per_client = _pandas(c.groupBy(bucket, "client_id").count().orderBy("bucket_ms"))
    reb = _pandas(t["rebalances"].where(F.col("changed")).select("end_ms", "client_id", "trigger"))
    t0_candidates: list[Any] = [per_client["bucket_ms"].min() if len(per_client) else None]
    own = _pandas(t["ownership"])
    if len(own):
        t0_candidates.append(own["from_ms"].min())
    t0s = [int(x) for x in t0_candidates if _present(x)]
    t0 = min(t0s) if t0s else 0

    def sec(ms: Any) -> Any:
        return (ms - t0) / 1000.0

    xlabel = f"seconds since {_fmt_ms(t0)} UTC"
    if len(per_client):
        fig, ax = plt.subplots(figsize=(10, 3.6))
        for client, part in per_client.groupby("client_id"):
            ax.step(sec(part["bucket_ms"]), part["count"], where="post", label=str(client))
        for ms in reb["end_ms"]:
            ax.axvline(sec(ms), color="grey", lw=0.6, ls=":")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(f"deliveries per {bucket_ms} ms")
        ax.legend(fontsize=7, loc="upper right")
        out.append(
            ("Messages per consumer", "Dotted lines: rebalances that changed a consumer's queues.", _png(fig))
        )

        per_queue = (
            c.where(F.col("queue_id").isNotNull())
            .groupBy(bucket, F.concat_ws(":", "broker", F.col("queue_id").cast("string")).alias("queue"))
            .count()
        )
        per_queue = _pandas(per_queue)
        if len(per_queue):
            grid = per_queue.pivot_table(index="queue", columns="bucket_ms", values="count", fill_value=0)
            grid = grid.reindex(sorted(grid.index, key=_queue_sort_key))
            fig, ax = plt.subplots(figsize=(10, 0.3 * len(grid) + 1.5))
            cols = [sec(x) for x in grid.columns]
            extent = (min(cols), max(cols) + bucket_ms / 1000.0, len(grid) - 0.5, -0.5)
            im = ax.imshow(grid.values, aspect="auto", interpolation="nearest", cmap="viridis", extent=extent)
            ax.set_yticks(range(len(grid)))
            ax.set_yticklabels(grid.index, fontsize=7)
            ax.set_xlabel(xlabel)
            fig.colorbar(im, ax=ax, label=f"deliveries per {bucket_ms} ms")
            caption = "Deliveries per queue and time bucket."
        out.append(("Messages per queue", caption, _png(fig)))

    if len(own):
        end = max(
            [int(x) for x in (own["to_ms"].max(), own["from_ms"].max()) if _present(x)]
            + ([int(per_client["bucket_ms"].max()) + bucket_ms] if len(per_client) else [])
        )
        own["queue"] = own["broker"] + ":" + own["queue_id"].astype(str)
        queues = sorted(own["queue"].unique(), key=_queue_sort_key)
        clients = sorted(own["client_id"].unique())
        colors = plt.get_cmap("tab10")
        fig, ax = plt.subplots(figsize=(10, 0.32 * len(queues) + 1.6))
        for _, row in own.iterrows():
            y = queues.index(row["queue"])
            stop = row["to_ms"] if _present(row["to_ms"]) else end
            ax.barh(
                y,
                sec(stop) - sec(row["from_ms"]),
                left=sec(row["from_ms"]),
                height=0.7,
                color=colors(clients.index(row["client_id"]) % 10),
                edgecolor="white",
                lw=0.4,
            )
        for ms in reb["end_ms"]:
            ax.axvline(sec(ms), color="black", lw=0.6, ls=":")
        dups = _pandas(t["duplicates"].select("broker", "queue_id", "start_ms"))
        if len(dups):
            ys = [
                queues.index(f"{r.broker}:{r.queue_id}")
                for r in dups.itertuples()
                if f"{r.broker}:{r.queue_id}" in queues
            ]
            xs = [sec(r.start_ms) for r in dups.itertuples() if f"{r.broker}:{r.queue_id}" in queues]
            ax.scatter(xs, ys, marker="x", color="red", s=18, zorder=3)
        ax.set_yticks(range(len(queues)))
        ax.set_yticklabels(queues, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel(xlabel)
        handles: list[Any] = [Patch(color=colors(i % 10)) for i in range(len(clients))]
        labels = list(clients)
        if len(dups):
            handles.append(Line2D([], [], marker="x", color="red", ls=""))
            labels.append("duplicate")
        ax.legend(handles, labels, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        out.append(
            (
                "Queue ownership",
                "Each bar: a consumer owning a queue (from its rebalance records). Dotted lines: rebalances; "
                "red crosses: duplicate deliveries.",
                _png(fig),
            )
        )

    pauses = _pandas(t["pauses"].where(F.col("pause_ms").isNotNull()).orderBy("added_ms"))
    if len(pauses):
        labels = [f"{r.broker}:{r.queue_id} @{sec(r.added_ms):.1f}s" for r in pauses.itertuples()]
        fig, ax = plt.subplots(figsize=(10, 0.28 * len(pauses) + 1.4))
        ax.barh(range(len(pauses)), pauses["pause_ms"], color="tab:orange")
        ax.set_yticks(range(len(pauses)))
        ax.set_yticklabels(labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("pause (ms): old owner's last delivery (or removal) to new owner's first")
        out.append(
            (
                "Pause of every moved queue",
                "One bar per move, labelled by queue and time of the add.",
                _png(fig),
            )
        )

    from pyspark.sql import Window  # noqa: PLC0415

    lag = (
        t["lag"]
        .groupBy("bucket_ms")
        .agg((F.sum("produced") - F.sum("consumed")).alias("delta"))
        .withColumn("lag", F.sum("delta").over(Window.orderBy("bucket_ms")))
        .orderBy("bucket_ms")
    )
    lag = _pandas(lag)
    if len(lag):
        per_q = _pandas(t["lag"].select("bucket_ms", "broker", "queue_id", "lag").orderBy("bucket_ms"))
        fig, ax = plt.subplots(figsize=(10, 3.6))
        for _, part in per_q.groupby(["broker", "queue_id"]):
            ax.step(sec(part["bucket_ms"]), part["lag"], where="post", color="grey", lw=0.5, alpha=0.6)
        ax.step(sec(lag["bucket_ms"]), lag["lag"], where="post", color="tab:red", lw=1.8, label="all queues")
        for ms in reb["end_ms"]:
            ax.axvline(sec(ms), color="grey", lw=0.6, ls=":")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("messages produced, not yet consumed")
        ax.legend(fontsize=7)
        out.append(
            ("Consumer lag", "Red: the whole group; grey: each queue. Dotted lines: rebalances.", _png(fig))
        )
    return out


def _pandas(df: Any) -> Any:
    """A small frame's rows as a pandas DataFrame (collected as rows: no Arrow, whatever pandas)."""
    import pandas as pd  # noqa: PLC0415

    return pd.DataFrame([r.asDict() for r in df.collect()], columns=df.columns)


def _present(x: Any) -> bool:
    """Not None and not NaN (pandas' missing value)."""
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def _queue_sort_key(name: str) -> tuple[str, int]:
    broker, _, qid = name.rpartition(":")
    return (broker, int(qid) if qid.isdigit() else -1)


_TIME_COLUMNS = frozenset(
    {
        "first_start_ms",
        "start_ms",
        "rebalance_ms",
        "removed_ms",
        "added_ms",
        "last_consumed_ms",
        "first_consumed_ms",
        "end_ms",
    }
)


def _table_html(df: Any, columns: list[str], limit: int = 50) -> str:
    rows = df.select(*columns).limit(limit).collect()
    if not rows:
        return "<p class=muted>none</p>"
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = []
    for r in rows:
        cells = []
        for c in columns:
            v = r[c]
            text = _fmt_ms(v) if c in _TIME_COLUMNS and v is not None else v
            cells.append(f"<td>{html.escape('' if text is None else str(text))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{font-size:1.5em;margin-bottom:.2em} h2{font-size:1.15em;margin-top:2em;border-bottom:1px solid #ddd}
.muted{color:#777} .figs{display:flex;flex-wrap:wrap;gap:.8em;margin:1em 0}
.fig{border:1px solid #ddd;border-radius:6px;padding:.6em 1em;min-width:9em}
.fig b{display:block;font-size:1.6em} img{max-width:100%}
table{border-collapse:collapse;font-size:.8em;margin:.5em 0} td,th{border:1px solid #ddd;padding:2px 6px}
th{background:#f4f4f4}
"""


def _render(
    t: dict[str, Any],
    figures: KeyFigures,
    *,
    group: str,
    topic: str | None,
    since_ms: int | None,
    bucket_ms: int,
    notes: list[str],
) -> str:
    from pyspark.sql import functions as F  # noqa: PLC0415

    f = figures
    pause = "—" if f.longest_pause_ms is None else f"{f.longest_pause_ms:,} ms"
    cards = [
        ("delivered", f"{f.delivered:,}", f"{f.deliveries:,} deliveries by {f.consumers} consumer(s)"),
        ("duplicates", f"{f.duplicates:,}", f"{f.attributed:,} attributed to a rebalance"),
        ("not consumed", f"{f.not_consumed:,}", "lost, or still waiting"),
        ("longest pause", pause, f"over {f.moves} queue move(s)"),
        ("rebalances", f"{f.rebalances:,}", "records that changed a consumer's queues"),
    ]
    parts = [
        "<!doctype html><html><head><meta charset=utf-8>",
        f"<title>rocketq report: {html.escape(group)}</title><style>{_CSS}</style></head><body>",
        f"<h1>Rebalance report — group <code>{html.escape(group)}</code></h1>",
        "<p class=muted>",
        f"topic: {html.escape(topic or 'every topic of the group')} · since: "
        f"{_fmt_ms(since_ms) + ' UTC' if since_ms is not None else 'the beginning'} · "
        f"bucket: {bucket_ms} ms · "
        f"generated {datetime.now(UTC).strftime('%Y-%m-%d %H:%M:%S')} UTC</p>",
        "<div class=figs>",
        *(
            f"<div class=fig><span class=muted>{k}</span><b>{v}</b>"
            f"<span class=muted>{html.escape(s)}</span></div>"
            for k, v, s in cards
        ),
        "</div>",
        *(f"<p><b>Note:</b> {html.escape(n)}</p>" for n in notes),
    ]
    for title, caption, png in _plots(t, bucket_ms):
        parts.append(f"<h2>{html.escape(title)}</h2><p class=muted>{html.escape(caption)}</p>")
        parts.append(f'<img alt="{html.escape(title)}" src="data:image/png;base64,{png}">')
    parts.append("<h2>Duplicates</h2>")
    parts.append(
        _table_html(
            t["duplicates"].orderBy("start_ms"),
            [
                "msg_id",
                "broker",
                "queue_id",
                "queue_offset",
                "first_client_id",
                "first_start_ms",
                "client_id",
                "start_ms",
                "rebalance_trigger",
                "rebalance_client_id",
                "rebalance_ms",
                "rebalance_kind",
            ],
        )
    )
    parts.append("<h2>Pauses</h2>")
    parts.append(
        _table_html(
            t["pauses"].orderBy("added_ms"),
            [
                "broker",
                "queue_id",
                "from_client",
                "to_client",
                "trigger",
                "removed_ms",
                "added_ms",
                "last_consumed_ms",
                "last_consumed_by",
                "first_consumed_ms",
                "pause_ms",
                "pause_start_kind",
            ],
        )
    )
    parts.append("<h2>Rebalances</h2>")
    parts.append(
        _table_html(
            t["rebalances"].where(F.col("changed")).orderBy("end_ms"),
            ["end_ms", "client_id", "trigger", "topic", "n_clients", "added", "removed", "duration_ms"],
            limit=100,
        )
    )
    parts.append(
        "<p class=muted>Tables (Parquet): consumption, ownership, rebalances, duplicates, pauses, lag. "
        f"Key figures: {html.escape(str(asdict(figures)))}</p></body></html>"
    )
    return "\n".join(parts)
