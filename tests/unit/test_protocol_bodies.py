"""Typed JSON bodies: every captured body decodes and re-encodes to the same bytes; round trips; errors."""

from __future__ import annotations

import doctest
import random
import struct
import zlib
from datetime import timedelta, timezone
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.errors import ConfigError, RemoteProtocolError
from rocketq.models import MessageQueue
from rocketq.protocol import bodies as b
from rocketq.protocol.bodies import broker as bodies_broker
from rocketq.protocol.bodies import client as bodies_client
from rocketq.protocol.bodies import hashorder as bodies_hashorder
from rocketq.protocol.properties import java_string_hash
from tests.wirecaps import all_frames, frame_bytes

# (request code, "req" | "resp") -> the body class a Java peer put there
BODY_TYPES: dict[tuple[int, str], type[b.JsonBody]] = {
    (34, "req"): b.HeartbeatData,
    (38, "resp"): b.GetConsumerListByGroupResponseBody,
    (41, "req"): b.LockBatchRequestBody,
    (41, "resp"): b.LockBatchResponseBody,
    (42, "req"): b.UnlockBatchRequestBody,
    (46, "req"): b.CheckClientRequestBody,
    (103, "req"): b.RegisterBrokerBody,
    (105, "resp"): b.TopicRouteData,
    (106, "resp"): b.ClusterInfo,
    (200, "req"): b.SubscriptionGroupConfig,
    (202, "resp"): b.TopicStatsTable,
    (203, "resp"): b.ConsumerConnection,
    (204, "resp"): b.ProducerConnection,
    (206, "resp"): b.TopicList,
    (208, "resp"): b.ConsumeStats,
    (220, "req"): b.ResetOffsetBody,
    (222, "resp"): b.ResetOffsetBody,
    (300, "resp"): b.GroupList,
    (307, "resp"): b.ConsumerRunningInfo,
    (322, "req"): b.DataVersion,
    (322, "resp"): b.DataVersion,
}

# Bodies that are not JSON: messages (pull/query/view/send/check/reply) in the store or batch layout.
MESSAGE_BODY_CODES = frozenset({10, 11, 12, 33, 39, 310, 320, 325, 326})


def _captured() -> list[tuple[str, int, str, dict[str, Any], bytes]]:
    requests: dict[tuple[str, int], int] = {}
    found = []
    for name, line in all_frames():
        raw = frame_bytes(line)
        header_len = struct.unpack_from(">i", raw, 4)[0] & 0xFFFFFF
        body = raw[8 + header_len :]
        if line["reply_to"] is None:
            requests[name, line["seq"]] = code = line["header"]["code"]
            kind = "req"
        else:
            code = requests[name, line["reply_to"]]
            kind = "resp"
        if body:
            found.append((f"{name}#{line['seq']}", code, kind, line["header"], body))
    return found


CAPTURED = _captured()
JSON_CAPTURED = [c for c in CAPTURED if c[1] not in MESSAGE_BODY_CODES]


def test_every_captured_body_has_a_type() -> None:
    untyped = {(code, kind) for _, code, kind, _, _ in JSON_CAPTURED} - set(BODY_TYPES)
    assert not untyped
    assert {(code, kind) for _, code, kind, _, _ in JSON_CAPTURED} == set(BODY_TYPES)


@pytest.mark.parametrize(
    ("ident", "code", "kind", "header", "body"), JSON_CAPTURED, ids=[c[0] for c in JSON_CAPTURED]
)
def test_captured_body_decodes_and_reencodes_identically(
    ident: str, code: int, kind: str, header: dict[str, Any], body: bytes
) -> None:
    cls = BODY_TYPES[code, kind]
    if cls is b.RegisterBrokerBody:
        compressed = header["extFields"].get("compressed") == "true"
        register = b.RegisterBrokerBody.decode(body, compressed=compressed)
        assert register.encode(compress=compressed) == body
        # the header's bodyCrc32 is over the bytes as sent
        assert int(header["extFields"]["bodyCrc32"]) == zlib.crc32(body) & 0x7FFFFFFF
        return
    decoded = cls.decode(body)
    standard = code == 105 and b'"brokerAddrs":{"0"' in body
    assert decoded.encode(browser_compatible=standard) == body
    assert cls.decode(decoded.encode()) == decoded


def _only(code: int, kind: str, file: str | None = None) -> list[bytes]:
    return [
        body
        for ident, c, k, _, body in JSON_CAPTURED
        if (c, k) == (code, kind) and (file is None or ident.startswith(file))
    ]


# ---------------------------------------------------------------- golden decodes


def test_route_from_legacy_and_standard_answers_is_the_same() -> None:
    # errors.jsonl: seq 6 answers a version-399 request (fastjson native), seq 8 one with
    # acceptStandardJsonOnly (BrowserCompatible). Same route, two spellings.
    legacy, standard = (
        body for ident, _, _, _, body in JSON_CAPTURED if ident in ("errors.jsonl#6", "errors.jsonl#8")
    )
    assert b"{0:" in legacy
    assert b'{"0":' in standard
    route = b.TopicRouteData.decode(legacy)
    assert route == b.TopicRouteData.decode(standard)
    assert route.encode() == legacy
    assert route.encode(browser_compatible=True) == standard
    assert route.broker_datas == (
        b.BrokerData(cluster="DefaultCluster", broker_name="broker-a", broker_addrs={0: "127.0.0.1:10911"}),
    )
    assert route.broker_datas[0].master_addr == "127.0.0.1:10911"
    assert route.queue_datas == (
        b.QueueData(broker_name="broker-a", read_queue_nums=2, write_queue_nums=2, perm=6, topic_sys_flag=0),
    )
    assert route.filter_server_table == {}
    assert route.order_topic_conf is None


def test_heartbeat_fields() -> None:
    (body,) = [x for x in _only(34, "req", "filter.jsonl") if b"SQL92" in x][:1]
    heartbeat = b.HeartbeatData.decode(body)
    assert heartbeat.client_id is not None
    assert heartbeat.client_id.startswith("127.0.0.1@")
    assert heartbeat.producer_data_set == (b.ProducerData(group_name="CLIENT_INNER_PRODUCER"),)
    (consumer,) = heartbeat.consumer_data_set
    assert consumer.consume_type is b.ConsumeType.CONSUME_PASSIVELY
    assert consumer.message_model is b.MessageModel.CLUSTERING
    assert consumer.consume_from_where is b.ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    sql = next(s for s in consumer.subscription_data_set if s.expression_type == "SQL92")
    assert (sql.topic, sql.sub_string, sql.tags_set, sql.code_set) == ("WireDemo", "batchIndex>0", (), ())


def test_heartbeat_tag_codes_are_java_hash_codes() -> None:
    found = False
    for body in _only(34, "req"):
        for consumer in b.HeartbeatData.decode(body).consumer_data_set:
            for sub in consumer.subscription_data_set:
                assert sub.code_set == tuple(java_string_hash(tag) for tag in sub.tags_set)
                found = found or bool(sub.tags_set)
    assert found


def test_subscriptions_build_as_java_builds_them() -> None:
    built = 0
    for body in _only(34, "req"):
        for consumer in b.HeartbeatData.decode(body).consumer_data_set:
            for sub in consumer.subscription_data_set:
                assert sub.topic is not None
                again = b.SubscriptionData.build(
                    sub.topic,
                    sub.sub_string,
                    sub_version=sub.sub_version,
                    expression_type=sub.expression_type,
                )
                assert again == sub
                built += 1
    assert built > 20


def test_subscription_build_rules() -> None:
    every = b.SubscriptionData.build("T", None, sub_version=5)
    assert (every.sub_string, every.tags_set, every.expression_type) == ("*", (), "TAG")
    assert b.SubscriptionData.build("T", "", sub_version=5).sub_string == "*"
    tags = b.SubscriptionData.build("T", " a ||b|| a||\t||", sub_version=5)
    assert sorted(tags.tags_set) == ["a", "b"]
    assert tags.code_set == tuple(b.java_hash_order([java_string_hash("a"), java_string_hash("b")]))
    assert tags.sub_string == " a ||b|| a||\t||"
    sql = b.SubscriptionData.build("T", "a > 1", sub_version=5, expression_type=b.SQL92)
    assert (sql.tags_set, sql.expression_type) == ((), "SQL92")
    with pytest.raises(ConfigError, match="must not be empty"):
        b.SubscriptionData.build("T", "", sub_version=5, expression_type=b.SQL92)
    # many tags: Java's HashSet resizes past 12 entries
    many = b.SubscriptionData.build("T", "||".join(f"Tag{i}" for i in range(40)), sub_version=1)
    assert many.tags_set == tuple(b.java_hash_order(f"Tag{i}" for i in range(40)))


def test_lock_bodies_hold_message_queues() -> None:
    request = b.LockBatchRequestBody.decode(_only(41, "req")[0])
    assert request.consumer_group == "WireOrderlyGroup"
    assert all(isinstance(q, MessageQueue) for q in request.mq_set)
    response = b.LockBatchResponseBody.decode(_only(41, "resp")[0])
    assert set(response.lock_ok_mq_set) <= set(request.mq_set)
    unlock = b.UnlockBatchRequestBody.decode(_only(42, "req")[0])
    assert unlock.mq_set[0].topic == "WireOrderly"


def test_consume_stats_are_keyed_by_message_queue() -> None:
    stats = b.ConsumeStats.decode(_only(208, "resp")[0])
    assert stats.consume_tps == 0.2
    queue = MessageQueue("WireAdmin", "broker-b", 1)
    assert stats.offset_table[queue] == b.OffsetWrapper(
        broker_offset=1, consumer_offset=1, last_timestamp=stats.offset_table[queue].last_timestamp
    )
    assert stats.total_diff() == 0


def test_cluster_info() -> None:
    info = b.ClusterInfo.decode(_only(106, "resp")[0])
    assert list(info.broker_addr_table) == ["broker-b", "broker-a"]
    assert info.broker_addr_table["broker-a"].broker_addrs == {0: "127.0.0.1:10911"}
    assert info.cluster_addr_table == {"DefaultCluster": ("broker-b", "broker-a")}


def test_consumer_connection_and_running_info() -> None:
    connection = b.ConsumerConnection.decode(_only(203, "resp")[0])
    assert connection.connection_set[0].language == "JAVA"
    assert connection.connection_set[0].version == 401
    assert set(connection.subscription_table) == {"WireAdmin", "%RETRY%WireAdminGroup"}
    info = b.ConsumerRunningInfo.decode(_only(307, "resp")[0])
    assert info.properties["consumerGroup"] == "WireAdminGroup"
    assert info.status_table["WireAdmin"].consume_rt == 12.75
    assert list(info.mq_table) == sorted(info.mq_table)
    assert info.jstack is None


def test_running_info_sorts_its_tree_collections() -> None:
    queues = [MessageQueue("T", "b", 1), MessageQueue("T", "a", 2), MessageQueue("S", "z", 0)]
    subs = (
        b.SubscriptionData(topic="T", sub_string="*"),
        b.SubscriptionData(topic="%RETRY%G", sub_string="*"),
    )
    info = b.ConsumerRunningInfo(
        subscription_set=subs,
        mq_table={q: b.ProcessQueueInfo() for q in queues},
        status_table={"b": b.ConsumeStatus(), "B": b.ConsumeStatus(), "a": b.ConsumeStatus()},
    )
    decoded = b.ConsumerRunningInfo.decode(info.encode())
    assert list(decoded.mq_table) == sorted(queues)
    assert [s.topic for s in decoded.subscription_set] == ["%RETRY%G", "T"]
    assert list(decoded.status_table) == ["B", "a", "b"]


def test_compressed_registration_content() -> None:
    first = next(
        body
        for ident, code, _, _, body in JSON_CAPTURED
        if code == 103 and ident.startswith("namesrv-register-compressed")
    )
    register = b.RegisterBrokerBody.decode(first, compressed=True)
    wrapper = register.topic_config_serialize_wrapper
    assert wrapper.data_version.counter == 0
    assert list(wrapper.topic_config_table)[:3] == [
        "SCHEDULE_TOPIC_XXXX",
        "DefaultCluster_REPLY_TOPIC",
        "BenchmarkTest",
    ]
    assert wrapper.topic_config_table["BenchmarkTest"] == b.TopicConfig(
        topic_name="BenchmarkTest", read_queue_nums=1024, write_queue_nums=1024, perm=6
    )
    assert register.filter_server_list == ()


def test_json_registration_content() -> None:
    register = b.RegisterBrokerBody.decode(_only(103, "req", "namesrv-register.jsonl")[0])
    table = register.topic_config_serialize_wrapper.topic_config_table
    assert table["TBW102"] == b.TopicConfig(
        topic_name="TBW102", read_queue_nums=8, write_queue_nums=8, perm=7
    )
    # the JSON and the compressed layouts carry the same topics (order, sys flag aside)
    again = b.RegisterBrokerBody.decode(register.encode(compress=True), compressed=True)
    assert again.topic_config_serialize_wrapper.topic_config_table == table


def test_subscription_group_config_defaults_are_rocketmqs() -> None:
    config = b.SubscriptionGroupConfig.decode(_only(200, "req")[0])
    assert config == b.SubscriptionGroupConfig(group_name="WireAdminSubGroup")
    assert b.SubscriptionGroupConfig(group_name="WireAdminSubGroup").encode() == _only(200, "req")[0]


# ---------------------------------------------------------------- bodies the captures lack


def test_consumer_offsets_as_the_broker_persists_them() -> None:
    text = b'{"offsetTable":{"WireDemo@G":{0:12,1:3},"%RETRY%G@G":{0:0}}}'
    wrapper = b.ConsumerOffsetSerializeWrapper.decode(text)
    assert wrapper.offset_table == {"WireDemo@G": {0: 12, 1: 3}, "%RETRY%G@G": {0: 0}}
    assert wrapper.encode() == text
    pretty = b'{\n\t"offsetTable":{\n\t\t"WireDemo@G":{0:12,1:3\n\t\t},\n\t\t"%RETRY%G@G":{0:0\n\t\t}\n\t}\n}'
    assert b.ConsumerOffsetSerializeWrapper.decode(pretty) == wrapper
    # ConfigManager.persist writes the file with PrettyFormat: integer keys stay on one line
    assert wrapper.encode(pretty=True) == pretty


def test_pretty_format_of_persisted_topics() -> None:
    wrapper = b.TopicConfigSerializeWrapper(
        topic_config_table={
            "T": b.TopicConfig(topic_name="T", read_queue_nums=2, write_queue_nums=2, perm=6)
        },
        data_version=b.DataVersion(timestamp=1795248571136, counter=2),
    )
    assert wrapper.to_text(pretty=True) == (
        '{\n\t"dataVersion":{\n\t\t"counter":2,\n\t\t"timestamp":1795248571136\n\t},\n'
        '\t"topicConfigTable":{\n\t\t"T":{\n\t\t\t"order":false,\n\t\t\t"perm":6,\n\t\t\t"readQueueNums":2,\n'
        '\t\t\t"topicFilterType":"SINGLE_TAG",\n\t\t\t"topicName":"T",\n\t\t\t"topicSysFlag":0,\n'
        '\t\t\t"writeQueueNums":2\n\t\t}\n\t}\n}'
    )
    assert b.TopicConfigSerializeWrapper.decode(wrapper.encode(pretty=True)) == wrapper


def test_pretty_format_lists_sets_and_object_keys() -> None:
    # a List puts each element on its own line, a Set does not; an object key is a bean
    route = b.TopicRouteData(filter_server_table={"a": ("f1",)})
    assert route.to_text(pretty=True) == (
        '{\n\t"brokerDatas":[],\n\t"filterServerTable":{\n\t\t"a":[\n\t\t\t"f1"\n\t\t]\n\t},\n\t"queueDatas":[]\n}'
    )
    groups = b.GroupList(group_list=("g1", "g2"))
    assert groups.to_text(pretty=True) == '{\n\t"groupList":["g1","g2"]\n}'
    reset = b.ResetOffsetBody(offset_table={MessageQueue("T", "b", 1): 3})
    assert reset.to_text(pretty=True) == (
        '{\n\t"offsetTable":{{\n\t\t\t"brokerName":"b",\n\t\t\t"queueId":1,\n\t\t\t"topic":"T"\n\t\t}:3\n\t}\n}'
    )


def test_subscription_group_wrapper_and_topic_persistence() -> None:
    groups = b.SubscriptionGroupWrapper(
        subscription_group_table={"G": b.SubscriptionGroupConfig(group_name="G", retry_max_times=3)},
        data_version=b.DataVersion(timestamp=1795248571136, counter=2),
    )
    assert groups.encode() == (
        b'{"dataVersion":{"counter":2,"timestamp":1795248571136},"subscriptionGroupTable":{"G":{"brokerId":0,'
        b'"consumeBroadcastEnable":true,"consumeEnable":true,"consumeFromMinEnable":true,"groupName":"G",'
        b'"notifyConsumerIdsChangedEnable":true,"retryMaxTimes":3,"retryQueueNums":1,'
        b'"whichBrokerWhenConsumeSlowly":1}}}'
    )
    assert b.SubscriptionGroupWrapper.decode(groups.encode()) == groups
    assert b.DataVersion(timestamp=5, counter=1).next_version(9) == b.DataVersion(timestamp=9, counter=2)


def test_kv_table_and_query_consume_time_span() -> None:
    assert b.KVTable(table={"k": "v"}).encode() == b'{"table":{"k":"v"}}'
    span = b.QueueTimeSpan.of(
        MessageQueue("T", "b", 0),
        min_time_stamp=1795248571136,
        max_time_stamp=1795248571137,
        consume_time_stamp=0,
        delay_time=1,
        tz=timezone(timedelta(hours=8)),
    )
    body = b.QueryConsumeTimeSpanBody(consume_time_span_set=(span,))
    assert body.encode() == (
        b'{"consumeTimeSpanSet":[{"consumeTimeStamp":0,"consumeTimeStampStr":"1970-01-01#08:00:00:000",'
        b'"delayTime":1,"maxTimeStamp":1795248571137,"maxTimeStampStr":"2026-11-21#16:09:31:137",'
        b'"messageQueue":{"brokerName":"b","queueId":0,"topic":"T"},"minTimeStamp":1795248571136,'
        b'"minTimeStampStr":"2026-11-21#16:09:31:136"}]}'
    )
    assert b.QueryConsumeTimeSpanBody.decode(body.encode()) == body


def test_delay_offsets_as_the_broker_persists_them() -> None:
    text = b'{"offsetTable":{1:4,2:0,3:17}}'
    delay = b.DelayOffsetSerializeWrapper.decode(text)
    assert delay.offset_table == {1: 4, 2: 0, 3: 17}
    assert delay.encode() == text
    assert delay.encode(pretty=True) == b'{\n\t"offsetTable":{1:4,2:0,3:17\n\t}\n}'


def test_check_client_and_reset_offset_golden() -> None:
    reset = b.ResetOffsetBody(offset_table={MessageQueue("T", "b", 1): 0, MessageQueue("T", "b", 0): 7})
    assert reset.encode() == (
        b'{"offsetTable":{{"brokerName":"b","queueId":1,"topic":"T"}:0,{"brokerName":"b","queueId":0,"topic":"T"}:7}}'
    )


def test_client_answers_golden() -> None:
    result = b.ConsumeMessageDirectlyResult(consume_result=b.CMResult.CR_SUCCESS, spent_time_mills=3)
    assert (
        result.encode()
        == b'{"autoCommit":true,"consumeResult":"CR_SUCCESS","order":false,"spentTimeMills":3}'
    )
    status = b.GetConsumerStatusBody(
        message_queue_table={MessageQueue("T", "b", 0): 5},
        consumer_table={"c1": {MessageQueue("T", "b", 0): 5}},
    )
    assert status.encode() == (
        b'{"consumerTable":{"c1":{{"brokerName":"b","queueId":0,"topic":"T"}:5}},'
        b'"messageQueueTable":{{"brokerName":"b","queueId":0,"topic":"T"}:5}}'
    )


# ---------------------------------------------------------------- Java hash order


def test_java_hash_order_matches_captured_hash_maps() -> None:
    info = b.ClusterInfo.decode(_only(106, "resp")[0])
    assert b.java_hash_order(sorted(info.broker_addr_table)) == list(info.broker_addr_table)
    for body in _only(208, "resp"):
        table = b.ConsumeStats.decode(body).offset_table
        assert b.java_hash_order(sorted(table)) == list(table)
    for body in _only(202, "resp"):
        stats = b.TopicStatsTable.decode(body).offset_table
        assert b.java_hash_order(sorted(stats)) == list(stats)
    for body in _only(41, "req"):
        queues = b.LockBatchRequestBody.decode(body).mq_set
        assert b.java_hash_order(sorted(queues)) == list(queues)
    # the broker's topic table is a ConcurrentHashMap(1024): 2048 buckets
    for body in _only(103, "req", "namesrv-register.jsonl"):
        topics = list(b.RegisterBrokerBody.decode(body).topic_config_serialize_wrapper.topic_config_table)
        assert b.java_hash_order(sorted(topics), capacity=2048) == topics
    # topic names sharing a bucket stay in insertion order, which only the name server knew
    names = list(b.TopicList.decode(_only(206, "resp")[0]).topic_list)
    assert b.java_hash_order(names) == names


def test_java_hash_codes() -> None:
    assert java_string_hash("broker-a") == _java_hash_reference("broker-a")
    assert java_string_hash("a") == 97
    assert java_string_hash("ab") == 97 * 31 + 98
    assert java_string_hash("😀") == 0xD83D * 31 + 0xDE00
    assert java_string_hash("x" * 20) == _java_hash_reference("x" * 20)
    assert b.java_hash_order([3, 1 << 40, 2], long_keys=True) == [1 << 40, 2, 3]
    with pytest.raises(TypeError):
        b.java_hash_order([object()])


def _java_hash_reference(text: str) -> int:
    h = 0
    for ch in text:
        h = (h * 31 + ord(ch)) % (1 << 32)
    return h - (1 << 32) if h >= 1 << 31 else h


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("cls", "data", "fragment"),
    [
        (b.TopicRouteData, b"", "TopicRouteData: empty body"),
        (b.TopicRouteData, b"[]", "TopicRouteData: expected an object, got an array"),
        (b.TopicRouteData, b'{"queueDatas":{}}', "TopicRouteData.queueDatas: expected an array"),
        (
            b.TopicRouteData,
            b'{"queueDatas":[{"perm":"x"}]}',
            "TopicRouteData.queueDatas[0].perm: expected an integer",
        ),
        (
            b.TopicRouteData,
            b'{"brokerDatas":[{"brokerAddrs":{x:"a"}}]}',
            "brokerAddrs key: expected an integer",
        ),
        (b.HeartbeatData, b'{"consumerDataSet":[{"consumeType":"PUSH"}]}', "one of CONSUME_ACTIVELY"),
        (b.HeartbeatData, b'{"clientID":[1]}', "HeartbeatData.clientID: expected a string"),
        (b.ConsumeStats, b'{"offsetTable":{"q":{}}}', "expected a message queue"),
        (b.ConsumeStats, b'{"consumeTps":"fast"}', "ConsumeStats.consumeTps: expected a number"),
        (b.TopicConfig, b'{"order":"maybe"}', "TopicConfig.order: expected a boolean"),
        (b.TopicConfig, b'{"order":', "TopicConfig: invalid JSON body at offset 9"),
        (b.LockBatchRequestBody, b"\xff", "not valid UTF-8"),
    ],
)
def test_bad_bodies_raise_protocol_errors(cls: type[b.JsonBody], data: bytes, fragment: str) -> None:
    with pytest.raises(RemoteProtocolError) as info:
        cls.decode(data)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"not zlib", "does not inflate"),
        (zlib.compress(b"\x00\x00"), "truncated"),
        (zlib.compress(b"\x00\x00\x00\x09{}"), "runs past the end"),
        (zlib.compress(b"\x00\x00\x00\x02{}\xff\xff\xff\xff"), "negative topic count"),
        (zlib.compress(b"\x00\x00\x00\x02{}\x00\x00\x00\x01\x00\x00\x00\x01T"), "expected 5 space-separated"),
        (
            zlib.compress(b"\x00\x00\x00\x02{}\x00\x00\x00\x01\x00\x00\x00\x0cT 1 1 6 WHAT"),
            "bad number or filter",
        ),
        (zlib.compress(b"\x00\x00\x00\x02{}\x00\x00\x00\x00\x00\x00\x00\x02[]!"), "trailing bytes"),
        (zlib.compress(b"\x00\x00\x00\x02{}\x00\x00\x00\x00\x00\x00\x00\x02{}"), "expected an array"),
    ],
)
def test_bad_compressed_registrations(data: bytes, fragment: str) -> None:
    with pytest.raises(RemoteProtocolError, match=fragment):
        b.RegisterBrokerBody.decode(data, compressed=True)


def test_compressed_registration_is_bounded_and_complete() -> None:
    bomb = zlib.compress(b"\x00" * 5000, 9)
    with pytest.raises(RemoteProtocolError, match="inflates past 4096 bytes"):
        b.RegisterBrokerBody.decode(bomb, compressed=True, max_inflated=4096)
    bomb = zlib.compress(b"\x00" * (b.MAX_INFLATED_REGISTER_BODY + 1), 9)
    with pytest.raises(RemoteProtocolError, match="inflates past"):
        b.RegisterBrokerBody.decode(bomb, compressed=True)
    whole = b.RegisterBrokerBody().encode(compress=True)
    with pytest.raises(RemoteProtocolError, match="truncated"):
        b.RegisterBrokerBody.decode(whole[:-3], compressed=True)
    with pytest.raises(RemoteProtocolError, match="must be bytes"):
        b.RegisterBrokerBody.decode("x", compressed=True)


def test_mutated_captured_bodies_raise_only_protocol_errors() -> None:
    rng = random.Random(3)
    seen: set[tuple[int, str]] = set()
    for _, code, kind, header, body in JSON_CAPTURED:
        if (code, kind) in seen and code != 103:
            continue
        seen.add((code, kind))
        cls = BODY_TYPES[code, kind]
        compressed = code == 103 and header["extFields"].get("compressed") == "true"
        for _ in range(200):
            data = bytearray(body)
            for _ in range(rng.randint(1, 3)):
                pos = rng.randrange(len(data))
                roll = rng.random()
                if roll < 0.5:
                    data[pos] = rng.randrange(256) if compressed else rng.choice(b'{}[]:,"0aL-tn ')
                elif roll < 0.8:
                    del data[pos : pos + rng.randint(1, 6)]
                else:
                    data[pos:pos] = bytes([rng.choice(b'{}[]:,"0a')])
            try:
                if cls is b.RegisterBrokerBody:
                    b.RegisterBrokerBody.decode(bytes(data), compressed=compressed)
                else:
                    cls.decode(bytes(data))
            except RemoteProtocolError:
                pass


# ---------------------------------------------------------------- hypothesis round trips

_text = st.text(max_size=12)
_name = st.text(
    alphabet=st.characters(blacklist_characters=" ", blacklist_categories=("Cs",)), min_size=1, max_size=12
)
_long = st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1)
_int = st.integers(min_value=-(1 << 31), max_value=(1 << 31) - 1)
_double = st.floats(allow_nan=False, allow_infinity=False)
_queue = st.builds(MessageQueue, _text, _text, st.integers(min_value=0, max_value=1 << 16))
_queues = st.lists(_queue, max_size=4, unique=True).map(tuple)
_optional_text = st.none() | _text

_subscription = st.builds(
    b.SubscriptionData,
    topic=_optional_text,
    sub_string=_optional_text,
    tags_set=st.lists(_text, max_size=3).map(tuple),
    code_set=st.lists(_int, max_size=3).map(tuple),
    sub_version=_long,
    expression_type=st.sampled_from(["TAG", "SQL92"]),
    class_filter_mode=st.booleans(),
)
_topic_config = st.builds(
    b.TopicConfig,
    topic_name=_name,
    read_queue_nums=_int,
    write_queue_nums=_int,
    perm=_int,
    topic_filter_type=st.sampled_from(b.TopicFilterType),
)
_broker_data = st.builds(
    b.BrokerData,
    cluster=_optional_text,
    broker_name=_optional_text,
    broker_addrs=st.dictionaries(_long, _text, max_size=3),
)
_version = st.builds(b.DataVersion, timestamp=_long, counter=_long)


def _tree_set_key(sub: b.SubscriptionData) -> bytes:
    """SubscriptionData.compareTo: "topic@subString" compared as Java strings."""
    return f"{sub.topic}@{sub.sub_string}".encode("utf-16-be", "surrogatepass")


BODY_STRATEGIES: dict[type[b.JsonBody], st.SearchStrategy[Any]] = {
    b.DelayOffsetSerializeWrapper: st.builds(
        b.DelayOffsetSerializeWrapper, offset_table=st.dictionaries(_int, _long, max_size=4)
    ),
    b.QueryCorrectionOffsetBody: st.builds(
        b.QueryCorrectionOffsetBody, correction_offsets=st.dictionaries(_int, _long, max_size=4)
    ),
    b.ConsumeStatsList: st.builds(
        b.ConsumeStatsList,
        consume_stats_list=st.lists(
            st.dictionaries(
                _text,
                st.lists(
                    st.builds(
                        b.ConsumeStats,
                        offset_table=st.dictionaries(
                            _queue, st.builds(b.OffsetWrapper, broker_offset=_long), max_size=2
                        ),
                        consume_tps=_double,
                    ),
                    max_size=2,
                ).map(tuple),
                max_size=2,
            ),
            max_size=2,
        ).map(tuple),
        broker_addr=_optional_text,
        total_diff=_long,
    ),
    b.QueryConsumeQueueResponseBody: st.builds(
        b.QueryConsumeQueueResponseBody,
        subscription_data=st.none() | _subscription,
        filter_data=_optional_text,
        queue_data=st.lists(
            st.builds(
                b.ConsumeQueueData,
                physic_offset=_long,
                physic_size=_int,
                tags_code=_long,
                extend_data_json=_optional_text,
                bit_map=_optional_text,
                eval=st.booleans(),
                msg=_optional_text,
            ),
            max_size=3,
        ).map(tuple),
        max_queue_index=_long,
        min_queue_index=_long,
    ),
    b.ConsumeMessageDirectlyResult: st.builds(
        b.ConsumeMessageDirectlyResult,
        order=st.booleans(),
        auto_commit=st.booleans(),
        consume_result=st.none() | st.sampled_from(b.CMResult),
        remark=_optional_text,
        spent_time_mills=_long,
    ),
    b.GetConsumerStatusBody: st.builds(
        b.GetConsumerStatusBody,
        message_queue_table=st.dictionaries(_queue, _long, max_size=3),
        consumer_table=st.dictionaries(_text, st.dictionaries(_queue, _long, max_size=2), max_size=2),
    ),
    b.TopicRouteData: st.builds(
        b.TopicRouteData,
        order_topic_conf=_optional_text,
        queue_datas=st.lists(st.builds(b.QueueData, broker_name=_text, perm=_int), max_size=3).map(tuple),
        broker_datas=st.lists(_broker_data, max_size=3).map(tuple),
        filter_server_table=st.dictionaries(_text, st.lists(_text, max_size=2).map(tuple), max_size=2),
    ),
    b.ClusterInfo: st.builds(
        b.ClusterInfo,
        broker_addr_table=st.dictionaries(_text, _broker_data, max_size=3),
        cluster_addr_table=st.dictionaries(_text, st.lists(_text, max_size=3).map(tuple), max_size=2),
    ),
    b.HeartbeatData: st.builds(
        b.HeartbeatData,
        client_id=_optional_text,
        producer_data_set=st.lists(st.builds(b.ProducerData, group_name=_text), max_size=2).map(tuple),
        consumer_data_set=st.lists(
            st.builds(
                b.ConsumerData,
                group_name=_text,
                consume_type=st.sampled_from(b.ConsumeType),
                message_model=st.sampled_from(b.MessageModel),
                consume_from_where=st.sampled_from(b.ConsumeFromWhere),
                subscription_data_set=st.lists(_subscription, max_size=3).map(tuple),
                unit_mode=st.booleans(),
            ),
            max_size=2,
        ).map(tuple),
    ),
    b.LockBatchRequestBody: st.builds(
        b.LockBatchRequestBody, consumer_group=_text, client_id=_text, mq_set=_queues
    ),
    b.UnlockBatchRequestBody: st.builds(
        b.UnlockBatchRequestBody, consumer_group=_text, client_id=_text, mq_set=_queues
    ),
    b.LockBatchResponseBody: st.builds(b.LockBatchResponseBody, lock_ok_mq_set=_queues),
    b.GetConsumerListByGroupResponseBody: st.builds(
        b.GetConsumerListByGroupResponseBody, consumer_id_list=st.lists(_text, max_size=4).map(tuple)
    ),
    b.ConsumeStats: st.builds(
        b.ConsumeStats,
        offset_table=st.dictionaries(
            _queue,
            st.builds(b.OffsetWrapper, broker_offset=_long, consumer_offset=_long, last_timestamp=_long),
            max_size=4,
        ),
        consume_tps=_double,
    ),
    b.TopicStatsTable: st.builds(
        b.TopicStatsTable,
        offset_table=st.dictionaries(
            _queue, st.builds(b.TopicOffset, min_offset=_long, max_offset=_long), max_size=4
        ),
    ),
    b.ConsumerConnection: st.builds(
        b.ConsumerConnection,
        connection_set=st.lists(
            st.builds(
                b.Connection, client_id=_text, client_addr=_text, language=st.just("JAVA"), version=_int
            ),
            max_size=2,
        ).map(tuple),
        subscription_table=st.dictionaries(_text, _subscription, max_size=2),
        consume_type=st.none() | st.sampled_from(b.ConsumeType),
        message_model=st.none() | st.sampled_from(b.MessageModel),
        consume_from_where=st.none() | st.sampled_from(b.ConsumeFromWhere),
    ),
    b.ConsumerRunningInfo: st.builds(
        b.ConsumerRunningInfo,
        properties=st.dictionaries(_text, _text, max_size=3),
        subscription_set=st.lists(_subscription, max_size=3, unique_by=lambda s: (s.topic, s.sub_string)).map(
            lambda subs: tuple(sorted(subs, key=_tree_set_key))
        ),
        mq_table=st.dictionaries(
            _queue, st.builds(b.ProcessQueueInfo, commit_offset=_long, locked=st.booleans()), max_size=3
        ).map(lambda t: dict(sorted(t.items()))),
        status_table=st.dictionaries(
            st.text(alphabet="abcXYZ", max_size=4),
            st.builds(b.ConsumeStatus, pull_rt=_double, consume_failed_msgs=_long),
            max_size=3,
        ).map(lambda t: dict(sorted(t.items()))),
        jstack=_optional_text,
    ),
    b.TopicList: st.builds(
        b.TopicList, topic_list=st.lists(_text, max_size=4).map(tuple), broker_addr=_optional_text
    ),
    b.GroupList: st.builds(b.GroupList, group_list=st.lists(_text, max_size=4).map(tuple)),
    b.ResetOffsetBody: st.builds(b.ResetOffsetBody, offset_table=st.dictionaries(_queue, _long, max_size=4)),
    b.KVTable: st.builds(b.KVTable, table=st.dictionaries(_text, _text, max_size=4)),
    b.ConsumerOffsetSerializeWrapper: st.builds(
        b.ConsumerOffsetSerializeWrapper,
        offset_table=st.dictionaries(_text, st.dictionaries(_int, _long, max_size=3), max_size=3),
    ),
    b.SubscriptionGroupWrapper: st.builds(
        b.SubscriptionGroupWrapper,
        subscription_group_table=st.dictionaries(
            _text,
            st.builds(
                b.SubscriptionGroupConfig, group_name=_text, broker_id=_long, consume_enable=st.booleans()
            ),
            max_size=2,
        ),
        data_version=_version,
    ),
    b.TopicConfigSerializeWrapper: st.builds(
        b.TopicConfigSerializeWrapper,
        topic_config_table=st.dictionaries(_name, _topic_config, max_size=3),
        data_version=_version,
    ),
    b.CheckClientRequestBody: st.builds(
        b.CheckClientRequestBody, client_id=_text, group=_text, subscription_data=_subscription
    ),
    b.QueryConsumeTimeSpanBody: st.builds(
        b.QueryConsumeTimeSpanBody,
        consume_time_span_set=st.lists(
            st.builds(
                b.QueueTimeSpan.of,
                _queue,
                min_time_stamp=st.integers(0, 1 << 45),
                max_time_stamp=st.integers(0, 1 << 45),
                consume_time_stamp=st.integers(0, 1 << 45),
                delay_time=_long,
            ),
            max_size=2,
        ).map(tuple),
    ),
    b.ProducerConnection: st.builds(
        b.ProducerConnection,
        connection_set=st.lists(st.builds(b.Connection, client_id=_text), max_size=2).map(tuple),
    ),
}


@pytest.mark.parametrize("cls", list(BODY_STRATEGIES), ids=lambda c: c.__name__)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_bodies_round_trip(cls: type[b.JsonBody], data: st.DataObject) -> None:
    body = data.draw(BODY_STRATEGIES[cls])
    encoded = body.encode()
    assert cls.decode(encoded) == body
    assert cls.decode(body.encode(browser_compatible=True)) == body
    assert cls.decode(body.encode(pretty=True)) == body
    assert cls.decode(encoded).encode() == encoded


@settings(max_examples=60, deadline=None)
@given(
    table=st.dictionaries(_name, _topic_config, max_size=5).map(
        lambda t: {c.topic_name or "": c for c in t.values()}
    ),
    version=_version,
    servers=st.lists(_text, max_size=3).map(tuple),
)
def test_register_broker_body_round_trips_both_forms(
    table: dict[str, b.TopicConfig], version: b.DataVersion, servers: tuple[str, ...]
) -> None:
    body = b.RegisterBrokerBody(
        topic_config_serialize_wrapper=b.TopicConfigSerializeWrapper(
            topic_config_table=table, data_version=version
        ),
        filter_server_list=servers,
    )
    assert b.RegisterBrokerBody.decode(body.encode()) == body
    assert b.RegisterBrokerBody.decode(body.encode(compress=True), compressed=True) == body


@pytest.mark.parametrize(
    "module", [b, bodies_broker, bodies_client, bodies_hashorder], ids=lambda m: m.__name__
)
def test_module_doctests(module: ModuleType) -> None:
    failures, tried = doctest.testmod(module)
    assert failures == 0
    assert tried > 0
