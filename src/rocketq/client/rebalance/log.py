"""The structured rebalance log: one frozen record per topic per rebalance of a consumer.

Every rebalance of a push or pull consumer produces, for each topic it subscribes, a
:class:`RebalanceRecord`: why it ran (:class:`RebalanceTrigger`), who ran it, which client ids
and queues it saw, what the consumer owned afterwards, which queues it added (with the offset it
starts pulling from) and removed (with the offset it committed on the way out), and wall-clock
timings in epoch milliseconds. Records go to the consumer's listeners
(``consumer.add_rebalance_listener(fn)``) and into a bounded in-memory ring
(:class:`RebalanceLog`). The lab, the CLI's ``REBALANCE`` lines and the Spark analytics read them.

>>> from rocketq.models import MessageQueue
>>> q = [MessageQueue("T", "broker-a", i) for i in range(3)]
>>> r = RebalanceRecord(seq=1, trigger=RebalanceTrigger.NOTIFY, group="g", client_id="10.0.0.1@a",
...     topic="T", message_model="CLUSTERING", strategy="AVG", client_ids=("10.0.0.1@a",),
...     all_queues=tuple(q), owned=tuple(q[:2]), added=(q[1],), removed=(q[2],),
...     start_ms=1000, end_ms=1003)
>>> r.line()
'REBALANCE 10.0.0.1@a T owned=[broker-a:0,broker-a:1] added=[broker-a:1] removed=[broker-a:2]'
>>> (r.changed, r.duration_ms)
(True, 3)
"""

from __future__ import annotations

import collections
import enum
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rocketq.models import MessageQueue

__all__ = ["RebalanceListener", "RebalanceLog", "RebalanceRecord", "RebalanceTrigger"]

logger = logging.getLogger(__name__)


class RebalanceTrigger(enum.StrEnum):
    """Why a rebalance ran."""

    #: the consumer started (RocketMQ's ``rebalanceImmediately`` at start)
    START = "start"
    #: the broker sent NOTIFY_CONSUMER_IDS_CHANGED
    NOTIFY = "notify"
    #: the rebalance service's timer (20 s)
    PERIODIC = "periodic"
    #: a subscription was added or removed while running
    SUBSCRIPTION = "subscription"
    #: the route of a subscribed topic changed
    ROUTE = "route"
    #: a queue was removed to restart it elsewhere (OFFSET_ILLEGAL correction, offset reset)
    CORRECTION = "correction"
    #: a broker refused a pull: its member list or queue count differ from this consumer's view
    #: (rocketq's view fence, ``PULL_VIEW_CHANGED``)
    VIEW = "view"
    #: asked for by code (``consumer.rebalance()``), tests and the lab
    MANUAL = "manual"
    #: the consumer shut down and released every queue
    SHUTDOWN = "shutdown"


def _queues(qs: tuple[MessageQueue, ...]) -> str:
    return "[" + ",".join(q.short for q in qs) + "]"


@dataclass(frozen=True, slots=True, kw_only=True)
class RebalanceRecord:
    """One topic's rebalance by one consumer.

    ``client_ids`` are the group's ids as the broker listed them, sorted as RocketMQ sorts them
    (empty for broadcasting); ``all_queues`` the topic's readable queues, sorted; ``owned`` the
    consumer's queues after the rebalance; ``added``/``removed`` the difference from before
    (``removed`` includes ``expired``: queues dropped because their pull went idle for 120 s).
    ``pull_from`` maps each added queue to the offset its first pull starts at; ``committed`` maps
    each removed queue to the offset persisted for it when it was dropped (absent when unknown).
    ``error`` says why the rebalance could not compute an assignment (no client ids, no route);
    the ownership then stays as it was.
    """

    seq: int
    trigger: RebalanceTrigger
    group: str
    client_id: str
    topic: str
    message_model: str
    strategy: str
    client_ids: tuple[str, ...]
    all_queues: tuple[MessageQueue, ...]
    owned: tuple[MessageQueue, ...]
    added: tuple[MessageQueue, ...] = ()
    removed: tuple[MessageQueue, ...] = ()
    expired: tuple[MessageQueue, ...] = ()
    pull_from: Mapping[MessageQueue, int] = field(default_factory=dict)
    committed: Mapping[MessageQueue, int] = field(default_factory=dict)
    start_ms: int = 0
    end_ms: int = 0
    error: str | None = None

    @property
    def changed(self) -> bool:
        """Whether the consumer's queues of this topic changed."""
        return bool(self.added or self.removed)

    @property
    def duration_ms(self) -> int:
        return self.end_ms - self.start_ms

    def line(self) -> str:
        """``REBALANCE <client id> <topic> owned=[...] added=[...] removed=[...]`` (the CLI's line)."""
        return (
            f"REBALANCE {self.client_id} {self.topic} owned={_queues(self.owned)} "
            f"added={_queues(self.added)} removed={_queues(self.removed)}"
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (queues as ``{"topic", "broker", "queue_id"}``) for files and Spark."""

        def q(mq: MessageQueue) -> dict[str, Any]:
            return {"topic": mq.topic, "broker": mq.broker_name, "queue_id": mq.queue_id}

        return {
            "seq": self.seq,
            "trigger": str(self.trigger),
            "group": self.group,
            "client_id": self.client_id,
            "topic": self.topic,
            "message_model": self.message_model,
            "strategy": self.strategy,
            "client_ids": list(self.client_ids),
            "all_queues": [q(m) for m in self.all_queues],
            "owned": [q(m) for m in self.owned],
            "added": [q(m) for m in self.added],
            "removed": [q(m) for m in self.removed],
            "expired": [q(m) for m in self.expired],
            "pull_from": [{**q(m), "offset": o} for m, o in self.pull_from.items()],
            "committed": [{**q(m), "offset": o} for m, o in self.committed.items()],
            "changed": self.changed,
            "start_ms": self.start_ms,
            "end_ms": self.end_ms,
            "duration_ms": self.duration_ms,
            "error": self.error,
        }


RebalanceListener = Callable[[RebalanceRecord], object]


class RebalanceLog:
    """A bounded ring of records plus the listeners that hear of each new one.

    Listeners run on the client's event loop thread: keep them short (hand work to a queue).
    A listener that raises is logged and kept.
    """

    __slots__ = ("_listeners", "_lock", "_records", "_seq")

    def __init__(self, maxlen: int = 1024) -> None:
        self._records: collections.deque[RebalanceRecord] = collections.deque(maxlen=maxlen)
        self._listeners: list[RebalanceListener] = []
        self._lock = threading.Lock()
        self._seq = 0

    def next_seq(self) -> int:
        with self._lock:
            self._seq += 1
            return self._seq

    def add_listener(self, fn: RebalanceListener) -> None:
        with self._lock:
            self._listeners.append(fn)

    def remove_listener(self, fn: RebalanceListener) -> None:
        with self._lock:
            self._listeners.remove(fn)

    def publish(self, record: RebalanceRecord) -> None:
        with self._lock:
            self._records.append(record)
            listeners = tuple(self._listeners)
        if record.changed:
            logger.info("%s (trigger=%s, ids=%d)", record.line(), record.trigger, len(record.client_ids))
        else:
            logger.debug("%s unchanged (trigger=%s)", record.line(), record.trigger)
        for fn in listeners:
            try:
                fn(record)
            except Exception:
                logger.exception("rebalance listener %r failed", fn)

    def records(self, topic: str | None = None) -> list[RebalanceRecord]:
        """The records kept, oldest first (of one topic when given)."""
        with self._lock:
            out = list(self._records)
        return out if topic is None else [r for r in out if r.topic == topic]

    def __len__(self) -> int:
        return len(self._records)
