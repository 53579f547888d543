"""What the admin reads of each broker: its runtime table, topic and group configs, the groups
it knows, producer connections and duplicate client ids (the dashboard's and the exporter's
views of a broker; RocketMQ Dashboard's and rocketmq-exporter's), and its ACL accounts."""

from __future__ import annotations

from rocketq.admin.monitoring import BrokerRuntime
from rocketq.admin.transport import AdminTransport
from rocketq.errors import ConfigError
from rocketq.models import DuplicateClientId
from rocketq.protocol import calls
from rocketq.protocol.acl import ClusterAclConfig, get_broker_cluster_acl_config
from rocketq.protocol.bodies import (
    ProducerConnection,
    SubscriptionGroupConfig,
    TopicConfig,
)

__all__ = ["BrokerAdmin"]


class BrokerAdmin(AdminTransport):
    """Per-broker tables (see the module docstring)."""

    async def _broker_name_of(self, addr: str) -> str:
        info = await self.cluster_info()
        for name, bd in info.broker_addr_table.items():
            if addr in bd.broker_addrs.values():
                return name
        raise ConfigError(f"no broker at {addr} is registered with the name server")

    async def broker_runtime(self, addr: str) -> BrokerRuntime:
        """GET_BROKER_RUNTIME_INFO of the broker at ``addr``."""
        return BrokerRuntime(addr, await self._call(addr, calls.get_broker_runtime_info()))

    async def topic_configs(self, addr: str) -> dict[str, TopicConfig]:
        """Every topic the broker at ``addr`` holds, with its queue counts (GET_ALL_TOPIC_CONFIG)."""
        table = (await self._call(addr, calls.get_all_topic_config())).topic_config_table
        return dict(sorted(table.items()))

    async def group_configs(self, addr: str) -> dict[str, SubscriptionGroupConfig]:
        """Every consumer group the broker at ``addr`` has a config for (a broker makes one when
        a group first connects), GET_ALL_SUBSCRIPTIONGROUP_CONFIG."""
        wrapper = await self._call(addr, calls.get_all_subscription_group_config())
        return dict(sorted(wrapper.subscription_group_table.items()))

    async def consumer_groups(self) -> list[str]:
        """Every consumer group any master broker knows, sorted (built-in groups included)."""
        names: set[str] = set()
        for addr in (await self.master_addrs()).values():
            names.update(await self.group_configs(addr))
        return sorted(names)

    async def producer_connections(self, group: str) -> dict[str, ProducerConnection]:
        """GET_PRODUCER_CONNECTION_LIST from every master that has the producer group online, by address."""
        out: dict[str, ProducerConnection] = {}
        for addr in (await self.master_addrs()).values():
            found = await self._call(addr, calls.get_producer_connection_list(group))
            if found is not None:
                out[addr] = found
        return out

    async def duplicate_client_ids(self, group: str | None = None) -> list[DuplicateClientId]:
        """Client ids registered by several live connections, from every broker (rocketq's brokers
        answer request 10901; a broker without it is skipped)."""
        out: list[DuplicateClientId] = []
        for addr in (await self.master_addrs()).values():
            found = await self._call(addr, calls.query_duplicate_client_ids(addr, group))
            out.extend(found or ())  # None: a broker without the request
        return out

    async def acl_config(self, addr: str) -> ClusterAclConfig:
        """The ACL white list and accounts of the broker at ``addr``, secret keys included
        (GET_BROKER_CLUSTER_ACL_CONFIG, ``mqadmin getAccessConfigSubCommand``; rocketq's broker
        answers it to an admin account only)."""
        return await self._call(addr, get_broker_cluster_acl_config())
