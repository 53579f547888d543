"""``rocketq`` commands as child processes, for the CLI tests where signals and processes matter.

:class:`CliProcess` starts ``python -m rocketq ...`` and reads its stdout lines on a thread, so a
test waits for a line (or a condition over the lines) with a timeout instead of sleeping.
:func:`parse_recv` and :func:`parse_rebalance` read the lines ``rocketq consume`` prints.
Every process is killed by pid on :meth:`CliProcess.close` if it is still running.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Recv:
    client_id: str
    broker: str
    queue_id: int
    queue_offset: int
    msg_id: str
    body: str


@dataclass(frozen=True, slots=True)
class Rebalance:
    client_id: str
    topic: str
    owned: tuple[str, ...]
    added: tuple[str, ...]
    removed: tuple[str, ...]


_REBALANCE = re.compile(r"^REBALANCE (\S+) (\S+) owned=\[([^\]]*)\] added=\[([^\]]*)\] removed=\[([^\]]*)\]")


def _split(text: str) -> tuple[str, ...]:
    return tuple(x for x in text.split(",") if x)


_RUN_ID = re.compile(r"-[0-9a-f]{6}-(?=\d{6,}$)")


def without_run(body: str) -> str:
    """A ``rocketq produce`` body without its run id: ``hi-3f9a1c-000042`` -> ``hi-000042``."""
    return _RUN_ID.sub("-", body, count=1)


def parse_recv(line: str) -> Recv | None:
    if not line.startswith("RECV "):
        return None
    _, cid, broker, qid, offset, msg_id, body = line.split(" ", 6)
    return Recv(cid, broker, int(qid), int(offset), msg_id, body)


def parse_rebalance(line: str) -> Rebalance | None:
    m = _REBALANCE.match(line)
    if m is None:
        return None
    return Rebalance(m.group(1), m.group(2), _split(m.group(3)), _split(m.group(4)), _split(m.group(5)))


class CliProcess:
    """One ``rocketq`` child process with its stdout lines collected as they come."""

    def __init__(self, args: Sequence[str], *, env: dict[str, str] | None = None) -> None:
        self.args = list(args)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rocketq", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )
        self.lines: list[str] = []
        self.errors: list[str] = []
        self._cond = threading.Condition()
        self._readers = [
            threading.Thread(target=self._read, args=(self.proc.stdout, self.lines), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stderr, self.errors), daemon=True),
        ]
        for t in self._readers:
            t.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _read(self, stream: object, into: list[str]) -> None:
        assert stream is not None
        for line in stream:  # type: ignore[attr-defined]
            with self._cond:
                into.append(line.rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def wait_for(self, predicate: Callable[[list[str]], bool], timeout: float = 20.0) -> bool:
        """Wait until ``predicate(lines)`` holds (True) or ``timeout`` passes / the process ends (False)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                if predicate(self.lines):
                    return True
                remaining = deadline - time.monotonic()
                if remaining <= 0 or (self.proc.poll() is not None and not self._readers[0].is_alive()):
                    return predicate(self.lines)
                self._cond.wait(min(remaining, 0.2))

    def snapshot(self) -> list[str]:
        with self._cond:
            return list(self.lines)

    def recvs(self) -> list[Recv]:
        return [r for r in map(parse_recv, self.snapshot()) if r is not None]

    def rebalances(self, topic: str | None = None) -> list[Rebalance]:
        out = [r for r in map(parse_rebalance, self.snapshot()) if r is not None]
        return out if topic is None else [r for r in out if r.topic == topic]

    def owned(self, topic: str) -> tuple[str, ...] | None:
        """The queues of ``topic`` this consumer said it owns last (None before its first line)."""
        records = self.rebalances(topic)
        return records[-1].owned if records else None

    def signal(self, sig: int) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)

    def pause(self, timeout: float = 10.0) -> None:
        """SIGSTOP, and wait until the kernel reports the process stopped (state ``T``)."""
        self.signal(signal.SIGSTOP)
        deadline = time.monotonic() + timeout
        stat = Path(f"/proc/{self.proc.pid}/stat")
        while time.monotonic() < deadline:
            # the state is the field after the parenthesised command name
            if stat.read_text().rsplit(")", 1)[1].split()[0] in ("T", "t"):
                return
            time.sleep(0.005)
        raise AssertionError(f"process {self.proc.pid} did not stop")

    def wait(self, timeout: float = 30.0) -> int:
        code = self.proc.wait(timeout)
        for t in self._readers:
            t.join(5.0)
        return code

    def close(self) -> None:
        """Kill (by pid) if still running, and reap."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10.0)
        for t in self._readers:
            t.join(5.0)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def processes_mentioning(text: str) -> list[str]:
    """Command lines of live processes (other than this one) whose arguments contain ``text``: a
    test's children found by their data dir or name server address, to check none outlived it."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            found.append(f"{proc.name}: {cmdline}")
    return found


def consume_args(namesrv: str, topic: str, group: str, *extra: str) -> list[str]:
    return ["consume", topic, "--group", group, "--namesrv", namesrv, *extra]
