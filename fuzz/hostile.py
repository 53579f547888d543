"""Hostile peers against a live ``rocketq server``: issue 12's attacks, the costliest requests the
server accepts, and a well-behaved producer and consumer that measure what they cost.

Shared by ``tests/integration/test_hostile_peer.py`` (bounded, with generous assertions) and
``bench/bench_hostile.py`` (the figures). :data:`ATTACKS` maps each attack's name to a builder of
its frame (or frames, sent in turn); an :class:`Attacker` process sends them back to back over a
plain socket for a given time, each time waiting for the answer (or the close), so the server is
under it the whole while. :func:`measure` runs one attack against a fresh server (a subprocess,
:func:`start_server`, whose log goes to a file) while :class:`GoodTraffic` works, and gives the
:class:`Figures`.
"""

from __future__ import annotations

import multiprocessing
import os
import socket
import struct
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from rocketq.embedded import READY_PREFIX, parse_ready_line
from rocketq.protocol import RemotingCommand, RequestCode, encode_frame
from rocketq.protocol.bodies import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
)
from rocketq.protocol.headers import (
    PullMessageRequestHeader,
    RegisterBrokerRequestHeader,
    SendMessageRequestHeaderV2,
)
from rocketq.protocol.message import Message, encode_batch, encode_message
from rocketq.protocol.properties import properties_to_string
from rocketq.remoting import BlockingRemotingClient

MIB = 1024 * 1024
TOPIC = "HostileTopic"

# ------------------------------------------------------------------------------------- frames


def _addr(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


def _frame(code: int, ext: dict[str, str], body: bytes = b"") -> bytes:
    return encode_frame(RemotingCommand.request(code, ext, body=body))


def send_header(topic: str, *, batch: bool = False, queue_id: int = 0) -> dict[str, str]:
    return SendMessageRequestHeaderV2(
        producer_group="hostile",
        topic=topic,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=queue_id,
        sys_flag=0,
        born_timestamp=int(time.time() * 1000),
        flag=0,
        properties=properties_to_string({"WAIT": "true"}),
        batch=batch,
    ).to_ext_fields()


def _fill(prefix: bytes, item: Callable[[int], bytes], suffix: bytes, size: int) -> tuple[bytes, int]:
    """``prefix`` + as many ``item(i)`` joined by commas as fit ``size`` bytes + ``suffix``."""
    items: list[bytes] = []
    used = len(prefix) + len(suffix)
    while True:
        one = item(len(items))
        if used + len(one) + 1 > size:
            break
        items.append(one)
        used += len(one) + 1
    return prefix + b",".join(items) + suffix, len(items)


#: Room for a request's header inside a 16 MiB frame.
_BODY_ROOM = 16 * MIB - 4096


def heartbeat_16mib_nonstandard() -> bytes:
    """HEART_BEAT of 16 MiB of fastjson's non-standard JSON (``[{a:1},...]``): 6.9 s before.
    Refused now before decoding: no RocketMQ peer packs objects this densely."""
    body = b"[" + b",".join([b"{a:1}"] * ((16 * MIB - 512) // 6)) + b"]"
    return _frame(RequestCode.HEART_BEAT, {}, body)


def heartbeat_producer_groups() -> bytes:
    """The costliest HEART_BEAT accepted: 16 MiB of producer groups (about 670,000), RocketMQ's
    densest bean. Decoded off the loop and registered in slices."""
    body, _ = _fill(
        b'{"clientID":"hostile-p","consumerDataSet":[],"producerDataSet":[',
        lambda i: b'{"groupName":"pg%06d"}' % i,
        b"]}",
        _BODY_ROOM,
    )
    return _frame(RequestCode.HEART_BEAT, {}, body)


_SUB = (
    b'{"classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":"*",'
    b'"subVersion":1795248586842,"tagsSet":[],"topic":"T%06d"}'
)


def heartbeat_subscriptions() -> bytes:
    """A HEART_BEAT of one consumer group subscribing to 16 MiB of topics (about 123,000)."""
    body, _ = _fill(
        b'{"clientID":"hostile-s","consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET",'
        b'"consumeType":"CONSUME_PASSIVELY","groupName":"hostile-subs","messageModel":"CLUSTERING",'
        b'"subscriptionDataSet":[',
        lambda i: _SUB % i,
        b'],"unitMode":false}],"producerDataSet":[]}',
        _BODY_ROOM,
    )
    return _frame(RequestCode.HEART_BEAT, {}, body)


def heartbeat_consumer_groups() -> bytes:
    """A HEART_BEAT of 4 MiB of consumer groups (about 13,000, each with one subscription): every
    group is a subscription group config and a retry topic for the broker to create."""
    body, _ = _fill(
        b'{"clientID":"hostile-c","consumerDataSet":[',
        lambda i: (
            b'{"consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","consumeType":"CONSUME_PASSIVELY",'
            b'"groupName":"hostile-g%06d","messageModel":"CLUSTERING","subscriptionDataSet":[%s],'
            b'"unitMode":false}' % (i, _SUB % 0)
        ),
        b'],"producerDataSet":[]}',
        4 * MIB,
    )
    return _frame(RequestCode.HEART_BEAT, {}, body)


def _register(body: bytes, *, compressed: bool, name: str) -> bytes:
    header = RegisterBrokerRequestHeader(
        broker_name=name,
        broker_addr="127.0.0.1:1",
        cluster_name="HostileCluster",
        ha_server_addr="127.0.0.1:2",
        broker_id=0,
        compressed=compressed,
    )
    return _frame(RequestCode.REGISTER_BROKER, header.to_ext_fields(), body)


def _topics(count: int, version: int) -> RegisterBrokerBody:
    table = {
        f"HostileTopic{i:06d}": TopicConfig(
            topic_name=f"HostileTopic{i:06d}", read_queue_nums=8, write_queue_nums=8
        )
        for i in range(count)
    }
    wrapper = TopicConfigSerializeWrapper(
        topic_config_table=table, data_version=DataVersion(counter=version, timestamp=version)
    )
    return RegisterBrokerBody(topic_config_serialize_wrapper=wrapper)


def register_64mib_inflating() -> bytes:
    """A compressed REGISTER_BROKER of ~65 KB that inflates to 64 MiB: 2.2 s and +513 MB before.
    Refused now once 16 MiB are inflated, on the worker thread."""
    return _register(zlib.compress(b"\0" * (64 * MIB), 9), compressed=True, name="bomb")


def register_json_16mib() -> list[bytes]:
    """The largest JSON REGISTER_BROKER: 16 MiB, about 100,000 topics, in two data versions sent
    in turn, so that the name server writes every topic every time."""
    return [
        _register(_topics(100_000, version).encode(), compressed=False, name="big-json") for version in (1, 2)
    ]


def register_compressed_16mib() -> list[bytes]:
    """A compressed REGISTER_BROKER inflating to 15.6 MiB: 400,000 topics, two data versions."""
    return [
        _register(_topics(400_000, version).encode(compress=True), compressed=True, name="big-zip")
        for version in (1, 2)
    ]


def ext_fields_1_5m() -> bytes:
    """A header of 1.5 M ext fields (16 MiB, ROCKETMQ serialization): 1.1 s and +217 MB before."""
    entry = struct.pack(">h", 1) + b"k" + struct.pack(">i", 1) + b"v"
    entries = entry * 1_500_000
    header = struct.pack(">hbhiii", RequestCode.HEART_BEAT, 0, 401, 1, 0, 0) + struct.pack(">i", len(entries))
    header += entries
    return struct.pack(">iI", 4 + len(header), (1 << 24) | len(header)) + header


def batch_760k_empty() -> bytes:
    """SEND_BATCH_MESSAGE of 760,000 empty records (16 MiB): 1.7 s and +161 MB before. Refused
    now before decoding: over ``maxMessageSize``."""
    body = encode_batch([Message("", b"", 0, {})]) * 760_000
    return _frame(RequestCode.SEND_BATCH_MESSAGE, send_header(TOPIC, batch=True), body)


def batch_at_limit() -> bytes:
    """The costliest SEND_BATCH_MESSAGE stored: as many one-byte messages as fit 4 MiB stored
    (about 24,000, each with its unique key, as the Java producer sends them)."""
    count = 24_000
    body = encode_batch([Message("", b"x", 0, {"UNIQ_KEY": f"{i:032X}"}) for i in range(count)])
    return _frame(RequestCode.SEND_BATCH_MESSAGE, send_header(TOPIC, batch=True), body)


def lock_batch_16mib() -> bytes:
    """LOCK_BATCH_MQ of 16 MiB of queues (about 260,000)."""
    body, _ = _fill(
        b'{"clientId":"hostile-l","consumerGroup":"hostile-lock","mqSet":[',
        lambda i: b'{"brokerName":"broker-a","queueId":%d,"topic":"HostileLock"}' % i,
        b"]}",
        _BODY_ROOM,
    )
    return _frame(RequestCode.LOCK_BATCH_MQ, {}, body)


def half_frame() -> bytes:
    """The first half of a 16 MiB frame (a peer that holds memory and never finishes)."""
    return struct.pack(">iI", 16 * MIB - 4, 100) + b"{" * 99 + b"}" + b"\0" * (8 * MIB)


#: name -> (builder of the frame, or of frames sent in turn; which server it goes to; whether
#: the server closes the connection)
ATTACKS: dict[str, tuple[Callable[[], bytes | list[bytes]], str, bool]] = {
    "heartbeat 16 MiB non-standard JSON": (heartbeat_16mib_nonstandard, "broker", False),
    "heartbeat 16 MiB of producer groups (670 k)": (heartbeat_producer_groups, "broker", False),
    "heartbeat 16 MiB, one group of 123 k subs": (heartbeat_subscriptions, "broker", False),
    "heartbeat 4 MiB of 13 k consumer groups": (heartbeat_consumer_groups, "broker", False),
    "LOCK_BATCH_MQ 16 MiB (260 k queues)": (lock_batch_16mib, "broker", False),
    "REGISTER_BROKER inflating to 64 MiB": (register_64mib_inflating, "namesrv", False),
    "REGISTER_BROKER 16 MiB JSON (100 k topics)": (register_json_16mib, "namesrv", False),
    "REGISTER_BROKER deflated, 400 k topics": (register_compressed_16mib, "namesrv", False),
    "header of 1.5 M ext fields": (ext_fields_1_5m, "broker", True),
    "SEND_BATCH of 760 k empty records": (batch_760k_empty, "broker", False),
    "SEND_BATCH of 4 MiB stored (24 k messages)": (batch_at_limit, "broker", False),
}


def _read_frame(sock: socket.socket) -> bytes | None:
    head = b""
    while len(head) < 4:
        chunk = sock.recv(4 - len(head))
        if not chunk:
            return None
        head += chunk
    (length,) = struct.unpack(">i", head)
    data = b""
    while len(data) < length:
        chunk = sock.recv(min(1 << 20, length - len(data)))
        if not chunk:
            return None
        data += chunk
    return head + data


def _attack_loop(
    name: str, namesrv: str, broker: str, seconds: float, counter: object, ready: object
) -> None:
    builder, target, _closes = ATTACKS[name]
    built = builder()
    frames = built if isinstance(built, list) else [built]
    addr = _addr(namesrv if target == "namesrv" else broker)
    ready.set()  # type: ignore[attr-defined]
    deadline = time.monotonic() + seconds
    sock: socket.socket | None = None
    rounds = 0
    while time.monotonic() < deadline:
        if sock is None:
            sock = socket.create_connection(addr, timeout=60)
        frame = frames[rounds % len(frames)]
        rounds += 1
        try:
            sock.sendall(frame)
            answer = _read_frame(sock)
        except OSError:
            answer = None
        counter.value += 1  # type: ignore[attr-defined]
        if answer is None:  # the server closed the connection: come back
            sock.close()
            sock = None
    if sock is not None:
        sock.close()


class Attacker:
    """One attack repeated by a separate process for ``seconds`` (so it competes for the server, not
    for the measuring process's interpreter)."""

    def __init__(self, name: str, namesrv: str, broker: str, seconds: float) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.count = ctx.Value("i", 0)
        #: set once the attack's frames are built and it begins
        self.ready = ctx.Event()
        self.process = ctx.Process(
            target=_attack_loop, args=(name, namesrv, broker, seconds, self.count, self.ready)
        )

    def __enter__(self) -> Attacker:
        self.process.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.join(120)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()


# ------------------------------------------------------------------------------------- server


@dataclass
class Server:
    process: subprocess.Popen[str]
    namesrv: str
    broker: str
    log_path: Path

    def rss(self) -> int:
        """Resident memory of the server process, bytes."""
        with open(f"/proc/{self.process.pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")


@contextmanager
def start_server(data_dir: Path, log_path: Path) -> Iterator[Server]:
    """``rocketq server`` on free loopback ports, its log (stderr) into ``log_path``; stopped by pid."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with log_path.open("w", encoding="utf-8") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "rocketq",
                "server",
                "--data-dir",
                str(data_dir),
                "--namesrv-port",
                "0",
                "--broker-port",
                "0",
            ],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            env=env,
        )
        assert proc.stdout is not None
        try:
            line = proc.stdout.readline()
            if not line.startswith(READY_PREFIX):
                raise RuntimeError(f"rocketq server did not start: {line!r}")
            ready = parse_ready_line(line.strip())
            yield Server(proc, ready.namesrv_addr, ready.broker_addr, log_path)
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            proc.stdout.close()


# ------------------------------------------------------------------------------------- good clients


@dataclass
class GoodTraffic:
    """A producer sending 1 KiB messages one after the other (latency of each, seconds) and a
    consumer pulling them back, in threads of this process, until :meth:`stop`."""

    broker: str
    latencies: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    pulled: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> GoodTraffic:
        self._threads = [threading.Thread(target=self._produce), threading.Thread(target=self._consume)]
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(30)

    def take(self) -> list[float]:
        taken, self.latencies = self.latencies, []
        return taken

    def _produce(self) -> None:
        body = b"g" * 1024
        with BlockingRemotingClient(self.broker, request_timeout=10.0) as client:
            while not self._stop.is_set():
                request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, send_header(TOPIC), body)
                started = time.perf_counter()
                try:
                    response = client.invoke(request)
                except Exception as exc:  # a failed send is what the test looks for
                    self.failures.append(f"send: {exc}")
                    continue
                self.latencies.append(time.perf_counter() - started)
                if response.code != 0:
                    self.failures.append(f"send answered {response.code}: {response.remark}")
                time.sleep(0.002)

    def _consume(self) -> None:
        offset = 0
        with BlockingRemotingClient(self.broker, request_timeout=10.0) as client:
            while not self._stop.is_set():
                header = PullMessageRequestHeader(
                    consumer_group="good",
                    topic=TOPIC,
                    queue_id=0,
                    queue_offset=offset,
                    max_msg_nums=32,
                    sys_flag=4,  # the subscription is in the request
                    commit_offset=0,
                    suspend_timeout_millis=1000,
                    subscription="*",
                    sub_version=0,
                )
                try:
                    response = client.invoke(
                        RemotingCommand.request(RequestCode.PULL_MESSAGE, header.to_ext_fields())
                    )
                except Exception as exc:
                    self.failures.append(f"pull: {exc}")
                    continue
                next_offset = response.ext_fields.get("nextBeginOffset")
                if response.code == 0:
                    self.pulled += int(next_offset or offset) - offset
                if next_offset is not None:
                    offset = int(next_offset)
                else:
                    time.sleep(0.05)


@dataclass
class Figures:
    """What one attack cost a well-behaved producer, and the server's memory."""

    name: str
    rounds: int  #: attack requests answered (or connections closed on them)
    latencies: list[float]  #: the good producer's sends during the attack, seconds
    failures: list[str]  #: the good clients' failed calls
    pulled: int  #: messages the good consumer pulled during the attack
    rss_before: int  #: server RSS before the attack, bytes
    rss_peak: int  #: highest RSS sampled (every 50 ms) during it
    rss_after: int  #: RSS 2 s after it ended
    errors: list[str]  #: ERROR and traceback lines in the server's log
    alive: bool  #: the server still running afterwards

    @property
    def p50(self) -> float:
        return percentile(self.latencies, 0.5)

    @property
    def p99(self) -> float:
        return percentile(self.latencies, 0.99)

    @property
    def worst(self) -> float:
        return max(self.latencies, default=float("nan"))


def measure(name: str | None, seconds: float, workdir: Path) -> Figures:
    """Run ``name`` (``None``: no attack, the baseline) for ``seconds`` against a fresh ``rocketq
    server`` while a good producer and consumer work, and measure them and the server."""
    workdir.mkdir(parents=True, exist_ok=True)
    with start_server(workdir / "data", workdir / "server.log") as server:
        good = GoodTraffic(server.broker).start()
        peak = [0]
        stop = threading.Event()

        def sample() -> None:
            while not stop.wait(0.05):
                peak[0] = max(peak[0], server.rss())

        sampler = threading.Thread(target=sample)
        rounds = 0
        try:
            time.sleep(1.0)  # warm up: topic auto-created, routes, first pulls
            rss_before = server.rss()
            if name is None:
                good.take()
                sampler.start()
                time.sleep(seconds)
            else:
                with Attacker(name, server.namesrv, server.broker, seconds) as attacker:
                    attacker.ready.wait(120)
                    good.take()
                    sampler.start()
                    attacker.process.join(seconds + 120)
                rounds = attacker.count.value
            latencies = good.take()
            pulled_during = good.pulled
            stop.set()
            sampler.join()
        finally:
            stop.set()
            good.stop()
        time.sleep(2.0)
        alive = server.process.poll() is None
        rss_after = server.rss() if alive else 0
        errors = [line for line in server.log().splitlines() if " ERROR " in line or "Traceback" in line]
    return Figures(
        name or "(none: baseline)",
        rounds,
        latencies,
        list(good.failures),
        pulled_during,
        rss_before,
        max(peak[0], rss_before),
        rss_after,
        errors,
        alive,
    )


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def pull_bomb_body(inflated: int = 256 * MIB) -> bytes:
    """A FOUND pull body whose messages' zlib bodies inflate to ``inflated`` bytes in all."""
    one = zlib.compress(b"\0" * (16 * MIB), 9)
    record = encode_message(topic=TOPIC, body=one, sys_flag=0x301)
    return record * (inflated // (16 * MIB))


__all__ = [
    "ATTACKS",
    "Attacker",
    "Figures",
    "GoodTraffic",
    "Server",
    "half_frame",
    "measure",
    "percentile",
    "pull_bomb_body",
    "start_server",
]
