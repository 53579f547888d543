"""``rocketq message show|query|trace``: look messages up (``mqadmin queryMsgById``,
``queryMsgByKey`` and RocketMQ dashboard's message trace).

* ``show MSG_ID [--topic T]``: the stored message(s) with that id - an offset message id (read
  at the broker it names) or a producer's message id (the ``msg_id`` a send returns; looked up
  through the brokers' index in ``--topic``, else in every topic);
* ``query --topic T --key K [--begin TIME] [--end TIME] [--max N]``: the messages of a topic with
  a key, stored in a time range (epoch ms, ``now``, an age such as ``15m``, or ISO-8601);
* ``trace MSG_ID [--topic T] [--trace-topic TOPIC]``: what traced producers and consumers recorded
  about a message (``trace=True``, ``--trace``): sent by which group to which broker and how long
  it took, transaction ends, consumed by which group and client, when, how long, how it ended.

The work is :class:`rocketq.admin.Admin`'s (``view_message``, ``query_message``,
``message_trace``). ``--json`` prints JSON instead. Exit code 0 when something was found, 1 when
nothing was (said on stderr), 2 for a mistake on the command line.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rocketq.admin import MessageTrace, message_dict, parse_time
from rocketq.analytics import counted
from rocketq.cli._output import (
    add_admin_options,
    add_command_group,
    admin_session,
    format_ms,
    number_type,
    print_json,
    print_table,
    topic_name,
)
from rocketq.errors import ConfigError
from rocketq.lab.lines import body_text
from rocketq.protocol.message import MessageExt
from rocketq.protocol.trace import RMQ_SYS_TRACE_TOPIC

__all__ = ["register"]

_NOT_FOUND = 1
_max_num = number_type(
    int,
    "not an integer",
    lambda v: v > 0,
    "must be positive, got {value}",
    most=64,
    too_big="must be at most {most} (a broker answers at most 64 messages, maxMsgsNumBatch), got {value}",
)


def _time(text: str) -> int:
    try:
        return parse_time(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _msg_id(text: str) -> str:
    value = text.strip().upper()
    if len(value) not in (32, 56) or any(c not in "0123456789ABCDEF" for c in value):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a message id: an offset message id or a producer's message id is 32 hex "
            "digits (56 for IPv6 hosts)"
        )
    return value


def _key(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("the key is blank")
    return text


def register(subparsers: Any) -> None:
    sub = add_command_group(
        subparsers,
        "message",
        summary="look messages up by id or key, and show a message's trace",
        description="Message look-ups against a RocketMQ (or rocketq) cluster, through the brokers' index.",
    )

    show = sub.add_parser(
        "show",
        help="a message by its id (offset message id, or a producer's message id)",
        description=(
            "Show the stored message with MSG_ID: an offset message id (read at the broker it names) "
            "or a producer's message id (looked up in --topic, else in every topic). Every stored copy "
            "is shown (a message consumed with failures is stored again in the group's retry topic)."
        ),
    )
    show.add_argument("msg_id", metavar="MSG_ID", type=_msg_id)
    show.add_argument("--topic", type=topic_name, help="the topic of a producer's message id (faster)")
    add_admin_options(show, _show, "the messages")

    query = sub.add_parser(
        "query",
        help="the messages of a topic with a key, in a time range",
        description=(
            "List the messages of TOPIC whose keys include KEY, stored between --begin and --end "
            "(epoch ms, now, an age such as 15m or 2h, or ISO-8601; default any time), at most --max "
            "from each broker (the newest)."
        ),
    )
    query.add_argument("--topic", required=True, type=topic_name, help="the topic (required)")
    query.add_argument("--key", required=True, type=_key, help="the key (required)")
    query.add_argument("--begin", type=_time, metavar="TIME", help="stored at or after (default: any time)")
    query.add_argument("--end", type=_time, metavar="TIME", help="stored at or before (default: any time)")
    query.add_argument(
        "--max", type=_max_num, default=64, metavar="COUNT", help="messages per broker, 1..64 (default 64)"
    )
    add_admin_options(query, _query, "the messages")

    trace = sub.add_parser(
        "trace",
        help="a message's trace: sent, stored, consumed by whom, how long",
        description=(
            "Show what traced clients (trace=True, --trace) recorded about MSG_ID in the trace topic, in "
            "RocketMQ's trace format: who sent it to which broker and how long it took, transaction "
            "ends, and every consumption (group, client, when, how long, outcome, retry), with the "
            "stored message."
        ),
    )
    trace.add_argument("msg_id", metavar="MSG_ID", type=_msg_id)
    trace.add_argument("--topic", type=topic_name, help="the message's topic (faster for a producer's id)")
    trace.add_argument(
        "--trace-topic",
        type=topic_name,
        default=RMQ_SYS_TRACE_TOPIC,
        metavar="TOPIC",
        help=f"where the trace records are (default {RMQ_SYS_TRACE_TOPIC})",
    )
    add_admin_options(trace, _trace, "the trace")


def _print_message(m: MessageExt) -> None:
    rows = [
        ("Message ID", m.msg_id),
        ("Offset ID", m.offset_msg_id),
        ("Topic", m.topic),
        ("Tags", f"[{m.tags or ''}]"),
        ("Keys", f"[{m.keys or ''}]"),
        ("Queue ID", m.queue_id),
        ("Queue Offset", m.queue_offset),
        ("CommitLog Offset", m.commit_log_offset),
        ("Reconsume Times", m.reconsume_times),
        ("Born", f"{format_ms(m.born_timestamp)} at {m.born_host}"),
        ("Stored", f"{format_ms(m.store_timestamp)} at {m.store_host}"),
        ("System Flag", m.sys_flag),
        ("Properties", ", ".join(f"{k}={v}" for k, v in sorted(m.properties.items()))),
        (f"Body ({len(m.body)} bytes)", body_text(m.body)),
    ]
    for name, value in rows:
        print(f"{name + ':':<20} {value}")


def _show(args: argparse.Namespace) -> int:
    with admin_session(args) as admin:
        found = admin.view_message(args.msg_id, topic=args.topic)
    if args.json:
        print_json([message_dict(m) for m in found])
    else:
        for i, m in enumerate(found):
            if i:
                print()
            _print_message(m)
    if not found:
        where = f"in topic {args.topic}" if args.topic else "at the broker it names nor in any topic"
        print(f"rocketq message show: no message with id {args.msg_id} {where}", file=sys.stderr)
        return _NOT_FOUND
    return 0


def _query(args: argparse.Namespace) -> int:
    with admin_session(args) as admin:
        found = admin.query_message(args.topic, args.key, args.begin, args.end, args.max)
    if args.json:
        print_json([message_dict(m) for m in found])
    elif found:
        print_table(
            f"{counted(len(found), 'message')} of {args.topic} with key {args.key}",
            ["msg id", "offset id", "queue", "offset", "stored", "tags", "keys", "body"],
            [
                (
                    m.msg_id,
                    m.offset_msg_id,
                    m.queue_id,
                    m.queue_offset,
                    format_ms(m.store_timestamp),
                    m.tags or "",
                    m.keys or "",
                    body_text(m.body, 60),
                )
                for m in found
            ],
            right=("queue", "offset"),
        )
    if not found:
        span = ""
        if args.begin is not None or args.end is not None:
            span = f" stored {format_ms(args.begin or 0)} .. {format_ms(args.end) if args.end else 'now'}"
        print(f"rocketq message query: no message of {args.topic} with key {args.key}{span}", file=sys.stderr)
        return _NOT_FOUND
    return 0


def _print_trace(trace: MessageTrace) -> None:
    m = trace.message
    if m is not None:
        print(
            f"message {trace.msg_id}: topic {m.topic}, tags [{m.tags or ''}], keys [{m.keys or ''}], "
            f"stored {format_ms(m.store_timestamp)} at {m.store_host} (queue {m.queue_id}, offset "
            f"{m.queue_offset}), {len(m.body)} bytes"
        )
    else:
        print(f"message {trace.msg_id}: not found in the store (its trace records are below)")
    print_table(
        None,
        ["what", "when", "group", "client", "host", "took", "outcome", "retry"],
        [
            (
                e.kind,
                format_ms(e.timestamp),
                e.group,
                e.client,
                e.host,
                "" if e.cost_ms is None else f"{e.cost_ms} ms",
                e.status,
                e.retry_times if e.kind == "consumed" else "",
            )
            for e in trace.events
        ],
        right=("took", "retry"),
    )


def _trace(args: argparse.Namespace) -> int:
    with admin_session(args) as admin:
        trace = admin.message_trace(args.msg_id, topic=args.topic, trace_topic=args.trace_topic)
    if args.json:
        print_json(trace.to_dict())
    elif trace.events:
        _print_trace(trace)
    if not trace.events:
        what = "" if trace.message is not None else " (and no stored message has that id)"
        print(
            f"rocketq message trace: no trace records of {trace.msg_id} in {trace.trace_topic}{what}: "
            "trace a producer or consumer with trace=True or --trace",
            file=sys.stderr,
        )
        return _NOT_FOUND
    return 0
