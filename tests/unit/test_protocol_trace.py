"""RocketMQ's message-trace text: golden lines in the Java encoder's layout, decoding, packing."""

from __future__ import annotations

import doctest
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.errors import RemoteProtocolError
from rocketq.protocol import trace
from rocketq.protocol.bodies import java_hash_order
from rocketq.protocol.trace import (
    CONTENT_SPLITOR,
    FIELD_SPLITOR,
    LocalTransactionState,
    TraceBean,
    TraceContext,
    TraceMessageType,
    TraceType,
    decode_trace,
    encode_trace,
    pack_traces,
    trace_keys,
)

C, F = "\x01", "\x02"
T = 1700000000123

# The Pub line of RocketMQ 4.9.4's TraceDataEncoderTest, field by field.
JAVA_PUB = C.join(
    [
        "Pub", str(T), "DefaultRegion", "PID-test", "topic-test", "AC1415116D1418B4AAC217FE1B4E0000",
        "Tags", "Keys", "127.0.0.1:10911", "26", "245", "0", "0A9A002600002A9F0000000000002329", "true",
    ]
) + F  # fmt: skip

PUB = TraceContext(
    trace_type=TraceType.PUB,
    timestamp=T,
    region_id="DefaultRegion",
    group_name="PID-test",
    cost_time=245,
    success=True,
    beans=(
        TraceBean(
            topic="topic-test",
            msg_id="AC1415116D1418B4AAC217FE1B4E0000",
            offset_msg_id="0A9A002600002A9F0000000000002329",
            tags="Tags",
            keys="Keys",
            store_host="127.0.0.1:10911",
            body_length=26,
            msg_type=TraceMessageType.NORMAL,
        ),
    ),
)


def test_doctests() -> None:
    assert doctest.testmod(trace).failed == 0


def test_constants_are_rocketmqs() -> None:
    assert (CONTENT_SPLITOR, FIELD_SPLITOR) == ("\x01", "\x02")
    assert trace.RMQ_SYS_TRACE_TOPIC == "RMQ_SYS_TRACE_TOPIC"
    assert trace.TRACE_MAX_MESSAGE_SIZE == 128000 - 10 * 1000


def test_pub_encodes_as_the_java_encoder() -> None:
    assert encode_trace([PUB]) == JAVA_PUB


def test_pub_decodes_from_the_java_line() -> None:
    assert decode_trace(JAVA_PUB) == [PUB]
    assert decode_trace(JAVA_PUB.encode()) == [PUB]


def test_pub_old_and_new_forms() -> None:
    fields = JAVA_PUB[:-1].split(C)
    old = C.join([*fields[:12], "false"]) + F  # 13 fields: no offset msg id
    (ctx,) = decode_trace(old)
    assert ctx.success is False
    assert ctx.beans[0].offset_msg_id == ""
    newer = C.join([*fields, "10.0.0.9"]) + F  # 15 fields: client host appended
    (ctx,) = decode_trace(newer)
    assert ctx.beans[0].client_host == "10.0.0.9"
    assert ctx.beans[0].offset_msg_id == "0A9A002600002A9F0000000000002329"
    assert ctx.success is True


def test_consume_contexts_write_one_line_per_message() -> None:
    beans = (TraceBean(msg_id="M1", retry_times=0, keys="a b"), TraceBean(msg_id="M2", retry_times=2))
    before = TraceContext(
        trace_type=TraceType.SUB_BEFORE, timestamp=T, region_id="DefaultRegion", group_name="G",
        request_id="REQ", beans=beans,
    )  # fmt: skip
    after = TraceContext(
        trace_type=TraceType.SUB_AFTER, timestamp=T + 9, region_id="DefaultRegion", group_name="G",
        request_id="REQ", cost_time=4, success=False, context_code=trace.ConsumeReturnType.EXCEPTION,
        beans=beans,
    )  # fmt: skip
    text = encode_trace([before, after])
    assert text == (
        f"SubBefore{C}{T}{C}DefaultRegion{C}G{C}REQ{C}M1{C}0{C}a b{F}"
        f"SubBefore{C}{T}{C}DefaultRegion{C}G{C}REQ{C}M2{C}2{C}{F}"
        f"SubAfter{C}REQ{C}M1{C}4{C}false{C}a b{C}2{C}{T + 9}{C}G{F}"
        f"SubAfter{C}REQ{C}M2{C}4{C}false{C}{C}2{C}{T + 9}{C}G{F}"
    )
    decoded = decode_trace(text)
    # one context per message; SubAfter lines carry no region id and no retry times
    expected = [
        *before.split(),
        *(replace(c, region_id="", beans=(replace(c.beans[0], retry_times=0),)) for c in after.split()),
    ]
    assert decoded == expected


def test_end_transaction_round_trips() -> None:
    ctx = TraceContext(
        trace_type=TraceType.END_TRANSACTION,
        timestamp=T,
        region_id="DefaultRegion",
        group_name="PID-test",
        beans=(
            TraceBean(
                topic="topic-test", msg_id="AC14", tags="Tags", keys="Keys", store_host="127.0.0.1:10911",
                msg_type=TraceMessageType.TRANS_COMMIT, transaction_id="tx-1",
                transaction_state=LocalTransactionState.COMMIT_MESSAGE, from_transaction_check=True,
            ),
        ),
    )  # fmt: skip
    text = encode_trace([ctx])
    assert text == C.join(
        ["EndTransaction", str(T), "DefaultRegion", "PID-test", "topic-test", "AC14", "Tags", "Keys",
         "127.0.0.1:10911", "2", "tx-1", "COMMIT_MESSAGE", "true"]
    ) + F  # fmt: skip
    assert decode_trace(text) == [ctx]


def test_old_sub_after_without_timestamp_and_group() -> None:
    (ctx,) = decode_trace(f"SubAfter{C}R{C}M{C}3{C}true{C}k{F}")
    assert (ctx.request_id, ctx.cost_time, ctx.success, ctx.context_code, ctx.timestamp) == (
        "R",
        3,
        True,
        0,
        0,
    )


def test_java_nulls_stay_text_and_unknown_lines_are_skipped() -> None:
    text = f"Nope{C}1{F}SubBefore{C}{T}{C}null{C}G{C}R{C}M{C}0{C}null{F}{F}"
    (ctx,) = decode_trace(text)
    assert ctx.region_id == "null"
    assert ctx.beans[0].keys == "null"


def test_empty_keys_at_the_end_decode_as_empty() -> None:
    # Java's split drops the trailing empty field; we read it as ""
    (ctx,) = decode_trace(f"SubBefore{C}{T}{C}R{C}G{C}Q{C}M{C}1{F}")
    assert ctx.beans[0] == TraceBean(msg_id="M", retry_times=1)


@pytest.mark.parametrize(
    "bad",
    [
        f"Pub{C}notatime{C}R{C}G{F}",
        f"SubBefore{C}{T}{C}R{C}G{C}Q{C}M{C}x{C}{F}",
        JAVA_PUB.replace(f"{C}245{C}0{C}", f"{C}245{C}9{C}"),
        f"EndTransaction{C}{T}{C}R{C}G{C}T{C}M{C}t{C}k{C}h{C}0{C}tx{C}MAYBE{C}false{F}",
    ],
)
def test_malformed_numbers_and_enums_raise(bad: str) -> None:
    with pytest.raises(RemoteProtocolError, match="trace line 0"):
        decode_trace(bad)


def test_non_utf8_body_raises() -> None:
    with pytest.raises(RemoteProtocolError, match="UTF-8"):
        decode_trace(b"\xff\xfe")


def test_keys_are_msg_ids_and_keys_in_java_hashset_order() -> None:
    contexts = [
        PUB,
        TraceContext(trace_type=TraceType.SUB_BEFORE, beans=(TraceBean(msg_id="M2", keys="x  y"),)),
    ]
    keys = trace_keys(contexts)
    assert sorted(keys) == sorted(["AC1415116D1418B4AAC217FE1B4E0000", "Keys", "M2", "x", "y"])
    assert keys == java_hash_order(["AC1415116D1418B4AAC217FE1B4E0000", "Keys", "M2", "x", "y"])


def test_pack_traces_fills_messages_up_to_the_size_then_starts_another() -> None:
    line = len(JAVA_PUB)
    contexts = [PUB] * 5
    messages = pack_traces(contexts, max_chars=2 * line)
    assert [len(m.body) for m in messages] == [2 * line, 2 * line, line]
    assert all(decode_trace(m.body) == [PUB] * (len(m.body) // line) for m in messages)
    assert messages[0].keys_property == " ".join(messages[0].keys)
    (one,) = pack_traces(contexts)
    assert decode_trace(one.body) == contexts


_text = st.text(
    alphabet=st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), max_size=12
)


@given(
    kind=st.sampled_from(list(TraceType)),
    ts=st.integers(0, 2**62),
    group=_text,
    region=_text,
    req=_text,
    msg_id=_text,
    keys=_text,
    tags=_text,
    cost=st.integers(-(2**31), 2**31 - 1),
    ok=st.booleans(),
    retry=st.integers(0, 16),
)
def test_round_trip_property(
    kind: TraceType, ts: int, group: str, region: str, req: str, msg_id: str, keys: str, tags: str,
    cost: int, ok: bool, retry: int,
) -> None:  # fmt: skip
    bean = TraceBean(msg_id=msg_id, keys=keys, retry_times=retry if kind is TraceType.SUB_BEFORE else 0)
    if kind in (TraceType.PUB, TraceType.END_TRANSACTION):
        bean = replace(bean, topic="T", tags=tags, store_host="h:1", retry_times=0)
    ctx = TraceContext(
        trace_type=kind,
        timestamp=ts,
        group_name=group,
        region_id="" if kind is TraceType.SUB_AFTER else region,
        request_id=req if kind in (TraceType.SUB_BEFORE, TraceType.SUB_AFTER) else "",
        cost_time=cost if kind in (TraceType.PUB, TraceType.SUB_AFTER) else 0,
        success=ok if kind in (TraceType.PUB, TraceType.SUB_AFTER) else True,
        beans=(bean,),
    )
    assert decode_trace(encode_trace([ctx])) == [ctx]
