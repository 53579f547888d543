"""A batch send asking to be stored once (``rqUniqWindow``): copies of a message are dropped.

The broker side of the Spark writer's exactly-once writes (rocketq.broker.handlers.send).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketq.broker import BrokerConfig
from rocketq.broker.handlers.send import UNIQ_WINDOW_FIELD
from rocketq.client.blocking import BlockingClient
from rocketq.client.ids import next_uniq_id
from rocketq.protocol import calls
from rocketq.protocol.message import Message, encode_batch
from rocketq.protocol.properties import MessageConst

from .conftest import ClusterThread

pytestmark = [pytest.mark.integration]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterThread]:
    ct = ClusterThread(Path(tmp_path_factory.mktemp("once")), BrokerConfig()).start()
    yield ct
    ct.stop()


def _send(io: BlockingClient, route: object, msgs: list[Message], window: str | None) -> str:
    call = BlockingClient.batch_call(route, encode_batch(msgs), producer_group="once")  # type: ignore[arg-type]
    if window is not None:
        call.request.ext_fields[UNIQ_WINDOW_FIELD] = window
    return io.call(route.addr, call, retry_closed=False).offset_msg_id  # type: ignore[attr-defined]


def test_copies_are_stored_once_only_when_asked(cluster: ClusterThread) -> None:
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    rng = random.Random(seed)
    routes = cluster.create_topic("Once", 2)
    keys = [next_uniq_id() for _ in range(60)]

    def msg(i: int) -> Message:
        return Message(
            "Once", f"b{i}".encode(), 0, {MessageConst.UNIQ_KEY: keys[i], MessageConst.WAIT: "true"}
        )

    stored: set[int] = set()
    with cluster.io() as io:
        for _ in range(25):  # random overlapping batches, to random queues
            picks = sorted(rng.sample(range(60), rng.randint(1, 12)))
            ids = _send(io, rng.choice(routes), [msg(i) for i in picks], "3600")
            new = [i for i in picks if i not in stored]
            assert len([x for x in ids.split(",") if x]) == len(new)
            stored.update(new)
        total = sum(io.call(r.addr, calls.get_max_offset(r.queue)) for r in routes)
        assert total == len(stored)
        # without the field the broker stores a copy, as RocketMQ's does
        _send(io, routes[0], [msg(min(stored))], None)
        assert sum(io.call(r.addr, calls.get_max_offset(r.queue)) for r in routes) == total + 1
