"""The client's blocking facade against a real broker, without Spark: pipelined range pulls, time
search, offsets, auto-create."""

from __future__ import annotations

import time

import pytest

from rocketq.client.blocking import BlockingClient
from rocketq.errors import TopicNotExistError
from rocketq.models import PullStatus
from rocketq.protocol import calls
from rocketq.protocol.message import Message, decode_messages

from .conftest import ClusterThread

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def offsets_of(
    io: BlockingClient, cluster: ClusterThread, topic: str, start: int, end: int, **kw: int
) -> list[int]:
    (route,) = io.read_queues(topic)
    out: list[int] = []
    for result in io.pull_range(route, start, end, group="io-test", **kw):
        assert result.status is PullStatus.FOUND
        out.extend(m.queue_offset for m in decode_messages(result.body, read_body=False))
    return [o for o in out if o < end]


def test_pipelined_pulls_cover_a_range_once_in_order_whatever_the_brokers_cap(cluster: ClusterThread) -> None:
    cluster.create_topic("Piped", 1)
    cluster.produce("Piped", 1000, batch=100)
    with cluster.io() as io:
        # the broker answers at most 32 messages a pull: asking 100 makes short answers to recover from
        assert offsets_of(io, cluster, "Piped", 0, 1000, batch_size=100, depth=4) == list(range(1000))
        assert offsets_of(io, cluster, "Piped", 17, 530, batch_size=32, depth=8) == list(range(17, 530))
        assert offsets_of(io, cluster, "Piped", 990, 1000, batch_size=5, depth=1) == list(range(990, 1000))


def test_offset_at_or_after_a_time_and_consumer_offsets(cluster: ClusterThread) -> None:
    (route,) = cluster.create_topic("Timed", 1)
    cluster.produce("Timed", 5, batch=1)
    time.sleep(0.03)
    cut = int(time.time() * 1000)
    time.sleep(0.03)
    cluster.produce("Timed", 3, batch=1, start=5)
    with cluster.io() as io:
        assert io.offset_at_or_after(route, cut, group="io-test") == 5
        assert io.offset_at_or_after(route, 0, group="io-test") == 0
        assert io.offset_at_or_after(route, cut + 10**9, group="io-test") == 8
        # RocketMQ answers 0, not "not found", for a group without an offset on a queue still starting at 0
        assert io.call(route.addr, calls.query_consumer_offset("never-committed", route.queue)) == 0
        io.call(route.addr, calls.update_consumer_offset("io-group", route.queue, 6))
        assert io.call(route.addr, calls.query_consumer_offset("io-group", route.queue)) == 6
        bounds = (
            io.call(route.addr, calls.get_min_offset(route.queue)),
            io.call(route.addr, calls.get_max_offset(route.queue)),
        )
        assert bounds == (0, 8)


def test_send_to_a_new_topic_goes_through_the_default_route(cluster: ClusterThread) -> None:
    with cluster.io() as io:
        with pytest.raises(TopicNotExistError):
            io.read_queues("BornOnSend")
        routes, borrowed = io.write_queues("BornOnSend")
        assert borrowed
        assert [r.queue.queue_id for r in routes] == [0, 1, 2, 3]
        msg = Message("BornOnSend", b"first", 0, {"UNIQ_KEY": "U" * 32, "WAIT": "true"})
        result = io.send_batch(routes[1], [msg], producer_group="io-test", default_topic=True)
        assert (result.message_queue.queue_id, result.queue_offset) == (1, 0)
        deadline = time.monotonic() + 20
        while True:
            try:
                if len(io.read_queues("BornOnSend")) == 4:
                    break
            except TopicNotExistError:
                pass
            assert time.monotonic() < deadline, "the auto-created topic never reached the name server"
            time.sleep(0.05)
        routes, borrowed = io.write_queues("BornOnSend")
        assert not borrowed


def test_a_send_stored_but_not_confirmed_names_the_call_and_the_broker() -> None:
    """FLUSH_DISK_TIMEOUT and its kin: stored, not confirmed in time; the blocking client and
    the Spark writer raise the code's own error with the call and the broker in its notes."""
    from rocketq.client.blocking import not_confirmed
    from rocketq.errors import BrokerError
    from rocketq.protocol import ResponseCode

    error = not_confirmed(ResponseCode.FLUSH_DISK_TIMEOUT, "send batch to T", "127.0.0.1:10911")
    assert isinstance(error, BrokerError)
    assert error.code == ResponseCode.FLUSH_DISK_TIMEOUT
    assert "did not confirm" in str(error)
    assert error.__notes__ == ["send batch to T at 127.0.0.1:10911"]
