"""The call layer: every call's request is the one a RocketMQ 4.9.4 Java client sends, and its
parser reads answers (and refusals) as the drivers hand them over."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from rocketq.errors import BrokerError, ConsumerNotOnlineError, RemoteProtocolError, TopicNotExistError
from rocketq.models import DuplicateClientId, MessageQueue, PullResult, PullStatus
from rocketq.protocol import calls
from rocketq.protocol.bodies import CheckClientRequestBody, HeartbeatData, TopicRouteData
from rocketq.protocol.codes import (
    RequestCode,
    ResponseCode,
    RocketQRequestCode,
    RocketQResponseCode,
    SerializeType,
    code_name,
)
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.frame import decode_frame
from rocketq.protocol.headers import (
    EndTransactionRequestHeader,
    PullMessageRequestHeader,
    SendMessageRequestHeaderV2,
)
from tests.wirecaps import all_frames, frame_bytes, frame_files, load

MQ = MessageQueue("T", "broker-a", 3)


def _java_requests(code: int) -> list[RemotingCommand]:
    """The requests with ``code`` real Java clients sent (errors.jsonl's deliberately broken ones aside)."""
    out = []
    for name, line in all_frames():
        if name == "errors.jsonl":
            continue
        if line["from"] == "client" and line["header"]["code"] == code and not line["header"]["flag"] & 1:
            out.append(decode_frame(frame_bytes(line)))
    return out


def _mq(ext: dict[str, str]) -> MessageQueue:
    return MessageQueue(ext["topic"], "b", int(ext["queueId"]))


# For each request code: how to rebuild the Java request's call from its own ext fields.
REBUILD: dict[int, Callable[[dict[str, str]], calls.Call[Any]]] = {
    RequestCode.GET_ROUTEINFO_BY_TOPIC: lambda e: calls.get_route_info(
        e["topic"], standard_json_only=e.get("acceptStandardJsonOnly") == "true"
    ),
    RequestCode.QUERY_CONSUMER_OFFSET: lambda e: calls.query_consumer_offset(e["consumerGroup"], _mq(e)),
    RequestCode.UPDATE_CONSUMER_OFFSET: lambda e: calls.update_consumer_offset(
        e["consumerGroup"], _mq(e), int(e["commitOffset"])
    ),
    RequestCode.GET_MAX_OFFSET: lambda e: calls.get_max_offset(_mq(e)),
    RequestCode.GET_CONSUMER_LIST_BY_GROUP: lambda e: calls.get_consumer_list_by_group(e["consumerGroup"]),
    RequestCode.GET_TOPIC_STATS_INFO: lambda e: calls.get_topic_stats_info(e["topic"]),
    RequestCode.GET_CONSUMER_CONNECTION_LIST: lambda e: calls.get_consumer_connection_list(
        e["consumerGroup"]
    ),
    RequestCode.GET_CONSUME_STATS: lambda e: calls.get_consume_stats(e["consumerGroup"], e.get("topic")),
    RequestCode.DELETE_TOPIC_IN_BROKER: lambda e: calls.delete_topic_in_broker(e["topic"]),
    RequestCode.DELETE_TOPIC_IN_NAMESRV: lambda e: calls.delete_topic_in_namesrv(
        e["topic"], cluster=e.get("clusterName")
    ),
    RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: lambda e: calls.invoke_broker_to_reset_offset(
        e["topic"], e["group"], int(e["timestamp"]), force=e["isForce"] == "true"
    ),
    RequestCode.GET_CONSUMER_RUNNING_INFO: lambda e: calls.get_consumer_running_info(
        e["consumerGroup"], e["clientId"], jstack=e["jstackEnable"] == "true"
    ),
    RequestCode.UNREGISTER_CLIENT: lambda e: calls.unregister_client(
        e["clientID"], producer_group=e.get("producerGroup"), consumer_group=e.get("consumerGroup")
    ),
    RequestCode.UPDATE_AND_CREATE_TOPIC: lambda e: calls.create_topic(
        e["topic"],
        int(e["readQueueNums"]),
        int(e["writeQueueNums"]),
        perm=int(e["perm"]),
        order=e["order"] == "true",
    ),
    RequestCode.PULL_MESSAGE: lambda e: calls.pull_message(PullMessageRequestHeader.from_ext_fields(e)),
    RequestCode.QUERY_MESSAGE: lambda e: calls.query_message(
        e["topic"],
        e["key"],
        unique=e["_UNIQUE_KEY_QUERY"] == "true",
        max_num=int(e["maxNum"]),
        begin_ms=int(e["beginTimestamp"]),
        end_ms=int(e["endTimestamp"]),
    ),
    RequestCode.VIEW_MESSAGE_BY_ID: lambda e: calls.view_message_by_id(int(e["offset"])),
    RequestCode.GET_PRODUCER_CONNECTION_LIST: lambda e: calls.get_producer_connection_list(
        e["producerGroup"]
    ),
    RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: lambda e: calls.query_topic_consume_by_who(e["topic"]),
    RequestCode.END_TRANSACTION: lambda e: calls.end_transaction(
        EndTransactionRequestHeader.from_ext_fields(e)
    ),
    RequestCode.SEND_REPLY_MESSAGE_V2: lambda e: calls.send_message(
        SendMessageRequestHeaderV2.from_ext_fields(e), b"", reply=True
    ),
}


@pytest.mark.parametrize("code", sorted(REBUILD), ids=lambda c: RequestCode(c).name)
def test_each_call_sends_what_a_java_client_sends(code: int) -> None:
    java = _java_requests(code)
    assert java, f"no capture of {RequestCode(code).name}"
    for request in java:
        # ReqT: a field some mqadmin/pull-consumer calls of the capture add for their own use
        fields = {k: v for k, v in request.ext_fields.items() if k != "ReqT"}
        ours = REBUILD[code](fields).request
        assert ours.code == request.code
        assert ours.ext_fields == fields
        if request.serialize_type == SerializeType.JSON and "ReqT" not in request.ext_fields:
            # and in the order Java's HashMap writes them
            assert list(ours.ext_fields) == list(request.ext_fields)


def test_heartbeat_call_carries_the_body_and_returns_the_broker_version() -> None:
    java = _java_requests(RequestCode.HEART_BEAT)[0]
    call = calls.send_heartbeat(HeartbeatData.decode(java.body))
    assert call.request.code == RequestCode.HEART_BEAT
    assert json.loads(call.request.body) == json.loads(java.body)
    answer = call.request.response()
    answer.version = 401
    assert call.parse(answer) == 401


def test_refusals_raise_the_code_s_broker_error() -> None:
    call = calls.get_max_offset(MQ)
    with pytest.raises(TopicNotExistError, match="no such topic"):
        call.parse(call.request.response(ResponseCode.TOPIC_NOT_EXIST, "no such topic"))
    with pytest.raises(BrokerError) as info:
        call.parse(call.request.response(ResponseCode.SYSTEM_BUSY, "busy"))
    assert info.value.code == ResponseCode.SYSTEM_BUSY
    assert info.value.retriable


def test_answers_that_mean_none_are_values_not_errors() -> None:
    q = calls.query_consumer_offset("g", MQ)
    assert q.parse(q.request.response(ResponseCode.QUERY_NOT_FOUND, "not found")) is None
    assert q.parse(q.request.response(ext_fields={"offset": "7"})) == 7
    stats = calls.get_topic_stats_info("T")
    assert stats.parse(stats.request.response(ResponseCode.TOPIC_NOT_EXIST)) is None
    conns = calls.get_consumer_connection_list("g")
    assert conns.parse(conns.request.response(ResponseCode.CONSUMER_NOT_ONLINE)) is None
    kv = calls.get_kv_config("ns", "k")
    assert kv.parse(kv.request.response(ResponseCode.QUERY_NOT_FOUND)) is None
    assert kv.parse(kv.request.response(ext_fields={"value": "v"})) == "v"
    reset = calls.invoke_broker_to_reset_offset("T", "g", 0)
    with pytest.raises(ConsumerNotOnlineError):
        reset.parse(reset.request.response(ResponseCode.CONSUMER_NOT_ONLINE, "offline"))


def test_route_of_an_unknown_topic_raises_with_the_name_server_remark() -> None:
    call = calls.get_route_info("Nope")
    with pytest.raises(TopicNotExistError, match="No topic route info"):
        call.parse(call.request.response(ResponseCode.TOPIC_NOT_EXIST, "No topic route info for Nope"))
    with pytest.raises(RemoteProtocolError):
        call.parse(call.request.response())  # SUCCESS with no body is not a route
    body = b'{"brokerDatas":[],"queueDatas":[]}'
    assert isinstance(call.parse(call.request.response(body=body)), TopicRouteData)


def test_pull_answers_carry_their_status_and_body_only_when_found() -> None:
    header = PullMessageRequestHeader(
        consumer_group="g",
        topic="T",
        queue_id=3,
        queue_offset=5,
        max_msg_nums=32,
        sys_flag=0,
        commit_offset=0,
        suspend_timeout_millis=0,
        sub_version=0,
    )
    call = calls.pull_message(header)
    ext = {"suggestWhichBrokerId": "0", "nextBeginOffset": "9", "minOffset": "0", "maxOffset": "9"}
    found = call.parse(call.request.response(ext_fields=dict(ext), body=b"records"))
    assert found == PullResult(PullStatus.FOUND, 9, 0, 9, 0, b"records", "")
    moved = call.parse(call.request.response(ResponseCode.PULL_OFFSET_MOVED, "moved", dict(ext), b"x"))
    assert (moved.status, moved.body, moved.remark) == (PullStatus.OFFSET_ILLEGAL, b"", "moved")
    # every RocketMQ status has its code; VIEW_CHANGED is rocketq's own answer (the view fence)
    assert {calls.PULL_STATUS[c] for c in calls.PULL_STATUS} == set(PullStatus) - {PullStatus.VIEW_CHANGED}
    with pytest.raises(BrokerError):
        call.parse(call.request.response(ResponseCode.SUBSCRIPTION_NOT_EXIST, "no subscription"))


def test_a_view_fenced_pull_carries_the_view_and_reads_the_brokers_refusal() -> None:
    header = PullMessageRequestHeader(
        consumer_group="g", topic="T", queue_id=3, queue_offset=5, max_msg_nums=32,
        sys_flag=0, commit_offset=0, suspend_timeout_millis=0, sub_version=0,
    )  # fmt: skip
    view = calls.view_stamp(2**32 + 3, 4)
    assert view == "4294967299/4"
    assert calls.parse_view_stamp(view) == (2**32 + 3, 4)
    for bad in ("", "7", "a/4", "7/", "/4", "7/4/1"):
        with pytest.raises(RemoteProtocolError):
            calls.parse_view_stamp(bad)
    call = calls.pull_message(header, view=view)
    assert call.request.ext_fields[calls.VIEW_FIELD] == view
    assert calls.VIEW_FIELD not in calls.pull_message(header).request.ext_fields
    ext = {"nextBeginOffset": "5", calls.VIEW_FIELD: "x", calls.VIEW_QUEUES_FIELD: "6"}
    refused = call.parse(call.request.response(RocketQResponseCode.PULL_VIEW_CHANGED, "changed", ext))
    assert (refused.status, refused.next_begin_offset, refused.view_queue_nums, refused.body) == (
        PullStatus.VIEW_CHANGED, 5, 6, b"",
    )  # fmt: skip
    with pytest.raises(RemoteProtocolError):
        call.parse(
            call.request.response(RocketQResponseCode.PULL_VIEW_CHANGED, "", {calls.VIEW_QUEUES_FIELD: "x"})
        )
    assert code_name(RocketQResponseCode.PULL_VIEW_CHANGED, response=True) == "PULL_VIEW_CHANGED(10951)"
    member_call = calls.get_consumer_view("g", "T")
    assert member_call.request.ext_fields[calls.VIEW_TOPIC_FIELD] == "T"
    body = b'{"consumerIdList":["c1"]}'
    ext = {calls.VIEW_QUEUES_FIELD: "4", calls.VIEW_FIELD: "9/4"}
    answer = member_call.request.response(ext_fields=ext, body=body)
    assert member_call.parse(answer) == (["c1"], 4, "9/4")
    assert member_call.parse(member_call.request.response(ext_fields={}, body=body)) == (
        ["c1"],
        -1,
        None,
    )  # RocketMQ's
    with pytest.raises(RemoteProtocolError):
        member_call.parse(member_call.request.response(ext_fields={calls.VIEW_FIELD: "x"}, body=body))


def test_oneway_calls_are_flagged_and_need_no_answer() -> None:
    assert calls.update_consumer_offset("g", MQ, 4, oneway=True).oneway
    assert not calls.update_consumer_offset("g", MQ, 4).oneway
    assert calls.unlock_batch_mq("g", "c", [MQ], oneway=True).oneway


def test_duplicate_ids_from_rocketq_and_from_a_broker_without_the_request() -> None:
    call = calls.query_duplicate_client_ids("10.0.0.1:10911", "g")
    assert call.request.code == RocketQRequestCode.QUERY_DUPLICATE_CLIENT_IDS
    assert call.request.ext_fields == {"consumerGroup": "g"}
    body = json.dumps({"duplicates": [{"group": "g", "clientId": "c", "addresses": ["1:1", "2:2"]}]}).encode()
    assert call.parse(call.request.response(body=body)) == [
        DuplicateClientId("g", "c", "10.0.0.1:10911", ("1:1", "2:2"))
    ]
    assert call.parse(call.request.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED)) is None
    with pytest.raises(RemoteProtocolError):
        call.parse(call.request.response(body=b'{"duplicates": [{"group": 1}]}'))


def _java_exchanges(code: int) -> list[tuple[RemotingCommand, RemotingCommand]]:
    """(request, answer) pairs of ``code`` between real Java peers, errors.jsonl's included."""
    out = []
    for name in frame_files():
        lines = load(name)
        for line in lines:
            header = line.get("header")
            if line["from"] != "client" or header is None or header["code"] != code or header["flag"] & 1:
                continue
            answer = next(a for a in lines if a.get("reply_to") == line["seq"])
            out.append((decode_frame(frame_bytes(line)), decode_frame(frame_bytes(answer))))
    return out


def test_monitoring_calls_read_the_answers_a_java_broker_gave() -> None:
    # QUERY_MESSAGE: by unique key (one match), by key (one), and a miss (QUERY_NOT_FOUND: none)
    found = {}
    for request, answer in _java_exchanges(RequestCode.QUERY_MESSAGE):
        e = request.ext_fields
        call = calls.query_message(e["topic"], e["key"], unique=e["_UNIQUE_KEY_QUERY"] == "true")
        found[e["key"]] = call.parse(answer)
    assert [m.topic for m in found["utf8-key"]] == ["WireDemo"]
    assert "utf8-key" in found["utf8-key"][0].key_list
    assert found["no-such-key"] == []
    uniq = next(k for k in found if k not in ("utf8-key", "no-such-key"))
    assert [m.msg_id for m in found[uniq]] == [uniq]
    # VIEW_MESSAGE_BY_ID: the record at that commit-log offset
    ((request, answer),) = _java_exchanges(RequestCode.VIEW_MESSAGE_BY_ID)
    message = calls.view_message_by_id(333).parse(answer)
    assert message.commit_log_offset == int(request.ext_fields["offset"]) == 333
    # GET_PRODUCER_CONNECTION_LIST: the live producer, and RocketMQ's "not exist" as None
    answers = {
        r.ext_fields["producerGroup"]: calls.get_producer_connection_list(
            r.ext_fields["producerGroup"]
        ).parse(a)
        for r, a in _java_exchanges(RequestCode.GET_PRODUCER_CONNECTION_LIST)
    }
    live = answers["WireAdminProducerGroup"]
    assert live is not None
    assert [c.language for c in live.connection_set] == ["JAVA"]
    assert answers["WireNoSuchProducerGroup"] is None
    # QUERY_TOPIC_CONSUME_BY_WHO: the groups
    ((request, answer),) = _java_exchanges(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO)
    assert calls.query_topic_consume_by_who("WireAdmin").parse(answer) == ["WireAdminGroup"]


def test_runtime_info_and_config_tables_read_rocketmq_s_shapes() -> None:
    runtime = calls.get_broker_runtime_info()
    assert runtime.request.code == RequestCode.GET_BROKER_RUNTIME_INFO
    body = b'{"table":{"putTps":"12.0 11.5 9.8","brokerVersionDesc":"V4_9_4"}}'
    assert runtime.parse(runtime.request.response(body=body)) == {
        "putTps": "12.0 11.5 9.8",
        "brokerVersionDesc": "V4_9_4",
    }
    topics = calls.get_all_topic_config()
    body = b'{"topicConfigTable":{"T":{"topicName":"T","readQueueNums":4,"writeQueueNums":4,"perm":6}}}'
    table = topics.parse(topics.request.response(body=body)).topic_config_table
    assert (table["T"].read_queue_nums, table["T"].perm) == (4, 6)
    groups = calls.get_all_subscription_group_config()
    body = b'{"subscriptionGroupTable":{"g":{"groupName":"g"}}}'
    assert list(groups.parse(groups.request.response(body=body)).subscription_group_table) == ["g"]


def test_end_transaction_is_oneway_as_java_sends_it_and_carries_the_failure_in_the_remark() -> None:
    java = _java_requests(RequestCode.END_TRANSACTION)
    # the capture: commit, rollback, unknown after sends, then commit answering the broker's check
    assert [(r.ext_fields["commitOrRollback"], r.ext_fields["fromTransactionCheck"]) for r in java] == [
        ("8", "false"),
        ("12", "false"),
        ("0", "false"),
        ("8", "true"),
    ]
    for request in java:
        call = calls.end_transaction(EndTransactionRequestHeader.from_ext_fields(request.ext_fields))
        assert call.oneway
        assert request.is_oneway
        assert call.request.remark is None
        assert request.remark is None
    header = EndTransactionRequestHeader.from_ext_fields(java[2].ext_fields)
    failed = calls.end_transaction(header, remark="executeLocalTransactionBranch exception: boom")
    assert failed.request.remark == "executeLocalTransactionBranch exception: boom"
    assert failed.what.startswith("unknown state of transaction FD00")


def test_check_client_config_sends_the_java_body() -> None:
    (java,) = _java_requests(RequestCode.CHECK_CLIENT_CONFIG)
    sent = CheckClientRequestBody.decode(java.body)
    assert sent.group is not None
    assert sent.client_id is not None
    assert sent.subscription_data is not None
    call = calls.check_client_config(sent.group, sent.client_id, sent.subscription_data)
    assert call.request.code == RequestCode.CHECK_CLIENT_CONFIG
    assert call.request.body == java.body
    assert call.parse(call.request.response()) is None
    with pytest.raises(BrokerError, match="enablePropertyFilter"):
        call.parse(call.request.response(ResponseCode.SYSTEM_ERROR, "enablePropertyFilter is off"))


def test_a_reply_goes_as_send_reply_message_v2() -> None:
    (java,) = _java_requests(RequestCode.SEND_REPLY_MESSAGE_V2)
    header = SendMessageRequestHeaderV2.from_ext_fields(java.ext_fields)
    assert calls.send_code(reply=True) == RequestCode.SEND_REPLY_MESSAGE_V2
    assert calls.send_code(batch=True) == RequestCode.SEND_BATCH_MESSAGE
    assert calls.send_code() == RequestCode.SEND_MESSAGE_V2
    request = calls.send_message(header, java.body, reply=True).request
    assert (request.code, request.ext_fields, request.body) == (java.code, java.ext_fields, java.body)


def test_query_answers_keep_only_real_matches_as_java_s_admin_does() -> None:
    """A RocketMQ broker returns every entry of a key's hash slot; the call drops the rest."""
    ((_request, answer),) = [
        (r, a) for r, a in _java_exchanges(RequestCode.QUERY_MESSAGE) if r.ext_fields["key"] == "utf8-key"
    ]
    (stored,) = calls.query_message("WireDemo", "utf8-key").parse(answer)
    assert calls.query_message("OtherTopic", "utf8-key").parse(answer) == []
    assert calls.query_message("WireDemo", "utf8").parse(answer) == []  # a key is a whole word
    assert calls.query_message("WireDemo", stored.msg_id, unique=True).parse(answer) == [stored]
    assert calls.query_message("WireDemo", "F" * 32, unique=True).parse(answer) == []
