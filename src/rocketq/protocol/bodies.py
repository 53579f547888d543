"""Typed JSON bodies of RocketMQ remoting commands, read and written as fastjson does.

Every body is a frozen dataclass with snake_case fields, ``encode() -> bytes`` and
``decode(data) -> body``. The JSON names, their order (fastjson sorts bean properties by name) and
the Java defaults come from RocketMQ 4.9.4's classes of the same names. Decoding is lenient the way
fastjson is (missing fields take the Java default, unknown fields are ignored, ``"0"`` and ``0``
are both accepted for an integer map key) but a value of the wrong kind is a
:class:`~rocketq.errors.RemoteProtocolError` naming the field, e.g.
``TopicRouteData.queueDatas[0].perm: expected an integer, got 'x'``.

Collections keep the order they had on the wire, and are written back in that order, so a body
decoded from a Java peer re-encodes to the same bytes. Java's ``HashMap``/``HashSet`` fields come
out of fastjson in hash-bucket order; a Python peer building a body from scratch may pass entries
in any order (Java readers rebuild their own maps), or use :func:`java_hash_order` to reproduce the
order a Java peer would have produced. ``TreeMap``/``TreeSet`` fields
(:class:`ConsumerRunningInfo`) are sorted on encoding, as Java sorts them. Java lists and sets
are both tuples here; ``to_json`` gives lists for the former and tuples for the latter, which only
``encode(pretty=True)`` (fastjson's ``PrettyFormat``, the layout of RocketMQ's config files) tells
apart.

Maps keyed by a queue use :class:`~rocketq.models.MessageQueue` keys; fastjson writes those keys
as inline objects (``{{"brokerName":"b","queueId":0,"topic":"T"}:5}``), which
:mod:`rocketq.protocol.fastjson` reads and writes.

>>> body = LockBatchRequestBody(consumer_group="G", client_id="c1", mq_set=(MessageQueue("T", "b", 1),))
>>> body.encode()
b'{"clientId":"c1","consumerGroup":"G","mqSet":[{"brokerName":"b","queueId":1,"topic":"T"}]}'
>>> LockBatchRequestBody.decode(body.encode()) == body
True
"""

from __future__ import annotations

import enum
import struct
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any, ClassVar, Generic, Self, TypeVar

from rocketq.errors import ConfigError, RemoteProtocolError
from rocketq.models import MessageQueue
from rocketq.protocol.fastjson import Bean, FrozenObject, dumps, dumps_bytes, loads
from rocketq.protocol.properties import java_string_hash

__all__ = [
    "MAX_INFLATED_REGISTER_BODY",
    "SQL92",
    "SUB_ALL",
    "TAG",
    "BrokerData",
    "CMResult",
    "CheckClientRequestBody",
    "ClusterInfo",
    "Connection",
    "ConsumeFromWhere",
    "ConsumeMessageDirectlyResult",
    "ConsumeQueueData",
    "ConsumeStats",
    "ConsumeStatsList",
    "ConsumeStatus",
    "ConsumeType",
    "ConsumerConnection",
    "ConsumerData",
    "ConsumerOffsetSerializeWrapper",
    "ConsumerRunningInfo",
    "DataVersion",
    "DelayOffsetSerializeWrapper",
    "GetConsumerListByGroupResponseBody",
    "GetConsumerStatusBody",
    "GroupList",
    "HeartbeatData",
    "JsonBody",
    "KVTable",
    "LockBatchRequestBody",
    "LockBatchResponseBody",
    "MessageModel",
    "OffsetWrapper",
    "ProcessQueueInfo",
    "ProducerConnection",
    "ProducerData",
    "QueryConsumeQueueResponseBody",
    "QueryConsumeTimeSpanBody",
    "QueryCorrectionOffsetBody",
    "QueueData",
    "QueueTimeSpan",
    "RegisterBrokerBody",
    "ResetOffsetBody",
    "SubscriptionData",
    "SubscriptionGroupConfig",
    "SubscriptionGroupWrapper",
    "TopicConfig",
    "TopicConfigSerializeWrapper",
    "TopicFilterType",
    "TopicList",
    "TopicOffset",
    "TopicRouteData",
    "TopicStatsTable",
    "UnlockBatchRequestBody",
    "java_hash_order",
]

T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")
E = TypeVar("E", bound=enum.Enum)
B = TypeVar("B", bound="JsonBody")


# --------------------------------------------------------------------------------------------
# Enums that travel by name
# --------------------------------------------------------------------------------------------


class ConsumeType(enum.StrEnum):
    """How a consumer gets messages (``ConsumeType``): pull consumers are ACTIVELY, push PASSIVELY."""

    CONSUME_ACTIVELY = "CONSUME_ACTIVELY"
    CONSUME_PASSIVELY = "CONSUME_PASSIVELY"


class MessageModel(enum.StrEnum):
    """Whether a group shares its queues (CLUSTERING) or every member reads all (BROADCASTING)."""

    BROADCASTING = "BROADCASTING"
    CLUSTERING = "CLUSTERING"


class ConsumeFromWhere(enum.StrEnum):
    """Where a new consumer group starts (``ConsumeFromWhere``; the middle three are deprecated)."""

    CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST = (
        "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST"
    )
    CONSUME_FROM_MIN_OFFSET = "CONSUME_FROM_MIN_OFFSET"
    CONSUME_FROM_MAX_OFFSET = "CONSUME_FROM_MAX_OFFSET"
    CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


class CMResult(enum.StrEnum):
    """How a listener handled a message pushed by ``CONSUME_MESSAGE_DIRECTLY`` (``CMResult``)."""

    CR_SUCCESS = "CR_SUCCESS"
    CR_LATER = "CR_LATER"
    CR_ROLLBACK = "CR_ROLLBACK"
    CR_COMMIT = "CR_COMMIT"
    CR_THROW_EXCEPTION = "CR_THROW_EXCEPTION"
    CR_RETURN_NULL = "CR_RETURN_NULL"


class TopicFilterType(enum.StrEnum):
    """``TopicFilterType``: every topic RocketMQ creates is SINGLE_TAG."""

    SINGLE_TAG = "SINGLE_TAG"
    MULTI_TAG = "MULTI_TAG"


# --------------------------------------------------------------------------------------------
# Field codecs: Python value <-> parsed fastjson value, with errors that name the field
# --------------------------------------------------------------------------------------------


def _kind(raw: object) -> str:
    if raw is None:
        return "null"
    if isinstance(raw, bool):
        return "a boolean"
    if isinstance(raw, (int, float)):
        return "a number"
    if isinstance(raw, str):
        return "a string"
    if isinstance(raw, (dict, FrozenObject)):
        return "an object"
    if isinstance(raw, (list, tuple)):
        return "an array"
    return type(raw).__name__


# Where a value sits in a body, built cheaply while decoding and rendered only for an error:
# a class name, or (parent, step, kind) with kind "." (field), "[]" (index or map key) or "key".
_Path = str | tuple[Any, Any, str]


def _render(path: _Path) -> str:
    if isinstance(path, str):
        return path
    parent, step, kind = path
    if kind == ".":
        return f"{_render(parent)}.{step}"
    if kind == "[]":
        return f"{_render(parent)}[{step!r}]"
    return f"{_render(parent)} key"


def _bad(path: _Path, expected: str, raw: object) -> RemoteProtocolError:
    shown = repr(raw)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return RemoteProtocolError(f"{_render(path)}: expected {expected}, got {_kind(raw)} {shown}")


class _Codec(Generic[T]):
    """Converts one field between its parsed-JSON form and its Python form.

    ``exact`` names the parsed type that needs no conversion at all (``str`` for strings ...).
    """

    __slots__ = ()
    exact: ClassVar[type | None] = None

    def load(self, raw: Any, path: _Path) -> T:
        raise NotImplementedError

    def dump(self, value: T) -> Any:
        return value


class _Str(_Codec[str]):
    __slots__ = ()
    exact = str

    def load(self, raw: Any, path: _Path) -> str:
        if isinstance(raw, str):
            return raw
        if isinstance(raw, (int, float)) and not isinstance(raw, bool):
            return str(raw)  # fastjson turns a number into the text of a String property
        raise _bad(path, "a string", raw)


class _Int(_Codec[int]):
    __slots__ = ()
    exact = int

    def load(self, raw: Any, path: _Path) -> int:
        if isinstance(raw, int) and not isinstance(raw, bool):
            return raw
        if isinstance(raw, str):
            try:
                return int(raw)
            except ValueError:
                pass
        raise _bad(path, "an integer", raw)


class _Float(_Codec[float]):
    __slots__ = ()
    exact = float

    def load(self, raw: Any, path: _Path) -> float:
        if isinstance(raw, (int, float)) and not isinstance(raw, bool):
            return float(raw)
        if isinstance(raw, str):
            try:
                return float(raw)
            except ValueError:
                pass
        raise _bad(path, "a number", raw)

    def dump(self, value: float) -> Any:
        return float(value)


class _Bool(_Codec[bool]):
    __slots__ = ()
    exact = bool

    def load(self, raw: Any, path: _Path) -> bool:
        if isinstance(raw, bool):
            return raw
        if raw in ("true", 1):
            return True
        if raw in ("false", 0):
            return False
        raise _bad(path, "a boolean", raw)


class _Enum(_Codec[E]):
    __slots__ = ("cls",)

    def __init__(self, cls: type[E]) -> None:
        self.cls = cls

    def load(self, raw: Any, path: _Path) -> E:
        if isinstance(raw, str):
            try:
                return self.cls[raw]
            except KeyError:
                pass
        elif isinstance(raw, int) and not isinstance(raw, bool) and 0 <= raw < len(self.cls):
            return list(self.cls)[raw]  # fastjson also accepts an enum's ordinal
        names = ", ".join(m.name for m in self.cls)
        raise _bad(path, f"one of {names}", raw)

    def dump(self, value: E) -> Any:
        return value.name


class _List(_Codec[tuple[T, ...]]):
    """A Java List or Set: a tuple in wire order (dumped as a list, or as a tuple for a Set)."""

    __slots__ = ("is_set", "item")

    def __init__(self, item: _Codec[T], *, is_set: bool = False) -> None:
        self.item = item
        self.is_set = is_set

    def load(self, raw: Any, path: _Path) -> tuple[T, ...]:
        if not isinstance(raw, (list, tuple)):
            raise _bad(path, "an array", raw)
        load = self.item.load
        return tuple([load(v, (path, i, "[]")) for i, v in enumerate(raw)])

    def dump(self, value: tuple[T, ...]) -> Any:
        dump = self.item.dump
        items = [dump(v) for v in value]
        return tuple(items) if self.is_set else items


class _Map(_Codec[dict[K, V]]):
    __slots__ = ("key", "value")

    def __init__(self, key: _Codec[K], value: _Codec[V]) -> None:
        self.key = key
        self.value = value

    def load(self, raw: Any, path: _Path) -> dict[K, V]:
        if not isinstance(raw, dict):
            raise _bad(path, "an object", raw)
        kload = self.key.load
        vload = self.value.load
        result: dict[K, V] = {}
        for k, v in raw.items():
            result[kload(k, (path, k, "key"))] = vload(v, (path, k, "[]"))
        return result

    def dump(self, value: dict[K, V]) -> Any:
        kdump = self.key.dump
        vdump = self.value.dump
        return {kdump(k): vdump(v) for k, v in value.items()}


class _LongKey(_Codec[int]):
    """A ``Long``/``Integer`` key: bare (``{0:…}``) from fastjson, quoted (``{"0":…}``) in standard JSON."""

    __slots__ = ()

    def load(self, raw: Any, path: _Path) -> int:
        if isinstance(raw, int) and not isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and raw.lstrip("-").isdigit():
            return int(raw)
        raise _bad(path, "an integer", raw)


class _Queue(_Codec[MessageQueue]):
    """A ``MessageQueue`` bean, as a value or a map key (a :class:`FrozenObject`, or its JSON text)."""

    __slots__ = ()

    def load(self, raw: Any, path: _Path) -> MessageQueue:
        if isinstance(raw, str) and raw.startswith("{"):
            # a key written as a JSON string (WriteNonStringKeyAsString / BrowserCompatible)
            try:
                raw = loads(raw)
            except RemoteProtocolError:
                pass
        if type(raw) is FrozenObject:
            raw = dict(raw)
        if isinstance(raw, dict):
            get = raw.get
            topic = get("topic")
            broker = get("brokerName")
            queue_id = get("queueId", 0)
            if isinstance(topic, str) and isinstance(broker, str) and type(queue_id) is int:
                return MessageQueue(topic, broker, queue_id)
        raise _bad(path, "a message queue {brokerName, queueId, topic}", raw)

    def dump(self, value: MessageQueue) -> Any:
        return FrozenObject(
            (("brokerName", value.broker_name), ("queueId", value.queue_id), ("topic", value.topic))
        )


class _Bean(_Codec[B]):
    __slots__ = ("cls",)

    def __init__(self, cls: type[B]) -> None:
        self.cls = cls

    def load(self, raw: Any, path: _Path) -> B:
        return self.cls._from_json(raw, path)

    def dump(self, value: B) -> Any:
        return value.to_json()


_STR = _Str()
_INT = _Int()
_FLOAT = _Float()
_BOOL = _Bool()
_LONG_KEY = _LongKey()
_QUEUE = _Queue()


@dataclass(frozen=True, slots=True)
class _F:
    """One bean property: its JSON name, the dataclass attribute and the codec."""

    name: str
    attr: str
    codec: _Codec[Any]


def _props(*fields: _F) -> tuple[_F, ...]:
    """Properties in fastjson's order: sorted by JSON name (Java ``String.compareTo``)."""
    return tuple(sorted(fields, key=lambda f: f.name))


# --------------------------------------------------------------------------------------------
# The base class
# --------------------------------------------------------------------------------------------


class JsonBody:
    """Base of every typed body: ``encode``/``decode`` through fastjson, driven by ``_PROPS``."""

    __slots__ = ()

    _PROPS: ClassVar[tuple[_F, ...]] = ()

    def to_json(self) -> dict[str, Any]:
        """The body as parsed-JSON values (a :class:`~rocketq.protocol.fastjson.Bean` in fastjson's
        property order, ``None`` fields omitted; Java sets as tuples, lists as lists)."""
        result = Bean()
        for prop in self._PROPS:
            value = getattr(self, prop.attr)
            if value is not None:
                result[prop.name] = prop.codec.dump(value)
        return result

    @classmethod
    def from_json(cls, raw: Any) -> Self:
        """Build the body from an already parsed JSON value."""
        return cls._from_json(raw, cls.__name__)

    @classmethod
    def _from_json(cls, raw: Any, path: _Path) -> Self:
        if not isinstance(raw, (dict, FrozenObject)):
            raise _bad(path, "an object", raw)
        get = raw.get
        kwargs: dict[str, Any] = {}
        for prop in cls._PROPS:
            value = get(prop.name)
            if value is None:
                continue
            codec = prop.codec
            if type(value) is codec.exact:
                kwargs[prop.attr] = value  # already the Python type: no conversion, no check needed
            else:
                kwargs[prop.attr] = codec.load(value, (path, prop.name, "."))
        return cls(**kwargs)

    def encode(self, *, browser_compatible: bool = False, pretty: bool = False) -> bytes:
        """The body as fastjson writes it (``RemotingSerializable.encode``), UTF-8.

        ``browser_compatible=True`` writes standard JSON the way RocketMQ's name server does for
        4.9.4+ clients (``SerializerFeature.BrowserCompatible`` + ``MapSortField``).
        ``pretty=True`` is fastjson's ``PrettyFormat``, the layout of the broker's and name
        server's config files (``ConfigManager.persist``).
        """
        return dumps_bytes(self.to_json(), browser_compatible=browser_compatible, pretty=pretty)

    def to_text(self, *, pretty: bool = False) -> str:
        """:meth:`encode` as text."""
        return dumps(self.to_json(), pretty=pretty)

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview | str) -> Self:
        """Parse a body written by fastjson (or by anything writing standard JSON)."""
        if not data:
            raise RemoteProtocolError(f"{cls.__name__}: empty body")
        try:
            raw = loads(data)
        except RemoteProtocolError as exc:
            raise RemoteProtocolError(f"{cls.__name__}: {exc}") from None
        return cls._from_json(raw, cls.__name__)


def _p(name: str, attr: str, codec: _Codec[Any]) -> _F:
    return _F(name, attr, codec)


def _list(item: _Codec[T]) -> _List[T]:
    return _List(item)


def _beans(cls: type[B]) -> _List[B]:
    return _List(_Bean(cls))


def _set(item: _Codec[T]) -> _List[T]:
    return _List(item, is_set=True)


def _bean_set(cls: type[B]) -> _List[B]:
    return _List(_Bean(cls), is_set=True)


# --------------------------------------------------------------------------------------------
# Versions, topic configs and broker registration
# --------------------------------------------------------------------------------------------


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

#: Largest inflated size accepted for a compressed ``REGISTER_BROKER`` body (a guard against
#: deflate bombs; a broker's topic table takes about 40 bytes per topic in this layout).
MAX_INFLATED_REGISTER_BODY = 64 * 1024 * 1024


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
    def decode(cls, data: bytes | bytearray | memoryview | str, *, compressed: bool = False) -> Self:
        """Parse the JSON form, or with ``compressed=True`` the deflated binary form."""
        if not compressed:
            return super(RegisterBrokerBody, cls).decode(data)
        if isinstance(data, str):
            raise RemoteProtocolError("RegisterBrokerBody: a compressed body must be bytes")
        inflater = zlib.decompressobj()
        try:
            raw = inflater.decompress(bytes(data), MAX_INFLATED_REGISTER_BODY + 1)
        except zlib.error as exc:
            raise RemoteProtocolError(f"RegisterBrokerBody: bad compressed body ({exc})") from None
        if len(raw) > MAX_INFLATED_REGISTER_BODY:
            raise RemoteProtocolError(
                f"RegisterBrokerBody: compressed body inflates past {MAX_INFLATED_REGISTER_BODY} bytes"
            )
        if not inflater.eof:
            raise RemoteProtocolError("RegisterBrokerBody: compressed body is truncated")
        reader = _Reader(raw, "RegisterBrokerBody (compressed)")
        version = DataVersion.decode(reader.chunk())
        count = reader.int32()
        if count < 0:
            raise RemoteProtocolError(f"RegisterBrokerBody (compressed): negative topic count {count}")
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
        servers = _list(_STR).load(loads(reader.chunk()), "RegisterBrokerBody.filterServerList")
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


# --------------------------------------------------------------------------------------------
# Routes and cluster info
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QueueData(JsonBody):
    """One broker's queues of a topic in a route (``QueueData``)."""

    broker_name: str | None = None
    read_queue_nums: int = 0
    write_queue_nums: int = 0
    perm: int = 0
    topic_sys_flag: int = 0

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("brokerName", "broker_name", _STR),
        _p("perm", "perm", _INT),
        _p("readQueueNums", "read_queue_nums", _INT),
        _p("topicSysFlag", "topic_sys_flag", _INT),
        _p("writeQueueNums", "write_queue_nums", _INT),
    )


@dataclass(frozen=True, slots=True)
class BrokerData(JsonBody):
    """A broker group in a route or cluster view: ``broker_addrs`` maps broker id (0 = master) to address."""

    cluster: str | None = None
    broker_name: str | None = None
    broker_addrs: Mapping[int, str] = field(default_factory=dict)

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("brokerAddrs", "broker_addrs", _Map(_LONG_KEY, _STR)),
        _p("brokerName", "broker_name", _STR),
        _p("cluster", "cluster", _STR),
    )

    @property
    def master_addr(self) -> str | None:
        """The address of broker id 0, if the master is registered."""
        return self.broker_addrs.get(0)


@dataclass(frozen=True, slots=True)
class TopicRouteData(JsonBody):
    """The route of a topic (``GET_ROUTEINFO_BY_TOPIC`` response).

    The 4.9.4 name server answers clients of version >= 4.9.4 (or those asking with
    ``acceptStandardJsonOnly``) with ``encode(browser_compatible=True)``: broker ids quoted
    (``{"0":…}``) and maps sorted; older clients get fastjson's native ``{0:…}``.
    """

    order_topic_conf: str | None = None
    queue_datas: tuple[QueueData, ...] = ()
    broker_datas: tuple[BrokerData, ...] = ()
    filter_server_table: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("brokerDatas", "broker_datas", _beans(BrokerData)),
        _p("filterServerTable", "filter_server_table", _Map(_STR, _list(_STR))),
        _p("orderTopicConf", "order_topic_conf", _STR),
        _p("queueDatas", "queue_datas", _beans(QueueData)),
    )


@dataclass(frozen=True, slots=True)
class ClusterInfo(JsonBody):
    """``GET_BROKER_CLUSTER_INFO``: broker groups by name and broker names by cluster."""

    broker_addr_table: Mapping[str, BrokerData] = field(default_factory=dict)
    cluster_addr_table: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("brokerAddrTable", "broker_addr_table", _Map(_STR, _Bean(BrokerData))),
        _p("clusterAddrTable", "cluster_addr_table", _Map(_STR, _set(_STR))),
    )


@dataclass(frozen=True, slots=True)
class TopicList(JsonBody):
    """A list of topic names (``GET_ALL_TOPIC_LIST_FROM_NAMESERVER`` and friends)."""

    topic_list: tuple[str, ...] = ()
    broker_addr: str | None = None

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("brokerAddr", "broker_addr", _STR), _p("topicList", "topic_list", _set(_STR))
    )


# --------------------------------------------------------------------------------------------
# Heartbeats and client bodies
# --------------------------------------------------------------------------------------------


#: ``SubscriptionData.SUB_ALL``: the tag expression that matches every message.
SUB_ALL = "*"
#: ``ExpressionType.TAG`` and ``ExpressionType.SQL92``.
TAG = "TAG"
SQL92 = "SQL92"
# Java's String.trim() removes every character up to U+0020.
_JAVA_TRIMMED = "".join(map(chr, range(0x21)))


@dataclass(frozen=True, slots=True)
class SubscriptionData(JsonBody):
    """A consumer's subscription to one topic (``SubscriptionData``).

    For tag expressions ``tags_set`` holds the tags and ``code_set`` their Java ``String.hashCode``;
    ``sub_string`` ``"*"`` means everything. ``filterClassSource`` is never serialized by RocketMQ.
    """

    topic: str | None = None
    sub_string: str | None = None
    tags_set: tuple[str, ...] = ()
    code_set: tuple[int, ...] = ()
    sub_version: int = 0
    expression_type: str | None = TAG
    class_filter_mode: bool = False

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("classFilterMode", "class_filter_mode", _BOOL),
        _p("codeSet", "code_set", _set(_INT)),
        _p("expressionType", "expression_type", _STR),
        _p("subString", "sub_string", _STR),
        _p("subVersion", "sub_version", _INT),
        _p("tagsSet", "tags_set", _set(_STR)),
        _p("topic", "topic", _STR),
    )

    @classmethod
    def build(
        cls, topic: str, expression: str | None, *, sub_version: int, expression_type: str | None = TAG
    ) -> SubscriptionData:
        """The subscription a Java client makes of ``expression`` (``FilterAPI.build``).

        For a tag expression (``"TagA || TagB"``; ``None``, ``""`` or ``"*"`` mean every tag) the
        tags are split on ``||`` and trimmed; ``tags_set`` and ``code_set`` come out in the order a
        Java ``HashSet`` iterates them, so the heartbeat carrying them is byte-identical to a Java
        client's. Any other expression type (``"SQL92"``) is kept as text and must not be empty.
        ``sub_version`` is the client's clock in ms when it subscribed.

        >>> sub = SubscriptionData.build("T", "TagB || TagA ||", sub_version=1)
        >>> sub.tags_set, sub.code_set
        (('TagA', 'TagB'), (2598919, 2598920))
        """
        if expression_type not in (None, TAG):
            if not expression:
                raise ConfigError(f"a {expression_type} expression must not be empty")
            return cls(
                topic=topic, sub_string=expression, sub_version=sub_version, expression_type=expression_type
            )
        if not expression or expression == SUB_ALL:
            return cls(topic=topic, sub_string=SUB_ALL, sub_version=sub_version)
        tags: dict[str, None] = {}
        for part in expression.split("||"):
            tag = part.strip(_JAVA_TRIMMED)
            if tag:
                tags.setdefault(tag)
        codes = dict.fromkeys(java_string_hash(tag) for tag in tags)
        return cls(
            topic=topic,
            sub_string=expression,
            tags_set=tuple(java_hash_order(tags)),
            code_set=tuple(java_hash_order(codes)),
            sub_version=sub_version,
        )


@dataclass(frozen=True, slots=True)
class ProducerData(JsonBody):
    """A producer group in a heartbeat."""

    group_name: str | None = None

    _PROPS: ClassVar[tuple[_F, ...]] = _props(_p("groupName", "group_name", _STR))


@dataclass(frozen=True, slots=True)
class ConsumerData(JsonBody):
    """A consumer group in a heartbeat: how it consumes and what it subscribes to."""

    group_name: str | None = None
    consume_type: ConsumeType | None = None
    message_model: MessageModel | None = None
    consume_from_where: ConsumeFromWhere | None = None
    subscription_data_set: tuple[SubscriptionData, ...] = ()
    unit_mode: bool = False

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("consumeFromWhere", "consume_from_where", _Enum(ConsumeFromWhere)),
        _p("consumeType", "consume_type", _Enum(ConsumeType)),
        _p("groupName", "group_name", _STR),
        _p("messageModel", "message_model", _Enum(MessageModel)),
        _p("subscriptionDataSet", "subscription_data_set", _bean_set(SubscriptionData)),
        _p("unitMode", "unit_mode", _BOOL),
    )


@dataclass(frozen=True, slots=True)
class HeartbeatData(JsonBody):
    """The ``HEART_BEAT`` body (note the JSON name ``clientID`` with a capital D)."""

    client_id: str | None = None
    producer_data_set: tuple[ProducerData, ...] = ()
    consumer_data_set: tuple[ConsumerData, ...] = ()

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("clientID", "client_id", _STR),
        _p("consumerDataSet", "consumer_data_set", _bean_set(ConsumerData)),
        _p("producerDataSet", "producer_data_set", _bean_set(ProducerData)),
    )


@dataclass(frozen=True, slots=True)
class CheckClientRequestBody(JsonBody):
    """``CHECK_CLIENT_CONFIG``: a consumer asks the broker whether it can evaluate its filter."""

    client_id: str | None = None
    group: str | None = None
    subscription_data: SubscriptionData | None = None

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("clientId", "client_id", _STR),
        _p("group", "group", _STR),
        _p("subscriptionData", "subscription_data", _Bean(SubscriptionData)),
    )


@dataclass(frozen=True, slots=True)
class GetConsumerListByGroupResponseBody(JsonBody):
    """The client ids of a consumer group (``GET_CONSUMER_LIST_BY_GROUP`` response)."""

    consumer_id_list: tuple[str, ...] = ()

    _PROPS: ClassVar[tuple[_F, ...]] = _props(_p("consumerIdList", "consumer_id_list", _list(_STR)))


@dataclass(frozen=True, slots=True)
class LockBatchRequestBody(JsonBody):
    """``LOCK_BATCH_MQ`` request: the queues an orderly consumer wants to own."""

    consumer_group: str | None = None
    client_id: str | None = None
    mq_set: tuple[MessageQueue, ...] = ()

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("clientId", "client_id", _STR),
        _p("consumerGroup", "consumer_group", _STR),
        _p("mqSet", "mq_set", _set(_QUEUE)),
    )


@dataclass(frozen=True, slots=True)
class UnlockBatchRequestBody(JsonBody):
    """``UNLOCK_BATCH_MQ`` request: the queues an orderly consumer releases."""

    consumer_group: str | None = None
    client_id: str | None = None
    mq_set: tuple[MessageQueue, ...] = ()

    _PROPS: ClassVar[tuple[_F, ...]] = LockBatchRequestBody._PROPS


@dataclass(frozen=True, slots=True)
class LockBatchResponseBody(JsonBody):
    """``LOCK_BATCH_MQ`` response: the queues now locked by the requester."""

    lock_ok_mq_set: tuple[MessageQueue, ...] = ()

    _PROPS: ClassVar[tuple[_F, ...]] = _props(_p("lockOKMQSet", "lock_ok_mq_set", _set(_QUEUE)))


# --------------------------------------------------------------------------------------------
# Admin bodies
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OffsetWrapper(JsonBody):
    """A queue's broker max offset, the group's committed offset and the last store time."""

    broker_offset: int = 0
    consumer_offset: int = 0
    last_timestamp: int = 0

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("brokerOffset", "broker_offset", _INT),
        _p("consumerOffset", "consumer_offset", _INT),
        _p("lastTimestamp", "last_timestamp", _INT),
    )


@dataclass(frozen=True, slots=True)
class ConsumeStats(JsonBody):
    """``GET_CONSUME_STATS``: per-queue offsets of a group on one broker, and its consume TPS."""

    offset_table: Mapping[MessageQueue, OffsetWrapper] = field(default_factory=dict)
    consume_tps: float = 0.0

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("consumeTps", "consume_tps", _FLOAT),
        _p("offsetTable", "offset_table", _Map(_QUEUE, _Bean(OffsetWrapper))),
    )

    def total_diff(self) -> int:
        """Messages not yet consumed, summed over the queues (``computeTotalDiff``)."""
        return sum(w.broker_offset - w.consumer_offset for w in self.offset_table.values())


@dataclass(frozen=True, slots=True)
class TopicOffset(JsonBody):
    """A queue's min and max offsets and the store time of its last message."""

    min_offset: int = 0
    max_offset: int = 0
    last_update_timestamp: int = 0

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("lastUpdateTimestamp", "last_update_timestamp", _INT),
        _p("maxOffset", "max_offset", _INT),
        _p("minOffset", "min_offset", _INT),
    )


@dataclass(frozen=True, slots=True)
class TopicStatsTable(JsonBody):
    """``GET_TOPIC_STATS_INFO``: the offsets of every queue of a topic on one broker."""

    offset_table: Mapping[MessageQueue, TopicOffset] = field(default_factory=dict)

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("offsetTable", "offset_table", _Map(_QUEUE, _Bean(TopicOffset)))
    )


@dataclass(frozen=True, slots=True)
class Connection(JsonBody):
    """One client connection: id, remote address, language (``LanguageCode`` name) and version."""

    client_id: str | None = None
    client_addr: str | None = None
    language: str | None = None
    version: int = 0

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("clientAddr", "client_addr", _STR),
        _p("clientId", "client_id", _STR),
        _p("language", "language", _STR),
        _p("version", "version", _INT),
    )


@dataclass(frozen=True, slots=True)
class ConsumerConnection(JsonBody):
    """``GET_CONSUMER_CONNECTION_LIST``: a group's connections and its subscriptions."""

    connection_set: tuple[Connection, ...] = ()
    subscription_table: Mapping[str, SubscriptionData] = field(default_factory=dict)
    consume_type: ConsumeType | None = None
    message_model: MessageModel | None = None
    consume_from_where: ConsumeFromWhere | None = None

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("connectionSet", "connection_set", _bean_set(Connection)),
        _p("consumeFromWhere", "consume_from_where", _Enum(ConsumeFromWhere)),
        _p("consumeType", "consume_type", _Enum(ConsumeType)),
        _p("messageModel", "message_model", _Enum(MessageModel)),
        _p("subscriptionTable", "subscription_table", _Map(_STR, _Bean(SubscriptionData))),
    )


@dataclass(frozen=True, slots=True)
class ProducerConnection(JsonBody):
    """``GET_PRODUCER_CONNECTION_LIST``: a producer group's connections."""

    connection_set: tuple[Connection, ...] = ()

    _PROPS: ClassVar[tuple[_F, ...]] = _props(_p("connectionSet", "connection_set", _bean_set(Connection)))


@dataclass(frozen=True, slots=True)
class ProcessQueueInfo(JsonBody):
    """A push consumer's view of one of its queues (``ProcessQueueInfo``; ``droped`` sic)."""

    commit_offset: int = 0
    cached_msg_min_offset: int = 0
    cached_msg_max_offset: int = 0
    cached_msg_count: int = 0
    cached_msg_size_in_mib: int = 0
    transaction_msg_min_offset: int = 0
    transaction_msg_max_offset: int = 0
    transaction_msg_count: int = 0
    locked: bool = False
    try_unlock_times: int = 0
    last_lock_timestamp: int = 0
    droped: bool = False
    last_pull_timestamp: int = 0
    last_consume_timestamp: int = 0

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("cachedMsgCount", "cached_msg_count", _INT),
        _p("cachedMsgMaxOffset", "cached_msg_max_offset", _INT),
        _p("cachedMsgMinOffset", "cached_msg_min_offset", _INT),
        _p("cachedMsgSizeInMiB", "cached_msg_size_in_mib", _INT),
        _p("commitOffset", "commit_offset", _INT),
        _p("droped", "droped", _BOOL),
        _p("lastConsumeTimestamp", "last_consume_timestamp", _INT),
        _p("lastLockTimestamp", "last_lock_timestamp", _INT),
        _p("lastPullTimestamp", "last_pull_timestamp", _INT),
        _p("locked", "locked", _BOOL),
        _p("transactionMsgCount", "transaction_msg_count", _INT),
        _p("transactionMsgMaxOffset", "transaction_msg_max_offset", _INT),
        _p("transactionMsgMinOffset", "transaction_msg_min_offset", _INT),
        _p("tryUnlockTimes", "try_unlock_times", _INT),
    )


@dataclass(frozen=True, slots=True)
class ConsumeStatus(JsonBody):
    """A consumer's per-topic rates: pull/consume response times (ms) and TPS, failures."""

    pull_rt: float = 0.0
    pull_tps: float = 0.0
    consume_rt: float = 0.0
    consume_ok_tps: float = 0.0
    consume_failed_tps: float = 0.0
    consume_failed_msgs: int = 0

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("consumeFailedMsgs", "consume_failed_msgs", _INT),
        _p("consumeFailedTPS", "consume_failed_tps", _FLOAT),
        _p("consumeOKTPS", "consume_ok_tps", _FLOAT),
        _p("consumeRT", "consume_rt", _FLOAT),
        _p("pullRT", "pull_rt", _FLOAT),
        _p("pullTPS", "pull_tps", _FLOAT),
    )


def _java_key(text: str) -> bytes:
    """A sort key ordering strings as Java's ``String.compareTo`` does (by UTF-16 code units)."""
    return text.encode("utf-16-be", "surrogatepass")


def _subscription_key(sub: SubscriptionData) -> bytes:
    # SubscriptionData.compareTo compares "topic@subString" (Java string concatenation of nulls too)
    return _java_key(f"{sub.topic}@{sub.sub_string}")


@dataclass(frozen=True, slots=True)
class ConsumerRunningInfo(JsonBody):
    """``GET_CONSUMER_RUNNING_INFO`` answer: a consumer's settings, subscriptions and queues.

    ``properties`` is the client's own ``Properties`` dump (free-form strings). Java keeps
    ``subscription_set``, ``mq_table`` and ``status_table`` sorted (TreeSet/TreeMap), so they are
    written sorted whatever order they are given in.
    """

    properties: Mapping[str, str] = field(default_factory=dict)
    subscription_set: tuple[SubscriptionData, ...] = ()
    mq_table: Mapping[MessageQueue, ProcessQueueInfo] = field(default_factory=dict)
    status_table: Mapping[str, ConsumeStatus] = field(default_factory=dict)
    jstack: str | None = None

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("jstack", "jstack", _STR),
        _p("mqTable", "mq_table", _Map(_QUEUE, _Bean(ProcessQueueInfo))),
        _p("properties", "properties", _Map(_STR, _STR)),
        _p("statusTable", "status_table", _Map(_STR, _Bean(ConsumeStatus))),
        _p("subscriptionSet", "subscription_set", _bean_set(SubscriptionData)),
    )

    def to_json(self) -> dict[str, Any]:
        ordered = ConsumerRunningInfo(
            properties=self.properties,
            subscription_set=tuple(sorted(self.subscription_set, key=_subscription_key)),
            mq_table=dict(sorted(self.mq_table.items())),
            status_table=dict(sorted(self.status_table.items(), key=lambda kv: _java_key(kv[0]))),
            jstack=self.jstack,
        )
        return JsonBody.to_json(ordered)


_JAVA_DATE_FORMAT = "%Y-%m-%d#%H:%M:%S"


def _format_java_millis(millis: int, tz: tzinfo) -> str:
    """``UtilAll.formatDate(new Date(ms), "yyyy-MM-dd#HH:mm:ss:SSS")`` in time zone ``tz``."""
    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=millis)
    return f"{moment.astimezone(tz).strftime(_JAVA_DATE_FORMAT)}:{millis % 1000:03d}"


@dataclass(frozen=True, slots=True)
class QueueTimeSpan(JsonBody):
    """The store-time span of a queue and how far a group has consumed it.

    Java also writes each timestamp formatted in the broker's local time zone
    (``minTimeStampStr`` …); those strings are kept as received, and :meth:`of` computes them
    for a given zone.
    """

    message_queue: MessageQueue | None = None
    min_time_stamp: int = 0
    max_time_stamp: int = 0
    consume_time_stamp: int = 0
    delay_time: int = 0
    min_time_stamp_str: str | None = None
    max_time_stamp_str: str | None = None
    consume_time_stamp_str: str | None = None

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("consumeTimeStamp", "consume_time_stamp", _INT),
        _p("consumeTimeStampStr", "consume_time_stamp_str", _STR),
        _p("delayTime", "delay_time", _INT),
        _p("maxTimeStamp", "max_time_stamp", _INT),
        _p("maxTimeStampStr", "max_time_stamp_str", _STR),
        _p("messageQueue", "message_queue", _QUEUE),
        _p("minTimeStamp", "min_time_stamp", _INT),
        _p("minTimeStampStr", "min_time_stamp_str", _STR),
    )

    @classmethod
    def of(
        cls,
        message_queue: MessageQueue,
        *,
        min_time_stamp: int,
        max_time_stamp: int,
        consume_time_stamp: int,
        delay_time: int,
        tz: tzinfo = UTC,
    ) -> QueueTimeSpan:
        """A span with the ``*_str`` fields formatted as Java formats them, in zone ``tz``."""
        return cls(
            message_queue=message_queue,
            min_time_stamp=min_time_stamp,
            max_time_stamp=max_time_stamp,
            consume_time_stamp=consume_time_stamp,
            delay_time=delay_time,
            min_time_stamp_str=_format_java_millis(min_time_stamp, tz),
            max_time_stamp_str=_format_java_millis(max_time_stamp, tz),
            consume_time_stamp_str=_format_java_millis(consume_time_stamp, tz),
        )


@dataclass(frozen=True, slots=True)
class QueryConsumeTimeSpanBody(JsonBody):
    """``QUERY_CONSUME_TIME_SPAN`` answer: one :class:`QueueTimeSpan` per queue."""

    consume_time_span_set: tuple[QueueTimeSpan, ...] = ()

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("consumeTimeSpanSet", "consume_time_span_set", _beans(QueueTimeSpan))
    )


@dataclass(frozen=True, slots=True)
class GroupList(JsonBody):
    """Group names (``QUERY_TOPIC_CONSUME_BY_WHO`` answer)."""

    group_list: tuple[str, ...] = ()

    _PROPS: ClassVar[tuple[_F, ...]] = _props(_p("groupList", "group_list", _set(_STR)))


@dataclass(frozen=True, slots=True)
class ResetOffsetBody(JsonBody):
    """New offsets per queue (``INVOKE_BROKER_TO_RESET_OFFSET`` answer, ``RESET_CONSUMER_CLIENT_OFFSET``)."""

    offset_table: Mapping[MessageQueue, int] = field(default_factory=dict)

    _PROPS: ClassVar[tuple[_F, ...]] = _props(_p("offsetTable", "offset_table", _Map(_QUEUE, _INT)))


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
class ConsumeMessageDirectlyResult(JsonBody):
    """A client's answer to ``CONSUME_MESSAGE_DIRECTLY``: how its listener handled one message."""

    order: bool = False
    auto_commit: bool = True
    consume_result: CMResult | None = None
    remark: str | None = None
    spent_time_mills: int = 0

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("autoCommit", "auto_commit", _BOOL),
        _p("consumeResult", "consume_result", _Enum(CMResult)),
        _p("order", "order", _BOOL),
        _p("remark", "remark", _STR),
        _p("spentTimeMills", "spent_time_mills", _INT),
    )


@dataclass(frozen=True, slots=True)
class GetConsumerStatusBody(JsonBody):
    """Offsets per queue, a client's ``GET_CONSUMER_STATUS_FROM_CLIENT`` answer (per client via a broker)."""

    message_queue_table: Mapping[MessageQueue, int] = field(default_factory=dict)
    consumer_table: Mapping[str, Mapping[MessageQueue, int]] = field(default_factory=dict)

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("consumerTable", "consumer_table", _Map(_STR, _Map(_QUEUE, _INT))),
        _p("messageQueueTable", "message_queue_table", _Map(_QUEUE, _INT)),
    )


@dataclass(frozen=True, slots=True)
class DelayOffsetSerializeWrapper(JsonBody):
    """Progress of the delay-level queues (``delayOffset.json``, ``GET_ALL_DELAY_OFFSET``): level → offset."""

    offset_table: Mapping[int, int] = field(default_factory=dict)

    _PROPS: ClassVar[tuple[_F, ...]] = _props(_p("offsetTable", "offset_table", _Map(_LONG_KEY, _INT)))


@dataclass(frozen=True, slots=True)
class QueryCorrectionOffsetBody(JsonBody):
    """``QUERY_CORRECTION_OFFSET`` answer: the lowest committed offset per queue id over groups."""

    correction_offsets: Mapping[int, int] = field(default_factory=dict)

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("correctionOffsets", "correction_offsets", _Map(_LONG_KEY, _INT))
    )


@dataclass(frozen=True, slots=True)
class ConsumeStatsList(JsonBody):
    """``GET_BROKER_CONSUME_STATS``: every group's :class:`ConsumeStats` on a broker, by topic."""

    consume_stats_list: tuple[Mapping[str, tuple[ConsumeStats, ...]], ...] = ()
    broker_addr: str | None = None
    total_diff: int = 0

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("brokerAddr", "broker_addr", _STR),
        _p("consumeStatsList", "consume_stats_list", _list(_Map(_STR, _beans(ConsumeStats)))),
        _p("totalDiff", "total_diff", _INT),
    )


@dataclass(frozen=True, slots=True)
class ConsumeQueueData(JsonBody):
    """One consume-queue entry as ``QUERY_CONSUME_QUEUE`` shows it, with the filter's verdict."""

    physic_offset: int = 0
    physic_size: int = 0
    tags_code: int = 0
    extend_data_json: str | None = None
    bit_map: str | None = None
    eval: bool = False
    msg: str | None = None

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("bitMap", "bit_map", _STR),
        _p("eval", "eval", _BOOL),
        _p("extendDataJson", "extend_data_json", _STR),
        _p("msg", "msg", _STR),
        _p("physicOffset", "physic_offset", _INT),
        _p("physicSize", "physic_size", _INT),
        _p("tagsCode", "tags_code", _INT),
    )


@dataclass(frozen=True, slots=True)
class QueryConsumeQueueResponseBody(JsonBody):
    """``QUERY_CONSUME_QUEUE`` answer: entries of a consume queue and the group's subscription."""

    subscription_data: SubscriptionData | None = None
    filter_data: str | None = None
    queue_data: tuple[ConsumeQueueData, ...] = ()
    max_queue_index: int = 0
    min_queue_index: int = 0

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("filterData", "filter_data", _STR),
        _p("maxQueueIndex", "max_queue_index", _INT),
        _p("minQueueIndex", "min_queue_index", _INT),
        _p("queueData", "queue_data", _beans(ConsumeQueueData)),
        _p("subscriptionData", "subscription_data", _Bean(SubscriptionData)),
    )


# --------------------------------------------------------------------------------------------
# Java hash order
# --------------------------------------------------------------------------------------------


def _java_hash(key: object) -> int:
    if isinstance(key, str):
        return java_string_hash(key)
    if isinstance(key, bool):
        return 1231 if key else 1237
    if isinstance(key, int):
        if -(1 << 31) <= key < (1 << 31):
            return key  # Integer.hashCode
        value = key & 0xFFFFFFFFFFFFFFFF
        h = (value ^ (value >> 32)) & 0xFFFFFFFF  # Long.hashCode
        return h - (1 << 32) if h & 0x80000000 else h
    if isinstance(key, MessageQueue):
        # MessageQueue.hashCode: 31-based over brokerName, queueId, topic
        h = 31 + java_string_hash(key.broker_name)
        h = (31 * h + key.queue_id) & 0xFFFFFFFF
        h = (31 * h + java_string_hash(key.topic)) & 0xFFFFFFFF
        return h - (1 << 32) if h & 0x80000000 else h
    raise TypeError(f"no Java hashCode known for {type(key).__name__}")


def java_hash_order(keys: Iterable[T], *, long_keys: bool = False, capacity: int = 16) -> list[T]:
    """``keys`` (distinct, in insertion order) in the order a Java ``HashMap``/``HashSet`` iterates them.

    The table starts at ``capacity`` buckets and doubles whenever the size exceeds 3/4 of it; a key
    goes to bucket ``(h ^ (h >>> 16)) & (buckets - 1)`` with ``h`` its Java ``hashCode()``; a
    bucket keeps insertion order. Strings, ints (``Integer``, or ``Long`` with ``long_keys=True``)
    and :class:`~rocketq.models.MessageQueue` are supported. Tree bins (eight or more keys in one
    bucket) are not modelled. A ``ConcurrentHashMap`` spreads hashes the same way, so pass its
    table size (``new ConcurrentHashMap<>(1024)``, the broker's topic table, has 2048 buckets); its
    resizing may reorder keys that share a bucket, which this does not model either.

    >>> java_hash_order(["broker-a", "broker-b"])
    ['broker-b', 'broker-a']
    """
    items = list(keys)
    buckets = capacity
    while len(items) > buckets * 3 // 4:
        buckets *= 2
    mask = buckets - 1

    def bucket(key: T) -> int:
        h = _java_hash(key)
        if long_keys and isinstance(key, int) and not isinstance(key, bool):
            value = key & 0xFFFFFFFFFFFFFFFF
            h = (value ^ (value >> 32)) & 0xFFFFFFFF
        h &= 0xFFFFFFFF
        return (h ^ (h >> 16)) & mask

    indexed = sorted(range(len(items)), key=lambda i: (bucket(items[i]), i))
    return [items[i] for i in indexed]
