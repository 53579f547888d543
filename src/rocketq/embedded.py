"""A name server and a broker in one process: rocketq's embedded default.

:class:`EmbeddedCluster` starts a :class:`~rocketq.namesrv.NameServer`, then a
:class:`~rocketq.broker.Broker` registered with it, and closes them in the reverse order (the
broker unregisters, flushes and writes its checkpoint first). ``rocketq server`` runs one; tests,
the lab and the demo use it in process::

    async with EmbeddedCluster(data_dir=tmp, namesrv_port=0, broker_port=0) as cluster:
        cluster.namesrv_addr, cluster.broker_addr

For a cluster in a **separate process**, :func:`spawn_server` runs ``rocketq server`` on free ports
and returns its addresses, read from the first line the command prints
(:data:`READY_PREFIX`, then ``namesrv=HOST:PORT broker=HOST:PORT data=DIR``; with several brokers
``brokers=HOST:PORT,...`` comes first, so a parser that knows only the three fields still reads the
first broker as ``broker``).

This module sits above both servers (it imports ``namesrv`` and ``broker``); neither imports it.
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO

from rocketq.broker import Broker
from rocketq.broker.config import DEFAULT_BROKER_PORT, BrokerConfig
from rocketq.errors import ConfigError, RocketQError
from rocketq.lifecycle import AsyncStartClose
from rocketq.namesrv import DEFAULT_PORT, NameServer, NamesrvConfig
from rocketq.remoting import ServerConfig
from rocketq.store.config import FlushMode

__all__ = [
    "READY_PREFIX",
    "EmbeddedCluster",
    "ReadyLine",
    "ServerProcess",
    "parse_ready_line",
    "server_command",
    "spawn_server",
]

READY_PREFIX = "rocketq server ready:"
"""The first line ``rocketq server`` prints once both servers listen."""

_READY = re.compile(r"namesrv=(\S+) broker=(\S+) data=(.+)$")
_BROKERS = re.compile(r"^brokers=(\S+) ")


class EmbeddedCluster(AsyncStartClose):
    """A name server plus one broker pointed at it, in this process (see the module docstring).

    ``broker`` fine-tunes the broker (its host, port, data dir, flush, cluster and name server
    list are set from the other arguments); the name server's port speaks TLS as the broker's
    does (``broker.remoting.tls``).
    """

    def __init__(
        self,
        *,
        data_dir: str | os.PathLike[str] | None = None,
        host: str = "127.0.0.1",
        namesrv_port: int = DEFAULT_PORT,
        broker_port: int = DEFAULT_BROKER_PORT,
        broker_name: str = "broker-a",
        cluster: str = "DefaultCluster",
        flush: FlushMode = "async",
        broker: BrokerConfig | None = None,
    ) -> None:
        base = broker if broker is not None else BrokerConfig()
        self.namesrv = NameServer(
            NamesrvConfig(host=host, port=namesrv_port, remoting=ServerConfig(tls=base.remoting.tls))
        )
        self._broker_config = replace(
            base,
            host=host,
            port=broker_port,
            broker_name=broker_name,
            broker_cluster_name=cluster,
            flush=flush,
            data_dir=Path(data_dir) if data_dir is not None else base.data_dir,
        )
        self.broker: Broker | None = None

    @property
    def namesrv_addr(self) -> str:
        return self.namesrv.address

    @property
    def broker_addr(self) -> str:
        if self.broker is None:
            raise RocketQError("the cluster is not started")
        return self.broker.address

    @property
    def data_dir(self) -> Path:
        return self._broker_config.store_dir

    async def start(self) -> None:
        await self.namesrv.start()
        config = replace(self._broker_config, namesrv_addrs=(self.namesrv.address,))
        self.broker = Broker(config)
        try:
            await self.broker.start()
        except BaseException:
            await self.namesrv.close()
            raise

    async def close(self) -> None:
        if self.broker is not None:
            await self.broker.close()
        await self.namesrv.close()


@dataclass(frozen=True, slots=True)
class ReadyLine:
    """What ``rocketq server``'s first line says: the addresses and the data directory
    (``broker_addrs`` lists every broker, the first being ``broker_addr``)."""

    namesrv_addr: str
    broker_addr: str
    data_dir: Path
    broker_addrs: tuple[str, ...] = ()


def parse_ready_line(line: str) -> ReadyLine:
    """Read the ``rocketq server ready: [brokers=...] namesrv=... broker=... data=...`` line.

    >>> parse_ready_line("rocketq server ready: namesrv=h:1 broker=h:2 data=/d").broker_addrs
    ('h:2',)
    >>> line = "rocketq server ready: brokers=h:2,h:3 namesrv=h:1 broker=h:2 data=/d x"
    >>> parse_ready_line(line).broker_addrs, parse_ready_line(line).data_dir.as_posix()
    (('h:2', 'h:3'), '/d x')
    """
    if not line.startswith(READY_PREFIX):
        raise ConfigError(f"not a ready line: {line!r}")
    rest = line[len(READY_PREFIX) :].strip()
    match = _READY.search(rest)
    if match is None:
        raise ConfigError(f"malformed ready line: {line!r}")
    listed = _BROKERS.match(rest)
    addrs = tuple(listed.group(1).split(",")) if listed else (match.group(2),)
    return ReadyLine(match.group(1), match.group(2), Path(match.group(3)), addrs)


class ServerProcess:
    """A ``rocketq server`` child process (from :func:`spawn_server`); stop it with :meth:`stop`."""

    def __init__(self, proc: subprocess.Popen[str], ready: ReadyLine) -> None:
        self.proc = proc
        self.namesrv_addr = ready.namesrv_addr
        self.broker_addr = ready.broker_addr
        self.broker_addrs = ready.broker_addrs
        self.data_dir = ready.data_dir

    @property
    def pid(self) -> int:
        return self.proc.pid

    def broker_pids(self) -> dict[str, int]:
        """``{broker name: pid}`` of the broker child processes (``--brokers N`` > 1; empty when
        the broker runs in the server's own process), read from ``/proc`` (Linux)."""
        out: dict[str, int] = {}
        try:
            children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text().split()
        except OSError:
            return out
        for pid in map(int, children):
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue  # gone meanwhile
            if b"--broker-name" in argv[:-1]:
                out[argv[argv.index(b"--broker-name") + 1].decode()] = pid
        return dict(sorted(out.items()))

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM, wait for the clean shutdown, return the exit code (SIGKILL after ``timeout``)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return self.proc.returncode

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def server_command(
    data_dir: str | os.PathLike[str],
    *,
    flush: FlushMode = "async",
    brokers: int = 1,
    extra_args: tuple[str, ...] = (),
) -> list[str]:
    """The command line of ``python -m rocketq server`` on free loopback ports (the name server's
    and the first broker's port 0), ``brokers`` brokers, ``extra_args`` last."""
    return [
        sys.executable, "-m", "rocketq", "server", "--data-dir", os.fspath(data_dir),
        "--namesrv-port", "0", "--broker-port", "0", "--flush", flush, "--brokers", str(brokers),
        *extra_args,
    ]  # fmt: skip


def spawn_server(
    data_dir: str | os.PathLike[str],
    *,
    flush: FlushMode = "async",
    extra_args: tuple[str, ...] = (),
    timeout: float = 30.0,
    env: dict[str, str] | None = None,
    brokers: int = 1,
    stderr: int | IO[str] | None = None,
) -> ServerProcess:
    """Start ``python -m rocketq server --brokers N`` (one broker unless asked) on free loopback
    ports and wait for its ready line; its stderr (the servers' log) goes to ``stderr`` (default:
    this process's)."""
    args = server_command(data_dir, flush=flush, brokers=brokers, extra_args=extra_args)
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or proc.poll() is not None:
            proc.kill()
            proc.wait()
            proc.stdout.close()
            raise RocketQError(f"rocketq server did not start (exit code {proc.returncode})")
        readable, _, _ = select.select([proc.stdout], [], [], remaining)
        if not readable:
            continue
        line = proc.stdout.readline()
        if line.startswith(READY_PREFIX):
            return ServerProcess(proc, parse_ready_line(line.strip()))
