"""How the push consumer's pull loop answers a broker's refusals, against the embedded broker."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import pytest

from rocketq import ClientConfig, ConsumeConcurrentlyStatus, ConsumeFromWhere, PushConsumer
from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.rebalance.impl import PullRequest
from rocketq.protocol.calls import Call
from rocketq.protocol.codes import RequestCode
from tests.integration.clientkit import ClusterThread, wait_until

pytestmark = pytest.mark.integration


def test_subscription_not_latest_is_retried_soon_not_after_three_seconds(
    cluster: ClusterThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rebalance bumps the subscription version and heartbeats it; a pull that overtakes the
    heartbeat is refused with SUBSCRIPTION_NOT_LATEST (25). The broker will know the version a
    moment later, so the queue is pulled again after 0.1 s, not Java's 3 s exception delay."""
    cluster.create_topic("TopicSubLatest", 1)
    consumer = PushConsumer(
        "sub_latest",
        client_config=ClientConfig(namesrv=cluster.namesrv, client_ip="127.0.0.1", instance_name="s1"),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )
    consumer.subscribe("TopicSubLatest")
    consumer.register_listener(lambda msgs: ConsumeConcurrentlyStatus.CONSUME_SUCCESS)
    consumer.start()
    try:
        # the topic's first rebalance bumps its version and heartbeats it: let that finish
        assert wait_until(lambda: any(r.owned for r in consumer.rebalance_records("TopicSubLatest")), 10.0)
        core = consumer.core
        api = core.instance.api
        assert api is not None

        real_call = api.call

        async def call_without_heartbeats(addr: str, call: Call[Any], timeout: float | None = None) -> Any:
            if call.request.code == RequestCode.HEART_BEAT:
                return 0
            return await real_call(addr, call, timeout)

        # from here no heartbeat (the periodic one, the retry topic's rebalance) may announce the
        # version set below: the pull must reach the broker before the broker hears of it
        monkeypatch.setattr(api, "call", call_without_heartbeats)
        # (the retry topic's queue is assigned too, once its route appears: not that one)
        mq = next(q for q in consumer.assigned_queues() if q.topic == "TopicSubLatest")
        # a newer version than the broker has heard of: what a pull sent before the heartbeat carries
        sub = core.rebalance.subscriptions["TopicSubLatest"]
        core.rebalance.subscriptions["TopicSubLatest"] = dataclasses.replace(
            sub, sub_version=sub.sub_version + 60_000
        )
        request = PullRequest(group="sub_latest", mq=mq, pq=ProcessQueue(now=time.time()), next_offset=0)
        wait = core.instance.loop_thread.call(core.pull_once(request), timeout=10.0)
        assert wait == core.config.pull_time_delay_when_subscription_not_latest
        assert wait < core.config.pull_time_delay_when_exception
        monkeypatch.undo()
    finally:
        consumer.shutdown()
