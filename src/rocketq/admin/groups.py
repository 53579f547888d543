"""Consumer-group administration: who is online with which queues, progress and lag, committed
offsets, seeding a new group's start offsets and resetting offsets (see :mod:`rocketq.admin`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence

from rocketq.admin.brokers import BrokerAdmin
from rocketq.admin.transport import reason_of, refusal
from rocketq.admin.values import (
    _FIRST,
    _LAST,
    GroupMember,
    GroupMembers,
    GroupProgress,
    QueueProgress,
    QueueSource,
    ResetResult,
    parse_reset_target,
)
from rocketq.allocate import get_strategy, plan
from rocketq.client.routes import subscribe_info_from_route
from rocketq.client.validators import check_group
from rocketq.errors import (
    BrokerError,
    ConfigError,
    ConsumerNotOnlineError,
    RemotingConnectError,
    RocketQError,
    UnknownGroupError,
)
from rocketq.models import DuplicateClientId, MessageQueue
from rocketq.protocol import calls
from rocketq.protocol.bodies import (
    Connection,
    ConsumerConnection,
    ConsumerRunningInfo,
)
from rocketq.protocol.codes import MASTER_ID
from rocketq.protocol.topics import retry_topic

__all__ = ["GroupAdmin"]

logger = logging.getLogger("rocketq.admin.core")  # the admin's one logger name, whichever part logs


class GroupAdmin(BrokerAdmin):
    """Group calls of :class:`~rocketq.admin.core.AsyncAdmin` (see the module docstring)."""

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
        by_id = _connections_by_id(group, conns, duplicates)
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
        slaves = await self.slave_lags(set(brokers))
        return GroupProgress(group, queues, tps, source, tuple(slaves))

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
                raise refusal(exc, f"reset offsets of {group} on {addr}") from None
            except RemotingConnectError as exc:
                raise RemotingConnectError(f"cannot reach broker {addr}: {reason_of(exc)}") from exc
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


def _connections_by_id(
    group: str, conns: Mapping[str, ConsumerConnection], duplicates: list[DuplicateClientId]
) -> dict[str, tuple[Connection, list[str], str]]:
    """One entry per client id of the brokers' connection lists: a connection, its addresses and
    the broker listing most connections for it (which gives the addresses). A client id that
    several connections hold on one broker is added to ``duplicates`` unless already there."""
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
    return by_id
