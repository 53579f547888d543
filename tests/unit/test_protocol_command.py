"""RemotingCommand helpers, opaque numbering, and the code tables."""

from __future__ import annotations

import pytest

from rocketq.errors import BrokerError, ConfigError
from rocketq.protocol import (
    CURRENT_VERSION,
    DEFAULT_LANGUAGE,
    LanguageCode,
    MQVersion,
    OpaqueSequence,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    SerializeType,
    code_name,
    decode_frame,
    encode_frame,
    version_name,
)
from tests.wirecaps import all_frames, frame_bytes


def test_request_defaults_identify_rocketq() -> None:
    cmd = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"})
    assert cmd.code == 105
    assert cmd.language == LanguageCode.PYTHON == DEFAULT_LANGUAGE
    assert cmd.version == CURRENT_VERSION == MQVersion.V4_9_4
    assert int(CURRENT_VERSION) == 401
    assert cmd.flag == 0
    assert cmd.opaque == 0
    assert cmd.body == b""
    assert cmd.remark is None
    assert cmd.serialize_type == SerializeType.JSON
    assert not cmd.is_response
    assert not cmd.is_oneway


def test_oneway_request_and_response_flags() -> None:
    oneway = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, {}, oneway=True, opaque=71)
    assert oneway.flag == 2
    assert oneway.is_oneway
    assert not oneway.is_response
    request = RemotingCommand.request(
        RequestCode.PULL_MESSAGE, {"topic": "T"}, opaque=9, serialize_type=SerializeType.ROCKETMQ
    )
    response = request.response(ResponseCode.PULL_NOT_FOUND, "no new message", {"minOffset": "0"}, b"x")
    assert response.flag == 1
    assert response.is_response
    assert not response.is_oneway
    assert response.opaque == 9
    assert response.code == 19
    assert response.remark == "no new message"
    assert response.ext_fields == {"minOffset": "0"}
    assert response.body == b"x"
    assert response.serialize_type == SerializeType.ROCKETMQ
    assert request.response().code == ResponseCode.SUCCESS


def test_mark_helpers_set_bits() -> None:
    cmd = RemotingCommand(code=1)
    cmd.mark_oneway()
    cmd.mark_response()
    assert cmd.flag == 3


def test_commands_are_mutable_and_slotted() -> None:
    cmd = RemotingCommand(code=1)
    cmd.ext_fields["k"] = "v"
    cmd.body = b"b"
    assert not hasattr(cmd, "__dict__")
    with pytest.raises(AttributeError):
        cmd.unknown = 1  # type: ignore[attr-defined]


def test_equality_ignores_the_empty_ext_fields_hint() -> None:
    assert RemotingCommand(code=1, write_empty_ext_fields=True) == RemotingCommand(code=1)


def test_opaque_sequence_counts_and_wraps_like_a_java_int() -> None:
    seq = OpaqueSequence()
    assert [next(seq) for _ in range(3)] == [0, 1, 2]
    edge = OpaqueSequence(2**31 - 2)
    assert [next(edge) for _ in range(3)] == [2**31 - 2, 2**31 - 1, -(2**31)]
    assert iter(seq) is seq
    with pytest.raises(ConfigError):
        OpaqueSequence(2**31)


def test_opaques_from_a_sequence_survive_both_serializations() -> None:
    seq = OpaqueSequence(2**31 - 1)
    for serialize_type in SerializeType:
        cmd = RemotingCommand.request(1, opaque=next(seq), serialize_type=serialize_type)
        assert decode_frame(encode_frame(cmd)).opaque == cmd.opaque


def test_code_numbers_are_rocketmq_494s() -> None:
    expected_requests = {
        "SEND_MESSAGE": 10,
        "PULL_MESSAGE": 11,
        "QUERY_MESSAGE": 12,
        "QUERY_CONSUMER_OFFSET": 14,
        "UPDATE_CONSUMER_OFFSET": 15,
        "UPDATE_AND_CREATE_TOPIC": 17,
        "GET_ALL_TOPIC_CONFIG": 21,
        "GET_BROKER_RUNTIME_INFO": 28,
        "SEARCH_OFFSET_BY_TIMESTAMP": 29,
        "GET_MAX_OFFSET": 30,
        "GET_MIN_OFFSET": 31,
        "GET_EARLIEST_MSG_STORETIME": 32,
        "VIEW_MESSAGE_BY_ID": 33,
        "HEART_BEAT": 34,
        "UNREGISTER_CLIENT": 35,
        "CONSUMER_SEND_MSG_BACK": 36,
        "END_TRANSACTION": 37,
        "GET_CONSUMER_LIST_BY_GROUP": 38,
        "CHECK_TRANSACTION_STATE": 39,
        "NOTIFY_CONSUMER_IDS_CHANGED": 40,
        "LOCK_BATCH_MQ": 41,
        "UNLOCK_BATCH_MQ": 42,
        "GET_ALL_CONSUMER_OFFSET": 43,
        "GET_ALL_DELAY_OFFSET": 45,
        "CHECK_CLIENT_CONFIG": 46,
        "REGISTER_BROKER": 103,
        "UNREGISTER_BROKER": 104,
        "GET_ROUTEINFO_BY_TOPIC": 105,
        "GET_BROKER_CLUSTER_INFO": 106,
        "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP": 200,
        "GET_TOPIC_STATS_INFO": 202,
        "GET_CONSUMER_CONNECTION_LIST": 203,
        "GET_PRODUCER_CONNECTION_LIST": 204,
        "GET_ALL_TOPIC_LIST_FROM_NAMESERVER": 206,
        "DELETE_SUBSCRIPTIONGROUP": 207,
        "GET_CONSUME_STATS": 208,
        "DELETE_TOPIC_IN_BROKER": 215,
        "DELETE_TOPIC_IN_NAMESRV": 216,
        "RESET_CONSUMER_CLIENT_OFFSET": 220,
        "INVOKE_BROKER_TO_RESET_OFFSET": 222,
        "QUERY_TOPIC_CONSUME_BY_WHO": 300,
        "GET_CONSUMER_RUNNING_INFO": 307,
        "SEND_MESSAGE_V2": 310,
        "SEND_BATCH_MESSAGE": 320,
        "QUERY_DATA_VERSION": 322,
        "SEND_REPLY_MESSAGE_V2": 325,
        "PUSH_REPLY_MESSAGE_TO_CLIENT": 326,
    }
    for name, number in expected_requests.items():
        assert RequestCode[name] == number, name
    assert len(RequestCode) == 96  # every code of RocketMQ 4.9.4's RequestCode
    expected_responses = {
        "SUCCESS": 0,
        "SYSTEM_ERROR": 1,
        "SYSTEM_BUSY": 2,
        "REQUEST_CODE_NOT_SUPPORTED": 3,
        "TRANSACTION_FAILED": 4,
        "FLUSH_DISK_TIMEOUT": 10,
        "TOPIC_NOT_EXIST": 17,
        "PULL_NOT_FOUND": 19,
        "PULL_RETRY_IMMEDIATELY": 20,
        "PULL_OFFSET_MOVED": 21,
        "QUERY_NOT_FOUND": 22,
        "SUBSCRIPTION_NOT_LATEST": 25,
        "CONSUMER_NOT_ONLINE": 206,
        "NO_MESSAGE": 208,
    }
    for name, number in expected_responses.items():
        assert ResponseCode[name] == number, name
    assert [lang.value for lang in LanguageCode] == list(range(14))
    assert (SerializeType.JSON, SerializeType.ROCKETMQ) == (0, 1)


def test_broker_error_classes_cover_the_response_codes_they_name() -> None:
    for code in ResponseCode:
        if code != ResponseCode.SUCCESS:
            err = BrokerError.for_code(code)
            assert err.code == code


def test_code_and_version_names_for_logs() -> None:
    assert code_name(11, response=False) == "PULL_MESSAGE(11)"
    assert code_name(11, response=True) == "SLAVE_NOT_AVAILABLE(11)"
    assert code_name(9999, response=False) == "UNKNOWN(9999)"
    assert version_name(401) == "V4_9_4"
    assert version_name(399) == "V4_9_3"
    assert version_name(0) == "V3_0_0_SNAPSHOT"
    assert version_name(121) == "V3_4_9"
    assert version_name(413) == "V5_0_0"
    assert version_name(612) == "HIGHER_VERSION"
    assert version_name(10_000) == "HIGHER_VERSION"
    assert version_name(-1) == "UNKNOWN(-1)"
    for member in MQVersion:
        assert version_name(member) == member.name


def test_every_captured_code_has_a_name() -> None:
    for _name, line in all_frames():
        cmd = decode_frame(frame_bytes(line))
        if cmd.code != 9999:  # the capture's deliberately unknown request
            assert not code_name(cmd.code, response=cmd.is_response).startswith("UNKNOWN")


def test_repr_names_the_code_and_keeps_large_bodies_short() -> None:
    big = RemotingCommand.request(RequestCode.PULL_MESSAGE, {"topic": "T"}, body=bytes(5000), opaque=3)
    text = repr(big)
    assert text.startswith("RemotingCommand(request PULL_MESSAGE(11), language=PYTHON, version=401, opaque=3")
    assert "<5000 bytes: " in text
    assert len(text) < 400
    small = big.response(ResponseCode.PULL_NOT_FOUND, body=b"x")
    assert "response PULL_NOT_FOUND(19)" in repr(small)
    assert "body=b'x'" in repr(small)
