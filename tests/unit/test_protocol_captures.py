"""Every frame captured between real RocketMQ 4.9.4 peers decodes, matches, and re-encodes exactly."""

from __future__ import annotations

from typing import Any

import pytest

from rocketq.protocol import (
    FrameDecoder,
    LanguageCode,
    RemotingCommand,
    SerializeType,
    decode_frame,
    encode_frame,
)
from tests.wirecaps import all_frames, frame_bytes, frame_files, load

FRAMES = list(all_frames())


def _header_view(cmd: RemotingCommand) -> dict[str, Any]:
    """``cmd``'s header in the shape the capture files record it."""
    if cmd.serialize_type == SerializeType.JSON:
        view: dict[str, Any] = {"code": cmd.code}
        if cmd.ext_fields or cmd.write_empty_ext_fields:
            view["extFields"] = cmd.ext_fields
        view |= {"flag": cmd.flag, "language": cmd.language.name, "opaque": cmd.opaque}
        if cmd.remark is not None:
            view["remark"] = cmd.remark
        view |= {"serializeTypeCurrentRPC": "JSON", "version": cmd.version}
        return view
    view = {
        "code": cmd.code,
        "language": cmd.language.name,
        "version": cmd.version,
        "opaque": cmd.opaque,
        "flag": cmd.flag,
    }
    if cmd.remark is not None:
        view["remark"] = cmd.remark
    view["extFields"] = cmd.ext_fields
    return view


def test_there_are_frames_of_both_serialize_types() -> None:
    kinds = {line["serialize_type"] for _, line in FRAMES}
    assert kinds == {0, 1}
    assert len(FRAMES) > 1000


@pytest.mark.parametrize("name", frame_files())
def test_every_captured_frame_decodes_to_its_recorded_header(name: str) -> None:
    for line in load(name):
        raw = frame_bytes(line)
        cmd = decode_frame(raw)
        assert cmd.serialize_type == line["serialize_type"]
        header = _header_view(cmd)
        assert header == line["header"], (name, line["seq"])
        # key order too: JSON keys as fastjson sorts them, ext fields in the peer's order
        assert list(header) == list(line["header"]), (name, line["seq"])
        assert list(cmd.ext_fields) == list(line["header"].get("extFields") or {}), (name, line["seq"])
        assert len(cmd.body) == line["body_len"]
        assert cmd.is_response == (line["reply_to"] is not None)


@pytest.mark.parametrize("name", frame_files())
def test_every_captured_frame_reencodes_to_the_same_bytes(name: str) -> None:
    for line in load(name):
        raw = frame_bytes(line)
        assert encode_frame(decode_frame(raw)) == raw, (name, line["seq"])


def test_the_whole_capture_stream_decodes_incrementally_in_odd_chunks() -> None:
    for name in frame_files():
        stream = b"".join(frame_bytes(line) for line in load(name))
        decoder = FrameDecoder()
        got: list[RemotingCommand] = []
        for start in range(0, len(stream), 997):
            decoder.receive_data(stream[start : start + 997])
            got.extend(decoder)
        assert decoder.buffered == 0
        assert got == [decode_frame(frame_bytes(line)) for line in load(name)], name


def test_responses_repeat_their_requests_opaque() -> None:
    for name in frame_files():
        lines = {line["seq"]: line for line in load(name)}
        for line in lines.values():
            if line["reply_to"] is None:
                continue
            request = decode_frame(frame_bytes(lines[line["reply_to"]]))
            response = decode_frame(frame_bytes(line))
            assert response.opaque == request.opaque
            assert response.is_response
            assert not request.is_response


def test_java_peers_say_java_and_their_version() -> None:
    languages = {decode_frame(frame_bytes(line)).language for _, line in FRAMES}
    assert LanguageCode.JAVA in languages
    assert languages <= {LanguageCode.JAVA, LanguageCode.PYTHON}
    assert {decode_frame(frame_bytes(line)).version for _, line in FRAMES} == {399, 401}  # V4_9_3, V4_9_4
