"""Transactional messages through the broker, driven by a raw remoting client playing the Java
``TransactionMQProducer`` of ``transaction.jsonl``: half messages, END_TRANSACTION commit /
rollback / unknown, the broker's CHECK_TRANSACTION_STATE and its answer, delivery, the check
going to another producer, idempotent commits, the check limit, and a SIGKILL in between.

Check rounds are triggered with :meth:`Broker.check_transactions` on a broker whose clock the
test moves (the service's interval timer is left at its default and never fires); the subprocess
test runs the real timer at short intervals. The byte-exact replay of the capture, commit-log
offsets included, is in ``test_broker_replay.py``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from rocketq.broker import Broker, BrokerConfig
from rocketq.broker.transactions import CID_RMQ_SYS_TRANS
from rocketq.embedded import spawn_server
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode, decode_frame, decode_messages
from rocketq.protocol.headers import EndTransactionRequestHeader, SendMessageRequestHeaderV2
from rocketq.protocol.message import MessageExt
from rocketq.protocol.message_id import parse_offset_msg_id
from rocketq.protocol.properties import properties_to_string
from rocketq.protocol.topics import RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC, RMQ_SYS_TRANS_HALF_TOPIC
from rocketq.remoting import RemotingClient, RemotingConnection, run
from tests.wirecaps import frame_bytes, load

from .brokerkit import heartbeat_request, pull_request

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

CAPTURE = {line["seq"]: line for line in load("transaction.jsonl")}
GROUP = "wire_tx_group"
TOPIC = "WireTx"
COMMIT, ROLLBACK, UNKNOWN = 8, 12, 0


class Clock:
    """The broker's wall clock, moved by the test (starts at the capture's time)."""

    def __init__(self, now: float = 1795248492.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def captured(seq: int) -> RemotingCommand:
    return decode_frame(frame_bytes(CAPTURE[seq]))


class Producer:
    """A raw client playing a transactional producer: it records the checks the broker sends."""

    def __init__(self) -> None:
        self.client = RemotingClient()
        self.checks: asyncio.Queue[RemotingCommand] = asyncio.Queue()
        self.client.register_handler(RequestCode.CHECK_TRANSACTION_STATE, self._on_check)

    def _on_check(self, conn: RemotingConnection, request: RemotingCommand) -> None:
        self.checks.put_nowait(request)

    async def invoke(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        return await self.client.invoke(addr, request, 10)

    async def close(self) -> None:
        await self.client.close()


@asynccontextmanager
async def broker_at(data_dir: Path, clock: Clock | None = None, **overrides: Any) -> AsyncIterator[Broker]:
    config = BrokerConfig(host="127.0.0.1", port=0, data_dir=data_dir, **overrides)
    async with Broker(config, clock=clock or Clock()) as broker:
        yield broker


def half_request(
    body: bytes, *, keys: str, queue_id: int = 1, group: str = GROUP, uniq: str, born: int = 1795248491926
) -> RemotingCommand:
    """A half message as the Java producer sends it (born at the capture's time by default)."""
    props = {
        "KEYS": keys,
        "TRAN_MSG": "true",
        "UNIQ_KEY": uniq,
        "WAIT": "true",
        "PGROUP": group,
        "TAGS": "TagTx",
    }
    header = SendMessageRequestHeaderV2(
        producer_group=group,
        topic=TOPIC,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=queue_id,
        sys_flag=4,
        born_timestamp=born,
        flag=0,
        properties=properties_to_string(props),
        reconsume_times=0,
    )
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, header.to_ext_fields(), body)


def end_request(
    sent: RemotingCommand,
    uniq: str,
    state: int,
    *,
    from_check: bool = False,
    group: str = GROUP,
    oneway: bool = True,
) -> RemotingCommand:
    """END_TRANSACTION as the Java producer builds it from a send's answer (or a check)."""
    if sent.code == RequestCode.CHECK_TRANSACTION_STATE:
        offset, queue_offset = (
            int(sent.ext_fields["commitLogOffset"]),
            int(sent.ext_fields["tranStateTableOffset"]),
        )
    else:
        offset = parse_offset_msg_id(sent.ext_fields["msgId"])[1]
        queue_offset = int(sent.ext_fields["queueOffset"])
    header = EndTransactionRequestHeader(
        producer_group=group,
        tran_state_table_offset=queue_offset,
        commit_log_offset=offset,
        commit_or_rollback=state,
        from_transaction_check=from_check,
        msg_id=uniq,
        transaction_id=uniq if from_check else None,
    )
    return RemotingCommand.request(RequestCode.END_TRANSACTION, header.to_ext_fields(), oneway=oneway)


async def delivered(
    client: RemotingClient, addr: str, topic: str = TOPIC, queues: int = 2
) -> list[MessageExt]:
    out: list[MessageExt] = []
    for q in range(queues):
        got = await client.invoke(addr, pull_request("tx_consumer", topic, q, 0))
        if got.code == ResponseCode.SUCCESS:
            out.extend(decode_messages(got.body))
    return out


async def settle(broker: Broker) -> None:
    """Let oneway requests already written reach their handlers (a round trip on a fresh
    connection is answered after them: the broker reads each connection in order)."""
    for _ in range(3):
        await asyncio.sleep(0)
    async with RemotingClient() as probe:
        await probe.invoke(broker.address, heartbeat_request("probe", None))


def _view(m: MessageExt) -> tuple[Any, ...]:
    return (
        m.topic, m.queue_id, m.queue_offset, m.flag, m.sys_flag, m.born_timestamp, m.born_host.ip,
        m.reconsume_times, m.prepared_transaction_offset, m.body, m.stored_properties,
    )  # fmt: skip


def test_the_java_producer_exchange_commit_rollback_unknown_then_check(tmp_path: Path) -> None:
    """``transaction.jsonl`` played against a fresh broker: every answer and the broker's own
    CHECK_TRANSACTION_STATE as the 4.9.4 broker gave them (commit-log offsets aside: this broker
    starts empty), then the consumer sees the two committed messages and not the rolled back."""

    async def main() -> None:
        clock = Clock()
        producer = Producer()
        async with broker_at(tmp_path, clock) as broker, RemotingClient() as consumer:
            addr = broker.address
            created = await producer.invoke(addr, captured(5))
            assert (created.code, created.remark) == (captured(6).code, captured(6).remark)
            answers = {}
            for seq in (15, 18, 21):  # the three half messages
                got = await producer.invoke(addr, captured(seq))
                want = decode_frame(frame_bytes(next(c for c in CAPTURE.values() if c["reply_to"] == seq)))
                assert got.code == want.code == ResponseCode.SUCCESS
                assert list(got.ext_fields) == list(want.ext_fields)
                for key in ("queueId", "queueOffset", "TRACE_ON", "MSG_REGION"):
                    assert got.ext_fields[key] == want.ext_fields[key], key
                answers[seq] = got
                clock.now += 0.01
            # the END_TRANSACTIONs of the capture, pointing at this broker's half messages
            for seq, sent in ((17, 15), (20, 18), (23, 21)):
                frame = captured(seq)
                frame.ext_fields["commitLogOffset"] = str(
                    parse_offset_msg_id(answers[sent].ext_fields["msgId"])[1]
                )
                await producer.client.invoke_oneway(addr, frame)
            heartbeat = await producer.invoke(addr, captured(24))
            assert heartbeat.code == ResponseCode.SUCCESS
            await settle(broker)
            # committed: tx-commit; rolled back: tx-rollback; tx-unknown waits for the check
            assert [m.body for m in await delivered(consumer, addr)] == [b"transactional tx-commit"]
            first = broker.check_transactions()  # passes the two resolved ones, stops at a young one
            assert (first.checked, first.done) == (0, 2)
            clock.now += 7
            result = broker.check_transactions()
            assert (result.checked, result.done, result.no_producer) == (1, 0, 0)
            check = await asyncio.wait_for(producer.checks.get(), 5)
            want = captured(26)
            assert check.is_oneway
            assert list(check.ext_fields) == list(want.ext_fields)  # commitLogOffset, msgId, ...
            for key in ("msgId", "transactionId", "tranStateTableOffset"):
                assert check.ext_fields[key] == want.ext_fields[key], key
            (body,) = decode_messages(check.body)
            (want_body,) = decode_messages(want.body)
            assert _view(body) == _view(want_body)  # real topic/queue, check times, WAIT=false ...
            assert body.commit_log_offset == int(check.ext_fields["commitLogOffset"])
            assert check.ext_fields["offsetMsgId"] == body.offset_msg_id
            # the producer answers the check as the capture's did: commit
            answer = captured(27)
            answer.ext_fields["commitLogOffset"] = check.ext_fields["commitLogOffset"]
            await producer.client.invoke_oneway(addr, answer)
            await settle(broker)
            committed = await delivered(consumer, addr)
            assert [m.body for m in committed] == [b"transactional tx-commit", b"transactional tx-unknown"]
            for m in committed:  # committed as RocketMQ commits: unique id and properties kept
                assert m.sys_flag & 0xC == COMMIT
                assert m.properties["TRAN_MSG"] == "true"
                assert m.properties["REAL_TOPIC"] == TOPIC
                assert m.msg_id == m.properties["UNIQ_KEY"]
            assert committed[1].properties["TRANSACTION_CHECK_TIMES"] == "1"
            # everything resolved: later rounds ask nothing, and the check position moved on
            clock.now += 70
            assert broker.check_transactions().checked == 0
            offsets = broker.store.consumer_offsets
            assert offsets.query_offset(CID_RMQ_SYS_TRANS, RMQ_SYS_TRANS_HALF_TOPIC, 0) == 4
            assert producer.checks.empty()
        await producer.close()

    run(main())


def test_a_check_goes_to_another_producer_of_the_group_when_the_first_left(tmp_path: Path) -> None:
    async def main() -> None:
        clock = Clock()
        first, second = Producer(), Producer()
        async with broker_at(tmp_path, clock) as broker:
            addr = broker.address
            for n, p in enumerate((first, second)):
                hb = heartbeat_request(f"producer-{n}", None, producer_group=GROUP)
                assert (await p.invoke(addr, hb)).code == ResponseCode.SUCCESS
            sent = await first.invoke(addr, half_request(b"pending", keys="k", uniq="U-pending"))
            assert sent.code == ResponseCode.SUCCESS
            await first.close()  # the producer that sent it is gone
            while len(broker.producers.connections(GROUP)) > 1:
                await asyncio.sleep(0.01)
            clock.now += 10
            assert broker.check_transactions().checked == 1
            check = await asyncio.wait_for(second.checks.get(), 5)
            assert check.ext_fields["msgId"] == "U-pending"
            await second.client.invoke_oneway(addr, end_request(check, "U-pending", COMMIT, from_check=True))
            await settle(broker)
            async with RemotingClient() as consumer:
                assert [m.body for m in await delivered(consumer, addr)] == [b"pending"]
            # no producer of the group at all: the check waits for the next round
            await second.close()
            while broker.producers.connections(GROUP):
                await asyncio.sleep(0.01)
            alone = await (c := RemotingClient()).invoke(
                addr, half_request(b"orphan", keys="k", uniq="U-orphan")
            )
            await c.close()
            assert alone.code == ResponseCode.SUCCESS
            clock.now += 10
            result = broker.check_transactions()
            assert (result.checked, result.no_producer) == (1, 1)

    run(main())


def test_the_first_resolution_wins_and_a_commit_is_delivered_once(tmp_path: Path) -> None:
    async def main() -> None:
        clock = Clock()
        producer = Producer()
        async with broker_at(tmp_path, clock) as broker, RemotingClient() as consumer:
            addr = broker.address
            assert (await producer.invoke(addr, heartbeat_request("p", None, producer_group=GROUP))).code == 0
            a = await producer.invoke(addr, half_request(b"a", keys="a", uniq="U-a"))
            b = await producer.invoke(addr, half_request(b"b", keys="b", uniq="U-b", queue_id=0))
            # a: committed twice over (a retried END_TRANSACTION), synchronously this time
            for _ in range(2):
                answer = await producer.invoke(addr, end_request(a, "U-a", COMMIT, oneway=False))
                assert (answer.code, answer.remark) == (ResponseCode.SUCCESS, None)
            # b: rolled back, then a commit arrives - refused
            assert (await producer.invoke(addr, end_request(b, "U-b", ROLLBACK, oneway=False))).code == 0
            late = await producer.invoke(addr, end_request(b, "U-b", COMMIT, oneway=False))
            assert late.code == ResponseCode.SYSTEM_ERROR
            assert late.remark == "the transaction U-b was rolled back already"
            assert [m.body for m in await delivered(consumer, addr)] == [b"a"]
            # RocketMQ's own refusals
            wrong = end_request(a, "U-a", COMMIT, oneway=False, group="other_group")
            assert (await producer.invoke(addr, wrong)).remark == "The producer group wrong"
            moved = end_request(a, "U-a", COMMIT, oneway=False)
            moved.ext_fields["tranStateTableOffset"] = "7"
            assert (await producer.invoke(addr, moved)).remark == "The transaction state table offset wrong"
            nowhere = end_request(a, "U-a", COMMIT, oneway=False)
            nowhere.ext_fields["commitLogOffset"] = "123456"
            got = await producer.invoke(addr, nowhere)
            assert (got.code, got.remark) == (
                ResponseCode.SYSTEM_ERROR,
                "Find prepared transaction message failed",
            )
            plain = await delivered(consumer, addr)  # a committed message is not a half message
            not_half = end_request(a, "U-a", COMMIT, oneway=False)
            not_half.ext_fields["commitLogOffset"] = str(plain[0].commit_log_offset)
            assert (
                await producer.invoke(addr, not_half)
            ).remark == "Find prepared transaction message failed"
        await producer.close()
        # after a restart, with nothing in memory, a repeated commit still finds the first one
        producer = Producer()
        async with broker_at(tmp_path, clock) as broker, RemotingClient() as consumer:
            addr = broker.address
            answer = await producer.invoke(addr, end_request(a, "U-a", COMMIT, oneway=False))
            assert answer.code == ResponseCode.SUCCESS
            assert [m.body for m in await delivered(consumer, addr)] == [b"a"]
        await producer.close()

    run(main())


def test_checks_stop_at_the_maximum_and_the_half_message_is_set_aside(tmp_path: Path) -> None:
    async def main() -> None:
        clock = Clock()
        producer = Producer()
        async with (
            broker_at(tmp_path, clock, transaction_check_max=3) as broker,
            RemotingClient() as consumer,
        ):
            addr = broker.address
            await producer.invoke(addr, heartbeat_request("p", None, producer_group=GROUP))
            await producer.invoke(addr, half_request(b"undecided", keys="u", uniq="U-u"))
            times = []
            for _ in range(5):
                clock.now += 61
                result = broker.check_transactions()
                if result.checked:
                    check = await asyncio.wait_for(producer.checks.get(), 5)
                    times.append(decode_messages(check.body)[0].properties["TRANSACTION_CHECK_TIMES"])
                    # the producer does not know either: it answers "unknown" (no effect)
                    await producer.client.invoke_oneway(
                        addr, end_request(check, "U-u", UNKNOWN, from_check=True)
                    )
                elif result.discarded:
                    times.append("discarded")
            assert times == ["1", "2", "3", "discarded"]
            kept = await delivered(consumer, addr, RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC, 1)
            assert [(m.body, m.properties["TRANSACTION_CHECK_TIMES"]) for m in kept] == [(b"undecided", "3")]
            assert await delivered(consumer, addr) == []
        await producer.close()

    run(main())


def test_half_messages_can_be_refused_as_rocketmq_can(tmp_path: Path) -> None:
    async def main() -> None:
        async with broker_at(tmp_path, reject_transaction_message=True) as broker, RemotingClient() as client:
            got = await client.invoke(broker.address, half_request(b"x", keys="k", uniq="U"))
            assert got.code == ResponseCode.NO_PERMISSION
            assert got.remark == "the broker[127.0.0.1] sending transaction message is forbidden"
            # a send already marked rolled back could never be read: refused, whatever the switch
            rolled_back = half_request(b"x", keys="k", uniq="U")
            rolled_back.ext_fields["f"] = "12"
            rolled_back.ext_fields["i"] = rolled_back.ext_fields["i"].replace(
                "TRAN_MSG\x01true", "TRAN_MSG\x01false"
            )
            got = await client.invoke(broker.address, rolled_back)
            assert got.code == ResponseCode.MESSAGE_ILLEGAL

    run(main())


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_after_a_sigkill_a_prepared_message_is_still_checked_and_commits_deliver_once(tmp_path: Path) -> None:
    """A ``rocketq server`` subprocess with short check settings: one transaction committed and
    one left prepared, the server killed with SIGKILL, restarted on the same data: the prepared
    one is checked with the group's new producer and, committed, delivered; the other stays
    delivered once; both are found by key through the recovered index."""
    # checks count even when no producer is there to ask (as in RocketMQ): allow many of them
    settings = (
        "--transaction-check-interval", "0.2",
        "--transaction-timeout", "0.5",
        "--transaction-check-max", "10000",
    )  # fmt: skip
    data = tmp_path / "data"

    async def before(addr: str) -> None:
        producer = Producer()
        await producer.invoke(addr, heartbeat_request("p1", None, producer_group=GROUP))
        now = int(time.time() * 1000)  # a real server's clock: born now
        done = await producer.invoke(addr, half_request(b"committed", keys="k-done", uniq="U-done", born=now))
        await producer.invoke(addr, half_request(b"prepared", keys="k-open", uniq="U-open", born=now))
        assert (await producer.invoke(addr, end_request(done, "U-done", COMMIT, oneway=False))).code == 0
        async with RemotingClient() as consumer:
            assert [m.body for m in await delivered(consumer, addr)] == [b"committed"]
        # the prepared one must not be resolved by a check before the kill: nobody answers
        await producer.close()

    async def after(addr: str) -> list[bytes]:
        producer = Producer()
        await producer.invoke(addr, heartbeat_request("p2", None, producer_group=GROUP))
        while True:  # each round asks again until someone answers
            check = await asyncio.wait_for(producer.checks.get(), 20)
            if check.ext_fields["msgId"] == "U-open":
                break
            assert check.ext_fields["msgId"] != "U-done"
        await producer.client.invoke_oneway(addr, end_request(check, "U-open", COMMIT, from_check=True))
        async with RemotingClient() as consumer:
            for _ in range(200):
                bodies = [m.body for m in await delivered(consumer, addr)]
                if len(bodies) >= 2:
                    break
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.6)  # three more check rounds: nothing may be delivered again
            bodies = [m.body for m in await delivered(consumer, addr)]
            for key, want in (("k-done", b"committed"), ("k-open", b"prepared")):
                header = {"topic": TOPIC, "key": key, "maxNum": "32", "beginTimestamp": "0",
                          "endTimestamp": str(2**63 - 1)}  # fmt: skip
                found = await consumer.invoke(
                    addr, RemotingCommand.request(RequestCode.QUERY_MESSAGE, header)
                )
                assert [m.body for m in decode_messages(found.body)] == [want]
        await producer.close()
        return bodies

    server = spawn_server(data, extra_args=settings)
    try:
        run(before(server.broker_addr))
        os.kill(server.pid, signal.SIGKILL)
        server.proc.wait(10)
    finally:
        server.stop()
    assert (data / "abort").exists()
    with spawn_server(data, extra_args=settings) as server:
        bodies = run(after(server.broker_addr))
    assert bodies == [b"committed", b"prepared"]
