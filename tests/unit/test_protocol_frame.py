"""Frames: golden bytes from RocketMQ's layouts, lenient reading, every error, incremental decoding."""

from __future__ import annotations

import json
import socket
import struct
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.errors import ConfigError, RemoteProtocolError
from rocketq.protocol import (
    DEFAULT_MAX_FRAME_SIZE,
    FrameDecoder,
    LanguageCode,
    RemotingCommand,
    SerializeType,
    decode_frame,
    encode_frame,
    encode_frame_parts,
    encode_header,
    read_commands,
)


def _frame(serialize_type: int, header: bytes, body: bytes = b"") -> bytes:
    """A frame assembled by hand from the layout: length, type<<24 | header length, header, body."""
    return (
        struct.pack(">iI", 4 + len(header) + len(body), (serialize_type << 24) | len(header)) + header + body
    )


def _rmq_header(
    code: int,
    language: int,
    version: int,
    opaque: int,
    flag: int,
    remark: bytes,
    ext: list[tuple[bytes, bytes]],
) -> bytes:
    entries = b"".join(struct.pack(">h", len(k)) + k + struct.pack(">i", len(v)) + v for k, v in ext)
    return (
        struct.pack(">hbhii", code, language, version, opaque, flag)
        + struct.pack(">i", len(remark))
        + remark
        + struct.pack(">i", len(entries))
        + entries
    )


# ---------------------------------------------------------------------------------------------
# Golden bytes


def test_json_request_golden_bytes() -> None:
    cmd = RemotingCommand(
        code=14,
        language=LanguageCode.JAVA,
        version=401,
        opaque=16,
        ext_fields={"queueId": "0", "topic": "WireAdmin", "consumerGroup": "WireAdminGroup"},
    )
    header = (
        b'{"code":14,"extFields":{"queueId":"0","topic":"WireAdmin","consumerGroup":"WireAdminGroup"},'
        b'"flag":0,"language":"JAVA","opaque":16,"serializeTypeCurrentRPC":"JSON","version":401}'
    )
    assert encode_frame(cmd) == _frame(0, header)
    assert encode_frame(cmd)[:8] == bytes.fromhex("0000") + struct.pack(
        ">H", 4 + len(header)
    ) + bytes.fromhex("0000") + struct.pack(">H", len(header))
    assert decode_frame(_frame(0, header)) == cmd


def test_json_response_golden_bytes_with_remark_body_and_no_ext_fields() -> None:
    cmd = RemotingCommand(
        code=17,
        language=LanguageCode.JAVA,
        version=401,
        opaque=6,
        flag=1,
        remark='No topic "x"\nSee faq',
        body=b"\x00\x01binary",
    )
    header = (
        b'{"code":17,"flag":1,"language":"JAVA","opaque":6,"remark":"No topic \\"x\\"\\nSee faq",'
        b'"serializeTypeCurrentRPC":"JSON","version":401}'
    )
    assert encode_frame(cmd) == _frame(0, header, b"\x00\x01binary")
    assert decode_frame(_frame(0, header, b"\x00\x01binary")) == cmd


def test_json_empty_ext_fields_written_only_when_asked() -> None:
    request = RemotingCommand.request(11, {"topic": "T"}, opaque=27)
    response = request.response(25, remark="the consumer's subscription not latest", ext_fields={})
    header = encode_header(response)
    assert header.startswith(b'{"code":25,"extFields":{},"flag":1,')
    assert b"extFields" not in encode_header(request.response(25))
    decoded = decode_frame(encode_frame(response))
    assert decoded.write_empty_ext_fields
    assert encode_frame(decoded) == encode_frame(response)


def test_json_text_is_escaped_as_fastjson_escapes_it() -> None:
    cmd = RemotingCommand(
        code=310,
        language=LanguageCode.JAVA,
        ext_fields={"i": "KEYS\x01k\x02u\x0bv\x1fw\x7fx\x85y\u2028z/é你好✓"},
    )
    header = encode_header(cmd)
    assert b'"i":"KEYS\\u0001k\\u0002u\\u000Bv\\u001Fw\\u007Fx\\u0085y\\u2028z/\xc3\xa9' in header
    assert decode_frame(encode_frame(cmd)) == cmd


def test_rocketmq_request_golden_bytes() -> None:
    cmd = RemotingCommand(
        code=30,
        language=LanguageCode.PYTHON,
        version=401,
        opaque=2,
        flag=0,
        ext_fields={"topic": "WireDemo", "queueId": "0"},
        serialize_type=SerializeType.ROCKETMQ,
    )
    header = bytes.fromhex(
        "001e"  # code 30
        "03"  # language PYTHON
        "0191"  # version 401
        "00000002"  # opaque
        "00000000"  # flag
        "00000000"  # remark: none
        "00000021"  # ext fields: 33 bytes
        "0005"
        + b"topic".hex()
        + "00000008"
        + b"WireDemo".hex()
        + "0007"
        + b"queueId".hex()
        + "00000001"
        + b"0".hex()
    )
    assert encode_frame(cmd) == _frame(1, header)
    assert decode_frame(_frame(1, header)) == cmd


def test_rocketmq_response_golden_bytes_with_remark_and_body() -> None:
    header = _rmq_header(0, 0, 401, 7, 1, "FOUND ✓".encode(), [(b"msgId", b"7F00")])
    cmd = decode_frame(_frame(1, header, b"body"))
    assert cmd == RemotingCommand(
        code=0,
        language=LanguageCode.JAVA,
        version=401,
        opaque=7,
        flag=1,
        remark="FOUND ✓",
        ext_fields={"msgId": "7F00"},
        body=b"body",
        serialize_type=SerializeType.ROCKETMQ,
    )
    assert encode_frame(cmd) == _frame(1, header, b"body")


def test_rocketmq_reads_zero_lengths_as_java_nulls() -> None:
    # RocketMQ writes "" with length 0 and reads length 0 back as null; null entries are dropped
    header = _rmq_header(0, 0, 401, 1, 1, b"", [(b"a", b"1"), (b"", b"x"), (b"b", b""), (b"c", b"3")])
    cmd = decode_frame(_frame(1, header))
    assert cmd.remark is None
    assert cmd.ext_fields == {"a": "1", "c": "3"}
    # and rocketq writes an empty remark as Java does: length 0
    empty = RemotingCommand(code=0, remark="", serialize_type=SerializeType.ROCKETMQ)
    assert decode_frame(encode_frame(empty)).remark is None


def test_signed_fields_keep_their_sign_in_both_serializations() -> None:
    for serialize_type in SerializeType:
        cmd = RemotingCommand(code=-5, version=-1, opaque=-(2**31), flag=-1, serialize_type=serialize_type)
        assert decode_frame(encode_frame(cmd)) == cmd


# ---------------------------------------------------------------------------------------------
# Lenient JSON reading


def test_json_reading_is_lenient_like_fastjson() -> None:
    header = json.dumps(
        {
            "version": "399",
            "code": "105",
            "opaque": 3,
            "unknownKey": {"nested": [1, 2]},
            "extFields": {"topic": "T", "n": 5, "b": True, "f": False, "gone": None, "obj": {"x": 1}},
            "serializeTypeCurrentRPC": "ROCKETMQ",
        }
    ).encode()
    cmd = decode_frame(_frame(0, header))
    assert cmd.code == 105
    assert cmd.version == 399
    assert cmd.opaque == 3
    assert cmd.flag == 0
    assert cmd.language == LanguageCode.JAVA  # RocketMQ's default when absent
    assert cmd.remark is None
    assert cmd.ext_fields == {"topic": "T", "n": "5", "b": "true", "f": "false", "obj": '{"x":1}'}
    assert cmd.serialize_type == SerializeType.JSON  # the header word decides, not the key


@pytest.mark.parametrize(
    ("language", "expected"),
    [
        ("GO", LanguageCode.GO),
        (9, LanguageCode.GO),
        ("NODE_JS", LanguageCode.NODE_JS),
        ("COBOL", LanguageCode.OTHER),
    ],
)
def test_json_language_by_name_or_number(language: object, expected: LanguageCode) -> None:
    header = json.dumps({"code": 0, "language": language}).encode()
    assert decode_frame(_frame(0, header)).language == expected


def test_rocketmq_unknown_language_byte_reads_as_other() -> None:
    assert decode_frame(_frame(1, _rmq_header(0, 99, 0, 0, 0, b"", []))).language == LanguageCode.OTHER


# ---------------------------------------------------------------------------------------------
# Errors


BAD_FRAMES = {
    "length below 4": struct.pack(">i", 3) + b"\x00\x00\x00",
    "negative length": struct.pack(">i", -1) + b"\x00" * 8,
    "header longer than frame": struct.pack(">iI", 8, 10) + b"{}\x00\x00",
    "unknown serialize type": struct.pack(">iI", 6, (2 << 24) | 2) + b"{}",
    "JSON that does not parse": _frame(0, b'{"code":'),
    "JSON that is not an object": _frame(0, b"[1,2]"),
    "empty JSON header": _frame(0, b""),
    "JSON code not a number": _frame(0, b'{"code":"abc"}'),
    "JSON code a float": _frame(0, b'{"code":1.5}'),
    "JSON opaque out of range": _frame(0, b'{"opaque":2147483648}'),
    "JSON extFields not an object": _frame(0, b'{"extFields":[1]}'),
    "JSON language of the wrong type": _frame(0, b'{"language":[1]}'),
    "JSON header not UTF-8": _frame(0, b'{"remark":"\xff"}'),
    "ROCKETMQ header too short": _frame(1, b"\x00" * 20),
    "ROCKETMQ remark longer than header": _frame(
        1, _rmq_header(0, 0, 0, 0, 0, b"", [])[:13] + struct.pack(">i", 100) + b"\x00" * 4
    ),
    "ROCKETMQ negative remark length": _frame(
        1, _rmq_header(0, 0, 0, 0, 0, b"", [])[:13] + struct.pack(">i", -1) + b"\x00" * 4
    ),
    "ROCKETMQ ext length mismatch": _frame(1, _rmq_header(0, 0, 0, 0, 0, b"", [(b"k", b"v")])[:-1]),
    "ROCKETMQ trailing bytes": _frame(1, _rmq_header(0, 0, 0, 0, 0, b"", []) + b"\x00"),
    "ROCKETMQ negative key length": _frame(
        1,
        _rmq_header(0, 0, 0, 0, 0, b"", [])[:17] + struct.pack(">i", 7) + struct.pack(">h", -1) + b"\x00" * 5,
    ),
    "ROCKETMQ value past the end": _frame(
        1, _rmq_header(0, 0, 0, 0, 0, b"", [])[:17] + struct.pack(">i", 7) + struct.pack(">hbi", 1, 65, 9)
    ),
    "ROCKETMQ text not UTF-8": _frame(1, _rmq_header(0, 0, 0, 0, 0, b"\xc3", [])),
}


def _feed(decoder: FrameDecoder, raw: bytes) -> RemotingCommand | None:
    decoder.receive_data(raw)
    return decoder.next_command()


@pytest.mark.parametrize("name", sorted(BAD_FRAMES))
def test_bad_frames_raise_remote_protocol_error(name: str) -> None:
    raw = BAD_FRAMES[name]
    with pytest.raises(RemoteProtocolError):
        decode_frame(raw)
    decoder = FrameDecoder()
    with pytest.raises(RemoteProtocolError):
        _feed(decoder, raw)
    # the stream cannot be resynchronised: the decoder keeps failing
    with pytest.raises(RemoteProtocolError):
        decoder.next_command()
    with pytest.raises(RemoteProtocolError):
        decoder.receive_data(encode_frame(RemotingCommand(code=0)))


def test_an_oversized_length_is_rejected_from_its_four_bytes_alone() -> None:
    decoder = FrameDecoder(max_frame_size=1024)
    decoder.receive_data(b"\x00\x00")
    with pytest.raises(RemoteProtocolError, match="frame of 1025 bytes exceeds the maximum of 1024"):
        decoder.receive_data(struct.pack(">i", 1021)[2:])  # 1025 bytes with the length: one too many
    assert decoder.buffered == 0  # nothing kept
    decoder = FrameDecoder()
    with pytest.raises(RemoteProtocolError, match="exceeds"):
        decoder.receive_data(struct.pack(">i", 2**31 - 1))


def test_the_maximum_frame_size_counts_the_whole_frame() -> None:
    body = b"x" * 1000
    raw = encode_frame(RemotingCommand(code=0, body=body))
    decoder = FrameDecoder(max_frame_size=len(raw))
    decoder.receive_data(raw)
    assert decoder.next_command() == RemotingCommand(code=0, body=body)
    with pytest.raises(RemoteProtocolError):
        FrameDecoder(max_frame_size=len(raw) - 1).receive_data(raw)
    assert DEFAULT_MAX_FRAME_SIZE == 16 * 1024 * 1024
    with pytest.raises(ConfigError):
        FrameDecoder(max_frame_size=7)


def test_encoding_refuses_what_the_wire_cannot_carry() -> None:
    with pytest.raises(RemoteProtocolError, match="code"):
        encode_frame(RemotingCommand(code=40000, serialize_type=SerializeType.ROCKETMQ))
    with pytest.raises(RemoteProtocolError, match="code"):
        encode_frame(RemotingCommand(code=2**31))
    with pytest.raises(RemoteProtocolError, match="'n'"):
        encode_frame(RemotingCommand(code=0, ext_fields={"n": 5}))  # type: ignore[dict-item]
    with pytest.raises(RemoteProtocolError):
        encode_frame(RemotingCommand(code=0, ext_fields={"n": 5}, serialize_type=SerializeType.ROCKETMQ))  # type: ignore[dict-item]
    # a language outside LanguageCode: the encoder refuses it, or (compiled with mypyc, which
    # checks the annotated types at run time) the command is refused as it is built
    with pytest.raises((RemoteProtocolError, TypeError)):
        encode_frame(RemotingCommand(code=0, language=99))  # type: ignore[arg-type]
    with pytest.raises(RemoteProtocolError, match="24-bit"):
        encode_frame(RemotingCommand(code=0, remark="x" * (1 << 24)))


# ---------------------------------------------------------------------------------------------
# Incremental decoding and the blocking reader


def test_half_a_frame_is_not_an_error_and_bytes_needed_counts_down() -> None:
    raw = encode_frame(RemotingCommand(code=34, body=b"{}"))
    decoder = FrameDecoder()
    assert decoder.bytes_needed() == 4
    decoder.receive_data(raw[:2])
    assert decoder.next_command() is None
    assert decoder.bytes_needed() == 2
    decoder.receive_data(raw[2:10])
    assert decoder.next_command() is None
    assert decoder.bytes_needed() == len(raw) - 10
    decoder.receive_data(raw[10:] + raw[:3])
    assert decoder.next_command() == RemotingCommand(code=34, body=b"{}")
    assert decoder.next_command() is None
    assert decoder.buffered == 3
    with pytest.raises(RemoteProtocolError, match="inside a frame"):
        decoder.close()


def test_many_frames_in_one_chunk_and_iteration() -> None:
    commands = [RemotingCommand(code=i, opaque=i, body=bytes([i]) * i) for i in range(20)]
    decoder = FrameDecoder()
    decoder.receive_data(b"".join(encode_frame(c) for c in commands))
    assert list(decoder) == commands
    decoder.close()  # at a frame boundary: fine


def test_encode_frame_parts_join_to_the_frame() -> None:
    cmd = RemotingCommand(code=11, ext_fields={"a": "b"}, body=b"z" * 4096)
    head, body = encode_frame_parts(cmd)
    assert body is cmd.body
    assert head + body == encode_frame(cmd)


def test_read_commands_over_a_blocking_socket() -> None:
    left, right = socket.socketpair()
    commands = [RemotingCommand(code=i, body=b"b" * (i * 997)) for i in range(30)]

    def send() -> None:
        with left:
            for cmd in commands:
                left.sendall(encode_frame(cmd))

    sender = threading.Thread(target=send)
    sender.start()
    with right:
        assert list(read_commands(right.recv, chunk_size=1000)) == commands
    sender.join()


def test_read_commands_raises_when_the_peer_stops_mid_frame() -> None:
    raw = encode_frame(RemotingCommand(code=1, body=b"x" * 50))
    chunks = [raw, raw[:20], b""]
    reader = read_commands(lambda _n: chunks.pop(0))
    assert next(reader) == RemotingCommand(code=1, body=b"x" * 50)
    with pytest.raises(RemoteProtocolError, match="inside a frame"):
        next(reader)


# ---------------------------------------------------------------------------------------------
# Round trips


_INT32 = st.integers(-(2**31), 2**31 - 1)
_INT16 = st.integers(-(2**15), 2**15 - 1)


@st.composite
def commands(draw: st.DrawFn, serialize_type: SerializeType) -> RemotingCommand:
    rmq = serialize_type == SerializeType.ROCKETMQ
    text = st.text(min_size=1 if rmq else 0, max_size=30)
    return RemotingCommand(
        code=draw(_INT16 if rmq else _INT32),
        language=draw(st.sampled_from(LanguageCode)),
        version=draw(_INT16 if rmq else _INT32),
        opaque=draw(_INT32),
        flag=draw(_INT32),
        remark=draw(st.none() | text),
        ext_fields=draw(st.dictionaries(st.text(min_size=1 if rmq else 0, max_size=20), text, max_size=8)),
        body=draw(st.binary(max_size=200)),
        serialize_type=serialize_type,
    )


@settings(max_examples=300, deadline=None)
@given(cmd=commands(SerializeType.JSON))
def test_json_round_trip(cmd: RemotingCommand) -> None:
    raw = encode_frame(cmd)
    decoded = decode_frame(raw)
    assert decoded == cmd
    assert list(decoded.ext_fields) == list(cmd.ext_fields)
    assert encode_frame(decoded) == raw


@settings(max_examples=300, deadline=None)
@given(cmd=commands(SerializeType.ROCKETMQ))
def test_rocketmq_round_trip(cmd: RemotingCommand) -> None:
    raw = encode_frame(cmd)
    decoded = decode_frame(raw)
    assert decoded == cmd
    assert list(decoded.ext_fields) == list(cmd.ext_fields)
    assert encode_frame(decoded) == raw


@settings(max_examples=50, deadline=None)
@given(
    batch=st.lists(commands(SerializeType.JSON) | commands(SerializeType.ROCKETMQ), min_size=1, max_size=6),
    cuts=st.lists(st.integers(min_value=1, max_value=64), min_size=1, max_size=40),
)
def test_any_chunking_gives_the_same_commands(batch: list[RemotingCommand], cuts: list[int]) -> None:
    stream = b"".join(encode_frame(cmd) for cmd in batch)
    decoder = FrameDecoder()
    got: list[RemotingCommand] = []
    pos = 0
    i = 0
    while pos < len(stream):
        size = cuts[i % len(cuts)]
        decoder.receive_data(stream[pos : pos + size])
        got.extend(decoder)
        pos += size
        i += 1
    assert got == batch
    assert decoder.buffered == 0


def test_a_good_frame_before_a_bad_one_is_still_returned() -> None:
    good = encode_frame(RemotingCommand(code=7))
    decoder = FrameDecoder()
    decoder.receive_data(good + struct.pack(">i", -5))
    assert decoder.next_command() == RemotingCommand(code=7)
    with pytest.raises(RemoteProtocolError, match="below the minimum"):
        decoder.next_command()


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=8), st.text(max_size=12), max_size=8))
def test_shared_ext_fields_encoder_writes_what_a_fresh_json_encoder_writes(ext: dict[str, str]) -> None:
    from rocketq.protocol import frame

    assert frame._ext_object(ext) == frame._json_object(ext)
    cmd = RemotingCommand.request(310, ext)
    assert decode_frame(encode_frame(cmd)).ext_fields == ext


# ---------------------------------------------------------------------------------------------
# orjson and the standard library: the same commands and the same bytes

_JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)  # past 64 bits, where orjson reads a float
    | st.floats(allow_nan=False)
    | st.text(max_size=12)
)
_JSON_VALUES = st.recursive(
    _JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
_HEADER_KEYS = st.sampled_from(["code", "flag", "opaque", "version", "language", "remark", "extFields", "x"])


@st.composite
def json_headers(draw: st.DrawFn) -> bytes:
    """JSON objects shaped like headers, from plain ones to every type in every field."""
    obj: dict[str, object] = {
        "code": draw(st.integers(min_value=-(2**31), max_value=2**31 - 1)),
        "extFields": draw(st.dictionaries(st.text(max_size=6), st.text(max_size=10), max_size=4)),
    }
    for key in draw(st.lists(_HEADER_KEYS, max_size=4)):
        if key == "extFields":
            obj[key] = draw(st.dictionaries(st.text(max_size=4), _JSON_VALUES, max_size=3) | _JSON_VALUES)
        else:
            obj[key] = draw(_JSON_VALUES)
    # ensure_ascii writes lone surrogates as \ud800 escapes, which orjson refuses
    return json.dumps(obj, ensure_ascii=draw(st.booleans()), separators=(",", ":")).encode(
        "utf-8", "surrogatepass"
    )


def _decode_header(raw: bytes, fast: bool) -> RemotingCommand | str:
    from rocketq.protocol import frame

    try:
        return frame._decode_json_header(memoryview(raw), len(raw), 64, fast)
    except RemoteProtocolError as exc:
        return f"error: {exc}"


@settings(max_examples=400, deadline=None)
@given(raw=json_headers())
def test_orjson_and_the_stdlib_decode_every_header_alike(raw: bytes) -> None:
    from rocketq.protocol import frame

    assert frame._fast_loads is not None, "orjson is a dependency: the fast path must be tested"
    assert _decode_header(raw, True) == _decode_header(raw, False)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"code":1,"extFields":{"a":"\\ud800"}}',  # a lone surrogate: orjson refuses, "?" as Java
        b'{"code":99999999999999999999,"extFields":{}}',  # over 64 bits
        b'{"code":1,"extFields":{"a":99999999999999999999}}',
        b'{"code":1,"language":99999999999999999999}',
        b'{"code":1,"remark":1.5E300}',
        b'{"code":1,"extFields":[1]}',
        b' {"code":1} ',
        b'{"code":1,"code":2}',
        b"[1]",
        b"{",
    ],
)
def test_orjson_and_the_stdlib_decode_edge_headers_alike(raw: bytes) -> None:
    assert _decode_header(raw, True) == _decode_header(raw, False)


@settings(max_examples=300, deadline=None)
@given(
    ext=st.dictionaries(st.text(max_size=8), st.text(max_size=12), max_size=8),
    remark=st.none() | st.text(max_size=12),
)
def test_orjson_and_the_stdlib_encode_every_header_alike(ext: dict[str, str], remark: str | None) -> None:
    from rocketq.protocol import frame

    cmd = RemotingCommand.request(310, ext)
    cmd.remark = remark
    fast = frame._fast_dumps
    assert fast is not None
    with_orjson = encode_frame(cmd)
    frame._fast_dumps = None
    try:
        assert encode_frame(cmd) == with_orjson
    finally:
        frame._fast_dumps = fast
