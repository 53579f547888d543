"""Replay every name-server request captured from RocketMQ 4.9.4 to our name server, and compare.

Each captured request frame goes, byte for byte as recorded, over a real loopback connection (one
per captured TCP connection) to a :class:`~rocketq.namesrv.NameServer`, in the recorded order. Our
response must equal RocketMQ's in code, remark, ext fields (in order), flag, opaque, serialize
type and body **bytes** — route JSON in both of 4.9.4's dialects, cluster info and topic lists in
Java ``HashMap`` order. Only ``language`` differs (our server says ``PYTHON``), and requests with a
code the name server does not serve: RocketMQ stays silent, we answer ``REQUEST_CODE_NOT_SUPPORTED``.

Two kinds of scenario:

* **Self-contained**: the broker <-> name server frames are in the capture. ``namesrv-register.jsonl``
  holds the brokers' side of the two-broker cluster whose clients are in ``admin.jsonl``; the two
  files were recorded by proxies started about 16.1 s apart, so their frames are merged with
  admin's clock shifted by :data:`ADMIN_CLOCK_OFFSET_MS` (every offset from 16 074 to 16 163 ms
  orders them consistently, i.e. reproduces every captured answer; outside it, some do not).
  ``namesrv-register-compressed.jsonl`` is a whole life of its own.
* **Client scenarios** (every other file): the brokers registered before the capture started, so a
  stand-in broker first registers what a route answer shows, right before the first request that
  RocketMQ answered with that route (over its own connection, with REGISTER_BROKER built by our
  encoders). Everything the capture holds is replayed as recorded: ``TOPIC_NOT_EXIST`` answers
  come before the topic exists, the real brokers' registrations (``autocreate.jsonl``) land, and
  the encoding of each answer follows the client's version and ``acceptStandardJsonOnly``.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from rocketq.namesrv import NameServer, NamesrvConfig
from rocketq.protocol import FrameDecoder, RemotingCommand, RequestCode, ResponseCode, encode_frame
from rocketq.protocol.bodies import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicRouteData,
)
from rocketq.protocol.frame import decode_frame
from rocketq.protocol.headers import RegisterBrokerRequestHeader
from rocketq.remoting import run
from tests import wirecaps

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

ADMIN_CLOCK_OFFSET_MS = 16_100
"""How far admin.jsonl's clock runs behind namesrv-register.jsonl's (see the module docstring)."""

SELF_CONTAINED = ("namesrv-register.jsonl", "admin.jsonl", "namesrv-register-compressed.jsonl")
CLIENT_SCENARIOS = tuple(name for name in wirecaps.frame_files() if name not in SELF_CONTAINED)


@dataclass(frozen=True)
class Frame:
    file: str
    line: dict[str, Any]
    t_ms: float

    @property
    def conn_key(self) -> tuple[str, int]:
        return (self.file, self.line["conn"])

    @property
    def command(self) -> RemotingCommand:
        return decode_frame(wirecaps.frame_bytes(self.line))


def namesrv_frames(name: str, offset_ms: float = 0.0) -> list[Frame]:
    return [
        Frame(name, line, line["t_ms"] + offset_ms)
        for line in wirecaps.load(name)
        if "namesrv" in (line["from"], line["to"])
    ]


class Peer:
    """One captured TCP connection, replayed over a real socket: raw bytes out, commands in."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.decoder = FrameDecoder()
        self.barrier_opaques = itertools.count(1_000_000)

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def receive(self, opaque: int) -> RemotingCommand:
        while True:
            cmd = self.decoder.next_command()
            if cmd is not None:
                assert cmd.is_response, f"the name server sent a request: {cmd}"
                assert cmd.opaque == opaque, f"answer to opaque {cmd.opaque} while waiting for {opaque}"
                return cmd
            data = await asyncio.wait_for(self.reader.read(65536), timeout=10)
            assert data, "the name server closed the connection"
            self.decoder.receive_data(data)

    async def barrier(self) -> None:
        """Wait until everything sent so far on this connection was handled (after a oneway request).

        Requests on one connection are handled in order, so the answer to a read-only request sent
        now proves the oneway request before it has been applied.
        """
        opaque = next(self.barrier_opaques)
        probe = RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO, opaque=opaque)
        await self.send(encode_frame(probe))
        await self.receive(opaque)

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


@dataclass
class Replay:
    server: NameServer
    peers: dict[object, Peer] = field(default_factory=dict)
    versions: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    checked: int = 0
    seeded: list[str] = field(default_factory=list)

    async def peer(self, key: object) -> Peer:
        if key not in self.peers:
            reader, writer = await asyncio.open_connection("127.0.0.1", self.server.port)
            self.peers[key] = Peer(reader, writer)
        return self.peers[key]

    async def run(self, frames: list[Frame], *, stand_in_broker: bool) -> None:
        answers = {(f.file, f.line["reply_to"]): f for f in frames if f.line["reply_to"] is not None}
        for frame in frames:
            if frame.line["to"] != "namesrv":
                continue  # answers are read right after their request
            request = frame.command
            expected = answers.get((frame.file, frame.line["seq"]))
            if stand_in_broker and expected is not None:
                await self.stand_in_registration(request, expected.command)
            peer = await self.peer(frame.conn_key)
            await peer.send(wirecaps.frame_bytes(frame.line))
            if request.is_oneway:
                assert expected is None
                await peer.barrier()
                continue
            ours = await peer.receive(request.opaque)
            where = f"{frame.file} seq {frame.line['seq']} ({frame.line['note']})"
            if expected is None:
                # RocketMQ's name server never answers a code it does not serve; we say so at once.
                assert request.code not in self.server.processor.handlers, where
                assert ours.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED, where
                assert ours.remark == f" request type {request.code} not supported", where
            else:
                assert_same_response(ours, expected.command, where)
            self.checked += 1

    async def stand_in_registration(self, request: RemotingCommand, answer: RemotingCommand) -> None:
        """Register what RocketMQ's answer shows, if our name server does not know the topic yet."""
        if request.code != RequestCode.GET_ROUTEINFO_BY_TOPIC or answer.code != ResponseCode.SUCCESS:
            return
        topic = request.ext_fields["topic"]
        if self.server.routes.topic_route(topic) is not None:
            return
        route = TopicRouteData.decode(answer.body)
        for broker in route.broker_datas:
            (queues,) = [q for q in route.queue_datas if q.broker_name == broker.broker_name]
            config = TopicConfig(
                topic_name=topic,
                read_queue_nums=queues.read_queue_nums,
                write_queue_nums=queues.write_queue_nums,
                perm=queues.perm,
                topic_sys_flag=queues.topic_sys_flag,
            )
            for broker_id, addr in broker.broker_addrs.items():
                assert broker.broker_name is not None
                assert broker.cluster is not None
                version = DataVersion(timestamp=1, counter=next(self.versions))
                body = RegisterBrokerBody(
                    topic_config_serialize_wrapper=TopicConfigSerializeWrapper(
                        topic_config_table={topic: config}, data_version=version
                    )
                ).encode()
                header = RegisterBrokerRequestHeader(
                    broker_name=broker.broker_name,
                    broker_addr=addr,
                    cluster_name=broker.cluster,
                    ha_server_addr=addr,
                    broker_id=broker_id,
                )
                peer = await self.peer(("stand-in broker", addr))
                opaque = next(peer.barrier_opaques)
                register = RemotingCommand.request(
                    RequestCode.REGISTER_BROKER, header.to_ext_fields(), body, opaque=opaque
                )
                await peer.send(encode_frame(register))
                assert (await peer.receive(opaque)).code == ResponseCode.SUCCESS
        self.seeded.append(topic)

    async def close(self) -> None:
        for peer in self.peers.values():
            await peer.close()


def assert_same_response(ours: RemotingCommand, theirs: RemotingCommand, where: str) -> None:
    assert ours.code == theirs.code, where
    assert ours.remark == theirs.remark, where
    assert list(ours.ext_fields.items()) == list(theirs.ext_fields.items()), where
    assert ours.write_empty_ext_fields == theirs.write_empty_ext_fields or bool(ours.ext_fields), where
    assert (ours.flag, ours.opaque, ours.serialize_type) == (
        theirs.flag,
        theirs.opaque,
        theirs.serialize_type,
    )
    assert ours.body == theirs.body, f"{where}\n ours:   {ours.body!r}\n theirs: {theirs.body!r}"


async def replay(frames: list[Frame], *, stand_in_broker: bool) -> Replay:
    async with NameServer(NamesrvConfig(port=0)) as server:
        session = Replay(server)
        try:
            await session.run(frames, stand_in_broker=stand_in_broker)
        finally:
            await session.close()
        return session


def test_two_broker_cluster_with_its_admin_session() -> None:
    frames = namesrv_frames("namesrv-register.jsonl") + namesrv_frames(
        "admin.jsonl", offset_ms=ADMIN_CLOCK_OFFSET_MS
    )
    frames.sort(key=lambda f: f.t_ms)
    session = run(replay(frames, stand_in_broker=False))
    # 10 answered registrations (2 were oneway), 2 unregistrations, and the admin session's routes,
    # cluster infos, topic list and topic deletion: every answer compared.
    assert session.checked == sum(1 for f in frames if f.line["reply_to"] is not None)


def test_compressed_registration_life() -> None:
    frames = namesrv_frames("namesrv-register-compressed.jsonl")
    session = run(replay(frames, stand_in_broker=False))
    assert session.checked == 8  # 2 registrations, 3 data-version queries, 2 routes, 1 unregistration


@pytest.mark.parametrize("name", CLIENT_SCENARIOS)
def test_client_scenario(name: str) -> None:
    frames = namesrv_frames(name)
    session = run(replay(frames, stand_in_broker=True))
    answered = sum(1 for f in frames if f.line["reply_to"] is not None)
    unanswered = sum(
        1
        for f in frames
        if f.line["to"] == "namesrv"
        and not f.command.is_oneway
        and not any(a.line["reply_to"] == f.line["seq"] for a in frames)
    )
    assert session.checked == answered + unanswered
    assert session.checked > 0
