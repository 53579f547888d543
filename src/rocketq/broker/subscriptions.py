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
  the ``on_change`` listener (wired to persistence by the broker).

Configs are the protocol's ``SubscriptionGroupConfig`` bodies. Persistence seam as for topics:
:meth:`SubscriptionGroupManager.wrapper` gives RocketMQ's ``SubscriptionGroupWrapper`` (the content
of ``subscriptionGroup.json``) and :meth:`SubscriptionGroupManager.load` merges one back.
Single-threaded; ``now`` is wall-clock float seconds (the data version's time stamp).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace

from rocketq.errors import ConfigError
from rocketq.protocol.bodies import DataVersion, SubscriptionGroupConfig, SubscriptionGroupWrapper

__all__ = [
    "BUILTIN_SUBSCRIPTION_GROUPS",
    "CID_RMQ_SYS_PREFIX",
    "SubscriptionGroupChange",
    "SubscriptionGroupManager",
    "is_sys_consumer_group",
]

log = logging.getLogger(__name__)

CID_RMQ_SYS_PREFIX = "CID_RMQ_SYS_"
BUILTIN_SUBSCRIPTION_GROUPS = (
    "TOOLS_CONSUMER",
    "FILTERSRV_CONSUMER",
    "SELF_TEST_C_GROUP",
    "CID_ONS-HTTP-PROXY",
    "CID_ONSAPI_PULL",
    "CID_ONSAPI_PERMISSION",
    "CID_ONSAPI_OWNER",
)
"""Groups RocketMQ's ``SubscriptionGroupManager`` creates at start (``MixAll`` names)."""


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


class SubscriptionGroupManager:
    """RocketMQ's ``SubscriptionGroupManager`` as in-memory state (see the module docstring)."""

    __slots__ = ("_auto_create", "_listener", "_table", "_version")

    def __init__(
        self,
        *,
        now: float,
        auto_create_subscription_group: bool = True,
        on_change: Callable[[SubscriptionGroupChange], None] | None = None,
    ) -> None:
        """``auto_create_subscription_group`` is ``BrokerConfig.autoCreateSubscriptionGroup`` (on)."""
        self._auto_create = auto_create_subscription_group
        self._listener = on_change
        self._version = DataVersion(timestamp=int(now * 1000), counter=0)
        self._table = {name: SubscriptionGroupConfig(group_name=name) for name in BUILTIN_SUBSCRIPTION_GROUPS}

    @property
    def data_version(self) -> DataVersion:
        return self._version

    def get(self, group: str) -> SubscriptionGroupConfig | None:
        """The group's config, without creating it."""
        return self._table.get(group)

    def find(self, group: str, now: float) -> SubscriptionGroupConfig | None:
        """``findSubscriptionGroupConfig``: the group's config, auto-created if allowed, else ``None``."""
        config = self._table.get(group)
        if config is None and (self._auto_create or is_sys_consumer_group(group)):
            config = SubscriptionGroupConfig(group_name=group)
            self._table[group] = config
            log.info("auto-created subscription group %s", group)
            self._changed("auto-create", group, config, now)
        return config

    def notify_enabled(self, group: str) -> bool:
        """The group's ``notifyConsumerIdsChangedEnable``; ``True`` for a group without a config,
        as RocketMQ's heartbeat assumes."""
        config = self._table.get(group)
        return True if config is None else config.notify_consumer_ids_changed_enable

    def groups(self) -> list[str]:
        return list(self._table)

    def table(self) -> dict[str, SubscriptionGroupConfig]:
        return dict(self._table)

    def __contains__(self, group: object) -> bool:
        return group in self._table

    def __len__(self) -> int:
        return len(self._table)

    def update(self, config: SubscriptionGroupConfig, now: float) -> SubscriptionGroupConfig | None:
        """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: store ``config``; return the old one."""
        if not config.group_name:
            raise ConfigError(f"subscription group config without a group name: {config!r}")
        old = self._table.get(config.group_name)
        self._table[config.group_name] = config
        log.info("%s subscription group %s", "created" if old is None else "updated", config)
        self._changed("update", config.group_name, config, now)
        return old

    def disable_consume(self, group: str, now: float) -> bool:
        """``disableConsume``: turn ``consume_enable`` off; ``False`` if the group is unknown."""
        old = self._table.get(group)
        if old is None:
            return False
        config = replace(old, consume_enable=False)
        self._table[group] = config
        self._changed("disable", group, config, now)
        return True

    def delete(self, group: str, now: float) -> SubscriptionGroupConfig | None:
        """DELETE_SUBSCRIPTIONGROUP: remove the group's config; return it, or ``None`` if unknown."""
        old = self._table.pop(group, None)
        if old is None:
            log.warning("cannot delete subscription group %s: it does not exist", group)
            return None
        log.info("deleted subscription group %s", group)
        self._changed("delete", group, old, now)
        return old

    def wrapper(self) -> SubscriptionGroupWrapper:
        """The table and its version as RocketMQ's ``SubscriptionGroupWrapper``: the body of
        ``subscriptionGroup.json`` and of GET_ALL_SUBSCRIPTIONGROUP_CONFIG."""
        return SubscriptionGroupWrapper(
            subscription_group_table=dict(self._table), data_version=self._version
        )

    def load(self, wrapper: SubscriptionGroupWrapper) -> None:
        """Merge a persisted :meth:`wrapper`: its groups replace same-named ones and its data
        version becomes ours. A config without a group name is taken under its table key;
        :class:`ConfigError` (changing nothing) if a config names another group."""
        for name, config in wrapper.subscription_group_table.items():
            if config.group_name and config.group_name != name:
                raise ConfigError(f"subscription group config under {name!r} names {config.group_name!r}")
        self._table.update(
            (name, config if config.group_name == name else replace(config, group_name=name))
            for name, config in wrapper.subscription_group_table.items()
        )
        self._version = wrapper.data_version

    def _changed(self, kind: str, group: str, config: SubscriptionGroupConfig, now: float) -> None:
        self._version = self._version.next_version(int(now * 1000))
        if self._listener is not None:
            try:
                self._listener(SubscriptionGroupChange(kind, group, config, self._version))
            except Exception:
                log.exception("subscription group listener failed on %s of %s", kind, group)
