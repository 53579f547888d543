"""What each page shows, as plain data: gathered through the admin calls, errors as text.

Every function takes the :class:`~rocketq.dashboard.monitor.Monitor` and returns a dict the
templates render (and the JSON endpoints return). A broker that does not answer becomes an
``error`` on its row, not a failed page; a name server that does not answer raises the admin's
:class:`~rocketq.errors.RocketQError`, which the app shows as the page's banner.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import re
import zlib
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from rocketq.admin import (
    BrokerRuntime,
    GroupMembers,
    SlaveLag,
    TraceEvent,
    is_protected_topic,
    message_dict,
    parse_time,
    system_topic_role,
)
from rocketq.allocate import AllocationStrategy, Balance, get_strategy, strategy_names
from rocketq.allocate.examples import broker_names, client_ids, plan_change
from rocketq.client.message import Message
from rocketq.dashboard.monitor import GroupWatch, Monitor, TpsPoint, is_user_group
from rocketq.errors import ConfigError, RocketQError, UnknownTopicError
from rocketq.models import MessageQueue
from rocketq.protocol.bodies import SubscriptionGroupConfig, TopicConfig
from rocketq.protocol.codes import MASTER_ID, version_name
from rocketq.protocol.message import MessageExt
from rocketq.protocol.properties import MessageConst
from rocketq.protocol.topics import (
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    is_system_topic,
    perm_to_string,
)

__all__ = [
    "PALETTE",
    "cluster_view",
    "colour_of",
    "group_state",
    "groups_view",
    "message_view",
    "planner_view",
    "queue_key",
    "topic_kind",
    "topic_view",
    "topics_view",
]

PALETTE = (
    "#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948",
    "#ff9da7", "#9c755f", "#e15759", "#86bcb6", "#8cd17d", "#d4a6c8",
)  # fmt: skip
"""Owner colours (Tableau 10 and friends): one per consumer, kept while a group is watched."""

_LAG_POINTS = 120  # per-queue lag history sent to the browser (the total keeps the whole history)


def queue_key(mq: MessageQueue) -> str:
    """``topic@broker:id``, the queue's label everywhere in the dashboard."""
    return f"{mq.topic}@{mq.broker_name}:{mq.queue_id}"


def colour_of(cid: str, taken: dict[str, str]) -> str:
    """A stable colour for ``cid`` within one watch (``taken`` remembers the ones given)."""
    colour = taken.get(cid)
    if colour is None:
        used = set(taken.values())
        free = [c for c in PALETTE if c not in used]
        colour = free[0] if free else PALETTE[zlib.crc32(cid.encode()) % len(PALETTE)]
        taken[cid] = colour
    return colour


def topic_kind(topic: str) -> str:
    """``retry``, ``dlq``, ``system`` or ``normal``."""
    if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return "retry"
    if topic.startswith(DLQ_GROUP_TOPIC_PREFIX):
        return "dlq"
    if is_system_topic(topic) or topic.startswith("RQ_SYS_"):
        return "system"
    return "normal"


def _fmt_ms(ms: int | None) -> str:
    if not ms or ms <= 0:
        return "-"
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")


_RUNTIME = re.compile(r"(\d+)\s*days?,\s*(\d+)\s*hours?,\s*(\d+)\s*minutes?,\s*(\d+)\s*seconds?")


def uptime_text(runtime: str) -> str:
    """A broker's ``runtime`` (``[ 0 days, 0 hours, 3 minutes, 18 seconds ]``) as a person says
    it: ``3 min 18 s``, ``2 h 5 min``, ``4 d 7 h``; the text as given when it is not that form."""
    m = _RUNTIME.search(runtime)
    if m is None:
        return runtime.strip(" []") or "-"
    d, h, mi, sec = (int(x) for x in m.groups())
    if d:
        return f"{d} d {h} h"
    if h:
        return f"{h} h {mi} min"
    if mi:
        return f"{mi} min {sec} s"
    return f"{sec} s"


# ------------------------------------------------------------------------------------ cluster


async def _brokers(m: Monitor) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Every broker (masters and slaves) with its runtime figures; ``{name: master address}``."""
    info = await m.cached("cluster", 2.0, m.admin.cluster_info)
    cluster_of = {name: c for c, names in info.cluster_addr_table.items() for name in names}
    addrs = {
        addr: (name, bid)
        for name, bd in sorted(info.broker_addr_table.items())
        for bid, addr in sorted(bd.broker_addrs.items())
    }
    runtimes = await m.gather_settled(addrs, m.admin.broker_runtime)
    rows = []
    masters: dict[str, str] = {}
    for addr, (name, bid) in addrs.items():
        rt = runtimes[addr]
        row: dict[str, Any] = {
            "cluster": cluster_of.get(name, "?"),
            "name": name,
            "id": bid,
            "role": "master" if bid == MASTER_ID else f"slave {bid}",
            "addr": addr,
        }
        if isinstance(rt, BrokerRuntime):
            row.update(rt.to_dict())
            row["table"] = dict(sorted(rt.table.items()))
            row["uptime"] = uptime_text(rt.table.get("runtime", ""))
            row["error"] = None
        else:
            row["error"] = str(rt)
        rows.append(row)
        if bid == MASTER_ID:
            masters[name] = addr
    for row in rows:  # a slave's lag behind its master, from the two runtime tables just read
        if row["id"] == MASTER_ID or row["error"] is not None:
            continue
        master = runtimes.get(masters.get(row["name"], ""))
        slave = runtimes[row["addr"]]
        if isinstance(master, BrokerRuntime) and isinstance(slave, BrokerRuntime):
            row["lag"] = SlaveLag.between(row["name"], row["id"], master, slave).to_dict()
        else:
            row["lag"] = {"lag_bytes": None, "lag_seconds": None, "error": "its master did not answer"}
    return rows, masters


async def _topic_table(
    m: Monitor, masters: Mapping[str, str]
) -> tuple[dict[str, dict[str, TopicConfig]], dict[str, str]]:
    """``topic → {broker name: config}`` from every master's topic configs, and per-broker errors."""
    answers = await m.gather_settled(
        masters,
        lambda name: m.cached(f"topics:{masters[name]}", 2.0, lambda: m.admin.topic_configs(masters[name])),
    )
    table: dict[str, dict[str, TopicConfig]] = {}
    errors: dict[str, str] = {}
    for name, answer in answers.items():
        if isinstance(answer, RocketQError):
            errors[name] = str(answer)
            continue
        for topic, config in answer.items():
            table.setdefault(topic, {})[name] = config
    return dict(sorted(table.items())), errors


def _topic_rows(table: Mapping[str, Mapping[str, TopicConfig]], reserved: set[str]) -> list[dict[str, Any]]:
    """Rows of the topic tables; ``reserved``: cluster and broker names (topics a broker makes)."""
    return [
        {
            "topic": topic,
            "kind": "system" if topic in reserved else topic_kind(topic),
            "brokers": len(per),
            "read_queues": sum(c.read_queue_nums for c in per.values()),
            "write_queues": sum(c.write_queue_nums for c in per.values()),
            "perm": ", ".join(sorted({perm_to_string(c.perm) for c in per.values()})),
            "order": any(c.order for c in per.values()),
        }
        for topic, per in table.items()
    ]


async def cluster_view(m: Monitor) -> dict[str, Any]:
    """Name servers, brokers (address, version, TPS in and out, disk use), topics with queues."""
    brokers, masters = await _brokers(m)
    table, errors = await _topic_table(m, masters)
    topics = _topic_rows(table, _reserved(brokers))
    return {
        "namesrv_addrs": list(m.admin.namesrv_addrs),
        "brokers": brokers,
        "topics": [t for t in topics if t["kind"] == "normal"],
        "other_topics": len([t for t in topics if t["kind"] != "normal"]),
        "errors": errors,
        "tps": tps_charts(m),
        "topic_tps": topic_tps_charts(m),
        "topic_sample_interval": m.config.topic_sample_interval,
        "sample_interval": m.config.sample_interval,
        "tps_window": m.config.tps_window,
    }


async def topics_view(m: Monitor) -> dict[str, Any]:
    """Every topic with its queue counts, kind and permission."""
    brokers, masters = await _brokers(m)
    table, errors = await _topic_table(m, masters)
    return {"topics": _topic_rows(table, _reserved(brokers)), "errors": errors, "brokers": sorted(masters)}


def _reserved(brokers: Sequence[Mapping[str, Any]]) -> set[str]:
    return {str(b["cluster"]) for b in brokers} | {str(b["name"]) for b in brokers}


async def topic_view(m: Monitor, topic: str) -> dict[str, Any]:
    """A topic's queues per broker with their offsets, and the groups consuming it."""
    route = await m.admin.topic_route(topic)
    stats = await m.admin.topic_stats(topic)
    try:
        groups = await m.admin.topic_consumers(topic)
        groups_error = None
    except RocketQError as exc:
        groups, groups_error = [], str(exc)
    order = await m.admin.order_conf(topic)
    info = await m.cached("cluster", 2.0, m.admin.cluster_info)
    clusters, brokers = set(info.cluster_addr_table), set(info.broker_addr_table)
    per_broker = []
    for qd in sorted(route.queue_datas, key=lambda q: q.broker_name or ""):
        queues = [
            {
                "queue_id": q.queue.queue_id,
                "min_offset": q.min_offset,
                "max_offset": q.max_offset,
                "messages": q.messages,
                "last_update": _fmt_ms(q.last_update_ms),
                "slave_max_offset": q.slave_max_offset,
            }
            for q in stats.queues
            if q.queue.broker_name == qd.broker_name
        ]
        per_broker.append(
            {
                "broker": qd.broker_name,
                "read_queues": qd.read_queue_nums,
                "write_queues": qd.write_queue_nums,
                "perm": qd.perm,
                "perm_text": perm_to_string(qd.perm),
                "queues": queues,
                "messages": sum(q.messages for q in stats.queues if q.queue.broker_name == qd.broker_name),
                "slaves": [lag.to_dict() for lag in stats.slaves if lag.broker_name == qd.broker_name],
            }
        )
    return {
        "topic": topic,
        "kind": topic_kind(topic),
        "protected": is_protected_topic(topic, clusters | brokers),
        "role": system_topic_role(topic, clusters, brokers),
        "order": order,
        "brokers": per_broker,
        "total_messages": stats.total_messages,
        "groups": groups,
        "groups_error": groups_error,
        "tps": topic_tps_chart(m, topic),
        "topic_sample_interval": m.config.topic_sample_interval,
    }


# ------------------------------------------------------------------------------------ groups


async def groups_view(m: Monitor, *, show_all: bool = False) -> dict[str, Any]:
    """Every consumer group the brokers know: online connections and total lag."""
    names = await m.cached("groups", 2.0, m.admin.consumer_groups)
    shown = [g for g in names if show_all or is_user_group(g)]
    conns = await m.gather_settled(shown, m.admin.consumer_connection)
    progress = await m.gather_settled(shown, lambda g: m.admin.group_progress(g, members=GroupMembers(g, ())))
    rows = []
    for g in shown:
        c = conns[g]
        p = progress[g]
        online = sum(len(cc.connection_set) for cc in c.values()) if isinstance(c, dict) else None
        rows.append(
            {
                "group": g,
                "online": online,
                "model": next((str(cc.message_model) for cc in c.values() if cc.message_model), "-")
                if isinstance(c, dict)
                else "-",
                "topics": sorted({q.queue.topic for q in p.queues})
                if not isinstance(p, RocketQError)
                else [],
                "lag": p.total_lag if not isinstance(p, RocketQError) else None,
                "tps": p.consume_tps if not isinstance(p, RocketQError) else None,
                "error": str(c) if isinstance(c, RocketQError) else None,
                "watched": g in m.watches,
            }
        )
    return {"groups": rows, "hidden": len(names) - len(shown), "show_all": show_all}


def group_state(m: Monitor, w: GroupWatch) -> dict[str, Any]:
    """The live state of a watched group, for its page and ``/api/groups/{group}``."""
    now_ms = m.now_ms()
    t = w.timeline
    colours = w.colours
    members = w.members.members if w.members is not None else ()
    for cid in sorted({*(mb.client_id for mb in members), *(c for cs in t.owners.values() for c in cs)}):
        colour_of(cid, colours)
    all_stretches = t.stretches(now_ms)
    for ss in all_stretches.values():  # consumers that left keep the colour they had
        for s in ss:
            colour_of(s.owner, colours)
    progress = {q.queue: q for q in w.progress.queues} if w.progress is not None else {}
    all_queues = sorted({*progress, *t.owners}, key=lambda q: (q.topic.startswith("%"), q))
    lag_points = list(t.lag)[-_LAG_POINTS:]
    queues = []
    for mq in all_queues:
        p = progress.get(mq)
        owners = list(t.owners.get(mq, ()))
        queues.append(
            {
                "key": queue_key(mq),
                "topic": mq.topic,
                "broker": mq.broker_name,
                "queue_id": mq.queue_id,
                "owners": owners,
                "owner_count": w.owner_counts.get(mq, len(owners)),
                "colour": colours[owners[0]] if owners else None,
                "broker_offset": p.broker_offset if p else None,
                "consumer_offset": p.consumer_offset if p else None,
                "lag": p.lag if p else None,
                "lag_history": [pt.per_queue.get(mq, 0) for pt in lag_points],
            }
        )
    stretches = {
        queue_key(mq): [
            {"owner": s.owner, "from_ms": s.from_ms, "to_ms": s.to_ms, "colour": colours.get(s.owner, "#999")}
            for s in ss
        ]
        for mq, ss in all_stretches.items()
    }
    dups = w.members.duplicates if w.members is not None else ()
    return {
        "group": w.group,
        "now_ms": now_ms,
        "polled_ms": w.polled_ms,
        "history_ms": t.history_ms,
        "error": w.error,
        "unknown": w.unknown,
        "message_model": w.members.message_model if w.members else None,
        "consume_type": w.members.consume_type if w.members else None,
        "subscriptions": dict(w.members.subscriptions) if w.members else {},
        "members": [
            {
                "client_id": mb.client_id,
                "addresses": list(mb.addresses),
                "language": mb.language,
                "version": mb.version_name,
                "strategy": mb.strategy,
                "queues_source": mb.queues_source,
                "queue_count": len(mb.queues),
                "duplicate": mb.duplicate,
                "error": mb.error,
                "colour": colours.get(mb.client_id),
            }
            for mb in members
        ],
        "duplicates": [
            {"client_id": d.client_id, "addresses": list(d.addresses), "broker": d.broker_addr} for d in dups
        ],
        "queues": queues,
        "total_lag": sum(q["lag"] or 0 for q in queues),
        "consume_tps": w.progress.consume_tps if w.progress else None,
        "lag": [{"at_ms": pt.at_ms, "total": pt.total} for pt in t.lag],
        "lag_times": [pt.at_ms for pt in lag_points],
        "changes": [c.to_dict() for c in reversed(t.changes)],
        "stretches": stretches,
        "rebalances": t.rebalances,
        "queues_moved": t.queues_moved,
        "traced": bool(t.notes),
    }


# ------------------------------------------------------------------------------------ messages


def _message_row(msg: MessageExt) -> dict[str, Any]:
    body = msg.body.decode("utf-8", "replace")
    return {
        "msg_id": msg.msg_id,
        "offset_msg_id": msg.offset_msg_id,
        "topic": msg.topic,
        "queue": f"{msg.queue_id}",
        "queue_offset": msg.queue_offset,
        "tags": msg.tags or "",
        "keys": msg.keys or "",
        "born": _fmt_ms(msg.born_timestamp),
        "stored": _fmt_ms(msg.store_timestamp),
        "born_host": str(msg.born_host),
        "store_host": str(msg.store_host),
        "reconsume_times": msg.reconsume_times,
        "size": len(msg.body),
        "body": body if len(body) <= 4096 else body[:4096] + "…",
        "properties": dict(sorted(msg.properties.items())),
    }


def _parse_queue(text: str, topic: str) -> MessageQueue:
    broker, sep, qid = text.strip().rpartition(":")
    if not sep or not broker or not qid.isdigit():
        raise ConfigError(f"queue must look like broker-a:3, got {text!r}")
    return MessageQueue(topic, broker, int(qid))


def _trace_row(e: TraceEvent) -> dict[str, Any]:
    return {
        "kind": e.kind,
        "time": _fmt_ms(e.timestamp),
        "group": e.group,
        "client": e.client,
        "host": e.host,
        "cost": "" if e.cost_ms is None else f"{e.cost_ms} ms",
        "status": e.status,
        "ok": e.success is not False,
        "retry": e.retry_times,
    }


def trace_graph(events: Sequence[TraceEvent]) -> dict[str, Any] | None:
    """RocketMQ Dashboard's trace graph as SVG geometry: one row per event (sent, each group's
    consume, transaction ends), a bar from when it began for as long as it took, on one time axis
    from the send; ``None`` without events."""
    if not events:
        return None
    left, width, row = 230, 820, 30
    starts = [e.timestamp for e in events]
    ends = [e.timestamp + (e.cost_ms or 0) for e in events]
    t0, t1 = min(starts), max(*ends, min(starts) + 1)
    scale = (width - left - 20) / (t1 - t0)
    bars = []
    for i, e in enumerate(events):
        x = left + (e.timestamp - t0) * scale
        bars.append(
            {
                "y": 10 + i * row,
                "x": round(x, 1),
                "w": round(max((e.cost_ms or 0) * scale, 3.0), 1),
                "label": f"{e.kind} {e.group}"[:34],
                "text": f"+{e.timestamp - t0} ms"
                + (f", took {e.cost_ms} ms" if e.cost_ms is not None else ""),
                "ok": e.success is not False,
                "colour": {"sent": "#4e79a7", "consumed": "#59a14f"}.get(e.kind, "#b07aa1"),
            }
        )
    return {"width": width, "height": 20 + len(events) * row, "left": left, "bars": bars, "span": t1 - t0}


PAGE_SIZE = 50
"""Messages per page of a search."""
SCAN_LIMIT = 20_000
"""Messages a search reads at most when the brokers' index cannot answer it (a key held by more
than the 64 messages a broker's index returns, or a search by time range): beyond, the count is
"at least" and the page says to narrow the range."""
_INDEX_MAX = 64  # messages a broker's index answers per QUERY_MESSAGE (RocketMQ's maxMsgsNumBatch)


def _summary_row(msg: MessageExt) -> dict[str, Any]:
    body = msg.body.decode("utf-8", "replace")
    return {
        "msg_id": msg.msg_id,
        "topic": msg.topic,
        "queue": str(msg.queue_id),
        "host": str(msg.store_host),
        "queue_offset": msg.queue_offset,
        "store_ms": msg.store_timestamp,
        "stored": _fmt_ms(msg.store_timestamp),
        "tags": msg.tags or "",
        "keys": msg.keys or "",
        "size": len(msg.body),
        "preview": body if len(body) <= 80 else body[:80] + "…",
    }


async def _scan(
    m: Monitor, topic: str, key: str | None, begin_ms: int, end_ms: int | None
) -> tuple[list[dict[str, Any]], bool, int]:
    """Every message of ``topic`` stored in ``[begin_ms, end_ms]`` (with ``key`` among its keys),
    read queue by queue (at most :data:`SCAN_LIMIT` messages); the rows, whether the scan read
    everything, and how many messages it read."""
    stats = await m.admin.topic_stats(topic)
    budget = [SCAN_LIMIT]
    rows: list[dict[str, Any]] = []
    complete = [True]

    async def one(q: Any) -> None:
        mq = q.queue
        lo, hi = q.min_offset, q.max_offset
        if hi <= lo:
            return
        if begin_ms > 0:
            lo = max(lo, await m.limited(lambda: m.admin.offset_at_time(mq, begin_ms)) - 1)
        if end_ms is not None:
            hi = min(hi, await m.limited(lambda: m.admin.offset_at_time(mq, end_ms)) + 2)
        offset = lo
        while offset < hi:
            if budget[0] <= 0:
                complete[0] = False
                return
            read = await m.limited(functools.partial(m.admin.read_queue, mq, offset, 32))
            if not read.messages:
                break
            budget[0] -= len(read.messages)
            for msg in read.messages:
                if msg.queue_offset >= hi:
                    break
                if msg.store_timestamp < begin_ms or (end_ms is not None and msg.store_timestamp > end_ms):
                    continue
                if key is not None and key not in (msg.keys or "").split():
                    continue
                rows.append(_summary_row(msg))
            offset = read.next_offset if read.next_offset > offset else offset + len(read.messages)

    await asyncio.gather(*(one(q) for q in stats.queues))
    return rows, complete[0], SCAN_LIMIT - budget[0]


async def search_messages(
    m: Monitor, topic: str, key: str | None, begin_ms: int, end_ms: int | None, page: int
) -> dict[str, Any]:
    """A search by key and/or time range, newest first, one page of :data:`PAGE_SIZE` rows with
    the true count. A key is looked up in the brokers' index first; when the index holds as many
    as it answers (64 per broker), the count is not known from it, and the topic's messages of the
    range are read instead (as they are for a search by time range alone)."""
    cache = f"search:{topic}\0{key}\0{begin_ms}\0{end_ms}"

    async def run() -> tuple[list[dict[str, Any]], bool, int, str]:
        if key is not None:
            # the index keeps store times to the second, counted from its file's first message:
            # ask a second more on each side, then keep the range to the millisecond
            found = await m.admin.query_message(
                topic,
                key,
                begin=max(begin_ms - begin_ms % 1000 - 1000, 0),
                end=None if end_ms is None else end_ms - end_ms % 1000 + 1000,
                max_num=_INDEX_MAX,
            )
            if len(found) < _INDEX_MAX:
                kept = [
                    msg
                    for msg in found
                    if begin_ms <= msg.store_timestamp and (end_ms is None or msg.store_timestamp <= end_ms)
                ]
                return [_summary_row(msg) for msg in kept], True, 0, "index"
        rows, done, read = await _scan(m, topic, key, begin_ms, end_ms)
        return rows, done, read, "scan"

    rows, complete, scanned, how = await m.cached(cache, 30.0, run)
    rows = sorted(rows, key=lambda r: (-r["store_ms"], r["host"], r["queue"], -r["queue_offset"]))
    pages = max(1, -(-len(rows) // PAGE_SIZE))
    page = min(max(page, 1), pages)
    first = (page - 1) * PAGE_SIZE
    return {
        "rows": rows[first : first + PAGE_SIZE],
        "count": len(rows),
        "exact": complete,
        "scanned": scanned,
        "how": how,
        "page": page,
        "pages": pages,
        "first": first + 1 if rows else 0,
        "last": min(first + PAGE_SIZE, len(rows)),
    }


async def _offset_refusal(m: Monitor, mq: MessageQueue, text: str) -> ConfigError:
    """The refusal of an offset that is not one: negative (-1 is no offset: queue offsets count up
    from 0, and RocketMQ's tools take none below the queue's min), with the queue's offsets."""
    read = await m.admin.read_queue(mq, 0, 1)
    held = (
        f"it holds offsets {read.min_offset}..{read.max_offset - 1}, the newest is {read.max_offset - 1}"
        if read.max_offset > read.min_offset
        else "it holds no message"
    )
    return ConfigError(
        f"offset {text} is not an offset of queue {mq.broker_name}:{mq.queue_id}: offsets count up "
        f"from 0 ({held})"
    )


def _time_param(params: Mapping[str, str], name: str) -> int | None:
    text = (params.get(name) or "").strip()
    return parse_time(text) if text else None


async def message_view(m: Monitor, params: Mapping[str, str]) -> dict[str, Any]:
    """Look-ups by message id (in a topic, or an offset id alone), by key (paged, with the true
    count, in a time range), by topic and time range (paged), or by queue and offset; a
    message's trace (``trace=<msg id>``: its trace records, as RocketMQ's dashboard shows them)."""
    topic = (params.get("topic") or "").strip()
    msg_id = (params.get("id") or "").strip()
    key = (params.get("key") or "").strip()
    queue = (params.get("queue") or "").strip()
    offset = (params.get("offset") or "").strip()
    traced = (params.get("trace") or "").strip()
    begin = _time_param(params, "begin")
    end = _time_param(params, "end")
    page_text = (params.get("page") or "1").strip()
    page = int(page_text) if page_text.isdigit() else 1
    out: dict[str, Any] = {
        "form": dict(params),
        "messages": None,
        "asked": None,
        "trace": None,
        "search": None,
    }
    if traced:
        trace = await m.admin.message_trace(traced, topic=topic or None)
        out["asked"] = trace.msg_id
        out["trace"] = [_trace_row(e) for e in trace.events]
        out["graph"] = trace_graph(trace.events)
        out["messages"] = [_message_row(trace.message)] if trace.message is not None else []
        return out
    if msg_id:
        out["asked"] = f"message id {msg_id}" + (f" in {topic}" if topic else "")
        found = await m.admin.view_message(msg_id, topic=topic or None)
    elif queue or offset:
        if not (topic and queue and offset):
            raise ConfigError(
                "a look-up by queue and offset needs the topic, the queue (broker-a:3) and the offset"
            )
        if not re.fullmatch(r"-?\d+", offset):
            raise ConfigError(f"offset must be a number, got {offset!r}")
        mq = _parse_queue(queue, topic)
        if int(offset) < 0:
            raise await _offset_refusal(m, mq, offset)
        out["asked"] = f"offset {offset} of {queue_key(mq)}"
        one = await m.admin.message_at(mq, int(offset))
        found = [one] if one is not None else []
    elif key or begin is not None or end is not None:
        if not topic:
            raise ConfigError("a search by key or time range needs the topic")
        if begin is not None and end is not None and end < begin:
            raise ConfigError("the time range is empty: its end is before its begin")
        span = " between " + _fmt_ms(begin or 0) + " and " + (_fmt_ms(end) if end else "now")
        out["asked"] = (f"key {key} in {topic}" if key else f"{topic}") + (
            span if begin is not None or end is not None else ""
        )
        out["search"] = await search_messages(m, topic, key or None, begin or 0, end, page)
        return out
    else:
        return out
    rows = []
    for x in found[:8]:  # whether each group consumed it: a few requests per message
        row = _message_row(x)
        row["consumed"] = await consumed_by(m, x)
        rows.append(row)
    out["messages"] = rows + [_message_row(x) for x in found[8:]]
    return out


# ------------------------------------------------------------------------------------ planner

PLANNER_STRATEGIES = ("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "STICKY")
"""Strategies the planner offers: those that need no room or queue list (the rest: ``rocketq
allocate --rooms`` / ``--config-queues``)."""


def _int(params: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    text = (params.get(name) or "").strip()
    if not text:
        return default
    if not text.lstrip("-").isdigit():
        raise ConfigError(f"{name} must be a whole number, got {text!r}")
    value = int(text)
    if not low <= value <= high:
        raise ConfigError(f"{name} must be between {low} and {high:,}, not {value}")
    return value


def planner_view(params: Mapping[str, str]) -> dict[str, Any]:
    """``rocketq allocate`` in the browser: a strategy, queues and a member change → the table
    after the change and the queues that move (the same planning code as the command)."""
    name = (params.get("strategy") or "AVG").upper()
    if name not in strategy_names() or name not in PLANNER_STRATEGIES:
        raise ConfigError(f"unknown strategy {name!r}; the planner offers {', '.join(PLANNER_STRATEGIES)}")
    queues = _int(params, "queues", 16, 1, 4096)
    brokers = _int(params, "brokers", 1, 1, 26)
    before_n = _int(params, "before", 2, 0, 256)
    after_n = _int(params, "after", 3, 1, 256)
    dups = _int(params, "duplicates", 0, 0, after_n - 1)
    balance: Balance = "group" if params.get("balance") == "group" else "topic"
    topics = [t.strip() for t in (params.get("topics") or "TopicTest").split(",") if t.strip()] or [
        "TopicTest"
    ]
    strategy: AllocationStrategy = get_strategy(name)
    names = broker_names(brokers, 0)
    topic_queues = {t: [MessageQueue(t, b, q) for b in names for q in range(queues)] for t in topics}
    width = max(2, len(str(max(before_n, after_n))))
    before_ids = client_ids(before_n, width, 0, min(dups, max(before_n - 1, 0))) if before_n else None
    after_ids = client_ids(after_n, width, 0, dups)
    change = plan_change(strategy, "planner", topic_queues, before_ids, after_ids, balance=balance)
    colours: dict[str, str] = {}
    owners = change.after.owners
    before_owners = change.before.owners if change.before is not None else {}
    moved = {m.queue for m in change.moves}
    rows = [
        {
            "key": queue_key(mq),
            "before": list(before_owners.get(mq, ())),
            "after": list(owners.get(mq, ())),
            "moved": mq in moved,
            "colour": colour_of(owners[mq][0], colours) if owners.get(mq) else None,
        }
        for mq in change.after.queues
    ]
    counts = change.after.counts
    consumers = [
        {
            "client_id": cid,
            "count": counts[cid],
            "colour": colour_of(cid, colours),
            "new": change.before is not None and cid not in change.before,
            "duplicate": change.after.duplicate_ids.get(cid, 0),
        }
        for cid in change.after
    ]
    return {
        "form": {
            "strategy": name,
            "queues": queues,
            "brokers": brokers,
            "before": before_n,
            "after": after_n,
            "duplicates": dups,
            "balance": balance,
            "topics": ",".join(topics),
        },
        "strategies": PLANNER_STRATEGIES,
        "queues": rows,
        "consumers": consumers,
        "moves": len(change.moves),
        "sticky_moves": change.sticky_moves,
        "total": len(change.after.queues),
        "spread": change.after.spread,
        "unowned": [queue_key(q) for q in change.after.unowned],
        "shared": [queue_key(q) for q in change.after.shared],
        "has_before": change.before is not None,
    }


def plan_summary(view: Mapping[str, Any]) -> str:
    """One line: ``3 of 16 queues move (STICKY would move 2)``."""
    text = f"{view['moves']} of {view['total']} queues move"
    if view.get("sticky_moves") is not None:
        text += f" (STICKY would move {view['sticky_moves']})"
    return text


# ------------------------------------------------------------------------------------ operations


async def producers_view(m: Monitor, group: str) -> dict[str, Any]:
    """A producer group's online connections on every master (GET_PRODUCER_CONNECTION_LIST:
    RocketMQ Dashboard's producer page, which asks by group too)."""
    if not group:
        return {"group": "", "connections": None}
    found = await m.admin.producer_connections(group)
    names = {addr: name for name, addr in (await m.admin.master_addrs()).items()}
    rows = [
        {
            "broker": names.get(addr, addr),
            "client_id": c.client_id or "",
            "addr": c.client_addr or "",
            "language": c.language or "",
            "version": version_name(c.version),
        }
        for addr, conn in sorted(found.items())
        for c in sorted(conn.connection_set, key=lambda x: x.client_id or "")
    ]
    return {"group": group, "connections": rows}


GROUP_FIELDS = (
    ("consume_enable", "consume enabled", "bool"),
    ("consume_broadcast_enable", "broadcast allowed", "bool"),
    ("consume_from_min_enable", "consume from min", "bool"),
    ("retry_max_times", "retry times", "int"),
    ("retry_queue_nums", "retry queues", "int"),
    ("broker_id", "read from broker id", "int"),
    ("which_broker_when_consume_slowly", "broker id when slow", "int"),
    ("notify_consumer_ids_changed_enable", "notify members of changes", "bool"),
)
"""A consumer group's settings the config page shows and edits (``SubscriptionGroupConfig``)."""


async def group_config_view(m: Monitor, group: str) -> dict[str, Any]:
    """A consumer group's settings on every master (GET_ALL_SUBSCRIPTIONGROUP_CONFIG): one column
    per broker; the form starts from the first broker's (or RocketMQ's defaults for a new one)."""
    masters = await m.admin.master_addrs()
    answers = await m.gather_settled(masters, lambda name: m.admin.group_configs(masters[name]))
    per: dict[str, SubscriptionGroupConfig | None] = {}
    errors: dict[str, str] = {}
    for name, answer in answers.items():
        if isinstance(answer, RocketQError):
            errors[name] = str(answer)
        else:
            per[name] = answer.get(group)
    first = next((c for c in per.values() if c is not None), None)
    start = first or SubscriptionGroupConfig(group_name=group)
    return {
        "group": group,
        "exists": first is not None,
        "brokers": sorted(per),
        "rows": [
            {"field": f, "label": label, "kind": kind, "values": [_cfg(per[b], f) for b in sorted(per)]}
            for f, label, kind in GROUP_FIELDS
        ],
        "start": {f: getattr(start, f) for f, _, _ in GROUP_FIELDS},
        "errors": errors,
        "fields": GROUP_FIELDS,
    }


def _cfg(config: SubscriptionGroupConfig | None, field: str) -> str:
    if config is None:
        return "-"
    value = getattr(config, field)
    return ("yes" if value else "no") if isinstance(value, bool) else str(value)


def group_config_of(group: str, form: Mapping[str, str]) -> SubscriptionGroupConfig:
    """The settings a form asks for (checkboxes absent: off), checked; ConfigError otherwise."""
    values: dict[str, Any] = {}
    for f, label, kind in GROUP_FIELDS:
        if kind == "bool":
            values[f] = form.get(f) == "on"
            continue
        text = (form.get(f) or "").strip()
        if not text.isdigit() or int(text) > 10_000:
            raise ConfigError(f"{label} must be a whole number 0..10000, got {text!r}")
        values[f] = int(text)
    if values["retry_queue_nums"] > 1024:
        raise ConfigError(f"retry queues must be 0..1024, got {values['retry_queue_nums']}")
    return SubscriptionGroupConfig(group_name=group, **values)


def group_config_changes(old: Mapping[str, Any], new: SubscriptionGroupConfig) -> list[str]:
    """What an update changes, one line per setting (``retry times 16 -> 3``)."""
    out = []
    for f, label, _ in GROUP_FIELDS:
        before, after = old.get(f), getattr(new, f)
        if before != after:
            out.append(f"{label}: {_show(before)} -> {_show(after)}")
    return out


def _show(value: Any) -> str:
    return ("yes" if value else "no") if isinstance(value, bool) else str(value)


async def broker_config_view(m: Monitor, addr: str) -> dict[str, Any]:
    """A broker's settings (GET_BROKER_CONFIG), as ``mqadmin getBrokerConfig`` prints them."""
    info = await m.cached("cluster", 2.0, m.admin.cluster_info)
    known = {a: name for name, bd in info.broker_addr_table.items() for a in bd.broker_addrs.values()}
    if addr not in known:
        raise ConfigError(f"no broker at {addr} is registered with the name server")
    return {"addr": addr, "name": known[addr], "config": await m.admin.broker_config(addr)}


async def dlq_view(m: Monitor, group: str, page: int) -> dict[str, Any]:
    """The group's dead letters (``%DLQ%group``), newest first, a page at a time."""
    if not group:
        return {"group": "", "search": None}
    topic = DLQ_GROUP_TOPIC_PREFIX + group
    try:
        found = await search_messages(m, topic, None, 0, None, page)
    except UnknownTopicError:
        return {"group": group, "topic": topic, "search": None, "none": True}
    return {"group": group, "topic": topic, "search": found, "none": False}


async def dlq_lines(m: Monitor, group: str, chosen: set[str] | None = None) -> list[str]:
    """Every dead letter of ``group`` (at most :data:`SCAN_LIMIT`; only the message ids
    ``chosen``, when given) as JSON lines: the fields of ``rocketq message``
    (:func:`rocketq.admin.message_dict`), body as text."""
    topic = DLQ_GROUP_TOPIC_PREFIX + group
    stats = await m.admin.topic_stats(topic)
    lines: list[str] = []
    for q in stats.queues:
        offset = q.min_offset
        while offset < q.max_offset and len(lines) < SCAN_LIMIT:
            read = await m.admin.read_queue(q.queue, offset, 32)
            if not read.messages:
                break
            lines.extend(
                json.dumps(message_dict(x), ensure_ascii=False)
                for x in read.messages
                if chosen is None or x.msg_id.upper() in chosen
            )
            offset = read.next_offset if read.next_offset > offset else offset + len(read.messages)
    return lines


async def consumed_by(m: Monitor, msg: MessageExt) -> list[dict[str, Any]]:
    """For each group that consumes the message's topic: whether its committed offset of the
    message's queue is past the message (RocketMQ Dashboard's "track": consumed, not yet, or
    no offset committed on that queue)."""
    info = await m.cached("cluster", 2.0, m.admin.cluster_info)
    host = str(msg.store_host)
    broker = next(
        (name for name, bd in info.broker_addr_table.items() if host in bd.broker_addrs.values()), None
    )
    try:
        groups = await m.admin.topic_consumers(msg.topic)
    except RocketQError:
        return []
    out = []
    for g in sorted(groups):
        try:
            committed = await m.admin.committed_offsets(g, msg.topic)
        except RocketQError as exc:
            out.append({"group": g, "status": "unknown", "detail": str(exc)})
            continue
        at = committed.get(MessageQueue(msg.topic, broker or "", msg.queue_id))
        if at is None:
            out.append({"group": g, "status": "not yet", "detail": "no offset committed on its queue"})
        elif at > msg.queue_offset:
            out.append({"group": g, "status": "consumed", "detail": f"committed offset {at}"})
        else:
            out.append({"group": g, "status": "not yet", "detail": f"committed offset {at}"})
    return out


def tps_charts(m: Monitor) -> list[dict[str, Any]]:
    """Each broker's TPS history (the samples the dashboard keeps) as SVG polylines, in and out."""
    width, height, pad = 560, 140, 28
    charts = []
    for broker, points in sorted(m.tps.items()):
        pts = list(points)
        if not pts:
            continue
        t0, t1 = pts[0].at_ms, max(pts[-1].at_ms, pts[0].at_ms + 1)
        top = max([p.put or 0.0 for p in pts] + [p.get or 0.0 for p in pts] + [1.0])

        charts.append(
            {
                "broker": broker,
                "width": width,
                "height": height,
                "put_line": _polyline(pts, [p.put for p in pts], top, (width, height, pad)),
                "get_line": _polyline(pts, [p.get for p in pts], top, (width, height, pad)),
                "top": top,
                "from": _fmt_ms(t0)[11:],
                "to": _fmt_ms(t1)[11:],
                "points": len(pts),
                "last_put": pts[-1].put,
                "last_get": pts[-1].get,
            }
        )
    return charts


TOP_TOPICS = 5
"""Topics the TPS history draws: the busiest over the window kept."""


def topic_tps_charts(m: Monitor) -> list[dict[str, Any]]:
    """The :data:`TOP_TOPICS` busiest topics (the most messages stored within the window kept),
    each one's TPS: messages stored per second between two readings."""
    busiest = sorted(
        (
            (samples[-1][1] - samples[0][1], topic)
            for topic, samples in m.topic_totals.items()
            if len(samples) > 1
        ),
        key=lambda x: (-x[0], x[1]),
    )
    return [c for _, topic in busiest[:TOP_TOPICS] if (c := topic_tps_chart(m, topic)) is not None]


def topic_tps_chart(m: Monitor, topic: str) -> dict[str, Any] | None:
    """One topic's TPS history (``None`` before its second reading)."""
    samples = list(m.topic_totals.get(topic, ()))
    pts = [
        TpsPoint(b[0], (b[1] - a[1]) * 1000 / max(b[0] - a[0], 1), None)
        for a, b in itertools.pairwise(samples)
    ]
    if not pts:
        return None
    width, height, pad = 560, 140, 28
    top = max([p.put or 0.0 for p in pts] + [1.0])
    return {
        "broker": topic,
        "width": width,
        "height": height,
        "put_line": _polyline(pts, [p.put for p in pts], top, (width, height, pad)),
        "get_line": "",
        "top": top,
        "from": _fmt_ms(pts[0].at_ms)[11:],
        "to": _fmt_ms(pts[-1].at_ms)[11:],
        "points": len(pts),
        "last_put": pts[-1].put,
        "last_get": None,
        "stored": samples[-1][1] - samples[0][1],
    }


def _polyline(
    pts: Sequence[TpsPoint], values: Sequence[float | None], top: float, box: tuple[int, int, int]
) -> str:
    """SVG ``points`` of ``values`` over the samples' times, in a ``(width, height, pad)`` box."""
    width, height, pad = box
    t0, t1 = pts[0].at_ms, max(pts[-1].at_ms, pts[0].at_ms + 1)
    return " ".join(
        f"{pad + (p.at_ms - t0) / (t1 - t0) * (width - pad - 8):.1f},"
        f"{height - 18 - (v or 0.0) / top * (height - 30):.1f}"
        for p, v in zip(pts, values, strict=True)
    )


def resend_copy(dead: MessageExt, group: str) -> Message:
    """A dead letter's copy for ``%RETRY%group``: body, tags, keys and the user's properties,
    with ``RETRY_TOPIC`` (set when it was first retried) naming the topic it was sent to: the
    group's members restore it; ``ORIGIN_MESSAGE_ID`` names the dead letter."""
    props = {k: v for k, v in dead.properties.items() if k not in _BROKER_PROPERTIES}
    props[MessageConst.ORIGIN_MESSAGE_ID] = dead.msg_id
    return Message(RETRY_GROUP_TOPIC_PREFIX + group, dead.body, properties=props)


_BROKER_PROPERTIES = frozenset(
    {
        MessageConst.UNIQ_KEY,
        MessageConst.MIN_OFFSET,
        MessageConst.MAX_OFFSET,
        MessageConst.REAL_TOPIC,
        MessageConst.REAL_QID,
        MessageConst.DELAY,
        MessageConst.TRAN_MSG,
        MessageConst.PGROUP,
        MessageConst.CONSUME_START_TIME,
        MessageConst.RECONSUME_TIME,
    }
)
"""Properties a broker or a client writes, not carried over to a copy."""


async def client_view(m: Monitor, group: str, client_id: str) -> dict[str, Any]:
    """A consumer's own report (GET_CONSUMER_RUNNING_INFO relayed by a broker, as RocketMQ
    Dashboard's "client" dialog): its properties, subscriptions, per queue what it holds and when
    it last pulled and consumed, and its rates per topic."""
    info = await m.admin.running_info(group, client_id)
    queues = [
        {
            "key": queue_key(mq),
            "commit_offset": pq.commit_offset,
            "cached": pq.cached_msg_count,
            "cached_range": f"{pq.cached_msg_min_offset}..{pq.cached_msg_max_offset}"
            if pq.cached_msg_count
            else "-",
            "locked": pq.locked,
            "dropped": pq.droped,
            "last_pull": _fmt_ms(pq.last_pull_timestamp),
            "last_consume": _fmt_ms(pq.last_consume_timestamp),
        }
        for mq, pq in sorted(info.mq_table.items())
    ]
    rates = [
        {
            "topic": topic,
            "pull_tps": st.pull_tps,
            "pull_rt": st.pull_rt,
            "consume_ok_tps": st.consume_ok_tps,
            "consume_failed_tps": st.consume_failed_tps,
            "consume_rt": st.consume_rt,
            "failed": st.consume_failed_msgs,
        }
        for topic, st in sorted(info.status_table.items())
    ]
    return {
        "group": group,
        "client_id": client_id,
        "properties": dict(sorted(info.properties.items())),
        "subscriptions": [
            {"topic": sd.topic or "", "expression": sd.sub_string or "*"} for sd in info.subscription_set
        ],
        "queues": queues,
        "rates": rates,
    }
