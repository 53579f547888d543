"""docs/security.md's examples, run as written: the file format and the worked example against a
``rocketq server --acl`` subprocess."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from rocketq.broker.acl import parse_acl
from rocketq.embedded import spawn_server

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

DOC = Path(__file__).resolve().parents[2] / "docs" / "security.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), flags=re.DOTALL)


def test_the_format_example_parses() -> None:
    rules = parse_acl(yaml.safe_load(_blocks("yaml")[0]))
    assert set(rules.accounts) == {"RocketMQ"}
    assert len(rules.global_white) == 2


def test_the_worked_example_runs(tmp_path: Path) -> None:
    acl = tmp_path / "plain_acl.yml"
    acl.write_text(_blocks("yaml")[1])
    (example,) = _blocks("python")
    with spawn_server(tmp_path / "data", extra_args=("--acl", str(acl))) as server:
        exec(compile(example, str(DOC), "exec"), {"BROKER": server.broker_addr})
