"""A griffe extension for the API reference: rocketq's docstrings are written in reST (Sphinx's
roles, ``literals``, ``::`` literal blocks, ``>>>`` doctest blocks); mkdocstrings renders
Markdown. This turns those reST forms into their Markdown equivalents before the docstrings are
parsed (``mkdocs.yml``: the python handler's ``extensions``), so a doctest's ``x[0][1]`` is code,
not a broken reference link, and ``:class:`~rocketq.client.Producer``` reads ``Producer``.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

# :class:`~rocketq.client.Producer`, :meth:`text <target>`, :py:func:`x` ...
_ROLE = re.compile(r":(?:py:)?[a-z]+:`(~?)([^`<]*?)(?:\s*<([^>]+)>)?`")
_LITERAL = re.compile(r"``([^`]+?)``")


def _role(m: re.Match[str]) -> str:
    tilde, text, target = m.group(1), m.group(2).strip(), m.group(3)
    if target:  # :ref:`words <target>`: the words
        return text
    return f"`{text.rsplit('.', 1)[-1] if tilde else text}`"


def _inline(line: str) -> str:
    return _LITERAL.sub(r"`\1`", _ROLE.sub(_role, line))


def rst_to_markdown(text: str) -> str:
    """The Markdown of one reST docstring (already dedented, as griffe keeps it)."""
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith(">>>"):  # a doctest block: up to the next blank line
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i])
                i += 1
            out += ["```pycon", *block, "```"]
            continue
        if line.rstrip().endswith("::") and not line.lstrip().startswith(">>>"):
            head = line.rstrip()[:-2].rstrip()
            # "Example::" -> "Example:"; a line of only "::" disappears
            out.append(_inline(head + ":") if head else "")
            i += 1
            # the indented block that follows, fenced (so it stays code inside lists too)
            while i < len(lines) and not lines[i].strip():
                i += 1
            block = []
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith((" ", "\t"))):
                block.append(lines[i])
                i += 1
            while block and not block[-1].strip():
                block.pop()
            if block:
                indent = min(len(b) - len(b.lstrip()) for b in block if b.strip())
                out += ["", "```python", *(b[indent:] for b in block), "```", ""]
            continue
        out.append(_inline(line))
        i += 1
    return "\n".join(out)


class RstToMarkdown(griffe.Extension):
    """Rewrite every docstring from reST to Markdown as griffe loads it."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rst_to_markdown(obj.docstring.value)
