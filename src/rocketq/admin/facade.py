"""The synchronous facade: :class:`Admin` runs :class:`~rocketq.admin.core.AsyncAdmin` on a
background loop thread, as the clients do."""

from __future__ import annotations

from collections.abc import Coroutine
from types import TracebackType
from typing import Any

from rocketq.client.consumer.selector import MessageSelector
from rocketq.client.loop_thread import LoopThread
from rocketq.models import DuplicateClientId, MessageQueue
from rocketq.protocol.bodies import (
    ClusterInfo,
    ConsumerConnection,
    ConsumerRunningInfo,
    ProducerConnection,
    SubscriptionGroupConfig,
    TopicConfig,
    TopicRouteData,
)
from rocketq.protocol.message import MessageExt
from rocketq.protocol.trace import (
    RMQ_SYS_TRACE_TOPIC,
)

from .core import AsyncAdmin
from .monitoring import BrokerRuntime, MessageTrace, QueueRead
from .values import GroupMembers, GroupProgress, ResetResult, T, TopicStats

# ------------------------------------------------------------------------------------ the facade


class Admin:
    """The synchronous facade of :class:`AsyncAdmin`: the same calls, blocking, on a loop thread."""

    def __init__(self, namesrv: str | None = None, *, timeout: float = 5.0) -> None:
        self.core = AsyncAdmin(namesrv, timeout=timeout)
        self._thread: LoopThread | None = None

    @property
    def namesrv_addrs(self) -> tuple[str, ...]:
        return self.core.namesrv_addrs

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._thread is None:
            self._thread = LoopThread("rocketq-admin", use_uvloop=False)
        return self._thread.call(coro)

    def close(self) -> None:
        if self._thread is not None:
            try:
                self._thread.call(self.core.close(), timeout=10.0)
            finally:
                self._thread.stop()
                self._thread = None

    def __enter__(self) -> Admin:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def cluster_info(self) -> ClusterInfo:
        return self._call(self.core.cluster_info())

    def master_addrs(self, cluster: str | None = None) -> dict[str, str]:
        return self._call(self.core.master_addrs(cluster))

    def topic_list(self) -> list[str]:
        return self._call(self.core.topic_list())

    def topic_route(self, topic: str) -> TopicRouteData:
        return self._call(self.core.topic_route(topic))

    def topic_stats(self, topic: str) -> TopicStats:
        return self._call(self.core.topic_stats(topic))

    def order_conf(self, topic: str) -> str | None:
        return self._call(self.core.order_conf(topic))

    def create_topic(
        self,
        topic: str,
        *,
        queues: int | None = None,
        read_queues: int | None = None,
        write_queues: int | None = None,
        perm: int = 6,
        order: bool = False,
        broker: str | None = None,
        cluster: str | None = None,
        wait: float = 5.0,
    ) -> dict[str, str]:
        """See :meth:`AsyncAdmin.create_topic`."""
        return self._call(
            self.core.create_topic(
                topic, queues=queues, read_queues=read_queues, write_queues=write_queues, perm=perm,
                order=order, broker=broker, cluster=cluster, wait=wait,
            )
        )  # fmt: skip

    def update_topic(
        self,
        topic: str,
        *,
        queues: int | None = None,
        read_queues: int | None = None,
        write_queues: int | None = None,
        perm: int | None = None,
        order: bool | None = None,
        broker: str | None = None,
        cluster: str | None = None,
        wait: float = 5.0,
    ) -> dict[str, str]:
        """See :meth:`AsyncAdmin.update_topic`."""
        return self._call(
            self.core.update_topic(
                topic, queues=queues, read_queues=read_queues, write_queues=write_queues, perm=perm,
                order=order, broker=broker, cluster=cluster, wait=wait,
            )
        )  # fmt: skip

    def delete_topic(self, topic: str, *, cluster: str | None = None) -> dict[str, str]:
        return self._call(self.core.delete_topic(topic, cluster=cluster))

    def consumer_connection(self, group: str) -> dict[str, ConsumerConnection]:
        return self._call(self.core.consumer_connection(group))

    def running_info(self, group: str, client_id: str) -> ConsumerRunningInfo:
        return self._call(self.core.running_info(group, client_id))

    def duplicate_client_ids(self, group: str | None = None) -> list[DuplicateClientId]:
        return self._call(self.core.duplicate_client_ids(group))

    def group_members(self, group: str, *, strategy: str | None = None) -> GroupMembers:
        return self._call(self.core.group_members(group, strategy=strategy))

    def group_progress(
        self, group: str, topic: str | None = None, *, members: GroupMembers | None = None
    ) -> GroupProgress:
        return self._call(self.core.group_progress(group, topic, members=members))

    def reset_offsets(self, group: str, topic: str, to: str | int) -> ResetResult:
        return self._call(self.core.reset_offsets(group, topic, to))

    def committed_offsets(self, group: str, topic: str) -> dict[MessageQueue, int]:
        return self._call(self.core.committed_offsets(group, topic))

    def seed_new_group(self, group: str, topic: str, to: str | int) -> dict[MessageQueue, int] | None:
        return self._call(self.core.seed_new_group(group, topic, to))

    # ================================================================== monitoring
    # (see the section of AsyncAdmin of the same name)

    def broker_runtime(self, addr: str) -> BrokerRuntime:
        return self._call(self.core.broker_runtime(addr))

    def topic_configs(self, addr: str) -> dict[str, TopicConfig]:
        return self._call(self.core.topic_configs(addr))

    def group_configs(self, addr: str) -> dict[str, SubscriptionGroupConfig]:
        return self._call(self.core.group_configs(addr))

    def consumer_groups(self) -> list[str]:
        return self._call(self.core.consumer_groups())

    def topic_consumers(self, topic: str) -> list[str]:
        return self._call(self.core.topic_consumers(topic))

    def producer_connections(self, group: str) -> dict[str, ProducerConnection]:
        return self._call(self.core.producer_connections(group))

    def query_message(
        self, topic: str, key: str, begin: int | None = None, end: int | None = None, max_num: int = 64
    ) -> list[MessageExt]:
        """See :meth:`AsyncAdmin.query_message`."""
        return self._call(self.core.query_message(topic, key, begin, end, max_num))

    def view_message(self, msg_id: str, *, topic: str | None = None) -> list[MessageExt]:
        """See :meth:`AsyncAdmin.view_message`."""
        return self._call(self.core.view_message(msg_id, topic=topic))

    def message_trace(
        self, msg_id: str, *, topic: str | None = None, trace_topic: str = RMQ_SYS_TRACE_TOPIC
    ) -> MessageTrace:
        """See :meth:`AsyncAdmin.message_trace`."""
        return self._call(self.core.message_trace(msg_id, topic=topic, trace_topic=trace_topic))

    def check_subscription(self, group: str, topic: str, selector: MessageSelector | str) -> None:
        """See :meth:`AsyncAdmin.check_subscription`."""
        self._call(self.core.check_subscription(group, topic, selector))

    def message_at(self, mq: MessageQueue, offset: int) -> MessageExt | None:
        return self._call(self.core.message_at(mq, offset))

    def read_queue(self, mq: MessageQueue, offset: int, max_nums: int = 32) -> QueueRead:
        return self._call(self.core.read_queue(mq, offset, max_nums))
