"""Producer → broker → push consumer through the embedded rocketq cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketq import (
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    Message,
    MessageModel,
    Producer,
    PushConsumer,
    RebalanceTrigger,
    SendStatus,
)
from tests.integration.clientkit import ClusterThread, Received, wait_until

pytestmark = pytest.mark.integration

OK = ConsumeConcurrentlyStatus.CONSUME_SUCCESS


def test_produce_then_consume_every_message_with_its_fields(cluster: ClusterThread) -> None:
    cluster.create_topic("TopicPC", 4)
    with Producer("pc_producer", client_config=cluster.client_config()) as producer:
        results = [
            producer.send(
                Message("TopicPC", f"body-{i}", tags="TagA", keys=[f"k{i}"], properties={"n": str(i)})
            )
            for i in range(40)
        ]
    assert all(r.status is SendStatus.SEND_OK for r in results)
    assert len({r.msg_id for r in results}) == 40
    assert {r.message_queue.queue_id for r in results} == {0, 1, 2, 3}  # round robin over the queues

    got = Received()
    consumer = PushConsumer(
        "pc_group",
        client_config=cluster.client_config("c1"),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )
    consumer.subscribe("TopicPC", "TagA || TagB")
    consumer.register_listener(lambda msgs, ctx: (got.add("c1", msgs), OK)[1])
    with consumer:
        assert wait_until(lambda: got.distinct() == 40)
        first = consumer.rebalance_records("TopicPC")[0]
        assert first.trigger is RebalanceTrigger.START
        assert [q.queue_id for q in first.owned] == [0, 1, 2, 3]
        assert wait_until(lambda: sum(consumer.committed_offsets().values()) == 40)
    by_body = {m.body: m for m in got.messages}
    m7 = by_body[b"body-7"]
    assert (m7.tags, m7.keys, m7.properties["n"]) == ("TagA", "k7", "7")
    assert m7.msg_id == results[7].msg_id
    assert m7.queue_offset == results[7].queue_offset


def test_offsets_survive_a_restart_of_the_group(cluster: ClusterThread) -> None:
    cluster.create_topic("TopicRestart", 2)
    got = Received()
    with Producer("restart_producer", client_config=cluster.client_config()) as producer:
        for i in range(10):
            producer.send(Message("TopicRestart", f"a{i}"))
        for round_no in range(2):
            consumer = PushConsumer(
                "restart_group",
                client_config=cluster.client_config(f"r{round_no}"),
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            )
            consumer.subscribe("TopicRestart")
            consumer.register_listener(lambda msgs: (got.add("c", msgs), OK)[1])
            want = 10 * (round_no + 1)
            with consumer:
                assert wait_until(lambda want=want: got.distinct() == want)
            for i in range(10):
                producer.send(Message("TopicRestart", f"b{round_no}-{i}"))
    # the second consumer started from the committed offsets: nothing consumed twice
    assert got.duplicates() == 0
    assert got.distinct() == 20


def test_broadcasting_consumers_each_get_every_message(cluster: ClusterThread, tmp_path: Path) -> None:
    cluster.create_topic("TopicBC", 2)
    got = Received()
    consumers = []
    for name in ("b1", "b2"):
        c = PushConsumer(
            "bc_group",
            client_config=cluster.client_config(name),
            message_model=MessageModel.BROADCASTING,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            offset_store_dir=str(tmp_path / "offsets"),
        )
        c.subscribe("TopicBC")
        c.register_listener(lambda msgs, _ctx, name=name: (got.add(name, msgs), OK)[1])
        c.start()
        consumers.append(c)
    try:
        for c in consumers:
            assert len(c.assigned_queues("TopicBC")) == 2
        with Producer("bc_producer", client_config=cluster.client_config()) as producer:
            for i in range(10):
                producer.send(Message("TopicBC", f"x{i}"))
        assert wait_until(lambda: all(len(got.by_client.get(n, [])) == 10 for n in ("b1", "b2")))
    finally:
        for c in consumers:
            c.shutdown()
    files = list((tmp_path / "offsets").rglob("offsets.json"))
    assert len(files) == 2
    assert b'"offsetTable"' in files[0].read_bytes()


def test_an_illegal_offset_is_corrected_persisted_and_the_queue_restarted(cluster: ClusterThread) -> None:
    from rocketq.models import MessageQueue
    from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode
    from rocketq.protocol.headers import UpdateConsumerOffsetRequestHeader
    from rocketq.remoting import RemotingClient

    cluster.create_topic("TopicIllegal", 1)
    with Producer("illegal_producer", client_config=cluster.client_config()) as producer:
        for i in range(3):
            producer.send(Message("TopicIllegal", f"old{i}"))

    async def commit_far_ahead() -> None:
        async with RemotingClient() as admin:
            header = UpdateConsumerOffsetRequestHeader(
                consumer_group="illegal_group", topic="TopicIllegal", queue_id=0, commit_offset=1000
            )
            request = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, header.to_ext_fields())
            response = await admin.invoke(cluster.broker_addr, request, 5.0)
            assert response.code == ResponseCode.SUCCESS

    cluster.thread.call(commit_far_ahead(), timeout=10)
    got = Received()
    consumer = PushConsumer("illegal_group", client_config=cluster.client_config("i1"))
    consumer.subscribe("TopicIllegal")
    consumer.register_listener(lambda msgs: (got.add("i1", msgs), OK)[1])
    mq = MessageQueue("TopicIllegal", "broker-a", 0)
    with consumer:
        # the broker answers PULL_OFFSET_MOVED with its max offset: the consumer stores 3 and restarts
        assert wait_until(lambda: consumer.committed_offsets().get(mq) == 3, 10.0), (
            consumer.committed_offsets()
        )
        assert wait_until(lambda: mq in consumer.assigned_queues(), 5.0)
        with Producer("illegal_producer2", client_config=cluster.client_config()) as producer:
            producer.send(Message("TopicIllegal", b"new"))
        assert wait_until(lambda: got.distinct() == 1, 10.0)
    assert list(got.bodies) == [b"new"]
    triggers = {r.trigger for r in consumer.rebalance_records("TopicIllegal") if r.changed}
    assert RebalanceTrigger.CORRECTION in triggers
