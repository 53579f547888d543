"""A push consumer whose queues are consumed under broker leases: what the orderly and the
clean-handoff engines share.

In a clustering group :class:`LeasedPushConsumerCore` locks a new queue on its broker before the
queue's offset is read and its first pull sent (``lock_new_queues``), renews its leases through a
:class:`~rocketq.client.rebalance.leases.LeaseKeeper` started with the consumer and stopped first at
shutdown, and tells the keeper of each of its rebalances (so it can retry, when the engine asks for
it, the leases another client still held). Broadcasting consumers own every queue and lock none.
"""

from __future__ import annotations

from typing import Any

from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.consumer.push_core import PushConsumerCore
from rocketq.client.rebalance.leases import LeaseKeeper, lock_one
from rocketq.client.rebalance.log import RebalanceRecord, RebalanceTrigger
from rocketq.models import MessageQueue
from rocketq.protocol.bodies import MessageModel

__all__ = ["LeasedPushConsumerCore"]


class LeasedPushConsumerCore(PushConsumerCore):
    """The lease half of the orderly and clean-handoff push engines (see the module doc)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lease = LeaseKeeper(self, retry=self.retries_leases)

    @property
    def retries_leases(self) -> bool:
        """Whether a lease another client still holds is retried soon (clean handoff) rather than
        at the next rebalance."""
        return False

    @property
    def lock_new_queues(self) -> bool:
        return self.message_model is MessageModel.CLUSTERING

    async def lock_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        """Lock one queue now (serialised with renewals and releases); records it on ``pq``."""
        async with self.lease.renew_lock:
            return await lock_one(self.instance, self.group, mq, pq)

    async def start(self) -> None:
        await super().start()
        if self.message_model is MessageModel.CLUSTERING:
            self.lease.start()

    async def do_rebalance(self, trigger: RebalanceTrigger) -> None:
        await super().do_rebalance(trigger)
        self.lease.rebalanced(trigger)

    async def shutdown(self, await_termination: float) -> list[RebalanceRecord]:
        await self.lease.stop()
        return await super().shutdown(await_termination)
