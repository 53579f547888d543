"""rocketq: Apache RocketMQ's messaging model in pure Python.

Wire-compatible name server, broker and clients, RocketMQ's six queue-allocation strategies (and
better ones), the seed experiments as runnable lab scenarios, and a Spark pipeline that shows what
rebalancing did. The names below are the curated public API; ``__all__`` is kept sorted.

``import rocketq`` loads only the values, the errors and the allocation strategies; the clients,
the admin calls and the servers load when one of their names is first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# first: decides whether the mypyc-compiled modules or their .py sources load (docs/compiled.md)
from rocketq import _native  # noqa: F401
from rocketq.allocate import AllocationStrategy, Plan, get_strategy, plan, plan_group
from rocketq.errors import (
    BrokerError,
    ClientStateError,
    ConfigError,
    RemoteProtocolError,
    RemotingError,
    RemotingTimeoutError,
    RequestTimeoutError,
    RocketQError,
    StoreError,
)
from rocketq.lazy import lazy_names
from rocketq.models import LocalTransactionState, MessageQueue, SendResult, SendStatus, TransactionSendResult

if TYPE_CHECKING:
    from rocketq.admin import Admin
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
        MessageSelector,
        Producer,
        ProducerConfig,
        PushConsumer,
        PushConsumerConfig,
        RebalanceRecord,
        RebalanceTrigger,
        TransactionProducer,
        create_reply,
    )
    from rocketq.embedded import EmbeddedCluster

# Names whose modules load on first use: ``import rocketq`` stays light (no event loop, client,
# broker or store), and a program that only sends never loads the servers.
_LAZY: dict[str, str] = {
    "Admin": "rocketq.admin",
    "Broker": "rocketq.broker",
    "BrokerConfig": "rocketq.broker",
    "EmbeddedCluster": "rocketq.embedded",
    **dict.fromkeys(
        (
            "ClientConfig",
            "ConsumeConcurrentlyContext",
            "ConsumeConcurrentlyStatus",
            "ConsumeFromWhere",
            "ConsumeOrderlyContext",
            "ConsumeOrderlyStatus",
            "LitePullConsumer",
            "LitePullConsumerConfig",
            "Message",
            "MessageExt",
            "MessageModel",
            "MessageSelector",
            "Producer",
            "ProducerConfig",
            "PushConsumer",
            "PushConsumerConfig",
            "RebalanceRecord",
            "RebalanceTrigger",
            "TransactionProducer",
            "create_reply",
        ),
        "rocketq.client",
    ),
}


__getattr__, __dir__ = lazy_names(__name__, globals(), _LAZY, {"ConsumeStatus": "ConsumeConcurrentlyStatus"})


__version__ = "0.1.0"

if TYPE_CHECKING:
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
    "LocalTransactionState",
    "Message",
    "MessageExt",
    "MessageModel",
    "MessageQueue",
    "MessageSelector",
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
    "RequestTimeoutError",
    "RocketQError",
    "SendResult",
    "SendStatus",
    "StoreError",
    "TransactionProducer",
    "TransactionSendResult",
    "__version__",
    "create_reply",
    "get_strategy",
    "plan",
    "plan_group",
]
