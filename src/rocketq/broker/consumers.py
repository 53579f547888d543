"""The broker's consumer registry: who is in each consumer group, and when to tell them it changed.

Every client sends HEART_BEAT to every broker it uses (every 30 s, and at once after a start or a
subscription change), listing each consumer group it runs with that group's subscriptions. The
broker records one *channel* per (group, connection) and keeps one subscription table per group.
Consumers rebalance (share a topic's queues among the group's client ids) every 20 s on their own,
and at once when the broker sends them NOTIFY_CONSUMER_IDS_CHANGED, so when the registry sends
that notice decides how fast a group settles. This module is RocketMQ 4.9.4's
``ConsumerManager``/``ConsumerGroupInfo``/``ClientChannelInfo`` as a pure state machine: methods
take ``now`` and return :class:`Changes` (events and connections to close) for the broker adapter
to act on; nothing here does I/O.

When RocketMQ 4.9.4 notifies, event by event (``ConsumerGroupEvent``; the adapter sends
NOTIFY_CONSUMER_IDS_CHANGED oneway to every connection of a CHANGE event's ``notify``):

* **Heartbeat** (:meth:`ConsumerRegistry.register`, ``registerConsumer``): the channel is added if
  its *connection* is new in the group (``r1``); the group's one subscription table is brought in
  line with the heartbeat's: a topic not in the table is added, a topic missing from the heartbeat
  is removed (either sets ``r2``), a topic whose subscription has a greater ``subVersion`` is
  replaced *without* counting as a change. If ``r1 or r2`` and the group's
  ``notifyConsumerIdsChangedEnable`` (the subscription group config, passed as ``notify``) is on:
  **CHANGE** to *every* channel of the group, the newcomer included. Then always **REGISTER** with
  the heartbeat's subscriptions (RocketMQ feeds its consumer filter manager with it; no message is
  sent). Returns ``r1 or r2``. Every heartbeat overwrites the group's consume type, message model
  and consume-from-where.
* **UNREGISTER_CLIENT** (:meth:`ConsumerRegistry.unregister`): the connection's channel is removed;
  if the group is now empty it is dropped with **UNREGISTER**; then, if the group's flag is on,
  **CHANGE** to the remaining channels (none if the group was dropped). RocketMQ sends this CHANGE
  even when the connection was not in the group; so do we.
* **Connection closed** (:meth:`ConsumerRegistry.connection_closed`, ``doChannelCloseEvent``): for each
  group holding the connection: removed; **UNREGISTER** if the group emptied; **CHANGE** to the rest.
  RocketMQ does not consult the group's flag here (only the broker-wide one); pass
  ``notify_enabled`` to honour it.
* **Expiry** (:meth:`ConsumerRegistry.scan_expired`, ``scanNotActiveChannel``, every 10 s): channels
  silent for more than 120 s are removed and their connections closed. RocketMQ 4.9.4 sends *no*
  notice here (the members left behind learn of it at their next 20 s rebalance, and the close that
  follows finds the channel already gone). We follow the issue's rule that any change of a group's
  members notifies: **CHANGE** to the remaining channels (**UNREGISTER** if none remain), unless
  :attr:`ConsumerRegistryConfig.notify_on_expiry` is off, which gives RocketMQ's silence.

The broker-wide switch, ``notifyConsumerIdsChangedEnable`` in ``BrokerConfig``
(:attr:`ConsumerRegistryConfig.notify_consumer_ids_changed_enable`), empties every CHANGE's
``notify`` when off. A subscription whose expression changed under a newer ``subVersion`` notifies
only with :attr:`ConsumerRegistryConfig.notify_on_subscription_update` (off, as in RocketMQ: how
queues are shared depends on topics and client ids, not on tag expressions). These rules are
checked against traffic captured from a real 4.9.4 broker (``tests/unit/test_broker_captures.py``).

**Member order.** RocketMQ keys channels by Netty ``Channel`` in a hash map, so its member lists
come out in an order fixed by random channel ids; clients sort the ids before allocating. We list
members in the order their connections joined the group, a stable and readable choice.

**Duplicate client ids.** Channels are keyed by connection, so two live connections registering the
same client id in one group are both members and the id is listed twice in
GET_CONSUMER_LIST_BY_GROUP (both clients then compute the same share and consume the same queues).
We keep that on the wire but log a WARNING whenever a connection joins with an id already present,
and :meth:`ConsumerRegistry.duplicates` lists every duplicated id with its addresses for admin calls.

Time: ``now`` is float seconds; RocketMQ uses the wall clock (``System.currentTimeMillis()``) and
so should the broker (``time.time()``), since ``last_update`` is shown to admin tools. Only
differences matter to the rules. Concurrency: single-threaded; the broker calls it from its asyncio
loop, each call running to completion. Connections (``C``) are any hashable object the adapter uses
to reach a client, such as its connection object.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import TYPE_CHECKING, Generic, TypeVar

from rocketq.broker.channels import CHANNEL_EXPIRED_TIMEOUT, CLIENT_HOUSEKEEPING_INTERVAL, ClientChannelInfo
from rocketq.errors import ConfigError, RemoteProtocolError
from rocketq.models import DuplicateClientId
from rocketq.protocol.bodies import (
    ConsumeFromWhere,
    ConsumeType,
    HeartbeatData,
    MessageModel,
    SubscriptionData,
)

if TYPE_CHECKING:
    from rocketq.broker.producers import ProducerRegistry
    from rocketq.broker.subscriptions import SubscriptionGroupManager
    from rocketq.broker.topics import TopicConfigManager

__all__ = [
    "CHANNEL_EXPIRED_TIMEOUT",
    "CLIENT_HOUSEKEEPING_INTERVAL",
    "SUB_ALL",
    "Changes",
    "ClientChannelInfo",
    "ConsumerGroupEvent",
    "ConsumerGroupView",
    "ConsumerRegistry",
    "ConsumerRegistryConfig",
    "DuplicateClientId",
    "GroupEvent",
    "apply_heartbeat",
    "apply_unregister_client",
    "check_heartbeat",
    "tag_filter",
]

log = logging.getLogger(__name__)

C = TypeVar("C", bound=Hashable)

SUB_ALL = "*"
"""``SubscriptionData.SUB_ALL``: the expression that accepts every tag."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerRegistryConfig:
    """Consumer registry settings; defaults are RocketMQ 4.9.4's unless marked as ours."""

    channel_expired_timeout: float = CHANNEL_EXPIRED_TIMEOUT
    """Seconds without a heartbeat after which a channel is removed (``CHANNEL_EXPIRED_TIMEOUT``)."""
    scan_interval: float = CLIENT_HOUSEKEEPING_INTERVAL
    """How often the adapter should call :meth:`ConsumerRegistry.scan_expired` (10 s)."""
    notify_consumer_ids_changed_enable: bool = True
    """``BrokerConfig.notifyConsumerIdsChangedEnable``: when off, no CHANGE notifies anyone."""
    notify_on_expiry: bool = True
    """Ours: notify the remaining members when a channel expires (RocketMQ 4.9.4 does not)."""
    notify_on_subscription_update: bool = False
    """Ours, off = RocketMQ: notify when a topic's subscription is replaced by a newer version."""

    def __post_init__(self) -> None:
        if not self.channel_expired_timeout > 0:
            raise ConfigError(
                f"channel_expired_timeout must be positive, got {self.channel_expired_timeout!r}"
            )
        if not self.scan_interval > 0:
            raise ConfigError(f"scan_interval must be positive, got {self.scan_interval!r}")


class ConsumerGroupEvent(Enum):
    """RocketMQ's ``ConsumerGroupEvent``."""

    CHANGE = "CHANGE"
    """The group's members or subscriptions changed: notify the listed connections."""
    UNREGISTER = "UNREGISTER"
    """The group has no member left and was dropped from the registry (RocketMQ 4.9.4 then only
    drops the group's filter data: its consumer offsets and subscription group config stay)."""
    REGISTER = "REGISTER"
    """A heartbeat registered the group's subscriptions (for filter bookkeeping; nothing is sent)."""


def tag_filter(sub: SubscriptionData) -> frozenset[int] | None:
    """Tag codes a message must carry to match ``sub``, or ``None`` when any message may match.

    ``None`` for ``*``, for class-filter mode and for non-tag (SQL92) expressions, which a consume
    queue entry cannot decide (RocketMQ's ``isMatchedByConsumeQueue`` lets them through). This is
    what :meth:`rocketq.broker.longpoll.PullHoldTable.hold` takes as ``tag_codes``.
    """
    if sub.class_filter_mode or (sub.expression_type or "TAG") != "TAG" or sub.sub_string in (None, SUB_ALL):
        return None
    return frozenset(sub.code_set)


def _same_filter(a: SubscriptionData, b: SubscriptionData) -> bool:
    return (
        a.sub_string == b.sub_string
        and a.expression_type == b.expression_type
        and set(a.tags_set) == set(b.tags_set)
        and a.class_filter_mode == b.class_filter_mode
    )


@dataclass(frozen=True, slots=True)
class GroupEvent(Generic[C]):
    """One ``ConsumerIdsChangeListener.handle`` call: what happened to which group.

    For CHANGE, ``notify`` is the connections to send NOTIFY_CONSUMER_IDS_CHANGED to (empty when
    the broker-wide switch is off, or when no member remains). For REGISTER, ``subscriptions``
    are the registered ones. ``reason`` says which transition produced it: ``"register"``,
    ``"unregister"``, ``"close"`` or ``"expiry"``.
    """

    kind: ConsumerGroupEvent
    group: str
    reason: str
    notify: tuple[C, ...] = ()
    subscriptions: tuple[SubscriptionData, ...] = ()


@dataclass(frozen=True, slots=True)
class Changes(Generic[C]):
    """What a registry transition asks of the adapter.

    ``changed`` is RocketMQ's ``registerConsumer`` result for a heartbeat (a member or a topic
    was added or removed), and for removals whether a channel was removed. ``close`` lists
    connections to close (expired ones).
    """

    changed: bool = False
    events: tuple[GroupEvent[C], ...] = ()
    close: tuple[C, ...] = ()

    def notifications(self) -> list[tuple[str, list[C]]]:
        """``(group, connections)`` pairs to send NOTIFY_CONSUMER_IDS_CHANGED to, in event order."""
        return [
            (e.group, list(e.notify)) for e in self.events if e.kind is ConsumerGroupEvent.CHANGE and e.notify
        ]

    def __add__(self, other: Changes[C]) -> Changes[C]:
        close = dict.fromkeys(self.close)
        close.update(dict.fromkeys(other.close))
        return Changes(self.changed or other.changed, self.events + other.events, tuple(close))


@dataclass(frozen=True, slots=True)
class ConsumerGroupView(Generic[C]):
    """A snapshot of one consumer group for admin answers (GET_CONSUMER_CONNECTION_LIST)."""

    group: str
    consume_type: ConsumeType | None
    message_model: MessageModel | None
    consume_from_where: ConsumeFromWhere | None
    subscriptions: dict[str, SubscriptionData]
    members: tuple[ClientChannelInfo[C], ...]
    last_update: float


@dataclass(slots=True)
class _Group(Generic[C]):
    name: str
    consume_type: ConsumeType | None
    message_model: MessageModel | None
    consume_from_where: ConsumeFromWhere | None
    last_update: float
    subscriptions: dict[str, SubscriptionData] = field(default_factory=dict)
    channels: dict[C, ClientChannelInfo[C]] = field(default_factory=dict)


class ConsumerRegistry(Generic[C]):
    """RocketMQ's ``ConsumerManager``: consumer groups, their channels and subscriptions.

    See the module docstring for when each transition notifies. Not thread-safe: drive it from
    one event loop.
    """

    __slots__ = ("_by_conn", "_config", "_epoch_base", "_epochs", "_groups")

    def __init__(self, config: ConsumerRegistryConfig | None = None, *, epoch_base: int = 0) -> None:
        self._config = config or ConsumerRegistryConfig()
        self._groups: dict[str, _Group[C]] = {}
        self._by_conn: dict[C, dict[str, None]] = {}  # connection -> its groups, in join order
        #: group -> (its member ids, sorted, as of its last epoch; how many times they changed)
        self._epochs: dict[str, tuple[tuple[str, ...], int]] = {}
        self._epoch_base = epoch_base

    @property
    def config(self) -> ConsumerRegistryConfig:
        return self._config

    # ---------------------------------------------------------------- transitions

    def register(
        self,
        group: str,
        channel: ClientChannelInfo[C],
        consume_type: ConsumeType | None,
        message_model: MessageModel | None,
        consume_from_where: ConsumeFromWhere | None,
        subscriptions: Iterable[SubscriptionData],
        *,
        notify: bool = True,
    ) -> Changes[C]:
        """Record one consumer group of a HEART_BEAT (RocketMQ's ``registerConsumer``).

        ``channel`` is the client as the heartbeat came (its ``HeartbeatData.client_id``, the
        request's connection, peer address, ``LanguageCode`` name and version, and the time, its
        ``last_update``); the rest are one ``ConsumerData``'s fields. ``notify`` is the group's
        ``notifyConsumerIdsChangedEnable`` from its subscription group config (``True`` when the
        group has none). A subscription without a topic is a malformed heartbeat:
        :class:`RemoteProtocolError`, and nothing is recorded.
        """
        client_id, now = channel.client_id, channel.last_update
        subs = tuple(subscriptions)
        if any(not sub.topic for sub in subs):
            raise RemoteProtocolError(
                f"heartbeat of {client_id} for group {group}: subscription without a topic"
            )
        info = self._groups.get(group)
        if info is None:
            info = _Group(group, consume_type, message_model, consume_from_where, now)
            self._groups[group] = info
        info.consume_type = consume_type
        info.message_model = message_model
        info.consume_from_where = consume_from_where
        info.last_update = now
        new_member = self._update_channel(info, channel)
        topics_changed, filter_changed = self._update_subscriptions(info, subs)
        changed = new_member or topics_changed
        self._observe(group)
        events: list[GroupEvent[C]] = []
        if notify and (changed or (filter_changed and self._config.notify_on_subscription_update)):
            events.append(self._change(info, "register"))
        events.append(GroupEvent(ConsumerGroupEvent.REGISTER, group, "register", subscriptions=subs))
        return Changes(changed, tuple(events))

    def unregister(self, group: str, conn: C, client_id: str, *, notify: bool = True) -> Changes[C]:
        """UNREGISTER_CLIENT for a consumer group, received on ``conn`` (``unregisterConsumer``).

        Removes the channel of ``conn``; RocketMQ identifies it by connection, ``client_id`` only
        names it in the log. ``notify`` is the group's ``notifyConsumerIdsChangedEnable``.
        """
        info = self._groups.get(group)
        if info is None:
            return Changes()
        removed = self._remove_channel(info, conn)
        if removed is not None:
            log.info("consumer %s (%s) unregistered from group %s", client_id, removed.remote_addr, group)
            self._observe(group)
        events: list[GroupEvent[C]] = []
        if not info.channels:
            events.extend(self._drop_group(info, "unregister"))
        if notify:
            events.append(self._change(info, "unregister"))
        return Changes(removed is not None, tuple(events))

    def connection_closed(self, conn: C, notify_enabled: Callable[[str], bool] | None = None) -> Changes[C]:
        """The connection closed (or failed, or idled out): remove its channel from every group.

        ``notify_enabled(group)``, if given, vetoes the CHANGE of groups whose flag is off;
        RocketMQ (``doChannelCloseEvent``) notifies regardless of that flag.
        """
        groups = self._by_conn.get(conn)
        if not groups:
            return Changes()
        events: list[GroupEvent[C]] = []
        for name in list(groups):
            info = self._groups[name]
            removed = self._remove_channel(info, conn)
            if removed is None:  # pragma: no cover - the index and the tables agree
                continue
            log.warning(
                "consumer %s (%s) left group %s: connection closed",
                removed.client_id,
                removed.remote_addr,
                name,
            )
            if not info.channels:
                events.extend(self._drop_group(info, "close"))
            self._observe(name)
            if notify_enabled is None or notify_enabled(name):
                events.append(self._change(info, "close"))
        return Changes(True, tuple(events))

    def scan_expired(self, now: float, notify_enabled: Callable[[str], bool] | None = None) -> Changes[C]:
        """Remove channels silent for more than the expiry timeout (``scanNotActiveChannel``).

        Their connections are returned in ``close`` (RocketMQ closes them). Notifies the
        remaining members unless :attr:`ConsumerRegistryConfig.notify_on_expiry` is off or
        ``notify_enabled(group)`` says no.
        """
        timeout = self._config.channel_expired_timeout
        events: list[GroupEvent[C]] = []
        close: dict[C, None] = {}
        for info in list(self._groups.values()):
            stale = [ch for ch in info.channels.values() if now - ch.last_update > timeout]
            if not stale:
                continue
            for ch in stale:
                self._remove_channel(info, ch.conn)
                close[ch.conn] = None
                log.warning(
                    "consumer %s (%s) expired from group %s: no heartbeat for %.1f s",
                    ch.client_id,
                    ch.remote_addr,
                    info.name,
                    now - ch.last_update,
                )
            if not info.channels:
                log.warning("consumer group %s has no member left after expiry: dropped", info.name)
                del self._groups[info.name]
            self._observe(info.name)
            if not info.channels:
                if self._config.notify_on_expiry:
                    events.append(GroupEvent(ConsumerGroupEvent.UNREGISTER, info.name, "expiry"))
            elif self._config.notify_on_expiry and (notify_enabled is None or notify_enabled(info.name)):
                events.append(self._change(info, "expiry"))
        return Changes(bool(close), tuple(events), tuple(close))

    # ---------------------------------------------------------------- epochs

    def set_epoch_base(self, base: int) -> None:
        """Start every group's epoch at ``base`` (the broker's boot generation shifted left by 32
        bits, so that no epoch of this run equals one of an earlier run)."""
        self._epoch_base = base

    def epoch(self, group: str) -> int:
        """The group's epoch: a number that goes up whenever the group's member list changes (or
        :meth:`bump` says what it allocates with changed), and never repeats - the fence rocketq's
        consumers pull and commit under (``docs/rebalance.md``). A list that changes and changes
        back (A -> B -> A) has a new epoch, which a digest of the list could not tell."""
        entry = self._epochs.get(group)
        return self._epoch_base + (0 if entry is None else entry[1])

    def bump(self, groups: Iterable[str]) -> None:
        """Advance the epochs of ``groups``: what they allocate with (a topic's queues) changed."""
        for name in groups:
            ids, count = self._epochs.get(name, ((), 0))
            self._epochs[name] = (ids, count + 1)

    def _observe(self, group: str) -> None:
        """Advance ``group``'s epoch if its member list differs from the one of its last epoch."""
        ids = tuple(sorted(self.client_ids(group)))
        last, count = self._epochs.get(group, ((), 0))
        if ids != last:
            self._epochs[group] = (ids, count + 1)

    # ---------------------------------------------------------------- queries

    def groups(self) -> list[str]:
        """Names of the groups with at least one member."""
        return list(self._groups)

    def __contains__(self, group: object) -> bool:
        return group in self._groups

    def client_ids(self, group: str) -> list[str]:
        """GET_CONSUMER_LIST_BY_GROUP: member client ids in join order, duplicates kept; [] if none.

        (The broker answers an empty list with SYSTEM_ERROR "no consumer for this group".)
        """
        info = self._groups.get(group)
        return [] if info is None else [ch.client_id for ch in info.channels.values()]

    def connections(self, group: str) -> list[ClientChannelInfo[C]]:
        """The group's channels in join order (for GET_CONSUMER_CONNECTION_LIST)."""
        info = self._groups.get(group)
        return [] if info is None else list(info.channels.values())

    def view(self, group: str) -> ConsumerGroupView[C] | None:
        """A snapshot of the group (consume type, model, from-where, subscriptions, members)."""
        info = self._groups.get(group)
        if info is None:
            return None
        return ConsumerGroupView(
            info.name,
            info.consume_type,
            info.message_model,
            info.consume_from_where,
            dict(info.subscriptions),
            tuple(info.channels.values()),
            info.last_update,
        )

    def find_channel(self, group: str, client_id: str) -> ClientChannelInfo[C] | None:
        """The first channel (join order) of ``client_id`` in ``group``, e.g. to relay
        GET_CONSUMER_RUNNING_INFO to it; ``None`` if it is not online."""
        info = self._groups.get(group)
        if info is not None:
            for ch in info.channels.values():
                if ch.client_id == client_id:
                    return ch
        return None

    def find_subscription(self, group: str, topic: str) -> SubscriptionData | None:
        """The group's subscription to ``topic`` (consulted by every pull), or ``None``."""
        info = self._groups.get(group)
        return None if info is None else info.subscriptions.get(topic)

    def subscriptions(self, group: str) -> dict[str, SubscriptionData]:
        """The group's subscription table, topic to subscription (a copy)."""
        info = self._groups.get(group)
        return {} if info is None else dict(info.subscriptions)

    def groups_consuming(self, topic: str) -> list[str]:
        """Groups whose subscription table has ``topic`` (``queryTopicConsumeByWho``)."""
        return [name for name, info in self._groups.items() if topic in info.subscriptions]

    def groups_of(self, conn: C) -> list[str]:
        """The groups ``conn`` is a member of, in the order it joined them."""
        return list(self._by_conn.get(conn, ()))

    def duplicates(self, group: str | None = None, *, broker_addr: str = "") -> list[DuplicateClientId]:
        """Client ids registered by more than one live connection, per group (all groups if
        ``None``), with the connections' remote addresses; ``broker_addr`` names this broker in
        the values."""
        names = [group] if group is not None else list(self._groups)
        out: list[DuplicateClientId] = []
        for name in names:
            info = self._groups.get(name)
            if info is None:
                continue
            by_id: dict[str, list[ClientChannelInfo[C]]] = {}
            for ch in info.channels.values():
                by_id.setdefault(ch.client_id, []).append(ch)
            out.extend(
                DuplicateClientId(name, cid, broker_addr, tuple(ch.remote_addr for ch in chs))
                for cid, chs in by_id.items()
                if len(chs) > 1
            )
        return out

    def __len__(self) -> int:
        """Number of channels over all groups."""
        return sum(len(info.channels) for info in self._groups.values())

    # ---------------------------------------------------------------- internals

    def _update_channel(self, info: _Group[C], new: ClientChannelInfo[C]) -> bool:
        old = info.channels.get(new.conn)
        if old is None:
            info.channels[new.conn] = new
            self._by_conn.setdefault(new.conn, {})[info.name] = None
            log.info(
                "consumer %s (%s, %s v%d) joined group %s",
                new.client_id,
                new.remote_addr,
                new.language,
                new.version,
                info.name,
            )
            self._warn_if_duplicate(info, new)
            return True
        if old.client_id != new.client_id:
            # RocketMQ logs this as a bug and takes the new registration, without a notice.
            log.error(
                "connection %s of group %s re-registered as %s (was %s)",
                new.remote_addr,
                info.name,
                new.client_id,
                old.client_id,
            )
            info.channels[new.conn] = new
            self._warn_if_duplicate(info, new)
        else:
            info.channels[new.conn] = replace(old, last_update=new.last_update)
        return False

    def _warn_if_duplicate(self, info: _Group[C], new: ClientChannelInfo[C]) -> None:
        same = [ch for ch in info.channels.values() if ch.client_id == new.client_id]
        if len(same) > 1:
            log.warning(
                "DUPLICATE CLIENT ID %r in consumer group %s: %d live connections (%s) registered it; "
                "they will be listed %d times and allocated the same queues",
                new.client_id,
                info.name,
                len(same),
                ", ".join(ch.remote_addr for ch in same),
                len(same),
            )

    def _update_subscriptions(self, info: _Group[C], subs: tuple[SubscriptionData, ...]) -> tuple[bool, bool]:
        table = info.subscriptions
        topics_changed = False
        filter_changed = False
        for sub in subs:
            topic = sub.topic or ""  # checked non-empty by register()
            old = table.get(topic)
            if old is None:
                table[topic] = sub
                topics_changed = True
                log.info("group %s now subscribes to %s (%s)", info.name, sub.topic, sub.sub_string)
            elif sub.sub_version > old.sub_version:
                table[topic] = sub
                if not _same_filter(sub, old):
                    filter_changed = True
                    log.info(
                        "group %s changed its subscription to %s: %r -> %r",
                        info.name,
                        sub.topic,
                        old.sub_string,
                        sub.sub_string,
                    )
        wanted = {sub.topic for sub in subs}
        for topic in [t for t in table if t not in wanted]:
            del table[topic]
            topics_changed = True
            log.warning("group %s no longer subscribes to %s", info.name, topic)
        return topics_changed, filter_changed

    def _remove_channel(self, info: _Group[C], conn: C) -> ClientChannelInfo[C] | None:
        removed = info.channels.pop(conn, None)
        if removed is not None:
            groups = self._by_conn.get(conn)
            if groups is not None:
                groups.pop(info.name, None)
                if not groups:
                    del self._by_conn[conn]
        return removed

    def _drop_group(self, info: _Group[C], reason: str) -> list[GroupEvent[C]]:
        if self._groups.get(info.name) is info:
            del self._groups[info.name]
            log.info("consumer group %s has no member left: dropped", info.name)
            return [GroupEvent(ConsumerGroupEvent.UNREGISTER, info.name, reason)]
        return []

    def _change(self, info: _Group[C], reason: str) -> GroupEvent[C]:
        notify = tuple(info.channels) if self._config.notify_consumer_ids_changed_enable else ()
        return GroupEvent(ConsumerGroupEvent.CHANGE, info.name, reason, notify=notify)


def check_heartbeat(heartbeat: HeartbeatData) -> None:
    """Raise :class:`RemoteProtocolError` if ``heartbeat`` is malformed: no client id, a consumer
    group without a name or with a subscription without a topic, a producer group without a name.
    (:func:`apply_heartbeat` checks first; a caller applying one in parts checks the whole.)"""
    client_id = heartbeat.client_id
    if not client_id:
        raise RemoteProtocolError("heartbeat without a clientID")
    for data in heartbeat.consumer_data_set:
        if not data.group_name:
            raise RemoteProtocolError(f"heartbeat of {client_id}: consumer data without a group name")
        if any(not sub.topic for sub in data.subscription_data_set):
            raise RemoteProtocolError(
                f"heartbeat of {client_id} for group {data.group_name}: subscription without a topic"
            )
    if any(not p.group_name for p in heartbeat.producer_data_set):
        raise RemoteProtocolError(f"heartbeat of {client_id}: producer data without a group name")


def apply_heartbeat(
    heartbeat: HeartbeatData,
    conn: C,
    remote_addr: str,
    language: str,
    version: int,
    now: float,
    *,
    consumers: ConsumerRegistry[C],
    producers: ProducerRegistry[C],
    topics: TopicConfigManager,
    groups: SubscriptionGroupManager,
) -> Changes[C]:
    """HEART_BEAT as RocketMQ's ``ClientManageProcessor.heartBeat`` handles it, over the tables.

    For each consumer group, in the body's order: find its subscription group config
    (auto-creating it if allowed); if there is one, take its ``notifyConsumerIdsChangedEnable``
    and make sure ``%RETRY%<group>`` exists with its ``retryQueueNums``; then
    :meth:`ConsumerRegistry.register`. Then each producer group is registered. ``language`` and
    ``version`` come from the request's header. The body is checked whole first (client id,
    group names, subscription topics): a malformed heartbeat raises
    :class:`RemoteProtocolError` and changes nothing.
    """
    check_heartbeat(heartbeat)
    channel = ClientChannelInfo(conn, heartbeat.client_id or "", remote_addr, language, version, now)
    changes: Changes[C] = Changes()
    for data in heartbeat.consumer_data_set:
        group = data.group_name or ""
        config = groups.find(group, now)
        notify = True
        if config is not None:
            notify = config.notify_consumer_ids_changed_enable
            topics.ensure_retry_topic(group, config.retry_queue_nums, now, unit_mode=data.unit_mode)
        changes += consumers.register(
            group,
            channel,
            data.consume_type,
            data.message_model,
            data.consume_from_where,
            data.subscription_data_set,
            notify=notify,
        )
    for producer in heartbeat.producer_data_set:
        producers.register(producer.group_name or "", channel)
    return changes


def apply_unregister_client(
    client_id: str,
    producer_group: str | None,
    consumer_group: str | None,
    conn: C,
    now: float,
    *,
    consumers: ConsumerRegistry[C],
    producers: ProducerRegistry[C],
    groups: SubscriptionGroupManager,
) -> Changes[C]:
    """UNREGISTER_CLIENT as ``ClientManageProcessor.unregisterClient`` handles it: the producer
    group (if named) forgets the connection, then the consumer group (if named), notifying per
    the group's ``notifyConsumerIdsChangedEnable`` (RocketMQ looks the config up with
    auto-creation here too, and assumes ``True`` when there is none)."""
    if producer_group is not None:
        producers.unregister(producer_group, conn, client_id)
    if consumer_group is None:
        return Changes()
    config = groups.find(consumer_group, now)
    notify = True if config is None else config.notify_consumer_ids_changed_enable
    return consumers.unregister(consumer_group, conn, client_id, notify=notify)
