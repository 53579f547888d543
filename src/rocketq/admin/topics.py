"""Topic administration: list, stats, create / update / delete on the masters of a cluster (or one
broker), the ``ORDER_TOPIC_CONFIG`` of ordered topics in the name servers, waiting for the route
to show a change, and who consumes a topic (see :mod:`rocketq.admin` for the rules)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping

from rocketq.admin.brokers import BrokerAdmin
from rocketq.admin.guard import check_system_topic, topic_changes
from rocketq.admin.values import (
    ORDER_TOPIC_CONFIG,
    TopicQueueStats,
    TopicStats,
)
from rocketq.errors import (
    ConfigError,
    RocketQError,
    TopicExistsError,
)
from rocketq.models import MessageQueue
from rocketq.protocol import calls
from rocketq.protocol.bodies import QueueData
from rocketq.protocol.codes import MASTER_ID
from rocketq.protocol.topics import Perm

__all__ = ["TopicAdmin"]

logger = logging.getLogger("rocketq.admin.core")  # the admin's one logger name, whichever part logs

_INHERIT = int(Perm.INHERIT)


class TopicAdmin(BrokerAdmin):
    """Topic calls of :class:`~rocketq.admin.core.AsyncAdmin` (see the module docstring)."""

    async def topic_list(self) -> list[str]:
        """Every topic the name server knows, sorted."""
        return await self._namesrv(calls.get_all_topic_list)

    async def topic_stats(self, topic: str) -> TopicStats:
        """Per queue min/max offset and last store time, from every broker of the route."""
        route = await self.topic_route(topic)
        queues: list[TopicQueueStats] = []
        names: list[str] = []
        for bd in route.broker_datas:
            addr = bd.broker_addrs.get(MASTER_ID)
            if addr is None:
                continue
            stats = await self._call(addr, calls.get_topic_stats_info(topic))
            if stats is None:  # this broker does not hold the topic
                continue
            on_slave = await self._slave_max_offsets(topic, bd.broker_addrs)
            if bd.broker_name is not None:
                names.append(bd.broker_name)
            queues.extend(
                TopicQueueStats(mq, o.min_offset, o.max_offset, o.last_update_timestamp, on_slave.get(mq))
                for mq, o in stats.offset_table.items()
            )
        has_slaves = any(bid != MASTER_ID for bd in route.broker_datas for bid in bd.broker_addrs)
        slaves = await self.slave_lags(names) if has_slaves else []
        return TopicStats(topic, tuple(sorted(queues, key=lambda q: q.queue)), tuple(slaves))

    async def _slave_max_offsets(self, topic: str, addrs: Mapping[int, str]) -> dict[MessageQueue, int]:
        """The max offsets of ``topic``'s queues on the first slave of ``addrs`` (empty without a
        slave, or when it did not answer: a topic it has not synced yet)."""
        slave_ids = sorted(bid for bid in addrs if bid != MASTER_ID)
        if not slave_ids:
            return {}
        try:
            stats = await self._call(addrs[slave_ids[0]], calls.get_topic_stats_info(topic))
        except RocketQError as exc:
            logger.debug("topic stats of %s from slave %s: %s", topic, addrs[slave_ids[0]], exc)
            return {}
        if stats is None:
            return {}
        return {mq: o.max_offset for mq, o in stats.offset_table.items()}

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
