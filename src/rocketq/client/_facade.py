"""What the synchronous client objects share (:class:`~rocketq.client.Producer`,
:class:`~rocketq.client.PushConsumer`, :class:`~rocketq.client.LitePullConsumer`).

Each is a thin front over a core that lives on a shared :class:`~rocketq.client.instance.ClientInstance`
(its event loop thread): :class:`SyncFacade` holds the group, the client config and, while started,
the instance and the core; it answers ``client_id``, ``core`` (or :class:`~rocketq.errors.ClientStateError`
when stopped), ``repr`` and the ``with`` protocol. Starting and stopping differ per client and stay
in each class. :func:`client_config_for` and :func:`with_options` build the configs the
constructors take.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import replace
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Self, TypeVar

from rocketq.client.config import ClientConfig
from rocketq.errors import ClientStateError, ConfigError

if TYPE_CHECKING:
    from rocketq.client.instance import ClientInstance

__all__ = ["SyncFacade", "client_config_for", "with_options"]

CoreT = TypeVar("CoreT")
ConfigT = TypeVar("ConfigT")


def client_config_for(
    client_config: ClientConfig | None,
    *,
    namesrv: str | None,
    client_ip: str | None,
    instance_name: str | None,
) -> ClientConfig:
    """``client_config`` if given, else one from the constructor's shortcuts (instance ``DEFAULT``)."""
    if client_config is not None:
        return client_config
    return ClientConfig(namesrv=namesrv, client_ip=client_ip, instance_name=instance_name or "DEFAULT")


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

    Subclasses set ``group``, ``client_config``, ``_instance = None`` and ``_core = None`` in their
    constructor and implement :meth:`start` (acquire the instance, build and start the core) and
    :meth:`shutdown`.
    """

    #: Who is not started, for the :attr:`core` error (``the <role> is not started``).
    role: ClassVar[str]

    group: str
    client_config: ClientConfig
    _instance: ClientInstance | None
    _core: CoreT | None

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

    @abstractmethod
    def start(self) -> Self: ...

    @abstractmethod
    def shutdown(self) -> None: ...

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.shutdown()
