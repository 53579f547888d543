"""What signing costs rocketq's own clients: a ``Producer``'s blocking sends with and without keys.

Three ways, each measured in every round (the order rotates from round to round), on the same
machine in the same run:

* **plain**: an unsigned producer against a ``rocketq server`` without ACL (the baseline);
* **signed**: a producer with keys against the same server (the broker ignores the fields when
  ACL is off, so this is the client's cost: the HMAC-SHA1 over fields and body, and ~60 bytes
  more per request);
* **acl**: a producer with keys against a ``rocketq server --acl`` (client and broker costs).

Each figure is synchronous 1 KiB sends per second from one thread; each round's ratio is against
that round's plain figure, and the median round is reported (the machine is shared and noisy).

Run: ``python bench/bench_acl_client.py`` (``--sends``, ``--rounds``, ``--size``).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from rocketq import Admin, Message, Producer
from rocketq.embedded import spawn_server
from rocketq.protocol.acl import Credentials

CREDS = Credentials(access_key="benchclient", secret_key="bench-client-secret")
ACL_YAML = f"""\
globalWhiteRemoteAddresses: []
accounts:
  - accessKey: {CREDS.access_key}
    secretKey: {CREDS.secret_key}
    admin: true
"""
TOPIC = "BenchAclClient"


def _keys(signed: bool) -> tuple[str | None, str | None]:
    return (CREDS.access_key, CREDS.secret_key) if signed else (None, None)


def rate(namesrv: str, signed: bool, sends: int, body: bytes) -> float:
    ak, sk = _keys(signed)
    with Producer(
        "BenchAclClientPG", namesrv, client_ip="127.0.0.1", access_key=ak, secret_key=sk
    ) as producer:
        for _ in range(50):  # routes, connections, the thread's socket
            producer.send(Message(TOPIC, body))
        began = time.perf_counter()
        for _ in range(sends):
            producer.send(Message(TOPIC, body))
        return sends / (time.perf_counter() - began)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sends", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--size", type=int, default=1024)
    args = parser.parse_args()
    body = b"x" * args.size
    with tempfile.TemporaryDirectory() as tmp:
        acl = Path(tmp) / "plain_acl.yml"
        acl.write_text(ACL_YAML)
        with (
            spawn_server(Path(tmp) / "plain") as plain,
            spawn_server(Path(tmp) / "acl", extra_args=("--acl", str(acl))) as secured,
        ):
            for server, signed in ((plain, False), (secured, True)):
                ak, sk = _keys(signed)
                with Admin(server.namesrv_addr, access_key=ak, secret_key=sk) as admin:
                    admin.create_topic(TOPIC, queues=4)
            ways = {
                "plain": (plain.namesrv_addr, False),
                "signed": (plain.namesrv_addr, True),
                "acl": (secured.namesrv_addr, True),
            }
            ratios: dict[str, list[float]] = {"signed": [], "acl": []}
            figures: dict[str, list[float]] = {name: [] for name in ways}
            names = list(ways)
            for r in range(args.rounds):
                order = names[r % 3 :] + names[: r % 3]
                got = {name: rate(*ways[name], args.sends, body) for name in order}
                for name, value in got.items():
                    figures[name].append(value)
                for name, values in ratios.items():
                    values.append(got[name] / got["plain"])
                print(
                    f"round {r + 1} ({' '.join(order)}): "
                    + ", ".join(f"{n} {v:,.0f}/s" for n, v in got.items())
                )
    print(f"{args.sends} sync sends of {args.size} B per way per round, {args.rounds} rounds:")
    for name in ways:
        print(f"  {name:6} median {statistics.median(figures[name]):,.0f} sends/s")
    for name, values in ratios.items():
        print(
            f"  {name} / plain: median {statistics.median(values):.2f} "
            f"(rounds {min(values):.2f}-{max(values):.2f})"
        )


if __name__ == "__main__":
    main()
