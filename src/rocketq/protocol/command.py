"""``RemotingCommand``: one request or response of RocketMQ's remoting protocol.

A command is a header (code, language, version, opaque, flag, remark, ext fields) and an opaque
``body``. Requests and responses share the shape; bit 0 of ``flag`` marks a response and bit 1 a
oneway request (one the sender expects no answer to). A response repeats its request's ``opaque``,
which is how a peer pairs them; numbering requests is the sender's job (see
:class:`OpaqueSequence`), never the codec's, so the codec holds no hidden global state.

Commands are built incrementally (a handler fills ext fields, then the body), so the dataclass is
mutable; it is slotted, since a busy broker holds many of them.

Which ``language`` rocketq sends: a 4.9.4 broker only records a client's language (its admin
tools list it beside the connection) except that an ``INVOKE_BROKER_TO_RESET_OFFSET`` marked
``CPP`` changes how offsets are reset. ``PYTHON`` is an honest, long-standing member of every
RocketMQ version's ``LanguageCode``, so rocketq names itself ``PYTHON``
(:data:`DEFAULT_LANGUAGE`); callers may set any other code per command.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Final

from mypy_extensions import mypyc_attr

from rocketq.errors import ConfigError
from rocketq.protocol.codes import CURRENT_VERSION, LanguageCode, ResponseCode, SerializeType, code_name

__all__ = [
    "DEFAULT_LANGUAGE",
    "FLAG_ONEWAY",
    "FLAG_RESPONSE",
    "OpaqueSequence",
    "RemotingCommand",
]

FLAG_RESPONSE: Final = 0b01
"""Bit 0 of ``flag``: the command is a response (RocketMQ's ``RPC_TYPE`` bit)."""

FLAG_ONEWAY: Final = 0b10
"""Bit 1 of ``flag``: the request expects no response (RocketMQ's ``RPC_ONEWAY`` bit)."""

DEFAULT_LANGUAGE: Final = LanguageCode.PYTHON
"""The language rocketq declares in the commands it builds (see the module docstring)."""

_INT32_MIN: Final = -(2**31)
_INT32_MAX: Final = 2**31 - 1


_REPR_BODY_LIMIT: Final = 64


@dataclass(slots=True, repr=False)
class RemotingCommand:
    """One request or response.

    ``code`` is a plain ``int`` (a :class:`~rocketq.protocol.codes.RequestCode` for requests, a
    :class:`~rocketq.protocol.codes.ResponseCode` for responses) so that codes this table does not
    know still decode. ``ext_fields`` maps header field names to their string values, as RocketMQ
    writes every typed header (see :mod:`rocketq.protocol.headers`); decoding keeps the order the
    peer wrote them in, and encoding writes them in the dict's order, so a decoded command
    re-encodes to the same bytes. ``body`` is ``b""`` when the command has none.

    ``write_empty_ext_fields`` is a JSON-header detail: RocketMQ writes ``"extFields":{}`` when a
    typed header with no set fields is attached, and leaves the key out when no header is. It only
    matters while ``ext_fields`` is empty and is ignored by ``==``. :meth:`request` and
    :meth:`response` set it when ``ext_fields`` is given, the decoder when the peer wrote ``{}``.
    """

    code: int
    language: LanguageCode = DEFAULT_LANGUAGE
    version: int = CURRENT_VERSION
    opaque: int = 0
    flag: int = 0
    remark: str | None = None
    ext_fields: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    serialize_type: SerializeType = SerializeType.JSON
    write_empty_ext_fields: bool = field(default=False, compare=False)

    def __repr__(self) -> str:
        # A body can be megabytes: show its length and its start, so that logs stay readable.
        body = self.body
        body_text = repr(body) if len(body) <= _REPR_BODY_LIMIT else f"<{len(body)} bytes: {body[:32]!r}...>"
        response = bool(self.flag & FLAG_RESPONSE)
        language = getattr(self.language, "name", self.language)
        serialize_type = getattr(self.serialize_type, "name", self.serialize_type)
        return (
            f"RemotingCommand({'response' if response else 'request'} "
            f"{code_name(int(self.code), response=response)}, language={language}, "
            f"version={int(self.version)}, opaque={self.opaque!r}, flag={self.flag!r}, "
            f"remark={self.remark!r}, ext_fields={self.ext_fields!r}, body={body_text}, "
            f"serialize_type={serialize_type})"
        )

    @property
    def is_response(self) -> bool:
        """Whether the response bit of ``flag`` is set."""
        return bool(self.flag & FLAG_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        """Whether the oneway bit of ``flag`` is set (a request that gets no response)."""
        return bool(self.flag & FLAG_ONEWAY)

    @classmethod
    def request(
        cls,
        code: int,
        ext_fields: dict[str, str] | None = None,
        body: bytes = b"",
        *,
        oneway: bool = False,
        opaque: int = 0,
        remark: str | None = None,
        language: LanguageCode = DEFAULT_LANGUAGE,
        version: int = CURRENT_VERSION,
        serialize_type: SerializeType = SerializeType.JSON,
    ) -> RemotingCommand:
        """A request; the transport assigns ``opaque`` when it sends it (0 until then).

        >>> cmd = RemotingCommand.request(105, {"topic": "TopicTest"})
        >>> (cmd.code, cmd.ext_fields, cmd.is_response, cmd.is_oneway)
        (105, {'topic': 'TopicTest'}, False, False)
        """
        return cls(
            code=code,
            language=language,
            version=version,
            opaque=opaque,
            flag=FLAG_ONEWAY if oneway else 0,
            remark=remark,
            ext_fields={} if ext_fields is None else ext_fields,
            body=body,
            serialize_type=serialize_type,
            write_empty_ext_fields=ext_fields is not None,
        )

    def response(
        self,
        code: int = ResponseCode.SUCCESS,
        remark: str | None = None,
        ext_fields: dict[str, str] | None = None,
        body: bytes = b"",
        *,
        language: LanguageCode = DEFAULT_LANGUAGE,
        version: int = CURRENT_VERSION,
    ) -> RemotingCommand:
        """The response to this request: same ``opaque`` and serialize type, response bit set.

        >>> req = RemotingCommand.request(14, {"topic": "T"}, opaque=7)
        >>> resp = req.response(remark="done")
        >>> (resp.code == ResponseCode.SUCCESS, resp.opaque, resp.flag, resp.remark)
        (True, 7, 1, 'done')
        """
        return RemotingCommand(
            code=code,
            language=language,
            version=version,
            opaque=self.opaque,
            flag=FLAG_RESPONSE,
            remark=remark,
            ext_fields={} if ext_fields is None else ext_fields,
            body=body,
            serialize_type=self.serialize_type,
            write_empty_ext_fields=ext_fields is not None,
        )

    def mark_oneway(self) -> None:
        """Set the oneway bit (a request whose sender will not wait for an answer)."""
        self.flag |= FLAG_ONEWAY

    def mark_response(self) -> None:
        """Set the response bit."""
        self.flag |= FLAG_RESPONSE


# a Python class even when this module is compiled: mypyc 2.4 types a native ``__next__ -> int``
# slot wrongly (a C compile error); the hot path does not call it per message
@mypyc_attr(native_class=False)
class OpaqueSequence:
    """Numbers requests for one sender, as RocketMQ's per-process counter does.

    Starts at ``start`` (RocketMQ starts at 0) and wraps from 2**31 - 1 to -2**31 like a Java
    ``int`` counter, so every value fits the header's signed 32-bit ``opaque``. The transport owns
    one per client or server; nothing in the codec touches it. Safe to draw from several threads:
    the count is one ``itertools.count`` step, which CPython makes atomic.

    >>> seq = OpaqueSequence(2**31 - 1)
    >>> [next(seq), next(seq), next(seq)]
    [2147483647, -2147483648, -2147483647]
    """

    __slots__ = ("_count",)

    def __init__(self, start: int = 0) -> None:
        if not _INT32_MIN <= start <= _INT32_MAX:
            raise ConfigError(f"opaque start {start} is not a signed 32-bit int")
        # counted from -2**31 as 0, so that masking to 32 bits wraps like a Java int
        self._count = itertools.count(start - _INT32_MIN)

    def __iter__(self) -> OpaqueSequence:
        return self

    def __next__(self) -> int:
        return (next(self._count) & 0xFFFFFFFF) + _INT32_MIN
