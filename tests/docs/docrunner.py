"""Run the examples of the README and the user guide, and check the output they show.

A small runner of ours (why not Sybil or pytest-examples: the examples need a live ``rocketq
server`` whose ports are substituted into them, shell commands that keep running in the
background while later ones run, and output compared loosely; both tools would need a custom
parser and evaluator for that, which is most of this file).

What is an example, in ``README.md`` and ``docs/guide/*.md``:

* a ```` ```python ```` block is a program: it runs in a fresh interpreter, and must exit 0.
  When a ```` ```text ```` block follows it (blank lines between at most), that is its
  standard output;
* a ```` ```console ```` block is a terminal session: each ``$ `` line is a command, and the lines
  up to the next ``$ `` are its standard output; a command that fails shows its exit code as its
  last line, ``(exit code N)``, and its output is then standard output and error together (what
  a terminal shows: its one-line error). A command ending in `` &`` runs in the background
  (as in a shell) while the next ones run; the lines shown under it must appear in its output in
  that order, other lines allowed between them, by the end of the page (when every background
  command is stopped with SIGTERM). Commands run as child processes (``python -m rocketq``),
  except ``rocketq allocate``, which talks to no server and runs through the same entry point
  (``rocketq.cli.main.main``) in the test's process. ``rocketq server ... &`` is not run: the page's server is
  already running, and its ready line is compared instead.

How output is compared (:func:`matches`, :func:`appears_in_order`):

* ``...`` inside a line matches any text within that line (client ids carry the machine's
  address, message ids and times change every run), and a line of only ``...`` matches any
  number of lines (rows of a table whose offsets depend on timing);
* trailing spaces are ignored; everything else must be equal;
* ``127.0.0.1:9876`` (the name server) and ``127.0.0.1:10911`` (the broker), and the data dir of
  a ``rocketq server`` command, stand for the test server's: substituted in commands, programs
  and expected output alike. Commands without ``--namesrv`` get ``NAMESRV_ADDR``, as the pages say.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from rocketq.cli.main import main as cli_main
from rocketq.embedded import ServerProcess, spawn_server
from tests.integration.clikit import CliProcess

ROOT = Path(__file__).resolve().parent.parent.parent
DOC_NAMESRV = "127.0.0.1:9876"
DOC_BROKER = "127.0.0.1:10911"
_FENCE = re.compile(r"^```(\w*)\s*$")
# commands that talk to no server: run in this process through the console script's entry point
_IN_PROCESS = frozenset({"allocate"})
_EXIT = re.compile(r"^\(exit code (\d+)\)$")


@dataclass(frozen=True, slots=True)
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    output: str | None = None  # a python block's ```text block


@dataclass(slots=True)
class Command:
    line: str
    expected: list[str] = field(default_factory=list)

    @property
    def background(self) -> bool:
        return self.line.endswith("&")

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.line.rstrip("&").strip())


def blocks(path: Path) -> list[Block]:
    """The python (with their output) and console blocks of one Markdown file, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[tuple[int, str, str]] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        start, lang, body = i, m.group(1), []
        i += 1
        while i < len(lines) and lines[i].rstrip() != "```":
            body.append(lines[i])
            i += 1
        found.append((start, lang, "\n".join(body)))
        i += 1
        # a python block's output: a text block after blank lines only
        if lang == "python":
            j = i
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j < len(lines) and lines[j].rstrip() == "```text":
                k = j + 1
                out = []
                while k < len(lines) and lines[k].rstrip() != "```":
                    out.append(lines[k])
                    k += 1
                found.append((j, "output", "\n".join(out)))
                i = k + 1
    out_blocks: list[Block] = []
    for start, lang, text in found:
        if lang == "output":
            prev = out_blocks[-1]
            out_blocks[-1] = Block(prev.path, prev.line, prev.lang, prev.text, text)
        elif lang in ("python", "console"):
            out_blocks.append(Block(path, start + 1, lang, text))
    return out_blocks


def commands(block: Block) -> list[Command]:
    cmds: list[Command] = []
    for line in block.text.splitlines():
        if line.startswith("$ "):
            cmds.append(Command(line[2:].strip()))
        elif cmds:
            cmds[-1].expected.append(line)
        elif line.strip():
            raise AssertionError(f"{block.path.name}:{block.line}: output before any command: {line!r}")
    return cmds


def _pattern(line: str) -> str:
    return ".*".join(re.escape(part) for part in line.rstrip().split("..."))


def _regex(expected: list[str], *, in_order: bool) -> re.Pattern[str]:
    gap = r"(?:[^\n]*\n)*?"
    parts = []
    for line in expected:
        if line.strip() == "...":
            parts.append(gap)
        else:
            parts.append((gap if in_order else "") + _pattern(line) + r"[ \t]*\n")
    return re.compile("".join(parts) + (gap if in_order else ""))


def _text(lines: list[str]) -> str:
    return "".join(line.rstrip() + "\n" for line in lines)


def matches(expected: list[str], actual: list[str]) -> bool:
    """The whole output ``actual`` is what ``expected`` shows (``...`` as in the module docstring)."""
    while expected and not expected[-1].strip():
        expected = expected[:-1]
    return _regex(expected, in_order=False).fullmatch(_text(actual)) is not None


def appears_in_order(expected: list[str], actual: list[str]) -> bool:
    """Every line of ``expected`` matches a line of ``actual``, in order, others between."""
    expected = [e for e in expected if e.strip() and e.strip() != "..."]
    return _regex(expected, in_order=True).match(_text(actual)) is not None


class Session:
    """The examples of one page, against one ``rocketq server`` started for the page when a first
    example needs it and stopped by :meth:`finish`."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.jobs: list[tuple[Command, CliProcess, str]] = []
        self._server: ServerProcess | None = None

    @property
    def server(self) -> ServerProcess:
        """The page's ``rocketq server`` (free ports, a temp dir), started when first needed."""
        if self._server is None:
            self._server = spawn_server(self.workdir / "server-data", stderr=subprocess.DEVNULL)
        return self._server

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "NAMESRV_ADDR": self.server.namesrv_addr, "COLUMNS": "110"}

    def substitute(self, text: str, data_dir: str | None = None) -> str:
        if DOC_NAMESRV not in text and DOC_BROKER not in text and not data_dir:
            return text
        text = text.replace(DOC_NAMESRV, self.server.namesrv_addr).replace(
            DOC_BROKER, self.server.broker_addr
        )
        if data_dir:
            text = text.replace(data_dir, str(self.server.data_dir))
        return text

    def run_python(self, block: Block) -> None:
        where = f"{block.path.name}:{block.line}"
        proc = subprocess.run(
            [sys.executable, "-c", self.substitute(block.text)],
            check=False, capture_output=True, text=True, timeout=90, cwd=self.workdir, env=self.env,
        )  # fmt: skip
        assert proc.returncode == 0, f"{where}: exit {proc.returncode}\n{proc.stderr[-3000:]}"
        if block.output is not None:
            expected = self.substitute(block.output).splitlines()
            actual = proc.stdout.splitlines()
            assert matches(expected, actual), (
                f"{where}: output differs\nshown:\n{block.output}\nprinted:\n{proc.stdout}"
            )

    def run_console(self, block: Block) -> None:
        for cmd in commands(block):
            where = f"{block.path.name}:{block.line}: $ {cmd.line}"
            argv = cmd.argv
            assert argv[0] == "rocketq", f"{where}: only rocketq commands are run"
            if argv[1:2] == ["server"]:
                self._check_server(cmd, argv, where)
                continue
            args = [self.substitute(a) for a in argv[1:]]
            if cmd.background:
                proc = CliProcess(args, env={"NAMESRV_ADDR": self.server.namesrv_addr, "COLUMNS": "110"})
                self.jobs.append((cmd, proc, where))
                # the next command waits for this one's first line, as a person waits for it to start
                if cmd.expected:
                    first = [self.substitute(cmd.expected[0])]
                    assert proc.wait_for(lambda lines, f=first: appears_in_order(f, lines), 30.0), (
                        f"{where}: never printed {first[0]!r}\n"
                        f"printed: {proc.snapshot()}\n{proc.errors[-20:]}"
                    )
                continue
            done = self._run_in_process(args) if args[0] in _IN_PROCESS else subprocess.run(
                [sys.executable, "-m", "rocketq", *args],
                check=False, capture_output=True, text=True, timeout=90, cwd=self.workdir, env=self.env,
            )  # fmt: skip
            expected = [self.substitute(e) for e in cmd.expected]
            code = 0
            if expected and (m := _EXIT.match(expected[-1])):
                code, expected = int(m.group(1)), expected[:-1]
            assert done.returncode == code, f"{where}: exit {done.returncode}\n{done.stderr[-3000:]}"
            printed = done.stdout if code == 0 else done.stdout + done.stderr
            assert matches(expected, printed.splitlines()), (
                f"{where}: output differs\nshown:\n" + "\n".join(cmd.expected) + f"\nprinted:\n{printed}"
            )

    @staticmethod
    def _run_in_process(args: list[str]) -> subprocess.CompletedProcess[str]:
        """The console script's own entry point in this process, for the commands that talk to no
        server: the same code as ``rocketq ...``, without seconds of interpreter start-up each."""
        out, err = io.StringIO(), io.StringIO()
        saved = os.environ.get("COLUMNS")
        os.environ["COLUMNS"] = "110"
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = cli_main(args)
        finally:
            if saved is None:
                del os.environ["COLUMNS"]
            else:
                os.environ["COLUMNS"] = saved
        return subprocess.CompletedProcess(["rocketq", *args], code, out.getvalue(), err.getvalue())

    def _check_server(self, cmd: Command, argv: list[str], where: str) -> None:
        data_dir = argv[argv.index("--data-dir") + 1] if "--data-dir" in argv else None
        ready = (
            f"rocketq server ready: namesrv={self.server.namesrv_addr} broker={self.server.broker_addr} "
            f"data={self.server.data_dir}"
        )
        expected = [self.substitute(e, data_dir) for e in cmd.expected]
        assert matches(expected, [ready]), f"{where}: shown {cmd.expected}, the server printed {ready!r}"

    def finish(self, *, check: bool = True) -> None:
        """Check each background command's lines (waiting up to 30 s for them) unless told not
        to (the page failed already), then stop it."""
        try:
            for cmd, proc, where in self.jobs if check else ():
                expected = [self.substitute(e) for e in cmd.expected]
                ok = proc.wait_for(lambda lines, e=expected: appears_in_order(e, lines), 30.0)
                assert ok, (
                    f"{where}: shown lines missing\nshown:\n"
                    + "\n".join(cmd.expected)
                    + ("\nprinted:\n" + "\n".join(proc.snapshot()) + "\n" + "\n".join(proc.errors[-20:]))
                )
        finally:
            for _, proc, _ in self.jobs:
                proc.signal(signal.SIGTERM)
            try:
                for _, proc, _ in self.jobs:
                    try:
                        proc.wait(30.0)
                    finally:
                        proc.close()
            finally:
                self.jobs.clear()
                if self._server is not None:
                    self._server.stop()
                    self._server = None
