"""Transactional messages through rocketq's TransactionProducer and consumers against our broker:
commit, rollback, unknown → check → commit, an exception in ``execute`` and in ``checker``, the
check going to the next producer of the group when the first is gone, and a check after the
broker was SIGKILLed and restarted (a real ``rocketq server`` process).

The embedded brokers run short transaction settings (a half message is checked 0.3 s after it
was stored, every 0.3 s), so the checks come on their own; tests wait for them as events.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rocketq import (
    ClientConfig,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    LocalTransactionState,
    Message,
    MessageExt,
    PushConsumer,
    TransactionProducer,
)
from rocketq.embedded import spawn_server
from tests.integration.clientkit import ClusterThread, Received, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

TOPIC = "TxTopic"
GROUP = "tx_producer_group"
COMMIT = LocalTransactionState.COMMIT_MESSAGE
ROLLBACK = LocalTransactionState.ROLLBACK_MESSAGE
UNKNOW = LocalTransactionState.UNKNOW


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ClusterThread]:
    c = ClusterThread(tmp_path / "cluster", transaction_timeout=0.3, transaction_check_interval=0.3)
    try:
        c.create_topic(TOPIC, 2)
        yield c
    finally:
        c.close()


class Checker:
    """A checker that records what the broker asked, answering from ``answers`` (by body; a
    callable may raise), else ``default``."""

    def __init__(self, default: LocalTransactionState = COMMIT) -> None:
        self.default = default
        self.answers: dict[bytes, Callable[[], LocalTransactionState]] = {}
        self.asked: list[MessageExt] = []
        self.lock = threading.Lock()

    def __call__(self, msg: MessageExt) -> LocalTransactionState:
        with self.lock:
            self.asked.append(msg)
        answer = self.answers.get(msg.body)
        return answer() if answer is not None else self.default

    def bodies(self) -> list[bytes]:
        with self.lock:
            return [m.body for m in self.asked]


def consumer(config: ClientConfig, got: Received, group: str = "tx_consumer_group") -> PushConsumer:
    c = PushConsumer(
        group, client_config=config, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    )
    c.subscribe(TOPIC)
    c.register_listener(lambda msgs: (got.add("c", msgs), ConsumeConcurrentlyStatus.CONSUME_SUCCESS)[1])
    return c.start()


def test_commit_rollback_and_unknown_then_checked(cluster: ClusterThread) -> None:
    checker = Checker()
    got = Received()
    c = consumer(cluster.client_config("consumer"), got)
    executed: list[tuple[Message, object]] = []

    def answering(state: LocalTransactionState | None) -> Callable[[Message, object], object]:
        def execute(msg: Message, arg: object) -> object:
            executed.append((msg, arg))
            return state

        return execute

    def failing(msg: Message, arg: object) -> object:
        raise RuntimeError("the database is down")

    try:
        with TransactionProducer(GROUP, client_config=cluster.client_config("p1"), checker=checker) as p:
            committed = p.send_in_transaction(Message(TOPIC, "commit", keys="k-c"), answering(COMMIT), "a1")
            rolled = p.send_in_transaction(Message(TOPIC, "rollback"), execute=answering(ROLLBACK))
            unknown = p.send_in_transaction(Message(TOPIC, "unknown"), execute=answering(UNKNOW))
            silent = p.send_in_transaction(Message(TOPIC, "none"), execute=answering(None))
            failed = p.send_in_transaction(Message(TOPIC, "raised"), execute=failing)
            assert [r.local_transaction_state for r in (committed, rolled, unknown, silent, failed)] == [
                COMMIT, ROLLBACK, UNKNOW, UNKNOW, UNKNOW,
            ]  # fmt: skip
            # execute got the message as sent: a half message of this group, its id the transaction's
            msg, arg = executed[0]
            assert arg == "a1"
            assert msg.properties["TRAN_MSG"] == "true"
            assert msg.properties["PGROUP"] == GROUP
            assert msg.properties["UNIQ_KEY"] == committed.msg_id
            # the broker checks the three left unknown (checker: commit), never the decided ones
            assert wait_until(lambda: got.distinct() == 4, 20.0)
            assert sorted(got.bodies) == [b"commit", b"none", b"raised", b"unknown"]
            assert sorted(set(checker.bodies())) == [b"none", b"raised", b"unknown"]
            asked = {m.body: m for m in checker.asked}
            assert asked[b"unknown"].msg_id == unknown.msg_id
            assert asked[b"unknown"].topic == TOPIC  # the half message as its real topic
            assert asked[b"unknown"].properties["PGROUP"] == GROUP
            assert p.tx_core.checks_answered >= 3
        assert got.duplicates() == 0  # each committed transaction is delivered once
        by_body = {m.body: m for m in got.messages}
        assert by_body[b"commit"].msg_id == committed.msg_id
        assert by_body[b"commit"].keys == "k-c"
    finally:
        c.shutdown()


def test_an_exception_in_the_checker_is_unknown_and_the_broker_asks_again(cluster: ClusterThread) -> None:
    calls: list[int] = []

    def flaky() -> LocalTransactionState:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("not sure yet")
        return COMMIT

    checker = Checker()
    checker.answers[b"flaky"] = flaky
    got = Received()
    c = consumer(cluster.client_config("consumer"), got)
    try:
        with TransactionProducer(GROUP, client_config=cluster.client_config("p1"), checker=checker) as p:
            p.send_in_transaction(Message(TOPIC, "flaky"), execute=lambda m, a: UNKNOW)
            assert wait_until(lambda: got.distinct() == 1, 20.0)
        assert len(calls) >= 2  # asked again after the exception answered UNKNOW
        assert got.duplicates() == 0
    finally:
        c.shutdown()


def test_the_next_producer_of_the_group_answers_for_one_that_is_gone(tmp_path: Path) -> None:
    # a check 1.5 s after the half message is stored: the first producer has left by then
    cluster = ClusterThread(tmp_path / "c", transaction_timeout=1.5, transaction_check_interval=0.3)
    first = Checker(UNKNOW)
    second = Checker(COMMIT)
    got = Received()
    try:
        cluster.create_topic(TOPIC, 2)
        c = consumer(cluster.client_config("consumer"), got)
        try:
            with TransactionProducer(GROUP, client_config=cluster.client_config("p1"), checker=first) as p1:
                sent = p1.send_in_transaction(Message(TOPIC, "orphan"), execute=lambda m, a: UNKNOW)
            with TransactionProducer(GROUP, client_config=cluster.client_config("p2"), checker=second):
                assert wait_until(lambda: got.distinct() == 1, 20.0)
            assert [m.msg_id for m in second.asked][:1] == [sent.msg_id]
            assert got.bodies == {b"orphan": 1}
        finally:
            c.shutdown()
    finally:
        cluster.close()


def test_a_half_message_is_checked_after_the_broker_is_killed_and_restarted(tmp_path: Path) -> None:
    """A real ``rocketq server``: a transaction left unknown, the server SIGKILLed, restarted on the
    same data and ports; the producer, still running, reconnects and is checked; the commit is
    delivered once."""
    data = tmp_path / "data"
    server = spawn_server(
        data, extra_args=("--transaction-timeout", "1", "--transaction-check-interval", "0.5")
    )
    ports = (
        "--namesrv-port",
        server.namesrv_addr.rsplit(":", 1)[1],
        "--broker-port",
        server.broker_addr.rsplit(":", 1)[1],
    )
    restarted = None
    decided = threading.Event()  # the checker answers UNKNOW until the restart
    checker = Checker()
    checker.default = UNKNOW
    checker.answers[b"survivor"] = lambda: COMMIT if decided.is_set() else UNKNOW
    config = ClientConfig(
        namesrv=server.namesrv_addr, client_ip="127.0.0.1", instance_name="tx", heartbeat_broker_interval=0.5
    )
    producer = TransactionProducer(GROUP, client_config=config, checker=checker).start()
    try:
        sent = producer.send_in_transaction(Message(TOPIC, "survivor"), execute=lambda m, a: UNKNOW)
        assert wait_until(lambda: len(checker.asked) >= 1, 20.0)  # checked (UNKNOW) before the kill
        os.kill(server.pid, signal.SIGKILL)
        server.proc.wait(10)
        server.stop()
        restarted = spawn_server(
            data, extra_args=("--transaction-timeout", "1", "--transaction-check-interval", "0.5", *ports)
        )
        assert restarted.namesrv_addr == server.namesrv_addr
        before = len(checker.asked)
        decided.set()
        assert wait_until(lambda: len(checker.asked) > before, 30.0)  # asked again, after the restart
        got = Received()
        c = consumer(
            ClientConfig(namesrv=restarted.namesrv_addr, client_ip="127.0.0.1", instance_name="c"), got
        )
        try:
            assert wait_until(lambda: got.distinct() == 1, 20.0)
            assert [m.msg_id for m in got.messages] == [sent.msg_id]
        finally:
            c.shutdown()
        assert got.bodies == {b"survivor": 1}
    finally:
        producer.shutdown()
        if restarted is not None:
            restarted.stop()
        server.stop()
