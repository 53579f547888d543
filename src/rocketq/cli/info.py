"""``rocketq info``: this install's version and build, compiled (mypyc) or pure Python.

Prints the version, the interpreter, whether the hot path runs compiled and why not when it does
not, and each module the build compiled with what it really loaded from (``compiled``: its
extension module; ``pure``: its ``.py``). ``--json`` prints the same as one JSON object. See
docs/compiled.md.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from typing import Any

from rocketq import __version__, _native

__all__ = ["info", "register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "info",
        help="this install's version and build: the compiled (mypyc) hot path or pure Python",
        description=(
            "Print rocketq's version, the Python running it, and whether the hot path (codec, "
            "store append, reads and index, the broker's send handler) runs compiled with mypyc "
            "or as pure Python, with each compiled module and what it loaded from."
        ),
    )
    parser.add_argument("--json", action="store_true", help="one JSON object instead of text")
    parser.set_defaults(handler=_run)


def info() -> dict[str, Any]:
    """What ``rocketq info --json`` prints."""
    status = _native.status()
    return {
        "version": __version__,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": sys.platform + "-" + platform.machine(),
        "compiled": status.compiled,
        "build": status.summary(),
        "modules": {name: _native.loaded_from(name) for name in status.modules},
    }


def _run(args: argparse.Namespace) -> int:
    data = info()
    if args.json:
        print(json.dumps(data, indent=1))
        return 0
    print(f"rocketq {data['version']}")
    print(f"python   {data['python']} ({data['platform']})")
    print(f"build    {data['build']}")
    for name, origin in data["modules"].items():
        print(f"  {origin:<8} {name}")
    return 0
