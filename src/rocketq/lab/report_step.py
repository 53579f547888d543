"""The Spark step the demo and ``rebalance-cost --spark`` share: ``rocketq report`` over a group.

:func:`spark_status` says why the analytics cannot run here (no pyspark, no ``rocketq report``,
clients without tracing) or ``None``; :func:`run_report` runs ``rocketq report --json`` as a
child process for one group and topic and returns its figures and the HTML report's path, or a
status saying why it failed - never a made-up result. Its progress lines (each step, and which
Spark stage runs with how many of its tasks done) are handed to a callback as they come.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocketq.analytics import counted
from rocketq.client import PushConsumerConfig
from rocketq.client.config import ProducerConfig

__all__ = ["ReportOutcome", "run_report", "spark_status", "tracing_available"]


_PREFIX = "rocketq report: "


def tracing_available() -> bool:
    """Whether this build's clients can publish message traces (``trace`` in their configs)."""
    return all(
        "trace" in {f.name for f in dataclasses.fields(c)} for c in (PushConsumerConfig, ProducerConfig)
    )


def spark_status() -> str | None:
    """Why the Spark analytics cannot run here (``None``: they can)."""
    if importlib.util.find_spec("pyspark") is None:
        return "rocketq[spark] not installed (pip install -e '.[spark]')"
    if importlib.util.find_spec("rocketq.cli.report") is None:
        return "`rocketq report` is not available in this build"
    if not tracing_available():
        return "this build's clients cannot publish message traces"
    return None


@dataclass
class ReportOutcome:
    """What ``rocketq report`` produced: ``status`` is ``done`` or says what went wrong."""

    status: str
    html: Path | None = None
    figures: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        if not self.figures:
            return []
        f = self.figures
        pause = f.get("longest_pause_ms")
        longest = "-" if pause is None else f"{pause:,} ms"
        return [
            f"Spark: delivered {f.get('delivered')} "
            f"({counted(int(f.get('deliveries') or 0), 'delivery', 'deliveries')} to "
            f"{counted(int(f.get('consumers') or 0), 'consumer')}), duplicates {f.get('duplicates')} "
            f"({f.get('attributed')} attributed to a rebalance), not consumed {f.get('not_consumed')}",
            f"Spark: queue moves {f.get('moves')}, longest pause {longest}, peak backlog "
            f"{f.get('peak_backlog')}, rebalances {f.get('rebalances')}",
            *(f"note: {n}" for n in self.notes),
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "html": str(self.html) if self.html else None,
            "figures": self.figures,
            "notes": self.notes,
        }


def run_report(
    namesrv: str,
    group: str,
    topic: str,
    out_dir: Path,
    timeout: float = 300.0,
    env: Mapping[str, str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> ReportOutcome:
    """Run ``rocketq report`` for ``group``/``topic`` into ``out_dir`` (emptied first); ``env``
    adds to its environment (a lab's ACL keys: :meth:`~rocketq.lab.harness.Lab.acl_env`);
    ``progress`` is told each of its progress lines as it prints it (without the
    ``rocketq report:`` prefix)."""
    out_dir = out_dir.resolve()
    if out_dir.exists():
        shutil.rmtree(out_dir)
    args = [sys.executable, "-m", "rocketq", "report", "--namesrv", namesrv, "--group", group]
    args += ["--topic", topic, "--out", os.fspath(out_dir), "--json"]
    child = subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **(env or {})},
    )
    err: list[str] = []

    def read_stderr() -> None:
        assert child.stderr is not None
        for line in child.stderr:
            err.append(line)
            if progress is not None and line.startswith(_PREFIX):
                progress(line[len(_PREFIX) :].rstrip("\n"))

    def read_stdout() -> None:
        assert child.stdout is not None
        got.append(child.stdout.read())

    got: list[str] = []
    readers = [
        threading.Thread(target=read_stderr, name="report-progress", daemon=True),
        threading.Thread(target=read_stdout, name="report-result", daemon=True),
    ]
    for t in readers:
        t.start()
    try:
        child.wait(timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
        return ReportOutcome(f"failed (rocketq report took more than {timeout:.0f} s)")
    except BaseException:  # Ctrl-C: the report is the demo's child; it goes too
        child.kill()
        child.wait()
        raise
    for t in readers:
        t.join(5.0)
    out = "".join(got)
    if child.returncode != 0:
        tail = ("".join(err).strip().splitlines() or ["no output"])[-1]
        return ReportOutcome(f"failed (rocketq report exit {child.returncode}: {tail})")
    try:
        doc = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return ReportOutcome("failed (rocketq report printed no result)")
    html = Path(doc["html"]) if doc.get("html") else None
    outcome = ReportOutcome(
        "done", html, dict(doc.get("figures", {})), [str(n) for n in doc.get("notes", [])]
    )
    if html is None or not html.is_file():
        outcome.status = "ran, but wrote no HTML report"
        outcome.html = None
    return outcome
