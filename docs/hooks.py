"""MkDocs hooks of the documentation site (``mkdocs.yml``: ``hooks: [docs/hooks.py]``).

* The home page (``docs/index.md``) is ``README.md`` itself, its links to ``docs/...`` made
  relative to the site, so the front page and the site's home never differ.
* The CLI reference (``docs/reference/cli.md``) is the ``--help`` of every ``rocketq`` command and
  subcommand, taken from the parsers :func:`rocketq.cli.main.build_parser` builds, at 80 columns.

A page holding the marker ``<!-- generated: NAME -->`` gets NAME's text in its place.
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from typing import Any

from rocketq.cli.main import build_parser

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
_MARKER = re.compile(r"<!-- generated: ([a-z-]+) -->")
# README links into docs/ (``](docs/x.md)``, ``](docs/img/y.png)``) as the site sees them
_DOCS_LINK = re.compile(r"\]\(docs/")


def readme_as_home() -> str:
    """README.md with its ``docs/`` links made relative to the site's root."""
    return _DOCS_LINK.sub("](", README.read_text(encoding="utf-8"))


def _subparsers(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    out: list[tuple[str, argparse.ArgumentParser]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen: set[int] = set()
            for name, sub in action.choices.items():
                if id(sub) not in seen:  # an alias names the same parser again
                    seen.add(id(sub))
                    out.append((name, sub))
    return out


def cli_reference() -> str:
    """Every command's ``--help``, a heading per command, subcommands nested under theirs."""
    os.environ["COLUMNS"] = "80"  # argparse wraps at the terminal's width: the page's column
    parts: list[str] = []

    def walk(parser: argparse.ArgumentParser, path: list[str]) -> None:
        if path:
            level = "#" * min(len(path) + 1, 4)
            parts.append(
                f"{level} `rocketq {' '.join(path)}`\n\n```text\n{parser.format_help().rstrip()}\n```\n"
            )
        for name, sub in _subparsers(parser):
            walk(sub, [*path, name])

    root = build_parser()
    parts.append(f"```text\n{root.format_help().rstrip()}\n```\n")
    walk(root, [])
    return "\n".join(parts)


_GENERATORS = {"readme": readme_as_home, "cli-reference": cli_reference}


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    return _MARKER.sub(lambda m: _GENERATORS[m.group(1)](), markdown)
