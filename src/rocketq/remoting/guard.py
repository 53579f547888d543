"""What keeps one hostile peer from stalling or exhausting a server: request limits, a shared
input budget, and warnings logged once per peer.

* :class:`RequestLimit` bounds the body of one request code (bytes, and for JSON bodies how
  densely it packs the objects and values that decoding will build), checked before any
  decoding with two or three ``bytes.count`` scans: a request over it is answered
  ``SYSTEM_ERROR`` at once.
  :data:`DEFAULT_REQUEST_LIMITS` holds the server's defaults (see ``docs/limits.md``).
* :class:`InputBudget` counts the bytes every connection of a server holds undecoded, and the
  bodies of large requests in flight (:mod:`rocketq.remoting.offload`); the connection whose
  data takes the total past the bound is closed, a large request over it answered
  ``SYSTEM_BUSY``.
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

__all__ = [
    "DEFAULT_REQUEST_LIMITS",
    "InputBudget",
    "PeerLog",
    "RequestLimit",
    "limits_check_from",
    "peer_host",
]

_KIB: Final = 1024

#: Bodies this small are never counted: their worst case costs well under a millisecond.
_COUNT_FROM: Final = 4 * _KIB
#: Containers and values any body may hold beyond its density allowance.
_SLACK: Final = 64
#: Bytes counted in one go (about 0.3 ms).
_COUNT_SLICE: Final = 1 << 20


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestLimit:
    """What the body of one request code may hold, checked before anything decodes it.

    * ``max_body``: bytes (``None``: only the frame bounds it, as in RocketMQ);
    * ``min_bytes_per_object`` / ``min_bytes_per_value``: how densely a JSON body may pack
      containers (``{`` and ``[``) and values (containers and ``,``) - at least one container per
      so many bytes, and one value per so many. Decoding builds a Python object per container
      and a reference per value, so density, not size, is what makes a body cost memory and time
      (a 16 MiB body of ``[{},{},...]`` is 5.6 million dicts). The bytes are counted wherever they
      are (inside strings too), so the counts are upper bounds. RocketMQ's serializer writes
      every field of a bean, so no body a RocketMQ peer writes comes near these densities;
    * ``max_json_objects`` / ``max_json_values``: absolute caps on the same counts (``None``: none).

    Bodies under 4 KiB are only checked against ``max_body``: their worst case costs well under a
    millisecond. Counting is two or three ``bytes.count`` scans (about 0.3 ms per MiB each); a
    server counts bodies over its offload threshold on its worker thread.
    """

    max_body: int | None = None
    min_bytes_per_object: int | None = None
    min_bytes_per_value: int | None = None
    max_json_objects: int | None = None
    max_json_values: int | None = None

    def __post_init__(self) -> None:
        for name in (
            "max_body",
            "min_bytes_per_object",
            "min_bytes_per_value",
            "max_json_objects",
            "max_json_values",
        ):
            value = getattr(self, name)
            if value is not None and value < (0 if name == "max_body" else 1):
                raise ConfigError(f"{name} must be positive, got {value}")

    @property
    def check_from(self) -> int:
        """The smallest body size this limit can refuse."""
        if self.max_body is not None and self.max_body < _COUNT_FROM:
            return self.max_body + 1
        return _COUNT_FROM

    def refusal(self, code: int, body: bytes) -> str | None:
        """Why a request of ``code`` with ``body`` is refused (a remark for the peer), or ``None``."""
        size = len(body)
        if self.max_body is not None and size > self.max_body:
            name = code_name(code, response=False)
            return f"{name} body of {size} bytes is over this server's limit of {self.max_body} bytes"
        if size < _COUNT_FROM:
            return None
        objects = _count(body, b"{") + _count(body, b"[")
        limit = _cap(size, self.min_bytes_per_object, self.max_json_objects)
        if limit is not None and objects > limit:
            name = code_name(code, response=False)
            return f"{name} body holds {objects} JSON objects and arrays, over this server's limit of {limit}"
        limit = _cap(size, self.min_bytes_per_value, self.max_json_values)
        if limit is not None:
            values = objects + _count(body, b",")
            if values > limit:
                name = code_name(code, response=False)
                return f"{name} body holds about {values} JSON values, over this server's limit of {limit}"
        return None


def _count(body: bytes, byte: bytes) -> int:
    """``body.count(byte)``, a slice at a time: on a worker thread, the GIL can pass between
    slices (one count of 16 MiB holds it for 5 ms)."""
    size = len(body)
    if size <= _COUNT_SLICE:
        return body.count(byte)
    return sum(body.count(byte, start, start + _COUNT_SLICE) for start in range(0, size, _COUNT_SLICE))


def _cap(size: int, min_bytes: int | None, absolute: int | None) -> int | None:
    """The count a body of ``size`` bytes may hold: one per ``min_bytes`` (and a little slack,
    for short bodies), at most ``absolute``."""
    by_density = None if min_bytes is None else size // min_bytes + _SLACK
    if absolute is None:
        return by_density
    return absolute if by_density is None else min(absolute, by_density)


def limits_check_from(limits: Mapping[int, RequestLimit]) -> int:
    """The smallest body size any of ``limits`` can refuse (bodies under it need no look-up)."""
    return min((limit.check_from for limit in limits.values()), default=1 << 62)


#: The densest JSON a RocketMQ peer writes in a request body, measured from RocketMQ 4.9.4's beans
#: as fastjson writes them (every field, no spaces): a producer group of a heartbeat,
#: ``{"groupName":"g"},``, is 18 bytes for one object and two values; a queue of a lock batch
#: ``{"brokerName":"b","queueId":0,"topic":"t"},`` 41 bytes; a subscription about 118 bytes for
#: three containers and ten values; a topic of a registration about 120 bytes for one object and
#: eight values. The densest values are the tag codes of one-character tags in a subscription's
#: ``codeSet``: ``97,``, three bytes. So one container per 16 bytes and one value per 3 refuse no
#: body a RocketMQ client or broker sends, at any size up to the frame, and cap what a hostile
#: 16 MiB body decodes to about 1 million objects (instead of 5.6 million).
_JSON_BODY: Final = RequestLimit(min_bytes_per_object=16, min_bytes_per_value=3)

DEFAULT_REQUEST_LIMITS: Final[Mapping[int, RequestLimit]] = MappingProxyType(
    dict.fromkeys(
        (
            RequestCode.HEART_BEAT,
            RequestCode.LOCK_BATCH_MQ,
            RequestCode.UNLOCK_BATCH_MQ,
            RequestCode.CHECK_CLIENT_CONFIG,
            RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
            RequestCode.QUERY_DATA_VERSION,
            RequestCode.REGISTER_BROKER,
        ),
        _JSON_BODY,
    )
)
"""Request limits a server applies by default (``ServerConfig.request_limits``): the JSON bodies
servers decode may be as large as the frame (16 MiB, RocketMQ's only bound on them) but no denser
than RocketMQ's serializer writes them. Sends are bounded by the broker's ``maxMessageSize``
(RocketMQ's own limit, 4 MiB), checked before decoding. Large bodies are decoded off the event loop
(:mod:`rocketq.remoting.offload`)."""


def peer_host(address: str) -> str:
    """The host part of ``"host:port"`` / ``"[v6]:port"``: who a peer is, whatever its port."""
    host, sep, _port = address.rpartition(":")
    return host if sep else address


class InputBudget:
    """Bytes held undecoded by all the connections of a server, and the bodies of its large
    requests in flight, against ``limit``."""

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
