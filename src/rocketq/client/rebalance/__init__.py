"""Rebalance: which queues a consumer owns, when that is decided again, and the leases it holds.

* :mod:`~rocketq.client.rebalance.service` - :class:`~rocketq.client.rebalance.service.RebalanceService`,
  one per client instance: a rebalance every ``rebalance_interval`` (20 s) and at once when woken
  (NOTIFY_CONSUMER_IDS_CHANGED, a route change...), never two within ``rebalance_min_interval``
  (1 s); its timing is the pure :class:`~rocketq.client.rebalance.service.RebalanceSchedule`;
* :mod:`~rocketq.client.rebalance.impl` - the allocation step (``RebalanceImpl``): the pure
  :func:`~rocketq.client.rebalance.impl.allocate_topic` and
  :func:`~rocketq.client.rebalance.impl.diff_queues`, and
  :class:`~rocketq.client.rebalance.impl.RebalanceImpl` applying them to a consumer's process-queue
  table through :class:`~rocketq.client.rebalance.impl.RebalanceHooks`;
* :mod:`~rocketq.client.rebalance.log` - the structured rebalance log: one
  :class:`~rocketq.client.rebalance.log.RebalanceRecord` per topic per rebalance;
* :mod:`~rocketq.client.rebalance.leases` - broker leases (queue locks) and their renewal, used
  by orderly consumption and by the clean handoff.

The allocation strategies themselves are :mod:`rocketq.allocate`.
"""
