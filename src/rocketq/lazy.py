"""Names of a package that load their module on first use, written once.

``rocketq``, ``rocketq.client`` and ``rocketq.dashboard`` keep ``import`` light: a program that
only sends never loads the servers, the Spark source's workers load the client's config without
the consumers, ``rocketq --help`` loads no web framework. Each maps its public names to the
modules that define them and takes :func:`lazy_names`'s pair as its module ``__getattr__`` and
``__dir__`` (PEP 562)::

    __getattr__, __dir__ = lazy_names(__name__, globals(), {"Producer": "rocketq.client.producer.facade"})

A value, once loaded, is stored in the package's globals, so later look-ups do not come back here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str,
    namespace: MutableMapping[str, Any],
    modules: Mapping[str, str],
    aliases: Mapping[str, str] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` whose globals are ``namespace``: ``modules`` maps
    each lazy name to its module; ``aliases`` maps another name to one of those (an old name).

    >>> ns: dict[str, Any] = {}
    >>> getattr_, dir_ = lazy_names("pkg", ns, {"sqrt": "math"}, {"root": "sqrt"})
    >>> getattr_("root")(16.0), "root" in ns, dir_()
    (4.0, True, ['root', 'sqrt'])
    >>> getattr_("nope")
    Traceback (most recent call last):
    AttributeError: module 'pkg' has no attribute 'nope'
    """
    aliases = dict(aliases or {})

    def __getattr__(name: str) -> Any:
        target = aliases.get(name, name)
        module = modules.get(target)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), target)
        namespace[name] = value  # later look-ups find it without this function
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(modules) | set(aliases))

    return __getattr__, __dir__
