"""The consumer line contract's message bodies: how ``RECV`` lines print a body.

``rocketq consume`` and the lab's consumer processes print one ``RECV`` line per message (see
:mod:`rocketq.cli.consume`); the body is its last field, made printable here, so that every
program that prints or reads those lines shows a body the same way.
"""

from __future__ import annotations

__all__ = ["BODY_LIMIT", "body_text", "shorten"]

BODY_LIMIT = 200
"""Characters of a body printed at most; longer bodies keep their head and tail around an ellipsis."""

_ESCAPES = str.maketrans({"\n": "\\n", "\r": "\\r", "\t": "\\t"})


def shorten(text: str, limit: int = BODY_LIMIT) -> str:
    """``text`` if it fits in ``limit`` characters, else its head and tail around ``…``.

    The tail is kept because the sequence number ``rocketq produce`` appends is at the end.

    >>> shorten("abcdefghij", 7)
    'abcd…ij'
    """
    if len(text) <= limit:
        return text
    tail = max((limit - 1) // 3, 1)
    head = limit - 1 - tail
    return f"{text[:head]}…{text[-tail:]}"


def body_text(body: bytes, limit: int = BODY_LIMIT) -> str:
    """A body as one printable line: UTF-8 with replacement, line breaks and tabs escaped, shortened."""
    return shorten(body.decode("utf-8", "replace").translate(_ESCAPES), limit)
