"""What signing costs rocketq's own clients: a ``Producer``'s blocking sends with and without keys.

Three ways, each measured in every round (the order rotates from round to round), on the same
machine in the same run:

* **plain**: an unsigned producer against a ``rocketq server`` without ACL (the baseline);
* **signed**: a producer with keys against the same server (the broker ignores the fields when
  ACL is off, so this is the client's cost: the HMAC-SHA1 over fields and body, and ~60 bytes
  more per request);
* **acl**: a producer with keys against a ``rocketq server --acl`` (client and broker costs).

Each figure is synchronous 1 KiB sends per second from one thread. A round sends ``--sends``
messages each way, one way after the other (the order rotating), with the three producers started
once; each round's ratio is against that round's plain figure, and the median round is reported
(the machine is shared and noisy: many short rounds keep its drift out of the ratios).

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


def chunk(producer: Producer, sends: int, body: bytes) -> float:
    """Seconds ``sends`` synchronous sends take."""
    began = time.perf_counter()
    for _ in range(sends):
        producer.send(Message(TOPIC, body))
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sends", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=60)
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
            producers: dict[str, Producer] = {}
            for name, (namesrv, signed) in ways.items():
                ak, sk = _keys(signed)
                producers[name] = Producer(
                    f"BenchAclClient{name}", namesrv, client_ip="127.0.0.1", access_key=ak, secret_key=sk
                ).start()
                chunk(producers[name], 50, body)  # routes, connections, the thread's socket
            ratios: dict[str, list[float]] = {"signed": [], "acl": []}
            figures: dict[str, list[float]] = {name: [] for name in ways}
            names = list(ways)
            try:
                for r in range(args.rounds):
                    order = names[r % 3 :] + names[: r % 3]
                    got = {name: args.sends / chunk(producers[name], args.sends, body) for name in order}
                    for name, value in got.items():
                        figures[name].append(value)
                    for name, values in ratios.items():
                        values.append(got[name] / got["plain"])
            finally:
                for producer in producers.values():
                    producer.shutdown()
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
