"""The transaction service on a real store, without a network: check rounds, op records and the
check position, a producer's immunity time, discards."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from rocketq.broker.handlers import java_properties_string
from rocketq.broker.transactions import (
    CID_RMQ_SYS_TRANS,
    TransactionalMessageService,
    half_message_properties,
    is_half_message,
)
from rocketq.protocol.headers import CheckTransactionStateRequestHeader, EndTransactionRequestHeader
from rocketq.protocol.message import decode_messages, encode_message
from rocketq.protocol.message_id import HostPort
from rocketq.protocol.topics import RMQ_SYS_TRANS_HALF_TOPIC, RMQ_SYS_TRANS_OP_HALF_TOPIC
from rocketq.store import MessageStore, PutResult, StoreConfig

HOST = HostPort("127.0.0.1", 10911)
BORN = 1_800_000_000_000


class Clock:
    def __init__(self) -> None:
        self.now = BORN / 1000 + 1

    def __call__(self) -> float:
        return self.now


class Harness:
    """A store, the service over it, and the checks it sent."""

    def __init__(self, root: Path, *, producers: bool = True, check_max: int = 15) -> None:
        self.clock = Clock()
        self.store = MessageStore(root, StoreConfig(), clock=self.clock, start_services=False)
        self.checks: list[tuple[str, CheckTransactionStateRequestHeader, bytes]] = []
        self.producers = producers
        self.service = TransactionalMessageService(
            self.store,
            store_host=HOST,
            put=self.put,
            send_check=self.send_check,
            properties_string=java_properties_string,
            ensure_topic=lambda topic: None,
            timeout=6.0,
            check_max=check_max,
            clock=self.clock,
        )

    def put(self, topic: str, queue_id: int, record: bytes, code: int, props: Mapping[str, str]) -> PutResult:
        return self.store.put_message(topic, queue_id, record, code)

    def send_check(self, group: str, header: CheckTransactionStateRequestHeader, body: bytes) -> bool:
        if self.producers:
            self.checks.append((group, header, body))
        return self.producers

    def half(self, uniq: str, *, extra: dict[str, str] | None = None) -> PutResult:
        props = {"UNIQ_KEY": uniq, "TRAN_MSG": "true", "PGROUP": "g", "TAGS": "t", **(extra or {})}
        half_message_properties(props, "T", 0)
        record = encode_message(
            topic=RMQ_SYS_TRANS_HALF_TOPIC,
            body=uniq.encode(),
            properties=java_properties_string(props, len(props)),
            born_timestamp=BORN,
            born_host=HOST,
            store_host=HOST,
        )
        return self.store.put_message(RMQ_SYS_TRANS_HALF_TOPIC, 0, record)

    def end(self, put: PutResult, uniq: str, state: int) -> tuple[int, str | None] | None:
        return self.service.end_transaction(
            EndTransactionRequestHeader(
                producer_group="g",
                tran_state_table_offset=put.queue_offset,
                commit_log_offset=put.commit_log_offset,
                commit_or_rollback=state,
                msg_id=uniq,
            )
        )

    def delivered(self) -> list[bytes]:
        got = self.store.get_messages("T", 0, 0, 32)
        return [m.body for m in decode_messages(got.data)] if got.data else []

    def position(self, topic: str) -> int:
        return self.store.consumer_offsets.query_offset(CID_RMQ_SYS_TRANS, topic, 0)


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    h = Harness(tmp_path)
    yield h
    h.store.close()


def test_what_counts_as_a_half_message() -> None:
    assert is_half_message({"TRAN_MSG": "TRUE"}, 0)  # Boolean.parseBoolean ignores case
    assert is_half_message({}, 4)  # the prepared sys flag alone
    assert not is_half_message({"TRAN_MSG": "yes"}, 0)
    assert not is_half_message({}, 8)  # a commit type is no half message


def test_resolved_ones_are_passed_young_ones_wait_and_positions_move(harness: Harness) -> None:
    a, b, c = harness.half("A"), harness.half("B"), harness.half("C")
    assert harness.end(b, "B", 12) == (0, None)  # b rolled back: an op record
    assert harness.end(a, "A", 8) == (0, None)  # a committed: its message and an op record
    assert harness.delivered() == [b"A"]
    first = harness.service.check()
    assert (first.done, first.checked) == (2, 0)  # a and b passed, c too young
    assert harness.position(RMQ_SYS_TRANS_HALF_TOPIC) == 2
    assert harness.position(RMQ_SYS_TRANS_OP_HALF_TOPIC) == 2  # both ops done, in op order
    harness.clock.now += 10
    second = harness.service.check()
    assert second.checked == 1
    (group, header, body) = harness.checks[0]
    assert (group, header.msg_id, header.tran_state_table_offset) == ("g", "C", 3)
    (msg,) = decode_messages(body)
    assert (msg.topic, msg.queue_offset, msg.properties["TRANSACTION_CHECK_TIMES"]) == ("T", 3, "1")
    assert msg.properties["WAIT"] == "false"
    assert harness.position(RMQ_SYS_TRANS_HALF_TOPIC) == 3  # past c; its copy at 3 is next
    assert c.queue_offset == 2


def test_an_unknown_state_changes_nothing(harness: Harness) -> None:
    put = harness.half("U")
    assert harness.end(put, "U", 0) is None
    assert harness.delivered() == []
    assert harness.store.max_offset(RMQ_SYS_TRANS_OP_HALF_TOPIC, 0) == 0


def test_an_immune_half_message_is_stored_again_then_found_resolved(harness: Harness) -> None:
    """``CHECK_IMMUNITY_TIME_IN_SECONDS``: not checked before that time; meanwhile moved along
    the half queue, remembering its first offset, and passed once that offset is resolved."""
    put = harness.half("I", extra={"CHECK_IMMUNITY_TIME_IN_SECONDS": "60"})
    harness.clock.now += 10  # older than the timeout, younger than its immunity
    result = harness.service.check()
    assert result.checked == 0
    assert harness.store.max_offset(RMQ_SYS_TRANS_HALF_TOPIC, 0) == 2  # the copy
    copy = decode_messages(harness.store.get_messages(RMQ_SYS_TRANS_HALF_TOPIC, 0, 1, 1).data)[0]
    assert copy.properties["TRAN_PREPARED_QUEUE_OFFSET"] == "0"
    assert harness.end(put, "I", 8) == (0, None)  # the producer commits the original
    harness.clock.now += 10
    again = harness.service.check()
    assert (again.checked, again.done) == (0, 1)  # the copy is recognised as resolved
    assert harness.position(RMQ_SYS_TRANS_HALF_TOPIC) == 2
    assert harness.delivered() == [b"I"]


def test_without_a_producer_the_check_still_counts(tmp_path: Path) -> None:
    harness = Harness(tmp_path, producers=False, check_max=2)
    try:
        harness.half("N")
        outcomes = []
        for _ in range(3):
            harness.clock.now += 61
            r = harness.service.check()
            outcomes.append((r.checked, r.no_producer, r.discarded))
        assert outcomes == [(1, 1, 0), (1, 1, 0), (0, 0, 1)]
    finally:
        harness.store.close()


def test_resolutions_survive_a_restart(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    a, b = harness.half("A"), harness.half("B")
    harness.end(a, "A", 8)
    harness.end(b, "B", 12)
    harness.store.close()
    again = Harness(tmp_path)
    try:
        again.service.load()
        # a repeated commit of a is not delivered twice; a commit of b is refused
        assert again.end(a, "A", 8) == (0, None)
        code, remark = again.end(b, "B", 8) or (0, None)
        assert (code, remark) == (1, "the transaction B was rolled back already")
        assert again.delivered() == [b"A"]
        assert again.store.max_offset(RMQ_SYS_TRANS_OP_HALF_TOPIC, 0) == 2  # no second op records
    finally:
        again.store.close()


def test_a_copy_of_a_transaction_resolved_meanwhile_is_not_checked_again(harness: Harness) -> None:
    """The producer answers the original half message after the check stored a copy: the copy
    is marked done at the next round, nobody is asked again and nothing is delivered twice."""
    original = harness.half("L")
    harness.clock.now += 10
    assert harness.service.check().checked == 1  # copy at offset 1, a check sent about it
    assert harness.end(original, "L", 8) == (0, None)  # the late answer, about the original
    harness.clock.now += 61
    result = harness.service.check()
    assert (result.checked, result.done) == (0, 1)
    assert len(harness.checks) == 1
    assert harness.delivered() == [b"L"]
    assert harness.position(RMQ_SYS_TRANS_HALF_TOPIC) == 2
