"""Client settings: frozen, keyword-only, durations in float seconds, RocketMQ's defaults.

Three objects, as RocketMQ splits them: :class:`ClientConfig` (what a client instance shares:
name servers, client id, the periodic tasks; Java's ``ClientConfig``), :class:`ProducerConfig`
(``DefaultMQProducer``) and :class:`PushConsumerConfig` (``DefaultMQPushConsumer`` and the
constants of ``DefaultMQPushConsumerImpl``/``RebalanceService``/``ProcessQueue``). Every default is
RocketMQ 4.9.4's unless its comment says otherwise.

Client ids are built as RocketMQ's ``ClientConfig.buildMQClientId`` builds them::

    <client ip>@<instance name>[@<unit name>]

The instance name defaults to ``DEFAULT``; producers and clustering consumers replace ``DEFAULT``
with ``<pid>#<monotonic ns>`` (``changeInstanceNameToPID``), so two processes never share an id
even when containers give them the same pid. Broadcasting consumers keep ``DEFAULT``, as Java
does: their offsets live in a local file under the client id, which must survive a restart.
"""

from __future__ import annotations

import enum
import os
import socket
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Literal, TypeVar

from rocketq.allocate import AllocationStrategy, get_strategy
from rocketq.errors import ConfigError
from rocketq.protocol.acl import Credentials
from rocketq.protocol.bodies import ConsumeFromWhere, MessageModel
from rocketq.remoting.tls import TlsClientConfig

__all__ = [
    "ACCESS_KEY_ENV",
    "DEFAULT_INSTANCE_NAME",
    "DEFAULT_NAMESRV",
    "NAMESRV_ENV",
    "SECRET_KEY_ENV",
    "ClientConfig",
    "ConsumeFromWhere",
    "MessageModel",
    "ProducerConfig",
    "PushConsumerConfig",
    "ReadOffsetType",
    "TlsClientConfig",
    "credentials_of",
    "enum_value",
    "local_ip",
    "pid_instance_name",
    "resolve_namesrv",
    "timestamp_ms",
]

NAMESRV_ENV = "NAMESRV_ADDR"
"""RocketMQ's environment variable for the name server list."""
DEFAULT_NAMESRV = "127.0.0.1:9876"
"""The name server used when neither an argument nor ``NAMESRV_ADDR`` gives one (ours; Java has none)."""
DEFAULT_INSTANCE_NAME = "DEFAULT"
ACCESS_KEY_ENV = "ROCKETMQ_ACCESS_KEY"
"""The environment variable the CLI (and the lab's workers) read an ACL access key from. RocketMQ
4.9 has none (``mqadmin`` reads ``$ROCKETMQ_HOME/conf/tools.yml``); the name is ours."""
SECRET_KEY_ENV = "ROCKETMQ_SECRET_KEY"
"""The environment variable the CLI reads the secret key from (ours, as :data:`ACCESS_KEY_ENV`)."""
CLIENT_IP_ENV = "ROCKETQ_CLIENT_IP"


class ReadOffsetType(enum.Enum):
    """Where an offset store reads from (RocketMQ's ``ReadOffsetType``)."""

    READ_FROM_MEMORY = "READ_FROM_MEMORY"
    READ_FROM_STORE = "READ_FROM_STORE"
    MEMORY_FIRST_THEN_STORE = "MEMORY_FIRST_THEN_STORE"


def resolve_namesrv(namesrv: str | None) -> tuple[str, ...]:
    """Name server addresses from ``namesrv``, else ``$NAMESRV_ADDR``, else ``127.0.0.1:9876``.

    The text is RocketMQ's ``;``-separated list (``,`` separates too); blanks are ignored.

    >>> resolve_namesrv("10.0.0.1:9876; 10.0.0.2:9876;")
    ('10.0.0.1:9876', '10.0.0.2:9876')
    """
    text = namesrv if namesrv else os.environ.get(NAMESRV_ENV, "") or DEFAULT_NAMESRV
    addrs = tuple(a.strip() for a in text.replace(",", ";").split(";") if a.strip())
    if not addrs:
        raise ConfigError(f"no name server address in {text!r}")
    for addr in addrs:
        host, sep, port = addr.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ConfigError(f"name server address must look like host:port, got {addr!r}")
    return addrs


def credentials_of(access_key: str | None, secret_key: str | None) -> Credentials | None:
    """The ACL keys as :class:`~rocketq.protocol.acl.Credentials`, ``None`` when neither is
    given; one without the other (or an empty one) is a :class:`ConfigError`.

    >>> credentials_of("rocketmq2", "12345678")
    Credentials(access_key='rocketmq2', security_token=None)
    >>> credentials_of(None, None) is None
    True
    """
    if access_key is None and secret_key is None:
        return None
    if not access_key or not secret_key:
        missing = "secret_key" if access_key else "access_key"
        raise ConfigError(f"access_key and secret_key go together: {missing} is missing or empty")
    return Credentials(access_key=access_key, secret_key=secret_key)


def local_ip() -> str:
    """A non-loopback local IP, as RocketMQ's ``RemotingUtil.getLocalAddress`` picks one.

    ``$ROCKETQ_CLIENT_IP`` wins; else the source address of the default route (found by
    connecting a UDP socket, which sends nothing); else the host name's address; else 127.0.0.1.
    """
    forced = os.environ.get(CLIENT_IP_ENV)
    if forced:
        return forced
    for family, target in ((socket.AF_INET, ("10.255.255.255", 1)), (socket.AF_INET6, ("fd00::1", 1))):
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as sock:
                sock.connect(target)
                ip = str(sock.getsockname()[0])
        except OSError:
            continue
        if not ip.startswith("127.") and ip not in ("::1", "0.0.0.0", "::"):
            return ip
    try:
        ip = socket.gethostbyname(socket.gethostname())
    except OSError:
        ip = "127.0.0.1"
    return ip


def pid_instance_name() -> str:
    """``<pid>#<monotonic ns>``: RocketMQ's ``changeInstanceNameToPID`` result."""
    return f"{os.getpid()}#{time.monotonic_ns()}"


E = TypeVar("E", bound=enum.Enum)


def enum_value(cls: type[E], name: str, value: object) -> E:
    """``value`` as a member of ``cls``: the member itself, its name or its value (as users write
    them: ``"CONSUME_FROM_FIRST_OFFSET"``), else :class:`ConfigError` naming the choices.

    >>> enum_value(MessageModel, "message_model", "BROADCASTING") is MessageModel.BROADCASTING
    True
    """
    if isinstance(value, cls):
        return value
    if isinstance(value, str) and value.strip() in cls.__members__:
        return cls[value.strip()]
    try:
        return cls(value)
    except (ValueError, TypeError):
        choices = ", ".join(cls.__members__)
        raise ConfigError(f"{name} must be one of {choices}, got {value!r}") from None


def _convert_enums(obj: object, **fields: type[enum.Enum]) -> None:
    """In a frozen config's ``__post_init__``: each named field as its enum (:func:`enum_value`)."""
    for name, cls in fields.items():
        object.__setattr__(obj, name, enum_value(cls, name, getattr(obj, name)))


def _positive(name: str, value: float) -> None:
    if value <= 0:
        raise ConfigError(f"{name} must be positive, got {value!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientConfig:
    """What one client instance (one client id) shares between its producers and consumers."""

    #: Name servers, ``;``-separated; ``None``: ``$NAMESRV_ADDR``, else ``127.0.0.1:9876``.
    namesrv: str | None = None
    #: The IP in the client id (Java ``clientIP``: a non-loopback local address; see :func:`local_ip`).
    client_ip: str | None = None
    #: Java ``instanceName`` (system property ``rocketmq.client.name``, default ``DEFAULT``).
    instance_name: str = DEFAULT_INSTANCE_NAME
    #: Java ``unitName``: appended to the client id when set.
    unit_name: str | None = None
    #: Seconds between route refreshes from the name server (``pollNameServerInterval`` 30000 ms).
    poll_name_server_interval: float = 30.0
    #: Seconds between heartbeats to every broker (``heartbeatBrokerInterval`` 30000 ms).
    heartbeat_broker_interval: float = 30.0
    #: Seconds between offset persists (``persistConsumerOffsetInterval`` 5000 ms).
    persist_consumer_offset_interval: float = 5.0
    #: Delay of the first offset persist (MQClientInstance schedules it 10 s after start).
    persist_consumer_offset_initial_delay: float = 10.0
    #: Seconds between periodic rebalances (``rocketmq.client.rebalance.waitInterval`` 20000 ms).
    rebalance_interval: float = 20.0
    #: Least seconds from the end of one rebalance of the rebalance service to the start of the
    #: next, however often it is woken. 0 (the default, as RocketMQ 4.9.4, which has none)
    #: rebalances on every wake-up; RocketMQ 5.x's ``rocketmq.client.rebalance.minInterval`` is
    #: 1000 ms. Measured, the 1 s minimum costs more than it saves: members keep queues a newcomer
    #: took for up to a second (duplicates in a scale-out, a rolling deploy past its bound in
    #: ``rocketq chaos rolling-deploy``; see docs/rebalance.md).
    rebalance_min_interval: float = 0.0
    #: Timeout of the client's own requests (``mqClientApiTimeout`` 3000 ms).
    mq_client_api_timeout: float = 3.0
    #: Use uvloop for the client's event loop thread when installed (ours).
    use_uvloop: bool | None = None
    #: TLS to the name servers and brokers (Java ``useTLS`` / ``tls.enable``, ``tls.client.*``;
    #: :class:`~rocketq.remoting.tls.TlsClientConfig`, default plaintext).
    tls: TlsClientConfig = field(default_factory=TlsClientConfig)
    #: The ACL account every request is signed for (RocketMQ 4.9's ``AclClientRPCHook``, which
    #: Java passes to a client's constructor with ``SessionCredentials(accessKey, secretKey)``);
    #: ``None``: requests go unsigned, as a broker without ACL takes them. See docs/security.md.
    access_key: str | None = None
    #: The account's secret key: signs, is never sent, and stays out of ``repr``.
    secret_key: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        resolve_namesrv(self.namesrv)
        credentials_of(self.access_key, self.secret_key)
        if not self.instance_name or "@" in self.instance_name:
            raise ConfigError(f"instance_name must be non-empty and without '@', got {self.instance_name!r}")
        for name in (
            "poll_name_server_interval",
            "heartbeat_broker_interval",
            "persist_consumer_offset_interval",
            "rebalance_interval",
            "mq_client_api_timeout",
        ):
            _positive(name, getattr(self, name))
        if self.rebalance_min_interval < 0:
            raise ConfigError(f"rebalance_min_interval must be >= 0, got {self.rebalance_min_interval!r}")

    @property
    def namesrv_addrs(self) -> tuple[str, ...]:
        return resolve_namesrv(self.namesrv)

    @property
    def credentials(self) -> Credentials | None:
        """The keys requests are signed with, or ``None`` (see ``access_key``)."""
        return credentials_of(self.access_key, self.secret_key)

    def with_pid_instance_name(self) -> ClientConfig:
        """This config with ``DEFAULT`` replaced by ``<pid>#<ns>`` (others stay as they are)."""
        if self.instance_name != DEFAULT_INSTANCE_NAME:
            return self
        return replace(self, instance_name=pid_instance_name())

    def client_id(self) -> str:
        """``ip@instance[@unit]``, as RocketMQ's ``buildMQClientId``.

        >>> ClientConfig(client_ip="127.0.0.1", instance_name="c1").client_id()
        '127.0.0.1@c1'
        >>> ClientConfig(client_ip="10.0.0.7", instance_name="c1", unit_name="u").client_id()
        '10.0.0.7@c1@u'
        """
        ip = self.client_ip or local_ip()
        cid = f"{ip}@{self.instance_name}"
        if self.unit_name:
            cid += f"@{self.unit_name}"
        return cid


@dataclass(frozen=True, slots=True, kw_only=True)
class ProducerConfig:
    """A producer's settings (``DefaultMQProducer``)."""

    #: Seconds a send may take, retries included (``sendMsgTimeout`` 3000 ms).
    send_msg_timeout: float = 3.0
    #: Bodies of at least this many bytes are zlib-compressed (``compressMsgBodyOverHowmuch`` 4096).
    compress_msg_body_over_howmuch: int = 4096
    #: zlib level (``rocketmq.message.compressLevel`` 5).
    compress_level: int = 5
    #: Extra attempts of a synchronous send, on another broker (``retryTimesWhenSendFailed`` 2).
    retry_times_when_send_failed: int = 2
    #: Extra attempts of an asynchronous send (``retryTimesWhenSendAsyncFailed`` 2).
    retry_times_when_send_async_failed: int = 2
    #: Retry when the broker stored the message but reported a flush/slave problem (false).
    retry_another_broker_when_not_store_ok: bool = False
    #: Largest body accepted (``maxMessageSize`` 4 MiB).
    max_message_size: int = 4 * 1024 * 1024
    #: The topic whose route a producer borrows for a topic without one (``createTopicKey`` TBW102).
    create_topic_key: str = "TBW102"
    #: Queues per broker of an auto-created topic (``defaultTopicQueueNums`` 4).
    default_topic_queue_nums: int = 4
    #: Publish a Pub trace record per answered send (``enableMsgTrace``, false; see
    #: :mod:`rocketq.client.trace`).
    trace: bool = False
    #: Topic of those records (``customizedTraceTopic``; ``None``: ``RMQ_SYS_TRACE_TOPIC``).
    trace_topic: str | None = None
    #: Threads answering the broker's transaction checks, for a ``TransactionProducer``
    #: (``checkThreadPoolMinSize`` / ``checkThreadPoolMaxSize`` 1).
    check_thread_pool_size: int = 1
    #: Checks that may wait for those threads; more are dropped and asked again by the broker
    #: (``checkRequestHoldMax`` 2000).
    check_request_hold_max: int = 2000
    #: A blocking ``send`` / ``send_batch`` from a plain thread, while no other thread's is out,
    #: makes its attempts on a socket of that thread's own instead of handing them to the
    #: client's loop (ours, no RocketMQ equivalent; see :mod:`rocketq.client.producer.direct`).
    thread_sockets: bool = True
    #: Asynchronous sends (``send_future``, ``send_callback``, ``send_async``) out at once; at the
    #: bound the caller waits for one to finish (RocketMQ 5's ``backPressureForAsyncSendNum``,
    #: 10000, off by default there; ours is on, and lower: see
    #: :mod:`rocketq.client.producer.overload`).
    max_async_in_flight: int = 1024
    #: Bytes of those sends' bodies out at once (``backPressureForAsyncSendSize`` 100 MiB).
    max_async_in_flight_bytes: int = 100 * 1024 * 1024
    #: Retries earned per send begun: all the sends of this producer together retry at most this
    #: share of their number (plus 10 a second); ``None`` retries every failed send, as RocketMQ
    #: does (ours; :class:`~rocketq.client.producer.overload.RetryBudget`).
    retry_budget_ratio: float | None = 0.1
    #: Seconds a broker that answered ``SYSTEM_BUSY`` or timed out is left alone, doubling while it
    #: stays busy up to ``busy_backoff_max`` (RocketMQ's ``sendLatencyFaultEnable`` idea, on here).
    busy_backoff: float = 0.05
    busy_backoff_max: float = 1.0

    def __post_init__(self) -> None:
        _positive("send_msg_timeout", self.send_msg_timeout)
        _positive("max_async_in_flight", self.max_async_in_flight)
        _positive("max_async_in_flight_bytes", self.max_async_in_flight_bytes)
        _positive("busy_backoff", self.busy_backoff)
        if self.busy_backoff_max < self.busy_backoff:
            raise ConfigError("busy_backoff_max must be >= busy_backoff")
        if self.retry_budget_ratio is not None and self.retry_budget_ratio < 0:
            raise ConfigError(f"retry_budget_ratio must be >= 0, got {self.retry_budget_ratio}")
        _positive("check_thread_pool_size", self.check_thread_pool_size)
        _positive("check_request_hold_max", self.check_request_hold_max)
        _positive("max_message_size", self.max_message_size)
        _positive("default_topic_queue_nums", self.default_topic_queue_nums)
        if not 0 <= self.compress_level <= 9:
            raise ConfigError(f"compress_level must be 0..9, got {self.compress_level}")
        if self.retry_times_when_send_failed < 0 or self.retry_times_when_send_async_failed < 0:
            raise ConfigError("retry counts must be >= 0")


def _half_hour_ago() -> str:
    return (datetime.now() - timedelta(minutes=30)).strftime("%Y%m%d%H%M%S")


def timestamp_ms(text: str) -> int:
    """A ``yyyyMMddHHmmss`` local time (a consumer's ``consume_timestamp``) as epoch ms, as Java's
    ``UtilAll.parseDate``."""
    return int(datetime.strptime(text, "%Y%m%d%H%M%S").timestamp() * 1000)


@dataclass(frozen=True, slots=True, kw_only=True)
class PushConsumerConfig:
    """A push consumer's settings (``DefaultMQPushConsumer`` and its implementation's constants)."""

    message_model: MessageModel = MessageModel.CLUSTERING
    consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    #: ``yyyyMMddHHmmss`` local time for CONSUME_FROM_TIMESTAMP (default: half an hour ago).
    consume_timestamp: str = field(default_factory=_half_hour_ago)
    #: Allocation strategy: a name for :func:`rocketq.allocate.get_strategy` or an instance (AVG).
    allocate_strategy: str | AllocationStrategy = "AVG"
    #: ``"topic"`` (RocketMQ) or ``"group"`` (ours: balance the totals across topics).
    balance: Literal["topic", "group"] = "topic"
    #: Listener threads (``consumeThreadMin``/``consumeThreadMax`` 20).
    consume_thread_max: int = 20
    #: Span between the lowest and highest cached offset of a queue above which pulling waits
    #: (``consumeConcurrentlyMaxSpan`` 2000).
    consume_concurrently_max_span: int = 2000
    #: Cached messages per queue above which pulling waits (``pullThresholdForQueue`` 1000).
    pull_threshold_for_queue: int = 1000
    #: Cached MiB per queue above which pulling waits (``pullThresholdSizeForQueue`` 100).
    pull_threshold_size_for_queue: int = 100
    #: Per-topic limits split over its queues (``pullThresholdForTopic`` / ``...SizeForTopic``, -1 off).
    pull_threshold_for_topic: int = -1
    pull_threshold_size_for_topic: int = -1
    #: Seconds between pulls of one queue (``pullInterval`` 0).
    pull_interval: float = 0.0
    #: Messages per listener call (``consumeMessageBatchMaxSize`` 1).
    consume_message_batch_max_size: int = 1
    #: Messages per pull (``pullBatchSize`` 32).
    pull_batch_size: int = 32
    #: Send the subscription expression with every pull (``postSubscriptionWhenPull`` false).
    post_subscription_when_pull: bool = False
    #: Deliveries before the dead-letter queue; -1 = 16 (``maxReconsumeTimes``).
    max_reconsume_times: int = -1
    #: Seconds an orderly queue pauses after SUSPEND_CURRENT_QUEUE_A_MOMENT (1000 ms).
    suspend_current_queue_time: float = 1.0
    #: Seconds before a message being consumed counts as timed out (``consumeTimeout`` 15 min).
    consume_timeout: float = 15 * 60.0
    #: Seconds shutdown waits for listeners still running (Java's default 0 does not wait; ours 10).
    await_termination: float = 10.0
    #: Seconds the broker holds a pull with no message (``BROKER_SUSPEND_MAX_TIME_MILLIS`` 15000).
    broker_suspend_max_time: float = 15.0
    #: Seconds a held pull may take (``CONSUMER_TIMEOUT_MILLIS_WHEN_SUSPEND`` 30000).
    consumer_timeout_when_suspend: float = 30.0
    #: Retry delay after a pull failed (``pullTimeDelayMillsWhenException`` 3000).
    pull_time_delay_when_exception: float = 3.0
    #: Retry delay after a pull refused with SUBSCRIPTION_NOT_LATEST: our own heartbeat carrying the
    #: newer subscription version is on its way, so waiting Java's 3 s only stalls the queue (not in
    #: RocketMQ, which treats it as any other failure).
    pull_time_delay_when_subscription_not_latest: float = 0.1
    #: Back-off while a queue is over a flow-control threshold
    #: (``PULL_TIME_DELAY_MILLS_WHEN_FLOW_CONTROL`` 50 ms).
    pull_time_delay_when_flow_control: float = 0.05
    #: Back-off while the consumer is paused (``PULL_TIME_DELAY_MILLS_WHEN_SUSPEND`` 1000).
    pull_time_delay_when_suspend: float = 1.0
    #: A queue not pulled for this long is dropped and re-added by rebalance (``pullMaxIdleTime`` 120 s).
    pull_max_idle_time: float = 120.0
    #: Delay before retrying locally the messages whose send-back failed (5000 ms).
    consume_retry_local_delay: float = 5.0
    #: Delay before an OFFSET_ILLEGAL queue's corrected offset is persisted and the queue removed
    #: (Java waits 10000 ms; ours 1 s: nothing is consumed from a dropped queue meanwhile).
    offset_illegal_delay: float = 1.0
    #: Directory of broadcasting offsets (``rocketmq.client.localOffsetStoreDir``, ``~/.rocketmq_offsets``).
    offset_store_dir: str | None = None
    #: Rebalance records kept in memory (ours).
    rebalance_log_size: int = 1024
    #: Publish SubBefore/SubAfter trace records around every listener call and the rebalance log
    #: (``enableMsgTrace``, false; see :mod:`rocketq.client.trace`).
    trace: bool = False
    #: Topic of the trace records (``customizedTraceTopic``; ``None``: ``RMQ_SYS_TRACE_TOPIC``).
    trace_topic: str | None = None
    #: Seconds between renewals of the broker locks of owned queues, orderly and clean handoff
    #: (``rocketmq.client.rebalance.lockInterval`` 20000 ms). Keep it well below the broker's lock
    #: lifetime (60 s), or another client may take a queue this one still consumes.
    rebalance_lock_interval: float = 20.0
    #: Seconds after its last renewal a queue lock counts as expired client-side, and consuming the
    #: queue stops (``rocketmq.client.rebalance.lockMaxLiveTime`` 30000 ms; the broker keeps 60 s).
    rebalance_lock_max_live_time: float = 30.0
    #: Orderly: seconds before a queue taken away while messages are still cached is unlocked on
    #: the broker (``rocketmq.client.unlockDelayTimeMills`` 20000).
    unlock_delay: float = 20.0
    #: Orderly: seconds one queue may be consumed without a break before the thread yields
    #: (``rocketmq.client.maxTimeConsumeContinuously`` 60000 ms).
    max_time_consume_continuously: float = 60.0
    #: How queues change owners (ours). ``"clean"``, the default, consumes a queue only under a
    #: broker lease and hands it over commit-then-unlock (see
    #: :mod:`rocketq.client.consumer.clean_handoff`): no duplicates on graceful changes, and on
    #: rocketq's broker a crashed member's leases are freed when it leaves the group. ``"rocketmq"``
    #: is RocketMQ's (the old and the new owner may overlap; the dropped queue's offset is
    #: committed one-way, so a rebalance can re-deliver): choose it against a RocketMQ cluster
    #: if a crashed consumer's queues must not wait out its leases (60 s there).
    handoff: Literal["clean", "rocketmq"] = "clean"
    #: Clean handoff: seconds the old owner waits for the queue's cached messages to be consumed
    #: and committed before abandoning the rest to the new owner (ours).
    handoff_await: float = 3.0
    #: Clean handoff: first and longest delay between attempts to acquire the lease of a queue
    #: another consumer still holds (ours; the delay grows 1.5x per failed attempt).
    lease_retry_min: float = 0.05
    lease_retry_max: float = 0.5
    #: Which member list a rebalance shares the queues over (ours; see ``docs/chaos.md``):
    #:
    #: - ``"per-broker"`` (the default): every broker of the topic is asked at once, and each
    #:   broker's queues are shared over the members *that broker* lists (the strategy still sees
    #:   every queue of the topic, so when the brokers agree the share is exactly the strategy's);
    #:   a broker that does not answer gives this consumer none of its queues. Consumers that
    #:   asked alike agree on every queue's owner even while the brokers disagree (a member cut
    #:   off from one broker, or expired by it), with no wait.
    #: - ``"union"`` / ``"intersection"``: every broker is asked and the rebalance acts when they
    #:   agree, or after ``view_agreement_timeout`` seconds on the union or intersection of their
    #:   lists (see :func:`rocketq.client.rebalance.impl.agreed_view`).
    #: - ``"off"``: RocketMQ's one random broker per rebalance, whose answer may differ from the
    #:   one another consumer got.
    consistent_views: Literal["per-broker", "union", "intersection", "off"] = "per-broker"
    view_agreement_timeout: float = 2.0
    #: View fence (ours): every pull carries the digest of the member list and queue count this
    #: consumer allocated the broker's queues with (``rqView``); rocketq's broker refuses it when its
    #: own differ (``PULL_VIEW_CHANGED``) and the consumer rebalances before it pulls that queue
    #: again, so a consumer acting on a stale view fetches nothing another member may own. A
    #: RocketMQ broker ignores the field. Used with the per-broker, union and intersection views
    #: (they know each broker's list).
    view_fence: bool = True

    def __post_init__(self) -> None:
        _convert_enums(self, message_model=MessageModel, consume_from_where=ConsumeFromWhere)
        for name in (
            "consume_thread_max",
            "consume_concurrently_max_span",
            "pull_threshold_for_queue",
            "pull_threshold_size_for_queue",
            "consume_message_batch_max_size",
            "pull_batch_size",
            "broker_suspend_max_time",
            "consumer_timeout_when_suspend",
            "consume_timeout",
            "pull_max_idle_time",
            "rebalance_log_size",
            "rebalance_lock_interval",
            "rebalance_lock_max_live_time",
            "max_time_consume_continuously",
            "lease_retry_min",
            "lease_retry_max",
            "view_agreement_timeout",
        ):
            _positive(name, getattr(self, name))
        if not 1 <= self.consume_message_batch_max_size <= 1024:
            raise ConfigError("consume_message_batch_max_size must be 1..1024")
        if not 1 <= self.pull_batch_size <= 1024:
            raise ConfigError("pull_batch_size must be 1..1024")
        if self.consumer_timeout_when_suspend <= self.broker_suspend_max_time:
            raise ConfigError("consumer_timeout_when_suspend must exceed broker_suspend_max_time")
        if self.await_termination < 0 or self.pull_interval < 0:
            raise ConfigError("await_termination and pull_interval must be >= 0")
        if self.handoff not in ("clean", "rocketmq"):
            renamed = str(self.handoff) == "default"
            hint = " (RocketMQ's handoff is called 'rocketmq' now)" if renamed else ""
            raise ConfigError(f"handoff must be 'clean' or 'rocketmq', got {self.handoff!r}{hint}")
        if self.unlock_delay < 0 or self.handoff_await < 0:
            raise ConfigError("unlock_delay and handoff_await must be >= 0")
        if self.lease_retry_max < self.lease_retry_min:
            raise ConfigError("lease_retry_max must be >= lease_retry_min")
        if self.consistent_views not in ("per-broker", "union", "intersection", "off"):
            raise ConfigError(
                "consistent_views must be 'per-broker', 'union', 'intersection' or 'off', "
                f"got {self.consistent_views!r}"
            )
        if self.balance not in ("topic", "group"):
            raise ConfigError(f"balance must be 'topic' or 'group', got {self.balance!r}")
        if len(self.consume_timestamp) != 14 or not self.consume_timestamp.isdigit():
            raise ConfigError(f"consume_timestamp must be yyyyMMddHHmmss, got {self.consume_timestamp!r}")
        if isinstance(self.allocate_strategy, str):
            get_strategy(self.allocate_strategy)

    def strategy(self) -> AllocationStrategy:
        if isinstance(self.allocate_strategy, AllocationStrategy):
            return self.allocate_strategy
        return get_strategy(self.allocate_strategy)

    @property
    def effective_max_reconsume_times(self) -> int:
        """``max_reconsume_times`` with -1 read as 16, as the consumer reports it."""
        return 16 if self.max_reconsume_times == -1 else self.max_reconsume_times

    def consume_timestamp_ms(self) -> int:
        """``consume_timestamp`` as epoch ms (local time, as Java's ``UtilAll.parseDate``)."""
        return timestamp_ms(self.consume_timestamp)
