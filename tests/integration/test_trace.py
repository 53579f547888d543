"""Traced clients against the rocketq broker: what lands on the trace and rebalance topics.

A producer and a push consumer created with ``trace=True`` publish to ``RMQ_SYS_TRACE_TOPIC`` (the
broker auto-creates it from TBW102, as for a Java client) and ``RQ_SYS_REBALANCE_TOPIC``; the test
reads both back with plain pulls and checks the records field by field against what happened.
"""

from __future__ import annotations

import json

import pytest

from rocketq import ClientConfig, ConsumeConcurrentlyStatus, ConsumeFromWhere, Message, Producer, PushConsumer
from rocketq.client.blocking import BlockingClient
from rocketq.client.trace import CLIENT_ID_PROPERTY, REBALANCE_TOPIC
from rocketq.models import PullStatus
from rocketq.protocol import calls
from rocketq.protocol.message import MessageExt, decode_messages
from rocketq.protocol.properties import MessageConst
from rocketq.protocol.trace import (
    CONTENT_SPLITOR,
    FIELD_SPLITOR,
    RMQ_SYS_TRACE_TOPIC,
    TraceType,
    decode_trace,
)
from tests.integration.clientkit import ClusterThread, Received, wait_until

pytestmark = pytest.mark.integration


def read_topic(namesrv: str, topic: str) -> list[MessageExt]:
    """Every message of ``topic``, queue by queue, with plain pulls."""
    out: list[MessageExt] = []
    with BlockingClient(namesrv) as io:
        for q in io.read_queues(topic):
            end = io.call(q.addr, calls.get_max_offset(q.queue))
            start = io.call(q.addr, calls.get_min_offset(q.queue))
            for result in io.pull_range(q, start, end, group="trace-reader"):
                if result.status is PullStatus.FOUND:
                    out.extend(m for m in decode_messages(result.body) if m.queue_offset < end)
    return out


def test_traced_producer_and_consumer_publish_java_trace_records_and_rebalances(
    cluster: ClusterThread,
) -> None:
    cluster.create_topic("TraceT", 4)
    client = ClientConfig(namesrv=cluster.namesrv, client_ip="127.0.0.1")
    received = Received()
    consumer = PushConsumer(
        "trace_group", client_config=client, trace=True,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )  # fmt: skip
    consumer.subscribe("TraceT", "*")

    def listen(msgs: list[MessageExt]) -> ConsumeConcurrentlyStatus:
        received.add(consumer.client_id, msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer.register_listener(listen)
    producer = Producer("trace_pg", client_config=client, trace=True).start()
    try:
        results = [
            producer.send(Message("TraceT", f"m-{i}".encode(), tags="TagA", keys=f"order-{i}"))
            for i in range(20)
        ]
        consumer.start()
        consumer_id = consumer.client_id
        assert wait_until(lambda: received.distinct() == 20, 20.0)
    finally:
        producer.shutdown()
        consumer.shutdown()
    producer_id = results and producer.client_id

    def all_traces() -> list[MessageExt]:
        return read_topic(cluster.namesrv, RMQ_SYS_TRACE_TOPIC)

    traces = all_traces()
    contexts = [(m, c) for m in traces for c in decode_trace(m.body)]
    by_id = {r.msg_id: r for r in results}

    # Pub: one per send, every field as the send reported it
    pubs = {c.beans[0].msg_id: (m, c) for m, c in contexts if c.trace_type is TraceType.PUB}
    assert set(pubs) == set(by_id)
    for msg_id, (m, c) in pubs.items():
        bean, result = c.beans[0], by_id[msg_id]
        assert (c.group_name, c.region_id, c.success) == ("trace_pg", "DefaultRegion", True)
        assert (bean.topic, bean.tags, bean.store_host) == ("TraceT", "TagA", cluster.broker_addr)
        assert bean.offset_msg_id == result.offset_msg_id
        assert bean.keys.startswith("order-")
        assert bean.body_length == len(f"m-{bean.keys.removeprefix('order-')}")
        assert m.properties[CLIENT_ID_PROPERTY] == producer_id
        assert msg_id in m.properties[MessageConst.KEYS].split(" ")

    # SubBefore / SubAfter: each consumed message, paired by request id
    befores = [c for _, c in contexts if c.trace_type is TraceType.SUB_BEFORE]
    afters = [c for _, c in contexts if c.trace_type is TraceType.SUB_AFTER]
    assert {c.beans[0].msg_id for c in befores} == set(by_id)
    assert {c.beans[0].msg_id for c in afters} == set(by_id)
    pair = {(c.request_id, c.beans[0].msg_id): c for c in befores}
    for after in afters:
        before = pair[(after.request_id, after.beans[0].msg_id)]
        assert after.group_name == before.group_name == "trace_group"
        assert after.success
        assert after.context_code == 0
        assert after.timestamp >= before.timestamp
        assert before.region_id == "null"  # a stored message has no MSG_REGION: Java writes null
        assert before.beans[0].retry_times == 0
    for m, c in contexts:
        if c.trace_type is not TraceType.PUB:
            assert m.properties[CLIENT_ID_PROPERTY] == consumer_id
    # the raw text has Java's field counts: Pub 14, SubBefore 8, SubAfter 9
    counts = {
        line.split(CONTENT_SPLITOR)[0]: len(line.split(CONTENT_SPLITOR))
        for m in traces
        for line in m.body.decode().split(FIELD_SPLITOR)
        if line
    }
    assert counts == {"Pub": 14, "SubBefore": 8, "SubAfter": 9}

    # the rebalance log: the START record owning the four queues, the SHUTDOWN record releasing them
    docs = [json.loads(m.body) for m in read_topic(cluster.namesrv, REBALANCE_TOPIC)]
    mine = sorted((d for d in docs if d["topic"] == "TraceT"), key=lambda d: d["seq"])  # 4 queues: any order
    assert next(d["trigger"] for d in mine) == "start"
    assert mine[-1]["trigger"] == "shutdown"
    assert {q["queue_id"] for q in mine[0]["owned"]} == {0, 1, 2, 3}
    assert {q["queue_id"] for q in mine[-1]["removed"]} == {0, 1, 2, 3}
    assert all(d["group"] == "trace_group" and d["client_id"] == consumer_id and d["v"] == 1 for d in docs)
    assert {d["topic"] for d in docs} == {"TraceT", "%RETRY%trace_group"}
