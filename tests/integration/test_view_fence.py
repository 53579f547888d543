"""The view fence and per-broker views, against the embedded broker: what the broker answers a pull
carrying a consumer's view stamp (``rqEpoch``) and a member-list query naming a topic (``rqTopic``), and
what rocketq's push consumer does with a refusal."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from rocketq import ClientConfig, ConsumeConcurrentlyStatus, ConsumeFromWhere, PushConsumer
from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.rebalance.impl import PullRequest
from rocketq.models import MessageQueue, PullStatus
from rocketq.protocol import calls
from rocketq.protocol.headers import PullMessageRequestHeader
from tests.integration.clientkit import ClusterThread, wait_until

pytestmark = pytest.mark.integration

TOPIC = "TopicViewFence"
GROUP = "view_fence_group"


@pytest.fixture
def consumer(cluster: ClusterThread) -> Iterator[PushConsumer]:
    cluster.create_topic(TOPIC, 4)
    c = PushConsumer(
        GROUP,
        client_config=ClientConfig(namesrv=cluster.namesrv, client_ip="127.0.0.1", instance_name="vf1"),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )
    c.subscribe(TOPIC)
    c.register_listener(lambda msgs: ConsumeConcurrentlyStatus.CONSUME_SUCCESS)
    c.start()
    try:
        assert wait_until(lambda: len(c.assigned_queues(TOPIC)) == 4, 10.0)
        yield c
    finally:
        c.shutdown()


def _call(consumer: PushConsumer, call: calls.Call[Any]) -> Any:
    core = consumer.core
    api = core.instance.api
    assert api is not None
    mq = MessageQueue(TOPIC, consumer.assigned_queues(TOPIC)[0].broker_name, 0)

    async def run() -> Any:
        addr = await core.instance.locate_pull_address(mq)
        return await api.call(addr, call, 5.0)

    return core.instance.loop_thread.call(run(), timeout=10.0)


def _pull(mq: MessageQueue, offset: int = 0) -> PullMessageRequestHeader:
    return PullMessageRequestHeader(
        consumer_group=GROUP, topic=mq.topic, queue_id=mq.queue_id, queue_offset=offset,
        max_msg_nums=32, sys_flag=0, commit_offset=0, suspend_timeout_millis=0, sub_version=0,
    )  # fmt: skip


def test_the_broker_answers_its_members_and_queue_count_to_a_query_naming_the_topic(
    consumer: PushConsumer,
) -> None:
    ids, queue_nums, stamp = _call(consumer, calls.get_consumer_view(GROUP, TOPIC))
    assert (ids, queue_nums) == ([consumer.client_id], 4)
    assert stamp is not None
    assert calls.parse_view_stamp(stamp)[1] == 4
    # the plain query (RocketMQ's clients) gets the list alone, as from RocketMQ's broker
    assert _call(consumer, calls.get_consumer_list_by_group(GROUP)) == [consumer.client_id]


def test_a_pull_with_a_stale_view_is_refused_and_one_with_the_current_view_is_served(
    consumer: PushConsumer,
) -> None:
    mq = consumer.assigned_queues(TOPIC)[0]
    current = consumer.core.rebalance.views[(TOPIC, mq.broker_name)]
    assert current == _call(consumer, calls.get_consumer_view(GROUP, TOPIC))[2]
    epoch, _ = calls.parse_view_stamp(current)
    stale = calls.view_stamp(epoch - 1, 4)
    refused = _call(consumer, calls.pull_message(_pull(mq, 7), view=stale))
    assert refused.status is PullStatus.VIEW_CHANGED
    assert (refused.next_begin_offset, refused.view_queue_nums, refused.body) == (7, 4, b"")
    served = _call(consumer, calls.pull_message(_pull(mq), view=current))
    assert served.status is not PullStatus.VIEW_CHANGED
    unfenced = _call(consumer, calls.pull_message(_pull(mq)))  # no view: RocketMQ's pull
    assert unfenced.status is served.status


def test_a_consumer_refused_for_its_view_rebalances_before_it_pulls_again(consumer: PushConsumer) -> None:
    core = consumer.core
    mq = consumer.assigned_queues(TOPIC)[0]
    key = (TOPIC, mq.broker_name)
    good = core.rebalance.views[key]
    seen = len(consumer.rebalance_records(TOPIC))
    request = PullRequest(group=GROUP, mq=mq, pq=ProcessQueue(now=time.time()), next_offset=0)

    async def pull_on_a_stale_view() -> float | None:
        # on the loop, right before the pull: a rebalance under way cannot put the good view back
        # first (the pull would then be held for new messages, not refused)
        core.rebalance.views[key] = calls.view_stamp(calls.parse_view_stamp(good)[0] - 1, 4)  # gone stale
        return await core.pull_once(request)

    wait = core.instance.loop_thread.call(pull_on_a_stale_view(), timeout=10.0)
    assert wait == 0.0  # pull again at once: a rebalance has run meanwhile ...
    # ... the one the refusal asked for, or one already under way (then the next pull is refused
    # again and asks again): either way the consumer's view is the broker's again soon
    assert wait_until(lambda: core.rebalance.views[key] == good, 10.0)
    # a rebalance ran in between (the one the refusal asked for, or one already under way)
    assert len(consumer.rebalance_records(TOPIC)) > seen


def test_a_rebalance_shares_the_queues_the_broker_has_over_a_stale_route(
    cluster: ClusterThread, consumer: PushConsumer
) -> None:
    core = consumer.core
    broker = consumer.assigned_queues(TOPIC)[0].broker_name
    stale = frozenset(MessageQueue(TOPIC, broker, i) for i in range(2))

    async def make_stale() -> bool:
        return core.rebalance.set_topic_queues(TOPIC, stale)

    assert core.instance.loop_thread.call(make_stale(), timeout=5.0)
    [record] = [r for r in consumer.rebalance() if r.topic == TOPIC]
    assert len(record.all_queues) == 4  # the broker said 4: believed over the 2 of the stale route
    assert len(consumer.assigned_queues(TOPIC)) == 4


def test_a_commit_on_a_stale_view_may_move_the_offset_forward_not_back(
    cluster: ClusterThread, consumer: PushConsumer
) -> None:
    idle = "view_fence_idle"  # a group nobody consumes with: no periodic commit gets in the way
    mq = MessageQueue(TOPIC, consumer.assigned_queues(TOPIC)[0].broker_name, 1)
    broker = cluster.cluster.broker
    assert broker is not None
    epoch = broker.consumers.epoch(idle)  # the broker lists no member of it
    current = calls.view_stamp(epoch, 4)
    stale = calls.view_stamp(epoch - 1, 4)

    def commit(offset: int, view: str | None) -> int:
        _call(consumer, calls.update_consumer_offset(idle, mq, offset, view=view))
        stored: int = _call(consumer, calls.query_consumer_offset(idle, mq))
        return stored

    assert commit(50, current) == 50
    assert commit(20, stale) == 50  # an old owner's late commit: would throw progress away
    assert commit(60, stale) == 60  # forward is fine, whoever says it
    assert commit(30, current) == 30  # the current view may move it back (a reset)
    assert commit(10, None) == 10  # and so may a commit without a view: RocketMQ's rules
