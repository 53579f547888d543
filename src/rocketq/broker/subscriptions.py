"""The broker's subscription group configs: per consumer group switches and retry settings.

RocketMQ 4.9.4's ``SubscriptionGroupManager``/``SubscriptionGroupConfig``. A group's config says
whether it may consume, how many retry queues its ``%RETRY%`` topic gets, how many times a message
is retried before the dead-letter queue, and whether its members are told when the group changes
(``notifyConsumerIdsChangedEnable``, which the consumer registry's heartbeat and unregister
transitions obey). Facts:

* built-in groups at start: ``TOOLS_CONSUMER``, ``FILTERSRV_CONSUMER``, ``SELF_TEST_C_GROUP``,
  ``CID_ONS-HTTP-PROXY``, ``CID_ONSAPI_PULL``, ``CID_ONSAPI_PERMISSION``, ``CID_ONSAPI_OWNER``, all
  with default values;
* a heartbeat (or a send-back, or a pull) looks its group up with auto-creation: an unknown group
  gets a default config when ``autoCreateSubscriptionGroup`` is on (default) or its name starts
  with ``CID_RMQ_SYS_``; otherwise the lookup finds nothing (pulls then answer
  SUBSCRIPTION_GROUP_NOT_EXIST, and the heartbeat registers without creating the retry topic);
* admin create/update/delete, and every auto-creation, advance the ``DataVersion`` and call
  the ``on_change`` listener (the store's table marks itself dirty and is flushed every 5 s).

Configs are the protocol's ``SubscriptionGroupConfig`` bodies, kept in a :class:`GroupTable`:
a :class:`SubscriptionGroupTable` (``config/subscriptionGroup.json``, which the store loads and
writes for the broker) or one in memory.
Single-threaded; ``now`` is wall-clock float seconds (the data version's time stamp).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from rocketq.broker.configtables import StoredTable, VersionedTable
from rocketq.clock import ms
from rocketq.errors import ConfigError
from rocketq.protocol.bodies import DataVersion, SubscriptionGroupConfig, SubscriptionGroupWrapper
from rocketq.protocol.topics import BUILTIN_SUBSCRIPTION_GROUPS, CID_RMQ_SYS_PREFIX

__all__ = [
    "BUILTIN_SUBSCRIPTION_GROUPS",
    "CID_RMQ_SYS_PREFIX",
    "GroupTable",
    "MemorySubscriptionGroupTable",
    "SubscriptionGroupChange",
    "SubscriptionGroupManager",
    "SubscriptionGroupTable",
    "is_sys_consumer_group",
]

log = logging.getLogger(__name__)


def is_sys_consumer_group(group: str) -> bool:
    """``MixAll.isSysConsumerGroup``: names starting with ``CID_RMQ_SYS_``."""
    return group.startswith(CID_RMQ_SYS_PREFIX)


@dataclass(frozen=True, slots=True)
class SubscriptionGroupChange:
    """A change passed to the ``on_change`` listener: ``kind`` is ``"auto-create"``, ``"update"``,
    ``"delete"`` or ``"disable"``; ``config`` the new config (the removed one for deletes)."""

    kind: str
    group: str
    config: SubscriptionGroupConfig
    data_version: DataVersion


class GroupTable(Protocol):
    """Where the configs live: :class:`SubscriptionGroupTable` (``config/subscriptionGroup.json``,
    persisted by the store) or :class:`MemorySubscriptionGroupTable`. Every write advances
    ``data_version``."""

    data_version: DataVersion

    def get(self, name: str) -> SubscriptionGroupConfig | None: ...
    def all(self) -> dict[str, SubscriptionGroupConfig]: ...
    def put(self, config: SubscriptionGroupConfig, *, now_ms: int) -> None: ...
    def delete(self, name: str, *, now_ms: int) -> SubscriptionGroupConfig | None: ...
    def wrapper(self) -> SubscriptionGroupWrapper: ...
    def __contains__(self, name: object) -> bool: ...
    def __len__(self) -> int: ...


class MemorySubscriptionGroupTable(VersionedTable[SubscriptionGroupConfig]):
    """A :class:`GroupTable` kept in memory only."""

    NAMED = "subscription group config without a group name"

    @staticmethod
    def name_of(config: SubscriptionGroupConfig) -> str | None:
        return config.group_name

    def wrapper(self) -> SubscriptionGroupWrapper:
        """The table and its version as RocketMQ's ``SubscriptionGroupWrapper``: the body of
        GET_ALL_SUBSCRIPTIONGROUP_CONFIG and the content of ``subscriptionGroup.json``."""
        with self._lock:
            return SubscriptionGroupWrapper(
                subscription_group_table=dict(self._table), data_version=self.data_version
            )


class SubscriptionGroupTable(MemorySubscriptionGroupTable, StoredTable[SubscriptionGroupConfig]):
    """``config/subscriptionGroup.json``: the group table in a file of the store's, in RocketMQ's
    format (``SubscriptionGroupWrapper``); hand it to :meth:`MessageStore.add_config_table
    <rocketq.store.MessageStore.add_config_table>`, which loads it and writes it when changed."""

    @staticmethod
    def unwrap(data: bytes) -> tuple[dict[str, SubscriptionGroupConfig], DataVersion]:
        wrapper = SubscriptionGroupWrapper.decode(data)
        return dict(wrapper.subscription_group_table), wrapper.data_version


class SubscriptionGroupManager:
    """RocketMQ's ``SubscriptionGroupManager`` over a :class:`GroupTable`."""

    __slots__ = ("_auto_create", "_listener", "_table")

    def __init__(
        self,
        *,
        now: float,
        auto_create_subscription_group: bool = True,
        table: GroupTable | None = None,
        on_change: Callable[[SubscriptionGroupChange], None] | None = None,
    ) -> None:
        """``auto_create_subscription_group`` is ``BrokerConfig.autoCreateSubscriptionGroup`` (on).

        Pass a :class:`SubscriptionGroupTable` after its ``load()``: groups read from disk win
        over the built-in defaults and only missing built-ins are added. Without ``table``, memory only.
        """
        self._auto_create = auto_create_subscription_group
        self._listener = on_change
        self._table: GroupTable = (
            table if table is not None else MemorySubscriptionGroupTable(DataVersion(timestamp=ms(now)))
        )
        for name in BUILTIN_SUBSCRIPTION_GROUPS:
            if name not in self._table:
                self._table.put(SubscriptionGroupConfig(group_name=name), now_ms=ms(now))

    @property
    def data_version(self) -> DataVersion:
        return self._table.data_version

    def get(self, group: str) -> SubscriptionGroupConfig | None:
        """The group's config, without creating it."""
        return self._table.get(group)

    def find(self, group: str, now: float) -> SubscriptionGroupConfig | None:
        """``findSubscriptionGroupConfig``: the group's config, auto-created if allowed, else ``None``.

        A nameless group (a request's empty ``consumerGroup``, a send to ``%RETRY%``) is never
        created: the store cannot keep it, and the caller answers as for a group that does not
        exist."""
        config = self._table.get(group)
        if config is None and group and (self._auto_create or is_sys_consumer_group(group)):
            config = SubscriptionGroupConfig(group_name=group)
            log.info("auto-created subscription group %s", group)
            self._put("auto-create", group, config, now)
        return config

    def notify_enabled(self, group: str) -> bool:
        """The group's ``notifyConsumerIdsChangedEnable``; ``True`` for a group without a config,
        as RocketMQ's heartbeat assumes."""
        config = self._table.get(group)
        return True if config is None else config.notify_consumer_ids_changed_enable

    def groups(self) -> list[str]:
        return list(self._table.all())

    def table(self) -> dict[str, SubscriptionGroupConfig]:
        return self._table.all()

    def __contains__(self, group: object) -> bool:
        return group in self._table

    def __len__(self) -> int:
        return len(self._table)

    def update(self, config: SubscriptionGroupConfig, now: float) -> SubscriptionGroupConfig | None:
        """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: store ``config``; return the old one."""
        if not config.group_name:
            raise ConfigError(f"subscription group config without a group name: {config!r}")
        old = self._table.get(config.group_name)
        log.info("%s subscription group %s", "created" if old is None else "updated", config)
        self._put("update", config.group_name, config, now)
        return old

    def disable_consume(self, group: str, now: float) -> bool:
        """``disableConsume``: turn ``consume_enable`` off; ``False`` if the group is unknown."""
        old = self._table.get(group)
        if old is None:
            return False
        self._put("disable", group, replace(old, consume_enable=False), now)
        return True

    def delete(self, group: str, now: float) -> SubscriptionGroupConfig | None:
        """DELETE_SUBSCRIPTIONGROUP: remove the group's config; return it, or ``None`` if unknown."""
        old = self._table.delete(group, now_ms=ms(now))
        if old is None:
            log.warning("cannot delete subscription group %s: it does not exist", group)
            return None
        log.info("deleted subscription group %s", group)
        self._notify("delete", group, old)
        return old

    def wrapper(self) -> SubscriptionGroupWrapper:
        """The table and its version as RocketMQ's ``SubscriptionGroupWrapper``: the body of
        GET_ALL_SUBSCRIPTIONGROUP_CONFIG (and the content of ``subscriptionGroup.json``)."""
        return self._table.wrapper()

    def load(self, wrapper: SubscriptionGroupWrapper) -> None:
        """Merge a :meth:`wrapper` taken elsewhere: its groups replace same-named ones and its
        data version becomes ours. A config without a group name is taken under its table key;
        :class:`ConfigError` (changing nothing) if a config names another group."""
        for name, config in wrapper.subscription_group_table.items():
            if config.group_name and config.group_name != name:
                raise ConfigError(f"subscription group config under {name!r} names {config.group_name!r}")
        for name, config in wrapper.subscription_group_table.items():
            named = config if config.group_name == name else replace(config, group_name=name)
            self._table.put(named, now_ms=wrapper.data_version.timestamp)
        self._table.data_version = wrapper.data_version

    def _put(self, kind: str, group: str, config: SubscriptionGroupConfig, now: float) -> None:
        self._table.put(config, now_ms=ms(now))
        self._notify(kind, group, config)

    def _notify(self, kind: str, group: str, config: SubscriptionGroupConfig) -> None:
        if self._listener is not None:
            try:
                self._listener(SubscriptionGroupChange(kind, group, config, self._table.data_version))
            except Exception:
                log.exception("subscription group listener failed on %s of %s", kind, group)
