"""``rocketq consume TOPIC --group G``: a push consumer that prints what it receives and owns.

stdout gets one line per message and one per rebalance, each flushed as written::

    RECV <client id> <broker> <queue id> <queue offset> <msg id> <body>
    REBALANCE <client id> <topic> owned=[broker-a:0,...] added=[...] removed=[...]

(``--json``: one JSON object per line with the same facts, a ``type`` of ``recv`` or
``rebalance``, and time stamps). Bodies are printed as UTF-8 with replacement, line breaks
escaped, and shortened in the middle past 200 characters. A REBALANCE line is printed for the
subscribed topic whenever the consumer's queues change (and for its first rebalance, so an idle
consumer says so); rebalances of the group's retry topic only go to the log.

``--from`` says where a group without committed offsets starts: ``first``, ``last`` or a time
(epoch ms or ISO-8601). A RocketMQ broker answers 0 to a new group on any queue that still holds
its first message, so the consumer's own consume-from-where would only matter for old queues; for
``last`` and a time this command therefore commits the group's start offsets first (as ``mqadmin
updateOffset`` would), and says so on stderr. A group that has offsets resumes from them.

``--tag EXPR`` subscribes with a tag expression, ``--sql EXPR`` with an SQL92 filter over the
messages' properties (``rocketq produce --property``); the brokers are asked first whether they
can serve it (a broker without ``--enable-property-filter`` refuses, and the command stops there
with its reason, having changed nothing).

The consumer runs until SIGINT/SIGTERM, ``--count`` messages or ``--seconds``, then shuts down
gracefully - in-flight listeners finish, offsets are committed, the client unregisters so the
group rebalances at once - and exits 0. With ``--count N``, messages delivered after the N-th
are handed back (RECONSUME_LATER: the broker redelivers them to the group later) rather than
printed. Logs and a closing summary (messages, distinct messages, duplicates: message ids seen
before, by an 8-byte digest, over the first 2,000,000 distinct ones) go to stderr.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import queue
import select
import signal
import stat
import sys
import threading
import time
from datetime import datetime
from types import FrameType
from typing import Any

from rocketq.admin import Admin, parse_reset_target
from rocketq.allocate import get_strategy, strategy_names
from rocketq.analytics import counted
from rocketq.cli._output import (
    add_acl_options,
    add_namesrv_option,
    add_view_options,
    client_security,
    group_name,
    non_negative_float,
    positive_duration,
    positive_int,
    topic_name,
    unreachable_hint,
)
from rocketq.cli.main import CliError, interrupted
from rocketq.client import (
    ClientConfig,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    ConsumeOrderlyStatus,
    MessageExt,
    MessageModel,
    MessageSelector,
    PushConsumer,
    RebalanceRecord,
)
from rocketq.client.config import DEFAULT_INSTANCE_NAME
from rocketq.errors import ConfigError, RemotingConnectError, RemotingTimeoutError, UnknownTopicError
from rocketq.lab.lines import body_text

__all__ = ["TRACKED_BODIES", "ConsumeOutput", "client_options", "consumer_options", "register", "selector_of"]

TRACKED_BODIES = 2_000_000
"""Distinct message ids remembered for counting duplicates (about 140 MB when full); later ones are not."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "consume",
        help="consume a topic in a group, printing every message and every rebalance",
        description=(
            "Run a push consumer in GROUP and print one line per message (RECV <client id> <broker> "
            "<queue id> <queue offset> <msg id> <body>) and one per rebalance (REBALANCE <client id> "
            "<topic> owned=[...] added=[...] removed=[...]) on stdout, flushed per line. Bodies are "
            "decoded as UTF-8 with replacement, line breaks escaped, and bodies longer than 200 "
            "characters shortened in the middle with an ellipsis (…). Stops gracefully on "
            "SIGINT/SIGTERM, --count or --seconds (exit 0); logs go to stderr."
        ),
    )
    parser.add_argument("topic", metavar="TOPIC", type=topic_name)
    parser.add_argument(
        "--group", required=True, metavar="GROUP", type=group_name, help="consumer group (required)"
    )
    parser.add_argument(
        "--strategy",
        default="AVG",
        metavar="NAME",
        help=f"allocation strategy: {', '.join(strategy_names())} (default AVG)",
    )
    parser.add_argument(
        "--instance",
        metavar="NAME",
        help="instance name: the client id becomes <ip>@NAME (default <pid>#<ns>, unique per process; "
        "DEFAULT when broadcasting, as RocketMQ)",
    )
    parser.add_argument(
        "--orderly",
        action="store_true",
        help="orderly: each queue consumed in offset order by one thread at a time, under a broker lock",
    )
    parser.add_argument(
        "--broadcast",
        action="store_true",
        help="broadcasting: every consumer gets every message (local offsets)",
    )
    parser.add_argument(
        "--from",
        dest="start",
        default="last",
        metavar="last|first|TIMESTAMP",
        help="where a group without offsets starts: last (default), first, or a time (epoch ms or "
        "ISO-8601); for last and a time, its start offsets are committed before it starts",
    )
    parser.add_argument(
        "--handoff",
        choices=("clean", "rocketmq"),
        help="clean (the default): a queue is consumed only under a broker lease, and changes owner "
        "only after the old owner committed it (no duplicates when consumers join or leave "
        "gracefully); rocketmq: RocketMQ's handoff (the new owner starts from the last commit at "
        "once, so messages consumed but not yet committed are consumed again)",
    )
    add_view_options(
        parser,
        "which member list a rebalance shares the queues over: per-broker (default: every broker "
        "is asked, and each broker's queues are shared over the members it lists), union or "
        "intersection (every broker is asked and the rebalance waits up to 2 s for them to agree, "
        "then takes the union or intersection of their lists), off (RocketMQ: one random broker)",
        "do not send the consumer's view with its pulls and commits (by default rocketq's broker "
        "refuses a pull made on a member list or queue count it no longer has, and the consumer "
        "rebalances first)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per line instead of text")
    parser.add_argument(
        "--count",
        type=positive_int,
        metavar="COUNT",
        help="stop after printing COUNT messages (later deliveries are handed back to the broker for "
        "redelivery)",
    )
    parser.add_argument(
        "--seconds", type=positive_duration, metavar="SECONDS", help="stop after SECONDS seconds"
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--tag", default="*", metavar="EXPR", help="tag expression, e.g. 'TagA || TagB' (default *)"
    )
    which.add_argument(
        "--sql",
        metavar="EXPR",
        type=_sql,
        help="SQL92 filter on message properties, e.g. \"region = 'eu' AND amount > 100\" (the broker "
        "needs --enable-property-filter; it is asked before anything starts)",
    )
    parser.add_argument(
        "--heartbeat-interval",
        type=positive_duration,
        default=30.0,
        metavar="SECONDS",
        help="seconds between heartbeats to every broker (default 30, RocketMQ's); lower it for a "
        "broker that expires silent clients sooner than its 120 s default",
    )
    parser.add_argument(
        "--poll-name-server-interval",
        type=positive_duration,
        default=30.0,
        metavar="SECONDS",
        help="seconds between route refreshes from the name server (default 30, RocketMQ's "
        "pollNameServerInterval); a consumer learns new queues of its topic only then",
    )
    parser.add_argument(
        "--rebalance-interval",
        type=positive_duration,
        default=20.0,
        metavar="SECONDS",
        help="seconds between periodic rebalances (default 20, RocketMQ's "
        "rocketmq.client.rebalance.waitInterval); notifications from brokers rebalance at once",
    )
    parser.add_argument(
        "--rebalance-min-interval",
        type=non_negative_float,
        default=0.0,
        metavar="SECONDS",
        help="never two rebalances closer than SECONDS seconds, however many notifications arrive "
        "(default 0: every notification at once, as RocketMQ 4.9.4; RocketMQ 5's "
        "rocketmq.client.rebalance.minInterval is 1)",
    )
    parser.add_argument(
        "--trace",
        action="store_true",
        help="publish RocketMQ message-trace records (SubBefore/SubAfter) to RMQ_SYS_TRACE_TOPIC and "
        "rebalance records to RQ_SYS_REBALANCE_TOPIC, which `rocketq report` reads",
    )
    add_namesrv_option(parser)
    add_acl_options(parser)
    parser.set_defaults(handler=_run)


def _sql(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("the SQL92 expression is blank")
    return text


def selector_of(args: argparse.Namespace) -> MessageSelector | str:
    """What ``--sql`` or ``--tag`` subscribe with."""
    return MessageSelector.by_sql(args.sql) if args.sql is not None else args.tag


def consumer_options(args: argparse.Namespace) -> dict[str, Any]:
    """The :class:`~rocketq.client.PushConsumerConfig` fields the options ask for.

    (``--orderly`` is not one of them: it picks the kind of listener.)
    """
    try:
        get_strategy(args.strategy)
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    options: dict[str, Any] = {"allocate_strategy": args.strategy}
    try:
        start = args.start.strip()
        if start == "last":
            options["consume_from_where"] = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
        elif start == "first":
            options["consume_from_where"] = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        else:
            ms = parse_reset_target(start)
            if ms <= 0:
                raise ConfigError(f"--from takes last, first or a time, got {start!r}")
            options["consume_from_where"] = ConsumeFromWhere.CONSUME_FROM_TIMESTAMP
            options["consume_timestamp"] = datetime.fromtimestamp(ms / 1000).strftime("%Y%m%d%H%M%S")
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    if args.broadcast:
        options["message_model"] = MessageModel.BROADCASTING
    if args.handoff:
        options["handoff"] = args.handoff
    if args.trace:
        options["trace"] = True
    if getattr(args, "consistent_views", None):
        options["consistent_views"] = args.consistent_views
    if not getattr(args, "view_fence", True):
        options["view_fence"] = False
    return options


def client_options(args: argparse.Namespace) -> dict[str, Any]:
    """The :class:`~rocketq.client.ClientConfig` fields the options ask for (name server, instance
    name, the client's intervals, the ACL keys and TLS)."""
    return {
        **client_security(args),
        "namesrv": args.namesrv,
        "instance_name": args.instance or DEFAULT_INSTANCE_NAME,
        "heartbeat_broker_interval": args.heartbeat_interval,
        "poll_name_server_interval": args.poll_name_server_interval,
        "rebalance_interval": args.rebalance_interval,
        "rebalance_min_interval": args.rebalance_min_interval,
    }


class ConsumeOutput:
    """Writes RECV and REBALANCE lines (thread-safe, flushed per line) and counts what came.

    ``limit`` is ``--count``: :meth:`recv` returns False for messages past it (the caller hands
    them back) and sets ``done`` when it is reached. A closed stdout (``| head``) sets ``done`` too.
    """

    def __init__(self, client_id: str, topic: str, *, json: bool, limit: int | None, out: Any = None) -> None:
        self.client_id = client_id
        self.topic = topic
        self.json = json
        self.limit = limit
        self.out = out if out is not None else sys.stdout
        self.done = threading.Event()
        #: stdout's reader went away (``| head``): nothing more can be printed
        self.closed = False
        self.received = 0
        #: 8-byte digests of the message ids seen, kept for the first :data:`TRACKED_BODIES` distinct ones
        self.digests: set[int] = set()
        self.duplicates = 0
        self._lock = threading.Lock()
        self._topics_seen: set[str] = set()  # touched on the client's loop only
        self._lines: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._writer: threading.Thread | None = None

    def tracking_note(self) -> str:
        """Why the duplicate count may be low: messages past the first :data:`TRACKED_BODIES` distinct."""
        if len(self.digests) < TRACKED_BODIES:
            return ""
        return f"; only repeats of the first {TRACKED_BODIES:,} distinct messages are counted"

    def _write(self, line: str) -> None:
        try:
            self.out.write(line + "\n")
            self.out.flush()
        except (BrokenPipeError, ValueError):  # reader went away / stream closed
            self.closed = True
            self.done.set()

    def recv(self, msg: MessageExt, broker: str) -> bool:
        with self._lock:
            if self.done.is_set() or (self.limit is not None and self.received >= self.limit):
                return False
            self.received += 1
            self._write_queued()
            digest = int.from_bytes(hashlib.blake2b(msg.msg_id.encode(), digest_size=8).digest(), "little")
            if digest in self.digests:
                self.duplicates += 1
            elif len(self.digests) < TRACKED_BODIES:
                self.digests.add(digest)
            if self.json:
                self._write_json(
                    {
                        "type": "recv",
                        "ts_ms": time.time_ns() // 1_000_000,
                        "client_id": self.client_id,
                        "topic": msg.topic,
                        "broker": broker,
                        "queue_id": msg.queue_id,
                        "queue_offset": msg.queue_offset,
                        "msg_id": msg.msg_id,
                        "tags": msg.tags,
                        "keys": msg.keys,
                        "reconsume_times": msg.reconsume_times,
                        "born_ms": msg.born_timestamp,
                        "stored_ms": msg.store_timestamp,
                        "body_size": len(msg.body),
                        "body": body_text(msg.body),
                    }
                )
            else:
                self._write(
                    f"RECV {self.client_id} {broker} {msg.queue_id} {msg.queue_offset} {msg.msg_id} "
                    f"{body_text(msg.body)}"
                )
            if self.limit is not None and self.received >= self.limit:
                self.done.set()
            return True

    def _write_json(self, obj: dict[str, Any]) -> None:
        self._write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")))

    def rebalance(self, record: RebalanceRecord) -> None:
        """A rebalance record, from the client's event loop: its line is written by a thread of
        its own, so a stdout that is slow to drain (a slow reader, a full pipe, the listener's
        own lines blocked in it) never stops the client's loop - its pulls, heartbeats and the
        rebalance that is dropping the queues it gave up."""
        if record.topic != self.topic:
            return
        first = record.topic not in self._topics_seen
        self._topics_seen.add(record.topic)
        if not (record.changed or first or record.error):
            return
        if self.json:
            line = json.dumps(
                {"type": "rebalance", "ts_ms": time.time_ns() // 1_000_000, **record.to_dict()},
                ensure_ascii=False,
                separators=(",", ":"),
            )
        else:
            line = record.line()
            if record.error:
                line += f" error={record.error.replace(' ', '_')}"
        if self._writer is None:
            self._writer = threading.Thread(target=self._write_lines, name="consume-lines", daemon=True)
            self._writer.start()
        self._lines.put(line)

    def _write_lines(self) -> None:
        while (line := self._lines.get()) is not None:
            with self._lock:
                self._write(line)
                self._write_queued()

    def _write_queued(self) -> None:
        """Write the rebalance lines queued so far (holding ``_lock``): a RECV line is written after
        the REBALANCE lines that came before it."""
        while True:
            try:
                line = self._lines.get_nowait()
            except queue.Empty:
                return
            if line is None:  # close() is waiting for the writer: leave it the end mark
                self._lines.put(None)
                return
            self._write(line)

    def close(self) -> None:
        """Write the rebalance lines still queued (call after the consumer stopped)."""
        if self._writer is not None:
            self._lines.put(None)
            self._writer.join()
            self._writer = None


class _Stop:
    def __init__(self, output: ConsumeOutput) -> None:
        self.output = output
        self.signalled = False

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.signalled = True
        interrupted.set()
        self.output.done.set()
        # a second Ctrl-C while shutting down interrupts for real
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _reader_gone(stream: Any) -> bool:
    """Whether ``stream`` is a pipe whose reading end has closed (poll reports POLLERR on it).

    A consumer piped into ``head`` learns of it only when it next writes, which may be never on
    a quiet topic; this lets it notice while idle.
    """
    try:
        fd = stream.fileno()
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return False
    except (OSError, ValueError, AttributeError):
        return False
    poller = select.poll()
    poller.register(fd, 0)  # error conditions are always reported
    return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in poller.poll(0))


def _wait(output: ConsumeOutput, seconds: float | None) -> None:
    """Until ``output`` is done (signal, --count, closed stdout) or ``seconds`` pass."""
    deadline = None if seconds is None else time.monotonic() + seconds
    while True:
        step = 0.5 if deadline is None else min(0.5, deadline - time.monotonic())
        if step <= 0 or output.done.wait(step):
            return
        if _reader_gone(output.out):
            output.closed = True
            output.done.set()
            return


def _seed_new_group(admin: Admin, args: argparse.Namespace) -> None:
    """Make ``--from last|TIMESTAMP`` hold for a new clustering group (see the module docstring)."""
    if args.broadcast or args.start.strip() == "first":
        return
    seeded = admin.seed_new_group(args.group, args.topic, args.start)
    if seeded:
        offsets = " ".join(f"{mq.short}={o}" for mq, o in seeded.items())
        print(
            f"rocketq consume: group {args.group} is new on {args.topic}; committed its start offsets "
            f"(--from {args.start}): {offsets}",
            file=sys.stderr,
            flush=True,
        )


def _run(args: argparse.Namespace) -> int:
    options = consumer_options(args)
    orderly = bool(args.orderly)
    try:
        with Admin(args.namesrv, **client_security(args)) as admin:
            try:
                admin.topic_route(args.topic)
            except UnknownTopicError:
                print(
                    f"rocketq consume: topic {args.topic} has no route yet; waiting for it "
                    f"(create it with `rocketq topic create {args.topic} --queues 8`)",
                    file=sys.stderr,
                    flush=True,
                )
            else:
                if args.sql is not None:  # a broker that cannot filter says so before anything changes
                    admin.check_subscription(args.group, args.topic, selector_of(args))
                _seed_new_group(admin, args)
        client_config = ClientConfig(**client_options(args))
        consumer = PushConsumer(args.group, client_config=client_config, **options)
    except (RemotingConnectError, RemotingTimeoutError) as exc:
        raise unreachable_hint(exc, args.namesrv) from None
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    output = ConsumeOutput(consumer.client_id, args.topic, json=args.json, limit=args.count)

    def listener(msgs: list[MessageExt], ctx: Any) -> object:
        broker = ctx.message_queue.broker_name
        for msg in msgs:
            if not output.recv(msg, broker):
                # past --count: not ours to print; let the broker (or the orderly queue) redeliver it
                if orderly:
                    return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
                return ConsumeConcurrentlyStatus.RECONSUME_LATER
        return ConsumeOrderlyStatus.SUCCESS if orderly else ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer.subscribe(args.topic, selector_of(args))
    consumer.register_listener(listener, orderly=orderly)
    consumer.add_rebalance_listener(output.rebalance)
    stop = _Stop(output)
    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    began = time.monotonic()
    try:
        consumer.start()
        _wait(output, args.seconds)
    finally:
        try:
            consumer.shutdown()
        finally:
            output.close()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    elapsed = time.monotonic() - began
    if output.closed:
        # the reader is gone: point stdout at /dev/null so the interpreter's last flush stays quiet
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    print(
        f"rocketq consume: {counted(output.received, 'message')} "
        f"({output.received - output.duplicates} distinct by message id, "
        f"{counted(output.duplicates, 'duplicate')}{output.tracking_note()}) in {elapsed:.2f} s as "
        f"{consumer.client_id}",
        file=sys.stderr,
        flush=True,
    )
    return 0
