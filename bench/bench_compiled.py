"""What compiling the hot path with mypyc gains, module by module: pure vs compiled, same run.

    python bench/bench_compiled.py [--seconds S] [--rounds R]

Runs each workload below in two child interpreters of this install, one with ``ROCKETQ_PURE=1``
(every compiled module loads from its ``.py``, see docs/compiled.md) and one without, alternating
``--rounds`` times, and prints the best µs per operation of each and the speed-up (pure /
compiled). Without a compiled build it says so and exits 0.

* **frame encode / decode**: ``encode_frame`` of a SEND_MESSAGE_V2 request as the Java producer
  shapes it (JSON header, 1 KiB body), and ``FrameDecoder.receive_data`` + ``next_command`` of
  the same bytes (``protocol.frame``, ``protocol.command``);
* **message encode**: ``encode_message`` of one stored record with four properties
  (``protocol.message``, ``protocol.properties``, ``protocol.message_id``);
* **message decode**: ``decode_messages`` of a 32-message pull body, per message;
* **properties parse**: ``string_to_properties`` of a producer's property string;
* **store append**: ``MessageStore.put_message`` of pre-encoded 1 KiB records, async flush, index
  on (``store.commitlog``, ``store.consumequeue``, ``store.index``, ``store.segments``; the
  ``MessageStore`` class itself is not compiled), per message, in CPU time;
* **spark decode**: ``decode_columns`` of a 32-message pull body into an Arrow batch, per
  message (``spark.columns``; needs the spark extra); ``spark.columns`` is not in the compiled
  list (see ``pyproject.toml``), so this row shows only what the compiled codec under it changes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _rate(fn: Callable[[], object], per_call: int, seconds: float, clock: Callable[[], float]) -> float:
    """Best µs per operation over ~``seconds`` (five slices)."""
    fn()
    best = float("inf")
    for _ in range(5):
        calls = 0
        start = clock()
        deadline = start + seconds / 5
        while True:
            fn()
            calls += 1
            now = clock()
            if now >= deadline:
                break
        best = min(best, (now - start) / (calls * per_call) * 1e6)
    return best


def workloads(seconds: float) -> dict[str, float]:
    """Run in a child: µs per operation of each workload."""
    sys.path.insert(0, str(HERE))
    from bench_messages import pull_body
    from rocketq.protocol import FrameDecoder, RemotingCommand, decode_frame, encode_frame
    from rocketq.protocol.codes import RequestCode
    from rocketq.protocol.message import decode_messages, encode_message
    from rocketq.protocol.properties import properties_to_string, string_to_properties
    from rocketq.store import MessageStore, StoreConfig

    out: dict[str, float] = {}
    props = {
        "KEYS": "order-1001",
        "UNIQ_KEY": "0A000007109A5EED0000000000000001",
        "TAGS": "TagA",
        "WAIT": "true",
    }
    ext = {
        "a": "ProducerGroup", "b": "BenchTopic", "c": "TBW102", "d": "4", "e": "1", "f": "0",
        "g": "1700000000000", "h": "0", "i": properties_to_string(props), "j": "0", "k": "false",
        "l": "0", "m": "false",
    }  # fmt: skip
    cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, b"x" * 1024, opaque=7)
    frame = encode_frame(cmd)
    assert decode_frame(frame).ext_fields == ext
    out["frame encode"] = _rate(lambda: encode_frame(cmd), 1, seconds, time.perf_counter)
    decoder = FrameDecoder()

    def decode() -> None:
        decoder.receive_data(frame)
        decoder.next_command()

    out["frame decode"] = _rate(decode, 1, seconds, time.perf_counter)
    out["message encode"] = _rate(
        lambda: encode_message(topic="BenchTopic", body=b"x" * 1024, properties=props, queue_id=1),
        1,
        seconds,
        time.perf_counter,
    )
    body = pull_body(1024)
    out["message decode"] = _rate(lambda: decode_messages(body), 32, seconds, time.perf_counter)
    text = properties_to_string(props)
    out["properties parse"] = _rate(lambda: string_to_properties(text), 1, seconds, time.perf_counter)

    record = encode_message(topic="BenchTopic", body=b"x" * 1024, properties=props, queue_id=0)
    with tempfile.TemporaryDirectory(prefix="bench-compiled-") as tmp:
        store = MessageStore(Path(tmp) / "store", StoreConfig(flush="async"))
        try:
            for _ in range(2000):  # warm the segments and the index's pages
                store.put_message("BenchTopic", 0, record, 0, props)
            out["store append"] = _rate(
                lambda: store.put_message("BenchTopic", 0, record, 0, props), 1, seconds, time.process_time
            )
        finally:
            store.close()
    try:
        from rocketq.spark.columns import decode_columns
    except ImportError:
        return out
    out["spark decode"] = _rate(
        lambda: decode_columns(body, topic="BenchTopic", broker="b", end=1 << 62, tag_set=None),
        32,
        seconds,
        time.perf_counter,
    )
    return out


def child(pure: bool, seconds: float) -> tuple[str, dict[str, float]]:
    env = dict(os.environ)
    env.pop("ROCKETQ_PURE", None)
    if pure:
        env["ROCKETQ_PURE"] = "1"
    proc = subprocess.run(
        [sys.executable, __file__, "--child", str(seconds)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    data = json.loads(proc.stdout)
    return data["build"], data["rates"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="seconds per workload and round (1)")
    parser.add_argument("--rounds", type=int, default=2, help="pure/compiled rounds, best kept (2)")
    parser.add_argument("--child", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        from rocketq import _native

        print(json.dumps({"build": _native.status().summary(), "rates": workloads(args.child)}))
        return 0
    from rocketq import _native

    if not _native.status().compiled:
        print(f"bench_compiled: this install runs {_native.status().summary()}; nothing to compare")
        return 0
    best: dict[bool, dict[str, float]] = {True: {}, False: {}}
    builds: dict[bool, str] = {}
    for _ in range(args.rounds):
        for pure in (True, False):
            builds[pure], rates = child(pure, args.seconds)
            for name, us in rates.items():
                best[pure][name] = min(us, best[pure].get(name, float("inf")))
    print(f"pure:     {builds[True]}\ncompiled: {builds[False]}\n")
    print(f"{'workload':<18} {'pure µs/op':>11} {'compiled µs/op':>15} {'speed-up':>9}")
    for name, pure_us in best[True].items():
        compiled_us = best[False][name]
        print(f"{name:<18} {pure_us:>11.2f} {compiled_us:>15.2f} {pure_us / compiled_us:>8.2f}×")
    return 0


if __name__ == "__main__":
    sys.exit(main())
