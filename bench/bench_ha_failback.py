"""Failback: a master SIGKILLed (its data kept) and started again; how long until producers write
to it again.

Each round starts a name server, a master (``--role sync-master --flush sync``, or
``async-master``) and its slave as three ``rocketq`` processes on 127.0.0.1, on fixed ports (a
restarted RocketMQ master comes back on its configured ports, and its slave's HA client finds it
there). A producer sends without pause. At a random point the master is killed with SIGKILL;
after a random outage it is started again on the same data and ports. A round reports, from the
moment the restarted master printed its ready line (listening, registered with the name server):

* the first send the master answered at all (any status: the message is stored on it again);
* the first ``SEND_OK`` (under sync-master that needs the slave linked again: until its HA client
  reconnects - every 5 s, RocketMQ's HAClient - a send is answered ``SLAVE_NOT_AVAILABLE``);

and, from the kill, the sends that failed meanwhile. Then a new consumer group reads the topic
from the start, and the round counts the ``SEND_OK`` messages it does not find (the claim: 0).

    python bench/bench_ha_failback.py --rounds 10
    python bench/bench_ha_failback.py --rounds 10 --role async-master

The producer polls the name server every ``--poll`` seconds (0.5; RocketMQ's default is 30 s).
A producer that keeps sending does not wait for that poll: with no writable queue it asks the
name server again at every send (``tryToFindTopicPublishInfo``), so it finds the master as soon
as the master has registered.
"""

from __future__ import annotations

import argparse
import random
import shutil
import socket
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_ha_kill import Proc
from rocketq import ClientConfig, ConsumeFromWhere, LitePullConsumer, Message, Producer, SendStatus
from rocketq.client.config import ProducerConfig


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class FailbackResult:
    seed: int
    role: str
    outage_s: float
    spawn_to_ready_s: float
    first_answer_s: float | None
    first_send_ok_s: float | None
    failed_sends: int
    acked: int
    lost: int


def run_round(seed: int, role: str = "sync-master", poll: float = 0.5) -> FailbackResult:
    """One round (see the module docstring); every process is stopped by pid before it returns."""
    rng = random.Random(seed)
    tmp = Path(tempfile.mkdtemp(prefix="ha-failback-"))
    procs: list[Proc] = []
    topic = f"HaBack{seed % 100000}"
    try:
        ns_proc = Proc("namesrv", "--port", "0")
        procs.append(ns_proc)
        ns = ns_proc.address()
        port, ha_port = _free_port(), _free_port()
        master_args = (
            "broker", "--namesrv", ns, "--broker-port", str(port), "--ha-listen-port", str(ha_port),
            "--data-dir", str(tmp / "master"), "--role", role,
            "--flush", "sync" if role == "sync-master" else "async",
        )  # fmt: skip
        master = Proc(*master_args)
        procs.append(master)
        master.address()
        slave = Proc(
            "broker",
            "--namesrv",
            ns,
            "--broker-port",
            "0",
            "--data-dir",
            str(tmp / "slave"),
            "--role",
            "slave",
        )
        procs.append(slave)
        slave.address()
        config = ClientConfig(
            namesrv=ns, client_ip="127.0.0.1", instance_name=f"hb{seed}", poll_name_server_interval=poll
        )
        events: list[tuple[float, SendStatus | None]] = []  # (when answered, status; None: failed)
        acked: set[bytes] = set()
        stop = threading.Event()
        with Producer(
            "ha_back_producer", client_config=config, config=ProducerConfig(send_msg_timeout=2.0)
        ) as producer:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:  # auto-creates the topic; waits for the slave's link
                try:
                    if producer.send(Message(topic, b"warm-up")).status is SendStatus.SEND_OK:
                        break
                except Exception:
                    pass
                time.sleep(0.2)
            else:
                raise RuntimeError("the master never answered SEND_OK (no slave linked?)")

            def produce() -> None:
                n = 0
                while not stop.is_set():
                    body = f"{seed}-{n}".encode()
                    n += 1
                    try:
                        status: SendStatus | None = producer.send(Message(topic, body)).status
                    except Exception:
                        status = None
                    events.append((time.monotonic(), status))
                    if status is SendStatus.SEND_OK:
                        acked.add(body)
                    elif status is None:
                        time.sleep(0.005)  # no broker to write to: do not spin

            thread = threading.Thread(target=produce, daemon=True)
            thread.start()
            time.sleep(rng.uniform(0.5, 2.0))
            master.kill()
            killed_at = time.monotonic()
            outage = rng.uniform(1.0, 3.0)
            time.sleep(outage)
            spawned_at = time.monotonic()
            back = Proc(*master_args)
            procs.append(back)
            back.address(120)
            ready_at = time.monotonic()
            # until a SEND_OK after the return, 30 s at most
            deadline = ready_at + 30
            while time.monotonic() < deadline:
                if any(t > ready_at and s is SendStatus.SEND_OK for t, s in events[-50:]):
                    break
                time.sleep(0.05)
            time.sleep(0.2)
            stop.set()
            thread.join(30)
        after = [(t, s) for t, s in events if t > ready_at]
        first_answer = next((t - ready_at for t, s in after if s is not None), None)
        first_ok = next((t - ready_at for t, s in after if s is SendStatus.SEND_OK), None)
        failed = sum(1 for t, s in events if t > killed_at and (s is None or s is not SendStatus.SEND_OK))
        verify = LitePullConsumer(
            f"ha_back_verify_{seed}",
            client_config=config,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        )
        verify.subscribe(topic, "*")
        seen: set[bytes] = set()
        with verify:
            deadline, quiet_until = time.monotonic() + 60, time.monotonic() + 10
            while not acked <= seen and time.monotonic() < min(deadline, quiet_until):
                batch = verify.poll(0.2)
                if batch:
                    seen.update(m.body for m in batch)
                    quiet_until = time.monotonic() + 5
        return FailbackResult(
            seed,
            role,
            outage,
            ready_at - spawned_at,
            first_answer,
            first_ok,
            failed,
            len(acked),
            len(acked - seen),
        )
    finally:
        for p in reversed(procs):
            p.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def _median(values: list[float]) -> float:
    values = sorted(values)
    return values[len(values) // 2] if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--role", choices=("sync-master", "async-master"), default="sync-master")
    parser.add_argument("--poll", type=float, default=0.5, help="the producer's name-server poll, seconds")
    parser.add_argument("--seed", type=int, default=None, help="first seed (default: drawn at random)")
    args = parser.parse_args()
    seed0 = args.seed if args.seed is not None else random.randrange(1 << 30)
    print(
        f"role {args.role}, {args.rounds} rounds, producer poll {args.poll:g}s, seeds from {seed0}",
        flush=True,
    )
    answers: list[float] = []
    oks: list[float] = []
    acked = lost = 0
    for i in range(args.rounds):
        r = run_round(seed0 + i, args.role, args.poll)
        acked += r.acked
        lost += r.lost
        if r.first_answer_s is not None:
            answers.append(r.first_answer_s)
        if r.first_send_ok_s is not None:
            oks.append(r.first_send_ok_s)
        print(
            f"seed {r.seed}: outage {r.outage_s:.2f}s, restart to ready {r.spawn_to_ready_s:.2f}s, "
            f"first write answered {_fmt(r.first_answer_s)}, first SEND_OK {_fmt(r.first_send_ok_s)} "
            f"after ready; {r.failed_sends} sends not SEND_OK meanwhile; {r.lost} of {r.acked} SEND_OK lost",
            flush=True,
        )
    print(
        f"TOTAL role {args.role}: first write answered after the return: median {_median(answers):.2f}s, "
        f"max {max(answers, default=float('nan')):.2f}s ({len(answers)} of {args.rounds}); first SEND_OK: "
        f"median {_median(oks):.2f}s, max {max(oks, default=float('nan')):.2f}s ({len(oks)} of "
        f"{args.rounds}); {lost} of {acked} SEND_OK messages lost"
    )


def _fmt(value: float | None) -> str:
    return "never" if value is None else f"{value:.2f}s"


if __name__ == "__main__":
    main()
