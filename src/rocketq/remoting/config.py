"""Settings of the asyncio transport: frozen, keyword-only, durations in float seconds.

Defaults are RocketMQ 4.9.4's own where RocketMQ has one (``NettyServerConfig``,
``NettyClientConfig``, ``NettySystemConfig``), and the docstrings say so; the others are ours and
say why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from rocketq.errors import ConfigError
from rocketq.protocol.acl import Credentials
from rocketq.protocol.frame import DEFAULT_MAX_EXT_FIELDS, DEFAULT_MAX_FRAME_SIZE, DEFAULT_MAX_HEADER_SIZE
from rocketq.remoting.guard import DEFAULT_REQUEST_LIMITS, RequestLimit
from rocketq.remoting.tls import TlsClientConfig, TlsServerConfig

__all__ = ["RemotingClientConfig", "ServerConfig"]


def _check_positive(name: str, value: float | None, *, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if value is None or value <= 0:
        raise ConfigError(f"{name} must be positive, got {value!r}")


def _check_buffers(low: int, high: int, hard: int) -> None:
    if not 0 <= low <= high:
        raise ConfigError(f"need 0 <= write_buffer_low <= write_buffer_high, got {low} and {high}")
    if hard < high:
        raise ConfigError(f"max_write_buffer ({hard}) must not be below write_buffer_high ({high})")


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerConfig:
    """How a :class:`~rocketq.remoting.RemotingServer` treats its connections.

    Back-pressure, in two steps. When a connection's unsent output grows past
    ``write_buffer_high`` bytes (the peer is not reading), the server stops reading that
    connection's requests until the output drains below ``write_buffer_low``; the requests wait
    in the peer's socket, so the peer's own writes block. Output can still grow while paused (the
    responses of handlers already running), and if it passes ``max_write_buffer`` bytes the
    connection is closed and the event logged. ``max_in_flight`` bounds the handlers running at once
    for one connection (coroutine handlers such as long-polling pulls): at the bound, reading
    pauses until one finishes.
    """

    #: Seconds a request of each code may wait, whole, in its connection's buffer
    #: before it is answered ``SYSTEM_BUSY`` unserved, as RocketMQ's ``BrokerFastFailure`` does
    #: (:mod:`rocketq.remoting.admission`); ``None``: serve everything, however late. The broker
    #: sets its ``wait_time_in_*_queue`` here.
    fast_fail: Mapping[int, float] | None = None
    #: Largest frame accepted, in bytes (RocketMQ: 16 MiB).
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
    #: Seconds without a byte read or written (and no handler running) before ``on_idle`` fires
    #: (RocketMQ ``serverChannelMaxIdleTimeSeconds`` = 120); ``None`` disables idle detection.
    idle_timeout: float | None = 120.0
    #: Close a connection once it is idle, as RocketMQ's server does.
    close_idle: bool = True
    #: Handlers running at once per connection (ours: room for a consumer long-polling 1024 queues).
    max_in_flight: int = 1024
    #: Unsent bytes above which reading pauses (ours; Netty's default high-water mark is 64 KiB,
    #: we allow one typical pull response more).
    write_buffer_high: int = 1024 * 1024
    #: Unsent bytes below which reading resumes.
    write_buffer_low: int = 256 * 1024
    #: Unsent bytes above which the connection is closed as a peer that does not read.
    max_write_buffer: int = 64 * 1024 * 1024
    #: Listen backlog (RocketMQ ``com.rocketmq.remoting.socket.backlog`` = 1024).
    backlog: int = 1024
    #: Frames handed to the socket in one system call at most while a read's requests are being
    #: answered (ours). Answering a read of 32 requests in one write makes the peer wait for the
    #: last before it can use the first; leaving in groups of 8, the first answers are on their way
    #: (and the peer at work on them) while the rest are made. On two cores this doubled sends/s.
    write_batch_frames: int = 8

    # -- hostile peers (docs/limits.md): bounds of ours where RocketMQ has none

    #: Largest frame header (RocketMQ bounds it by the frame only): see
    #: :data:`~rocketq.protocol.frame.DEFAULT_MAX_HEADER_SIZE` (the frame's 16 MiB).
    max_header_size: int = DEFAULT_MAX_HEADER_SIZE
    #: Most ext fields in one header (ours; RocketMQ's headers have at most 14): 1024.
    max_ext_fields: int = DEFAULT_MAX_EXT_FIELDS
    #: Body limits by request code, checked before decoding (see
    #: :data:`~rocketq.remoting.guard.DEFAULT_REQUEST_LIMITS`: the frame's size, and JSON no denser
    #: than RocketMQ writes it): a request over its limit is answered SYSTEM_ERROR. Codes not
    #: listed are bounded by ``max_frame_size`` alone.
    request_limits: Mapping[int, RequestLimit] = field(default_factory=lambda: DEFAULT_REQUEST_LIMITS)
    #: Longest JSON body the handlers read through fastjson's non-standard syntax (unquoted keys,
    #: single quotes ...), which RocketMQ's fastjson accepts too: the frame's size. Real clients
    #: send standard JSON (every captured 4.9.4 body is); the pure-Python parser that takes the
    #: rest does about 4 MiB/s, on the worker thread for bodies over ``offload_threshold``.
    max_nonstandard_json: int = DEFAULT_MAX_FRAME_SIZE
    #: Request bodies of more bytes are decoded on the server's worker thread, one request per
    #: code at a time, with the connection's reading held meanwhile, and what they change is
    #: applied in slices of ``read_time_slice`` (ours; :mod:`rocketq.remoting.offload`). The
    #: costliest 16 KiB body decodes inline in about 5 ms (fastjson's non-standard syntax; 1 ms
    #: as standard JSON), a 16 MiB heartbeat in seconds. ``None``: always inline.
    offload_threshold: int | None = 16 * 1024
    #: Pause CPython's automatic garbage collection while a large request is in progress (ours):
    #: a full collection over the objects a large body decodes to holds the GIL, and so every
    #: peer, for 0.1-0.4 s; they are freed by reference counting when the request ends. The
    #: switch is process-wide: an application embedding a server that must never defer its
    #: collections turns this off.
    pause_gc_for_large_requests: bool = True
    #: Seconds a frame may take to arrive whole once its first byte has (ours; RocketMQ has only the
    #: 120 s idle timeout). RocketMQ's clients give up on a request after 3 s (6 s for a broker's
    #: registration), so a frame still arriving after 15 s has no one waiting for it; a peer
    #: holding half a frame is closed then. ``None`` disables the check.
    frame_read_timeout: float | None = 15.0
    #: Bytes all connections together may hold undecoded (ours): the connection whose data takes
    #: the total past it is closed. One connection holds at most one frame (``max_frame_size``)
    #: and one socket read.
    max_buffered_total: int = 256 * 1024 * 1024
    #: Connections open at once (ours; RocketMQ has no bound but the process's file limit): one
    #: more is closed as soon as it is accepted.
    max_connections: int = 4096
    #: Seconds one connection may spend handling the requests of one read before it yields the
    #: event loop to the other connections (ours): a peer pipelining costly requests delays the
    #: others by about this plus one request, not by all of its requests. Also the loop time a
    #: large request's effects take before yielding (``offload_threshold``).
    read_time_slice: float | None = 0.005
    #: Seconds between two warnings about the same peer host and kind of misbehaviour (ours);
    #: the ones between are logged at DEBUG and counted in the next warning.
    peer_log_window: float = 60.0
    #: TLS on this port: RocketMQ's ``tls.server.mode`` and certificate files
    #: (:class:`~rocketq.remoting.tls.TlsServerConfig`; default: disabled, plaintext only).
    tls: TlsServerConfig = field(default_factory=TlsServerConfig)

    def __post_init__(self) -> None:
        _check_positive("max_frame_size", self.max_frame_size)
        _check_positive("max_header_size", self.max_header_size)
        _check_positive("max_ext_fields", self.max_ext_fields)
        _check_positive("max_nonstandard_json", self.max_nonstandard_json)
        _check_positive("offload_threshold", self.offload_threshold, allow_none=True)
        _check_positive("frame_read_timeout", self.frame_read_timeout, allow_none=True)
        _check_positive("max_buffered_total", self.max_buffered_total)
        _check_positive("max_connections", self.max_connections)
        _check_positive("read_time_slice", self.read_time_slice, allow_none=True)
        _check_positive("peer_log_window", self.peer_log_window)
        _check_positive("idle_timeout", self.idle_timeout, allow_none=True)
        _check_positive("max_in_flight", self.max_in_flight)
        _check_positive("backlog", self.backlog)
        _check_positive("write_batch_frames", self.write_batch_frames)
        _check_buffers(self.write_buffer_low, self.write_buffer_high, self.max_write_buffer)


@dataclass(frozen=True, slots=True, kw_only=True)
class RemotingClientConfig:
    """How a :class:`~rocketq.remoting.RemotingClient` connects and waits."""

    #: Seconds to establish a TCP connection (RocketMQ ``connectTimeoutMillis`` = 3000).
    connect_timeout: float = 3.0
    #: Seconds ``invoke`` waits when the caller gives no timeout (RocketMQ's usual 3000 ms).
    request_timeout: float = 3.0
    #: Sign every request sent with these keys, as RocketMQ 4.9's ``AclClientRPCHook`` (a broker
    #: with ACL on refuses unsigned ones; see :class:`~rocketq.remoting.acl.AclSigningHook`);
    #: ``None``: send them unsigned. The secret stays out of ``repr``.
    credentials: Credentials | None = None
    #: Seconds without traffic (and no request waiting) before a connection is closed (RocketMQ
    #: ``clientChannelMaxIdleTimeSeconds`` = 120); the next call reconnects. ``None`` keeps it open.
    idle_timeout: float | None = 120.0
    #: Close the connection when a request times out. RocketMQ's client does
    #: (``clientCloseSocketIfTimeout`` = true); ours does not by default, because one slow request
    #: would then fail every other request sharing the connection.
    close_on_timeout: bool = False
    #: Largest frame accepted, in bytes (RocketMQ: 16 MiB).
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
    #: Server-initiated requests handled at once per connection.
    max_in_flight: int = 64
    #: Unsent bytes above which ``invoke`` waits for the socket to drain before writing.
    write_buffer_high: int = 1024 * 1024
    #: Unsent bytes below which waiting writers go on.
    write_buffer_low: int = 256 * 1024
    #: Unsent bytes above which the connection is closed (the peer stopped reading).
    max_write_buffer: int = 64 * 1024 * 1024
    #: Frames handed to the socket in one system call at most when many callers write in one
    #: loop iteration (ours): the first requests leave while the rest are encoded, so the server
    #: works on them in parallel instead of receiving one burst.
    write_batch_frames: int = 8
    #: Largest frame header accepted (ours): as :attr:`ServerConfig.max_header_size`.
    max_header_size: int = DEFAULT_MAX_HEADER_SIZE
    #: Most ext fields in one header (ours): as :attr:`ServerConfig.max_ext_fields`.
    max_ext_fields: int = DEFAULT_MAX_EXT_FIELDS
    #: TLS to every server dialled: RocketMQ's ``tls.enable`` / ``useTLS`` and ``tls.client.*``
    #: (:class:`~rocketq.remoting.tls.TlsClientConfig`; default: plaintext).
    tls: TlsClientConfig = field(default_factory=TlsClientConfig)

    def __post_init__(self) -> None:
        _check_positive("connect_timeout", self.connect_timeout)
        _check_positive("request_timeout", self.request_timeout)
        _check_positive("idle_timeout", self.idle_timeout, allow_none=True)
        _check_positive("max_frame_size", self.max_frame_size)
        _check_positive("max_in_flight", self.max_in_flight)
        _check_positive("write_batch_frames", self.write_batch_frames)
        _check_buffers(self.write_buffer_low, self.write_buffer_high, self.max_write_buffer)
