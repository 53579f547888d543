"""Request-reply through the broker: ``request-reply.jsonl`` played with raw clients as the Java
requester (a producer calling ``request``) and replier (a consumer sending the reply), and the
answers when the requester cannot take the reply."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from rocketq.broker import Broker, BrokerConfig
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode, decode_frame, decode_messages
from rocketq.protocol.properties import string_to_properties
from rocketq.remoting import RemotingClient, RemotingConnection, run
from tests.wirecaps import frame_bytes, load

from .brokerkit import pull_request

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

CAPTURE = {line["seq"]: line for line in load("request-reply.jsonl")}
REQUESTER_ID = "127.0.0.1@8231#2581584612363"


def captured(seq: int) -> RemotingCommand:
    return decode_frame(frame_bytes(CAPTURE[seq]))


class Requester:
    """A raw client playing the requesting producer: it takes pushed replies (or refuses them)."""

    def __init__(self, answer: int = ResponseCode.SUCCESS) -> None:
        self.client = RemotingClient()
        self.pushed: asyncio.Queue[RemotingCommand] = asyncio.Queue()
        self.answer = answer
        self.client.register_handler(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, self._on_push)

    def _on_push(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        self.pushed.put_nowait(request)
        return request.response(code=self.answer, remark=None if self.answer == 0 else "no one waits")


@asynccontextmanager
async def broker_at(data_dir: Path, **overrides: Any) -> AsyncIterator[Broker]:
    config = BrokerConfig(host="127.0.0.1", port=0, data_dir=data_dir, **overrides)
    async with Broker(config) as broker:
        yield broker


def test_the_java_request_reply_exchange(tmp_path: Path) -> None:
    async def main() -> None:
        requester = Requester()
        async with broker_at(tmp_path) as broker, RemotingClient() as replier, RemotingClient() as consumer:
            addr = broker.address
            assert (await replier.invoke(addr, captured(5))).code == ResponseCode.SUCCESS  # WireRequest
            assert (await replier.invoke(addr, captured(37))).code == ResponseCode.SUCCESS  # replier producer
            assert (await requester.client.invoke(addr, captured(45))).code == ResponseCode.SUCCESS
            sent = await requester.client.invoke(addr, captured(47))  # the request message
            want = captured(48)
            assert (sent.code, list(sent.ext_fields)) == (want.code, list(want.ext_fields))
            # the consumer side gets it as the Java consumer did
            got = await consumer.invoke(addr, pull_request("WireReplyGroup", "WireRequest", 0, 0))
            (request_msg,) = decode_messages(got.body)
            (want_msg,) = decode_messages(captured(49).body)
            assert request_msg.stored_properties == want_msg.stored_properties
            assert request_msg.properties["REPLY_TO_CLIENT"] == want_msg.properties["REPLY_TO_CLIENT"]
            # the reply: pushed to the requester, answered to the replier
            answer_task = asyncio.ensure_future(replier.invoke(addr, captured(53), 15))
            push = await asyncio.wait_for(requester.pushed.get(), 5)
            want_push = captured(54)
            assert push.code == RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT
            assert not push.is_oneway
            assert list(push.ext_fields) == list(want_push.ext_fields)  # Java's HashMap order
            volatile = {"storeTimestamp", "bornHost", "storeHost", "properties"}
            for key in set(want_push.ext_fields) - volatile:
                assert push.ext_fields[key] == want_push.ext_fields[key], key
            got_props = string_to_properties(push.ext_fields["properties"])
            want_props = string_to_properties(want_push.ext_fields["properties"])
            assert list(got_props) == list(want_props)  # PUSH_REPLY_TIME first, as Java's map has it
            assert {k: v for k, v in got_props.items() if k != "PUSH_REPLY_TIME"} == {
                k: v for k, v in want_props.items() if k != "PUSH_REPLY_TIME"
            }
            assert got_props["PUSH_REPLY_TIME"] == push.ext_fields["storeTimestamp"]
            assert push.ext_fields["storeHost"] == broker.address
            assert push.body == want_push.body
            answer = await answer_task
            want_answer = captured(56)
            assert (answer.code, answer.remark) == (want_answer.code, want_answer.remark)
            assert list(answer.ext_fields) == list(want_answer.ext_fields)
            assert (answer.ext_fields["queueId"], answer.ext_fields["queueOffset"]) == ("0", "0")
            # stored in the reply topic as the replier sent it (no CLUSTER added)
            stored = await consumer.invoke(addr, pull_request("g", "DefaultCluster_REPLY_TOPIC", 0, 0))
            (reply,) = decode_messages(stored.body)
            assert reply.stored_properties == captured(53).ext_fields["i"]
            assert reply.body == push.body
            assert reply.offset_msg_id == answer.ext_fields["msgId"]
        await requester.client.close()

    run(main())


def test_replies_the_requester_cannot_take(tmp_path: Path) -> None:
    async def main() -> None:
        async with broker_at(tmp_path) as broker, RemotingClient() as replier:
            addr = broker.address
            # nobody registered the requester's client id
            answer = await replier.invoke(addr, captured(53))
            assert answer.code == ResponseCode.SYSTEM_ERROR
            assert answer.remark == f"push reply message fail, channel of <{REQUESTER_ID}> not found."
            assert answer.ext_fields["msgId"].startswith("7F000001")  # stored all the same
            # a requester that refuses it
            requester = Requester(answer=ResponseCode.SYSTEM_ERROR)
            assert (await requester.client.invoke(addr, captured(45))).code == ResponseCode.SUCCESS
            answer = await replier.invoke(addr, captured(53))
            assert (answer.code, answer.remark) == (
                ResponseCode.SYSTEM_ERROR,
                f"push reply message to {REQUESTER_ID}fail.",
            )
            await requester.client.close()
            # no REPLY_TO_CLIENT at all
            bare = captured(53)
            bare.ext_fields["i"] = "CORRELATION_ID\x01c-1"
            answer = await replier.invoke(addr, bare)
            assert (answer.code, answer.remark) == (
                ResponseCode.SYSTEM_ERROR,
                "reply message properties[REPLY_TO_CLIENT] is null",
            )
        async with (
            broker_at(tmp_path / "b", store_reply_message_enable=False) as broker,
            RemotingClient() as replier,
        ):
            requester = Requester()
            addr = broker.address
            await requester.client.invoke(addr, captured(45))
            answer = await replier.invoke(addr, captured(53))
            assert answer.code == ResponseCode.SUCCESS
            assert (answer.ext_fields["msgId"], answer.ext_fields["queueOffset"]) == ("0", "0")
            assert broker.store.max_offset("DefaultCluster_REPLY_TOPIC", 0) == 0
            await requester.client.close()

    run(main())
