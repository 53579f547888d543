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
above ``max_frame_size`` (checked as soon as a frame's four length bytes reach the front of the
buffer, so a bogus length never makes the decoder wait for, or buffer, gigabytes), a header length
past the frame's end, an unknown serialize type, or a header that does not parse. Commands decoded
before the bad frame are all returned first. After such an error the stream cannot be
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

JSON strings are escaped as fastjson 1.2.69 (RocketMQ 4.9.4's) escapes them: ``\\uXXXX`` with
upper-case hex, and U+007F to U+009F, U+2028 and U+2029 escaped too.

Ext fields keep the order they had on the wire, and the encoder writes them in dict order, so a
decoded frame from a Java peer re-encodes to the same bytes (all 1,216 captured frames do). A Java
peer writes them in its ``HashMap``'s iteration order; :mod:`rocketq.protocol.headers` produces
that order for the headers rocketq builds. What cannot round-trip byte for byte is only what a
Java peer would not write: JSON that is not fastjson's compact form, ROCKETMQ entries with empty
keys or values (dropped), and unknown ``language`` values (a name or byte this table lacks), which
decode as ``LanguageCode.OTHER``.

JSON headers go through `orjson <https://github.com/ijl/orjson>`_ (a compiled JSON library, a
dependency) when it is importable: it parses a header in about a third of the standard library's
time and writes the ext fields in a sixth. Whatever it refuses (a lone surrogate escape, an
integer over 64 bits, nesting past its limit) is handed to the standard library's path, which
also serves alone without orjson; both give the same commands and the same bytes.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Callable, Iterator
from typing import Any, Final, NoReturn

from rocketq.errors import ConfigError, RemoteProtocolError
from rocketq.protocol._text import excerpt, has_surrogate_escape, java_utf8_text
from rocketq.protocol.codes import LanguageCode, SerializeType
from rocketq.protocol.command import RemotingCommand

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency; without its wheel, the stdlib path
    orjson = None  # type: ignore[assignment]

#: orjson's ``loads``/``dumps`` when importable (``None``: the standard library's path alone)
_fast_loads: Callable[[Any], Any] | None = None if orjson is None else orjson.loads
_fast_dumps: Callable[[Any], bytes] | None = None if orjson is None else orjson.dumps

__all__ = [
    "DEFAULT_MAX_EXT_FIELDS",
    "DEFAULT_MAX_FRAME_SIZE",
    "DEFAULT_MAX_HEADER_SIZE",
    "FrameDecoder",
    "decode_frame",
    "encode_frame",
    "encode_frame_parts",
    "encode_header",
    "read_commands",
]

DEFAULT_MAX_FRAME_SIZE: Final = 16 * 1024 * 1024
"""RocketMQ's default ``frameMaxLength`` (16 MiB): the largest frame, its 4 length bytes included."""

DEFAULT_MAX_HEADER_SIZE: Final = DEFAULT_MAX_FRAME_SIZE
"""The largest header: RocketMQ bounds a header only by the frame, and so do we by default. Most
headers are a few hundred bytes (the 1,216 captured 4.9.4 frames: at most 742), but the answer to
a SEND_BATCH_MESSAGE carries the id of every message of the batch in ``msgId`` (33 bytes each):
a 4 MiB batch of small messages answers with a header of over 2 MiB. What makes a header costly
is its number of fields, bounded apart (:data:`DEFAULT_MAX_EXT_FIELDS`)."""

DEFAULT_MAX_EXT_FIELDS: Final = 1024
"""Ours (RocketMQ has no bound): the most ext fields a header may carry. RocketMQ's own headers
have at most 14 (a send with every optional field), plus a few from an RPC hook (ACL). A JSON
header over :data:`_COUNT_FIELDS_FROM` bytes is refused before parsing when its colons alone
show it holds more (a 16 MiB header of 1.5 million fields took over a second to parse)."""

#: Headers above this size have their colons counted before parsing. A send's header stays below
#: it whatever its properties hold (at most 32,767 bytes, which JSON escapes can grow at most
#: 6-fold); above it only a batch answer's ``msgId`` list goes, and it has no colon.
_COUNT_FIELDS_FROM: Final = 256 * 1024

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
_pack_prefix = _PREFIX.pack
_pack_fixed = _RMQ_FIXED.pack
_pack_i16 = _I16.pack
_pack_i32 = _I32.pack
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


def _not_serializable(value: object) -> object:
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


# ``JSONEncoder.encode`` builds a new C encoder object on every call; the ext fields of every
# frame are a flat str -> str dict (checked first), so one C encoder, configured as
# ``_json_object`` is, serves them all at half the cost.
_c_make_encoder: Any = getattr(json.encoder, "c_make_encoder", None)
_ext_object_chunks: Callable[[dict[str, str], int], Any] | None = (
    None
    if _c_make_encoder is None
    else _c_make_encoder(
        None, _not_serializable, json.encoder.encode_basestring, None, ":", ",", False, False, True
    )
)


def _ext_object(ext: dict[str, str]) -> str:
    """``_json_object(ext)`` for a dict of strings: orjson's bytes when it writes them (it refuses
    a lone surrogate), else the shared C encoder when there is one."""
    fast = _fast_dumps
    if fast is not None:
        try:
            return fast(ext).decode()
        except TypeError:  # orjson.JSONEncodeError
            pass
    chunks = _ext_object_chunks
    if chunks is None:
        return _json_object(ext)
    return "".join(chunks(ext, 0))


_json_loads = json.loads
_json_scan: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]

# Python's encoder and fastjson 1.2.69 (RocketMQ 4.9.4's) escape the same characters except: fastjson
# writes upper-case hex in \uXXXX escapes, and also escapes U+007F..U+009F, U+2028 and U+2029.
_FASTJSON_LOWER_HEX = re.compile(r"\\u00(?:0[b-f]|1[a-f])")  # a literal prefix: searched fast
_FASTJSON_RAW = re.compile(r"[\x7f-\x9f\u2028\u2029]")
_FASTJSON_FIX = re.compile(r"(\\\\)|\\u00(0[b-f]|1[a-f])|([\x7f-\x9f\u2028\u2029])")


def _fastjson_escape(match: re.Match[str]) -> str:
    if match.group(1):
        return match.group(1)  # an escaped backslash stays as it is
    if match.group(2):
        return "\\u00" + match.group(2).upper()
    return f"\\u{ord(match.group(3)):04X}"


def _as_fastjson(text: str) -> str:
    """``text`` (JSON written by Python's encoder) with fastjson's escapes."""
    if _FASTJSON_LOWER_HEX.search(text) is None and (
        "\x7f" not in text if text.isascii() else _FASTJSON_RAW.search(text) is None
    ):
        return text
    return _FASTJSON_FIX.sub(_fastjson_escape, text)


# ---------------------------------------------------------------------------------------------
# Encoding


def encode_header(cmd: RemotingCommand) -> bytes:
    """The header of ``cmd`` in its own serialize type, without the 8-byte frame prefix."""
    try:
        if cmd.serialize_type == SerializeType.JSON:
            return _encode_json_header(cmd)
        if cmd.serialize_type == SerializeType.ROCKETMQ:
            return _encode_rocketmq_header(cmd)
    except (struct.error, AttributeError, LookupError, TypeError, ValueError, OverflowError) as exc:
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
    return _pack_prefix(length, (cmd.serialize_type << 24) | header_length) + header, body


def encode_frame(cmd: RemotingCommand) -> bytes:
    """The whole frame of ``cmd``: length, header word, header, body.

    >>> cmd = RemotingCommand.request(105, {"topic": "TBW102"}, language=LanguageCode.JAVA)
    >>> encode_frame(cmd)[8:]
    b'{"code":105,"extFields":{"topic":"TBW102"},"flag":0,"language":"JAVA","opaque":0,"serializeTypeCurrentRPC":"JSON","version":401}'
    """
    head, body = encode_frame_parts(cmd)
    return head + body if body else head


def _check_ext_types(ext: dict[str, str]) -> None:
    # str.join checks every item is a str in C; only on failure do we look for the culprit
    try:
        "".join(ext)
        "".join(ext.values())
    except TypeError:
        loose: dict[Any, Any] = ext  # items of any type (compiled, a str-typed loop would raise first)
        for key, value in loose.items():
            if type(key) is not str or type(value) is not str:
                raise TypeError(
                    f"ext field {key!r} must map str to str, got {type(value).__name__}"
                ) from None
        raise


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
        _check_ext_types(ext)
        ext_part = ',"extFields":' + _as_fastjson(_ext_object(ext))
    elif cmd.write_empty_ext_fields:
        ext_part = ',"extFields":{}'
    else:
        ext_part = ""
    remark = cmd.remark
    remark_part = "" if remark is None else ',"remark":' + _as_fastjson(_json_string(remark))
    text = (
        f'{{"code":{code}{ext_part},"flag":{flag},"language":"{_LANGUAGE_JSON[cmd.language]}",'
        f'"opaque":{opaque}{remark_part},"serializeTypeCurrentRPC":"JSON","version":{version}}}'
    )
    # A lone surrogate becomes "?", as Java's UTF-8 encoder makes it.
    return text.encode("utf-8", "replace")


_KEY_ENTRIES: dict[str, bytes] = {}
_KEY_ENTRIES_MAX: Final = 4096


def _key_entry(key: str) -> bytes:
    """``int16 length + UTF-8`` of an ext-field key; the usual few keys are cached."""
    entry = _KEY_ENTRIES.get(key)
    if entry is None:
        if type(key) is not str:
            raise TypeError(f"ext field key {key!r} is not a str")
        raw = key.encode("utf-8", "replace")
        entry = _pack_i16(len(raw)) + raw
        if len(_KEY_ENTRIES) < _KEY_ENTRIES_MAX:
            _KEY_ENTRIES[key] = entry
    return entry


def _encode_rocketmq_header(cmd: RemotingCommand) -> bytes:
    remark = cmd.remark
    remark_bytes = remark.encode("utf-8", "replace") if remark else b""
    parts = [b"", remark_bytes, b""]
    append = parts.append
    pack_i32 = _pack_i32
    key_entry = _key_entry
    ext_length = 0
    for key, value in cmd.ext_fields.items():
        entry = key_entry(key)
        if type(value) is not str:
            raise TypeError(f"ext field {key!r} must map str to str, got {type(value).__name__}")
        raw = value.encode("utf-8", "replace")
        size = len(raw)
        append(entry)
        append(pack_i32(size))
        append(raw)
        ext_length += len(entry) + 4 + size
    parts[0] = _pack_fixed(cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag, len(remark_bytes))
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
            raise RemoteProtocolError(
                f"JSON header field {key!r} is not an integer: {excerpt(value)}"
            ) from None
    else:
        raise RemoteProtocolError(f"JSON header field {key!r} is not an integer: {excerpt(value)}")
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
        try:
            return _json_object(value)
        except RecursionError:
            raise RemoteProtocolError("JSON header ext field value is nested too deeply") from None
    return str(value)


def _json_language(value: Any) -> LanguageCode:
    if value is None:
        return LanguageCode.JAVA  # RocketMQ's default
    if type(value) is str:
        return _LANGUAGE_BY_NAME.get(value, LanguageCode.OTHER)
    if type(value) is int:
        return _LANGUAGE_BY_CODE.get(value, LanguageCode.OTHER)
    raise RemoteProtocolError(f"JSON header field 'language' is not a language: {excerpt(value)}")


def _fast_header(header: Any) -> Any:
    """orjson's parse of a header when it gives an object, else ``None`` (the standard library's
    path then decides, and words the error)."""
    fast = _fast_loads
    if fast is None:
        return None
    try:
        parsed = fast(header)
    except ValueError:  # orjson.JSONDecodeError: not JSON as orjson reads it
        return None
    return parsed if type(parsed) is dict else None


def _decode_json_header(header: Any, size: int, max_ext_fields: int, fast: bool = True) -> RemotingCommand:
    """The command of a JSON header of ``size`` bytes (``header``, a buffer slice). ``fast``:
    try orjson first; any field that is not the plain type Java writes sends the header to the
    standard library's parser instead (orjson reads an integer over 64 bits as a float, where
    the conversions below must see Java's integer)."""
    # Every member of a JSON object has a colon; a large header with many more colons than
    # allowed fields (plus the command's own 8) cannot be valid, so it is not parsed at all.
    if size > _COUNT_FIELDS_FROM and bytes(header).count(b":") > max_ext_fields + 8:
        raise RemoteProtocolError(f"header has more than {max_ext_fields} ext fields")
    parsed: Any = _fast_header(header) if fast else None
    text: str | None = None  # orjson refuses lone surrogates: only the stdlib's text may have one
    if parsed is None:
        try:
            text = str(header, "utf-8")
            try:
                # the C scanner alone, without json.loads's Python-level whitespace handling
                parsed, end = _json_scan(text, 0)
            except StopIteration:
                end = -1
            if end != len(text):  # leading or trailing whitespace, or not JSON: the full parser decides
                parsed = _json_loads(text)
        except (ValueError, RecursionError) as exc:
            raise RemoteProtocolError(f"JSON header does not parse: {exc}") from None
    if type(parsed) is not dict:
        raise RemoteProtocolError(f"JSON header is not an object: {type(parsed).__name__}")
    get = parsed.get
    code = get("code", 0)
    flag = get("flag", 0)
    opaque = get("opaque", 0)
    version = get("version", 0)
    if not (
        type(code) is int
        and type(flag) is int
        and type(opaque) is int
        and type(version) is int
        and _INT32_MIN <= code <= _INT32_MAX
        and _INT32_MIN <= flag <= _INT32_MAX
        and _INT32_MIN <= opaque <= _INT32_MAX
        and _INT32_MIN <= version <= _INT32_MAX
    ):
        if text is None:
            return _decode_json_header(header, size, max_ext_fields, fast=False)
        code = _to_int(parsed, "code", 0)
        flag = _to_int(parsed, "flag", 0)
        opaque = _to_int(parsed, "opaque", 0)
        version = _to_int(parsed, "version", 0)
    language_value = get("language")
    language = _LANGUAGE_BY_NAME.get(language_value) if type(language_value) is str else None
    if language is None:
        if text is None:
            return _decode_json_header(header, size, max_ext_fields, fast=False)
        language = _json_language(language_value)
    remark = get("remark")
    if remark is not None and type(remark) is not str:
        if text is None:
            return _decode_json_header(header, size, max_ext_fields, fast=False)
        remark = _java_text(remark)
    ext = get("extFields")
    write_empty = False
    values_ascii = True
    if ext is None:
        ext_fields: dict[str, str] = {}
    elif type(ext) is dict:
        ext_fields = ext
        if not ext:
            write_empty = True
        else:
            try:
                # all strings (checked in C)? and isascii() is O(1), a flag of the str
                values_ascii = "".join(ext.values()).isascii()
            except TypeError:
                if text is None:
                    return _decode_json_header(header, size, max_ext_fields, fast=False)
                ext_fields = {k: _java_text(v) for k, v in ext.items() if v is not None}
                values_ascii = False
            if len(ext_fields) > max_ext_fields:
                raise RemoteProtocolError(
                    f"header has {len(ext_fields)} ext fields, over the limit of {max_ext_fields}"
                )
    elif text is None:
        return _decode_json_header(header, size, max_ext_fields, fast=False)
    else:
        raise RemoteProtocolError(f"JSON header field 'extFields' is not an object: {excerpt(ext)}")
    # A lone surrogate (text a Java peer would send as "?") can only come from a "\ud800"
    # escape, so from a text with a backslash, and is not ASCII: the text is searched only when a
    # backslash and a value or remark that is not ASCII show there may be one. (Keys are not
    # looked at for this - joining them costs 0.2 µs a frame - and are made Java's only along with
    # the values: a key with a lone surrogate names no header field, and every encoder writes it
    # with "?" anyway.)
    if (
        text is not None
        and "\\" in text
        and not (values_ascii and (remark is None or remark.isascii()))
        and has_surrogate_escape(text)
    ):
        ext_fields = {java_utf8_text(k): java_utf8_text(v) for k, v in ext_fields.items()}
        remark = None if remark is None else java_utf8_text(remark)
    return RemotingCommand(
        code, language, version, opaque, flag, remark, ext_fields, b"", SerializeType.JSON, write_empty
    )


def _check_entry_count(data: bytes, pos: int, end: int, max_ext_fields: int) -> None:
    """Raise if the ROCKETMQ ext-field entries from ``pos`` are more than ``max_ext_fields``
    (walking their lengths only; a length out of bounds is left for the decoder to report)."""
    entries = 0
    while pos <= end - 6:
        entries += 1
        if entries > max_ext_fields:
            raise RemoteProtocolError(f"header has more than {max_ext_fields} ext fields")
        (key_length,) = _unpack_i16(data, pos)
        if key_length < 0 or pos + 6 + key_length > end:
            return
        (value_length,) = _unpack_i32(data, pos + 2 + key_length)
        if value_length < 0:
            return
        pos += 6 + key_length + value_length


def _decode_rocketmq_header(buf: Any, start: int, end: int, max_ext_fields: int) -> RemotingCommand:
    if end - start < _RMQ_MIN_HEADER:
        raise RemoteProtocolError(f"ROCKETMQ header of {end - start} bytes is shorter than {_RMQ_MIN_HEADER}")
    # One copy of the (small) header; when it is all ASCII, as headers nearly always are, one
    # decode of the whole and plain string slices replace a UTF-8 decode per key and value.
    data = bytes(buf[start:end])
    end = len(data)
    text = data.decode("latin-1") if data.isascii() else None
    code, language_code, version, opaque, flag, remark_length = _unpack_fixed(data, 0)
    pos = 17
    if remark_length < 0 or remark_length > end - pos - 4:
        raise RemoteProtocolError(f"ROCKETMQ header remark length {remark_length} is out of bounds")
    unpack_i16 = _unpack_i16
    unpack_i32 = _unpack_i32
    try:
        remark = None
        if remark_length:
            remark_end = pos + remark_length
            remark = text[pos:remark_end] if text is not None else str(data[pos:remark_end], "utf-8")
            pos = remark_end
        (ext_length,) = unpack_i32(data, pos)
        pos += 4
        if ext_length != end - pos and not (ext_length <= 0 and pos == end):
            raise RemoteProtocolError(
                f"ROCKETMQ header ext fields length {ext_length} does not match the {end - pos} bytes left"
            )
        ext_fields: dict[str, str] = {}
        if end - pos > 6 * max_ext_fields:  # room for more entries than allowed (6 bytes at least)
            _check_entry_count(data, pos, end, max_ext_fields)
        while pos < end:
            if end - pos < 6:
                raise RemoteProtocolError("ROCKETMQ header ext field entry is truncated")
            (key_length,) = unpack_i16(data, pos)
            pos += 2
            if key_length < 0 or key_length > end - pos - 4:
                raise RemoteProtocolError(f"ROCKETMQ header ext key length {key_length} is out of bounds")
            key_end = pos + key_length
            (value_length,) = unpack_i32(data, key_end)
            value_start = key_end + 4
            pos = value_start + value_length
            if value_length < 0 or pos > end:
                raise RemoteProtocolError(f"ROCKETMQ header ext value length {value_length} is out of bounds")
            # RocketMQ reads a zero length as null, and entries with a null key or value are dropped
            if key_length and value_length:
                if text is not None:
                    ext_fields[text[key_end - key_length : key_end]] = text[value_start:pos]
                else:
                    key = str(data[key_end - key_length : key_end], "utf-8")
                    ext_fields[key] = str(data[value_start:pos], "utf-8")
    except UnicodeDecodeError as exc:
        raise RemoteProtocolError(f"ROCKETMQ header text is not UTF-8: {exc}") from None
    language = _LANGUAGE_BY_CODE.get(language_code, LanguageCode.OTHER)
    return RemotingCommand(
        code, language, version, opaque, flag, remark, ext_fields, b"", SerializeType.ROCKETMQ, False
    )


def _decode_frame_body(
    buf: Any, start: int, length: int, max_header_size: int, max_ext_fields: int
) -> RemotingCommand:
    """Decode the frame whose length word (``length``) ends at ``start`` and fills ``length`` bytes."""
    (word,) = _unpack_word(buf, start)
    header_length = word & _MAX_HEADER_LENGTH
    if header_length > length - 4:
        raise RemoteProtocolError(
            f"header length {header_length} exceeds the frame's {length - 4} bytes after the header word"
        )
    if header_length > max_header_size:
        raise RemoteProtocolError(f"header of {header_length} bytes exceeds the maximum of {max_header_size}")
    header_start = start + 4
    header_end = header_start + header_length
    serialize_type = word >> 24
    if serialize_type == 0:
        cmd = _decode_json_header(buf[header_start:header_end], header_length, max_ext_fields)
    elif serialize_type == 1:
        cmd = _decode_rocketmq_header(buf, header_start, header_end, max_ext_fields)
    else:
        raise RemoteProtocolError(f"unknown serialize type {serialize_type}")
    end = start + length
    if end > header_end:
        cmd.body = bytes(buf[header_end:end])
    return cmd


def _length_error(length: int, max_frame_size: int) -> RemoteProtocolError:
    if length < _MIN_LENGTH:
        return RemoteProtocolError(f"frame length {length} is below the minimum of {_MIN_LENGTH}")
    return RemoteProtocolError(f"frame of {length + 4} bytes exceeds the maximum of {max_frame_size}")


def decode_frame(
    frame: bytes | bytearray | memoryview,
    *,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    max_header_size: int = DEFAULT_MAX_HEADER_SIZE,
    max_ext_fields: int = DEFAULT_MAX_EXT_FIELDS,
) -> RemotingCommand:
    """Decode exactly one whole frame (its 4 length bytes included); anything else raises."""
    size = len(frame)
    if size < 4:
        raise RemoteProtocolError(f"frame of {size} bytes has no length")
    (length,) = _unpack_length(frame, 0)
    if length < _MIN_LENGTH or length + 4 > max_frame_size:
        raise _length_error(length, max_frame_size)
    if length + 4 != size:
        raise RemoteProtocolError(f"frame length {length} does not match the {size - 4} bytes given")
    with memoryview(frame) as view:
        return _decode_frame_body(view, 4, length, max_header_size, max_ext_fields)


class FrameDecoder:
    """Incremental frame decoder: bytes in (:meth:`receive_data`), commands out (:meth:`next_command`).

    ``max_frame_size`` bounds a whole frame including its 4 length bytes, as RocketMQ's
    ``frameMaxLength`` does (16 MiB by default); ``max_header_size`` and ``max_ext_fields`` bound
    its header (:data:`DEFAULT_MAX_HEADER_SIZE`, :data:`DEFAULT_MAX_EXT_FIELDS`). The decoder
    holds only what it was given and has not yet returned; a caller that stops calling
    :meth:`next_command` stops reading too (that is the transport's back-pressure).

    Frames are decoded in place from one buffer and an offset; when everything received so far
    has been returned, the next chunk is kept as it is, without copying (the usual case: a read
    that ends at a frame boundary).

    >>> decoder = FrameDecoder()
    >>> frame = encode_frame(RemotingCommand.request(34, body=b"{}"))
    >>> decoder.receive_data(frame[:5])
    >>> decoder.next_command() is None
    True
    >>> decoder.receive_data(frame[5:])
    >>> decoder.next_command().body
    b'{}'
    """

    __slots__ = (
        "_buffer",
        "_error",
        "_max_length",
        "_pos",
        "max_ext_fields",
        "max_frame_size",
        "max_header_size",
    )

    def __init__(
        self,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        *,
        max_header_size: int = DEFAULT_MAX_HEADER_SIZE,
        max_ext_fields: int = DEFAULT_MAX_EXT_FIELDS,
    ) -> None:
        if max_frame_size < 8:
            raise ConfigError(f"max_frame_size {max_frame_size} is below the 8-byte frame prefix")
        if max_header_size < _RMQ_MIN_HEADER or max_ext_fields < 0:
            raise ConfigError(
                f"max_header_size must be at least {_RMQ_MIN_HEADER} and max_ext_fields not negative, "
                f"got {max_header_size} and {max_ext_fields}"
            )
        self.max_frame_size = max_frame_size
        self.max_header_size = max_header_size
        self.max_ext_fields = max_ext_fields
        self._max_length = max_frame_size - 4  # the largest value of the length word
        self._buffer: bytes | bytearray = b""
        self._pos = 0
        self._error: str | None = None  # why the stream failed: raised again by every call

    @property
    def buffered(self) -> int:
        """Bytes received and not yet returned as commands."""
        return len(self._buffer) - self._pos

    def complete_frames(self, most: int = 100_000) -> int:
        """Whole frames waiting in the buffer (at most ``most`` counted): the queue behind the
        command just returned, for a server that tells a peer how many of its requests wait."""
        buffer, pos, n = self._buffer, self._pos, 0
        end = len(buffer)
        while n < most and end - pos >= 4:
            (length,) = _unpack_length(buffer, pos)
            if length < _MIN_LENGTH or end - pos - 4 < length:
                break
            pos += 4 + length
            n += 1
        return n

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        """Add bytes read from the peer; a bad length word at the front raises at once."""
        if self._error is not None:
            raise RemoteProtocolError(self._error)
        if not data:
            return
        buffer = self._buffer
        pos = self._pos
        if pos >= len(buffer):
            # everything before was returned: keep this chunk as it is (bytes are immutable)
            buffer = data if type(data) is bytes else bytes(data)
        elif type(buffer) is bytes:
            buffer = bytearray(memoryview(buffer)[pos:])
            buffer += data
        else:
            assert isinstance(buffer, bytearray)
            if pos:
                del buffer[:pos]  # CPython moves the start of a bytearray without copying
            buffer += data
        self._buffer = buffer
        self._pos = 0
        if len(buffer) >= 4:
            (length,) = _unpack_length(buffer, 0)
            if length < _MIN_LENGTH or length > self._max_length:
                self._fail(_length_error(length, self.max_frame_size))

    def _fail(self, exc: RemoteProtocolError) -> NoReturn:
        # Only the text is kept, and a new exception raised: ``exc``'s traceback holds the frames
        # that decoded the bad frame, with its bytes (16 MiB, and a copy as text), and kept here
        # it would hold them in a reference cycle until a garbage collection.
        self._error = message = str(exc)
        # Drop the bytes by replacing the buffer: views of it may live on in the traceback.
        self._buffer = b""
        self._pos = 0
        raise RemoteProtocolError(message) from None

    def next_command(self) -> RemotingCommand | None:
        """The next whole command, or ``None`` when more bytes are needed."""
        if self._error is not None:
            raise RemoteProtocolError(self._error)
        buffer = self._buffer
        pos = self._pos
        available = len(buffer) - pos
        if available < 4:
            return None
        (length,) = _unpack_length(buffer, pos)
        if length < _MIN_LENGTH or length > self._max_length:
            self._fail(_length_error(length, self.max_frame_size))
        if available < length + 4:
            return None
        try:
            with memoryview(buffer) as view:
                cmd = _decode_frame_body(view, pos + 4, length, self.max_header_size, self.max_ext_fields)
        except RemoteProtocolError as exc:
            self._fail(exc)
        # The next frame's length is checked by the next call, so this command is never lost.
        pos += length + 4
        if pos == len(buffer):
            self._buffer = b""
            pos = 0
        self._pos = pos
        return cmd

    def __iter__(self) -> Iterator[RemotingCommand]:
        """Every whole command buffered now."""
        while (cmd := self.next_command()) is not None:
            yield cmd

    def bytes_needed(self) -> int:
        """How many more bytes complete the next frame (its length word first); 0 if one is whole."""
        available = len(self._buffer) - self._pos
        if available < 4:
            return 4 - available
        length: int = _unpack_length(self._buffer, self._pos)[0]
        return max(0, length + 4 - available)

    def close(self) -> None:
        """The peer closed the stream: raise if it stopped in the middle of a frame."""
        if self._error is None and self.buffered:
            self._fail(RemoteProtocolError(f"stream ended inside a frame ({self.buffered} bytes pending)"))


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
