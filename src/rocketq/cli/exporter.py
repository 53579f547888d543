"""``rocketq exporter``: Prometheus metrics of a cluster at ``/metrics``, until Ctrl-C.

The dashboard's ``/metrics`` alone, on rocketmq-exporter's port (5557), with its metric and label
names where the idea is the same (see ``docs/metrics.md``).
"""

from __future__ import annotations

import argparse
from typing import Any

from rocketq.cli.dashboard import add_watch_options, run_server
from rocketq.dashboard.config import DEFAULT_EXPORTER_PORT

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "exporter",
        help="Prometheus metrics at /metrics (rocketmq-exporter's names, plus rocketq_ rebalance metrics)",
        description=(
            "Serve Prometheus metrics for a RocketMQ (or rocketq) cluster at /metrics: broker, topic "
            "and consumer-group figures under rocketmq-exporter's names and labels (so its Grafana "
            "dashboards and alerts work), and rocketq's own rebalance metrics (rebalances, queues "
            "moved, duplicated client ids, owners per queue). Every consumer group is polled every "
            "--metrics-interval seconds. Listens on 127.0.0.1 unless --host says otherwise."
        ),
    )
    add_watch_options(parser, port=DEFAULT_EXPORTER_PORT, exporter=True)
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    return run_server(args, exporter=True)
