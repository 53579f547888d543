"""Hostile input to the sans-I/O decoders: each gives a RemoteProtocolError naming the field, never
another exception (issue 12's seven reproducers, then the classes the fuzzer looks for).

The reproducers are whole frames in hex, as the issue gives them (``X×N``: byte X repeated N
times); ``fuzz/crashers/`` holds them as harness inputs too, and the last test here replays every
file there (anything the fuzzer ever found).
"""

from __future__ import annotations

import gc
import json
import zlib
from pathlib import Path

import pytest
from fuzz.targets import TARGETS, run_one

from rocketq.errors import RemoteProtocolError
from rocketq.protocol import (
    ConsumerOffsetSerializeWrapper,
    ConsumeStats,
    FrameDecoder,
    GetMaxOffsetRequestHeader,
    HeartbeatData,
    QueryCorrectionOffsetBody,
    RemotingCommand,
    SendMessageRequestHeaderV2,
    SerializeType,
    TopicRouteData,
    decode_frame,
    encode_frame,
)
from rocketq.protocol.fastjson import loads
from rocketq.protocol.message import (
    MAX_INFLATED_BODY,
    Message,
    decode_batch,
    decode_messages,
    decompress_body,
    encode_batch,
    encode_message,
)
from rocketq.protocol.properties import string_to_properties

CRASHERS = Path(__file__).resolve().parents[2] / "fuzz" / "crashers"

# issue 12, reproducer 1: a GET_MAX_OFFSET (30) whose queueId has 4,301 digits
REPRO_1 = bytes.fromhex(
    "00001103000010ff7b22636f6465223a33302c226578744669656c6473223a7b22746f706963223a2254222c"
    "2271756575654964223a22" + "39" * 4301 + "227d7d"
)
# reproducer 2: a HEART_BEAT (34) whose body holds a 4,301-digit JSON number
REPRO_2 = bytes.fromhex("000010e20000000b7b22636f6465223a33347d7b2261223a" + "31" * 4301 + "7d")


def _frame(code: int, ext: dict[str, str], body: bytes = b"") -> bytes:
    return encode_frame(RemotingCommand.request(code, ext, body=body))


def test_repro_1_integer_header_field_of_4301_digits() -> None:
    cmd = decode_frame(REPRO_1)
    assert cmd.code == 30
    with pytest.raises(RemoteProtocolError, match="'queueId' is not a Java Integer"):
        GetMaxOffsetRequestHeader.from_ext_fields(cmd.ext_fields)


def test_repro_2_json_number_of_4301_digits_in_a_heartbeat() -> None:
    cmd = decode_frame(REPRO_2)
    assert cmd.code == 34
    with pytest.raises(RemoteProtocolError, match=r"HeartbeatData: .*more than 4300 digits"):
        HeartbeatData.decode(cmd.body)


def test_repro_3_ref_index_of_4301_digits() -> None:
    body = b'{"a":[1],"b":{"$ref":"$.a[' + b"7" * 4301 + b']"}}'
    with pytest.raises(RemoteProtocolError, match="cannot follow fastjson reference"):
        loads(body)


@pytest.mark.parametrize("key", ["²", "--5", "1" * 4400, "99999999999999999999", " 1"])
def test_repro_4_long_keyed_maps_with_bad_keys(key: str) -> None:
    route = {"brokerDatas": [{"brokerName": "b", "brokerAddrs": {key: "127.0.0.1:10911"}}]}
    with pytest.raises(RemoteProtocolError, match=r"TopicRouteData\.brokerDatas\[0\]\.brokerAddrs key"):
        TopicRouteData.decode(json.dumps(route).encode())
    offsets = {"offsetTable": {"T@G": {key: 5}}}
    with pytest.raises(RemoteProtocolError, match=r"ConsumerOffsetSerializeWrapper\.offsetTable"):
        ConsumerOffsetSerializeWrapper.decode(json.dumps(offsets).encode())
    correction = {"correctionOffsets": {key: 5}}
    with pytest.raises(RemoteProtocolError, match=r"QueryCorrectionOffsetBody\.correctionOffsets"):
        QueryCorrectionOffsetBody.decode(json.dumps(correction).encode())


def test_long_keys_still_read_as_java_reads_them() -> None:
    body = {"offsetTable": {"T@G": {"-0007": 5, "+3": 6, "9223372036854775807": 7}}}
    table = ConsumerOffsetSerializeWrapper.decode(json.dumps(body).encode()).offset_table
    assert table == {"T@G": {-7: 5, 3: 6, 2**63 - 1: 7}}


def _send_frame(topic: str, properties: str) -> bytes:
    header = SendMessageRequestHeaderV2(
        producer_group="P", topic=topic, default_topic="TBW102", default_topic_queue_nums=4,
        queue_id=0, sys_flag=0, born_timestamp=1, flag=0, properties=properties,
    )  # fmt: skip
    # json.dumps writes a lone surrogate as the escape a hostile peer would send
    ext = json.dumps(header.to_ext_fields()).replace("\\\\ud800", "\\ud800")
    text = '{"code":310,"extFields":' + ext + ',"flag":0,"language":"JAVA","opaque":1,"version":401}'
    raw = text.encode("utf-8", "surrogatepass")
    return (len(raw) + 4).to_bytes(4, "big") + len(raw).to_bytes(4, "big") + raw


@pytest.mark.parametrize(
    ("topic", "properties", "stored_topic", "stored_properties"),
    [
        ("T", "TAGS\x01a\ud800b\x02KEYS\x01k", "T", {"TAGS": "a?b", "KEYS": "k"}),  # reproducer 5
        ("T\ud800", "TAGS\x01a", "T?", {"TAGS": "a"}),  # reproducer 6
        ("T", "TAGS\x01\ud83d\ude00", "T", {"TAGS": "\U0001f600"}),  # a surrogate pair is one character
    ],
)
def test_repro_5_6_lone_surrogates_in_send_topic_and_properties(
    topic: str, properties: str, stored_topic: str, stored_properties: dict[str, str]
) -> None:
    cmd = decode_frame(_send_frame(topic, properties))
    header = SendMessageRequestHeaderV2.from_ext_fields(cmd.ext_fields)
    # as Java's UTF-8 encoder writes such a string: "?" for each lone surrogate
    assert header.topic == stored_topic
    assert string_to_properties(header.properties or "") == stored_properties
    record = encode_message(topic=header.topic, body=b"x", properties=header.properties or "")
    (msg,) = decode_messages(record)
    assert (msg.topic, msg.properties) == (stored_topic, stored_properties)


def test_lone_surrogates_in_json_bodies_become_question_marks() -> None:
    heartbeat = HeartbeatData.decode(b'{"clientID":"c\\ud800","consumerDataSet":[{"groupName":"\\udc00G"}]}')
    assert heartbeat.client_id == "c?"
    assert heartbeat.consumer_data_set[0].group_name == "?G"


def test_repro_7_float_field_given_a_400_digit_integer() -> None:
    with pytest.raises(RemoteProtocolError, match=r"ConsumeStats\.consumeTps: expected a number"):
        ConsumeStats.decode(b'{"consumeTps":' + b"9" * 400 + b"}")


def test_deep_nesting_is_a_protocol_error_in_every_json_path() -> None:
    deep = b"[" * 5000 + b"]" * 5000
    with pytest.raises(RemoteProtocolError, match="nest"):
        loads(deep)
    with pytest.raises(RemoteProtocolError):
        HeartbeatData.decode(b'{"consumerDataSet":' + deep + b"}")
    header = b'{"code":34,"extFields":{"a":' + b"[" * 900 + b"]" * 900 + b"}}"
    frame = (len(header) + 4).to_bytes(4, "big") + len(header).to_bytes(4, "big") + header
    try:
        decode_frame(frame)
    except RemoteProtocolError:
        pass


def test_error_messages_show_hostile_values_briefly() -> None:
    with pytest.raises(RemoteProtocolError) as caught:
        GetMaxOffsetRequestHeader.from_ext_fields({"topic": "T", "queueId": "9" * 100_000})
    assert len(str(caught.value)) < 200


def test_header_size_and_ext_field_count_are_bounded() -> None:
    many = {f"k{i}": "v" for i in range(1025)}
    frame = _frame(34, many)
    with pytest.raises(RemoteProtocolError, match="1025 ext fields, over the limit of 1024"):
        decode_frame(frame)
    rmq = encode_frame(RemotingCommand.request(34, many, serialize_type=SerializeType.ROCKETMQ))
    with pytest.raises(RemoteProtocolError, match="more than 1024 ext fields"):
        decode_frame(rmq)
    assert decode_frame(frame, max_ext_fields=2000).ext_fields == many
    # A batch's answer names every message: 2.1 MiB of msgId for 64k messages, a header RocketMQ
    # sends and takes (it bounds headers only by the frame); so do we by default.
    ids = ",".join(f"{i:032X}" for i in range(64_000))
    answer = decode_frame(_frame(0, {"msgId": ids, "queueId": "0", "queueOffset": "0"}))
    assert answer.ext_fields["msgId"] == ids
    big = _frame(34, {"k": "v" * 300_000})
    decoder = FrameDecoder(max_header_size=256 * 1024)
    decoder.receive_data(big)
    with pytest.raises(RemoteProtocolError, match="exceeds the maximum of 262144"):
        decoder.next_command()
    # a large JSON header with more colons than fields allowed is refused before it is parsed
    colons = _frame(34, {"k": ":" * 300_000})
    with pytest.raises(RemoteProtocolError, match="more than 1024 ext fields"):
        decode_frame(colons)
    assert decode_frame(colons, max_ext_fields=400_000).ext_fields == {"k": ":" * 300_000}


def test_a_bad_frame_leaves_no_reference_cycle_holding_its_bytes() -> None:
    """The decoder keeps the reason of a failure, not the exception: its traceback would hold the
    frames that read the bad frame, with all its bytes, in a cycle only a collection frees."""
    many = {f"k{i}": "v" * 100 for i in range(3000)}
    bad = encode_frame(RemotingCommand.request(34, many, serialize_type=SerializeType.ROCKETMQ))
    gc.collect()
    gc.disable()
    try:
        decoder = FrameDecoder()
        decoder.receive_data(bad)
        messages = []
        for _ in range(2):
            try:
                decoder.next_command()
            except RemoteProtocolError as exc:
                messages.append(str(exc))
        assert messages == ["header has more than 1024 ext fields"] * 2
        del decoder
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_inflation_is_bounded_per_body_and_per_call() -> None:
    bomb = zlib.compress(b"\0" * (MAX_INFLATED_BODY + 1), 9)
    with pytest.raises(RemoteProtocolError, match=f"inflates past {MAX_INFLATED_BODY} bytes"):
        decompress_body(bomb, 0x301)
    with pytest.raises(RemoteProtocolError, match="truncated"):
        decompress_body(zlib.compress(b"abc" * 1000)[:-6], 0x301)
    with pytest.raises(RemoteProtocolError, match="does not inflate"):
        decompress_body(b"not zlib", 0x301)
    one_mib = zlib.compress(b"\0" * (1 << 20), 9)
    record = encode_message(topic="T", body=one_mib, sys_flag=0x301)
    assert len(decode_messages(record * 3, max_inflated=3 << 20)) == 3
    with pytest.raises(RemoteProtocolError, match=r"message at byte \d+: compressed bodies inflate past"):
        decode_messages(record * 3, max_inflated=(3 << 20) - 1)


def test_batch_record_count_is_bounded_before_decoding() -> None:
    body = encode_batch([Message("", b"x", 0, {}) for _ in range(101)])
    assert len(decode_batch(body, "T", max_messages=101)) == 101
    with pytest.raises(RemoteProtocolError, match="more than 100 messages"):
        decode_batch(body, "T", max_messages=100)


def test_every_target_has_a_seed_and_the_seeds_decode() -> None:
    from fuzz.targets import seed_inputs

    seeds = list(seed_inputs())
    assert {TARGETS[s[0]] for s in seeds} == set(TARGETS)
    for seed in seeds:
        run_one(seed)


def test_every_known_crasher_only_raises_protocol_errors() -> None:
    files = sorted(p for p in CRASHERS.iterdir() if p.is_file() and not p.name.startswith("."))
    assert len(files) >= 7  # the seven reproducers at least
    for path in files:
        run_one(path.read_bytes())  # raises anything but RemoteProtocolError
