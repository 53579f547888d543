"""Bodies of broker registration and the tables brokers persist (topics, groups, offsets)."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Self

from rocketq.errors import RemoteProtocolError
from rocketq.protocol.bodies._codec import (
    _BOOL,
    _F,
    _INT,
    _LONG_KEY,
    _STR,
    JsonBody,
    _Bean,
    _Enum,
    _list,
    _Map,
    _p,
    _props,
)
from rocketq.protocol.bodies.enums import TopicFilterType
from rocketq.protocol.fastjson import dumps_bytes, loads

__all__ = [
    "MAX_INFLATED_REGISTER_BODY",
    "ConsumerOffsetSerializeWrapper",
    "DataVersion",
    "DelayOffsetSerializeWrapper",
    "KVTable",
    "RegisterBrokerBody",
    "SubscriptionGroupConfig",
    "SubscriptionGroupWrapper",
    "TopicConfig",
    "TopicConfigSerializeWrapper",
]


@dataclass(frozen=True, slots=True)
class DataVersion(JsonBody):
    """``DataVersion``: a broker's (or table's) change counter and the time of the last change (ms)."""

    timestamp: int = 0
    counter: int = 0

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("counter", "counter", _INT), _p("timestamp", "timestamp", _INT)
    )

    def next_version(self, now_ms: int) -> DataVersion:
        """The version after one more change at ``now_ms`` (``DataVersion.nextVersion``)."""
        return DataVersion(timestamp=now_ms, counter=self.counter + 1)


@dataclass(frozen=True, slots=True)
class TopicConfig(JsonBody):
    """``TopicConfig``; defaults are RocketMQ's (16 read/write queues, perm RW = 6, SINGLE_TAG)."""

    topic_name: str | None = None
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = 6
    topic_filter_type: TopicFilterType = TopicFilterType.SINGLE_TAG
    topic_sys_flag: int = 0
    order: bool = False

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("order", "order", _BOOL),
        _p("perm", "perm", _INT),
        _p("readQueueNums", "read_queue_nums", _INT),
        _p("topicFilterType", "topic_filter_type", _Enum(TopicFilterType)),
        _p("topicName", "topic_name", _STR),
        _p("topicSysFlag", "topic_sys_flag", _INT),
        _p("writeQueueNums", "write_queue_nums", _INT),
    )

    def to_compact(self) -> str:
        """The space-separated form of a compressed registration (``TopicConfig.encode()``).

        ``topic_sys_flag`` and ``order`` are not part of it.

        >>> TopicConfig("T", 2, 2, 6).to_compact()
        'T 2 2 6 SINGLE_TAG'
        """
        return (
            f"{self.topic_name} {self.read_queue_nums} {self.write_queue_nums} {self.perm} "
            f"{self.topic_filter_type.name}"
        )

    @classmethod
    def from_compact(cls, text: str) -> TopicConfig:
        """Parse :meth:`to_compact`'s form; anything else raises ``RemoteProtocolError``."""
        parts = text.split(" ")
        if len(parts) != 5:
            raise RemoteProtocolError(f"compressed topic config {text!r}: expected 5 space-separated fields")
        name, read, write, perm, filter_type = parts
        try:
            return cls(
                topic_name=name,
                read_queue_nums=int(read),
                write_queue_nums=int(write),
                perm=int(perm),
                topic_filter_type=TopicFilterType[filter_type],
            )
        except (ValueError, KeyError):
            raise RemoteProtocolError(
                f"compressed topic config {text!r}: bad number or filter type"
            ) from None


@dataclass(frozen=True, slots=True)
class TopicConfigSerializeWrapper(JsonBody):
    """A broker's topic table and its version, as registered and as persisted in ``topics.json``."""

    topic_config_table: Mapping[str, TopicConfig] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("dataVersion", "data_version", _Bean(DataVersion)),
        _p("topicConfigTable", "topic_config_table", _Map(_STR, _Bean(TopicConfig))),
    )


_INT32 = struct.Struct(">i")


#: Largest inflated size accepted for a compressed ``REGISTER_BROKER`` body by default, a guard
#: against deflate bombs (ours: RocketMQ inflates without a bound). A topic takes about 50 bytes
#: in this layout, so 16 MiB hold some 300,000 topics: three times what a JSON registration can
#: carry in a 16 MiB frame (about 110,000; RocketMQ's brokers send JSON unless
#: ``compressedRegister`` is on).
MAX_INFLATED_REGISTER_BODY = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class RegisterBrokerBody(JsonBody):
    """The body of ``REGISTER_BROKER``: the broker's topics and its filter servers.

    Brokers with ``compressedRegister=true`` send it deflated in a binary layout instead of JSON
    (header ``compressed=true``): ``encode(compress=True)`` / ``decode(data, compressed=True)``.
    That layout keeps only name, queue counts, perm and filter type of each topic.
    """

    topic_config_serialize_wrapper: TopicConfigSerializeWrapper = field(
        default_factory=TopicConfigSerializeWrapper
    )
    filter_server_list: tuple[str, ...] = ()

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("filterServerList", "filter_server_list", _list(_STR)),
        _p(
            "topicConfigSerializeWrapper",
            "topic_config_serialize_wrapper",
            _Bean(TopicConfigSerializeWrapper),
        ),
    )

    def encode(
        self, *, browser_compatible: bool = False, pretty: bool = False, compress: bool = False
    ) -> bytes:
        """JSON, or with ``compress=True`` the zlib-deflated binary form (best compression).

        The binary form, all lengths big-endian int32: the DataVersion JSON (length-prefixed), the
        number of topics, each topic's :meth:`TopicConfig.to_compact` (length-prefixed), and the
        filter-server list JSON (length-prefixed).
        """
        if not compress:
            return JsonBody.encode(self, browser_compatible=browser_compatible, pretty=pretty)
        wrapper = self.topic_config_serialize_wrapper
        parts: list[bytes] = []
        version = wrapper.data_version.encode()
        parts += (_INT32.pack(len(version)), version, _INT32.pack(len(wrapper.topic_config_table)))
        for config in wrapper.topic_config_table.values():
            compact = config.to_compact().encode("utf-8")
            parts += (_INT32.pack(len(compact)), compact)
        servers = dumps_bytes(list(self.filter_server_list))
        parts += (_INT32.pack(len(servers)), servers)
        return zlib.compress(b"".join(parts), 9)

    @classmethod
    def decode(
        cls,
        data: bytes | bytearray | memoryview | str,
        *,
        compressed: bool = False,
        max_fallback: int | None = None,
        max_inflated: int = MAX_INFLATED_REGISTER_BODY,
        max_topics: int | None = None,
        chunked: bool = False,
    ) -> Self:
        """Parse the JSON form, or with ``compressed=True`` the deflated binary form.

        The binary form inflates to at most ``max_inflated`` bytes and, with ``max_topics``, may
        name at most that many topics (checked before any is decoded); ``max_fallback`` and
        ``chunked`` (the JSON form) as for :func:`~rocketq.protocol.fastjson.loads`.
        """
        if not compressed:
            return super(RegisterBrokerBody, cls).decode(data, max_fallback=max_fallback, chunked=chunked)
        if isinstance(data, str):
            raise RemoteProtocolError("RegisterBrokerBody: a compressed body must be bytes")
        inflater = zlib.decompressobj()
        try:
            raw = inflater.decompress(bytes(data), max_inflated + 1)
        except zlib.error:
            raise RemoteProtocolError("RegisterBrokerBody: the compressed body does not inflate") from None
        if len(raw) > max_inflated:
            raise RemoteProtocolError(
                f"RegisterBrokerBody: compressed body inflates past {max_inflated} bytes"
            )
        if not inflater.eof:
            raise RemoteProtocolError("RegisterBrokerBody: compressed body is truncated")
        reader = _Reader(raw, "RegisterBrokerBody (compressed)")
        version = DataVersion.decode(reader.chunk(), max_fallback=max_fallback)
        count = reader.int32()
        if count < 0:
            raise RemoteProtocolError(f"RegisterBrokerBody (compressed): negative topic count {count}")
        if max_topics is not None and count > max_topics:
            raise RemoteProtocolError(
                f"RegisterBrokerBody (compressed): {count} topics, over this server's limit of {max_topics}"
            )
        table: dict[str, TopicConfig] = {}
        for _ in range(count):
            try:
                text = reader.chunk().decode("utf-8")
            except UnicodeDecodeError:
                raise RemoteProtocolError(
                    "RegisterBrokerBody (compressed): topic config is not UTF-8"
                ) from None
            config = TopicConfig.from_compact(text)
            table[config.topic_name or ""] = config
        servers = _list(_STR).load(
            loads(reader.chunk(), max_fallback=max_fallback), "RegisterBrokerBody.filterServerList"
        )
        if not reader.at_end():
            raise RemoteProtocolError(
                "RegisterBrokerBody (compressed): trailing bytes after the filter servers"
            )
        wrapper = TopicConfigSerializeWrapper(topic_config_table=table, data_version=version)
        return cls(topic_config_serialize_wrapper=wrapper, filter_server_list=servers)


class _Reader:
    __slots__ = ("data", "pos", "what")

    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.pos = 0
        self.what = what

    def int32(self) -> int:
        if self.pos + 4 > len(self.data):
            raise RemoteProtocolError(f"{self.what}: truncated at byte {self.pos}")
        (value,) = _INT32.unpack_from(self.data, self.pos)
        self.pos += 4
        return int(value)

    def chunk(self) -> bytes:
        size = self.int32()
        if size < 0 or self.pos + size > len(self.data):
            raise RemoteProtocolError(f"{self.what}: length {size} at byte {self.pos - 4} runs past the end")
        start = self.pos
        self.pos += size
        return self.data[start : self.pos]

    def at_end(self) -> bool:
        return self.pos == len(self.data)


@dataclass(frozen=True, slots=True)
class KVTable(JsonBody):
    """``KVTable``: string pairs (name-server KV config, broker runtime info)."""

    table: Mapping[str, str] = field(default_factory=dict)

    _PROPS: ClassVar[tuple[_F, ...]] = _props(_p("table", "table", _Map(_STR, _STR)))


@dataclass(frozen=True, slots=True)
class ConsumerOffsetSerializeWrapper(JsonBody):
    """Committed offsets keyed ``"topic@group"`` then queue id, as the broker keeps them on disk.

    This is also the shape of ``config/consumerOffset.json`` (``{"offsetTable":{"T@G":{0:12}}}``,
    queue ids as bare integers).
    """

    offset_table: Mapping[str, Mapping[int, int]] = field(default_factory=dict)

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("offsetTable", "offset_table", _Map(_STR, _Map(_LONG_KEY, _INT)))
    )


@dataclass(frozen=True, slots=True)
class SubscriptionGroupConfig(JsonBody):
    """A consumer group's broker-side settings; defaults are RocketMQ's."""

    group_name: str | None = None
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = 0
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("brokerId", "broker_id", _INT),
        _p("consumeBroadcastEnable", "consume_broadcast_enable", _BOOL),
        _p("consumeEnable", "consume_enable", _BOOL),
        _p("consumeFromMinEnable", "consume_from_min_enable", _BOOL),
        _p("groupName", "group_name", _STR),
        _p("notifyConsumerIdsChangedEnable", "notify_consumer_ids_changed_enable", _BOOL),
        _p("retryMaxTimes", "retry_max_times", _INT),
        _p("retryQueueNums", "retry_queue_nums", _INT),
        _p("whichBrokerWhenConsumeSlowly", "which_broker_when_consume_slowly", _INT),
    )


@dataclass(frozen=True, slots=True)
class SubscriptionGroupWrapper(JsonBody):
    """All groups' settings and their version, as in ``subscriptionGroup.json``."""

    subscription_group_table: Mapping[str, SubscriptionGroupConfig] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("dataVersion", "data_version", _Bean(DataVersion)),
        _p("subscriptionGroupTable", "subscription_group_table", _Map(_STR, _Bean(SubscriptionGroupConfig))),
    )


@dataclass(frozen=True, slots=True)
class DelayOffsetSerializeWrapper(JsonBody):
    """Progress of the delay-level queues (``delayOffset.json``, ``GET_ALL_DELAY_OFFSET``): level → offset."""

    offset_table: Mapping[int, int] = field(default_factory=dict)

    _PROPS: ClassVar[tuple[_F, ...]] = _props(_p("offsetTable", "offset_table", _Map(_LONG_KEY, _INT)))
