"""How fast rocketq reads and writes RocketMQ message bytes.

Decodes a FOUND pull body of 32 stored messages (bodies of ~100 B and ~1 KiB, with the properties
a Java producer and broker put there) and reports messages per second next to two baselines run in
the same process on the same bytes:

* ``floor``: a loop that only reads each record's size field and jumps to the next - the least
  any decoder must do;
* ``fixed``: one precompiled ``struct`` unpack of every record's fixed fields, no objects built.

Also measured: decoding without bodies (index rebuild), the store's recovery scan with and without
CRC checks, and encoding one record (the store's append path).

Run: ``python bench/bench_messages.py`` (``--seconds`` per measurement, default 0.5); the same
table is a section of ``bench/bench_codec.py``.
"""

from __future__ import annotations

import argparse
import struct
import time
from collections.abc import Callable
from functools import partial

from rocketq.protocol.message import (
    QUEUE_OFFSET_POSITION,
    STORE_OFFSETS,
    decode_messages,
    encode_message,
    scan_stored,
)
from rocketq.protocol.message_id import HostPort, UniqIdGenerator

BATCH = 32
BORN = HostPort("10.0.0.7", 50123)
STORE = HostPort("10.0.0.1", 10911)
NOW_MS = 1_795_248_381_856


def pull_body(body_size: int) -> bytes:
    """32 consecutive stored records as a broker returns them for one pull."""
    ids = UniqIdGenerator(ip="10.0.0.7", pid=4242, salt=0x5EED)
    out = bytearray()
    for i in range(BATCH):
        record = bytearray(
            encode_message(
                topic="BenchTopic",
                body=bytes((i + j) & 0xFF for j in range(body_size)),
                properties={
                    "KEYS": f"order-{1000 + i}",
                    "UNIQ_KEY": ids.next_id(NOW_MS + i),
                    "CLUSTER": "DefaultCluster",
                    "TAGS": "TagA",
                },
                queue_id=1,
                born_timestamp=NOW_MS + i,
                born_host=BORN,
                store_timestamp=NOW_MS + i + 3,
                store_host=STORE,
            )
        )
        STORE_OFFSETS.pack_into(record, QUEUE_OFFSET_POSITION, i, 1_000_000 + len(out))
        out += record
    return bytes(out)


_SIZE = struct.Struct(">i")
_FIXED = struct.Struct(">iiiiiqqiq8sq8siqi")


def floor(body: bytes) -> int:
    """Baseline: walk the records by their size field only."""
    pos, end, count = 0, len(body), 0
    unpack = _SIZE.unpack_from
    while pos < end:
        pos += unpack(body, pos)[0]
        count += 1
    return count


def fixed_fields(body: bytes) -> int:
    """Baseline: unpack every record's fixed fields into a tuple, build nothing else."""
    pos, end, count = 0, len(body), 0
    unpack = _FIXED.unpack_from
    while pos < end:
        pos += unpack(body, pos)[0]
        count += 1
    return count


def rate(fn: Callable[[], object], per_call: int, seconds: float) -> float:
    """Items per second: best of 7 timed slices of ``seconds / 7`` each, ``per_call`` items per
    call. CPU time of this process (``process_time``), so that other processes sharing the
    machine disturb the figures less."""
    best = 0.0
    for _ in range(7):
        calls = 0
        start = time.process_time()
        deadline = start + seconds / 7
        while True:
            for _ in range(20):
                fn()
            calls += 20
            now = time.process_time()
            if now >= deadline:
                break
        best = max(best, calls / (now - start))
    return best * per_call


def bench_messages(seconds: float = 0.5) -> list[tuple[str, float, float]]:
    """``(case, items per second, ratio to the same-size floor)`` for every measurement."""
    rows: list[tuple[str, float, float]] = []
    for size in (100, 1024):
        body = pull_body(size)
        assert floor(body) == fixed_fields(body) == len(decode_messages(body)) == BATCH
        view = memoryview(body)
        base = rate(partial(floor, body), BATCH, seconds)
        cases: list[tuple[str, Callable[[], object]]] = [
            ("fixed-field unpack (baseline)", partial(fixed_fields, body)),
            ("decode_messages", partial(decode_messages, body)),
            ("decode_messages read_body=False", partial(decode_messages, body, read_body=False)),
            ("decode_messages from memoryview", partial(decode_messages, view)),
            ("scan_stored (CRC checked)", partial(scan_stored, body)),
            ("scan_stored check_crc=False", partial(scan_stored, body, check_crc=False)),
        ]
        rows.append((f"{size} B bodies: size-field walk (floor)", base, 1.0))
        for name, fn in cases:
            value = rate(fn, BATCH, seconds)
            rows.append((f"{size} B bodies: {name}", value, value / base))
        payload = bytes(size)
        props = {"KEYS": "order-1", "UNIQ_KEY": "0A00000710920000" + "5EED68BC77A00000", "TAGS": "TagA"}

        def encode_one(p: bytes = payload, props: dict[str, str] = props) -> bytes:
            return encode_message(
                topic="BenchTopic",
                body=p,
                properties=props,
                born_host=BORN,
                store_host=STORE,
                born_timestamp=NOW_MS,
                store_timestamp=NOW_MS,
            )

        value = rate(encode_one, 1, seconds)
        rows.append((f"{size} B bodies: encode_message (one record)", value, value / base))
    return rows


def section_messages(seconds: float) -> None:
    """Print the message table (a section of ``bench/bench_codec.py`` as well)."""
    print(f"\nmessages: {BATCH}-message pull bodies; ratio = rate / size-field walk (same run)")
    for name, value, ratio in bench_messages(seconds):
        print(f"  {name:<55} {value:>14,.0f}/s  x{ratio:.3f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.5, help="time per measurement")
    args = parser.parse_args(argv)
    section_messages(args.seconds)


if __name__ == "__main__":
    main()
