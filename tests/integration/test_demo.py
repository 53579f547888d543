"""``rocketq demo`` as CI runs it (no terminal): plain lines, every rebalance, the summary, the Spark
step's status, and nothing left running."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rocketq.lab.report_step import spark_status
from tests import browserkit
from tests.integration.clikit import processes_mentioning

pytestmark = pytest.mark.integration


def _demo(
    tmp_path: Path, *args: str, timeout: float = 240.0
) -> tuple[subprocess.CompletedProcess[str], dict]:  # type: ignore[type-arg]
    data = tmp_path / "data"
    proc = subprocess.run(
        [sys.executable, "-m", "rocketq", "demo", "--json", "--data-dir", str(data), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")},  # its timings stay in the test
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    namesrv = re.search(r"name server (\S+),", proc.stdout)
    assert namesrv is not None, proc.stdout[:2000]
    assert processes_mentioning(str(data)) == []
    assert processes_mentioning(f"--namesrv {namesrv.group(1)}") == []
    return proc, result


def test_demo_plain_output_without_spark(tmp_path: Path) -> None:
    proc, result = _demo(tmp_path, "--seconds", "4.5", "--rate", "120", "--no-spark")
    out = proc.stdout
    scaling = result["scaling"]
    assert "\x1b[" not in out  # no terminal: no escape codes, no live view
    assert re.search(r"^this takes about .+ s here: 4 s of traffic \+ ~\d+ s to start", out, re.M)
    assert "starting the server (a name server and a broker) ..." in out  # a step longer than 2 s says so
    rebalances = [line for line in out.splitlines() if line.startswith("REBALANCE ")]
    # consumer-1 alone, consumer-2 and -3 joining, consumer-3 leaving: every member says so
    for who in ("consumer-1", "consumer-2", "consumer-3"):
        assert any(f" {who} " in line for line in rebalances), rebalances
    assert any("(shutdown)" in line for line in rebalances)
    # each line says when, since the demo began, in time order (and at the wall clock)
    times = [
        float(m.group(1))
        for line in rebalances
        if (m := re.match(r"REBALANCE \+\s*(\d+\.\d\d) s \d\d:", line))
    ]
    assert len(times) == len(rebalances), rebalances
    # the summary counts exactly the lines printed, and says so
    n = scaling["figures"]["rebalances"]
    assert len(rebalances) == n, rebalances
    assert f"rebalances {n} (the {n} REBALANCE lines above)" in out
    # the report's words, a table per consumer, and every trigger word used is explained
    assert "{'consumer-1'" not in out
    assert re.search(r"^.*consumer-1 .* \d+ % .*$", out, re.M)
    for word in {re.search(r"\((\w+)", line).group(1) for line in rebalances}:  # type: ignore[union-attr]
        assert f"  trigger {word}: " in out
    assert "  not consumed: messages stored and never delivered" in out
    assert "  rebalance: a consumer's rebalance record that added or removed" in out
    assert re.search(r"^t=\s*\d+\.\d+s group 1 -> 3: sent \d+", out, re.MULTILINE)
    assert "Spark analytics: skipped (--no-spark)" in out
    assert scaling["sizes"] == [1, 3, 2]
    assert scaling["sent"] > 0
    assert scaling["lost"] == 0
    assert scaling["consumed"] == scaling["sent"]
    changes = scaling["changes"]
    # the group's member lists as its records report them: 1, then 3 (maybe by way of 2), then 2
    sizes = [c["change"] for c in changes]
    assert sizes[0] == "start 1", sizes
    assert sizes[-1] == "3 -> 2", sizes
    assert changes[-1]["moved_queues"] == 7  # AVG 6/5/5 -> 8/8
    assert sum(c["moved_queues"] for c in changes) == scaling["figures"]["moves"] >= 17
    assert scaling["figures"]["duplicates"] == scaling["duplicates"]
    assert set(scaling["received_per_consumer"]) == {"consumer-1", "consumer-2", "consumer-3"}
    assert result["spark"] == "skipped (--no-spark)"
    assert result["report"] is None
    assert re.search(r"delivered \d+, duplicates \d+, not consumed 0", out)
    assert re.search(
        r"^queue moves \d+, longest pause \d+ ms, peak backlog \d+, rebalances \d+ \(", out, re.M
    )
    assert "  pause: how long a moved queue had messages waiting" in out  # the definition, under it


@pytest.fixture(scope="module")
def demo_with_spark(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], dict]:  # type: ignore[type-arg]
    """One demo run with its Spark step, shared by the tests below."""
    return _demo(tmp_path_factory.mktemp("demo"), "--seconds", "6", "--rate", "100", timeout=600)


@pytest.mark.spark
@pytest.mark.slow
def test_demo_with_spark(demo_with_spark: tuple[subprocess.CompletedProcess[str], dict]) -> None:  # type: ignore[type-arg]
    proc, result = demo_with_spark
    assert result["scaling"]["lost"] == 0
    spark = result["spark"]
    if spark_status() is None:  # pyspark, rocketq report and tracing are all here: it must have run
        assert spark == "done", spark
    if spark.startswith("skipped"):
        # this build lacks the report or tracing: the demo must say which, never pretend
        assert re.search(
            r"skipped \((rocketq\[spark\] not installed|`rocketq report` is not available|this build)", spark
        )
        assert f"Spark analytics: {spark}" in proc.stdout
        return
    assert spark == "done", spark
    report = Path(result["report"])
    assert report.is_file()
    assert report.suffix == ".html"
    assert f"HTML report: {report}" in proc.stdout
    # one set of numbers: the terminal summary and the Spark report judged the same run alike
    assert result["report_figures"] == result["scaling"]["figures"]
    f = result["report_figures"]
    pause = "-" if f["longest_pause_ms"] is None else f"{f['longest_pause_ms']:,} ms"
    summary = f"queue moves {f['moves']}, longest pause {pause}, peak backlog {f['peak_backlog']}"
    assert f"\n{summary}, rebalances {f['rebalances']} (the " in proc.stdout
    assert f"Spark: {summary}, rebalances {f['rebalances']}" in proc.stdout
    assert f"delivered {f['delivered']}, duplicates {f['duplicates']}, not consumed 0" in proc.stdout
    # the Spark step showed what it was doing: its steps and Spark's stages
    assert re.search(
        r"^  \d+\.\d s reading the trace, rebalance and consumed topics \.\.\.$", proc.stdout, re.M
    )
    assert re.search(r"^  \d+\.\d s   Spark stage \d+ \(\w+\): \d+/\d+ tasks", proc.stdout, re.M)
    assert re.search(r"^Spark analytics: .*: \d+\.\d s$", proc.stdout, re.M)


@pytest.mark.spark
@pytest.mark.slow
def test_demo_report_as_a_person_sees_it(
    demo_with_spark: tuple[subprocess.CompletedProcess[str], dict],  # type: ignore[type-arg]
    chromium: Any,
    tmp_path: Path,
) -> None:
    """The demo's report in a 1280 px headless Chromium: nothing overflows, every plot has data, no
    change label overlaps another or a bar, no figure card is alone on its row."""
    _, result = demo_with_spark
    if result["report"] is None:
        pytest.skip(f"the demo wrote no report ({result['spark']})")
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.goto(Path(result["report"]).as_uri())
        shot = tmp_path / "demo-report-1280.png"
        page.screenshot(path=str(shot), full_page=True)
        print(f"screenshot of the demo's report: {shot}")
        assert browserkit.layout_problems(page, 1280) == []
        assert browserkit.plot_problems(page) == []
        assert browserkit.label_problems(page) == []  # no change label on another, nor on a bar
        assert browserkit.card_problems(page) == []  # no figure card alone on a row
        titles = page.eval_on_selector_all(".plot", "els => els.map(e => e.dataset.title)")
        assert {"Messages per consumer", "Queue ownership", "Backlog (lag)"} <= set(titles), titles
        assert any(t.startswith("Pause of every moved queue") for t in titles), titles
        text = page.inner_text("body")
        for figure in ("delivered", "duplicates", "queue moves", "longest pause", "peak backlog"):
            assert figure in text
        assert (
            "pause: how long a moved queue had messages waiting" in text
        )  # each figure's definition is on the page
        assert "[0..15]" in text or "[8..15]" in text  # queue lists as ranges
        assert "['broker-a" not in text
    finally:
        page.close()
