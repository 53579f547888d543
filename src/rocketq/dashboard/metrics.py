"""Prometheus metrics: rocketmq-exporter's names and labels where the idea is the same, ``rocketq_`` ours.

:func:`collect` gathers one snapshot through the admin calls (and the monitor's group watches,
which every call turns on for every group: :meth:`Monitor.watch_all`), and :func:`exposition`
renders it in Prometheus' text format with ``prometheus_client``. ``docs/metrics.md`` lists every
metric with its RocketMQ equivalent; in short:

* brokers: ``rocketmq_broker_tps`` / ``rocketmq_broker_qps`` (messages in / out per second) and
  ``rocketmq_brokeruntime_*`` from GET_BROKER_RUNTIME_INFO, with the exporter's labels;
* topics: ``rocketmq_producer_offset`` (sum of max offsets per broker) and
  ``rocketmq_producer_tps`` (its rate between two collections), retry and DLQ offsets;
* groups: ``rocketmq_consumer_offset``, ``rocketmq_group_diff``, ``rocketmq_message_accumulation``,
  ``rocketmq_consumer_tps``, ``rocketmq_group_get_latency_by_storetime``, ``rocketmq_group_count``;
* replication: ``rocketmq_broker_commitlog_diff`` (a slave's lag in bytes, the exporter's) and
  ``rocketq_broker_ha_slave_lag_seconds`` (ours, in seconds);
* ours: ``rocketq_rebalances_total``, ``rocketq_queues_moved_total``, ``rocketq_duplicate_client_ids``,
  ``rocketq_queue_owners`` (should be 1), ``rocketq_queue_lag``, ``rocketq_last_rebalance_timestamp_seconds``,
  ``rocketq_namesrv_up``, ``rocketq_broker_up``.

A name server or broker that does not answer is ``rocketq_namesrv_up 0`` / ``rocketq_broker_up 0``
and its other series are left out; the endpoint itself always answers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from rocketq.admin import BrokerRuntime, SlaveLag
from rocketq.dashboard.monitor import GroupWatch, Monitor
from rocketq.errors import RocketQError
from rocketq.models import MessageQueue
from rocketq.protocol.bodies import BrokerData
from rocketq.protocol.codes import MASTER_ID
from rocketq.protocol.topics import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX

__all__ = ["CONTENT_TYPE", "MetricsCollector", "Snapshot", "collect", "exposition"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""Prometheus' text exposition format."""

_BROKER_LABELS = ["cluster", "brokerIP", "broker"]
_RUNTIME_LABELS = ["cluster", "brokerIP", "brokerHost", "des", "boottime", "broker_version"]
_TOPIC_LABELS = ["cluster", "broker", "topic"]
_GROUP_LABELS = ["cluster", "broker", "topic", "group"]
_DIFF_LABELS = ["group", "topic", "countOfOnlineConsumers", "msgModel"]
_QUEUE_LABELS = ["group", "topic", "broker", "queueid"]
_MSG_MODEL = {"BROADCASTING": "0", "CLUSTERING": "1"}  # the exporter writes MessageModel.ordinal()

# GET_BROKER_RUNTIME_INFO key -> rocketmq-exporter's rocketmq_brokeruntime_* name
_RUNTIME_GAUGES = {
    "putTps": "rocketmq_brokeruntime_put_tps10",
    "getTransferedTps": "rocketmq_brokeruntime_gettransfered_tps10",
    "msgPutTotalTodayNow": "rocketmq_brokeruntime_msg_put_total_today_now",
    "msgGetTotalTodayNow": "rocketmq_brokeruntime_msg_gettotal_today_now",
    "commitLogDiskRatio": "rocketmq_brokeruntime_commitlog_disk_ratio",
    "commitLogMaxOffset": "rocketmq_brokeruntime_commitlog_maxoffset",
    "commitLogMinOffset": "rocketmq_brokeruntime_commitlog_minoffset",
    "earliestMessageTimeStamp": "rocketmq_brokeruntime_earliest_message_timestamp",
    # rocketq's: bytes a slave is behind its master (on both; absent before the HA link is up)
    "haSlaveLagBytes": "rocketq_broker_ha_slave_lag_bytes",
}


@dataclass(slots=True)
class Snapshot:
    """The metric families of one collection."""

    families: list[Metric] = field(default_factory=list)

    def gauge(self, name: str, doc: str, labels: Sequence[str]) -> GaugeMetricFamily:
        family = GaugeMetricFamily(name, doc, labels=list(labels))
        self.families.append(family)
        return family

    def counter(self, name: str, doc: str, labels: Sequence[str]) -> CounterMetricFamily:
        family = CounterMetricFamily(name, doc, labels=list(labels))
        self.families.append(family)
        return family


class _Fixed(Collector):
    def __init__(self, families: Iterable[Metric]) -> None:
        self._families = list(families)

    def collect(self) -> Iterator[Metric]:
        yield from self._families


def exposition(snapshot: Snapshot) -> bytes:
    """The snapshot in Prometheus' text format (``prometheus_client.generate_latest``)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Fixed(snapshot.families))
    return generate_latest(registry)


class _Rates:
    """Per-second rates of counters between two collections (kept on the monitor)."""

    def __init__(self) -> None:
        self.last: dict[tuple[str, ...], tuple[float, float]] = {}

    def rate(self, key: tuple[str, ...], value: float, now: float) -> float:
        prev = self.last.get(key)
        self.last[key] = (value, now)
        if prev is None or now <= prev[1] or value < prev[0]:
            return 0.0
        return (value - prev[0]) / (now - prev[1])


class MetricsCollector:
    """Collects snapshots for one monitor, remembering offsets between collections (for rates)."""

    def __init__(self, monitor: Monitor) -> None:
        self.monitor = monitor
        self._rates = _Rates()
        self._lock = asyncio.Lock()

    async def collect(self) -> Snapshot:
        """One collection (one at a time: scrapes that overlap wait for each other)."""
        async with self._lock:
            return await collect(self.monitor, self._rates)


async def collect(m: Monitor, rates: _Rates | None = None) -> Snapshot:
    """One collection: cluster, brokers, topics, then every group (see the module docstring)."""
    m.watch_all()
    snap = Snapshot()
    now = m.now_ms() / 1000
    rates = rates if rates is not None else _Rates()
    namesrv_up = snap.gauge("rocketq_namesrv_up", "1 when a name server answered this collection", [])
    try:
        info = await m.cached("cluster", 1.0, m.admin.cluster_info)
    except RocketQError:
        namesrv_up.add_metric([], 0)
        return snap
    namesrv_up.add_metric([], 1)
    cluster_of = {name: c for c, names in info.cluster_addr_table.items() for name in names}
    addrs = {
        addr: (name, bid)
        for name, bd in info.broker_addr_table.items()
        for bid, addr in bd.broker_addrs.items()
    }
    runtimes = await m.gather_settled(addrs, m.admin.broker_runtime)
    up = snap.gauge("rocketq_broker_up", "1 when the broker answered this collection", _BROKER_LABELS)
    tps = snap.gauge("rocketmq_broker_tps", "Messages the broker stored per second (putTps)", _BROKER_LABELS)
    qps = snap.gauge(
        "rocketmq_broker_qps",
        "Messages the broker sent to consumers per second (getTransferedTps)",
        _BROKER_LABELS,
    )
    runtime_families = {
        key: snap.gauge(name, f"GET_BROKER_RUNTIME_INFO {key}", _RUNTIME_LABELS)
        for key, name in _RUNTIME_GAUGES.items()
    }
    masters: dict[str, str] = {}
    for addr, (name, bid) in sorted(addrs.items()):
        cluster = cluster_of.get(name, "")
        rt = runtimes[addr]
        up.add_metric([cluster, addr, name], 0 if isinstance(rt, RocketQError) else 1)
        if isinstance(rt, RocketQError):
            continue
        if bid == MASTER_ID:
            masters[name] = addr
            assert isinstance(rt, BrokerRuntime)
            tps.add_metric([cluster, addr, name], rt.put_tps or 0.0)
            qps.add_metric([cluster, addr, name], rt.get_tps or 0.0)
        host = addr.rpartition(":")[0]
        labels = [
            cluster,
            addr,
            host,
            "MASTER" if bid == MASTER_ID else f"SLAVE{bid}",
            str(rt.boot_ms or ""),
            rt.version,
        ]
        for key, family in runtime_families.items():
            value = rt.first_number(key)
            if value is not None:
                family.add_metric(labels, value)
    _slave_lags(snap, info.broker_addr_table, runtimes, cluster_of)
    await _topics(m, snap, masters, cluster_of, rates, now)
    await _groups(m, snap, cluster_of, rates, now)
    return snap


def _slave_lags(
    snap: Snapshot,
    brokers: Mapping[str, BrokerData],
    runtimes: Mapping[str, BrokerRuntime | RocketQError],
    cluster_of: Mapping[str, str],
) -> None:
    """Each slave's lag behind its master from the two runtime tables of this collection:
    rocketmq-exporter's ``rocketmq_broker_commitlog_diff`` (bytes, its labels: the slave's
    address) and ours in seconds, ``rocketq_broker_ha_slave_lag_seconds``."""
    diff = snap.gauge(
        "rocketmq_broker_commitlog_diff",
        "Bytes of the master's commit log its slave does not have (master's max offset less the slave's)",
        _BROKER_LABELS,
    )
    seconds = snap.gauge(
        "rocketq_broker_ha_slave_lag_seconds",
        "Store time of the master's newest message less the slave's newest (0 when the slave has every byte)",
        _BROKER_LABELS,
    )
    for name, bd in sorted(brokers.items()):
        master_addr = bd.broker_addrs.get(MASTER_ID)
        master = runtimes.get(master_addr) if master_addr is not None else None
        if not isinstance(master, BrokerRuntime):
            continue
        for bid, addr in sorted(bd.broker_addrs.items()):
            slave = runtimes.get(addr)
            if bid == MASTER_ID or not isinstance(slave, BrokerRuntime):
                continue
            lag = SlaveLag.between(name, bid, master, slave)
            labels = [cluster_of.get(name, ""), addr, name]
            if lag.lag_bytes is not None:
                diff.add_metric(labels, lag.lag_bytes)
            if lag.lag_seconds is not None:
                seconds.add_metric(labels, lag.lag_seconds)


async def _topics(
    m: Monitor,
    snap: Snapshot,
    masters: dict[str, str],
    cluster_of: dict[str, str],
    rates: _Rates,
    now: float,
) -> None:
    configs = await m.gather_settled(masters, lambda name: m.admin.topic_configs(masters[name]))
    topics = sorted({t for c in configs.values() if not isinstance(c, RocketQError) for t in c})
    stats = await m.gather_settled(topics, m.admin.topic_stats)
    offset = snap.gauge(
        "rocketmq_producer_offset", "Sum of the topic's max offsets on the broker", _TOPIC_LABELS
    )
    tps = snap.gauge(
        "rocketmq_producer_tps",
        "Messages produced per second (rate of rocketmq_producer_offset)",
        _TOPIC_LABELS,
    )
    retry = snap.gauge("rocketmq_topic_retry_offset", "Sum of a retry topic's max offsets", _TOPIC_LABELS)
    dlq = snap.gauge(
        "rocketmq_topic_dlq_offset",
        "Sum of a dead-letter topic's max offsets",
        ["cluster", "broker", "group"],
    )
    for topic in topics:
        st = stats[topic]
        if isinstance(st, RocketQError):
            continue
        per_broker: dict[str, int] = {}
        for q in st.queues:
            per_broker[q.queue.broker_name] = per_broker.get(q.queue.broker_name, 0) + q.max_offset
        for broker, total in sorted(per_broker.items()):
            cluster = cluster_of.get(broker, "")
            if topic.startswith(DLQ_GROUP_TOPIC_PREFIX):
                dlq.add_metric([cluster, broker, topic[len(DLQ_GROUP_TOPIC_PREFIX) :]], total)
            elif topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                retry.add_metric([cluster, broker, topic], total)
            else:
                offset.add_metric([cluster, broker, topic], total)
                tps.add_metric([cluster, broker, topic], rates.rate(("p", broker, topic), total, now))


async def _groups(m: Monitor, snap: Snapshot, cluster_of: dict[str, str], rates: _Rates, now: float) -> None:
    # the watches of groups never polled yet are polled now, so the first scrape has them
    fresh = [w for w in m.watches.values() if not w.polled_ms and not w.error]
    if fresh:
        await asyncio.gather(*(m.poll_now(w.group) for w in fresh))
    watches = sorted((w for w in m.watches.values() if w.progress is not None), key=lambda w: w.group)
    consumer_offset = snap.gauge(
        "rocketmq_consumer_offset",
        "Sum of the group's committed offsets of the topic on the broker",
        _GROUP_LABELS,
    )
    accumulation = snap.gauge(
        "rocketmq_message_accumulation",
        "Messages of the topic on the broker the group has not committed",
        _GROUP_LABELS,
    )
    consumer_tps = snap.gauge(
        "rocketmq_consumer_tps", "Messages the group committed per second (rate of rocketmq_consumer_offset)",
        _GROUP_LABELS,
    )  # fmt: skip
    latency = snap.gauge(
        "rocketmq_group_get_latency_by_storetime",
        "Milliseconds since the store time of the group's oldest unconsumed message (0 when caught up)",
        _GROUP_LABELS,
    )
    diff = snap.gauge(
        "rocketmq_group_diff", "Messages of the topic the group has not committed", _DIFF_LABELS
    )
    count = snap.gauge(
        "rocketmq_group_count", "Online consumer connections of the group", ["caddr", "localaddr", "group"]
    )
    rebalances = snap.counter(
        "rocketq_rebalances", "Changes of the group's members or queue owners the monitor observed", ["group"]
    )
    moved = snap.counter(
        "rocketq_queues_moved",
        "Queues that changed from one consumer to another, as observed",
        ["group", "topic"],
    )
    dup = snap.gauge(
        "rocketq_duplicate_client_ids", "Client ids registered by more than one connection", ["group"]
    )
    owners = snap.gauge(
        "rocketq_queue_owners", "Consumer connections that own the queue (1 is healthy)", _QUEUE_LABELS
    )
    queue_lag = snap.gauge(
        "rocketq_queue_lag", "Messages of the queue the group has not committed", _QUEUE_LABELS
    )
    last = snap.gauge(
        "rocketq_last_rebalance_timestamp_seconds", "When the monitor last saw the group change", ["group"]
    )
    latencies = await _latencies(m, watches)
    for w in watches:
        assert w.progress is not None
        g = w.group
        members = w.members.members if w.members is not None else ()
        model = _MSG_MODEL.get(w.members.message_model or "", "1") if w.members else "1"
        online = sum(max(len(mb.addresses), 1) for mb in members)
        count.add_metric(
            [
                ",".join(a for mb in members for a in mb.addresses),
                ",".join(mb.client_id for mb in members),
                g,
            ],
            online,
        )
        per_bt: dict[tuple[str, str], list[int]] = {}
        per_topic: dict[str, int] = {}
        for q in w.progress.queues:
            key = (q.queue.broker_name, q.queue.topic)
            agg = per_bt.setdefault(key, [0, 0])
            agg[0] += q.consumer_offset
            agg[1] += q.lag
            per_topic[q.queue.topic] = per_topic.get(q.queue.topic, 0) + q.lag
            qlabels = [g, q.queue.topic, q.queue.broker_name, str(q.queue.queue_id)]
            queue_lag.add_metric(qlabels, q.lag)
            owners.add_metric(qlabels, w.owner_counts.get(q.queue, 0))
        for (broker, topic), (committed, lag) in sorted(per_bt.items()):
            labels = [cluster_of.get(broker, ""), broker, topic, g]
            consumer_offset.add_metric(labels, committed)
            accumulation.add_metric(labels, lag)
            consumer_tps.add_metric(labels, rates.rate(("c", broker, topic, g), committed, now))
            latency.add_metric(labels, latencies.get((g, broker, topic), 0))
        for topic, lag in sorted(per_topic.items()):
            diff.add_metric([g, topic, str(online), model], lag)
        t = w.timeline
        rebalances.add_metric([g], t.rebalances)
        for topic in sorted({q.queue.topic for q in w.progress.queues} | set(t.moves_by_topic)):
            moved.add_metric([g, topic], t.moves_by_topic.get(topic, 0))
        dup.add_metric([g], len({d.client_id for d in (w.members.duplicates if w.members else ())}))
        if t.last_change_ms is not None:
            last.add_metric([g], t.last_change_ms / 1000)


async def _latencies(m: Monitor, watches: Sequence[GroupWatch]) -> dict[tuple[str, str, str], float]:
    """Per (group, broker, topic): ms since the oldest unconsumed message was stored (as the
    exporter computes it: the message at each lagging queue's committed offset)."""
    lagging: list[tuple[str, MessageQueue, int]] = [
        (w.group, q.queue, q.consumer_offset)
        for w in watches
        if w.progress is not None
        for q in w.progress.queues
        if q.lag > 0
    ]
    now_ms = m.now_ms()

    async def one(item: tuple[str, MessageQueue, int]) -> tuple[tuple[str, str, str], float]:
        g, mq, offset = item
        key = (g, mq.broker_name, mq.topic)
        try:
            msg = await m.limited(lambda: m.admin.message_at(mq, offset))
        except RocketQError:
            return key, 0.0
        return key, float(max(now_ms - msg.store_timestamp, 0)) if msg is not None else 0.0

    out: dict[tuple[str, str, str], float] = {}
    for key, value in await asyncio.gather(*(one(i) for i in lagging)):
        out[key] = max(out.get(key, 0.0), value)
    return out
