"""Stored records as the store checks and reads them, before and after they are appended.

* :func:`layout_one` / :func:`layout_batch` check encoded records (magic code, sizes, the topic
  they name) and find where the append must stamp them - queue offset, commit-log offset,
  store timestamp - as a :data:`RecordLayout`, all outside the store lock; they also write the
  queue id into each record, as RocketMQ does under its lock.
* :class:`RecordProperties` / :func:`record_properties` read a stored record's properties on
  demand (a pull's SQL92 filter usually names one or two of them).
* :func:`check_topic_name`: a topic must be able to name a consume-queue directory.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator, Mapping, Sequence

from rocketq.errors import ConfigError
from rocketq.protocol.message import (
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    SYS_FLAG_POSITION,
    store_timestamp_position,
)
from rocketq.protocol.properties import string_to_properties

__all__ = [
    "RecordLayout",
    "RecordProperties",
    "check_record",
    "check_topic_name",
    "layout_batch",
    "layout_one",
    "record_properties",
]

_I32 = struct.Struct(">i")
_HEAD = struct.Struct(">ii")
_QUEUE_ID_POSITION = 12
_MAGICS = frozenset({MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2})
#: The smallest stored record (RocketMQ's fixed fields with an empty body, topic and properties).
MIN_RECORD_SIZE = 92


#: Where the records of one append start and what the append stamps into them, one entry per
#: record in each: offsets in the buffer, sizes, store-timestamp positions, property-string
#: positions (the two length bytes), sys flags and consume-queue tag codes. A plain tuple: one
#: record's layout is built on every single send, and a tuple costs the least to make.
RecordLayout = tuple[Sequence[int], Sequence[int], Sequence[int], Sequence[int], Sequence[int], Sequence[int]]


def check_record(
    buf: bytearray, pos: int, size: int, topic: bytes, magic: int, queue_id: int
) -> tuple[int, int, int]:
    """Check that the record at ``pos`` is for ``topic``, stamp ``queue_id`` into it (as RocketMQ
    writes the queue id under its lock) and return its store-timestamp position (relative), the
    absolute position of its property string and its sys flag."""
    (sys_flag,) = _I32.unpack_from(buf, pos + SYS_FLAG_POSITION)
    fixed = 88 + (12 if sys_flag & 0x10 else 0) + (12 if sys_flag & 0x20 else 0)
    (body_len,) = _I32.unpack_from(buf, pos + fixed - 4)
    at = pos + fixed + body_len
    if body_len < 0 or at + 3 > pos + size:
        raise ConfigError("the record's body overruns it")
    if magic == MESSAGE_MAGIC_CODE:
        start, length = at + 1, buf[at]
    else:
        start, length = at + 2, (buf[at] << 8) | buf[at + 1]
    if buf[start : start + length] != topic:
        raise ConfigError(f"a record for topic {topic.decode(errors='replace')!r} holds another topic")
    if start + length + 2 > pos + size:
        raise ConfigError("the record's topic overruns it")
    _I32.pack_into(buf, pos + _QUEUE_ID_POSITION, queue_id)
    return store_timestamp_position(sys_flag), start + length, sys_flag


def layout_one(buf: bytearray, topic: bytes, queue_id: int, max_size: int, tags_code: int) -> RecordLayout:
    """Check the one record filling ``buf`` (at most ``max_size`` bytes); raises
    :class:`~rocketq.errors.ConfigError` when it is no stored message of ``topic``."""
    total = len(buf)
    if total < MIN_RECORD_SIZE or total > max_size:
        if total >= MIN_RECORD_SIZE:
            raise ConfigError(f"{total} bytes exceed the maximum message size of {max_size}")
        raise ConfigError("the record is too short to be a stored message")
    size, magic = _HEAD.unpack_from(buf, 0)
    if magic not in _MAGICS or size != total:
        raise ConfigError("the record is not a stored message")
    ts_pos, props_pos, sys_flag = check_record(buf, 0, total, topic, magic, queue_id)
    return (0,), (total,), (ts_pos,), (props_pos,), (sys_flag,), (tags_code,)


def layout_batch(
    buf: bytearray, count: int, topic: bytes, queue_id: int, tags_codes: Sequence[int]
) -> RecordLayout:
    """Check the ``count`` records back to back in ``buf``; raises
    :class:`~rocketq.errors.ConfigError` when one is truncated or no stored message of ``topic``,
    or their sizes do not add up to the buffer."""
    total = len(buf)
    starts: list[int] = []
    sizes: list[int] = []
    timestamps: list[int] = []
    properties: list[int] = []
    sys_flags: list[int] = []
    pos = 0
    for i in range(count):
        if total - pos < MIN_RECORD_SIZE:
            raise ConfigError(f"record {i} of the batch is truncated")
        size, magic = _HEAD.unpack_from(buf, pos)
        if magic not in _MAGICS or size < MIN_RECORD_SIZE or pos + size > total:
            raise ConfigError(f"record {i} of the batch is not a stored message")
        ts_rel, props_pos, sys_flag = check_record(buf, pos, size, topic, magic, queue_id)
        starts.append(pos)
        sizes.append(size)
        timestamps.append(pos + ts_rel)
        properties.append(props_pos)
        sys_flags.append(sys_flag)
        pos += size
    if pos != total:
        raise ConfigError("the records' sizes do not add up to their length")
    return starts, sizes, timestamps, properties, sys_flags, tags_codes


class RecordProperties(Mapping[str, str]):
    """A stored record's property string, read as a map on demand: :meth:`get` finds one pair
    without splitting the others (a filter usually names one or two of a message's properties),
    with RocketMQ's decoding rules - the last pair with a name wins, empty values are no pair."""

    __slots__ = ("_all", "_raw")

    def __init__(self, raw: bytes) -> None:
        self._raw = raw
        self._all: dict[str, str] | None = None

    def get(self, name: str, default: str | None = None) -> str | None:  # type: ignore[override]
        raw = self._raw
        key = name.encode() + b"\x01"
        i = raw.rfind(key)
        while i >= 0:
            if i == 0 or raw[i - 1] == 2:
                start = i + len(key)
                stop = raw.find(b"\x02", start)
                value = raw[start:] if stop < 0 else raw[start:stop]
                if value:
                    return value.decode("utf-8", "replace")
            i = raw.rfind(key, 0, i)
        return default

    def _parsed(self) -> dict[str, str]:
        if self._all is None:
            self._all = string_to_properties(self._raw.decode("utf-8", "replace"))
        return self._all

    def __getitem__(self, name: str) -> str:
        value = self.get(name)
        if value is None:
            raise KeyError(name)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._parsed())

    def __len__(self) -> int:
        return len(self._parsed())


def record_properties(view: memoryview | bytes, pos: int) -> RecordProperties:
    """The properties of the stored record at ``pos`` of ``view``, read without decoding the
    rest of it (for property filters at pull time)."""
    (sys_flag,) = _I32.unpack_from(view, pos + SYS_FLAG_POSITION)
    fixed = 88 + (12 if sys_flag & 0x10 else 0) + (12 if sys_flag & 0x20 else 0)
    (body_len,) = _I32.unpack_from(view, pos + fixed - 4)
    at = pos + fixed + body_len
    (magic,) = _I32.unpack_from(view, pos + 4)
    if magic == MESSAGE_MAGIC_CODE:
        at += 1 + view[at]
    else:
        at += 2 + ((view[at] << 8) | view[at + 1])
    length = (view[at] << 8) | view[at + 1]
    return RecordProperties(bytes(view[at + 2 : at + 2 + length]))


def check_topic_name(topic: str) -> None:
    """Raise :class:`~rocketq.errors.ConfigError` unless ``topic`` can name a directory."""
    if not topic or topic in (".", "..") or "/" in topic or "\0" in topic or os.sep in topic:
        raise ConfigError(f"topic name {topic!r} cannot name a consume-queue directory")
