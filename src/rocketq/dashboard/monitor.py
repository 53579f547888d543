"""The dashboard's live state: one admin connection, the groups being watched, their timelines.

A :class:`Monitor` owns one :class:`~rocketq.admin.AsyncAdmin` and a background task that polls
each watched group on its own interval: a group someone has open in the browser every
``poll_interval`` (1 s), every other group every ``metrics_interval`` (5 s) once ``/metrics`` has
been asked for (:meth:`Monitor.watch_all`). Each poll of a group is its members with the queues
each owns (``group_members``: the clients' own running info), its progress (lag per queue), and,
when its consumers trace, the new rebalance records on ``RQ_SYS_REBALANCE_TOPIC`` for it; all go
into the group's :class:`~rocketq.dashboard.timeline.GroupTimeline`. A failed poll keeps the last
good state and records the error, which the page shows in its banner.

A second task, the sampler (:meth:`Monitor.sample`, every ``sample_interval``), asks each name
server for the cluster and each broker for its runtime table: how each answered (or did not) is
the badge every page shows (:meth:`Monitor.health`), the brokers' TPS and, every
``topic_sample_interval``, each user topic's stored-message count are the TPS history
(:attr:`Monitor.tps`, :attr:`Monitor.topic_totals`, ``tps_window`` of it kept). The monitor also
owns the dashboard's one producer (:meth:`Monitor.send`), started on first use.

Nothing here raises at a page: name servers and brokers that do not answer become error text.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from rocketq.admin import AsyncAdmin, BrokerRuntime, GroupMembers, GroupProgress, QueueRead, TopicStats
from rocketq.client.config import ClientConfig
from rocketq.client.producer.facade import Producer
from rocketq.client.trace import REBALANCE_TOPIC
from rocketq.dashboard.config import DashboardConfig
from rocketq.dashboard.timeline import GroupTimeline, RebalanceNote
from rocketq.errors import RocketQError, UnknownGroupError, UnknownTopicError
from rocketq.models import MessageQueue, SendResult
from rocketq.protocol.bodies import ClusterInfo
from rocketq.protocol.message import Message
from rocketq.protocol.topics import (
    BUILTIN_SUBSCRIPTION_GROUPS,
    CID_RMQ_SYS_PREFIX,
    is_retry_or_dlq_topic,
    is_system_topic,
)
from rocketq.tasks import cancel_and_wait

__all__ = [
    "BROKER_GROUPS",
    "PRODUCER_GROUP",
    "GroupWatch",
    "Health",
    "Monitor",
    "ServerHealth",
    "TpsPoint",
    "describe_error",
    "is_user_group",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

PRODUCER_GROUP = "rocketq_dashboard_producer"
"""The producer group of the messages the dashboard sends (RocketMQ Dashboard's is
``self_test_P_G``-like: a group of its own, so its sends are told apart)."""

BROKER_GROUPS = frozenset(BUILTIN_SUBSCRIPTION_GROUPS)
"""Groups a broker makes for itself at start (RocketMQ's ``MixAll`` names)."""
_SWEEP_CONCURRENCY = 4  # topic stats in flight at once while the sampler reads every topic
_REBALANCE_TAIL = 512  # records read back from each rebalance-topic queue when a watch starts


def describe_error(exc: BaseException) -> str:
    """One line for a person: what failed and, for a server that did not answer, what to check."""
    text = str(exc) or type(exc).__name__
    if "name server" in text and ("reach" in text or "timed out" in text.lower()):
        return f"{text} (is the name server running? rocketq dashboard --namesrv HOST:PORT)"
    return text


def is_user_group(group: str) -> bool:
    """Not one of the groups a broker makes for itself (``TOOLS_CONSUMER``, ``CID_RMQ_SYS_*``, ...)."""
    return group not in BROKER_GROUPS and not group.startswith(CID_RMQ_SYS_PREFIX)


@dataclass(slots=True)
class ServerHealth:
    """How one name server or broker answered the monitor's last question (the status badge)."""

    kind: str  # "name server" or "broker"
    addr: str
    name: str = ""
    answered_ms: int = 0  # wall-clock ms of the last answer; 0: never answered
    took: float | None = None  # seconds the last answer took
    error: str | None = None  # the last question's failure, cleared by an answer
    failing_since_ms: int = 0
    asking_since: float | None = None  # monotonic start of a question still unanswered

    @property
    def label(self) -> str:
        return f"{self.kind} {self.name + ' ' if self.name else ''}{self.addr}"


@dataclass(frozen=True, slots=True)
class Health:
    """The badge every page shows: ``ok`` (green), ``slow`` (amber: something answered slowly or
    not at all, but a name server answers), ``down`` (red: no name server answers), ``unknown``
    (not asked yet); ``problems``: what did not answer, one line each."""

    level: str
    text: str
    problems: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level, "text": self.text, "problems": list(self.problems)}


@dataclass(frozen=True, slots=True)
class TpsPoint:
    """One sample of a broker's runtime table: messages per second in (put) and out (get)."""

    at_ms: int
    put: float | None
    get: float | None


@dataclass(slots=True)
class GroupWatch:
    """What the monitor knows about one group (see the module docstring)."""

    group: str
    timeline: GroupTimeline
    members: GroupMembers | None = None
    progress: GroupProgress | None = None
    error: str | None = None
    unknown: bool = False
    polled_ms: int = 0
    viewed: float = 0.0  # monotonic time of the last page view; 0: only watched for metrics
    owner_counts: dict[MessageQueue, int] = field(default_factory=dict)
    colours: dict[str, str] = field(default_factory=dict)
    _due: float = 0.0
    _tail: dict[MessageQueue, int] = field(default_factory=dict)
    _polling: asyncio.Lock = field(default_factory=asyncio.Lock)


class Monitor:
    """Watches groups for the dashboard and the exporter (see the module docstring).

    ``clock`` is wall-clock seconds (the timelines' ``now``); ``monotonic`` drives the intervals.
    """

    def __init__(
        self,
        config: DashboardConfig,
        *,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.admin = AsyncAdmin(
            config.namesrv,
            timeout=config.request_timeout,
            access_key=config.access_key,
            secret_key=config.secret_key,
            tls=config.tls,
        )
        self.watches: dict[str, GroupWatch] = {}
        self.all_groups = False
        self._clock = clock
        self._monotonic = monotonic
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._limit = asyncio.Semaphore(config.concurrency)
        self._cache: dict[str, tuple[float, Any]] = {}
        self._groups_checked = 0.0
        self.servers: dict[tuple[str, str], ServerHealth] = {}
        self.tps: dict[str, deque[TpsPoint]] = {}
        """Per broker (``name addr``): its TPS samples of the last ``tps_window`` seconds."""
        self.topic_totals: dict[str, deque[tuple[int, int]]] = {}
        """Per user topic: ``(ms, messages ever stored)`` samples of the last ``tps_window``."""
        self._topics_sampled = -float("inf")
        self._sampler: asyncio.Task[None] | None = None
        self._producer: Producer | None = None
        self._producer_lock = asyncio.Lock()

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="rocketq-dashboard-monitor")
        if self._sampler is None:
            self._sampler = asyncio.create_task(self._sample_loop(), name="rocketq-dashboard-sampler")

    async def close(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)
        sampler, self._sampler = self._sampler, None
        await cancel_and_wait(sampler)
        producer, self._producer = self._producer, None
        if producer is not None:
            await asyncio.to_thread(producer.shutdown)
        await self.admin.close()

    def now_ms(self) -> int:
        return int(self._clock() * 1000)

    # ------------------------------------------------------------------ helpers for views

    async def limited(self, make: Callable[[], Awaitable[T]]) -> T:
        """Run one admin call under the monitor's concurrency limit."""
        async with self._limit:
            return await make()

    async def gather_settled(
        self, items: Iterable[str], make: Callable[[str], Awaitable[T]]
    ) -> dict[str, T | RocketQError]:
        """``make(item)`` for every item, at most ``concurrency`` at once; failures as values."""

        async def one(item: str) -> T | RocketQError:
            try:
                return await self.limited(lambda: make(item))
            except RocketQError as exc:
                return exc

        keys = list(items)
        answers = await asyncio.gather(*(one(k) for k in keys))
        return dict(zip(keys, answers, strict=True))

    async def cached(self, key: str, ttl: float, make: Callable[[], Awaitable[T]]) -> T:
        """``make()``'s value, reused for ``ttl`` seconds (errors are not cached)."""
        now = self._monotonic()
        hit = self._cache.get(key)
        if hit is not None and now - hit[0] < ttl:
            value: T = hit[1]
            return value
        value = await make()
        if len(self._cache) >= 256:  # drop what has expired (searches are cached too)
            for k, (at, _) in list(self._cache.items()):
                if now - at >= 60.0:
                    del self._cache[k]
        self._cache[key] = (now, value)
        return value

    async def send(self, msg: Message) -> SendResult:
        """Send ``msg`` with the dashboard's own producer (group :data:`PRODUCER_GROUP`, started
        on first use: a test message, a dead letter sent back to its group)."""
        async with self._producer_lock:
            if self._producer is None:
                c = self.config
                client = ClientConfig(
                    namesrv=";".join(self.admin.namesrv_addrs),
                    instance_name=f"rocketq-dashboard-{os.getpid()}",
                    access_key=c.access_key,
                    secret_key=c.secret_key,
                    tls=c.tls,
                )
                producer = Producer(PRODUCER_GROUP, client_config=client)
                await asyncio.to_thread(producer.start)
                self._producer = producer
            producer = self._producer
        return await asyncio.to_thread(producer.send, msg, self.config.request_timeout)

    # ------------------------------------------------------------------ health and TPS history

    async def _sample_loop(self) -> None:
        while True:
            await _surviving(self.sample(), "dashboard sample")
            await asyncio.sleep(self.config.sample_interval)

    async def _ask(self, kind: str, addr: str, name: str, make: Callable[[], Awaitable[T]]) -> T | None:
        """``make()``, its answer (or failure, or silence) recorded as ``addr``'s health."""
        h = self.servers.get((kind, addr))
        if h is None:
            h = self.servers[(kind, addr)] = ServerHealth(kind, addr, name)
        h.name = name or h.name
        started = h.asking_since = self._monotonic()
        try:
            value = await make()
        except RocketQError as exc:
            h.error = describe_error(exc)
            h.failing_since_ms = h.failing_since_ms or self.now_ms()
            return None
        finally:
            h.asking_since = None
        h.took, h.answered_ms, h.error, h.failing_since_ms = (
            self._monotonic() - started,
            self.now_ms(),
            None,
            0,
        )
        return value

    async def sample(self) -> None:
        """Ask every name server for the cluster, and every broker it lists for its runtime
        table: their answers (or silence) are the badge; the brokers' TPS goes to :attr:`tps`."""
        addrs = self.admin.namesrv_addrs

        def info_of(addr: str) -> Callable[[], Awaitable[ClusterInfo]]:
            return lambda: self.admin.cluster_info_from(addr)

        def runtime_of(addr: str) -> Callable[[], Awaitable[BrokerRuntime]]:
            return lambda: self.limited(lambda: self.admin.broker_runtime(addr))

        infos = await asyncio.gather(*(self._ask("name server", a, "", info_of(a)) for a in addrs))
        info = next((i for i in infos if i is not None), None)
        if info is None:
            return
        brokers = {
            addr: f"{name}" if bid == 0 else f"{name} (slave {bid})"
            for name, bd in sorted(info.broker_addr_table.items())
            for bid, addr in sorted(bd.broker_addrs.items())
        }
        for key in [k for k in self.servers if k[0] == "broker" and k[1] not in brokers]:
            del self.servers[key]  # a broker the name servers no longer list
        runtimes = await asyncio.gather(
            *(self._ask("broker", a, n, runtime_of(a)) for a, n in brokers.items())
        )
        now_ms = self.now_ms()
        horizon = now_ms - int(self.config.tps_window * 1000)
        if self._monotonic() - self._topics_sampled >= self.config.topic_sample_interval:
            self._topics_sampled = self._monotonic()
            await self._sample_topics(horizon, set(info.cluster_addr_table) | set(info.broker_addr_table))
        for (addr, name), rt in zip(brokers.items(), runtimes, strict=True):
            if rt is None:
                continue
            points = self.tps.setdefault(f"{name} {addr}", deque())
            points.append(TpsPoint(now_ms, rt.put_tps, rt.get_tps))
            while points and points[0].at_ms < horizon:
                points.popleft()

    async def _sample_topics(self, horizon: int, reserved: set[str]) -> None:
        """Every user topic's count of messages ever stored (the sum of its queues' max offsets);
        ``reserved``: the cluster and broker names (topics a broker makes for itself)."""
        try:
            topics = [
                t
                for t in await self.admin.topic_list()
                if t not in reserved
                and not is_system_topic(t)
                and not is_retry_or_dlq_topic(t)
                and not t.startswith("RQ_SYS_")
            ]
        except RocketQError as exc:
            logger.debug("listing topics for the TPS history: %s", exc)
            return
        sweep = asyncio.Semaphore(_SWEEP_CONCURRENCY)  # its own few: pages keep the monitor's limit

        async def one(topic: str) -> TopicStats | None:
            async with sweep:
                try:
                    return await self.admin.topic_stats(topic)
                except RocketQError:
                    return None

        answers = await asyncio.gather(*(one(t) for t in topics))
        now_ms = self.now_ms()
        for topic, answer in zip(topics, answers, strict=True):
            if answer is None:
                continue
            points = self.topic_totals.setdefault(topic, deque())
            points.append((now_ms, sum(q.max_offset for q in answer.queues)))
            while points and points[0][0] < horizon:
                points.popleft()
        for gone in set(self.topic_totals) - set(topics):
            del self.topic_totals[gone]

    def health(self) -> Health:
        """The badge (see :class:`Health`): a question unanswered for longer than a page's
        budget counts as silence, an answer that took more than half of it as slow."""
        now = self._monotonic()
        budget = self.config.page_budget
        problems: list[str] = []
        slow: list[str] = []
        namesrv_ok = 0
        namesrv_seen = 0
        for h in sorted(self.servers.values(), key=lambda x: (x.kind != "name server", x.addr)):
            silent = h.asking_since is not None and now - h.asking_since > budget
            failed = h.error is not None or silent
            if h.kind == "name server":
                namesrv_seen += 1 if (h.answered_ms or failed) else 0
                namesrv_ok += 0 if failed or not h.answered_ms else 1
            if silent:
                problems.append(f"{h.label} has not answered for {now - (h.asking_since or now):.1f} s")
            elif h.error is not None:
                problems.append(f"{h.label}: {h.error}")
            elif h.took is not None and h.took > budget / 2:
                slow.append(f"{h.label} took {h.took:.1f} s to answer")
        if not namesrv_seen:
            return Health("unknown", "checking the cluster", tuple(problems + slow))
        if not namesrv_ok:
            return Health("down", "no answer: " + problems[0], tuple(problems + slow))
        if problems or slow:
            first = (problems + slow)[0]
            more = len(problems) + len(slow) - 1
            return Health("slow", first + (f" (and {more} more)" if more else ""), tuple(problems + slow))
        brokers = sum(1 for k in self.servers if k[0] == "broker")
        return Health("ok", f"live: {namesrv_ok} name server(s) and {brokers} broker(s) answer")

    def forget_cache(self) -> None:
        """Drop every cached answer (after a change the next page must not show the old state)."""
        self._cache.clear()

    # ------------------------------------------------------------------ watching

    def watch(self, group: str, *, viewer: bool = True) -> GroupWatch:
        """The group's watch, started if new; ``viewer`` marks it as looked at now (polled every
        ``poll_interval`` while someone looks)."""
        w = self.watches.get(group)
        if w is None:
            ms = int(self.config.history * 1000)
            w = GroupWatch(group, GroupTimeline(group, history_ms=ms))
            self.watches[group] = w
            self._wake.set()
        if viewer:
            w.viewed = self._monotonic()
        return w

    def forget(self, group: str) -> None:
        """Stop watching ``group`` (a name nobody knows, for instance)."""
        self.watches.pop(group, None)

    def watch_all(self) -> None:
        """Watch every group the brokers know, for the metrics (from now on)."""
        if not self.all_groups:
            self.all_groups = True
            self._groups_checked = 0.0
            self._wake.set()

    async def poll_now(self, group: str) -> GroupWatch:
        """Poll ``group`` at once (a page's first view waits for it rather than showing nothing)."""
        w = self.watch(group)
        await self._poll(w)
        return w

    async def _run(self) -> None:
        while True:
            await _surviving(self._cycle(), "dashboard monitor cycle")
            self._wake.clear()
            delay = self._next_delay()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)

    def _interval(self, w: GroupWatch) -> float | None:
        """How often ``w`` is polled now; ``None``: not any more."""
        now = self._monotonic()
        if w.viewed and now - w.viewed < self.config.idle:
            return self.config.poll_interval
        if self.all_groups:
            return self.config.metrics_interval
        return None

    def _next_delay(self) -> float:
        now = self._monotonic()
        dues = [w._due - now for w in self.watches.values()]
        if self.all_groups:
            dues.append(self._groups_checked + self.config.metrics_interval - now)
        return max(min(dues, default=self.config.metrics_interval), 0.05)

    async def _cycle(self) -> None:
        now = self._monotonic()
        if self.all_groups and now - self._groups_checked >= self.config.metrics_interval:
            self._groups_checked = now
            try:
                groups = await self.cached(
                    "groups", self.config.metrics_interval / 2, self.admin.consumer_groups
                )
            except RocketQError as exc:
                logger.debug("listing groups failed: %s", exc)
                groups = []
            for g in groups:
                if is_user_group(g):
                    self.watch(g, viewer=False)
        due: list[GroupWatch] = []
        for name, w in list(self.watches.items()):
            interval = self._interval(w)
            if interval is None:
                del self.watches[name]
                continue
            if w._due <= now:
                w._due = now + interval
                due.append(w)
        if due:
            await asyncio.gather(*(self._poll(w) for w in due))

    async def _poll(self, w: GroupWatch) -> None:
        if w._polling.locked():  # a page asked while the loop polls it: wait for that poll
            async with w._polling:
                return
        async with w._polling:
            try:
                members = await self.limited(lambda: self.admin.group_members(w.group))
                progress = await self.limited(lambda: self.admin.group_progress(w.group, members=members))
            except UnknownGroupError as exc:
                w.unknown, w.error = True, describe_error(exc)
                return
            except RocketQError as exc:
                w.error = describe_error(exc)
                return
            now_ms = self.now_ms()
            w.members, w.progress, w.error, w.unknown, w.polled_ms = members, progress, None, False, now_ms
            ownership = {m.client_id: m.queues for m in members.members}
            counts = dict.fromkeys((q.queue for q in progress.queues), 0)
            for m in members.members:
                for mq in m.queues:
                    counts[mq] = counts.get(mq, 0) + max(len(m.addresses), 1)
            w.owner_counts = dict(sorted(counts.items()))
            lag = {q.queue: q.lag for q in progress.queues}
            w.timeline.observe(now_ms, ownership, lag, members=[m.client_id for m in members.members])
            await self._tail_records(w)

    async def _tail_records(self, w: GroupWatch) -> None:
        """Feed the group's new rebalance records (tracing on) to its timeline."""
        try:
            route = await self.cached(
                f"route:{REBALANCE_TOPIC}", 10.0, lambda: self.admin.topic_route(REBALANCE_TOPIC)
            )
        except UnknownTopicError:
            return  # nobody traces in this cluster
        except RocketQError as exc:
            logger.debug("rebalance topic route: %s", exc)
            return
        queues = [
            MessageQueue(REBALANCE_TOPIC, qd.broker_name, i)
            for qd in route.queue_datas
            if qd.broker_name is not None
            for i in range(qd.read_queue_nums)
        ]
        for mq in queues:
            try:
                start = w._tail.get(mq)
                if start is None:
                    probe = await self._read(mq, 0, 1)
                    start = max(probe.min_offset, probe.max_offset - _REBALANCE_TAIL)
                for _ in range(64):  # bounded: at most 64 reads of 32 records per poll and queue
                    read = await self._read(mq, start, 32)
                    for msg in read.messages:
                        if msg.tags == w.group:
                            self._note(w, msg.body)
                    following = read.next_offset if read.in_range else max(read.min_offset, read.next_offset)
                    done = following == start or not read.messages
                    start = following
                    if done:
                        break
                w._tail[mq] = start
            except RocketQError as exc:
                logger.debug("reading %s: %s", mq, exc)

    async def _read(self, mq: MessageQueue, offset: int, count: int) -> QueueRead:
        async with self._limit:
            return await self.admin.read_queue(mq, offset, count)

    def _note(self, w: GroupWatch, body: bytes) -> None:
        try:
            note = RebalanceNote.from_dict(json.loads(body))
        except (ValueError, KeyError, TypeError) as exc:
            logger.debug("unreadable rebalance record for %s: %s", w.group, exc)
            return
        if note.end_ms >= self.now_ms() - int(self.config.history * 1000):
            w.timeline.record(note)


async def _surviving(step: Awaitable[None], what: str) -> None:
    """Await one step of a background loop, logging (not raising) its failure: one bad sample or
    poll never stops the loop (cancellation still does)."""
    try:
        await step
    except Exception:
        logger.exception("%s failed", what)
