"""Loader for the frames captured between real RocketMQ 4.9.4 peers (tests/data/rocketmq-wire).

The captures are the ground truth for the codec and the servers: see that folder's README.md for
what each file holds. Every capture line is a dict; ``frame_bytes(line)`` gives its raw frame.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

WIRE_DIR = Path(__file__).parent / "data" / "rocketmq-wire"
SIDE_FILES = frozenset({"messages.jsonl", "consumer-messages.jsonl"})


def frame_files() -> list[str]:
    """Names of the capture files that hold frames (not the decoded-message side files)."""
    return sorted(p.name for p in WIRE_DIR.glob("*.jsonl") if p.name not in SIDE_FILES)


@cache
def load(name: str) -> tuple[dict[str, Any], ...]:
    """Every JSON line of one capture file, in order."""
    path = WIRE_DIR / name
    with path.open(encoding="utf-8") as fh:
        return tuple(json.loads(line) for line in fh if line.strip())


def all_frames() -> Iterator[tuple[str, dict[str, Any]]]:
    """``(file name, line)`` for every captured frame of every file."""
    for name in frame_files():
        for line in load(name):
            yield name, line


def frame_bytes(line: dict[str, Any]) -> bytes:
    return bytes.fromhex(line["frame_hex"])
