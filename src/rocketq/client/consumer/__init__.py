"""The consumers: what a consumer does with the queues a rebalance gives it, and where each part lives.

The classes you use:

* :mod:`~rocketq.client.consumer.push` - :class:`~rocketq.client.consumer.push.PushConsumer`
  (``DefaultMQPushConsumer``): subscribe, register a listener, start; it picks its engine;
* :mod:`~rocketq.client.consumer.lite_pull` - :class:`~rocketq.client.consumer.lite_pull.LitePullConsumer`
  (``DefaultLitePullConsumer``): ``subscribe`` or ``assign``, then ``poll``; its config and engine.

The engines on the client's loop (each base knows none of its subclasses):

* :mod:`~rocketq.client.consumer.base_core` - :class:`~rocketq.client.consumer.base_core.ConsumerCore`,
  what the push and lite pull engines share (offset store, rebalance, heartbeat data, subscribing);
* :mod:`~rocketq.client.consumer.push_core` - :class:`~rocketq.client.consumer.push_core.PushConsumerCore`:
  one long-polling pull loop per owned queue, flow control, OFFSET_ILLEGAL, send-back;
* :mod:`~rocketq.client.consumer.leased_core` - the push engine under broker leases, the base of:
* :mod:`~rocketq.client.consumer.consume_orderly` - orderly consumption: its consume service and
  :class:`~rocketq.client.consumer.consume_orderly.OrderlyPushConsumerCore` (queues under broker locks);
* :mod:`~rocketq.client.consumer.clean_handoff` - ``handoff="clean"``: queues change owners
  drain → commit → release, without re-delivery.

What they share:

* :mod:`~rocketq.client.consumer.selector` - what a subscription selects:
  :class:`~rocketq.client.consumer.selector.MessageSelector` (a tag expression or an SQL92 filter)
  and the subscription data it makes;
* :mod:`~rocketq.client.consumer.process_queue` -
  :class:`~rocketq.client.consumer.process_queue.ProcessQueue`, one owned queue's cache of pulled
  messages, the offset it may commit, and its one way to be dropped
  (:meth:`~rocketq.client.consumer.process_queue.ProcessQueue.drop`, with a reason);
* :mod:`~rocketq.client.consumer.consume_concurrently` - the concurrent consume service and the
  :class:`~rocketq.client.consumer.consume_concurrently.ConsumeService` interface;
* :mod:`~rocketq.client.consumer.offset_store` - where consume offsets are kept (the broker for
  clustering, a local file for broadcasting);
* :mod:`~rocketq.client.consumer.start_offset` - the one rule for where a newly owned queue starts
  (``computePullFromWhere``), used by both consumers;
* :mod:`~rocketq.client.consumer.pull` - what both consumers' pulls share: the sys flag, flow
  control and the handling of a FOUND answer;
* :mod:`~rocketq.client.consumer.stats` - per-topic pull and consume statistics.

Which queues a consumer owns, when it rebalances, and the broker leases of orderly and clean
consumption live in :mod:`rocketq.client.rebalance`; the rebalance modules use only
:mod:`~rocketq.client.consumer.process_queue` and :mod:`~rocketq.client.consumer.offset_store` of
this package.
"""
