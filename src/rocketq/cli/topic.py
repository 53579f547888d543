"""``rocketq topic create|update|delete|list|route|stats``: topic administration (``mqadmin``'s
``updateTopic``, ``deleteTopic``, ``topicList``, ``topicRoute``, ``topicStatus``).

Every subcommand talks to the name server given by ``--namesrv`` (else ``$NAMESRV_ADDR``, else
``127.0.0.1:9876``) and the brokers it lists; the work is :class:`rocketq.admin.Admin`'s.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rocketq.admin import Admin, is_protected_topic, topic_changes
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
from rocketq.cli.cluster import describe_slave
from rocketq.cli.main import CliError
from rocketq.errors import SystemTopicError, TopicExistsError, UnknownTopicError
from rocketq.protocol.bodies import TopicRouteData

__all__ = ["is_system_topic", "register"]


_queue_count = number_type(
    int, "not a queue count", lambda v: 1 <= v <= 1024, "queue count must be 1..1024, got {value}"
)


def _perm(text: str) -> int:
    if text not in ("2", "4", "6"):
        raise argparse.ArgumentTypeError(
            f"perm must be 2 (write only), 4 (read only) or 6 (both), got {text!r}"
        )
    return int(text)


def register(subparsers: Any) -> None:
    sub = add_command_group(
        subparsers,
        "topic",
        summary="create, change, delete, list and inspect topics",
        description="Topic administration against a RocketMQ (or rocketq) name server and its brokers.",
    )

    for name, doc in (
        (
            "create",
            "create a topic on every master of a cluster, or on one broker (an existing one: --update)",
        ),
        ("update", "change a topic's queue counts, permission or order flag (others keep their values)"),
    ):
        p = sub.add_parser(name, help=doc, description=doc[0].upper() + doc[1:] + ".")
        p.add_argument("topic", metavar="TOPIC", type=topic_name)
        p.add_argument(
            "--queues",
            type=_queue_count,
            required=name == "create",
            metavar="COUNT",
            help="read and write queues per broker" + (" (required)" if name == "create" else ""),
        )
        p.add_argument(
            "--read-queues", type=_queue_count, metavar="COUNT", help="read queues (default: --queues)"
        )
        p.add_argument(
            "--write-queues", type=_queue_count, metavar="COUNT", help="write queues (default: --queues)"
        )
        p.add_argument(
            "--perm",
            type=_perm,
            default=6 if name == "create" else None,
            help="2 write, 4 read, 6 read and write" + (" (default 6)" if name == "create" else ""),
        )
        p.add_argument(
            "--order",
            action="store_true",
            default=None,
            help="ordered topic: also written to the name servers' ORDER_TOPIC_CONFIG",
        )
        where = p.add_mutually_exclusive_group()
        where.add_argument("--broker", metavar="ADDR", help="only this broker (HOST:PORT)")
        where.add_argument(
            "--cluster",
            metavar="NAME",
            help="every master of this cluster (default: the only cluster"
            + (")" if name == "create" else ", or the brokers holding the topic)"),
        )
        if name == "create":
            p.add_argument(
                "--update",
                action="store_true",
                help="if the topic exists, change it to these settings (else an existing topic is refused)",
            )
        _add_force_option(p)
        add_admin_options(p, _create if name == "create" else _update)

    p = sub.add_parser(
        "delete",
        help="delete a topic in its brokers, then in every name server",
        description="Delete a topic in its brokers (or all brokers of --cluster), then in every name server.",
    )
    p.add_argument("topic", metavar="TOPIC", type=topic_name)
    p.add_argument("--cluster", metavar="NAME", help="delete on every broker of this cluster")
    _add_force_option(p)
    add_admin_options(p, _delete)

    p = sub.add_parser(
        "list",
        help="list the topics the name server knows (system topics with --all)",
        description="List the topics the name server knows: those of users, and with --all also the "
        "system ones (RMQ_SYS_*, RQ_SYS_*, %RETRY%/%DLQ% topics, TBW102, SCHEDULE_TOPIC_XXXX, the "
        "cluster's and brokers' own topics ...).",
    )
    p.add_argument("--all", action="store_true", help="also list system topics")
    add_admin_options(p, _list, "the list")

    p = sub.add_parser(
        "route",
        help="show a topic's route: brokers and queue counts",
        description="Show a topic's route as the name server gives it to clients: one row per broker "
        "that holds the topic, with its cluster, its addresses (broker id 0 is the master, others are "
        "slaves), its read and write queue counts and its permission (6 read and write, 4 read only, "
        "2 write only), and the topic's order configuration when it has one.",
    )
    p.add_argument("topic", metavar="TOPIC", type=topic_name)
    add_admin_options(p, _route, "the route")

    p = sub.add_parser(
        "stats",
        help="per queue: min and max offset, messages, last store time",
        description="Per queue of a topic on every broker: min and max offset, messages held, last store.",
    )
    p.add_argument("topic", metavar="TOPIC", type=topic_name)
    add_admin_options(p, _stats, "the stats")


def _changed(args: argparse.Namespace, brokers: dict[str, str], verb: str, admin: Admin) -> int:
    route = admin.topic_route(args.topic)
    order = admin.order_conf(args.topic)
    by_name = {qd.broker_name: qd for qd in route.queue_datas}
    if args.json:
        print_json(
            {
                "topic": args.topic,
                verb: [
                    {
                        "broker": name,
                        "addr": addr,
                        "read_queues": by_name[name].read_queue_nums if name in by_name else None,
                        "write_queues": by_name[name].write_queue_nums if name in by_name else None,
                        "perm": by_name[name].perm if name in by_name else None,
                    }
                    for name, addr in brokers.items()
                ],
                "order": order,
            }
        )
        return 0
    for name, addr in brokers.items():
        qd = by_name.get(name)
        counts = (
            f"{qd.read_queue_nums} read / {qd.write_queue_nums} write queues, perm {qd.perm}" if qd else ""
        )
        print(f"topic {args.topic} {verb} on {name} ({addr}): {counts}".rstrip(": "))
    if order:
        print(f"order config: {order}")
    return 0


def _create(args: argparse.Namespace) -> int:
    with admin_session(args) as admin, _system_topic_hint(args, "create"):
        try:
            before = admin.topic_route(args.topic)
        except UnknownTopicError:
            before = None
        try:
            brokers = admin.create_topic(
                args.topic,
                perm=args.perm,
                order=bool(args.order),
                force_system_topic=args.force_system_topic,
                **_passed_on(args),
            )
        except TopicExistsError as exc:  # the admin layer's check: nothing was changed
            if not args.update:
                raise CliError(
                    f"{exc} (to change it: `rocketq topic update {args.topic} ...` or add --update)"
                ) from None
            return _update_with(admin, args, list(exc.changes))
        held = {qd.broker_name for qd in before.queue_datas} if before is not None else set()
        if before is not None and held and set(brokers) <= held:
            return _same(args, before)
        return _changed(args, brokers, "created", admin)


def _add_force_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--force-system-topic",
        metavar="TOPIC",
        help="the override that lets this command change or delete a system topic (TBW102, "
        "SCHEDULE_TOPIC_XXXX, the cluster's or a broker's topic, a group's %%RETRY%%/%%DLQ%% topic ...): "
        "the topic's name again",
    )


@contextmanager
def _system_topic_hint(args: argparse.Namespace, doing: str) -> Iterator[None]:
    """A refused system topic as one line that says how to override it here."""
    try:
        yield
    except SystemTopicError as exc:
        raise CliError(f"{exc.refusal}. To {doing} it anyway add --force-system-topic {exc.topic}") from None


def _passed_on(args: argparse.Namespace) -> dict[str, Any]:
    """The options create and update hand to the admin call as they are: queue counts and where."""
    return {
        "queues": args.queues,
        "read_queues": args.read_queues,
        "write_queues": args.write_queues,
        "broker": args.broker,
        "cluster": args.cluster,
    }


def _same(args: argparse.Namespace, route: TopicRouteData) -> int:
    if args.json:
        print_json({"topic": args.topic, "unchanged": True, **route.to_json()})
    else:
        print(f"topic {args.topic} already exists with these settings ({_counts(route)}); nothing changed")
    return 0


def _counts(route: TopicRouteData) -> str:
    return ", ".join(
        f"{qd.read_queue_nums} read / {qd.write_queue_nums} write queues on {qd.broker_name}"
        for qd in sorted(route.queue_datas, key=lambda q: q.broker_name or "")
    )


def _update(args: argparse.Namespace) -> int:
    if all(v is None for v in (args.queues, args.read_queues, args.write_queues, args.perm, args.order)):
        raise CliError("nothing to change: give --queues, --read-queues, --write-queues, --perm or --order")
    with admin_session(args) as admin, _system_topic_hint(args, "change"):
        try:
            current = admin.topic_route(args.topic)
        except UnknownTopicError:
            raise CliError(
                f"topic {args.topic} does not exist; create it: rocketq topic create {args.topic} --queues N"
            ) from None
        held = {qd.broker_name: qd for qd in current.queue_datas if qd.broker_name}
        read = args.read_queues if args.read_queues is not None else args.queues
        write = args.write_queues if args.write_queues is not None else args.queues
        return _update_with(admin, args, topic_changes(held, read=read, write=write, perm=args.perm))


def _update_with(admin: Admin, args: argparse.Namespace, changes: list[str]) -> int:
    brokers = admin.update_topic(
        args.topic,
        perm=args.perm,
        order=args.order,
        force_system_topic=args.force_system_topic,
        **_passed_on(args),
    )
    if not args.json:
        for line in changes or ["nothing changed: the topic already had these settings"]:
            print(f"topic {args.topic} {line}")
    return _changed(args, brokers, "updated", admin)


def _delete(args: argparse.Namespace) -> int:
    with admin_session(args) as admin, _system_topic_hint(args, "delete"):
        brokers = admin.delete_topic(
            args.topic, cluster=args.cluster, force_system_topic=args.force_system_topic
        )
    if args.json:
        print_json({"topic": args.topic, "deleted": [{"broker": n, "addr": a} for n, a in brokers.items()]})
    else:
        where = ", ".join(f"{n} ({a})" for n, a in brokers.items()) or "no broker"
        print(f"topic {args.topic} deleted on {where} and in the name server")
    return 0


is_system_topic = is_protected_topic
"""The topics ``topic list`` hides without ``--all`` and the topic commands protect: the admin
layer's :func:`~rocketq.admin.is_protected_topic` (``own_names``: the clusters' and brokers' names)."""


def _list(args: argparse.Namespace) -> int:
    with admin_session(args) as admin:
        topics = admin.topic_list()
        own: frozenset[str] = frozenset()
        if not args.all:
            info = admin.cluster_info()
            own = frozenset(info.cluster_addr_table) | frozenset(info.broker_addr_table)
    shown = topics if args.all else [t for t in topics if not is_system_topic(t, own)]
    hidden = len(topics) - len(shown)
    if args.json:
        print_json({"topics": shown, "system_topics_hidden": hidden})
    else:
        for topic in shown:
            print(topic)
        if hidden:
            print(f"rocketq topic list: {hidden} system topics not shown (--all lists them)", file=sys.stderr)
    return 0


def _route(args: argparse.Namespace) -> int:
    with admin_session(args) as admin:
        route = admin.topic_route(args.topic)
        order = admin.order_conf(args.topic)
    addrs = {bd.broker_name: bd for bd in route.broker_datas}
    if args.json:
        print_json({"topic": args.topic, **route.to_json(), "orderTopicConf": order})
        return 0
    rows = []
    for qd in sorted(route.queue_datas, key=lambda q: q.broker_name or ""):
        bd = addrs.get(qd.broker_name)
        rows.append(
            (
                qd.broker_name,
                bd.cluster if bd else "",
                " ".join(f"{i}={a}" for i, a in sorted(bd.broker_addrs.items())) if bd else "",
                qd.read_queue_nums,
                qd.write_queue_nums,
                qd.perm,
            )
        )
    print_table(
        f"route of {args.topic}" + (f" (order: {order})" if order else ""),
        ("broker", "cluster", "addresses (id=addr)", "read queues", "write queues", "perm"),
        rows,
        right=("read queues", "write queues", "perm"),
    )
    return 0


def _stats(args: argparse.Namespace) -> int:
    with admin_session(args) as admin:
        stats = admin.topic_stats(args.topic)
    if args.json:
        print_json(stats.to_dict())
        return 0
    columns = ["broker", "queue", "min offset", "max offset", "messages", "last stored"]
    rows: list[list[object]] = [
        [
            q.queue.broker_name,
            q.queue.queue_id,
            q.min_offset,
            q.max_offset,
            q.messages,
            format_ms(q.last_update_ms),
        ]
        for q in stats.queues
    ]
    footer: list[object] = ["total", len(stats.queues), None, None, stats.total_messages, None]
    if stats.slaves:  # replicated brokers: what their slaves hold of each queue
        columns.append("on slave")
        for row, q in zip(rows, stats.queues, strict=True):
            row.append("-" if q.slave_max_offset is None else q.slave_max_offset)
        footer.append(None)
    print_table(
        f"topic {args.topic}",
        columns,
        rows,
        footer=footer,
        right=("queue", "min offset", "max offset", "messages", "on slave"),
    )
    for lag in stats.slaves:
        print(describe_slave(lag))
    return 0
