"""Frozen value types shared by every layer of rocketq, each defined once.

Only values live here: no I/O, no clocks, nothing that imports another rocketq module. Besides
:class:`MessageQueue`, the results every client-side layer hands around: where a send was stored
(:class:`SendResult`, :class:`SendStatus`), what a pull brought (:class:`PullResult`,
:class:`PullStatus`), where a queue is served (:class:`QueueRoute`) and a client id that several
live connections share (:class:`DuplicateClientId`). :func:`from_fields` builds one value from
another that shares its fields.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "DuplicateClientId",
    "LocalTransactionState",
    "MessageQueue",
    "PullResult",
    "PullStatus",
    "QueueRoute",
    "SendResult",
    "SendStatus",
    "TransactionSendResult",
    "from_fields",
    "java_string_compare",
]

D = TypeVar("D", bound="DataclassInstance")


@functools.cache
def _init_field_names(cls: type[DataclassInstance]) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if f.init)


def from_fields(cls: type[D], source: object, /, **values: Any) -> D:
    """A ``cls`` (a dataclass) with ``values``, its other fields copied from the attributes of the
    same names of ``source``: a config handing its part to a component's config, a header or a
    result widened into another with the same fields and more.

    >>> from_fields(MessageQueue, MessageQueue("T", "b", 1), queue_id=2)
    MessageQueue(topic='T', broker_name='b', queue_id=2)
    """
    for name in _init_field_names(cls):
        if name not in values:
            values[name] = getattr(source, name)
    return cls(**values)


def _java_less(a: str, b: str) -> bool:
    """``a.compareTo(b) < 0`` with Java's rules: compare by UTF-16 code units.

    Python compares strings by code point. The two orders agree unless a string holds a
    character outside the Basic Multilingual Plane (encoded in UTF-16 as surrogates, which sort
    below U+E000..U+FFFF in Java but above them in Python), so only then do we pay for encoding.
    """
    if a.isascii() and b.isascii():
        return a < b
    return a.encode("utf-16-be", "surrogatepass") < b.encode("utf-16-be", "surrogatepass")


def java_string_compare(a: str, b: str) -> int:
    """Return a negative, zero or positive number as Java's ``a.compareTo(b)`` would (by sign).

    >>> java_string_compare("\\uffff", "\\U0001F600") > 0   # U+FFFF > the surrogate U+D83D in Java
    True
    """
    if a == b:
        return 0
    return -1 if _java_less(a, b) else 1


@dataclass(frozen=True, slots=True, order=False)
class MessageQueue:
    """One queue of a topic on one broker, as RocketMQ's ``MessageQueue`` names it.

    Instances order exactly as ``MessageQueue.compareTo`` in RocketMQ: by topic, then broker
    name, then queue id, with strings compared as Java compares them (UTF-16 code units).
    ``str()`` is RocketMQ's ``toString()``, which the consistent-hash strategy hashes.

    >>> q = MessageQueue("TopicTest", "broker-a", 3)
    >>> str(q)
    'MessageQueue [topic=TopicTest, brokerName=broker-a, queueId=3]'
    >>> sorted([MessageQueue("t", "b", 10), MessageQueue("t", "a", 11), MessageQueue("t", "b", 2)])[0]
    MessageQueue(topic='t', broker_name='a', queue_id=11)
    """

    topic: str
    broker_name: str
    queue_id: int

    def __str__(self) -> str:
        return f"MessageQueue [topic={self.topic}, brokerName={self.broker_name}, queueId={self.queue_id}]"

    def _compare(self, other: MessageQueue) -> int:
        if self.topic != other.topic:
            return -1 if _java_less(self.topic, other.topic) else 1
        if self.broker_name != other.broker_name:
            return -1 if _java_less(self.broker_name, other.broker_name) else 1
        return self.queue_id - other.queue_id

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, MessageQueue):
            return NotImplemented
        return self._compare(other) < 0

    def __le__(self, other: object) -> bool:
        if not isinstance(other, MessageQueue):
            return NotImplemented
        return self._compare(other) <= 0

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, MessageQueue):
            return NotImplemented
        return self._compare(other) > 0

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, MessageQueue):
            return NotImplemented
        return self._compare(other) >= 0

    @property
    def short(self) -> str:
        """``broker:queue_id``, the compact form the CLI prints (``broker-a:3``)."""
        return f"{self.broker_name}:{self.queue_id}"


@dataclass(frozen=True, slots=True)
class QueueRoute:
    """A message queue and the address of its broker's master, where it is read and written."""

    queue: MessageQueue
    addr: str


class SendStatus(enum.Enum):
    """How a send went (RocketMQ's ``SendStatus``): anything but ``SEND_OK`` was still stored."""

    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"


@dataclass(frozen=True, slots=True)
class SendResult:
    """The outcome of a send (RocketMQ's ``SendResult``).

    ``msg_id`` is the producer's unique id (``UNIQ_KEY``; for a batch, the ids joined by commas),
    ``offset_msg_id`` the broker's store-host + commit-log-offset id (for a batch, the broker's
    ids joined by commas), ``queue_offset`` the index in the queue (of a batch's first message;
    for a delayed message: in the ``SCHEDULE_TOPIC_XXXX`` queue, as the broker reports).
    """

    status: SendStatus
    msg_id: str
    offset_msg_id: str
    message_queue: MessageQueue
    queue_offset: int
    transaction_id: str | None = None
    region_id: str = "DefaultRegion"
    trace_on: bool = True


class LocalTransactionState(enum.StrEnum):
    """A local transaction's outcome (RocketMQ's ``LocalTransactionState``): what a transactional
    producer's ``execute`` and ``checker`` return, and what a trace's EndTransaction line writes
    (by name). ``UNKNOW`` is RocketMQ's spelling: the broker asks again later."""

    COMMIT_MESSAGE = "COMMIT_MESSAGE"
    ROLLBACK_MESSAGE = "ROLLBACK_MESSAGE"
    UNKNOW = "UNKNOW"


@dataclass(frozen=True, slots=True)
class TransactionSendResult(SendResult):
    """The outcome of ``send_in_transaction`` (RocketMQ's ``TransactionSendResult``): where the half
    message was stored, and the local transaction's state as reported to the broker."""

    local_transaction_state: LocalTransactionState = LocalTransactionState.UNKNOW


class PullStatus(enum.Enum):
    """The outcome of a pull (RocketMQ's ``PullStatus``), named by the broker's response code."""

    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"
    #: rocketq only: the pull carried the consumer's view of the broker's group and the broker's
    #: differs (``RocketQResponseCode.PULL_VIEW_CHANGED``); no messages, rebalance first
    VIEW_CHANGED = "VIEW_CHANGED"


@dataclass(frozen=True, slots=True)
class PullResult:
    """One pull's answer, not yet decoded: ``body`` holds the stored records when ``status`` is
    FOUND (``b""`` otherwise); the offsets say where to pull next and the queue's bounds."""

    status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    suggest_which_broker_id: int = 0
    body: bytes = b""
    remark: str = ""
    #: VIEW_CHANGED: the broker's read queue count of the topic (-1: not said)
    view_queue_nums: int = -1


@dataclass(frozen=True, slots=True)
class DuplicateClientId:
    """A client id that more than one live connection registered in a consumer group.

    RocketMQ lets both connections take the same queues (every consumer finds its id at the
    same place of the member list), so the queues of a later block are read by nobody.
    ``broker_addr`` is the broker that saw it, ``addresses`` the connections' remote addresses.
    """

    group: str
    client_id: str
    broker_addr: str
    addresses: tuple[str, ...]

    def to_dict(self) -> dict[str, object]:
        """The JSON form the CLI prints."""
        return {
            "group": self.group,
            "client_id": self.client_id,
            "broker": self.broker_addr,
            "addresses": list(self.addresses),
        }
