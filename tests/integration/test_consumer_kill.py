"""A ``rocketq consume`` process killed in the middle of a stream: its queues move to the survivor,
and every message sent is consumed at least once; the duplicates are counted.

Two ways a consumer disappears, with the broker configured to expire silent clients after 2 s
(scanned every 0.5 s) and the consumers heartbeating every 0.5 s:

* SIGKILL: the kernel closes the process's connections, the broker drops the client at once and
  tells the group (NOTIFY_CONSUMER_IDS_CHANGED);
* SIGSTOP (then SIGKILL): the connection stays open and silent, so only the broker's heartbeat
  expiry can notice - the survivor must take over while the stopped process still holds its socket.

Duplicates are what the killed consumer printed but had not committed yet (offsets are committed
every 5 s and with each pull): the survivor starts those queues from the last committed offset and
delivers them again. Every duplicate must be one of those; nothing may be lost.
"""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketq import ClientConfig, Message, Producer
from rocketq.admin import Admin
from tests.integration.clientkit import ClusterThread
from tests.integration.clikit import CliProcess, consume_args

pytestmark = pytest.mark.integration

TOPIC = "KillT"
QUEUES = 8
ALL = {f"broker-a:{i}" for i in range(QUEUES)}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ClusterThread]:
    c = ClusterThread(tmp_path / "cluster", channel_expired_timeout=2.0, client_scan_interval=0.5)
    try:
        with Admin(c.namesrv) as admin:
            admin.create_topic(TOPIC, queues=QUEUES)
        yield c
    finally:
        c.close()


class Stream:
    """Sends numbered messages from a thread at a steady rate."""

    def __init__(self, cluster: ClusterThread, prefix: str) -> None:
        self.producer = Producer(
            "kill_producer", client_config=ClientConfig(namesrv=cluster.namesrv, client_ip="127.0.0.1")
        ).start()
        self.prefix = prefix
        self.sent: list[str] = []

    def send(self, n: int, rate: float | None = None) -> None:
        start = time.monotonic()
        base = len(self.sent)
        for i in range(n):
            if rate is not None:
                delay = start + i / rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            body = f"{self.prefix}-{base + i:06d}"
            self.producer.send(Message(TOPIC, body))
            self.sent.append(body)

    def send_in_background(self, n: int, rate: float) -> threading.Thread:
        t = threading.Thread(target=self.send, args=(n, rate), daemon=True)
        t.start()
        return t

    def close(self) -> None:
        self.producer.shutdown()


def start_pair(cluster: ClusterThread, group: str) -> list[CliProcess]:
    return [
        CliProcess(
            consume_args(
                cluster.namesrv,
                TOPIC,
                group,
                "--from",
                "first",
                "--instance",
                name,
                "--heartbeat-interval",
                "0.5",
            )
        )
        for name in ("victim", "survivor")
    ]


def received(procs: list[CliProcess]) -> Counter[str]:
    return Counter(r.body for p in procs for r in p.recvs())


def run_scenario(cluster: ClusterThread, group: str, how: str) -> tuple[int, int]:
    """Start two consumers, stream, make the first disappear ``how``; (messages sent, duplicates)."""
    procs = start_pair(cluster, group)
    stream = Stream(cluster, group)
    victim, survivor = procs
    try:
        for p in procs:
            assert p.wait_for(lambda _l, p=p: len(p.owned(TOPIC) or ()) == QUEUES // 2, 30.0), p.errors
        stream.send(200)
        assert victim.wait_for(lambda _l: set(received(procs)) == set(stream.sent), 30.0)
        assert victim.recvs(), "the victim consumed nothing before it was stopped"

        sender = stream.send_in_background(300, rate=200.0)
        time.sleep(0.3)  # let the victim be mid-stream when it goes
        if how == "kill":
            victim.signal(signal.SIGKILL)
        else:
            victim.pause()
        t0 = time.monotonic()
        assert survivor.wait_for(lambda _l: set(survivor.owned(TOPIC) or ()) == ALL, 20.0), survivor.lines[
            -5:
        ]
        takeover = time.monotonic() - t0
        if how == "stop":
            # only the heartbeat expiry (2 s) can have noticed a process that still holds its socket
            assert victim.proc.poll() is None
            assert takeover >= 1.0
            victim.signal(signal.SIGKILL)
        else:
            assert takeover < 5.0  # the broker saw the connection close; no expiry needed
        assert victim.wait(10.0) == -signal.SIGKILL
        sender.join(30.0)
        assert not sender.is_alive()
        assert survivor.wait_for(lambda _l: set(received(procs)) >= set(stream.sent), 30.0), len(
            set(stream.sent) - set(received(procs))
        )
        counts = received(procs)
        assert set(counts) == set(stream.sent)  # nothing lost, nothing foreign
        duplicates = sum(n - 1 for n in counts.values())
        victim_bodies = {r.body for r in victim.recvs()}
        survivor_counts = Counter(r.body for r in survivor.recvs())
        # a duplicate is a message the victim printed and the survivor delivered again
        for body, n in counts.items():
            if n > 1:
                assert body in victim_bodies
                assert survivor_counts[body] == n - 1
        survivor.signal(signal.SIGTERM)
        assert survivor.wait(30.0) == 0
        return len(stream.sent), duplicates
    finally:
        stream.close()
        for p in procs:
            p.signal(signal.SIGCONT)
            p.close()


def test_sigkill_moves_the_queues_and_every_message_is_consumed(
    cluster: ClusterThread, record_property: pytest.RecordProperty
) -> None:
    sent, duplicates = run_scenario(cluster, "kill_g", "kill")
    record_property("sent", sent)
    record_property("duplicates", duplicates)
    assert sent == 500
    print(f"SIGKILL: {sent} sent, all consumed, {duplicates} duplicates")


def test_a_silent_consumer_expires_and_its_queues_move(
    cluster: ClusterThread, record_property: pytest.RecordProperty
) -> None:
    sent, duplicates = run_scenario(cluster, "stop_g", "stop")
    record_property("sent", sent)
    record_property("duplicates", duplicates)
    assert sent == 500
    print(f"SIGSTOP + expiry: {sent} sent, all consumed, {duplicates} duplicates")
