"""Host addresses and the two kinds of RocketMQ message id.

**HostPort** is how rocketq writes the ``bornHost`` / ``storeHost`` of a message: an IP address
(IPv4 or IPv6 text, canonical form) and a port. A message records hosts as 4 + 4 bytes (IPv4
address, int32 port) or 16 + 4 bytes (IPv6), chosen per host by a sys-flag bit.

**Offset message id** (``offsetMsgId``; RocketMQ's ``MessageDecoder.createMessageId``): the store
host's address bytes, its port as int32, and the message's commit-log offset as int64, in
upper-case hex: 32 characters for an IPv4 store host, 56 for IPv6. It names the broker and the
record, so a client can fetch the message from it alone (``VIEW_MESSAGE_BY_ID``).

**Unique message id** (``UNIQ_KEY`` property, the "msgId" a Java producer returns; RocketMQ's
``MessageClientIDSetter``): upper-case hex of

======  =====================================================================
bytes   field
======  =====================================================================
4 / 16  the producer host's IP address (IPv4 or IPv6)
2       the producer's process id (low 16 bits)
4       a per-process salt (Java uses its class loader's identity hash)
4       milliseconds since the start of the current month (producer's time zone)
2       a per-process counter (low 16 bits), incremented for every id
======  =====================================================================

so 32 or 56 hex characters. :class:`UniqIdGenerator` makes them with the time passed in (the codec
has no clock); :func:`parse_uniq_id` takes them apart.

>>> make_offset_msg_id(HostPort("127.0.0.1", 10911), 333)
'7F00000100002A9F000000000000014D'
>>> parse_offset_msg_id("7F00000100002A9F000000000000014D")
(HostPort(ip='127.0.0.1', port=10911), 333)
"""

from __future__ import annotations

import ipaddress
import itertools
import struct
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from typing import Final

from rocketq.errors import ConfigError, RemoteProtocolError

__all__ = [
    "HostPort",
    "UniqIdGenerator",
    "UniqIdInfo",
    "make_offset_msg_id",
    "parse_offset_msg_id",
    "parse_uniq_id",
]

_PORT: Final = struct.Struct(">i")
_OFFSET: Final = struct.Struct(">q")
_UNIQ_TAIL: Final = struct.Struct(">HiIH")  # pid, salt, time offset, counter


@dataclass(frozen=True, slots=True)
class HostPort:
    """An IP address and port, as a message's born/store host.

    ``ip`` is canonical text (``"127.0.0.1"``, ``"fd00::2"``); IPv4 and IPv6 stay distinct
    (``is_ipv6``), which decides the sys-flag host bits and the width of ids. ``str()`` is
    ``ip:port`` (``[ip]:port`` for IPv6), the form the wire captures and logs use; :meth:`parse`
    reads it back. ``packed`` is the address bytes followed by the big-endian int32 port,
    exactly as a stored message holds the host.

    >>> h = HostPort.parse("[FD00:0:0::2]:10911")
    >>> h, str(h), h.is_ipv6, len(h.packed)
    (HostPort(ip='fd00::2', port=10911), '[fd00::2]:10911', True, 20)
    """

    ip: str
    port: int
    packed: bytes = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        try:
            address = ipaddress.ip_address(self.ip)
        except ValueError as exc:
            raise ConfigError(f"not an IP address: {self.ip!r}") from exc
        if not 0 <= self.port <= 0xFFFF:
            raise ConfigError(f"port out of range: {self.port}")
        object.__setattr__(self, "ip", str(address))
        object.__setattr__(self, "packed", address.packed + _PORT.pack(self.port))

    @property
    def is_ipv6(self) -> bool:
        """Whether the address is IPv6 (16 address bytes on the wire) rather than IPv4 (4)."""
        return len(self.packed) == 20

    def __str__(self) -> str:
        return f"[{self.ip}]:{self.port}" if self.is_ipv6 else f"{self.ip}:{self.port}"

    @classmethod
    def parse(cls, text: str) -> HostPort:
        """Read ``ip:port`` or ``[ipv6]:port`` (a leading ``/``, as Java prints addresses, is
        ignored)."""
        text = text.strip().removeprefix("/")
        host, sep, port = text.rpartition(":")
        if not sep or not port.isdigit():
            raise ConfigError(f"expected ip:port, got {text!r}")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        return cls(host, int(port))

    @classmethod
    def from_packed(cls, data: bytes | memoryview) -> HostPort:
        """Read a host from its stored form (4 or 16 address bytes, then an int32 port)."""
        if len(data) not in (8, 20):
            raise RemoteProtocolError(f"a host is 8 or 20 bytes, got {len(data)}")
        ip_bytes = bytes(data[:-4])
        (port,) = _PORT.unpack_from(data, len(data) - 4)
        ip = str(ipaddress.ip_address(ip_bytes))
        try:
            return cls(ip, port)
        except ConfigError as exc:
            raise RemoteProtocolError(f"bad host in message: {exc}") from None


def make_offset_msg_id(store_host: HostPort, commit_log_offset: int) -> str:
    """The offset message id of the message stored at ``commit_log_offset`` by ``store_host``."""
    return (store_host.packed + _OFFSET.pack(commit_log_offset)).hex().upper()


def _unhex(text: str, what: str, lengths: tuple[int, ...]) -> bytes:
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        raise RemoteProtocolError(f"{what} is not hex: {text!r}") from None
    if len(raw) not in lengths:
        raise RemoteProtocolError(
            f"{what} must be {' or '.join(str(2 * n) for n in lengths)} hex digits: {text!r}"
        )
    return raw


def parse_offset_msg_id(msg_id: str) -> tuple[HostPort, int]:
    """``(store host, commit-log offset)`` from an offset message id (32 or 56 hex digits)."""
    raw = _unhex(msg_id, "offset message id", (16, 28))
    (offset,) = _OFFSET.unpack_from(raw, len(raw) - 8)
    return HostPort.from_packed(raw[:-8]), offset


def _month_start_ms(now_ms: int, tz: tzinfo) -> tuple[int, int]:
    """Start of the month holding ``now_ms`` and start of the next one, in ``tz``, as epoch ms."""
    local = datetime.fromtimestamp(now_ms / 1000, tz)
    start = local.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    nxt = (
        start.replace(year=start.year + 1, month=1)
        if start.month == 12
        else start.replace(month=start.month + 1)
    )
    return round(start.timestamp() * 1000), round(nxt.timestamp() * 1000)


@dataclass(frozen=True, slots=True)
class UniqIdInfo:
    """The parts of a unique message id (see the module docstring)."""

    ip: str
    pid: int
    salt: int
    month_offset_ms: int
    counter: int

    def approx_timestamp(self, now_ms: int, tz: tzinfo = UTC) -> int:
        """When the id was made, as epoch ms, assuming it was made less than a month before
        ``now_ms`` in the producer's time zone ``tz`` (RocketMQ's ``getNearlyTimeFromID``: the
        offset counts from the start of the current month unless that lands at or after
        ``now_ms``, then from the start of the previous month)."""
        start, _ = _month_start_ms(now_ms, tz)
        if start + self.month_offset_ms >= now_ms:
            start, _ = _month_start_ms(start - 1, tz)
        return start + self.month_offset_ms


def parse_uniq_id(msg_id: str) -> UniqIdInfo:
    """Take a unique message id apart (32 hex digits for an IPv4 producer, 56 for IPv6).

    >>> parse_uniq_id("FD0000000000000000000000000000021B2E4E0E2F2A68BC77A00001")
    UniqIdInfo(ip='fd00::2', pid=6958, salt=1309552426, month_offset_ms=1757181856, counter=1)
    """
    raw = _unhex(msg_id, "unique message id", (16, 28))
    ip_len = len(raw) - 12
    pid, salt, offset, counter = _UNIQ_TAIL.unpack_from(raw, ip_len)
    return UniqIdInfo(str(ipaddress.ip_address(raw[:ip_len])), pid, salt, offset, counter)


class UniqIdGenerator:
    """Makes unique message ids (``UNIQ_KEY``) as RocketMQ's Java producer does.

    The time is passed to :meth:`next_id` (epoch milliseconds), so tests drive it; the month the
    offset counts from is taken in ``tz`` (Java uses the JVM's default zone; rocketq defaults to
    UTC so that ids do not depend on the machine). ``pid`` keeps its low 16 bits, ``salt`` its
    low 32 (Java: the class loader's identity hash); the counter starts at ``counter`` and keeps
    its low 16 bits on the wire. Safe to share between threads: the counter is an
    ``itertools.count`` and the month bounds are replaced as one tuple.

    >>> gen = UniqIdGenerator(ip="127.0.0.1", pid=4242, salt=0x1234ABCD)
    >>> gen.next_id(1795248381856), gen.next_id(1795248381857)
    ('7F00000110921234ABCD68BC77A00000', '7F00000110921234ABCD68BC77A10001')
    >>> parse_uniq_id("7F00000110921234ABCD68BC77A10001").approx_timestamp(1795248390000)
    1795248381857
    """

    __slots__ = ("_counter", "_month", "_prefix", "_tz")

    def __init__(self, *, ip: str | bytes, pid: int, salt: int, tz: tzinfo = UTC, counter: int = 0) -> None:
        try:
            address = ipaddress.ip_address(ip)
        except ValueError as exc:
            raise ConfigError(f"not an IP address: {ip!r}") from exc
        self._prefix = (address.packed + struct.pack(">HI", pid & 0xFFFF, salt & 0xFFFFFFFF)).hex().upper()
        self._tz = tz
        self._counter = itertools.count(counter)
        self._month = (0, 0)  # (start of the month, start of the next), epoch ms

    def next_id(self, now_ms: int) -> str:
        """A new id for a message created at ``now_ms`` (epoch milliseconds)."""
        head = self._head(now_ms)
        counter = next(self._counter)
        return f"{head}{counter & 0xFFFF:04X}"

    def next_ids(self, now_ms: int, count: int) -> tuple[str, list[int]]:
        """``count`` new ids for messages created at ``now_ms``, as their common first 28
        characters and each one's counter (the last 4 characters are ``f"{counter:04X}"``): what
        a writer that formats ids in bulk needs.

        >>> gen = UniqIdGenerator(ip="127.0.0.1", pid=4242, salt=0x1234ABCD)
        >>> gen.next_ids(1795248381856, 2)
        ('7F00000110921234ABCD68BC77A0', [0, 1])
        """
        head = self._head(now_ms)
        return head, [c & 0xFFFF for c in itertools.islice(self._counter, count)]

    def _head(self, now_ms: int) -> str:
        month = self._month
        if now_ms >= month[1] or now_ms < month[0] - 1_000_000:
            month = self._month = _month_start_ms(now_ms, self._tz)
        diff = now_ms - month[0]
        if -1_000_000 < diff < 0:  # the clock stepped back a little (NTP): Java clamps to 0
            diff = 0
        return f"{self._prefix}{diff & 0xFFFFFFFF:08X}"
