"""The broker's configuration: RocketMQ 4.9.4's ``BrokerConfig`` defaults, durations in seconds.

One frozen, keyword-only value holds everything a :class:`~rocketq.broker.server.Broker` needs:
where it listens, who it is (name, cluster, id), which name servers it registers with, where its
data lives, how it flushes, and the intervals of its housekeeping. Defaults are RocketMQ's own
(the Java field is named beside each one) except where marked *ours*.

>>> cfg = BrokerConfig(port=0, namesrv_addrs=("127.0.0.1:9876",))
>>> cfg.broker_name, cfg.broker_cluster_name, cfg.register_period
('broker-a', 'DefaultCluster', 30.0)
>>> cfg.delay_levels()[:3]
(1.0, 5.0, 10.0)
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Final, Literal

from rocketq.broker.channels import CHANNEL_EXPIRED_TIMEOUT, CLIENT_HOUSEKEEPING_INTERVAL
from rocketq.broker.ha import HAConfig
from rocketq.broker.locks import REBALANCE_LOCK_MAX_LIVE_TIME
from rocketq.broker.longpoll import SHORT_POLLING_TIME_MILLS
from rocketq.errors import ConfigError
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.topics import RMQ_SYS_TRACE_TOPIC
from rocketq.remoting import ServerConfig, TlsClientConfig
from rocketq.store.config import FlushMode, StoreConfig

__all__ = [
    "DEFAULT_BROKER_PORT",
    "DEFAULT_DATA_DIR",
    "DEFAULT_MESSAGE_DELAY_LEVEL",
    "ROLES",
    "BrokerConfig",
    "BrokerRole",
    "default_data_dir",
    "parse_delay_levels",
    "parse_namesrv_addrs",
]

DEFAULT_BROKER_PORT = 10911
"""RocketMQ's broker port (``NettyServerConfig.listenPort`` as ``BrokerStartup`` sets it)."""

DEFAULT_MESSAGE_DELAY_LEVEL = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
"""``MessageStoreConfig.messageDelayLevel``: the 18 delay levels, level 1 first."""

DEFAULT_DATA_DIR = "rocketq-data"
"""Ours: the data directory when neither ``--data-dir`` nor ``$ROCKETQ_HOME`` names one."""

BrokerRole = Literal["async-master", "sync-master", "slave"]
"""``brokerRole``: ``ASYNC_MASTER``, ``SYNC_MASTER`` or ``SLAVE``, in rocketq's spelling."""

ROLES: dict[str, BrokerRole] = {
    "ASYNC_MASTER": "async-master",
    "SYNC_MASTER": "sync-master",
    "SLAVE": "slave",
}
"""RocketMQ's role names (as a ``broker.conf`` writes them) to rocketq's."""

_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_LEVEL = re.compile(r"(\d+)(ms|s|m|h|d)")


def parse_delay_levels(text: str) -> tuple[float, ...]:
    """The delays (seconds) of a ``messageDelayLevel`` string, level 1 first.

    RocketMQ's units ``s``, ``m``, ``h``, ``d``, plus ``ms`` (ours, so tests can use short levels).

    >>> parse_delay_levels("100ms 1s 2m")
    (0.1, 1.0, 120.0)
    """
    levels: list[float] = []
    for token in text.split():
        match = _LEVEL.fullmatch(token)
        if match is None:
            raise ConfigError(f"bad delay level {token!r} in {text!r}: expected e.g. 1s, 5m, 2h or 100ms")
        levels.append(int(match.group(1)) * _UNIT_SECONDS[match.group(2)])
    if not levels:
        raise ConfigError("messageDelayLevel names no level")
    return tuple(levels)


def parse_namesrv_addrs(text: str) -> tuple[str, ...]:
    """``HOST:PORT[;HOST:PORT...]`` (RocketMQ's ``namesrvAddr`` form) as a tuple of addresses."""
    addrs = tuple(part.strip() for part in text.split(";") if part.strip())
    for addr in addrs:
        host, sep, port = addr.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) <= 65535:
            raise ConfigError(f"bad name server address {addr!r}: expected HOST:PORT")
    return addrs


def default_data_dir() -> Path:
    """``$ROCKETQ_HOME`` if set, else ``./rocketq-data``."""
    home = os.environ.get("ROCKETQ_HOME")
    return Path(home) if home else Path(DEFAULT_DATA_DIR)


_POSITIVE: Final = (
    "flush_delay_offset_interval",
    "channel_expired_timeout",
    "client_scan_interval",
    "short_polling_time",
    "broker_suspend_max_time",
    "rebalance_lock_max_live_time",
    "register_period",
    "register_timeout",
    "client_call_timeout",
    "slave_sync_period",
    "transaction_timeout",
    "transaction_check_interval",
    "acl_check_interval",
    "wait_time_in_send_queue",
    "wait_time_in_pull_queue",
    "wait_time_in_heartbeat_queue",
    "wait_time_in_transaction_queue",
)
"""The :class:`BrokerConfig` fields that must be positive (periods, timeouts, waits)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerConfig:
    """Everything a broker is told at start; see the module docstring."""

    # -- identity and network
    host: str = "127.0.0.1"
    """Address to bind (ours: loopback unless told otherwise)."""
    port: int = DEFAULT_BROKER_PORT
    """Port to bind; 0 picks a free one (``listenPort`` 10911)."""
    broker_ip: str | None = None
    """``brokerIP1``: the address registered with name servers and written into messages as their
    store host. ``None``: ``host``, or 127.0.0.1 when ``host`` is a wildcard."""
    broker_name: str = "broker-a"
    """``brokerName`` (RocketMQ's default is the host name; ours is ``broker-a``)."""
    broker_cluster_name: str = "DefaultCluster"
    """``brokerClusterName``."""
    broker_id: int = 0
    """``brokerId``: 0 for a master, 1 or more for a slave (registered under the master's
    ``broker_name``)."""
    role: BrokerRole = "async-master"
    """``brokerRole`` (``ASYNC_MASTER``): ``async-master`` answers a send once stored;
    ``sync-master`` once a slave also has it (SLAVE_NOT_AVAILABLE / FLUSH_SLAVE_TIMEOUT when
    none can); ``slave`` takes its master's commit log over the HA link and serves reads.
    See ``docs/replication.md``."""
    ha_listen_port: int | None = None
    """``haListenPort``: where a master listens for its slaves. ``None``: the listen port + 1
    (RocketMQ's 10912) - or, ours, a free port when that one is taken or ``port`` is 0 (the
    name servers are told the port bound)."""
    ha_master_address: str | None = None
    """``haMasterAddress`` (``HOST:PORT``) of a slave's master HA listener; ``None``: learnt from
    the name server's answer to its registration (RocketMQ's default)."""
    ha: HAConfig = field(default_factory=HAConfig)
    """The HA link's intervals and limits (``haSendHeartbeatInterval``, ``slaveTimeout``...)."""
    slave_read_enable: bool = False
    """``slaveReadEnable`` (false): a pull more than ``store.access_message_in_memory_max_ratio``
    percent of physical memory behind the commit log's end is answered with
    ``suggestWhichBrokerId`` = its group's ``whichBrokerWhenConsumeSlowly`` (1: the slave), any
    other with the group's ``brokerId`` (0); off, every pull suggests the master (0). Set it on
    the slave too, or the slave sends such a consumer straight back (``docs/replication.md``)."""
    slave_sync_period: float = 10.0
    """How often a slave copies its master's topics, offsets and groups (``SlaveSynchronize``,
    every 10 s after 3 s)."""
    region_id: str = "DefaultRegion"
    """``regionId``: answered in every send response as ``MSG_REGION``."""
    trace_on: bool = True
    """``traceOn``: answered in every send response as ``TRACE_ON``."""
    namesrv_addrs: tuple[str, ...] = ()
    """``namesrvAddr`` split on ``;``: every name server to register with (none: stand alone)."""

    # -- storage
    data_dir: Path | None = None
    """Where the store lives; ``None`` means :func:`default_data_dir`."""
    flush: FlushMode = "async"
    """``flushDiskType``: ``async`` (``ASYNC_FLUSH``) or ``sync`` (``SYNC_FLUSH``, group commit)."""
    store: StoreConfig = field(default_factory=StoreConfig)
    """Store settings (segment size, flush and retention intervals...); ``flush`` overrides its own."""
    max_message_size: int = 4 * 1024 * 1024
    """``maxMessageSize``: a message (or batch) over this many bytes is refused (MESSAGE_ILLEGAL);
    a send's body over it is refused before it is decoded. It is RocketMQ's only bound on a batch:
    a batch's records are counted against it before any is decoded, and a batch over 16 KiB is
    decoded and stored on the remoting server's worker thread (``remoting.offload_threshold``)."""

    # -- topics and groups
    auto_create_topic_enable: bool = True
    """``autoCreateTopicEnable``: a send to an unknown topic creates it from ``TBW102``."""
    auto_create_subscription_group: bool = True
    """``autoCreateSubscriptionGroup``."""
    default_topic_queue_nums: int = 8
    """``defaultTopicQueueNums``: queues of ``TBW102``, which caps auto-created topics."""
    cluster_topic_enable: bool = True
    broker_topic_enable: bool = True
    trace_topic_enable: bool = False
    """``traceTopicEnable``: create ``msg_trace_topic_name`` (1 queue) at start. Off, a traced
    client's first trace send creates it from ``TBW102``, as with a default Java broker."""
    msg_trace_topic_name: str = RMQ_SYS_TRACE_TOPIC
    """``msgTraceTopicName``: the trace topic ``trace_topic_enable`` creates."""

    # -- delays and retries
    message_delay_level: str = DEFAULT_MESSAGE_DELAY_LEVEL
    """``messageDelayLevel``; ``ms`` units are accepted too (ours, for tests)."""
    flush_delay_offset_interval: float = 10.0
    """``flushDelayOffsetInterval``: how often the schedule service persists ``delayOffset.json``."""

    # -- consumers, long polling, locks
    channel_expired_timeout: float = CHANNEL_EXPIRED_TIMEOUT
    """``CHANNEL_EXPIRED_TIMEOUT``: a client silent this long is dropped (120 s)."""
    client_scan_interval: float = CLIENT_HOUSEKEEPING_INTERVAL
    """How often silent clients are looked for (``ClientHousekeepingService``, 10 s)."""
    notify_consumer_ids_changed_enable: bool = True
    """``notifyConsumerIdsChangedEnable``."""
    notify_on_expiry: bool = True
    """Ours: tell a group's members when one of them expires (RocketMQ 4.9.4 stays silent)."""
    release_departed_locks: bool = True
    """Ours: release a client's leases (the clean handoff's queue locks; orderly locks are kept)
    in a group as soon as it leaves the group (connection closed, unregistered, expired) rather
    than after ``rebalance_lock_max_live_time`` (RocketMQ keeps them 60 s): a crashed member's
    queues move in about a second under the clean handoff."""
    notify_coalesce_window: float = 0.0
    """Ours: seconds during which a group's member changes are gathered into one
    NOTIFY_CONSUMER_IDS_CHANGED per member, sent to the members the group has when the window
    ends (latest wins; apache/rocketmq#9115). 0 is RocketMQ's behaviour: every change notifies
    every member at once."""
    long_polling_enable: bool = True
    """``longPollingEnable``."""
    short_polling_time: float = SHORT_POLLING_TIME_MILLS
    """``shortPollingTimeMills`` (1 s)."""
    broker_suspend_max_time: float = 15.0
    """Ours, after RocketMQ's ``BROKER_SUSPEND_MAX_TIME_MILLIS`` (15 s): the longest a pull is held,
    whatever its ``suspendTimeoutMillis`` asks."""
    rebalance_lock_max_live_time: float = REBALANCE_LOCK_MAX_LIVE_TIME
    """``rocketmq.broker.rebalance.lockMaxLiveTime`` (60 s)."""

    # -- name server registration
    register_period: float = 30.0
    """``registerNameServerPeriod`` (30 000 ms)."""
    register_initial_delay: float = 10.0
    """The first periodic registration comes this long after start (RocketMQ: 10 s; one
    registration is also sent at start)."""
    register_timeout: float = 6.0
    """``registerBrokerTimeoutMills`` (6000 ms)."""
    compressed_register: bool = False
    """``compressedRegister``: send REGISTER_BROKER bodies zlib-compressed (off in 4.9.4)."""

    # -- filters
    enable_property_filter: bool = False
    """``enablePropertyFilter``: serve SQL92 subscriptions (off in RocketMQ, so off here: such a
    consumer is told to turn it on)."""

    # -- transactions
    transaction_timeout: float = 6.0
    """``transactionTimeOut`` (6000 ms): a half message younger than this is not checked yet."""
    transaction_check_interval: float = 60.0
    """``transactionCheckInterval`` (60 000 ms): how often half messages are checked."""
    transaction_check_max: int = 15
    """``transactionCheckMax``: checks of one half message before it is discarded (to
    ``TRANS_CHECK_MAX_TIME_TOPIC``)."""
    reject_transaction_message: bool = False
    """``rejectTransactionMessage``: refuse half messages (NO_PERMISSION) instead of storing them."""

    # -- request-reply
    store_reply_message_enable: bool = True
    """``storeReplyMessageEnable``: store replies in ``<cluster>_REPLY_TOPIC`` besides pushing them."""

    # -- client calls
    client_call_timeout: float = 5.0
    """Seconds the broker waits for a client it calls (GET_CONSUMER_RUNNING_INFO relay; 5000 ms)."""

    # -- fast failure (BrokerFastFailure): a request that waited too long is answered SYSTEM_BUSY
    broker_fast_failure_enable: bool = True
    """``brokerFastFailureEnable``: answer requests that waited too long SYSTEM_BUSY, unserved
    (:mod:`rocketq.remoting.admission`: the wait is the time a whole request spent in its
    connection's buffer)."""
    wait_time_in_send_queue: float = 0.2
    """``waitTimeMillsInSendQueue`` (200 ms): sends, batches and send-backs."""
    wait_time_in_pull_queue: float = 5.0
    """``waitTimeMillsInPullQueue`` (5000 ms)."""
    wait_time_in_heartbeat_queue: float = 31.0
    """``waitTimeMillsInHeartbeatQueue`` (31000 ms)."""
    wait_time_in_transaction_queue: float = 3.0
    """``waitTimeMillsInTransactionQueue`` (3000 ms): END_TRANSACTION."""

    remoting: ServerConfig = field(default_factory=ServerConfig)
    """Transport settings of the broker's listener (its ``fast_fail``, when not set, comes from
    the ``wait_time_in_*_queue`` fields above: :meth:`remoting_config`)."""

    # -- access control
    acl_file: Path | None = None
    """``aclEnable`` with this ``plain_acl.yml`` (RocketMQ 4.9's ACL 1.0, see ``docs/security.md``):
    every request must be signed by an account of the file, or come from a white-listed address.
    ``None`` (the default, as ``aclEnable=false``): nothing is refused."""
    acl_check_interval: float = 5.0
    """How often the ACL file is looked at for changes (``AclFileWatchService``: 5 s)."""

    # -- TLS (the listener's, and the HA listener's, is ``remoting.tls``)
    tls_client: TlsClientConfig = field(default_factory=TlsClientConfig)
    """How this broker dials its name servers and, as a slave, its master (4.9's broker uses
    ``tls.enable``, its process-wide client switch): default plaintext."""

    def __post_init__(self) -> None:
        self._check_identity()
        self._check_replication()
        self._check_store()
        self._check_times()
        self._check_addresses()

    def _check_identity(self) -> None:
        """The port, the names, the role and the broker id that goes with it."""
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"port must be 0..65535, got {self.port}")
        for name in ("broker_name", "broker_cluster_name", "msg_trace_topic_name"):
            value = getattr(self, name)
            if not value or value.isspace():
                raise ConfigError(f"{name} must not be blank")
        if self.role not in ("async-master", "sync-master", "slave"):
            raise ConfigError(f"role must be async-master, sync-master or slave, not {self.role!r}")
        if self.role == "slave" and self.broker_id < 1:
            raise ConfigError(f"a slave's broker_id must be 1 or more, got {self.broker_id}")
        if self.role != "slave" and self.broker_id != 0:
            raise ConfigError(f"a master's broker_id must be 0, got {self.broker_id} (use role slave)")

    def _check_replication(self) -> None:
        """The HA port a master listens on and the one master a slave follows."""
        if self.ha_listen_port is not None and not 0 <= self.ha_listen_port <= 65535:
            raise ConfigError(f"ha_listen_port must be 0..65535, got {self.ha_listen_port}")
        if self.ha_master_address is not None:
            parse_namesrv_addrs(self.ha_master_address)
            if ";" in self.ha_master_address:
                raise ConfigError("ha_master_address names one HOST:PORT")

    def _check_store(self) -> None:
        """The flush mode and the sizes of messages and of new topics."""
        if self.flush not in ("async", "sync"):
            raise ConfigError(f"flush must be 'async' or 'sync', not {self.flush!r}")
        if self.max_message_size <= 0:
            raise ConfigError(f"max_message_size must be positive, got {self.max_message_size}")
        if self.default_topic_queue_nums < 1:
            raise ConfigError("default_topic_queue_nums must be >= 1")

    def _check_times(self) -> None:
        """The periods, timeouts and waits (positive), the check count, the delays (not negative)."""
        for name in _POSITIVE:
            if not getattr(self, name) > 0:
                raise ConfigError(f"{name} must be positive, got {getattr(self, name)!r}")
        if self.transaction_check_max < 1:
            raise ConfigError(f"transaction_check_max must be >= 1, got {self.transaction_check_max}")
        if self.register_initial_delay < 0:
            raise ConfigError("register_initial_delay must not be negative")
        if not 0 <= self.notify_coalesce_window < float("inf"):
            raise ConfigError(
                f"notify_coalesce_window must be 0 or more seconds, got {self.notify_coalesce_window!r}"
            )

    def _check_addresses(self) -> None:
        """The name servers, the delay levels and the IP the broker advertises."""
        for addr in self.namesrv_addrs:
            parse_namesrv_addrs(addr)
        parse_delay_levels(self.message_delay_level)
        try:
            ipaddress.ip_address(self.advertised_ip)
        except ValueError:
            raise ConfigError(f"broker_ip must be an IP address, got {self.advertised_ip!r}") from None

    def remoting_config(self) -> ServerConfig:
        """:attr:`remoting`, with the fast-failure limits by request code (the codes RocketMQ's
        send, pull, heartbeat and end-transaction pools serve) unless it sets its own. Batches
        are left out: a batch over 16 KiB is decoded on the worker thread with its connection's
        reading held, so a client pipelining batches queues behind its own requests (32 batches of
        16 KiB on one connection were answered busy after 200 ms, ``bench/bench_broker.py``)."""
        if self.remoting.fast_fail is not None or not self.broker_fast_failure_enable:
            return self.remoting
        send, pull = self.wait_time_in_send_queue, self.wait_time_in_pull_queue
        limits = {
            RequestCode.SEND_MESSAGE: send,
            RequestCode.SEND_MESSAGE_V2: send,
            RequestCode.CONSUMER_SEND_MSG_BACK: send,
            RequestCode.PULL_MESSAGE: pull,
            RequestCode.HEART_BEAT: self.wait_time_in_heartbeat_queue,
            RequestCode.END_TRANSACTION: self.wait_time_in_transaction_queue,
        }
        return replace(self.remoting, fast_fail={int(k): v for k, v in limits.items()})

    @property
    def advertised_ip(self) -> str:
        """The IP registered with name servers and stamped as store host (``brokerIP1``)."""
        if self.broker_ip:
            return self.broker_ip
        if self.host in ("", "0.0.0.0", "::"):
            return "127.0.0.1"
        return self.host

    @property
    def store_dir(self) -> Path:
        """The data directory actually used."""
        return self.data_dir if self.data_dir is not None else default_data_dir()

    def store_config(self) -> StoreConfig:
        """The store's settings with this broker's flush mode and message size limit."""
        return replace(self.store, flush=self.flush, max_message_size=self.max_message_size)

    def delay_levels(self) -> tuple[float, ...]:
        """:attr:`message_delay_level` parsed: the delay of level ``n`` is ``[n - 1]``."""
        return parse_delay_levels(self.message_delay_level)
