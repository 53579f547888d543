"""Entry point of the ``rocketq`` console script.

Each subcommand lives in its own module of this package and exposes
``register(subparsers) -> None``, which adds its parser and sets ``handler`` (a function of the
parsed arguments returning an exit code). User mistakes end as one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import re
import shutil
import sys
import textwrap
import threading
import time
from collections.abc import Sequence
from typing import Any, NoReturn

from rocketq import __version__, _native
from rocketq.errors import RocketQError

__all__ = ["CliError", "build_parser", "exit_now", "interrupted", "main", "walk_parsers"]

# Subcommand modules, in the order ``--help`` lists them.
COMMANDS: tuple[str, ...] = (
    "allocate", "server", "namesrv", "broker", "cluster", "topic", "produce", "consume", "group", "message",
    "lab", "chaos", "demo", "report", "dashboard", "exporter", "tls", "info",
)  # fmt: skip

EXIT_USAGE = 2


class CliError(Exception):
    """A user mistake on the command line: printed as one line, exit code 2."""


#: Set by a command stopped by SIGINT/SIGTERM (or seen as exit code 130/143): the process then
#: ends with :func:`exit_now` once the command has printed its summary.
interrupted = threading.Event()


def exit_now(code: int) -> NoReturn:
    """End the process at once with ``code``, output flushed: a command stopped by Ctrl-C has
    said what it did and stopped what it started, and the interpreter's own teardown (modules,
    threads still parked in a client's loop) took seconds of a loaded machine's time after it."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


HELP_WIDTH = 100
"""Columns ``--help`` fills at most (fewer on a narrower terminal)."""


class _Formatter(argparse.HelpFormatter):
    """Help no wider than :data:`HELP_WIDTH`; a description keeps its paragraphs (split at blank
    lines) and its listing lines (lines that begin with two spaces, wrapped under themselves), and
    every other paragraph is filled to the width."""

    def __init__(self, prog: str) -> None:
        width = min(shutil.get_terminal_size((HELP_WIDTH, 24)).columns, HELP_WIDTH) - 2
        super().__init__(prog, width=max(width, 40), max_help_position=min(32, max(width // 3, 16)))

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out: list[str] = []
        for paragraph in text.strip("\n").split("\n\n"):
            lines = paragraph.split("\n")
            if not any(line.startswith("  ") for line in lines):
                out.append(textwrap.fill(" ".join(paragraph.split()), width, initial_indent=indent,
                                         subsequent_indent=indent))  # fmt: skip
            else:
                for line in lines:
                    head = _LISTING.match(line)
                    hang = indent + " " * (head.end() if head else 2)
                    out.append(textwrap.fill(line.rstrip(), width, initial_indent=indent,
                                             subsequent_indent=hang))  # fmt: skip
            out.append("")
        return "\n".join(out).rstrip("\n")


_LISTING = re.compile(r"\s*\S+\s{2,}")
"""The head of a listing line (``  name    summary``): its continuation lines hang under the summary."""


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line (no usage dump) and exit code 2, whose help
    is wrapped by :class:`_Formatter`, and which takes ``-v``/``--verbose`` after its subcommand too
    (counted with the ones before it)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)
        if kwargs.get("prog") != "rocketq" and kwargs.get("add_help", True):
            self.add_argument(
                "-v",
                "--verbose",
                dest="verbose_after",
                action="count",
                default=argparse.SUPPRESS,
                help="log more to stderr (-v INFO, -vv DEBUG; before or after the command)",
            )

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> Any:
        # ``--count=--``: argparse drops the "--" and, with nothing left, skips the option's type
        # check and stores [] (a traceback later); it is a missing value
        if action.nargs is None and action.option_strings and arg_strings == ["--"]:
            raise argparse.ArgumentError(action, "expected one argument, got '--'")
        return super()._get_values(action, arg_strings)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="rocketq",
        description="RocketMQ's messaging model in pure Python: servers, clients, rebalance lab, Spark.",
    )
    parser.add_argument(
        "--version", action="version", version=f"rocketq {__version__}, {_native.status().summary()}"
    )
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="log more to stderr (-v INFO, -vv DEBUG)"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in COMMANDS:
        module = importlib.import_module(f"rocketq.cli.{name.replace('-', '_')}")
        module.register(sub)
    _name_commands(parser)
    return parser


def _subparsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """The parsers of ``parser``'s subcommands (each once, aliases skipped)."""
    out: list[argparse.ArgumentParser] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                if all(child is not p for p in out):
                    out.append(child)
    return out


def walk_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """``parser`` and every parser below it, depth first (``rocketq``, ``rocketq topic``, ...)."""
    out = [parser]
    for child in _subparsers(parser):
        out.extend(walk_parsers(child))
    return out


def _name_commands(parser: argparse.ArgumentParser) -> None:
    """Give every command's arguments its full path (``rocketq topic create``), for its errors."""
    for p in walk_parsers(parser):
        p.set_defaults(command_path=p.prog)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``rocketq`` command line; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    args.verbose += getattr(args, "verbose_after", 0)
    level = logging.WARNING if args.verbose == 0 else logging.INFO if args.verbose == 1 else logging.DEBUG
    logging.basicConfig(
        level=level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    began = time.monotonic()
    try:
        code: int = args.handler(args)
    except (CliError, RocketQError) as exc:
        print(f"{args.command_path}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        # a command that prints its own summary returns 130 itself; one that unwinds says this much
        print(f"{args.command_path}: interrupted after {time.monotonic() - began:.1f} s", file=sys.stderr)
        return 130
    return code


def run() -> NoReturn:
    code = main()
    if code in (130, 143) or interrupted.is_set():
        exit_now(code)
    sys.exit(code)
