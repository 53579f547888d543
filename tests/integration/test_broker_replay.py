"""Replay real Java traffic against rocketq's broker and compare its answers with the 4.9.4 broker's.

The client->broker request frames of ``produce.jsonl``, ``push-consume.jsonl``, ``rebalance-
notify.jsonl``, ``orderly.jsonl``, ``retry.jsonl``, ``pull.jsonl``, ``filter.jsonl`` (SQL92),
``broadcast.jsonl``, ``transaction.jsonl``, ``request-reply.jsonl``, ``autocreate.jsonl`` and
``rocketmq-serialize.jsonl`` (binary ROCKETMQ headers) - captured in that order against one 4.9.4
broker, fresh at the first - are sent in order, one TCP connection per captured connection, to one
fresh rocketq broker: sends, batches, delayed messages, heartbeats, consumer lists, offsets, queue
locks, send-backs to the retry topic, pulls (tag and SQL92), CHECK_CLIENT_CONFIG, half messages and
their END_TRANSACTION, replies. Every answer is compared with the captured one: same response
code, same remark, the same ext-field keys in the same order and the same values - modulo the
broker's address inside offset message ids - and for FOUND pulls the same messages byte for byte
apart from store time stamps and host ports (the commit-log offsets, queue offsets, property
strings in Java HashMap order, body CRCs ... all match, through the last file: the transaction's
half, committed, op and re-stored records and the stored reply take exactly the bytes Java's did).
The broker's own requests are compared too: the CHECK_TRANSACTION_STATE of ``transaction.jsonl``
(header and the half message in its body) and the PUSH_REPLY_MESSAGE_TO_CLIENT of
``request-reply.jsonl``. Consumer id lists are compared as sets (Java lists them in hash order,
rocketq in join order), and the broker must send as many NOTIFY_CONSUMER_IDS_CHANGED per group as
Java did.

Java's broker handled a oneway END_TRANSACTION in a thread pool, after the producer's next send
(the commit-log offsets show it): the replay sends each one after the next answer on its
connection. The transaction check the Java broker ran on its 5 s timer is triggered where the
capture shows it, on a broker clock that runs at the capture's time.

Not compared: pulls the Java broker held (long polling; their answer depends on timing), requests
whose answer depends on the capture's clock (SEARCH_OFFSET_BY_TIMESTAMP, GET_EARLIEST_MSG_STORETIME)
and the index's time stamp in QUERY_MESSAGE answers (its commit-log offset is compared).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from rocketq.broker import Broker, BrokerConfig
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode, decode_frame, decode_messages
from rocketq.protocol.bodies import ConsumerConnection, ConsumeStats, ProducerConnection, TopicStatsTable
from rocketq.protocol.message import MessageExt
from rocketq.protocol.properties import string_to_properties
from rocketq.remoting import RemotingClient, RemotingConnection, run
from tests.wirecaps import frame_bytes, load

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

EXTRA = [
    "push-consume.jsonl",
    "rebalance-notify.jsonl",
    "orderly.jsonl",
    "retry.jsonl",
    "pull.jsonl",
    "filter.jsonl",
    "broadcast.jsonl",
    "transaction.jsonl",
    "request-reply.jsonl",
    "autocreate.jsonl",
    "rocketmq-serialize.jsonl",
]
_LOOSE_OFFSETS: set[str] = set()
_CLOCK_DEPENDENT = {RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, RequestCode.GET_EARLIEST_MSG_STORETIME}
# Pulls the Java consumer sent after a delayed delivery (10 s retry level) that the replay's
# 100 ms levels make early: wait for the delivery (else the queue is empty and the pull's offset
# "moved", which stores an OFFSET_MOVED_EVENT the capture's broker never stored).
_WAIT_BEFORE: dict[tuple[str, int], Callable[[Broker], bool]] = {
    ("retry.jsonl", 67): lambda b: b.store.max_offset("%RETRY%WireRetryGroup", 0) >= 2,
}
_CAPTURE_START = 1795248381.794  # the capture's clock at its first send (produce.jsonl)


def _message_view(m: MessageExt, loose: bool = False) -> tuple[Any, ...]:
    return (
        m.topic, m.queue_id, m.queue_offset, -1 if loose else m.commit_log_offset, m.store_size,
        m.body_crc, m.flag, m.sys_flag, m.born_timestamp, m.born_host.ip, m.store_host.ip, m.reconsume_times,
        m.prepared_transaction_offset, m.body, m.stored_properties,
    )  # fmt: skip


def _topic_stats(body: bytes) -> Any:
    table = TopicStatsTable.decode(body).offset_table
    return [(mq, replace(v, last_update_timestamp=0)) for mq, v in table.items()]


def _consume_stats(body: bytes) -> Any:
    stats = ConsumeStats.decode(body)
    return [(mq, replace(v, last_timestamp=0)) for mq, v in stats.offset_table.items()]


def _connections(body: bytes) -> Any:
    conns = ConsumerConnection.decode(body)
    return replace(conns, connection_set=tuple(replace(c, client_addr="?") for c in conns.connection_set))


def _producers(body: bytes) -> Any:
    conns = ProducerConnection.decode(body)
    return tuple(replace(c, client_addr="?") for c in conns.connection_set)


# Bodies holding store time stamps or client ports, compared without them.
_BODY_NORMALIZERS = {
    RequestCode.GET_TOPIC_STATS_INFO: _topic_stats,
    RequestCode.GET_CONSUME_STATS: _consume_stats,
    RequestCode.GET_CONSUMER_CONNECTION_LIST: _connections,
    RequestCode.GET_PRODUCER_CONNECTION_LIST: _producers,
}


def _normal_ext(ext: dict[str, str], loose: bool) -> dict[str, str]:
    out = dict(ext)
    if "msgId" in out:  # offset message ids: keep the commit-log offsets, drop ip:port
        out["msgId"] = ",".join("?" if loose else part[-16:] for part in out["msgId"].split(","))
    return out


class Replay:
    """Sends captured requests to ``brokers`` (by the captured broker name) and compares answers."""

    def __init__(self, broker: Broker, others: dict[str, Broker] | None = None) -> None:
        self.broker = broker
        self.brokers = {broker.config.broker_name: broker, **(others or {})}
        self.relay_answers: dict[int, RemotingCommand] = {}
        self.clients: dict[tuple[str, int], RemotingClient] = {}
        self.notices: dict[str, int] = {}
        self.compared = 0
        self.mismatches: list[str] = []
        self.pending: list[asyncio.Future[RemotingCommand]] = []
        # requests the broker sends to the clients (CHECK_TRANSACTION_STATE, PUSH_REPLY_...)
        self.from_broker: asyncio.Queue[RemotingCommand] = asyncio.Queue()

    def _notice(self, conn: RemotingConnection, request: RemotingCommand) -> None:
        group = request.ext_fields.get("consumerGroup", "")
        self.notices[group] = self.notices.get(group, 0) + 1

    async def client(self, file: str, conn: int) -> RemotingClient:
        key = (file, conn)
        client = self.clients.get(key)
        if client is None:
            client = RemotingClient()
            client.register_handler(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, self._notice)
            client.register_handler(RequestCode.GET_CONSUMER_RUNNING_INFO, self._running_info)
            client.register_handler(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, self._reset)
            client.register_handler(RequestCode.CHECK_TRANSACTION_STATE, self._from_broker)
            client.register_handler(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, self._from_broker)
            self.clients[key] = client
        return client

    def _running_info(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        """Play the consumer: answer the broker's relayed request as the Java consumer did."""
        answer = self.relay_answers[RequestCode.GET_CONSUMER_RUNNING_INFO]
        return request.response(code=answer.code, remark=answer.remark, body=answer.body)

    def _from_broker(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand | None:
        """Play the producer the broker calls: record the request; a reply push is answered
        SUCCESS, as the Java requester answered it (a check is oneway)."""
        self.from_broker.put_nowait(request)
        return None if request.is_oneway else request.response()

    def _reset(self, conn: RemotingConnection, request: RemotingCommand) -> None:
        self.notices["reset:" + request.ext_fields.get("group", "")] = (
            self.notices.get("reset:" + request.ext_fields.get("group", ""), 0) + 1
        )

    async def close(self) -> None:
        for client in self.clients.values():
            await client.close()
        await asyncio.gather(*self.pending, return_exceptions=True)  # held pulls end with the clients

    async def run_file(self, file: str) -> None:
        lines = load(file)
        replies = {line["reply_to"]: line for line in lines if line["reply_to"] is not None}
        deferred: dict[int, list[RemotingCommand]] = {}
        for line in lines:
            if line["from"] == "broker" and line["to"] == "client":
                request = decode_frame(frame_bytes(line))
                if request.code in (
                    RequestCode.CHECK_TRANSACTION_STATE,
                    RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT,
                ):
                    await self.broker_request(file, line, request)
                continue
            if line["from"] != "client" or line["to"] != "broker":
                continue
            request = decode_frame(frame_bytes(line))
            if request.is_response:
                continue
            client = await self.client(file, line["conn"])
            addr = self.brokers[line["to_name"]].address
            ready = _WAIT_BEFORE.get((file, line["seq"]))
            if ready is not None:  # the capture's consumer asked only once this had happened
                for _ in range(500):
                    if ready(self.broker):
                        break
                    await asyncio.sleep(0.01)
            if request.is_oneway:
                if (
                    request.code == RequestCode.END_TRANSACTION
                    and request.ext_fields.get("fromTransactionCheck") != "true"
                ):
                    deferred.setdefault(line["conn"], []).append(request)  # Java ran it after the next send
                else:
                    await client.invoke_oneway(addr, request)
                continue
            expected = replies.get(line["seq"])
            # a pull the Java broker answered only after 200 ms (or anything after 1 s) was held
            limit = 200 if request.code == RequestCode.PULL_MESSAGE else 1000
            held = expected is not None and expected["t_ms"] - line["t_ms"] > limit
            future = asyncio.ensure_future(client.invoke(addr, request, 30))
            if held or expected is None:
                self.pending.append(future)
                await asyncio.sleep(0.02)
                continue
            got = await asyncio.wait_for(future, 10)
            for later in deferred.pop(line["conn"], []):
                await client.invoke_oneway(addr, later)
            if request.code in _CLOCK_DEPENDENT:
                continue
            self.compare(file, line, request, got, decode_frame(frame_bytes(expected)))

    async def broker_request(self, file: str, line: dict[str, Any], want: RemotingCommand) -> None:
        """A request the Java broker sent a client: make ours send it (the transaction check ran
        on the Java broker's timer) and compare it with the capture."""
        where = f"{file}#{line['seq']} ({line['note'][:60]})"
        if want.code == RequestCode.CHECK_TRANSACTION_STATE:
            await asyncio.sleep(0.05)  # the deferred END_TRANSACTIONs reach the broker first
            self.broker.check_transactions(self.broker.wall() + 7)
        got = await asyncio.wait_for(self.from_broker.get(), 10)
        self.compared += 1
        if (got.code, got.is_oneway) != (want.code, want.is_oneway):
            self.mismatches.append(f"{where}: request {got.code} oneway={got.is_oneway} != {want.code}")
            return
        volatile = {"storeTimestamp", "bornHost", "storeHost", "properties", "offsetMsgId"}
        g_ext = {k: ("?" if k in volatile else v) for k, v in got.ext_fields.items()}
        w_ext = {k: ("?" if k in volatile else v) for k, v in want.ext_fields.items()}
        if list(g_ext.items()) != list(w_ext.items()):
            self.mismatches.append(f"{where}: ext {g_ext} != {w_ext}")
        if (
            "offsetMsgId" in want.ext_fields
            and got.ext_fields["offsetMsgId"][-16:] != want.ext_fields["offsetMsgId"][-16:]
        ):
            self.mismatches.append(f"{where}: offsetMsgId {got.ext_fields['offsetMsgId']}")
        if want.code == RequestCode.CHECK_TRANSACTION_STATE:
            if [_message_view(m) for m in decode_messages(got.body)] != [
                _message_view(m) for m in decode_messages(want.body)
            ]:
                self.mismatches.append(f"{where}: checked message differs")
        else:
            g_props = string_to_properties(got.ext_fields.get("properties", ""))
            w_props = string_to_properties(want.ext_fields.get("properties", ""))
            g_props.pop("PUSH_REPLY_TIME", None)
            w_props.pop("PUSH_REPLY_TIME", None)
            if list(g_props.items()) != list(w_props.items()) or got.body != want.body:
                self.mismatches.append(f"{where}: pushed reply differs: {g_props} != {w_props}")

    def compare(
        self,
        file: str,
        line: dict[str, Any],
        request: RemotingCommand,
        got: RemotingCommand,
        want: RemotingCommand,
    ) -> None:
        where = f"{file}#{line['seq']} ({line['note'][:60]})"
        self.compared += 1
        if got.code != want.code:
            self.mismatches.append(f"{where}: code {got.code} ({got.remark}) != {want.code} ({want.remark})")
            return
        if (got.remark or None) != (want.remark or None):
            self.mismatches.append(f"{where}: remark {got.remark!r} != {want.remark!r}")
        loose = file in _LOOSE_OFFSETS
        if request.code in _BODY_NORMALIZERS:
            norm = _BODY_NORMALIZERS[request.code]
            if norm(got.body) != norm(want.body):
                self.mismatches.append(f"{where}: body {norm(got.body)} != {norm(want.body)}")
            got, want = replace(got, body=b""), replace(want, body=b"")
        g_ext, w_ext = _normal_ext(got.ext_fields, loose), _normal_ext(want.ext_fields, loose)
        if request.code == RequestCode.QUERY_MESSAGE:  # the index's time stamp is the clock's
            g_ext["indexLastUpdateTimestamp"] = w_ext["indexLastUpdateTimestamp"] = "?"
        if list(g_ext.items()) != list(w_ext.items()):
            self.mismatches.append(f"{where}: ext {g_ext} != {w_ext}")
        if request.code == RequestCode.PULL_MESSAGE and want.code == ResponseCode.SUCCESS:
            g_msgs = [_message_view(m, loose) for m in decode_messages(got.body)]
            w_msgs = [_message_view(m, loose) for m in decode_messages(want.body)]
            if g_msgs != w_msgs:
                self.mismatches.append(f"{where}: pulled messages differ:\n{g_msgs}\n{w_msgs}")
        elif request.code in (RequestCode.VIEW_MESSAGE_BY_ID, RequestCode.QUERY_MESSAGE):
            if [_message_view(m) for m in decode_messages(got.body)] != [
                _message_view(m) for m in decode_messages(want.body)
            ]:
                self.mismatches.append(f"{where}: viewed message differs")
        elif request.code == RequestCode.GET_CONSUMER_LIST_BY_GROUP:
            # Java lists members in hash order, rocketq in join order: compare as sets
            if sorted(json.loads(got.body)["consumerIdList"]) != sorted(
                json.loads(want.body)["consumerIdList"]
            ):
                self.mismatches.append(f"{where}: consumer lists differ: {got.body!r} != {want.body!r}")
        elif got.body != want.body:
            self.mismatches.append(f"{where}: body {got.body[:200]!r} != {want.body[:200]!r}")


def test_replay_produce_push_consume_and_pull_captures(tmp_path: Path) -> None:
    async def main() -> Replay:
        config = BrokerConfig(
            port=0,
            data_dir=tmp_path,
            flush="sync",
            message_delay_level=" ".join(["100ms"] * 18),
            enable_property_filter=True,  # as the capture's broker ran
        )
        shift = time.time() - _CAPTURE_START  # the broker's clock runs at the capture's time
        async with Broker(config, clock=lambda: time.time() - shift) as broker:
            replay = Replay(broker)
            try:
                await replay.run_file("produce.jsonl")
                # the DELAY=1 message is due 1 s after it was stored: wait for its delivery,
                # as the capture's consumer started after it
                for _ in range(300):
                    if broker.store.max_offset("WireDemo", 1) == 7:
                        break
                    await asyncio.sleep(0.02)
                assert broker.store.max_offset("WireDemo", 1) == 7
                for name in EXTRA:
                    await replay.run_file(name)
            finally:
                await replay.close()
            return replay

    replay = run(main())
    assert not replay.mismatches, "\n".join(replay.mismatches)
    assert replay.compared >= 260, replay.compared
    # as many NOTIFY_CONSUMER_IDS_CHANGED per group as the captured broker sent
    assert replay.notices == {
        "WirePushGroup": 1,
        "WireRebalanceGroup": 4,
        "WireOrderlyGroup": 4,
        "WireRetryGroup": 1,
        "WirePullGroup": 1,
        "WireSqlGroup": 1,
        "WireTagGroup": 1,
        "WireBroadcastGroup": 1,
        "WireReplyGroup": 1,
        "WireBinaryGroup": 1,
    }


def test_replay_admin_capture_against_two_brokers(tmp_path: Path) -> None:
    """``admin.jsonl``: a consumer and a producer on two brokers while the Java admin tool asks for
    topic stats, consume stats, connections, a relayed running info, creates a group and a topic,
    resets offsets and deletes a topic - each broker answering as its 4.9.4 counterpart did
    (time stamps in stats bodies and client ports aside)."""

    async def main() -> Replay:
        a = BrokerConfig(port=0, data_dir=tmp_path / "a", broker_name="broker-a")
        b = BrokerConfig(port=0, data_dir=tmp_path / "b", broker_name="broker-b")
        async with Broker(a) as broker_a, Broker(b) as broker_b:
            replay = Replay(broker_a, {"broker-b": broker_b})
            for line in load("admin.jsonl"):
                if line["from"] == "client" and "GET_CONSUMER_RUNNING_INFO" in line["note"]:
                    answer = decode_frame(frame_bytes(line))
                    if answer.is_response:
                        replay.relay_answers[RequestCode.GET_CONSUMER_RUNNING_INFO] = answer
            try:
                await replay.run_file("admin.jsonl")
                for _ in range(100):
                    if replay.notices.get("reset:WireAdminGroup", 0) >= 2:
                        break
                    await asyncio.sleep(0.01)
            finally:
                await replay.close()
            return replay

    replay = run(main())
    assert not replay.mismatches, "\n".join(replay.mismatches)
    assert replay.compared >= 50
    # one notice per broker when the consumer joined; one offset reset pushed by each broker
    assert replay.notices == {"WireAdminGroup": 2, "reset:WireAdminGroup": 2}
