"""Typed headers: every captured request and response parses, converts back, and in Java's order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.errors import ConfigError, RemoteProtocolError
from rocketq.protocol import (
    REQUEST_HEADERS,
    RESPONSE_HEADERS,
    CommandHeader,
    CreateTopicRequestHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    QueryConsumerOffsetRequestHeader,
    RegisterBrokerRequestHeader,
    RemotingCommand,
    ReplyMessageRequestHeader,
    RequestCode,
    ResetOffsetRequestHeader,
    ResponseCode,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
    SerializeType,
    UnregisterClientRequestHeader,
    decode_frame,
    encode_frame,
    java_hashmap_order,
    java_ordered,
)
from rocketq.protocol.headers import Long, header_class, wire_name
from tests.wirecaps import frame_bytes, frame_files, load

# Frames whose ext fields were written by the capture's own hand-made (non-Java) client.
_HAND_MADE = "errors.jsonl"


def _pairs() -> list[tuple[str, RemotingCommand, RemotingCommand | None]]:
    """``(file, request, response)`` for every captured request (response ``None`` if oneway)."""
    out = []
    for name in frame_files():
        lines = load(name)
        by_seq = {line["seq"]: line for line in lines}
        answers = {line["reply_to"]: line for line in lines if line["reply_to"] is not None}
        for line in lines:
            if line["reply_to"] is not None or decode_frame(frame_bytes(line)).is_response:
                continue
            reply = answers.get(line["seq"])
            out.append(
                (
                    name,
                    decode_frame(frame_bytes(by_seq[line["seq"]])),
                    None if reply is None else decode_frame(frame_bytes(reply)),
                )
            )
    return out


PAIRS = _pairs()


def test_every_captured_request_with_a_header_class_parses_and_writes_back_the_same_fields() -> None:
    parsed_codes = set()
    for name, request, _ in PAIRS:
        cls = REQUEST_HEADERS.get(request.code)
        if cls is None:
            continue
        if name == _HAND_MADE and request.code == RequestCode.QUERY_CONSUMER_OFFSET:
            continue  # the deliberately incomplete requests: see the missing-field test below
        header = cls.from_ext_fields(request.ext_fields)
        written = header.to_ext_fields(request.serialize_type)
        # keys a Java client adds beside its header (e.g. ReqT from an RPC hook) are not the header's
        extras = {k: v for k, v in request.ext_fields.items() if k not in written}
        assert set(extras) <= {"ReqT", "_UNIQUE_KEY_QUERY"}, (name, request.code, extras)
        known = {k: v for k, v in request.ext_fields.items() if k in written}
        assert written == known, (name, request.code)
        if name != _HAND_MADE:
            # the order a Java peer wrote them in, extras included
            rebuilt = header.to_ext_fields(request.serialize_type, extra=extras)
            assert list(rebuilt) == list(request.ext_fields), (name, request.code)
        parsed_codes.add(request.code)
    expected = {
        RequestCode.SEND_MESSAGE,
        RequestCode.SEND_MESSAGE_V2,
        RequestCode.SEND_BATCH_MESSAGE,
        RequestCode.PULL_MESSAGE,
        RequestCode.QUERY_MESSAGE,
        RequestCode.QUERY_CONSUMER_OFFSET,
        RequestCode.UPDATE_CONSUMER_OFFSET,
        RequestCode.UPDATE_AND_CREATE_TOPIC,
        RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
        RequestCode.GET_MAX_OFFSET,
        RequestCode.GET_MIN_OFFSET,
        RequestCode.GET_EARLIEST_MSG_STORETIME,
        RequestCode.VIEW_MESSAGE_BY_ID,
        RequestCode.UNREGISTER_CLIENT,
        RequestCode.CONSUMER_SEND_MSG_BACK,
        RequestCode.END_TRANSACTION,
        RequestCode.GET_CONSUMER_LIST_BY_GROUP,
        RequestCode.CHECK_TRANSACTION_STATE,
        RequestCode.NOTIFY_CONSUMER_IDS_CHANGED,
        RequestCode.REGISTER_BROKER,
        RequestCode.UNREGISTER_BROKER,
        RequestCode.GET_ROUTEINFO_BY_TOPIC,
        RequestCode.GET_TOPIC_STATS_INFO,
        RequestCode.GET_CONSUMER_CONNECTION_LIST,
        RequestCode.GET_PRODUCER_CONNECTION_LIST,
        RequestCode.GET_CONSUME_STATS,
        RequestCode.DELETE_TOPIC_IN_BROKER,
        RequestCode.DELETE_TOPIC_IN_NAMESRV,
        RequestCode.RESET_CONSUMER_CLIENT_OFFSET,
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
        RequestCode.QUERY_TOPIC_CONSUME_BY_WHO,
        RequestCode.GET_CONSUMER_RUNNING_INFO,
        RequestCode.QUERY_DATA_VERSION,
        RequestCode.SEND_REPLY_MESSAGE_V2,
        RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT,
    }
    assert expected <= parsed_codes


def test_every_captured_response_with_a_header_class_parses_and_writes_back_in_java_order() -> None:
    seen = set()
    for name, request, response in PAIRS:
        cls = RESPONSE_HEADERS.get(request.code)
        if cls is None or response is None or not response.ext_fields:
            continue
        header = cls.from_ext_fields(response.ext_fields)
        written = header.to_ext_fields(response.serialize_type)
        extras = {k: v for k, v in response.ext_fields.items() if k not in written}
        assert set(extras) <= {"TRACE_ON", "MSG_REGION"}, (name, request.code, extras)
        rebuilt = header.to_ext_fields(response.serialize_type, extra=extras)
        assert rebuilt == response.ext_fields
        assert list(rebuilt) == list(response.ext_fields), (name, request.code)
        seen.add(request.code)
    assert {10, 11, 12, 14, 29, 30, 31, 32, 310, 320, 322, 325} <= seen


def test_a_send_response_built_by_rocketq_is_the_bytes_a_java_broker_sent() -> None:
    lines = {item["seq"]: item for item in load("produce.jsonl")}
    for line in load("produce.jsonl"):
        if line["reply_to"] is None:
            continue
        request = decode_frame(frame_bytes(lines[line["reply_to"]]))
        if request.code != RequestCode.SEND_MESSAGE_V2:
            continue
        captured = decode_frame(frame_bytes(line))
        header = SendMessageResponseHeader.from_ext_fields(captured.ext_fields)
        ours = request.response(
            ResponseCode.SUCCESS,
            ext_fields=header.to_ext_fields(extra={"MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}),
        )
        ours.language = captured.language  # the Java broker says JAVA, rocketq says PYTHON
        assert encode_frame(ours) == frame_bytes(line)
        return
    pytest.fail("no SEND_MESSAGE_V2 response in produce.jsonl")


def test_send_v2_conversion_both_ways_and_single_letter_keys() -> None:
    v1 = SendMessageRequestHeader(
        producer_group="pg",
        topic="T",
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=1,
        sys_flag=0,
        born_timestamp=1795248381876,
        flag=0,
        properties="WAIT\x01true",
        reconsume_times=0,
        unit_mode=False,
        batch=True,
        max_reconsume_times=None,
    )
    v2 = v1.to_v2()
    assert v2.to_v1() == v1
    assert v2.to_ext_fields() == {
        "a": "pg",
        "b": "T",
        "c": "TBW102",
        "d": "4",
        "e": "1",
        "f": "0",
        "g": "1795248381876",
        "h": "0",
        "i": "WAIT\x01true",
        "j": "0",
        "k": "false",
        "m": "true",
    }
    assert SendMessageRequestHeaderV2.wire_names() == tuple("abcdefghijklm")
    v1_fields = v1.to_ext_fields()
    assert v1_fields["producerGroup"] == "pg"
    assert v1_fields["batch"] == "true"
    assert "maxReconsumeTimes" not in v1_fields


def test_a_missing_required_field_names_the_header_and_the_key() -> None:
    with pytest.raises(RemoteProtocolError, match=r"QueryConsumerOffsetRequestHeader.*'consumerGroup'"):
        QueryConsumerOffsetRequestHeader.from_ext_fields({"topic": "T", "queueId": "0"})
    # the capture holds exactly such a request, which the Java broker answered with SYSTEM_ERROR
    bad = [r for name, r, _ in PAIRS if name == _HAND_MADE and r.code == RequestCode.QUERY_CONSUMER_OFFSET]
    assert bad
    for request in bad:
        with pytest.raises(RemoteProtocolError, match="QueryConsumerOffsetRequestHeader"):
            QueryConsumerOffsetRequestHeader.from_ext_fields(request.ext_fields)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("x1", "not a Java Integer"),
        ("1.5", "not a Java Integer"),
        (" 1", "not a Java Integer"),
        ("1_000", "not a Java Integer"),
        ("2147483648", "not a Java Integer"),
        ("", "not a Java Integer"),
        ("٣", "not a Java Integer"),  # a non-ASCII digit: Java's parseInt takes it, we need not
    ],
)
def test_an_ill_typed_int_names_the_header_and_the_key(value: str, message: str) -> None:
    fields = {"consumerGroup": "g", "topic": "T", "queueId": value}
    with pytest.raises(
        RemoteProtocolError, match=rf"QueryConsumerOffsetRequestHeader: field 'queueId' .*{message}"
    ):
        QueryConsumerOffsetRequestHeader.from_ext_fields(fields)


def test_integers_parse_as_java_parses_them() -> None:
    base = {"consumerGroup": "g", "topic": "T"}
    assert QueryConsumerOffsetRequestHeader.from_ext_fields(base | {"queueId": "+7"}).queue_id == 7
    assert QueryConsumerOffsetRequestHeader.from_ext_fields(base | {"queueId": "-2147483648"}).queue_id == -(
        2**31
    )
    reset = {"topic": "T", "group": "g", "isForce": "true"}
    assert (
        ResetOffsetRequestHeader.from_ext_fields(reset | {"timestamp": "9223372036854775807"}).timestamp
        == 2**63 - 1
    )
    with pytest.raises(RemoteProtocolError, match="not a Java Long"):
        ResetOffsetRequestHeader.from_ext_fields(reset | {"timestamp": "9223372036854775808"})


def test_small_and_large_numbers_parse_alike() -> None:
    """Small numbers come from a table on the fast path; the table changes no result."""
    base = {"consumerGroup": "g", "topic": "T"}
    for text, value in [
        ("0", 0),
        ("1023", 1023),
        ("1024", 1024),
        ("007", 7),
        ("-1", -1),
        ("999999999", 999999999),
    ]:
        assert QueryConsumerOffsetRequestHeader.from_ext_fields(base | {"queueId": text}).queue_id == value


def test_a_parsed_header_is_a_true_frozen_instance_of_its_class() -> None:
    """The reader builds headers without the frozen ``__init__``; what it returns is the same."""
    header = SendMessageRequestHeaderV2(
        producer_group="pg",
        topic="T",
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=3,
        sys_flag=0,
        born_timestamp=1_700_000_000_000,
        flag=0,
        properties="TAGS\x01a",
    )
    parsed = SendMessageRequestHeaderV2.from_ext_fields(header.to_ext_fields())
    assert type(parsed) is SendMessageRequestHeaderV2
    assert parsed == header
    assert hash(parsed) == hash(header)
    assert repr(parsed) == repr(header)
    with pytest.raises(AttributeError):
        parsed.queue_id = 5  # type: ignore[misc]
    # of several missing keys, the first in declaration order is named
    ext = header.to_ext_fields()
    del ext["g"], ext["e"]
    with pytest.raises(
        RemoteProtocolError, match="SendMessageRequestHeaderV2: required field 'e' is missing"
    ):
        SendMessageRequestHeaderV2.from_ext_fields(ext)


def test_booleans_parse_as_java_parse_boolean() -> None:
    base = {"topic": "T", "group": "g", "timestamp": "0"}
    assert ResetOffsetRequestHeader.from_ext_fields(base | {"isForce": "true"}).is_force is True
    assert ResetOffsetRequestHeader.from_ext_fields(base | {"isForce": "TRUE"}).is_force is True
    assert ResetOffsetRequestHeader.from_ext_fields(base | {"isForce": "yes"}).is_force is False
    assert ResetOffsetRequestHeader.from_ext_fields(base | {"isForce": "false"}).is_force is False


def test_optional_fields_default_and_are_not_written_when_none() -> None:
    header = UnregisterClientRequestHeader.from_ext_fields({"clientID": "c1", "producerGroup": "pg"})
    assert header == UnregisterClientRequestHeader(client_id="c1", producer_group="pg")
    assert header.consumer_group is None
    assert header.to_ext_fields() == {"producerGroup": "pg", "clientID": "c1"}
    register = RegisterBrokerRequestHeader.from_ext_fields(
        {"brokerName": "b", "brokerAddr": "a:1", "clusterName": "c", "haServerAddr": "a:2", "brokerId": "0"}
    )
    assert register.compressed is False
    assert register.body_crc32 == 0


def test_to_ext_fields_rejects_values_java_could_not_read() -> None:
    with pytest.raises(ConfigError, match="queue_id"):
        QueryConsumerOffsetRequestHeader(consumer_group="g", topic="T", queue_id=2**31).to_ext_fields()
    with pytest.raises(ConfigError, match="topic"):
        QueryConsumerOffsetRequestHeader(consumer_group="g", topic=5, queue_id=0).to_ext_fields()  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="order"):
        CreateTopicRequestHeader(
            topic="T",
            default_topic="TBW102",
            read_queue_nums=1,
            write_queue_nums=1,
            perm=6,
            topic_filter_type="SINGLE_TAG",
            order="false",  # type: ignore[arg-type]
        ).to_ext_fields()


def test_fast_codes_headers_keep_declaration_order_in_rocketmq_serialization() -> None:
    header = PullMessageResponseHeader(
        suggest_which_broker_id=0, next_begin_offset=8, min_offset=0, max_offset=8
    )
    assert list(header.to_ext_fields(SerializeType.ROCKETMQ)) == [
        "suggestWhichBrokerId",
        "nextBeginOffset",
        "minOffset",
        "maxOffset",
    ]
    # and Java HashMap order in JSON, as the captures show
    assert list(header.to_ext_fields(SerializeType.JSON)) == [
        "suggestWhichBrokerId",
        "nextBeginOffset",
        "maxOffset",
        "minOffset",
    ]


def test_java_hashmap_order_matches_the_order_java_peers_wrote_in_every_json_capture() -> None:
    checked = 0
    for name in frame_files():
        if name == _HAND_MADE:
            continue
        for line in load(name):
            ext = line["header"].get("extFields") or {}
            if line["serialize_type"] == 0 and len(ext) > 1:
                assert java_hashmap_order(list(ext)) == list(ext), (name, line["seq"])
                assert list(java_ordered(ext)) == list(ext)
                checked += 1
    assert checked > 400


def test_java_hashmap_order_keeps_insertion_order_within_a_bucket() -> None:
    # "Aa" and "BB" share String.hashCode 2112, so they share a bucket whatever the table size
    assert java_hashmap_order(["BB", "Aa"]) == ["BB", "Aa"]
    assert java_hashmap_order(["Aa", "BB"]) == ["Aa", "BB"]
    assert java_hashmap_order(["hello"]) == ["hello"]


def test_java_hashmap_order_grows_its_table_like_java() -> None:
    # PUSH_REPLY_MESSAGE_TO_CLIENT carries 14 fields: more than 3/4 of 16 buckets, so Java's
    # table has grown to 32 and the keys spread differently
    line = next(
        line
        for line in load("request-reply.jsonl")
        if line["header"]["code"] == RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT
    )
    keys = list(line["header"]["extFields"])
    assert len(keys) == 14
    # inserted in the Java class's declaration order, as makeCustomHeaderToNet does
    declared = [k for k in ReplyMessageRequestHeader.wire_names() if k in keys]
    assert java_hashmap_order(declared) == keys
    # with 12 of them the table would have stayed at 16 buckets, in another order
    twelve = keys[2:]
    assert java_hashmap_order(twelve)[0] == "producerGroup"
    assert java_hashmap_order(twelve) != twelve


def _value_strategy(kind: str) -> st.SearchStrategy[Any]:
    if kind == "int":
        return st.integers(-(2**31), 2**31 - 1)
    if kind == "long":
        return st.integers(-(2**63), 2**63 - 1)
    if kind == "bool":
        return st.booleans()
    return st.text(min_size=1, max_size=20)


_ALL_HEADERS = sorted({*REQUEST_HEADERS.values(), *RESPONSE_HEADERS.values()}, key=lambda c: c.__name__)


@pytest.mark.parametrize("cls", _ALL_HEADERS, ids=lambda c: c.__name__)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_every_header_round_trips_through_ext_fields(cls: type[CommandHeader], data: st.DataObject) -> None:
    values = {}
    for f in cls._FIELDS:
        strategy = _value_strategy(f.kind)
        if not f.required:
            strategy = st.none() | strategy if f.kind != "bool" else strategy
        value = data.draw(strategy, label=f.attr)
        if value is not None:
            values[f.attr] = value
    header = cls(**values)
    for serialize_type in SerializeType:
        ext = header.to_ext_fields(serialize_type)
        assert all(type(v) is str for v in ext.values())
        assert cls.from_ext_fields(ext) == header
        # and through a whole frame
        cmd = RemotingCommand.request(RequestCode.PULL_MESSAGE, ext, serialize_type=serialize_type)
        assert cls.from_ext_fields(decode_frame(encode_frame(cmd)).ext_fields) == header


def test_every_java_header_class_of_the_broker_and_clients_is_mapped() -> None:
    assert REQUEST_HEADERS[RequestCode.SEND_MESSAGE_V2] is SendMessageRequestHeaderV2
    assert REQUEST_HEADERS[RequestCode.SEND_BATCH_MESSAGE] is SendMessageRequestHeaderV2
    assert REQUEST_HEADERS[RequestCode.PULL_MESSAGE] is PullMessageRequestHeader
    assert RESPONSE_HEADERS[RequestCode.PULL_MESSAGE] is PullMessageResponseHeader
    for code in REQUEST_HEADERS:
        assert code in set(RequestCode)


def test_a_header_defined_outside_the_module_works_the_same() -> None:
    @header_class
    @dataclass(frozen=True, slots=True, kw_only=True)
    class ProbeRequestHeader(CommandHeader):
        topic: str
        offset: Long
        client_id: str | None = field(default=None, metadata=wire_name("clientID"))
        strict: bool = False

    header = ProbeRequestHeader.from_ext_fields({"topic": "T", "offset": "9007199254740993", "clientID": "c"})
    assert header == ProbeRequestHeader(topic="T", offset=9007199254740993, client_id="c")
    assert ProbeRequestHeader.wire_names() == ("topic", "offset", "clientID", "strict")
    written = header.to_ext_fields()
    assert written == {"topic": "T", "clientID": "c", "offset": "9007199254740993", "strict": "false"}
    assert list(written) == java_hashmap_order(["topic", "offset", "clientID", "strict"])
    with pytest.raises(RemoteProtocolError, match="ProbeRequestHeader: required field 'offset' is missing"):
        ProbeRequestHeader.from_ext_fields({"topic": "T"})


@settings(max_examples=200, deadline=None)
@given(
    properties=st.none() | st.text(max_size=20),
    reconsume_times=st.none() | st.integers(0, 2**31 - 1),
    max_reconsume_times=st.none() | st.integers(-1, 2**31 - 1),
    unit_mode=st.booleans(),
    batch=st.booleans(),
)
def test_sized_writer_of_a_header_with_optional_fields_matches_java_hashmap_order(
    properties: str | None,
    reconsume_times: int | None,
    max_reconsume_times: int | None,
    unit_mode: bool,
    batch: bool,
) -> None:
    # SendMessageRequestHeaderV2 fills a 16- or a 32-bucket HashMap depending on what is set: the
    # compiled writer must give the order of a Java HashMap filled with exactly the set fields
    header = SendMessageRequestHeaderV2(
        producer_group="g",
        topic="T",
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=1,
        sys_flag=0,
        born_timestamp=1_700_000_000_000,
        flag=0,
        properties=properties,
        reconsume_times=reconsume_times,
        max_reconsume_times=max_reconsume_times,
        unit_mode=unit_mode,
        batch=batch,
    )
    ext = header.to_ext_fields()
    assert list(ext) == java_hashmap_order(list(ext))
    assert SendMessageRequestHeaderV2.from_ext_fields(ext) == header
    expected = {"a", "b", "c", "d", "e", "f", "g", "h", "k", "m"}
    expected |= {
        k for k, v in (("i", properties), ("j", reconsume_times), ("l", max_reconsume_times)) if v is not None
    }
    assert set(ext) == expected


def test_sized_writer_rejects_what_java_could_not_read() -> None:
    header = SendMessageRequestHeaderV2(
        producer_group="g",
        topic="T",
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=2**31,
        sys_flag=0,
        born_timestamp=0,
        flag=0,
    )
    with pytest.raises(ConfigError, match="queue_id"):
        header.to_ext_fields()


def test_wire_name_of_names_the_ext_field_key() -> None:
    assert SendMessageRequestHeaderV2.wire_name_of("born_timestamp") == "g"
    assert SendMessageRequestHeaderV2.wire_name_of("properties") == "i"
    assert SendMessageRequestHeader.wire_name_of("born_timestamp") == "bornTimestamp"
    with pytest.raises(KeyError, match="no field 'nope'"):
        SendMessageRequestHeaderV2.wire_name_of("nope")
