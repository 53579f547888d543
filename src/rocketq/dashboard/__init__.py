"""The web dashboard and the Prometheus metrics: rebalancing as it happens.

``rocketq dashboard`` serves :func:`create_app`; ``rocketq exporter`` serves
:func:`create_exporter_app` (only ``/metrics``). Both read the cluster through the admin protocol
(:class:`rocketq.admin.AsyncAdmin`), so they work against rocketq's servers and a RocketMQ
cluster alike.

* :mod:`.monitor` - the live state: the groups being watched, polled on intervals;
* :mod:`.timeline` - a group's ownership over time, its changes and what each cost (pure);
* :mod:`.views` - what each page shows, as data; :mod:`.app` - the pages and JSON endpoints;
* :mod:`.metrics` - the exposition, with rocketmq-exporter's names (``docs/metrics.md``);
* :mod:`.server` - uvicorn on a socket bound first.

Starlette (ASGI routing, static files), uvicorn (the server), Jinja2 (the pages) and
prometheus_client (the exposition) are the dependencies; the browser side is plain JavaScript
and SVG shipped in ``static/``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocketq.dashboard.config import DEFAULT_DASHBOARD_PORT, DEFAULT_EXPORTER_PORT, DashboardConfig
from rocketq.lazy import lazy_names

if TYPE_CHECKING:
    from rocketq.dashboard.app import create_app, create_exporter_app
    from rocketq.dashboard.monitor import Monitor
    from rocketq.dashboard.server import BackgroundServer

__all__ = [
    "DEFAULT_DASHBOARD_PORT",
    "DEFAULT_EXPORTER_PORT",
    "BackgroundServer",
    "DashboardConfig",
    "Monitor",
    "create_app",
    "create_exporter_app",
]

_LAZY = {
    "BackgroundServer": "rocketq.dashboard.server",
    "Monitor": "rocketq.dashboard.monitor",
    "create_app": "rocketq.dashboard.app",
    "create_exporter_app": "rocketq.dashboard.app",
}


# the web parts load on first use, so that ``rocketq --help`` does not import them
__getattr__, __dir__ = lazy_names(__name__, globals(), _LAZY)
