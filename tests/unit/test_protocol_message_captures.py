"""Message bodies captured between RocketMQ 4.9.4 peers decode to what the Java client saw.

``messages.jsonl`` lists, for every frame whose body holds messages, what Java's
``MessageDecoder`` made of it; ``consumer-messages.jsonl`` what the push consumers' listeners got.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest

from rocketq.protocol.message import (
    QUEUE_OFFSET_POSITION,
    STORE_OFFSETS,
    MessageExt,
    ScanStop,
    decode_batch,
    decode_message,
    decode_messages,
    encode_batch,
    encode_message_ext,
    encode_stored_batch,
    scan_stored,
)
from rocketq.protocol.message_id import parse_offset_msg_id, parse_uniq_id
from rocketq.protocol.properties import (
    MessageConst,
    java_hashmap_order,
    java_string_hash,
    properties_to_string,
    string_to_properties,
)
from tests import wirecaps

RECORDS = wirecaps.load("messages.jsonl")
STORE_RECORDS = [r for r in RECORDS if r["format"] == "store"]
BATCH_RECORDS = [r for r in RECORDS if r["format"] == "batch"]


def _frame(file: str, seq: int) -> dict[str, Any]:
    for line in wirecaps.load(file):
        if line["seq"] == seq:
            return line
    raise LookupError(f"{file} has no frame {seq}")


def frame_body(file: str, seq: int) -> bytes:
    """The body of a captured frame: after the 4-byte length, the header word and the header."""
    raw = wirecaps.frame_bytes(_frame(file, seq))
    length, header_word = struct.unpack_from(">ii", raw)
    assert length == len(raw) - 4
    return raw[8 + (header_word & 0xFFFFFF) :]


def java_view(m: MessageExt) -> dict[str, Any]:
    """A decoded message in the capture's notation (properties sorted by name, hosts ``ip:port``)."""
    return {
        "topic": m.topic,
        "queueId": m.queue_id,
        "queueOffset": m.queue_offset,
        "commitLogOffset": m.commit_log_offset,
        "storeSize": m.store_size,
        "bodyCRC": m.body_crc,
        "flag": m.flag,
        "sysFlag": m.sys_flag,
        "bornTimestamp": m.born_timestamp,
        "bornHost": str(m.born_host),
        "storeTimestamp": m.store_timestamp,
        "storeHost": str(m.store_host),
        "reconsumeTimes": m.reconsume_times,
        "preparedTransactionOffset": m.prepared_transaction_offset,
        "msgId": m.msg_id,
        "offsetMsgId": m.offset_msg_id,
        "tags": m.tags,
        "keys": m.keys,
        "properties": dict(sorted(m.properties.items())),
        "bodyLen": len(m.body),
        "body": m.body.decode(),
    }


def _ids(records: list[dict[str, Any]]) -> list[str]:
    return [f"{r['file']}#{r['seq']}" for r in records]


def test_capture_lists_both_formats() -> None:
    assert len(STORE_RECORDS) >= 30
    assert len(BATCH_RECORDS) == 2
    assert sum(r["count"] for r in STORE_RECORDS) >= 70


@pytest.mark.parametrize("record", STORE_RECORDS, ids=_ids(STORE_RECORDS))
def test_stored_bodies_decode_as_java_did(record: dict[str, Any]) -> None:
    body = frame_body(record["file"], record["seq"])
    messages = decode_messages(body)
    assert len(messages) == record["count"]
    assert [java_view(m) for m in messages] == record["messages"]


@pytest.mark.parametrize("record", STORE_RECORDS, ids=_ids(STORE_RECORDS))
def test_stored_bodies_reencode_to_the_same_bytes(record: dict[str, Any]) -> None:
    body = frame_body(record["file"], record["seq"])
    messages = decode_messages(body)
    assert b"".join(encode_message_ext(m) for m in messages) == body
    raw = decode_messages(body, decompress=False)
    assert b"".join(encode_message_ext(m, compress=False) for m in raw) == body
    # record by record, with the sizes the Java decoder reported
    pos = 0
    for msg in messages:
        one, nxt = decode_message(body, pos)
        assert one == msg
        assert nxt - pos == msg.store_size
        pos = nxt


@pytest.mark.parametrize("record", STORE_RECORDS, ids=_ids(STORE_RECORDS))
def test_recovery_scan_accepts_every_captured_body(record: dict[str, Any]) -> None:
    body = frame_body(record["file"], record["seq"])
    result = scan_stored(body)
    assert (result.end, result.count, result.stop) == (len(body), record["count"], ScanStop.END)
    assert result.clean


@pytest.mark.parametrize("record", BATCH_RECORDS, ids=_ids(BATCH_RECORDS))
def test_batch_bodies_decode_as_java_did_and_reencode(record: dict[str, Any]) -> None:
    body = frame_body(record["file"], record["seq"])
    frame = _frame(record["file"], record["seq"])
    messages = decode_batch(body, topic="WireDemo")
    assert len(messages) == record["count"]
    for got, want in zip(messages, record["messages"], strict=True):
        assert got.topic == "WireDemo"
        assert got.flag == want["flag"]
        assert got.tags == want["tags"]
        assert got.keys == want["keys"]
        assert dict(sorted(got.properties.items())) == want["properties"]
        assert got.body.decode() == want["body"]
        assert len(got.body) == want["bodyLen"]
    assert encode_batch(messages) == body
    assert len(body) == frame["body_len"]


def test_compressed_message_is_inflated_and_recompressed_identically() -> None:
    record = next(r for r in STORE_RECORDS if any(m["sysFlag"] & 1 for m in r["messages"]))
    body = frame_body(record["file"], record["seq"])
    compressed = [m for m in decode_messages(body) if m.sys_flag & 1]
    raw = [m for m in decode_messages(body, decompress=False) if m.sys_flag & 1]
    assert compressed[0].sys_flag == 769
    assert len(compressed[0].body) == 5175
    assert len(raw[0].body) == 274
    assert encode_message_ext(compressed[0]) == encode_message_ext(raw[0], compress=False)


def test_duplicate_stored_property_survives_round_trip() -> None:
    """The broker appends ``CLUSTER`` and ``WAIT`` to stored batch messages, so ``WAIT`` twice."""
    record = next(r for r in STORE_RECORDS if r["file"] == "push-consume.jsonl" and r["seq"] == 25)
    body = frame_body(record["file"], record["seq"])
    batch_msgs = [m for m in decode_messages(body) if "batchIndex" in m.properties]
    assert batch_msgs
    for m in batch_msgs:
        assert m.stored_properties.count("WAIT\x01true") == 2
        assert m.properties[MessageConst.WAIT] == "true"
    # changing the map makes the encoder write the map, not the stale stored string
    m = batch_msgs[0]
    m.properties["extra"] = "1"
    again, _ = decode_message(encode_message_ext(m))
    assert again.properties == m.properties
    assert again.stored_properties.count("WAIT") == 1


def test_message_ids_in_captures_parse() -> None:
    for record in STORE_RECORDS:
        for want in record["messages"]:
            host, offset = parse_offset_msg_id(want["offsetMsgId"])
            assert str(host) == want["storeHost"]
            assert offset == want["commitLogOffset"]
            uniq = want["properties"].get("UNIQ_KEY")
            if uniq is not None:
                info = parse_uniq_id(uniq)
                assert info.ip == "fd00::2"  # the capture's producers had IPv6 fd00::2
                # the JVM ran in UTC; the id was made just before the message was born
                assert 0 <= want["bornTimestamp"] - info.approx_timestamp(want["bornTimestamp"] + 1) < 1000


def test_filter_heartbeat_code_set_is_java_hash_of_tags() -> None:
    import json

    for line in wirecaps.load("filter.jsonl"):
        if line["header"].get("code") != 34 or not line["body_len"]:
            continue
        raw = frame_body("filter.jsonl", line["seq"])
        for sub in json.loads(raw)["consumerDataSet"][0]["subscriptionDataSet"]:
            if sub["tagsSet"]:
                assert sub["codeSet"] == [java_string_hash(t) for t in sub["tagsSet"]]
                return
    pytest.fail("no heartbeat with a tag subscription in filter.jsonl")


CONSUMED = wirecaps.load("consumer-messages.jsonl")


def test_listener_view_matches_wire_view_up_to_documented_differences() -> None:
    """Each message a listener got is in a decoded pull body; the listener view adds
    ``MIN_OFFSET``/``MAX_OFFSET``/``CONSUME_START_TIME`` and restores a retry's real topic."""
    decoded: dict[tuple[str, str], dict[str, Any]] = {}
    for record in STORE_RECORDS:
        for msg in decode_messages(frame_body(record["file"], record["seq"])):
            decoded[(record["file"], msg.offset_msg_id)] = java_view(msg)
    assert len(CONSUMED) == 67
    client_added = {MessageConst.MIN_OFFSET, MessageConst.MAX_OFFSET, MessageConst.CONSUME_START_TIME}
    for entry in CONSUMED:
        seen = entry["message"]
        wire = decoded[(entry["file"], seen["offsetMsgId"])]
        assert seen["body"] == wire["body"]
        assert seen["queueOffset"] == wire["queueOffset"]
        extra = set(seen["properties"]) - set(wire["properties"])
        assert extra <= client_added
        assert {k: v for k, v in seen["properties"].items() if k not in extra} == wire["properties"]
        retry_topic = wire["properties"].get(MessageConst.RETRY_TOPIC)
        if wire["topic"].startswith("%RETRY%") and retry_topic:
            assert seen["topic"] == retry_topic
        else:
            assert seen["topic"] == wire["topic"]
        same = {k for k in wire if k not in ("topic", "properties")}
        assert {k: seen[k] for k in same} == {k: wire[k] for k in same}


def test_stored_property_string_is_what_string_to_properties_reads() -> None:
    record = STORE_RECORDS[0]
    body = frame_body(record["file"], record["seq"])
    for msg in decode_messages(body):
        assert string_to_properties(msg.stored_properties) == msg.properties


def test_stored_batch_records_are_what_the_broker_stored() -> None:
    """produce.jsonl #19 (SEND_BATCH_MESSAGE) came back from the store in push-consume.jsonl #25."""
    batch = frame_body("produce.jsonl", 19)
    header = _frame("produce.jsonl", 19)["header"]["extFields"]
    pulled = frame_body("push-consume.jsonl", 25)
    stored: list[tuple[MessageExt, bytes]] = []
    pos = 0
    for msg in decode_messages(pulled):
        if "batchIndex" in msg.properties:
            stored.append((msg, pulled[pos : pos + msg.store_size]))
        pos += msg.store_size
    assert len(stored) == 3
    first = stored[0][0]
    # the broker's batch properties: the header's, plus CLUSTER, written in Java HashMap order
    batch_props = string_to_properties(header["i"]) | {MessageConst.CLUSTER: "DefaultCluster"}
    ordered = {k: batch_props[k] for k in java_hashmap_order(batch_props)}
    records = encode_stored_batch(
        batch,
        topic=header["b"],
        queue_id=int(header["e"]),
        sys_flag=int(header["h"]),
        born_timestamp=int(header["g"]),
        born_host=first.born_host,
        store_timestamp=first.store_timestamp,
        store_host=first.store_host,
        reconsume_times=int(header["j"]),
        batch_properties=ordered,
    )
    assert len(records) == 3
    for record, (msg, want) in zip(records, stored, strict=True):
        patched = bytearray(record)
        STORE_OFFSETS.pack_into(patched, QUEUE_OFFSET_POSITION, msg.queue_offset, msg.commit_log_offset)
        assert bytes(patched) == want


def test_broker_stored_property_order_recipe() -> None:
    """How a 4.9.4 broker turns a single send's properties into the stored string: read them into
    a HashMap, put ``CLUSTER``, remove ``WAIT``, write in HashMap order (the table keeps the size it
    reached). Checked on every plain send whose message the captures show stored."""
    stored: dict[str, MessageExt] = {}
    for record in STORE_RECORDS:
        for msg in decode_messages(frame_body(record["file"], record["seq"])):
            stored.setdefault(msg.properties.get(MessageConst.UNIQ_KEY, ""), msg)
    checked = 0
    for _name, line in wirecaps.all_frames():
        header = line["header"]
        ext = header.get("extFields") or {}
        text = ext.get("i") if header.get("code") == 310 else ext.get("properties")
        if header.get("code") not in (10, 310) or text is None:
            continue
        props = string_to_properties(text)
        msg = stored.get(props.get(MessageConst.UNIQ_KEY, "-"))
        if msg is None or MessageConst.DELAY in props or MessageConst.TRAN_MSG in props:
            continue  # delayed and half messages are rewritten by the broker before they show up
        props[MessageConst.CLUSTER] = "DefaultCluster"
        most = len(props)
        props.pop(MessageConst.WAIT, None)
        order = java_hashmap_order(props, max_entries=most)
        assert properties_to_string({k: props[k] for k in order}) == msg.stored_properties
        checked += 1
    assert checked >= 30
