"""Every command's ``--help`` and errors in one style: a walk over every parser of ``rocketq``.

For each parser (``rocketq``, ``rocketq topic``, ``rocketq topic create``, ...): the rendered help
has no ``%%`` left over from argparse's escaping, fits in 100 columns, every metavar is of one
pattern (upper-case words, no single letters), and every command has a description of more than a
few words. Then ``-v`` after the subcommand, and the error prefix naming the full command path.
"""

from __future__ import annotations

import argparse
import re

import pytest

from rocketq.cli.main import HELP_WIDTH, build_parser, main, walk_parsers

METAVAR = re.compile(
    r"""^(?:
        \{[a-z0-9_.-]+(?:,[a-z0-9_.-]+)*\}               # choices: {clean,rocketmq}
      | (?:[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*|[a-z][a-z0-9-]*)  # a word: SECONDS, MSG_ID (or a choice)
        (?:[:,;=|]?(?:\[[:;,]?)?(?:[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*|[a-z][a-z0-9-]*)\]?)*  # HOST:PORT[;..]
    )$""",
    re.VERBOSE,
)
"""One style of metavar: ``SECONDS``, ``PORT``, ``MSG_ID``, ``HOST:PORT``, ``first|last|TIMESTAMP``,
``{a,b}``; never a lone letter."""


@pytest.fixture(scope="module")
def parsers(monkeypatch_module: pytest.MonkeyPatch) -> list[argparse.ArgumentParser]:
    monkeypatch_module.setenv("COLUMNS", "200")  # the help's own limit must hold, not the terminal's
    return walk_parsers(build_parser())


@pytest.fixture(scope="module")
def monkeypatch_module() -> object:
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def _metavars(parser: argparse.ArgumentParser) -> list[tuple[str, str]]:
    out = []
    formatter = parser._get_formatter()
    for action in parser._actions:
        if action.nargs == 0 or isinstance(action, argparse._SubParsersAction | argparse._HelpAction):
            continue
        default = action.dest.upper() if action.option_strings else action.dest
        shown = formatter._metavar_formatter(action, default)(1)[0]
        out.append((action.option_strings[0] if action.option_strings else action.dest, shown))
    return out


def test_the_walk_finds_every_command(parsers: list[argparse.ArgumentParser]) -> None:
    progs = {p.prog for p in parsers}
    assert {"rocketq", "rocketq topic", "rocketq topic route", "rocketq demo", "rocketq lab"} <= progs
    assert len(parsers) > 30


def test_help_has_no_escaped_percent_and_fits_the_width(parsers: list[argparse.ArgumentParser]) -> None:
    problems = []
    for p in parsers:
        text = p.format_help()
        if "%%" in text:
            problems.append(f"{p.prog}: '%%' in the help")
        for line in text.splitlines():
            if len(line) > HELP_WIDTH:
                problems.append(f"{p.prog}: a {len(line)}-column line: {line[:60]}...")
    assert problems == []


def test_metavars_are_of_one_pattern(parsers: list[argparse.ArgumentParser]) -> None:
    bad = [
        f"{p.prog} {option} {shown}"
        for p in parsers
        for option, shown in _metavars(p)
        if not METAVAR.match(shown) or len(shown) < 2
    ]
    assert bad == []


def test_every_command_is_described(parsers: list[argparse.ArgumentParser]) -> None:
    short = [p.prog for p in parsers if len((p.description or "").split()) < 8]
    assert short == []


def test_the_topic_route_help_says_what_it_shows(parsers: list[argparse.ArgumentParser]) -> None:
    (route,) = [p for p in parsers if p.prog == "rocketq topic route"]
    text = " ".join(route.format_help().split())
    assert "read and write queue counts" in text
    assert "permission" in text


def test_verbose_after_the_subcommand_counts_with_the_one_before() -> None:
    parser = build_parser()
    args = parser.parse_args(["-v", "allocate", "--queues", "4", "--consumers", "2", "-v"])
    assert (args.verbose, args.verbose_after) == (1, 1)
    args = parser.parse_args(["topic", "list", "-vv"])
    assert (args.verbose, args.verbose_after) == (0, 2)


def test_verbose_after_the_subcommand_logs_info(capsys: pytest.CaptureFixture[str]) -> None:
    import logging

    root = logging.getLogger()
    saved = root.level, list(root.handlers)
    root.handlers.clear()
    try:
        assert main(["allocate", "--queues", "4", "--consumers", "2", "-v"]) == 0
        assert root.level == logging.INFO
    finally:
        root.setLevel(saved[0])
        root.handlers[:] = saved[1]


@pytest.mark.parametrize(
    ("argv", "prefix"),
    [
        (["topic", "create", "Bad Topic"], "rocketq topic create: error: "),
        (["topic", "route", "T", "--namesrv", "127.0.0.1:1", "--json"], "rocketq topic route: error: "),
        (["demo", "--seconds", "-1"], "rocketq demo: error: "),
        (["group", "members", "g", "-v", "--namesrv", "127.0.0.1:1"], "rocketq group members: error: "),
    ],
)
def test_errors_name_the_full_command(
    argv: list[str], prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own errors
        code = int(exc.code or 0)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2, err
    assert len(err) == 1, err
    assert err[0].startswith(prefix), err
