"""``rocketq server``: a name server and its brokers, the embedded default for one machine.

``--brokers 1`` runs the name server and one broker in one process. ``--brokers N`` (N > 1, the
default on a machine with several cores: see :func:`rocketq.supervisor.default_broker_count`)
runs the name server here and N ``rocketq broker`` child processes, one cluster, supervised by
:class:`rocketq.supervisor.Supervisor` (a broker that dies is restarted and the restart is said on
stderr). Prints where everything listens and where the data is - the first line is
machine-readable (``rocketq server ready: namesrv=HOST:PORT broker=HOST:PORT data=DIR``, with
``brokers=HOST:PORT,...`` in front when N > 1, see :mod:`rocketq.embedded`) - runs until SIGINT or
SIGTERM, then shuts down cleanly (each broker unregisters, flushes, writes its checkpoint and
config files) and exits 0. Restarted on the same data directory it serves everything acknowledged
before. A port in use or an unusable data directory is one line on stderr and exit code 2; a
broker that cannot be kept running is one line and exit code 1.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import sys
from collections.abc import Callable, Coroutine, Iterable
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from rocketq.broker import Broker
from rocketq.broker.config import DEFAULT_BROKER_PORT, BrokerConfig, default_data_dir
from rocketq.cli._output import MAX_SECONDS, non_negative_float, number_type, port_number, positive_duration
from rocketq.cli._tls import add_tls_server_options, own_client_tls, tls_server_config
from rocketq.cli.main import CliError, exit_now, interrupted
from rocketq.embedded import READY_PREFIX, EmbeddedCluster
from rocketq.errors import ConfigError, RocketQError
from rocketq.namesrv import DEFAULT_PORT
from rocketq.remoting import ServerConfig, run
from rocketq.store.config import StoreConfig
from rocketq.supervisor import (
    MAX_DEFAULT_BROKERS,
    Supervisor,
    SupervisorConfig,
    broker_plan,
    broker_summary,
    default_broker_count,
)

__all__ = [
    "SERVER_SWITCH_INTERVAL",
    "STORE_DIRS",
    "add_broker_options",
    "broker_feature_options",
    "check_data_dir",
    "check_port",
    "child_broker_args",
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
        metavar="COUNT",
        help="checks of a half message before it is discarded (transactionCheckMax; default 15)",
    )
    parser.add_argument(
        "--channel-expired-timeout",
        type=positive_duration,
        default=CHANNEL_EXPIRED_TIMEOUT,
        metavar="SECONDS",
        help=f"drop a client silent this many seconds (default {CHANNEL_EXPIRED_TIMEOUT:g}, RocketMQ's "
        "CHANNEL_EXPIRED_TIMEOUT); short values let failure experiments expire a client quickly",
    )
    parser.add_argument(
        "--client-scan-interval",
        type=positive_duration,
        default=CLIENT_HOUSEKEEPING_INTERVAL,
        metavar="SECONDS",
        help=f"seconds between scans for silent clients (default {CLIENT_HOUSEKEEPING_INTERVAL:g}, "
        "RocketMQ's ClientHousekeepingService)",
    )
    parser.add_argument(
        "--rebalance-lock-max-live-time",
        type=positive_duration,
        default=REBALANCE_LOCK_MAX_LIVE_TIME,
        metavar="SECONDS",
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
        "--role",
        choices=("async-master", "sync-master", "slave"),
        default="async-master",
        help="async-master: answer a send once stored (default, RocketMQ's ASYNC_MASTER); sync-master: "
        "once a slave has it too (SYNC_MASTER); slave: copy a master's commit log over the HA link "
        "and serve reads (SLAVE); see docs/replication.md",
    )
    parser.add_argument(
        "--broker-id",
        type=non_negative_int,
        default=None,
        metavar="ID",
        help="brokerId: 0 for a master (default), 1 or more for a slave (default 1 with --role slave)",
    )
    parser.add_argument(
        "--ha-listen-port",
        type=port_number,
        default=None,
        metavar="PORT",
        help="where a master listens for its slaves (haListenPort; default the broker port + 1)",
    )
    parser.add_argument(
        "--ha-master-address",
        default=None,
        metavar="HOST:PORT",
        help="a slave's master HA address (haMasterAddress; default: learnt from the name server)",
    )
    parser.add_argument(
        "--slave-read-enable",
        action="store_true",
        help="tell a consumer far behind (over --access-message-in-memory-max-ratio of memory) to pull "
        "from the slave, and one that caught up to go back to the master (slaveReadEnable, off by "
        "default; give it to master and slave alike; see docs/replication.md)",
    )
    parser.add_argument(
        "--access-message-in-memory-max-ratio",
        type=percentage,
        default=40,
        metavar="PERCENT",
        help="how far behind the commit log's end, in percent of physical memory, a pull still counts "
        "as read from memory (accessMessageInMemoryMaxRatio, default 40)",
    )
    parser.add_argument(
        "--notify-coalesce-window",
        type=non_negative_float,
        default=0.0,
        metavar="SECONDS",
        help="gather a consumer group's member changes for SECONDS seconds into one notification per member, "
        "sent to the members it has then (default 0: RocketMQ's one notification per change; "
        "1.5 halved a rolling deploy's notifications in rocketq chaos, see docs/chaos.md)",
    )
    parser.add_argument(
        "--acl",
        type=acl_file,
        default=None,
        metavar="FILE",
        help="turn on RocketMQ 4.9's ACL with this plain_acl.yml: the broker serves only signed "
        "requests of its accounts and white-listed addresses (aclEnable; off by default; the file "
        "is re-read when it changes; see docs/security.md)",
    )
    add_tls_server_options(parser, what="every port (name server, broker, HA link)")


positive_seconds = number_type(
    float,
    "not a number of seconds",
    lambda v: v > 0,
    "must be a positive number of seconds, got {text}",
    most=MAX_SECONDS,
    too_big="must be at most a year (31536000 seconds), got {text}",
)
positive_count = number_type(
    int, "not a whole number", lambda v: v >= 1, "must be at least 1, got {value}", most=(1 << 31) - 1
)
"""A count a broker keeps in a Java ``int`` (``transactionCheckMax``)."""
non_negative_int = number_type(int, "not a whole number", lambda v: v >= 0, "must be 0 or more, got {value}")
percentage = number_type(
    int, "not a whole number", lambda v: 0 <= v <= 100, "must be a percentage from 0 to 100, got {value}"
)


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
        "store": StoreConfig(
            message_index_enable=args.message_index,
            access_message_in_memory_max_ratio=args.access_message_in_memory_max_ratio,
        ),
        "slave_read_enable": args.slave_read_enable,
        "role": args.role,
        "broker_id": args.broker_id if args.broker_id is not None else (1 if args.role == "slave" else 0),
        "ha_listen_port": args.ha_listen_port,
        "ha_master_address": args.ha_master_address,
        "acl_file": args.acl,
        **tls_options(args),
    }


def tls_options(args: argparse.Namespace) -> dict[str, Any]:
    """The :class:`BrokerConfig` TLS settings of ``--tls-*``: its ports', and its own connections'
    (over TLS when its ports speak TLS)."""
    tls = tls_server_config(args)
    return {"remoting": ServerConfig(tls=tls), "tls_client": own_client_tls(tls)}


def acl_file(text: str) -> Path:
    """An argparse ``type=`` for ``--acl FILE``: the file's absolute path once it reads and parses
    as a ``plain_acl.yml``, else a usage error saying why (and never showing a secret)."""
    from rocketq.broker.acl import AclManager  # noqa: PLC0415 - PyYAML only when --acl is given

    path = Path(text)
    try:
        AclManager(path)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return path.resolve()


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "server",
        help="run a name server and its brokers, one per core by default (the embedded default)",
        description=(
            "Run a RocketMQ-compatible name server and --brokers N brokers (one cluster) until SIGINT "
            "or SIGTERM. Real RocketMQ 4.9 clients can use it: point them at the name server."
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
    parser.add_argument(
        "--brokers",
        type=positive_count,
        default=None,
        metavar="COUNT",
        help=f"broker processes, one cluster (default: one per core this process may use, at most "
        f"{MAX_DEFAULT_BROKERS}: {default_broker_count()} here). 1 runs the broker in this process; "
        "N > 1 runs N `rocketq broker` children named broker-a, broker-b, ... on --broker-port, +10, "
        "+20, ..., with their data in DIR, DIR/broker-b, ..., restarted if they die",
    )
    parser.add_argument(
        "--with-slave",
        action="store_true",
        help="also run a slave of the broker (brokerId 1, the next free port, data in DIR/slave) in "
        "this process, to try replication; pair it with --role sync-master (see docs/replication.md)",
    )
    parser.set_defaults(handler=_run)


SERVER_SWITCH_INTERVAL = 0.0005
"""Seconds a thread may hold the GIL while another waits for it, in a server process (CPython's
default is 0.005): the store's group-commit thread needs the GIL back after each fsync to release
the sends waiting on it, and a busy event loop would otherwise hold it off for up to 5 ms a round."""


def tune_server_process() -> None:
    """Process-wide settings for a long-running server (called by :func:`run_until_signal`):
    the switch interval (:data:`SERVER_SWITCH_INTERVAL`)."""
    sys.setswitchinterval(SERVER_SWITCH_INTERVAL)


_SECOND_SIGNAL_AFTER = 0.2
"""Seconds after the first signal before a second Ctrl-C counts as "stop at once"."""


def run_until_signal(main: Callable[[asyncio.Event], Coroutine[Any, Any, None]]) -> None:
    """Run ``main(stop)`` on the event loop; SIGINT/SIGTERM set ``stop``, and a second Ctrl-C
    (SIGINT at least 0.2 s after the first signal) ends the process at once. An :class:`OSError`
    the checks before it could not foresee (a port in use, a full disk) ends as one
    :class:`CliError`."""

    tune_server_process()

    async def wrapper() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()

        first: list[float] = []

        def on_signal(sig: signal.Signals) -> None:
            # a second Ctrl-C stops at once (the store recovers at its next start); a second
            # SIGTERM does not: a process whose parent died gets its death signal more than once
            # (PR_SET_PDEATHSIG, 2 within 2 ms seen), and a stop asked twice is still a clean stop
            now = loop.time()
            if stop.is_set() and sig is signal.SIGINT and now - first[0] > _SECOND_SIGNAL_AFTER:
                exit_now(130)
            if not first:
                first.append(now)
            interrupted.set()
            stop.set()

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, on_signal, sig)
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


class _WithSlave:
    """``rocketq server --with-slave``: the embedded cluster, then a slave of its broker."""

    def __init__(self, cluster: EmbeddedCluster, slave: BrokerConfig) -> None:
        self.cluster = cluster
        self._slave_config = slave
        self.slave: Broker | None = None

    async def __aenter__(self) -> _WithSlave:
        await self.cluster.start()
        config = replace(self._slave_config, namesrv_addrs=(self.cluster.namesrv_addr,))
        self.slave = Broker(config)
        try:
            await self.slave.start()
        except BaseException:
            await self.cluster.close()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.slave is not None:
            await self.slave.close()
        await self.cluster.close()


def _run(args: argparse.Namespace) -> int:
    tls_server_config(args)  # its files read before anything is made
    data_dir = (args.data_dir or default_data_dir()).resolve()
    if args.role == "slave":
        raise CliError("rocketq server runs a master: use --with-slave, or rocketq broker --role slave")
    check_data_dir(data_dir)
    check_port(args.host, args.namesrv_port, "name server")
    check_port(args.host, args.broker_port, "broker")
    brokers = args.brokers if args.brokers is not None else (1 if args.with_slave else default_broker_count())
    if brokers > 1 and args.with_slave:
        raise CliError("--with-slave runs one broker and its slave: leave out --brokers or give --brokers 1")
    if brokers > 1:
        return _run_supervised(args, data_dir, brokers)
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
    if args.with_slave:
        return _serve_with_slave(args, cluster, data_dir)

    return serve_until_signal(
        "server",
        lambda: cluster,
        lambda cluster: [
            f"{READY_PREFIX} namesrv={cluster.namesrv_addr} broker={cluster.broker_addr} data={data_dir}",
            f"rocketq name server on {cluster.namesrv_addr}, broker {args.broker_name} "
            f"(cluster {args.cluster}) on {cluster.broker_addr}, {args.flush} flush, data in {data_dir}",
        ],
    )


def _serve_with_slave(args: argparse.Namespace, cluster: EmbeddedCluster, data_dir: Path) -> int:
    features = broker_feature_options(args)
    features.update(role="slave", broker_id=1, ha_listen_port=None, ha_master_address=None)
    try:
        slave = BrokerConfig(
            host=args.host,
            port=0,
            broker_name=args.broker_name,
            broker_cluster_name=args.cluster,
            flush=args.flush,
            data_dir=data_dir / "slave",
            **features,
        )
    except ConfigError as exc:
        raise CliError(str(exc)) from None

    def ready(pair: _WithSlave) -> list[str]:
        c, s = pair.cluster, pair.slave
        assert s is not None
        return [
            f"{READY_PREFIX} namesrv={c.namesrv_addr} broker={c.broker_addr} data={data_dir}",
            f"rocketq name server on {c.namesrv_addr}, broker {args.broker_name} "
            f"(cluster {args.cluster}) on {c.broker_addr}, {args.flush} flush, {args.role}, "
            f"data in {data_dir}",
            f"rocketq slave of {args.broker_name} (brokerId 1) on {s.address}, data in {data_dir / 'slave'}",
        ]

    return serve_until_signal("server", lambda: _WithSlave(cluster, slave), ready)


_SET_PER_CHILD = {
    "help", "namesrv", "data_dir", "host", "broker_port", "broker_name", "cluster",
    # each child is a master of its own name: ids and HA ports are its own
    "broker_id", "ha_listen_port", "ha_master_address",
}  # fmt: skip


def child_broker_args(args: argparse.Namespace) -> list[str]:
    """The options of :func:`add_broker_options` in ``args`` that differ from their defaults (flush,
    feature switches), to pass to every child ``rocketq broker``; the ones set per child (name,
    port, data dir, host, cluster) are left out."""
    shared = argparse.ArgumentParser(add_help=False)
    add_broker_options(shared)
    out: list[str] = []
    for action in shared._actions:
        if action.dest in _SET_PER_CHILD or not action.option_strings or not hasattr(args, action.dest):
            continue
        value = getattr(args, action.dest)
        if value == action.default:
            continue
        if action.nargs == 0:  # store_true / store_false
            if value == action.const:
                out.append(action.option_strings[0])
        else:
            out += [action.option_strings[0], str(value)]
    return out


def _run_supervised(args: argparse.Namespace, data_dir: Path, count: int) -> int:
    """``--brokers N`` for N > 1: the name server here, N supervised ``rocketq broker`` children."""
    try:
        plans = broker_plan(args.broker_name, args.broker_port, data_dir, count)
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    for plan in plans[1:]:
        check_data_dir(plan.data_dir)
        check_port(args.host, plan.port, f"broker {plan.name}")
    config = SupervisorConfig(
        host=args.host,
        namesrv_port=args.namesrv_port,
        cluster=args.cluster,
        brokers=tuple(plans),
        broker_args=tuple(child_broker_args(args)),
        tls=tls_server_config(args),
    )

    def report(line: str) -> None:
        print(f"rocketq server: {line}", file=sys.stderr, flush=True)

    failure: list[str] = []

    async def main(stop: asyncio.Event) -> None:
        supervisor = Supervisor(config, report)
        try:
            await supervisor.start()
        except RocketQError as exc:
            raise CliError(str(exc)) from None
        try:
            addrs = supervisor.broker_addrs
            print(
                f"{READY_PREFIX} brokers={','.join(addrs)} namesrv={supervisor.namesrv_addr} "
                f"broker={addrs[0]} data={data_dir}",
                flush=True,
            )
            print(
                f"rocketq name server on {supervisor.namesrv_addr}, {count} brokers "
                f"(cluster {args.cluster}): {broker_summary(supervisor.broker_names, addrs)}; "
                f"{args.flush} flush, data in {data_dir} "
                f"(the first broker's) and {data_dir}/<broker name>",
                flush=True,
            )
            reason = await supervisor.wait(stop)
            if reason is not None:
                failure.append(reason)
                report(f"{reason}; stopping every broker")
            else:
                print(
                    "rocketq server stopping: each broker flushes and writes its checkpoint",
                    file=sys.stderr,
                    flush=True,
                )
        finally:
            await supervisor.close()
        print("rocketq server stopped", file=sys.stderr, flush=True)

    run_until_signal(main)
    return 1 if failure else 0
