"""Replay real RocketMQ 4.9.4 traffic through the broker's tables and compare with its answers.

Every HEART_BEAT, UNREGISTER_CLIENT, LOCK_BATCH_MQ and UNLOCK_BATCH_MQ a client sent to broker-a
is fed to the consumer/producer registries and the lock table, with ``now`` taken from the
capture's clock. The real broker's NOTIFY_CONSUMER_IDS_CHANGED frames (which connections, after
which request), its GET_CONSUMER_LIST_BY_GROUP answers and its LOCK_BATCH_MQ answers must be
exactly what the tables predict.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import cache

import pytest

from rocketq.broker.consumers import ConsumerRegistry, apply_heartbeat, apply_unregister_client
from rocketq.broker.locks import QueueLockTable
from rocketq.broker.producers import ProducerRegistry
from rocketq.broker.subscriptions import SubscriptionGroupManager
from rocketq.broker.topics import TopicConfigManager
from rocketq.models import MessageQueue
from rocketq.protocol import RemotingCommand, decode_frame
from rocketq.protocol.bodies import (
    GetConsumerListByGroupResponseBody,
    HeartbeatData,
    LockBatchRequestBody,
    LockBatchResponseBody,
    UnlockBatchRequestBody,
)
from tests.wirecaps import frame_bytes, frame_files, load

HEART_BEAT, UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP = 34, 35, 38
NOTIFY_CONSUMER_IDS_CHANGED, LOCK_BATCH_MQ, UNLOCK_BATCH_MQ = 40, 41, 42
BROKER = "broker-a"


@dataclass
class Replay:
    predicted: dict[int, list[tuple[int, str]]] = field(default_factory=dict)
    observed: dict[int, list[tuple[int, str]]] = field(default_factory=lambda: defaultdict(list))
    id_lists: list[tuple[int, list[str], list[str]]] = field(default_factory=list)
    locks: list[tuple[int, set[MessageQueue], set[MessageQueue]]] = field(default_factory=list)
    registered: int = 0


@cache
def replay(name: str) -> Replay:
    """Feed one capture file's broker-a traffic to fresh tables (cached: tests only read it)."""
    consumers: ConsumerRegistry[int] = ConsumerRegistry()
    producers: ProducerRegistry[int] = ProducerRegistry()
    locks = QueueLockTable()
    topics = TopicConfigManager(now=0.0)
    groups = SubscriptionGroupManager(now=0.0)
    out = Replay()
    pending: dict[tuple[int, int], tuple[int, object]] = {}
    trigger: int | None = None
    for line in load(name):
        if BROKER not in (line["from_name"], line["to_name"]):
            continue
        cmd: RemotingCommand = decode_frame(frame_bytes(line))
        conn, seq, now = line["conn"], line["seq"], line["t_ms"] / 1000.0
        if cmd.is_response:
            request = pending.pop((conn, cmd.opaque), None)
            if request is None:
                continue
            code, expected = request
            if code == GET_CONSUMER_LIST_BY_GROUP and cmd.body:
                got = list(GetConsumerListByGroupResponseBody.decode(cmd.body).consumer_id_list)
                assert isinstance(expected, list)
                out.id_lists.append((seq, sorted(got), expected))
            elif code == LOCK_BATCH_MQ:
                got_locked = set(LockBatchResponseBody.decode(cmd.body).lock_ok_mq_set)
                assert isinstance(expected, set)
                out.locks.append((seq, got_locked, expected))
            continue
        if line["from_name"] == BROKER:
            if cmd.code == NOTIFY_CONSUMER_IDS_CHANGED:
                assert trigger is not None, f"{name}#{seq}: a notification before any registration"
                out.observed[trigger].append((conn, cmd.ext_fields["consumerGroup"]))
            continue
        ext = cmd.ext_fields
        if cmd.code == HEART_BEAT:
            changes = apply_heartbeat(
                HeartbeatData.decode(cmd.body),
                conn,
                f"127.0.0.1:{conn}",
                cmd.language.name,
                cmd.version,
                now,
                consumers=consumers,
                producers=producers,
                topics=topics,
                groups=groups,
            )
            out.registered += 1
        elif cmd.code == UNREGISTER_CLIENT:
            changes = apply_unregister_client(
                ext["clientID"],
                ext.get("producerGroup"),
                ext.get("consumerGroup"),
                conn,
                now,
                consumers=consumers,
                producers=producers,
                groups=groups,
            )
        elif cmd.code == GET_CONSUMER_LIST_BY_GROUP:
            pending[(conn, cmd.opaque)] = (cmd.code, sorted(consumers.client_ids(ext["consumerGroup"])))
            continue
        elif cmd.code == LOCK_BATCH_MQ:
            body = LockBatchRequestBody.decode(cmd.body)
            locked = locks.try_lock_batch(body.consumer_group or "", body.mq_set, body.client_id or "", now)
            pending[(conn, cmd.opaque)] = (cmd.code, locked)
            continue
        elif cmd.code == UNLOCK_BATCH_MQ:
            unlock = UnlockBatchRequestBody.decode(cmd.body)
            locks.unlock_batch(unlock.consumer_group or "", unlock.mq_set, unlock.client_id or "")
            continue
        else:
            continue
        trigger = seq
        notes = [(c, group) for group, conns in changes.notifications() for c in conns]
        if notes:
            out.predicted[seq] = sorted(notes)
    out.observed = {k: sorted(v) for k, v in out.observed.items()}
    return out


CLIENT_FILES = [
    name for name in frame_files() if any(line["header"].get("code") == HEART_BEAT for line in load(name))
]


@pytest.mark.parametrize("name", CLIENT_FILES)
def test_notifications_match_the_real_broker(name: str) -> None:
    result = replay(name)
    assert result.registered > 0
    assert result.predicted == result.observed


@pytest.mark.parametrize("name", CLIENT_FILES)
def test_consumer_lists_match_the_real_broker(name: str) -> None:
    result = replay(name)
    for seq, got, expected in result.id_lists:
        assert got == expected, f"{name}#{seq}"


def test_the_rebalance_capture_has_the_expected_story() -> None:
    result = replay("rebalance-notify.jsonl")
    # consumer-1 joins (notified alone), consumer-2 joins (both notified), consumer-2 leaves
    # (consumer-1 notified), consumer-1 leaves (nobody left to notify).
    assert [len(v) for v in result.predicted.values()] == [1, 2, 1]
    assert len(result.id_lists) >= 10


def test_lock_answers_match_the_real_broker() -> None:
    result = replay("orderly.jsonl")
    assert len(result.locks) == 7
    for seq, got, expected in result.locks:
        assert got == expected, f"orderly.jsonl#{seq}"
    assert any(got for _, got, _ in result.locks)
