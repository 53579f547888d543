"""The soak's short form: ``bench/bench_soak.py`` for 18 s, the group changing every 5 s.

The same code as the hour-long soak whose figures are in ``docs/load.md``: a broker at ~70 % of
the capacity measured in the run, producers and a consumer group whose members leave and join,
every process's RSS, fds and threads sampled. Checked here: nothing acknowledged lost, duplicates
within the rebalance bound, the server's fds flat. (18 s is too short for RSS trends to
mean much; the hour is where they are judged.) The member that leaves is drawn at random; the
seed is printed.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(150)]

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_soak.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_soak", BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_soak"] = module
    spec.loader.exec_module(module)
    return module


def test_a_short_soak_loses_nothing_and_keeps_fds_flat(tmp_path: Path) -> None:
    bench = _bench()
    seed = random.randrange(2**32)
    print(f"seed {seed}")
    args = bench._parser().parse_args(
        ["--minutes", "0.3", "--churn", "5", "--calibrate", "4", "--sample", "1", "--producers", "1",
         "--members", "2", "--seed", str(seed), "--json", str(tmp_path / "soak.json")]
    )  # fmt: skip
    result = bench.run(args)
    print({k: v for k, v in result.items() if k != "flat"}, result["flat"]["server"])
    assert result["acked"] > 0
    assert result["lost"] == 0, result
    assert result["changes"] >= 3, result
    assert result["duplicates"] <= result["dup_bound"], result
    fds = result["flat"]["server"]["fds"]
    assert fds[1] <= fds[0] + 8, result["flat"]
