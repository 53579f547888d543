"""docs/security.md's examples, run as written: the file format and the worked examples (raw
signed requests, then rocketq's clients and CLI signing) against a ``rocketq server --acl``
subprocess."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from rocketq.broker.acl import parse_acl
from rocketq.cli.main import main
from rocketq.embedded import spawn_server

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

DOC = Path(__file__).resolve().parents[2] / "docs" / "security.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), flags=re.DOTALL)


def test_the_format_example_parses() -> None:
    rules = parse_acl(yaml.safe_load(_blocks("yaml")[0]))
    assert set(rules.accounts) == {"RocketMQ"}
    assert len(rules.global_white) == 2


def test_the_worked_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    acl = tmp_path / "plain_acl.yml"
    acl.write_text(_blocks("yaml")[1])
    examples = _blocks("python")
    assert len(examples) == 2  # the raw requests, then rocketq's own clients
    with spawn_server(tmp_path / "data", extra_args=("--acl", str(acl))) as server:
        names = {"BROKER": server.broker_addr, "NAMESRV": server.namesrv_addr}
        for example in examples:
            exec(compile(example, str(DOC), "exec"), dict(names))
        # the shell lines, in this process: `export`s set the environment, each command exits 0
        for line in "".join(_blocks("sh")).splitlines():
            words = shlex.split(line.replace("$NAMESRV", server.namesrv_addr))
            if words[0] == "export":
                for assignment in words[1:]:
                    monkeypatch.setenv(*assignment.split("=", 1))
            else:
                assert words[0] == "rocketq"
                assert main(words[1:]) == 0, line
