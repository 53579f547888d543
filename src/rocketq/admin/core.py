"""The admin calls themselves: :class:`AsyncAdmin`, on the caller's event loop over the client
layer's :class:`~rocketq.client.api.ClientAPI`."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import TracebackType

from rocketq.allocate import get_strategy, plan
from rocketq.client.api import ClientAPI
from rocketq.client.config import resolve_namesrv
from rocketq.client.consumer.selector import MessageSelector, subscription_of
from rocketq.client.routes import subscribe_info_from_route
from rocketq.client.trace import CLIENT_ID_PROPERTY
from rocketq.client.validators import check_group, check_topic
from rocketq.errors import (
    BrokerError,
    ConfigError,
    ConsumerNotOnlineError,
    RemoteProtocolError,
    RemotingConnectError,
    RemotingTimeoutError,
    RocketQError,
    TopicExistsError,
    UnknownGroupError,
    UnknownTopicError,
)
from rocketq.models import DuplicateClientId, MessageQueue, PullStatus
from rocketq.protocol import calls
from rocketq.protocol.bodies import (
    ClusterInfo,
    Connection,
    ConsumerConnection,
    ConsumerRunningInfo,
    ProducerConnection,
    QueueData,
    SubscriptionGroupConfig,
    TopicConfig,
    TopicRouteData,
)
from rocketq.protocol.calls import Call
from rocketq.protocol.codes import MASTER_ID, PullSysFlag
from rocketq.protocol.headers import PullMessageRequestHeader
from rocketq.protocol.message import MessageExt, decode_messages
from rocketq.protocol.message_id import parse_offset_msg_id, parse_uniq_id
from rocketq.protocol.topics import Perm, is_retry_or_dlq_topic, is_system_topic, retry_topic
from rocketq.protocol.trace import (
    RMQ_SYS_TRACE_TOPIC,
    TraceContext,
    decode_trace,
)
from rocketq.remoting.client import RemotingClient
from rocketq.remoting.config import RemotingClientConfig

from .guard import check_system_topic, topic_changes
from .monitoring import TOOLS_CONSUMER_GROUP, BrokerRuntime, MessageTrace, QueueRead, trace_events
from .values import (
    _FIRST,
    _JAVA_LONG_MAX,
    _LAST,
    ORDER_TOPIC_CONFIG,
    GroupMember,
    GroupMembers,
    GroupProgress,
    QueueProgress,
    QueueSource,
    ResetResult,
    T,
    TopicQueueStats,
    TopicStats,
    parse_reset_target,
)

logger = logging.getLogger(__name__)

_INHERIT = int(Perm.INHERIT)

# ------------------------------------------------------------------------------------ the core


def _refused(exc: BrokerError, what: str) -> BrokerError:
    """The same refusal, its message saying what was refused where (the CLI prints that line)."""
    return BrokerError.for_code(exc.code, f"{what}: {exc.remark or 'no reason given'}")


class AsyncAdmin:
    """Admin calls on the caller's event loop (see the module docstring).

    ``namesrv`` is RocketMQ's ``;``-separated list (else ``$NAMESRV_ADDR``, else
    ``127.0.0.1:9876``); ``timeout`` bounds each request (``timeoutMillis`` 5000 in ``mqadmin``).
    Use as ``async with AsyncAdmin(...) as admin`` or call :meth:`close`.
    """

    def __init__(self, namesrv: str | None = None, *, timeout: float = 5.0) -> None:
        self.namesrv_addrs = resolve_namesrv(namesrv)
        self.timeout = timeout
        self._remoting: RemotingClient | None = None
        self._api: ClientAPI | None = None

    @property
    def api(self) -> ClientAPI:
        """The client layer's API over this admin's connections (made on first use)."""
        if self._api is None:
            self._remoting = RemotingClient(config=RemotingClientConfig(request_timeout=self.timeout))
            self._api = ClientAPI(self._remoting, self.namesrv_addrs, timeout=self.timeout)
        return self._api

    async def close(self) -> None:
        if self._remoting is not None:
            await self._remoting.close()
        self._remoting = self._api = None

    async def __aenter__(self) -> AsyncAdmin:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # -------------------------------------------------------------- transport

    @contextmanager
    def _namesrv_failures(self) -> Iterator[None]:
        """A name server that cannot be reached or did not answer: the error names them all."""
        try:
            yield
        except RemotingConnectError as exc:
            raise RemotingConnectError(f"cannot reach name server {';'.join(self.namesrv_addrs)}") from exc
        except RemotingTimeoutError as exc:
            raise RemotingTimeoutError(
                f"name server {';'.join(self.namesrv_addrs)} did not answer: {_reason(exc)}"
            ) from exc

    async def _namesrv(self, make: Callable[[], Call[T]]) -> T:
        """Ask the name servers in turn until one answers."""
        try:
            with self._namesrv_failures():
                return await self.api.call_namesrv(make, self.timeout)
        except BrokerError as exc:
            raise _refused(exc, make().what) from None

    async def _all_namesrv(self, make: Callable[[], Call[None]]) -> None:
        """Send to every name server; each must answer SUCCESS."""
        for addr in self.namesrv_addrs:
            await self._call(addr, make(), "name server")

    async def _call(self, addr: str, call: Call[T], kind: str = "broker") -> T:
        """Run ``call`` at ``addr``: a connection failure names the ``kind`` of server, a refusal
        says what was refused where."""
        try:
            return await self.api.call(addr, call, self.timeout)
        except RemotingConnectError as exc:
            raise RemotingConnectError(f"cannot reach {kind} {addr}: {_reason(exc)}") from exc
        except BrokerError as exc:
            raise _refused(exc, f"{call.what} on {addr}") from None
        except RemotingTimeoutError as exc:
            raise RemotingTimeoutError(f"{kind} {addr} did not answer: {_reason(exc)}") from exc

    async def _get_route(self, topic: str) -> TopicRouteData | None:
        with self._namesrv_failures():
            return await self.api.get_topic_route(topic, self.timeout)

    # -------------------------------------------------------------- cluster

    async def cluster_info(self) -> ClusterInfo:
        """Brokers by name and broker names by cluster (GET_BROKER_CLUSTER_INFO)."""
        return await self._namesrv(calls.get_broker_cluster_info)

    async def master_addrs(self, cluster: str | None = None) -> dict[str, str]:
        """``{broker name: master address}`` of one cluster (all clusters when ``None``), sorted."""
        info = await self.cluster_info()
        if cluster is not None:
            if cluster not in info.cluster_addr_table:
                known = ", ".join(sorted(info.cluster_addr_table)) or "none"
                raise ConfigError(f"no cluster named {cluster!r} in the name server (known: {known})")
            names: Iterable[str] = info.cluster_addr_table[cluster]
        else:
            names = info.broker_addr_table
        out: dict[str, str] = {}
        for name in sorted(names):
            bd = info.broker_addr_table.get(name)
            if bd is not None and MASTER_ID in bd.broker_addrs:
                out[name] = bd.broker_addrs[MASTER_ID]
        return out

    async def _broker_name_of(self, addr: str) -> str:
        info = await self.cluster_info()
        for name, bd in info.broker_addr_table.items():
            if addr in bd.broker_addrs.values():
                return name
        raise ConfigError(f"no broker at {addr} is registered with the name server")

    # -------------------------------------------------------------- topics

    async def topic_list(self) -> list[str]:
        """Every topic the name server knows, sorted."""
        return await self._namesrv(calls.get_all_topic_list)

    async def topic_route(self, topic: str) -> TopicRouteData:
        """The topic's route; :class:`UnknownTopicError` when the name server has none."""
        route = await self._get_route(topic)
        if route is None:
            raise UnknownTopicError(f"topic {topic} does not exist (the name server has no route for it)")
        return route

    async def topic_stats(self, topic: str) -> TopicStats:
        """Per queue min/max offset and last store time, from every broker of the route."""
        route = await self.topic_route(topic)
        queues: list[TopicQueueStats] = []
        for bd in route.broker_datas:
            addr = bd.broker_addrs.get(MASTER_ID)
            if addr is None:
                continue
            stats = await self._call(addr, calls.get_topic_stats_info(topic))
            if stats is None:  # this broker does not hold the topic
                continue
            table = stats.offset_table
            queues.extend(
                TopicQueueStats(mq, o.min_offset, o.max_offset, o.last_update_timestamp)
                for mq, o in table.items()
            )
        return TopicStats(topic, tuple(sorted(queues, key=lambda q: q.queue)))

    async def create_topic(
        self,
        topic: str,
        *,
        queues: int | None = None,
        read_queues: int | None = None,
        write_queues: int | None = None,
        perm: int = 6,
        order: bool = False,
        broker: str | None = None,
        cluster: str | None = None,
        wait: float = 5.0,
        update: bool = False,
        force_system_topic: str | None = None,
    ) -> dict[str, str]:
        """Create ``topic`` on one broker (``broker`` address), every master of a cluster, or —
        when neither is given — every master of the only cluster.

        ``queues`` sets both queue counts; ``read_queues``/``write_queues`` override one of them.
        Returns ``{broker name: address}`` of the brokers written. Waits up to ``wait`` seconds
        for the name server's route to show the change.

        A topic that exists on a broker written is not changed: :class:`TopicExistsError` says
        what would change (the same settings again change nothing and are no error), unless
        ``update`` is true. A system topic (:func:`~rocketq.admin.guard.is_protected_topic`) is
        not written unless ``force_system_topic`` names it: :class:`SystemTopicError`.
        """
        read = read_queues if read_queues is not None else queues
        write = write_queues if write_queues is not None else queues
        if read is None or write is None:
            raise ConfigError("say how many queues: queues, or both read_queues and write_queues")
        _check_topic_args(topic, read, write, perm)
        targets = await self._targets(broker, cluster)
        forced = await self._check_system_topic(topic, "create", force_system_topic)
        route = await self._get_route(topic)
        held = {qd.broker_name: qd for qd in route.queue_datas if qd.broker_name} if route else {}
        existing = {name: held[name] for name in targets if name in held}
        write_to = targets
        if existing:
            changes = topic_changes(existing, read=read, write=write, perm=perm)
            if order and await self.order_conf(topic) is None:
                changes.append("it becomes an ordered topic")
            if changes and not update:
                raise TopicExistsError(
                    f"topic {topic} exists ({_counts(existing)}); not changed. An update would change "
                    + "; ".join(changes),
                    tuple(changes),
                )
            if not changes:  # the same settings again: nothing to write where it is
                write_to = {n: a for n, a in targets.items() if n not in existing}
                if not write_to:
                    return targets
        for name, addr in write_to.items():
            await self._update_topic_config(addr, topic, read, write, perm, order, forced)
            logger.info(
                "topic %s: %d read / %d write queues, perm %d on %s (%s)",
                topic,
                read,
                write,
                perm,
                name,
                addr,
            )
        if order:
            await self._set_order_conf(topic, dict.fromkeys(targets, write), merge=broker is not None)
        await self._await_route(topic, dict.fromkeys(targets, (read, write, perm)), wait)
        return targets

    async def update_topic(
        self,
        topic: str,
        *,
        queues: int | None = None,
        read_queues: int | None = None,
        write_queues: int | None = None,
        perm: int | None = None,
        order: bool | None = None,
        broker: str | None = None,
        cluster: str | None = None,
        wait: float = 5.0,
        force_system_topic: str | None = None,
    ) -> dict[str, str]:
        """Change an existing topic on the brokers that hold it (or one broker / one cluster's
        masters); what is not given keeps each broker's current value from the route. A system
        topic is not changed unless ``force_system_topic`` names it (:class:`SystemTopicError`)."""
        route = await self.topic_route(topic)
        forced = await self._check_system_topic(topic, "change", force_system_topic)
        current = {qd.broker_name: qd for qd in route.queue_datas if qd.broker_name is not None}
        if broker is not None or cluster is not None:
            targets = await self._targets(broker, cluster)
        else:
            masters = {bd.broker_name: bd.broker_addrs.get(MASTER_ID) for bd in route.broker_datas}
            targets = {n: a for n, a in sorted(masters.items()) if n is not None and a is not None}
        expect: dict[str, tuple[int, int, int]] = {}
        is_order = order if order is not None else await self.order_conf(topic) is not None
        for name, addr in targets.items():
            qd = current.get(name)
            read = read_queues if read_queues is not None else queues
            write = write_queues if write_queues is not None else queues
            read = read if read is not None else (qd.read_queue_nums if qd else None)
            write = write if write is not None else (qd.write_queue_nums if qd else None)
            if read is None or write is None:
                raise ConfigError(f"topic {topic} is not on broker {name}: say how many queues it gets there")
            p = perm if perm is not None else (qd.perm if qd else 6)
            _check_topic_args(topic, read, write, p)
            await self._update_topic_config(addr, topic, read, write, p, is_order, forced)
            expect[name] = (read, write, p)
        if order:
            await self._set_order_conf(topic, {n: expect[n][1] for n in targets}, merge=broker is not None)
        elif order is False and await self.order_conf(topic) is not None:
            await self._delete_order_conf(topic)
        await self._await_route(topic, expect, wait)
        return targets

    async def delete_topic(
        self, topic: str, *, cluster: str | None = None, force_system_topic: str | None = None
    ) -> dict[str, str]:
        """Delete ``topic`` in its brokers (every broker of ``cluster`` when given), then in every
        name server, as ``mqadmin deleteTopic`` does; returns the brokers it was deleted from.
        A system topic is not deleted unless ``force_system_topic`` names it (:class:`SystemTopicError`)."""
        forced = await self._check_system_topic(topic, "delete", force_system_topic)
        if cluster is not None:
            info = await self.cluster_info()
            if cluster not in info.cluster_addr_table:
                raise ConfigError(f"no cluster named {cluster!r} in the name server")
            datas = [info.broker_addr_table[n] for n in sorted(info.cluster_addr_table[cluster])]
            brokers = {
                f"{bd.broker_name}/{bid}": a for bd in datas for bid, a in sorted(bd.broker_addrs.items())
            }
        else:
            route = await self.topic_route(topic)
            brokers = {
                f"{bd.broker_name}/{bid}": a
                for bd in sorted(route.broker_datas, key=lambda b: b.broker_name or "")
                for bid, a in sorted(bd.broker_addrs.items())
            }
        for addr in brokers.values():
            await self._call(addr, calls.delete_topic_in_broker(topic, force_system_topic=forced))
        await self._all_namesrv(lambda: calls.delete_topic_in_namesrv(topic, cluster=cluster))
        await self._delete_order_conf(topic)
        return brokers

    async def _check_system_topic(self, topic: str, doing: str, force: str | None) -> bool:
        """:func:`~rocketq.admin.guard.check_system_topic` with the cluster's and brokers' names."""
        info = await self.cluster_info()
        return check_system_topic(
            topic, doing, force, clusters=info.cluster_addr_table, brokers=info.broker_addr_table
        )

    async def _targets(self, broker: str | None, cluster: str | None) -> dict[str, str]:
        if broker is not None and cluster is not None:
            raise ConfigError("give a broker or a cluster, not both")
        if broker is not None:
            return {await self._broker_name_of(broker): broker}
        if cluster is None:
            info = await self.cluster_info()
            clusters = sorted(info.cluster_addr_table)
            if not clusters:
                raise ConfigError("no broker is registered with the name server")
            if len(clusters) > 1:
                raise ConfigError(f"several clusters ({', '.join(clusters)}): say which one")
            cluster = clusters[0]
        targets = await self.master_addrs(cluster)
        if not targets:
            raise ConfigError(f"cluster {cluster} has no master broker")
        return targets

    async def _update_topic_config(
        self, addr: str, topic: str, read: int, write: int, perm: int, order: bool, forced: bool = False
    ) -> None:
        call = calls.create_topic(topic, read, write, perm=perm, order=order, force_system_topic=forced)
        await self._call(addr, call)

    async def _set_order_conf(self, topic: str, queues: Mapping[str, int], *, merge: bool) -> None:
        """``ORDER_TOPIC_CONFIG`` ``brokerName:writeQueues;...`` in every name server
        (``createOrUpdateOrderConf``: one broker merges into the existing value)."""
        entries = {name: f"{name}:{n}" for name, n in queues.items()}
        if merge:
            old = await self.order_conf(topic)
            for item in filter(None, (old or "").split(";")):
                entries.setdefault(item.split(":", 1)[0], item)
        value = ";".join(entries[k] for k in sorted(entries))
        await self._all_namesrv(lambda: calls.put_kv_config(ORDER_TOPIC_CONFIG, topic, value))

    async def order_conf(self, topic: str) -> str | None:
        """The topic's ``ORDER_TOPIC_CONFIG`` (``brokerName:queues;...``) in the name server, if any.

        (A route carries it only when the name server runs with ``orderMessageEnable``.)
        """
        return await self._namesrv(lambda: calls.get_kv_config(ORDER_TOPIC_CONFIG, topic))

    async def _delete_order_conf(self, topic: str) -> None:
        for addr in self.namesrv_addrs:
            try:
                await self._call(addr, calls.delete_kv_config(ORDER_TOPIC_CONFIG, topic), "name server")
            except RocketQError as exc:
                logger.warning("deleting the order config of %s on %s failed: %s", topic, addr, exc)

    async def _await_route(self, topic: str, expect: Mapping[str, tuple[int, int, int]], wait: float) -> None:
        """Poll the route until every broker in ``expect`` shows (read, write, perm), or ``wait`` ends."""
        deadline = time.monotonic() + wait
        delay = 0.02
        while True:
            route = await self._get_route(topic)
            if route is not None:
                # PERM_INHERIT aside: a broker keeps it on the topics it makes as templates (TBW102)
                seen = {
                    qd.broker_name: (qd.read_queue_nums, qd.write_queue_nums, qd.perm & ~_INHERIT)
                    for qd in route.queue_datas
                }
                if all(seen.get(n) == (r, w, p & ~_INHERIT) for n, (r, w, p) in expect.items()):
                    return
            if time.monotonic() >= deadline:
                logger.warning("topic %s: the name server's route does not show the change yet", topic)
                return
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.25)

    # -------------------------------------------------------------- groups

    async def _group_brokers(self, group: str) -> dict[str, str]:
        """``{broker name: master address}`` of every broker that may know ``group``: those of its
        retry topic's route, else every master of every cluster."""
        route = await self._get_route(retry_topic(group))
        if route is not None:
            out = {
                bd.broker_name: bd.broker_addrs[MASTER_ID]
                for bd in route.broker_datas
                if bd.broker_name is not None and MASTER_ID in bd.broker_addrs
            }
            if out:
                return dict(sorted(out.items()))
        return await self.master_addrs()

    async def consumer_connection(self, group: str) -> dict[str, ConsumerConnection]:
        """GET_CONSUMER_CONNECTION_LIST from every broker that has the group online, by address."""
        out: dict[str, ConsumerConnection] = {}
        for addr in (await self._group_brokers(group)).values():
            connection = await self._call(addr, calls.get_consumer_connection_list(group))
            if connection is not None:  # None: no member of the group online there
                out[addr] = connection
        return out

    async def running_info(
        self, group: str, client_id: str, broker_addr: str | None = None
    ) -> ConsumerRunningInfo:
        """The client's own view (subscriptions, queues, statistics), relayed by a broker."""
        addrs = [broker_addr] if broker_addr else list((await self._group_brokers(group)).values())
        last: RocketQError | None = None
        for addr in addrs:
            try:
                return await self._call(addr, calls.get_consumer_running_info(group, client_id))
            except RocketQError as exc:
                last = exc
        raise last if last is not None else UnknownGroupError(f"no broker knows consumer group {group}")

    async def duplicate_client_ids(self, group: str | None = None) -> list[DuplicateClientId]:
        """Client ids registered by several live connections, from every broker (rocketq's brokers
        answer request 10901; a broker without it is skipped)."""
        out: list[DuplicateClientId] = []
        for addr in (await self.master_addrs()).values():
            found = await self._call(addr, calls.query_duplicate_client_ids(addr, group))
            out.extend(found or ())  # None: a broker without the request
        return out

    async def group_exists(self, group: str) -> bool:
        """Whether the cluster knows consumer group ``group``: a broker of its retry topic's route
        (made when a member first connects), a subscription config on a master (RocketMQ's
        ``autoCreateSubscriptionGroup``), or an online member."""
        check_group(group)
        if await self._get_route(retry_topic(group)) is not None:
            return True
        if group in await self.consumer_groups():
            return True
        return bool(await self.consumer_connection(group))

    async def group_members(self, group: str, *, strategy: str | None = None) -> GroupMembers:
        """The group's online members with their queues (see the module docstring).

        ``strategy`` is used to compute a member's queues only when it does not report them and
        no other member says which strategy the group uses (default ``AVG``).
        """
        conns = await self.consumer_connection(group)
        if not conns:
            if await self._get_route(retry_topic(group)) is None:
                raise UnknownGroupError(f"consumer group {group} is unknown to every broker")
            return GroupMembers(group, ())
        duplicates = [d for d in await self.duplicate_client_ids(group) if d.group == group]
        # one entry per client id; the broker listing most connections for it gives its addresses
        by_id: dict[str, tuple[Connection, list[str], str]] = {}
        for addr, cc in conns.items():
            per_id: dict[str, list[Connection]] = {}
            for c in cc.connection_set:
                if c.client_id:
                    per_id.setdefault(c.client_id, []).append(c)
            for cid, cs in per_id.items():
                addresses = sorted(c.client_addr or "?" for c in cs)
                if cid not in by_id or len(addresses) > len(by_id[cid][1]):
                    by_id[cid] = (cs[0], addresses, addr)
                if len(cs) > 1 and not any(d.client_id == cid and d.broker_addr == addr for d in duplicates):
                    duplicates.append(DuplicateClientId(group, cid, addr, tuple(addresses)))
        first = next(iter(conns.values()))
        subs = {t: s.sub_string or "*" for t, s in sorted(first.subscription_table.items())}

        async def ask(cid: str, addr: str) -> ConsumerRunningInfo | RocketQError:
            try:
                return await self.running_info(group, cid, addr)
            except RocketQError as exc:
                return exc

        answers = await asyncio.gather(*(ask(cid, addr) for cid, (_, _, addr) in by_id.items()))
        infos = dict(zip(by_id, answers, strict=True))
        reported = [i for i in infos.values() if isinstance(i, ConsumerRunningInfo)]
        group_strategy = next(
            (
                i.properties["allocateMessageQueueStrategy"]
                for i in reported
                if i.properties.get("allocateMessageQueueStrategy")
            ),
            strategy or "AVG",
        )
        planned: dict[str, list[MessageQueue]] | None = None
        dup_ids = {d.client_id for d in duplicates}
        members: list[GroupMember] = []
        for cid in sorted(by_id):
            conn, addresses, _ = by_id[cid]
            info = infos[cid]
            if isinstance(info, ConsumerRunningInfo):
                queues = tuple(sorted(info.mq_table))
                source: QueueSource = "running-info"
                error = None
                used = info.properties.get("allocateMessageQueueStrategy") or group_strategy
            else:
                if planned is None:
                    planned = await self._plan(group, group_strategy, subs, list(by_id))
                queues = tuple(planned.get(cid, ()))
                source, error, used = "plan", str(info), group_strategy
            members.append(
                GroupMember(
                    client_id=cid,
                    addresses=tuple(addresses),
                    language=str(conn.language or "?"),
                    version=conn.version,
                    queues=queues,
                    queues_source=source,
                    strategy=used,
                    duplicate=cid in dup_ids,
                    error=error,
                )
            )
        return GroupMembers(
            group,
            tuple(members),
            subscriptions=subs,
            message_model=str(first.message_model) if first.message_model is not None else None,
            consume_type=str(first.consume_type) if first.consume_type is not None else None,
            consume_from_where=str(first.consume_from_where)
            if first.consume_from_where is not None
            else None,
            duplicates=tuple(duplicates),
        )

    async def _plan(
        self, group: str, strategy_name: str, subs: Mapping[str, str], client_ids: Sequence[str]
    ) -> dict[str, list[MessageQueue]]:
        """Each client id's queues over the subscribed topics, as every client computes them."""
        try:
            strategy = get_strategy(strategy_name)
        except ConfigError:
            logger.warning("group %s uses strategy %s, unknown here; planning with AVG", group, strategy_name)
            strategy = get_strategy("AVG")
        out: dict[str, list[MessageQueue]] = {cid: [] for cid in client_ids}
        for topic in subs:
            route = await self._get_route(topic)
            if route is None:
                continue
            share = plan(strategy, group, subscribe_info_from_route(topic, route), client_ids)
            for cid, qs in share.items():
                out.setdefault(cid, []).extend(qs)
        return {cid: sorted(qs) for cid, qs in out.items()}

    async def group_progress(
        self, group: str, topic: str | None = None, *, members: GroupMembers | None = None
    ) -> GroupProgress:
        """Per queue: broker offset, committed offset, lag and owner, from every broker.

        ``members`` (a :meth:`group_members` answer the caller already has) gives the owners
        without asking the members again."""
        if topic is not None:
            route = await self.topic_route(topic)
            brokers = {
                bd.broker_name: bd.broker_addrs[MASTER_ID]
                for bd in route.broker_datas
                if bd.broker_name is not None and MASTER_ID in bd.broker_addrs
            }
        else:
            brokers = await self._group_brokers(group)
        table: dict[MessageQueue, tuple[int, int, int]] = {}
        tps = 0.0
        for addr in brokers.values():
            stats = await self._call(addr, calls.get_consume_stats(group, topic))
            tps += stats.consume_tps
            for mq, w in stats.offset_table.items():
                table[mq] = (w.broker_offset, w.consumer_offset, w.last_timestamp)
        if await self._get_route(retry_topic(group)) is None and (
            not table if topic is None else not await self.committed_offsets(group, topic)
        ):
            # never connected (no retry topic) and nothing committed: a typo, most likely
            raise UnknownGroupError(f"consumer group {group} is unknown to every broker")
        owners: dict[MessageQueue, str] = {}
        source: QueueSource | None = None
        if members is None:
            try:
                members = await self.group_members(group)
            except UnknownGroupError:
                members = GroupMembers(group, ())
        for m in members.members:
            for mq in m.queues:
                owners.setdefault(mq, m.client_id)
            source = "plan" if m.queues_source == "plan" or source == "plan" else "running-info"
        queues = tuple(
            QueueProgress(mq, b, c, last, owners.get(mq)) for mq, (b, c, last) in sorted(table.items())
        )
        return GroupProgress(group, queues, tps, source)

    async def committed_offsets(self, group: str, topic: str) -> dict[MessageQueue, int]:
        """The offsets ``group`` has committed for ``topic`` on the brokers of its route (only the
        queues it committed: GET_ALL_CONSUMER_OFFSET, unlike consume stats, tells "none" from 0)."""
        route = await self.topic_route(topic)
        out: dict[MessageQueue, int] = {}
        for bd in route.broker_datas:
            addr = bd.broker_addrs.get(MASTER_ID)
            if addr is None or bd.broker_name is None:
                continue
            table = (await self._call(addr, calls.get_all_consumer_offset())).offset_table
            for qid, offset in table.get(f"{topic}@{group}", {}).items():
                out[MessageQueue(topic, bd.broker_name, qid)] = offset
        return dict(sorted(out.items()))

    async def seed_new_group(self, group: str, topic: str, to: str | int) -> dict[MessageQueue, int] | None:
        """Commit start offsets for a group that has none for ``topic`` yet; ``None`` when it has some.

        ``to`` is ``"last"`` (each queue's max offset), ``"first"`` (min offset) or a time stamp
        (the broker's offset for that time). A RocketMQ broker answers 0 to a new group on a queue
        that still holds its first message, so a new consumer would start there whatever its
        consume-from-where says; committing first makes the choice hold (what ``mqadmin
        updateOffset`` would do by hand).
        """
        if await self.committed_offsets(group, topic):
            return None
        timestamp = parse_reset_target(to)
        route = await self.topic_route(topic)
        seeded: dict[MessageQueue, int] = {}
        for qd in route.queue_datas:
            addr = next(
                (
                    bd.broker_addrs.get(MASTER_ID)
                    for bd in route.broker_datas
                    if bd.broker_name == qd.broker_name
                ),
                None,
            )
            if addr is None or qd.broker_name is None:
                continue
            for qid in range(qd.read_queue_nums):
                mq = MessageQueue(topic, qd.broker_name, qid)
                if timestamp == _LAST:
                    offset = await self._call(addr, calls.get_max_offset(mq))
                elif timestamp == _FIRST:
                    offset = await self._call(addr, calls.get_min_offset(mq))
                else:
                    offset = await self._call(addr, calls.search_offset(mq, timestamp))
                await self._call(addr, calls.update_consumer_offset(group, mq, offset))
                seeded[mq] = offset
        return dict(sorted(seeded.items()))

    async def reset_offsets(self, group: str, topic: str, to: str | int) -> ResetResult:
        """Move the group's offsets of ``topic`` to a time stamp, ``"first"`` or ``"last"``
        (RocketMQ's ``resetOffsetByTime`` with force: online members reset and commit; for an
        offline group the broker commits the offsets itself)."""
        timestamp = parse_reset_target(to)
        route = await self.topic_route(topic)
        offsets: dict[MessageQueue, int] = {}
        for bd in route.broker_datas:
            addr = bd.broker_addrs.get(MASTER_ID)
            if addr is None:
                continue
            try:
                reset = await self.api.call(
                    addr, calls.invoke_broker_to_reset_offset(topic, group, timestamp)
                )
            except ConsumerNotOnlineError:
                # a RocketMQ broker leaves offline groups to the tool (resetOffsetByTimestampOld)
                offsets.update(await self._reset_offline(addr, group, topic, timestamp))
                continue
            except BrokerError as exc:
                if "not exist" in exc.remark:
                    raise UnknownGroupError(
                        f"consumer group {group} has no committed offsets for topic {topic} on broker "
                        f"{bd.broker_name} (running consumers commit theirs every 5 s)"
                    ) from None
                raise _refused(exc, f"reset offsets of {group} on {addr}") from None
            except RemotingConnectError as exc:
                raise RemotingConnectError(f"cannot reach broker {addr}: {_reason(exc)}") from exc
            offsets.update(reset)
        return ResetResult(group, topic, timestamp, offsets)

    async def _reset_offline(
        self, addr: str, group: str, topic: str, timestamp: int
    ) -> dict[MessageQueue, int]:
        """Commit the reset offsets of an offline group on one broker, queue by queue (what
        ``mqadmin`` does when a RocketMQ broker answers CONSUMER_NOT_ONLINE)."""
        stats = await self._call(addr, calls.get_consume_stats(group, topic))
        out: dict[MessageQueue, int] = {}
        for mq in sorted(stats.offset_table):
            if timestamp == _LAST:
                offset = await self._call(addr, calls.get_max_offset(mq))
            else:
                offset = await self._call(addr, calls.search_offset(mq, timestamp))
            await self._call(addr, calls.update_consumer_offset(group, mq, offset))
            out[mq] = offset
        return out

    # ================================================================== monitoring
    # Calls the dashboard and the exporter read (RocketMQ Dashboard's and rocketmq-exporter's
    # views), kept apart from the tools' calls above: brokers' runtime tables, every topic and
    # group config of a broker, who consumes a topic, producer connections, message look-ups.

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

    async def topic_consumers(self, topic: str) -> list[str]:
        """The consumer groups the brokers of ``topic``'s route see consuming it (online, or with
        committed offsets), sorted (QUERY_TOPIC_CONSUME_BY_WHO, as ``mqadmin topicStatus`` shows)."""
        route = await self.topic_route(topic)
        groups: set[str] = set()
        for bd in route.broker_datas:
            addr = bd.broker_addrs.get(MASTER_ID)
            if addr is not None:
                groups.update(await self._call(addr, calls.query_topic_consume_by_who(topic)))
        return sorted(groups)

    async def producer_connections(self, group: str) -> dict[str, ProducerConnection]:
        """GET_PRODUCER_CONNECTION_LIST from every master that has the producer group online, by address."""
        out: dict[str, ProducerConnection] = {}
        for addr in (await self.master_addrs()).values():
            found = await self._call(addr, calls.get_producer_connection_list(group))
            if found is not None:
                out[addr] = found
        return out

    async def query_message(
        self,
        topic: str,
        key: str,
        begin: int | None = None,
        end: int | None = None,
        max_num: int = 64,
    ) -> list[MessageExt]:
        """Messages of ``topic`` with ``key`` among their keys, stored between ``begin`` and
        ``end`` (epoch ms; default: any time), from every broker of the topic's route, sorted by
        store time (QUERY_MESSAGE through the brokers' message index, as ``mqadmin
        queryMsgByKey`` and Java's ``MQAdminImpl.queryMessage`` ask it). At most ``max_num``
        come from each broker, the newest (a broker answers at most 64). None found is ``[]``.
        The index keeps store times to the second (as RocketMQ's): a message counts as stored
        at the start of its second, so a range that begins within that second misses it; give
        ranges a second to spare."""
        check_topic(topic)
        if not key or not key.strip():
            raise ConfigError("a query needs a key")
        if max_num < 1:
            raise ConfigError(f"max_num must be positive, got {max_num}")
        begin_ms = 0 if begin is None else begin
        end_ms = _JAVA_LONG_MAX if end is None else end
        if begin_ms < 0 or end_ms < begin_ms:
            raise ConfigError(f"the time range is empty: begin {begin_ms} is after end {end_ms}")
        return await self._query(topic, key, unique=False, max_num=max_num, begin_ms=begin_ms, end_ms=end_ms)

    async def view_message(self, msg_id: str, *, topic: str | None = None) -> list[MessageExt]:
        """The stored message(s) with ``msg_id``, as ``mqadmin queryMsgById`` finds them:

        * an **offset message id** (the broker's: its address and commit-log offset) is read at
          that broker with VIEW_MESSAGE_BY_ID, when the broker is one of the cluster's;
        * a **producer's unique id** (``UNIQ_KEY``, the ``msg_id`` a send returns) is looked up
          with QUERY_MESSAGE on the unique key (``_UNIQUE_KEY_QUERY``, from a second before the
          time the id holds) in ``topic``, on every broker of its route; without ``topic``, in
          every topic of every master broker but RocketMQ's own (a retry or dead-letter topic
          is searched: a message consumed with failures is stored there again, same id).

        Both ids are 32 hex digits for IPv4 hosts, so an id is tried both ways. The result is
        every stored copy found, earliest first (one, usually; Java's ``viewMessage`` returns
        the earliest); ``[]`` when none is."""
        msg_id = msg_id.strip().upper()
        if len(msg_id) not in (32, 56) or any(c not in "0123456789ABCDEF" for c in msg_id):
            raise ConfigError(
                f"{msg_id!r} is not a message id: an offset message id or a producer's message id is "
                "32 hex digits (56 for IPv6 hosts)"
            )
        if topic is not None:
            check_topic(topic)
        found = await self._view_offset_id(msg_id)
        if found is not None:
            return [found]
        try:
            begin = parse_uniq_id(msg_id).approx_timestamp(int(time.time() * 1000)) - 1000
        except RocketQError:
            return []  # neither an offset id of this cluster nor a producer's id
        if topic is not None:
            return await self._query(topic, msg_id, unique=True, begin_ms=max(begin, 0))
        return await self._query_everywhere(msg_id, max(begin, 0))

    async def _view_offset_id(self, msg_id: str) -> MessageExt | None:
        """The message an offset id names, when it names one of the cluster's brokers."""
        try:
            host, offset = parse_offset_msg_id(msg_id)
        except RocketQError:
            return None
        addr = str(host)
        known = {
            a
            for bd in (await self.cluster_info()).broker_addr_table.values()
            for a in bd.broker_addrs.values()
        }
        if addr not in known:
            return None
        try:
            found = await self._call(addr, calls.view_message_by_id(offset))
        except (BrokerError, RemoteProtocolError):
            return None  # no record starts there: not an offset id after all
        return found if found.offset_msg_id == msg_id else None

    async def _query_everywhere(self, msg_id: str, begin_ms: int) -> list[MessageExt]:
        """QUERY_MESSAGE of a unique id in every user, retry and dead-letter topic of every master
        (topics from each broker's GET_ALL_TOPIC_CONFIG; 16 queries in flight)."""
        limit = asyncio.Semaphore(16)

        async def ask(addr: str, topic: str) -> list[MessageExt]:
            async with limit:
                call = calls.query_message(topic, msg_id, unique=True, begin_ms=begin_ms)
                return await self._call(addr, call)

        asks = []
        for addr in (await self.master_addrs()).values():
            for topic in await self.topic_configs(addr):
                if not is_system_topic(topic) or is_retry_or_dlq_topic(topic):
                    asks.append(ask(addr, topic))
        found = [m for batch in await asyncio.gather(*asks) for m in batch]
        return sorted(found, key=lambda m: (m.store_timestamp, m.topic, m.queue_id, m.queue_offset))

    async def _query(
        self,
        topic: str,
        key: str,
        *,
        unique: bool,
        max_num: int = 32,
        begin_ms: int = 0,
        end_ms: int = _JAVA_LONG_MAX,
    ) -> list[MessageExt]:
        route = await self.topic_route(topic)
        found: list[MessageExt] = []
        for bd in route.broker_datas:
            addr = bd.broker_addrs.get(MASTER_ID)
            if addr is not None:
                call = calls.query_message(
                    topic, key, unique=unique, max_num=max_num, begin_ms=begin_ms, end_ms=end_ms
                )
                found.extend(await self._call(addr, call))
        return sorted(found, key=lambda m: (m.store_timestamp, m.queue_id, m.queue_offset))

    async def message_trace(
        self, msg_id: str, *, topic: str | None = None, trace_topic: str = RMQ_SYS_TRACE_TOPIC
    ) -> MessageTrace:
        """The trace of the message ``msg_id`` (RocketMQ dashboard's message trace): the records
        traced clients published about it to ``trace_topic`` - sent (by which producer group,
        to which broker, how long it took), transaction ends, consumed (by which group and
        client, when, how long, how it ended, which retry) - found through the index (trace
        messages are keyed by the ids they trace) and decoded from RocketMQ's trace format
        (:mod:`rocketq.protocol.trace`); and the message itself as stored, when it can be read
        (``topic`` helps for a producer's id: see :meth:`view_message`). An offset id is turned
        into the producer's id the records name. No record is an empty ``events``."""
        stored = await self.view_message(msg_id, topic=topic)
        message = stored[0] if stored else None
        key = message.msg_id if message is not None else msg_id.strip().upper()
        try:
            traces = await self._query(trace_topic, key, unique=False, max_num=64)
        except UnknownTopicError:
            traces = []  # nothing was ever traced in this cluster
        records: list[tuple[TraceContext, str]] = []
        for t in traces:
            client = t.properties.get(CLIENT_ID_PROPERTY) or t.born_host.ip
            try:
                contexts = decode_trace(t.body)
            except RemoteProtocolError as exc:
                logger.warning("trace message %s is not readable: %s", t.msg_id, exc)
                continue
            records.extend((ctx, client) for ctx in contexts)
        events = trace_events(records, key)
        if message is None and topic is None:
            sent = next((e for e in events if e.kind == "sent" and e.topic), None)
            if sent is not None:  # the records name the topic: read the message there
                found = await self.view_message(key, topic=sent.topic)
                message = found[0] if found else None
        return MessageTrace(key, trace_topic, message, tuple(events))

    async def check_subscription(self, group: str, topic: str, selector: MessageSelector | str) -> None:
        """Ask every master of ``topic``'s route whether it can serve ``group``'s subscription
        (CHECK_CLIENT_CONFIG, as a consumer asks at start): raises the refusal (SQL92 on a
        broker without ``enablePropertyFilter``, or an expression the broker cannot parse), so a
        tool can say so before it changes anything."""
        check_group(group)
        sub = subscription_of(topic, selector, sub_version=int(time.time() * 1000))
        if sub.expression_type in (None, "", "TAG"):
            return
        route = await self.topic_route(topic)
        for bd in route.broker_datas:
            addr = bd.broker_addrs.get(MASTER_ID)
            if addr is not None:
                await self._call(addr, calls.check_client_config(group, f"rocketq-admin@{os.getpid()}", sub))

    async def read_queue(self, mq: MessageQueue, offset: int, max_nums: int = 32) -> QueueRead:
        """Up to ``max_nums`` messages of queue ``mq`` from ``offset`` (a pull as the tools' group
        ``TOOLS_CONSUMER``, which commits nothing), with where to read next and the queue's bounds."""
        route = await self.topic_route(mq.topic)
        addr = next(
            (bd.broker_addrs.get(MASTER_ID) for bd in route.broker_datas if bd.broker_name == mq.broker_name),
            None,
        )
        if addr is None:
            raise ConfigError(f"topic {mq.topic} has no queue on broker {mq.broker_name}")
        header = PullMessageRequestHeader(
            consumer_group=TOOLS_CONSUMER_GROUP,
            topic=mq.topic,
            queue_id=mq.queue_id,
            queue_offset=offset,
            max_msg_nums=max_nums,
            sys_flag=int(PullSysFlag.SUBSCRIPTION),
            commit_offset=0,
            suspend_timeout_millis=0,
            subscription="*",
            sub_version=0,
            expression_type="TAG",
        )
        result = await self._call(addr, calls.pull_message(header))
        messages = decode_messages(result.body) if result.status is PullStatus.FOUND else []
        return QueueRead(
            tuple(messages),
            result.next_begin_offset,
            result.min_offset,
            result.max_offset,
            in_range=result.status is not PullStatus.OFFSET_ILLEGAL and offset >= result.min_offset,
        )

    async def message_at(self, mq: MessageQueue, offset: int) -> MessageExt | None:
        """The message at ``offset`` of queue ``mq`` (a pull of one message); ``None`` past the
        queue's last message. An offset below the queue's first message raises
        :class:`~rocketq.errors.ConfigError` with the queue's bounds."""
        read = await self.read_queue(mq, offset, 1)
        if read.messages:
            return read.messages[0]
        if not read.in_range:
            raise ConfigError(
                f"offset {offset} is outside queue {mq.short}: it holds offsets "
                f"{read.min_offset}..{max(read.max_offset - 1, read.min_offset)}"
            )
        return None


def _reason(exc: BaseException) -> str:
    text = str(exc)
    _, sep, rest = text.partition(": ")
    return rest if sep else text


def _counts(held: Mapping[str, QueueData]) -> str:
    return ", ".join(
        f"{qd.read_queue_nums} read / {qd.write_queue_nums} write queues, perm {qd.perm} on {name}"
        for name, qd in sorted(held.items())
    )


def _check_topic_args(topic: str, read: int, write: int, perm: int) -> None:
    if not topic:
        raise ConfigError("a topic needs a name")
    if read < 0 or write < 0 or read > 1024 or write > 1024:
        raise ConfigError(f"queue counts must be 0..1024, got read {read}, write {write}")
    if perm not in (2, 4, 6):
        raise ConfigError(f"perm must be 2 (write), 4 (read) or 6 (read and write), got {perm}")
