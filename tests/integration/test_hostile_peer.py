"""A hostile peer against a live ``rocketq server`` while a good producer and consumer keep working.

Each of issue 12's attacks, and the costliest requests the server accepts, runs for a bounded time
from its own process against a fresh server (``fuzz/hostile.py``), repeated back to back, while a
producer in this process sends 1 KiB messages one after the other and a consumer pulls them.
Afterwards: the server is up, its log holds no ERROR and no traceback, every good call succeeded,
the producer's p99 latency under the attack stayed under a generous bound (for a shared CI
machine; the figures are printed, and ``bench/bench_hostile.py`` measures them properly), the
server's memory stayed bounded and came back down.
"""

from __future__ import annotations

import gc
import time
from pathlib import Path

import pytest
from fuzz.hostile import ATTACKS, measure, pull_bomb_body

from rocketq.errors import RemoteProtocolError
from rocketq.protocol.message import decode_messages

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(600)]

SECONDS = 2.0
P99_BOUND = 0.5
MIB = 1024 * 1024


@pytest.mark.parametrize("name", list(ATTACKS))
def test_a_hostile_peer_stalls_nobody_and_leaves_no_trace(name: str, tmp_path: Path) -> None:
    f = measure(name, SECONDS, tmp_path)
    print(
        f"{name}: {f.rounds} attacks, {len(f.latencies)} good sends, p50 {f.p50 * 1e3:.1f} ms, "
        f"p99 {f.p99 * 1e3:.1f} ms, worst {f.worst * 1e3:.0f} ms; RSS {f.rss_before / MIB:.0f} MiB "
        f"before, {f.rss_peak / MIB:.0f} peak, {f.rss_after / MIB:.0f} after"
    )
    assert f.alive
    assert not f.errors, f.errors[:5]
    assert not f.failures, f.failures[:5]
    assert f.rounds > 0
    assert f.pulled > 0
    assert len(f.latencies) > 100
    assert f.p99 < P99_BOUND
    assert f.rss_peak < f.rss_before + 1024 * MIB
    assert f.rss_after < f.rss_before + 512 * MIB


def test_a_client_refuses_a_pull_body_inflating_to_256_mib() -> None:
    body = pull_bomb_body(256 * MIB)
    assert len(body) < 16 * MIB  # it fits a frame
    gc.collect()
    started = time.perf_counter()
    with pytest.raises(RemoteProtocolError, match="inflate past 134217728 bytes in all"):
        decode_messages(body)
    print(f"256 MiB pull bomb refused after {(time.perf_counter() - started) * 1000:.0f} ms")
