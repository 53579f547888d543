"""Rebalance: which queues this consumer owns, and the process-queue table that follows it.

RocketMQ's ``RebalanceImpl`` in two layers:

* pure functions — :func:`allocate_topic` (sort queues and client ids as Java does, run the
  strategy, optionally balance across topics) and :func:`diff_queues` (what to drop, what to add,
  which queues expired) — that tests drive without I/O;
* :class:`RebalanceImpl`, which applies a diff to the consumer's process-queue table through
  :class:`RebalanceHooks` (what differs between push, lite pull and orderly consumers) and
  publishes one :class:`~rocketq.client.rebalance.log.RebalanceRecord` per topic.

For a clustering group and each subscribed topic (the automatic ``%RETRY%<group>`` topic
included) a rebalance: reads the topic's readable queues from the client's route table, asks one
broker for the group's client ids (or every broker: the consistent views, see
:func:`allocate_per_broker` and :func:`agreed_view`), sorts both, runs the strategy, then updates the table —
queues no longer allocated are marked dropped, their offset persisted and they are removed;
queues whose pull went idle past ``pull_max_idle`` are dropped the same way (push consumers);
new queues get their dirty in-memory offset removed, a starting offset computed (a queue whose
offset cannot be read is skipped until the next rebalance) and a pull dispatched. Broadcasting
consumers own every queue. Queues of topics no longer subscribed are dropped at the end.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, replace
from typing import Protocol

from rocketq.allocate import AllocationStrategy, allocate_group, java_sorted, sorted_queues
from rocketq.client.consumer.offset_store import OffsetStore
from rocketq.client.consumer.process_queue import DropReason, ProcessQueue
from rocketq.client.rebalance.log import RebalanceLog, RebalanceRecord, RebalanceTrigger
from rocketq.clock import now_ms
from rocketq.errors import RocketQError
from rocketq.models import MessageQueue
from rocketq.protocol.bodies import ConsumeType, MessageModel, SubscriptionData
from rocketq.protocol.calls import parse_view_stamp
from rocketq.protocol.topics import RETRY_GROUP_TOPIC_PREFIX

__all__ = [
    "MessageQueueListener",
    "PullRequest",
    "QueueDiff",
    "RebalanceContext",
    "RebalanceHooks",
    "RebalanceImpl",
    "agreed_view",
    "allocate_per_broker",
    "allocate_topic",
    "diff_queues",
    "replace_broker_queues",
]

logger = logging.getLogger(__name__)

MessageQueueListener = Callable[[str, frozenset[MessageQueue], frozenset[MessageQueue]], object]
"""``fn(topic, all queues, my queues)`` after a rebalance changed a consumer's queues
(``MessageQueueListener``; called from :meth:`RebalanceHooks.message_queue_changed`)."""


# ------------------------------------------------------------------------------------ pure parts


def _union(answers: Mapping[str, Sequence[str] | None]) -> list[str]:
    """Every member any broker listed, in the order they first appear; an id a broker lists twice
    (two clients sharing it) stays twice.

    >>> _union({"a": ["c2", "c1"], "b": ["c1", "c3"], "c": None})
    ['c2', 'c1', 'c3']
    >>> _union({"a": ["c1", "c1"], "b": ["c1"]})
    ['c1', 'c1']
    """
    most: dict[str, int] = {}
    for ids in answers.values():
        for cid in set(ids or ()):
            most[cid] = max(most.get(cid, 0), (ids or []).count(cid))
    order = dict.fromkeys(cid for ids in answers.values() if ids for cid in ids)
    return [cid for cid in order for _ in range(most[cid])]


def allocate_topic(
    strategy: AllocationStrategy,
    group: str,
    client_id: str,
    topic: str,
    queues: Iterable[MessageQueue],
    client_ids: Iterable[str],
    *,
    balance: str = "topic",
    other_topics: Mapping[str, Iterable[MessageQueue]] | None = None,
) -> tuple[list[MessageQueue], list[MessageQueue], list[str]]:
    """``(my queues, all queues sorted, client ids sorted)`` for one topic.

    ``balance="topic"`` is RocketMQ: the strategy sees this topic's sorted queues and the sorted
    ids. ``balance="group"`` hands the strategy the id list rotated by the queues of the
    subscribed topics before this one (``other_topics``), so totals across topics stay even.

    >>> from rocketq.allocate import get_strategy
    >>> qs = [MessageQueue("T", "b", i) for i in range(5)]
    >>> mine, _, ids = allocate_topic(get_strategy("AVG"), "g", "c2", "T", qs, ["c2", "c1"])
    >>> [q.queue_id for q in mine], ids
    ([3, 4], ['c1', 'c2'])
    """
    mq_all = sorted_queues(dict.fromkeys(queues))
    cid_all = java_sorted(client_ids)
    if not mq_all or not cid_all:
        return [], mq_all, cid_all
    if balance == "group":
        topic_queues: dict[str, Iterable[MessageQueue]] = dict(other_topics or {})
        topic_queues[topic] = mq_all
        mine = allocate_group(strategy, group, client_id, topic_queues, cid_all, balance="group")[topic]
    else:
        mine = strategy.allocate(group, client_id, mq_all, cid_all)
    return list(mine), mq_all, cid_all


def allocate_per_broker(
    strategy: AllocationStrategy,
    group: str,
    client_id: str,
    topic: str,
    queues: Iterable[MessageQueue],
    answers: Mapping[str, Sequence[str] | None],
    *,
    balance: str = "topic",
    other_topics: Mapping[str, Iterable[MessageQueue]] | None = None,
) -> list[MessageQueue]:
    """This consumer's queues of ``topic`` when each broker's queues are shared over the members
    *that broker* lists (``answers``: broker name -> its member list, None: it did not answer).

    The strategy sees every queue of the topic each time, so when every broker lists the same
    members the result is exactly :func:`allocate_topic`'s. When they differ, a queue's owner
    depends only on its own broker's list - which every consumer that asked that broker reads
    alike - so consumers agree on each queue while the brokers disagree. A broker that did not
    answer, or does not list this consumer, gives it none of its queues.

    >>> from rocketq.allocate import get_strategy
    >>> avg = get_strategy("AVG")
    >>> qs = [MessageQueue("T", b, i) for b in ("a", "b") for i in range(2)]
    >>> same = allocate_per_broker(avg, "g", "c1", "T", qs, {"a": ["c1", "c2"], "b": ["c2", "c1"]})
    >>> same == allocate_topic(avg, "g", "c1", "T", qs, ["c1", "c2"])[0]
    True
    >>> split = {"a": ["c1", "c2"], "b": ["c2"]}  # broker b lost c1: c2 takes b's queues, alone
    >>> [[q.short for q in allocate_per_broker(avg, "g", c, "T", qs, split)] for c in ("c1", "c2")]
    [['a:0', 'a:1'], ['b:0', 'b:1']]
    """
    queues = list(queues)
    by_members: dict[tuple[str, ...], set[str]] = {}  # a repeated id stays repeated, as RocketMQ sees it
    for broker, ids in answers.items():
        if ids and client_id in ids:
            by_members.setdefault(tuple(sorted(ids)), set()).add(broker)
    mine: list[MessageQueue] = []
    for members, brokers in by_members.items():
        part, _, _ = allocate_topic(
            strategy, group, client_id, topic, queues, members, balance=balance, other_topics=other_topics
        )
        mine.extend(mq for mq in part if mq.broker_name in brokers)
    return sorted_queues(mine)


def replace_broker_queues(
    queues: Iterable[MessageQueue], topic: str, broker: str, queue_nums: int
) -> frozenset[MessageQueue]:
    """``queues`` with ``broker``'s queues of ``topic`` replaced by ``queue_nums`` of them (what the
    broker itself said, over a stale name server's route).

    >>> qs = replace_broker_queues([MessageQueue("T", "a", 0), MessageQueue("T", "b", 0)], "T", "a", 2)
    >>> sorted(q.short for q in qs)
    ['a:0', 'a:1', 'b:0']
    """
    kept = [mq for mq in queues if mq.broker_name != broker]
    return frozenset(kept + [MessageQueue(topic, broker, i) for i in range(queue_nums)])


@dataclass(frozen=True, slots=True)
class QueueDiff:
    """What a rebalance changes in one topic's process-queue table."""

    removed: tuple[MessageQueue, ...]
    expired: tuple[MessageQueue, ...]
    added: tuple[MessageQueue, ...]
    kept: tuple[MessageQueue, ...]


def diff_queues(
    owned: Mapping[MessageQueue, ProcessQueue],
    topic: str,
    allocated: Iterable[MessageQueue],
    *,
    now: float,
    pull_max_idle: float | None,
) -> QueueDiff:
    """Compare the owned queues of ``topic`` with its new allocation (``updateProcessQueueTableInRebalance``).

    ``expired``: queues still allocated whose last pull is older than ``pull_max_idle`` seconds
    (``None``: never, as for pull consumers); they are dropped now and re-added by a later rebalance.

    >>> qs = [MessageQueue("T", "b", i) for i in range(3)]
    >>> owned = {qs[0]: ProcessQueue(now=0.0), qs[1]: ProcessQueue(now=100.0)}
    >>> d = diff_queues(owned, "T", [qs[0], qs[1], qs[2]], now=130.0, pull_max_idle=120.0)
    >>> [q.queue_id for q in d.expired], [q.queue_id for q in d.added], [q.queue_id for q in d.kept]
    ([0], [2], [1])
    """
    target = set(allocated)
    removed: list[MessageQueue] = []
    expired: list[MessageQueue] = []
    kept: list[MessageQueue] = []
    for mq, pq in owned.items():
        if mq.topic != topic:
            continue
        if mq not in target:
            removed.append(mq)
        elif pull_max_idle is not None and pq.is_pull_expired(now, pull_max_idle):
            expired.append(mq)
        else:
            kept.append(mq)
    added = [mq for mq in target if mq not in owned]
    return QueueDiff(
        tuple(sorted(removed)), tuple(sorted(expired)), tuple(sorted_queues(added)), tuple(sorted(kept))
    )


# ------------------------------------------------------------------------------------ the machine


@dataclass(slots=True)
class PullRequest:
    """One queue's pull cursor (RocketMQ's ``PullRequest``): where the next pull starts."""

    group: str
    mq: MessageQueue
    pq: ProcessQueue
    next_offset: int
    previously_locked: bool = False


_TableUpdate = tuple[
    bool,  # changed
    dict[MessageQueue, int],  # added, with the offset each starts at
    list[MessageQueue],  # removed
    list[MessageQueue],  # expired
    dict[MessageQueue, int],  # committed offsets of the dropped queues
    list[PullRequest],  # pulls to dispatch
    list[tuple[MessageQueue, asyncio.Task[bool]]],  # removed queues still draining (clean handoff)
]


async def _drained(draining: Sequence[tuple[MessageQueue, asyncio.Task[bool]]]) -> list[MessageQueue]:
    """Wait for the drains under way; the queues they dropped. The first error any raised is
    raised once all ended; a cancelled wait cancels them (and waits for them) first."""
    if not draining:
        return []
    tasks = [task for _, task in draining]
    try:
        results = await asyncio.gather(*tasks, return_exceptions=True)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return [mq for (mq, _), dropped in zip(draining, results, strict=True) if dropped]


def _follows(old: str, new: str) -> bool:
    """Whether stamp ``new`` is the epoch right after ``old``'s (or the same): no change of the
    group in between that this consumer did not see."""
    try:
        return parse_view_stamp(new)[0] - parse_view_stamp(old)[0] in (0, 1)
    except RocketQError:
        return False


def agreed_view(
    answers: Mapping[str, Sequence[str] | None], *, timed_out: bool, fallback: str = "union"
) -> list[str] | None:
    """The member list to rebalance on, given each broker's answer (None: it did not answer), or
    None to keep the current share and ask again.

    Before the timeout: the list every broker answered, when they all answered and agree (as sets:
    the order of an answer is the broker's join order). After it, over the lists that were
    answered (brokers that did not answer are left out), in the order they first appear:

    - ``"union"`` (the default): every member any broker holds. A consumer one broker lost (cut
      off, or its heartbeats lost) keeps its share for everyone, itself included - it is alive
      enough for the other broker - so nobody takes its queues while it still pulls them: no
      overlap, no repeats; the price is that the queues it cannot reach rest until the brokers
      agree again (or, for a dead member one broker still lists, until that broker expires it).
    - ``"intersection"``: only the members all of them hold. The others share the lost member's
      queues at once; the lost member takes nothing only if it too sees a broker without itself -
      one cut off from that broker cannot, keeps its share and overlaps the others.

    >>> agreed_view({"a": ["c1", "c2"], "b": ["c2", "c1"]}, timed_out=False)
    ['c1', 'c2']
    >>> agreed_view({"a": ["c1", "c2"], "b": ["c2"]}, timed_out=False) is None
    True
    >>> agreed_view({"a": ["c2"], "b": ["c1", "c2"]}, timed_out=True)
    ['c2', 'c1']
    >>> agreed_view({"a": ["c1", "c2"], "b": ["c2"]}, timed_out=True, fallback="intersection")
    ['c2']
    """
    answered = [list(ids) for ids in answers.values() if ids is not None]
    if not answered:
        return [] if timed_out else None
    first = set(answered[0])
    if not timed_out:
        if len(answered) < len(answers) or any(set(ids) != first for ids in answered[1:]):
            return None
        return answered[0]
    if fallback == "intersection":
        common = first.intersection(*(set(ids) for ids in answered[1:]))
        return [cid for cid in answered[0] if cid in common]
    return list(dict.fromkeys(cid for ids in answered for cid in ids))


class RebalanceContext(Protocol):
    """What a rebalance needs from the client instance."""

    @property
    def client_id(self) -> str: ...

    async def find_consumer_id_list(self, topic: str, group: str) -> list[str] | None: ...

    async def lock_queues(self, group: str, mqs: Sequence[MessageQueue]) -> set[MessageQueue]: ...

    async def unlock_queues(self, group: str, mqs: Sequence[MessageQueue], *, oneway: bool) -> None: ...


class RebalanceHooks(Protocol):
    """What differs between consumers (RocketMQ's abstract methods of ``RebalanceImpl``)."""

    consume_type: ConsumeType

    @property
    def consume_orderly(self) -> bool: ...

    @property
    def lock_new_queues(self) -> bool:
        """Lock new queues on the broker before adding them (orderly, clean handoff); a queue
        another client holds is skipped this time."""
        ...

    @property
    def drains_removed_queues(self) -> bool:
        """The hooks drop a removed queue themselves, after draining it (clean handoff); otherwise
        (and for hooks without this attribute) the rebalance drops it before
        :meth:`remove_unnecessary_message_queue`."""
        ...

    async def remove_unnecessary_message_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        """Release a removed queue (persist its offset...); ``False`` keeps it in the table."""
        ...

    def remove_dirty_offset(self, mq: MessageQueue) -> None: ...

    async def compute_pull_from_where(self, mq: MessageQueue) -> int:
        """The offset a newly owned queue starts at; < 0 or an exception skips it this time."""
        ...

    def dispatch_pull_requests(self, requests: Sequence[PullRequest]) -> None: ...

    async def message_queue_changed(
        self, topic: str, mq_all: frozenset[MessageQueue], mq_divided: frozenset[MessageQueue]
    ) -> None:
        """The consumer's queues of ``topic`` changed (runs before the new queues' first pulls)."""
        ...


class RebalanceImpl:
    """One consumer group's subscriptions, process-queue table and rebalance procedure.

    Runs on the client's event loop; one rebalance at a time per consumer. The table
    (``process_queue_table``) is what pull and consume services and GET_CONSUMER_RUNNING_INFO read.
    """

    def __init__(
        self,
        *,
        group: str,
        message_model: MessageModel,
        strategy: AllocationStrategy,
        context: RebalanceContext,
        hooks: RebalanceHooks,
        log: RebalanceLog,
        offset_store: OffsetStore | None = None,
        balance: str = "topic",
        pull_max_idle: float = 120.0,
        consistent_views: str = "off",
        view_agreement_timeout: float = 2.0,
    ) -> None:
        self.group = group
        self.message_model = message_model
        self.strategy = strategy
        self.context = context
        self.hooks = hooks
        self.log = log
        self.offset_store = offset_store
        self.balance = balance
        self.pull_max_idle = pull_max_idle
        #: "per-broker", "union", "intersection" or "off" (see PushConsumerConfig.consistent_views)
        self.consistent_views = consistent_views
        self.view_agreement_timeout = view_agreement_timeout
        #: (topic, broker name) -> the view stamp (the group's epoch on that broker and its queue
        #: count) the last rebalance that read the broker's list allocated its queues under, sent
        #: with pulls and commits (the view fence); kept while the broker does not answer
        self.views: dict[tuple[str, str], str] = {}
        #: (topic, broker name) -> the stamp the last member-list answer of the broker carried
        self._stamps_read: dict[tuple[str, str], str] = {}
        #: (topic, broker name) -> the read queue count the broker itself said (a PULL_VIEW_CHANGED
        #: answer), kept over the name server's routes until they say the same
        self.broker_queue_nums: dict[tuple[str, str], int] = {}
        self._rebalanced = asyncio.Event()
        self.subscriptions: dict[str, SubscriptionData] = {}
        self.topic_subscribe_info: dict[str, frozenset[MessageQueue]] = {}
        self.process_queue_table: dict[MessageQueue, ProcessQueue] = {}
        #: each topic's queues the last rebalance gave this consumer (owned or still to acquire)
        self.allocated: dict[str, frozenset[MessageQueue]] = {}
        self._lock = asyncio.Lock()
        # adoptions apart from rebalances: a rebalance waits for its removed queues to drain
        # (seconds, with a slow listener), and a queue whose lease came meanwhile must not wait too
        self._adopt_lock = asyncio.Lock()

    # -------------------------------------------------------------- subscriptions

    def set_subscription(self, sub: SubscriptionData) -> None:
        assert sub.topic is not None
        self.subscriptions[sub.topic] = sub

    def bump_sub_version(self, topic: str) -> None:
        sub = self.subscriptions.get(topic)
        if sub is not None:
            self.subscriptions[topic] = replace(sub, sub_version=now_ms())

    # -------------------------------------------------------------- rebalance

    async def do_rebalance(self, trigger: RebalanceTrigger) -> list[RebalanceRecord]:
        """Rebalance every subscribed topic; returns the records published."""
        async with self._lock:
            records = []
            for topic in list(self.subscriptions):
                try:
                    record = await self._rebalance_topic(topic, trigger)
                except Exception:
                    logger.exception("rebalance of %s for group %s failed", topic, self.group)
                    continue
                if record is not None:
                    records.append(record)
            await self._truncate_not_my_topics()
            done, self._rebalanced = self._rebalanced, asyncio.Event()
            done.set()
            return records

    async def wait_rebalanced(self, timeout: float) -> bool:
        """Wait until the next rebalance (one starting from now or running now) has finished;
        False after ``timeout`` seconds without one."""
        try:
            await asyncio.wait_for(self._rebalanced.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def set_topic_queues(self, topic: str, mqs: frozenset[MessageQueue]) -> bool:
        """The name server's readable queues of ``topic``, corrected by what its brokers said
        themselves (``broker_queue_nums``: dropped once the route agrees); True if that changed
        the topic's queues."""
        for (t, broker), nums in list(self.broker_queue_nums.items()):
            if t != topic:
                continue
            if sum(1 for mq in mqs if mq.broker_name == broker) == nums:
                del self.broker_queue_nums[(t, broker)]
            else:
                mqs = replace_broker_queues(mqs, topic, broker, nums)
        old = self.topic_subscribe_info.get(topic)
        self.topic_subscribe_info[topic] = mqs
        return old != mqs

    def broker_said_queue_nums(self, topic: str, broker: str, queue_nums: int) -> bool:
        """A broker answered that it has ``queue_nums`` read queues of ``topic``: believe it over
        the name server's route; True if that changed the topic's queues."""
        mqs = self.topic_subscribe_info.get(topic)
        if mqs is None or queue_nums < 0:
            return False
        if sum(1 for mq in mqs if mq.broker_name == broker) == queue_nums:
            return False
        logger.info(
            "%s: broker %s has %d read queues of %s, not what the route said; sharing those",
            self.group, broker, queue_nums, topic,
        )  # fmt: skip
        self.broker_queue_nums[(topic, broker)] = queue_nums
        self.topic_subscribe_info[topic] = replace_broker_queues(mqs, topic, broker, queue_nums)
        return True

    async def _rebalance_topic(self, topic: str, trigger: RebalanceTrigger) -> RebalanceRecord | None:
        start = now_ms()
        mq_set = self.topic_subscribe_info.get(topic)
        if mq_set is None:
            if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                logger.warning("rebalance of %s for group %s: no route for the topic yet", topic, self.group)
            return self._publish(trigger, topic, start, error="no route for the topic")
        all_sorted = tuple(sorted_queues(mq_set))
        jumped: set[str] = set()
        if self.message_model is MessageModel.BROADCASTING:
            mine: list[MessageQueue] = list(all_sorted)
            cid_all: list[str] = []
        else:
            answers: Mapping[str, Sequence[str] | None] | None = None
            if self.consistent_views == "per-broker":
                answers = await self._ask_every_broker(topic)
                ids = None if answers is None else _union(answers)
            elif self.consistent_views in ("union", "intersection"):
                ids, answers = await self._agreed_consumer_ids(topic)
            else:
                ids = await self.context.find_consumer_id_list(topic, self.group)
            if self.consistent_views == "per-broker" and answers is None:  # a one-broker context
                ids = await self.context.find_consumer_id_list(topic, self.group)
            if answers is not None:  # the brokers' own queue counts may have corrected the route's
                mq_set = self.topic_subscribe_info.get(topic, mq_set)
                all_sorted = tuple(sorted_queues(mq_set))
            jumped = self._record_views(topic, answers)
            if not ids:
                logger.warning("rebalance of %s for group %s: no consumer ids", topic, self.group)
                error = "no consumer ids from the brokers"
                return self._publish(trigger, topic, start, all_queues=all_sorted, error=error)
            others = {t: qs for t, qs in self.topic_subscribe_info.items() if t in self.subscriptions}
            try:
                if self.consistent_views == "per-broker" and answers is not None:
                    cid_all = java_sorted(ids)
                    mine = allocate_per_broker(
                        self.strategy, self.group, self.context.client_id, topic, mq_set, answers,
                        balance=self.balance, other_topics=others,
                    )  # fmt: skip
                else:
                    mine, _, cid_all = allocate_topic(
                        self.strategy,
                        self.group,
                        self.context.client_id,
                        topic,
                        mq_set,
                        ids,
                        balance=self.balance,
                        other_topics=others,
                    )
            except RocketQError as exc:
                logger.error("allocation of %s for group %s failed: %s", topic, self.group, exc)
                return self._publish(
                    trigger, topic, start, client_ids=tuple(java_sorted(ids)), all_queues=all_sorted,
                    error=f"allocation failed: {exc}",
                )  # fmt: skip
        self.allocated[topic] = frozenset(mine)
        changed, added, removed, expired, committed, requests, draining = await self._update_table(
            topic, mine, resume_brokers=jumped
        )
        try:
            # the new queues' pulls start now, while the removed ones drain (a slow listener's
            # bounded wait used to hold a queue released to this consumer for those seconds)
            await self._announce(
                topic, frozenset(mq_set), frozenset(mine), changed or bool(draining), requests
            )
        finally:
            removed += await _drained(draining)
        return self._publish(
            trigger, topic, start, client_ids=tuple(cid_all), all_queues=all_sorted, added=added,
            removed=tuple(sorted(removed + expired)), expired=tuple(sorted(expired)), committed=committed,
        )  # fmt: skip

    async def _ask_every_broker(self, topic: str) -> Mapping[str, Sequence[str] | None] | None:
        """Every broker's member list of the group (None: a context that knows one broker only);
        the read queue counts of ``topic`` the brokers say are believed over the route's, and the
        stamps they say are kept for :meth:`_record_views`."""
        ask = getattr(self.context, "find_consumer_views", None)
        if ask is None:
            return None
        views: Mapping[str, tuple[Sequence[str], int, str | None] | None] = await ask(topic, self.group)
        for broker, view in views.items():
            if view is None:
                continue
            if view[1] >= 0:
                self.broker_said_queue_nums(topic, broker, view[1])
            if view[2] is not None:
                self._stamps_read[(topic, broker)] = view[2]
            else:
                self._stamps_read.pop((topic, broker), None)
        return {broker: None if view is None else view[0] for broker, view in views.items()}

    def _record_views(self, topic: str, answers: Mapping[str, Sequence[str] | None] | None) -> set[str]:
        """Keep the stamp of each broker whose list this rebalance read (the view fence), and
        return the brokers whose epoch moved by more than one since the last rebalance: the group
        changed there while this consumer did not look (a cut, a pause, a lost notification, two
        changes at once), so a member may have pulled this consumer's queues of that broker in
        between, further than this consumer's position. Those queues resume from the group's
        committed offset. A broker that did not answer keeps its last stamp: pulls stay fenced
        by it."""
        if answers is None:
            for key in [k for k in self.views if k[0] == topic]:
                del self.views[key]
            return set()
        for key in [k for k in self.views if k[0] == topic and k[1] not in answers]:
            del self.views[key]
        jumped: set[str] = set()
        for broker, ids in answers.items():
            key = (topic, broker)
            if ids is None:
                continue
            stamp = self._stamps_read.get(key)
            if stamp is None:  # a broker without epochs (RocketMQ's): no fence
                self.views.pop(key, None)
                continue
            old = self.views.get(key)
            if old is not None and old != stamp and not _follows(old, stamp):
                jumped.add(broker)
            self.views[key] = stamp
        return jumped

    async def _agreed_consumer_ids(
        self, topic: str
    ) -> tuple[list[str] | None, Mapping[str, Sequence[str] | None] | None]:
        """Consistent views: ask every broker of ``topic`` for the group's members until they agree,
        for up to ``view_agreement_timeout`` seconds (retrying after 0.1 s, 1.5x per try, while
        the current share stays as it is); then :func:`agreed_view`'s fallback (union or
        intersection of the answers)."""
        if getattr(self.context, "find_consumer_views", None) is None:  # a context that knows one broker only
            return await self.context.find_consumer_id_list(topic, self.group), None
        ask = self._ask_every_broker
        fallback = self.consistent_views
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.view_agreement_timeout
        delay = 0.1
        while True:
            answers = await ask(topic) or {}
            timed_out = loop.time() >= deadline
            ids = agreed_view(answers, timed_out=timed_out, fallback=fallback)
            if ids is not None:
                if timed_out and len({tuple(sorted(v)) for v in answers.values() if v is not None}) > 1:
                    logger.info(
                        "rebalance of %s for group %s: the brokers disagree after %.1fs (%s); "
                        "sharing over the %s of their lists: %s",
                        topic, self.group, self.view_agreement_timeout, dict(answers),
                        fallback, ids,
                    )  # fmt: skip
                return ids, answers
            await asyncio.sleep(min(delay, max(0.0, deadline - loop.time())))
            delay *= 1.5

    async def _announce(
        self,
        topic: str,
        mq_all: frozenset[MessageQueue],
        mine: frozenset[MessageQueue],
        changed: bool,
        requests: Sequence[PullRequest],
    ) -> None:
        """Tell the hooks the consumer's queues of ``topic`` changed, then dispatch the new pulls."""
        if changed:
            # before the first pulls: it bumps the subscription version and heartbeats it, and a
            # pull carrying a version the broker has not seen yet is refused (Java races here)
            await self.hooks.message_queue_changed(topic, mq_all, mine)
        if requests:
            self.hooks.dispatch_pull_requests(requests)

    def _publish(
        self,
        trigger: RebalanceTrigger,
        topic: str,
        start_ms: int,
        *,
        client_ids: tuple[str, ...] = (),
        all_queues: tuple[MessageQueue, ...] = (),
        added: Mapping[MessageQueue, int] | None = None,
        removed: tuple[MessageQueue, ...] = (),
        expired: tuple[MessageQueue, ...] = (),
        committed: dict[MessageQueue, int] | None = None,
        error: str | None = None,
    ) -> RebalanceRecord:
        """Record and publish one topic's rebalance that began at ``start_ms``: what the consumer
        owns now, ``added`` queues with the offsets they start at, and the rest as given."""
        added = added or {}
        record = RebalanceRecord(
            seq=self.log.next_seq(),
            trigger=trigger,
            group=self.group,
            client_id=self.context.client_id,
            topic=topic,
            message_model=str(self.message_model),
            strategy=self.strategy.name,
            client_ids=client_ids,
            all_queues=all_queues,
            owned=tuple(sorted(mq for mq in self.process_queue_table if mq.topic == topic)),
            added=tuple(sorted(added)),
            removed=removed,
            expired=expired,
            pull_from=dict(sorted(added.items())),
            committed=committed or {},
            start_ms=start_ms,
            end_ms=now_ms(),
            error=error,
        )
        self.log.publish(record)
        return record

    async def _drop(self, mq: MessageQueue, committed: dict[MessageQueue, int], reason: DropReason) -> bool:
        pq = self.process_queue_table[mq]
        if not getattr(self.hooks, "drains_removed_queues", False):
            pq.drop(reason)
        if self.offset_store is not None:
            offset = self.offset_store.memory_offset(mq)
            if offset >= 0:
                committed[mq] = offset
        if await self.hooks.remove_unnecessary_message_queue(mq, pq):
            self.process_queue_table.pop(mq, None)
            return True
        return False

    async def _update_table(
        self, topic: str, allocated: Sequence[MessageQueue], *, resume_brokers: Set[str] = frozenset()
    ) -> _TableUpdate:
        """Drop the queues no longer allocated (and the idle ones), add the new ones. Queues of
        ``resume_brokers`` this consumer keeps are dropped and added again: they resume from the
        group's committed offset, not from this consumer's position (see :meth:`_record_views`)."""
        passive = self.hooks.consume_type is ConsumeType.CONSUME_PASSIVELY
        idle = self.pull_max_idle if passive else None
        changed = False
        committed: dict[MessageQueue, int] = {}
        removed: list[MessageQueue] = []
        expired: list[MessageQueue] = []
        table = self.process_queue_table
        for mq in sorted(mq for mq in table if mq.topic == topic and mq.broker_name in resume_brokers):
            logger.info("%s: the group changed on %s while this consumer was not looking; resuming "
                        "from the committed offset", mq, mq.broker_name)  # fmt: skip
            if await self._drop(mq, committed, DropReason.VIEW_JUMPED):
                removed.append(mq)
                changed = True
        diff = diff_queues(self.process_queue_table, topic, allocated, now=time.time(), pull_max_idle=idle)
        draining: list[tuple[MessageQueue, asyncio.Task[bool]]] = []
        if getattr(self.hooks, "drains_removed_queues", False):  # each drain waits: at once, not in turn
            draining = [
                (mq, asyncio.ensure_future(self._drop(mq, committed, DropReason.REBALANCED)))
                for mq in diff.removed
            ]
        else:
            for mq in diff.removed:
                if await self._drop(mq, committed, DropReason.REBALANCED):
                    removed.append(mq)
                    changed = True
        for mq in diff.expired:
            logger.warning("%s: pull expired (idle > %.0fs), dropping it until the next rebalance", mq,
                           self.pull_max_idle)  # fmt: skip
            if await self._drop(mq, committed, DropReason.PULL_EXPIRED):
                expired.append(mq)
                changed = True
        to_add = list(diff.added)
        # hooks written before ``lock_new_queues`` existed lock exactly when orderly
        lock_first = bool(getattr(self.hooks, "lock_new_queues", self.hooks.consume_orderly))
        if to_add and lock_first:
            locked = await self.context.lock_queues(self.group, to_add)
            skipped = [mq for mq in to_add if mq not in locked]
            if skipped:
                logger.info("not adding %s this time: locked by another consumer", [q.short for q in skipped])
            to_add = [mq for mq in to_add if mq in locked]
        try:
            added, changed_add, requests = await self._add_queues(to_add, locked=lock_first)
        except BaseException:
            await _drained(draining)
            raise
        return changed or changed_add, added, removed, expired, committed, requests, draining

    async def _add_queues(
        self, mqs: Sequence[MessageQueue], *, locked: bool
    ) -> tuple[dict[MessageQueue, int], bool, list[PullRequest]]:
        """Make process queues for ``mqs`` (their starting offsets computed) and their pull requests."""
        requests: list[PullRequest] = []
        added: dict[MessageQueue, int] = {}
        changed = False
        for mq in mqs:
            self.hooks.remove_dirty_offset(mq)
            pq = ProcessQueue(now=time.time())
            if locked:
                pq.lock_confirmed(time.time())
            try:
                next_offset = await self.hooks.compute_pull_from_where(mq)
            except Exception as exc:
                logger.warning("cannot compute where %s starts: %s; retrying at the next rebalance", mq, exc)
                continue
            if next_offset < 0:
                logger.warning("no start offset for %s; retrying at the next rebalance", mq)
                continue
            if mq in self.process_queue_table:
                continue
            self.process_queue_table[mq] = pq
            requests.append(PullRequest(self.group, mq, pq, next_offset, locked))
            added[mq] = next_offset
            changed = True
        return added, changed, requests

    async def adopt(
        self, topic: str, mqs: Iterable[MessageQueue], trigger: RebalanceTrigger
    ) -> RebalanceRecord | None:
        """Add queues of ``topic`` whose broker lock this consumer acquired after the rebalance
        that allocated them (a clean handoff's new owner): the ones still allocated and not owned
        get a process queue, a starting offset read now — after the lock — and a pull.

        Returns the record published (with ``trigger``, the rebalance that allocated them), or
        ``None`` when nothing was added. It may run while a rebalance waits for the queues it
        removed to drain: it adds only queues the latest allocation gives this consumer and the
        table does not hold, and adding one twice is ruled out where the table is written."""
        async with self._adopt_lock:
            start = now_ms()
            target = self.allocated.get(topic, frozenset())
            todo = [
                mq for mq in sorted_queues(set(mqs)) if mq in target and mq not in self.process_queue_table
            ]
            if not todo:
                return None
            added, changed, requests = await self._add_queues(todo, locked=True)
            if not changed:
                return None
            mq_all = self.topic_subscribe_info.get(topic, frozenset())
            await self._announce(topic, frozenset(mq_all), target, True, requests)
            return self._publish(trigger, topic, start, all_queues=tuple(sorted_queues(mq_all)), added=added)

    def pending(self) -> dict[str, list[MessageQueue]]:
        """Per topic, the allocated queues not owned yet (their lock is held elsewhere)."""
        out: dict[str, list[MessageQueue]] = {}
        for topic, target in self.allocated.items():
            if topic not in self.subscriptions:
                continue
            missing = [mq for mq in target if mq not in self.process_queue_table]
            if missing:
                out[topic] = sorted_queues(missing)
        return out

    async def _truncate_not_my_topics(self) -> None:
        for mq in [mq for mq in self.process_queue_table if mq.topic not in self.subscriptions]:
            pq = self.process_queue_table.pop(mq)
            pq.drop(DropReason.UNSUBSCRIBED)
            logger.info("%s dropped: topic %s is no longer subscribed", mq, mq.topic)

    def remove_process_queue(self, mq: MessageQueue, reason: DropReason) -> None:
        """Drop a queue now (offset illegal, offset reset); the next rebalance adds it again."""
        pq = self.process_queue_table.pop(mq, None)
        if pq is not None:
            pq.drop(reason)

    async def release_all(
        self, trigger: RebalanceTrigger = RebalanceTrigger.SHUTDOWN
    ) -> list[RebalanceRecord]:
        """Drop every queue (shutdown); one record per topic that owned queues."""
        async with self._lock:
            by_topic: dict[str, list[MessageQueue]] = {}
            for mq in self.process_queue_table:
                by_topic.setdefault(mq.topic, []).append(mq)
            records = []
            for topic, mqs in sorted(by_topic.items()):
                start = now_ms()
                committed: dict[MessageQueue, int] = {}
                removed = []
                for mq in sorted(mqs):
                    if await self._drop(mq, committed, DropReason.SHUTDOWN):
                        removed.append(mq)
                all_queues = tuple(sorted_queues(self.topic_subscribe_info.get(topic, ())))
                records.append(
                    self._publish(
                        trigger,
                        topic,
                        start,
                        all_queues=all_queues,
                        removed=tuple(removed),
                        committed=committed,
                    )
                )
            return records
