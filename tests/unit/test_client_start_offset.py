"""Where a newly owned queue starts: the one rule both consumers use (``computePullFromWhere``)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from rocketq.client.api import ClientAPI
from rocketq.client.config import PushConsumerConfig
from rocketq.client.consumer.lite_pull import LitePullConsumerConfig
from rocketq.client.consumer.offset_store import OffsetStore
from rocketq.client.consumer.start_offset import compute_pull_from_where
from rocketq.models import MessageQueue
from rocketq.protocol.bodies import ConsumeFromWhere
from rocketq.protocol.calls import Call
from rocketq.protocol.codes import RequestCode, ResponseCode

Q = MessageQueue("T", "broker-a", 3)
RETRY = MessageQueue("%RETRY%g", "broker-a", 0)
W = ConsumeFromWhere
MAX_OFFSET, OFFSET_AT_TIME = 500, 300


class Offsets(OffsetStore):
    """The broker's committed offset as the offset store reads it (-1 none, -2 unreadable)."""

    def __init__(self, stored: int) -> None:
        super().__init__("g")
        self.stored = stored

    async def _read_from_store(self, mq: MessageQueue) -> int:
        return self.stored

    async def persist_all(self, mqs: object, *, oneway: bool = True) -> None:
        pass

    async def persist(self, mq: MessageQueue, *, oneway: bool = True) -> None:
        pass


@dataclass
class Broker:
    """Answers GET_MAX_OFFSET and SEARCH_OFFSET_BY_TIMESTAMP as a broker would; the call's own
    parser reads the answer."""

    asked: list[tuple[str, int, dict[str, str]]]

    async def call(self, addr: str, call: Call[int], timeout: float | None = None) -> int:
        request = call.request
        self.asked.append((addr, request.code, dict(request.ext_fields)))
        offset = MAX_OFFSET if request.code == RequestCode.GET_MAX_OFFSET else OFFSET_AT_TIME
        return call.parse(request.response(ResponseCode.SUCCESS, ext_fields={"offset": str(offset)}))


def start(
    where: ConsumeFromWhere, mq: MessageQueue = Q, *, stored: int = -1, master: str | None = "10.0.0.1:10911"
) -> tuple[int, list[tuple[str, int, dict[str, str]]], list[MessageQueue]]:
    broker = Broker([])
    located: list[MessageQueue] = []

    async def locate(q: MessageQueue) -> str | None:
        located.append(q)
        return master

    config = PushConsumerConfig(consume_from_where=where, consume_timestamp="20260101120000")
    api: ClientAPI = broker  # type: ignore[assignment]
    offset = asyncio.run(
        compute_pull_from_where(mq, start=config, offset_store=Offsets(stored), api=api, locate_master=locate)
    )
    return offset, broker.asked, located


@pytest.mark.parametrize("where", list(W))
def test_a_committed_offset_wins_whatever_the_setting(where: ConsumeFromWhere) -> None:
    assert start(where, stored=42) == (42, [], [])


@pytest.mark.parametrize("where", list(W))
def test_an_unreadable_offset_skips_the_queue(where: ConsumeFromWhere) -> None:
    assert start(where, stored=-2) == (-1, [], [])


def test_a_new_group_from_the_first_offset_starts_at_zero_without_asking() -> None:
    assert start(W.CONSUME_FROM_FIRST_OFFSET) == (0, [], [])
    assert start(W.CONSUME_FROM_FIRST_OFFSET, RETRY) == (0, [], [])


def test_a_new_group_from_the_last_offset_starts_at_the_max_offset_but_a_retry_topic_at_zero() -> None:
    offset, asked, located = start(W.CONSUME_FROM_LAST_OFFSET)
    assert offset == MAX_OFFSET
    assert [(a, code) for a, code, _ in asked] == [("10.0.0.1:10911", RequestCode.GET_MAX_OFFSET)]
    assert located == [Q]
    assert start(W.CONSUME_FROM_LAST_OFFSET, RETRY) == (0, [], [])


def test_a_new_group_from_a_timestamp_searches_it_but_a_retry_topic_starts_at_its_max_offset() -> None:
    offset, asked, _ = start(W.CONSUME_FROM_TIMESTAMP)
    assert offset == OFFSET_AT_TIME
    [(_, code, fields)] = asked
    assert code == RequestCode.SEARCH_OFFSET_BY_TIMESTAMP
    assert (
        int(fields["timestamp"])
        == PushConsumerConfig(consume_timestamp="20260101120000").consume_timestamp_ms()
    )
    offset, asked, _ = start(W.CONSUME_FROM_TIMESTAMP, RETRY)
    assert (offset, [code for _, code, _ in asked]) == (MAX_OFFSET, [RequestCode.GET_MAX_OFFSET])


def test_without_a_master_to_ask_the_queue_is_skipped() -> None:
    assert start(W.CONSUME_FROM_LAST_OFFSET, master=None)[:2] == (-1, [])
    assert start(W.CONSUME_FROM_TIMESTAMP, master=None)[:2] == (-1, [])


def test_both_consumers_configs_give_the_rule_what_it_reads() -> None:
    push = PushConsumerConfig(consume_timestamp="20260101120000")
    lite = LitePullConsumerConfig(consume_timestamp="20260101120000")
    assert push.consume_timestamp_ms() == lite.consume_timestamp_ms()
    assert push.consume_from_where is lite.consume_from_where is W.CONSUME_FROM_LAST_OFFSET
