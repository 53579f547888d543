"""Coverage-guided fuzzing of every decoding entry point of ``rocketq.protocol`` (atheris + libFuzzer).

One command::

    python fuzz/fuzz_protocol.py --seconds 60            # a time-boxed run (CI runs 60 s)
    python fuzz/fuzz_protocol.py --runs 1000000          # a long run: a million inputs

seeds a fresh corpus with the captured RocketMQ 4.9.4 frames (see :func:`fuzz.targets.seed_inputs`),
fuzzes :func:`fuzz.targets.run_one` with :mod:`rocketq` instrumented for coverage, and prints
libFuzzer's final figures (``stat::number_of_executed_units``, ``stat::average_exec_per_sec``).
Any exception but ``RemoteProtocolError`` (or an input that takes longer than ``--input-timeout``
seconds, or memory past ``--rss-limit-mb``) stops the run with exit code 1 and writes the input
to ``fuzz/crashers/`` (as ``crash-<sha1>``); fix the decoder and keep the file:
``tests/unit/test_protocol_hostile.py`` replays every file there. Other libFuzzer flags can follow
``--`` (``-jobs=2``, ``-dict=...``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "src"))

import atheris  # noqa: E402

with atheris.instrument_imports(include=["rocketq"]):
    import rocketq.protocol  # noqa: F401  (instrumented before the targets import it)
    from fuzz.targets import run_one, seed_inputs

CRASHERS = HERE / "crashers"
DICTIONARY = HERE / "rocketmq.dict"


def test_one_input(data: bytes) -> None:
    run_one(data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=0, help="stop after this long (0: no limit)")
    parser.add_argument("--runs", type=int, default=0, help="stop after this many inputs (0: no limit)")
    parser.add_argument("--corpus", type=Path, help="corpus directory to keep (default: a fresh temp dir)")
    parser.add_argument("--input-timeout", type=int, default=10, help="seconds one input may take")
    parser.add_argument("--rss-limit-mb", type=int, default=2048, help="memory bound of the run")
    parser.add_argument("--max-len", type=int, default=16384, help="longest input libFuzzer makes")
    args, extra = parser.parse_known_args()
    extra = [a for a in extra if a != "--"]

    corpus = args.corpus or Path(tempfile.mkdtemp(prefix="rocketq-fuzz-"))
    corpus.mkdir(parents=True, exist_ok=True)
    seeds = 0
    for i, seed in enumerate(seed_inputs()):
        (corpus / f"seed-{i:05d}").write_bytes(seed)
        seeds += 1
    CRASHERS.mkdir(exist_ok=True)
    for crasher in sorted(CRASHERS.iterdir()):  # keep the known crashers in the corpus too
        if crasher.is_file() and not crasher.name.startswith("."):
            (corpus / f"crasher-{crasher.name}").write_bytes(crasher.read_bytes())

    flags = [
        f"-timeout={args.input_timeout}",
        f"-rss_limit_mb={args.rss_limit_mb}",
        f"-max_len={args.max_len}",
        f"-artifact_prefix={CRASHERS}{os.sep}",
        "-print_final_stats=1",
    ]
    if DICTIONARY.exists():
        flags.append(f"-dict={DICTIONARY}")
    if args.seconds:
        flags.append(f"-max_total_time={args.seconds}")
    if args.runs:
        flags.append(f"-runs={args.runs}")
    print(f"fuzz: {seeds} seeds in {corpus}", flush=True)
    # libFuzzer prints the figures at the end (stat::number_of_executed_units, average_exec_per_sec)
    atheris.Setup([sys.argv[0], *flags, *extra, str(corpus)], test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
