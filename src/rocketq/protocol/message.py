"""RocketMQ's binary message formats: stored messages, batch send bodies, sys flags, compression.

Sans-I/O: bytes in, values out, and back. Three byte layouts live here (all big-endian):

**Stored message** - one commit-log record; a FOUND pull response body, a ``QUERY_MESSAGE`` /
``VIEW_MESSAGE_BY_ID`` response body and a ``CHECK_TRANSACTION_STATE`` request body are such records
back to back. Offsets are for IPv4 hosts (an IPv6 born host adds 12 bytes from ``STORE_TIMESTAMP``
on, an IPv6 store host 12 more from ``RECONSUME_TIMES`` on):

======  ====  =================================================================
offset  size  field
======  ====  =================================================================
0       4     store size: the whole record, these 4 bytes included
4       4     magic code: ``MESSAGE_MAGIC_CODE`` (0xDAA320A7; 5.x also ``_V2``)
8       4     body CRC: zlib CRC-32 of the body *as stored* ``& 0x7FFFFFFF``
12      4     queue id
16      4     flag (the producer's int, opaque to RocketMQ)
20      8     queue offset (index in the consume queue)       ``QUEUE_OFFSET_POSITION``
28      8     commit-log (physical) offset of this record     ``PHYSICAL_OFFSET_POSITION``
36      4     sys flag (:class:`MessageSysFlag`)
40      8     born timestamp (ms, the producer's clock)
48      8/20  born host: 4 or 16 address bytes (``BORNHOST_V6`` bit), int32 port
56      8     store timestamp (ms, the broker's clock)       :func:`store_timestamp_position`
64      8/20  store host: 4 or 16 address bytes (``STOREHOST_V6`` bit), int32 port
72      4     reconsume times
76      8     prepared transaction offset
84      4     body length N, then N body bytes (zlib data if the ``COMPRESSED`` bit is set)
88+N    1     topic length T (2 bytes with the V2 magic), then T bytes UTF-8
..      2     properties length P, then P bytes: :mod:`rocketq.protocol.properties` string
======  ====  =================================================================

**Batch send body** (``SEND_BATCH_MESSAGE`` request) - records back to back, each: int32 total size,
int32 magic (written 0), int32 body CRC (written 0), int32 flag, int32 body length + body, int16
properties length + properties. No topic: the request header carries it.

**Blank record** - the store pads the end of a commit-log file with int32 size + int32
``BLANK_MAGIC_CODE``; :func:`scan_stored` stops there.

The store appends by encoding outside its lock and patching under it: :func:`encode_message` with
zero offsets, then ``STORE_OFFSETS.pack_into(buf, record_start + QUEUE_OFFSET_POSITION,
queue_offset, commit_log_offset)`` (two adjacent int64s), as RocketMQ's ``CommitLog`` does.

Hosts are :class:`~rocketq.protocol.message_id.HostPort` values: IPv4 and IPv6 stay distinct and
:func:`encode_message` sets the two host bits of the sys flag from them.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum, IntEnum, IntFlag
from typing import Final

from mypy_extensions import mypyc_attr

from rocketq.errors import ConfigError, RemoteProtocolError
from rocketq.protocol.message_id import HostPort, make_offset_msg_id
from rocketq.protocol.properties import (
    KEY_SEPARATOR,
    MessageConst,
    properties_to_string,
    string_to_properties,
)

__all__ = [
    "BATCH_RECORD_OVERHEAD",
    "BLANK_MAGIC_CODE",
    "BODY_CRC_POSITION",
    "BORN_HOST_POSITION",
    "COMPRESS_BODY_OVER",
    "COMPRESS_LEVEL",
    "MAX_INFLATED_BODY",
    "MAX_INFLATED_TOTAL",
    "MAX_PROPERTIES_LENGTH",
    "MAX_TOPIC_LENGTH_V1",
    "MESSAGE_MAGIC_CODE",
    "MESSAGE_MAGIC_CODE_V2",
    "PHYSICAL_OFFSET_POSITION",
    "QUEUE_OFFSET_POSITION",
    "STORE_OFFSETS",
    "SYS_FLAG_POSITION",
    "UNSPECIFIED_HOST",
    "CompressionType",
    "Message",
    "MessageExt",
    "MessageSysFlag",
    "ScanResult",
    "ScanStop",
    "batch_properties",
    "batch_record_count",
    "body_crc",
    "compress_body",
    "decode_batch",
    "decode_message",
    "decode_messages",
    "decompress_body",
    "encode_batch",
    "encode_message",
    "encode_message_ext",
    "encode_stored_batch",
    "maybe_compress",
    "scan_stored",
    "store_timestamp_position",
    "stored_size",
]

MESSAGE_MAGIC_CODE: Final = -626843481
"""0xDAA320A7 as a signed int32: a stored message with a 1-byte topic length (every 4.x record)."""
MESSAGE_MAGIC_CODE_V2: Final = -626843477
"""0xDAA320AB: RocketMQ 5.x's record with a 2-byte topic length, used for topics over 127 bytes."""
BLANK_MAGIC_CODE: Final = -875286124
"""0xCBD43194: the blank record padding the end of a commit-log file."""

BODY_CRC_POSITION: Final = 8
QUEUE_OFFSET_POSITION: Final = 20
"""Offset of the int64 queue offset inside a stored record."""
PHYSICAL_OFFSET_POSITION: Final = 28
"""Offset of the int64 commit-log offset inside a stored record (right after the queue offset)."""
SYS_FLAG_POSITION: Final = 36
BORN_HOST_POSITION: Final = 48

STORE_OFFSETS: Final = struct.Struct(">qq")
"""Queue offset and commit-log offset, adjacent at ``QUEUE_OFFSET_POSITION``: patch both with one
``STORE_OFFSETS.pack_into(buf, start + QUEUE_OFFSET_POSITION, queue_offset, commit_log_offset)``."""

MAX_TOPIC_LENGTH_V1: Final = 127
"""Longest topic (UTF-8 bytes) a V1 record holds; Java reads the length byte as signed."""
MAX_PROPERTIES_LENGTH: Final = 32767
"""Longest properties string (UTF-8 bytes): the length is a signed int16 (``Short.MAX_VALUE``)."""

COMPRESS_BODY_OVER: Final = 4096
"""The Java producer compresses a (non-batch) body of at least this many bytes
(``DefaultMQProducer.compressMsgBodyOverHowmuch``, 4 KiB)."""
COMPRESS_LEVEL: Final = 5
"""zlib level the Java producer uses (``rocketmq.message.compressLevel`` default)."""

MAX_INFLATED_BODY: Final = 16 * 1024 * 1024
"""Ours: the largest body a compressed one may inflate to (a deflate bomb is refused there). A Java
producer refuses a body over its ``maxMessageSize`` (4 MiB) before compressing it, and no plain
body can outgrow a frame (16 MiB, RocketMQ's ``frameMaxLength``), so neither can an inflated one."""

MAX_INFLATED_TOTAL: Final = 128 * 1024 * 1024
"""Ours: the most bytes :func:`decode_messages` inflates for one call (one pull answer): 32
messages (the Java consumer's ``pullBatchSize``) at 4 MiB each (``maxMessageSize``)."""

BATCH_RECORD_OVERHEAD: Final = 22
"""Bytes of one batch record besides body and properties (4 ints + body length + int16)."""


class MessageSysFlag(IntFlag):
    """Bits of a message's ``sysFlag`` (RocketMQ's ``MessageSysFlag``).

    The transaction type is the two-bit field ``sys_flag & TRANSACTION_ROLLBACK_TYPE`` (0 = not a
    transaction message, 4 prepared/half, 8 commit, 12 rollback); the compression type is
    ``(sys_flag & COMPRESSION_TYPE_MASK) >> 8`` (:class:`CompressionType`; 0 means zlib for old
    producers). The producer's sysFlag in the send header uses the same bits; the pull request's
    sysFlag is a different field (``PullSysFlag``).
    """

    COMPRESSED = 0x1
    MULTI_TAGS = 0x2
    TRANSACTION_NOT_TYPE = 0x0
    TRANSACTION_PREPARED_TYPE = 0x4
    TRANSACTION_COMMIT_TYPE = 0x8
    TRANSACTION_ROLLBACK_TYPE = 0xC
    BORNHOST_V6 = 0x10
    STOREHOST_V6 = 0x20
    NEED_UNWRAP = 0x40
    INNER_BATCH = 0x80
    COMPRESSION_LZ4_TYPE = 0x100
    COMPRESSION_ZSTD_TYPE = 0x200
    COMPRESSION_ZLIB_TYPE = 0x300
    COMPRESSION_TYPE_MASK = 0x700

    @staticmethod
    def transaction_type(sys_flag: int) -> int:
        """The transaction bits of ``sys_flag`` (one of the four ``TRANSACTION_*_TYPE`` values)."""
        return sys_flag & 0xC

    @staticmethod
    def with_transaction_type(sys_flag: int, tran_type: int) -> int:
        """``sys_flag`` with its transaction bits replaced by ``tran_type``."""
        return (sys_flag & ~0xC) | (tran_type & 0xC)


class CompressionType(IntEnum):
    """Body compression named by bits 8-10 of the sys flag (RocketMQ's ``CompressionType``)."""

    LZ4 = 1
    ZSTD = 2
    ZLIB = 3

    @classmethod
    def of_sys_flag(cls, sys_flag: int) -> CompressionType:
        """The compression of a body whose sys flag has the ``COMPRESSED`` bit; 0 means zlib."""
        value = (sys_flag & 0x700) >> 8
        if value == 0:
            return cls.ZLIB
        try:
            return cls(value)
        except ValueError:
            raise RemoteProtocolError(f"unknown compression type {value} in sysFlag {sys_flag}") from None


UNSPECIFIED_HOST: Final = HostPort("0.0.0.0", 0)
"""The host of a message that has none yet (a Java ``null`` address)."""


# ---------------------------------------------------------------------------------------- values


# compiled by mypyc: the client's Message (interpreted) subclasses it
@mypyc_attr(allow_interpreted_subclasses=True)
@dataclass(slots=True)
class Message:
    """What a producer sends: topic, body, the producer's ``flag`` and properties (Java's ``Message``).

    Also what a batch send body holds (:func:`decode_batch` leaves ``topic`` empty: the batch's
    topic is in the request header). ``tags`` and ``keys`` read and write the ``TAGS`` / ``KEYS``
    properties; several keys are joined with a space.

    Mutable, like Java's: clients annotate messages in place (``MIN_OFFSET`` on receipt, the real
    topic restored on a retry); copy with :func:`dataclasses.replace` where sharing matters.
    """

    topic: str
    body: bytes = b""
    flag: int = 0
    properties: dict[str, str] = field(default_factory=dict)

    @property
    def tags(self) -> str | None:
        """The ``TAGS`` property (``None`` when absent)."""
        return self.properties.get(MessageConst.TAGS)

    @tags.setter
    def tags(self, value: str | None) -> None:
        self._set(MessageConst.TAGS, value)

    @property
    def keys(self) -> str | None:
        """The ``KEYS`` property as stored: keys joined by a space (``None`` when absent)."""
        return self.properties.get(MessageConst.KEYS)

    @keys.setter
    def keys(self, value: str | Iterable[str] | None) -> None:
        if value is not None and not isinstance(value, str):
            value = KEY_SEPARATOR.join(value)
        self._set(MessageConst.KEYS, value)

    @property
    def key_list(self) -> list[str]:
        """The keys split on the separator (empty when there are none)."""
        keys = self.properties.get(MessageConst.KEYS)
        return [k for k in keys.split(KEY_SEPARATOR) if k] if keys else []

    @property
    def delay_time_level(self) -> int:
        """The ``DELAY`` property as an int (0 = not delayed; RocketMQ's levels start at 1).

        A value that is not a number reads as 0 rather than failing (Java would throw)."""
        value = self.properties.get(MessageConst.DELAY)
        if value is None:
            return 0
        try:
            return int(value)
        except ValueError:
            return 0

    @delay_time_level.setter
    def delay_time_level(self, level: int) -> None:
        self.properties[MessageConst.DELAY] = str(level)

    @property
    def wait_store_msg_ok(self) -> bool:
        """The ``WAIT`` property: whether the producer waits for the store; ``True`` when absent,
        as in Java (``isWaitStoreMsgOK``)."""
        return self.properties.get(MessageConst.WAIT) != "false"

    @wait_store_msg_ok.setter
    def wait_store_msg_ok(self, wait: bool) -> None:
        self.properties[MessageConst.WAIT] = "true" if wait else "false"

    def _set(self, name: str, value: str | None) -> None:
        if value is None:
            self.properties.pop(name, None)
        else:
            self.properties[name] = value


@mypyc_attr(allow_interpreted_subclasses=True)
@dataclass(slots=True)
class MessageExt(Message):
    """A stored message as a consumer or the store sees it (Java's ``MessageExt`` /
    ``MessageClientExt``).

    ``body`` is decompressed by :func:`decode_messages` unless asked not to, while ``sys_flag`` and
    ``store_size`` still describe the stored form (as in Java). ``store_size`` and ``body_crc`` are
    informative: :func:`encode_message_ext` recomputes both. Timestamps are epoch milliseconds.
    ``msg_id`` is the producer's unique id when the message has one, else the offset id.

    ``stored_properties`` is the property string exactly as decoded. A stored string can hold what
    a map cannot (the broker appends ``CLUSTER`` and ``WAIT`` to a batch message's own properties,
    so ``WAIT`` appears twice); :func:`encode_message_ext` writes it back unchanged as long as it
    still parses to ``properties`` in the same order, so decoding and re-encoding gives the
    stored bytes back exactly.
    """

    queue_id: int = 0
    queue_offset: int = 0
    commit_log_offset: int = 0
    store_size: int = 0
    body_crc: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: HostPort = UNSPECIFIED_HOST
    store_timestamp: int = 0
    store_host: HostPort = UNSPECIFIED_HOST
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    stored_properties: str = field(default="", repr=False, compare=False)

    @property
    def offset_msg_id(self) -> str:
        """Store host + commit-log offset in hex: finds this record on its broker."""
        return make_offset_msg_id(self.store_host, self.commit_log_offset)

    @property
    def msg_id(self) -> str:
        """The ``UNIQ_KEY`` property if present, else :attr:`offset_msg_id` (Java's
        ``MessageClientExt.getMsgId``)."""
        uniq = self.properties.get(MessageConst.UNIQ_KEY)
        return uniq if uniq is not None else self.offset_msg_id


# ---------------------------------------------------------------------------------- compression


def body_crc(body: bytes | bytearray | memoryview) -> int:
    """The body CRC RocketMQ stores: zlib CRC-32 ``& 0x7FFFFFFF`` (``UtilAll.crc32``)."""
    return zlib.crc32(body) & 0x7FFFFFFF


def compress_body(body: bytes, level: int = COMPRESS_LEVEL) -> bytes:
    """zlib-compress a body as the Java producer does (a zlib stream, ``Deflater(level)``)."""
    return zlib.compress(body, level)


def decompress_body(body: bytes, sys_flag: int, *, max_size: int = MAX_INFLATED_BODY) -> bytes:
    """The plain body of a stored body: inflated if ``sys_flag`` has the ``COMPRESSED`` bit.

    Only zlib is available (RocketMQ 4.9.4 producers only write zlib); LZ4 and ZSTD bodies raise
    :class:`~rocketq.errors.RemoteProtocolError`, as do a corrupt or truncated zlib stream and one
    that inflates past ``max_size`` bytes (inflating stops there: a deflate bomb costs at most
    ``max_size`` bytes and the time to make them).
    """
    if not sys_flag & 0x1:
        return body
    kind = CompressionType.of_sys_flag(sys_flag)
    if kind is not CompressionType.ZLIB:
        raise RemoteProtocolError(f"cannot decompress a {kind.name} message body (only zlib is supported)")
    inflater = zlib.decompressobj()
    try:
        plain = inflater.decompress(body, max_size + 1)
    except zlib.error:
        raise RemoteProtocolError("corrupt zlib message body: the stream does not inflate") from None
    if len(plain) > max_size:
        raise RemoteProtocolError(f"compressed message body inflates past {max_size} bytes")
    if not inflater.eof:
        raise RemoteProtocolError("corrupt zlib message body: the stream is truncated")
    return plain


def maybe_compress(
    body: bytes, *, threshold: int = COMPRESS_BODY_OVER, level: int = COMPRESS_LEVEL
) -> tuple[bytes, int]:
    """``(body to send, sys-flag bits to add)``: a body of ``threshold`` bytes or more is zlib
    compressed and flagged ``COMPRESSED | COMPRESSION_ZLIB_TYPE``, as the Java producer does
    (batches are never compressed)."""
    if len(body) >= threshold:
        return compress_body(body, level), 0x1 | 0x300
    return body, 0


# ------------------------------------------------------------------------------- stored message

_HOST_LEN = (8, 20)
_FIXED: Final = tuple(
    struct.Struct(f">iiiiiqqiq{_HOST_LEN[(bits >> 4) & 1]}sq{_HOST_LEN[(bits >> 5) & 1]}siqi")
    for bits in (0x00, 0x10, 0x20, 0x30)
)
"""Everything from store size to body length, one struct per (born, store) host family pair,
indexed by ``(sys_flag >> 4) & 3``."""
_V4: Final = _FIXED[0]
_U8: Final = struct.Struct(">B")
_U16: Final = struct.Struct(">H")
_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")
_HEAD: Final = struct.Struct(">ii")
_MIN_RECORD: Final = _V4.size + 1 + 2
_MAGIC_CODES: Final = (MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2)

_host_cache: dict[bytes, HostPort] = {}
_HOST_CACHE_MAX: Final = 4096


def _host(raw: bytes) -> HostPort:
    host = _host_cache.get(raw)
    if host is None:
        host = HostPort.from_packed(raw)
        if len(_host_cache) >= _HOST_CACHE_MAX:
            _host_cache.clear()
        _host_cache[raw] = host
    return host


def store_timestamp_position(sys_flag: int) -> int:
    """Offset of the int64 store timestamp in a record: 56, or 68 with an IPv6 born host."""
    return 68 if sys_flag & 0x10 else 56


def stored_size(sys_flag: int, body_length: int, topic_length: int, properties_length: int) -> int:
    """Bytes of a V1 stored record (RocketMQ's ``calMsgLength``), host widths from ``sys_flag``."""
    return (
        _FIXED[(sys_flag >> 4) & 3].size
        + max(body_length, 0)
        + 1
        + topic_length
        + 2
        + max(properties_length, 0)
    )


def _decode_at(
    buf: bytes, pos: int, end: int, decompress: bool, read_body: bool, inflate_budget: list[int]
) -> tuple[MessageExt, int]:
    """Decode the record at ``pos`` (``buf[pos:end]`` holds at least its start); return it and the
    offset just past it."""
    if end - pos < _MIN_RECORD:
        raise RemoteProtocolError(
            f"message at byte {pos} truncated: {end - pos} bytes left, a record needs {_MIN_RECORD}+"
        )
    (size, magic, crc, queue_id, flag, queue_offset, phys, sys_flag, born_ts, born, store_ts, store,
     reconsume, prepared, body_len) = _V4.unpack_from(buf, pos)  # fmt: skip
    if magic not in _MAGIC_CODES:
        raise RemoteProtocolError(f"bad magic code 0x{magic & 0xFFFFFFFF:08X} in message at byte {pos}")
    rec_end = pos + size
    if size < _MIN_RECORD or rec_end > end:
        raise RemoteProtocolError(
            f"message at byte {pos} claims {size} bytes but {end - pos} are left"
            if rec_end > end
            else f"message at byte {pos} claims an impossible size {size}"
        )
    if sys_flag & 0x30:
        fixed = _FIXED[(sys_flag >> 4) & 3]
        if size < fixed.size + 3:
            raise RemoteProtocolError(f"message at byte {pos} claims an impossible size {size}")
        (size, magic, crc, queue_id, flag, queue_offset, phys, sys_flag, born_ts, born, store_ts, store,
         reconsume, prepared, body_len) = fixed.unpack_from(buf, pos)  # fmt: skip
        p = pos + fixed.size
    else:
        p = pos + 88
    body_end = p + body_len
    if body_len < 0 or body_end + 3 > rec_end:
        raise RemoteProtocolError(
            f"message at byte {pos}: body length {body_len} overruns its {size}-byte record"
        )
    if magic == MESSAGE_MAGIC_CODE:
        topic_start = body_end + 1
        topic_end = topic_start + buf[body_end]
    else:
        topic_start = body_end + 2
        topic_end = topic_start + _U16.unpack_from(buf, body_end)[0]
    if topic_end + 2 > rec_end:
        raise RemoteProtocolError(f"message at byte {pos}: topic overruns its {size}-byte record")
    (props_len,) = _I16.unpack_from(buf, topic_end)
    if topic_end + 2 + props_len != rec_end:
        raise RemoteProtocolError(
            f"message at byte {pos}: fields add up to {topic_end + 2 + props_len - pos} bytes,"
            f" store size says {size}"
        )
    try:
        topic = buf[topic_start:topic_end].decode()
    except UnicodeDecodeError as exc:
        raise RemoteProtocolError(
            f"message at byte {pos}: invalid UTF-8 in its topic at byte {topic_start + exc.start}"
        ) from None
    try:
        props_text = buf[topic_end + 2 : rec_end].decode() if props_len else ""
    except UnicodeDecodeError as exc:
        raise RemoteProtocolError(
            f"message at byte {pos}: invalid UTF-8 in its properties at byte {topic_end + 2 + exc.start}"
        ) from None
    properties = string_to_properties(props_text) if props_len else {}
    if read_body:
        body = buf[p:body_end]
        if decompress and sys_flag & 0x1 and body:  # Java leaves an empty body alone
            left = inflate_budget[0]
            try:
                body = decompress_body(body, sys_flag, max_size=min(MAX_INFLATED_BODY, left))
            except RemoteProtocolError as exc:
                if left < MAX_INFLATED_BODY and "inflates past" in str(exc):
                    raise RemoteProtocolError(
                        f"message at byte {pos}: compressed bodies inflate past {inflate_budget[1]} bytes "
                        "in all"
                    ) from None
                raise RemoteProtocolError(f"message at byte {pos}: {exc}") from None
            inflate_budget[0] = left - len(body)
    else:
        body = b""
    born_host = _host_cache.get(born) or _host(born)
    store_host = _host_cache.get(store) or _host(store)
    msg = MessageExt(
        topic, body, flag, properties, queue_id, queue_offset, phys, size, crc, sys_flag,
        born_ts, born_host, store_ts, store_host, reconsume, prepared, props_text,
    )  # fmt: skip
    return msg, rec_end


def decode_messages(
    body: bytes | bytearray | memoryview,
    *,
    decompress: bool = True,
    read_body: bool = True,
    max_inflated: int = MAX_INFLATED_TOTAL,
) -> list[MessageExt]:
    """Every stored message in ``body`` (a FOUND pull body, query/view results, commit-log bytes).

    ``decompress`` inflates compressed bodies as the Java client does; ``read_body=False`` skips
    bodies (``body`` is then ``b""``, so such messages cannot be re-encoded), for index
    rebuilding. Anything that is not a whole number of well-formed records - a bad magic code, a
    size running past the end, fields that do not add up to the store size, invalid UTF-8 -
    raises :class:`~rocketq.errors.RemoteProtocolError` naming the byte offset (Java's client
    silently drops the rest instead). Use :func:`scan_stored` to find where a damaged commit log
    stops being valid. Inflating is bounded: one body at most :data:`MAX_INFLATED_BODY` bytes, all
    of them together at most ``max_inflated``.
    """
    buf = body if type(body) is bytes else bytes(body)
    end = len(buf)
    pos = 0
    out: list[MessageExt] = []
    append = out.append
    budget = [max_inflated, max_inflated]  # bytes left to inflate, and the bound (for the error)
    while pos < end:
        msg, pos = _decode_at(buf, pos, end, decompress, read_body, budget)
        append(msg)
    return out


def decode_message(
    data: bytes | bytearray | memoryview, offset: int = 0, *, decompress: bool = True
) -> tuple[MessageExt, int]:
    """The one stored message starting at ``offset`` in ``data``, and the offset just past it."""
    buf = data if type(data) is bytes else bytes(data)
    if not 0 <= offset <= len(buf):
        raise RemoteProtocolError(f"offset {offset} outside {len(buf)} bytes")
    return _decode_at(buf, offset, len(buf), decompress, True, [MAX_INFLATED_BODY, MAX_INFLATED_BODY])


def _properties_bytes(properties: Mapping[str, str] | str | bytes) -> bytes:
    # A lone surrogate (only in a str built by hand: decoders replace them) becomes "?", as Java's
    # UTF-8 encoder writes it.
    if isinstance(properties, bytes):
        data = properties
    elif isinstance(properties, str):
        data = properties.encode("utf-8", "replace")
    else:
        data = properties_to_string(properties).encode("utf-8", "replace")
    if len(data) > MAX_PROPERTIES_LENGTH:
        raise ConfigError(f"message properties are {len(data)} bytes, at most {MAX_PROPERTIES_LENGTH} fit")
    return data


def encode_message(
    *,
    topic: str,
    body: bytes,
    properties: Mapping[str, str] | str | bytes = "",
    queue_id: int = 0,
    flag: int = 0,
    sys_flag: int = 0,
    born_timestamp: int = 0,
    born_host: HostPort = UNSPECIFIED_HOST,
    store_timestamp: int = 0,
    store_host: HostPort = UNSPECIFIED_HOST,
    reconsume_times: int = 0,
    prepared_transaction_offset: int = 0,
    queue_offset: int = 0,
    commit_log_offset: int = 0,
) -> bytes:
    """One stored record, byte for byte as RocketMQ's ``CommitLog`` writes it.

    ``body`` is written as given (already compressed when ``sys_flag`` says so); the body CRC and
    store size are computed. ``properties`` is a map (written in its iteration order) or an
    already-joined property string (``str`` or UTF-8 ``bytes``, as a send header carries it).
    The ``BORNHOST_V6`` / ``STOREHOST_V6`` bits of ``sys_flag`` are set from the hosts. A topic up
    to 127 UTF-8 bytes gets the V1 magic (every 4.x reader); a longer one the 5.x V2 magic.

    For the store's append path, encode with zero offsets outside the lock and patch
    ``STORE_OFFSETS`` at ``QUEUE_OFFSET_POSITION`` (and, if it must be the time of the append,
    the int64 at :func:`store_timestamp_position`) in place under it.

    Raises :class:`~rocketq.errors.ConfigError` for a topic over 65535 bytes, properties over
    32767 bytes, or a number that does not fit its int32/int64 field.
    """
    topic_bytes = topic.encode("utf-8", "replace")
    props = _properties_bytes(properties)
    sys_flag = (sys_flag & ~0x30) | (0x10 if born_host.is_ipv6 else 0) | (0x20 if store_host.is_ipv6 else 0)
    fixed = _FIXED[(sys_flag >> 4) & 3]
    topic_len = len(topic_bytes)
    if topic_len <= MAX_TOPIC_LENGTH_V1:
        magic = MESSAGE_MAGIC_CODE
        topic_head = _U8.pack(topic_len)
    elif topic_len <= 0xFFFF:
        magic = MESSAGE_MAGIC_CODE_V2
        topic_head = _U16.pack(topic_len)
    else:
        raise ConfigError(f"topic is {topic_len} UTF-8 bytes, too long for a message record")
    size = fixed.size + len(body) + len(topic_head) + topic_len + 2 + len(props)
    try:
        head = fixed.pack(
            size, magic, zlib.crc32(body) & 0x7FFFFFFF, queue_id, flag, queue_offset, commit_log_offset,
            sys_flag, born_timestamp, born_host.packed, store_timestamp, store_host.packed,
            reconsume_times, prepared_transaction_offset, len(body),
        )  # fmt: skip
    except struct.error as exc:
        raise ConfigError(f"a message field does not fit its int32/int64 slot: {exc}") from None
    return b"".join((head, body, topic_head, topic_bytes, _I16.pack(len(props)), props))


def encode_message_ext(msg: MessageExt, *, compress: bool = True) -> bytes:
    """The stored record of a :class:`MessageExt` (Java's ``MessageDecoder.encode``).

    With ``compress`` (the default, matching :func:`decode_messages`' default of decompressing),
    a message whose sys flag has the ``COMPRESSED`` bit gets its body zlib-compressed at
    ``COMPRESS_LEVEL`` first; pass ``compress=False`` for a message decoded with
    ``decompress=False``. ``store_size`` and ``body_crc`` are recomputed, not copied.
    """
    body = msg.body
    if compress and msg.sys_flag & 0x1 and body:
        kind = CompressionType.of_sys_flag(msg.sys_flag)
        if kind is not CompressionType.ZLIB:
            raise ConfigError(f"cannot compress a body with {kind.name} (only zlib is supported)")
        body = compress_body(body)
    properties: Mapping[str, str] | str = msg.properties
    stored = msg.stored_properties
    if stored and list(string_to_properties(stored).items()) == list(msg.properties.items()):
        properties = stored
    return encode_message(
        topic=msg.topic,
        body=body,
        properties=properties,
        queue_id=msg.queue_id,
        flag=msg.flag,
        sys_flag=msg.sys_flag,
        born_timestamp=msg.born_timestamp,
        born_host=msg.born_host,
        store_timestamp=msg.store_timestamp,
        store_host=msg.store_host,
        reconsume_times=msg.reconsume_times,
        prepared_transaction_offset=msg.prepared_transaction_offset,
        queue_offset=msg.queue_offset,
        commit_log_offset=msg.commit_log_offset,
    )


# ---------------------------------------------------------------------------------- batch body

_BATCH_HEAD: Final = struct.Struct(">iiiii")


def encode_batch(messages: Iterable[Message]) -> bytes:
    """A ``SEND_BATCH_MESSAGE`` body (Java's ``MessageDecoder.encodeMessages``): per message its
    flag, body and properties; magic and CRC are written as 0, the topic is left out."""
    parts: list[bytes] = []
    for msg in messages:
        props = _properties_bytes(msg.properties)
        body = msg.body
        try:
            head = _BATCH_HEAD.pack(BATCH_RECORD_OVERHEAD + len(body) + len(props), 0, 0, msg.flag, len(body))
        except struct.error as exc:
            raise ConfigError(f"a batch message field does not fit its int32 slot: {exc}") from None
        parts.append(head)
        parts.append(body)
        parts.append(_I16.pack(len(props)))
        parts.append(props)
    return b"".join(parts)


def batch_record_count(body: bytes | bytearray | memoryview, most: int) -> int:
    """How many records a SEND_BATCH_MESSAGE body holds, counted by their size fields only, up
    to ``most + 1`` (the walk stops there, and at a size that cannot be a record's: the decoders
    report those). What deciding how to handle a batch needs, at about 0.2 µs a record.

    >>> batch_record_count(encode_batch([Message("T", b"x")] * 3), 10), batch_record_count(b"", 10)
    (3, 0)
    """
    end = len(body)
    pos = count = 0
    while end - pos >= 4 and count <= most:
        (total,) = _I32.unpack_from(body, pos)
        if total < BATCH_RECORD_OVERHEAD:
            break
        count += 1
        pos += total
    return count


def _batch_records(buf: bytes, max_messages: int | None) -> Iterator[tuple[int, int, int, int]]:
    """``(record start, flag, body end, record end)`` for each record of a batch body, checked;
    the body starts at ``record start + 20``, the properties at ``body end + 2``."""
    end = len(buf)
    pos = 0
    if max_messages is not None and end // BATCH_RECORD_OVERHEAD > max_messages:
        count = 0  # counted before any work, so a refused batch costs one pass over the sizes
        while pos < end and end - pos >= 4:
            count += 1
            if count > max_messages:
                raise RemoteProtocolError(f"batch holds more than {max_messages} messages")
            (total,) = _I32.unpack_from(buf, pos)
            if total < BATCH_RECORD_OVERHEAD:
                break  # malformed: the checked walk below says where
            pos += total
        pos = 0
    while pos < end:
        if end - pos < BATCH_RECORD_OVERHEAD:
            raise RemoteProtocolError(f"batch record at byte {pos} truncated: {end - pos} bytes left")
        total, _magic, _crc, flag, body_len = _BATCH_HEAD.unpack_from(buf, pos)
        rec_end = pos + total
        body_end = pos + 20 + body_len
        if total < BATCH_RECORD_OVERHEAD or rec_end > end or body_len < 0 or body_end + 2 > rec_end:
            raise RemoteProtocolError(
                f"batch record at byte {pos}: size {total} / body length {body_len} do not fit"
            )
        (props_len,) = _I16.unpack_from(buf, body_end)
        if body_end + 2 + props_len != rec_end:
            raise RemoteProtocolError(f"batch record at byte {pos}: fields do not add up to its size {total}")
        yield pos, flag, body_end, rec_end
        pos = rec_end


def _record_properties(buf: bytes, pos: int, body_end: int, rec_end: int) -> dict[str, str]:
    try:
        return string_to_properties(buf[body_end + 2 : rec_end].decode())
    except UnicodeDecodeError as exc:
        at = body_end + 2 + exc.start
        raise RemoteProtocolError(
            f"batch record at byte {pos}: invalid UTF-8 in its properties at byte {at}"
        ) from None


def decode_batch(
    body: bytes | bytearray | memoryview, topic: str = "", *, max_messages: int | None = None
) -> list[Message]:
    """The messages of a ``SEND_BATCH_MESSAGE`` body, each with ``topic`` (from the request header).

    Raises :class:`~rocketq.errors.RemoteProtocolError` when a record's lengths do not add up to
    its total size or run past the end, its properties are not UTF-8, or the body holds more than
    ``max_messages`` records (counted first, before any is decoded).
    """
    buf = body if type(body) is bytes else bytes(body)
    return [
        Message(topic, buf[pos + 20 : body_end], flag, _record_properties(buf, pos, body_end, rec_end))
        for pos, flag, body_end, rec_end in _batch_records(buf, max_messages)
    ]


def batch_properties(
    body: bytes | bytearray | memoryview, *, max_messages: int | None = None
) -> list[dict[str, str]]:
    """The properties of each message of a ``SEND_BATCH_MESSAGE`` body: :func:`decode_batch`'s
    checks and errors without copying the bodies (the broker needs only the tags)."""
    buf = body if type(body) is bytes else bytes(body)
    return [
        _record_properties(buf, pos, body_end, rec_end)
        for pos, _flag, body_end, rec_end in _batch_records(buf, max_messages)
    ]


def encode_stored_batch(
    batch_body: bytes | bytearray | memoryview,
    *,
    topic: str,
    queue_id: int,
    sys_flag: int,
    born_timestamp: int,
    born_host: HostPort,
    store_timestamp: int,
    store_host: HostPort,
    reconsume_times: int = 0,
    batch_properties: Mapping[str, str] | str = "",
    max_messages: int | None = None,
) -> list[bytes]:
    """The stored records of a ``SEND_BATCH_MESSAGE`` body, as RocketMQ's store turns a batch
    into commit-log records (``CommitLog.MessageExtEncoder.encode(MessageExtBatch)``).

    Each record keeps its own flag, body and property bytes *verbatim*; the batch's properties
    (the request header's properties plus the ``CLUSTER`` the broker adds - Java writes that map
    in ``HashMap`` order, see :func:`~rocketq.protocol.properties.java_hashmap_order`) are
    appended after a ``\\x02`` (unless the record's own string already ends with one). Topic,
    queue id, sys flag, timestamps, hosts and reconsume times are the batch's; the prepared
    transaction offset is 0 (batches are never transactional). Offsets are left 0: the store
    patches ``STORE_OFFSETS`` in each record at append time. Raises
    :class:`~rocketq.errors.RemoteProtocolError` for a malformed batch body and
    :class:`~rocketq.errors.ConfigError` when a record's properties grow too long.
    """
    buf = batch_body if type(batch_body) is bytes else bytes(batch_body)
    extra = _properties_bytes(batch_properties)
    records: list[bytes] = []
    for pos, flag, body_end, rec_end in _batch_records(buf, max_messages):
        own = buf[body_end + 2 : rec_end]
        if own and extra:
            props = own + extra if own.endswith(b"\x02") else b"\x02".join((own, extra))
        else:
            props = own or extra
        records.append(
            encode_message(
                topic=topic,
                body=buf[pos + 20 : body_end],
                properties=props,
                queue_id=queue_id,
                flag=flag,
                sys_flag=sys_flag,
                born_timestamp=born_timestamp,
                born_host=born_host,
                store_timestamp=store_timestamp,
                store_host=store_host,
                reconsume_times=reconsume_times,
            )
        )
    return records


# ------------------------------------------------------------------------------- recovery scan


class ScanStop(Enum):
    """Why :func:`scan_stored` stopped. The first three are a clean end of data."""

    END = "end"
    """Reached the end of the given range exactly after a record."""
    BLANK = "blank"
    """A blank record (``BLANK_MAGIC_CODE``): the rest of the commit-log file is padding."""
    ZERO = "zero"
    """Size and magic are both zero: the never-written (pre-allocated) part of a file."""
    TRUNCATED = "truncated"
    """A record starts but runs past the end of the range (a torn write)."""
    BAD_MAGIC = "bad_magic"
    """The magic code is none of RocketMQ's."""
    BAD_SIZE = "bad_size"
    """The fields do not add up to the store size."""
    BAD_CRC = "bad_crc"
    """The body does not match its CRC."""


@dataclass(frozen=True, slots=True)
class ScanResult:
    """Outcome of :func:`scan_stored`: ``end`` is the offset just past the last valid record
    (where appending may resume / where to truncate), ``count`` how many valid records precede
    it, ``stop`` why the scan ended there."""

    end: int
    count: int
    stop: ScanStop

    @property
    def clean(self) -> bool:
        """Whether the data ended cleanly (no torn or corrupt record at ``end``)."""
        return self.stop in (ScanStop.END, ScanStop.BLANK, ScanStop.ZERO)


def scan_stored(
    data: bytes | bytearray | memoryview, start: int = 0, end: int | None = None, *, check_crc: bool = True
) -> ScanResult:
    """Walk the stored records in ``data[start:end]`` without decoding them and report how far
    they are valid, as RocketMQ's recovery (``checkMessageAndReturnSize``) does: each record needs
    a known magic code, a size that fits the range and equals the sum of its fields, and (with
    ``check_crc``) a matching body CRC. Never raises for bad data; copies nothing (pass a
    ``memoryview`` of an ``mmap`` to scan a mapped file).
    """
    view = memoryview(data)
    limit = len(view) if end is None else min(end, len(view))
    pos = start
    count = 0
    unpack_head = _HEAD.unpack_from
    while True:
        if pos >= limit:
            return ScanResult(pos, count, ScanStop.END)
        if limit - pos < 8:
            zero = not any(view[pos:limit])
            return ScanResult(pos, count, ScanStop.ZERO if zero else ScanStop.TRUNCATED)
        size, magic = unpack_head(view, pos)
        if magic == BLANK_MAGIC_CODE:
            return ScanResult(pos, count, ScanStop.BLANK)
        if magic not in _MAGIC_CODES:
            stop = ScanStop.ZERO if size == 0 and magic == 0 else ScanStop.BAD_MAGIC
            return ScanResult(pos, count, stop)
        if size < _MIN_RECORD:
            return ScanResult(pos, count, ScanStop.BAD_SIZE)
        if pos + size > limit:
            return ScanResult(pos, count, ScanStop.TRUNCATED)
        (sys_flag,) = _I32.unpack_from(view, pos + SYS_FLAG_POSITION)
        fixed_size = _FIXED[(sys_flag >> 4) & 3].size
        rec_end = pos + size
        if fixed_size + 3 > size:
            return ScanResult(pos, count, ScanStop.BAD_SIZE)
        (body_len,) = _I32.unpack_from(view, pos + fixed_size - 4)
        body_start = pos + fixed_size
        body_end = body_start + body_len
        if body_len < 0 or body_end + 3 > rec_end:
            return ScanResult(pos, count, ScanStop.BAD_SIZE)
        if magic == MESSAGE_MAGIC_CODE:
            topic_end = body_end + 1 + view[body_end]
        else:
            topic_end = body_end + 2 + _U16.unpack_from(view, body_end)[0]
        if topic_end + 2 > rec_end or topic_end + 2 + _I16.unpack_from(view, topic_end)[0] != rec_end:
            return ScanResult(pos, count, ScanStop.BAD_SIZE)
        if check_crc:
            (crc,) = _I32.unpack_from(view, pos + BODY_CRC_POSITION)
            if zlib.crc32(view[body_start:body_end]) & 0x7FFFFFFF != crc:
                return ScanResult(pos, count, ScanStop.BAD_CRC)
        count += 1
        pos = rec_end
