"""The clean handoff's pure parts, driven by an injected clock: the handoff steps and its config
(the leases it shares with orderly consumption: test_client_leases.py)."""

from __future__ import annotations

import pytest

from rocketq.client.config import PushConsumerConfig
from rocketq.client.consumer.clean_handoff import HandoffStep, QueueHandoff
from rocketq.errors import ConfigError
from rocketq.models import MessageQueue

Q = [MessageQueue("T", "broker-a", i) for i in range(4)]


def test_handoff_drains_then_commits_then_releases() -> None:
    h = QueueHandoff(Q[1], started=10.0, max_wait=3.0)
    assert h.poll(cached=5, now=10.0) is HandoffStep.DRAIN
    assert h.poll(cached=1, now=11.0) is HandoffStep.DRAIN
    assert h.poll(cached=0, now=11.2) is HandoffStep.COMMIT
    assert h.abandoned == 0
    assert h.drained_at == 11.2
    with pytest.raises(RuntimeError):
        h.released(now=11.3)  # never release before the commit was answered
    h.committed(120, ok=True, now=11.25)
    h.released(now=11.3)
    assert h.step is HandoffStep.DONE
    assert "offset 120 committed=ok" in h.summary()
    assert "drain 1200.0 ms" in h.summary()


def test_handoff_abandons_what_is_left_when_the_wait_runs_out() -> None:
    h = QueueHandoff(Q[1], started=10.0, max_wait=3.0)
    assert h.poll(cached=4, now=12.9) is HandoffStep.DRAIN
    assert h.poll(cached=3, now=13.0) is HandoffStep.COMMIT
    assert h.abandoned == 3
    h.committed(7, ok=False, now=13.1)  # a failed commit still releases: the consumer is leaving
    assert h.step is HandoffStep.RELEASE
    h.released(now=13.2)
    assert "FAILED" in h.summary()
    assert "abandoned 3" in h.summary()


def test_a_shutdown_handoff_does_not_wait() -> None:
    h = QueueHandoff(Q[0], started=5.0, max_wait=0.0)
    assert h.poll(cached=2, now=5.0) is HandoffStep.COMMIT
    assert h.abandoned == 2


def test_handoff_config_is_checked() -> None:
    assert PushConsumerConfig(handoff="clean").handoff == "clean"
    with pytest.raises(ConfigError):
        PushConsumerConfig(handoff="fast")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        PushConsumerConfig(lease_retry_min=2.0, lease_retry_max=1.0)
