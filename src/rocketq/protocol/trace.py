"""RocketMQ's message-trace records, sans I/O: the text Java clients write with ``enableMsgTrace``.

A producer or consumer with tracing on describes what it did in *trace contexts* and publishes
them, packed many to a message, to the topic :data:`RMQ_SYS_TRACE_TOPIC`. The message body is
text: one line per (context, message) pair, each line's fields separated by
:data:`CONTENT_SPLITOR` (``\\x01``) and ended by :data:`FIELD_SPLITOR` (``\\x02``). The first field
names the :class:`TraceType`; the fields that follow are fixed per type (RocketMQ 4.9.4's
``TraceDataEncoder``):

==============  ===================================================================================
type            fields after the type name, in order
==============  ===================================================================================
Pub             timestamp, region id, group, topic, msg id, tags, keys, store host, body length,
                cost ms, message type (ordinal), offset msg id, success
                (a 12-field old form ends at success; a 15th field, newer, is the client host)
SubBefore       timestamp, region id, group, request id, msg id, retry times, keys
SubAfter        request id, msg id, cost ms, success, keys, context code, timestamp, group
EndTransaction  timestamp, region id, group, topic, msg id, tags, keys, store host, message type
                (ordinal), transaction id, transaction state (name), from transaction check
==============  ===================================================================================

Booleans are ``true``/``false``; a Java ``null`` string is written as the text ``null`` and read
back as that text (as Java does). A context of a consumer names several messages (one consume
call): it encodes as one line per message, and decoding gives one single-message context per line
(as Java's decoder does), so :func:`decode_trace` of :func:`encode_trace` is the list of
:meth:`TraceContext.split` contexts.

The message that carries the lines (Java's ``AsyncTraceDispatcher``): topic
``RMQ_SYS_TRACE_TOPIC``; keys are every traced message's msg id plus its own keys (split on
spaces), joined with a space in Java ``HashSet`` order; contexts are packed until the body reaches
:data:`TRACE_MAX_MESSAGE_SIZE` characters (the context that crosses it is still included) or
half a second passes. :func:`pack_traces` does the size part; the clock is the publisher's.

Decoding is lenient where Java's is not: missing trailing fields (Java's ``split`` drops trailing
empty strings and then fails on an empty ``keys``) read as empty, and a line of an unknown type is
skipped, as Java skips it. A number or enum that does not parse raises
:class:`~rocketq.errors.RemoteProtocolError` naming the line.

>>> ctx = TraceContext(trace_type=TraceType.SUB_AFTER, timestamp=1700000000123, group_name="G",
...                    request_id="R1", cost_time=5, beans=(TraceBean(msg_id="M1", keys="k"),))
>>> text = encode_trace([ctx])
>>> text.split(CONTENT_SPLITOR)
['SubAfter', 'R1', 'M1', '5', 'true', 'k', '0', '1700000000123', 'G\\x02']
>>> decode_trace(text) == [ctx]
True
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from enum import IntEnum, StrEnum
from typing import Final

from rocketq.errors import RemoteProtocolError
from rocketq.models import LocalTransactionState
from rocketq.protocol.bodies import java_hash_order
from rocketq.protocol.properties import KEY_SEPARATOR
from rocketq.protocol.topics import RMQ_SYS_TRACE_TOPIC

__all__ = [
    "CONTENT_SPLITOR",
    "FIELD_SPLITOR",
    "RMQ_SYS_TRACE_TOPIC",
    "TRACE_GROUP_PREFIX",
    "TRACE_MAX_MESSAGE_SIZE",
    "ConsumeReturnType",
    "LocalTransactionState",
    "TraceBean",
    "TraceContext",
    "TraceMessage",
    "TraceMessageType",
    "TraceType",
    "decode_trace",
    "encode_trace",
    "pack_traces",
    "trace_keys",
]

CONTENT_SPLITOR: Final = "\x01"
"""Between two fields of a trace line (``TraceConstants.CONTENT_SPLITOR``, char 1)."""
FIELD_SPLITOR: Final = "\x02"
"""Ends each trace line (``TraceConstants.FIELD_SPLITOR``, char 2)."""
TRACE_GROUP_PREFIX: Final = "_INNER_TRACE_PRODUCER"
"""Java names its trace producer group ``_INNER_TRACE_PRODUCER-<group>-<type>-<n>``."""
TRACE_MAX_MESSAGE_SIZE: Final = 118_000
"""Characters of trace text Java packs into one message before sending it: the trace producer's
``maxMessageSize`` (128000 - 10 * 1000)."""


class TraceType(StrEnum):
    """What a trace line records (RocketMQ's ``TraceType``; the value is the name on the wire)."""

    PUB = "Pub"
    SUB_BEFORE = "SubBefore"
    SUB_AFTER = "SubAfter"
    END_TRANSACTION = "EndTransaction"


class TraceMessageType(IntEnum):
    """The traced message's kind (RocketMQ's ``MessageType``), written as its ordinal."""

    NORMAL = 0
    TRANS_HALF = 1
    TRANS_COMMIT = 2
    DELAY = 3


class ConsumeReturnType(IntEnum):
    """How a consume call ended (RocketMQ's ``ConsumeReturnType``): a SubAfter's context code."""

    SUCCESS = 0
    TIME_OUT = 1
    EXCEPTION = 2
    RETURNNULL = 3
    FAILED = 4


@dataclass(frozen=True, slots=True, kw_only=True)
class TraceBean:
    """One traced message (RocketMQ's ``TraceBean``); each line type writes some of the fields.

    ``store_time`` and (before newer clients) ``client_host`` are never written by 4.9.4's
    encoder; they are kept for callers that fill them.
    """

    topic: str = ""
    msg_id: str = ""
    offset_msg_id: str = ""
    tags: str = ""
    keys: str = ""
    store_host: str = ""
    client_host: str = ""
    store_time: int = 0
    retry_times: int = 0
    body_length: int = 0
    msg_type: TraceMessageType = TraceMessageType.NORMAL
    transaction_id: str = ""
    transaction_state: LocalTransactionState = LocalTransactionState.UNKNOW
    from_transaction_check: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class TraceContext:
    """One traced event (RocketMQ's ``TraceContext``): a send, the start or end of a consume call,
    or a transaction's end, with the messages it concerns in ``beans``.

    ``timestamp`` is epoch ms; ``cost_time`` ms (for a consume call Java divides the call's time by
    its message count). ``request_id`` pairs a SubBefore with its SubAfter. ``context_code`` is a
    :class:`ConsumeReturnType` ordinal.
    """

    trace_type: TraceType
    timestamp: int = 0
    region_id: str = ""
    region_name: str = ""
    group_name: str = ""
    cost_time: int = 0
    success: bool = True
    request_id: str = ""
    context_code: int = 0
    beans: tuple[TraceBean, ...] = ()

    def split(self) -> list[TraceContext]:
        """One context per bean, as decoding returns them.

        Pub and EndTransaction lines carry only the first bean, so those give one context."""
        if self.trace_type in (TraceType.PUB, TraceType.END_TRANSACTION):
            return [replace(self, beans=self.beans[:1])] if self.beans else []
        return [replace(self, beans=(bean,)) for bean in self.beans]


@dataclass(frozen=True, slots=True)
class TraceMessage:
    """The body and keys of one trace message, as :func:`pack_traces` makes them."""

    body: bytes
    keys: tuple[str, ...] = field(default=())

    @property
    def keys_property(self) -> str:
        """The ``KEYS`` property value: the keys joined by a space."""
        return KEY_SEPARATOR.join(self.keys)


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _encode_context(ctx: TraceContext, out: list[str]) -> None:
    c = CONTENT_SPLITOR
    kind = ctx.trace_type
    if not ctx.beans:
        return
    if kind is TraceType.PUB:
        b = ctx.beans[0]
        pub = (
            kind.value, str(ctx.timestamp), ctx.region_id, ctx.group_name, b.topic, b.msg_id, b.tags,
            b.keys, b.store_host, str(b.body_length), str(ctx.cost_time), str(int(b.msg_type)),
            b.offset_msg_id, _bool(ctx.success),
        )  # fmt: skip
        out.append(c.join(pub))
        out.append(FIELD_SPLITOR)
    elif kind is TraceType.SUB_BEFORE:
        head = c.join((kind.value, str(ctx.timestamp), ctx.region_id, ctx.group_name, ctx.request_id))
        for b in ctx.beans:
            out.append(c.join((head, b.msg_id, str(b.retry_times), b.keys)))
            out.append(FIELD_SPLITOR)
    elif kind is TraceType.SUB_AFTER:
        tail = c.join((str(ctx.context_code), str(ctx.timestamp), ctx.group_name))
        for b in ctx.beans:
            sub = (
                kind.value, ctx.request_id, b.msg_id, str(ctx.cost_time), _bool(ctx.success), b.keys, tail
            )  # fmt: skip
            out.append(c.join(sub))
            out.append(FIELD_SPLITOR)
    else:
        b = ctx.beans[0]
        fields = (
            kind.value, str(ctx.timestamp), ctx.region_id, ctx.group_name, b.topic, b.msg_id, b.tags,
            b.keys, b.store_host, str(int(b.msg_type)), b.transaction_id, b.transaction_state.value,
            _bool(b.from_transaction_check),
        )  # fmt: skip
        out.append(c.join(fields))
        out.append(FIELD_SPLITOR)


def encode_trace(contexts: Iterable[TraceContext]) -> str:
    """The trace text of ``contexts``, exactly as Java's encoder writes it (a context without
    beans writes nothing)."""
    out: list[str] = []
    for ctx in contexts:
        _encode_context(ctx, out)
    return "".join(out)


def trace_keys(contexts: Iterable[TraceContext]) -> list[str]:
    """The keys of a trace message holding ``contexts``: each bean's msg id and its keys split on
    spaces, without empties or repeats, in Java ``HashSet`` order (as ``AsyncTraceDispatcher`` sets
    them)."""
    keys: dict[str, None] = {}
    for ctx in contexts:
        for bean in ctx.beans:
            keys[bean.msg_id] = None
            if bean.keys:
                for key in bean.keys.split(KEY_SEPARATOR):
                    keys[key] = None
    keys.pop("", None)
    return java_hash_order(keys)


def pack_traces(
    contexts: Sequence[TraceContext], *, max_chars: int = TRACE_MAX_MESSAGE_SIZE
) -> list[TraceMessage]:
    """Pack ``contexts`` into trace messages as Java's dispatcher does: lines accumulate until their
    length reaches ``max_chars`` (the context that reaches it is included); the body is UTF-8."""
    messages: list[TraceMessage] = []
    texts: list[str] = []
    group: list[TraceContext] = []
    size = 0

    def flush() -> None:
        nonlocal size
        if group:
            messages.append(TraceMessage("".join(texts).encode(), tuple(trace_keys(group))))
        texts.clear()
        group.clear()
        size = 0

    for ctx in contexts:
        if not ctx.beans:
            continue
        text = encode_trace((ctx,))
        texts.append(text)
        group.append(ctx)
        size += len(text)
        if size >= max_chars:
            flush()
    flush()
    return messages


# ------------------------------------------------------------------------------------- decoding


def _int(line: list[str], i: int, n: int) -> int:
    raw = line[i] if i < len(line) else ""
    try:
        return int(raw)
    except ValueError:
        raise RemoteProtocolError(f"trace line {n} ({line[0]}): field {i} is not a number: {raw!r}") from None


def _text(line: list[str], i: int) -> str:
    return line[i] if i < len(line) else ""


def _java_bool(line: list[str], i: int) -> bool:
    # Boolean.parseBoolean: "true" in any case is true, anything else false
    return _text(line, i).lower() == "true"


def _msg_type(line: list[str], i: int, n: int) -> TraceMessageType:
    value = _int(line, i, n)
    try:
        return TraceMessageType(value)
    except ValueError:
        raise RemoteProtocolError(f"trace line {n} ({line[0]}): unknown message type {value}") from None


def _message_bean(line: list[str]) -> TraceBean:
    """The message a Pub or an EndTransaction line is about: its fields 4 to 8 (topic, id, tags,
    keys, store host)."""
    return TraceBean(
        topic=_text(line, 4),
        msg_id=_text(line, 5),
        tags=_text(line, 6),
        keys=_text(line, 7),
        store_host=_text(line, 8),
    )


def _decode_line(line: list[str], n: int) -> TraceContext | None:
    kind = line[0]
    if kind == "Pub":
        size = len(line)
        bean = replace(
            _message_bean(line),
            body_length=_int(line, 9, n),
            msg_type=_msg_type(line, 11, n),
            offset_msg_id=_text(line, 12) if size >= 14 else "",
            client_host=_text(line, 14) if size >= 15 else "",
        )
        return TraceContext(
            trace_type=TraceType.PUB,
            timestamp=_int(line, 1, n),
            region_id=_text(line, 2),
            group_name=_text(line, 3),
            cost_time=_int(line, 10, n),
            success=_java_bool(line, 12 if size == 13 else 13),
            beans=(bean,),
        )
    if kind == "SubBefore":
        return TraceContext(
            trace_type=TraceType.SUB_BEFORE,
            timestamp=_int(line, 1, n),
            region_id=_text(line, 2),
            group_name=_text(line, 3),
            request_id=_text(line, 4),
            beans=(TraceBean(msg_id=_text(line, 5), retry_times=_int(line, 6, n), keys=_text(line, 7)),),
        )
    if kind == "SubAfter":
        size = len(line)
        return TraceContext(
            trace_type=TraceType.SUB_AFTER,
            request_id=_text(line, 1),
            cost_time=_int(line, 3, n),
            success=_java_bool(line, 4),
            context_code=_int(line, 6, n) if size >= 7 else 0,
            timestamp=_int(line, 7, n) if size >= 8 else 0,
            group_name=_text(line, 8),
            beans=(TraceBean(msg_id=_text(line, 2), keys=_text(line, 5)),),
        )
    if kind == "EndTransaction":
        state = _text(line, 11)
        try:
            tx_state = LocalTransactionState(state)
        except ValueError:
            raise RemoteProtocolError(
                f"trace line {n} (EndTransaction): unknown transaction state {state!r}"
            ) from None
        bean = replace(
            _message_bean(line),
            msg_type=_msg_type(line, 9, n),
            transaction_id=_text(line, 10),
            transaction_state=tx_state,
            from_transaction_check=_java_bool(line, 12),
        )
        return TraceContext(
            trace_type=TraceType.END_TRANSACTION,
            timestamp=_int(line, 1, n),
            region_id=_text(line, 2),
            group_name=_text(line, 3),
            beans=(bean,),
        )
    return None


def decode_trace(text: str | bytes) -> list[TraceContext]:
    """The contexts in a trace message body (text, or UTF-8 bytes), one per line, in order.

    Each has exactly one bean. Lines of unknown types are skipped; see the module docstring for
    what is lenient and what raises.
    """
    if isinstance(text, bytes | bytearray | memoryview):
        try:
            text = bytes(text).decode()
        except UnicodeDecodeError as exc:
            raise RemoteProtocolError(f"trace message body is not UTF-8: {exc}") from None
    out: list[TraceContext] = []
    for n, raw in enumerate(text.split(FIELD_SPLITOR)):
        if not raw:
            continue
        ctx = _decode_line(raw.split(CONTENT_SPLITOR), n)
        if ctx is not None:
            out.append(ctx)
    return out
