"""The calls a client instance makes to brokers for its consumers: the group's member lists and
views, the subscription check at start, queue locks (as leases for the clean handoff) and
unregistering."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence

from rocketq.client.instance_routes import Routes
from rocketq.errors import BrokerError, RocketQError
from rocketq.models import MessageQueue
from rocketq.protocol import calls
from rocketq.protocol.bodies import (
    SubscriptionData,
)
from rocketq.protocol.codes import MASTER_ID

__all__ = ["BrokerCalls"]

logger = logging.getLogger("rocketq.client.instance")  # the instance's one logger name, whichever part logs


class BrokerCalls(Routes):
    """Consumer-side broker calls of a client instance (see the module docstring)."""

    async def unregister_client(
        self, *, producer_group: str | None = None, consumer_group: str | None = None
    ) -> None:
        """UNREGISTER_CLIENT to every known broker address (so a group rebalances at once)."""
        assert self.api is not None
        pending = []
        for addrs in self.broker_addr_table.values():
            for addr in addrs.values():
                call = calls.unregister_client(
                    self.client_id, producer_group=producer_group, consumer_group=consumer_group
                )
                pending.append(self.api.call(addr, call))
        for result in await asyncio.gather(*pending, return_exceptions=True):
            if isinstance(result, Exception):
                logger.warning("unregister of %s from a broker failed: %s", self.client_id, result)

    async def find_consumer_id_list(self, topic: str, group: str) -> list[str] | None:
        """The group's client ids from one broker serving ``topic`` (``findConsumerIdList``)."""
        assert self.api is not None
        addr = self._find_broker_addr_by_topic(topic)
        if addr is None:
            await self.update_topic_route(topic)
            addr = self._find_broker_addr_by_topic(topic)
        if addr is None:
            return None
        try:
            return await self.api.call(addr, calls.get_consumer_list_by_group(group))
        except RocketQError as exc:
            logger.warning("GET_CONSUMER_LIST_BY_GROUP %s from %s failed: %s", group, addr, exc)
            return None

    async def find_consumer_views(
        self, topic: str, group: str
    ) -> dict[str, tuple[list[str], int, str | None] | None]:
        """The group's client ids, the broker's read queue count of ``topic`` (-1: a broker that
        does not say, RocketMQ's) and its view stamp (the group's epoch there; ``None`` from
        RocketMQ's) from every broker serving ``topic`` (its masters), asked at once: broker name
        -> its view, or None when it did not answer (consistent views; ours)."""
        assert self.api is not None
        api = self.api
        route = self.topic_route_table.get(topic)
        if route is None or not route.broker_datas:
            await self.update_topic_route(topic)
            route = self.topic_route_table.get(topic)
        if route is None:
            return {}
        targets = [(bd.broker_name or "", bd.broker_addrs.get(MASTER_ID)) for bd in route.broker_datas]

        async def one(name: str, addr: str | None) -> tuple[list[str], int, str | None] | None:
            if addr is None:
                return None
            try:
                return await api.call(addr, calls.get_consumer_view(group, topic))
            except RocketQError as exc:
                logger.debug("GET_CONSUMER_LIST_BY_GROUP %s from %s (%s) failed: %s", group, name, addr, exc)
                return None

        answers = await asyncio.gather(*(one(name, addr) for name, addr in targets))
        return {name: ids for (name, _addr), ids in zip(targets, answers, strict=True)}

    async def check_client_in_broker(self, group: str, subscriptions: Iterable[SubscriptionData]) -> None:
        """Ask the brokers whether they can serve ``group``'s subscriptions that are not tag
        expressions (SQL92), as a Java consumer does at start (``checkClientInBroker``): one
        CHECK_CLIENT_CONFIG per subscription to every master of its topic's route (Java asks one
        broker, taking the cluster's configs as equal). A refusal is raised as the broker's
        :class:`~rocketq.errors.BrokerError` (its remark says what to turn on, or what is wrong
        with the expression); a topic without a route yet is not checked."""
        assert self.api is not None
        for sub in subscriptions:
            if sub.expression_type in (None, "", "TAG") or sub.topic is None:
                continue
            route = self.topic_route_table.get(sub.topic)
            if route is None:
                continue
            for bd in route.broker_datas:
                addr = bd.broker_addrs.get(MASTER_ID)
                if addr is None:
                    continue
                try:
                    await self.api.call(addr, calls.check_client_config(group, self.client_id, sub))
                except BrokerError as exc:
                    raise BrokerError.for_code(
                        exc.code,
                        f"broker {bd.broker_name} ({addr}) cannot serve the {sub.expression_type} "
                        f"subscription of group {group} to {sub.topic}: {exc.remark}",
                    ) from None

    async def lock_queues(self, group: str, mqs: Sequence[MessageQueue]) -> set[MessageQueue]:
        """LOCK_BATCH_MQ for ``mqs`` on their brokers; the queues now locked for this client (as
        leases when :meth:`uses_leases`)."""
        assert self.api is not None
        lease = self.uses_leases(group)
        locked: set[MessageQueue] = set()
        for name, addr, qs in self.queues_by_broker(mqs):
            try:
                locked |= await self.api.call(
                    addr, calls.lock_batch_mq(group, self.client_id, qs, lease=lease)
                )
            except RocketQError as exc:
                logger.warning("LOCK_BATCH_MQ on %s failed: %s", name, exc)
        return locked

    def uses_leases(self, group: str) -> bool:
        """Whether ``group``'s consumer locks queues as the clean handoff's leases (it retries
        leases and is not orderly): its LOCK_BATCH_MQ requests say so (``calls.LEASE_FIELD``)."""
        consumer = self.consumers.get(group)
        return bool(getattr(consumer, "retries_leases", False)) and not getattr(
            consumer, "consume_orderly", False
        )

    async def unlock_queues(self, group: str, mqs: Sequence[MessageQueue], *, oneway: bool) -> None:
        assert self.api is not None
        for name, addr, qs in self.queues_by_broker(mqs):
            try:
                await self.api.call(addr, calls.unlock_batch_mq(group, self.client_id, qs, oneway=oneway))
            except RocketQError as exc:
                logger.warning("UNLOCK_BATCH_MQ on %s failed: %s", name, exc)
