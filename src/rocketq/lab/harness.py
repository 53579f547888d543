"""The lab's harness: a real rocketq server, consumer processes, a producer, and clean teardown.

:class:`Lab` starts ``rocketq server`` as a child process (name server + broker, free loopback
ports, a temp data dir unless given one), more brokers with ``rocketq broker`` when asked
(``brokers=("room1@broker-a", "room2@broker-b")``), an :class:`~rocketq.admin.Admin` and a
:class:`~rocketq.client.Producer` in this process, and consumer processes
(:mod:`rocketq.lab.worker`) as :class:`Worker`\\ s whose JSON lines are read on threads. Children
run in sessions of their own (Ctrl-C reaches only the lab, which stops them in order) and get
SIGTERM if the lab process dies (``PR_SET_PDEATHSIG``); the servers' logs go to
``<data dir>/<broker name>.log``. Waits
are bounded and event-driven (:meth:`Worker.wait_for`, :meth:`Lab.wait_stable`), never sleeps
standing in for an event. Everything started is stopped by pid on :meth:`Lab.close` - workers
first (SIGTERM, graceful), then brokers and the server - also on errors and Ctrl-C::

    with Lab() as lab:
        lab.create_topic("LabTopic", 16)
        c1 = lab.spawn_consumer("consumer-1", "lab-group", ["LabTopic"])
        lab.wait_stable("lab-group", [c1], ["LabTopic"])
        lab.send("LabTopic", b"hello")
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import json
import logging
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, Any, TypeVar, cast

from rocketq.admin import Admin
from rocketq.allocate import AllocationStrategy, plan_group
from rocketq.analytics import counted
from rocketq.client import ClientConfig, Message, Producer, ProducerConfig, SendResult
from rocketq.client.config import ACCESS_KEY_ENV, SECRET_KEY_ENV
from rocketq.client.routes import subscribe_info_from_route
from rocketq.embedded import READY_PREFIX, ServerProcess, parse_ready_line, server_command
from rocketq.errors import RocketQError, UnknownTopicError
from rocketq.lab.worker import build_strategy, worker_args
from rocketq.models import MessageQueue
from rocketq.protocol.topics import retry_topic

__all__ = [
    "LAB_CLIENT_IP",
    "Lab",
    "LabError",
    "Received",
    "Worker",
    "interrupt_on_sigterm",
    "json_line",
    "queue_key",
    "queue_of",
]

LAB_CLIENT_IP = "127.0.0.1"
"""The IP in the lab consumers' client ids, so ids read ``127.0.0.1@consumer-1`` and sort by name."""

_BROKER_LISTENING = re.compile(r"listening on (\S+),")
T = TypeVar("T")
_RAW_CHUNK = 512  # small: a paced reader then holds little of the output beyond the pipe's


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return cast("Callable[..., int]", ctypes.CDLL(None, use_errno=True).prctl)
    except (OSError, AttributeError):
        return None


_PRCTL = _load_prctl()  # resolved here: a forked child must not import or load libraries
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In a child before exec: SIGTERM it when the lab process dies (Linux ``PR_SET_PDEATHSIG``),
    so not even a lab killed outright leaves servers or consumers behind."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, int(signal.SIGTERM))


def _spawn(args: list[str], **kwargs: Any) -> subprocess.Popen[str]:
    """A child in a session of its own (Ctrl-C reaches only the lab, which stops it in order)."""
    return subprocess.Popen(args, text=True, start_new_session=True, preexec_fn=_die_with_parent, **kwargs)  # noqa: PLW1509


@contextlib.contextmanager
def interrupt_on_sigterm() -> Iterator[None]:
    """Turn SIGTERM (and SIGINT, even where a shell ignored it) into KeyboardInterrupt meanwhile, so
    a lab or demo being stopped unwinds through :meth:`Lab.close` and stops its children."""

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _quietly(fn: Callable[[], object]) -> None:
    with contextlib.suppress(Exception):
        fn()


#: Seconds a lab's children get, in all, to stop after Ctrl-C before they are killed.
FAST_STOP = 0.5


class LabError(RocketQError):
    """The lab could not set up or observe what a scenario needs (a timeout, a process that died)."""


def queue_key(mq: MessageQueue) -> str:
    """``topic/broker:id``, the lab's name of a queue in JSON results."""
    return f"{mq.topic}/{mq.broker_name}:{mq.queue_id}"


def queue_of(d: Mapping[str, Any]) -> MessageQueue:
    """A queue from the ``{"topic", "broker", "queue_id"}`` dicts rebalance records carry."""
    return MessageQueue(str(d["topic"]), str(d["broker"]), int(d["queue_id"]))


@dataclass(frozen=True, slots=True)
class Received:
    """One message a worker consumed."""

    worker: str
    client_id: str
    ts_ms: int
    queue: MessageQueue
    offset: int
    body: str
    reconsume_times: int
    #: the message id, the start of the listener call (epoch ms) and the broker's store time
    msg_id: str = ""
    start_ms: int = 0
    stored_ms: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "consumer": self.worker,
            "client_id": self.client_id,
            "ts_ms": self.ts_ms,
            "queue": queue_key(self.queue),
            "queue_id": self.queue.queue_id,
            "offset": self.offset,
            "body": self.body,
        }


def json_line(line: str) -> dict[str, Any] | None:
    """A worker's stdout line as its JSON object (``None``: not one)."""
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


class Worker:
    """A consumer process and what it has said so far (its stdout lines, parsed, in order).

    ``parse`` turns a line into an event dict (``None`` skips the line); the default reads the
    lab worker's JSON lines. ``bufsize`` is the reading buffer of its stdout (small values let a
    reader that pauses push back on the process sooner). ``pace``, when given, is called before
    each line is read: a reader that sleeps there is a slow consumer of the process's output.
    ``raw`` reads the pipe with :func:`os.read` (no buffering beyond one chunk) and keeps
    :attr:`bytes_read` (taken from the pipe) and :attr:`line_end` (the stream offset just past the
    line being parsed), so a paced reader can tell when a line was written.
    """

    def __init__(
        self,
        name: str,
        args: list[str],
        env: Mapping[str, str] | None = None,
        *,
        shared: threading.Condition | None = None,
        parse: Callable[[str], dict[str, Any] | None] = json_line,
        bufsize: int = -1,
        pace: Callable[[], None] | None = None,
        raw: bool = False,
    ) -> None:
        self.name = name
        self._shared = shared
        self.args = args
        self._parse = parse
        self._pace = pace
        self._raw = raw
        self._terminated = False
        self.bytes_read = 0
        self.line_end = 0
        self.proc = _spawn(
            args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
            bufsize=bufsize,
        )
        self.events: list[dict[str, Any]] = []
        self.stderr: list[str] = []
        self.client_id: str | None = None
        self._cond = threading.Condition()
        self._threads = [
            threading.Thread(target=self._read_stdout, name=f"{name}-out", daemon=True),
            threading.Thread(target=self._read_stderr, name=f"{name}-err", daemon=True),
        ]
        for t in self._threads:
            t.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _lines(self) -> Iterator[str]:
        """stdout's lines; with ``raw``, read straight from the pipe (os.read), counting bytes."""
        assert self.proc.stdout is not None
        stdout = self.proc.stdout
        if not self._raw:
            while line := stdout.readline():
                yield line
            return
        fd = stdout.fileno()
        pending = b""
        while True:
            cut = pending.find(b"\n")
            if cut < 0:
                chunk = os.read(fd, _RAW_CHUNK)
                if not chunk:
                    if pending:
                        self.line_end += len(pending)
                        yield pending.decode("utf-8", "replace")
                    return
                self.bytes_read += len(chunk)
                pending += chunk
                continue
            raw, pending = pending[: cut + 1], pending[cut + 1 :]
            self.line_end += len(raw)
            yield raw.decode("utf-8", "replace")

    def _read_stdout(self) -> None:
        lines = self._lines()
        while True:
            if self._pace is not None:
                self._pace()
            line = next(lines, None)
            if line is None:
                break
            event = self._parse(line)
            if event is None:
                continue
            with self._cond:
                if event.get("type") == "started":
                    self.client_id = str(event["client_id"])
                self.events.append(event)
                self._cond.notify_all()
            self._notify_shared()
        with self._cond:
            self._cond.notify_all()
        self._notify_shared()

    def _notify_shared(self) -> None:
        if self._shared is not None:
            with self._shared:
                self._shared.notify_all()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self._cond:
                self.stderr.append(line.rstrip("\n"))
                del self.stderr[:-50]

    def wait_for(self, predicate: Callable[[Worker], bool], timeout: float, what: str) -> None:
        """Wait until ``predicate(self)`` holds (re-checked on every new line) or fail after ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate(self):
                remaining = deadline - time.monotonic()
                if self.proc.poll() is not None and not predicate(self):
                    raise LabError(
                        f"{self.name} exited ({self.proc.returncode}) before {what}: {self.tail()}"
                    )
                if remaining <= 0:
                    raise LabError(f"{self.name}: timed out after {timeout:.0f} s waiting for {what}")
                self._cond.wait(min(remaining, 0.5))

    def tail(self) -> str:
        return " | ".join(self.stderr[-3:]) or "no output"

    def wait_started(self, timeout: float = 60.0) -> str:
        self.wait_for(lambda w: w.client_id is not None, timeout, "its consumer to start")
        assert self.client_id is not None
        return self.client_id

    def snapshot(self) -> list[dict[str, Any]]:
        with self._cond:
            return list(self.events)

    def rebalances(self, topic: str | None = None) -> list[dict[str, Any]]:
        return [
            e for e in self.snapshot() if e["type"] == "rebalance" and (topic is None or e["topic"] == topic)
        ]

    def owned(self, topic: str) -> list[MessageQueue] | None:
        """The queues of ``topic`` the latest rebalance left this worker (``None``: none yet)."""
        records = self.rebalances(topic)
        if not records:
            return None
        return sorted(queue_of(d) for d in records[-1]["owned"])

    def seen_ids(self, topic: str) -> list[str] | None:
        """The group's client ids as this worker's latest rebalance saw them (records without ids -
        a clean handoff's lease acquired after a retry - repeat the ids of the rebalance before)."""
        for record in reversed(self.rebalances(topic)):
            if record["client_ids"]:
                return list(record["client_ids"])
        return None

    def received(self) -> list[Received]:
        cid = self.client_id or self.name
        return [
            Received(
                self.name,
                cid,
                int(e["ts_ms"]),
                MessageQueue(str(e["topic"]), str(e["broker"]), int(e["queue_id"])),
                int(e["offset"]),
                str(e["body"]),
                int(e.get("reconsume_times", 0)),
                str(e.get("msg_id") or ""),
                int(e.get("start_ms") or e["ts_ms"]),
                int(e["stored_ms"]) if e.get("stored_ms") is not None else None,
            )
            for e in self.snapshot()
            if e["type"] == "recv"
        ]

    @property
    def running(self) -> bool:
        return self.proc.poll() is None

    def terminate(self) -> None:
        """Ask for a graceful stop (SIGTERM, once) without waiting; :meth:`stop` waits.

        Once only: a second SIGTERM could reach a process that already finished its graceful stop
        and is exiting, past its own handler, and kill it (exit code -15 instead of 0)."""
        if self.proc.poll() is None and not self._terminated:
            self._terminated = True
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGTERM)

    def stop(self, timeout: float = 20.0) -> int:
        """Graceful stop (SIGTERM: commit, unregister), SIGKILL after ``timeout``; the exit code."""
        if self.proc.poll() is None:
            self.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    self.proc.kill()
                self.proc.wait()
        for t in self._threads:
            t.join(2.0)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        return self.proc.returncode


@dataclass
class _BrokerProcess:
    name: str
    proc: subprocess.Popen[str]
    addr: str


@dataclass
class Lab:
    """One lab run's servers, clients and processes (see the module docstring)."""

    data_dir: Path | None = None
    brokers: Sequence[str] = ("broker-a",)
    workers: list[Worker] = field(default_factory=list)
    #: Start the producer with message tracing on (when this build's producer offers it).
    trace: bool = False
    #: More options for ``rocketq server`` and every ``rocketq broker`` (e.g. short expiry settings).
    server_args: Sequence[str] = ()
    #: The ACL account the lab's admin, producer and workers sign for (with ``--acl FILE`` in
    #: ``server_args``; the workers get the keys in ``$ROCKETMQ_ACCESS_KEY`` and
    #: ``$ROCKETMQ_SECRET_KEY``, not on their command line).
    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self._tmp: str | None = None
        self.server: ServerProcess | None = None
        self._extra: list[_BrokerProcess] = []
        self._logs: list[IO[str]] = []
        self._admin: Admin | None = None
        self._producer: Producer | None = None
        self.broker_addrs: dict[str, str] = {}
        self.changed = threading.Condition()

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> Lab:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        self.close(fast=exc_type is not None and issubclass(exc_type, KeyboardInterrupt))

    @property
    def root(self) -> Path:
        if self.data_dir is not None:
            return self.data_dir
        if self._tmp is None:
            self._tmp = tempfile.mkdtemp(prefix="rocketq-lab-")
        return Path(self._tmp)

    def start(self) -> None:
        root = self.root
        root.mkdir(parents=True, exist_ok=True)
        first, *more = self.brokers
        self.server = self._spawn_server(root / first.replace("@", "_"), first)
        self.broker_addrs[first] = self.server.broker_addr
        for name in more:
            self._extra.append(self._spawn_broker(name, root / name.replace("@", "_")))
        self._admin = Admin(self.namesrv, access_key=self.access_key, secret_key=self.secret_key)
        if more:
            deadline = time.monotonic() + 15.0
            while len(self._admin.master_addrs()) < len(self.brokers):
                if time.monotonic() > deadline:
                    raise LabError("the extra brokers did not register with the name server")
                time.sleep(0.1)

    @staticmethod
    def _first_line(proc: subprocess.Popen[str], what: str, parse: Callable[[str], Any]) -> Any:
        """Read ``proc``'s stdout until ``parse(line)`` returns something (bounded)."""
        assert proc.stdout is not None
        deadline = time.monotonic() + 30.0
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or proc.poll() is not None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                proc.wait()
                raise LabError(f"{what} did not start (exit code {proc.returncode})")
            readable, _, _ = select.select([proc.stdout], [], [], remaining)
            if not readable:
                continue
            found = parse(proc.stdout.readline())
            if found is not None:
                return found

    def _log(self, name: str) -> IO[str]:
        """The file a server's stderr (its log) goes to: ``<root>/<name>.log``."""
        path = self.root / f"{name.replace('@', '_')}.log"
        handle = path.open("w", encoding="utf-8")
        self._logs.append(handle)
        return handle

    def server_logs(self) -> list[Path]:
        return sorted(self.root.glob("*.log"))

    def _spawn_server(self, data: Path, broker_name: str) -> ServerProcess:
        """``rocketq server`` on free ports (what :func:`rocketq.embedded.spawn_server` does, in a
        session of its own)."""
        # one broker in the server's process; more brokers are `rocketq broker`s
        args = server_command(data, brokers=1, extra_args=("--broker-name", broker_name, *self.server_args))
        proc = _spawn(args, stdout=subprocess.PIPE, stderr=self._log(broker_name))
        ready = self._first_line(
            proc,
            "rocketq server",
            lambda line: parse_ready_line(line.strip()) if line.startswith(READY_PREFIX) else None,
        )
        return ServerProcess(proc, ready)

    def _spawn_broker(self, name: str, data: Path, port: int = 0) -> _BrokerProcess:
        assert self.server is not None
        args = [sys.executable, "-m", "rocketq", "broker", "--namesrv", self.namesrv, "--broker-name", name]
        args += ["--broker-port", str(port), "--data-dir", os.fspath(data), *self.server_args]
        proc = _spawn(args, stdout=subprocess.PIPE, stderr=self._log(name))
        addr = self._first_line(
            proc, f"broker {name}", lambda line: m.group(1) if (m := _BROKER_LISTENING.search(line)) else None
        )
        self.broker_addrs[name] = addr
        return _BrokerProcess(name, proc, addr)

    def _extra_broker(self, name: str) -> _BrokerProcess:
        for b in self._extra:
            if b.name == name:
                return b
        raise LabError(
            f"no broker {name!r} of its own in this lab (extra brokers: {[b.name for b in self._extra]})"
        )

    def stop_broker(self, name: str, *, kill: bool = False, timeout: float = 20.0) -> int:
        """Stop one of the extra brokers (not the first, which shares its process with the name
        server): SIGTERM (it unregisters, flushes, checkpoints), or SIGKILL with ``kill``. Its
        exit code; :meth:`start_broker` brings it back on the same port and data dir."""
        proc = self._extra_broker(name).proc
        return _stop_process(proc, signal.SIGKILL if kill else signal.SIGTERM, timeout)

    def start_broker(self, name: str) -> str:
        """Start a stopped extra broker again on its old port and data dir; its address."""
        b = self._extra_broker(name)
        if b.proc.poll() is None:
            raise LabError(f"broker {name} is running")
        port = int(b.addr.rpartition(":")[2])
        fresh = self._spawn_broker(name, self.root / name.replace("@", "_"), port)
        self._extra[self._extra.index(b)] = fresh
        return fresh.addr

    def stop_workers(self, workers: Sequence[Worker], timeout: float = 20.0) -> None:
        """Stop several workers at once: SIGTERM to all, then wait for each."""
        for w in workers:
            w.terminate()
        for w in workers:
            w.stop(timeout)

    def close(self, *, fast: bool = False) -> None:
        """Stop every process this lab started, by pid: workers, then brokers, then the server.

        ``fast`` (Ctrl-C): every child is asked to stop at once (SIGTERM) and given
        :data:`FAST_STOP` seconds in all before it is killed, so that the lab or demo ends within
        a second of the signal, whatever the load (a killed server recovers its files at its next
        start; the lab's own temp dir is removed anyway)."""
        if fast:
            self._stop_fast()
        with contextlib.suppress(Exception):
            self.stop_workers(self.workers)
        for w in self.workers:
            if w.running:
                with contextlib.suppress(Exception):
                    w.stop(2.0)
        self._close_clients(fast=fast)
        self._stop_extra_brokers()
        if self.server is not None:
            with contextlib.suppress(Exception):
                self.server.stop()
            self.server = None
        for handle in self._logs:
            handle.close()
        self._logs.clear()
        self._remove_tmp(fast=fast)

    def _close_clients(self, *, fast: bool) -> None:
        """Shut the lab's producer and admin client down (on threads of their own when ``fast``:
        the servers are gone, no waiting on a graceful goodbye to them)."""
        clients: list[Callable[[], object]] = []
        if self._producer is not None:
            clients.append(self._producer.shutdown)
            self._producer = None
        if self._admin is not None:
            clients.append(self._admin.close)
            self._admin = None
        if fast and clients:
            # their goodbyes (unregister, offsets) go to servers already stopped: expected to fail,
            # and a warning line each after a Ctrl-C reads as if something went wrong
            logging.getLogger("rocketq.client").setLevel(logging.ERROR)
        for close in clients:
            if fast:
                threading.Thread(target=_quietly, args=(close,), daemon=True).start()
            else:
                _quietly(close)

    def _stop_extra_brokers(self) -> None:
        """SIGTERM to each extra broker still running, SIGKILL after 20 s."""
        for b in self._extra:
            _stop_process(b.proc, signal.SIGTERM, 20.0)
        self._extra.clear()

    def _remove_tmp(self, *, fast: bool) -> None:
        """Remove the lab's temp dir (after Ctrl-C by a detached ``rm``)."""
        if self._tmp is None:
            return
        if fast:
            # removing a commit log of a killed server took ~2 s of a loaded disk: after Ctrl-C
            # a detached ``rm`` does it while this process ends
            subprocess.Popen(
                ["rm", "-rf", "--", str(self._tmp)],
                start_new_session=True,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        else:
            shutil.rmtree(self._tmp, ignore_errors=True)
        self._tmp = None

    def _stop_fast(self) -> None:
        procs: list[subprocess.Popen[str]] = [w.proc for w in self.workers]
        procs += [b.proc for b in self._extra]
        if self.server is not None:
            procs.append(self.server.proc)
        for w in self.workers:
            w.terminate()
        for proc in procs[len(self.workers) :]:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + FAST_STOP
        for proc in procs:
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
        for proc in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(1.0)

    # ------------------------------------------------------------------ clients

    @property
    def namesrv(self) -> str:
        return _started(self.server).namesrv_addr

    @property
    def admin(self) -> Admin:
        return _started(self._admin)

    @property
    def producer(self) -> Producer:
        if self._producer is None:
            config = ClientConfig(
                namesrv=self.namesrv,
                client_ip=LAB_CLIENT_IP,
                instance_name="lab-producer",
                access_key=self.access_key,
                secret_key=self.secret_key,
            )
            producer_config = ProducerConfig()
            if self.trace and "trace" in {f.name for f in dataclasses.fields(ProducerConfig)}:
                producer_config = dataclasses.replace(producer_config, trace=True)
            self._producer = Producer(
                "lab-producer-group", config=producer_config, client_config=config
            ).start()
        return self._producer

    def create_topic(self, topic: str, queues: int) -> list[MessageQueue]:
        """Create ``topic`` with ``queues`` queues on every broker, or change it to that many;
        its readable queues, sorted."""
        self.admin.create_topic(topic, queues=queues, update=True)
        return self.queues(topic)

    def queues(self, topic: str) -> list[MessageQueue]:
        return sorted(subscribe_info_from_route(topic, self.admin.topic_route(topic)))

    def send(self, topic: str, body: str, *, queue: MessageQueue | None = None) -> SendResult:
        return self.producer.send(Message(topic, body.encode()), queue=queue)

    def spawn_consumer(
        self,
        name: str,
        group: str,
        topics: Sequence[str],
        *,
        instance: str | None = "",
        env: Mapping[str, str] | None = None,
        **options: Any,
    ) -> Worker:
        """Start a consumer process; ``instance`` defaults to ``name`` (``None``: the unique default)."""
        inst = name if instance == "" else instance
        args = worker_args(
            namesrv=self.namesrv,
            group=group,
            topics=topics,
            instance=inst,
            client_ip=LAB_CLIENT_IP,
            **options,
        )
        worker = Worker(name, args, {**self.acl_env(), **(env or {})}, shared=self.changed)
        self.workers.append(worker)
        return worker

    def acl_env(self) -> dict[str, str]:
        """The environment that gives a process the lab's ACL keys (empty without them)."""
        if self.access_key is None or self.secret_key is None:
            return {}
        return {ACCESS_KEY_ENV: self.access_key, SECRET_KEY_ENV: self.secret_key}

    # ------------------------------------------------------------------ observation

    def wait_until(self, predicate: Callable[[], bool], timeout: float, what: str) -> None:
        """Wait until ``predicate()`` holds, re-checked whenever any worker prints a line (and at
        least every 0.2 s, for conditions on the servers); :class:`LabError` after ``timeout``."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while not predicate():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise LabError(f"timed out after {timeout:.0f} s waiting for {what}")
                self.changed.wait(min(remaining, 0.2))

    def expected(
        self,
        group: str,
        topics: Sequence[str],
        client_ids: Sequence[str],
        strategy: AllocationStrategy,
        balance: str = "topic",
    ) -> dict[str, dict[str, list[MessageQueue]]]:
        """Per topic, each client id's queues as :mod:`rocketq.allocate` computes them."""
        queues = {t: self.queues(t) for t in topics}
        if balance == "group":
            # the group's subscriptions include its retry topic, and group balance counts its queue
            retry = retry_topic(group)
            deadline = time.monotonic() + 10.0
            while True:
                try:
                    queues[retry] = self.queues(retry)
                    break
                except UnknownTopicError:
                    if time.monotonic() > deadline:
                        raise LabError(f"the broker never created {retry}") from None
                    time.sleep(0.1)
        gp = plan_group(
            strategy, group, queues, client_ids, balance="group" if balance == "group" else "topic"
        )
        return {t: {cid: list(qs) for cid, qs in gp.topics[t].items()} for t in topics}

    def wait_stable(
        self,
        group: str,
        workers: Sequence[Worker],
        topics: Sequence[str],
        *,
        strategy: str = "AVG",
        strategy_options: dict[str, Any] | None = None,
        balance: str = "topic",
        expected: Mapping[str, Mapping[str, Sequence[MessageQueue]]] | None = None,
        timeout: float = 60.0,
    ) -> dict[str, dict[str, list[MessageQueue]]]:
        """Wait until every worker saw exactly the group's client ids and owns its planned share.

        Returns the plan (per topic, client id → queues), computed here with the strategy unless
        ``expected`` gives it (when consumers of one group run differently configured strategies,
        as CONFIG's do). Client ids repeat when two workers share one; the plan then counts the
        id twice, as RocketMQ's clients do.
        """
        ids = [w.wait_started() for w in workers]
        if expected is None:
            expected = self.expected(group, topics, ids, build_strategy(strategy, strategy_options), balance)
        result = {t: {cid: sorted(qs) for cid, qs in expected[t].items()} for t in topics}
        wanted_ids = sorted(ids)
        for w in workers:

            def settled(w: Worker) -> bool:
                for t in topics:
                    seen = w.seen_ids(t)
                    if seen is None or sorted(seen) != wanted_ids:
                        return False
                    assert w.client_id is not None
                    if w.owned(t) != result[t].get(w.client_id, []):
                        return False
                return True

            w.wait_for(settled, timeout, f"the rebalance over {counted(len(ids), 'consumer')} to settle")
        return result


def _started(part: T | None) -> T:
    """A part the lab makes at start, or :class:`LabError` before."""
    if part is None:
        raise LabError("the lab is not started")
    return part


def _stop_process(proc: subprocess.Popen[str], sig: int, timeout: float) -> int:
    """Send ``sig`` to ``proc`` if it runs, SIGKILL after ``timeout``; its output pipe closed, its
    exit code."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()
    return proc.returncode
