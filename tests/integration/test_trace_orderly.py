"""A traced orderly push consumer against the rocketq broker: its SubBefore/SubAfter records.

Java's orderly service runs the trace hook around every listener call, as the concurrent one does;
the SubAfter's success is SUCCESS or COMMIT, its context code SUCCESS for SUCCESS and FAILED for
SUSPEND_CURRENT_QUEUE_A_MOMENT. The test suspends one message once, so both answers are traced,
and the redelivery's SubBefore carries the message's retry count.
"""

from __future__ import annotations

import doctest
import threading

import pytest

from rocketq import (
    ClientConfig,
    ConsumeFromWhere,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    Message,
    MessageQueue,
    Producer,
    PushConsumer,
)
from rocketq.client.consumer import consume_orderly
from rocketq.client.trace import CLIENT_ID_PROPERTY
from rocketq.protocol.message import MessageExt
from rocketq.protocol.trace import (
    RMQ_SYS_TRACE_TOPIC,
    ConsumeReturnType,
    TraceContext,
    TraceType,
    decode_trace,
)
from tests.integration.clientkit import ClusterThread, wait_until
from tests.integration.test_trace import read_topic

pytestmark = pytest.mark.integration


def test_orderly_return_type_doctests() -> None:
    assert doctest.testmod(consume_orderly).failed == 0


def test_traced_orderly_consumer_writes_sub_before_and_after(cluster: ClusterThread) -> None:
    cluster.create_topic("TraceOrderT", 2)
    client = ClientConfig(namesrv=cluster.namesrv, client_ip="127.0.0.1")
    with Producer("trace_order_pg", client_config=client) as producer:
        results = [
            producer.send(
                Message("TraceOrderT", f"m-{i}".encode(), keys=f"order-{i}"),
                queue=MessageQueue("TraceOrderT", "broker-a", i % 2),
            )
            for i in range(10)
        ]
    by_id = {r.msg_id: i for i, r in enumerate(results)}
    suspended = results[3].msg_id  # consumed twice: suspended once, then accepted
    lock = threading.Lock()
    calls: list[tuple[str, ...]] = []

    def listen(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
        with lock:
            calls.append(tuple(m.msg_id for m in msgs))
            if any(m.msg_id == suspended for m in msgs) and calls.count(calls[-1]) == 1:
                ctx.suspend_current_queue_time = 0.05
                return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        return ConsumeOrderlyStatus.SUCCESS

    consumer = PushConsumer(
        "trace_order_group", client_config=client, trace=True,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )  # fmt: skip
    consumer.subscribe("TraceOrderT", "*")
    consumer.register_listener(listen, orderly=True)
    consumer.start()
    try:
        consumer_id = consumer.client_id

        def done() -> bool:
            with lock:
                return {i for call in calls for i in call} == set(by_id) and len(calls) == len(by_id) + 1

        assert wait_until(done, 20.0)
    finally:
        consumer.shutdown()  # publishes what the trace dispatcher holds

    traces = read_topic(cluster.namesrv, RMQ_SYS_TRACE_TOPIC)
    contexts: list[TraceContext] = []
    for m in traces:
        assert m.properties[CLIENT_ID_PROPERTY] == consumer_id
        contexts.extend(decode_trace(m.body))
    befores = [c for c in contexts if c.trace_type is TraceType.SUB_BEFORE]
    afters = [c for c in contexts if c.trace_type is TraceType.SUB_AFTER]
    assert all(c.group_name == "trace_order_group" for c in befores + afters)

    # one bean per message of a call (batch size 1 here): eleven calls, each before paired with its after
    assert sorted(c.beans[0].msg_id for c in befores) == sorted([*by_id, suspended])
    assert len(afters) == len(befores) == len(by_id) + 1
    before_of = {(c.request_id, c.beans[0].msg_id): c for c in befores}
    outcomes: dict[str, list[tuple[int, bool, ConsumeReturnType]]] = {}
    for after in afters:
        bean = after.beans[0]
        before = before_of.pop((after.request_id, bean.msg_id))
        assert after.timestamp >= before.timestamp
        assert bean.keys == f"order-{by_id[bean.msg_id]}" == before.beans[0].keys
        outcomes.setdefault(bean.msg_id, []).append(
            (before.beans[0].retry_times, after.success, ConsumeReturnType(after.context_code))
        )
    assert not before_of
    for msg_id, seen in outcomes.items():
        if msg_id == suspended:
            # the suspend is FAILED and unsuccessful; the redelivery counts one reconsume
            failed, success = ConsumeReturnType.FAILED, ConsumeReturnType.SUCCESS
            assert sorted(seen) == [(0, False, failed), (1, True, success)]
        else:
            assert seen == [(0, True, ConsumeReturnType.SUCCESS)]
