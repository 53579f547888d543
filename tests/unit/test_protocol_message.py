"""The stored-message and batch layouts: golden bytes from the Java layouts, round trips, bad input."""

from __future__ import annotations

import dataclasses
import doctest
import random
import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rocketq.protocol.message as message_module
from rocketq.errors import ConfigError, RemoteProtocolError
from rocketq.protocol.message import (
    BLANK_MAGIC_CODE,
    COMPRESS_BODY_OVER,
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    PHYSICAL_OFFSET_POSITION,
    QUEUE_OFFSET_POSITION,
    STORE_OFFSETS,
    CompressionType,
    Message,
    MessageExt,
    MessageSysFlag,
    ScanStop,
    batch_properties,
    body_crc,
    decode_batch,
    decode_message,
    decode_messages,
    decompress_body,
    encode_batch,
    encode_message,
    encode_message_ext,
    encode_stored_batch,
    maybe_compress,
    scan_stored,
    store_timestamp_position,
    stored_size,
)
from rocketq.protocol.message_id import HostPort
from tests.sourcemodule import source_module

BORN4 = HostPort("192.168.1.20", 52001)
STORE4 = HostPort("10.0.0.1", 10911)
BORN6 = HostPort("fd00::2", 40000)
STORE6 = HostPort("2001:db8::1", 10911)


def java_layout(
    *,
    topic: bytes,
    body: bytes,
    props: bytes,
    queue_id: int,
    flag: int,
    queue_offset: int,
    phys: int,
    sys_flag: int,
    born_ts: int,
    born: tuple[bytes, int],
    store_ts: int,
    store: tuple[bytes, int],
    reconsume: int,
    prepared: int,
) -> bytes:
    """A stored record written field by field the way CommitLog's encoder writes it."""
    out = bytearray()
    size = 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + len(born[0]) + 4 + 8 + len(store[0]) + 4 + 4 + 8
    size += 4 + len(body) + 1 + len(topic) + 2 + len(props)
    out += struct.pack(">i", size)
    out += bytes.fromhex("DAA320A7")
    out += struct.pack(">i", zlib.crc32(body) & 0x7FFFFFFF)
    out += struct.pack(">i", queue_id)
    out += struct.pack(">i", flag)
    out += struct.pack(">q", queue_offset)
    out += struct.pack(">q", phys)
    out += struct.pack(">i", sys_flag)
    out += struct.pack(">q", born_ts)
    out += born[0] + struct.pack(">i", born[1])
    out += struct.pack(">q", store_ts)
    out += store[0] + struct.pack(">i", store[1])
    out += struct.pack(">i", reconsume)
    out += struct.pack(">q", prepared)
    out += struct.pack(">i", len(body)) + body
    out += struct.pack(">b", len(topic)) + topic
    out += struct.pack(">h", len(props)) + props
    assert len(out) == size
    return bytes(out)


def test_module_doctests() -> None:
    import rocketq.protocol.message_id as message_id_module
    import rocketq.protocol.properties as properties_module

    for module in (message_module, message_id_module, properties_module):
        failures, tried = doctest.testmod(source_module(module))
        assert tried, module.__name__
        assert failures == 0, module.__name__


def test_magic_codes_are_rocketmqs() -> None:
    assert MESSAGE_MAGIC_CODE & 0xFFFFFFFF == 0xDAA320A7
    assert MESSAGE_MAGIC_CODE_V2 & 0xFFFFFFFF == 0xDAA320AB
    assert BLANK_MAGIC_CODE & 0xFFFFFFFF == 0xCBD43194


def test_golden_ipv4_record() -> None:
    props = "TAGS\x01TagA\x02KEYS\x01k1 k2\x02UNIQ_KEY\x01C0A80114303900000000000000000007"
    got = encode_message(
        topic="Orders",
        body=b"hello",
        properties={"TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "C0A80114303900000000000000000007"},
        queue_id=3,
        flag=7,
        sys_flag=0,
        born_timestamp=1_795_248_381_856,
        born_host=BORN4,
        store_timestamp=1_795_248_381_866,
        store_host=STORE4,
        reconsume_times=2,
        prepared_transaction_offset=0,
        queue_offset=41,
        commit_log_offset=123_456,
    )
    want = java_layout(
        topic=b"Orders",
        body=b"hello",
        props=props.encode(),
        queue_id=3,
        flag=7,
        queue_offset=41,
        phys=123_456,
        sys_flag=0,
        born_ts=1_795_248_381_856,
        born=(bytes([192, 168, 1, 20]), 52001),
        store_ts=1_795_248_381_866,
        store=(bytes([10, 0, 0, 1]), 10911),
        reconsume=2,
        prepared=0,
    )
    assert got == want
    assert len(got) == stored_size(0, 5, 6, len(props))
    (msg,) = decode_messages(got)
    assert msg.topic == "Orders"
    assert msg.tags == "TagA"
    assert msg.key_list == ["k1", "k2"]
    assert msg.msg_id == "C0A80114303900000000000000000007"
    assert msg.offset_msg_id == "0A00000100002A9F000000000001E240"
    assert msg.store_size == len(got)
    assert msg.body_crc == body_crc(b"hello")


def test_golden_ipv6_hosts_set_sys_flag_bits() -> None:
    for born, store, bits in ((BORN6, STORE4, 0x10), (BORN4, STORE6, 0x20), (BORN6, STORE6, 0x30)):
        got = encode_message(
            topic="T6",
            body=b"x" * 10,
            properties="a\x01b",
            sys_flag=0x4,  # transaction prepared; host bits are added by the encoder
            born_timestamp=5,
            born_host=born,
            store_timestamp=6,
            store_host=store,
            prepared_transaction_offset=99,
        )
        want = java_layout(
            topic=b"T6",
            body=b"x" * 10,
            props=b"a\x01b",
            queue_id=0,
            flag=0,
            queue_offset=0,
            phys=0,
            sys_flag=0x4 | bits,
            born_ts=5,
            born=(born.packed[:-4], born.port),
            store_ts=6,
            store=(store.packed[:-4], store.port),
            reconsume=0,
            prepared=99,
        )
        assert got == want
        (msg,) = decode_messages(got)
        assert (msg.born_host, msg.store_host, msg.sys_flag) == (born, store, 0x4 | bits)
        assert MessageSysFlag.transaction_type(msg.sys_flag) == MessageSysFlag.TRANSACTION_PREPARED_TYPE
        assert struct.unpack_from(">q", got, store_timestamp_position(msg.sys_flag)) == (6,)
        assert len(msg.offset_msg_id) == (56 if store.is_ipv6 else 32)


def test_encoder_clears_stale_host_bits() -> None:
    rec = encode_message(topic="t", body=b"", sys_flag=0x30, born_host=BORN4, store_host=STORE4)
    assert decode_messages(rec)[0].sys_flag == 0


def test_store_patches_offsets_and_timestamp_in_place() -> None:
    rec = bytearray(
        encode_message(topic="t", body=b"abc", born_host=BORN6, store_host=STORE4, store_timestamp=1)
    )
    STORE_OFFSETS.pack_into(rec, QUEUE_OFFSET_POSITION, 17, 4096)
    struct.pack_into(">q", rec, store_timestamp_position(0x10), 1_800_000_000_000)
    (msg,) = decode_messages(rec)
    assert (msg.queue_offset, msg.commit_log_offset, msg.store_timestamp) == (17, 4096, 1_800_000_000_000)
    assert PHYSICAL_OFFSET_POSITION == QUEUE_OFFSET_POSITION + 8
    assert bytes(rec) == encode_message(
        topic="t",
        body=b"abc",
        born_host=BORN6,
        store_host=STORE4,
        store_timestamp=1_800_000_000_000,
        queue_offset=17,
        commit_log_offset=4096,
    )


def test_long_topic_uses_v2_magic_and_two_byte_length() -> None:
    topic = "t" * 200
    rec = encode_message(topic=topic, body=b"b", born_host=BORN4, store_host=STORE4)
    assert struct.unpack_from(">i", rec, 4) == (MESSAGE_MAGIC_CODE_V2,)
    assert rec[88 + 1 : 88 + 3] == struct.pack(">H", 200)
    assert decode_messages(rec)[0].topic == topic
    assert scan_stored(rec).count == 1
    assert struct.unpack_from(">i", encode_message(topic="t" * 127, body=b""), 4) == (MESSAGE_MAGIC_CODE,)


def test_encoder_refuses_what_no_reader_accepts() -> None:
    with pytest.raises(ConfigError, match="properties"):
        encode_message(topic="t", body=b"", properties={"k": "v" * 40_000})
    with pytest.raises(ConfigError, match="topic"):
        encode_message(topic="t" * 70_000, body=b"")
    with pytest.raises(ConfigError, match="int32/int64"):
        encode_message(topic="t", body=b"", flag=2**31)
    with pytest.raises(ConfigError, match="int32/int64"):
        encode_message(topic="t", body=b"", queue_offset=2**63)
    with pytest.raises(ConfigError, match="int32"):
        encode_batch([Message("t", b"", -(2**31) - 1)])


def test_message_ext_accessors() -> None:
    msg = MessageExt("T", b"", store_host=STORE4, commit_log_offset=333)
    assert msg.msg_id == msg.offset_msg_id == "0A00000100002A9F000000000000014D"
    assert msg.tags is None
    assert msg.keys is None
    assert msg.key_list == []
    msg.tags = "TagX"
    msg.keys = ["a", "b"]
    assert msg.properties == {"TAGS": "TagX", "KEYS": "a b"}
    msg.tags = None
    assert "TAGS" not in msg.properties
    assert isinstance(msg, Message)


def test_message_delay_and_wait_accessors() -> None:
    msg = Message("T")
    assert msg.delay_time_level == 0
    assert msg.wait_store_msg_ok is True  # absent means wait, as in Java
    msg.delay_time_level = 3
    msg.wait_store_msg_ok = False
    assert msg.properties == {"DELAY": "3", "WAIT": "false"}
    assert (msg.delay_time_level, msg.wait_store_msg_ok) == (3, False)
    msg.properties["DELAY"] = "x"
    assert msg.delay_time_level == 0


# -------------------------------------------------------------------------------- round trips

topics = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40).filter(
    lambda t: len(t.encode()) <= 127
)
prop_names = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x01\x02"),
    min_size=1,
    max_size=12,
)
prop_values = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x02"), min_size=1, max_size=30
)
ipv4 = st.tuples(*[st.integers(0, 255)] * 4).map(lambda t: ".".join(map(str, t)))
ipv6 = st.binary(min_size=16, max_size=16).map(lambda b: str(__import__("ipaddress").IPv6Address(b)))
hosts = st.builds(HostPort, st.one_of(ipv4, ipv6), st.integers(0, 65535))
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)


@st.composite
def messages(draw: st.DrawFn) -> MessageExt:
    compressed = draw(st.booleans())
    sys_flag = draw(st.sampled_from([0, 0x2, 0x4, 0x8, 0xC])) | (0x301 if compressed else 0)
    body = draw(st.binary(max_size=300))
    if compressed and draw(st.booleans()):
        body = body * 30  # compressible
    born_host = draw(hosts)
    store_host = draw(hosts)
    sys_flag |= (0x10 if born_host.is_ipv6 else 0) | (0x20 if store_host.is_ipv6 else 0)
    return MessageExt(
        topic=draw(topics),
        body=body,
        flag=draw(int32),
        properties=draw(st.dictionaries(prop_names, prop_values, max_size=6)),
        queue_id=draw(st.integers(0, 1023)),
        queue_offset=draw(st.integers(0, 2**62)),
        commit_log_offset=draw(st.integers(0, 2**62)),
        sys_flag=sys_flag,
        born_timestamp=draw(int64),
        born_host=born_host,
        store_timestamp=draw(int64),
        store_host=store_host,
        reconsume_times=draw(st.integers(0, 16)),
        prepared_transaction_offset=draw(st.integers(0, 2**62)),
    )


def _same(original: MessageExt, decoded: MessageExt) -> bool:
    """Equal in every field but the two the decoder fills from the bytes."""
    return dataclasses.replace(original, store_size=decoded.store_size, body_crc=decoded.body_crc) == decoded


@settings(max_examples=150, deadline=None)
@given(st.lists(messages(), min_size=1, max_size=4))
def test_stored_round_trip(msgs: list[MessageExt]) -> None:
    data = b"".join(encode_message_ext(m) for m in msgs)
    decoded = decode_messages(data)
    assert len(decoded) == len(msgs)
    for original, back in zip(msgs, decoded, strict=True):
        assert _same(original, back)
        stored_body = zlib.compress(back.body, 5) if back.sys_flag & 1 and back.body else back.body
        assert back.body_crc == body_crc(stored_body)
    assert b"".join(encode_message_ext(m) for m in decoded) == data
    assert decode_messages(memoryview(data)) == decoded
    assert decode_messages(bytearray(data)) == decoded
    scan = scan_stored(data)
    assert (scan.end, scan.count, scan.stop) == (len(data), len(msgs), ScanStop.END)
    for m in decode_messages(data, read_body=False):
        assert m.body == b""


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.builds(
            Message,
            st.just(""),
            st.binary(max_size=200),
            int32,
            st.dictionaries(prop_names, prop_values, max_size=5),
        ),
        max_size=5,
    )
)
def test_batch_round_trip(msgs: list[Message]) -> None:
    data = encode_batch(msgs)
    assert decode_batch(data) == msgs
    assert decode_batch(memoryview(data), topic="X") == [
        Message("X", m.body, m.flag, m.properties) for m in msgs
    ]
    assert batch_properties(data) == [m.properties for m in msgs]


def test_batch_golden_bytes() -> None:
    got = encode_batch([Message("ignored", b"ab", 5, {"TAGS": "T"}), Message("ignored", b"", 0, {})])
    want = (
        struct.pack(">iiiii", 4 * 5 + 2 + 2 + 6, 0, 0, 5, 2)
        + b"ab"
        + struct.pack(">h", 6)
        + b"TAGS\x01T"
        + struct.pack(">iiiiih", 22, 0, 0, 0, 0, 0)
    )
    assert got == want


# ------------------------------------------------------------------------------- compression


def test_compression_helpers_follow_the_java_producer() -> None:
    small = b"a" * (COMPRESS_BODY_OVER - 1)
    assert maybe_compress(small) == (small, 0)
    big = b"a" * COMPRESS_BODY_OVER
    packed, bits = maybe_compress(big)
    assert bits == MessageSysFlag.COMPRESSED | MessageSysFlag.COMPRESSION_ZLIB_TYPE == 0x301
    assert packed == zlib.compress(big, 5)
    assert decompress_body(packed, bits) == big
    assert decompress_body(packed, 0x1) == big  # type 0: old producers, zlib
    assert decompress_body(b"plain", 0) == b"plain"
    assert CompressionType.of_sys_flag(0x201) is CompressionType.ZSTD


def test_unsupported_or_corrupt_compression_is_a_protocol_error() -> None:
    for sys_flag in (0x101, 0x201):
        rec = encode_message(topic="t", body=b"xx", sys_flag=sys_flag)
        with pytest.raises(RemoteProtocolError, match=r"LZ4|ZSTD"):
            decode_messages(rec)
        assert decode_messages(rec, decompress=False)[0].body == b"xx"
    with pytest.raises(RemoteProtocolError, match="compression type 5"):
        decode_messages(encode_message(topic="t", body=b"xx", sys_flag=0x501))
    with pytest.raises(RemoteProtocolError, match="zlib"):
        decode_messages(encode_message(topic="t", body=b"not zlib", sys_flag=0x301))
    # an empty body flagged compressed stays empty, as in Java (which only inflates bodies > 0)
    empty = encode_message(topic="t", body=b"", sys_flag=0x301)
    assert decode_messages(empty)[0].body == b""
    assert encode_message_ext(decode_messages(empty)[0]) == empty


# --------------------------------------------------------------------------------- bad input


def _two() -> bytes:
    return encode_message(topic="A", body=b"one", properties="k\x01v", born_host=BORN4, store_host=STORE4) + (
        encode_message(topic="B", body=b"two", born_host=BORN6, store_host=STORE6)
    )


def test_every_truncation_is_a_protocol_error() -> None:
    data = _two()
    first = struct.unpack_from(">i", data)[0]
    for cut in range(1, len(data)):
        if cut == first:
            assert len(decode_messages(data[:cut])) == 1
            continue
        with pytest.raises(RemoteProtocolError):
            decode_messages(data[:cut])


def test_bad_magic_and_sizes() -> None:
    data = bytearray(_two())
    bad = bytearray(data)
    struct.pack_into(">i", bad, 4, 0x12345678)
    with pytest.raises(RemoteProtocolError, match="magic code 0x12345678 in message at byte 0"):
        decode_messages(bad)
    bad = bytearray(data)
    struct.pack_into(">i", bad, 0, 10_000)
    with pytest.raises(RemoteProtocolError, match="claims 10000 bytes"):
        decode_messages(bad)
    bad = bytearray(data)
    struct.pack_into(">i", bad, 84, 10_000)  # body length
    with pytest.raises(RemoteProtocolError, match="body length"):
        decode_messages(bad)
    bad = bytearray(data)
    struct.pack_into(">i", bad, 84, -1)
    with pytest.raises(RemoteProtocolError, match="body length"):
        decode_messages(bad)
    bad = bytearray(data)
    bad[88 + 3] = 50  # topic length
    with pytest.raises(RemoteProtocolError, match=r"topic|add up"):
        decode_messages(bad)
    first = struct.unpack_from(">i", data)[0]
    bad = bytearray(data)
    bad[first - 3] = 0xFF  # the first record's properties: invalid UTF-8
    with pytest.raises(RemoteProtocolError, match="UTF-8"):
        decode_messages(bad)
    with pytest.raises(RemoteProtocolError, match="offset"):
        decode_message(data, len(data) + 1)


def test_mutation_fuzz_only_raises_protocol_errors() -> None:
    rng = random.Random(20261121)
    base = _two() + encode_message(topic="C", body=zlib.compress(b"z" * 500), sys_flag=0x301)
    for _ in range(3000):
        data = bytearray(base)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        if rng.random() < 0.3:
            del data[rng.randrange(len(data)) :]
        try:
            decode_messages(data)
        except RemoteProtocolError:
            pass
        scan_stored(data)  # never raises
        try:
            decode_batch(data)
        except RemoteProtocolError:
            pass


def test_batch_bad_input() -> None:
    data = encode_batch([Message("", b"abc", 0, {"a": "b"})])
    for cut in range(1, len(data)):
        with pytest.raises(RemoteProtocolError):
            decode_batch(data[:cut])
        with pytest.raises(RemoteProtocolError):
            batch_properties(data[:cut])
    bad = bytearray(data)
    struct.pack_into(">i", bad, 16, 1000)
    for decode in (decode_batch, batch_properties):
        with pytest.raises(RemoteProtocolError):
            decode(bad)
    not_utf8 = encode_batch([Message("", b"abc", 0, {"a": "b"})]).replace(b"a\x01b", b"a\x01\xff")
    for decode in (decode_batch, batch_properties):
        with pytest.raises(RemoteProtocolError, match="invalid UTF-8"):
            decode(not_utf8)


# ------------------------------------------------------------------------------ recovery scan


def _log(n: int) -> bytes:
    out = bytearray()
    for i in range(n):
        rec = bytearray(encode_message(topic="T", body=bytes([i]) * 20, born_host=BORN4, store_host=STORE4))
        STORE_OFFSETS.pack_into(rec, QUEUE_OFFSET_POSITION, i, len(out))
        out += rec
    return bytes(out)


def test_scan_reports_where_the_valid_prefix_ends() -> None:
    log = _log(5)
    size = len(log) // 5
    assert scan_stored(log) == scan_stored(memoryview(log))
    full = scan_stored(log)
    assert (full.end, full.count, full.stop, full.clean) == (len(log), 5, ScanStop.END, True)

    zero_tail = scan_stored(log + bytes(4096))
    assert (zero_tail.end, zero_tail.count, zero_tail.stop, zero_tail.clean) == (
        len(log),
        5,
        ScanStop.ZERO,
        True,
    )
    assert scan_stored(log + bytes(5)).stop is ScanStop.ZERO

    blank = scan_stored(log + struct.pack(">ii", 1000, BLANK_MAGIC_CODE) + bytes(992))
    assert (blank.end, blank.stop) == (len(log), ScanStop.BLANK)

    torn = scan_stored(log[: len(log) - 7])
    assert (torn.end, torn.count, torn.stop, torn.clean) == (4 * size, 4, ScanStop.TRUNCATED, False)
    assert scan_stored(log + b"\x00\x00\x01").stop is ScanStop.TRUNCATED

    flipped = bytearray(log)
    flipped[2 * size + 90] ^= 0xFF  # a body byte of the third record
    crc = scan_stored(flipped)
    assert (crc.end, crc.count, crc.stop) == (2 * size, 2, ScanStop.BAD_CRC)
    assert scan_stored(flipped, check_crc=False).count == 5

    magic = bytearray(log)
    magic[3 * size + 5] ^= 1
    assert scan_stored(magic) == type(crc)(3 * size, 3, ScanStop.BAD_MAGIC)

    sized = bytearray(log)
    struct.pack_into(">i", sized, size, size + 1)
    assert scan_stored(sized).stop is ScanStop.BAD_SIZE
    struct.pack_into(">i", sized, size, 20)
    assert scan_stored(sized).stop is ScanStop.BAD_SIZE

    # scanning a window: start and end
    window = scan_stored(log, 2 * size, 4 * size)
    assert (window.end, window.count, window.stop) == (4 * size, 2, ScanStop.END)
    assert len(decode_messages(memoryview(log)[: full.end])) == 5


def test_stored_batch_appends_batch_properties_as_java_does() -> None:
    def props_of(body: bytes) -> list[str]:
        records = encode_stored_batch(
            body,
            topic="T",
            queue_id=2,
            sys_flag=0,
            born_timestamp=1,
            born_host=BORN4,
            store_timestamp=2,
            store_host=STORE6,
            batch_properties="CLUSTER\x01c",
        )
        return [m.stored_properties for m in decode_messages(b"".join(records))]

    def raw_record(props: bytes, body: bytes = b"b", flag: int = 3) -> bytes:
        size = 22 + len(body) + len(props)
        return (
            struct.pack(">iiiii", size, 0, 0, flag, len(body)) + body + struct.pack(">h", len(props)) + props
        )

    body = (
        raw_record(b"a\x011") + raw_record(b"a\x011\x02") + raw_record(b"") + raw_record(b"x\x01y\x02a\x012")
    )
    assert props_of(body) == [
        "a\x011\x02CLUSTER\x01c",
        "a\x011\x02CLUSTER\x01c",  # no doubled separator
        "CLUSTER\x01c",
        "x\x01y\x02a\x012\x02CLUSTER\x01c",
    ]
    records = encode_stored_batch(
        raw_record(b"k\x01v", b"xyz", 9),
        topic="T",
        queue_id=2,
        sys_flag=0,
        born_timestamp=1,
        born_host=BORN4,
        store_timestamp=2,
        store_host=STORE6,
        reconsume_times=4,
    )
    (msg,) = decode_messages(records[0])
    assert (msg.body, msg.flag, msg.queue_id, msg.reconsume_times, msg.sys_flag) == (b"xyz", 9, 2, 4, 0x20)
    assert msg.properties == {"k": "v"}
    assert msg.body_crc == body_crc(b"xyz")
    with pytest.raises(RemoteProtocolError):
        encode_stored_batch(
            raw_record(b"k\x01v")[:-1],
            topic="T",
            queue_id=0,
            sys_flag=0,
            born_timestamp=0,
            born_host=BORN4,
            store_timestamp=0,
            store_host=STORE4,
        )
