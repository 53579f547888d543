"""The strategy registry: names to factories, with each strategy's options checked."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from rocketq.allocate.average import AllocateAveragely, AllocateAveragelyByCircle
from rocketq.allocate.base import AllocationStrategy
from rocketq.allocate.config import AllocateByConfig
from rocketq.allocate.consistent_hash import DEFAULT_VIRTUAL_NODES, AllocateConsistentHash, HashFunction
from rocketq.allocate.machine_room import (
    AllocateByMachineRoom,
    AllocateMachineRoomNearby,
    MachineRoomResolver,
)
from rocketq.allocate.sticky import AllocateSticky
from rocketq.errors import ConfigError
from rocketq.models import MessageQueue

__all__ = ["ROCKETMQ_STRATEGIES", "get_strategy", "register_strategy", "strategy_names"]

StrategyFactory = Callable[..., AllocationStrategy]

ROCKETMQ_STRATEGIES: tuple[str, ...] = (
    "AVG",
    "AVG_BY_CIRCLE",
    "CONFIG",
    "MACHINE_ROOM",
    "MACHINE_ROOM_NEARBY",
    "CONSISTENT_HASH",
)
"""The six strategies RocketMQ ships, by the names their ``getName()`` returns."""


def _avg() -> AllocationStrategy:
    return AllocateAveragely()


def _avg_by_circle() -> AllocationStrategy:
    return AllocateAveragelyByCircle()


def _config(*, queues: Iterable[MessageQueue] | None = None) -> AllocationStrategy:
    if queues is None:
        raise ConfigError("strategy CONFIG needs queues=[MessageQueue, ...]")
    return AllocateByConfig(queues)


def _machine_room(*, rooms: Iterable[str] | None = None) -> AllocationStrategy:
    if rooms is None:
        raise ConfigError('strategy MACHINE_ROOM needs rooms={"room1", ...}')
    if isinstance(rooms, str):
        raise ConfigError("MACHINE_ROOM rooms must be a collection of room names, not one string")
    return AllocateByMachineRoom(rooms)


def _machine_room_nearby(
    *, inner: AllocationStrategy | None = None, resolver: MachineRoomResolver | None = None
) -> AllocationStrategy:
    if inner is not None and not isinstance(inner, AllocationStrategy):
        raise ConfigError(f"MACHINE_ROOM_NEARBY inner must be an AllocationStrategy, not {inner!r}")
    if resolver is not None and not isinstance(resolver, MachineRoomResolver):
        raise ConfigError("MACHINE_ROOM_NEARBY resolver needs broker_room(mq) and consumer_room(client_id)")
    return AllocateMachineRoomNearby(AllocateAveragely() if inner is None else inner, resolver)


def _consistent_hash(
    *, virtual_nodes: int = DEFAULT_VIRTUAL_NODES, hash_function: HashFunction | None = None
) -> AllocationStrategy:
    if isinstance(virtual_nodes, bool) or not isinstance(virtual_nodes, int):
        raise ConfigError(f"CONSISTENT_HASH virtual_nodes must be an int, not {virtual_nodes!r}")
    if hash_function is not None and not callable(hash_function):
        raise ConfigError("CONSISTENT_HASH hash_function must be a callable str -> int")
    return AllocateConsistentHash(virtual_nodes, hash_function)


def _sticky(*, previous: Mapping[str, Sequence[MessageQueue]] | None = None) -> AllocationStrategy:
    return AllocateSticky(previous)


_REGISTRY: dict[str, StrategyFactory] = {
    "AVG": _avg,
    "AVG_BY_CIRCLE": _avg_by_circle,
    "CONFIG": _config,
    "MACHINE_ROOM": _machine_room,
    "MACHINE_ROOM_NEARBY": _machine_room_nearby,
    "CONSISTENT_HASH": _consistent_hash,
    "STICKY": _sticky,
}


def strategy_names() -> tuple[str, ...]:
    """Every registered strategy name, RocketMQ's six first."""
    return tuple(_REGISTRY)


def register_strategy(name: str, factory: StrategyFactory, *, replace: bool = False) -> None:
    """Register ``factory`` (keyword-only options → strategy) under ``name`` (upper case)."""
    key = name.upper()
    if not replace and key in _REGISTRY:
        raise ConfigError(f"allocation strategy {key} is already registered")
    _REGISTRY[key] = factory


def get_strategy(name: str, **options: Any) -> AllocationStrategy:
    """A strategy by name (case-insensitive), configured with its keyword options.

    Options: ``CONSISTENT_HASH`` (``virtual_nodes=10``, ``hash_function=None``), ``CONFIG``
    (``queues=``, required), ``MACHINE_ROOM`` (``rooms=``, required), ``MACHINE_ROOM_NEARBY``
    (``inner=`` default ``AVG``, ``resolver=`` default :class:`AtSignRoomResolver`),
    ``STICKY`` (``previous=`` default none). ``AVG`` and ``AVG_BY_CIRCLE`` take none.

    >>> get_strategy("avg").name
    'AVG'
    >>> get_strategy("MACHINE_ROOM_NEARBY", inner=get_strategy("AVG_BY_CIRCLE")).name
    'MACHINE_ROOM_NEARBY-AVG_BY_CIRCLE'
    >>> get_strategy("ROUND_ROBIN")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rocketq.errors.ConfigError: unknown allocation strategy 'ROUND_ROBIN'; valid names: AVG, ..., STICKY
    """
    factory = _REGISTRY.get(name.upper()) if isinstance(name, str) else None
    if factory is None:
        raise ConfigError(f"unknown allocation strategy {name!r}; valid names: {', '.join(strategy_names())}")
    accepted = [p for p in inspect.signature(factory).parameters if p != "self"]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        takes = ", ".join(accepted) if accepted else "no options"
        raise ConfigError(f"strategy {name.upper()} does not take {', '.join(unknown)} (it takes {takes})")
    return factory(**options)
