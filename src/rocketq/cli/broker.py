"""``rocketq broker --namesrv HOST:PORT[;HOST:PORT]``: run a broker alone.

Several brokers with different names, ports and data directories registered with the same name
server(s) form one cluster: a topic created on each has queues on all of them. Prints where it
listens and its data directory, runs until SIGINT or SIGTERM, then unregisters, flushes, writes
its checkpoint and exits 0. Errors (port in use, unusable data dir) are one line, exit code 2.
"""

from __future__ import annotations

import argparse
from typing import Any

from rocketq.broker import Broker, BrokerConfig
from rocketq.broker.config import default_data_dir, parse_namesrv_addrs
from rocketq.cli._tls import tls_server_config
from rocketq.cli.main import CliError
from rocketq.cli.server import (
    add_broker_options,
    broker_feature_options,
    check_data_dir,
    check_port,
    serve_until_signal,
)
from rocketq.errors import ConfigError

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "broker",
        help="run a broker that registers with name servers (several form one cluster)",
        description=(
            "Run a RocketMQ-compatible broker until SIGINT or SIGTERM, registered with the given "
            "name servers every 30 s. Start several (different --broker-name, ports and data "
            "dirs) to spread topics' queues over one cluster."
        ),
    )
    parser.add_argument(
        "--namesrv",
        required=True,
        metavar="HOST:PORT[;HOST:PORT]",
        help="name server address(es), separated by ';' (RocketMQ's namesrvAddr)",
    )
    add_broker_options(parser)
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    tls_server_config(args)  # its files read before anything is made
    data_dir = (args.data_dir or default_data_dir()).resolve()
    check_data_dir(data_dir)
    check_port(args.host, args.broker_port, "broker")
    try:
        config = BrokerConfig(
            host=args.host,
            port=args.broker_port,
            broker_name=args.broker_name,
            broker_cluster_name=args.cluster,
            flush=args.flush,
            data_dir=data_dir,
            namesrv_addrs=parse_namesrv_addrs(args.namesrv),
            **broker_feature_options(args),
        )
    except ConfigError as exc:
        raise CliError(str(exc)) from None

    return serve_until_signal(
        "broker",
        lambda: Broker(config),
        lambda broker: [
            f"rocketq broker {config.broker_name} (cluster {config.broker_cluster_name}) listening on "
            f"{broker.address}, registered with {';'.join(config.namesrv_addrs)}, "
            f"{config.flush} flush, {config.role} (brokerId {config.broker_id}), data in {data_dir}"
        ],
    )
