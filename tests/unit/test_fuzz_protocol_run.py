"""CI's time-boxed fuzzing pass: the atheris harness over every decoding entry point for 60 s.

Fails on any crash (an exception other than RemoteProtocolError, an input slower than 10 s, or
memory past 2 GiB): the harness then writes the input to ``fuzz/crashers/``, where
``test_protocol_hostile.py`` replays it once the decoder is fixed.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

HARNESS = Path(__file__).resolve().parents[2] / "fuzz" / "fuzz_protocol.py"


def test_fuzz_the_decoders_for_a_minute(tmp_path: Path) -> None:
    pytest.importorskip("atheris")
    run = subprocess.run(
        [sys.executable, str(HARNESS), "--seconds", "60", "--corpus", str(tmp_path / "corpus")],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    tail = (run.stdout + run.stderr)[-4000:]
    assert run.returncode == 0, tail
    inputs = int(re.search(r"stat::number_of_executed_units:\s+(\d+)", run.stderr).group(1))  # type: ignore[union-attr]
    rate = int(re.search(r"stat::average_exec_per_sec:\s+(\d+)", run.stderr).group(1))  # type: ignore[union-attr]
    print(f"fuzz: {inputs} inputs in 60 s ({rate} inputs/s), no crash")
    assert inputs > 10_000
