"""The HA link's codec against RocketMQ 4.9.4's byte layouts (``HAConnection`` / ``HAClient``)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.errors import ConfigError, RemoteProtocolError
from rocketq.protocol.ha import (
    HA_HEADER_SIZE,
    HA_REPORT_SIZE,
    HA_TRANSFER_BATCH_SIZE,
    ReportDecoder,
    Transfer,
    TransferDecoder,
    encode_report,
    encode_transfer,
)

OFFSETS = st.integers(min_value=0, max_value=2**63 - 1)


def test_golden_transfer_layout() -> None:
    # WriteSocketService: putLong(thisOffset), putInt(size), then the mapped bytes
    frame = encode_transfer(0x0102030405060708, b"\xca\xfe")
    assert frame == bytes.fromhex("010203040506070800000002cafe")
    assert HA_HEADER_SIZE == 12
    assert HA_TRANSFER_BATCH_SIZE == 32768


def test_golden_heartbeat_layout() -> None:
    # a heartbeat: putLong(nextTransferFromWhere), putInt(0), no body
    assert encode_transfer(1 << 30) == bytes.fromhex("000000004000000000000000")
    dec = TransferDecoder()
    dec.receive_data(bytes.fromhex("000000004000000000000000"))
    assert dec.next_transfer() == Transfer(1 << 30, b"")
    assert Transfer(1 << 30, b"").is_heartbeat


def test_golden_report_layout() -> None:
    # HAClient.reportSlaveMaxOffset: one putLong of the slave's max physical offset
    assert encode_report(0x1122334455) == bytes.fromhex("0000001122334455")
    assert HA_REPORT_SIZE == 8


@given(st.lists(st.tuples(OFFSETS, st.binary(max_size=300)), max_size=8), st.data())
def test_transfers_round_trip_whatever_the_chunking(
    transfers: list[tuple[int, bytes]], data: st.DataObject
) -> None:
    stream = b"".join(encode_transfer(o, b) for o, b in transfers)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    dec = TransferDecoder()
    got: list[Transfer] = []
    last = 0
    for cut in [*cuts, len(stream)]:
        dec.receive_data(stream[last:cut])
        last = cut
        while (t := dec.next_transfer()) is not None:
            got.append(t)
    assert [(t.offset, t.body) for t in got] == transfers
    assert dec.buffered == 0


@given(st.lists(OFFSETS, min_size=1, max_size=8), st.integers(0, 7))
def test_reports_give_the_last_whole_one(offsets: list[int], partial: int) -> None:
    stream = b"".join(encode_report(o) for o in offsets)
    dec = ReportDecoder()
    dec.receive_data(stream + encode_report(5)[:partial])
    assert dec.latest() == offsets[-1]
    assert dec.latest() is None  # consumed; the partial one waits for its rest
    dec.receive_data(encode_report(5)[partial:])
    assert dec.latest() == 5


@given(OFFSETS, st.binary(min_size=1, max_size=100), st.integers(0, 111))
def test_a_truncated_transfer_is_not_an_error(offset: int, body: bytes, cut: int) -> None:
    frame = encode_transfer(offset, body)
    cut = min(cut, len(frame) - 1)
    dec = TransferDecoder()
    dec.receive_data(frame[:cut])
    assert dec.next_transfer() is None


@given(st.integers(min_value=-(2**63), max_value=-1), st.integers(0, 10))
def test_a_negative_offset_is_refused_for_good(offset: int, size: int) -> None:
    dec = TransferDecoder()
    dec.receive_data(struct.pack(">qi", offset, size) + bytes(size))
    with pytest.raises(RemoteProtocolError):
        dec.next_transfer()
    dec.receive_data(encode_transfer(0, b"x"))
    with pytest.raises(RemoteProtocolError):  # no resynchronisation
        dec.next_transfer()


@given(st.one_of(st.integers(-(2**31), -1), st.integers(1025, 2**31 - 1)))
def test_a_bad_body_size_is_refused_before_buffering_it(size: int) -> None:
    dec = TransferDecoder(max_body=1024)
    dec.receive_data(struct.pack(">qi", 0, size))  # the header alone decides
    with pytest.raises(RemoteProtocolError):
        dec.next_transfer()


@given(st.binary(min_size=12, max_size=200))
def test_garbage_either_decodes_waits_or_raises(garbage: bytes) -> None:
    dec = TransferDecoder(max_body=64)
    dec.receive_data(garbage)
    try:
        while (t := dec.next_transfer()) is not None:
            assert t.offset >= 0
            assert len(t.body) <= 64
    except RemoteProtocolError:
        pass


def test_a_negative_report_is_refused() -> None:
    dec = ReportDecoder()
    dec.receive_data(struct.pack(">q", -1))
    with pytest.raises(RemoteProtocolError):
        dec.latest()
    with pytest.raises(RemoteProtocolError):
        dec.latest()


def test_encoders_refuse_what_no_peer_sends() -> None:
    with pytest.raises(ConfigError):
        encode_transfer(-1, b"")
    with pytest.raises(ConfigError):
        encode_report(-5)
