"""A good producer's latency while a hostile peer attacks a live server, and the fuzzer's speed.

    python bench/bench_hostile.py [--seconds 5] [--fuzz-seconds 20]

Starts ``rocketq server`` (subprocess, temp dir), a producer sending 1 KiB messages one after the
other and a consumer pulling (``fuzz/hostile.py``), measures the producer's p50/p99 with no attack
(the baseline, same run), then under each attack of issue 12 (and the costliest requests the
limits accept), each repeated back to back from its own process for ``--seconds``. Prints per
attack: rounds, good sends, p50, p99, worst stall (the slowest good send) and the server's peak
RSS (sampled every 50 ms); then the fuzz harness's inputs/s over ``--fuzz-seconds``.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fuzz.hostile import ATTACKS, Attacker, GoodTraffic, percentile, start_server  # noqa: E402

MIB = 1024 * 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--fuzz-seconds", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, start_server(Path(tmp) / "data", Path(tmp) / "log") as server:
        good = GoodTraffic(server.broker).start()
        peak = [0]
        stop = threading.Event()

        def sample() -> None:
            while not stop.wait(0.05):
                peak[0] = max(peak[0], server.rss())

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            time.sleep(1.0)
            good.take()
            time.sleep(args.seconds)
            base = good.take()
            head = ("attack", "rounds", "sends", "p50 ms", "p99 ms", "worst", "peak RSS")
            print("{:48} {:>7} {:>6} {:>7} {:>7} {:>7} {:>9}".format(*head))
            print(
                f"{'(none: baseline)':48} {0:7d} {len(base):6d} {percentile(base, 0.5) * 1e3:7.1f} "
                f"{percentile(base, 0.99) * 1e3:7.1f} {max(base) * 1e3:7.1f} {server.rss() / MIB:8.0f}M"
            )
            for name in ATTACKS:
                peak[0] = server.rss()
                with Attacker(name, server.namesrv, server.broker, args.seconds) as attacker:
                    attacker.process.join(120)
                lat = good.take()
                print(
                    f"{name:48} {attacker.count.value:7d} {len(lat):6d} {percentile(lat, 0.5) * 1e3:7.1f} "
                    f"{percentile(lat, 0.99) * 1e3:7.1f} {max(lat) * 1e3:7.1f} {peak[0] / MIB:8.0f}M"
                )
        finally:
            stop.set()
            sampler.join()
            good.stop()
        print(f"good sends failed: {len(good.failures)}; server RSS at the end {server.rss() / MIB:.0f} MiB")
        errors = [line for line in server.log().splitlines() if " ERROR " in line or "Traceback" in line]
        print(f"ERROR lines in the server log: {len(errors)}")
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
