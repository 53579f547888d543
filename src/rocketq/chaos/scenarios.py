"""The chaos scenarios: each a seeded plan of faults against a group of consumer processes.

A scenario is a :class:`Scenario` in :data:`SCENARIOS`: a name, what it shows, the RocketMQ issue
it reproduces, and a ``plan`` function that draws its faults from a :class:`random.Random` seeded
by the run's seed, so a run replays exactly (the same plan; the consumers' own randomness, such as
which broker a RocketMQ client asks for the member list, stays theirs). The plan says when, in
seconds after the producer starts, each :class:`Action` happens, which settings the cluster and
the consumers use, and what the scenario promises (:class:`Bounds`).

Every plan starts with a name server and two brokers (``broker-a``, ``broker-b``), a topic of
``queues`` queues on each, consumers ``c1..c3`` of one group, and a producer of sequence-numbered
messages at ``rate`` per second for ``produce_seconds``.

>>> plan = SCENARIOS["kill"].plan(random.Random("kill:1"), Form(short=True))
>>> [a.do for a in plan.actions], plan.consumers
(['kill'], ('c1', 'c2', 'c3'))
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from rocketq.chaos.invariants import Expectations
from rocketq.chaos.proxy import NAMESRV, Fault
from rocketq.protocol.codes import RequestCode

__all__ = [
    "BROKERS",
    "LEASE_LIFE",
    "RANDOM_KINDS",
    "SCENARIOS",
    "Action",
    "Bounds",
    "Form",
    "Plan",
    "Scenario",
    "make_plan",
    "scenario_names",
]

BROKERS = ("broker-a", "broker-b")
LEASE_LIFE = 60.0
"""Seconds a broker keeps a queue lock nobody renews (RocketMQ's ``lockMaxLiveTime``, our default)."""
FIRST = ("c1", "c2", "c3")


@dataclass(frozen=True, slots=True, kw_only=True)
class Form:
    """How long and how hard a run is: ``short`` is the CI form (a shorter run, the consumers'
    periodic rebalance every 5 s instead of RocketMQ's 20 s)."""

    short: bool = False

    @property
    def produce_seconds(self) -> float:
        return 10.0 if self.short else 30.0

    @property
    def rebalance_interval(self) -> float:
        return 5.0 if self.short else 20.0

    @property
    def rate(self) -> float:
        return 100.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Action:
    """One scheduled change, ``at`` seconds after the producer starts.

    ``do`` is one of: ``join`` / ``stop`` (SIGTERM) / ``kill`` (SIGKILL) / ``pause`` (SIGSTOP) /
    ``resume`` (SIGCONT) a consumer (``target``); ``fault`` / ``heal`` a proxy fault (``target``
    its id, ``fault`` what it does); ``broker-stop`` (``signal`` SIGTERM or SIGKILL) /
    ``broker-start`` a broker; ``expand`` the topic to ``queues`` queues per broker; ``slow`` /
    ``fast``: read a consumer's output at ``rate`` lines per second / at full speed again.
    """

    at: float
    do: str
    target: str = ""
    fault: Fault | None = None
    queues: int = 0
    rate: float = 0.0
    signal: str = "SIGTERM"

    def describe(self) -> str:
        if self.do == "fault" and self.fault is not None:
            return f"fault {self.target}: {self.fault.describe()}"
        if self.do == "heal":
            return f"heal {self.target}"
        if self.do == "expand":
            return f"expand the topic to {self.queues} queues per broker"
        if self.do == "slow":
            return f"read {self.target}'s output at {self.rate:g} lines/s (a slow listener)"
        if self.do == "fast":
            return f"read {self.target}'s output at full speed again"
        if self.do == "broker-stop":
            return f"stop {self.target} ({self.signal})"
        if self.do == "broker-start":
            return f"start {self.target} again (same port and data)"
        words = {
            "join": "start",
            "stop": "stop (SIGTERM)",
            "kill": "kill (SIGKILL)",
            "pause": "pause (SIGSTOP)",
        }
        return f"{words.get(self.do, 'resume (SIGCONT)')} {self.target}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "at": round(self.at, 3),
            "do": self.do,
            "target": self.target,
            "text": self.describe(),
        }
        if self.fault is not None:
            out["fault"] = self.fault.to_dict()
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Bounds:
    """What a scenario promises: see :class:`~rocketq.chaos.invariants.Expectations`."""

    graceful: bool = True
    #: a consumer dies holding its clean-handoff leases: they must expire at the broker first
    crash: bool = False
    overlap_episode: float = 2.0
    orphan_episode: float = 2.0
    #: seconds after the last heal; ``None``: the consumers' periodic rebalance interval + 3 s
    convergence: float | None = None
    resume: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """One run's schedule and settings (printed before the run and part of ``--json``)."""

    scenario: str
    seed: int
    consumers: tuple[str, ...] = FIRST
    queues: int = 4
    rate: float = 100.0
    produce_seconds: float = 10.0
    actions: tuple[Action, ...] = ()
    #: options for ``rocketq server`` / ``rocketq broker``
    broker_args: tuple[str, ...] = ()
    #: the consumers' intervals (the default command's options, and ``{...}`` placeholders)
    heartbeat_interval: float = 30.0
    rebalance_interval: float = 20.0
    poll_interval: float = 30.0
    #: settings that differ from RocketMQ's defaults, in words
    settings: tuple[str, ...] = ()
    bounds: Bounds = field(default_factory=Bounds)

    @property
    def joiners(self) -> tuple[str, ...]:
        return tuple(a.target for a in self.actions if a.do == "join")

    @property
    def convergence_bound(self) -> float:
        if self.bounds.convergence is not None:
            return self.bounds.convergence
        return self.rebalance_interval + 3.0

    def expectations(self, *, handoff: Literal["clean", "rocketmq"], orderly: bool) -> Expectations:
        """What this plan promises in a mode. A consumer that crashed does not hold the clean
        handoff's leases any longer than it is a member: rocketq's brokers free a departed member's
        leases at once (``release_departed_locks``), so its queues move as fast as without them.
        An orderly consumer's locks are kept their whole life (:data:`LEASE_LIFE`, RocketMQ's
        ``lockMaxLiveTime``) - it may be cut off or frozen, not dead, with messages in hand - so
        a crashed orderly member's queues may rest that long (the documented trade-off)."""
        wait = LEASE_LIFE if orderly and self.bounds.crash else 0.0
        return Expectations(
            handoff=handoff,
            graceful=self.bounds.graceful,
            orderly=orderly,
            overlap_episode=self.bounds.overlap_episode,
            orphan_episode=self.bounds.orphan_episode + wait,
            convergence=self.convergence_bound + wait,
            resume=self.bounds.resume,
        )

    def schedule_lines(self) -> list[str]:
        return [f"{a.at:6.2f} s  {a.describe()}" for a in sorted(self.actions, key=lambda a: a.at)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "seed": self.seed,
            "consumers": list(self.consumers),
            "queues_per_broker": self.queues,
            "rate": self.rate,
            "produce_seconds": self.produce_seconds,
            "schedule": [a.to_dict() for a in sorted(self.actions, key=lambda a: a.at)],
            "broker_args": list(self.broker_args),
            "heartbeat_interval_s": self.heartbeat_interval,
            "rebalance_interval_s": self.rebalance_interval,
            "poll_name_server_interval_s": self.poll_interval,
            "settings": list(self.settings),
        }


PlanFn = Callable[[random.Random, Form], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Scenario:
    """A named scenario: what it shows, the RocketMQ issue it reproduces, and its plan."""

    name: str
    summary: str
    issue: str
    plan_fields: PlanFn

    def plan(self, rng: random.Random, form: Form, seed: int = 0) -> Plan:
        fields = self.plan_fields(rng, form)
        base: dict[str, Any] = {
            "scenario": self.name,
            "seed": seed,
            "rate": form.rate,
            "produce_seconds": form.produce_seconds,
            "rebalance_interval": form.rebalance_interval,
        }
        settings = list(fields.pop("settings", ()))
        if form.short:
            settings.append(
                f"short form: consumers rebalance every {form.rebalance_interval:g} s on their own "
                "(RocketMQ: 20 s)"
            )
        return Plan(**{**base, **fields, "settings": tuple(settings)})


def _u(rng: random.Random, a: float, b: float) -> float:
    return round(rng.uniform(a, b), 2)


_SLOW_RATE = 5.0  # lines a second a slow listener's output is read at

# expiry settings of the scenarios that need a broker to drop a silent client in seconds
_EXPIRY = 3.0
_SCAN = 0.5
_HEARTBEAT = 1.0
_EXPIRY_ARGS = ("--channel-expired-timeout", str(_EXPIRY), "--client-scan-interval", str(_SCAN))
_EXPIRY_WORDS = (
    f"brokers drop a client silent for {_EXPIRY:g} s, scanning every {_SCAN:g} s "
    "(RocketMQ: 120 s, every 10 s); "
    f"consumers heartbeat every {_HEARTBEAT:g} s (RocketMQ: 30 s)"
)


def _notify_lost(rng: random.Random, form: Form) -> dict[str, Any]:
    victim = rng.choice(FIRST)
    start = _u(rng, 2.0, 3.0)
    fault = Fault(
        kind="drop", code=RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, consumer=victim, direction="to-client"
    )
    return {
        "actions": (
            Action(at=start, do="fault", target="notify", fault=fault),
            Action(at=round(start + _u(rng, 0.5, 1.5), 2), do="join", target="c4"),
            Action(at=round(start + _u(rng, 4.0, 6.0), 2), do="heal", target="notify"),
        )
    }


def _heartbeat_loss(rng: random.Random, form: Form) -> dict[str, Any]:
    victim = rng.choice(FIRST)
    broker = rng.choice(BROKERS)
    start = _u(rng, 2.0, 3.0)
    fault = Fault(
        kind="drop", code=RequestCode.HEART_BEAT, consumer=victim, target=broker, direction="to-server"
    )
    return {
        "actions": (
            Action(at=start, do="fault", target="heartbeats", fault=fault),
            Action(
                at=round(start + _u(rng, 2 * _EXPIRY, 2 * _EXPIRY + 2.0), 2), do="heal", target="heartbeats"
            ),
        ),
        "broker_args": _EXPIRY_ARGS,
        "heartbeat_interval": _HEARTBEAT,
        "settings": (_EXPIRY_WORDS,),
        "bounds": Bounds(graceful=False),
    }


def _split_view(rng: random.Random, form: Form) -> dict[str, Any]:
    victim = rng.choice(FIRST)
    broker = rng.choice(BROKERS)
    start = _u(rng, 2.0, 3.0)
    fault = Fault(kind="cut", consumer=victim, target=broker)
    return {
        "actions": (
            Action(at=start, do="fault", target="cut", fault=fault),
            Action(at=round(start + _u(rng, 5.0, 7.0), 2), do="heal", target="cut"),
        ),
        "bounds": Bounds(graceful=False),
    }


def _stale_route(rng: random.Random, form: Form) -> dict[str, Any]:
    victim = rng.choice(FIRST)
    start = _u(rng, 2.0, 3.0)
    fault = Fault(kind="stale-route", consumer=victim, target=NAMESRV)
    return {
        "actions": (
            Action(at=start, do="fault", target="stale", fault=fault),
            Action(at=round(start + 0.5, 2), do="expand", queues=6),
            Action(at=round(start + _u(rng, 5.0, 7.0), 2), do="heal", target="stale"),
        ),
        "poll_interval": 1.0,
        "settings": ("consumers and the producer refresh routes every 1 s (RocketMQ: 30 s)",),
    }


def _gc_pause(rng: random.Random, form: Form) -> dict[str, Any]:
    victim = rng.choice(FIRST)
    start = _u(rng, 2.0, 3.0)
    pause = _u(rng, _EXPIRY + 1.5, _EXPIRY + 4.0)
    return {
        "actions": (
            Action(at=start, do="pause", target=victim),
            Action(at=round(start + pause, 2), do="resume", target=victim),
        ),
        "broker_args": _EXPIRY_ARGS,
        "heartbeat_interval": _HEARTBEAT,
        "settings": (_EXPIRY_WORDS + "; the pause outlasts the expiry",),
        "bounds": Bounds(graceful=False),
    }


def _kill(rng: random.Random, form: Form) -> dict[str, Any]:
    return {
        "actions": (Action(at=_u(rng, 2.0, 4.0), do="kill", target=rng.choice(FIRST)),),
        "bounds": Bounds(graceful=False, crash=True),
    }


def _broker_restart(rng: random.Random, form: Form) -> dict[str, Any]:
    broker = rng.choice(BROKERS[1:])
    start = _u(rng, 2.0, 3.0)
    how = rng.choice(("SIGTERM", "SIGKILL"))
    return {
        "actions": (
            Action(at=start, do="broker-stop", target=broker, signal=how),
            Action(at=round(start + _u(rng, 1.0, 3.0), 2), do="broker-start", target=broker),
        ),
        "bounds": Bounds(graceful=False, orphan_episode=10.0, resume=10.0),
    }


def _slow_listener(rng: random.Random, form: Form) -> dict[str, Any]:
    victim = rng.choice(FIRST)
    start = _u(rng, 1.0, 2.0)
    return {
        "actions": (
            Action(at=start, do="slow", target=victim, rate=_SLOW_RATE),
            Action(at=round(start + _u(rng, 2.5, 3.5), 2), do="join", target="c4"),
            Action(at=round(start + _u(rng, 6.0, 7.5), 2), do="fast", target=victim),
        ),
        # the join is graceful, the victim is not: a listener slower than the clean handoff's
        # bounded wait (handoff_await, 3 s) makes it hand over with messages still in its listener,
        # which the new owner reads again (re-reads within the bound, as with RocketMQ's handoff)
        "bounds": Bounds(graceful=False),
    }


def _rolling_deploy(rng: random.Random, form: Form) -> dict[str, Any]:
    at = _u(rng, 2.0, 3.0)
    actions = []
    for old, new in zip(FIRST, ("c4", "c5", "c6"), strict=True):
        actions.append(Action(at=at, do="join", target=new))
        at = round(at + _u(rng, 0.5, 1.5), 2)
        actions.append(Action(at=at, do="stop", target=old))
        at = round(at + _u(rng, 0.5, 1.5), 2)
    return {"actions": tuple(actions)}


RANDOM_KINDS = ("cut", "notify", "heartbeats", "pause", "stale", "broker-restart", "kill", "stop", "join")
"""The faults the ``random`` scenario draws from (2 to 4 of them, each at most once)."""


def _random(rng: random.Random, form: Form) -> dict[str, Any]:
    """A combination of faults drawn from the seed: what no named scenario thought of. At most one
    consumer leaves (killed or stopped) and it is the target of nothing else."""
    kinds = rng.sample(RANDOM_KINDS, rng.randint(2, 4))
    last = form.produce_seconds - 1.0  # every fault heals before the producer stops

    def window(low: float, high: float) -> tuple[float, float]:
        length = _u(rng, low, high)
        start = _u(rng, 1.5, max(1.5, last - length))
        return start, round(start + length, 2)

    leaving = next((k for k in kinds if k in ("kill", "stop")), None)
    if leaving is not None:
        kinds = [k for k in kinds if k not in ("kill", "stop") or k == leaving]
    gone = rng.choice(FIRST) if leaving is not None else None
    staying = [c for c in FIRST if c != gone]
    actions: list[Action] = []
    for kind in kinds:
        victim = rng.choice(staying)
        broker = rng.choice(BROKERS)
        if kind == "cut":
            start, end = window(2.0, 6.0)
            fault = Fault(kind="cut", consumer=victim, target=broker)
            actions += [Action(at=start, do="fault", target="cut", fault=fault)]
            actions += [Action(at=end, do="heal", target="cut")]
        elif kind == "notify":
            start, end = window(2.0, 5.0)
            code = RequestCode.NOTIFY_CONSUMER_IDS_CHANGED
            fault = Fault(kind="drop", code=code, consumer=victim, direction="to-client")
            actions += [Action(at=start, do="fault", target="notify", fault=fault)]
            actions += [Action(at=round(start + _u(rng, 0.3, 1.0), 2), do="join", target="c4")]
            actions += [Action(at=end, do="heal", target="notify")]
        elif kind == "heartbeats":
            start, end = window(2.0, 2 * _EXPIRY + 2.0)
            code = RequestCode.HEART_BEAT
            fault = Fault(kind="drop", code=code, consumer=victim, target=broker, direction="to-server")
            actions += [Action(at=start, do="fault", target="heartbeats", fault=fault)]
            actions += [Action(at=end, do="heal", target="heartbeats")]
        elif kind == "pause":
            start, end = window(1.0, _EXPIRY + 4.0)
            actions += [
                Action(at=start, do="pause", target=victim),
                Action(at=end, do="resume", target=victim),
            ]
        elif kind == "stale":
            start, end = window(3.0, 6.0)
            fault = Fault(kind="stale-route", consumer=victim, target=NAMESRV)
            actions += [Action(at=start, do="fault", target="stale", fault=fault)]
            actions += [Action(at=round(start + 0.5, 2), do="expand", queues=6)]
            actions += [Action(at=end, do="heal", target="stale")]
        elif kind == "broker-restart":
            start, end = window(1.0, 3.0)
            how = rng.choice(("SIGTERM", "SIGKILL"))
            actions += [Action(at=start, do="broker-stop", target=BROKERS[1], signal=how)]
            actions += [Action(at=end, do="broker-start", target=BROKERS[1])]
        elif kind in ("kill", "stop"):
            assert gone is not None
            actions += [Action(at=_u(rng, 1.5, last - 1.0), do=kind, target=gone)]
        else:  # join
            actions += [Action(at=_u(rng, 1.5, last - 1.0), do="join", target="c5")]
    restart = "broker-restart" in kinds
    return {
        "actions": tuple(sorted(actions, key=lambda a: a.at)),
        "broker_args": _EXPIRY_ARGS,
        "heartbeat_interval": _HEARTBEAT,
        "poll_interval": 1.0,
        "settings": (
            f"faults drawn from the seed: {', '.join(kinds)}",
            _EXPIRY_WORDS,
            "consumers and the producer refresh routes every 1 s (RocketMQ: 30 s)",
        ),
        "bounds": Bounds(
            graceful=False,
            crash="kill" in kinds,
            orphan_episode=10.0 if restart else 2.0,
            resume=10.0 if restart else None,
        ),
    }


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "notify-lost",
            "a consumer misses the brokers' NOTIFY_CONSUMER_IDS_CHANGED while a fourth joins: it keeps its "
            "old share until its own periodic rebalance",
            "apache/rocketmq-externals#568 (inconsistent views)",
            _notify_lost,
        ),
        Scenario(
            "heartbeat-loss",
            "one consumer's heartbeats to one broker are lost: that broker expires it while the other "
            "keeps it, and the group splits on whose list it reads",
            "apache/rocketmq#7870 (heartbeat trouble -> spurious rebalance)",
            _heartbeat_loss,
        ),
        Scenario(
            "split-view",
            "one consumer is cut off from one of the two brokers: the brokers' member lists differ, and "
            "consumers reading different brokers share the queues differently",
            "apache/rocketmq-externals#568, apache/rocketmq#2732 (wrong client-id counts)",
            _split_view,
        ),
        Scenario(
            "stale-route",
            "the topic grows from 4 to 6 queues per broker while one consumer's name-server answers are "
            "stale: it shares the old queues, the others the new",
            "apache/rocketmq#1467 (consumers not told of topic changes)",
            _stale_route,
        ),
        Scenario(
            "gc-pause",
            "a consumer freezes (SIGSTOP) longer than the broker's expiry, then wakes (SIGCONT) still "
            "believing it owns its queues",
            "apache/rocketmq#7870 (heartbeat timeout -> reconnect -> rebalance)",
            _gc_pause,
        ),
        Scenario(
            "kill",
            "a consumer is killed (SIGKILL): its connections drop, the brokers notify, the others take its "
            "queues from the committed offsets",
            "the at-least-once baseline (RocketMQ's documented duplicates after a crash)",
            _kill,
        ),
        Scenario(
            "broker-restart",
            "broker-b restarts and forgets every consumer: they must heartbeat it again (on reconnect, or "
            "on 'group info not exist') before it serves their pulls",
            "rocketq issue 11 (heartbeat on reconnect), apache/rocketmq#7323",
            _broker_restart,
        ),
        Scenario(
            "slow-listener",
            "one consumer's listener is slow (its output is read at 5 lines/s, so its prints block) when "
            "a fourth joins: it must give up queues with messages still in its listener",
            "apache/rocketmq-externals#568 (a rebalance racing in-flight consumption)",
            _slow_listener,
        ),
        Scenario(
            "rolling-deploy",
            "the whole group is replaced one by one (start a new consumer, stop an old one, three times): "
            "notifications and rebalances counted",
            "apache/rocketmq#9115 (notification storms)",
            _rolling_deploy,
        ),
        Scenario(
            "random",
            "two to four faults drawn from the seed - cuts, lost notifications, lost heartbeats, pauses, "
            "stale routes, a broker restart, a kill, a stop, a join - at times drawn from it too",
            "whatever the named scenarios did not think of",
            _random,
        ),
    )
}


def scenario_names() -> tuple[str, ...]:
    return tuple(SCENARIOS)


def make_plan(name: str, seed: int, form: Form) -> Plan:
    """The plan of scenario ``name`` for ``seed`` (the same seed, the same plan)."""
    scenario = SCENARIOS[name]
    return scenario.plan(random.Random(f"{name}:{seed}"), form, seed)
