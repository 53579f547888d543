"""What an admin call refuses to do unless told twice: the one place the CLI, the dashboard and
:class:`~rocketq.admin.Admin` share for it.

* **Creating a topic that exists** changes nothing: :meth:`AsyncAdmin.create_topic
  <rocketq.admin.AsyncAdmin.create_topic>` raises :class:`~rocketq.errors.TopicExistsError` with
  what it would change (:func:`topic_changes`, one line per broker: fewer queues name the queues
  whose messages would stop being read) unless it is asked to update (``update=True``). The same
  settings again is no error and no write.
* **System topics** (:func:`is_protected_topic`: RocketMQ's ``TopicValidator`` topics, ``rmq_sys_*``
  and ``RMQ_SYS_*``, rocketq's ``RQ_SYS_*``, groups' ``%RETRY%``/``%DLQ%`` topics, reply topics and
  the topics named after a cluster or a broker) are not created, changed or deleted without an
  override that names the topic again (``force_system_topic="TBW102"``; a slip, a flag without the
  name or another topic's name, does not pass). :func:`check_system_topic` says why the topic
  matters. A rocketq broker refuses the same writes itself, as RocketMQ 4.9's does, unless the
  request carries the override (:data:`~rocketq.protocol.topics.FORCE_SYSTEM_TOPIC_FIELD`).

>>> [is_protected_topic(t, {"DefaultCluster"}) for t in ("TBW102", "Orders", "DefaultCluster")]
[True, False, True]
>>> from rocketq.protocol.bodies import QueueData
>>> topic_changes({"broker-a": QueueData("broker-a", 4, 4, 6)}, read=1, write=1, perm=6)
['on broker-a: read queues 4 -> 1, messages in queues [1..3] stop being read, write queues 4 -> 1']
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from rocketq.analytics import id_ranges
from rocketq.errors import SystemTopicError
from rocketq.protocol.bodies import QueueData
from rocketq.protocol.topics import (
    AUTO_CREATE_TOPIC_KEY_TOPIC,
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    RMQ_SYS_OFFSET_MOVED_EVENT,
    RMQ_SYS_SCHEDULE_TOPIC,
    RMQ_SYS_TRACE_TOPIC,
    RMQ_SYS_TRANS_HALF_TOPIC,
    RMQ_SYS_TRANS_OP_HALF_TOPIC,
    is_system_topic,
)

__all__ = ["check_system_topic", "is_protected_topic", "system_topic_role", "topic_changes"]

_PAST = {"delete": "deleted", "change": "changed", "create": "created"}

_ROLES = {
    AUTO_CREATE_TOPIC_KEY_TOPIC: "the template every auto-created topic is made from: without it, "
    "sends to new topics fail",
    RMQ_SYS_SCHEDULE_TOPIC: "it holds delayed messages, one queue per delay level",
    RMQ_SYS_TRACE_TOPIC: "it holds message traces",
    RMQ_SYS_TRANS_HALF_TOPIC: "it holds prepared transactional messages",
    RMQ_SYS_TRANS_OP_HALF_TOPIC: "it holds the outcomes of transactional messages",
    RMQ_SYS_OFFSET_MOVED_EVENT: "it carries offset-moved events",
}


def is_protected_topic(topic: str, own_names: Collection[str] = ()) -> bool:
    """Whether ``topic`` is a system topic: RocketMQ's (``TopicValidator``, ``rmq_sys_*``,
    ``RMQ_SYS_*``), rocketq's ``RQ_SYS_*``, a group's retry or dead-letter topic, a reply topic, or
    one of ``own_names`` (the clusters' and brokers' names: a broker makes a topic of each)."""
    return is_system_topic(topic) or topic in own_names or topic.upper().startswith(("RMQ_SYS_", "RQ_SYS_"))


def system_topic_role(topic: str, clusters: Collection[str] = (), brokers: Collection[str] = ()) -> str:
    """Why ``topic`` matters, in a few words (for the refusal and the dashboard)."""
    if topic in _ROLES:
        return _ROLES[topic]
    if topic in clusters:
        return f"the topic of cluster {topic}, which its brokers make for themselves"
    if topic in brokers:
        return f"the topic of broker {topic}, which the broker makes for itself"
    if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        group = topic[len(RETRY_GROUP_TOPIC_PREFIX) :]
        return f"group {group}'s retry topic: messages waiting to be redelivered"
    if topic.startswith(DLQ_GROUP_TOPIC_PREFIX):
        return f"group {topic[len(DLQ_GROUP_TOPIC_PREFIX) :]}'s dead-letter topic"
    if topic.upper().startswith("RQ_SYS_"):
        return "it holds rocketq's own records"
    return "RocketMQ's own topic"


def check_system_topic(
    topic: str,
    doing: str,
    force_system_topic: str | None,
    *,
    clusters: Collection[str] = (),
    brokers: Collection[str] = (),
) -> bool:
    """Refuse to ``doing`` (``"delete"``, ``"change"``, ``"create"``) a system topic unless
    ``force_system_topic`` names it; return whether the override was given for a system topic
    (the call then passes it on to the brokers)."""
    if not is_protected_topic(topic, {*clusters, *brokers}):
        return False
    if force_system_topic == topic:
        return True
    given = "" if force_system_topic is None else f" (the override given names {force_system_topic!r})"
    refusal = (
        f"topic {topic} is a system topic ({system_topic_role(topic, clusters, brokers)}); not "
        f"{_PAST.get(doing, doing + 'd')}{given}"
    )
    raise SystemTopicError(
        f"{refusal}. To {doing} it anyway, give the override naming it: force_system_topic={topic!r}",
        topic=topic,
        refusal=refusal,
    )


def topic_changes(
    held: Mapping[str, QueueData], *, read: int | None, write: int | None, perm: int | None
) -> list[str]:
    """What setting ``read``/``write`` queues and ``perm`` (``None``: keep) on the brokers of
    ``held`` (broker name to its current queue data) changes, one line per broker that changes."""
    out = []
    for name in sorted(held):
        qd = held[name]
        new_read = qd.read_queue_nums if read is None else read
        new_write = qd.write_queue_nums if write is None else write
        parts = []
        if new_read != qd.read_queue_nums:
            parts.append(f"read queues {qd.read_queue_nums} -> {new_read}")
            if new_read < qd.read_queue_nums:
                lost = id_ranges(range(new_read, qd.read_queue_nums))
                parts.append(f"messages in queues {lost} stop being read")
        if new_write != qd.write_queue_nums:
            parts.append(f"write queues {qd.write_queue_nums} -> {new_write}")
        if perm is not None and perm != qd.perm:
            parts.append(f"perm {qd.perm} -> {perm}")
        if parts:
            out.append(f"on {name}: " + ", ".join(parts))
    return out
