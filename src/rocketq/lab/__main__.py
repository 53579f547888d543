"""``python -m rocketq.lab worker ...``: the lab's consumer process (see :mod:`rocketq.lab.worker`)."""

from __future__ import annotations

import sys

from rocketq.lab.worker import main

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] != "worker":
        print("usage: python -m rocketq.lab worker --namesrv ADDR --group G --topic T [...]", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[2:]))
