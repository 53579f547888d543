"""The name server's route table: which brokers are alive and which topics' queues they host.

A pure state machine, RocketMQ 4.9.4's ``RouteInfoManager`` rebuilt without locks or clocks: every
call that needs the time takes ``now``, **float seconds on one monotonic clock** (the server passes
``time.monotonic()``; tests pass numbers). Nothing here touches a socket. The request handlers
(:mod:`rocketq.namesrv.handlers`) translate commands into these calls, and the server
(:mod:`rocketq.namesrv.server`) feeds it connection-close events and a periodic
:meth:`RouteTable.scan_not_active`.

Five tables, as in RocketMQ:

* ``topic -> broker name -> QueueData`` (read/write queue counts, permission, topic sys flag);
* ``broker name -> BrokerData`` (cluster, ``broker id -> address``; id 0 is the master);
* ``cluster -> broker names``;
* ``broker address -> liveness`` (last registration time, the broker's topic-config
  ``DataVersion``, the connection it registered on, its HA address);
* ``broker address -> filter servers``.

Lifecycle of a broker, in RocketMQ's terms:

* **register** (``REGISTER_BROKER``, every 30 s by default): the broker joins its cluster and
  broker name; a *master* (id 0) also publishes its topic configs, but only when their
  ``DataVersion`` differs from the one recorded for that address or the address is new (an
  unchanged data version only refreshes liveness). Registration of a topic adds or replaces that
  broker's queue data for it and never removes topics absent from the body: brokers send
  incremental registrations holding only the topic just created;
* **unregister** (``UNREGISTER_BROKER``, at broker shutdown);
* **connection closed**: everything registered over that connection goes at once
  (:meth:`RouteTable.on_connection_closed`, RocketMQ's ``BrokerHousekeepingService``);
* **expiry**: a broker not heard from for :data:`BROKER_CHANNEL_EXPIRED_TIME` (120 s) is dropped
  by :meth:`RouteTable.scan_not_active`, which the server runs every 10 s.

Removing a broker address removes it from its ``BrokerData``; when that was the broker name's last
address, the name leaves its cluster (the cluster goes when empty) and the name's queue data leaves
every topic (a topic left without queue data goes). So a slave going away, or the master going
while a slave stays, removes no topic.

Lists come out in the order RocketMQ's Java ``HashMap``s iterate (see :mod:`rocketq.namesrv.javamap`),
so our answers are byte-for-byte RocketMQ's.

>>> from rocketq.protocol.bodies import DataVersion, TopicConfig
>>> table = RouteTable()
>>> table.register_broker(cluster_name="DefaultCluster", broker_addr="127.0.0.1:10911",
...     broker_name="broker-a", broker_id=0, ha_server_addr="127.0.0.1:10912",
...     data_version=DataVersion(timestamp=1, counter=1),
...     topic_configs=[TopicConfig(topic_name="TopicTest", read_queue_nums=4, write_queue_nums=4)],
...     filter_servers=[], conn="conn-1", now=0.0)
RegisterBrokerResult(master_addr=None, ha_server_addr=None)
>>> [q.broker_name for q in table.topic_route("TopicTest").queue_datas]
['broker-a']
>>> table.scan_not_active(now=120.0), table.scan_not_active(now=120.5)
([], [ExpiredBroker(broker_addr='127.0.0.1:10911', conn='conn-1')])
>>> table.topic_route("TopicTest") is None
True
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from rocketq.errors import ConfigError
from rocketq.namesrv.javamap import JavaHashMap, JavaHashSet
from rocketq.protocol.bodies import (
    BrokerData,
    ClusterInfo,
    DataVersion,
    QueueData,
    TopicConfig,
    TopicList,
    TopicRouteData,
)
from rocketq.protocol.codes import MASTER_ID
from rocketq.protocol.topics import Perm, TopicSysFlag

__all__ = [
    "BROKER_CHANNEL_EXPIRED_TIME",
    "BrokerLiveInfo",
    "ExpiredBroker",
    "RegisterBrokerResult",
    "RouteTable",
]

log = logging.getLogger(__name__)

BROKER_CHANNEL_EXPIRED_TIME = 120.0
"""Seconds without a registration after which a broker is dropped (RocketMQ's 2 minutes)."""

# Plain ints of the protocol's bits (IntFlag arithmetic would also put flags into the JSON).
_WRITE: Final = int(Perm.WRITE)
_RW: Final = int(Perm.READ | Perm.WRITE)
_UNIT: Final = int(TopicSysFlag.FLAG_UNIT)
_UNIT_SUB: Final = int(TopicSysFlag.FLAG_UNIT_SUB)

# Initial capacities RocketMQ gives its tables (they decide the Java iteration order).
_TOPIC_TABLE_CAPACITY = 1024
_BROKER_TABLE_CAPACITY = 128
_CLUSTER_TABLE_CAPACITY = 32
#: Topic names a log line lists before it says how many more there are.
_LOGGED_TOPICS = 20


@dataclass(frozen=True, slots=True)
class RegisterBrokerResult:
    """What a registration tells the broker: for a slave, its master's address and HA address.

    Both are ``None`` for a master, and for a slave whose master is not registered (yet).
    """

    master_addr: str | None = None
    ha_server_addr: str | None = None


@dataclass(frozen=True, slots=True)
class ExpiredBroker:
    """A broker :meth:`RouteTable.scan_not_active` dropped, and the connection it had registered on.

    The server closes that connection, as RocketMQ's name server does.
    """

    broker_addr: str
    conn: Hashable | None


@dataclass(frozen=True, slots=True)
class BrokerLiveInfo:
    """Liveness of one registered broker address (a snapshot; RocketMQ's ``BrokerLiveInfo``)."""

    broker_addr: str
    last_update: float
    data_version: DataVersion
    conn: Hashable | None
    ha_server_addr: str | None


class _Broker:
    """A broker name's entry: its cluster and ``broker id -> address`` (mutable ``BrokerData``)."""

    __slots__ = ("addrs", "cluster", "name")

    def __init__(self, cluster: str, name: str) -> None:
        self.cluster = cluster
        self.name = name
        self.addrs: JavaHashMap[int, str] = JavaHashMap()

    def snapshot(self) -> BrokerData:
        return BrokerData(
            cluster=self.cluster, broker_name=self.name, broker_addrs=dict(self.addrs.java_items())
        )


class RouteTable:
    """Brokers, clusters and topic routes of one name server; see the module docstring.

    ``broker_expiry`` is how long a broker stays without registering (RocketMQ: 120 s, fixed).
    """

    __slots__ = ("_brokers", "_clusters", "_expiry", "_filter_servers", "_live", "_topics")

    def __init__(self, *, broker_expiry: float = BROKER_CHANNEL_EXPIRED_TIME) -> None:
        if broker_expiry <= 0:
            raise ConfigError(f"broker_expiry must be positive, got {broker_expiry!r}")
        self._expiry = broker_expiry
        self._topics: JavaHashMap[str, JavaHashMap[str, QueueData]] = JavaHashMap(_TOPIC_TABLE_CAPACITY)
        self._brokers: JavaHashMap[str, _Broker] = JavaHashMap(_BROKER_TABLE_CAPACITY)
        self._clusters: JavaHashMap[str, JavaHashSet[str]] = JavaHashMap(_CLUSTER_TABLE_CAPACITY)
        self._live: dict[str, BrokerLiveInfo] = {}
        self._filter_servers: dict[str, list[str]] = {}

    @property
    def broker_expiry(self) -> float:
        return self._expiry

    # ------------------------------------------------------------------ registration

    def register_broker(
        self,
        *,
        cluster_name: str,
        broker_addr: str,
        broker_name: str,
        broker_id: int,
        ha_server_addr: str | None,
        data_version: DataVersion,
        topic_configs: Iterable[TopicConfig] | None,
        filter_servers: Sequence[str] | None,
        conn: Hashable | None,
        now: float,
    ) -> RegisterBrokerResult:
        """Record a ``REGISTER_BROKER`` from ``conn``; see the module docstring for the rules.

        ``topic_configs`` are the body's topics in the order the body lists them; ``filter_servers``
        ``None`` leaves the broker's filter servers as they are, an empty list removes them.
        """
        names = self._clusters.get(cluster_name)
        if names is None:
            names = self._clusters[cluster_name] = JavaHashSet()
        names.add(broker_name)

        broker = self._brokers.get(broker_name)
        first = broker is None
        if broker is None:
            broker = self._brokers[broker_name] = _Broker(cluster_name, broker_name)
        # An address lives under one id only: a slave promoted to master re-registers as id 0.
        for other_id, addr in list(broker.addrs.items()):
            if addr == broker_addr and other_id != broker_id:
                del broker.addrs[other_id]
        old_addr = broker.addrs.get(broker_id)
        broker.addrs[broker_id] = broker_addr
        if broker_id == MASTER_ID and old_addr != broker_addr:
            log.info(
                "cluster %s broker %s: master address %s -> %s",
                cluster_name,
                broker_name,
                old_addr,
                broker_addr,
            )
        first = first or old_addr is None

        publish = first or self.is_data_version_changed(broker_addr, data_version)
        if topic_configs is not None and broker_id == MASTER_ID and publish:
            for config in topic_configs:
                self._put_queue_data(broker_name, config)

        previous = self._live.get(broker_addr)
        self._live[broker_addr] = BrokerLiveInfo(broker_addr, now, data_version, conn, ha_server_addr)
        if previous is None:
            log.info(
                "new broker registered: %s (%s, id %d), HA %s",
                broker_addr,
                broker_name,
                broker_id,
                ha_server_addr,
            )

        if filter_servers is not None:
            if filter_servers:
                self._filter_servers[broker_addr] = list(filter_servers)
            else:
                self._filter_servers.pop(broker_addr, None)

        if broker_id != MASTER_ID:
            master_addr = broker.addrs.get(MASTER_ID)
            if master_addr is not None:
                master = self._live.get(master_addr)
                if master is not None:
                    return RegisterBrokerResult(master_addr=master_addr, ha_server_addr=master.ha_server_addr)
        return RegisterBrokerResult()

    def publishes_topics(
        self, *, broker_addr: str, broker_name: str, broker_id: int, data_version: DataVersion
    ) -> bool:
        """Whether :meth:`register_broker` with these arguments would write the body's topics
        into the route table: a master's first registration, or one with a new data version."""
        if broker_id != MASTER_ID:
            return False
        broker = self._brokers.get(broker_name)
        if broker is None or broker.addrs.get(broker_id) is None:
            return True
        return self.is_data_version_changed(broker_addr, data_version)

    def put_topic_configs(self, broker_name: str, topic_configs: Iterable[TopicConfig]) -> bool:
        """Write topics of ``broker_name`` into the route table as :meth:`register_broker` does,
        for a registration applied in parts: first :meth:`publishes_topics`, then
        :meth:`register_broker` without topics, then this for each part. Returns ``False`` (and
        writes nothing) if the broker is no longer registered, as after an unregistration that
        came between two parts."""
        if broker_name not in self._brokers:
            return False
        for config in topic_configs:
            self._put_queue_data(broker_name, config)
        return True

    def _put_queue_data(self, broker_name: str, config: TopicConfig) -> None:
        topic = config.topic_name
        if topic is None:
            log.warning("broker %s registered a topic config without a topic name; ignored", broker_name)
            return
        queue_data = QueueData(
            broker_name=broker_name,
            read_queue_nums=config.read_queue_nums,
            write_queue_nums=config.write_queue_nums,
            perm=config.perm,
            topic_sys_flag=config.topic_sys_flag,
        )
        by_broker = self._topics.get(topic)
        if by_broker is None:
            by_broker = self._topics[topic] = JavaHashMap()
            log.info("new topic registered: %s %s", topic, queue_data)
        else:
            old = by_broker.get(broker_name)
            if old is not None and old != queue_data:
                log.info("topic %s changed: %s -> %s", topic, old, queue_data)
        by_broker[broker_name] = queue_data

    def unregister_broker(
        self, *, cluster_name: str, broker_addr: str, broker_name: str, broker_id: int
    ) -> None:
        """Record an ``UNREGISTER_BROKER`` (a broker shutting down cleanly)."""
        removed = self._live.pop(broker_addr, None)
        log.info(
            "unregister broker %s (%s, id %d): %s",
            broker_addr,
            broker_name,
            broker_id,
            "ok" if removed else "not live",
        )
        self._filter_servers.pop(broker_addr, None)
        broker = self._brokers.get(broker_name)
        if broker is None:
            return
        if broker_id in broker.addrs:
            del broker.addrs[broker_id]
        if broker.addrs:
            return
        del self._brokers[broker_name]
        names = self._clusters.get(cluster_name)
        if names is not None:
            names.discard(broker_name)
            if not names:
                del self._clusters[cluster_name]
                log.info("cluster %s has no broker left", cluster_name)
        self._remove_broker_topics(broker_name)

    # ------------------------------------------------------------------ liveness

    def on_connection_closed(self, conn: Hashable) -> list[str]:
        """Drop every broker address registered over ``conn``, at once; returns those addresses."""
        addrs = [addr for addr, live in self._live.items() if live.conn == conn]
        for addr in addrs:
            log.info("connection of broker %s closed: removing its routes", addr)
            self._remove_broker_addr(addr)
        return addrs

    def scan_not_active(self, now: float) -> list[ExpiredBroker]:
        """Drop brokers not registered for more than ``broker_expiry`` seconds before ``now``.

        Returns them with their connections, which the caller should close (RocketMQ does).
        """
        expired = [
            ExpiredBroker(addr, live.conn)
            for addr, live in self._live.items()
            if live.last_update + self._expiry < now
        ]
        for broker in expired:
            log.warning("broker %s expired: no registration for %.0f s", broker.broker_addr, self._expiry)
            self._remove_broker_addr(broker.broker_addr)
        return expired

    def _remove_broker_addr(self, broker_addr: str) -> None:
        self._live.pop(broker_addr, None)
        self._filter_servers.pop(broker_addr, None)
        found: _Broker | None = None
        for broker in self._brokers.java_values():
            for broker_id, addr in broker.addrs.java_items():
                if addr == broker_addr:
                    del broker.addrs[broker_id]
                    found = broker
                    break
            if found is not None:
                break
        if found is None or found.addrs:
            return
        del self._brokers[found.name]
        for cluster, names in self._clusters.java_items():
            if names.discard(found.name):
                if not names:
                    del self._clusters[cluster]
                    log.info("cluster %s has no broker left", cluster)
                break
        self._remove_broker_topics(found.name)

    def _remove_broker_topics(self, broker_name: str) -> None:
        # Insertion order, not Java's: the order is not observable here, and working Java's out
        # costs a Java string hash per topic (seconds for a broker of 100,000 topics).
        emptied = []
        for topic, by_broker in self._topics.items():
            if broker_name in by_broker:
                del by_broker[broker_name]
                if not by_broker:
                    emptied.append(topic)
        for topic in emptied:
            del self._topics[topic]
        if emptied:
            shown = ", ".join(emptied[:_LOGGED_TOPICS])
            more = f" and {len(emptied) - _LOGGED_TOPICS} more" if len(emptied) > _LOGGED_TOPICS else ""
            log.info("topics without any broker left, removed: %s%s", shown, more)

    def is_data_version_changed(self, broker_addr: str, data_version: DataVersion) -> bool:
        """Whether ``data_version`` differs from the one recorded for ``broker_addr`` (or none is)."""
        live = self._live.get(broker_addr)
        return live is None or live.data_version != data_version

    def data_version(self, broker_addr: str) -> DataVersion | None:
        """The topic-config ``DataVersion`` ``broker_addr`` last registered with."""
        live = self._live.get(broker_addr)
        return live.data_version if live is not None else None

    def touch(self, broker_addr: str, now: float) -> None:
        """Refresh a live broker's last-update time (an unchanged ``QUERY_DATA_VERSION`` does)."""
        live = self._live.get(broker_addr)
        if live is not None:
            self._live[broker_addr] = BrokerLiveInfo(
                broker_addr, now, live.data_version, live.conn, live.ha_server_addr
            )

    def query_data_version(
        self, broker_addr: str, data_version: DataVersion, now: float
    ) -> tuple[bool, DataVersion | None]:
        """Answer a ``QUERY_DATA_VERSION``: ``(changed, the name server's data version)``.

        An unchanged version refreshes the broker's liveness, as a registration would.
        """
        changed = self.is_data_version_changed(broker_addr, data_version)
        if not changed:
            self.touch(broker_addr, now)
        return changed, self.data_version(broker_addr)

    def live_brokers(self) -> list[BrokerLiveInfo]:
        """Every live broker address, oldest registration first."""
        return list(self._live.values())

    def live_broker(self, broker_addr: str) -> BrokerLiveInfo | None:
        return self._live.get(broker_addr)

    # ------------------------------------------------------------------ queries

    def topic_route(self, topic: str) -> TopicRouteData | None:
        """The route of ``topic`` (``None`` when no live broker hosts it: ``TOPIC_NOT_EXIST``).

        Queue datas and broker datas come in Java ``HashMap`` order of the broker names, filter
        servers for the listed brokers' addresses. ``order_topic_conf`` is left ``None`` (the
        handler adds it from the KV config).
        """
        by_broker = self._topics.get(topic)
        if by_broker is None:
            return None
        queue_datas = by_broker.java_values()
        broker_datas: list[BrokerData] = []
        filter_table: JavaHashMap[str, list[str]] = JavaHashMap()
        for name in JavaHashSet(by_broker.java_keys()):
            broker = self._brokers.get(name)
            if broker is None:
                continue
            data = broker.snapshot()
            broker_datas.append(data)
            if self._filter_servers:
                for addr in data.broker_addrs.values():
                    servers = self._filter_servers.get(addr)
                    if servers is not None:
                        filter_table[addr] = list(servers)
        if not broker_datas:
            return None
        return TopicRouteData(
            queue_datas=tuple(queue_datas),
            broker_datas=tuple(broker_datas),
            filter_server_table={addr: tuple(servers) for addr, servers in filter_table.java_items()},
        )

    def cluster_info(self) -> ClusterInfo:
        """Every broker name with its addresses, and every cluster with its broker names."""
        return ClusterInfo(
            broker_addr_table={name: broker.snapshot() for name, broker in self._brokers.java_items()},
            cluster_addr_table={cluster: tuple(names) for cluster, names in self._clusters.java_items()},
        )

    def all_topics(self) -> TopicList:
        """Every topic with a route (``GET_ALL_TOPIC_LIST_FROM_NAMESERVER``)."""
        return TopicList(topic_list=tuple(JavaHashSet(self._topics.java_keys())))

    def topics_by_cluster(self, cluster_name: str) -> TopicList:
        """Topics with queues on a broker of ``cluster_name`` (empty for an unknown cluster)."""
        topics: JavaHashSet[str] = JavaHashSet()
        for name in self._clusters.get(cluster_name) or ():
            for topic, by_broker in self._topics.java_items():
                if name in by_broker:
                    topics.add(topic)
        return TopicList(topic_list=tuple(topics))

    def system_topics(self) -> TopicList:
        """Cluster names and broker names, which RocketMQ brokers also serve as topics.

        ``broker_addr`` is an address of the first broker, for the admin tool to ask it for the
        rest (RocketMQ's ``GET_SYSTEM_TOPIC_LIST_FROM_NS``).
        """
        topics: JavaHashSet[str] = JavaHashSet()
        for cluster, names in self._clusters.java_items():
            topics.add(cluster)
            for name in names:
                topics.add(name)
        broker_addr = None
        for broker in self._brokers.java_values():
            addrs = broker.addrs.java_values()
            if addrs:
                broker_addr = addrs[0]
                break
        return TopicList(topic_list=tuple(topics), broker_addr=broker_addr)

    def _topics_where(self, first_queue_matches: Callable[[int], bool]) -> TopicList:
        topics: JavaHashSet[str] = JavaHashSet()
        for topic, by_broker in self._topics.java_items():
            values = by_broker.java_values()
            if values and first_queue_matches(values[0].topic_sys_flag):
                topics.add(topic)
        return TopicList(topic_list=tuple(topics))

    def unit_topics(self) -> TopicList:
        """Topics flagged as unit topics (``GET_UNIT_TOPIC_LIST``)."""
        return self._topics_where(lambda flag: bool(flag & _UNIT))

    def has_unit_sub_topics(self) -> TopicList:
        """Topics flagged as having unit subscriptions (``GET_HAS_UNIT_SUB_TOPIC_LIST``)."""
        return self._topics_where(lambda flag: bool(flag & _UNIT_SUB))

    def has_unit_sub_ununit_topics(self) -> TopicList:
        """Non-unit topics with unit subscriptions (``GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST``)."""
        return self._topics_where(lambda flag: not flag & _UNIT and bool(flag & _UNIT_SUB))

    # ------------------------------------------------------------------ admin

    def delete_topic(self, topic: str, cluster_name: str | None = None) -> bool:
        """Forget ``topic``: everywhere, or only its queues on ``cluster_name``'s brokers.

        Returns whether anything was removed. A broker that still has the topic brings it back
        with its next registration that carries a new data version (as in RocketMQ, the admin tool
        deletes the topic from the brokers first).
        """
        by_broker = self._topics.get(topic)
        if by_broker is None:
            return False
        if not cluster_name:
            del self._topics[topic]
            log.info("topic %s deleted", topic)
            return True
        names = self._clusters.get(cluster_name)
        if names is None:
            return False
        removed = False
        for name in names:
            if name in by_broker:
                del by_broker[name]
                removed = True
        if not by_broker:
            del self._topics[topic]
        if removed:
            log.info("topic %s deleted from cluster %s", topic, cluster_name)
        return removed

    def wipe_write_perm(self, broker_name: str) -> int:
        """Stop producers sending to ``broker_name`` (clear its write permission on every topic).

        Returns the number of topics touched (``WIPE_WRITE_PERM_OF_BROKER``).
        """
        return self._set_perm(broker_name, wipe=True)

    def add_write_perm(self, broker_name: str) -> int:
        """Give ``broker_name`` read and write permission on every topic (``ADD_WRITE_PERM_OF_BROKER``)."""
        return self._set_perm(broker_name, wipe=False)

    def _set_perm(self, broker_name: str, *, wipe: bool) -> int:
        count = 0
        for by_broker in self._topics.java_values():
            old = by_broker.get(broker_name)
            if old is None:
                continue
            perm = old.perm & ~_WRITE if wipe else _RW
            by_broker[broker_name] = QueueData(
                broker_name=old.broker_name,
                read_queue_nums=old.read_queue_nums,
                write_queue_nums=old.write_queue_nums,
                perm=perm,
                topic_sys_flag=old.topic_sys_flag,
            )
            count += 1
        return count
