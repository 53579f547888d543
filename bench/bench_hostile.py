"""A good producer's latency while a hostile peer attacks a live server, and the fuzzer's speed.

    python bench/bench_hostile.py [--seconds 10] [--fuzz-seconds 20] [--only SUBSTRING]

For each of issue 12's attacks, and the costliest requests the server accepts (``fuzz/hostile.py``),
a fresh ``rocketq server`` (subprocess, temp dir) serves a producer sending 1 KiB messages one after
the other and a consumer pulling, while the attack is repeated back to back from its own process for
``--seconds``. First the same without an attack: the baseline, measured in the same run. Prints per
attack: rounds, good sends, the sends' p50 and p99, the worst stall (the slowest good send), the
server's RSS before, at its peak (sampled every 50 ms) and 2 s after; then the fuzz harness's
inputs/s over ``--fuzz-seconds`` (0 skips it).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fuzz.hostile import ATTACKS, measure  # noqa: E402

MIB = 1024 * 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--fuzz-seconds", type=int, default=20)
    parser.add_argument("--only", default="", help="run only the attacks whose name has this text")
    args = parser.parse_args()
    names: list[str | None] = [None, *(n for n in ATTACKS if args.only.lower() in n.lower())]
    head = ("attack", "rounds", "sends", "p50 ms", "p99 ms", "worst", "RSS before", "peak", "after")
    print("{:46} {:>6} {:>6} {:>7} {:>7} {:>7} {:>10} {:>6} {:>6}".format(*head), flush=True)
    failures = errors = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i, name in enumerate(names):
            f = measure(name, args.seconds, Path(tmp) / str(i))
            print(
                f"{f.name:46} {f.rounds:6d} {len(f.latencies):6d} {f.p50 * 1e3:7.1f} {f.p99 * 1e3:7.1f} "
                f"{f.worst * 1e3:7.1f} {f.rss_before / MIB:9.0f}M {f.rss_peak / MIB:5.0f}M "
                f"{f.rss_after / MIB:5.0f}M" + ("" if f.alive else "  SERVER DIED"),
                flush=True,
            )
            failures += len(f.failures)
            errors += len(f.errors)
    print(f"good calls failed: {failures}; ERROR or traceback lines in the servers' logs: {errors}")
    if args.fuzz_seconds <= 0:
        return
    run = subprocess.run(
        [sys.executable, str(ROOT / "fuzz" / "fuzz_protocol.py"), "--seconds", str(args.fuzz_seconds)],
        capture_output=True,
        text=True,
        check=False,
    )
    units = re.search(r"number_of_executed_units:\s+(\d+)", run.stderr)
    rate = re.search(r"average_exec_per_sec:\s+(\d+)", run.stderr)
    print(
        f"fuzz: {units.group(1) if units else '?'} inputs in {args.fuzz_seconds} s, "
        f"{rate.group(1) if rate else '?'} inputs/s, exit code {run.returncode}"
    )


if __name__ == "__main__":
    main()
