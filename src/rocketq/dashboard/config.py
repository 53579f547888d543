"""Settings of ``rocketq dashboard`` and ``rocketq exporter``."""

from __future__ import annotations

from dataclasses import dataclass, field

from rocketq.errors import ConfigError
from rocketq.remoting.tls import TlsClientConfig

__all__ = ["DEFAULT_DASHBOARD_PORT", "DEFAULT_EXPORTER_PORT", "DashboardConfig"]

DEFAULT_DASHBOARD_PORT = 8080
"""RocketMQ Dashboard's port (``server.port``)."""
DEFAULT_EXPORTER_PORT = 5557
"""rocketmq-exporter's port (``server.port``), so existing Prometheus scrape configs fit."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DashboardConfig:
    """How the dashboard (and the exporter, which is the dashboard's ``/metrics`` alone) watches
    a cluster. Durations are float seconds."""

    namesrv: str | None = None
    """Name servers, ``HOST:PORT[;HOST:PORT]`` (else ``$NAMESRV_ADDR``, else 127.0.0.1:9876)."""
    access_key: str | None = None
    """The ACL account the admin requests are signed for (a broker with ``--acl``)."""
    secret_key: str | None = field(default=None, repr=False)
    """That account's secret key (never shown)."""
    host: str = "127.0.0.1"
    """Address to listen on: loopback unless told otherwise."""
    port: int = DEFAULT_DASHBOARD_PORT
    """Port to listen on (0 picks a free one)."""
    poll_interval: float = 1.0
    """How often a group someone is looking at is polled (members, owners, lag)."""
    metrics_interval: float = 5.0
    """How often every group is polled once ``/metrics`` has been asked for (the ``rocketq_``
    counters count what these polls see). rocketmq-exporter collects every 15 s by default."""
    history: float = 600.0
    """How much of the past a group's ownership timeline and lag history keep."""
    idle: float = 300.0
    """A group nobody has looked at for this long is no longer polled (unless for metrics)."""
    request_timeout: float = 3.0
    """Wait for one admin request (``mqadmin``'s is 5 s; a page should not hang that long)."""
    page_budget: float = 2.0
    """How long a page waits for the cluster before it answers anyway, saying what did not answer
    (a name server that accepts connections and never replies must not hold a page for long)."""
    sample_interval: float = 5.0
    """How often the name servers and brokers are asked how they are (the status badge) and each
    broker's TPS is sampled (the TPS history)."""
    topic_sample_interval: float = 60.0
    """How often every topic's stored-message count is read, for the busiest topics' TPS history
    (one GET_TOPIC_STATS_INFO per topic and broker; RocketMQ Dashboard collects every minute)."""
    tps_window: float = 3600.0
    """How much TPS history the dashboard keeps (in its own memory: lost on restart)."""
    concurrency: int = 16
    """Admin requests in flight at once when a page asks about many topics or groups."""
    tls: TlsClientConfig = field(default_factory=TlsClientConfig)
    """TLS to the cluster's name servers and brokers (``tls.enable``); default plaintext. HTTPS
    of the pages themselves is :func:`rocketq.dashboard.server.serve`'s ``https``."""

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"port must be 0..65535, got {self.port}")
        for name in (
            "poll_interval",
            "metrics_interval",
            "history",
            "idle",
            "request_timeout",
            "page_budget",
            "sample_interval",
            "topic_sample_interval",
            "tps_window",
        ):
            value = getattr(self, name)
            if not value > 0:
                raise ConfigError(f"{name} must be positive, got {value}")
        if self.concurrency < 1:
            raise ConfigError(f"concurrency must be at least 1, got {self.concurrency}")
