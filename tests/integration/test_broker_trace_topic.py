"""The broker's trace topic: created at start with ``trace_topic_enable`` (``traceTopicEnable``),
auto-created through TBW102 by the first traced send without it, as with a default Java broker."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketq import ClientConfig, Message, Producer
from rocketq.admin import Admin
from rocketq.broker import BrokerConfig
from rocketq.client.config import ProducerConfig
from rocketq.errors import ConfigError, UnknownTopicError
from rocketq.protocol.trace import RMQ_SYS_TRACE_TOPIC, TraceType, decode_trace
from tests.integration.clientkit import ClusterThread
from tests.integration.test_trace import read_topic

pytestmark = pytest.mark.integration


def test_blank_trace_topic_name_is_refused() -> None:
    with pytest.raises(ConfigError, match="msg_trace_topic_name"):
        BrokerConfig(msg_trace_topic_name=" ")
    assert not BrokerConfig().trace_topic_enable  # RocketMQ's default
    assert BrokerConfig().msg_trace_topic_name == RMQ_SYS_TRACE_TOPIC


@pytest.fixture
def enabled(tmp_path: Path) -> Iterator[ClusterThread]:
    c = ClusterThread(tmp_path / "cluster", trace_topic_enable=True, msg_trace_topic_name="MyTraceT")
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def default(tmp_path: Path) -> Iterator[ClusterThread]:
    c = ClusterThread(tmp_path / "cluster")
    try:
        yield c
    finally:
        c.close()


def traced_send(cluster: ClusterThread, trace_topic: str | None) -> str:
    client = ClientConfig(namesrv=cluster.namesrv, client_ip="127.0.0.1")
    config = ProducerConfig(trace=True, trace_topic=trace_topic)
    with Producer("trace_topic_pg", client_config=client, config=config) as producer:
        return producer.send(Message("TracedT", b"x")).msg_id  # shutdown publishes the Pub record


def pub_ids(cluster: ClusterThread, topic: str) -> list[str]:
    contexts = [c for m in read_topic(cluster.namesrv, topic) for c in decode_trace(m.body)]
    return [c.beans[0].msg_id for c in contexts if c.trace_type is TraceType.PUB]


def test_trace_topic_enable_creates_the_named_topic_with_one_queue(enabled: ClusterThread) -> None:
    with Admin(enabled.namesrv) as admin:
        (queues,) = admin.topic_route("MyTraceT").queue_datas
        assert (queues.read_queue_nums, queues.write_queue_nums) == (1, 1)
        with pytest.raises(UnknownTopicError):
            admin.topic_route(RMQ_SYS_TRACE_TOPIC)  # only the configured name is made
    msg_id = traced_send(enabled, "MyTraceT")
    assert pub_ids(enabled, "MyTraceT") == [msg_id]


def test_without_it_the_first_traced_send_creates_the_topic_from_tbw102(default: ClusterThread) -> None:
    with Admin(default.namesrv) as admin:
        with pytest.raises(UnknownTopicError):
            admin.topic_route(RMQ_SYS_TRACE_TOPIC)
        msg_id = traced_send(default, None)
        (queues,) = admin.topic_route(RMQ_SYS_TRACE_TOPIC).queue_datas
        assert queues.write_queue_nums == 4  # the client's defaultTopicQueueNums, capped by TBW102's 8
    assert pub_ids(default, RMQ_SYS_TRACE_TOPIC) == [msg_id]
