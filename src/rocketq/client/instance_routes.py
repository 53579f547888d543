"""The client instance's routes: refreshing topic routes from the name server (every
``poll_name_server_interval``, and on demand), the broker address table built from them (a
broker new to this client is greeted with a heartbeat at once), and finding a broker's address
for a publish, a pull or an offset."""

from __future__ import annotations

import logging
import random
from collections.abc import Iterable, Iterator

from rocketq.client.instance_base import ConsumerInner
from rocketq.client.instance_heartbeats import Heartbeats
from rocketq.client.routes import broker_addr_table, subscribe_info_from_route
from rocketq.errors import ClientStateError, RocketQError
from rocketq.models import MessageQueue
from rocketq.protocol.bodies import (
    TopicRouteData,
)
from rocketq.protocol.codes import MASTER_ID

#: which broker of a route answers (its own generator: a library does not move the global ``random`` state)
_rng = random.Random()

__all__ = ["Routes"]

logger = logging.getLogger("rocketq.client.instance")  # the instance's one logger name, whichever part logs


class Routes(Heartbeats):
    """Routes and broker addresses of a client instance (see the module docstring)."""

    async def update_all_routes(self) -> None:
        """Refresh the route of every topic a producer or consumer of this client uses."""
        topics: set[str] = set()
        for consumer in list(self.consumers.values()):
            topics.update(consumer.subscribed_topics())
        for producer in list(self.producers.values()):
            topics.update(producer.publish_topics())
        for topic in sorted(topics):
            await self.update_topic_route(topic)
        self._clean_offline_brokers()

    async def update_topic_route(self, topic: str, route: TopicRouteData | None = None) -> bool:
        """Fetch ``topic``'s route (unless given) and update every table that depends on it.

        Returns whether a route is known afterwards. Errors are logged, not raised.
        """
        assert self.api is not None
        assert self._route_lock is not None
        async with self._route_lock:
            if route is None:
                try:
                    route = await self.api.get_topic_route(topic)
                except RocketQError as exc:
                    logger.debug("route of %s not updated: %s", topic, exc)
                    return topic in self.topic_route_table
                if route is None:
                    if not topic.startswith("%RETRY%"):
                        logger.debug("no route for topic %s", topic)
                    return False
            old = self.topic_route_table.get(topic)
            changed = old != route
            if not changed:
                changed = any(p.is_publish_topic_need_update(topic) for p in self.producers.values()) or any(
                    topic in c.subscribed_topics() and self._needs_subscribe_info(c, topic)
                    for c in self.consumers.values()
                )
            if not changed:
                return True
            self.topic_route_table[topic] = route
            known = {a for addrs in self.broker_addr_table.values() for a in addrs.values()}
            for name, addrs in broker_addr_table(route).items():
                self.broker_addr_table[name] = addrs
            if any(a not in known for addrs in broker_addr_table(route).values() for a in addrs.values()):
                # a broker we never talked to: tell it who we are now rather than in up to 30 s
                self._spawn(self.send_heartbeat_to_all_brokers(early=True))
            for producer in list(self.producers.values()):
                if topic in set(producer.publish_topics()):
                    producer.update_topic_publish_info(topic, route)
            mqs = subscribe_info_from_route(topic, route)
            for consumer in list(self.consumers.values()):
                if topic in set(consumer.subscribed_topics()):
                    consumer.update_topic_subscribe_info(topic, mqs)
            return True

    def refresh_route_soon(self, topic: str) -> None:
        """Fetch ``topic``'s route in the background (on the loop): its brokers then learn of this
        client at once (:meth:`update_topic_route` greets a new broker with a heartbeat)."""
        if self._closed:
            return

        async def refresh() -> None:
            await self.update_topic_route(topic)

        self._spawn(refresh())

    @staticmethod
    def _needs_subscribe_info(consumer: ConsumerInner, topic: str) -> bool:
        check = getattr(consumer, "is_subscribe_topic_need_update", None)
        return bool(check(topic)) if check is not None else False

    def _clean_offline_brokers(self) -> None:
        live: set[str] = set()
        for route in self.topic_route_table.values():
            for bd in route.broker_datas:
                live.update(bd.broker_addrs.values())
        for name in list(self.broker_addr_table):
            addrs = {i: a for i, a in self.broker_addr_table[name].items() if a in live}
            if addrs:
                self.broker_addr_table[name] = addrs
            else:
                del self.broker_addr_table[name]

    def find_broker_address_in_publish(self, broker_name: str) -> str | None:
        return self.broker_addr_table.get(broker_name, {}).get(MASTER_ID)

    def find_broker_address_in_subscribe(self, broker_name: str, broker_id: int = MASTER_ID) -> str | None:
        """The address of ``broker_id`` of ``broker_name`` (else any address of it)."""
        addrs = self.broker_addr_table.get(broker_name)
        if not addrs:
            return None
        addr = addrs.get(broker_id)
        if addr is None:
            addr = next(iter(addrs.values()))
        return addr

    def queues_by_broker(self, mqs: Iterable[MessageQueue]) -> Iterator[tuple[str, str, list[MessageQueue]]]:
        """``mqs`` grouped by broker name (in name order), each with its broker's address (as
        :meth:`find_broker_address_in_subscribe`, looked up as the group is reached); brokers
        without a known address are skipped. For the batch calls (lock, unlock) a client makes
        broker by broker."""
        by_broker: dict[str, list[MessageQueue]] = {}
        for mq in mqs:
            by_broker.setdefault(mq.broker_name, []).append(mq)
        for name, qs in sorted(by_broker.items()):
            addr = self.find_broker_address_in_subscribe(name)
            if addr is not None:
                yield name, addr, qs

    async def locate_pull_address(self, mq: MessageQueue, broker_id: int = MASTER_ID) -> str:
        """Where to pull ``mq``: broker ``broker_id`` of its broker (else any address of it),
        refreshing the topic's route once when none is known; :class:`ClientStateError` when the
        broker stays unknown."""
        addr = self.find_broker_address_in_subscribe(mq.broker_name, broker_id)
        if addr is None:
            await self.update_topic_route(mq.topic)
            addr = self.find_broker_address_in_subscribe(mq.broker_name)
        if addr is None:
            raise ClientStateError(f"The broker[{mq.broker_name}] not exist")
        return addr

    async def locate_master(self, mq: MessageQueue) -> str | None:
        """The master address of ``mq``'s broker, refreshing the topic's route once if unknown."""
        addr = self.find_broker_address_in_publish(mq.broker_name)
        if addr is None:
            await self.update_topic_route(mq.topic)
            addr = self.find_broker_address_in_publish(mq.broker_name)
        return addr

    async def locate_offset_broker(self, mq: MessageQueue) -> str | None:
        """Where ``mq``'s committed offset is read and written: its master, else - after one
        route refresh - any broker of its name, a slave while the master is gone (as Java's
        ``RemoteBrokerOffsetStore`` finds it)."""
        addr = self.find_broker_address_in_publish(mq.broker_name)
        if addr is None:
            await self.update_topic_route(mq.topic)
            addr = self.find_broker_address_in_subscribe(mq.broker_name)
        return addr

    def _find_broker_addr_by_topic(self, topic: str) -> str | None:
        route = self.topic_route_table.get(topic)
        if route is None or not route.broker_datas:
            return None
        bd = _rng.choice(route.broker_datas)
        addr = bd.broker_addrs.get(MASTER_ID)
        if addr is None and bd.broker_addrs:
            addr = _rng.choice(list(bd.broker_addrs.values()))
        return addr
