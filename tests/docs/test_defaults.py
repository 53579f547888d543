"""Every default the documentation states, read from the code (issue 31: the README said the
client keeps a 1 s minimum between rebalances "by default" while the code's default was 0).

``docs/guide/defaults.md`` holds the table: each row names the place in the code (a dotted path to a
value, or a command's option) and the value the docs state; the README and the guide state
defaults only as that page does. The ``--help`` of ``rocketq consume`` and ``rocketq chaos``
must say the same minimum as the client's config."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import re
from pathlib import Path
from typing import Any

import pytest

from rocketq.cli.main import build_parser

ROOT = Path(__file__).resolve().parent.parent.parent
PAGE = ROOT / "docs" / "guide" / "defaults.md"
_ROW = re.compile(r"^\| ([^|]+) \| ([^|]+) \| `([^`]+)` \|")
_UNITS = {"s": 1.0, "ms": 0.001, "MiB": 1024 * 1024, "KiB": 1024}


def rows() -> list[tuple[str, str, str]]:
    out = []
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        m = _ROW.match(line)
        if m:
            out.append((m.group(1).strip(), m.group(2).strip(), m.group(3)))
    return out


def stated(text: str) -> Any:
    """``20 s`` -> 20.0, ``200 ms`` -> 0.2, ``4 MiB`` -> 4194304, ``32`` -> 32, ```AVG``` -> "AVG"."""
    if text.startswith("`"):
        return text.strip("`")
    m = re.fullmatch(r"([\d.]+)(?: (s|ms|MiB|KiB))?", text)
    assert m, f"cannot read the stated default {text!r}"
    number = float(m.group(1)) if "." in m.group(1) else int(m.group(1))
    return number * _UNITS[m.group(2)] if m.group(2) else number


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and name in action.choices:
            return action.choices[name]
    raise AssertionError(f"no command {name!r}")


def option_default(where: str) -> Any:
    """``rocketq consume --rebalance-min-interval`` -> the option's default, as the parser has it."""
    words = where.split()
    parser = build_parser()
    for word in words[1:-1]:
        parser = _subparser(parser, word)
    for action in parser._actions:
        if words[-1] in action.option_strings:
            return action.default
    raise AssertionError(f"{where}: no such option")


def code_default(where: str) -> Any:
    """A dotted path: the longest importable module, then attributes (a dataclass field's class
    attribute is its default)."""
    parts = where.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            fields = {f.name: f for f in dataclasses.fields(obj)} if dataclasses.is_dataclass(obj) else {}
            if attr in fields:  # slotted dataclasses keep a field's default on the field only
                f = fields[attr]
                obj = f.default_factory() if f.default is dataclasses.MISSING else f.default  # type: ignore[misc]
            else:
                obj = getattr(obj, attr)
        return obj
    raise AssertionError(f"{where}: nothing to import")


def test_the_table_has_the_defaults_the_issue_named() -> None:
    places = {where for _, _, where in rows()}
    for needed in (
        "rocketq.client.config.ClientConfig.rebalance_interval",
        "rocketq.client.config.ClientConfig.rebalance_min_interval",
        "rocketq.client.config.PushConsumerConfig.pull_batch_size",
    ):
        assert needed in places


@pytest.mark.parametrize(("setting", "value", "where"), rows(), ids=[r[0] for r in rows()])
def test_each_stated_default_is_the_codes(setting: str, value: str, where: str) -> None:
    actual = option_default(where) if where.startswith("rocketq ") else code_default(where)
    if actual is None:
        pytest.fail(f"{where} has no default of its own")
    expected = stated(value)
    if isinstance(expected, str):
        actual = getattr(actual, "value", actual)
        assert str(actual) == expected, f"{setting}: the docs say {value}, {where} is {actual!r}"
    else:
        assert actual == pytest.approx(expected), f"{setting}: the docs say {value}, {where} is {actual!r}"


@pytest.mark.parametrize("command", ["consume", "chaos"])
def test_help_states_the_clients_rebalance_minimum(command: str) -> None:
    """The ``--rebalance-min-interval`` help says ``default`` followed by the client's value."""
    parser = _subparser(build_parser(), command)
    (action,) = [a for a in parser._actions if "--rebalance-min-interval" in a.option_strings]
    help_text = " ".join((action.help or "").split())
    m = re.search(r"default:? (\d+(?:\.\d+)?)", help_text)
    assert m, f"rocketq {command} --help states no default for --rebalance-min-interval: {help_text!r}"
    assert float(m.group(1)) == code_default("rocketq.client.config.ClientConfig.rebalance_min_interval")


def test_the_front_page_states_no_other_rebalance_minimum() -> None:
    """The README states the minimum as the table does (0 s), never the 1 s RocketMQ 5 uses."""
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert "no minimum between two (0 s" in readme
    assert not re.search(r"1 s minimum[^.]*by default", readme)


_STATED = re.compile(
    r"\b(?:every|default[^.;:()]{0,40}?|minimum[^.;:]{0,30}?|at least)\s+\(?(\d+(?:\.\d+)?) ?(s|ms|MiB)\b"
)


def test_durations_the_pages_state_are_the_tables() -> None:
    """A period or default the README or the guide states in prose ("every 20 s", "default (0 s",
    "at least 1 s") is one the table holds, as rocketq's default or as RocketMQ's beside it: a
    page that says "every 10 s" for something the code does every 20 s fails here."""
    table = PAGE.read_text(encoding="utf-8")
    known = {stated(v) for _, v, _ in rows() if not v.startswith("`")}
    known |= {stated(f"{n} {u}") for n, u in re.findall(r"(\d+(?:\.\d+)?) (s|ms|MiB)\b", table)}
    pages = [ROOT / "README.md", *sorted((ROOT / "docs" / "guide").glob("*.md"))]
    for page in pages:
        if page == PAGE:
            continue
        text = " ".join(page.read_text(encoding="utf-8").split())
        for m in _STATED.finditer(text):
            value = stated(f"{m.group(1)} {m.group(2)}")
            assert value in known, f"{page.name}: {m.group(0)!r} is no default of docs/guide/defaults.md"
