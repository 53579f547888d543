"""A real headless browser for tests of what a person looks at (the HTML report, later the dashboard).

Playwright for Python drives Debian's Chromium (``/usr/bin/chromium``, ``apt-get install
chromium``): no browser download (``playwright install`` is never needed). Chromium starts with the
flags that keep a headless run on a closed network from hanging, and Playwright gives every
browser a fresh profile. Use the fixture ``chromium`` (``tests/conftest.py``): it skips, saying
why, when Chromium or Playwright is missing. Keep a browser no longer than one test: while
Playwright's sync API is open, the main thread counts as running an event loop, so asyncio code
run there (other tests' servers) fails.

Checks every page gets (:func:`layout_problems`): nothing wider than the window, and no table
wider than the element that holds it. For pages with plots and figure cards (the HTML report):
:func:`plot_problems` (each plot loaded and shows data), :func:`label_problems` (no label of a plot
overlaps another, nor a bar) and :func:`card_problems` (no card alone on a row of its own).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = [
    "CHROMIUM",
    "CHROMIUM_FLAGS",
    "card_problems",
    "label_problems",
    "launch",
    "layout_problems",
    "missing",
    "plot_problems",
]

CHROMIUM = os.environ.get("ROCKETQ_CHROMIUM", "/usr/bin/chromium")
"""Debian's Chromium (``ROCKETQ_CHROMIUM`` overrides the path)."""

CHROMIUM_FLAGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
"""What a headless Chromium needs here: no sandbox (containers), no GPU, and nothing that reaches
for the network in the background."""


def missing() -> str | None:
    """Why no browser test can run here (``None``: they can)."""
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed (it is in the test extra: pip install -e '.[test]')"
    if not os.access(CHROMIUM, os.X_OK):
        return f"no Chromium at {CHROMIUM} (Debian: apt-get install chromium)"
    return None


@contextmanager
def launch() -> Iterator[Any]:
    """A headless Chromium (a Playwright ``Browser``), closed afterwards."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=list(CHROMIUM_FLAGS))
        try:
            yield browser
        finally:
            browser.close()


_LAYOUT_JS = """(width) => {
  const out = [];
  const doc = document.documentElement;
  if (doc.scrollWidth > width) out.push(`page is ${doc.scrollWidth} px wide in a ${width} px window`);
  document.querySelectorAll('table').forEach((t, i) => {
    const holder = t.parentElement.getBoundingClientRect();
    const box = t.getBoundingClientRect();
    if (box.right > holder.right + 1 || box.width > holder.width + 1)
      out.push(`table ${i} (${t.rows[0] ? t.rows[0].innerText.slice(0, 40) : ''}) is `
               + `${Math.round(box.width)} px wide in ${Math.round(holder.width)} px`);
  });
  return out;
}"""

_PLOTS_JS = """async () => Promise.all(Array.from(document.querySelectorAll('.plot')).map(async (el) => {
  let img = el;
  if (el.tagName !== 'IMG') {  // an inline <svg>: drawn on a canvas from its own markup
    const svg = el.querySelector('svg');
    img = new Image();
    img.alt = el.dataset.title || '';
    img.dataset.points = el.dataset.points || '0';
    if (svg) {
      const src = new XMLSerializer().serializeToString(svg);
      img.src = 'data:image/svg+xml;base64,' + btoa(unescape(encodeURIComponent(src)));
      try { await img.decode(); } catch (e) { /* did not load: width 0 */ }
    }
  }
  const c = document.createElement('canvas');
  c.width = img.naturalWidth; c.height = img.naturalHeight;
  const g = c.getContext('2d');
  if (c.width && c.height) g.drawImage(img, 0, 0);
  let coloured = 0;
  if (c.width && c.height) {
    const px = g.getImageData(0, 0, c.width, c.height).data;
    for (let i = 0; i < px.length; i += 4) {
      const [r, gr, b] = [px[i], px[i + 1], px[i + 2]];
      if (Math.max(r, gr, b) - Math.min(r, gr, b) > 40) coloured++;
    }
  }
  return {title: img.alt, width: img.naturalWidth, points: Number(img.dataset.points || 0), coloured};
}))"""


def layout_problems(page: Any, width: int) -> list[str]:
    """What overflows ``width`` on ``page`` (empty: nothing)."""
    return list(page.evaluate(_LAYOUT_JS, width))


_LABELS_JS = """() => {
  const out = [];
  const box = (e) => e.getBoundingClientRect();
  const hit = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5
    && b.top < a.bottom - 0.5;
  document.querySelectorAll('.plot').forEach((plot) => {
    const title = plot.dataset.title || '?';
    const labels = Array.from(plot.querySelectorAll('[id*="-label-"]'))
      .map((e) => ({id: e.id, r: box(e)})).filter((l) => l.r.width > 0);
    const bars = Array.from(plot.querySelectorAll('[id*="-bar-"]')).map((e) => ({id: e.id, r: box(e)}));
    for (let i = 0; i < labels.length; i++) {
      for (let j = i + 1; j < labels.length; j++)
        if (hit(labels[i].r, labels[j].r))
          out.push(`${title}: label ${labels[i].id} overlaps ${labels[j].id}`);
      for (const b of bars)
        if (hit(labels[i].r, b.r)) out.push(`${title}: label ${labels[i].id} overlaps bar ${b.id}`);
    }
  });
  return out;
}"""

_CARDS_JS = """(selector) => {
  const rows = new Map();
  document.querySelectorAll(selector).forEach((c) => {
    const top = Math.round(c.getBoundingClientRect().top);
    rows.set(top, (rows.get(top) || 0) + 1);
  });
  return Array.from(rows.values());
}"""


def label_problems(page: Any) -> list[str]:
    """Labels of a plot (elements whose id holds ``-label-``, in a ``.plot``) that overlap each
    other or a bar (ids holding ``-bar-``), as Chromium lays them out."""
    return list(page.evaluate(_LABELS_JS))


def card_problems(page: Any, selector: str = ".figs .fig") -> list[str]:
    """A card (``selector``) alone on a row of its own while another row holds several."""
    rows = list(page.evaluate(_CARDS_JS, selector))
    if len(rows) > 1 and 1 in rows:
        return [f"cards by row: {rows}: a card is alone on its row"]
    return []


def plot_problems(page: Any) -> list[str]:
    """Plots (``.plot``: an ``img``, or an element holding an inline ``svg``) that did not load,
    drew no data point, or hold no coloured pixel."""
    out = []
    for p in page.evaluate(_PLOTS_JS):
        if p["width"] == 0:
            out.append(f"plot {p['title']!r} did not load")
        elif p["points"] <= 0:
            out.append(f"plot {p['title']!r} drew no data")
        elif p["coloured"] < 50:
            out.append(f"plot {p['title']!r} shows no data ({p['coloured']} coloured pixels)")
    return out
