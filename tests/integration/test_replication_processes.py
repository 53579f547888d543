"""A master and its slave as separate ``rocketq broker`` processes: the master SIGKILLed with its
data directory deleted at a random point, and every SEND_OK message read back from the slave
(``bench/bench_ha_kill.py`` runs the 20-kill version and measures async-master's loss)."""

from __future__ import annotations

import random

import pytest
from bench.bench_ha_kill import run_round


def _round(seed: int) -> None:
    print(f"seed {seed} (replay: python bench/bench_ha_kill.py --rounds 1 --seed {seed})")
    r = run_round(seed, "sync-master")
    print(r)
    assert r.acked > 0
    assert r.lost == 0, f"{r.lost} of {r.acked} SEND_OK messages lost (seed {seed})"
    assert r.lost_running == 0, f"the running group missed {r.lost_running} (seed {seed})"


@pytest.mark.integration
def test_a_killed_sync_master_loses_no_acknowledged_message() -> None:
    _round(random.randrange(1 << 30))


@pytest.mark.integration
@pytest.mark.slow
def test_a_killed_sync_master_loses_no_acknowledged_message_again_and_again() -> None:
    for _ in range(2):
        _round(random.randrange(1 << 30))
