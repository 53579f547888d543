"""``rocketq namesrv``: run a RocketMQ-compatible name server until SIGINT or SIGTERM.

Brokers register with it (``rocketq broker --namesrv HOST:PORT``, or a Java broker with
``namesrvAddr``) and clients ask it for routes, exactly as with RocketMQ's ``mqnamesrv``. It prints
where it listens, runs until interrupted, closes every connection and exits 0. A port already in
use is one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path
from typing import Any

from rocketq.cli._output import port_number
from rocketq.cli._tls import add_tls_server_options, tls_server_config
from rocketq.cli.main import CliError
from rocketq.namesrv import DEFAULT_PORT, NameServer, NamesrvConfig, serve_namesrv
from rocketq.remoting import ServerConfig, run

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "namesrv",
        help="run a name server (brokers register with it, clients ask it for routes)",
        description=(
            "Run a RocketMQ-compatible name server until SIGINT or SIGTERM. Brokers register "
            "their topics with it every 30 s; clients ask it which brokers host a topic. Real "
            "RocketMQ 4.9 brokers and clients can use it unchanged."
        ),
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument(
        "--port",
        type=port_number,
        default=DEFAULT_PORT,
        help=f"port to listen on, 0 for any (default {DEFAULT_PORT})",
    )
    parser.add_argument(
        "--kv-config",
        type=Path,
        default=None,
        metavar="FILE",
        help="persist the KV config (order-topic settings) in FILE, RocketMQ's kvConfig.json format",
    )
    parser.add_argument(
        "--order-message-enable",
        action="store_true",
        help="put ORDER_TOPIC_CONFIG values into routes as orderTopicConf (RocketMQ's orderMessageEnable)",
    )
    add_tls_server_options(parser)
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    tls = tls_server_config(args)
    try:
        config = NamesrvConfig(
            host=args.host,
            port=args.port,
            kv_config_path=args.kv_config,
            order_message_enable=args.order_message_enable,
            remoting=ServerConfig(tls=tls),
        )
    except ValueError as exc:
        raise CliError(str(exc)) from None
    run(_serve(config))
    return 0


async def _serve(config: NamesrvConfig) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)

    def ready(server: NameServer) -> None:
        print(f"rocketq name server listening on {server.address}", flush=True)
        if config.kv_config_path is not None:
            print(f"KV config: {config.kv_config_path}", flush=True)

    try:
        await serve_namesrv(config, stop, on_ready=ready)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    print("rocketq name server stopped", file=sys.stderr, flush=True)
