"""Typed request and response headers: frozen dataclasses that convert to and from ext fields.

RocketMQ carries every request's parameters as a ``CommandCustomHeader`` whose fields travel as
the command's ext fields, each value a string (``"queueId": "0"``, ``"order": "false"``). Each
class here mirrors one Java header class of RocketMQ 4.9.4 and keeps its name:

* a Python field ``consumer_group`` travels as ``consumerGroup`` (snake case to camel case) unless
  it names its wire key itself (``SendMessageRequestHeaderV2`` sends ``a`` ... ``m``;
  ``UnregisterClientRequestHeader`` sends ``clientID``);
* a field without a default is required, like a Java field marked ``@CFNotNull``: decoding a
  command without it raises :class:`~rocketq.errors.RemoteProtocolError` naming the header and the
  key. Fields with a default may be absent and take it; ``None`` fields are not written;
* ``int`` fields are Java ``Integer`` (32-bit), :data:`Long` fields Java ``Long`` (64-bit); both are
  written in decimal and parsed as ``Integer.parseInt``/``Long.parseLong`` accept them (an optional
  sign and ASCII digits), and out-of-range or non-numeric text raises. ``bool`` fields are written
  ``"true"``/``"false"`` and read as Java's ``Boolean.parseBoolean`` does (``"true"`` in any case is
  true, anything else false).

:meth:`CommandHeader.to_ext_fields` writes the keys in the order a Java peer's ``HashMap`` iterates
them (:func:`java_hashmap_order`), so a JSON header rocketq builds is byte-for-byte the one a Java
client or broker builds; for ROCKETMQ-serialized commands the four "fast codes" headers (send v2,
send response, pull request and response) write their fields in declaration order, as Java does.

Everything about a class is worked out once, when it is defined: its field table, its ``HashMap``
orders, and a straight-line reader and writer compiled from them (as ``dataclasses`` compiles
``__init__``), so converting a header does no reflection and no per-field dispatch. The reader
is the class's ``from_ext_fields`` itself and the broker's parser of every send and pull: it
takes the text of small numbers from a table and builds the frozen header without its
``__init__`` (the broker keeps no parser of its own).

>>> header = QueryConsumerOffsetRequestHeader(consumer_group="g", topic="T", queue_id=1)
>>> header.to_ext_fields()
{'queueId': '1', 'topic': 'T', 'consumerGroup': 'g'}
>>> QueryConsumerOffsetRequestHeader.from_ext_fields({"topic": "T", "queueId": "1", "consumerGroup": "g"})
QueryConsumerOffsetRequestHeader(consumer_group='g', topic='T', queue_id=1)
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Final, NoReturn, Self, TypeVar

from rocketq.errors import ConfigError, RemoteProtocolError
from rocketq.protocol._text import excerpt, parse_java_integer
from rocketq.protocol.codes import RequestCode, SerializeType
from rocketq.protocol.javahash import hashmap_capacity, java_hash_order, string_bucket

__all__ = [
    "REQUEST_HEADERS",
    "RESPONSE_HEADERS",
    "AddWritePermOfBrokerRequestHeader",
    "AddWritePermOfBrokerResponseHeader",
    "CheckTransactionStateRequestHeader",
    "CloneGroupOffsetRequestHeader",
    "CommandHeader",
    "ConsumeMessageDirectlyResultRequestHeader",
    "ConsumerSendMsgBackRequestHeader",
    "CreateTopicRequestHeader",
    "DeleteKVConfigRequestHeader",
    "DeleteSubscriptionGroupRequestHeader",
    "DeleteTopicFromNamesrvRequestHeader",
    "DeleteTopicRequestHeader",
    "EndTransactionRequestHeader",
    "GetConsumeStatsInBrokerHeader",
    "GetConsumeStatsRequestHeader",
    "GetConsumerConnectionListRequestHeader",
    "GetConsumerListByGroupRequestHeader",
    "GetConsumerRunningInfoRequestHeader",
    "GetConsumerStatusRequestHeader",
    "GetEarliestMsgStoretimeRequestHeader",
    "GetEarliestMsgStoretimeResponseHeader",
    "GetKVConfigRequestHeader",
    "GetKVConfigResponseHeader",
    "GetKVListByNamespaceRequestHeader",
    "GetMaxOffsetRequestHeader",
    "GetMaxOffsetResponseHeader",
    "GetMinOffsetRequestHeader",
    "GetMinOffsetResponseHeader",
    "GetProducerConnectionListRequestHeader",
    "GetRouteInfoRequestHeader",
    "GetTopicStatsInfoRequestHeader",
    "GetTopicsByClusterRequestHeader",
    "Long",
    "NotifyConsumerIdsChangedRequestHeader",
    "PullMessageRequestHeader",
    "PullMessageResponseHeader",
    "PutKVConfigRequestHeader",
    "QueryConsumeQueueRequestHeader",
    "QueryConsumeTimeSpanRequestHeader",
    "QueryConsumerOffsetRequestHeader",
    "QueryConsumerOffsetResponseHeader",
    "QueryCorrectionOffsetHeader",
    "QueryDataVersionRequestHeader",
    "QueryDataVersionResponseHeader",
    "QueryMessageRequestHeader",
    "QueryMessageResponseHeader",
    "QueryTopicConsumeByWhoRequestHeader",
    "RegisterBrokerRequestHeader",
    "RegisterBrokerResponseHeader",
    "ReplyMessageRequestHeader",
    "ResetOffsetRequestHeader",
    "ResumeCheckHalfMessageRequestHeader",
    "SearchOffsetRequestHeader",
    "SearchOffsetResponseHeader",
    "SendMessageRequestHeader",
    "SendMessageRequestHeaderV2",
    "SendMessageResponseHeader",
    "UnRegisterBrokerRequestHeader",
    "UnregisterClientRequestHeader",
    "UpdateConsumerOffsetRequestHeader",
    "ViewBrokerStatsDataRequestHeader",
    "ViewMessageRequestHeader",
    "WipeWritePermOfBrokerRequestHeader",
    "WipeWritePermOfBrokerResponseHeader",
    "header_class",
    "java_hashmap_order",
    "java_ordered",
    "wire_name",
]

_LONG_MARK: Final = "java.lang.Long"
Long = Annotated[int, _LONG_MARK]
"""An ``int`` field that Java declares ``Long`` (64-bit); a plain ``int`` field is a Java ``Integer``."""

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)

_H = TypeVar("_H", bound="CommandHeader")


# ---------------------------------------------------------------------------------------------
# Java HashMap iteration order


# (the rule lives in rocketq.protocol.javahash; header classes precompute their orders with it)


def java_ordered(ext_fields: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``ext_fields`` in Java ``HashMap`` order (its current order taken as insertion order).

    For a response that carries fields beyond its typed header (the broker adds ``MSG_REGION`` and
    ``TRACE_ON`` to send responses), build the whole dict and order it once with this.
    """
    return {key: ext_fields[key] for key in java_hashmap_order(ext_fields)}


def java_hashmap_order(keys: Iterable[str]) -> list[str]:
    """``keys`` (given in insertion order) in the order a Java ``HashMap`` built by inserting them
    into ``new HashMap<>()`` iterates them: by bucket of the spread ``String.hashCode``, then by
    insertion order within a bucket. This is the order Java peers write ext fields in.

    >>> java_hashmap_order(["consumerGroup", "topic", "queueId"])
    ['queueId', 'topic', 'consumerGroup']
    """
    return java_hash_order(keys)


# ---------------------------------------------------------------------------------------------
# Field conversion


def _read_int(raw: str) -> int | None:
    return parse_java_integer(raw, *_INT32)


def _read_long(raw: str) -> int | None:
    return parse_java_integer(raw, *_INT64)


def _read_bool(raw: str) -> bool:
    return raw.lower() == "true"


def _read_str(raw: str) -> str:
    return raw


_READERS: Final[dict[str, Callable[[str], Any]]] = {
    "int": _read_int,
    "long": _read_long,
    "bool": _read_bool,
    "str": _read_str,
}
_KIND_NAMES: Final = {"int": "a Java Integer", "long": "a Java Long", "bool": "a boolean", "str": "a string"}


@dataclass(frozen=True, slots=True)
class _Field:
    attr: str
    wire: str
    kind: str  # "int" | "long" | "bool" | "str"
    required: bool
    read: Callable[[str], Any]


def wire_name(name: str) -> dict[str, str]:
    """Field metadata naming a field's ext-field key when it is not the camel case of its name."""
    return {"wire": name}


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _kind_of(hint: Any) -> tuple[str, bool]:
    """``(kind, optional)`` for a field's resolved type hint."""
    args = typing.get_args(hint)
    optional = False
    if type(None) in args:
        optional = True
        (hint,) = [arg for arg in args if arg is not type(None)]
    if typing.get_origin(hint) is Annotated:
        base, *marks = typing.get_args(hint)
        if base is int and _LONG_MARK in marks:
            return "long", optional
        hint = base
    if hint is bool:
        return "bool", optional
    if hint is int:
        return "int", optional
    if hint is str:
        return "str", optional
    raise TypeError(f"unsupported header field type {hint!r}")


def _missing(cls: type, wire: str) -> NoReturn:
    raise RemoteProtocolError(f"{cls.__name__}: required field {wire!r} is missing")


def _read_slow(cls: type, wire: str, kind: str, raw: str) -> Any:
    value = _READERS[kind](raw)
    if value is None:
        raise RemoteProtocolError(
            f"{cls.__name__}: field {wire!r} is not {_KIND_NAMES[kind]}: {excerpt(raw)}"
        )
    return value


def _bad_value(header: object, attr: str, kind: str, value: object) -> NoReturn:
    raise ConfigError(f"{type(header).__name__}.{attr} must be {_KIND_NAMES[kind]}, got {value!r}")


# The longest decimal texts that always fit: 9 digits for a Java Integer, 18 for a Long.
# The decimal texts of small numbers (queue ids, flags, counts): one dict look-up instead of
# checking and converting the text, on the fields a send or a pull carries on every request.
_SMALL_INTS: Final = {str(i): i for i in range(1024)}


def _compile(name: str, source: str, namespace: dict[str, Any]) -> Callable[..., Any]:
    """Compile one generated function (the way ``dataclasses`` builds ``__init__``)."""
    exec(compile(source, f"<rocketq header {name}>", "exec"), namespace)
    function: Callable[..., Any] = namespace[name]
    return function


def _builder_of(cls: type) -> type:
    """A subclass of the frozen header ``cls`` that adds nothing but plain attribute assignment.

    A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__`` (its own
    ``__setattr__`` refuses), which costs about as much as parsing the field. The reader builds
    the header as this class instead, with plain stores into the same slots, then makes it a
    ``cls`` by assigning ``__class__`` (the layouts are the same): a true, frozen instance of
    ``cls``, equal to one built by ``cls(...)``, in a sixth of the time for a send's 13 fields.
    """
    namespace = {"__slots__": (), "__setattr__": object.__setattr__, "__delattr__": object.__delattr__}
    return type(f"_{cls.__name__}Builder", (cls,), namespace)


def _compile_reader(cls: type, fields: tuple[_Field, ...], defaults: dict[str, Any]) -> Callable[..., Any]:
    """A function ``read(ext_fields) -> header`` with one straight-line block per field.

    It is the fast path of every request the broker serves (a send's 13 fields, a pull's 11), so
    it does no more than the fields need: required keys are read by subscript (a missing one
    is found in the ``KeyError`` handler, in declaration order), small numbers come from a table,
    and the header is built without the frozen ``__init__`` (:func:`_builder_of`). What it
    accepts and the errors it raises are those of :meth:`CommandHeader.from_ext_fields`.
    """
    namespace: dict[str, Any] = {
        "cls": cls,
        "builder": _builder_of(cls),
        "new": object.__new__,
        "small": _SMALL_INTS,
        "required": tuple(f.wire for f in fields if f.required),
        "_missing": _missing,
        "_read_slow": _read_slow,
    }
    lines = ["def from_ext_fields(ext):", "    get = ext.get", "    try:"]
    for i, f in enumerate(fields):
        var, key, ind = f"a{i}", repr(f.wire), "        "
        if f.required:
            value = f"ext[{key}]"
        else:
            namespace[f"d{i}"] = defaults[f.attr]
            value = f"get({key})"
        if f.kind == "str":
            lines.append(f"{ind}{var} = {value}" if f.required else f"{ind}{var} = get({key}, d{i})")
            continue
        lines.append(f"{ind}r = {value}")
        if not f.required:
            lines.append(f"{ind}if r is None: {var} = d{i}")
            lines.append(f"{ind}else:")
            ind += "    "
        if f.kind == "bool":
            lines.append(f"{ind}{var} = r.lower() == 'true'")  # Java's Boolean.parseBoolean
        elif f.kind == "int":  # mostly small: queue ids, flags, counts
            lines.append(f"{ind}{var} = small.get(r)")
            lines.append(f"{ind}if {var} is None:")
            lines.append(f"{ind}    if r.isascii() and r.isdigit() and len(r) <= 9: {var} = int(r)")
            lines.append(f"{ind}    else: {var} = _read_slow(cls, {key}, 'int', r)")
        else:  # a Long: mostly large (offsets, time stamps)
            lines.append(f"{ind}if r.isdigit() and r.isascii() and len(r) <= 18: {var} = int(r)")
            lines.append(f"{ind}else: {var} = _read_slow(cls, {key}, 'long', r)")
    if not fields:
        lines.append("        pass")
    lines.append("    except KeyError:")
    lines.append("        for wire in required:")
    lines.append("            if wire not in ext: _missing(cls, wire)")
    lines.append("        raise")
    lines.append("    h = new(builder)")
    lines.extend(f"    h.{f.attr} = a{i}" for i, f in enumerate(fields))
    lines.append("    h.__class__ = cls")  # the builder's plain __setattr__ makes this a cheap store
    lines.append("    return h")
    return _compile("from_ext_fields", "\n".join(lines), namespace)


def _compile_writer(fields: tuple[_Field, ...]) -> Callable[..., dict[str, str]]:
    """A function ``write(header) -> ext_fields`` writing the fields in the given order."""
    lines = ["def write(self):", "    out = {}"]
    namespace: dict[str, Any] = {"_bad_value": _bad_value}
    for f in fields:
        lines.append(f"    v = self.{f.attr}")
        lines.append("    if v is not None:")
        if f.kind == "str":
            lines.append(f"        if type(v) is not str: _bad_value(self, {f.attr!r}, 'str', v)")
            lines.append(f"        out[{f.wire!r}] = v")
        elif f.kind == "bool":
            lines.append(f"        if v is True: out[{f.wire!r}] = 'true'")
            lines.append(f"        elif v is False: out[{f.wire!r}] = 'false'")
            lines.append(f"        else: _bad_value(self, {f.attr!r}, 'bool', v)")
        else:
            low, high = _INT32 if f.kind == "int" else _INT64
            lines.append(f"        if type(v) is not int or not {low} <= v <= {high}:")
            lines.append(f"            _bad_value(self, {f.attr!r}, {f.kind!r}, v)")
            lines.append(f"        out[{f.wire!r}] = str(v)")
    lines.append("    return out")
    return _compile("write", "\n".join(lines), namespace)


def _compile_sized_writer(
    fields: tuple[_Field, ...], orders: dict[int, tuple[_Field, ...]]
) -> Callable[..., dict[str, str]]:
    """A function ``write(header) -> ext_fields`` for a header whose ``HashMap`` order depends on
    how many of its fields are set: it counts them, then writes with that table size's writer
    (looked up by the count, so no table size is computed per call)."""
    counted = " + ".join(f"(self.{f.attr} is not None)" for f in fields)
    source = "\n".join(["def write(self):", f"    return writers[{counted}](self)"])
    by_capacity = {capacity: _compile_writer(order) for capacity, order in orders.items()}
    writers = tuple(by_capacity[hashmap_capacity(count)] for count in range(len(fields) + 1))
    return _compile("write", source, {"writers": writers})


class CommandHeader:
    """Base of the typed headers; subclasses are frozen keyword-only dataclasses.

    A subclass lists its fields in the Java class's declaration order (which decides the order of
    keys within a ``HashMap`` bucket and the "fast codes" order) and sets ``FAST_CODES`` when the
    Java class implements ``FastCodesHeader``.
    """

    __slots__ = ()

    FAST_CODES: ClassVar[bool] = False
    _FIELDS: ClassVar[tuple[_Field, ...]] = ()
    _ORDERS: ClassVar[dict[int, tuple[_Field, ...]]] = {}
    _WRITE_HASHED: ClassVar[Callable[..., dict[str, str]] | None] = None
    _WRITE_DECLARED: ClassVar[Callable[..., dict[str, str]] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._FIELDS = ()
        cls._ORDERS = {}

    @classmethod
    def _prepare(cls) -> None:
        """Build the conversion table (run once, by :func:`header_class`, after ``@dataclass``)."""
        hints = typing.get_type_hints(cls, include_extras=True)
        fields: list[_Field] = []
        defaults: dict[str, Any] = {}
        for spec in dataclasses.fields(cls):  # type: ignore[arg-type]
            kind, _optional = _kind_of(hints[spec.name])
            required = spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING
            wire = spec.metadata.get("wire", _camel(spec.name))
            fields.append(_Field(spec.name, wire, kind, required, _READERS[kind]))
            defaults[spec.name] = spec.default
        cls._FIELDS = tuple(fields)
        # HashMap order for every table size a header of this class can fill
        for size in range(len(fields) + 1):
            capacity = hashmap_capacity(size)
            if capacity not in cls._ORDERS:
                buckets = {f.wire: string_bucket(f.wire, capacity) for f in fields}
                cls._ORDERS[capacity] = tuple(sorted(fields, key=lambda f: buckets[f.wire]))
        # the compiled reader is the class's from_ext_fields itself: one call less per request
        reader = _compile_reader(cls, cls._FIELDS, defaults)
        reader.__doc__ = CommandHeader.from_ext_fields.__doc__
        reader.__qualname__ = f"{cls.__qualname__}.from_ext_fields"
        setattr(cls, "from_ext_fields", staticmethod(reader))  # noqa: B010 - set on the class, not typed
        cls._WRITE_DECLARED = _compile_writer(cls._FIELDS)
        if len(cls._ORDERS) == 1:  # one table size whatever is set: one fixed order
            cls._WRITE_HASHED = _compile_writer(cls._ORDERS[16])
        else:  # the order depends on how many fields are set: count them, then write in that order
            cls._WRITE_HASHED = _compile_sized_writer(cls._FIELDS, cls._ORDERS)

    @classmethod
    def wire_names(cls) -> tuple[str, ...]:
        """The ext-field keys of this header, in declaration order."""
        return tuple(f.wire for f in cls._FIELDS)

    @classmethod
    def wire_name_of(cls, attr: str) -> str:
        """The ext-field key of the field named ``attr`` (``KeyError`` when there is none)."""
        for f in cls._FIELDS:
            if f.attr == attr:
                return f.wire
        raise KeyError(f"{cls.__name__} has no field {attr!r}")

    @classmethod
    def from_ext_fields(cls, ext_fields: Mapping[str, str]) -> Self:
        """Parse a header from a command's ext fields; keys it does not know are ignored.

        Raises :class:`~rocketq.errors.RemoteProtocolError` when a required key is missing or a
        value does not parse as its field's type.

        Each header class replaces this with its compiled reader (see :func:`header_class`),
        the parser of every request the broker serves: it has no per-field dispatch, takes the
        text of small numbers from a table and builds the frozen header without running its
        ``__init__``.
        """
        raise TypeError(f"{cls.__name__} was not prepared by @header_class")

    def to_ext_fields(
        self,
        serialize_type: SerializeType = SerializeType.JSON,
        extra: Mapping[str, str] | None = None,
    ) -> dict[str, str]:
        """The ext fields of this header, in the order a Java peer writes them (see the module doc).

        ``extra`` adds fields that are not part of the header (a Java peer puts them into the same
        map before the header's own fields; for a "fast codes" header sent as ROCKETMQ they follow
        the header's fields). Raises :class:`~rocketq.errors.ConfigError` for a value Java could
        not read back (an ``int`` field outside its Java type's range, or a value of the wrong type).
        """
        fast = self.FAST_CODES and serialize_type == SerializeType.ROCKETMQ
        if not extra:
            owner = type(self)  # the writers are plain functions stored on the class
            writer = owner._WRITE_DECLARED if fast else owner._WRITE_HASHED
            if writer is not None:
                return writer(self)
        fields = self._FIELDS
        present = [f for f in fields if getattr(self, f.attr) is not None]
        if not fast and not extra:
            order = self._ORDERS[hashmap_capacity(len(present))]
            if len(present) != len(fields):
                present_names = {f.attr for f in present}
                present = [f for f in order if f.attr in present_names]
            else:
                present = list(order)
        out = self._format(present)
        if not extra:
            return out
        if fast:
            out.update(java_ordered(extra))
            return out
        merged = dict(extra)
        merged.update(out)
        return java_ordered(merged)

    def _format(self, present: list[_Field]) -> dict[str, str]:
        out: dict[str, str] = {}
        for f in present:
            value = getattr(self, f.attr)
            kind = f.kind
            if kind == "str":
                if type(value) is not str:
                    raise ConfigError(f"{type(self).__name__}.{f.attr} must be a str, got {value!r}")
                out[f.wire] = value
            elif kind == "bool":
                if type(value) is not bool:
                    raise ConfigError(f"{type(self).__name__}.{f.attr} must be a bool, got {value!r}")
                out[f.wire] = "true" if value else "false"
            else:
                low, high = _INT32 if kind == "int" else _INT64
                if type(value) is not int or not low <= value <= high:
                    raise ConfigError(
                        f"{type(self).__name__}.{f.attr} must be {_KIND_NAMES[kind]}, got {value!r}"
                    )
                out[f.wire] = str(value)
        return out


def header_class(cls: type[_H]) -> type[_H]:
    """Register a :class:`CommandHeader` subclass: build its tables and compiled converters.

    Put it above ``@dataclass(frozen=True, slots=True, kw_only=True)``::

        @header_class
        @dataclass(frozen=True, slots=True, kw_only=True)
        class MyRequestHeader(CommandHeader):
            topic: str
            queue_id: int
            client_id: str = field(default="", metadata=wire_name("clientID"))
    """
    cls._prepare()
    return cls


# ---------------------------------------------------------------------------------------------
# Sending


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class SendMessageRequestHeader(CommandHeader):
    """SEND_MESSAGE (10) and the broker's view of every send; ``properties`` is the
    ``\\u0001``/``\\u0002``-separated property string."""

    producer_group: str
    topic: str
    default_topic: str
    default_topic_queue_nums: int
    queue_id: int
    sys_flag: int
    born_timestamp: Long
    flag: int
    properties: str | None = None
    reconsume_times: int | None = None
    unit_mode: bool = False
    batch: bool = False
    max_reconsume_times: int | None = None

    def to_v2(self) -> SendMessageRequestHeaderV2:
        """The same header with single-letter keys, as producers send it (SEND_MESSAGE_V2)."""
        return SendMessageRequestHeaderV2(**{f.attr: getattr(self, f.attr) for f in self._FIELDS})


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class SendMessageRequestHeaderV2(CommandHeader):
    """SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320), SEND_REPLY_MESSAGE_V2 (325).

    :class:`SendMessageRequestHeader` with keys ``a`` to ``m`` to save bytes on every send. The
    Python fields keep the descriptive names; :meth:`to_v1` and
    :meth:`SendMessageRequestHeader.to_v2` convert.
    """

    FAST_CODES = True

    producer_group: str = field(metadata=wire_name("a"))
    topic: str = field(metadata=wire_name("b"))
    default_topic: str = field(metadata=wire_name("c"))
    default_topic_queue_nums: int = field(metadata=wire_name("d"))
    queue_id: int = field(metadata=wire_name("e"))
    sys_flag: int = field(metadata=wire_name("f"))
    born_timestamp: Long = field(metadata=wire_name("g"))
    flag: int = field(metadata=wire_name("h"))
    properties: str | None = field(default=None, metadata=wire_name("i"))
    reconsume_times: int | None = field(default=None, metadata=wire_name("j"))
    unit_mode: bool = field(default=False, metadata=wire_name("k"))
    max_reconsume_times: int | None = field(default=None, metadata=wire_name("l"))
    batch: bool = field(default=False, metadata=wire_name("m"))

    def to_v1(self) -> SendMessageRequestHeader:
        """The same header with RocketMQ's long key names (what a broker works with)."""
        return SendMessageRequestHeader(**{f.attr: getattr(self, f.attr) for f in self._FIELDS})


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class SendMessageResponseHeader(CommandHeader):
    """Response to a send: the message id, the queue and the offset it was stored at."""

    FAST_CODES = True

    msg_id: str
    queue_id: int
    queue_offset: Long
    transaction_id: str | None = None


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class ReplyMessageRequestHeader(CommandHeader):
    """PUSH_REPLY_MESSAGE_TO_CLIENT (326): the broker hands a reply message to the requester."""

    producer_group: str
    topic: str
    default_topic: str
    default_topic_queue_nums: int
    queue_id: int
    sys_flag: int
    born_timestamp: Long
    flag: int
    properties: str | None = None
    reconsume_times: int | None = None
    unit_mode: bool = False
    born_host: str
    store_host: str
    store_timestamp: Long


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerSendMsgBackRequestHeader(CommandHeader):
    """CONSUMER_SEND_MSG_BACK (36): a consumer returns a message for redelivery (retry / DLQ)."""

    offset: Long
    group: str
    delay_level: int
    origin_msg_id: str | None = None
    origin_topic: str | None = None
    unit_mode: bool = False
    max_reconsume_times: int | None = None


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class EndTransactionRequestHeader(CommandHeader):
    """END_TRANSACTION (37): commit (8) or roll back (12) a half message; 0 means "unknown"."""

    producer_group: str
    tran_state_table_offset: Long
    commit_log_offset: Long
    commit_or_rollback: int
    from_transaction_check: bool = False
    msg_id: str
    transaction_id: str | None = None


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class CheckTransactionStateRequestHeader(CommandHeader):
    """CHECK_TRANSACTION_STATE (39): the broker asks a producer about a pending half message."""

    tran_state_table_offset: Long
    commit_log_offset: Long
    msg_id: str | None = None
    transaction_id: str | None = None
    offset_msg_id: str | None = None


# ---------------------------------------------------------------------------------------------
# Pulling and offsets


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class PullMessageRequestHeader(CommandHeader):
    """PULL_MESSAGE (11). ``sys_flag`` bits: 1 commit offset, 2 suspend (long poll),
    4 subscription present, 8 class filter, 16 lite pull."""

    FAST_CODES = True

    consumer_group: str
    topic: str
    queue_id: int
    queue_offset: Long
    max_msg_nums: int
    sys_flag: int
    commit_offset: Long
    suspend_timeout_millis: Long
    subscription: str | None = None
    sub_version: Long
    expression_type: str | None = None


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class PullMessageResponseHeader(CommandHeader):
    """Response to PULL_MESSAGE: where to pull next and the queue's current bounds."""

    FAST_CODES = True

    suggest_which_broker_id: Long
    next_begin_offset: Long
    min_offset: Long
    max_offset: Long


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class QueryConsumerOffsetRequestHeader(CommandHeader):
    """QUERY_CONSUMER_OFFSET (14)."""

    consumer_group: str
    topic: str
    queue_id: int


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class QueryConsumerOffsetResponseHeader(CommandHeader):
    """Response to QUERY_CONSUMER_OFFSET."""

    offset: Long


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateConsumerOffsetRequestHeader(CommandHeader):
    """UPDATE_CONSUMER_OFFSET (15); clients send it oneway too."""

    consumer_group: str
    topic: str
    queue_id: int
    commit_offset: Long


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class GetMaxOffsetRequestHeader(CommandHeader):
    """GET_MAX_OFFSET (30)."""

    topic: str
    queue_id: int


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class GetMaxOffsetResponseHeader(CommandHeader):
    """Response to GET_MAX_OFFSET."""

    offset: Long


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class GetMinOffsetRequestHeader(CommandHeader):
    """GET_MIN_OFFSET (31)."""

    topic: str
    queue_id: int


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class GetMinOffsetResponseHeader(CommandHeader):
    """Response to GET_MIN_OFFSET."""

    offset: Long


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class SearchOffsetRequestHeader(CommandHeader):
    """SEARCH_OFFSET_BY_TIMESTAMP (29); ``timestamp`` in epoch milliseconds."""

    topic: str
    queue_id: int
    timestamp: Long


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class SearchOffsetResponseHeader(CommandHeader):
    """Response to SEARCH_OFFSET_BY_TIMESTAMP."""

    offset: Long


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class GetEarliestMsgStoretimeRequestHeader(CommandHeader):
    """GET_EARLIEST_MSG_STORETIME (32)."""

    topic: str
    queue_id: int


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class GetEarliestMsgStoretimeResponseHeader(CommandHeader):
    """Response to GET_EARLIEST_MSG_STORETIME."""

    timestamp: Long


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class ViewMessageRequestHeader(CommandHeader):
    """VIEW_MESSAGE_BY_ID (33): ``offset`` is the commit-log offset from an offset message id."""

    offset: Long


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class QueryMessageRequestHeader(CommandHeader):
    """QUERY_MESSAGE (12): by key (or by unique key when the ``_UNIQUE_KEY_QUERY`` ext field is set)."""

    topic: str
    key: str
    max_num: int
    begin_timestamp: Long
    end_timestamp: Long


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class QueryMessageResponseHeader(CommandHeader):
    """Response to QUERY_MESSAGE."""

    index_last_update_timestamp: Long
    index_last_update_phyoffset: Long


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class QueryConsumeQueueRequestHeader(CommandHeader):
    """QUERY_CONSUME_QUEUE (321): read raw consume-queue entries (admin)."""

    topic: str | None = None
    queue_id: int = 0
    index: Long = 0
    count: int = 0
    consumer_group: str | None = None


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class QueryConsumeTimeSpanRequestHeader(CommandHeader):
    """QUERY_CONSUME_TIME_SPAN (303)."""

    topic: str
    group: str


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class QueryCorrectionOffsetHeader(CommandHeader):
    """QUERY_CORRECTION_OFFSET (308)."""

    filter_groups: str | None = None
    compare_group: str
    topic: str


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class CloneGroupOffsetRequestHeader(CommandHeader):
    """CLONE_GROUP_OFFSET (314)."""

    src_group: str
    dest_group: str
    topic: str | None = None
    offline: bool = False


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class ResetOffsetRequestHeader(CommandHeader):
    """INVOKE_BROKER_TO_RESET_OFFSET (222) and the broker's RESET_CONSUMER_CLIENT_OFFSET (220)."""

    topic: str
    group: str
    timestamp: Long
    is_force: bool


# ---------------------------------------------------------------------------------------------
# Clients and consumer groups


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class UnregisterClientRequestHeader(CommandHeader):
    """UNREGISTER_CLIENT (35): a client leaves a producer group, a consumer group, or both."""

    client_id: str = field(metadata=wire_name("clientID"))
    producer_group: str | None = None
    consumer_group: str | None = None


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class GetConsumerListByGroupRequestHeader(CommandHeader):
    """GET_CONSUMER_LIST_BY_GROUP (38); the answer is a JSON body ``{"consumerIdList": [...]}``."""

    consumer_group: str


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class NotifyConsumerIdsChangedRequestHeader(CommandHeader):
    """NOTIFY_CONSUMER_IDS_CHANGED (40): the broker tells a group's clients to rebalance (oneway)."""

    consumer_group: str


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class GetConsumerRunningInfoRequestHeader(CommandHeader):
    """GET_CONSUMER_RUNNING_INFO (307): to the broker, which forwards it to the client."""

    consumer_group: str
    client_id: str
    jstack_enable: bool = False


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class GetConsumerConnectionListRequestHeader(CommandHeader):
    """GET_CONSUMER_CONNECTION_LIST (203)."""

    consumer_group: str


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class GetProducerConnectionListRequestHeader(CommandHeader):
    """GET_PRODUCER_CONNECTION_LIST (204)."""

    producer_group: str


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class GetConsumeStatsRequestHeader(CommandHeader):
    """GET_CONSUME_STATS (208): per-queue broker, consumer and lag offsets of a group."""

    consumer_group: str
    topic: str | None = None


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class GetConsumeStatsInBrokerHeader(CommandHeader):
    """GET_BROKER_CONSUME_STATS (317)."""

    is_order: bool


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class GetConsumerStatusRequestHeader(CommandHeader):
    """INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223) and GET_CONSUMER_STATUS_FROM_CLIENT (221)."""

    topic: str
    group: str
    client_addr: str | None = None


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumeMessageDirectlyResultRequestHeader(CommandHeader):
    """CONSUME_MESSAGE_DIRECTLY (309)."""

    consumer_group: str
    client_id: str | None = None
    msg_id: str | None = None
    broker_name: str | None = None


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteSubscriptionGroupRequestHeader(CommandHeader):
    """DELETE_SUBSCRIPTIONGROUP (207)."""

    group_name: str
    remove_offset: bool = False


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class QueryTopicConsumeByWhoRequestHeader(CommandHeader):
    """QUERY_TOPIC_CONSUME_BY_WHO (300)."""

    topic: str


# ---------------------------------------------------------------------------------------------
# Topics and broker administration


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTopicRequestHeader(CommandHeader):
    """UPDATE_AND_CREATE_TOPIC (17); ``perm`` bits: 2 write, 4 read, 1 inherit."""

    topic: str
    default_topic: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_filter_type: str
    topic_sys_flag: int | None = None
    order: bool


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteTopicRequestHeader(CommandHeader):
    """DELETE_TOPIC_IN_BROKER (215)."""

    topic: str


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class GetTopicStatsInfoRequestHeader(CommandHeader):
    """GET_TOPIC_STATS_INFO (202)."""

    topic: str


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class GetTopicsByClusterRequestHeader(CommandHeader):
    """GET_TOPICS_BY_CLUSTER (224)."""

    cluster: str


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class ViewBrokerStatsDataRequestHeader(CommandHeader):
    """VIEW_BROKER_STATS_DATA (315)."""

    stats_name: str
    stats_key: str


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class ResumeCheckHalfMessageRequestHeader(CommandHeader):
    """RESUME_CHECK_HALF_MESSAGE (323)."""

    msg_id: str | None = None


# ---------------------------------------------------------------------------------------------
# Name server


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class GetRouteInfoRequestHeader(CommandHeader):
    """GET_ROUTEINFO_BY_TOPIC (105)."""

    topic: str
    accept_standard_json_only: bool | None = None


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerRequestHeader(CommandHeader):
    """REGISTER_BROKER (103); the body is the topic config wrapper (zlib-compressed when
    ``compressed``), ``body_crc32`` its CRC32 as a signed Java int."""

    broker_name: str
    broker_addr: str
    cluster_name: str
    ha_server_addr: str
    broker_id: Long
    compressed: bool = False
    body_crc32: int = 0


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerResponseHeader(CommandHeader):
    """Response to REGISTER_BROKER: the master's address and HA address for a slave."""

    ha_server_addr: str | None = None
    master_addr: str | None = None


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class UnRegisterBrokerRequestHeader(CommandHeader):
    """UNREGISTER_BROKER (104)."""

    broker_name: str
    broker_addr: str
    cluster_name: str
    broker_id: Long


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class QueryDataVersionRequestHeader(CommandHeader):
    """QUERY_DATA_VERSION (322); the body is the broker's data version."""

    broker_name: str
    broker_addr: str
    cluster_name: str
    broker_id: Long


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class QueryDataVersionResponseHeader(CommandHeader):
    """Response to QUERY_DATA_VERSION: whether the name server's copy differs."""

    changed: bool


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteTopicFromNamesrvRequestHeader(CommandHeader):
    """DELETE_TOPIC_IN_NAMESRV (216)."""

    topic: str
    cluster_name: str | None = None


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class WipeWritePermOfBrokerRequestHeader(CommandHeader):
    """WIPE_WRITE_PERM_OF_BROKER (205)."""

    broker_name: str


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class WipeWritePermOfBrokerResponseHeader(CommandHeader):
    """Response to WIPE_WRITE_PERM_OF_BROKER."""

    wipe_topic_count: int


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class AddWritePermOfBrokerRequestHeader(CommandHeader):
    """ADD_WRITE_PERM_OF_BROKER (327)."""

    broker_name: str


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class AddWritePermOfBrokerResponseHeader(CommandHeader):
    """Response to ADD_WRITE_PERM_OF_BROKER."""

    add_topic_count: int


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class PutKVConfigRequestHeader(CommandHeader):
    """PUT_KV_CONFIG (100)."""

    namespace: str
    key: str
    value: str


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class GetKVConfigRequestHeader(CommandHeader):
    """GET_KV_CONFIG (101)."""

    namespace: str
    key: str


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class GetKVConfigResponseHeader(CommandHeader):
    """Response to GET_KV_CONFIG."""

    value: str | None = None


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteKVConfigRequestHeader(CommandHeader):
    """DELETE_KV_CONFIG (102)."""

    namespace: str
    key: str


@header_class
@dataclass(frozen=True, slots=True, kw_only=True)
class GetKVListByNamespaceRequestHeader(CommandHeader):
    """GET_KVLIST_BY_NAMESPACE (219)."""

    namespace: str


REQUEST_HEADERS: Final[Mapping[int, type[CommandHeader]]] = {
    RequestCode.SEND_MESSAGE: SendMessageRequestHeader,
    RequestCode.PULL_MESSAGE: PullMessageRequestHeader,
    RequestCode.QUERY_MESSAGE: QueryMessageRequestHeader,
    RequestCode.QUERY_CONSUMER_OFFSET: QueryConsumerOffsetRequestHeader,
    RequestCode.UPDATE_CONSUMER_OFFSET: UpdateConsumerOffsetRequestHeader,
    RequestCode.UPDATE_AND_CREATE_TOPIC: CreateTopicRequestHeader,
    RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: SearchOffsetRequestHeader,
    RequestCode.GET_MAX_OFFSET: GetMaxOffsetRequestHeader,
    RequestCode.GET_MIN_OFFSET: GetMinOffsetRequestHeader,
    RequestCode.GET_EARLIEST_MSG_STORETIME: GetEarliestMsgStoretimeRequestHeader,
    RequestCode.VIEW_MESSAGE_BY_ID: ViewMessageRequestHeader,
    RequestCode.UNREGISTER_CLIENT: UnregisterClientRequestHeader,
    RequestCode.CONSUMER_SEND_MSG_BACK: ConsumerSendMsgBackRequestHeader,
    RequestCode.END_TRANSACTION: EndTransactionRequestHeader,
    RequestCode.GET_CONSUMER_LIST_BY_GROUP: GetConsumerListByGroupRequestHeader,
    RequestCode.CHECK_TRANSACTION_STATE: CheckTransactionStateRequestHeader,
    RequestCode.NOTIFY_CONSUMER_IDS_CHANGED: NotifyConsumerIdsChangedRequestHeader,
    RequestCode.PUT_KV_CONFIG: PutKVConfigRequestHeader,
    RequestCode.GET_KV_CONFIG: GetKVConfigRequestHeader,
    RequestCode.DELETE_KV_CONFIG: DeleteKVConfigRequestHeader,
    RequestCode.REGISTER_BROKER: RegisterBrokerRequestHeader,
    RequestCode.UNREGISTER_BROKER: UnRegisterBrokerRequestHeader,
    RequestCode.GET_ROUTEINFO_BY_TOPIC: GetRouteInfoRequestHeader,
    RequestCode.GET_TOPIC_STATS_INFO: GetTopicStatsInfoRequestHeader,
    RequestCode.GET_CONSUMER_CONNECTION_LIST: GetConsumerConnectionListRequestHeader,
    RequestCode.GET_PRODUCER_CONNECTION_LIST: GetProducerConnectionListRequestHeader,
    RequestCode.WIPE_WRITE_PERM_OF_BROKER: WipeWritePermOfBrokerRequestHeader,
    RequestCode.DELETE_SUBSCRIPTIONGROUP: DeleteSubscriptionGroupRequestHeader,
    RequestCode.GET_CONSUME_STATS: GetConsumeStatsRequestHeader,
    RequestCode.DELETE_TOPIC_IN_BROKER: DeleteTopicRequestHeader,
    RequestCode.DELETE_TOPIC_IN_NAMESRV: DeleteTopicFromNamesrvRequestHeader,
    RequestCode.GET_KVLIST_BY_NAMESPACE: GetKVListByNamespaceRequestHeader,
    RequestCode.RESET_CONSUMER_CLIENT_OFFSET: ResetOffsetRequestHeader,
    RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT: GetConsumerStatusRequestHeader,
    RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: ResetOffsetRequestHeader,
    RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS: GetConsumerStatusRequestHeader,
    RequestCode.GET_TOPICS_BY_CLUSTER: GetTopicsByClusterRequestHeader,
    RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: QueryTopicConsumeByWhoRequestHeader,
    RequestCode.QUERY_CONSUME_TIME_SPAN: QueryConsumeTimeSpanRequestHeader,
    RequestCode.GET_CONSUMER_RUNNING_INFO: GetConsumerRunningInfoRequestHeader,
    RequestCode.QUERY_CORRECTION_OFFSET: QueryCorrectionOffsetHeader,
    RequestCode.CONSUME_MESSAGE_DIRECTLY: ConsumeMessageDirectlyResultRequestHeader,
    RequestCode.SEND_MESSAGE_V2: SendMessageRequestHeaderV2,
    RequestCode.CLONE_GROUP_OFFSET: CloneGroupOffsetRequestHeader,
    RequestCode.VIEW_BROKER_STATS_DATA: ViewBrokerStatsDataRequestHeader,
    RequestCode.GET_BROKER_CONSUME_STATS: GetConsumeStatsInBrokerHeader,
    RequestCode.SEND_BATCH_MESSAGE: SendMessageRequestHeaderV2,
    RequestCode.QUERY_CONSUME_QUEUE: QueryConsumeQueueRequestHeader,
    RequestCode.QUERY_DATA_VERSION: QueryDataVersionRequestHeader,
    RequestCode.RESUME_CHECK_HALF_MESSAGE: ResumeCheckHalfMessageRequestHeader,
    RequestCode.SEND_REPLY_MESSAGE: SendMessageRequestHeader,
    RequestCode.SEND_REPLY_MESSAGE_V2: SendMessageRequestHeaderV2,
    RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT: ReplyMessageRequestHeader,
    RequestCode.ADD_WRITE_PERM_OF_BROKER: AddWritePermOfBrokerRequestHeader,
}
"""The header class of each request code that has one (codes whose parameters are all in the
body, such as HEART_BEAT or LOCK_BATCH_MQ, are absent)."""

RESPONSE_HEADERS: Final[Mapping[int, type[CommandHeader]]] = {
    RequestCode.SEND_MESSAGE: SendMessageResponseHeader,
    RequestCode.SEND_MESSAGE_V2: SendMessageResponseHeader,
    RequestCode.SEND_BATCH_MESSAGE: SendMessageResponseHeader,
    RequestCode.SEND_REPLY_MESSAGE: SendMessageResponseHeader,
    RequestCode.SEND_REPLY_MESSAGE_V2: SendMessageResponseHeader,
    RequestCode.PULL_MESSAGE: PullMessageResponseHeader,
    RequestCode.QUERY_MESSAGE: QueryMessageResponseHeader,
    RequestCode.QUERY_CONSUMER_OFFSET: QueryConsumerOffsetResponseHeader,
    RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: SearchOffsetResponseHeader,
    RequestCode.GET_MAX_OFFSET: GetMaxOffsetResponseHeader,
    RequestCode.GET_MIN_OFFSET: GetMinOffsetResponseHeader,
    RequestCode.GET_EARLIEST_MSG_STORETIME: GetEarliestMsgStoretimeResponseHeader,
    RequestCode.GET_KV_CONFIG: GetKVConfigResponseHeader,
    RequestCode.REGISTER_BROKER: RegisterBrokerResponseHeader,
    RequestCode.WIPE_WRITE_PERM_OF_BROKER: WipeWritePermOfBrokerResponseHeader,
    RequestCode.QUERY_DATA_VERSION: QueryDataVersionResponseHeader,
    RequestCode.ADD_WRITE_PERM_OF_BROKER: AddWritePermOfBrokerResponseHeader,
}
"""The header class of the response to each request code whose response has header fields.

Only responses that succeeded carry them all (a pull's ``PULL_NOT_FOUND``, ``PULL_RETRY_IMMEDIATELY``
and ``PULL_OFFSET_MOVED`` do too, as does QUERY_MESSAGE's ``QUERY_NOT_FOUND``); an error response has
at most a remark."""
