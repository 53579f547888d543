"""A name server and N broker processes, supervised: ``rocketq server --brokers N`` for N > 1.

rocketq's broker is one process with one event loop, so it uses one core. :class:`Supervisor`
makes one installation use several: it runs the name server in this process and starts N
``rocketq broker`` child processes registered with it under one cluster, each with its own name,
port and data directory (:func:`broker_plan`). Topics created through the admin layer then get
queues on every broker, as RocketMQ's cluster-level creation does.

* **Start**: every child must print its ``listening on HOST:PORT`` line within ``start_timeout``;
  if one cannot start, the others are stopped and :class:`~rocketq.errors.RocketQError` says which.
* **Supervision**: a child that exits while the supervisor runs is reported and restarted on the
  same port and data directory (it recovers its store as after any crash), at most
  ``max_restarts`` times within ``restart_window`` seconds; past that, :meth:`Supervisor.wait`
  returns the reason and the caller stops everything.
* **Stop**: SIGTERM to each child by pid (each unregisters, flushes and writes its checkpoint),
  SIGKILL after ``stop_timeout``, then the name server closes.

The children run in sessions of their own: a terminal's Ctrl-C reaches the supervisor only, which
stops them in order. On Linux each child also gets SIGTERM (a clean stop) if the supervisor dies
without stopping it, SIGKILL included (``prctl(PR_SET_PDEATHSIG)``), so no broker outlives it.

This module sits beside :mod:`rocketq.embedded` (it imports ``namesrv``).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import re
import signal
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocketq.errors import ConfigError, RocketQError
from rocketq.lifecycle import AsyncStartClose
from rocketq.namesrv import NameServer, NamesrvConfig
from rocketq.remoting import ServerConfig, TlsServerConfig

__all__ = [
    "MAX_DEFAULT_BROKERS",
    "BrokerPlan",
    "Supervisor",
    "SupervisorConfig",
    "broker_plan",
    "broker_summary",
    "default_broker_count",
    "usable_cores",
]

MAX_DEFAULT_BROKERS = 16
"""The default broker count is capped here: each broker adds its own connections to every client
and its queues to every topic created on the cluster; 16 cores is the server the issue targets."""

_LISTENING = re.compile(r"^rocketq broker \S+ \(cluster \S+\) listening on (\S+?),")


_PR_SET_PDEATHSIG = 1


def _parent_death_signal() -> Callable[[], None] | None:
    """A ``preexec_fn`` that has the child get SIGTERM when its parent dies (Linux), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def set_it() -> None:  # runs in the child between fork and exec: no locks, no allocation to speak of
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the parent died before the call took effect
            os._exit(1)

    return set_it


def usable_cores() -> int:
    """The cores this process may run on: ``os.process_cpu_count()`` (Python 3.13+), else the
    size of the affinity mask (``sched_getaffinity``, which honours ``taskset`` and cgroup cpusets),
    else ``os.cpu_count()``."""
    counter = getattr(os, "process_cpu_count", None)
    if counter is not None:
        n = counter()
        if n:
            return int(n)
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def default_broker_count() -> int:
    """One broker per usable core (:func:`usable_cores`), at most :data:`MAX_DEFAULT_BROKERS`."""
    return max(1, min(usable_cores(), MAX_DEFAULT_BROKERS))


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerPlan:
    """One child broker: its name, port (0 for any) and data directory."""

    name: str
    port: int
    data_dir: Path


PORT_STEP = 10
"""Broker ``i`` listens on ``--broker-port + i * PORT_STEP``: room for the ports a RocketMQ broker
keeps next to its own (``fastListenPort`` = port - 2, the HA port = port + 1)."""


def broker_plan(first_name: str, first_port: int, data_dir: Path, count: int) -> list[BrokerPlan]:
    """The names, ports and data dirs of ``count`` brokers.

    The first broker keeps ``first_name`` and ``data_dir`` itself, so a data dir written by a
    one-broker ``rocketq server`` is served again by the same broker; the others are named by
    counting on the last letter (``broker-a``, ``broker-b``, ...; ``<name>-<i>`` when the name does
    not end in ``-<letter>`` or the letters run out) and keep their data in ``data_dir/<name>``.

    >>> [(p.name, p.port, p.data_dir.as_posix()) for p in broker_plan("broker-a", 10911, Path("/d"), 3)]
    [('broker-a', 10911, '/d'), ('broker-b', 10921, '/d/broker-b'), ('broker-c', 10931, '/d/broker-c')]
    >>> [p.name for p in broker_plan("edge", 0, Path("/d"), 3)]
    ['edge', 'edge-1', 'edge-2']
    """
    if count < 1:
        raise ConfigError(f"at least one broker, got {count}")
    lettered = re.fullmatch(r"(.*-)([a-z])", first_name)
    plans = []
    for i in range(count):
        if i == 0:
            name = first_name
        elif lettered and ord(lettered.group(2)) + count - 1 <= ord("z"):
            name = lettered.group(1) + chr(ord(lettered.group(2)) + i)
        else:
            name = f"{first_name}-{i}"
        port = 0 if first_port == 0 else first_port + i * PORT_STEP
        if port > 65535:
            raise ConfigError(f"broker {name} would listen on port {port}: give a lower --broker-port")
        plans.append(BrokerPlan(name=name, port=port, data_dir=data_dir if i == 0 else data_dir / name))
    return plans


@dataclass(frozen=True, slots=True, kw_only=True)
class SupervisorConfig:
    """What :class:`Supervisor` starts and how it watches it."""

    host: str = "127.0.0.1"
    namesrv_port: int = 9876
    cluster: str = "DefaultCluster"
    brokers: tuple[BrokerPlan, ...]
    #: More ``rocketq broker`` options for every child (flush, feature switches).
    broker_args: tuple[str, ...] = ()
    #: Seconds a child has to print its listening line (it recovers its store first).
    start_timeout: float = 60.0
    #: Seconds each child has to stop cleanly after SIGTERM before SIGKILL.
    stop_timeout: float = 30.0
    #: Restarts of one broker allowed within ``restart_window`` seconds before giving up.
    max_restarts: int = 5
    restart_window: float = 60.0
    #: Python running the children (this one by default).
    python: str = field(default_factory=lambda: sys.executable)
    #: TLS on the name server's port (the children get theirs from ``broker_args``).
    tls: TlsServerConfig = field(default_factory=TlsServerConfig)


class _Child:
    """One broker child: its plan, current process and address."""

    def __init__(self, plan: BrokerPlan) -> None:
        self.plan = plan
        self.proc: asyncio.subprocess.Process | None = None
        self.addr: str | None = None
        self.restarts: deque[float] = deque()
        self.drain: asyncio.Task[None] | None = None


class Supervisor(AsyncStartClose):
    """The name server plus the child brokers of :class:`SupervisorConfig` (module docstring).

    ``report`` receives one line per event worth telling a person (a broker died, was restarted,
    cannot be restarted).
    """

    def __init__(self, config: SupervisorConfig, report: Callable[[str], None] = lambda _line: None) -> None:
        self.config = config
        self.namesrv = NameServer(
            NamesrvConfig(host=config.host, port=config.namesrv_port, remoting=ServerConfig(tls=config.tls))
        )
        self._children = [_Child(p) for p in config.brokers]
        self._report = report
        self._stopping = False
        self._failed: asyncio.Future[str] | None = None
        self._watchers: list[asyncio.Task[None]] = []
        self._preexec = _parent_death_signal()

    @property
    def namesrv_addr(self) -> str:
        return self.namesrv.address

    @property
    def broker_addrs(self) -> list[str]:
        """Each broker's ``HOST:PORT``, in plan order."""
        if any(c.addr is None for c in self._children):
            raise RocketQError("the brokers are not started")
        return [c.addr for c in self._children if c.addr is not None]

    @property
    def broker_names(self) -> list[str]:
        return [c.plan.name for c in self._children]

    @property
    def broker_pids(self) -> list[int | None]:
        """The pid of each broker's current process (``None`` while it is being restarted)."""
        return [
            c.proc.pid if c.proc is not None and c.proc.returncode is None else None for c in self._children
        ]

    async def start(self) -> None:
        self._failed = asyncio.get_running_loop().create_future()
        await self.namesrv.start()
        results = await asyncio.gather(*(self._spawn(c) for c in self._children), return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            await self.close()
            raise errors[0]
        self._watchers = [asyncio.create_task(self._watch(c)) for c in self._children]

    async def wait(self, stop: asyncio.Event) -> str | None:
        """Until ``stop`` is set (``None``) or a broker cannot be kept running (the reason)."""
        assert self._failed is not None
        stopped: asyncio.Future[Any] = asyncio.ensure_future(stop.wait())
        failed: asyncio.Future[Any] = self._failed
        try:
            await asyncio.wait((stopped, failed), return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
        return self._failed.result() if self._failed.done() else None

    async def close(self) -> None:
        self._stopping = True
        for task in self._watchers:
            task.cancel()
        for task in self._watchers:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await asyncio.gather(*(self._stop_child(c) for c in self._children))
        await self.namesrv.close()

    # ------------------------------------------------------------------ children

    def _args(self, child: _Child) -> list[str]:
        plan, cfg = child.plan, self.config
        port = plan.port
        if child.addr is not None:  # a restart keeps the address clients know
            port = int(child.addr.rsplit(":", 1)[1])
        return [
            cfg.python, "-m", "rocketq", "broker",
            "--namesrv", self.namesrv.address,
            "--host", cfg.host,
            "--broker-port", str(port),
            "--broker-name", plan.name,
            "--cluster", cfg.cluster,
            "--data-dir", os.fspath(plan.data_dir),
            *cfg.broker_args,
        ]  # fmt: skip

    async def _spawn(self, child: _Child) -> None:
        """Start ``child``'s process and wait for its listening line."""
        proc = await asyncio.create_subprocess_exec(
            *self._args(child),
            stdout=asyncio.subprocess.PIPE,
            stdin=asyncio.subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=self._preexec,
        )
        child.proc = proc
        assert proc.stdout is not None
        try:
            async with asyncio.timeout(self.config.start_timeout):
                while True:
                    line = await proc.stdout.readline()
                    if not line:
                        code = await proc.wait()
                        raise RocketQError(f"broker {child.plan.name} did not start (exit code {code})")
                    match = _LISTENING.match(line.decode(errors="replace"))
                    if match:
                        child.addr = match.group(1)
                        break
        except TimeoutError:
            await self._stop_child(child)
            raise RocketQError(
                f"broker {child.plan.name} did not start within {self.config.start_timeout:g} s"
            ) from None
        child.drain = asyncio.create_task(_drain(proc.stdout))

    async def _watch(self, child: _Child) -> None:
        """Restart ``child`` whenever its process exits, within the restart budget."""
        cfg = self.config
        while True:
            assert child.proc is not None
            code = await child.proc.wait()
            if self._stopping:
                return
            now = time.monotonic()
            while child.restarts and now - child.restarts[0] > cfg.restart_window:
                child.restarts.popleft()
            name, pid = child.plan.name, child.proc.pid
            if len(child.restarts) >= cfg.max_restarts:
                self._give_up(
                    f"broker {name} (pid {pid}) exited with code {code}, restarted {len(child.restarts)} "
                    f"time(s) in the last {cfg.restart_window:g} s already; not restarting it"
                )
                return
            child.restarts.append(now)
            if len(child.restarts) > 1:  # back off when it keeps dying: 0.5, 1, 2, 4 s
                await asyncio.sleep(min(0.25 * 2 ** (len(child.restarts) - 1), 5.0))
            self._report(
                f"broker {name} (pid {pid}) exited with code {code}; restarting it on {child.addr} "
                f"(restart {len(child.restarts)} of at most {cfg.max_restarts} in {cfg.restart_window:g} s)"
            )
            try:
                await self._spawn(child)
            except RocketQError as exc:
                self._report(str(exc))
                continue  # counted; the loop sees the exit code of the failed attempt
            assert child.proc is not None
            self._report(f"broker {name} restarted (pid {child.proc.pid}) on {child.addr}")

    def _give_up(self, reason: str) -> None:
        if self._failed is not None and not self._failed.done():
            self._failed.set_result(reason)

    async def _stop_child(self, child: _Child) -> None:
        proc = child.proc
        if proc is None:
            return
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                async with asyncio.timeout(self.config.stop_timeout):
                    await proc.wait()
            except TimeoutError:
                self._report(f"broker {child.plan.name} (pid {proc.pid}) did not stop in time; killing it")
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
        if child.drain is not None:
            await child.drain


async def _drain(stream: asyncio.StreamReader) -> None:
    """Read a child's stdout to its end (the broker prints nothing after its listening line, but a
    full pipe must never block it)."""
    while await stream.read(65536):
        pass


def broker_summary(names: Sequence[str], addrs: Sequence[str]) -> str:
    """``broker-a on HOST:PORT, broker-b on HOST:PORT`` for a person."""
    return ", ".join(f"{n} on {a}" for n, a in zip(names, addrs, strict=True))
