"""What one :class:`~rocketq.remoting.RemotingConnection` is made with, in three bundles.

* :class:`ConnectionSettings` — its bounds and buffers (from a client's or a server's config, by
  :meth:`ConnectionSettings.of`), and the options only one side sets (``close_idle``,
  ``close_on_timeout``, ``pause_reads_on_write_pressure``, ``read_time_slice``);
* :class:`ServerParts` — what a server's connections share (request limits, the input budget, the
  large-request offloader, the busy answers), ``None`` on a client's;
* :class:`ConnectionEvents` — the owner's callbacks when the connection opens, closes or idles.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rocketq.protocol.frame import DEFAULT_MAX_EXT_FIELDS, DEFAULT_MAX_FRAME_SIZE, DEFAULT_MAX_HEADER_SIZE
from rocketq.remoting.admission import FastFail
from rocketq.remoting.guard import InputBudget, RequestLimit
from rocketq.remoting.offload import Offloader

if TYPE_CHECKING:
    from rocketq.remoting.config import RemotingClientConfig, ServerConfig
    from rocketq.remoting.connection import RemotingConnection

__all__ = ["ConnectionEvents", "ConnectionSettings", "ServerParts"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionSettings:
    """One connection's bounds, buffers and side-specific options (see the configs' fields)."""

    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
    max_header_size: int = DEFAULT_MAX_HEADER_SIZE
    max_ext_fields: int = DEFAULT_MAX_EXT_FIELDS
    max_in_flight: int = 64
    write_buffer_high: int = 1024 * 1024
    write_buffer_low: int = 256 * 1024
    max_write_buffer: int = 64 * 1024 * 1024
    write_batch_frames: int = 8
    idle_timeout: float | None = None
    #: close the connection once idle (a client's; a server's as its config says)
    close_idle: bool = False
    #: close the connection when a request on it times out (a client's option)
    close_on_timeout: bool = False
    #: output over ``write_buffer_high`` pauses reading (a server's connections)
    pause_reads_on_write_pressure: bool = False
    #: seconds of one read's requests before yielding the loop to other connections (a server's)
    read_time_slice: float | None = None

    @classmethod
    def of(
        cls,
        cfg: RemotingClientConfig | ServerConfig,
        *,
        close_idle: bool,
        close_on_timeout: bool = False,
        pause_reads_on_write_pressure: bool = False,
        read_time_slice: float | None = None,
    ) -> ConnectionSettings:
        """The settings of ``cfg`` (what both configs have) with the side's own options."""
        return cls(
            max_frame_size=cfg.max_frame_size,
            max_header_size=cfg.max_header_size,
            max_ext_fields=cfg.max_ext_fields,
            max_in_flight=cfg.max_in_flight,
            write_buffer_high=cfg.write_buffer_high,
            write_buffer_low=cfg.write_buffer_low,
            max_write_buffer=cfg.max_write_buffer,
            write_batch_frames=cfg.write_batch_frames,
            idle_timeout=cfg.idle_timeout,
            close_idle=close_idle,
            close_on_timeout=close_on_timeout,
            pause_reads_on_write_pressure=pause_reads_on_write_pressure,
            read_time_slice=read_time_slice,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerParts:
    """What the connections of one server share (see :mod:`rocketq.remoting.guard`,
    :mod:`rocketq.remoting.offload`, :mod:`rocketq.remoting.admission`)."""

    request_limits: Mapping[int, RequestLimit] = field(default_factory=dict)
    input_budget: InputBudget | None = None
    offloader: Offloader | None = None
    fast_fail: FastFail | None = None


ConnectionCallback = Callable[["RemotingConnection"], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionEvents:
    """The owner's callbacks: the connection opened, closed (once, whatever closed it), idled."""

    on_open: ConnectionCallback | None = None
    on_close: ConnectionCallback | None = None
    on_idle: ConnectionCallback | None = None
