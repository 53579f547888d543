"""What RocketMQ 4.9's ACL costs the broker: the check alone, and sends end to end.

Figures, all measured in this run on the same machine:

* **check**: ``decide()`` (find the account, HMAC-SHA1 over the sorted ext fields and the body,
  the permissions) for one SEND_MESSAGE_V2 against the broker's own header parse of the same
  request (``SendMessageRequestHeaderV2.from_ext_fields``), per body size; the ratio is how many
  header parses one check costs;
* **sends/s**: 1 KiB sends pipelined 32 deep from one blocking client to a ``rocketq server``
  subprocess without ACL and to one with ``--acl`` (signed sends, signed before the clock
  starts: the client's signing is the ``sign us`` column), in rounds that alternate which server
  goes first; the ratio of each round is ACL over no ACL, and the median round is reported.

Run: ``python bench/bench_acl.py`` (``--sends``, ``--rounds``).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rocketq.broker.acl import decide, parse_acl
from rocketq.embedded import spawn_server
from rocketq.protocol import RemotingCommand, ResponseCode, calls
from rocketq.protocol.acl import Credentials, sign
from rocketq.protocol.headers import SendMessageRequestHeaderV2
from rocketq.remoting.blocking import BlockingRemotingClient

CREDS = Credentials(access_key="benchproducer", secret_key="bench-secret-key")
ACL_YAML = """\
globalWhiteRemoteAddresses: []
accounts:
  - accessKey: benchproducer
    secretKey: bench-secret-key
    admin: true
    defaultTopicPerm: PUB
    topicPerms: [BenchAcl=PUB, Other=DENY]
"""


def _send(body: bytes) -> RemotingCommand:
    header = SendMessageRequestHeaderV2(
        producer_group="BenchPG",
        topic="BenchAcl",
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=0,
        sys_flag=0,
        born_timestamp=int(time.time() * 1000),
        flag=0,
        properties="UNIQ_KEY\u00017F0000010000000000000000\u0002WAIT\u0001true\u0002",
    )
    return calls.send_message_request(header, body)


def per_call(fn: Callable[[], object], n: int, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - start) / n)
    return best


def micro() -> None:
    import yaml

    rules = parse_acl(yaml.safe_load(ACL_YAML))
    print(f"{'body':>8} {'parse us':>9} {'check us':>9} {'check/parse':>12} {'sign us':>8}")
    for size in (100, 4096, 1 << 20):
        req = sign(_send(b"x" * size), CREDS)
        n = 20_000 if size < 65536 else 200
        parse = per_call(lambda req=req: SendMessageRequestHeaderV2.from_ext_fields(req.ext_fields), n)
        check = per_call(lambda req=req: decide(rules, req, "127.0.0.1"), n)
        signing = per_call(lambda size=size: sign(_send(b"x" * size), CREDS), n)
        us = (parse * 1e6, check * 1e6, check / parse, signing * 1e6)
        print(f"{size:>8} {us[0]:>9.2f} {us[1]:>9.2f} {us[2]:>12.1f} {us[3]:>8.2f}")


def pipelined(client: BlockingRemotingClient, sends: int, signed: bool, window: int = 32) -> float:
    body = b"x" * 1024
    # built (and signed) before the clock starts: the figure is the broker's, not the client's
    requests = [sign(_send(body), CREDS) if signed else _send(body) for _ in range(sends)]
    start = time.perf_counter()
    tickets = []
    for req in requests:
        tickets.append(client.send_request(req))
        if len(tickets) >= window:
            assert client.receive(tickets.pop(0)).code == ResponseCode.SUCCESS
    for t in tickets:
        assert client.receive(t).code == ResponseCode.SUCCESS
    return sends / (time.perf_counter() - start)


def end_to_end(sends: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        acl = Path(tmp) / "plain_acl.yml"
        acl.write_text(ACL_YAML)
        with (
            spawn_server(Path(tmp) / "plain") as plain,
            spawn_server(Path(tmp) / "acl", extra_args=("--acl", str(acl))) as secured,
            BlockingRemotingClient(plain.broker_addr) as c_plain,
            BlockingRemotingClient(secured.broker_addr) as c_acl,
        ):
            for client, signed in ((c_plain, False), (c_acl, True)):
                create = calls.create_topic("BenchAcl", 4, 4).request
                assert client.invoke(sign(create, CREDS) if signed else create).code == ResponseCode.SUCCESS
                pipelined(client, 500, signed)  # warm up
            ratios, plains, acls = [], [], []
            for i in range(rounds):  # alternate which goes first: the machine's load drifts
                if i % 2:
                    acls.append(pipelined(c_acl, sends, True))
                    plains.append(pipelined(c_plain, sends, False))
                else:
                    plains.append(pipelined(c_plain, sends, False))
                    acls.append(pipelined(c_acl, sends, True))
                ratios.append(acls[-1] / plains[-1])
            print(
                f"sends/s without ACL {statistics.median(plains):,.0f}, "
                f"with ACL {statistics.median(acls):,.0f}; "
                f"ACL/plain per round: median {statistics.median(ratios):.2f} "
                f"(min {min(ratios):.2f}, max {max(ratios):.2f}, {rounds} rounds)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sends", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    micro()
    end_to_end(args.sends, args.rounds)


if __name__ == "__main__":
    main()
