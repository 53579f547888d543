"""Message properties: the reserved names, the ``name\\x01value\\x02...`` string codec, tag hash codes.

RocketMQ carries every message attribute that is not a fixed field (tags, keys, the client's unique
id, delay level, transaction markers, user properties ...) in one string map. On the wire and in
the commit log the map is a single UTF-8 string: each pair is ``name`` + ``\\x01`` + ``value``, pairs
are joined by ``\\x02`` with no trailing separator. The same string travels in the send header's
``properties`` (``i`` in ``SendMessageRequestHeaderV2``) field.

Reading follows RocketMQ's ``string2messageProperties``: a pair without a ``\\x01``, with an empty
name or with an empty value is skipped; the value runs from the *first* ``\\x01`` to the next
``\\x02`` (so it may itself hold ``\\x01``); a repeated name keeps the last value. Writing skips
``None`` values, as RocketMQ skips nulls.

>>> s = properties_to_string({"TAGS": "TagA", "KEYS": "k1 k2"})
>>> s
'TAGS\\x01TagA\\x02KEYS\\x01k1 k2'
>>> string_to_properties(s)
{'TAGS': 'TagA', 'KEYS': 'k1 k2'}
>>> java_string_hash("TagA")
2598919
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from rocketq.protocol.javahash import java_hash_order, java_string_hash

__all__ = [
    "KEY_SEPARATOR",
    "NAME_VALUE_SEPARATOR",
    "PROPERTY_SEPARATOR",
    "SYSTEM_PROPERTY_NAMES",
    "MessageConst",
    "java_hashmap_order",
    "java_string_hash",
    "properties_to_string",
    "string_to_properties",
    "tags_code",
]

NAME_VALUE_SEPARATOR: Final = "\x01"
"""Between a property's name and its value (RocketMQ's ``NAME_VALUE_SEPARATOR``, char 1)."""

PROPERTY_SEPARATOR: Final = "\x02"
"""Between two name/value pairs (RocketMQ's ``PROPERTY_SEPARATOR``, char 2)."""

KEY_SEPARATOR: Final = " "
"""Joins several message keys inside the ``KEYS`` property (RocketMQ's ``KEY_SEPARATOR``)."""


class MessageConst:
    """Property names that RocketMQ itself reads or writes (its ``MessageConst``).

    The attribute is named after the string that goes on the wire, so ``MessageConst.DELAY`` is
    ``"DELAY"`` (Java's ``PROPERTY_DELAY_TIME_LEVEL``). Names not obvious from the string:

    * ``WAIT`` - the producer waits for the store to acknowledge (``PROPERTY_WAIT_STORE_MSG_OK``);
      single sends drop ``WAIT=true`` when stored.
    * ``UNIQ_KEY`` - the producer-made unique id, the "msgId" a client reports.
    * ``REAL_TOPIC`` / ``REAL_QID`` - where a delayed or half (transaction) message really goes.
    * ``RETRY_TOPIC`` - the original topic of a message re-delivered through ``%RETRY%<group>``.
    * ``TRAN_MSG`` - ``"true"`` on a transaction half message; ``PGROUP`` - its producer group.
    * ``MIN_OFFSET`` / ``MAX_OFFSET`` / ``CONSUME_START_TIME`` - added by the consuming client only.
    * ``TRACE_ON`` / ``MSG_REGION`` - message-trace switch and region (also sent as ext fields).
    """

    KEYS: Final = "KEYS"
    TAGS: Final = "TAGS"
    WAIT: Final = "WAIT"
    DELAY: Final = "DELAY"
    RETRY_TOPIC: Final = "RETRY_TOPIC"
    REAL_TOPIC: Final = "REAL_TOPIC"
    REAL_QID: Final = "REAL_QID"
    TRAN_MSG: Final = "TRAN_MSG"
    PGROUP: Final = "PGROUP"
    MIN_OFFSET: Final = "MIN_OFFSET"
    MAX_OFFSET: Final = "MAX_OFFSET"
    BUYER_ID: Final = "BUYER_ID"
    ORIGIN_MESSAGE_ID: Final = "ORIGIN_MESSAGE_ID"
    TRANSFER_FLAG: Final = "TRANSFER_FLAG"
    CORRECTION_FLAG: Final = "CORRECTION_FLAG"
    MQ2_FLAG: Final = "MQ2_FLAG"
    RECONSUME_TIME: Final = "RECONSUME_TIME"
    MSG_REGION: Final = "MSG_REGION"
    TRACE_ON: Final = "TRACE_ON"
    UNIQ_KEY: Final = "UNIQ_KEY"
    MAX_RECONSUME_TIMES: Final = "MAX_RECONSUME_TIMES"
    CONSUME_START_TIME: Final = "CONSUME_START_TIME"
    TRAN_PREPARED_QUEUE_OFFSET: Final = "TRAN_PREPARED_QUEUE_OFFSET"
    TRANSACTION_CHECK_TIMES: Final = "TRANSACTION_CHECK_TIMES"
    CHECK_IMMUNITY_TIME_IN_SECONDS: Final = "CHECK_IMMUNITY_TIME_IN_SECONDS"
    INSTANCE_ID: Final = "INSTANCE_ID"
    CORRELATION_ID: Final = "CORRELATION_ID"
    REPLY_TO_CLIENT: Final = "REPLY_TO_CLIENT"
    TTL: Final = "TTL"
    ARRIVE_TIME: Final = "ARRIVE_TIME"
    PUSH_REPLY_TIME: Final = "PUSH_REPLY_TIME"
    CLUSTER: Final = "CLUSTER"
    MSG_TYPE: Final = "MSG_TYPE"
    INNER_MULTI_DISPATCH: Final = "INNER_MULTI_DISPATCH"
    INNER_MULTI_QUEUE_OFFSET: Final = "INNER_MULTI_QUEUE_OFFSET"


SYSTEM_PROPERTY_NAMES: Final = frozenset(
    {
        MessageConst.TRACE_ON,
        MessageConst.MSG_REGION,
        MessageConst.KEYS,
        MessageConst.TAGS,
        MessageConst.WAIT,
        MessageConst.DELAY,
        MessageConst.RETRY_TOPIC,
        MessageConst.REAL_TOPIC,
        MessageConst.REAL_QID,
        MessageConst.TRAN_MSG,
        MessageConst.PGROUP,
        MessageConst.MIN_OFFSET,
        MessageConst.MAX_OFFSET,
        MessageConst.BUYER_ID,
        MessageConst.ORIGIN_MESSAGE_ID,
        MessageConst.TRANSFER_FLAG,
        MessageConst.CORRECTION_FLAG,
        MessageConst.MQ2_FLAG,
        MessageConst.RECONSUME_TIME,
        MessageConst.UNIQ_KEY,
        MessageConst.MAX_RECONSUME_TIMES,
        MessageConst.CONSUME_START_TIME,
        MessageConst.INSTANCE_ID,
        MessageConst.CORRELATION_ID,
        MessageConst.REPLY_TO_CLIENT,
        MessageConst.TTL,
        MessageConst.ARRIVE_TIME,
        MessageConst.PUSH_REPLY_TIME,
        MessageConst.CLUSTER,
        MessageConst.MSG_TYPE,
        MessageConst.INNER_MULTI_QUEUE_OFFSET,
    }
)
"""Names a user property may not take (RocketMQ's ``MessageConst.STRING_HASH_SET``): the Java
producer's ``putUserProperty`` refuses them."""


def properties_to_string(properties: Mapping[str, str | None] | None) -> str:
    """Join a property map into RocketMQ's wire string, in the map's own iteration order.

    Pairs whose value is ``None`` are left out. Names and values are written as given: a name
    holding ``\\x01``/``\\x02`` or an empty name/value would not survive a round trip, as in Java.
    """
    if not properties:
        return ""
    return PROPERTY_SEPARATOR.join(
        [f"{name}{NAME_VALUE_SEPARATOR}{value}" for name, value in properties.items() if value is not None]
    )


def string_to_properties(text: str) -> dict[str, str]:
    """Split RocketMQ's property string into a dict, keeping the order the pairs came in.

    Malformed pairs are skipped exactly where RocketMQ's ``string2messageProperties`` skips them
    (no ``\\x01``, empty name, empty value); the last of repeated names wins.

    >>> string_to_properties("a\\x011\\x02junk\\x02\\x01x\\x02b\\x01\\x02c\\x013\\x01z")
    {'a': '1', 'c': '3\\x01z'}
    """
    out: dict[str, str] = {}
    if not text:
        return out
    for pair in text.split(PROPERTY_SEPARATOR):
        name, _, value = pair.partition(NAME_VALUE_SEPARATOR)
        if name and value:
            out[name] = value
    return out


def tags_code(tags: str | None) -> int:
    """The tag hash code a consume-queue entry stores: ``0`` without tags, else
    ``java_string_hash(tags)`` (a signed 32-bit value widened to the entry's 64-bit field),
    as RocketMQ's ``MessageExtBrokerInner.tagsString2tagsCode``. The push consumer's heartbeat
    ``codeSet`` holds the same numbers, which the broker compares against for tag filtering.
    """
    if not tags:
        return 0
    return java_string_hash(tags)


def java_hashmap_order(names: Iterable[str], *, max_entries: int | None = None) -> list[str]:
    """The order a Java ``HashMap<String, ...>`` (default capacity 16, load factor 0.75) iterates
    the given keys, inserted in the given order (see :mod:`rocketq.protocol.javahash`).

    Keys are grouped by bucket ``(h ^ (h >>> 16)) & (capacity - 1)`` (``h`` = Java's hash code),
    ties keep insertion order. The table only grows, so if keys were removed before iteration pass
    the largest number of entries the map ever held as ``max_entries``. This is the order in
    which a Java peer writes message properties and ext fields; use it to produce bytes identical
    to Java's (RocketMQ itself never depends on the order).

    >>> java_hashmap_order(["TAGS", "KEYS", "UNIQ_KEY", "WAIT", "color"])
    ['color', 'KEYS', 'UNIQ_KEY', 'WAIT', 'TAGS']
    """
    return java_hash_order(names, max_entries=max_entries)
