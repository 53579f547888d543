"""Hostile peers against a live ``rocketq server``: issue 12's attacks, and a well-behaved producer
and consumer that measure what the attacks cost them.

Shared by ``tests/integration/test_hostile_peer.py`` (bounded, with generous assertions) and
``bench/bench_hostile.py`` (the figures). Each attack is a function ``attack(namesrv, broker)``
that sends its worst case once over a plain socket and waits for the answer (or the close); an
:class:`Attacker` process repeats one for a given time, so the server is under it the whole
while. The server runs as a subprocess (:func:`start_server`) whose log goes to a file.
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
    HeartbeatData,
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


def heartbeat_16mib_nonstandard() -> bytes:
    """HEART_BEAT of 16 MiB of fastjson's non-standard JSON (``[{a:1},...]``): 6.9 s before."""
    body = b"[" + b",".join([b"{a:1}"] * ((16 * MIB - 512) // 6)) + b"]"
    return _frame(RequestCode.HEART_BEAT, {}, body)


def heartbeat_at_limit() -> bytes:
    """The costliest HEART_BEAT the broker accepts: 1,023 consumer groups of nothing (empty beans)."""
    groups = ",".join([f'{{"groupName":"g{i}"}}' for i in range(1023)])
    body = ('{"clientID":"hostile","consumerDataSet":[' + groups + "]}").encode()
    HeartbeatData.decode(body)
    return _frame(RequestCode.HEART_BEAT, {}, body)


def register_64mib_inflating() -> bytes:
    """A compressed REGISTER_BROKER of ~65 KB that inflates to 64 MiB: 2.2 s and +513 MB before."""
    body = zlib.compress(b"\0" * (64 * MIB), 9)
    header = RegisterBrokerRequestHeader(
        broker_name="evil",
        broker_addr="127.0.0.1:1",
        cluster_name="DefaultCluster",
        ha_server_addr="127.0.0.1:2",
        broker_id=0,
        compressed=True,
    )
    return _frame(RequestCode.REGISTER_BROKER, header.to_ext_fields(), body)


def register_at_limit() -> bytes:
    """The costliest REGISTER_BROKER the name server accepts: 4,096 topics in JSON."""
    names = [f"T{i:05d}" for i in range(4096)]
    table = {n: TopicConfig(topic_name=n, read_queue_nums=4, write_queue_nums=4) for n in names}
    wrapper = TopicConfigSerializeWrapper(topic_config_table=table)
    body = RegisterBrokerBody(topic_config_serialize_wrapper=wrapper).encode()
    header = RegisterBrokerRequestHeader(
        broker_name="big",
        broker_addr="127.0.0.1:3",
        cluster_name="DefaultCluster",
        ha_server_addr="127.0.0.1:4",
        broker_id=0,
        compressed=False,
    )
    return _frame(RequestCode.REGISTER_BROKER, header.to_ext_fields(), body)


def ext_fields_1_5m() -> bytes:
    """A header of 1.5 M ext fields (16 MiB, ROCKETMQ serialization): 1.1 s and +217 MB before."""
    entry = struct.pack(">h", 1) + b"k" + struct.pack(">i", 1) + b"v"
    entries = entry * 1_500_000
    header = struct.pack(">hbhiii", RequestCode.HEART_BEAT, 0, 401, 1, 0, 0) + struct.pack(">i", len(entries))
    header += entries
    return struct.pack(">iI", 4 + len(header), (1 << 24) | len(header)) + header


def batch_760k_empty() -> bytes:
    """SEND_BATCH_MESSAGE of 760,000 empty records (16 MiB): 1.7 s and +161 MB before."""
    body = encode_batch([Message("", b"", 0, {})]) * 760_000
    return _frame(RequestCode.SEND_BATCH_MESSAGE, send_header(TOPIC, batch=True), body)


def batch_at_limit() -> bytes:
    """The costliest SEND_BATCH_MESSAGE the broker stores: 2,048 one-byte messages."""
    body = encode_batch([Message("", b"x", 0, {"UNIQ_KEY": f"{i:032X}"}) for i in range(2048)])
    return _frame(RequestCode.SEND_BATCH_MESSAGE, send_header(TOPIC, batch=True), body)


def half_frame() -> bytes:
    """The first half of a 16 MiB frame (a peer that holds memory and never finishes)."""
    return struct.pack(">iI", 16 * MIB - 4, 100) + b"{" * 99 + b"}" + b"\0" * (8 * MIB)


#: name -> (frame builder, which server it goes to, whether the server closes the connection)
ATTACKS: dict[str, tuple[Callable[[], bytes], str, bool]] = {
    "heartbeat 16 MiB non-standard JSON": (heartbeat_16mib_nonstandard, "broker", False),
    "heartbeat at its limit (1,023 groups)": (heartbeat_at_limit, "broker", False),
    "REGISTER_BROKER inflating to 64 MiB": (register_64mib_inflating, "namesrv", False),
    "REGISTER_BROKER at its limit (4,096 topics)": (register_at_limit, "namesrv", False),
    "header of 1.5 M ext fields": (ext_fields_1_5m, "broker", True),
    "SEND_BATCH of 760 k empty records": (batch_760k_empty, "broker", False),
    "SEND_BATCH at its limit (2,048 messages)": (batch_at_limit, "broker", False),
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


def _attack_loop(name: str, namesrv: str, broker: str, seconds: float, counter: object) -> None:
    builder, target, _closes = ATTACKS[name]
    frame = builder()
    addr = _addr(namesrv if target == "namesrv" else broker)
    deadline = time.monotonic() + seconds
    sock: socket.socket | None = None
    while time.monotonic() < deadline:
        if sock is None:
            sock = socket.create_connection(addr, timeout=30)
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
        self.process = ctx.Process(target=_attack_loop, args=(name, namesrv, broker, seconds, self.count))

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
    "GoodTraffic",
    "Server",
    "half_frame",
    "percentile",
    "pull_bomb_body",
    "start_server",
]
