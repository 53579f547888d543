"""Running one chaos scenario: the cluster, the proxy, the consumers, the producer, the schedule.

:func:`run_chaos` plays a :class:`~rocketq.chaos.scenarios.Plan`:

1. a :class:`~rocketq.lab.harness.Lab` with a name server and two brokers (``rocketq server`` and
   ``rocketq broker`` processes on free loopback ports, a temp dir), the plan's broker options;
2. the topic, with ``queues`` queues on each broker;
3. a :class:`~rocketq.chaos.proxy.ChaosProxy` on a :class:`~rocketq.remoting.relay.RelayThread`,
   with a name-server listener and a listener per broker for every consumer of the plan;
4. the first consumers (``rocketq consume`` processes, or ``--consumer-cmd``), each pointed at its
   own name-server listener, and a wait until their REBALANCE lines share the queues exactly;
5. the producer (sequence-numbered bodies ``seq=<n>``, at ``rate`` per second) and the schedule:
   each action at its time, the actual times recorded;
6. the drain: until every acknowledged message was printed and the lines share the queues exactly
   again, bounded; one more second of observation; then every consumer is stopped (SIGCONT first
   for a paused one), the proxy closed and the cluster stopped - always, on errors and Ctrl-C too,
   every process by its pid.

The run's :class:`~rocketq.chaos.timeline.Timeline` is then judged by
:func:`~rocketq.chaos.invariants.evaluate`, and :class:`ChaosResult` holds the plan, the schedule
as it happened, every invariant and the verdict.
"""

from __future__ import annotations

import array
import bisect
import contextlib
import fcntl
import json
import math
import os
import shlex
import signal
import sys
import termios
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rocketq.chaos.invariants import Expectations, InvariantResult, evaluate, seq_of
from rocketq.chaos.proxy import NAMESRV, ChaosProxy, Fault
from rocketq.chaos.scenarios import BROKERS, SCENARIOS, Action, Form, Plan, make_plan
from rocketq.chaos.timeline import (
    Life,
    QueueRef,
    Rebalance,
    Recv,
    Sent,
    Timeline,
    Window,
    WireEvent,
    parse_line,
)
from rocketq.client import ClientConfig, Message, Producer
from rocketq.errors import ConfigError, RocketQError
from rocketq.lab.harness import Lab, LabError, Worker
from rocketq.remoting.relay import RelayThread

__all__ = [
    "GROUP",
    "PLACEHOLDERS",
    "TOPIC",
    "ChaosOptions",
    "ChaosResult",
    "consumer_command",
    "run_chaos",
]

TOPIC = "ChaosTopic"
GROUP = "chaos_group"

PLACEHOLDERS = (
    "{namesrv}",
    "{topic}",
    "{group}",
    "{name}",
    "{heartbeat_interval}",
    "{rebalance_interval}",
    "{poll_interval}",
)
"""What ``--consumer-cmd`` may contain, replaced per consumer (see :func:`consumer_command`)."""

_SETTLE = 1.5  # seconds observed after the drain, so that "settled" means settled for a moment
_STARTUP_TIMEOUT = 60.0
_JOIN_ALLOWANCE = 1.0  # seconds a joining consumer may take to start before the schedule waits for it
_F_SETPIPE_SZ = 1031  # Linux fcntl: set a pipe's capacity
_SAMPLE_EVERY = 0.01  # seconds between samples of a slow consumer's written output


@dataclass(frozen=True, slots=True, kw_only=True)
class ChaosOptions:
    """How to run a scenario (the command line's options)."""

    seed: int = 1
    #: the consumers' handoff mode: the default command's ``--handoff``, and what the invariants expect
    handoff: Literal["clean", "rocketmq"] = "clean"
    #: orderly consumption: the default command's ``--orderly``, and the orderly invariants
    orderly: bool = False
    #: another consumer program (see :func:`consumer_command`); ``None``: ``rocketq consume``
    consumer_cmd: str | None = None
    #: the CI form (shorter, consumers rebalancing every 5 s)
    short: bool = False
    #: keep the servers' data and logs here (default: a temp dir, removed)
    data_dir: Path | None = None
    #: the brokers' ``--notify-coalesce-window`` (0: RocketMQ's one notification per change)
    notify_coalesce_window: float = 0.0
    #: the default command's ``--consistent-views`` ("per-broker", "union", "intersection", "off";
    #: None: rocketq consume's default, per-broker)
    consistent_views: str | None = None
    #: False: the default command runs with ``--no-view-fence``
    view_fence: bool = True
    #: the default command's ``--rebalance-min-interval`` (None: its default, 0 as RocketMQ 4.9.4)
    rebalance_min_interval: float | None = None

    def fixes(self) -> str:
        """The fixes this run has on, as words for a mode's label ("" when none)."""
        words = []
        if self.notify_coalesce_window > 0:
            words.append(f"coalesce {self.notify_coalesce_window:g}s")
        if self.consistent_views:
            words.append(f"consistent views ({self.consistent_views})")
        if not self.view_fence:
            words.append("no view fence")
        if self.rebalance_min_interval is not None:
            words.append(f"min interval {self.rebalance_min_interval:g}s")
        return ", ".join(words)

    def to_dict(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "handoff": self.handoff,
            "orderly": self.orderly,
            "consumer_cmd": self.consumer_cmd,
            "short": self.short,
            "notify_coalesce_window": self.notify_coalesce_window,
            "consistent_views": self.consistent_views,
            "view_fence": self.view_fence,
            "rebalance_min_interval": self.rebalance_min_interval,
        }


@dataclass
class ChaosResult:
    """A run: its plan, what happened when, the invariants, the verdict."""

    scenario: str
    options: ChaosOptions
    plan: Plan
    summary: str = ""
    issue: str = ""
    happened: list[dict[str, Any]] = field(default_factory=list)
    invariants: list[InvariantResult] = field(default_factory=list)
    consumers: dict[str, dict[str, Any]] = field(default_factory=dict)
    expectations: Expectations | None = None
    up_s: float | None = None
    error: str | None = None
    seconds: float = 0.0
    #: what the run saw (``None`` if it never got as far as producing)
    timeline: Timeline | None = None

    @property
    def passed(self) -> bool:
        return (
            self.error is None and bool(self.invariants) and all(r.ok is not False for r in self.invariants)
        )

    @property
    def verdict(self) -> str:
        return "PASS" if self.passed else "FAIL"

    def figure(self, name: str) -> float | None:
        for r in self.invariants:
            if r.name == name:
                return r.figure
        return None

    def invariant(self, name: str) -> InvariantResult | None:
        for r in self.invariants:
            if r.name == name:
                return r
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "summary": self.summary,
            "reproduces": self.issue,
            "verdict": self.verdict,
            "error": self.error,
            "seconds": round(self.seconds, 2),
            "options": self.options.to_dict(),
            "plan": self.plan.to_dict(),
            "expectations": self.expectations.to_dict() if self.expectations else None,
            "happened": self.happened,
            "all_up_s": self.up_s,
            "invariants": [r.to_dict() for r in self.invariants],
            "consumers": self.consumers,
        }


def _fault_windows(key: str, fault: Fault, start: float, end: float) -> list[Window]:
    """The timeline's windows of one fault: the fault itself, and for a cut a ``cut`` window
    naming who was cut off (``target``, ``*`` for everyone) from what (``detail``)."""
    windows = [Window("fault", key, start, end, fault.describe())]
    if fault.kind == "cut":
        windows.append(Window("cut", fault.consumer or "*", start, end, fault.target or "*"))
    return windows


def server_args(plan: Plan, options: ChaosOptions) -> tuple[str, ...]:
    """The options of both brokers: the scenario's, and the notification window if asked."""
    args = tuple(plan.broker_args)
    if options.notify_coalesce_window > 0:
        args += ("--notify-coalesce-window", f"{options.notify_coalesce_window:g}")
    return args


def consumer_command(plan: Plan, options: ChaosOptions, name: str, namesrv: str) -> list[str]:
    """The command of consumer ``name`` (reaching the cluster through name server ``namesrv``).

    By default ``rocketq consume`` with the plan's intervals, ``--from first``, ``--instance NAME``
    (with the options' ``--handoff`` and ``--orderly``). ``--consumer-cmd`` is split like a shell
    line and each of :data:`PLACEHOLDERS` replaced in every word; the process also gets
    ``NAMESRV_ADDR`` (RocketMQ's own variable).
    """
    if options.consumer_cmd is None:
        args = [sys.executable, "-m", "rocketq", "consume", TOPIC, "--group", GROUP, "--instance", name]
        args += ["--from", "first", "--namesrv", namesrv]
        args += ["--heartbeat-interval", f"{plan.heartbeat_interval:g}"]
        args += ["--rebalance-interval", f"{plan.rebalance_interval:g}"]
        args += ["--poll-name-server-interval", f"{plan.poll_interval:g}"]
        args += ["--handoff", options.handoff]
        if options.orderly:
            args.append("--orderly")
        if options.consistent_views:
            args += ["--consistent-views", options.consistent_views]
        if not options.view_fence:
            args.append("--no-view-fence")
        if options.rebalance_min_interval is not None:
            args += ["--rebalance-min-interval", f"{options.rebalance_min_interval:g}"]
        return args
    try:
        words = shlex.split(options.consumer_cmd)
    except ValueError as exc:
        raise ConfigError(f"--consumer-cmd does not split like a shell line: {exc}") from None
    if not words:
        raise ConfigError("--consumer-cmd is empty")
    values = {
        "{namesrv}": namesrv,
        "{topic}": TOPIC,
        "{group}": GROUP,
        "{name}": name,
        "{heartbeat_interval}": f"{plan.heartbeat_interval:g}",
        "{rebalance_interval}": f"{plan.rebalance_interval:g}",
        "{poll_interval}": f"{plan.poll_interval:g}",
    }
    out = []
    for word in words:
        for key, value in values.items():
            word = word.replace(key, value)  # noqa: PLW2901
        out.append(word)
    return out


class _SeqProducer:
    """Sends ``seq=<n>`` at a steady rate for a while, on a thread; records what was acknowledged."""

    def __init__(self, namesrv: str, rate: float, seconds: float, poll_interval: float) -> None:
        self.namesrv = namesrv
        self.rate = rate
        self.seconds = seconds
        self.poll_interval = poll_interval
        self.sent: list[Sent] = []
        self.failed = 0
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="chaos-producer", daemon=True)
        self.producer = Producer(
            "chaos_producer",
            client_config=ClientConfig(
                namesrv=namesrv, instance_name="chaos-producer", poll_name_server_interval=poll_interval
            ),
        ).start()

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        try:
            began = time.monotonic()
            end = began + self.seconds
            due = began
            n = 0
            while not self.stop.is_set() and time.monotonic() < end:
                n += 1
                try:
                    r = self.producer.send(Message(TOPIC, f"seq={n}".encode()))
                except RocketQError:
                    self.failed += 1
                else:
                    mq = r.message_queue
                    self.sent.append(Sent(n, time.monotonic(), mq.broker_name, mq.queue_id, r.queue_offset))
                due += 1.0 / self.rate
                self.stop.wait(max(0.0, due - time.monotonic()))
        except BaseException as exc:  # reported with the result, not lost on a thread
            self.error = exc

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def close(self) -> None:
        self.stop.set()
        if self._thread.is_alive():
            self._thread.join(15.0)
        with contextlib.suppress(Exception):
            self.producer.shutdown()


class _Consumer:
    """A consumer process of the run and its life (start, pauses, end)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.worker: Worker | None = None
        self.started = 0.0
        self.ended: float | None = None
        self.how = "running"
        self.pauses: list[tuple[float, float]] = []
        self.paused_since: float | None = None
        self.slow_rate = 0.0  # lines per second while slow; 0: full speed
        self.slow_wake = threading.Event()
        #: while slow: (time, bytes the process had written to stdout by then), every 10 ms
        self.written: list[tuple[float, int]] = []

    def pace(self) -> None:
        """Called by the worker's reader before each line: while the consumer is 'slow', take one
        line per ``1 / slow_rate`` seconds, noting meanwhile how much the process has written."""
        rate = self.slow_rate
        if rate <= 0:
            return
        end = time.monotonic() + 1.0 / rate
        while True:
            self._sample()
            left = end - time.monotonic()
            if left <= 0 or self.slow_rate <= 0:
                return
            self.slow_wake.wait(min(left, _SAMPLE_EVERY))

    def _sample(self) -> None:
        worker = self.worker
        if worker is None or worker.proc.stdout is None:
            return
        waiting = array.array("i", [0])
        try:
            fcntl.ioctl(worker.proc.stdout.fileno(), termios.FIONREAD, waiting)
        except OSError:
            return
        self.written.append((time.monotonic(), worker.bytes_read + waiting[0]))

    def stamp(self, now: float) -> float:
        """When the line just read (ending at the worker's ``line_end``) was written: reading a
        slow consumer's output late must not make its lines late. A line written before the
        latest sample gets the first sample that had it; others, ``now``."""
        worker = self.worker
        samples = self.written
        if worker is None or not samples or samples[-1][1] < worker.line_end:
            return now
        i = bisect.bisect_left(samples, worker.line_end, key=lambda s: s[1])
        return min(now, samples[i][0])

    def items(self) -> list[Recv | Rebalance]:
        if self.worker is None:
            return []
        return [e["item"] for e in self.worker.snapshot()]

    def life(self) -> Life:
        pauses = list(self.pauses)
        if self.paused_since is not None:
            pauses.append((self.paused_since, math.inf))
        return Life(self.name, self.started, self.ended, self.how, tuple(pauses))


class ChaosRun:
    """One run of a plan (see the module docstring); :meth:`run` returns the result."""

    def __init__(
        self, plan: Plan, options: ChaosOptions, say: Callable[[str], None] = lambda _: None
    ) -> None:
        self.plan = plan
        self.options = options
        self.say = say
        info = SCENARIOS[plan.scenario]
        self.result = ChaosResult(plan.scenario, options, plan, info.summary, info.issue)
        self.lab = Lab(data_dir=options.data_dir, brokers=BROKERS, server_args=server_args(plan, options))
        self.proxy = ChaosProxy(topic=TOPIC, group=GROUP)
        self.relay: RelayThread | None = None
        self.consumers: dict[str, _Consumer] = {}
        self.namesrv_of: dict[str, str] = {}
        self.producer: _SeqProducer | None = None
        self.windows: list[Window] = []
        self.open_faults: dict[str, tuple[float, Fault]] = {}
        #: broker downtimes and slow readings under way: (what, target) -> since
        self.open_windows: dict[tuple[str, str], float] = {}
        self.queue_sets: list[tuple[float, tuple[QueueRef, ...]]] = []
        self.expectations = plan.expectations(handoff=options.handoff, orderly=options.orderly)
        self.t0 = 0.0
        self.last_change = 0.0
        self._stoppers: list[threading.Thread] = []

    # ------------------------------------------------------------------ the run

    def run(self) -> ChaosResult:
        began = time.monotonic()
        try:
            try:
                self._run()
            finally:
                self._teardown()
        except (LabError, ConfigError, RocketQError, OSError) as exc:
            self.result.error = str(exc)
        except Exception as exc:  # a harness bug ends as a FAIL with its reason, not a traceback
            self.result.error = f"{type(exc).__name__}: {exc}"
        self.result.seconds = time.monotonic() - began
        return self.result

    def _run(self) -> None:
        plan = self.plan
        lab = self.lab
        lab.start()
        self.say(
            f"cluster: name server {lab.namesrv}, "
            + ", ".join(f"{b} {a}" for b, a in lab.broker_addrs.items())
        )
        queues = lab.create_topic(TOPIC, plan.queues)
        self.queue_sets.append((0.0, tuple(sorted((q.broker_name, q.queue_id) for q in queues))))
        self.relay = RelayThread(self.proxy)
        for name in (*plan.consumers, *plan.joiners):
            self.namesrv_of[name] = self.relay.listen((name, NAMESRV), lab.namesrv)
            mapping = {}
            for broker, addr in lab.broker_addrs.items():
                mapping[addr] = self.relay.listen((name, broker), addr)
            self.proxy.set_addresses(name, mapping)
        for name in plan.consumers:
            self._spawn(name)
        self._wait_lines_exact(
            list(plan.consumers), _STARTUP_TIMEOUT, "the first consumers to share the queues"
        )
        self.say("consumers up: " + ", ".join(f"{w.name} pid {w.pid}" for w in self.lab.workers))
        self.producer = _SeqProducer(
            lab.namesrv, plan.rate, plan.produce_seconds, min(plan.poll_interval, 30.0)
        )
        self.t0 = time.monotonic()
        self.last_change = self.t0
        self.producer.start()
        shift = 0.0
        for action in sorted(plan.actions, key=lambda a: a.at):
            delay = self.t0 + shift + action.at - time.monotonic()
            if delay > 0:
                time.sleep(delay)  # the schedule itself: faults happen at their planned times
            self._do(action)
            if action.do == "join":
                shift += self._await_joined(action.target)
        self.producer.join(plan.produce_seconds + 30.0)
        if self.producer.error is not None:
            raise LabError(f"the producer failed: {self.producer.error}")
        self._drain()

    def _workers(self) -> list[_Consumer]:
        return [c for c in self.consumers.values() if c.worker is not None]

    def _spawn(self, name: str) -> _Consumer:
        consumer = _Consumer(name)
        args = consumer_command(self.plan, self.options, name, self.namesrv_of[name])

        def parse(line: str) -> dict[str, Any] | None:
            item = parse_line(line, name, consumer.stamp(time.monotonic()))
            return None if item is None else {"type": type(item).__name__.lower(), "item": item}

        consumer.started = time.monotonic()
        consumer.worker = Worker(
            name,
            args,
            {"NAMESRV_ADDR": self.namesrv_of[name], "PYTHONUNBUFFERED": "1"},
            shared=self.lab.changed,
            parse=parse,
            pace=consumer.pace,
            raw=True,
        )
        self.lab.workers.append(consumer.worker)
        self.consumers[name] = consumer
        return consumer

    def _owners(self, names: Sequence[str]) -> dict[QueueRef, str] | None:
        """Each queue's owner by the consumers' latest REBALANCE lines, if they share the queues
        exactly (every queue once), else ``None``."""
        owned: dict[str, tuple[QueueRef, ...]] = {}
        for name in names:
            consumer = self.consumers.get(name)
            if consumer is None or consumer.worker is None:
                return None
            for item in consumer.items():
                if isinstance(item, Rebalance) and item.topic == TOPIC:
                    owned[name] = item.owned
            if name not in owned:
                return None
        seen = [q for share in owned.values() for q in share]
        if len(seen) != len(set(seen)) or set(seen) != set(self.queue_sets[-1][1]):
            return None
        return {q: name for name, share in owned.items() for q in share}

    def _lines_exact(self, names: Sequence[str]) -> bool:
        return self._owners(names) is not None

    def _owners_pulling(self, owners: dict[QueueRef, str], within: float) -> bool:
        """Whether each queue's owner has a pull of it in flight, or sent one in the last ``within`` s."""
        now = time.monotonic()
        active = {
            (p.consumer, p.queue)
            for p in self.proxy.snapshot(now)["pulls"]
            if p.answered >= now - 1e-6 or p.sent >= now - within
        }
        return all((c, q) in active for q, c in owners.items())

    def _wait_lines_exact(self, names: list[str], timeout: float, what: str) -> None:
        def ready() -> bool:
            for name in names:
                c = self.consumers[name]
                if c.worker is not None and not c.worker.running:
                    raise LabError(f"consumer {name} exited ({c.worker.proc.returncode}): {c.worker.tail()}")
            return self._lines_exact(names)

        self.lab.wait_until(ready, timeout, what)

    def _await_joined(self, name: str) -> float:
        """Wait until joiner ``name`` printed its first REBALANCE line; return by how much its
        start took longer than :data:`_JOIN_ALLOWANCE`: the rest of the schedule moves that much
        later, so that what the plan meant to happen while it joins (a lost notification, an old
        member stopping after its replacement is up) does, however slowly a loaded machine starts
        a process."""
        began = time.monotonic()
        consumer = self.consumers[name]

        def joined() -> bool:
            if consumer.worker is not None and not consumer.worker.running:
                raise LabError(
                    f"consumer {name} exited ({consumer.worker.proc.returncode}): {consumer.worker.tail()}"
                )
            return any(isinstance(item, Rebalance) for item in consumer.items())

        self.lab.wait_until(joined, _STARTUP_TIMEOUT, f"{name} to join")
        late = time.monotonic() - began - _JOIN_ALLOWANCE
        if late <= 0:
            return 0.0
        self.say(f"{time.monotonic() - self.t0:6.2f} s  {name} took {late + _JOIN_ALLOWANCE:.2f} s to join: "
                 f"the rest of the schedule moves {late:.2f} s later")  # fmt: skip
        return late

    def _alive(self) -> list[str]:
        return [c.name for c in self.consumers.values() if c.ended is None and c.how == "running"]

    # ------------------------------------------------------------------ actions

    def _note(self, action: Action, detail: str = "") -> None:
        now = time.monotonic()
        self.last_change = max(self.last_change, now)
        text = action.describe() + (f" ({detail})" if detail else "")
        self.result.happened.append({"at": round(now - self.t0, 3), "planned": action.at, "text": text})
        self.say(f"{now - self.t0:6.2f} s  {text}")

    def _do(self, action: Action) -> None:
        now = time.monotonic()
        act = _ACTIONS.get(action.do)
        if act is None:
            raise LabError(f"unknown action {action.do!r}")
        self._note(action, act(self, action, now))

    # each action at ``now``: what the schedule's line adds in parentheses ("" for nothing)

    def _act_join(self, action: Action, now: float) -> str:
        self._spawn(action.target)
        return ""

    def _act_end(self, action: Action, now: float) -> str:
        self._end(action.target, kill=action.do == "kill")
        return ""

    def _act_pause(self, action: Action, now: float) -> str:
        c = self.consumers[action.target]
        assert c.worker is not None
        os.kill(c.worker.pid, signal.SIGSTOP)
        c.paused_since = now
        return ""

    def _act_resume(self, action: Action, now: float) -> str:
        c = self.consumers[action.target]
        assert c.worker is not None
        os.kill(c.worker.pid, signal.SIGCONT)
        if c.paused_since is not None:
            c.pauses.append((c.paused_since, now))
            self.windows.append(Window("pause", action.target, c.paused_since, now))
            c.paused_since = None
        return ""

    def _act_fault(self, action: Action, now: float) -> str:
        assert action.fault is not None
        fault = action.fault
        self.proxy.activate(action.target, fault, now)
        self.open_faults[action.target] = (now, fault)
        if fault.kind != "cut" or self.relay is None:
            return ""
        closed = self.relay.close_links(self.proxy.hits(fault))
        self.proxy.record(
            WireEvent(now, "cut", fault.consumer or "*", fault.target or "*", f"{closed} links")
        )
        return f"{closed} open connections closed"

    def _act_heal(self, action: Action, now: float) -> str:
        self.proxy.heal(action.target, now)
        opened = self.open_faults.pop(action.target, None)
        if opened is not None:
            self.windows.extend(_fault_windows(action.target, opened[1], opened[0], now))
        return ""

    def _act_broker_stop(self, action: Action, now: float) -> str:
        code = self.lab.stop_broker(action.target, kill=action.signal == "SIGKILL")
        self.open_windows["broker-down", action.target] = now
        return f"exit code {code}"

    def _act_broker_start(self, action: Action, now: float) -> str:
        addr = self.lab.start_broker(action.target)
        up = time.monotonic()
        since = self.open_windows.pop(("broker-down", action.target), now)
        self.windows.append(Window("broker-down", action.target, since, up))
        return f"listening on {addr} again"

    def _act_expand(self, action: Action, now: float) -> str:
        queues = self.lab.create_topic(TOPIC, action.queues)
        refs = tuple(sorted((q.broker_name, q.queue_id) for q in queues))
        self.queue_sets.append((time.monotonic(), refs))
        return f"{len(refs)} queues"

    def _act_slow(self, action: Action, now: float) -> str:
        c = self.consumers[action.target]
        c.slow_rate = action.rate
        self._shrink_pipe(c)
        self.open_windows["slow", action.target] = now
        return ""

    def _act_fast(self, action: Action, now: float) -> str:
        c = self.consumers[action.target]
        c.slow_rate = 0.0
        c.slow_wake.set()
        since = self.open_windows.pop(("slow", action.target), now)
        self.windows.append(Window("slow", action.target, since, now))
        return ""

    @staticmethod
    def _shrink_pipe(c: _Consumer) -> None:
        """Make the consumer's stdout pipe small, so that a slow reader pushes back sooner."""
        if c.worker is None or c.worker.proc.stdout is None or not sys.platform.startswith("linux"):
            return
        with contextlib.suppress(OSError):
            fcntl.fcntl(c.worker.proc.stdout.fileno(), _F_SETPIPE_SZ, 4096)

    def _end(self, name: str, *, kill: bool) -> None:
        c = self.consumers[name]
        assert c.worker is not None
        worker = c.worker
        if kill:
            with contextlib.suppress(ProcessLookupError):
                worker.proc.kill()
            worker.proc.wait(10.0)
            c.ended = time.monotonic()
            c.how = "killed"
            return
        c.how = "stopping"
        worker.terminate()

        def wait() -> None:
            try:
                worker.proc.wait(30.0)
            except Exception:
                return
            c.ended = time.monotonic()
            c.how = "stopped"

        t = threading.Thread(target=wait, name=f"stop-{name}", daemon=True)
        t.start()
        self._stoppers.append(t)

    # ------------------------------------------------------------------ drain and teardown

    def _drain(self) -> None:
        for t in self._stoppers:
            t.join(30.0)
        assert self.producer is not None
        acked = {s.seq for s in self.producer.sent}
        bound = self.expectations.convergence + 10.0
        deadline = max(self.last_change, time.monotonic()) + bound

        def done() -> bool:
            printed = {seq_of(i.body) for c in self._workers() for i in c.items() if isinstance(i, Recv)}
            if not acked <= printed:
                return False
            owners = self._owners(self._alive())
            return owners is not None and self._owners_pulling(owners, self.expectations.gap / 2)

        while True:
            try:
                self.lab.wait_until(done, max(0.0, deadline - time.monotonic()), "the drain")
            except LabError:
                break  # judged as it is: the invariants will say what did not settle
            # observe the settled group for a moment: a consumer backing off after an error, or a
            # late pull of an old owner, shows here; if it did, wait for the group to settle again
            time.sleep(_SETTLE)
            if done() or time.monotonic() >= deadline:
                break

    def _teardown(self) -> None:
        t_end = time.monotonic()
        for c in self.consumers.values():
            if c.paused_since is not None and c.worker is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(c.worker.pid, signal.SIGCONT)
                c.pauses.append((c.paused_since, t_end))
                c.paused_since = None
        timeline = None
        if self.producer is not None:
            self.producer.close()
            timeline = self._timeline(t_end)
        with contextlib.suppress(Exception):
            self.lab.stop_workers([c.worker for c in self._workers() if c.worker is not None])
        for c in self._workers():
            assert c.worker is not None
            self.result.consumers[c.name] = {
                "pid": c.worker.pid,
                "client_id": self.proxy.client_ids.get(c.name),
                "exit_code": c.worker.proc.returncode,
                "how": c.how,
                "stderr_tail": c.worker.stderr[-5:],
            }
        if self.relay is not None:
            self.relay.close()
        if timeline is not None and self.options.data_dir is not None:
            with contextlib.suppress(OSError):
                path = self.options.data_dir / "timeline.json"
                path.write_text(json.dumps(timeline.to_dict(), separators=(",", ":")), encoding="utf-8")
        self.lab.close()
        self.result.timeline = timeline
        if timeline is not None and self.result.error is None:
            exp = self.expectations
            self.result.expectations = exp
            results, up = evaluate(timeline, exp)
            results.insert(0, self._faults_applied(timeline))
            self.result.invariants = results
            self.result.up_s = None if math.isinf(up) else round(up - self.t0, 3)

    def _timeline(self, t_end: float) -> Timeline:
        assert self.producer is not None
        wire = self.proxy.snapshot(t_end)
        recvs: list[Recv] = []
        rebalances: list[Rebalance] = []
        for c in self._workers():
            for item in c.items():
                (recvs if isinstance(item, Recv) else rebalances).append(item)  # type: ignore[arg-type]
        windows = list(self.windows)
        for (what, target), since in self.open_windows.items():
            windows.append(Window(what, target, since, t_end))
        for key, (start, fault) in self.open_faults.items():
            windows.extend(_fault_windows(key, fault, start, t_end))
        first = self.queue_sets[0][1]
        queue_sets = ((-math.inf, first), *self.queue_sets[1:])
        return Timeline(
            topic=TOPIC,
            queue_sets=queue_sets,
            sent=tuple(self.producer.sent),
            recvs=tuple(recvs),
            rebalances=tuple(rebalances),
            pulls=tuple(wire["pulls"]),
            releases=tuple(wire["releases"]),
            notifies=tuple(wire["notifies"]),
            queries=tuple(wire["queries"]),
            wire_events=tuple(wire["events"]),
            lives=tuple(c.life() for c in self.consumers.values()),
            windows=tuple(windows),
            t0=self.t0,
            last_heal=self.last_change,
            t_end=t_end,
            extra={"send_failures": self.producer.failed},
        )

    def _faults_applied(self, tl: Timeline) -> InvariantResult:
        """That every proxy fault of the plan did something (else the run tested nothing)."""
        faults = [a for a in self.plan.actions if a.do == "fault"]
        counts = {}
        for a in faults:
            w = next((w for w in tl.windows if w.what == "fault" and w.target == a.target), None)
            if w is None:
                counts[a.target] = 0
                continue
            counts[a.target] = sum(
                1
                for e in tl.wire_events
                if w.start - 1e-6 <= e.t <= w.end + 1e-6
                and e.what in ("dropped", "delayed", "refused", "cut", "stale-route")
            )
        idle = [k for k, n in counts.items() if n == 0]
        other = [a.describe() for a in self.plan.actions if a.do not in ("fault", "heal")]
        detail = ", ".join(f"{k}: {n} frames or connections hit" for k, n in counts.items())
        detail = "; ".join(x for x in (detail, ", ".join(other)) if x) or "no faults"
        if idle:
            detail = f"fault(s) {', '.join(idle)} never fired, so the run tested nothing there; " + detail
        return InvariantResult("faults", not idle, sum(counts.values()), "", detail, {"hits": counts})


_ACTIONS: dict[str, Callable[[ChaosRun, Action, float], str]] = {
    "join": ChaosRun._act_join,
    "stop": ChaosRun._act_end,
    "kill": ChaosRun._act_end,
    "pause": ChaosRun._act_pause,
    "resume": ChaosRun._act_resume,
    "fault": ChaosRun._act_fault,
    "heal": ChaosRun._act_heal,
    "broker-stop": ChaosRun._act_broker_stop,
    "broker-start": ChaosRun._act_broker_start,
    "expand": ChaosRun._act_expand,
    "slow": ChaosRun._act_slow,
    "fast": ChaosRun._act_fast,
}
"""What :meth:`ChaosRun._do` does for each kind of scheduled action."""


def run_chaos(
    scenario: str, options: ChaosOptions | None = None, say: Callable[[str], None] = lambda _: None
) -> ChaosResult:
    """Run ``scenario`` once with ``options``; always returns a result (failures included)."""
    if scenario not in SCENARIOS:
        raise ConfigError(f"unknown chaos scenario {scenario!r}; scenarios: {', '.join(SCENARIOS)}")
    options = options or ChaosOptions()
    plan = make_plan(scenario, options.seed, Form(short=options.short))
    return ChaosRun(plan, options, say).run()
