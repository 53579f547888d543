"""What the synchronous client objects share (:class:`~rocketq.client.Producer`,
:class:`~rocketq.client.PushConsumer`, :class:`~rocketq.client.LitePullConsumer`).

Each is a thin front over a core that lives on a shared :class:`~rocketq.client.instance.ClientInstance`
(its event loop thread). :class:`SyncFacade` holds the group, the client config and, while started,
the instance and the core; it answers ``client_id``, ``core`` (or :class:`~rocketq.errors.ClientStateError`
when stopped), ``repr`` and the ``with`` protocol, and runs starting and stopping: the instance is
acquired, the core built and started (``_start_core``), and on the way out stopped (``stop`` given
to ``_stop``) and the instance released, whatever fails in between. :class:`ConsumerFacade` adds
what both consumers share on this side: their constructor, the rebalance log and the queue listeners.
:func:`client_config_for` and :func:`with_options` build the configs the constructors take.
"""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Coroutine
from dataclasses import replace
from types import TracebackType
from typing import Any, ClassVar, Generic, Protocol, Self, TypeVar

from rocketq.client.config import ClientConfig
from rocketq.client.instance import ClientInstance
from rocketq.client.rebalance.impl import MessageQueueListener
from rocketq.client.rebalance.log import RebalanceListener, RebalanceLog, RebalanceRecord
from rocketq.client.validators import check_group
from rocketq.errors import ClientStateError, ConfigError
from rocketq.protocol.bodies import MessageModel

__all__ = ["ConsumerFacade", "SyncFacade", "client_config_for", "with_options"]

logger = logging.getLogger(__name__)

CoreT = TypeVar("CoreT")
ConfigT = TypeVar("ConfigT")


def client_config_for(
    client_config: ClientConfig | None,
    *,
    namesrv: str | None,
    client_ip: str | None,
    instance_name: str | None,
    access_key: str | None = None,
    secret_key: str | None = None,
) -> ClientConfig:
    """``client_config`` if given, else one from the constructor's shortcuts (instance ``DEFAULT``);
    ``access_key``/``secret_key``, when given, replace the config's (the ACL account requests are
    signed for)."""
    if client_config is None:
        client_config = ClientConfig(
            namesrv=namesrv, client_ip=client_ip, instance_name=instance_name or "DEFAULT"
        )
    if access_key is not None or secret_key is not None:
        client_config = replace(client_config, access_key=access_key, secret_key=secret_key)
    return client_config


def with_options(config: ConfigT, options: dict[str, Any], what: str) -> ConfigT:
    """``config`` with the keyword ``options`` replaced; an unknown name is a :class:`ConfigError`
    (``unknown <what> option: ...``)."""
    if not options:
        return config
    try:
        return replace(config, **options)  # type: ignore[type-var]
    except TypeError as exc:
        raise ConfigError(f"unknown {what} option: {exc}") from None


class SyncFacade(ABC, Generic[CoreT]):
    """The group, client config, instance and core of a synchronous client, and what follows from them.

    Subclasses set ``group``, ``client_config``, ``_instance = None``, ``_core = None`` and
    ``_lock`` in their constructor, implement :meth:`_start_core` and :meth:`shutdown` (through
    :meth:`_stop`), and may check more before a start (:meth:`_check_startable`) or do more after
    one (:meth:`_started`) or after a stop (:meth:`_stopped`).
    """

    #: Who is not started, for the :attr:`core` error (``the <role> is not started``).
    role: ClassVar[str]

    group: str
    client_config: ClientConfig
    _instance: ClientInstance | None
    _core: CoreT | None
    _lock: threading.Lock

    def __repr__(self) -> str:
        state = "running" if self._core is not None else "stopped"
        return f"<{type(self).__name__} {self.group} {state} {self.client_id}>"

    @property
    def client_id(self) -> str:
        return self._instance.client_id if self._instance is not None else self.client_config.client_id()

    @property
    def core(self) -> CoreT:
        if self._core is None:
            raise ClientStateError(f"the {self.role} is not started")
        return self._core

    def start(self) -> Self:
        """Acquire the client instance (made and started on first use), then build and start the
        core; a started client starts nothing. On failure the instance is released again."""
        with self._lock:
            if self._core is not None:
                return self
            self._check_startable()
            instance = ClientInstance.acquire(self.client_config)
            try:
                core = self._start_core(instance)
            except BaseException:
                instance.release()
                raise
            self._instance, self._core = instance, core
            self._started()
            return self

    def _check_startable(self) -> None:
        """Raise :class:`~rocketq.errors.ClientStateError` when the client cannot start yet."""

    @abstractmethod
    def _start_core(self, instance: ClientInstance) -> CoreT:
        """Build and start the core on ``instance`` (from the caller's thread, through the
        instance's loop thread); undo what was done before raising."""

    def _started(self) -> None:
        """Just started (under the lock)."""

    def _stop(self, stop: Callable[[CoreT], Coroutine[Any, Any, object]], timeout: float) -> None:
        """Stop a started client: ``stop(core)`` on the loop (up to ``timeout`` s; a failure is
        logged, not raised), then :meth:`_stopped`, then release the instance."""
        with self._lock:
            core, instance = self._core, self._instance
            self._core = None
            if core is None or instance is None:
                return
            try:
                instance.loop_thread.call(stop(core), timeout=timeout)
            except Exception as exc:
                logger.warning("%s %s: shutdown step failed: %s", self.role, self.group, exc)
            finally:
                try:
                    self._stopped(core)
                finally:
                    instance.release()

    def _stopped(self, core: CoreT) -> None:
        """The core has stopped (or failed to); the instance is still held."""

    @abstractmethod
    def shutdown(self) -> None: ...

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.shutdown()


class _ConsumerConfig(Protocol):
    @property
    def message_model(self) -> MessageModel: ...

    @property
    def rebalance_log_size(self) -> int: ...


ConsumerConfigT = TypeVar("ConsumerConfigT", bound=_ConsumerConfig)


class ConsumerFacade(SyncFacade[CoreT], Generic[CoreT, ConsumerConfigT]):
    """A synchronous consumer: the group's checks, the client id rule, the rebalance log and the
    queue listeners both consumers keep on this side of the loop."""

    role = "consumer"
    #: How an unknown option names this consumer (``unknown <kind> option: ...``).
    kind: ClassVar[str]

    def __init__(
        self,
        group: str,
        namesrv: str | None = None,
        *,
        instance_name: str | None = None,
        client_ip: str | None = None,
        config: ConsumerConfigT | None = None,
        client_config: ClientConfig | None = None,
        access_key: str | None = None,
        secret_key: str | None = None,
        **options: Any,
    ) -> None:
        """``options`` are fields of the config, replacing its values (``pull_batch_size=16``);
        ``namesrv``, ``instance_name`` and ``client_ip`` make the client config when none is given;
        ``access_key`` and ``secret_key`` sign every request for a broker's ACL."""
        self._check_group_name(group)
        config = with_options(config or self._default_config(), options, self.kind)
        client_config = client_config_for(
            client_config,
            namesrv=namesrv,
            client_ip=client_ip,
            instance_name=instance_name,
            access_key=access_key,
            secret_key=secret_key,
        )
        check_group(group)
        self.group = group
        self.config = config
        if config.message_model is MessageModel.CLUSTERING:
            # a clustering consumer's id carries the pid, as Java's changeInstanceNameToPID
            client_config = client_config.with_pid_instance_name()
        self.client_config = client_config
        self.rebalance_log = RebalanceLog(config.rebalance_log_size)
        self._queue_listeners: list[MessageQueueListener] = []
        self._instance = None
        self._core = None
        self._lock = threading.Lock()
        self._init_state()

    def _check_group_name(self, group: str) -> None:
        """Refuse a group name this kind of consumer may not take (first, before any other check)."""

    @abstractmethod
    def _default_config(self) -> ConsumerConfigT:
        """The config when none is given."""

    def _init_state(self) -> None:
        """Set up what the subclass keeps (the last step of the constructor)."""

    def add_rebalance_listener(self, fn: RebalanceListener) -> None:
        """Call ``fn(record)`` for every rebalance record (on the client's loop thread)."""
        self.rebalance_log.add_listener(fn)

    def add_queue_listener(self, fn: MessageQueueListener) -> None:
        """``fn(topic, all queues, my queues)`` whenever a rebalance changed this consumer's queues."""
        self._queue_listeners.append(fn)

    def rebalance_records(self, topic: str | None = None) -> list[RebalanceRecord]:
        """The rebalance records kept in memory, oldest first (of one topic when given)."""
        return self.rebalance_log.records(topic)
