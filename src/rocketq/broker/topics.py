"""The broker's topic configs: built-in system topics, auto-creation, retry/DLQ topics, admin edits.

A broker knows a topic by its ``TopicConfig`` (read and write queue numbers, permission bits, filter
type, system flag, order flag). It reports the whole table, with a ``DataVersion``, to every
name server; clients learn routes from there. This module is RocketMQ 4.9.4's
``TopicConfigManager`` as in-memory state; the facts it follows:

* **Built-in topics** at start: ``SELF_TEST_TOPIC`` (1/1), ``TBW102`` (only with
  ``autoCreateTopicEnable``: ``defaultTopicQueueNums`` = 8 queues, perm ``RW`` + ``INHERIT``),
  ``BenchmarkTest`` (1024/1024), the cluster name (16/16, ``INHERIT`` + ``RW`` if
  ``clusterTopicEnable``), the broker name (1/1, ``INHERIT`` + ``RW`` if ``brokerTopicEnable``),
  ``OFFSET_MOVED_EVENT`` (1/1), ``SCHEDULE_TOPIC_XXXX`` (18/18, one queue per delay level),
  ``RMQ_SYS_TRACE_TOPIC`` (1/1, only with ``traceTopicEnable``) and ``<cluster>_REPLY_TOPIC`` (1/1).
  A ``TopicConfig`` made from a bare name has 16/16 queues and perm ``RW``.
* **Auto-creation on send** (``createTopicInSendMessageMethod``): a send to an unknown topic names
  a default topic (``TBW102``) and a queue count (the Java producer's ``defaultTopicQueueNums`` is
  4). If the default topic exists and has ``PERM_INHERIT``, the new topic gets
  ``min(requested, default topic's write queues)`` read and write queues, the default's perm
  without ``INHERIT`` and its filter type. With ``autoCreateTopicEnable`` off, ``TBW102`` (if it
  exists, e.g. loaded from disk) loses ``INHERIT``, so nothing is created: TOPIC_NOT_EXIST. A send
  to an unknown ``%RETRY%`` topic that could not be auto-created creates it with 1 queue, ``RW``.
* **Retry and dead-letter topics** (``createTopicInSendMessageBackMethod``): a consumer heartbeat
  creates ``%RETRY%<group>`` with the group's ``retryQueueNums`` (1) queues, perm ``RW`` (system
  flag ``UNIT_SUB`` for unit-mode consumers); the first message sent to the dead-letter queue
  creates ``%DLQ%<group>`` with 1 queue, perm ``RW`` in 4.9.4 (not write-only). An existing topic is
  returned unchanged. The transaction half topic is created the same way (1 queue, ``RW``) on use.
* **Every change** (creation, admin create/update/delete, order flags) advances the
  ``DataVersion`` (time stamp in ms, counter + 1) and calls the ``on_change`` listener with a
  :class:`TopicChange`, which the broker wires to an immediate re-registration with the name
  servers (the store's table marks itself dirty and is flushed to disk every 5 s).

Values are the protocol's bodies (``TopicConfig``, ``DataVersion``). Persistence: the configs
live in a :class:`TopicTable`, a :class:`TopicConfigTable` (``config/topics.json``, which the
store loads and writes atomically for the broker) or a :class:`MemoryTopicTable`; the table
advances the data version on every write. :meth:`TopicConfigManager.wrapper` gives RocketMQ's
``TopicConfigSerializeWrapper``, the topic part of REGISTER_BROKER.

Time: ``now`` is float seconds on the wall clock (``time.time()``): it becomes the data version's
millisecond time stamp, which name servers compare. Single-threaded: one asyncio loop drives it.

The names and bits every peer agrees on (system topics, ``%RETRY%``/``%DLQ%``, ``PermName``,
``TopicSysFlag``, topic validation) are :mod:`rocketq.protocol.topics`'.

>>> topics = TopicConfigManager(now=1.0)
>>> made = topics.resolve_for_send("OrderTopic", AUTO_CREATE_TOPIC_KEY_TOPIC, 4, now=2.0)
>>> made.read_queue_nums, made.write_queue_nums, perm_to_string(made.perm)
(4, 4, 'RW-')
>>> topics.ensure_dlq_topic("my-group", now=3.0).topic_name
'%DLQ%my-group'
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Final, Protocol

from rocketq.broker.configtables import StoredTable, VersionedTable
from rocketq.clock import ms
from rocketq.errors import ConfigError
from rocketq.protocol.bodies import DataVersion, TopicConfig, TopicConfigSerializeWrapper, TopicFilterType
from rocketq.protocol.topics import (
    AUTO_CREATE_TOPIC_KEY_TOPIC,
    DLQ_NUMS_PER_GROUP,
    RETRY_GROUP_TOPIC_PREFIX,
    RMQ_SYS_BENCHMARK_TOPIC,
    RMQ_SYS_OFFSET_MOVED_EVENT,
    RMQ_SYS_SCHEDULE_TOPIC,
    RMQ_SYS_SELF_TEST_TOPIC,
    RMQ_SYS_TRACE_TOPIC,
    SCHEDULE_TOPIC_QUEUE_NUM,
    STATIC_SYSTEM_TOPICS,
    SYSTEM_TOPIC_PREFIX,
    Perm,
    TopicSysFlag,
    dlq_topic,
    is_inherited,
    perm_to_string,
    reply_topic,
    retry_topic,
)

__all__ = [
    "PERM_RW",
    "MemoryTopicTable",
    "PermName",
    "TopicChange",
    "TopicConfigManager",
    "TopicConfigTable",
    "TopicManagerConfig",
    "TopicTable",
]

log = logging.getLogger(__name__)

PermName = Perm
"""RocketMQ's class name for :class:`~rocketq.protocol.topics.Perm` (``PermName.PERM_READ`` ...)."""

PERM_RW: Final = int(Perm.READ | Perm.WRITE)
"""Read and write: the perm of the topics a broker creates itself (retry, DLQ, system topics) - an
``int``, not a flag, since a topic config's JSON must carry a number."""
_INHERIT: Final = int(Perm.INHERIT)


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicManagerConfig:
    """The ``BrokerConfig`` settings the topic table depends on, with RocketMQ's defaults.

    ``broker_name`` defaults to ``broker-a`` (rocketq's CLI default; RocketMQ's is the host name).
    """

    broker_name: str = "broker-a"
    broker_cluster_name: str = "DefaultCluster"
    default_topic_queue_nums: int = 8
    """``defaultTopicQueueNums``: the queues of ``TBW102``, which caps auto-created topics."""
    auto_create_topic_enable: bool = True
    cluster_topic_enable: bool = True
    broker_topic_enable: bool = True
    trace_topic_enable: bool = False
    msg_trace_topic_name: str = RMQ_SYS_TRACE_TOPIC

    def __post_init__(self) -> None:
        # Not validated as topic names: RocketMQ accepts any broker name (its default, the host
        # name, may hold dots) and creates the same-named topic regardless.
        for what, name in (
            ("broker_name", self.broker_name),
            ("broker_cluster_name", self.broker_cluster_name),
            ("msg_trace_topic_name", self.msg_trace_topic_name),
        ):
            if not name or name.isspace():
                raise ConfigError(f"{what} must not be blank")
        if self.default_topic_queue_nums < 1:
            raise ConfigError(f"default_topic_queue_nums must be >= 1, got {self.default_topic_queue_nums}")


@dataclass(frozen=True, slots=True)
class TopicChange:
    """A change of the topic table, as passed to the ``on_change`` listener.

    ``kind`` is ``"auto-create"`` (send to an unknown topic), ``"create"`` (retry, DLQ or
    system topic on use), ``"update"`` (admin create or update), ``"delete"`` or ``"order"``.
    ``config`` is the new config (the removed one for ``"delete"``, ``None`` for ``"order"``).
    RocketMQ re-registers with the name servers at once for the first three; rocketq's broker
    may do so for every kind.
    """

    kind: str
    topic: str
    config: TopicConfig | None
    data_version: DataVersion


TopicListener = Callable[[TopicChange], None]


class TopicTable(Protocol):
    """Where the topic configs live: :class:`TopicConfigTable` (``config/topics.json``, persisted
    by the store) or :class:`MemoryTopicTable`. Every write advances ``data_version``."""

    data_version: DataVersion

    def get(self, name: str) -> TopicConfig | None: ...
    def all(self) -> dict[str, TopicConfig]: ...
    def put(self, config: TopicConfig, *, now_ms: int) -> None: ...
    def put_all(self, configs: Iterable[TopicConfig], *, now_ms: int) -> None: ...
    def delete(self, name: str, *, now_ms: int) -> TopicConfig | None: ...
    def wrapper(self) -> TopicConfigSerializeWrapper: ...
    def __contains__(self, name: object) -> bool: ...
    def __len__(self) -> int: ...


class MemoryTopicTable(VersionedTable[TopicConfig]):
    """A :class:`TopicTable` that is only kept in memory (tests, brokers without a data dir)."""

    NAMED = "topic config without a topic name"

    @staticmethod
    def name_of(config: TopicConfig) -> str | None:
        return config.topic_name

    def wrapper(self) -> TopicConfigSerializeWrapper:
        """The table and its version as RocketMQ's ``TopicConfigSerializeWrapper`` (the content of
        ``topics.json`` and the topic part of REGISTER_BROKER)."""
        with self._lock:
            return TopicConfigSerializeWrapper(
                topic_config_table=dict(self._table), data_version=self.data_version
            )


class TopicConfigTable(MemoryTopicTable, StoredTable[TopicConfig]):
    """``config/topics.json``: the topic table in a file of the store's, in RocketMQ's format
    (``TopicConfigSerializeWrapper``); hand it to :meth:`MessageStore.add_config_table
    <rocketq.store.MessageStore.add_config_table>`, which loads it and writes it when changed."""

    @staticmethod
    def unwrap(data: bytes) -> tuple[dict[str, TopicConfig], DataVersion]:
        wrapper = TopicConfigSerializeWrapper.decode(data)
        return dict(wrapper.topic_config_table), wrapper.data_version


class TopicConfigManager:
    """RocketMQ's ``TopicConfigManager``: the broker's topic table (see the module docstring)."""

    __slots__ = ("_builtins", "_config", "_listener", "_system_topics", "_table")

    def __init__(
        self,
        config: TopicManagerConfig | None = None,
        *,
        now: float,
        table: TopicTable | None = None,
        on_change: TopicListener | None = None,
    ) -> None:
        """Build the table of built-in topics over ``table``.

        Pass a :class:`TopicConfigTable` *after* its ``load()``: topics read from disk win
        over the built-in defaults (as RocketMQ's ``decode`` overrides them) and only missing
        built-ins are added. Without ``table`` the configs are kept in memory only.
        """
        self._config = cfg = config or TopicManagerConfig()
        self._listener = on_change
        self._table: TopicTable = table if table is not None else MemoryTopicTable(DataVersion(ms(now), 0))
        self._system_topics: set[str] = set(STATIC_SYSTEM_TOPICS)
        inherit, cluster_rw, broker_rw = _INHERIT, cfg.cluster_topic_enable, cfg.broker_topic_enable
        builtins = [TopicConfig(RMQ_SYS_SELF_TEST_TOPIC, 1, 1)]
        if cfg.auto_create_topic_enable:
            n = cfg.default_topic_queue_nums
            builtins.append(TopicConfig(AUTO_CREATE_TOPIC_KEY_TOPIC, n, n, inherit | PERM_RW))
        builtins += [
            TopicConfig(RMQ_SYS_BENCHMARK_TOPIC, 1024, 1024),
            TopicConfig(cfg.broker_cluster_name, 16, 16, inherit | (PERM_RW if cluster_rw else 0)),
            TopicConfig(cfg.broker_name, 1, 1, inherit | (PERM_RW if broker_rw else 0)),
            TopicConfig(RMQ_SYS_OFFSET_MOVED_EVENT, 1, 1),
            TopicConfig(RMQ_SYS_SCHEDULE_TOPIC, SCHEDULE_TOPIC_QUEUE_NUM, SCHEDULE_TOPIC_QUEUE_NUM),
        ]
        if cfg.trace_topic_enable:
            builtins.append(TopicConfig(cfg.msg_trace_topic_name, 1, 1))
        builtins.append(TopicConfig(reply_topic(cfg.broker_cluster_name), 1, 1))
        self._system_topics.update(c.topic_name or "" for c in builtins)
        self._builtins = {c.topic_name or "": c for c in builtins}
        missing = [c for c in builtins if c.topic_name not in self._table]
        if missing:
            self._table.put_all(missing, now_ms=ms(now))

    # ---------------------------------------------------------------- queries

    @property
    def config(self) -> TopicManagerConfig:
        return self._config

    @property
    def data_version(self) -> DataVersion:
        return self._table.data_version

    def select(self, topic: str) -> TopicConfig | None:
        """The topic's config, or ``None`` (``selectTopicConfig``)."""
        return self._table.get(topic)

    def __contains__(self, topic: object) -> bool:
        return topic in self._table

    def __len__(self) -> int:
        return len(self._table)

    def topics(self) -> list[str]:
        """Every topic name (GET_ALL_TOPIC_LIST / the topic list of admin tools)."""
        return list(self._table.all())

    def table(self) -> dict[str, TopicConfig]:
        """A copy of the table, topic to config."""
        return self._table.all()

    def is_system_topic(self, topic: str) -> bool:
        """``TopicValidator.isSystemTopic``: built-in topics (this broker's included) and ``rmq_sys_*``."""
        return topic in self._system_topics or topic.startswith(SYSTEM_TOPIC_PREFIX)

    def builtin(self, topic: str) -> TopicConfig | None:
        """The config this broker gives ``topic`` at start when it is one of its built-in topics."""
        return self._builtins.get(topic)

    def is_order_topic(self, topic: str) -> bool:
        config = self._table.get(topic)
        return config is not None and config.order

    # ---------------------------------------------------------------- creation on use

    def resolve_for_send(
        self,
        topic: str,
        default_topic: str,
        default_topic_queue_nums: int,
        now: float,
        *,
        unit_mode: bool = False,
        remote_addr: str = "",
    ) -> TopicConfig | None:
        """The topic part of a send's checks (``msgCheck``): the config to store under, or ``None``.

        An existing topic is returned; an unknown one is auto-created from ``default_topic``
        (:meth:`create_in_send`), and an unknown ``%RETRY%`` topic that could not be is created
        with 1 queue, perm ``RW``. ``None`` means TOPIC_NOT_EXIST. Topic validation and the
        not-allowed-send check come first and are the caller's (:func:`validate_topic`).
        """
        config = self._table.get(topic)
        if config is not None:
            return config
        sys_flag = 0
        if unit_mode:
            is_retry = topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
            sys_flag = int(TopicSysFlag.FLAG_UNIT_SUB if is_retry else TopicSysFlag.FLAG_UNIT)
        log.warning("send to unknown topic %s from %s", topic, remote_addr or "?")
        config = self.create_in_send(
            topic, default_topic, default_topic_queue_nums, sys_flag, now, remote_addr
        )
        if config is None and topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            config = self.ensure_topic(topic, 1, PERM_RW, sys_flag, now)
        return config

    def create_in_send(
        self,
        topic: str,
        default_topic: str,
        client_default_topic_queue_nums: int,
        topic_sys_flag: int,
        now: float,
        remote_addr: str = "",
    ) -> TopicConfig | None:
        """``createTopicInSendMessageMethod``: auto-create ``topic`` from ``default_topic``.

        Returns the existing or new config, or ``None`` when the default topic is missing or
        lacks ``PERM_INHERIT`` (which ``TBW102`` loses here when auto-creation is disabled).
        """
        existing = self._table.get(topic)
        if existing is not None:
            return existing
        template = self._table.get(default_topic)
        if template is None:
            log.warning(
                "cannot create topic %s for %s: default topic %s does not exist",
                topic,
                remote_addr,
                default_topic,
            )
            return None
        if (
            default_topic == AUTO_CREATE_TOPIC_KEY_TOPIC
            and not self._config.auto_create_topic_enable
            and template.perm != PERM_RW
        ):
            # As RocketMQ, the template itself is stripped of INHERIT (it was loaded from disk).
            template = replace(template, perm=PERM_RW)
            self._put(template, "update", now)
        if not is_inherited(template.perm):
            log.warning(
                "cannot create topic %s for %s: default topic %s has perm %s",
                topic,
                remote_addr,
                default_topic,
                perm_to_string(template.perm),
            )
            return None
        queue_nums = max(0, min(client_default_topic_queue_nums, template.write_queue_nums))
        config = TopicConfig(
            topic,
            queue_nums,
            queue_nums,
            template.perm & ~_INHERIT,
            template.topic_filter_type,
            topic_sys_flag,
        )
        log.info("auto-created topic %s from %s for %s", config, default_topic, remote_addr)
        self._put(config, "auto-create", now)
        return config

    def ensure_topic(
        self, topic: str, queue_nums: int, perm: int, topic_sys_flag: int, now: float
    ) -> TopicConfig:
        """``createTopicInSendMessageBackMethod``: the topic's config, created with these values
        (read = write = ``queue_nums``) if it does not exist yet."""
        existing = self._table.get(topic)
        if existing is not None:
            return existing
        config = TopicConfig(
            topic, queue_nums, queue_nums, int(perm), TopicFilterType.SINGLE_TAG, topic_sys_flag
        )
        log.info("created topic %s", config)
        self._put(config, "create", now)
        return config

    def ensure_retry_topic(
        self, group: str, retry_queue_nums: int, now: float, *, unit_mode: bool = False
    ) -> TopicConfig:
        """``%RETRY%<group>`` as a heartbeat or a send-back creates it: perm ``RW``, the group's
        ``retryQueueNums`` queues, system flag ``UNIT_SUB`` for unit-mode consumers."""
        sys_flag = TopicSysFlag.FLAG_UNIT_SUB if unit_mode else 0
        return self.ensure_topic(retry_topic(group), retry_queue_nums, PERM_RW, int(sys_flag), now)

    def ensure_dlq_topic(self, group: str, now: float) -> TopicConfig:
        """``%DLQ%<group>`` as the first dead letter creates it: 1 queue, perm ``RW``, flag 0."""
        return self.ensure_topic(dlq_topic(group), DLQ_NUMS_PER_GROUP, PERM_RW, 0, now)

    # ---------------------------------------------------------------- admin

    def update(self, config: TopicConfig, now: float) -> TopicConfig | None:
        """``updateTopicConfig`` (admin create or update): store ``config``; return the old one.

        Name checks (:func:`validate_topic`, :meth:`is_system_topic`) are the caller's, as in
        RocketMQ's admin processor.
        """
        if not config.topic_name:
            raise ConfigError(f"topic config without a topic name: {config!r}")
        old = self._table.get(config.topic_name)
        if old is None:
            log.info("created topic %s", config)
        else:
            log.info("updated topic %s (was %s)", config, old)
        self._put(config, "update", now)
        return old

    def delete(self, topic: str, now: float) -> TopicConfig | None:
        """``deleteTopicConfig``: remove ``topic``; return its config, or ``None`` if unknown."""
        old = self._table.delete(topic, now_ms=ms(now))
        if old is None:
            log.warning("cannot delete topic %s: it does not exist", topic)
            return None
        log.info("deleted topic %s", old)
        self._notify("delete", topic, old)
        return old

    def update_order_topics(self, order_topics: Iterable[str], now: float) -> bool:
        """``updateOrderTopicConfig``: set ``order`` exactly on the listed topics (the name
        server's ``ORDER_TOPIC_CONFIG`` namespace); return whether anything changed."""
        wanted = set(order_topics)
        changed = [
            replace(config, order=name in wanted)
            for name, config in self._table.all().items()
            if config.order != (name in wanted)
        ]
        if not changed:
            return False
        for config in changed:
            log.info("topic %s order=%s", config.topic_name, config.order)
        self._table.put_all(changed, now_ms=ms(now))
        self._notify("order", "", None)
        return True

    # ---------------------------------------------------------------- persistence seam

    def wrapper(self) -> TopicConfigSerializeWrapper:
        """The table and its version as RocketMQ's ``TopicConfigSerializeWrapper``: the body of
        ``topics.json`` and the topic part of REGISTER_BROKER (``.encode()`` gives the bytes)."""
        return self._table.wrapper()

    def load(self, wrapper: TopicConfigSerializeWrapper) -> None:
        """Merge a :meth:`wrapper` taken elsewhere (``TopicConfigSerializeWrapper.decode(bytes)``):
        its topics replace same-named ones and its data version becomes ours (RocketMQ's
        ``decode``). A config without a topic name is taken under its table key; a config naming
        another topic than its key is a :class:`ConfigError`, and nothing is changed."""
        for name, config in wrapper.topic_config_table.items():
            if config.topic_name and config.topic_name != name:
                raise ConfigError(f"topic config under {name!r} names {config.topic_name!r}")
        loaded = [
            config if config.topic_name == name else replace(config, topic_name=name)
            for name, config in wrapper.topic_config_table.items()
        ]
        if loaded:
            self._table.put_all(loaded, now_ms=wrapper.data_version.timestamp)
        self._table.data_version = wrapper.data_version
        log.info("loaded %d topic configs, %s", len(loaded), wrapper.data_version)

    # ---------------------------------------------------------------- internals

    def _put(self, config: TopicConfig, kind: str, now: float) -> None:
        if type(config.perm) is not int or type(config.topic_sys_flag) is not int:
            # An IntFlag would be written to JSON by its name: keep plain numbers.
            config = replace(config, perm=int(config.perm), topic_sys_flag=int(config.topic_sys_flag))
        self._table.put(config, now_ms=ms(now))
        self._notify(kind, config.topic_name or "", config)

    def _notify(self, kind: str, topic: str, config: TopicConfig | None) -> None:
        if self._listener is not None:
            try:
                self._listener(TopicChange(kind, topic, config, self._table.data_version))
            except Exception:
                log.exception("topic change listener failed on %s of %s (the change stands)", kind, topic)
