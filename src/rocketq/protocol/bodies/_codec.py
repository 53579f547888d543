"""The machinery under the typed bodies: field codecs and :class:`JsonBody`.

A body class lists its bean properties in ``_PROPS`` (JSON name, attribute, codec); ``JsonBody``
turns that into ``to_json``/``encode`` and ``decode`` with fastjson's leniency and errors that
name the field (``TopicRouteData.queueDatas[0].perm: expected an integer, got a string 'x'``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Self, TypeVar

from rocketq.errors import RemoteProtocolError
from rocketq.models import MessageQueue
from rocketq.protocol._text import excerpt, parse_java_integer
from rocketq.protocol.fastjson import Bean, FrozenObject, dumps, dumps_bytes, loads

__all__ = ["JsonBody"]


T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")
E = TypeVar("E", bound=enum.Enum)
B = TypeVar("B", bound="JsonBody")

_LONG_MIN = -(2**63)
_LONG_MAX = 2**63 - 1


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
    shown = excerpt(raw, 60)
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
            value = parse_java_integer(raw.strip(), _LONG_MIN, _LONG_MAX)
            if value is not None:
                return value
        raise _bad(path, "an integer", raw)


class _Float(_Codec[float]):
    __slots__ = ()
    exact = float

    def load(self, raw: Any, path: _Path) -> float:
        try:
            if isinstance(raw, (int, float)) and not isinstance(raw, bool):
                return float(raw)
            if isinstance(raw, str):
                return float(raw)
        except (ValueError, OverflowError):  # not a number, or an integer beyond a double
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
        if isinstance(raw, str):
            value = parse_java_integer(raw, _LONG_MIN, _LONG_MAX)
            if value is not None:
                return value
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
    def decode(
        cls,
        data: bytes | bytearray | memoryview | str,
        *,
        max_fallback: int | None = None,
        chunked: bool = False,
    ) -> Self:
        """Parse a body written by fastjson (or by anything writing standard JSON); ``max_fallback``
        and ``chunked`` as for :func:`~rocketq.protocol.fastjson.loads`."""
        if not data:
            raise RemoteProtocolError(f"{cls.__name__}: empty body")
        try:
            raw = loads(data, max_fallback=max_fallback, chunked=chunked)
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


def _java_key(text: str) -> bytes:
    """A sort key ordering strings as Java's ``String.compareTo`` does (by UTF-16 code units)."""
    return text.encode("utf-16-be", "surrogatepass")
