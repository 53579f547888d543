"""``rocketq group members|progress|reset``: a consumer group seen from its brokers.

* ``members G``: each online client id with its addresses, language, version and the queues it
  owns (as the client reports them, or — when it does not answer — as the group's strategy gives
  them, marked ``plan``); client ids that two live connections registered are flagged
  ``DUPLICATE``: both processes consume the same queues.
* ``progress G [--topic T]``: per queue the broker's max offset, the group's committed offset, the
  lag and the owner, with totals.
* ``reset G --topic T --to first|last|TIMESTAMP``: RocketMQ's reset by time (epoch ms or
  ISO-8601): online members drop the topic's queues, commit the new offsets and resume from
  them; for an offline group the brokers commit them.
"""

from __future__ import annotations

import argparse
from typing import Any

from rocketq.admin import parse_reset_target
from rocketq.allocate import get_strategy
from rocketq.analytics import counted
from rocketq.cli._output import (
    add_admin_options,
    add_command_group,
    admin_session,
    format_ms,
    group_name,
    print_json,
    print_table,
    topic_name,
)
from rocketq.cli.cluster import describe_slave
from rocketq.cli.main import CliError
from rocketq.errors import ConfigError
from rocketq.models import MessageQueue
from rocketq.protocol.topics import retry_topic

__all__ = ["queue_ranges", "register"]


def register(subparsers: Any) -> None:
    sub = add_command_group(
        subparsers,
        "group",
        summary="a consumer group's members, progress (lag) and offset resets",
        description="Inspect and steer a consumer group through its brokers.",
    )

    p = sub.add_parser(
        "members",
        help="online members: client ids, addresses, versions, owned queues; duplicate ids flagged",
        description=(
            "The group's online members: client id, addresses, language, version and the queues "
            "each owns. The column 'queues from' says where the owned queues come from, in the "
            "dashboard's words: 'its own report' - the consumer's answer to the broker's running-info "
            "request (what it really consumes); 'computed (STRATEGY)' - the client did not answer, so "
            "the queues are what the group's strategy assigns it. Client ids registered by two live "
            "connections are flagged DUPLICATE."
        ),
    )
    p.add_argument("group", metavar="GROUP", type=group_name)
    p.add_argument(
        "--strategy",
        metavar="NAME",
        default=None,
        help="strategy for computing the queues of members that do not report them (default: the "
        "group's own, else AVG)",
    )
    add_admin_options(p, _members, "the members")

    p = sub.add_parser(
        "progress",
        help="per queue: broker offset, consumer offset, lag, owner; totals",
        description="Per queue: the broker's max offset, the group's committed offset, lag and owner.",
    )
    p.add_argument("group", metavar="GROUP", type=group_name)
    p.add_argument(
        "--topic",
        metavar="TOPIC",
        type=topic_name,
        help="only this topic (default: every topic the group committed)",
    )
    add_admin_options(p, _progress, "the progress")

    p = sub.add_parser(
        "reset",
        help="move the group's offsets of a topic to first, last or a time stamp",
        description=(
            "Reset the group's offsets of a topic (RocketMQ's resetOffsetByTime, forced): 'first' is "
            "each queue's min offset, 'last' its max, a time stamp (epoch ms or ISO-8601, local time "
            "without an offset; not in the future) the first message stored at or after it. Online "
            "members drop the queues, commit the new offsets and resume from them; for an offline "
            "group the brokers commit them."
        ),
    )
    p.add_argument("group", metavar="GROUP", type=group_name)
    p.add_argument(
        "--topic",
        required=True,
        metavar="TOPIC",
        type=topic_name,
        help="the topic whose offsets move (required)",
    )
    p.add_argument("--to", required=True, metavar="first|last|TIMESTAMP", help="where to (required)")
    add_admin_options(p, _reset, "the new offsets")


def queue_ranges(queues: tuple[MessageQueue, ...] | list[MessageQueue]) -> str:
    """Queues as ``topic@broker:0-3,5`` groups (compact for wide groups).

    >>> queue_ranges([MessageQueue("T", "a", i) for i in (0, 1, 2, 5)] + [MessageQueue("U", "a", 0)])
    'T@a:0-2,5 U@a:0'
    """
    groups: dict[tuple[str, str], list[int]] = {}
    for mq in sorted(queues):
        groups.setdefault((mq.topic, mq.broker_name), []).append(mq.queue_id)
    parts = []
    for (topic, broker), ids in groups.items():
        spans: list[str] = []
        start = prev = ids[0]
        for qid in [*ids[1:], None]:
            if qid is not None and qid == prev + 1:
                prev = qid
                continue
            spans.append(str(start) if start == prev else f"{start}-{prev}")
            if qid is not None:
                start = prev = qid
        parts.append(f"{topic}@{broker}:{','.join(spans)}")
    return " ".join(parts)


def _members(args: argparse.Namespace) -> int:
    if args.strategy is not None:
        try:
            get_strategy(args.strategy)
        except ConfigError as exc:
            raise CliError(f"--strategy: {exc}") from None
    with admin_session(args) as admin:
        view = admin.group_members(args.group, strategy=args.strategy)
    if args.json:
        print_json(view.to_dict())
        return 0
    if not view.members:
        print(f"consumer group {args.group} has no online member")
        return 0
    rows = [
        (
            m.client_id + (" DUPLICATE" if m.duplicate else ""),
            " ".join(m.addresses),
            m.language,
            m.version_name,
            len(m.queues),
            queue_ranges(m.queues) or "-",
            "its own report" if m.queues_source == "running-info" else f"computed ({m.strategy})",
        )
        for m in view.members
    ]
    subs = ", ".join(f"{t} [{e}]" for t, e in view.subscriptions.items())
    kind = f"{view.message_model}, {view.consume_type}, {view.consume_from_where}"
    print_table(
        f"group {args.group}: {kind}; subscriptions {subs}",
        ("client id", "addresses", "language", "version", "queues", "owned", "queues from"),
        rows,
        right=("queues",),
    )
    print(
        "queues from: 'its own report' = the consumer's answer to the running-info request; "
        "'computed' = it did not answer, the strategy's share is shown"
    )
    for d in view.duplicates:
        print(
            f"DUPLICATE client id {d.client_id} registered by {len(d.addresses)} connections on broker "
            f"{d.broker_addr}: {' '.join(d.addresses)} - they consume the same queues"
        )
    for m in view.members:
        if m.error:
            print(f"{m.client_id} did not report its queues ({m.error}); shown as the strategy assigns them")
    return 0


def _progress(args: argparse.Namespace) -> int:
    with admin_session(args) as admin:
        progress = admin.group_progress(args.group, args.topic)
    if args.json:
        print_json(progress.to_dict())
        return 0
    retry = retry_topic(args.group)
    queues = [q for q in progress.queues if q.queue.topic != retry]
    retries = [q for q in progress.queues if q.queue.topic == retry]
    rows = [
        (
            q.queue.topic,
            q.queue.broker_name,
            q.queue.queue_id,
            q.broker_offset,
            q.consumer_offset,
            q.lag,
            q.owner or "-",
            format_ms(q.last_timestamp_ms),
        )
        for q in queues
    ]
    owners = f" (owners from {progress.owners_source})" if progress.owners_source else ""
    print_table(
        f"group {args.group}{owners}",
        ("topic", "broker", "queue", "broker offset", "consumer offset", "lag", "owner", "last consumed"),
        rows,
        footer=(
            "total",
            None,
            len(queues),
            sum(q.broker_offset for q in queues),
            sum(q.consumer_offset for q in queues),
            sum(q.lag for q in queues),
            None,
            None,
        ),
        right=("queue", "broker offset", "consumer offset", "lag"),
    )
    if retries:
        lag = sum(q.lag for q in retries)
        print(
            f"retry topic {retry} (messages handed back for redelivery, not counted above): "
            f"{counted(len(retries), 'queue')}, {lag} waiting"
        )
    print(
        f"consumed per second: {progress.consume_tps:.1f} (the brokers' average for the group over the "
        "last minute)"
    )
    for slave in progress.slaves:
        print(describe_slave(slave))
    return 0


def _reset(args: argparse.Namespace) -> int:
    try:
        target = parse_reset_target(args.to)
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    with admin_session(args) as admin:
        result = admin.reset_offsets(args.group, args.topic, target)
    if args.json:
        print_json(result.to_dict())
        return 0
    rows = [(mq.broker_name, mq.queue_id, offset) for mq, offset in sorted(result.offsets.items())]
    label = {0: "first", -1: "last"}.get(target, format_ms(target))
    print_table(
        f"group {args.group}, topic {args.topic}: offsets reset to {label}",
        ("broker", "queue", "offset"),
        rows,
        right=("queue", "offset"),
    )
    return 0
