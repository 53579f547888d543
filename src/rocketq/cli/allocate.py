"""``rocketq allocate``: what a strategy does to a synthetic group, without any server.

Builds topics of ``--queues`` queues on each of ``--brokers`` brokers (``broker-a``,
``broker-b`` ...) and ``--consumers`` consumers with realistic client ids
(``127.0.0.1@consumer-01`` ..., zero-padded so that Java's string order is numeric order), runs
the strategy for every consumer as RocketMQ clients do, and prints each consumer's queues with
the diagnostics: spread, idle consumers, queues nobody or several consume, and with
``--from-consumers`` the queues that move when the group changes size.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from rocketq.allocate import (
    AllocationStrategy,
    QueueMove,
    get_strategy,
    sorted_queues,
    strategy_names,
)
from rocketq.allocate.examples import PlannedChange, broker_names, client_ids, plan_change
from rocketq.cli._output import group_name
from rocketq.cli.main import CliError
from rocketq.errors import ConfigError
from rocketq.models import MessageQueue

__all__ = ["compact_ranges", "register"]

_MAX_QUEUES = 1_000_000
_MAX_CONSUMERS = 100_000
_MAX_BROKERS = 26 * 27


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "allocate",
        help="show how a strategy shares a topic's queues among a group's consumers",
        description=(
            "Show how an allocation strategy shares queues among a consumer group, as every "
            "RocketMQ consumer computes it: each consumer's queues, the spread, idle consumers, "
            "queues nobody or several consume, and which queues move when the group changes size."
        ),
    )
    parser.add_argument("--queues", type=int, required=True, help="queues per topic on each broker")
    parser.add_argument("--consumers", type=int, required=True, help="consumers in the group")
    parser.add_argument("--brokers", type=int, default=1, help="brokers serving each topic (default 1)")
    parser.add_argument(
        "--strategy",
        default="AVG",
        metavar="NAME",
        help=f"allocation strategy: {', '.join(strategy_names())} (default AVG, RocketMQ's default)",
    )
    parser.add_argument(
        "--topics",
        default="TopicTest",
        metavar="T1[:N],T2[:N]",
        help="topics the group subscribes, optionally with their own queue count (default TopicTest)",
    )
    parser.add_argument(
        "--from-consumers",
        type=int,
        metavar="COUNT",
        help="also plan the group with N consumers and show the queues that move from there",
    )
    parser.add_argument(
        "--balance",
        choices=("topic", "group"),
        default="topic",
        help="topic: each topic on its own (RocketMQ); group: balance each consumer's total over all topics",
    )
    parser.add_argument("--group", default="demo-consumer-group", type=group_name, help="consumer group name")
    parser.add_argument(
        "--duplicate-ids",
        type=int,
        default=0,
        metavar="COUNT",
        help="let N more consumers reuse the first consumer's client id (RocketMQ's duplicate-id bug)",
    )
    parser.add_argument(
        "--virtual-nodes", type=int, default=10, help="CONSISTENT_HASH: ring points per consumer (default 10)"
    )
    parser.add_argument(
        "--rooms",
        type=int,
        default=None,
        metavar="COUNT",
        help="spread brokers (room@broker-a) and consumers (room@consumer-01) over N machine rooms "
        "(default: no rooms)",
    )
    parser.add_argument(
        "--consume-rooms",
        metavar="R1,R2",
        help="MACHINE_ROOM: the rooms the group consumes from (default: all rooms)",
    )
    parser.add_argument(
        "--inner", default="AVG", metavar="NAME", help="MACHINE_ROOM_NEARBY: strategy within a room"
    )
    parser.add_argument(
        "--config-queues",
        metavar="SPEC",
        help="CONFIG: the fixed queues, e.g. broker-a:0..3,broker-b:5 (first topic; or topic/broker:id)",
    )
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON instead of tables")
    parser.set_defaults(handler=run)


# -- synthetic inputs ----------------------------------------------------------------------------


def _parse_topics(spec: str, queues: int) -> dict[str, int]:
    topics: dict[str, int] = {}
    for item in spec.split(","):
        name, sep, count = item.strip().partition(":")
        if not re.fullmatch(r"[%|a-zA-Z0-9_-]{1,127}", name):
            raise CliError(f"--topics: {name!r} is not a valid RocketMQ topic name")
        if name in topics:
            raise CliError(f"--topics: {name} is listed twice")
        if sep:
            if not count.isdigit() or int(count) < 1:
                raise CliError(f"--topics: queue count of {name} must be a positive integer, not {count!r}")
            topics[name] = int(count)
        else:
            topics[name] = queues
    return topics


def _parse_config_queues(spec: str, first_topic: str) -> list[MessageQueue]:
    result = []
    for item in spec.split(","):
        m = re.fullmatch(r"\s*(?:([^/\s]+)/)?([^:\s]+):(\d+)(?:\.\.(\d+))?\s*", item)
        if m is None:
            raise CliError(
                f"--config-queues: cannot read {item!r} (expected broker:id or broker:first..last)"
            )
        topic, broker, first, last = m.group(1) or first_topic, m.group(2), int(m.group(3)), m.group(4)
        stop = int(last) if last is not None else first
        if stop < first:
            raise CliError(f"--config-queues: empty range in {item!r}")
        result += [MessageQueue(topic, broker, q) for q in range(first, stop + 1)]
    return result


def _positive(name: str, value: int, limit: int, *, zero: bool = False) -> None:
    low = 0 if zero else 1
    if not low <= value <= limit:
        raise CliError(f"{name} must be between {low} and {limit:,}, not {value}")


# -- formatting ----------------------------------------------------------------------------------


def compact_ranges(queues: Iterable[MessageQueue], *, with_topic: bool | None = None) -> str:
    """Queues as compact runs per broker: ``broker-a:[0..5] broker-b:[0, 2..3]``.

    Labels are ``topic/broker`` when ``with_topic`` is true, or (``None``) when the queues span
    several topics.

    >>> compact_ranges([MessageQueue("T", "broker-a", i) for i in (0, 1, 2, 5, 7, 8)])
    'broker-a:[0..2, 5, 7..8]'
    """
    groups: dict[tuple[str, str], list[int]] = {}
    for mq in sorted_queues(dict.fromkeys(queues)):
        groups.setdefault((mq.topic, mq.broker_name), []).append(mq.queue_id)
    if with_topic is None:
        with_topic = len({topic for topic, _ in groups}) > 1
    parts = []
    for (topic, broker), ids in groups.items():
        runs = []
        start = prev = ids[0]
        for q in [*ids[1:], None]:
            if q is not None and q == prev + 1:
                prev = q
                continue
            runs.append(f"{start}..{prev}" if prev > start else f"{start}")
            if q is not None:
                start = prev = q
        label = f"{topic}/{broker}" if with_topic else broker
        parts.append(f"{label}:[{', '.join(runs)}]")
    return " ".join(parts)


def _mq_json(mq: MessageQueue) -> dict[str, Any]:
    return {"topic": mq.topic, "broker_name": mq.broker_name, "queue_id": mq.queue_id}


def _names(items: Sequence[str], limit: int = 8) -> str:
    if not items:
        return "none"
    shown = ", ".join(items[:limit])
    return shown if len(items) <= limit else f"{shown} … ({len(items)} in all)"


# -- the command ---------------------------------------------------------------------------------


def _strategy(args: argparse.Namespace, topics: Mapping[str, int], rooms: int) -> AllocationStrategy:
    name = args.strategy.upper()
    if name not in strategy_names():
        raise CliError(f"unknown strategy {args.strategy!r}; valid names: {', '.join(strategy_names())}")
    try:
        if name == "CONSISTENT_HASH":
            _positive("--virtual-nodes", args.virtual_nodes, 10_000)
            return get_strategy(name, virtual_nodes=args.virtual_nodes)
        if name == "MACHINE_ROOM":
            if not rooms:
                raise CliError("MACHINE_ROOM needs --rooms N: it only consumes brokers named room@broker")
            chosen = (
                [r.strip() for r in args.consume_rooms.split(",") if r.strip()]
                if args.consume_rooms
                else [f"room{i + 1}" for i in range(rooms)]
            )
            return get_strategy(name, rooms=set(chosen))
        if name == "MACHINE_ROOM_NEARBY":
            if args.inner.upper() in ("MACHINE_ROOM_NEARBY", "CONFIG", "MACHINE_ROOM", "STICKY"):
                raise CliError(
                    f"--inner {args.inner} is not available here; use AVG, AVG_BY_CIRCLE or CONSISTENT_HASH"
                )
            inner = (
                get_strategy(args.inner, virtual_nodes=args.virtual_nodes)
                if args.inner.upper() == "CONSISTENT_HASH"
                else get_strategy(args.inner)
            )
            return get_strategy(name, inner=inner)
        if name == "CONFIG":
            if not args.config_queues:
                raise CliError("CONFIG needs --config-queues, e.g. broker-a:0..3")
            return get_strategy(name, queues=_parse_config_queues(args.config_queues, next(iter(topics))))
        return get_strategy(name)
    except ConfigError as exc:
        raise CliError(str(exc)) from exc


def run(args: argparse.Namespace) -> int:
    _positive("--queues", args.queues, _MAX_QUEUES)
    _positive("--consumers", args.consumers, _MAX_CONSUMERS)
    _positive("--brokers", args.brokers, _MAX_BROKERS)
    _positive("--virtual-nodes", args.virtual_nodes, 10_000)  # checked even where it does not apply
    if args.rooms is not None:
        _positive("--rooms", args.rooms, 1_000)  # 0 rooms is nonsense: leave the option out
    args.rooms = args.rooms or 0
    if args.from_consumers is not None:
        _positive("--from-consumers", args.from_consumers, _MAX_CONSUMERS)
    if not 0 <= args.duplicate_ids < args.consumers:
        raise CliError(
            f"--duplicate-ids must be between 0 and {args.consumers - 1} (one less than --consumers)"
        )
    topics = _parse_topics(args.topics, args.queues)
    total = sum(topics.values()) * args.brokers
    if total > _MAX_QUEUES:
        raise CliError(f"{total:,} queues in all is more than this command handles ({_MAX_QUEUES:,})")
    strategy = _strategy(args, topics, args.rooms)

    brokers = broker_names(args.brokers, args.rooms)
    topic_queues = {
        topic: [MessageQueue(topic, broker, q) for broker in brokers for q in range(count)]
        for topic, count in topics.items()
    }
    width = max(2, len(str(max(args.consumers, args.from_consumers or 0))))
    cids = client_ids(args.consumers, width, args.rooms, args.duplicate_ids)

    old_cids = (
        client_ids(args.from_consumers, width, args.rooms, min(args.duplicate_ids, args.from_consumers - 1))
        if args.from_consumers is not None
        else None
    )
    change = plan_change(strategy, args.group, topic_queues, old_cids, cids, balance=args.balance)
    if args.json:
        print(json.dumps(_as_json(args, topics, brokers, change), indent=2))
    else:
        _print_tables(args, topics, brokers, change)
    return 0


def _as_json(
    args: argparse.Namespace, topics: Mapping[str, int], brokers: Sequence[str], change: PlannedChange
) -> dict[str, Any]:
    after, before, changes, sticky_moves = change.after, change.before, change.moves, change.sticky_moves
    counts = after.counts
    doc: dict[str, Any] = {
        "strategy": after.strategy,
        "group": after.group,
        "balance": after.balance,
        "topics": dict(topics),
        "brokers": list(brokers),
        "queues_total": len(after.queues),
        "consumers": [
            {
                "client_id": cid,
                "count": counts[cid],
                "ranges": compact_ranges(share, with_topic=True if len(topics) > 1 else None),
                "queues": [_mq_json(mq) for mq in share],
            }
            for cid, share in after.items()
        ],
        "max": max(counts.values()),
        "min": min(counts.values()),
        "spread": after.spread,
        "idle": list(after.idle),
        "unowned": [_mq_json(mq) for mq in after.unowned],
        "shared": [{"queue": _mq_json(mq), "owners": list(o)} for mq, o in after.shared.items()],
        "duplicate_ids": after.duplicate_ids,
    }
    if before is not None:
        doc["moves"] = {
            "from_consumers": args.from_consumers,
            "count": len(changes),
            "queues": [
                {"queue": _mq_json(m.queue), "from": list(m.before), "to": list(m.after)} for m in changes
            ],
        }
        if sticky_moves is not None:
            doc["moves"]["sticky_count"] = sticky_moves
    return doc


def _move_runs(changes: Sequence[QueueMove]) -> list[tuple[str, str, str, int]]:
    """Moves grouped by (from, to): (queues compactly, from, to, how many), in queue order."""
    grouped: dict[tuple[tuple[str, ...], tuple[str, ...]], list[MessageQueue]] = {}
    for m in changes:
        grouped.setdefault((m.before, m.after), []).append(m.queue)
    with_topic = len({m.queue.topic for m in changes}) > 1
    return [
        (
            compact_ranges(qs, with_topic=with_topic),
            ", ".join(b) or "nobody",
            ", ".join(a) or "nobody",
            len(qs),
        )
        for (b, a), qs in grouped.items()
    ]


def _print_tables(
    args: argparse.Namespace, topics: Mapping[str, int], brokers: Sequence[str], change: PlannedChange
) -> None:
    after, before, changes, sticky_moves = change.after, change.before, change.moves, change.sticky_moves
    console = Console(highlight=False, soft_wrap=False)
    multi = len(topics) > 1
    by_topic = True if multi else None  # else: only when a list spans topics (CONFIG can)
    n_brokers = len(brokers)
    console.print(
        f"[bold]{after.strategy}[/] · {', '.join(after.topics)} · {len(after.queues)} queues on "
        f"{n_brokers} broker{'s' if n_brokers > 1 else ''} · {len(after.consumers)} consumers"
        + (f" · balance={after.balance}" if multi else ""),
        soft_wrap=True,
    )
    counts = after.counts
    table = Table(show_edge=True, header_style="bold")
    table.add_column("consumer (client id)")
    table.add_column("queues", justify="right")
    if multi:
        for topic in after.topics:
            table.add_column(topic, justify="right")
    table.add_column("assigned")
    previous: Mapping[str, list[MessageQueue]] = before if before is not None else {}
    dups = after.duplicate_ids
    for cid, share in after.items():
        row = [f"{cid} [red]×{dups[cid]}[/]" if cid in dups else cid, str(counts[cid])]
        if multi:
            row += [str(len(p.get(cid, ()))) for p in after.topics.values()]
        assigned = compact_ranges(share, with_topic=by_topic) or "[dim]idle[/]"
        if before is not None and cid not in previous:
            row[0] += " [green](new)[/]"
        row.append(assigned)
        table.add_row(*row)
    if before is not None:
        for cid in before:
            if cid not in after:
                table.add_row(
                    f"{cid} [red](gone)[/]", "0", *([""] * len(topics) if multi else []), "[dim]left[/]"
                )
    console.print(table)

    high, low = max(counts.values()), min(counts.values())
    console.print(f"spread: {high} − {low} = {high - low} (max − min queues per consumer)")
    console.print(f"idle consumers: {_names(after.idle)}")
    unowned = after.unowned
    console.print(
        "unowned queues: "
        + (f"[red]{len(unowned)}[/] {compact_ranges(unowned, with_topic=by_topic)}" if unowned else "none")
    )
    shared = after.shared
    console.print(
        "consumed by several: "
        + (f"[red]{len(shared)}[/] {compact_ranges(shared, with_topic=by_topic)}" if shared else "none")
    )
    if dups:
        console.print(
            "[red]duplicated client ids[/]: "
            + ", ".join(f"{cid} ×{n}" for cid, n in dups.items())
            + " (same queues taken twice)"
        )
    if before is not None:
        console.print()
        console.print(
            f"[bold]from {len(before.consumers)} to {len(after.consumers)} consumers[/]: "
            f"{len(changes)} of {len(after.queues)} queues change owner"
            + (f" (STICKY would move {sticky_moves})" if sticky_moves is not None else "")
        )
        if changes:
            moved = Table(show_edge=True, header_style="bold")
            moved.add_column("queues")
            moved.add_column("count", justify="right")
            moved.add_column("from")
            moved.add_column("to")
            for text, was, now, n in _move_runs(changes):
                moved.add_row(text, str(n), was, now)
            console.print(moved)
