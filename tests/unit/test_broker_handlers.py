"""Unit tests of the broker's handler helpers, its config and the schedule service (no network)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketq.broker.config import BrokerConfig, parse_delay_levels, parse_namesrv_addrs
from rocketq.broker.handlers import java_properties_string, tag_codes_of_expression
from rocketq.broker.schedule import (
    DELAY_OFFSET_FILE,
    ScheduleService,
    load_delay_offsets,
    schedule_tags_code_function,
)
from rocketq.broker.server import BrokerStats
from rocketq.errors import ConfigError
from rocketq.protocol import decode_frame, decode_messages
from rocketq.protocol.message import encode_message
from rocketq.protocol.properties import java_string_hash, string_to_properties
from rocketq.store import MessageStore
from tests.wirecaps import frame_bytes, load


def test_stored_properties_match_the_java_broker() -> None:
    """A single send's stored properties: the request's, plus CLUSTER, minus WAIT=true, in the
    order a Java HashMap iterates them - compared with what the 4.9.4 broker stored."""
    sends = {}
    for line in load("produce.jsonl"):
        if line["from"] == "client" and "SEND_MESSAGE_V2" in line["note"]:
            cmd = decode_frame(frame_bytes(line))
            props = string_to_properties(cmd.ext_fields["i"])
            sends[props["UNIQ_KEY"]] = props
    checked = 0
    for line in load("push-consume.jsonl"):
        if line["from"] == "broker" and line["body_len"] and "FOUND" in line["note"]:
            for msg in decode_messages(decode_frame(frame_bytes(line)).body):
                props = sends.get(msg.properties.get("UNIQ_KEY", ""))
                if props is None or "DELAY" in props:
                    continue
                mine = dict(props)
                entries = len(mine) + 1
                mine["CLUSTER"] = "DefaultCluster"
                mine.pop("WAIT", None)
                assert java_properties_string(mine, entries) == msg.stored_properties
                checked += 1
    assert checked >= 5


def test_tag_expressions() -> None:
    assert tag_codes_of_expression("*") is None
    assert tag_codes_of_expression("") is None
    assert tag_codes_of_expression(None) is None
    assert tag_codes_of_expression(" TagA ||TagB|| ") == frozenset(
        {java_string_hash("TagA"), java_string_hash("TagB")}
    )


def test_delay_levels_and_config_validation() -> None:
    assert parse_delay_levels("1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h")[-1] == 7200.0
    assert len(BrokerConfig().delay_levels()) == 18
    assert parse_delay_levels("100ms 1d") == (0.1, 86400.0)
    with pytest.raises(ConfigError):
        parse_delay_levels("1x")
    with pytest.raises(ConfigError):
        BrokerConfig(message_delay_level="")
    with pytest.raises(ConfigError):
        BrokerConfig(port=70000)
    with pytest.raises(ConfigError):
        BrokerConfig(broker_id=1)
    assert parse_namesrv_addrs("a:1; b:2") == ("a:1", "b:2")
    with pytest.raises(ConfigError):
        parse_namesrv_addrs("nohost")
    assert BrokerConfig(host="0.0.0.0").advertised_ip == "127.0.0.1"
    assert BrokerConfig().store_config().max_message_size == 4 * 1024 * 1024
    assert BrokerConfig(flush="sync").store_config().flush == "sync"


def test_schedule_tag_code_is_the_due_time() -> None:
    code = schedule_tags_code_function((1.0, 5.0))
    assert code("SCHEDULE_TOPIC_XXXX", {"DELAY": "2"}, 1000) == 6000
    assert code("SCHEDULE_TOPIC_XXXX", {"DELAY": "9"}, 1000) == 6000  # clamped to the last level
    assert code("T", {"TAGS": "TagA"}, 1000) == java_string_hash("TagA")


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _scheduled(store: MessageStore, level: int, body: bytes) -> None:
    props = {"DELAY": str(level), "REAL_TOPIC": "Real", "REAL_QID": "1", "TAGS": "TagD"}
    record = encode_message(topic="SCHEDULE_TOPIC_XXXX", body=body, properties=props, queue_id=level - 1)
    store.put_message("SCHEDULE_TOPIC_XXXX", level - 1, record, 0)


def test_schedule_service_delivers_when_due_and_resumes_after_restart(tmp_path: Path) -> None:
    clock = Clock(1_000_000.0)
    levels = (1.0, 10.0)
    with MessageStore(tmp_path, clock=clock, start_services=False) as store:
        service = ScheduleService(store, levels, clock=clock)
        _scheduled(store, 1, b"a")
        _scheduled(store, 2, b"b")
        assert service.deliver_due() == pytest.approx(1.0)
        assert store.max_offset("Real", 1) == 0
        clock.now += 1.0
        assert service.deliver_due() == pytest.approx(9.0)
        result = store.get_messages("Real", 1, 0, 32)
        (msg,) = decode_messages(result.data)
        assert msg.body == b"a"
        assert msg.properties["REAL_TOPIC"] == "Real"
        assert service.offsets == {1: 1}
        service.persist()
    assert load_delay_offsets(tmp_path / "config" / DELAY_OFFSET_FILE) == {1: 1}
    assert (tmp_path / "config" / DELAY_OFFSET_FILE).read_bytes() == b'{"offsetTable":{1:1}}'
    clock.now += 20.0
    with MessageStore(tmp_path, clock=clock, start_services=False) as store:
        service = ScheduleService(store, levels, clock=clock)
        assert service.deliver_due() is None  # "a" is not delivered twice, "b" now is
        bodies = [m.body for m in decode_messages(store.get_messages("Real", 1, 0, 32).data)]
        assert bodies == [b"a", b"b"]
        assert service.delivered == 1


def test_schedule_backlog_is_delivered_in_bounded_rounds(tmp_path: Path) -> None:
    clock = Clock(2_000_000.0)
    with MessageStore(tmp_path, clock=clock, start_services=False) as store:
        service = ScheduleService(store, (1.0,), clock=clock)
        for i in range(5):
            _scheduled(store, 1, b"m%d" % i)
        clock.now += 5.0
        assert service.deliver_due(budget=2) == 0.0  # more is due: run again at once
        assert store.max_offset("Real", 1) == 2
        assert service.deliver_due(budget=2) == 0.0
        assert service.deliver_due(budget=2) is None
        bodies = [m.body for m in decode_messages(store.get_messages("Real", 1, 0, 32).data)]
        assert bodies == [b"m%d" % i for i in range(5)]


def test_broker_stats_rates_over_a_window() -> None:
    stats = BrokerStats(1000.0)
    stats.on_put("T", 50, 5000, 1_000_000)
    stats.on_get("G", 30, 3000)
    stats.on_get("H", 10, 1000)
    assert stats.put_tps(1005.0) == pytest.approx(10.0)
    assert stats.group_tps("G", 1005.0) == pytest.approx(6.0)
    assert stats.group_tps("nobody", 1005.0) == 0.0
    assert stats.get_tps(1010.0) == pytest.approx(4.0)  # the window rolls here
    stats.on_get("G", 20, 2000)
    assert stats.group_tps("G", 1015.0) == pytest.approx(4.0)
    assert stats.get_total == 60
    assert stats.last_put_ms == 1_000_000


class _StoreOnly:
    """An :class:`~rocketq.broker.context.OffsetContext` that is not a broker: a store, nothing else."""

    def __init__(self, store: MessageStore) -> None:
        self.store = store


def test_a_processor_runs_over_its_narrow_context_alone(tmp_path: Path) -> None:
    """Handlers see what their context lists, not the broker: the offset requests need a store."""
    from rocketq.broker.handlers import OffsetProcessor
    from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode
    from rocketq.protocol.headers import (
        GetMaxOffsetRequestHeader,
        QueryConsumerOffsetRequestHeader,
        UpdateConsumerOffsetRequestHeader,
    )

    with MessageStore(tmp_path, start_services=False) as store:
        for body in (b"a", b"b"):
            store.put_message("T", 0, encode_message(topic="T", body=body, born_timestamp=1))
        processor = OffsetProcessor(_StoreOnly(store))
        conn: object = None  # the offset handlers do not look at the connection

        handlers = {
            RequestCode.GET_MAX_OFFSET: processor.max_offset,
            RequestCode.QUERY_CONSUMER_OFFSET: processor.query_consumer_offset,
            RequestCode.UPDATE_CONSUMER_OFFSET: processor.update_consumer_offset,
        }

        def call(code: int, fields: dict[str, str]) -> RemotingCommand:
            handler = handlers[code]
            response = handler(conn, RemotingCommand.request(code, fields))  # type: ignore[operator]
            assert isinstance(response, RemotingCommand)
            return response

        max_offset = call(
            RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader(topic="T", queue_id=0).to_ext_fields()
        )
        assert max_offset.ext_fields["offset"] == "2"
        query = QueryConsumerOffsetRequestHeader(consumer_group="G", topic="T", queue_id=0).to_ext_fields()
        assert call(RequestCode.QUERY_CONSUMER_OFFSET, query).ext_fields == {"offset": "0"}  # never committed
        commit = UpdateConsumerOffsetRequestHeader(consumer_group="G", topic="T", queue_id=0, commit_offset=1)
        assert call(RequestCode.UPDATE_CONSUMER_OFFSET, commit.to_ext_fields()).code == ResponseCode.SUCCESS
        assert call(RequestCode.QUERY_CONSUMER_OFFSET, query).ext_fields == {"offset": "1"}
