"""Read and write the JSON dialect RocketMQ speaks: what fastjson 1.2.x writes and reads.

RocketMQ serializes every JSON body with fastjson (``JSON.toJSONString`` with default features),
which is *almost* JSON. The differences that reach the wire:

* map keys that are not strings are written bare: ``{0:"127.0.0.1:10911"}`` for a
  ``HashMap<Long, String>``, and a map keyed by a bean writes the bean itself as the key,
  ``{{"brokerName":"b","queueId":0,"topic":"T"}:5}``;
* bean fields come out sorted by name, ``null`` fields and ``null`` map values are left out;
* doubles are printed as Java prints them (``0.0``, ``0.2``, ``1.0E7``), NaN and infinities as ``null``;
* strings are UTF-8 with non-ASCII characters raw; control characters, DEL..U+009F and
  U+2028/U+2029 are escaped (``\\u0001``, ``\\n``), ``/`` is not.

fastjson also *reads* more than JSON: unquoted and single-quoted names, single-quoted strings,
trailing commas, ``\\x41`` and ``\\v`` escapes, number suffixes such as ``1L``.

:func:`loads` hands the text to the standard library's C parser first and only falls back to
the pure-Python parser here when that refuses it; the fallback itself gives every value it can
back to the C scanner, so only the non-standard parts are parsed in Python. An object used as a
map key comes back as a :class:`FrozenObject`, a hashable, ordered view of its fields.

:func:`dumps` writes Python values the way fastjson writes the corresponding Java values: dicts
in their insertion order (callers put bean fields in fastjson's order), ``int``/``FrozenObject``
keys bare, ``None`` map values skipped, lists/tuples/sets as arrays, enums by name.
``browser_compatible=True`` gives what the name server sends to 4.9.4+ clients
(``BrowserCompatible, MapSortField``): every key quoted, maps sorted by key, everything outside
printable ASCII escaped. ``pretty=True`` gives fastjson's ``PrettyFormat``, which the config files
of brokers and name servers use; it tells beans (:class:`Bean`) from maps and lists from sets.

>>> loads('{"brokerAddrs":{0:"127.0.0.1:10911"}}')
{'brokerAddrs': {0: '127.0.0.1:10911'}}
>>> key = FrozenObject.of({"brokerName": "b", "queueId": 0, "topic": "T"})
>>> dumps({key: 5, 7: [1.0, None, True]})
'{{"brokerName":"b","queueId":0,"topic":"T"}:5,7:[1.0,null,true]}'
>>> dumps({7: "x"}, browser_compatible=True)
'{"7":"x"}'
"""

from __future__ import annotations

import enum
import json
import json.scanner
import math
import re
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from typing import Any, cast, overload

from rocketq.errors import RemoteProtocolError
from rocketq.protocol._text import has_surrogate_escape, java_utf8_text

__all__ = ["Bean", "FrozenObject", "dumps", "dumps_bytes", "freeze", "java_double_str", "loads"]

#: Deepest nesting the fallback parser accepts (RocketMQ's bodies nest at most six deep); deeper
#: input is rejected well before Python's recursion limit.
MAX_DEPTH = 128

#: Longest integer literal read (Python's own int-string limit; Java's ``long`` has 19 digits, and
#: fastjson reads anything longer as a ``BigInteger`` no RocketMQ field takes).
MAX_INTEGER_DIGITS = 4300


class FrozenObject(tuple[tuple[Any, Any], ...]):
    """A JSON object made hashable so that it can be a map key: its ``(name, value)`` pairs in order.

    fastjson writes a map keyed by a bean (``HashMap<MessageQueue, Long>``) with each key object
    inline; :func:`loads` returns those keys as ``FrozenObject`` (nested objects and arrays inside
    become ``FrozenObject`` and tuples). Two frozen objects are equal when they hold the same pairs
    in the same order; a ``FrozenObject`` never equals a plain tuple. ``k[name]`` looks a field up by
    name, except that an ``int`` index gives the pair at that position, as for any tuple (use
    :meth:`get` for an object whose names are integers).

    >>> k = FrozenObject.of({"topic": "T", "queueId": 1})
    >>> k["queueId"], k.get("missing", 0), k.to_dict()
    (1, 0, {'topic': 'T', 'queueId': 1})
    """

    __slots__ = ()

    @classmethod
    def of(cls, mapping: Mapping[Any, Any]) -> FrozenObject:
        """Freeze a mapping (recursively), keeping its key order."""
        return cls((k, freeze(v)) for k, v in mapping.items())

    def __getitem__(self, name: Any) -> Any:
        if isinstance(name, (int, slice)) and not isinstance(name, bool):
            return tuple.__getitem__(self, name)
        for k, v in tuple.__iter__(self):
            if k == name:
                return v
        raise KeyError(name)

    def get(self, name: Any, default: Any = None) -> Any:
        """The value of field ``name``, or ``default`` when the object has no such field."""
        for k, v in tuple.__iter__(self):
            if k == name:
                return v
        return default

    def to_dict(self) -> dict[Any, Any]:
        """The fields as a plain (shallow) dict, in order."""
        return dict(tuple.__iter__(self))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FrozenObject) and tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash((FrozenObject, tuple.__hash__(self)))

    def __repr__(self) -> str:
        return f"FrozenObject({self.to_dict()!r})"


def freeze(value: Any) -> Any:
    """A hashable equivalent of a parsed JSON value: dicts become :class:`FrozenObject`, lists tuples."""
    kind = type(value)
    if kind is dict:
        return FrozenObject([(k, v if type(v) not in _CONTAINERS else freeze(v)) for k, v in value.items()])
    if kind is list:
        return tuple([v if type(v) not in _CONTAINERS else freeze(v) for v in value])
    return value


_CONTAINERS = frozenset({dict, list})


class Bean(dict[str, Any]):
    """A dict that stands for a Java bean: its properties in fastjson's order (sorted by name).

    Only :func:`dumps` with ``pretty=True`` treats it differently from a map (one property per
    line); everywhere else it is a plain dict.
    """

    __slots__ = ()


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------

_scan_once = cast(
    Callable[[str, int], tuple[Any, int]],
    json.scanner.make_scanner(json.JSONDecoder()),  # type: ignore[arg-type]
)
_scanstring = cast(Callable[[str, int, bool], tuple[str, int]], json.decoder.scanstring)  # type: ignore[attr-defined]

# fastjson skips ' ', \t, \n, \r, \f and \b between tokens.
_BLANKS = r"[ \t\n\r\f\b]*"
_WS = re.compile(_BLANKS)
_COLON = re.compile(f"{_BLANKS}:{_BLANKS}")
_OBJ_OPEN = re.compile(f"\\{{{_BLANKS}(\\}})?")
_OBJ_NEXT = re.compile(f"{_BLANKS}(?:,{_BLANKS}(\\}})?|(\\}}))")
_ARR_OPEN = re.compile(f"\\[{_BLANKS}(\\])?")
_ARR_NEXT = re.compile(f"{_BLANKS}(?:,{_BLANKS}(\\])?|(\\]))")
_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?([LSBFD]?)")
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_SQ_PLAIN = re.compile(r"[^'\\]*")
_DQ_PLAIN = re.compile(r'[^"\\]*')
_SIMPLE_ESCAPES = {
    "0": "\0", "1": "\1", "2": "\2", "3": "\3", "4": "\4", "5": "\5", "6": "\6", "7": "\7",
    "b": "\b", "t": "\t", "n": "\n", "v": "\x0b", "f": "\f", "F": "\f", "r": "\r",
    '"': '"', "'": "'", "/": "/", "\\": "\\",
}  # fmt: skip
_LITERALS = {"true": True, "false": False, "null": None, "undefined": None}
_HEX = frozenset("0123456789abcdefABCDEF")
_HEX_ESCAPE_WIDTHS = {"u": 4, "x": 2}  # hex digits after \u, and after fastjson's \x


#: ``loads(chunked=True)``: the longest container handed to the C scanner at once (about 0.3 ms of
#: it); texts up to this size are parsed by the C parser whole.
CHUNK_WINDOW = 64 * 1024
_FIRST_WINDOW = 512


@overload
def loads(
    data: bytes | bytearray | memoryview,
    *,
    max_fallback: int | None = None,
    chunked: bool = False,
    chunk_window: int = ...,
) -> Any: ...
@overload
def loads(
    data: str, *, max_fallback: int | None = None, chunked: bool = False, chunk_window: int = ...
) -> Any: ...
def loads(
    data: bytes | bytearray | memoryview | str,
    *,
    max_fallback: int | None = None,
    chunked: bool = False,
    chunk_window: int = CHUNK_WINDOW,
) -> Any:
    """Parse a RocketMQ (fastjson) JSON text, from UTF-8 bytes or a str.

    fastjson's back-references (``{"$ref":"$.brokerDatas[0]"}``, written when one Java object
    appears twice in a body) are resolved to the value they name, as fastjson resolves them;
    circular ones cannot be represented and are rejected.

    Raises :class:`~rocketq.errors.RemoteProtocolError` with the offset and a short excerpt when
    the text is neither JSON nor something fastjson would accept. ``max_fallback`` bounds the text
    the pure-Python parser takes (several times slower than the C parser per value): a server
    reading what real clients send, which is always standard JSON, may pass a small bound so that
    non-standard text cannot cost it more than a few milliseconds.

    ``chunked=True`` is for a worker thread decoding beside an event loop: the C parser holds the
    GIL for the whole of one call (150-300 ms for 16 MiB), so a text longer than ``chunk_window``
    characters (:data:`CHUNK_WINDOW` by default; and within ``max_fallback``) is parsed by the
    pure-Python parser, which gives the C scanner only containers that close within that many
    characters. The result is the same; it takes a few times longer, in steps of well under a
    millisecond each.
    """
    if isinstance(data, str):
        text = data
    else:
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RemoteProtocolError(f"JSON body is not valid UTF-8 at byte {exc.start}") from None
    if chunked and len(text) > chunk_window and (max_fallback is None or len(text) <= max_fallback):
        try:
            value = _Parser(text, window=chunk_window).document()
        except RecursionError:
            raise RemoteProtocolError("invalid JSON body: nested too deeply") from None
        return _finish(value, text)
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        if max_fallback is not None and len(text) > max_fallback:
            raise RemoteProtocolError(
                f"invalid JSON body: not standard JSON, and fastjson's extensions are read here only in "
                f"bodies of at most {max_fallback} characters (this one has {len(text)})"
            ) from None
        try:
            value = _Parser(text).document()
        except RecursionError:  # only reachable when the caller is already deep in its own stack
            raise RemoteProtocolError("invalid JSON body: nested too deeply") from None
    return _finish(value, text)


def _finish(value: Any, text: str) -> Any:
    """``value`` parsed from ``text``, with Java's strings and fastjson's references."""
    try:
        if has_surrogate_escape(text):
            value = _java_strings(value)
        if "$ref" in text:
            value = _resolve_refs(value, value, ())
    except RecursionError:  # the C parser nests deeper than Python code can walk
        raise RemoteProtocolError("invalid JSON body: nested too deeply") from None
    return value


def _java_strings(value: Any) -> Any:
    """``value`` with every string (keys too) as a Java peer would encode it: lone surrogates
    become ``?`` (see :func:`rocketq.protocol._text.java_utf8_text`)."""
    kind = type(value)
    if kind is str:
        return java_utf8_text(value)
    if kind is dict:
        return {_java_strings(k): _java_strings(v) for k, v in value.items()}
    if kind is list:
        return [_java_strings(v) for v in value]
    if kind is FrozenObject:
        return FrozenObject((_java_strings(k), _java_strings(v)) for k, v in tuple.__iter__(value))
    if kind is tuple:
        return tuple(_java_strings(v) for v in value)
    return value


_REF_STEP = re.compile(r"\.([^.\[]+)|\[([0-9]{1,9})\]")


def _ref_target(root: Any, ref: str, here: tuple[Any, ...]) -> Any:
    """The value a fastjson ``$ref`` path names (``$``, ``$.name``, ``$.list[2].name`` ...)."""
    if not ref.startswith("$"):
        raise RemoteProtocolError(f"JSON body: unsupported or circular fastjson reference {ref!r}")
    steps: list[Any] = []
    pos = 1
    while pos < len(ref):
        m = _REF_STEP.match(ref, pos)
        if m is None:
            raise RemoteProtocolError(f"JSON body: cannot follow fastjson reference {ref!r}")
        steps.append(m.group(1) if m.group(1) is not None else int(m.group(2)))
        pos = m.end()
    if tuple(steps) == here[: len(steps)]:
        raise RemoteProtocolError(f"JSON body: circular fastjson reference {ref!r}")
    target = root
    for step in steps:
        key = step
        if isinstance(target, dict) and step not in target:
            # a non-string key (``{0:…}``) appears in the path as its text
            key = next((k for k in target if not isinstance(k, str) and str(k) == step), step)
        try:
            target = target[key]
        except (KeyError, IndexError, TypeError):
            raise RemoteProtocolError(f"JSON body: fastjson reference {ref!r} names nothing") from None
    if isinstance(target, dict) and len(target) == 1 and "$ref" in target:
        raise RemoteProtocolError(f"JSON body: fastjson reference {ref!r} names another reference")
    return target


def _resolve_refs(node: Any, root: Any, here: tuple[Any, ...]) -> Any:
    if isinstance(node, dict):
        if len(node) == 1 and isinstance(node.get("$ref"), str):
            return _ref_target(root, node["$ref"], here)
        for key, child in node.items():
            if isinstance(child, (dict, list)):
                node[key] = _resolve_refs(child, root, (*here, key if isinstance(key, str) else str(key)))
    elif isinstance(node, list):
        for i, child in enumerate(node):
            if isinstance(child, (dict, list)):
                node[i] = _resolve_refs(child, root, (*here, i))
    return node


def _loads_fallback(text: str) -> Any:
    """The pure-Python parser alone (for tests comparing it with the standard library)."""
    return _Parser(text).document()


class _Parser:
    """Recursive-descent parser for fastjson's dialect, delegating standard subtrees to C."""

    __slots__ = ("depth", "failed_at", "failures", "text", "window")

    def __init__(self, text: str, *, window: int | None = None) -> None:
        self.text = text
        self.window = window  # chunked: the longest container the C scanner gets at once
        self.depth = 0
        self.failed_at = -1  # where the C scanner last gave up, and how often it gave up there
        self.failures = 0

    def scan_window(self, pos: int, window: int) -> tuple[Any, int] | None:
        """The container at ``pos`` through the C scanner if it closes within ``window``
        characters (tried in growing windows), else ``None``: then it is parsed here, member by
        member. A container cut short by the window cannot scan, so a result is always the whole
        container."""
        text = self.text
        size = min(_FIRST_WINDOW, window)
        while True:
            end = pos + size
            try:
                value, stop = _scan_once(text[pos:end], 0)
            except (StopIteration, ValueError, RecursionError):
                if end >= len(text) or size >= window:
                    return None
                size = min(size * 4, window)
                continue
            return value, pos + stop

    def scan(self, pos: int) -> tuple[Any, int] | None:
        """The container at ``pos`` through the C scanner, or ``None`` if it is not standard JSON.

        Every container enclosing a non-standard token fails in C at that token, each after
        scanning up to it; once two of them have, the containers that start before it are parsed
        here instead, so a document nested deep around one such token costs a bounded number of
        scans, not one per level.
        """
        if self.window is not None:
            return self.scan_window(pos, self.window)
        if pos < self.failed_at and self.failures >= 2:
            return None
        try:
            return _scan_once(self.text, pos)
        except StopIteration as exc:
            at = exc.value if isinstance(exc.value, int) else pos
        except ValueError as exc:
            at = getattr(exc, "pos", pos)
        except RecursionError:
            at = len(self.text)
        if at == self.failed_at:
            self.failures += 1
        else:
            self.failed_at = at
            self.failures = 1
        return None

    def fail(self, pos: int, what: str) -> RemoteProtocolError:
        text = self.text
        excerpt = text[max(0, pos - 20) : pos + 20]
        found = repr(text[pos]) if pos < len(text) else "end of text"
        return RemoteProtocolError(
            f"invalid JSON body at offset {pos}: {what}, found {found} near {excerpt!r}"
        )

    def document(self) -> Any:
        text = self.text
        pos = _WS.match(text, 0).end()  # type: ignore[union-attr]
        if pos == len(text):
            raise self.fail(pos, "expected a value")
        value, pos = self.value(pos)
        pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
        if pos != len(text):
            raise self.fail(pos, "expected end of text")
        return value

    def value(self, pos: int) -> tuple[Any, int]:
        """Parse the value starting exactly at ``pos`` (no leading whitespace)."""
        text = self.text
        ch = text[pos : pos + 1]
        if ch == '"':
            try:
                return _scanstring(text, pos + 1, False)
            except ValueError:
                return self.string(pos)  # an escape only fastjson knows (\x41, \v, \')
        if ch == "{":
            m = _OBJ_OPEN.match(text, pos)
            assert m is not None  # the pattern matches any "{"
            # Give the object to the C scanner unless its first key already shows fastjson syntax.
            if m.group(1) is None and text.startswith('"', m.end()):
                scanned = self.scan(pos)
                if scanned is not None:
                    return scanned
            return self.object(m)
        if ch == "[":
            scanned = self.scan(pos)
            if scanned is not None:
                return scanned
            return self.array(pos)
        if ch == "'":
            return self.string(pos)
        m = _NUMBER.match(text, pos)
        if m is not None:
            return self.number(m)
        m = _IDENT.match(text, pos)
        if m is not None and m.group() in _LITERALS:
            return _LITERALS[m.group()], m.end()
        raise self.fail(pos, "expected a value")

    def number(self, m: re.Match[str]) -> tuple[Any, int]:
        token = m.group()
        suffix = m.group(1)
        if suffix:
            token = token[:-1]
        if suffix in ("F", "D") or "." in token or "e" in token or "E" in token:
            return float(token), m.end()  # float() takes any length (huge values become inf)
        if len(token) > MAX_INTEGER_DIGITS:
            raise self.fail(m.start(), f"an integer of more than {MAX_INTEGER_DIGITS} digits")
        return int(token), m.end()

    def nest(self, pos: int) -> None:
        """One level deeper, for a container opening at ``pos``; refused past ``MAX_DEPTH``."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail(pos, f"nesting deeper than {MAX_DEPTH}")

    def object(self, opened: re.Match[str]) -> tuple[dict[Any, Any], int]:
        """Parse an object whose ``{`` (and following blanks, or ``}``) ``opened`` matched."""
        text = self.text
        self.nest(opened.start())
        result: dict[Any, Any] = {}
        pos = opened.end()
        if opened.group(1) is None:
            colon = _COLON.match
            after = _OBJ_NEXT.match
            while True:
                key, pos = self.key(pos)
                m = colon(text, pos)
                if m is None:
                    raise self.fail(pos, "expected ':' after an object key")
                result[key], pos = self.value(m.end())
                pos, closed = self.after_item(after, pos, "',' or '}' in an object")
                if closed:
                    break
        self.depth -= 1
        return result, pos

    def after_item(
        self, after: Callable[[str, int], re.Match[str] | None], pos: int, expected: str
    ) -> tuple[int, bool]:
        """Past the comma or the closing bracket that ``after`` matches at ``pos``, and whether
        the container closed (a closing bracket, possibly after a trailing comma: fastjson allows one)."""
        m = after(self.text, pos)
        if m is None:
            raise self.fail(pos, f"expected {expected}")
        return m.end(), m.lastindex is not None

    def key(self, pos: int) -> tuple[Any, int]:
        text = self.text
        ch = text[pos : pos + 1]
        if ch in ('"', "'"):
            return self.value(pos)
        if ch in ("{", "["):
            value, end = self.value(pos)
            return freeze(value), end
        m = _NUMBER.match(text, pos)
        if m is not None:
            return self.number(m)
        m = _IDENT.match(text, pos)
        if m is not None:
            word = m.group()
            if word in ("true", "false", "null"):
                return _LITERALS[word], m.end()
            return word, m.end()
        raise self.fail(pos, "expected an object key")

    def array(self, pos: int) -> tuple[list[Any], int]:
        text = self.text
        self.nest(pos)
        result: list[Any] = []
        m = _ARR_OPEN.match(text, pos)
        assert m is not None  # the pattern matches any "["
        pos = m.end()
        if m.group(1) is None:
            after = _ARR_NEXT.match
            append = result.append
            while True:
                item, pos = self.value(pos)
                append(item)
                pos, closed = self.after_item(after, pos, "',' or ']' in an array")
                if closed:
                    break
        self.depth -= 1
        return result, pos

    def string(self, pos: int) -> tuple[str, int]:
        text = self.text
        quote = text[pos]
        plain = _DQ_PLAIN if quote == '"' else _SQ_PLAIN
        parts: list[str] = []
        pos += 1
        while True:
            m = plain.match(text, pos)
            assert m is not None  # the pattern matches the empty string
            parts.append(m.group())
            pos = m.end()
            if pos >= len(text):
                raise self.fail(pos, "unterminated string")
            if text[pos] == quote:
                return "".join(parts), pos + 1
            # a backslash escape
            esc = text[pos + 1 : pos + 2]
            if esc in _SIMPLE_ESCAPES:
                parts.append(_SIMPLE_ESCAPES[esc])
                pos += 2
            elif esc in _HEX_ESCAPE_WIDTHS:
                width = _HEX_ESCAPE_WIDTHS[esc]
                digits = text[pos + 2 : pos + 2 + width]
                if len(digits) != width or not _HEX.issuperset(digits):
                    raise self.fail(pos, f"bad \\{esc} escape")
                parts.append(chr(int(digits, 16)))
                pos += 2 + width
            else:
                raise self.fail(pos, "bad escape in a string")


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


def _hex_escape(code: int) -> str:
    return f"\\u{code:04X}"


# fastjson's default escaping (SerializeWriter.writeStringWithDoubleQuote without BrowserCompatible).
_ESCAPE_DEFAULT: dict[int, str] = {c: _hex_escape(c) for c in range(0x20)}
_ESCAPE_DEFAULT.update({0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r"})
_ESCAPE_DEFAULT.update({ord('"'): '\\"', ord("\\"): "\\\\", 0x2028: "\\u2028", 0x2029: "\\u2029"})
_ESCAPE_DEFAULT.update({c: _hex_escape(c) for c in range(0x7F, 0xA0)})
_NEEDS_ESCAPE_DEFAULT = re.compile('[\\x00-\\x1f"\\\\\\x7f-\\x9f\\u2028\\u2029]')

# BrowserCompatible: also '/' and everything from DEL upwards, as UTF-16 code units.
_ESCAPE_BROWSER: dict[int, str] = {c: _hex_escape(c) for c in range(0x20)}
_ESCAPE_BROWSER.update({0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r"})
_ESCAPE_BROWSER.update({ord('"'): '\\"', ord("\\"): "\\\\", ord("/"): "\\/"})
_NEEDS_ESCAPE_BROWSER = re.compile('[\\x00-\\x1f"/\\\\\\x7f-\\U0010ffff]')


def _quote(text: str) -> str:
    if _NEEDS_ESCAPE_DEFAULT.search(text) is None:
        return f'"{text}"'
    return f'"{text.translate(_ESCAPE_DEFAULT)}"'


def _browser_escape(m: re.Match[str]) -> str:
    ch = m.group()
    code = ord(ch)
    if code < 0x7F:
        return _ESCAPE_BROWSER[code]
    if code < 0x10000:
        return _hex_escape(code)
    code -= 0x10000
    return _hex_escape(0xD800 + (code >> 10)) + _hex_escape(0xDC00 + (code & 0x3FF))


def _quote_browser(text: str) -> str:
    return '"' + _NEEDS_ESCAPE_BROWSER.sub(_browser_escape, text) + '"'


def java_double_str(value: float) -> str:
    """``value`` as fastjson prints a Java ``double`` (shortest digits, Java's layout); NaN/inf → ``null``.

    Digits are Python's shortest round-trip repr, which is what fastjson's Ryu printer gives for
    every normal double (subnormals below 2.2E-308 may differ in the last digit).

    >>> [java_double_str(v) for v in (0.0, 0.2, 12.75, 1e7, 0.0001, -1.5e-10, float("nan"))]
    ['0.0', '0.2', '12.75', '1.0E7', '1.0E-4', '-1.5E-10', 'null']
    """
    if math.isnan(value) or math.isinf(value):
        return "null"
    text = repr(value)
    magnitude = abs(value)
    if magnitude == 0.0 or 1e-3 <= magnitude < 1e7:
        return text  # Python's repr and Java agree on plain decimals in this range
    sign, digits, exponent = Decimal(text).as_tuple()
    assert isinstance(exponent, int)
    while len(digits) > 1 and digits[-1] == 0:
        digits = digits[:-1]
        exponent += 1
    exp10 = len(digits) - 1 + exponent
    mantissa = "".join(map(str, digits))
    frac = mantissa[1:] or "0"
    return f"{'-' if sign else ''}{mantissa[0]}.{frac}E{exp10}"


_QUEUE_FIELDS = frozenset({"brokerName", "queueId", "topic"})


def _sort_key(key: Any) -> Any:
    if isinstance(key, str):  # Java compares strings by UTF-16 code units
        return key.encode("utf-16-be", "surrogatepass")
    if isinstance(key, FrozenObject):
        fields = key.to_dict()
        if fields.keys() == _QUEUE_FIELDS:  # MessageQueue.compareTo: topic, broker name, queue id
            return (_sort_key(fields["topic"]), _sort_key(fields["brokerName"]), fields["queueId"])
        raise TypeError("not Comparable")  # TreeMap refuses it; fastjson keeps the map's order
    return key


def _sorted_items(mapping: Mapping[Any, Any]) -> Iterable[tuple[Any, Any]]:
    """Entries in ``TreeMap`` order (MapSortField); the original order when keys do not compare."""
    try:
        return sorted(mapping.items(), key=lambda kv: _sort_key(kv[0]))
    except TypeError:
        return mapping.items()


class _Writer:
    __slots__ = ("browser", "out")

    def __init__(self, browser: bool) -> None:
        self.out: list[str] = []
        self.browser = browser

    def value(self, v: Any) -> None:
        out = self.out
        t = type(v)
        if t is str:
            out.append(_quote_browser(v) if self.browser else _quote(v))
        elif t is int:
            out.append(repr(v))
        elif v is None:
            out.append("null")
        elif t is bool:
            out.append("true" if v else "false")
        elif t is float:
            out.append(java_double_str(v))
        elif isinstance(v, enum.Enum):  # fastjson writes an enum constant by name
            self.value(v.name)
        elif isinstance(v, FrozenObject):
            self.mapping(FrozenObject.to_dict(v))
        elif isinstance(v, Mapping):
            self.mapping(v)
        elif isinstance(v, (list, tuple, set, frozenset)):
            self.array(v)
        elif isinstance(v, str):
            self.value(str(v))
        elif isinstance(v, int):
            out.append(repr(int(v)))
        elif isinstance(v, float):
            out.append(java_double_str(float(v)))
        else:
            raise TypeError(f"cannot write {type(v).__name__} as fastjson JSON")

    def array(self, items: Iterable[Any]) -> None:
        out = self.out
        out.append("[")
        first = True
        for item in items:
            if not first:
                out.append(",")
            first = False
            self.value(item)
        out.append("]")

    def mapping(self, mapping: Mapping[Any, Any]) -> None:
        self.out.append("{")
        self.entries(mapping)
        self.out.append("}")

    def entries(self, mapping: Mapping[Any, Any]) -> None:
        """A map's ``key:value`` pairs between commas (sorted for the browser form)."""
        out = self.out
        first = True
        for key, val in _sorted_items(mapping) if self.browser else mapping.items():
            if val is None:
                continue  # fastjson leaves out null map values and null bean fields
            if not first:
                out.append(",")
            first = False
            self.key(key)
            out.append(":")
            self.value(val)

    def key(self, key: Any) -> None:
        if isinstance(key, str):
            self.out.append(_quote_browser(key) if self.browser else _quote(key))
        elif self.browser:
            # WriteNonStringKeyAsString: the key's own JSON text, as a string
            self.out.append(_quote_browser(_dumps(key, False, False)))
        else:
            self.value(key)


class _PrettyWriter(_Writer):
    """fastjson's ``PrettyFormat`` (``JSON.toJSONString(obj, true)``, what the broker's config files hold).

    Tabs indent. A bean puts each property on its own line; a map breaks the line only before
    string keys (``{0:12,1:3\n\t}`` for integer keys); a ``List`` puts each element on its own
    line, a ``Set`` stays on one line.
    """

    __slots__ = ("indent",)

    def __init__(self, browser: bool) -> None:
        super().__init__(browser)
        self.indent = 0

    def newline(self) -> None:
        self.out.append("\n" + "\t" * self.indent)

    def value(self, v: Any) -> None:
        if isinstance(v, Bean):
            self.bean(v.items())
        elif isinstance(v, FrozenObject):  # an object key is a bean too (MessageQueue)
            self.bean(tuple.__iter__(v))
        elif type(v) is list:
            self.list(v)
        else:
            _Writer.value(self, v)

    def bean(self, props: Iterable[tuple[Any, Any]]) -> None:
        out = self.out
        out.append("{")
        self.indent += 1
        self.newline()
        first = True
        for name, val in props:
            if val is None:
                continue
            if not first:
                out.append(",")
                self.newline()
            first = False
            out.append(_quote_browser(name) if self.browser else _quote(name))
            out.append(":")
            self.value(val)
        self.indent -= 1
        self.newline()
        out.append("}")

    def list(self, items: list[Any]) -> None:
        out = self.out
        if not items:
            out.append("[]")
            return
        out.append("[")
        self.indent += 1
        for i, item in enumerate(items):
            if i:
                out.append(",")
            self.newline()
            self.value(item)
        self.indent -= 1
        self.newline()
        out.append("]")

    def mapping(self, mapping: Mapping[Any, Any]) -> None:
        self.out.append("{")
        self.indent += 1
        self.entries(mapping)
        self.indent -= 1
        if mapping:
            self.newline()
        self.out.append("}")

    def key(self, key: Any) -> None:
        if isinstance(key, str):
            self.newline()  # a map breaks the line before a string key only
        _Writer.key(self, key)


def _dumps(value: Any, browser: bool, pretty: bool = False) -> str:
    writer = _PrettyWriter(browser) if pretty else _Writer(browser)
    writer.value(value)
    return "".join(writer.out)


def dumps(value: Any, *, browser_compatible: bool = False, pretty: bool = False) -> str:
    """Write ``value`` as fastjson would write the Java value it stands for (see the module doc).

    ``pretty=True`` is fastjson's ``PrettyFormat``; it needs to know beans from maps and lists from
    sets, so mark beans with :class:`Bean`, lists with ``list`` and sets with any other sequence.
    """
    return _dumps(value, browser_compatible, pretty)


def dumps_bytes(value: Any, *, browser_compatible: bool = False, pretty: bool = False) -> bytes:
    """:func:`dumps` encoded as UTF-8, as ``RemotingSerializable.encode`` sends it.

    A lone surrogate (only possible in a ``str`` built by hand) becomes ``?``, as in Java's
    ``String.getBytes(UTF_8)``.
    """
    return _dumps(value, browser_compatible, pretty).encode("utf-8", "replace")
