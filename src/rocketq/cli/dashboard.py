"""``rocketq dashboard``: the web dashboard (and ``/metrics``) for a cluster, until Ctrl-C.

A thin wrapper over :mod:`rocketq.dashboard`: parse the options, bind the port (a port in use is
one line and exit code 2), print ``rocketq dashboard ready: http://HOST:PORT/ namesrv=...``, serve.
``rocketq exporter`` (:mod:`rocketq.cli.exporter`) shares the options below.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rocketq.cli._dashboard_login import add_login_options, login_config, register_users
from rocketq.cli._output import (
    add_acl_options,
    add_namesrv_option,
    client_security,
    port_number,
    positive_duration,
)
from rocketq.cli.main import CliError, exit_now, interrupted
from rocketq.dashboard.config import DEFAULT_DASHBOARD_PORT, DashboardConfig
from rocketq.errors import ConfigError

__all__ = ["add_watch_options", "register", "run_server"]

READY_PREFIX = "rocketq dashboard ready:"
STOP_WITHIN = 0.6
"""Seconds from Ctrl-C to the end of the process at most: open requests get that long (issue 24)."""


def add_watch_options(parser: argparse.ArgumentParser, *, port: int, exporter: bool = False) -> None:
    """``--namesrv`` (and the ACL keys), ``--host``, ``--port``, how often groups are polled, and
    the logins (``--users``, ...: :mod:`rocketq.cli._dashboard_login`)."""
    add_namesrv_option(parser)
    add_acl_options(parser)
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)"
    )
    parser.add_argument(
        "--port", type=port_number, default=port, help=f"port to listen on, 0 for any (default {port})"
    )
    parser.add_argument(
        "--metrics-interval",
        type=positive_duration,
        default=5.0,
        metavar="SECONDS",
        help="poll every consumer group this often for the rocketq_ metrics (default 5)",
    )
    parser.add_argument(
        "--https-cert", metavar="FILE", default=None, help="serve HTTPS with this certificate (PEM)"
    )
    parser.add_argument("--https-key", metavar="FILE", default=None, help="and this private key (PEM)")
    add_login_options(parser, exporter=exporter)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "dashboard",
        help="web dashboard: who owns which queue, live; topics, groups, messages, /metrics",
        description=(
            "Serve a web dashboard for a RocketMQ (or rocketq) cluster, read through the admin "
            "protocol: the cluster's brokers and topics, each consumer group's live queue-ownership "
            "map with its timeline, changes and what each cost, lag over time, duplicated client ids, "
            "offset resets, message look-ups, an allocation planner, and Prometheus metrics at "
            "/metrics. Listens on 127.0.0.1 unless --host says otherwise; Ctrl-C stops it."
        ),
    )
    add_watch_options(parser, port=DEFAULT_DASHBOARD_PORT)
    parser.add_argument(
        "--poll",
        type=positive_duration,
        default=1.0,
        metavar="SECONDS",
        help="poll a group someone is looking at this often (default 1)",
    )
    parser.set_defaults(handler=_run)
    register_users(parser)


def run_server(args: argparse.Namespace, *, exporter: bool) -> int:
    """Bind, print the ready line, serve until SIGINT/SIGTERM (shared with ``rocketq exporter``)."""
    from rocketq.dashboard import create_app, create_exporter_app  # noqa: PLC0415 - web parts when run
    from rocketq.dashboard.auth import LoginGate  # noqa: PLC0415
    from rocketq.dashboard.server import Https, bind, serve, url_of  # noqa: PLC0415

    if (args.https_cert is None) != (args.https_key is None):
        raise CliError("--https-cert and --https-key go together")
    try:
        login = login_config(args, exporter=exporter)
        https = None if args.https_cert is None else Https(args.https_cert, args.https_key)
        config = DashboardConfig(
            namesrv=args.namesrv,
            host=args.host,
            port=args.port,
            poll_interval=getattr(args, "poll", 1.0),
            metrics_interval=args.metrics_interval,
            **client_security(args),
        )
        app = create_exporter_app(config) if exporter else create_app(config)
        served = app if login is None else LoginGate(app, login, metrics_only=exporter)
        sock = bind(config.host, config.port)
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    name = "exporter" if exporter else "dashboard"
    url = url_of(sock, https) + ("metrics" if exporter else "")
    namesrv = ";".join(app.state.monitor.admin.namesrv_addrs)
    print(f"rocketq {name} ready: {url} namesrv={namesrv}", flush=True)

    def overdue() -> None:
        print(f"rocketq {name} stopped (its last requests cut short)", file=sys.stderr)
        exit_now(0)

    try:
        stopped_by = serve(served, sock, https, stop_within=STOP_WITHIN, overdue=overdue)
    finally:
        sock.close()
    print(f"rocketq {name} stopped", file=sys.stderr)
    if stopped_by is not None:
        interrupted.set()  # the process ends at once: the interpreter's teardown took a second
    return 0


def _run(args: argparse.Namespace) -> int:
    return run_server(args, exporter=False)
