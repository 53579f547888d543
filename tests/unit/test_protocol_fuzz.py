"""Mutation fuzzing of the frame decoder with captured RocketMQ frames (bounded, seeded).

Whatever bytes arrive, the decoder either returns valid commands or raises RemoteProtocolError:
never another exception, never a hang, and the result does not depend on how the bytes were cut.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable

from rocketq.errors import RemoteProtocolError
from rocketq.protocol import FrameDecoder, RemotingCommand, decode_frame, encode_frame
from tests.wirecaps import all_frames, frame_bytes

FRAMES = [frame_bytes(line) for _, line in all_frames()]
SMALL = [raw for raw in FRAMES if len(raw) <= 600]
MUTATIONS = 2000
BYTE_BY_BYTE = 250  # of the mutations, fed one byte at a time as well


def _flip(rng: random.Random, raw: bytes) -> bytes:
    data = bytearray(raw)
    for _ in range(rng.randint(1, 4)):
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    return bytes(data)


def _set_byte(rng: random.Random, raw: bytes) -> bytes:
    data = bytearray(raw)
    data[rng.randrange(min(len(data), 40))] = rng.choice([0, 1, 0x7F, 0x80, 0xFF, ord("{"), ord('"')])
    return bytes(data)


def _truncate(rng: random.Random, raw: bytes) -> bytes:
    return raw[: rng.randrange(len(raw))]


def _splice(rng: random.Random, raw: bytes) -> bytes:
    other = rng.choice(FRAMES)
    return raw[: rng.randrange(len(raw))] + other[rng.randrange(len(other)) :]


def _garbage(rng: random.Random, raw: bytes) -> bytes:
    return rng.randbytes(rng.randint(1, 64)) + raw


def _bad_length(rng: random.Random, raw: bytes) -> bytes:
    length = rng.choice([-(2**31), -1, 0, 3, 4, len(raw) - 5, len(raw) + 100, 2**31 - 1, 16 * 1024 * 1024])
    return struct.pack(">i", length) + raw[4:]


def _bad_header_length(rng: random.Random, raw: bytes) -> bytes:
    word = (rng.randrange(4) << 24) | rng.choice([0, 1, 20, 21, len(raw), 0xFFFFFF])
    return raw[:4] + struct.pack(">I", word) + raw[8:]


def _valid_then_broken(rng: random.Random, raw: bytes) -> bytes:
    return raw + _flip(rng, rng.choice(FRAMES))


MUTATORS: tuple[Callable[[random.Random, bytes], bytes], ...] = (
    _flip,
    _set_byte,
    _truncate,
    _splice,
    _garbage,
    _bad_length,
    _bad_header_length,
    _valid_then_broken,
)


def _decode(data: bytes, cut: Callable[[int], int]) -> tuple[list[RemotingCommand], str | None, int]:
    """Feed ``data`` in pieces of ``cut(position)`` bytes; return commands, error text, bytes left."""
    decoder = FrameDecoder()
    commands: list[RemotingCommand] = []
    pos = 0
    try:
        while pos < len(data):
            step = cut(pos)
            decoder.receive_data(data[pos : pos + step])
            pos += step
            assert decoder.buffered <= pos
            while (cmd := decoder.next_command()) is not None:
                commands.append(cmd)
    except RemoteProtocolError as exc:
        return commands, str(exc), decoder.buffered
    return commands, None, decoder.buffered


def _whole(_pos: int) -> int:
    return 1 << 62  # everything at once


def _check_valid(cmd: RemotingCommand) -> None:
    assert isinstance(cmd.code, int)
    assert isinstance(cmd.body, bytes)
    assert all(type(k) is str and type(v) is str for k, v in cmd.ext_fields.items())
    assert decode_frame(encode_frame(cmd)) == cmd


def test_mutated_frames_give_commands_or_remote_protocol_errors_only() -> None:
    rng = random.Random(20260417)
    outcomes = {"error": 0, "ok": 0}
    for i in range(MUTATIONS):
        mutate = MUTATORS[i % len(MUTATORS)]
        source = rng.choice(SMALL if i < BYTE_BY_BYTE else FRAMES)
        data = mutate(rng, source)
        whole = _decode(data, _whole)
        chunked = _decode(data, lambda _pos: rng.randint(1, 300))
        assert chunked[0] == whole[0], (mutate.__name__, i)
        assert chunked[1] == whole[1], (mutate.__name__, i)
        if i < BYTE_BY_BYTE:
            single = _decode(data, lambda _pos: 1)
            assert single[0] == whole[0], (mutate.__name__, i)
            assert single[1] == whole[1], (mutate.__name__, i)
        for cmd in whole[0]:
            _check_valid(cmd)
        outcomes["error" if whole[1] else "ok"] += 1
    # the mutations exercise both paths
    assert outcomes["error"] > MUTATIONS // 4
    assert outcomes["ok"] > 0


def test_random_garbage_never_escapes_as_another_exception() -> None:
    rng = random.Random(7)
    for _ in range(500):
        data = rng.randbytes(rng.randint(0, 200))
        commands, _error, _left = _decode(data, lambda _pos: rng.randint(1, 17))
        for cmd in commands:
            _check_valid(cmd)


def test_all_captured_frames_byte_by_byte_equal_whole() -> None:
    stream = b"".join(FRAMES[:150])
    whole, error, left = _decode(stream, _whole)
    assert error is None
    assert left == 0
    single, error, left = _decode(stream, lambda _pos: 1)
    assert error is None
    assert left == 0
    assert single == whole
    assert len(whole) == 150
