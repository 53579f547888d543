"""The client instance's rebalance hook-up: the rebalance service calls :meth:`Rebalancing.do_rebalance`
on the loop (every ``rebalance_interval``), :meth:`Rebalancing.rebalance_immediately` wakes it from
any thread (``call_soon_threadsafe`` off the loop), and consumer offsets are persisted periodically."""

from __future__ import annotations

import logging

from rocketq.client.config import ClientConfig
from rocketq.client.instance_base import InstanceBase
from rocketq.client.rebalance.log import RebalanceTrigger
from rocketq.client.rebalance.service import RebalanceService

__all__ = ["Rebalancing"]

logger = logging.getLogger("rocketq.client.instance")  # the instance's one logger name, whichever part logs


class Rebalancing(InstanceBase):
    """Rebalance and offset-persistence wiring of a client instance (see the module docstring)."""

    def __init__(self, config: ClientConfig, client_id: str) -> None:
        super().__init__(config, client_id)
        self.rebalance_service = RebalanceService(
            self.do_rebalance,
            wait_interval=config.rebalance_interval,
            min_interval=config.rebalance_min_interval,
        )

    async def persist_all_consumer_offsets(self) -> None:
        for consumer in list(self.consumers.values()):
            try:
                await consumer.persist_consumer_offset()
            except Exception:
                logger.exception("persisting offsets of group %s failed", consumer.group)

    def rebalance_immediately(self, trigger: RebalanceTrigger = RebalanceTrigger.MANUAL) -> None:
        """Wake the rebalance service now (thread-safe; it still keeps its minimum interval)."""
        if self.loop_thread.in_loop_thread:
            self.rebalance_service.wakeup(trigger)
        elif self.loop_thread.running:
            self.loop.call_soon_threadsafe(self.rebalance_service.wakeup, trigger)

    async def do_rebalance(self, trigger: RebalanceTrigger) -> None:
        for consumer in list(self.consumers.values()):
            try:
                await consumer.do_rebalance(trigger)
            except Exception as exc:
                self._log_bug(f"rebalance of group {consumer.group}", exc)
