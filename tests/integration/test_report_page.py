"""``rocketq report``'s page as a person sees it: headless Chromium at 1280 px, on a demo-like run.

The records are drawn at random (the seed is printed, ``ROCKETQ_REPORT_SEED`` replays one): a
16-queue topic, a producer that starts after an idle lead-in, a group of AVG consumers that grows
1 -> 2 -> 3 (the second and third joining a fraction of a second apart, so that their change
labels would collide) and shrinks 3 -> 2; each moved queue waits a random pause for its new owner.
They go through :func:`rocketq.analytics.analyze` and :func:`rocketq.spark.report.render_html` -
the code ``rocketq report`` runs after Spark has read the topics - and the page is checked in
Chromium: nothing overflows, every plot shows data, no change label overlaps another or a bar of
the ownership chart, and the seven figure cards share one row.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("matplotlib")

from rocketq.analytics import Analysis, Delivery, RebalanceEvent, Stored, analyze
from rocketq.models import MessageQueue
from rocketq.spark.report import render_html
from tests import browserkit

pytestmark = pytest.mark.integration

TOPIC = "DemoTopic"
QUEUES = [MessageQueue(TOPIC, "broker-a", i) for i in range(16)]


def _avg(members: list[str]) -> dict[str, list[MessageQueue]]:
    """AVG's contiguous blocks over the sorted member list."""
    ids = sorted(members)
    n, m = len(QUEUES), len(ids)
    out: dict[str, list[MessageQueue]] = {}
    start = 0
    for i, cid in enumerate(ids):
        size = n // m + (1 if i < n % m else 0)
        out[cid] = QUEUES[start : start + size]
        start += size
    return out


def demo_like(rng: random.Random, t0: int = 1_700_000_000_000) -> tuple[Analysis, list[dict[str, Any]]]:
    """A demo's records (see the module docstring) and its rebalance rows for the report's table."""
    c1, c2, c3 = (f"127.0.0.1@consumer-{i}" for i in (1, 2, 3))
    lead = rng.randint(500, 5_000)  # the producer starts this long after the first consumer
    join2 = t0 + lead + rng.randint(2_000, 6_000)
    join3 = join2 + rng.randint(50, 600)
    leave = join3 + rng.randint(3_000, 6_000)
    end = leave + rng.randint(2_000, 5_000)
    timeline = [(t0, [c1]), (join2, [c1, c3]), (join3, [c1, c2, c3]), (leave, [c1, c2])]
    events: list[RebalanceEvent] = []
    rows: list[dict[str, Any]] = []
    seq: dict[str, int] = {}
    # per queue: (from time, owner, first delivery not before) in time order
    owners: dict[MessageQueue, list[tuple[int, str, int]]] = {q: [] for q in QUEUES}
    before: dict[str, list[MessageQueue]] = {}
    for at, members in timeline:
        plan = _avg(members)
        for cid in sorted(set(plan) | set(before)):
            now, was = plan.get(cid, []), before.get(cid, [])
            added = [q for q in now if q not in was]
            removed = [q for q in was if q not in now]
            if not (added or removed):
                continue
            seq[cid] = seq.get(cid, 0) + 1
            end_ms = at + rng.randint(0, 40)
            leaving = cid not in plan
            ids = () if leaving else tuple(members)
            trigger = "shutdown" if leaving else ("start" if seq[cid] == 1 else "notify")
            events.append(
                RebalanceEvent(cid, seq[cid], trigger, TOPIC, ids, tuple(added), tuple(removed), end_ms)
            )
            rows.append({
                "end_ms": end_ms, "client_id": cid, "trigger": trigger, "n_clients": len(ids),
                "added": [f"broker-a:{q.queue_id}" for q in added],
                "removed": [f"broker-a:{q.queue_id}" for q in removed],
                "duration_ms": rng.randint(1, 20), "changed": True,
            })  # fmt: skip
            for q in added:
                pause = rng.randint(40, 400) if at > t0 else 0
                owners[q].append((at, cid, end_ms + pause))
        before = plan
    rate = rng.choice([100, 200, 400])
    deliveries: list[Delivery] = []
    stored: list[Stored] = []
    free_at = dict.fromkeys(QUEUES, 0)  # when each queue's owner can take its next message
    for n in range(int((end - t0 - lead) * rate / 1000)):
        store = t0 + lead + n * 1000 // rate
        q = QUEUES[n % len(QUEUES)]
        _, owner, ready = max((o for o in owners[q] if o[0] <= store), key=lambda o: o[0])
        start = max(store + rng.randint(1, 4), ready, free_at[q])
        free_at[q] = start + 1
        msg = f"m{n}"
        stored.append(Stored(msg, q, store))
        deliveries.append(Delivery(owner, msg, q, start, True, store, f"R{n:06d}"))
    return analyze(deliveries, events, stored), rows


def test_the_report_page_at_1280_px(chromium: Any, tmp_path: Path) -> None:
    seed = int(os.environ.get("ROCKETQ_REPORT_SEED") or random.SystemRandom().randrange(1 << 32))
    print(f"ROCKETQ_REPORT_SEED={seed}")
    analysis, rows = demo_like(random.Random(seed))
    assert len(analysis.changes) == 4  # start 1, 1 -> 2, 2 -> 3, 3 -> 2
    # the idle lead-in is no pause: every pause is a move's own wait (at most 400 ms drawn, plus
    # the 40 ms a record may lag its change)
    assert analysis.figures.longest_pause_ms is not None
    assert analysis.figures.longest_pause_ms <= 440
    page_path = tmp_path / "report.html"
    page_path.write_text(
        render_html(analysis, rows, group="demo-group", topic=TOPIC, since_ms=None), encoding="utf-8"
    )
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.goto(page_path.as_uri())
        shot = tmp_path / "report-1280.png"
        page.screenshot(path=str(shot), full_page=True)
        print(f"screenshot: {shot}")
        assert browserkit.layout_problems(page, 1280) == []
        assert browserkit.plot_problems(page) == []
        titles = page.eval_on_selector_all(".plot", "els => els.map(e => e.dataset.title)")
        assert {"Messages per consumer", "Lag per queue around each change", "Queue ownership"} <= set(titles)
        labels = page.eval_on_selector_all('.plot [id*="-label-"]', "els => els.map(e => e.id)")
        assert {"ownership-label-1", "ownership-label-2", "ownership-label-3"} <= set(labels), labels
        assert page.eval_on_selector_all('.plot [id^="ownership-bar-"]', "els => els.length") >= 16
        assert browserkit.label_problems(page) == []
        assert browserkit.card_problems(page) == []
        tops = page.eval_on_selector_all(".figs .fig", "els => els.map(e => e.getBoundingClientRect().top)")
        assert len(tops) == 7
        assert len(set(tops)) == 1  # one row of cards at 1280 px
        text = page.inner_text("body")
        assert "pause: how long a moved queue had messages waiting" in text
    finally:
        page.close()


def test_the_checks_catch_what_they_look_for(chromium: Any, tmp_path: Path) -> None:
    """The page checks fail on the faults of the old report: labels on top of each other and of a
    bar, and a seventh card alone on a second row."""
    page_path = tmp_path / "bad.html"
    page_path.write_text(
        "<style>.figs{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));width:1000px}"
        "</style><div class=figs>" + "<div class=fig>card</div>" * 7 + "</div>"
        "<div class=plot data-title=t><svg width=200 height=100>"
        '<g id="x-bar-0"><rect x=0 y=40 width=200 height=20 fill=blue /></g>'
        '<g id="x-label-1"><text x=50 y=50>1 -> 2</text></g>'
        '<g id="x-label-2"><text x=55 y=52>2 -> 3</text></g></svg></div>',
        encoding="utf-8",
    )
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.goto(page_path.as_uri())
        problems = browserkit.label_problems(page)
        assert "t: label x-label-1 overlaps x-label-2" in problems
        assert "t: label x-label-1 overlaps bar x-bar-0" in problems
        assert browserkit.card_problems(page) == ["cards by row: [6, 1]: a card is alone on its row"]
    finally:
        page.close()
