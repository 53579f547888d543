"""rocketq's broker: the state machines at its heart, and the server around them.

:class:`Broker` (:mod:`~rocketq.broker.server`) is the running broker, configured by a
:class:`BrokerConfig` (:mod:`~rocketq.broker.config`); its request handlers live in
:mod:`~rocketq.broker.handlers`, each seeing the broker through a narrow context
(:mod:`~rocketq.broker.context`), delayed delivery in :mod:`~rocketq.broker.schedule`, name
server registration in :mod:`~rocketq.broker.registration` and its counters in
:mod:`~rocketq.broker.stats`.

The modules here are pure state driven by ``now`` and return what should happen instead of
doing I/O; the broker's server is a thin adapter that feeds them requests and connection events
and carries out their answers:

* :mod:`~rocketq.broker.consumers`: consumer groups, their members and subscriptions, and when to
  send NOTIFY_CONSUMER_IDS_CHANGED (:class:`ConsumerRegistry`);
* :mod:`~rocketq.broker.producers`: producer groups and their connections (:class:`ProducerRegistry`);
* :mod:`~rocketq.broker.channels`: a client's registration on a connection, which both keep
  (:class:`ClientChannelInfo`);
* :mod:`~rocketq.broker.locks`: LOCK_BATCH_MQ / UNLOCK_BATCH_MQ (:class:`QueueLockTable`);
* :mod:`~rocketq.broker.topics`: topic configs, auto-creation, retry and DLQ topics
  (:class:`TopicConfigManager`);
* :mod:`~rocketq.broker.subscriptions`: subscription group configs (:class:`SubscriptionGroupManager`);
* :mod:`~rocketq.broker.configtables`: the versioned table both keep their configs in, in memory or
  in a file the store writes for the broker;
* :mod:`~rocketq.broker.longpoll`: pulls held until a message arrives (:class:`PullHoldTable`);
* :mod:`~rocketq.broker.filter`: SQL92 selectors evaluated at pull time (:func:`compile_sql92`);
* :mod:`~rocketq.broker.transactions`: half messages, their resolution and the check rounds
  (:class:`TransactionalMessageService`), on the store.
"""

from rocketq.broker import consumers
from rocketq.broker.config import BrokerConfig
from rocketq.broker.consumers import *  # noqa: F403 - re-exported below, from consumers.__all__
from rocketq.broker.filter import Sql92Error, Sql92Filter, compile_sql92
from rocketq.broker.locks import REBALANCE_LOCK_MAX_LIVE_TIME, LockInfo, QueueLockConfig, QueueLockTable
from rocketq.broker.longpoll import HeldPull, LongPollingConfig, PullHoldTable
from rocketq.broker.producers import ProducerRegistry
from rocketq.broker.server import Broker
from rocketq.broker.subscriptions import SubscriptionGroupChange, SubscriptionGroupManager
from rocketq.broker.topics import PermName, TopicChange, TopicConfigManager, TopicManagerConfig
from rocketq.broker.transactions import CheckResult, TransactionalMessageService
from rocketq.protocol.topics import TopicSysFlag, dlq_topic, retry_topic, validate_topic

__all__ = [
    "REBALANCE_LOCK_MAX_LIVE_TIME",
    "Broker",
    "BrokerConfig",
    "CheckResult",
    "HeldPull",
    "LockInfo",
    "LongPollingConfig",
    "PermName",
    "ProducerRegistry",
    "PullHoldTable",
    "QueueLockConfig",
    "QueueLockTable",
    "Sql92Error",
    "Sql92Filter",
    "SubscriptionGroupChange",
    "SubscriptionGroupManager",
    "TopicChange",
    "TopicConfigManager",
    "TopicManagerConfig",
    "TopicSysFlag",
    "TransactionalMessageService",
    "compile_sql92",
    "dlq_topic",
    "retry_topic",
    "validate_topic",
]
__all__ += consumers.__all__
__all__.remove("SUB_ALL")
__all__.remove("check_heartbeat")
