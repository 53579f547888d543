from __future__ import annotations

from tests.wirecaps import all_frames, frame_bytes, frame_files, load


def test_captures_are_present_and_well_formed() -> None:
    names = frame_files()
    assert "produce.jsonl" in names
    assert "messages.jsonl" not in names
    count = 0
    for _name, line in all_frames():
        raw = frame_bytes(line)
        assert int.from_bytes(raw[:4], "big") == len(raw) - 4
        count += 1
    assert count > 1000
    assert len(load("messages.jsonl")) > 0
