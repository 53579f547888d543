"""The documentation site builds with warnings as errors (``mkdocs build --strict``: a broken link
or anchor, a page left out of the nav, a docstring mkdocstrings cannot render all fail), and holds
what it is built from: the README as its home, every command's ``--help``, the API reference.
About 15-25 s. Skips with the reason when MkDocs is not installed (the ``test`` extra installs it)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rocketq.cli.main import COMMANDS

ROOT = Path(__file__).resolve().parent.parent.parent


def _missing() -> str | None:
    for module in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python"):
        try:
            if importlib.util.find_spec(module) is None:
                return f"{module} is not installed (pip install -e '.[docs]')"
        except ModuleNotFoundError:
            return f"{module} is not installed (pip install -e '.[docs]')"
    return None


@pytest.mark.slow
def test_the_site_builds_strict_and_holds_its_sources(tmp_path: Path) -> None:
    why = _missing()
    if why is not None:
        pytest.skip(why)
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT, check=False, capture_output=True, text=True, timeout=240,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-5000:]
    assert "WARNING" not in log, log[-5000:]

    home = (site / "index.html").read_text(encoding="utf-8")
    assert "rocketq is Apache RocketMQ" in home  # the README is the home page
    assert 'href="guide/concepts/"' in home  # its docs/ links made the site's
    cli = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    for command in COMMANDS:
        assert f"usage: rocketq {command}" in cli, f"the CLI reference has no rocketq {command}"
    api = (site / "reference" / "api" / "rocketq" / "index.html").read_text(encoding="utf-8")
    assert "PushConsumer" in api
    assert "Producer" in api
    concepts = (site / "guide" / "concepts" / "index.html").read_text(encoding="utf-8")
    assert concepts.count('class="mermaid"') >= 5  # the diagrams, drawn by Material's Mermaid
