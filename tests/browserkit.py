"""A real headless browser for tests of what a person looks at (the HTML report, later the dashboard).

Playwright for Python drives Debian's Chromium (``/usr/bin/chromium``, ``apt-get install
chromium``): no browser download (``playwright install`` is never needed). Chromium starts with the
flags that keep a headless run on a closed network from hanging, and Playwright gives every
browser a fresh profile. Use the session fixture ``chromium`` (``tests/conftest.py``): it skips,
saying why, when Chromium or Playwright is missing.

Checks every page gets (:func:`layout_problems`): nothing wider than the window, and no table
wider than the element that holds it.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["CHROMIUM", "CHROMIUM_FLAGS", "launch", "layout_problems", "missing", "plot_problems"]

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

_PLOTS_JS = """() => Array.from(document.querySelectorAll('img.plot')).map((img) => {
  const c = document.createElement('canvas');
  c.width = img.naturalWidth; c.height = img.naturalHeight;
  const g = c.getContext('2d');
  g.drawImage(img, 0, 0);
  let coloured = 0;
  if (c.width && c.height) {
    const px = g.getImageData(0, 0, c.width, c.height).data;
    for (let i = 0; i < px.length; i += 4) {
      const [r, gr, b] = [px[i], px[i + 1], px[i + 2]];
      if (Math.max(r, gr, b) - Math.min(r, gr, b) > 40) coloured++;
    }
  }
  return {title: img.alt, width: img.naturalWidth, points: Number(img.dataset.points || 0), coloured};
})"""


def layout_problems(page: Any, width: int) -> list[str]:
    """What overflows ``width`` on ``page`` (empty: nothing)."""
    return list(page.evaluate(_LAYOUT_JS, width))


def plot_problems(page: Any) -> list[str]:
    """Plots (``img.plot``) that did not load, drew no data point, or hold no coloured pixel."""
    out = []
    for p in page.evaluate(_PLOTS_JS):
        if p["width"] == 0:
            out.append(f"plot {p['title']!r} did not load")
        elif p["points"] <= 0:
            out.append(f"plot {p['title']!r} drew no data")
        elif p["coloured"] < 50:
            out.append(f"plot {p['title']!r} shows no data ({p['coloured']} coloured pixels)")
    return out
