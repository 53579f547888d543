"""The default request limits refuse no body a RocketMQ peer writes, at any size up to the frame,
and refuse the hostile packings of issue 12 before anything decodes them."""

from __future__ import annotations

import pytest

from rocketq.models import MessageQueue
from rocketq.protocol import RequestCode, decode_frame
from rocketq.protocol.bodies import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    HeartbeatData,
    LockBatchRequestBody,
    MessageModel,
    ProducerData,
    RegisterBrokerBody,
    SubscriptionData,
    TopicConfig,
    TopicConfigSerializeWrapper,
)
from rocketq.protocol.frame import DEFAULT_MAX_FRAME_SIZE
from rocketq.protocol.properties import java_string_hash
from rocketq.remoting.guard import DEFAULT_REQUEST_LIMITS, RequestLimit, limits_check_from
from tests.wirecaps import all_frames, frame_bytes

HB = RequestCode.HEART_BEAT
ROOM = DEFAULT_MAX_FRAME_SIZE - 4096  # a body's room in a 16 MiB frame


def _fill(make: object, size: int) -> int:
    """How many items of ``make(i)``'s size fit ``size`` bytes."""
    one = len(make(0))  # type: ignore[operator]
    return size // (one + 1)


def _refusal(code: int, body: bytes) -> str | None:
    return DEFAULT_REQUEST_LIMITS[code].refusal(code, body)


def test_every_captured_body_passes() -> None:
    checked = 0
    for _, line in all_frames():
        cmd = decode_frame(frame_bytes(line))
        if not cmd.flag & 1 and cmd.code in DEFAULT_REQUEST_LIMITS and cmd.body:
            assert _refusal(cmd.code, cmd.body) is None
            checked += 1
    assert checked >= 20


def test_the_densest_bodies_rocketmq_writes_pass_at_the_frames_size() -> None:
    # a heartbeat of producer groups with one-character names: RocketMQ's densest bean
    count = _fill(lambda i: ProducerData(group_name="g").encode(), ROOM)
    producers = HeartbeatData(
        client_id="c", producer_data_set=tuple(ProducerData(group_name="g") for _ in range(count))
    ).encode()
    assert len(producers) > 15 << 20
    assert _refusal(HB, producers) is None
    # one group subscribing to as many one-character topics as fit, with one-character tags
    tags = tuple(chr(c) for c in range(ord("a"), ord("z") + 1))
    sub = SubscriptionData(
        topic="t",
        sub_string="||".join(tags),
        tags_set=tags,
        code_set=tuple(java_string_hash(t) for t in tags),
        sub_version=1,
    )
    subs = tuple(SubscriptionData(topic=f"t{i}", sub_string="*", sub_version=1) for i in range(100_000))
    consumer = ConsumerData(
        group_name="g",
        consume_type=ConsumeType.CONSUME_PASSIVELY,
        message_model=MessageModel.CLUSTERING,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        subscription_data_set=(sub, *subs),
    )
    heartbeat = HeartbeatData(client_id="c", consumer_data_set=(consumer,)).encode()
    assert len(heartbeat) > 10 << 20
    assert _refusal(HB, heartbeat) is None
    # a lock batch of as many queues as fit, a registration of as many topics
    mqs = tuple(
        MessageQueue("t", "b", i)
        for i in range(_fill(lambda i: b'{"brokerName":"b","queueId":99999,"topic":"t"}', ROOM))
    )
    lock = LockBatchRequestBody(consumer_group="g", client_id="c", mq_set=mqs).encode()
    assert len(lock) > 14 << 20
    assert _refusal(RequestCode.LOCK_BATCH_MQ, lock) is None
    table = {f"T{i}": TopicConfig(topic_name=f"T{i}") for i in range(100_000)}
    registration = RegisterBrokerBody(
        topic_config_serialize_wrapper=TopicConfigSerializeWrapper(topic_config_table=table)
    ).encode()
    assert _refusal(RequestCode.REGISTER_BROKER, registration) is None


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"[" + b",".join([b"{}"] * 10_000) + b"]", "JSON objects and arrays"),
        (b"[" + b",".join([b"{a:1}"] * 10_000) + b"]", "JSON objects and arrays"),
        (b"[" + b",".join([b"[]"] * 10_000) + b"]", "JSON objects and arrays"),
        (b"[" + b",".join([b"1"] * 10_000) + b"]", "JSON values"),
        (b'{"clientID":"' + b"," * 20_000 + b'"}', "JSON values"),
    ],
)
def test_hostile_packings_are_refused(body: bytes, words: str) -> None:
    remark = _refusal(HB, body)
    assert remark is not None
    assert remark.startswith("HEART_BEAT(34) body holds")
    assert words in remark


def test_small_bodies_are_not_counted_and_limits_say_where_they_start() -> None:
    assert _refusal(HB, b"[" + b",".join([b"{}"] * 1000) + b"]") is None  # under 4 KiB
    assert limits_check_from(DEFAULT_REQUEST_LIMITS) == 4096
    assert limits_check_from({HB: RequestLimit(max_body=100)}) == 101
    assert limits_check_from({}) > DEFAULT_REQUEST_LIMITS[HB].check_from
    assert RequestLimit(max_body=100).refusal(HB, b"x" * 101) == (
        "HEART_BEAT(34) body of 101 bytes is over this server's limit of 100 bytes"
    )
    capped = RequestLimit(max_json_objects=10, min_bytes_per_object=16)
    assert "limit of 10" in (capped.refusal(HB, b"{}" * 11 + b" " * 5000) or "")
