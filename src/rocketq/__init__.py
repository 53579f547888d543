"""rocketq: Apache RocketMQ's messaging model in pure Python.

Wire-compatible name server, broker and clients, RocketMQ's six queue-allocation strategies (and
better ones), the seed experiments as runnable lab scenarios, and a Spark pipeline that shows what
rebalancing did. The names below are the curated public API; ``__all__`` is kept sorted.
"""

from __future__ import annotations

from rocketq.admin import Admin
from rocketq.allocate import AllocationStrategy, Plan, get_strategy, plan, plan_group
from rocketq.broker import Broker, BrokerConfig
from rocketq.client import (
    ClientConfig,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    LitePullConsumer,
    LitePullConsumerConfig,
    Message,
    MessageExt,
    MessageModel,
    Producer,
    ProducerConfig,
    PushConsumer,
    PushConsumerConfig,
    RebalanceRecord,
    RebalanceTrigger,
    SendResult,
    SendStatus,
)
from rocketq.embedded import EmbeddedCluster
from rocketq.errors import (
    BrokerError,
    ClientStateError,
    ConfigError,
    RemoteProtocolError,
    RemotingError,
    RemotingTimeoutError,
    RocketQError,
    StoreError,
)
from rocketq.models import MessageQueue

__version__ = "0.1.0"

#: The listener status of concurrent consumption (an alias of :class:`ConsumeConcurrentlyStatus`).
ConsumeStatus = ConsumeConcurrentlyStatus

__all__ = [
    "Admin",
    "AllocationStrategy",
    "Broker",
    "BrokerConfig",
    "BrokerError",
    "ClientConfig",
    "ClientStateError",
    "ConfigError",
    "ConsumeConcurrentlyContext",
    "ConsumeConcurrentlyStatus",
    "ConsumeFromWhere",
    "ConsumeOrderlyContext",
    "ConsumeOrderlyStatus",
    "ConsumeStatus",
    "EmbeddedCluster",
    "LitePullConsumer",
    "LitePullConsumerConfig",
    "Message",
    "MessageExt",
    "MessageModel",
    "MessageQueue",
    "Plan",
    "Producer",
    "ProducerConfig",
    "PushConsumer",
    "PushConsumerConfig",
    "RebalanceRecord",
    "RebalanceTrigger",
    "RemoteProtocolError",
    "RemotingError",
    "RemotingTimeoutError",
    "RocketQError",
    "SendResult",
    "SendStatus",
    "StoreError",
    "__version__",
    "get_strategy",
    "plan",
    "plan_group",
]
