"""Frozen value types shared by every layer of rocketq.

Only values live here: no I/O, no clocks, nothing that imports another rocketq module.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MessageQueue", "java_string_compare"]


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
