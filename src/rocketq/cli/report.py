"""``rocketq report --group G``: the rebalance analytics on Spark, as Parquet tables and one HTML page.

Reads the trace topic (``RMQ_SYS_TRACE_TOPIC``: records of clients with tracing on — rocketq's
``trace=True``, Java's ``enableMsgTrace``), rocketq's rebalance topic (``RQ_SYS_REBALANCE_TOPIC``)
and the consumed topics through the ``rocketmq`` Spark source, and writes under ``--out``
(default ``rocketq-report``) the tables ``consumption``, ``ownership``, ``rebalances``,
``duplicates``, ``pauses`` and ``lag`` (Parquet folders) and ``report.html``. stdout gets the key
figures and the page's path, stderr one line per step as it starts; Spark's own JVM log goes to
``spark.log`` under ``--out`` and its progress bars are off; instead, while a step runs Spark jobs,
a line says which stage runs and how many of its tasks are done (from Spark's status tracker, at
most one a second, only when it changed). The name server, the trace topic, the
group (known to the cluster, or with rebalance records) and ``--topic`` are checked before Spark
starts. Needs the ``spark`` extra (``pip install
'rocketq[spark]'``) and a JDK; pyspark is imported only when the command runs.

``--since`` takes epoch ms, ISO-8601, or an age: ``30s``, ``15m``, ``2h``, ``1d`` ago.

Ctrl-C (SIGINT) or SIGTERM stops it within a second, whatever Spark is doing: the command ends
Spark's JVM (its child process) itself (pyspark's own Ctrl-C handler asks the JVM to cancel its
jobs and unwinds through Py4J, which took seconds and printed tracebacks), says which step it was
in and that the tables under ``--out`` are incomplete, and exits 130 (143 for SIGTERM).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from rocketq.admin import Admin
from rocketq.analytics import counted, footnote
from rocketq.cli._output import (
    AclKeys,
    acl_keys,
    add_acl_options,
    add_namesrv_option,
    group_name,
    number_type,
    topic_name,
    unreachable_hint,
)
from rocketq.cli.main import CliError, exit_now
from rocketq.client.config import credentials_of, resolve_namesrv
from rocketq.client.trace import REBALANCE_TOPIC
from rocketq.errors import ConfigError, RemotingConnectError, RemotingTimeoutError, UnknownTopicError
from rocketq.protocol.trace import RMQ_SYS_TRACE_TOPIC

SPARK_LOG = "spark.log"
"""Where, under ``--out``, Spark's own (JVM) log goes: never on the terminal."""

__all__ = ["parse_since", "register"]

_bucket_ms = number_type(
    int,
    "not a number of milliseconds",
    lambda v: v > 0,
    "--bucket must be a positive number of milliseconds, got {value}",
    most=31_536_000_000,
    too_big="--bucket must be at most a year ({most} ms), got {value}",
)
_AGE = re.compile(r"^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_since(text: str, now_ms: int | None = None) -> int:
    """Epoch ms from ``--since``: digits (epoch ms), an age (``15m``) or ISO-8601 (local time when
    it has no offset).

    >>> parse_since("1700000000000"), parse_since("90s", now_ms=1_000_000)
    (1700000000000, 910000)
    >>> parse_since("2023-11-14T22:13:20+00:00")
    1700000000000
    """
    value = text.strip()
    now = int(time.time() * 1000) if now_ms is None else now_ms
    try:
        if value.isdigit():
            when = int(value)
        elif m := _AGE.match(value):
            when = now - int(float(m.group(1)) * _UNIT_MS[m.group(2)])
        else:
            when = int(datetime.fromisoformat(value).timestamp() * 1000)
    except (ValueError, OverflowError, OSError):
        raise CliError(f"--since must be epoch ms, an age such as 15m, or ISO-8601; got {text!r}") from None
    if when > now:
        raise CliError(f"--since {text} is in the future")
    if when < 0:
        raise CliError(f"--since {text} is before 1970")
    return when


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "report",
        help="rebalance analytics on Spark: who consumed what, duplicates, pauses, lag (HTML + Parquet)",
        description=(
            "Run Spark jobs over the trace and rebalance topics of a consumer group and write Parquet "
            "tables (consumption, ownership, rebalances, duplicates, pauses, lag) and a self-contained "
            "HTML report. Consumers must run with tracing on (rocketq: trace=True; Java: enableMsgTrace)."
        ),
    )
    parser.add_argument("--group", required=True, metavar="GROUP", type=group_name, help="the consumer group")
    parser.add_argument(
        "--topic",
        metavar="TOPIC",
        default=None,
        type=topic_name,
        help="only this topic (default: all of the group's)",
    )
    parser.add_argument(
        "--since", metavar="TIME", default=None, help="only deliveries from then: epoch ms, 15m, ISO-8601"
    )
    parser.add_argument(
        "--out", metavar="DIR", default="rocketq-report", help="output directory (default: %(default)s)"
    )
    parser.add_argument(
        "--bucket",
        metavar="MS",
        type=_bucket_ms,
        default=None,
        help="time bucket of the plots and lag, ms (1 .. a day)",
    )
    parser.add_argument("--master", default="local[2]", help="Spark master (default: %(default)s)")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    add_namesrv_option(parser, tls=False)  # its Spark reads do not take TLS settings yet
    add_acl_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    since = parse_since(args.since) if args.since else None
    try:
        namesrv = ";".join(resolve_namesrv(args.namesrv))
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    keys = acl_keys(args)
    _check_sources(namesrv, args.group, args.topic, keys)  # before pyspark loads: a slip is told at once
    try:
        from pyspark.sql import SparkSession  # noqa: PLC0415 - pyspark only when run

        from rocketq.spark.report import build_report  # noqa: PLC0415
        from rocketq.spark.session import local_session  # noqa: PLC0415
    except ImportError as exc:
        raise CliError(
            f"rocketq report needs the spark extra (pip install 'rocketq[spark]'): {exc}"
        ) from None
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CliError(f"cannot use --out {args.out}: {exc.strerror or exc}") from None
    began = time.monotonic()

    stop = _StopOnSignal(began, out)

    def progress(step: str) -> None:
        stop.step = step
        dots = "" if step == "done" or step.startswith(" ") else " ..."
        print(f"rocketq report: {time.monotonic() - began:5.1f} s {step}{dots}", file=sys.stderr, flush=True)

    ours = SparkSession.getActiveSession() is None  # stop only a session this command started
    stop.install()
    progress(f"starting Spark ({args.master}; its own log goes to {out / SPARK_LOG})")
    spark = local_session(args.master, "rocketq-report", jvm_log=out / SPARK_LOG)
    stop.install()  # again: starting the SparkContext put pyspark's own SIGINT handler in place
    stages = _StageWatch(spark, lambda line: progress(f"  {line}"))
    stages.start()
    try:
        result = build_report(
            spark,
            namesrv,
            args.group,
            topic=args.topic,
            since_ms=since,
            out_dir=out,
            bucket_ms=args.bucket,
            progress=progress,
            credentials=credentials_of(keys["access_key"], keys["secret_key"]),
        )
    except (RemotingConnectError, RemotingTimeoutError) as exc:
        raise unreachable_hint(exc, namesrv) from None
    finally:
        stages.stop()
        if ours:
            spark.stop()
    progress("done")
    f = result.figures
    if args.json:
        doc = {
            "html": str(result.html_path),
            "tables": {k: str(v) for k, v in result.tables.items()},
            "figures": f.to_dict(),
            "bucket_ms": result.bucket_ms,
            "notes": result.notes,
        }
        print(json.dumps(doc))
        return 0
    pause = "-" if f.longest_pause_ms is None else f"{f.longest_pause_ms:,} ms"
    print(
        f"group {args.group}: delivered {f.delivered} "
        f"({counted(f.deliveries, 'delivery', 'deliveries')} to {counted(f.consumers, 'consumer')})"
    )
    print(
        f"duplicates {f.duplicates} ({f.attributed} attributed to a rebalance), not consumed {f.not_consumed}"
    )
    print(
        f"queue moves {f.moves}, longest pause {pause}, peak backlog {f.peak_backlog}, "
        f"rebalances {f.rebalances}"
    )
    for line in footnote("move", "pause", "duplicate", "backlog", "not consumed", "rebalance"):
        print(f"  {line}")
    for note in result.notes:
        print(f"note: {note}")
    print(f"report: {result.html_path}")
    print(f"tables: {result.out_dir}/{{{','.join(result.tables)}}}")
    return 0


class _StageWatch:
    """Spark's progress as lines: every ``interval`` seconds, the active stages of the session's
    jobs (id, what runs, tasks done of all) from ``SparkContext.statusTracker()``, told to ``say``
    when they changed since the last line (a JVM listener is not reachable from Python; polling
    the tracker from a thread is)."""

    def __init__(self, spark: Any, say: Callable[[str], None], interval: float = 1.0) -> None:
        self.tracker = spark.sparkContext.statusTracker()
        self.say = say
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="report-stages", daemon=True)
        self._last = ""

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5.0)

    def line(self) -> str:
        """The active stages now (empty: none)."""
        parts = []
        for stage_id in sorted(self.tracker.getActiveStageIds()):
            info = self.tracker.getStageInfo(stage_id)
            if info is None:
                continue
            what = str(info.name).split(" at ", 1)[0]
            parts.append(f"Spark stage {stage_id} ({what}): {info.numCompletedTasks}/{info.numTasks} tasks")
        return "; ".join(parts)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                line = self.line()
            except Exception:  # the session is stopping (Py4J gone): nothing more to tell
                return
            if line and line != self._last:
                self._last = line
                self.say(line)


class _StopOnSignal:
    """SIGINT/SIGTERM while Spark works: end the JVM this command started, say where it was, exit.

    Spark's driver JVM ignores SIGINT (pyspark starts it so) and is this process's child (while
    it starts, pyspark does not hold it anywhere we can see): every child process gets SIGTERM
    (the JVM's shutdown hooks remove its temporary directories) and, if still there after
    ``JVM_GRACE`` seconds, SIGKILL. The line goes to the terminal's stderr even while Spark's
    start has file descriptor 2 pointed at ``spark.log``."""

    JVM_GRACE = 0.3

    def __init__(self, began: float, out: Path) -> None:
        self.began = began
        self.out = out
        self.step = "starting"
        self._stderr = os.dup(2)

    def install(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._handle)

    def _handle(self, signum: int, _frame: object) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)  # one stop; a second Ctrl-C changes nothing
        _end_children(self.JVM_GRACE)
        line = (
            f"rocketq report: interrupted after {time.monotonic() - self.began:.1f} s while {self.step}; "
            f"the tables under {self.out} are incomplete\n"
        )
        try:
            os.write(self._stderr, line.encode())
        except OSError:
            pass
        exit_now(130 if signum == signal.SIGINT else 143)


def _children() -> list[int]:
    """The pids of this process's children (Linux's ``/proc``; none found elsewhere)."""
    me = os.getpid()
    found = []
    for entry in os.scandir("/proc") if os.path.isdir("/proc") else ():
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after the last ')'
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and int(fields[1]) == me:
            found.append(int(entry.name))
    return found


def _end_children(grace: float) -> None:
    """SIGTERM to every child process, SIGKILL to those still there after ``grace`` seconds (not
    waited for: a big JVM takes its time to give its memory back, and it is gone anyway)."""
    kids = _children()
    for pid in kids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while kids and time.monotonic() < deadline:
        kids = [pid for pid in kids if _alive(pid)]
        if kids:
            time.sleep(0.02)
    for pid in kids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    """Whether child ``pid`` still runs (reaped here when it ended)."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return False
    return done == 0


def _rebalance_records(admin: Admin, group: str) -> bool:
    """Whether the rebalance topic holds a record of ``group`` (its messages are keyed by group)."""
    try:
        return bool(admin.query_message(REBALANCE_TOPIC, group, max_num=1))
    except UnknownTopicError:
        return False


def _check_sources(namesrv: str, group: str, topic: str | None, keys: AclKeys) -> None:
    """Before Spark starts: the name server answers, the trace topic exists (else nothing was
    traced), ``group`` has data (the cluster knows it, or the rebalance topic holds a record of
    it; else it is a typo, most likely), and ``topic`` exists when given. Each failure is one line."""

    try:
        with Admin(namesrv, **keys) as admin:
            admin.topic_list()
            try:
                admin.topic_route(RMQ_SYS_TRACE_TOPIC)
            except UnknownTopicError:
                raise CliError(
                    f"no trace records: topic {RMQ_SYS_TRACE_TOPIC} does not exist on {namesrv} (run the "
                    "group's consumers with tracing on: rocketq consume --trace, trace=True)"
                ) from None
            if not admin.group_exists(group) and not _rebalance_records(admin, group):
                raise CliError(
                    f"group {group} has no data: no broker on {namesrv} knows it (no member ever "
                    f"connected: no subscription config, retry topic or online member) and "
                    f"{REBALANCE_TOPIC} holds no rebalance record of it"
                )
            if topic is not None:
                try:
                    admin.topic_route(topic)
                except UnknownTopicError:
                    raise CliError(f"topic {topic} does not exist on {namesrv}") from None
    except (RemotingConnectError, RemotingTimeoutError) as exc:
        raise unreachable_hint(exc, namesrv) from None
    except ConfigError as exc:
        raise CliError(str(exc)) from None
