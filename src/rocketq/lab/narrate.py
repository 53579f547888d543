"""How the lab tells what happened: rich text on a terminal, plain lines elsewhere, or nothing.

:class:`Narrator` prints headings, sentences, ownership and message tables and check results
through rich; when stdout is not a terminal (CI, a pipe) rich drops colour and the tables are
printed unwrapped, one row a line. ``quiet=True`` (``--json``) prints nothing, so the JSON result
is the only thing on stdout.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import TextIO

from rich.console import Console
from rich.table import Table

from rocketq.analytics import queue_ranges
from rocketq.models import MessageQueue

__all__ = ["Narrator", "queue_ranges"]


class Narrator:
    """Prints a scenario's story (see the module docstring)."""

    def __init__(self, *, quiet: bool = False, file: TextIO | None = None) -> None:
        self.quiet = quiet
        out = file if file is not None else sys.stdout
        tty = out.isatty()
        self.console = Console(file=out, highlight=False, soft_wrap=True, width=None if tty else 200)

    def heading(self, text: str) -> None:
        if not self.quiet:
            self.console.print()
            self.console.print(f"[bold]== {text}[/bold]")

    def say(self, text: str) -> None:
        if not self.quiet:
            self.console.print(text, markup=False)

    def note(self, text: str) -> None:
        """A sentence explaining why (dim on a terminal)."""
        if not self.quiet:
            self.console.print(f"  [dim]why:[/dim] {_escape(text)}")

    def table(
        self,
        title: str | None,
        columns: Sequence[str],
        rows: Sequence[Sequence[object]],
        right: Sequence[str] = (),
    ) -> None:
        if self.quiet:
            return
        table = Table(title=title, title_justify="left")
        for name in columns:
            table.add_column(name, justify="right" if name in right else "left", overflow="fold")
        for row in rows:
            table.add_row(*(_escape("" if v is None else str(v)) for v in row))
        self.console.print(table)

    def ownership(
        self, title: str, owned: Mapping[str, Sequence[MessageQueue]], ids: Mapping[str, str]
    ) -> None:
        """Who owns which queues: consumer, client id, count, queue ranges."""
        rows = [(name, ids.get(name, "?"), len(qs), queue_ranges(qs)) for name, qs in owned.items()]
        self.table(title, ("consumer", "client id", "queues", "queue ids"), rows, right=("queues",))

    def check(self, name: str, ok: bool | None, detail: str) -> None:
        if self.quiet:
            return
        mark = (
            "[green]ok[/green]" if ok else "[yellow]skipped[/yellow]" if ok is None else "[red]FAILED[/red]"
        )
        self.console.print(f"  check {mark}: {_escape(name)} - {_escape(detail)}")

    def verdict(self, name: str, passed: bool) -> None:
        if self.quiet:
            return
        text = "[bold green]PASS[/bold green]" if passed else "[bold red]FAIL[/bold red]"
        self.console.print()
        self.console.print(f"{name}: {text}")


def _escape(text: str) -> str:
    return text.replace("[", "\\[")
