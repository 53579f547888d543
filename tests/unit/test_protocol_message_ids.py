"""Hosts, offset message ids and unique message ids (``UNIQ_KEY``)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.errors import ConfigError, RemoteProtocolError
from rocketq.protocol.message_id import (
    HostPort,
    UniqIdGenerator,
    make_offset_msg_id,
    parse_offset_msg_id,
    parse_uniq_id,
)


def ms(*args: int, tz: timezone | ZoneInfo = UTC) -> int:
    return int(datetime(*args, tzinfo=tz).timestamp() * 1000)


def test_host_port_forms() -> None:
    v4 = HostPort("127.0.0.1", 10911)
    assert v4.packed == bytes([127, 0, 0, 1]) + (10911).to_bytes(4, "big")
    assert str(v4) == "127.0.0.1:10911"
    assert not v4.is_ipv6
    v6 = HostPort("FD00:0000::0002", 1)
    assert v6.ip == "fd00::2"
    assert v6 == HostPort("fd00::2", 1)
    assert hash(v6) == hash(HostPort("fd00::2", 1))
    assert str(v6) == "[fd00::2]:1"
    assert HostPort.parse(str(v6)) == v6
    assert HostPort.parse("/127.0.0.1:10911") == v4
    assert HostPort.from_packed(v6.packed) == v6
    # an IPv4-mapped IPv6 address stays IPv6 (16 bytes on the wire)
    assert HostPort("::ffff:127.0.0.1", 5).is_ipv6


@pytest.mark.parametrize(
    ("ip", "port"), [("localhost", 1), ("1.2.3.4.5", 1), ("1.2.3.4", -1), ("1.2.3.4", 65536)]
)
def test_host_port_rejects_bad_values(ip: str, port: int) -> None:
    with pytest.raises(ConfigError):
        HostPort(ip, port)


@pytest.mark.parametrize("text", ["127.0.0.1", "127.0.0.1:x", "[::1]", ""])
def test_host_port_parse_errors(text: str) -> None:
    with pytest.raises(ConfigError):
        HostPort.parse(text)


def test_from_packed_rejects_bad_lengths() -> None:
    with pytest.raises(RemoteProtocolError):
        HostPort.from_packed(b"\x00" * 7)


def test_offset_msg_id_golden_and_ipv6() -> None:
    # from the captures: store host 127.0.0.1:10911, commit-log offset 1363
    assert make_offset_msg_id(HostPort("127.0.0.1", 10911), 1363) == "7F00000100002A9F0000000000000553"
    host = HostPort("2001:db8::1", 10911)
    msg_id = make_offset_msg_id(host, 2**40 + 5)
    assert msg_id == "20010DB8000000000000000000000001" + "00002A9F" + "0000010000000005"
    assert parse_offset_msg_id(msg_id) == (host, 2**40 + 5)
    assert parse_offset_msg_id(msg_id.lower()) == (host, 2**40 + 5)


@pytest.mark.parametrize("bad", ["", "XYZ", "7F000001", "7F00000100002A9F000000000000055", "00" * 20])
def test_offset_msg_id_parse_errors(bad: str) -> None:
    with pytest.raises(RemoteProtocolError):
        parse_offset_msg_id(bad)


@given(
    st.one_of(st.binary(min_size=4, max_size=4), st.binary(min_size=16, max_size=16)),
    st.integers(0, 65535),
    st.integers(0, 2**63 - 1),
)
def test_offset_msg_id_round_trip(ip: bytes, port: int, offset: int) -> None:
    host = HostPort.from_packed(ip + port.to_bytes(4, "big"))
    msg_id = make_offset_msg_id(host, offset)
    assert len(msg_id) == (56 if len(ip) == 16 else 32)
    assert msg_id == msg_id.upper()
    assert parse_offset_msg_id(msg_id) == (host, offset)


def test_uniq_id_layout_from_capture() -> None:
    # produce.jsonl: producer on fd00::2, pid 0x1B2E, born 1795248381856 ms (JVM in UTC)
    info = parse_uniq_id("FD0000000000000000000000000000021B2E4E0E2F2A68BC77A00001")
    assert info.ip == "fd00::2"
    assert info.pid == 0x1B2E
    assert info.salt == 0x4E0E2F2A
    assert info.counter == 1
    assert info.approx_timestamp(1795248381900) == 1795248381856
    gen = UniqIdGenerator(ip="fd00::2", pid=0x1B2E, salt=0x4E0E2F2A, counter=1)
    assert gen.next_id(1795248381856) == "FD0000000000000000000000000000021B2E4E0E2F2A68BC77A00001"


def test_generator_counts_and_wraps() -> None:
    gen = UniqIdGenerator(ip="10.1.2.3", pid=0x12345, salt=-1, counter=0xFFFE)
    now = ms(2026, 3, 2)
    ids = [gen.next_id(now) for _ in range(3)]
    assert [i[-4:] for i in ids] == ["FFFE", "FFFF", "0000"]
    assert ids[0][:20] == "0A010203" + "2345" + "FFFFFFFF"
    assert ids[0][20:28] == f"{24 * 3600 * 1000:08X}"  # one day into the month
    assert len(set(ids)) == 3
    assert {parse_uniq_id(i).counter for i in ids} == {0xFFFE, 0xFFFF, 0}


def test_generator_month_rollover_and_clock_steps() -> None:
    gen = UniqIdGenerator(ip="10.0.0.1", pid=1, salt=2)
    end_of_jan = ms(2027, 1, 31, 23, 59, 59)
    assert parse_uniq_id(gen.next_id(end_of_jan)).month_offset_ms == 30 * 86_400_000 + 86_399_000
    assert parse_uniq_id(gen.next_id(ms(2027, 2, 1))).month_offset_ms == 0
    # a small step back across the month boundary is clamped to 0, as Java does
    assert parse_uniq_id(gen.next_id(ms(2027, 2, 1) - 500)).month_offset_ms == 0
    # a big step back re-bases on the month of the new time
    assert parse_uniq_id(gen.next_id(ms(2027, 1, 10))).month_offset_ms == 9 * 86_400_000
    # late in a 31-day month the offset passes 2**31: written as 32 bits, read back unsigned
    late = ms(2027, 1, 30)
    info = parse_uniq_id(gen.next_id(late))
    assert info.month_offset_ms == 29 * 86_400_000 > 2**31
    assert info.approx_timestamp(late + 5) == late


def test_generator_and_parser_use_the_producer_zone() -> None:
    tz = ZoneInfo("Asia/Shanghai")
    gen = UniqIdGenerator(ip="10.0.0.1", pid=1, salt=2, tz=tz)
    made = ms(2026, 11, 1, 0, 30, tz=tz)  # still October in UTC
    info = parse_uniq_id(gen.next_id(made))
    assert info.month_offset_ms == 30 * 60 * 1000
    assert info.approx_timestamp(made + 1000, tz) == made
    # read with the wrong zone the month start moves by the zone offset
    assert info.approx_timestamp(made + 1000) != made


def test_approx_timestamp_uses_previous_month_when_offset_is_in_the_future() -> None:
    gen = UniqIdGenerator(ip="10.0.0.1", pid=1, salt=2)
    made = ms(2026, 10, 31, 22)
    msg_id = gen.next_id(made)
    later = ms(2026, 11, 2)
    assert parse_uniq_id(msg_id).approx_timestamp(later) == made
    assert datetime.fromtimestamp(made / 1000, UTC) - datetime(2026, 10, 1, tzinfo=UTC) == timedelta(
        days=30, hours=22
    )


@pytest.mark.parametrize("bad", ["", "G" * 32, "00" * 15, "00" * 17])
def test_uniq_id_parse_errors(bad: str) -> None:
    with pytest.raises(RemoteProtocolError):
        parse_uniq_id(bad)


def test_generator_rejects_bad_ip() -> None:
    with pytest.raises(ConfigError):
        UniqIdGenerator(ip="nope", pid=1, salt=1)


def test_generator_shared_between_threads_never_repeats() -> None:
    gen = UniqIdGenerator(ip="10.0.0.1", pid=1, salt=2)
    now = ms(2026, 11, 21)
    results: list[list[str]] = [[] for _ in range(4)]

    def work(out: list[str]) -> None:
        out.extend(gen.next_id(now) for _ in range(5000))

    threads = [threading.Thread(target=work, args=(out,)) for out in results]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ids = [i for out in results for i in out]
    assert len(set(ids)) == len(ids) == 20_000
