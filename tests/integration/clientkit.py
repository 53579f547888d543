"""An embedded name server + broker running on its own event-loop thread, for the client tests.

The client tests are plain synchronous code (as users write it), so the cluster runs in the
background like a real server would: :class:`ClusterThread` starts an
:class:`~rocketq.embedded.EmbeddedCluster` on port 0 in a temporary directory and offers the
admin calls the tests need (create a topic as ``mqadmin updateTopic`` does).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from rocketq.broker.config import BrokerConfig
from rocketq.client import ClientConfig
from rocketq.client.loop_thread import LoopThread
from rocketq.embedded import EmbeddedCluster
from rocketq.protocol import ResponseCode, calls
from rocketq.remoting import RemotingClient

#: Short delay levels so that retries come back within a test (level 3 = the broker's choice
#: for a first retry).
FAST_DELAY_LEVELS = " ".join(["200ms"] * 18)


class ClusterThread:
    """A name server and one broker, in a background loop thread (see the module docstring)."""

    def __init__(self, data_dir: Path, *, broker: BrokerConfig | None = None, **overrides: Any) -> None:
        base = broker or BrokerConfig(message_delay_level=FAST_DELAY_LEVELS)
        if overrides:
            base = replace(base, **overrides)
        self.thread = LoopThread("test-cluster", use_uvloop=False)
        self.cluster = EmbeddedCluster(data_dir=data_dir, namesrv_port=0, broker_port=0, broker=base)
        self.thread.call(self.cluster.start(), timeout=30)
        self.namesrv = self.cluster.namesrv_addr
        self.broker_addr = self.cluster.broker_addr
        self._admin: RemotingClient | None = None

    def client_config(self, name: str = "DEFAULT") -> ClientConfig:
        """A client config for this cluster on 127.0.0.1, instance ``name`` (one client id per name)."""
        return ClientConfig(namesrv=self.namesrv, client_ip="127.0.0.1", instance_name=name)

    def create_topic(self, topic: str, queues: int, *, perm: int = 6) -> None:
        """UPDATE_AND_CREATE_TOPIC on the broker, as ``mqadmin updateTopic`` sends it."""

        async def run() -> None:
            if self._admin is None:
                self._admin = RemotingClient()
            request = calls.create_topic(topic, queues, queues, perm=perm).request
            response = await self._admin.invoke(self.broker_addr, request, 5.0)
            assert response.code == ResponseCode.SUCCESS, response.remark

        self.thread.call(run(), timeout=10)

    def close(self) -> None:
        async def stop() -> None:
            if self._admin is not None:
                await self._admin.close()
            await self.cluster.close()

        try:
            self.thread.call(stop(), timeout=30)
        finally:
            self.thread.stop()


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0, interval: float = 0.02) -> bool:
    """Poll ``predicate`` until it holds or ``timeout`` passes; its last value."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return predicate()
        time.sleep(interval)


class Received:
    """A thread-safe record of what listeners received (body → count, per client)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.bodies: dict[bytes, int] = {}
        self.by_client: dict[str, list[bytes]] = {}
        self.messages: list[Any] = []

    def add(self, client: str, msgs: list[Any]) -> None:
        with self.lock:
            for m in msgs:
                self.bodies[m.body] = self.bodies.get(m.body, 0) + 1
                self.by_client.setdefault(client, []).append(m.body)
                self.messages.append(m)

    def distinct(self) -> int:
        with self.lock:
            return len(self.bodies)

    def duplicates(self) -> int:
        with self.lock:
            return sum(n - 1 for n in self.bodies.values())
