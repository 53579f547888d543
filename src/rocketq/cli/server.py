"""``rocketq server``: a name server and a broker in one process, the embedded default.

Prints where both listen and where the data is - the first line is machine-readable
(``rocketq server ready: namesrv=HOST:PORT broker=HOST:PORT data=DIR``, see
:mod:`rocketq.embedded`) - runs until SIGINT or SIGTERM, then shuts down cleanly (the broker
unregisters, flushes, writes its checkpoint and config files) and exits 0. Restarted on the same
data directory it serves everything acknowledged before. A port in use or an unusable data
directory is one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import signal
import socket
import sys
from collections.abc import Callable, Coroutine, Iterable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, TypeVar

from rocketq.broker.config import DEFAULT_BROKER_PORT, BrokerConfig, default_data_dir
from rocketq.cli._output import non_negative_float, number_type, port_number, positive_float
from rocketq.cli.main import CliError, exit_now, interrupted
from rocketq.embedded import READY_PREFIX, EmbeddedCluster
from rocketq.errors import ConfigError
from rocketq.namesrv import DEFAULT_PORT
from rocketq.remoting import run
from rocketq.store.config import StoreConfig

__all__ = [
    "SERVER_SWITCH_INTERVAL",
    "STORE_DIRS",
    "add_broker_options",
    "broker_feature_options",
    "check_data_dir",
    "check_port",
    "port_number",
    "register",
    "run_until_signal",
    "tune_server_process",
]


_BROKER_DEFAULTS = BrokerConfig()
CHANNEL_EXPIRED_TIMEOUT = _BROKER_DEFAULTS.channel_expired_timeout
CLIENT_HOUSEKEEPING_INTERVAL = _BROKER_DEFAULTS.client_scan_interval
REBALANCE_LOCK_MAX_LIVE_TIME = _BROKER_DEFAULTS.rebalance_lock_max_live_time

STORE_DIRS = ("commitlog", "consumequeue", "config")
"""Directories the store keeps inside its data dir."""


S = TypeVar("S")


def check_data_dir(path: Path) -> None:
    """Refuse, as one line and before anything is created, a data dir the store cannot use: one
    that is a file, whose nearest existing parent is not a writable directory (``/proc/...``,
    ``/sys/...``), that is not writable, or that holds a file where the store keeps a directory."""
    if path.exists():
        if not path.is_dir():
            raise CliError(f"data dir {path} exists and is not a directory")
        for name in STORE_DIRS:
            sub = path / name
            if sub.exists() and not sub.is_dir():
                raise CliError(f"data dir {path} is not a rocketq data dir: {sub} is a file, not a directory")
        if not os.access(path, os.W_OK | os.X_OK):
            raise CliError(f"data dir {path} is not writable")
        return
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise CliError(f"cannot create data dir {path}: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK) or _special_fs(parent):
        raise CliError(f"cannot create data dir {path}: {parent} does not take new directories")


def check_port(host: str, port: int, what: str) -> None:
    """Refuse a port another process listens on before anything is created (the servers would
    find out only after opening their store). Port 0 (any free port) is always fine."""
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise CliError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers bind
        try:
            sock.bind(address)
        except OSError as exc:
            raise CliError(f"cannot listen on {host}:{port} ({what} port): {exc.strerror or exc}") from None


def _special_fs(path: Path) -> bool:
    """``/proc`` and ``/sys`` claim root may write there, but take no new directories."""
    resolved = path.resolve()
    return any(resolved == Path(fs) or Path(fs) in resolved.parents for fs in ("/proc", "/sys"))


def add_broker_options(
    parser: argparse.ArgumentParser, after_host: Callable[[argparse.ArgumentParser], None] | None = None
) -> None:
    """The options ``rocketq server`` and ``rocketq broker`` share (``after_host`` adds more
    options in between, so ``--help`` lists them in the documented order)."""
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="where messages, offsets and configs live (default $ROCKETQ_HOME or ./rocketq-data)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    if after_host is not None:
        after_host(parser)
    parser.add_argument(
        "--broker-port",
        type=port_number,
        default=DEFAULT_BROKER_PORT,
        help=f"broker port, 0 for any (default {DEFAULT_BROKER_PORT})",
    )
    parser.add_argument("--broker-name", default="broker-a", help="broker name (default broker-a)")
    parser.add_argument("--cluster", default="DefaultCluster", help="cluster name (default DefaultCluster)")
    parser.add_argument(
        "--flush",
        choices=("async", "sync"),
        default="async",
        help="async: fsync every 500 ms (default); sync: acknowledge a send after its fsync",
    )
    parser.add_argument(
        "--trace-topic",
        action="store_true",
        help=(
            "create the message-trace topic RMQ_SYS_TRACE_TOPIC at start, for clients with "
            "tracing on (RocketMQ's traceTopicEnable; off by default)"
        ),
    )
    parser.add_argument(
        "--enable-property-filter",
        action="store_true",
        help="serve SQL92 subscriptions (RocketMQ's enablePropertyFilter; off by default)",
    )
    parser.add_argument(
        "--transaction-timeout",
        type=positive_seconds,
        default=6.0,
        metavar="SECONDS",
        help="age before a half message is checked with its producer (transactionTimeOut; default 6)",
    )
    parser.add_argument(
        "--transaction-check-interval",
        type=positive_seconds,
        default=60.0,
        metavar="SECONDS",
        help="how often half messages are checked (transactionCheckInterval; default 60)",
    )
    parser.add_argument(
        "--transaction-check-max",
        type=positive_count,
        default=15,
        metavar="N",
        help="checks of a half message before it is discarded (transactionCheckMax; default 15)",
    )
    parser.add_argument(
        "--channel-expired-timeout",
        type=positive_float,
        default=CHANNEL_EXPIRED_TIMEOUT,
        metavar="S",
        help=f"drop a client silent this many seconds (default {CHANNEL_EXPIRED_TIMEOUT:g}, RocketMQ's "
        "CHANNEL_EXPIRED_TIMEOUT); short values let failure experiments expire a client quickly",
    )
    parser.add_argument(
        "--client-scan-interval",
        type=positive_float,
        default=CLIENT_HOUSEKEEPING_INTERVAL,
        metavar="S",
        help=f"seconds between scans for silent clients (default {CLIENT_HOUSEKEEPING_INTERVAL:g}, "
        "RocketMQ's ClientHousekeepingService)",
    )
    parser.add_argument(
        "--rebalance-lock-max-live-time",
        type=positive_float,
        default=REBALANCE_LOCK_MAX_LIVE_TIME,
        metavar="S",
        help=f"seconds a queue lock lives without renewal (default {REBALANCE_LOCK_MAX_LIVE_TIME:g}, "
        "RocketMQ's rocketmq.broker.rebalance.lockMaxLiveTime)",
    )
    parser.add_argument(
        "--no-message-index",
        dest="message_index",
        action="store_false",
        help="keep no key index (RocketMQ's messageIndexEnable=false): look-ups by key find nothing, "
        "and each send costs the broker less CPU (measured here: about 35 instead of 45-60 us)",
    )
    parser.add_argument(
        "--notify-coalesce-window",
        type=non_negative_float,
        default=0.0,
        metavar="S",
        help="gather a consumer group's member changes for S seconds into one notification per member, "
        "sent to the members it has then (default 0: RocketMQ's one notification per change; "
        "1.5 halved a rolling deploy's notifications in rocketq chaos, see docs/chaos.md)",
    )


positive_seconds = number_type(
    float,
    "not a number of seconds",
    lambda v: 0 < v < math.inf,
    "must be a positive number of seconds, got {text}",
)
positive_count = number_type(int, "not a whole number", lambda v: v >= 1, "must be at least 1, got {value}")


def broker_feature_options(args: argparse.Namespace) -> dict[str, Any]:
    """The :class:`BrokerConfig` settings of :func:`add_broker_options`' feature switches."""
    return {
        "trace_topic_enable": args.trace_topic,
        "enable_property_filter": args.enable_property_filter,
        "transaction_timeout": args.transaction_timeout,
        "transaction_check_interval": args.transaction_check_interval,
        "transaction_check_max": args.transaction_check_max,
        "channel_expired_timeout": args.channel_expired_timeout,
        "client_scan_interval": args.client_scan_interval,
        "rebalance_lock_max_live_time": args.rebalance_lock_max_live_time,
        "notify_coalesce_window": args.notify_coalesce_window,
        "store": StoreConfig(message_index_enable=args.message_index),
    }


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "server",
        help="run a name server and a broker in one process (the embedded default)",
        description=(
            "Run a RocketMQ-compatible name server and broker in one process until SIGINT or "
            "SIGTERM. Real RocketMQ 4.9 clients can use it: point them at the name server."
        ),
    )

    def namesrv_port(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--namesrv-port",
            type=port_number,
            default=DEFAULT_PORT,
            help=f"name server port, 0 for any (default {DEFAULT_PORT})",
        )

    add_broker_options(parser, namesrv_port)
    parser.set_defaults(handler=_run)


SERVER_SWITCH_INTERVAL = 0.0005
"""Seconds a thread may hold the GIL while another waits for it, in a server process (CPython's
default is 0.005): the store's group-commit thread needs the GIL back after each fsync to release
the sends waiting on it, and a busy event loop would otherwise hold it off for up to 5 ms a round."""


def tune_server_process() -> None:
    """Process-wide settings for a long-running server (called by :func:`run_until_signal`):
    the switch interval (:data:`SERVER_SWITCH_INTERVAL`)."""
    sys.setswitchinterval(SERVER_SWITCH_INTERVAL)


def run_until_signal(main: Callable[[asyncio.Event], Coroutine[Any, Any, None]]) -> None:
    """Run ``main(stop)`` on the event loop; SIGINT/SIGTERM set ``stop``. An :class:`OSError` the
    checks before it could not foresee (a port in use, a full disk) ends as one :class:`CliError`."""

    tune_server_process()

    async def wrapper() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()

        def on_signal() -> None:
            if stop.is_set():  # the second one: stop at once (the store recovers at its next start)
                exit_now(130)
            interrupted.set()
            stop.set()

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, on_signal)
        try:
            await main(stop)
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)

    try:
        run(wrapper())
    except OSError as exc:
        raise CliError(
            f"cannot start: {exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else "")
        ) from None


def serve_until_signal(
    what: str, make: Callable[[], AbstractAsyncContextManager[S]], ready: Callable[[S], Iterable[str]]
) -> int:
    """Run the service ``make()`` builds until SIGINT or SIGTERM (see :func:`run_until_signal`):
    once it is started, the lines of ``ready(service)`` on stdout; on stderr, that it is stopping
    (flushing and writing the checkpoint) and that it stopped."""

    async def main(stop: asyncio.Event) -> None:
        async with make() as service:
            for line in ready(service):
                print(line, flush=True)
            await stop.wait()
            print(
                f"rocketq {what} stopping: flushing and writing the checkpoint", file=sys.stderr, flush=True
            )
        print(f"rocketq {what} stopped", file=sys.stderr, flush=True)

    run_until_signal(main)
    return 0


def _run(args: argparse.Namespace) -> int:
    data_dir = (args.data_dir or default_data_dir()).resolve()
    check_data_dir(data_dir)
    check_port(args.host, args.namesrv_port, "name server")
    check_port(args.host, args.broker_port, "broker")
    try:
        cluster = EmbeddedCluster(
            data_dir=data_dir,
            host=args.host,
            namesrv_port=args.namesrv_port,
            broker_port=args.broker_port,
            broker_name=args.broker_name,
            cluster=args.cluster,
            flush=args.flush,
            broker=BrokerConfig(**broker_feature_options(args)),
        )
    except ConfigError as exc:
        raise CliError(str(exc)) from None

    return serve_until_signal(
        "server",
        lambda: cluster,
        lambda cluster: [
            f"{READY_PREFIX} namesrv={cluster.namesrv_addr} broker={cluster.broker_addr} data={data_dir}",
            f"rocketq name server on {cluster.namesrv_addr}, broker {args.broker_name} "
            f"(cluster {args.cluster}) on {cluster.broker_addr}, {args.flush} flush, data in {data_dir}",
        ],
    )
