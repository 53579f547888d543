"""Frames of RocketMQ's remoting protocol, sans I/O: bytes in, commands out, and back.

A frame is::

    int32  L        big-endian; the bytes that follow (4 + H + body length)
    int32  word     bits 31..24 the serialize type (0 JSON, 1 ROCKETMQ), bits 23..0 the header length H
    H      header   the command's header in that serialization
    ...    body     the rest (often empty)

:class:`FrameDecoder` is incremental: feed it whatever the socket produced with
:meth:`~FrameDecoder.receive_data` and take whole commands out with
:meth:`~FrameDecoder.next_command` (``None`` means "need more bytes", never an error). Anything that
is not a frame raises :class:`~rocketq.errors.RemoteProtocolError`: a length below the minimum or
above ``max_frame_size`` (checked as soon as the four length bytes are in, so a bogus length never
makes the decoder wait for, or buffer, gigabytes), a header length past the frame's end, an unknown
serialize type, or a header that does not parse. After such an error the stream cannot be
resynchronised, so the decoder keeps raising it.

Header serializations, both read and written:

* **JSON** (type 0) is written exactly as RocketMQ's fastjson writes ``RemotingCommand``: keys in
  alphabetical order (``code, extFields, flag, language, opaque, remark, serializeTypeCurrentRPC,
  version``), compact, ``null`` fields left out, ``language`` by name, every ext field a string,
  non-ASCII text as raw UTF-8. It is read the way fastjson reads it: unknown keys are ignored,
  numbers may come as strings, missing fields take RocketMQ's defaults (``language`` JAVA, the rest
  0), ext field values that are not strings are converted as Java would print them.
* **ROCKETMQ** (type 1), all big-endian: ``int16 code, int8 language, int16 version, int32 opaque,
  int32 flag, int32 remark length + UTF-8 remark, int32 ext length + entries`` where each entry is
  ``int16 key length, key, int32 value length, value``. RocketMQ writes an empty string as length 0
  and reads length 0 back as null; the decoder therefore gives ``remark=None`` and drops entries
  whose key or value is empty, as a Java peer would see them.

Ext fields keep the order they had on the wire, and the encoder writes them in dict order, so a
decoded frame re-encodes to the same bytes (for frames from a Java peer, which never writes the
``serializeTypeCurrentRPC`` key differently from its header word). Unknown ``language`` values (a
name or byte this table lacks) decode as ``LanguageCode.OTHER``.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final

from rocketq.errors import ConfigError, RemoteProtocolError
from rocketq.protocol.codes import LanguageCode, SerializeType
from rocketq.protocol.command import RemotingCommand

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "FrameDecoder",
    "decode_frame",
    "encode_frame",
    "encode_frame_parts",
    "encode_header",
    "read_commands",
]

DEFAULT_MAX_FRAME_SIZE: Final = 16 * 1024 * 1024
"""RocketMQ's default ``frameMaxLength`` (16 MiB): the largest frame, its 4 length bytes included."""

_MIN_LENGTH: Final = 4  # the header-length word alone
_MAX_HEADER_LENGTH: Final = 0xFFFFFF
_RMQ_MIN_HEADER: Final = 21  # fixed fields (17 bytes) and the ext-fields length (4)

_LENGTH = struct.Struct(">i")
_PREFIX = struct.Struct(">iI")
_WORD = struct.Struct(">I")
_RMQ_FIXED = struct.Struct(">hbhiii")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_unpack_length = _LENGTH.unpack_from
_unpack_word = _WORD.unpack_from
_unpack_fixed = _RMQ_FIXED.unpack_from
_unpack_i16 = _I16.unpack_from
_unpack_i32 = _I32.unpack_from

_INT32_MIN: Final = -(2**31)
_INT32_MAX: Final = 2**31 - 1

_LANGUAGE_BY_CODE: Final = {lang.value: lang for lang in LanguageCode}
_LANGUAGE_BY_NAME: Final = {lang.name: lang for lang in LanguageCode}
_LANGUAGE_JSON: Final = {lang: lang.name for lang in LanguageCode}

_json_string = json.JSONEncoder(ensure_ascii=False, check_circular=False).encode
_json_object = json.JSONEncoder(ensure_ascii=False, check_circular=False, separators=(",", ":")).encode
_json_loads = json.loads

# Python's encoder and fastjson 1.2.69 (RocketMQ 4.9.4's) escape the same characters except: fastjson
# writes upper-case hex in \uXXXX escapes, and also escapes U+007F..U+009F, U+2028 and U+2029.
_FASTJSON_DIFFERS = re.compile(r"\\u00(?:0[b-f]|1[a-f])|[\x7f-\x9f\u2028\u2029]")
_FASTJSON_FIX = re.compile(r"(\\\\)|\\u00(0[b-f]|1[a-f])|([\x7f-\x9f\u2028\u2029])")


def _fastjson_escape(match: re.Match[str]) -> str:
    if match.group(1):
        return match.group(1)  # an escaped backslash stays as it is
    if match.group(2):
        return "\\u00" + match.group(2).upper()
    return f"\\u{ord(match.group(3)):04X}"


def _as_fastjson(text: str) -> str:
    """``text`` (JSON written by Python's encoder) with fastjson's escapes."""
    if _FASTJSON_DIFFERS.search(text) is None:
        return text
    return _FASTJSON_FIX.sub(_fastjson_escape, text)


# ---------------------------------------------------------------------------------------------
# Encoding


def encode_header(cmd: RemotingCommand) -> bytes:
    """The header of ``cmd`` in its own serialize type, without the 8-byte frame prefix."""
    try:
        if cmd.serialize_type == SerializeType.ROCKETMQ:
            return _encode_rocketmq_header(cmd)
        if cmd.serialize_type == SerializeType.JSON:
            return _encode_json_header(cmd)
    except (struct.error, AttributeError, TypeError, ValueError, OverflowError) as exc:
        raise RemoteProtocolError(f"cannot encode command code={cmd.code!r}: {exc}") from exc
    raise RemoteProtocolError(f"cannot encode command: unknown serialize type {cmd.serialize_type!r}")


def encode_frame_parts(cmd: RemotingCommand) -> tuple[bytes, bytes]:
    """``(prefix + header, body)`` of ``cmd``'s frame, for writers that send a list of buffers.

    Joining the two gives :func:`encode_frame`'s result without copying a large body once more.
    """
    header = encode_header(cmd)
    header_length = len(header)
    if header_length > _MAX_HEADER_LENGTH:
        raise RemoteProtocolError(f"header of {header_length} bytes does not fit the 24-bit header length")
    body = cmd.body
    length = 4 + header_length + len(body)
    if length > _INT32_MAX:
        raise RemoteProtocolError(f"frame of {length} bytes does not fit the 32-bit frame length")
    return _PREFIX.pack(length, (int(cmd.serialize_type) << 24) | header_length) + header, body


def encode_frame(cmd: RemotingCommand) -> bytes:
    """The whole frame of ``cmd``: length, header word, header, body.

    >>> cmd = RemotingCommand.request(105, {"topic": "TBW102"}, language=LanguageCode.JAVA)
    >>> encode_frame(cmd)[8:]
    b'{"code":105,"extFields":{"topic":"TBW102"},"flag":0,"language":"JAVA","opaque":0,"serializeTypeCurrentRPC":"JSON","version":401}'
    """
    head, body = encode_frame_parts(cmd)
    return head + body if body else head


def _encode_json_header(cmd: RemotingCommand) -> bytes:
    code = int(cmd.code)
    flag = int(cmd.flag)
    opaque = int(cmd.opaque)
    version = int(cmd.version)
    if not (
        _INT32_MIN <= code <= _INT32_MAX
        and _INT32_MIN <= flag <= _INT32_MAX
        and _INT32_MIN <= opaque <= _INT32_MAX
        and _INT32_MIN <= version <= _INT32_MAX
    ):
        raise ValueError(
            f"code {code}, flag {flag}, opaque {opaque} or version {version} is not a 32-bit int"
        )
    ext = cmd.ext_fields
    if ext:
        entries: Iterable[tuple[object, object]] = ext.items()
        for key, value in entries:
            if type(value) is not str or type(key) is not str:
                raise TypeError(f"ext field {key!r} must map str to str, got {type(value).__name__}")
        ext_part = ',"extFields":' + _json_object(ext)
    elif cmd.write_empty_ext_fields:
        ext_part = ',"extFields":{}'
    else:
        ext_part = ""
    remark = cmd.remark
    remark_part = "" if remark is None else ',"remark":' + _json_string(remark)
    text = (
        f'{{"code":{code}{ext_part},"flag":{flag},"language":"{_LANGUAGE_JSON[cmd.language]}",'
        f'"opaque":{opaque}{remark_part},"serializeTypeCurrentRPC":"JSON","version":{version}}}'
    )
    # A lone surrogate becomes "?", as Java's UTF-8 encoder makes it.
    return _as_fastjson(text).encode("utf-8", "replace")


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "replace")


def _encode_rocketmq_header(cmd: RemotingCommand) -> bytes:
    remark = cmd.remark
    remark_bytes = _utf8(remark) if remark else b""
    parts = [
        _RMQ_FIXED.pack(cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag, len(remark_bytes)),
        remark_bytes,
        b"",
    ]
    ext_length = 0
    pack_i16 = _I16.pack
    pack_i32 = _I32.pack
    for key, value in cmd.ext_fields.items():
        key_bytes = _utf8(key)
        value_bytes = _utf8(value)
        parts += (pack_i16(len(key_bytes)), key_bytes, pack_i32(len(value_bytes)), value_bytes)
        ext_length += 6 + len(key_bytes) + len(value_bytes)
    parts[2] = pack_i32(ext_length)
    return b"".join(parts)


# ---------------------------------------------------------------------------------------------
# Decoding


def _to_int(header: dict[str, Any], key: str, default: int) -> int:
    value = header.get(key)
    if value is None:
        return default
    if type(value) is int:
        result = value
    elif type(value) is str:
        try:
            result = int(value.strip())
        except ValueError:
            raise RemoteProtocolError(f"JSON header field {key!r} is not an integer: {value!r}") from None
    else:
        raise RemoteProtocolError(f"JSON header field {key!r} is not an integer: {value!r}")
    if not _INT32_MIN <= result <= _INT32_MAX:
        raise RemoteProtocolError(f"JSON header field {key!r} is out of range: {result}")
    return result


def _java_text(value: Any) -> str:
    """A JSON value as fastjson would turn it into a Java ``String`` ext field."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (dict, list)):
        return _json_object(value)
    return str(value)


def _decode_json_header(header: Any) -> RemotingCommand:
    try:
        parsed = _json_loads(str(header, "utf-8"))
    except (ValueError, RecursionError) as exc:
        raise RemoteProtocolError(f"JSON header does not parse: {exc}") from None
    if type(parsed) is not dict:
        raise RemoteProtocolError(f"JSON header is not an object: {type(parsed).__name__}")
    language_value = parsed.get("language")
    if language_value is None:
        language = LanguageCode.JAVA
    elif type(language_value) is str:
        language = _LANGUAGE_BY_NAME.get(language_value, LanguageCode.OTHER)
    elif type(language_value) is int:
        language = _LANGUAGE_BY_CODE.get(language_value, LanguageCode.OTHER)
    else:
        raise RemoteProtocolError(f"JSON header field 'language' is not a language: {language_value!r}")
    remark = parsed.get("remark")
    if remark is not None and type(remark) is not str:
        remark = _java_text(remark)
    ext = parsed.get("extFields")
    write_empty = False
    if ext is None:
        ext_fields: dict[str, str] = {}
    elif type(ext) is dict:
        ext_fields = ext
        write_empty = not ext
        for value in ext.values():
            if type(value) is not str:
                ext_fields = {k: _java_text(v) for k, v in ext.items() if v is not None}
                break
    else:
        raise RemoteProtocolError(f"JSON header field 'extFields' is not an object: {ext!r}")
    return RemotingCommand(
        code=_to_int(parsed, "code", 0),
        language=language,
        version=_to_int(parsed, "version", 0),
        opaque=_to_int(parsed, "opaque", 0),
        flag=_to_int(parsed, "flag", 0),
        remark=remark,
        ext_fields=ext_fields,
        serialize_type=SerializeType.JSON,
        write_empty_ext_fields=write_empty,
    )


def _decode_rocketmq_header(buf: Any, start: int, end: int) -> RemotingCommand:
    if end - start < _RMQ_MIN_HEADER:
        raise RemoteProtocolError(f"ROCKETMQ header of {end - start} bytes is shorter than {_RMQ_MIN_HEADER}")
    code, language_code, version, opaque, flag, remark_length = _unpack_fixed(buf, start)
    pos = start + 17
    if remark_length < 0 or remark_length > end - pos - 4:
        raise RemoteProtocolError(f"ROCKETMQ header remark length {remark_length} is out of bounds")
    try:
        remark = str(buf[pos : pos + remark_length], "utf-8") if remark_length else None
        pos += remark_length
        (ext_length,) = _unpack_i32(buf, pos)
        pos += 4
        if ext_length != end - pos and not (ext_length <= 0 and pos == end):
            raise RemoteProtocolError(
                f"ROCKETMQ header ext fields length {ext_length} does not match the {end - pos} bytes left"
            )
        ext_fields: dict[str, str] = {}
        while pos < end:
            if end - pos < 6:
                raise RemoteProtocolError("ROCKETMQ header ext field entry is truncated")
            (key_length,) = _unpack_i16(buf, pos)
            pos += 2
            if key_length < 0 or key_length > end - pos - 4:
                raise RemoteProtocolError(f"ROCKETMQ header ext key length {key_length} is out of bounds")
            key = str(buf[pos : pos + key_length], "utf-8")
            pos += key_length
            (value_length,) = _unpack_i32(buf, pos)
            pos += 4
            if value_length < 0 or value_length > end - pos:
                raise RemoteProtocolError(f"ROCKETMQ header ext value length {value_length} is out of bounds")
            value = str(buf[pos : pos + value_length], "utf-8")
            pos += value_length
            if key and value:  # RocketMQ reads a zero length as null, and null entries are dropped
                ext_fields[key] = value
    except UnicodeDecodeError as exc:
        raise RemoteProtocolError(f"ROCKETMQ header text is not UTF-8: {exc}") from None
    return RemotingCommand(
        code=code,
        language=_LANGUAGE_BY_CODE.get(language_code, LanguageCode.OTHER),
        version=version,
        opaque=opaque,
        flag=flag,
        remark=remark,
        ext_fields=ext_fields,
        serialize_type=SerializeType.ROCKETMQ,
    )


def _decode_frame_body(buf: Any, start: int, length: int) -> RemotingCommand:
    """Decode the frame whose length word (``length``) ends at ``start`` and fills ``length`` bytes."""
    (word,) = _unpack_word(buf, start)
    header_length = word & _MAX_HEADER_LENGTH
    serialize_type = word >> 24
    if header_length > length - 4:
        raise RemoteProtocolError(
            f"header length {header_length} exceeds the frame's {length - 4} bytes after the header word"
        )
    header_start = start + 4
    header_end = header_start + header_length
    if serialize_type == 0:
        cmd = _decode_json_header(buf[header_start:header_end])
    elif serialize_type == 1:
        cmd = _decode_rocketmq_header(buf, header_start, header_end)
    else:
        raise RemoteProtocolError(f"unknown serialize type {serialize_type}")
    end = start + length
    if end > header_end:
        cmd.body = bytes(buf[header_end:end])
    return cmd


def _check_length(length: int, max_frame_size: int) -> None:
    if length < _MIN_LENGTH:
        raise RemoteProtocolError(f"frame length {length} is below the minimum of {_MIN_LENGTH}")
    if length + 4 > max_frame_size:
        raise RemoteProtocolError(f"frame of {length + 4} bytes exceeds the maximum of {max_frame_size}")


def decode_frame(
    frame: bytes | bytearray | memoryview, *, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
) -> RemotingCommand:
    """Decode exactly one whole frame (its 4 length bytes included); anything else raises."""
    size = len(frame)
    if size < 4:
        raise RemoteProtocolError(f"frame of {size} bytes has no length")
    (length,) = _unpack_length(frame, 0)
    _check_length(length, max_frame_size)
    if length + 4 != size:
        raise RemoteProtocolError(f"frame length {length} does not match the {size - 4} bytes given")
    with memoryview(frame) as view:
        return _decode_frame_body(view, 4, length)


class FrameDecoder:
    """Incremental frame decoder: bytes in (:meth:`receive_data`), commands out (:meth:`next_command`).

    ``max_frame_size`` bounds a whole frame including its 4 length bytes, as RocketMQ's
    ``frameMaxLength`` does (16 MiB by default). The decoder holds only what it was given and has
    not yet returned; a caller that stops calling :meth:`next_command` stops reading too (that is
    the transport's back-pressure).

    >>> decoder = FrameDecoder()
    >>> frame = encode_frame(RemotingCommand.request(34, body=b"{}"))
    >>> decoder.receive_data(frame[:5])
    >>> decoder.next_command() is None
    True
    >>> decoder.receive_data(frame[5:])
    >>> decoder.next_command().body
    b'{}'
    """

    __slots__ = ("_buffer", "_error", "max_frame_size")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        if max_frame_size < 8:
            raise ConfigError(f"max_frame_size {max_frame_size} is below the 8-byte frame prefix")
        self.max_frame_size = max_frame_size
        self._buffer = bytearray()
        self._error: RemoteProtocolError | None = None

    @property
    def buffered(self) -> int:
        """Bytes received and not yet returned as commands."""
        return len(self._buffer)

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        """Add bytes read from the peer; a bad length word at the front raises at once."""
        if self._error is not None:
            raise self._error
        buffer = self._buffer
        buffer += data
        if len(buffer) >= 4:
            self._check_front()

    def _check_front(self) -> None:
        (length,) = _unpack_length(self._buffer, 0)
        try:
            _check_length(length, self.max_frame_size)
        except RemoteProtocolError as exc:
            self._fail(exc)

    def _fail(self, exc: RemoteProtocolError) -> None:
        self._error = exc
        # Drop the bytes by replacing the buffer: views of it may live on in the traceback.
        self._buffer = bytearray()
        raise exc

    def next_command(self) -> RemotingCommand | None:
        """The next whole command, or ``None`` when more bytes are needed."""
        if self._error is not None:
            raise self._error
        buffer = self._buffer
        available = len(buffer)
        if available < 4:
            return None
        (length,) = _unpack_length(buffer, 0)
        try:
            _check_length(length, self.max_frame_size)
        except RemoteProtocolError as exc:
            self._fail(exc)
        if available < length + 4:
            return None
        try:
            with memoryview(buffer) as view:
                cmd = _decode_frame_body(view, 4, length)
        except RemoteProtocolError as exc:
            self._fail(exc)
        # CPython drops bytes from a bytearray's front by moving its start, without copying.
        # The next frame's length is checked by the next call, so this command is never lost.
        del buffer[: length + 4]
        return cmd

    def __iter__(self) -> Iterator[RemotingCommand]:
        """Every whole command buffered now."""
        while (cmd := self.next_command()) is not None:
            yield cmd

    def bytes_needed(self) -> int:
        """How many more bytes complete the next frame (its length word first); 0 if one is whole."""
        available = len(self._buffer)
        if available < 4:
            return 4 - available
        length: int = _unpack_length(self._buffer, 0)[0]
        return max(0, length + 4 - available)

    def close(self) -> None:
        """The peer closed the stream: raise if it stopped in the middle of a frame."""
        if self._error is None and self._buffer:
            self._fail(
                RemoteProtocolError(f"stream ended inside a frame ({len(self._buffer)} bytes pending)")
            )


def read_commands(
    recv: Callable[[int], bytes],
    *,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    chunk_size: int = 65536,
) -> Iterator[RemotingCommand]:
    """Commands read with a blocking ``recv(n)`` (such as ``socket.recv``) until it returns ``b""``.

    For code without an event loop (the Spark reader): ``for cmd in read_commands(sock.recv)``.
    A stream that ends inside a frame raises :class:`~rocketq.errors.RemoteProtocolError`.
    """
    decoder = FrameDecoder(max_frame_size)
    while True:
        data = recv(chunk_size)
        if not data:
            decoder.close()
            return
        decoder.receive_data(data)
        while (cmd := decoder.next_command()) is not None:
            yield cmd
