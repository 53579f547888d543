"""What the admin reads of each broker: its runtime table, topic and group configs, the groups
it knows, producer connections and duplicate client ids (the dashboard's and the exporter's
views of a broker; RocketMQ Dashboard's and rocketmq-exporter's), and its ACL accounts."""

from __future__ import annotations

import asyncio
from collections.abc import Collection

from rocketq.admin.monitoring import BrokerRuntime, SlaveLag
from rocketq.admin.transport import AdminTransport
from rocketq.client.validators import check_group
from rocketq.errors import ConfigError, RocketQError
from rocketq.models import DuplicateClientId
from rocketq.protocol import calls
from rocketq.protocol.acl import ClusterAclConfig, get_broker_cluster_acl_config
from rocketq.protocol.bodies import (
    ClusterInfo,
    ProducerConnection,
    SubscriptionGroupConfig,
    TopicConfig,
)
from rocketq.protocol.calls import Call, check
from rocketq.protocol.codes import MASTER_ID, RequestCode
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import DeleteSubscriptionGroupRequestHeader

__all__ = ["BrokerAdmin"]


def _ok(response: RemotingCommand) -> None:
    check(response)


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

    async def slave_lags(self, broker_names: Collection[str] | None = None) -> list[SlaveLag]:
        """Every slave (of ``broker_names``, or of every broker) with its lag behind its master
        in bytes and seconds (:class:`SlaveLag`), sorted by broker name and id; the two runtime
        tables of a pair are read at once. A broker that does not answer gives a lag of
        ``None`` with the error."""
        info = await self.cluster_info()
        pairs = [
            (name, bid, addr, bd.broker_addrs.get(MASTER_ID))
            for name, bd in sorted(info.broker_addr_table.items())
            if broker_names is None or name in broker_names
            for bid, addr in sorted(bd.broker_addrs.items())
            if bid != MASTER_ID
        ]

        async def one(name: str, bid: int, addr: str, master: str | None) -> SlaveLag:
            if master is None:
                return SlaveLag(name, bid, addr, None, None, None, "no master registered")
            try:
                m, s = await asyncio.gather(self.broker_runtime(master), self.broker_runtime(addr))
            except RocketQError as exc:
                return SlaveLag(name, bid, addr, master, None, None, str(exc))
            return SlaveLag.between(name, bid, m, s)

        return list(await asyncio.gather(*(one(*p) for p in pairs)))

    async def topic_configs(self, addr: str) -> dict[str, TopicConfig]:
        """Every topic the broker at ``addr`` holds, with its queue counts (GET_ALL_TOPIC_CONFIG)."""
        table = (await self._call(addr, calls.get_all_topic_config())).topic_config_table
        return dict(sorted(table.items()))

    async def group_configs(self, addr: str) -> dict[str, SubscriptionGroupConfig]:
        """Every consumer group the broker at ``addr`` has a config for (a broker makes one when
        a group first connects), GET_ALL_SUBSCRIPTIONGROUP_CONFIG."""
        wrapper = await self._call(addr, calls.get_all_subscription_group_config())
        return dict(sorted(wrapper.subscription_group_table.items()))

    async def cluster_info_from(self, addr: str) -> ClusterInfo:
        """GET_BROKER_CLUSTER_INFO of the one name server at ``addr`` (the dashboard asks each in
        turn to say which of them answers)."""
        return await self._call(addr, calls.get_broker_cluster_info(), "name server")

    async def broker_config(self, addr: str) -> dict[str, str]:
        """The settings of the broker at ``addr``, name to text, as ``mqadmin getBrokerConfig``
        prints them (GET_BROKER_CONFIG: ``name=value`` lines)."""

        def parse(response: RemotingCommand) -> dict[str, str]:
            text = check(response).body.decode("utf-8", "replace")
            pairs = (line.partition("=") for line in text.splitlines() if "=" in line)
            return {k.strip(): v.strip() for k, _, v in pairs}

        request = RemotingCommand.request(RequestCode.GET_BROKER_CONFIG)
        return dict(sorted((await self._call(addr, Call(request, parse, "broker config"))).items()))

    async def _chosen_masters(self, brokers: Collection[str] | None) -> dict[str, str]:
        """Every master (``None``), or the masters of the broker names given (an unknown name is
        a ConfigError before anything is sent)."""
        masters = await self.master_addrs()
        if brokers is None:
            return masters
        unknown = sorted(set(brokers) - set(masters))
        if unknown or not brokers:
            known = ", ".join(masters) or "none"
            raise ConfigError(
                f"no master broker named {', '.join(unknown) or '(none given)'} (known: {known})"
            )
        return {name: addr for name, addr in masters.items() if name in brokers}

    async def update_group_config(
        self, config: SubscriptionGroupConfig, *, brokers: Collection[str] | None = None
    ) -> list[str]:
        """Create or replace a consumer group's settings (retry queues and times, broadcast,
        consume from min, ...) on every master broker, or on the masters of ``brokers`` (names)
        (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, as ``mqadmin updateSubGroup -c`` / ``-b``); the
        brokers' names, sorted."""
        if not config.group_name:
            raise ConfigError("a group's settings need its name")
        check_group(config.group_name)
        if not 0 <= config.retry_max_times <= 10_000 or not 0 <= config.retry_queue_nums <= 1024:
            raise ConfigError("retry times must be 0..10000 and retry queues 0..1024")
        masters = await self._chosen_masters(brokers)
        for addr in masters.values():
            request = RemotingCommand.request(
                RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=config.encode()
            )
            await self._call(addr, Call(request, _ok, f"update of group {config.group_name}"))
        return sorted(masters)

    async def delete_group_config(
        self, group: str, *, remove_offsets: bool = False, brokers: Collection[str] | None = None
    ) -> list[str]:
        """Delete a consumer group's settings (and, with ``remove_offsets``, its committed
        offsets) on every master broker, or on the masters of ``brokers`` (names)
        (DELETE_SUBSCRIPTIONGROUP, ``mqadmin deleteSubGroup``); the brokers' names. A group that
        still has members gets its settings back at their next heartbeat when the broker creates
        groups on demand."""
        check_group(group)
        header = DeleteSubscriptionGroupRequestHeader(group_name=group, remove_offset=remove_offsets)
        masters = await self._chosen_masters(brokers)
        for addr in masters.values():
            request = RemotingCommand.request(RequestCode.DELETE_SUBSCRIPTIONGROUP, header.to_ext_fields())
            await self._call(addr, Call(request, _ok, f"delete of group {group}"))
        return sorted(masters)

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
