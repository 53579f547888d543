"""Every decoding entry point of ``rocketq.protocol``, as fuzz targets of one shape: ``target(data)``.

Each target feeds ``data`` to one decoder (or one path through several, as a server takes it) and
returns normally or raises :class:`~rocketq.errors.RemoteProtocolError`. Anything else is a bug
the fuzzer reports: the decoders promise that hostile bytes give a protocol error that names the
offending field, never ``ValueError``, ``UnicodeError``, ``OverflowError``, ``RecursionError``,
``MemoryError``, ``IndexError`` ...

:func:`run_one` is what the harness (:mod:`fuzz.fuzz_protocol`) calls: the first byte of the input
picks the target, the rest is the target's input. :func:`seed_inputs` gives the seed corpus: the
captured RocketMQ 4.9.4 frames (``tests/data/rocketmq-wire``) and the bodies, headers, messages
and property strings inside them, each addressed to the targets that read it.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

from rocketq.errors import ConfigError, RemoteProtocolError
from rocketq.protocol import bodies as _bodies
from rocketq.protocol.bodies import JsonBody, RegisterBrokerBody
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.fastjson import loads
from rocketq.protocol.frame import FrameDecoder, decode_frame
from rocketq.protocol.headers import REQUEST_HEADERS, RESPONSE_HEADERS, CommandHeader
from rocketq.protocol.message import (
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    UNSPECIFIED_HOST,
    decode_batch,
    decode_message,
    decode_messages,
    decompress_body,
    encode_message,
    encode_stored_batch,
    scan_stored,
)
from rocketq.protocol.message_id import parse_offset_msg_id, parse_uniq_id
from rocketq.protocol.properties import string_to_properties
from rocketq.protocol.trace import TraceBean, TraceContext, TraceType, decode_trace, encode_trace

__all__ = ["TARGETS", "WIRE_DIR", "run_one", "seed_inputs"]

WIRE_DIR = Path(__file__).resolve().parent.parent / "tests" / "data" / "rocketmq-wire"

#: Every typed JSON body class (decoded by the ``body`` target; the second byte picks one).
BODY_CLASSES: tuple[type[JsonBody], ...] = tuple(
    sorted(
        (
            cls
            for name in _bodies.__all__
            if isinstance(cls := getattr(_bodies, name), type) and issubclass(cls, JsonBody)
            if cls is not JsonBody
        ),
        key=lambda cls: cls.__name__,
    )
)

#: Every typed header class (the ``headers`` target tries them all on the same ext fields).
HEADER_CLASSES: tuple[type[CommandHeader], ...] = tuple(
    sorted({*REQUEST_HEADERS.values(), *RESPONSE_HEADERS.values()}, key=lambda cls: cls.__name__)
)

_SEND_CODES = frozenset(
    {
        RequestCode.SEND_MESSAGE,
        RequestCode.SEND_MESSAGE_V2,
        RequestCode.SEND_BATCH_MESSAGE,
        RequestCode.SEND_REPLY_MESSAGE,
        RequestCode.SEND_REPLY_MESSAGE_V2,
    }
)


def _command(cmd: RemotingCommand) -> None:
    """What a server (or client) does with a decoded command: its typed header, then its body."""
    table = RESPONSE_HEADERS if cmd.flag & 1 else REQUEST_HEADERS
    header_cls = table.get(cmd.code)
    header = header_cls.from_ext_fields(cmd.ext_fields) if header_cls is not None else None
    body = cmd.body
    if cmd.code in _SEND_CODES and not cmd.flag & 1 and header is not None:
        # the broker's send path: topic and properties from the header, into a stored record
        topic = getattr(header, "topic", "")
        properties = getattr(header, "properties", None) or ""
        string_to_properties(properties)
        if cmd.code == RequestCode.SEND_BATCH_MESSAGE:
            decode_batch(body, topic)
            _encode(
                lambda: encode_stored_batch(body, **_STORED_BATCH, topic=topic, batch_properties=properties)
            )
        else:
            _encode(lambda: encode_message(topic=topic, body=body, properties=properties))
    elif cmd.flag & 1 and body[4:8] in _MAGICS:  # a FOUND pull response, a query's records
        decode_messages(body)
    elif cmd.code == RequestCode.REGISTER_BROKER and not cmd.flag & 1 and body:
        compressed = cmd.ext_fields.get("compressed", "").lower() == "true"
        RegisterBrokerBody.decode(body, compressed=compressed)
    elif body and body[:1] in (b"{", b"["):
        loads(body)


_MAGICS = (struct.pack(">i", MESSAGE_MAGIC_CODE), struct.pack(">i", MESSAGE_MAGIC_CODE_V2))

_STORED_BATCH = {
    "queue_id": 0,
    "sys_flag": 0,
    "born_timestamp": 0,
    "born_host": UNSPECIFIED_HOST,
    "store_timestamp": 0,
    "store_host": UNSPECIFIED_HOST,
}


def _encode(encode: Callable[[], object]) -> None:
    """Encoders report what does not fit a record (a field, a length) as ConfigError: allowed."""
    try:
        encode()
    except ConfigError:
        pass


def frames(data: bytes) -> None:
    """A byte stream through :class:`FrameDecoder`, cut where the data says; each command handled."""
    cut = 1 + (data[0] if data else 0)
    data = data[1:]
    decoder = FrameDecoder()
    for pos in range(0, len(data), cut):
        decoder.receive_data(data[pos : pos + cut])
        while (cmd := decoder.next_command()) is not None:
            _command(cmd)
    decoder.close()


def frame(data: bytes) -> None:
    """One whole frame through :func:`decode_frame`, then handled as a command."""
    _command(decode_frame(data))


def headers(data: bytes) -> None:
    """Ext fields (a JSON object of strings, as a frame carries them) into every typed header."""
    try:
        ext = json.loads(data)
    except (ValueError, RecursionError):
        return
    if not isinstance(ext, dict) or not all(type(v) is str for v in ext.values()):
        return
    for cls in HEADER_CLASSES:
        try:
            cls.from_ext_fields(ext)
        except RemoteProtocolError:
            pass


def fastjson(data: bytes) -> None:
    """RocketMQ's JSON dialect (fastjson's), from bytes."""
    loads(data)


def body(data: bytes) -> None:
    """One typed body class (picked by the first byte) decodes the rest."""
    if not data:
        return
    BODY_CLASSES[data[0] % len(BODY_CLASSES)].decode(data[1:])


def register_compressed(data: bytes) -> None:
    """REGISTER_BROKER's deflated binary body (the input is deflated first, so the fuzzer mutates
    the layout inside, and also fed raw to reach the inflater's own checks)."""
    RegisterBrokerBody.decode(zlib.compress(data, 1), compressed=True)
    try:
        RegisterBrokerBody.decode(data, compressed=True)
    except RemoteProtocolError:
        pass


def messages(data: bytes) -> None:
    """Stored messages back to back (a pull body), each way they are read."""
    scan_stored(data)
    try:
        decode_messages(data, read_body=False)
    except RemoteProtocolError:
        pass
    try:
        decode_message(data)
    except RemoteProtocolError:
        pass
    decode_messages(data)


def batch(data: bytes) -> None:
    """A SEND_BATCH_MESSAGE body, decoded and turned into stored records as the broker does."""
    decode_batch(data, "T")
    _encode(lambda: encode_stored_batch(data, **_STORED_BATCH, topic="T", batch_properties="CLUSTER\x01c"))


def properties(data: bytes) -> None:
    """A property string (as a header or a record carries it) into a map and back into a record."""
    # surrogateescape turns bytes that are not UTF-8 into lone surrogates, as a "\udcff" escape in
    # a JSON header would arrive if the decoders did not replace them
    text = data.decode("utf-8", "surrogateescape")
    props = string_to_properties(text)
    _encode(lambda: encode_message(topic=text[:20], body=b"", properties=props))
    _encode(lambda: encode_message(topic="T", body=b"", properties=text))


def message_ids(data: bytes) -> None:
    """Offset and unique message ids (the text a client sends in VIEW_MESSAGE_BY_ID and traces)."""
    text = data.decode("utf-8", "replace")
    try:
        parse_offset_msg_id(text)
    except RemoteProtocolError:
        pass
    parse_uniq_id(text)


def trace(data: bytes) -> None:
    """A message-trace body (RocketMQ's trace record format)."""
    decode_trace(data)


def compressed(data: bytes) -> None:
    """A compressed message body: the first two bytes are the sys flag's compression bits."""
    if len(data) < 2:
        return
    (sys_flag,) = struct.unpack_from(">H", data)
    decompress_body(data[2:], sys_flag | 1)
    decompress_body(zlib.compress(data[2:], 1), 0x301)


_FAILED = object()


def _loads_or_failed(data: bytes, **options: int | bool) -> object:
    try:
        return loads(data, **options)  # type: ignore[arg-type]
    except RemoteProtocolError:
        return _FAILED


def fastjson_chunked(data: bytes) -> None:
    """Differential: parsed in small steps (as a server's worker thread parses a large body, here
    with windows of a few bytes, picked by the first byte), RocketMQ's JSON gives exactly what the
    whole-text parse gives, or fails as it does."""
    if not data:
        return
    window = 1 + data[0] % 64
    text = data[1:]
    whole = _loads_or_failed(text)
    try:
        chunked: object = loads(text, chunked=True, chunk_window=window)
    except RemoteProtocolError as exc:
        if "nesting deeper than" in str(exc):
            return  # the C parser takes deeper nesting whole; in steps, the Python bound holds
        chunked = _FAILED
    if (whole is _FAILED) != (chunked is _FAILED) or repr(whole) != repr(chunked):
        raise AssertionError(f"chunked parse (window {window}) differs: {chunked!r} != {whole!r}")


#: The targets, in the order the first input byte selects them (append only: crashers name them).
TARGETS: tuple[Callable[[bytes], None], ...] = (
    frames,
    frame,
    headers,
    fastjson,
    body,
    register_compressed,
    messages,
    batch,
    properties,
    message_ids,
    trace,
    compressed,
    fastjson_chunked,
)


def run_one(data: bytes) -> None:
    """Run the target the first byte selects on the rest; only RemoteProtocolError may escape."""
    if not data:
        return
    target = TARGETS[data[0] % len(TARGETS)]
    try:
        target(data[1:])
    except RemoteProtocolError:
        pass


def _select(target: Callable[[bytes], None]) -> bytes:
    return bytes([TARGETS.index(target)])


def seed_inputs() -> Iterator[bytes]:
    """Seeds for every target from the captured frames (and the side files' message records)."""
    for path in sorted(WIRE_DIR.glob("*.jsonl")):
        with path.open(encoding="utf-8") as fh:
            lines = [json.loads(line) for line in fh if line.strip()]
        for line in lines:
            raw_hex = line.get("frame_hex")
            if not raw_hex:
                continue
            raw = bytes.fromhex(raw_hex)
            yield _select(frame) + raw
            yield _select(frames) + b"\xff" + raw
            try:
                cmd = decode_frame(raw)
            except RemoteProtocolError:
                continue
            if cmd.ext_fields:
                yield _select(headers) + json.dumps(cmd.ext_fields).encode()
            for key in ("i", "properties"):
                if key in cmd.ext_fields:
                    yield _select(properties) + cmd.ext_fields[key].encode()
            for key in ("msgId", "offsetMsgId"):
                if key in cmd.ext_fields:
                    yield _select(message_ids) + cmd.ext_fields[key].encode()
            body_bytes = cmd.body
            if not body_bytes:
                continue
            if body_bytes[:1] in (b"{", b"["):
                yield _select(fastjson) + body_bytes
                yield _select(fastjson_chunked) + bytes([len(body_bytes) % 64]) + body_bytes
                for i, cls in enumerate(BODY_CLASSES):
                    if cls.__name__ in line.get("note", "") or i % 16 == len(body_bytes) % 16:
                        yield _select(body) + bytes([i]) + body_bytes
            elif cmd.code == RequestCode.SEND_BATCH_MESSAGE:
                yield _select(batch) + body_bytes
            elif cmd.code == RequestCode.REGISTER_BROKER:
                try:
                    yield _select(register_compressed) + zlib.decompress(body_bytes)
                except zlib.error:
                    pass
            elif body_bytes[4:8] in _MAGICS:
                yield _select(messages) + body_bytes
                for msg in decode_messages(body_bytes):
                    if msg.topic == "RMQ_SYS_TRACE_TOPIC":
                        yield _select(trace) + msg.body
    yield _select(compressed) + b"\x03\x01" + zlib.compress(b"hello " * 100)
    for kind in TraceType:
        ctx = TraceContext(trace_type=kind, group_name="G", request_id="r", beans=(TraceBean(topic="T"),))
        yield _select(trace) + encode_trace([ctx]).encode()
