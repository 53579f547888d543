"""The Spark step the demo and ``rebalance-cost --spark`` share: ``rocketq report`` over a group.

:func:`spark_status` says why the analytics cannot run here (no pyspark, no ``rocketq report``,
clients without tracing) or ``None``; :func:`run_report` runs ``rocketq report --json`` as a
child process for one group and topic and returns its figures and the HTML report's path, or a
status saying why it failed - never a made-up result.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocketq.client import PushConsumerConfig
from rocketq.client.config import ProducerConfig

__all__ = ["ReportOutcome", "run_report", "spark_status", "tracing_available"]


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
            f"Spark: delivered {f.get('delivered')} ({f.get('deliveries')} deliveries to "
            f"{f.get('consumers')} consumers), duplicates {f.get('duplicates')} "
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
) -> ReportOutcome:
    """Run ``rocketq report`` for ``group``/``topic`` into ``out_dir`` (emptied first); ``env``
    adds to its environment (a lab's ACL keys: :meth:`~rocketq.lab.harness.Lab.acl_env`)."""
    out_dir = out_dir.resolve()
    if out_dir.exists():
        shutil.rmtree(out_dir)
    args = [sys.executable, "-m", "rocketq", "report", "--namesrv", namesrv, "--group", group]
    args += ["--topic", topic, "--out", os.fspath(out_dir), "--json"]
    try:
        proc = subprocess.run(
            args,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env={**os.environ, **(env or {})},
        )
    except subprocess.TimeoutExpired:
        return ReportOutcome(f"failed (rocketq report took more than {timeout:.0f} s)")
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return ReportOutcome(f"failed (rocketq report exit {proc.returncode}: {tail})")
    try:
        doc = json.loads(proc.stdout.strip().splitlines()[-1])
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
