"""Text rules shared by the decoders: Java's integer syntax and Java's handling of lone surrogates.

Two classes of hostile input reach every decoder that reads text, and both are answered here once:

* **Integers as Java reads them.** ``Integer.parseInt`` / ``Long.parseLong`` accept an optional
  sign and ASCII digits, any number of leading zeros, and nothing else (no ``"²"``, no ``"--5"``,
  no blanks). Python's ``int()`` accepts more, and refuses strings of more than 4,300 digits with
  a ``ValueError``; :func:`parse_java_integer` checks the syntax first and counts the significant
  digits before converting, so a hostile 100,000-digit field costs a scan, not a conversion.
* **Lone surrogates.** A JSON ``\\ud800`` escape gives a Python ``str`` that cannot be encoded as
  UTF-8. A Java peer holds such a string (Java strings are UTF-16) and writes ``?`` in its place
  when it encodes it (``String.getBytes(UTF_8)``); :func:`java_utf8_text` makes that substitution
  when the text is decoded, so everything downstream (topics, properties, config files) sees text
  that encodes, exactly as it would reach the wire from Java.
"""

from __future__ import annotations

import re
import reprlib
from typing import Final

__all__ = ["excerpt", "has_surrogate_escape", "java_utf8_text", "parse_java_integer"]

_JAVA_INTEGER: Final = re.compile(r"[+-]?[0-9]+")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")

# repr of a hostile value, bounded in time and depth (a plain repr walks all of it, and raises
# RecursionError on deep nesting); long strings are cut by excerpt itself, to tell their length.
_SHOW = reprlib.Repr()
_SHOW.maxlevel = 3
_SHOW.maxdict = _SHOW.maxlist = _SHOW.maxtuple = _SHOW.maxset = 4
_SHOW.maxlong = _SHOW.maxother = 40
_SHOW.maxstring = 1 << 30

#: Significant digits of the longest Java ``long`` (9,223,372,036,854,775,807).
_MAX_LONG_DIGITS: Final = 19


def parse_java_integer(raw: str, low: int, high: int) -> int | None:
    """``raw`` as Java's ``Long.parseLong`` / ``Integer.parseInt`` reads it, if it lies in
    ``[low, high]`` (a range within Java's ``long``); ``None`` when it is not such an integer.

    >>> parse_java_integer("-0000012", -(2**31), 2**31 - 1), parse_java_integer("²", 0, 9)
    (-12, None)
    >>> parse_java_integer("0" * 5000 + "7", 0, 9)
    7
    """
    if _JAVA_INTEGER.fullmatch(raw) is None:
        return None
    digits = raw.lstrip("+-").lstrip("0")
    if len(digits) > _MAX_LONG_DIGITS:
        return None
    # the digits without their leading zeros: int() refuses a string of over 4,300 characters,
    # however many of them are zeros, and Java reads "000...0012" as 12
    value = 0 if not digits else -int(digits) if raw.startswith("-") else int(digits)
    return value if low <= value <= high else None


def excerpt(value: object, limit: int = 40) -> str:
    """``repr(value)`` cut to about ``limit`` characters, for an error message about hostile input.

    >>> excerpt("9" * 5000, 12)
    "'9999999...(5002 chars)"
    """
    shown = _SHOW.repr(value)
    if len(shown) <= limit:
        return shown
    return f"{shown[: limit - 4]}...({len(shown)} chars)"


def has_surrogate_escape(text: str) -> bool:
    """Whether JSON ``text`` may hold a ``\\uD800``-``\\uDFFF`` escape (a cheap test, two scans)."""
    return "\\ud" in text or "\\uD" in text


def java_utf8_text(text: str) -> str:
    """``text`` with surrogate pairs joined and every lone surrogate replaced by ``?``, as a Java
    peer's UTF-8 encoder writes it; ``text`` itself when it holds no surrogate.

    >>> java_utf8_text("a\\ud800b"), java_utf8_text("\\ud83d\\ude00") == "\\U0001f600"
    ('a?b', True)
    """
    if _SURROGATE.search(text) is None:
        return text
    joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return joined.encode("utf-8", "replace").decode("utf-8")
