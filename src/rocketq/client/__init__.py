"""RocketMQ clients: the producer, the push and lite pull consumers, and the machinery they share.

Usable from plain synchronous code — ``send()`` blocks, listeners are ordinary functions run on a
thread pool — with asyncio inside: each client instance (one per client id, ``ip@instanceName``)
runs its I/O on one background event-loop thread.

* :class:`Producer` — sync / async / oneway / batch sends, selectors, retries on another broker,
  request-reply (``request``, with :func:`create_reply` for the replying side)
  (:mod:`rocketq.client.producer`);
* :class:`TransactionProducer` — transactional messages: ``send_in_transaction`` and the answers
  to the broker's checks (:mod:`~rocketq.client.producer.transaction`);
* :class:`PushConsumer` — subscriptions, RocketMQ's rebalance, long polling, concurrent
  consumption, retries through the broker, graceful shutdown, and the structured rebalance log
  (:class:`RebalanceRecord`); orderly consumption with ``register_listener(fn, orderly=True)``
  (:mod:`~rocketq.client.consumer.consume_orderly`) and the clean handoff mode with
  ``handoff="clean"`` (:mod:`~rocketq.client.consumer.clean_handoff`: no re-delivery when the
  group scales gracefully);
* :class:`LitePullConsumer` — ``subscribe`` or ``assign``, ``poll``, ``seek``, auto-commit and
  ``commit_sync``, ``pause``/``resume`` (:mod:`~rocketq.client.consumer.lite_pull`);
* both consumers subscribe with a tag expression or a :class:`MessageSelector` (SQL92 filters,
  :mod:`~rocketq.client.consumer.selector`);
* the parts other consumers build on: :class:`~rocketq.client.instance.ClientInstance`,
  :class:`~rocketq.client.rebalance.impl.RebalanceImpl` (with :class:`RebalanceHooks`),
  :class:`ProcessQueue`, the offset stores and the consume-service interface.

Where things live (each sub-package's docstring says more): :mod:`rocketq.client.producer`
(the producer, its send policy and queue selection), :mod:`rocketq.client.consumer` (push and
lite pull consumers, process queues, consume services, offset stores, where a queue starts),
:mod:`rocketq.client.rebalance` (the rebalance service, the allocation step, the rebalance log,
broker leases); beside them the client instance (:mod:`~rocketq.client.instance`), the one client
API (:mod:`~rocketq.client.api`, async, and :mod:`~rocketq.client.blocking`, its blocking facade),
the event-loop thread (:mod:`~rocketq.client.loop_thread`), configs, messages, routes, message
ids, validation and tracing (:mod:`~rocketq.client.trace`).

Everything follows RocketMQ 4.9.4's Java client (``rocketmq-client``): the same requests, header
fields and bodies on the wire, the same defaults, the same rebalance algorithm.

Building another consumer on these parts (all state lives on the instance's loop thread):

* register with :meth:`ClientInstance.register_consumer` an object meeting
  :class:`~rocketq.client.instance.ConsumerInner` (``consumer_data``, ``subscribed_topics``,
  ``update_topic_subscribe_info``, ``do_rebalance``, ``persist_consumer_offset``,
  ``running_info``, ``consume_message_directly``, ``reset_offset``); the instance then refreshes
  its routes, heartbeats it, persists its offsets and calls ``do_rebalance`` (20 s, NOTIFY ...);
* own a :class:`RebalanceImpl` and pass it :class:`RebalanceHooks` (``consume_type``,
  ``consume_orderly``, ``remove_unnecessary_message_queue``, ``remove_dirty_offset``,
  ``compute_pull_from_where``, ``dispatch_pull_requests``, ``message_queue_changed``); with
  ``consume_orderly`` it locks new queues (``ClientInstance.lock_queues``) before adding them;
* push consumers with other consumption rules subclass
  :class:`~rocketq.client.consumer.push_core.PushConsumerCore` (``consume_orderly``,
  ``make_consume_service`` returning a :class:`ConsumeService`, the async ``pull_precheck``,
  ``remove_unnecessary_message_queue``, ``compute_pull_from_where``, ``shutdown``) and set
  :attr:`PushConsumer.core_class`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocketq.lazy import lazy_names

if TYPE_CHECKING:
    from rocketq.client.config import ClientConfig, ProducerConfig, PushConsumerConfig, ReadOffsetType
    from rocketq.client.consumer.clean_handoff import CleanHandoffPushCore
    from rocketq.client.consumer.consume_concurrently import ConsumeMessageConcurrentlyService, ConsumeService
    from rocketq.client.consumer.consume_orderly import ConsumeMessageOrderlyService, OrderlyPushConsumerCore
    from rocketq.client.consumer.lite_pull import LitePullConsumer, LitePullConsumerConfig, SubscriptionType
    from rocketq.client.consumer.offset_store import (
        LocalFileOffsetStore,
        OffsetStore,
        RemoteBrokerOffsetStore,
    )
    from rocketq.client.consumer.process_queue import ProcessQueue
    from rocketq.client.consumer.push import PushConsumer
    from rocketq.client.consumer.selector import MessageSelector
    from rocketq.client.instance import ClientInstance
    from rocketq.client.message import (
        ConsumeConcurrentlyContext,
        ConsumeConcurrentlyStatus,
        ConsumeOrderlyContext,
        ConsumeOrderlyStatus,
        Message,
        MessageExt,
        PullStatus,
        SendResult,
        SendStatus,
    )
    from rocketq.client.producer.facade import Producer
    from rocketq.client.producer.request import create_reply
    from rocketq.client.producer.selection import select_by_hash
    from rocketq.client.producer.transaction import TransactionProducer
    from rocketq.client.rebalance.impl import (
        MessageQueueListener,
        PullRequest,
        QueueDiff,
        RebalanceHooks,
        RebalanceImpl,
        allocate_topic,
        diff_queues,
    )
    from rocketq.client.rebalance.log import RebalanceLog, RebalanceRecord, RebalanceTrigger
    from rocketq.models import LocalTransactionState, TransactionSendResult
    from rocketq.protocol.bodies import ConsumeFromWhere, MessageModel
    from rocketq.protocol.topics import retry_topic

# Each name loads its module on first use: importing one part of the client (``rocketq.client.config``
# from the Spark source's Python workers, ``rocketq.client.blocking`` from the Spark reader) does not
# load the producer, the consumers and the client instance (about a second of a loaded machine).
_LAZY: dict[str, str] = {
    "CleanHandoffPushCore": "rocketq.client.consumer.clean_handoff",
    "ClientConfig": "rocketq.client.config",
    "ClientInstance": "rocketq.client.instance",
    "ConsumeConcurrentlyContext": "rocketq.client.message",
    "ConsumeConcurrentlyStatus": "rocketq.client.message",
    "ConsumeFromWhere": "rocketq.protocol.bodies",
    "ConsumeMessageConcurrentlyService": "rocketq.client.consumer.consume_concurrently",
    "ConsumeMessageOrderlyService": "rocketq.client.consumer.consume_orderly",
    "ConsumeOrderlyContext": "rocketq.client.message",
    "ConsumeOrderlyStatus": "rocketq.client.message",
    "ConsumeService": "rocketq.client.consumer.consume_concurrently",
    "LitePullConsumer": "rocketq.client.consumer.lite_pull",
    "LitePullConsumerConfig": "rocketq.client.consumer.lite_pull",
    "LocalFileOffsetStore": "rocketq.client.consumer.offset_store",
    "LocalTransactionState": "rocketq.models",
    "Message": "rocketq.client.message",
    "MessageExt": "rocketq.client.message",
    "MessageModel": "rocketq.protocol.bodies",
    "MessageQueueListener": "rocketq.client.rebalance.impl",
    "MessageSelector": "rocketq.client.consumer.selector",
    "OffsetStore": "rocketq.client.consumer.offset_store",
    "OrderlyPushConsumerCore": "rocketq.client.consumer.consume_orderly",
    "ProcessQueue": "rocketq.client.consumer.process_queue",
    "Producer": "rocketq.client.producer.facade",
    "ProducerConfig": "rocketq.client.config",
    "PullRequest": "rocketq.client.rebalance.impl",
    "PullStatus": "rocketq.client.message",
    "PushConsumer": "rocketq.client.consumer.push",
    "PushConsumerConfig": "rocketq.client.config",
    "QueueDiff": "rocketq.client.rebalance.impl",
    "ReadOffsetType": "rocketq.client.config",
    "RebalanceHooks": "rocketq.client.rebalance.impl",
    "RebalanceImpl": "rocketq.client.rebalance.impl",
    "RebalanceLog": "rocketq.client.rebalance.log",
    "RebalanceRecord": "rocketq.client.rebalance.log",
    "RebalanceTrigger": "rocketq.client.rebalance.log",
    "RemoteBrokerOffsetStore": "rocketq.client.consumer.offset_store",
    "SendResult": "rocketq.client.message",
    "SendStatus": "rocketq.client.message",
    "SubscriptionType": "rocketq.client.consumer.lite_pull",
    "TransactionProducer": "rocketq.client.producer.transaction",
    "TransactionSendResult": "rocketq.models",
    "allocate_topic": "rocketq.client.rebalance.impl",
    "create_reply": "rocketq.client.producer.request",
    "diff_queues": "rocketq.client.rebalance.impl",
    "retry_topic": "rocketq.protocol.topics",
    "select_by_hash": "rocketq.client.producer.selection",
}


__getattr__, __dir__ = lazy_names(__name__, globals(), _LAZY)

__all__ = [
    "CleanHandoffPushCore",
    "ClientConfig",
    "ClientInstance",
    "ConsumeConcurrentlyContext",
    "ConsumeConcurrentlyStatus",
    "ConsumeFromWhere",
    "ConsumeMessageConcurrentlyService",
    "ConsumeMessageOrderlyService",
    "ConsumeOrderlyContext",
    "ConsumeOrderlyStatus",
    "ConsumeService",
    "LitePullConsumer",
    "LitePullConsumerConfig",
    "LocalFileOffsetStore",
    "LocalTransactionState",
    "Message",
    "MessageExt",
    "MessageModel",
    "MessageQueueListener",
    "MessageSelector",
    "OffsetStore",
    "OrderlyPushConsumerCore",
    "ProcessQueue",
    "Producer",
    "ProducerConfig",
    "PullRequest",
    "PullStatus",
    "PushConsumer",
    "PushConsumerConfig",
    "QueueDiff",
    "ReadOffsetType",
    "RebalanceHooks",
    "RebalanceImpl",
    "RebalanceLog",
    "RebalanceRecord",
    "RebalanceTrigger",
    "RemoteBrokerOffsetStore",
    "SendResult",
    "SendStatus",
    "SubscriptionType",
    "TransactionProducer",
    "TransactionSendResult",
    "allocate_topic",
    "create_reply",
    "diff_queues",
    "retry_topic",
    "select_by_hash",
]
