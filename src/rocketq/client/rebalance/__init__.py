"""Rebalance: which queues a consumer owns, and the leases it holds.

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
