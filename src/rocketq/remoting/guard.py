"""What keeps one hostile peer from stalling or exhausting a server: request limits, a shared
input budget, and warnings logged once per peer.

* :class:`RequestLimit` bounds the body of one request code (bytes, and for JSON bodies the
  objects and values that decoding will build), checked before any decoding with two or three
  ``bytes.count`` scans: a request over it is answered ``SYSTEM_ERROR`` at once.
  :data:`DEFAULT_REQUEST_LIMITS` holds the server's defaults (see ``docs/limits.md``).
* :class:`InputBudget` counts the bytes every connection of a server holds undecoded; the
  connection whose data takes the total past the bound is closed.
* :class:`PeerLog` logs a warning about a peer once per peer (its host) and kind per window, and
  counts the rest: a probe of a thousand bad frames makes one line, not a thousand.

All of it is pure state with ``now`` passed in; :mod:`rocketq.remoting.connection` and
:mod:`rocketq.remoting.server` apply it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from rocketq.errors import ConfigError
from rocketq.protocol.codes import RequestCode, code_name

__all__ = ["DEFAULT_REQUEST_LIMITS", "InputBudget", "PeerLog", "RequestLimit", "peer_host"]

_KIB: Final = 1024
_MIB: Final = 1024 * 1024

#: Bodies this small are never counted: their worst case costs well under a millisecond.
_COUNT_FROM: Final = 4 * _KIB


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestLimit:
    """The largest body a request code may carry, and for JSON bodies how many objects (``{``)
    and values (``{``, ``[`` and ``,``; an upper bound, since those bytes inside strings count
    too) it may hold. Decoding a JSON body costs about 2-4 µs per object (each becomes a Python
    object) and 0.1-0.3 µs per other value, so these bound a request's time on the event loop."""

    max_body: int
    max_json_objects: int | None = None
    max_json_values: int | None = None

    def __post_init__(self) -> None:
        if self.max_body < 0:
            raise ConfigError(f"max_body must not be negative, got {self.max_body}")
        for name in ("max_json_objects", "max_json_values"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"{name} must be positive, got {value}")

    def refusal(self, code: int, body: bytes) -> str | None:
        """Why a request of ``code`` with ``body`` is refused (a remark for the peer), or ``None``."""
        size = len(body)
        name = code_name(code, response=False)
        if size > self.max_body:
            return f"{name} body of {size} bytes is over this server's limit of {self.max_body} bytes"
        if size < _COUNT_FROM:
            return None
        objects = body.count(b"{")
        if self.max_json_objects is not None and objects > self.max_json_objects:
            limit = self.max_json_objects
            return f"{name} body holds {objects} JSON objects, over this server's limit of {limit}"
        if self.max_json_values is not None:
            values = objects + body.count(b"[") + body.count(b",")
            if values > self.max_json_values:
                return (
                    f"{name} body holds about {values} JSON values, over this server's limit of "
                    f"{self.max_json_values}"
                )
        return None


# Real clients' bodies (the 1,216 captured RocketMQ 4.9.4 frames): a heartbeat 622 bytes, a lock
# batch 280, CHECK_CLIENT_CONFIG 235, a subscription group 234, a registration 4,159 (39 topics).
# A subscription in a heartbeat is about 150 bytes, 1 object and 8 values; a queue in a lock batch
# 60 bytes, 1 object and 3 values; a topic in a registration about 180 bytes, 1 object, 8 values.
# The bounds keep the costliest accepted request (every object a separate consumer group, queue or
# topic to register) near 20 ms of the event loop on a 2-core machine (bench/bench_hostile.py).
_CLIENT_BODY: Final = RequestLimit(max_body=256 * _KIB, max_json_objects=1024, max_json_values=8192)
_SMALL_BODY: Final = RequestLimit(max_body=64 * _KIB, max_json_objects=256, max_json_values=2048)

DEFAULT_REQUEST_LIMITS: Final[Mapping[int, RequestLimit]] = MappingProxyType(
    {
        # about 1,000 subscriptions (400 times the largest captured heartbeat)
        RequestCode.HEART_BEAT: _CLIENT_BODY,
        # about 1,000 queues a batch
        RequestCode.LOCK_BATCH_MQ: _CLIENT_BODY,
        RequestCode.UNLOCK_BATCH_MQ: _CLIENT_BODY,
        RequestCode.CHECK_CLIENT_CONFIG: _SMALL_BODY,
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: _SMALL_BODY,
        RequestCode.QUERY_DATA_VERSION: _SMALL_BODY,
        RequestCode.UNREGISTER_CLIENT: _SMALL_BODY,
        # a broker's topic table: up to 4,096 topics in JSON (the compressed form is bounded by the
        # name server when it inflates it: NamesrvConfig.max_register_topics)
        RequestCode.REGISTER_BROKER: RequestLimit(
            max_body=2 * _MIB, max_json_objects=4112, max_json_values=41_000
        ),
    }
)
"""Request limits a server applies by default (``ServerConfig.request_limits``). Sends are bounded
by the broker's ``maxMessageSize`` (RocketMQ's own limit, 4 MiB), checked before decoding; codes
not listed are bounded only by the frame (16 MiB)."""


def peer_host(address: str) -> str:
    """The host part of ``"host:port"`` / ``"[v6]:port"``: who a peer is, whatever its port."""
    host, sep, _port = address.rpartition(":")
    return host if sep else address


class InputBudget:
    """Bytes held undecoded by all the connections of a server, against ``limit``."""

    __slots__ = ("limit", "used")

    def __init__(self, limit: int) -> None:
        if limit <= 0:
            raise ConfigError(f"the input budget must be positive, got {limit}")
        self.limit = limit
        self.used = 0

    def over(self) -> bool:
        return self.used > self.limit


class PeerLog:
    """Warnings about peers, at most one per peer host and kind every ``window`` seconds.

    The first event of a kind from a host is logged at WARNING; the ones after it within the
    window at DEBUG only, and counted: the next WARNING says how many there were. At most
    ``max_peers`` (host, kind) pairs are remembered (the oldest are forgotten first).

    >>> log = PeerLog(logging.getLogger("doc"), window=60.0)
    >>> log.report("10.0.0.1:5000", "frame", 0.0, "bad"), log.report("10.0.0.1:6000", "frame", 1.0, "bad")
    (True, False)
    >>> log.report("10.0.0.1:7000", "frame", 61.0, "bad frame"), log.suppressed("10.0.0.1", "frame")
    (True, 0)
    """

    __slots__ = ("_logger", "_seen", "max_peers", "window")

    def __init__(self, logger: logging.Logger, *, window: float = 60.0, max_peers: int = 4096) -> None:
        self._logger = logger
        self.window = window
        self.max_peers = max_peers
        self._seen: dict[tuple[str, str], list[float]] = {}  # (host, kind) -> [logged at, suppressed]

    def report(self, peer: str, kind: str, now: float, msg: str, *args: object) -> bool:
        """Log ``msg % args`` about ``peer`` (``"host:port"``); ``True`` if it went out at WARNING."""
        key = (peer_host(peer), kind)
        seen = self._seen.get(key)
        if seen is not None and now - seen[0] < self.window:
            seen[1] += 1
            self._logger.debug(msg, *args)
            return False
        suppressed = int(seen[1]) if seen is not None else 0
        if seen is None:
            if len(self._seen) >= self.max_peers:
                del self._seen[next(iter(self._seen))]
        else:
            del self._seen[key]  # re-insert: the dict stays ordered oldest first
        self._seen[key] = [now, 0]
        if suppressed:
            self._logger.warning(
                msg + " (and %d more like it from %s in the %.0fs before)",
                *args,
                suppressed,
                key[0],
                self.window,
            )
        else:
            self._logger.warning(msg, *args)
        return True

    def suppressed(self, host: str, kind: str) -> int:
        """Events of ``kind`` from ``host`` logged at DEBUG only since its last WARNING."""
        seen = self._seen.get((host, kind))
        return int(seen[1]) if seen is not None else 0
