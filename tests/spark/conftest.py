"""Spark tests: one ``local[2]`` session per test run, and a real rocketq cluster per test module.

The cluster (name server + broker, :class:`rocketq.embedded.EmbeddedCluster`) runs in this process
on an event loop in a background thread, bound to 127.0.0.1 on free ports in a temp dir; Spark's
Python workers reach it over loopback like any client. Test data is produced through the
protocol (:class:`rocketq.client.blocking.BlockingClient`'s sends).
"""

from __future__ import annotations

import os
import time
from collections.abc import Coroutine, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from rocketq.broker import BrokerConfig
from rocketq.client.blocking import BlockingClient
from rocketq.client.ids import next_uniq_id
from rocketq.client.loop_thread import LoopThread
from rocketq.embedded import EmbeddedCluster
from rocketq.models import QueueRoute
from rocketq.protocol import ResponseCode, calls
from rocketq.protocol.message import Message
from rocketq.protocol.properties import MessageConst
from rocketq.remoting import BlockingRemotingClient
from rocketq.spark.session import JDK17, local_session

try:
    import pyspark  # noqa: F401
except ImportError:  # without the spark extra only the plain BlockingClient tests can run
    collect_ignore_glob = ["test_source_*.py", "test_reader_*.py"]


class ClusterThread:
    """An :class:`EmbeddedCluster` on its own event loop thread."""

    def __init__(self, data_dir: Path, broker: BrokerConfig | None = None) -> None:
        self.cluster = EmbeddedCluster(data_dir=data_dir, namesrv_port=0, broker_port=0, broker=broker)
        self.thread = LoopThread("rocketq-cluster", use_uvloop=False)

    def start(self) -> ClusterThread:
        try:
            self.call(self.cluster.start())
        except BaseException:
            self.thread.stop()
            raise
        return self

    def call(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return self.thread.call(coro, timeout=30)

    def stop(self) -> None:
        try:
            self.call(self.cluster.close())
        finally:
            self.thread.stop(timeout=10)

    @property
    def namesrv(self) -> str:
        return self.cluster.namesrv_addr

    @property
    def broker_addr(self) -> str:
        return self.cluster.broker_addr

    def io(self) -> BlockingClient:
        return BlockingClient(self.namesrv)

    def create_topic(
        self, topic: str, queues: int, *, perm: int = 6, force_system_topic: bool = False
    ) -> list[QueueRoute]:
        """Create or update ``topic`` on the broker and wait until the name server routes it
        (``force_system_topic``: a system topic, which the broker refuses otherwise)."""
        call = calls.create_topic(topic, queues, queues, perm=perm, force_system_topic=force_system_topic)
        with BlockingRemotingClient(self.broker_addr) as client:
            response = client.invoke(call.request)
        assert response.code == ResponseCode.SUCCESS, response.remark
        deadline = time.monotonic() + 20
        with self.io() as io:
            while True:
                try:
                    routes = io.read_queues(topic)
                    if len(routes) == queues:
                        return routes
                except Exception:
                    if time.monotonic() > deadline:
                        raise
                if time.monotonic() > deadline:
                    raise AssertionError(f"route of {topic} never showed {queues} queues")
                time.sleep(0.02)

    def produce(
        self,
        topic: str,
        count: int,
        *,
        body: bytes | None = None,
        tags: Sequence[str | None] = ("TagA",),
        start: int = 0,
        batch: int = 64,
    ) -> list[Message]:
        """Send ``count`` messages round-robin over the topic's queues, ``batch`` per send; message
        ``i`` has body ``b"m-<i>"`` (or ``body``), key ``k<i>``, tags cycling through ``tags``."""
        sent: list[Message] = []
        with self.io() as io:
            routes = io.read_queues(topic)
            pending: list[Message] = []
            qi = 0
            for i in range(start, start + count):
                props = {MessageConst.KEYS: f"k{i}", "seq": str(i)}
                tag = tags[i % len(tags)]
                if tag is not None:
                    props[MessageConst.TAGS] = tag
                props[MessageConst.WAIT] = "true"
                props[MessageConst.UNIQ_KEY] = next_uniq_id()
                msg = Message(topic, body if body is not None else f"m-{i}".encode(), 0, props)
                pending.append(msg)
                sent.append(msg)
                if len(pending) >= batch:
                    io.send_batch(routes[qi % len(routes)], pending, producer_group="spark-test-producer")
                    qi += 1
                    pending = []
            if pending:
                io.send_batch(routes[qi % len(routes)], pending, producer_group="spark-test-producer")
        return sent


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    if Path(JDK17).is_dir():
        os.environ["JAVA_HOME"] = JDK17  # Spark 4 needs 17+; the machine's default JDK may be older
    elif not os.environ.get("JAVA_HOME"):
        pytest.skip(f"no JDK: neither {JDK17} nor JAVA_HOME")
    session = local_session("local[2]", "rocketq-tests", shuffle_partitions=2)
    yield session
    session.stop()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterThread]:
    data = tmp_path_factory.mktemp("rocketq-spark")
    ct = ClusterThread(data, BrokerConfig()).start()
    yield ct
    ct.stop()


def broker_config(**overrides: Any) -> BrokerConfig:
    return replace(BrokerConfig(), **overrides)
