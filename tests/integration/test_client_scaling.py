"""Scaling a consumer group under a steady producer: duplicates, losses and pauses, per handoff mode.

The issue's scenario: a 16-queue topic, a producer sending 200 msg/s, the group scaled 1 → 3 → 2
(graceful starts and shutdowns). RocketMQ 4.9.4's Java push consumers on its own broker saw 1
duplicate, 0 lost and a longest pause of 1.14 s. :func:`run_scaling` runs it against the embedded
rocketq broker with in-process consumers (one client id each, as separate processes would have)
and reports, per mode:

* duplicates — deliveries beyond the first of a message body; lost — bodies sent, never received;
* the longest pause — the longest any message waited between being sent (its born timestamp)
  and reaching a listener; in a steady state that is milliseconds, so it is the time a moved
  queue went unconsumed.

``python -m pytest tests/integration/test_client_scaling.py --all -s`` prints the figures.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from rocketq import (
    ClientConfig,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    ConsumeOrderlyStatus,
    Message,
    Producer,
    PushConsumer,
)
from rocketq.protocol.message import MessageExt
from tests.integration.clientkit import ClusterThread, wait_until

pytestmark = pytest.mark.integration


@dataclass
class ScalingResult:
    """What one run of the scenario measured."""

    handoff: str
    steps: tuple[int, ...]
    sent: int = 0
    received: int = 0
    distinct: int = 0
    duplicates: int = 0
    lost: int = 0
    longest_pause: float = 0.0
    #: per step change ("1->3"), the longest wait of a message sent within 2 s of the change
    pauses: dict[str, float] = field(default_factory=dict)

    def line(self) -> str:
        steps = " -> ".join(map(str, self.steps))
        per = ", ".join(f"{k}: {v:.2f}s" for k, v in self.pauses.items())
        return (
            f"handoff={self.handoff:<7} group {steps}: sent {self.sent}, received {self.received}, "
            f"duplicates {self.duplicates}, lost {self.lost}, longest pause {self.longest_pause:.2f}s ({per})"
        )


class _Deliveries:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: dict[bytes, int] = {}
        self.waits: list[tuple[float, float]] = []  # (born s, wait s) of first deliveries
        self.received = 0

    def orderly_listener(self, msgs: list[MessageExt]) -> ConsumeOrderlyStatus:
        self.listener(msgs)
        return ConsumeOrderlyStatus.SUCCESS

    def listener(self, msgs: list[MessageExt]) -> ConsumeConcurrentlyStatus:
        now = time.time()
        with self.lock:
            for m in msgs:
                self.received += 1
                n = self.counts.get(m.body, 0)
                self.counts[m.body] = n + 1
                if n == 0:
                    born = m.born_timestamp / 1000.0
                    self.waits.append((born, now - born))
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS


def run_scaling(
    cluster: ClusterThread,
    *,
    handoff: str,
    steps: Sequence[int] = (1, 3, 2),
    queues: int = 16,
    rate: float = 200.0,
    phase: float = 5.0,
    tag: str = "",
    orderly: bool = False,
) -> ScalingResult:
    """Run the scenario once (see the module doc); every consumer is shut down afterwards."""
    tag = tag or handoff
    topic, group = f"TopicScale_{tag}", f"scale_{tag}"
    cluster.create_topic(topic, queues)
    got = _Deliveries()
    consumers: list[PushConsumer] = []
    serial = iter(range(1, 1000))

    def start_one() -> None:
        n = next(serial)
        c = PushConsumer(
            group,
            client_config=ClientConfig(
                namesrv=cluster.namesrv, client_ip="127.0.0.1", instance_name=f"{tag}-c{n}"
            ),
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            handoff=handoff,
        )
        c.subscribe(topic)
        if orderly:
            c.register_listener(got.orderly_listener, orderly=True)
        else:
            c.register_listener(got.listener)
        c.start()
        consumers.append(c)

    def scale_to(n: int) -> None:
        while len(consumers) < n:
            start_one()
        while len(consumers) > n:
            consumers.pop().shutdown()

    stop = threading.Event()
    sent = [0]
    producer = Producer(
        f"scale_producer_{tag}",
        client_config=ClientConfig(namesrv=cluster.namesrv, client_ip="127.0.0.1", instance_name=f"{tag}-p"),
    )
    producer.start()

    def produce() -> None:
        interval = 1.0 / rate
        next_at = time.monotonic()
        i = 0
        while not stop.is_set():
            producer.send(Message(topic, f"{tag}-{i}"))
            i += 1
            sent[0] = i
            next_at += interval
            delay = next_at - time.monotonic()
            if delay > 0:
                stop.wait(delay)

    result = ScalingResult(handoff=handoff, steps=tuple(steps))
    changes: list[tuple[str, float]] = []
    try:
        scale_to(steps[0])
        thread = threading.Thread(target=produce, name="scaling-producer", daemon=True)
        thread.start()
        time.sleep(phase)
        prev = steps[0]
        for n in steps[1:]:
            changes.append((f"{prev}->{n}", time.time()))
            scale_to(n)
            time.sleep(phase)
            prev = n
        stop.set()
        thread.join(10)
        result.sent = sent[0]
        wait_until(lambda: len(got.counts) >= result.sent, 30, 0.05)
        time.sleep(0.5)  # late duplicates, if any, arrive now
    finally:
        stop.set()
        for c in consumers:
            c.shutdown()
        producer.shutdown()
    with got.lock:
        result.received = got.received
        result.distinct = len(got.counts)
        result.duplicates = sum(n - 1 for n in got.counts.values())
        result.lost = result.sent - sum(1 for i in range(result.sent) if f"{tag}-{i}".encode() in got.counts)
        result.longest_pause = max((w for _, w in got.waits), default=0.0)
        for name, at in changes:
            result.pauses[name] = max((w for b, w in got.waits if at - 0.5 <= b <= at + 2.0), default=0.0)
    return result


@pytest.mark.slow
def test_the_issue_scenario_16_queues_200_msgs_1_3_2(cluster: ClusterThread) -> None:
    """Both modes, the issue's figures; clean handoff must show no duplicate and no loss."""
    default = run_scaling(cluster, handoff="rocketmq", tag="d")
    clean = run_scaling(cluster, handoff="clean", tag="c")
    print()
    print("RocketMQ 4.9.4 (the issue):  duplicates 1, lost 0, longest pause 1.14s")
    print(default.line())
    print(clean.line())
    assert default.lost == 0
    assert clean.lost == 0
    assert clean.duplicates == 0
    assert clean.longest_pause <= 0.6, clean.line()
