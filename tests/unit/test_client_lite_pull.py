"""The lite pull consumer's settings and the checks made before any I/O."""

from __future__ import annotations

import pytest

from rocketq import LitePullConsumer, LitePullConsumerConfig, MessageQueue
from rocketq.client.consumer.lite_pull import SubscriptionType
from rocketq.errors import ClientStateError, ConfigError


def test_defaults_are_rocketmq_494s() -> None:
    cfg = LitePullConsumerConfig()
    assert (cfg.pull_batch_size, cfg.auto_commit, cfg.auto_commit_interval) == (10, True, 5.0)
    assert (cfg.pull_threshold_for_all, cfg.pull_threshold_for_queue, cfg.pull_threshold_size_for_queue) == (
        10000,
        1000,
        100,
    )
    assert (cfg.consume_max_span, cfg.poll_timeout) == (2000, 5.0)
    assert (cfg.broker_suspend_max_time, cfg.consumer_timeout_when_suspend) == (20.0, 30.0)
    assert cfg.strategy().name == "AVG"


@pytest.mark.parametrize(
    "bad",
    [
        {"auto_commit_interval": 0.5},  # RocketMQ's minimum is 1000 ms
        {"pull_batch_size": 0},
        {"consumer_timeout_when_suspend": 10.0},  # must exceed the broker's hold (20 s)
        {"consume_timestamp": "2024"},
        {"allocate_strategy": "NOPE"},
    ],
)
def test_bad_settings_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        LitePullConsumerConfig(**bad)  # type: ignore[arg-type]


def test_options_and_modes_are_checked_before_start() -> None:
    with pytest.raises(ConfigError):
        LitePullConsumer("g", namesrv="127.0.0.1:1", no_such_option=1)
    c = LitePullConsumer("g", namesrv="127.0.0.1:1", pull_batch_size=32)
    assert c.config.pull_batch_size == 32
    c.assign([MessageQueue("T", "b", 0)])
    with pytest.raises(ClientStateError):
        c.subscribe("T")
    with pytest.raises(ConfigError):
        c.assign([])
    with pytest.raises(ClientStateError):
        c.poll(0.0)  # not started
    s = LitePullConsumer("g2", namesrv="127.0.0.1:1")
    s.subscribe("T", "a || b")
    with pytest.raises(ClientStateError):
        s.assign([MessageQueue("T", "b", 0)])
    assert SubscriptionType.ASSIGN.value == "ASSIGN"
