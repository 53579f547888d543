"""Topic routes as a client uses them: where to send (publish info) and what to read (subscribe info).

Pure functions of :class:`~rocketq.protocol.TopicRouteData`, as RocketMQ's
``MQClientInstance.topicRouteData2TopicPublishInfo`` / ``...2TopicSubscribeInfo`` compute them, and
:class:`TopicPublishInfo` with RocketMQ's queue selection: round robin over the writable queues
of every broker, skipping the broker that just failed when retrying.

>>> from rocketq.protocol import BrokerData, QueueData, TopicRouteData
>>> route = TopicRouteData(
...     queue_datas=(QueueData(broker_name="b", read_queue_nums=2, write_queue_nums=2, perm=6),
...                  QueueData(broker_name="a", read_queue_nums=2, write_queue_nums=2, perm=6)),
...     broker_datas=(BrokerData(cluster="c", broker_name="a", broker_addrs={0: "10.0.0.1:10911"}),
...                   BrokerData(cluster="c", broker_name="b", broker_addrs={0: "10.0.0.2:10911"})))
>>> info = publish_info_from_route("T", route, start=0)
>>> [q.short for q in info.queues]
['a:0', 'a:1', 'b:0', 'b:1']
>>> [info.select_one().short, info.select_one().short, info.select_one(last_broker="b").short]
['a:1', 'b:0', 'a:0']
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace

from rocketq.models import MessageQueue, QueueRoute
from rocketq.protocol.bodies import QueueData, TopicRouteData
from rocketq.protocol.codes import MASTER_ID
from rocketq.protocol.topics import is_readable, is_writeable

#: where round robin starts (its own generator: a library does not move the global ``random`` state)
_rng = random.Random()

__all__ = [
    "TopicPublishInfo",
    "broker_addr_table",
    "publish_info_from_route",
    "queues_from_route",
    "route_for_auto_create",
    "subscribe_info_from_route",
]


def _order_conf(text: str) -> list[tuple[str, int]]:
    """``"broker-a:4;broker-b:4"`` → ``[("broker-a", 4), ("broker-b", 4)]``."""
    out = []
    for item in text.split(";"):
        name, sep, nums = item.strip().partition(":")
        if sep and name and nums.strip().isdigit():
            out.append((name, int(nums)))
    return out


class TopicPublishInfo:
    """The queues a producer may send a topic's messages to, and the round-robin cursor.

    ``start`` seeds the cursor (RocketMQ's ``ThreadLocalIndex`` starts at a random number);
    ``select_one`` advances it once per call, and with ``last_broker`` tries up to one full turn
    for a queue on another broker before taking the next queue anyway.
    """

    __slots__ = ("_index", "have_route", "order_topic", "queues", "route")

    def __init__(
        self,
        queues: Sequence[MessageQueue],
        route: TopicRouteData | None,
        *,
        order_topic: bool = False,
        start: int | None = None,
    ) -> None:
        self.queues: tuple[MessageQueue, ...] = tuple(queues)
        self.route = route
        self.order_topic = order_topic
        self.have_route = route is not None
        self._index = _rng.randrange(2**31) if start is None else start

    @property
    def ok(self) -> bool:
        """Whether there is at least one queue to send to (``TopicPublishInfo.ok()``)."""
        return bool(self.queues)

    def _next(self) -> int:
        self._index = (self._index + 1) & 0x7FFFFFFF
        return self._index

    def select_one(self, last_broker: str | None = None) -> MessageQueue:
        """The next queue, avoiding ``last_broker`` when another broker has a queue."""
        queues = self.queues
        if not queues:
            raise LookupError("no queue to send to")
        n = len(queues)
        if last_broker is not None:
            for _ in range(n):
                mq = queues[self._next() % n]
                if mq.broker_name != last_broker:
                    return mq
        return queues[self._next() % n]

    def queue_id_of_broker(self, broker_name: str) -> int:
        """Write queue count of ``broker_name`` in the route (-1 if absent)."""
        if self.route is None:
            return -1
        for qd in self.route.queue_datas:
            if qd.broker_name == broker_name:
                return qd.write_queue_nums
        return -1

    def __repr__(self) -> str:
        return f"<TopicPublishInfo {len(self.queues)} queues order={self.order_topic}>"


def publish_info_from_route(
    topic: str, route: TopicRouteData, *, start: int | None = None
) -> TopicPublishInfo:
    """Writable queues of ``topic`` on brokers with a live master, brokers in name order."""
    if route.order_topic_conf:
        queues = [
            MessageQueue(topic, name, i)
            for name, nums in _order_conf(route.order_topic_conf)
            for i in range(nums)
        ]
        return TopicPublishInfo(queues, route, order_topic=True, start=start)
    masters = {bd.broker_name: bd.broker_addrs.get(MASTER_ID) for bd in route.broker_datas}
    queues = []
    for qd in sorted(route.queue_datas, key=lambda q: q.broker_name or ""):
        if not is_writeable(qd.perm) or qd.broker_name is None or not masters.get(qd.broker_name):
            continue
        queues.extend(MessageQueue(topic, qd.broker_name, i) for i in range(qd.write_queue_nums))
    return TopicPublishInfo(queues, route, start=start)


def subscribe_info_from_route(topic: str, route: TopicRouteData) -> frozenset[MessageQueue]:
    """Readable queues of ``topic`` (``topicRouteData2TopicSubscribeInfo``)."""
    out: set[MessageQueue] = set()
    for qd in route.queue_datas:
        if is_readable(qd.perm) and qd.broker_name is not None:
            out.update(MessageQueue(topic, qd.broker_name, i) for i in range(qd.read_queue_nums))
    return frozenset(out)


def queues_from_route(topic: str, route: TopicRouteData, *, writable: bool = False) -> list[QueueRoute]:
    """The readable (or writable) queues of ``topic`` whose broker has a master, sorted, each with
    the master's address.

    >>> from rocketq.protocol.bodies import BrokerData, QueueData
    >>> queues_from_route("T", TopicRouteData(
    ...     queue_datas=(QueueData(broker_name="b", read_queue_nums=1, write_queue_nums=1, perm=6),
    ...                  QueueData(broker_name="a", read_queue_nums=2, write_queue_nums=1, perm=6)),
    ...     broker_datas=(BrokerData(broker_name="a", broker_addrs={0: "10.0.0.1:10911"}),
    ...                   BrokerData(broker_name="b", broker_addrs={0: "10.0.0.2:10911"}))))
    [QueueRoute(queue=MessageQueue(topic='T', broker_name='a', queue_id=0), addr='10.0.0.1:10911'), \
QueueRoute(queue=MessageQueue(topic='T', broker_name='a', queue_id=1), addr='10.0.0.1:10911'), \
QueueRoute(queue=MessageQueue(topic='T', broker_name='b', queue_id=0), addr='10.0.0.2:10911')]
    """
    masters = {b.broker_name: b.broker_addrs.get(MASTER_ID) for b in route.broker_datas}
    out: list[QueueRoute] = []
    for qd in route.queue_datas:
        name = qd.broker_name
        addr = masters.get(name) if name else None
        if name is None or addr is None:
            continue
        if writable:
            if not is_writeable(qd.perm):
                continue
            count = qd.write_queue_nums
        else:
            if not is_readable(qd.perm):
                continue
            count = qd.read_queue_nums
        out.extend(QueueRoute(MessageQueue(topic, name, i), addr) for i in range(count))
    out.sort(key=lambda r: r.queue)
    return out


def route_for_auto_create(default_route: TopicRouteData, default_queue_nums: int) -> TopicRouteData:
    """The default topic's (TBW102) route with each broker's queue counts capped at
    ``default_queue_nums``, as Java's ``updateTopicRouteInfoFromNameServer(topic, true, producer)``."""
    datas: list[QueueData] = []
    for qd in default_route.queue_datas:
        nums = min(default_queue_nums, qd.read_queue_nums)
        datas.append(replace(qd, read_queue_nums=nums, write_queue_nums=nums))
    return replace(default_route, queue_datas=tuple(datas))


def broker_addr_table(route: TopicRouteData) -> dict[str, dict[int, str]]:
    """Broker name → {broker id: address} of one route."""
    return {bd.broker_name: dict(bd.broker_addrs) for bd in route.broker_datas if bd.broker_name is not None}
