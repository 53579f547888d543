"""The lab's consumer process: one :class:`~rocketq.client.PushConsumer`, its life as JSON lines.

The lab and the demo start each consumer as a **process** of its own (``python -m rocketq.lab
worker ...``), as the seed experiments started Java consumers, so every consumer
has its own client instance, connections, heartbeats and offset commits. The worker writes one
JSON object per line on stdout, flushed per line:

* ``{"type": "started", "client_id", "pid", "ts_ms"}`` once the consumer runs;
* ``{"type": "rebalance", "ts_ms", ...}`` (:meth:`RebalanceRecord.to_dict`) for each subscribed
  topic's first rebalance and every one that changed the queues or the group's client ids, or
  failed (retry topics aside);
* ``{"type": "recv", "ts_ms", "start_ms", "stored_ms", "topic", "broker", "queue_id", "offset",
  "msg_id", "body", "reconsume_times"}`` per message consumed (``ts_ms`` when the listener saw it,
  ``start_ms`` when its call began - the time a traced consumer's SubBefore record carries -,
  ``stored_ms`` the broker's store time);
* ``{"type": "stopped", "ts_ms", "received"}`` after a graceful shutdown.

It stops gracefully (listeners finish, offsets committed, client unregistered so the group
rebalances at once) on SIGTERM/SIGINT or when its stdin reaches end of file - so a worker never
outlives the lab process that started it, even one killed outright.

Options name the consumer (``--instance``: the client id becomes ``<client ip>@NAME``; omitted,
the default unique ``<pid>#<ns>``), its strategy with options as JSON (``--strategy-options``:
``{"rooms": [...]}`` for MACHINE_ROOM, ``{"queues": [[topic, broker, id], ...]}`` for CONFIG,
``{"inner": "AVG"}`` for MACHINE_ROOM_NEARBY, whose consumer room is read from the instance name
as ``ROOM-...``: see :class:`InstanceRoomResolver`), group-wide balance, clean handoff, and the
client's intervals (the lab shortens the offset persist interval so its waits are short), and
message tracing (``--trace``, for the Spark analytics).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any

from rocketq.allocate import AllocationStrategy, get_strategy
from rocketq.allocate.machine_room import AtSignRoomResolver
from rocketq.client import (
    ClientConfig,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    MessageExt,
    PushConsumer,
    PushConsumerConfig,
    RebalanceRecord,
)
from rocketq.client.config import ACCESS_KEY_ENV, DEFAULT_INSTANCE_NAME, SECRET_KEY_ENV
from rocketq.errors import ConfigError, RocketQError
from rocketq.lab.lines import body_text
from rocketq.models import MessageQueue
from rocketq.protocol.properties import MessageConst

__all__ = ["InstanceRoomResolver", "build_strategy", "handoff_available", "main", "worker_args"]

EXIT_USAGE = 2


class InstanceRoomResolver:
    """Machine rooms for MACHINE_ROOM_NEARBY: a broker's room is the text before ``@`` in its name
    (``room1@broker-a``), a consumer's the text before the first ``-`` of its instance name
    (client id ``127.0.0.1@room1-c1`` → ``room1``).

    RocketMQ leaves the consumer side to the application (its ``MachineRoomResolver``); client ids
    start with an IP, so the lab encodes rooms in instance names.

    >>> r = InstanceRoomResolver()
    >>> r.consumer_room("127.0.0.1@room2-c3"), r.broker_room(MessageQueue("T", "room1@broker-a", 0))
    ('room2', 'room1')
    """

    __slots__ = ()

    def broker_room(self, mq: MessageQueue) -> str:
        return AtSignRoomResolver().broker_room(mq)

    def consumer_room(self, client_id: str) -> str:
        instance = client_id.split("@")[1] if "@" in client_id else client_id
        return instance.partition("-")[0]

    def __repr__(self) -> str:
        return "InstanceRoomResolver()"


def build_strategy(name: str, options: dict[str, Any] | None = None) -> AllocationStrategy:
    """A strategy from its name and JSON-ready options (see the module docstring)."""
    opts = dict(options or {})
    upper = name.upper()
    if upper == "CONFIG" and "queues" in opts:
        opts["queues"] = [MessageQueue(str(t), str(b), int(i)) for t, b, i in opts["queues"]]
    elif upper == "MACHINE_ROOM" and "rooms" in opts:
        opts["rooms"] = set(opts["rooms"])
    elif upper == "MACHINE_ROOM_NEARBY":
        opts["inner"] = get_strategy(str(opts.get("inner", "AVG")))
        opts["resolver"] = InstanceRoomResolver()
    return get_strategy(name, **opts)


def handoff_available() -> bool:
    """Whether this build's push consumer offers the clean handoff (``PushConsumerConfig.handoff``)."""
    return "handoff" in {f.name for f in dataclasses.fields(PushConsumerConfig)}


def worker_args(
    *,
    namesrv: str,
    group: str,
    topics: Sequence[str],
    instance: str | None = None,
    client_ip: str = "127.0.0.1",
    strategy: str = "AVG",
    strategy_options: dict[str, Any] | None = None,
    balance: str = "topic",
    handoff: str | None = None,
    start: str = "first",
    persist_interval: float = 1.0,
    work_ms: float = 0.0,
    trace: bool = False,
) -> list[str]:
    """The command line of a worker process with these settings."""
    args = [sys.executable, "-m", "rocketq.lab", "worker", "--namesrv", namesrv, "--group", group]
    for topic in topics:
        args += ["--topic", topic]
    if instance is not None:
        args += ["--instance", instance]
    args += ["--client-ip", client_ip, "--strategy", strategy, "--balance", balance, "--from", start]
    if strategy_options:
        args += ["--strategy-options", json.dumps(strategy_options)]
    if handoff is not None:
        args += ["--handoff", handoff]
    args += ["--persist-interval", str(persist_interval), "--work-ms", str(work_ms)]
    if trace:
        args.append("--trace")
    return args


class _Out:
    """JSON lines on stdout, one writer at a time, flushed per line."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.received = 0
        self.closed = threading.Event()

    def write(self, obj: dict[str, Any], *, count: bool = False) -> None:
        line = json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"
        with self._lock:
            if count:
                self.received += 1
            try:
                sys.stdout.write(line)
                sys.stdout.flush()
            except (BrokenPipeError, ValueError):
                self.closed.set()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m rocketq.lab worker", description=__doc__.split("\n\n")[0])
    p.add_argument("--namesrv", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--topic", action="append", required=True)
    p.add_argument("--instance", default=None)
    p.add_argument("--client-ip", default="127.0.0.1")
    p.add_argument("--strategy", default="AVG")
    p.add_argument("--strategy-options", default=None, help="JSON object")
    p.add_argument("--balance", choices=("topic", "group"), default="topic")
    p.add_argument("--handoff", choices=("clean", "rocketmq"), default=None)
    p.add_argument("--from", dest="start", choices=("first", "last"), default="first")
    p.add_argument("--persist-interval", type=float, default=1.0)
    p.add_argument(
        "--rebalance-min-interval",
        type=float,
        default=0.0,
        help="least seconds between two rebalances (RocketMQ 5.x and the client's default: 1; "
        "0, as RocketMQ 4.9.4, whose figures the lab compares with)",
    )
    p.add_argument("--work-ms", type=float, default=0.0, help="time each message takes to consume")
    p.add_argument("--trace", action="store_true", help="publish message traces and the rebalance log")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    out = _Out()
    try:
        consumer = _consumer(args)
    except (_Unsupported, ConfigError, ValueError) as exc:
        print(f"worker: {exc}", file=sys.stderr)
        return EXIT_USAGE
    stop = _stop_event()
    for topic in args.topic:
        consumer.subscribe(topic, "*")
    consumer.register_listener(_listener(out, args.work_ms / 1000.0))
    consumer.add_rebalance_listener(_rebalance_lines(out, set(args.topic)))
    try:
        consumer.start()
    except RocketQError as exc:
        print(f"worker: could not start: {exc}", file=sys.stderr)
        return 1
    out.write(
        {
            "type": "started",
            "client_id": consumer.client_id,
            "pid": os.getpid(),
            "ts_ms": time.time_ns() // 1_000_000,
        }
    )
    try:
        while not stop.wait(0.5):
            if out.closed.is_set():
                break
    finally:
        consumer.shutdown()
        out.write({"type": "stopped", "ts_ms": time.time_ns() // 1_000_000, "received": out.received})
    return 0


class _Unsupported(Exception):
    """An option this build's push consumer does not have."""


def _consumer(args: argparse.Namespace) -> PushConsumer:
    """The push consumer the arguments describe (not started); raises :class:`_Unsupported`,
    :class:`ConfigError` or :class:`ValueError` for options it cannot take."""
    strategy = build_strategy(args.strategy, json.loads(args.strategy_options or "{}"))
    options: dict[str, Any] = {
        "allocate_strategy": strategy,
        "balance": args.balance,
        "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        if args.start == "first"
        else ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        "await_termination": 5.0,
    }
    if args.handoff is not None:
        if not handoff_available():
            raise _Unsupported("this build's push consumer has no clean handoff")
        options["handoff"] = args.handoff
    if args.trace:
        if "trace" not in {f.name for f in dataclasses.fields(PushConsumerConfig)}:
            raise _Unsupported("this build's push consumer cannot trace")
        options["trace"] = True
    client_config = ClientConfig(
        namesrv=args.namesrv,
        client_ip=args.client_ip,
        instance_name=args.instance or DEFAULT_INSTANCE_NAME,
        persist_consumer_offset_interval=args.persist_interval,
        persist_consumer_offset_initial_delay=args.persist_interval,
        rebalance_min_interval=args.rebalance_min_interval,
        # the lab passes its ACL keys in the environment (kept off the command line)
        access_key=os.environ.get(ACCESS_KEY_ENV) or None,
        secret_key=os.environ.get(SECRET_KEY_ENV) or None,
    )
    return PushConsumer(args.group, client_config=client_config, **options)


def _listener(out: _Out, work: float) -> Callable[[list[MessageExt], Any], ConsumeConcurrentlyStatus]:
    """A listener writing a ``recv`` line per message, after ``work`` seconds of sleep each."""

    def listener(msgs: list[MessageExt], ctx: Any) -> ConsumeConcurrentlyStatus:
        broker = ctx.message_queue.broker_name
        for msg in msgs:
            if work:
                time.sleep(work)
            now_ms = time.time_ns() // 1_000_000
            out.write(
                {
                    "type": "recv",
                    "ts_ms": now_ms,
                    # when the listener call began: the trace's SubBefore time, so the lab's figures
                    # and `rocketq report`'s come from the same instants
                    "start_ms": int(msg.properties.get(MessageConst.CONSUME_START_TIME) or now_ms),
                    "stored_ms": msg.store_timestamp,
                    "topic": msg.topic,
                    "broker": broker,
                    "queue_id": msg.queue_id,
                    "offset": msg.queue_offset,
                    "msg_id": msg.msg_id,
                    "body": body_text(msg.body),
                    "reconsume_times": msg.reconsume_times,
                },
                count=True,
            )
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    return listener


def _rebalance_lines(out: _Out, topics: set[str]) -> Callable[[RebalanceRecord], None]:
    """A rebalance listener writing a ``rebalance`` line for each record of ``topics`` that
    changed something, failed, or saw another member list than the last."""
    seen: dict[str, tuple[str, ...]] = {}

    def on_rebalance(record: RebalanceRecord) -> None:
        if record.topic not in topics:
            return
        ids = record.client_ids
        if record.changed or record.error or seen.get(record.topic) != ids:
            seen[record.topic] = ids
            out.write({"type": "rebalance", "ts_ms": time.time_ns() // 1_000_000, **record.to_dict()})

    return on_rebalance


def _stop_event() -> threading.Event:
    """Set by SIGINT, SIGTERM or the end of stdin (the lab closing it)."""
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    def watch_stdin() -> None:
        try:
            while sys.stdin.read(4096):
                pass
        except (OSError, ValueError):
            pass
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    threading.Thread(target=watch_stdin, name="stdin-watch", daemon=True).start()
    return stop
