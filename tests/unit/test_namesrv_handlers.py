"""The name server's request handlers, called directly (no socket), against RocketMQ 4.9.4's answers.

The loopback replay of every capture is in ``tests/integration/test_namesrv_replay.py``; here the
brokers' own captures go through :class:`NamesrvProcessor` in-process, and the paths the captures
do not show (old brokers, empty bodies, bad CRCs, order topics) are checked one by one.
"""

from __future__ import annotations

import zlib
from typing import Any

import pytest

from rocketq.errors import RemoteProtocolError
from rocketq.namesrv import ORDER_TOPIC_CONFIG, KVConfig, NamesrvProcessor, RouteTable
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketq.protocol.bodies import (
    DataVersion,
    KVTable,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicRouteData,
)
from rocketq.protocol.codes import MQVersion
from rocketq.protocol.frame import decode_frame
from rocketq.protocol.headers import RegisterBrokerRequestHeader
from tests import wirecaps


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def processor(*, order_message_enable: bool = False) -> tuple[NamesrvProcessor, Clock]:
    clock = Clock()
    return NamesrvProcessor(
        RouteTable(), KVConfig(), clock=clock, order_message_enable=order_message_enable
    ), clock


def replay_in_process(lines: list[dict[str, Any]]) -> int:
    """Feed the captured requests to the handlers; compare with the captured answers. Returns the count."""
    proc, clock = processor()
    ours: dict[tuple[int, int], RemotingCommand | None] = {}
    compared = 0
    for line in lines:
        clock.now = line["t_ms"] / 1000
        cmd = decode_frame(wirecaps.frame_bytes(line))
        if line["to"] == "namesrv":
            ours[(line["conn"], line["seq"])] = proc.process(line["conn"], cmd)
            continue
        got = ours[(line["conn"], line["reply_to"])]
        assert got is not None
        assert (got.code, got.remark, list(got.ext_fields.items()), got.body) == (
            cmd.code,
            cmd.remark,
            list(cmd.ext_fields.items()),
            cmd.body,
        ), f"seq {line['seq']}: {line['note']}"
        compared += 1
    return compared


def test_two_brokers_life_matches_rocketmq() -> None:
    assert replay_in_process(list(wirecaps.load("namesrv-register.jsonl"))) == 12


def test_compressed_registrations_and_data_version_queries_match_rocketmq() -> None:
    lines = [
        line
        for line in wirecaps.load("namesrv-register-compressed.jsonl")
        if "namesrv" in (line["from"], line["to"])
    ]
    assert replay_in_process(lines) == 8


def register_request(
    body: bytes, *, version: int = MQVersion.V4_9_4, compressed: bool = False, crc: int = 0
) -> RemotingCommand:
    header = RegisterBrokerRequestHeader(
        broker_name="broker-a",
        broker_addr="127.0.0.1:10911",
        cluster_name="DefaultCluster",
        ha_server_addr="127.0.0.1:10912",
        broker_id=0,
        compressed=compressed,
        body_crc32=crc,
    )
    return RemotingCommand.request(RequestCode.REGISTER_BROKER, header.to_ext_fields(), body, version=version)


def wrapper(*topics: str, counter: int = 1) -> TopicConfigSerializeWrapper:
    return TopicConfigSerializeWrapper(
        topic_config_table={
            t: TopicConfig(topic_name=t, read_queue_nums=2, write_queue_nums=2) for t in topics
        },
        data_version=DataVersion(timestamp=5, counter=counter),
    )


def test_brokers_before_3_0_11_send_a_bare_topic_wrapper() -> None:
    proc, _ = processor()
    answer = proc.process("conn", register_request(wrapper("Old").encode(), version=MQVersion.V3_0_7))
    assert answer is not None
    assert answer.code == ResponseCode.SUCCESS
    assert proc.routes.topic_route("Old") is not None


def test_registration_without_body_registers_the_broker_at_version_zero() -> None:
    proc, _ = processor()
    answer = proc.process("conn", register_request(b""))
    assert answer is not None
    assert answer.code == ResponseCode.SUCCESS
    assert proc.routes.data_version("127.0.0.1:10911") == DataVersion(timestamp=0, counter=0)
    assert proc.routes.all_topics().topic_list == ()
    assert list(proc.routes.cluster_info().broker_addr_table) == ["broker-a"]


def test_crc_is_checked_when_given() -> None:
    proc, _ = processor()
    body = RegisterBrokerBody(topic_config_serialize_wrapper=wrapper("T")).encode(compress=True)
    good_crc = zlib.crc32(body) & 0x7FFFFFFF
    bad = proc.process("conn", register_request(body, compressed=True, crc=good_crc ^ 1))
    assert bad is not None
    assert (bad.code, bad.remark, bad.write_empty_ext_fields) == (
        ResponseCode.SYSTEM_ERROR,
        "crc32 not match",
        True,
    )
    assert proc.routes.topic_route("T") is None
    good = proc.process("conn", register_request(body, compressed=True, crc=good_crc))
    assert good is not None
    assert good.code == ResponseCode.SUCCESS
    assert proc.routes.topic_route("T") is not None


def test_undecodable_body_raises_protocol_error() -> None:
    proc, _ = processor()
    with pytest.raises(RemoteProtocolError):
        proc.process("conn", register_request(b"{not json"))
    with pytest.raises(RemoteProtocolError):
        proc.process("conn", register_request(b"junk", compressed=True))


def test_order_topic_conf_only_when_enabled() -> None:
    for enabled in (False, True):
        proc, _ = processor(order_message_enable=enabled)
        proc.kv_config.put(ORDER_TOPIC_CONFIG, "T", "broker-a:2")
        answer = proc.process(
            "conn", register_request(RegisterBrokerBody(topic_config_serialize_wrapper=wrapper("T")).encode())
        )
        assert answer is not None
        assert KVTable.decode(answer.body).table == {"T": "broker-a:2"}  # brokers always learn it
        route = proc.process(
            "client", RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"})
        )
        assert route is not None
        assert TopicRouteData.decode(route.body).order_topic_conf == ("broker-a:2" if enabled else None)


def test_unknown_code_is_left_to_the_transport() -> None:
    proc, _ = processor()
    assert proc.process("conn", RemotingCommand.request(9999)) is None
    assert 9999 not in proc.handlers
    assert RequestCode.REGISTER_BROKER in proc.handlers


def test_topics_by_cluster_and_unit_lists() -> None:
    proc, _ = processor()
    proc.process(
        "conn",
        register_request(RegisterBrokerBody(topic_config_serialize_wrapper=wrapper("T", "U")).encode()),
    )
    for code, ext, expected in (
        (RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": "DefaultCluster"}, b'{"topicList":["T","U"]}'),
        (RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": "Nope"}, b'{"topicList":[]}'),
        (RequestCode.GET_UNIT_TOPIC_LIST, None, b'{"topicList":[]}'),
        (RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST, None, b'{"topicList":[]}'),
        (RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST, None, b'{"topicList":[]}'),
        (
            RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS,
            None,
            # the order OpenJDK 17's HashSet iterates these two names in
            b'{"brokerAddr":"127.0.0.1:10911","topicList":["broker-a","DefaultCluster"]}',
        ),
    ):
        answer = proc.process("admin", RemotingCommand.request(code, ext))
        assert answer is not None
        assert (answer.code, answer.body) == (ResponseCode.SUCCESS, expected), code
