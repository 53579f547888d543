"""Every send mode puts the same request on the wire for the same message (issue 25: one send path).

The producer builds every send request with :func:`rocketq.protocol.calls.send_request` and runs
every send through one loop over its send policy, whichever driver carries it. This proves it
from the outside, editing nothing: a loopback server of the test's own (three listeners on
ephemeral 127.0.0.1 ports: a name server that routes every topic to two brokers of one write
queue each, and the two brokers) records each send frame byte for byte and answers it with the
project's codec - SEND_OK, or once, when the test asks, SYSTEM_ERROR, which a send retries on
the other broker. For messages Hypothesis draws (topics, retry topics with reconsume counts,
bodies - some large enough to be compressed -, properties, keys, tags, delay levels, replies,
batch sizes), each mode sends the same message:

* ``Producer.send`` from this thread on its own socket (:mod:`rocketq.client.producer.direct`),
  and from a producer with ``thread_sockets=False`` (the loop's connection,
  ``invoke_threadsafe``);
* ``Producer.send_future`` (the client's loop), ``await Producer.send_async`` on an event loop of
  the test's (``invoke_from_loop``), ``Producer.send_oneway``;
* ``TransactionProducer.send_in_transaction`` (the half message);
* ``BlockingClient.send_batch`` of the one message (Spark's writer's path);
* for batches: ``Producer.send_batch`` both ways, the client loop's ``send_batch``, and
  ``BlockingClient.send_batch``;
* a retry on the other broker after a refusal (every mode that retries).

The frames must be byte-identical once three things are blanked, each what a mode must differ
in: the opaque (each connection numbers its own requests), the oneway bit of the flag
(``send_oneway`` tells the broker not to answer) and the born timestamp (``g``: when the
attempt was built). Before that each frame must re-encode to its own bytes with the project's
codec, so what is compared is what was on the wire. What a mode is *given* differs where its
API says so, and the test gives each the message it would turn the other into: the
transactional half is compared with a plain send of the message carrying ``TRAN_MSG`` and
``PGROUP`` and no ``DELAY`` (what ``send_in_transaction`` adds and drops); ``BlockingClient``
sends bodies as given (it compresses nothing), so it is compared for bodies below the
compression threshold; every mode gets messages already carrying ``UNIQ_KEY`` (and, in batches,
``WAIT``), as the Spark writer prepares them.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketq import ClientConfig, LocalTransactionState, Producer, ProducerConfig, SendStatus
from rocketq.client.blocking import BlockingClient
from rocketq.client.producer.transaction import TransactionProducer
from rocketq.client.validators import SEND_FORBIDDEN_TOPICS
from rocketq.protocol.bodies import BrokerData, QueueData, TopicRouteData
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.command import FLAG_ONEWAY, FLAG_RESPONSE, RemotingCommand
from rocketq.protocol.frame import decode_frame, encode_frame
from rocketq.protocol.headers import SendMessageRequestHeaderV2, SendMessageResponseHeader
from rocketq.protocol.message import Message, encode_batch
from rocketq.protocol.properties import MessageConst

pytestmark = pytest.mark.integration

GROUP = "send_paths"
SENDS = {RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2}
BORN = SendMessageRequestHeaderV2.wire_name_of("born_timestamp")
COMPRESS_FROM = ProducerConfig().compress_msg_body_over_howmuch


@dataclass(frozen=True, slots=True)
class Frame:
    """A send request as it came: which broker, which connection, its bytes."""

    broker: str
    conn: int
    raw: bytes


class _Peer(asyncio.Protocol):
    def __init__(self, server: RecordingServer, role: str, conn: int) -> None:
        self.server = server
        self.role = role
        self.conn = conn
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.server.peers.append(self)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while len(self.buffer) >= 4:
            end = 4 + int.from_bytes(self.buffer[:4], "big")
            if len(self.buffer) < end:
                return
            raw = bytes(self.buffer[:end])
            del self.buffer[:end]
            answer = self.server.answer(self, raw)
            if answer is not None and self.transport is not None:
                self.transport.write(encode_frame(answer))


class RecordingServer:
    """The name server and two brokers of one write queue each, on one loop thread: records
    every send request, answers it SEND_OK (or SYSTEM_ERROR once after :meth:`refuse_next`)."""

    def __init__(self) -> None:
        self.frames: list[Frame] = []
        self.cond = threading.Condition()
        self._refuse = False
        self._offset = 0
        self._conns = 0
        self.addrs: dict[str, str] = {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="send-paths-server", daemon=True)
        self._servers: list[asyncio.Server] = []
        self.peers: list[_Peer] = []

    def start(self) -> None:
        self._thread.start()
        for role in ("namesrv", "broker-a", "broker-b"):
            server = asyncio.run_coroutine_threadsafe(self._listen(role), self._loop).result(10)
            port = server.sockets[0].getsockname()[1]
            self.addrs[role] = f"127.0.0.1:{port}"
            self._servers.append(server)

    async def _listen(self, role: str) -> asyncio.Server:
        def factory() -> _Peer:
            self._conns += 1
            return _Peer(self, role, self._conns)

        return await self._loop.create_server(factory, "127.0.0.1", 0)

    def stop(self) -> None:
        async def close() -> None:
            for server in self._servers:
                server.close()
            for peer in self.peers:
                if peer.transport is not None:
                    peer.transport.close()
            for server in self._servers:
                await server.wait_closed()

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def route(self) -> TopicRouteData:
        return TopicRouteData(
            queue_datas=tuple(QueueData(b, 1, 1, 6) for b in ("broker-a", "broker-b")),
            broker_datas=tuple(
                BrokerData("DefaultCluster", b, {0: self.addrs[b]}) for b in ("broker-a", "broker-b")
            ),
        )

    def refuse_next(self) -> None:
        """Refuse the next send request with SYSTEM_ERROR (a code a producer retries elsewhere)."""
        self._refuse = True

    def answer(self, peer: _Peer, raw: bytes) -> RemotingCommand | None:
        cmd = decode_frame(raw)
        if cmd.flag & FLAG_RESPONSE:
            return None
        if cmd.code in SENDS:
            with self.cond:
                self.frames.append(Frame(peer.role, peer.conn, raw))
                self.cond.notify_all()
            if cmd.flag & FLAG_ONEWAY:
                return None
            if self._refuse:
                self._refuse = False
                return cmd.response(ResponseCode.SYSTEM_ERROR, "refused once by the test")
            self._offset += 1
            header = SendMessageResponseHeader(msg_id="0" * 32, queue_id=0, queue_offset=self._offset)
            fields = {**header.to_ext_fields(), "MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}
            return cmd.response(ext_fields=fields)
        if cmd.flag & FLAG_ONEWAY:  # END_TRANSACTION
            return None
        if cmd.code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
            return cmd.response(body=self.route().encode(browser_compatible=True))
        return cmd.response()  # heartbeats, unregistering

    def count(self) -> int:
        with self.cond:
            return len(self.frames)

    def since(self, start: int, n: int) -> list[Frame]:
        """The ``n`` frames after the first ``start`` (waiting for them), and no more."""
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.frames) >= start + n, 10), "the frames did not come"
            frames = self.frames[start:]
        assert len(frames) == n, [f.broker for f in frames]
        return frames


@dataclass
class Clients:
    server: RecordingServer
    direct: Producer
    handover: Producer
    tx: TransactionProducer
    blocking: BlockingClient


@pytest.fixture(scope="module")
def clients() -> Iterator[Clients]:
    server = RecordingServer()
    server.start()
    try:

        def config(name: str) -> ClientConfig:
            return ClientConfig(namesrv=server.addrs["namesrv"], client_ip="127.0.0.1", instance_name=name)

        direct = Producer(GROUP, client_config=config("direct")).start()
        handover = Producer(
            GROUP, client_config=config("handover"), config=ProducerConfig(thread_sockets=False)
        ).start()
        tx = TransactionProducer(
            GROUP, checker=lambda msg: LocalTransactionState.COMMIT_MESSAGE, client_config=config("tx")
        ).start()
        blocking = BlockingClient(server.addrs["namesrv"])
        try:
            yield Clients(server, direct, handover, tx, blocking)
        finally:
            blocking.close()
            for producer in (direct, handover, tx):
                producer.shutdown()
    finally:
        server.stop()


def normalized(raw: bytes) -> bytes:
    """``raw`` with its opaque, oneway bit and born timestamp blanked, re-encoded (after checking
    that the codec gives back the bytes that were on the wire)."""
    cmd = decode_frame(raw)
    assert encode_frame(cmd) == raw
    ext = {k: "0" if k == BORN else v for k, v in cmd.ext_fields.items()}
    return encode_frame(replace(cmd, opaque=0, flag=cmd.flag & ~FLAG_ONEWAY, ext_fields=ext))


def run_mode(c: Clients, send: Callable[[], object], *, refuse: bool = False, frames: int = 1) -> list[Frame]:
    """The frames one send mode put on the wire (two when its first attempt is refused)."""
    start = c.server.count()
    if refuse:
        c.server.refuse_next()
    result = send()
    got = c.server.since(start, frames + refuse)
    if result is not None:
        assert getattr(result, "status", SendStatus.SEND_OK) is SendStatus.SEND_OK
    if refuse:
        assert got[0].broker != got[1].broker  # the retry went to the other broker
    return got


# ------------------------------------------------------------------------------------ strategies

_names = st.from_regex(r"[A-Za-z0-9_|-]{1,40}", fullmatch=True).filter(
    lambda t: t not in SEND_FORBIDDEN_TOPICS
)
_values = st.text(
    st.characters(codec="utf-8", exclude_characters="\x01\x02", exclude_categories=("Cs",)),
    min_size=1,
    max_size=24,
)
_user_props = st.dictionaries(st.from_regex(r"u[a-z0-9]{0,10}", fullmatch=True), _values, max_size=4)
_uniq_keys = st.from_regex(r"[0-9A-F]{32}", fullmatch=True)  # as next_uniq_id writes them
_words = st.from_regex(r"[A-Za-z0-9_.-]{1,12}", fullmatch=True)


@st.composite
def messages(draw: st.DrawFn) -> Message:
    """One message as a user might send it, with its ``UNIQ_KEY`` already set."""
    retry_topic = draw(st.integers(0, 9)) == 0
    topic = f"%RETRY%{draw(_names)}" if retry_topic else draw(_names)
    size = draw(st.sampled_from([1, 64, 1024, COMPRESS_FROM + 100]))
    body = draw(st.binary(min_size=size, max_size=size))
    msg = Message(topic, body, draw(st.integers(0, 2**31 - 1)), dict(draw(_user_props)))
    msg.tags = draw(st.none() | _words)
    msg.keys = draw(st.lists(_words, max_size=3))
    msg.delay_time_level = draw(st.integers(0, 18))
    if retry_topic:
        msg.properties[MessageConst.RECONSUME_TIME] = str(draw(st.integers(0, 16)))
        msg.properties[MessageConst.MAX_RECONSUME_TIMES] = str(draw(st.integers(-1, 16)))
    if draw(st.booleans()):
        msg.properties[MessageConst.MSG_TYPE] = "reply"
    msg.properties[MessageConst.UNIQ_KEY] = draw(_uniq_keys)
    return msg


def copy(msg: Message) -> Message:
    return Message(msg.topic, msg.body, msg.flag, dict(msg.properties))


# ------------------------------------------------------------------------------------ the tests


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(msg=messages(), refuse=st.booleans())
def test_every_single_send_mode_puts_the_same_bytes_on_the_wire(
    clients: Clients, msg: Message, refuse: bool
) -> None:
    c = clients
    reference = run_mode(c, lambda: c.direct.send(copy(msg)))
    (want,) = {normalized(f.raw) for f in reference}
    direct_conn = reference[0].conn

    async def from_a_loop_of_ours() -> object:
        return await c.direct.send_async(copy(msg))

    modes: dict[str, list[Frame]] = {
        "send, thread socket, retried": run_mode(c, lambda: c.direct.send(copy(msg)), refuse=refuse),
        "send, hand-over": run_mode(c, lambda: c.handover.send(copy(msg)), refuse=refuse),
        "send_future": run_mode(c, lambda: c.direct.send_future(copy(msg)).result(10), refuse=refuse),
        "send_async": run_mode(c, lambda: asyncio.run(from_a_loop_of_ours()), refuse=refuse),
        "send_oneway": run_mode(c, lambda: c.direct.send_oneway(copy(msg))),
    }
    if len(msg.body) < COMPRESS_FROM:  # BlockingClient compresses nothing
        queue = next(
            q for q in c.blocking.write_queues(msg.topic)[0] if q.queue.broker_name == reference[0].broker
        )
        modes["BlockingClient.send_batch of one"] = run_mode(
            c, lambda: c.blocking.send_batch(queue, [copy(msg)], producer_group=GROUP)
        )
    for mode, frames in modes.items():
        for frame in frames:
            assert normalized(frame.raw) == want, mode
    # the modes did take different transports: this thread's socket, the loop's connection
    assert modes["send_future"][-1].conn != direct_conn
    assert decode_frame(modes["send_oneway"][0].raw).flag & FLAG_ONEWAY

    if not msg.topic.startswith("%RETRY%"):
        # the half message is the message with TRAN_MSG and PGROUP, without DELAY
        half = copy(msg)
        half.properties.pop(MessageConst.DELAY, None)
        half.properties[MessageConst.TRAN_MSG] = "true"
        half.properties[MessageConst.PGROUP] = GROUP
        (want_half,) = {normalized(f.raw) for f in run_mode(c, lambda: c.direct.send(copy(half)))}
        commit = LocalTransactionState.COMMIT_MESSAGE
        frames = run_mode(c, lambda: c.tx.send_in_transaction(copy(msg), lambda m, a: commit), refuse=refuse)
        assert {normalized(f.raw) for f in frames} == {want_half}


@st.composite
def batches(draw: st.DrawFn) -> list[Message]:
    topic = draw(_names)
    out = []
    for _ in range(draw(st.integers(2, 8))):
        msg = Message(
            topic,
            draw(st.binary(min_size=1, max_size=300)),
            draw(st.integers(0, 255)),
            dict(draw(_user_props)),
        )
        msg.tags = draw(st.none() | _words)
        msg.keys = draw(st.lists(_words, max_size=2))
        msg.properties[MessageConst.UNIQ_KEY] = draw(_uniq_keys)
        msg.properties[MessageConst.WAIT] = "true"
        out.append(msg)
    return out


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(msgs=batches(), refuse=st.booleans())
def test_every_batch_send_mode_puts_the_same_bytes_on_the_wire(
    clients: Clients, msgs: list[Message], refuse: bool
) -> None:
    c = clients
    reference = run_mode(c, lambda: c.direct.send_batch([copy(m) for m in msgs]))
    (want,) = {normalized(f.raw) for f in reference}
    assert decode_frame(reference[0].raw).code == RequestCode.SEND_BATCH_MESSAGE
    core = c.direct.core
    queue = next(
        q for q in c.blocking.write_queues(msgs[0].topic)[0] if q.queue.broker_name == reference[0].broker
    )
    modes = {
        "send_batch, thread socket": run_mode(
            c, lambda: c.direct.send_batch([copy(m) for m in msgs]), refuse=refuse
        ),
        "send_batch, hand-over": run_mode(
            c, lambda: c.handover.send_batch([copy(m) for m in msgs]), refuse=refuse
        ),
        "send_batch on the loop": run_mode(
            c, lambda: core.instance.loop_thread.call(core.send_batch([copy(m) for m in msgs])), refuse=refuse
        ),
        "BlockingClient.send_batch": run_mode(
            c, lambda: c.blocking.send_batch(queue, [copy(m) for m in msgs], producer_group=GROUP)
        ),
    }
    for mode, frames in modes.items():
        for frame in frames:
            assert normalized(frame.raw) == want, mode
    # the body, too, is the batch encoded once
    assert decode_frame(reference[0].raw).body == encode_batch(msgs)
