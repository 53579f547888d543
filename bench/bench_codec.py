"""How fast rocketq encodes and decodes remoting frames, against baselines measured in the same run.

Cases, each in both header serializations (JSON and ROCKETMQ):

* **small request**: a ``PULL_MESSAGE`` request shaped like the captured Java consumer's (ten ext
  fields, no body);
* **4 KiB response**: a ``PULL_MESSAGE`` response with its four ext fields and a 4 KiB body.

"encode" is ``encode_frame(cmd)``; "decode" is ``FrameDecoder.receive_data`` + ``next_command``
for one frame (what the transport does per frame). Two baselines, on the same commands:

* **json C**: the standard library's C ``json.dumps`` of the equivalent header dict plus a
  ``struct.pack`` of the 8-byte prefix (encode), and ``json.loads`` of the JSON header bytes plus
  the body slice (decode): the least a JSON codec can do, without RocketMQ's key order and
  escaping, validation, framing or a command object. Used for both serializations, so the two
  can be compared with each other;
* **struct floor**: one precompiled ``struct`` pack / unpack of the prefix and the fixed 17
  header bytes, no ext fields and no objects: what the binary layout costs at the very least.

Each **ratio** is rocketq's rate over that baseline's (1.0 = as fast as the baseline). Also measured:
typed header conversion (``PullMessageRequestHeader.from_ext_fields`` / ``to_ext_fields``).

The file is a list of sections (``SECTIONS``); each is a function that prints its own table, so
other parts of the codec can add theirs. Run: ``python bench/bench_codec.py [--seconds S]``.
Messages decoded per second from 32-message pull bodies (and the recovery scan, encoding) are
``bench_messages.py``'s section. The last section, loopback request/response round trips through
the transport, lives in ``bench_remoting.py`` (runnable alone too).
"""

from __future__ import annotations

import argparse
import json
import struct
import time
from collections.abc import Callable
from dataclasses import replace

from bench_messages import section_messages
from bench_remoting import section_round_trips
from rocketq.protocol import (
    FrameDecoder,
    LanguageCode,
    PullMessageRequestHeader,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    SerializeType,
    encode_frame,
)

# A PULL_MESSAGE request as the captured 4.9.4 Java push consumer sends it (rebalance-notify.jsonl).
PULL_FIELDS = {
    "queueId": "0",
    "maxMsgNums": "32",
    "sysFlag": "2",
    "suspendTimeoutMillis": "15000",
    "commitOffset": "0",
    "topic": "WireRebalance",
    "queueOffset": "0",
    "expressionType": "TAG",
    "subVersion": "1795248587281",
    "consumerGroup": "WireRebalanceGroup",
}
PULL_RESPONSE_FIELDS = {
    "suggestWhichBrokerId": "0",
    "nextBeginOffset": "32",
    "maxOffset": "64",
    "minOffset": "0",
}

_PREFIX = struct.Struct(">iI")
_FIXED = struct.Struct(">hbhiiii")  # the ROCKETMQ header's fixed part and the ext length


def rate(seconds: float, fn: Callable[[int], object], batch: int = 2000) -> float:
    """Calls per second of ``fn(n)`` (which does ``n`` operations), best of several timed runs."""
    best = 0.0
    deadline = time.process_time() + seconds
    while True:
        start = time.process_time()
        fn(batch)
        elapsed = time.process_time() - start
        best = max(best, batch / elapsed)
        if time.process_time() >= deadline:
            return best


def _json_header_dict(cmd: RemotingCommand) -> dict[str, object]:
    header: dict[str, object] = {"code": cmd.code}
    if cmd.ext_fields:
        header["extFields"] = cmd.ext_fields
    header |= {"flag": cmd.flag, "language": cmd.language.name, "opaque": cmd.opaque}
    if cmd.remark is not None:
        header["remark"] = cmd.remark
    header |= {"serializeTypeCurrentRPC": "JSON", "version": cmd.version}
    return header


def _json_encode_baseline(cmd: RemotingCommand) -> Callable[[int], object]:
    body = cmd.body
    header_dict = _json_header_dict(cmd)
    dumps = json.dumps
    pack = _PREFIX.pack

    def run(n: int) -> None:
        for _ in range(n):
            header = dumps(header_dict, separators=(",", ":"), ensure_ascii=False).encode()
            pack(4 + len(header) + len(body), len(header)) + header + body

    return run


def _json_decode_baseline(cmd: RemotingCommand) -> Callable[[int], object]:
    frame = encode_frame(replace(cmd, serialize_type=SerializeType.JSON))
    header_end = 8 + (_PREFIX.unpack_from(frame)[1] & 0xFFFFFF)
    loads = json.loads
    unpack = _PREFIX.unpack_from

    def run(n: int) -> None:
        for _ in range(n):
            unpack(frame)
            loads(frame[8:header_end])
            frame[header_end:]

    return run


def _struct_encode_floor(cmd: RemotingCommand) -> Callable[[int], object]:
    body = cmd.body
    fixed = (cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag, 0, 0)
    pack_fixed = _FIXED.pack
    pack_prefix = _PREFIX.pack

    def run(n: int) -> None:
        for _ in range(n):
            header = pack_fixed(*fixed)
            pack_prefix(4 + len(header) + len(body), (1 << 24) | len(header)) + header + body

    return run


def _struct_decode_floor(cmd: RemotingCommand) -> Callable[[int], object]:
    frame = encode_frame(replace(cmd, serialize_type=SerializeType.ROCKETMQ))
    header_end = 8 + (_PREFIX.unpack_from(frame)[1] & 0xFFFFFF)
    unpack_prefix = _PREFIX.unpack_from
    unpack_fixed = _FIXED.unpack_from

    def run(n: int) -> None:
        for _ in range(n):
            unpack_prefix(frame)
            unpack_fixed(frame, 8)
            frame[header_end:]

    return run


def _encode(cmd: RemotingCommand) -> Callable[[int], object]:
    def run(n: int) -> None:
        for _ in range(n):
            encode_frame(cmd)

    return run


def _decode(frame: bytes) -> Callable[[int], object]:
    decoder = FrameDecoder()

    def run(n: int) -> None:
        receive = decoder.receive_data
        take = decoder.next_command
        for _ in range(n):
            receive(frame)
            take()

    return run


def _header_row() -> None:
    print(f"{'':<40} {'rocketq/s':>11} {'json C/s':>11} {'ratio':>6} {'floor/s':>11} {'ratio':>6}")


def _row(label: str, ours: float, baseline: float, floor: float | None = None) -> None:
    line = f"{label:<40} {ours:>11,.0f} {baseline:>11,.0f} {ours / baseline:>6.2f}"
    if floor is not None:
        line += f" {floor:>11,.0f} {ours / floor:>6.2f}"
    print(line)


def section_frames(seconds: float) -> None:
    """Frames encoded and decoded per second, both serializations, small and 4 KiB cases."""
    print("frames")
    _header_row()
    for serialize_type in SerializeType:
        request = RemotingCommand.request(
            RequestCode.PULL_MESSAGE,
            dict(PULL_FIELDS),
            opaque=27,
            language=LanguageCode.JAVA,
            serialize_type=serialize_type,
        )
        response = request.response(ResponseCode.SUCCESS, None, dict(PULL_RESPONSE_FIELDS), bytes(4096))
        for name, cmd in (("small request", request), ("4 KiB response", response)):
            frame = encode_frame(cmd)
            label = f"{name} {serialize_type.name} ({len(frame)} B)"
            _row(
                f"encode {label}",
                rate(seconds, _encode(cmd)),
                rate(seconds, _json_encode_baseline(cmd)),
                rate(seconds, _struct_encode_floor(cmd)),
            )
            _row(
                f"decode {label}",
                rate(seconds, _decode(frame)),
                rate(seconds, _json_decode_baseline(cmd)),
                rate(seconds, _struct_decode_floor(cmd)),
            )


def section_headers(seconds: float) -> None:
    """Typed header conversion against a plain dict comprehension over the same fields."""
    print("\ntyped headers (baseline: a dict comprehension converting the same fields)")
    print(f"{'':<40} {'rocketq/s':>11} {'dict/s':>11} {'ratio':>6}")
    header = PullMessageRequestHeader.from_ext_fields(PULL_FIELDS)

    def parse(n: int) -> None:
        for _ in range(n):
            PullMessageRequestHeader.from_ext_fields(PULL_FIELDS)

    def write(n: int) -> None:
        for _ in range(n):
            header.to_ext_fields()

    int_keys = {"queueId", "maxMsgNums", "sysFlag", "suspendTimeoutMillis", "commitOffset", "queueOffset"}

    def parse_baseline(n: int) -> None:
        for _ in range(n):
            {k: int(v) if k in int_keys else v for k, v in PULL_FIELDS.items()}

    values = {k: int(v) if k in int_keys else v for k, v in PULL_FIELDS.items()}

    def write_baseline(n: int) -> None:
        for _ in range(n):
            {k: str(v) for k, v in values.items()}

    _row("PullMessageRequestHeader parse", rate(seconds, parse), rate(seconds, parse_baseline))
    _row("PullMessageRequestHeader write", rate(seconds, write), rate(seconds, write_baseline))


SECTIONS: list[Callable[[float], None]] = [
    section_frames,
    section_headers,
    section_messages,
    section_round_trips,
]
"""Every section of this benchmark, in the order printed; add yours here."""


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.5, help="time per measurement (default 0.5)")
    args = parser.parse_args()
    for section in SECTIONS:
        section(args.seconds)


if __name__ == "__main__":
    main()
