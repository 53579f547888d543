"""The synchronous facade: :class:`Admin` runs :class:`~rocketq.admin.core.AsyncAdmin` on a
background loop thread, as the clients do."""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypedDict, TypeVar, Unpack

from rocketq.client.loop_thread import LoopThread
from rocketq.lifecycle import Closing
from rocketq.remoting.tls import TlsClientConfig

from .core import AsyncAdmin
from .values import T

P = ParamSpec("P")
R = TypeVar("R")


def _blocking(
    call: Callable[Concatenate[AsyncAdmin, P], Coroutine[Any, Any, R]],
) -> Callable[Concatenate[Admin, P], R]:
    """The :class:`Admin` method of the :class:`AsyncAdmin` method ``call``: the same parameters,
    run to its end on the admin's loop thread. Its signature and docstring are ``call``'s."""

    @functools.wraps(call)
    def method(self: Admin, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return self._call(call(self.core, *args, **kwargs))

    method.__module__, method.__qualname__ = __name__, f"Admin.{call.__name__}"
    return method


# ------------------------------------------------------------------------------------ the facade


class AdminOptions(TypedDict, total=False):
    """:class:`AsyncAdmin`'s keyword options, which :class:`Admin` passes on."""

    timeout: float
    access_key: str | None
    secret_key: str | None
    tls: TlsClientConfig | None


class Admin(Closing):
    """The synchronous facade of :class:`AsyncAdmin`: the same calls, blocking, on a loop thread."""

    def __init__(self, namesrv: str | None = None, **options: Unpack[AdminOptions]) -> None:
        """``options``: :class:`AsyncAdmin`'s (``timeout``, ``access_key``, ``secret_key``, ``tls``)."""
        self.core = AsyncAdmin(namesrv, **options)
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

    # Every call of AsyncAdmin, blocking (its parameters, defaults and docstring are AsyncAdmin's).

    cluster_info = _blocking(AsyncAdmin.cluster_info)
    master_addrs = _blocking(AsyncAdmin.master_addrs)
    topic_list = _blocking(AsyncAdmin.topic_list)
    topic_route = _blocking(AsyncAdmin.topic_route)
    topic_stats = _blocking(AsyncAdmin.topic_stats)
    order_conf = _blocking(AsyncAdmin.order_conf)
    create_topic = _blocking(AsyncAdmin.create_topic)
    update_topic = _blocking(AsyncAdmin.update_topic)
    delete_topic = _blocking(AsyncAdmin.delete_topic)
    consumer_connection = _blocking(AsyncAdmin.consumer_connection)
    running_info = _blocking(AsyncAdmin.running_info)
    duplicate_client_ids = _blocking(AsyncAdmin.duplicate_client_ids)
    acl_config = _blocking(AsyncAdmin.acl_config)
    group_exists = _blocking(AsyncAdmin.group_exists)
    group_members = _blocking(AsyncAdmin.group_members)
    group_progress = _blocking(AsyncAdmin.group_progress)
    reset_offsets = _blocking(AsyncAdmin.reset_offsets)
    committed_offsets = _blocking(AsyncAdmin.committed_offsets)
    seed_new_group = _blocking(AsyncAdmin.seed_new_group)

    # ================================================================== monitoring
    # (see the section of AsyncAdmin of the same name)
    broker_runtime = _blocking(AsyncAdmin.broker_runtime)
    slave_lags = _blocking(AsyncAdmin.slave_lags)
    topic_configs = _blocking(AsyncAdmin.topic_configs)
    group_configs = _blocking(AsyncAdmin.group_configs)
    consumer_groups = _blocking(AsyncAdmin.consumer_groups)
    topic_consumers = _blocking(AsyncAdmin.topic_consumers)
    producer_connections = _blocking(AsyncAdmin.producer_connections)
    cluster_info_from = _blocking(AsyncAdmin.cluster_info_from)
    broker_config = _blocking(AsyncAdmin.broker_config)
    update_group_config = _blocking(AsyncAdmin.update_group_config)
    delete_group_config = _blocking(AsyncAdmin.delete_group_config)
    offset_at_time = _blocking(AsyncAdmin.offset_at_time)
    query_message = _blocking(AsyncAdmin.query_message)
    view_message = _blocking(AsyncAdmin.view_message)
    message_trace = _blocking(AsyncAdmin.message_trace)
    check_subscription = _blocking(AsyncAdmin.check_subscription)
    message_at = _blocking(AsyncAdmin.message_at)
    read_queue = _blocking(AsyncAdmin.read_queue)
