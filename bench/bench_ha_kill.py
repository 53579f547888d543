"""Loss of a machine: a master with its slave, the master SIGKILLed and its data deleted.

Each round starts a name server, a master (``--role sync-master --flush sync``, or
``async-master``) and its slave as three ``rocketq`` processes on 127.0.0.1, a producer sending
without pause and a lite pull consumer group reading all along. At a random point the master is
killed with SIGKILL and its data directory deleted: the consumer fails over to the slave and must
read back every message the producer saw answered SEND_OK. A round reports the SEND_OK messages
missing from what the group read (the loss), how long after the kill the group had read every one of
them (from the slave), and duplicates.

    python bench/bench_ha_kill.py --rounds 20                  # sync master: the claim is 0 lost
    python bench/bench_ha_kill.py --rounds 20 --role async-master

The slow test ``tests/integration/test_replication_processes.py`` runs a few rounds of this.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from rocketq import ClientConfig, ConsumeFromWhere, LitePullConsumer, Message, Producer, SendStatus
from rocketq.client.config import ProducerConfig

_ADDR = re.compile(r"(?:listening on|on) (\d+\.\d+\.\d+\.\d+:\d+)")


class Proc:
    """A ``rocketq`` child process whose stdout lines are collected."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rocketq", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.lines: list[str] = []
        self._ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            self._ready.set()
        self._ready.set()

    def address(self, timeout: float = 60.0) -> str:
        if not self._ready.wait(timeout) or not self.lines:
            raise RuntimeError(f"rocketq {self.proc.args!r} did not start")
        match = _ADDR.search(self.lines[0])
        if match is None:
            raise RuntimeError(f"no address in {self.lines[0]!r}")
        return match.group(1)

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        self._close()

    def _close(self) -> None:
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()
        self._close()


@dataclass(frozen=True)
class RoundResult:
    seed: int
    role: str
    acked: int
    other_status: int
    read: int
    lost: int
    lost_running: int
    duplicates: int
    failover_s: float | None
    kill_after_s: float


def run_round(seed: int, role: str = "sync-master", root: Path | None = None) -> RoundResult:
    """One round (see the module docstring); every process is stopped by pid before it returns."""
    rng = random.Random(seed)
    t0 = time.monotonic()

    def phase(what: str) -> None:
        if os.environ.get("HA_KILL_TRACE"):
            print(f"  {time.monotonic() - t0:6.2f}s {what}", file=sys.stderr, flush=True)

    tmp = Path(tempfile.mkdtemp(prefix="ha-kill-", dir=root))
    procs: list[Proc] = []
    topic = f"HaKill{seed % 100000}"
    try:
        ns_proc = Proc("namesrv", "--port", "0")
        procs.append(ns_proc)
        ns = ns_proc.address()
        master_dir = tmp / "master"
        master = Proc(
            "broker", "--namesrv", ns, "--broker-port", "0", "--data-dir", str(master_dir),
            "--role", role, "--flush", "sync" if role == "sync-master" else "async",
        )  # fmt: skip
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
        phase("processes up")
        config = ClientConfig(
            namesrv=ns, client_ip="127.0.0.1", instance_name=f"ha{seed}",
            poll_name_server_interval=0.5, rebalance_interval=1.0,
        )  # fmt: skip
        acked: set[bytes] = set()
        other = 0
        stop = threading.Event()
        with Producer(
            "ha_kill_producer", client_config=config, config=ProducerConfig(send_msg_timeout=2.0)
        ) as producer:
            # the topic is created by the first sends (auto-create); wait for the slave to link
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    if producer.send(Message(topic, b"warm-up")).status is SendStatus.SEND_OK:
                        break
                except Exception:
                    pass
                time.sleep(0.2)
            else:
                raise RuntimeError("the master never answered SEND_OK (no slave linked?)")
            phase("first SEND_OK")

            def produce() -> None:
                nonlocal other
                n = 0
                while not stop.is_set():
                    body = f"{seed}-{n}".encode()
                    n += 1
                    try:
                        result = producer.send(Message(topic, body))
                    except Exception:
                        continue
                    if result.status is SendStatus.SEND_OK:
                        acked.add(body)
                    else:
                        other += 1

            consumer = LitePullConsumer(
                f"ha_kill_group_{seed}",
                client_config=config,
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            )
            consumer.subscribe(topic, "*")
            read: dict[bytes, int] = {}
            failover: float | None = None
            with consumer:
                thread = threading.Thread(target=produce, daemon=True)
                thread.start()
                kill_after = rng.uniform(0.5, 2.5)
                began = time.monotonic()
                killed_at = None
                last_read = began
                while True:
                    now = time.monotonic()
                    if killed_at is None and now - began >= kill_after:
                        stop.set()
                        master.kill()
                        killed_at = time.monotonic()
                        shutil.rmtree(master_dir, ignore_errors=True)
                        phase("master killed, its data deleted")
                    batch = consumer.poll(0.1)
                    for m in batch:
                        read[m.body] = read.get(m.body, 0) + 1
                    if batch:
                        last_read = time.monotonic()
                    if killed_at is not None and acked <= read.keys():
                        failover = time.monotonic() - killed_at
                        break
                    # what the slave lacks never comes: stop 5 s after the last message (20 s at most)
                    if killed_at is not None and time.monotonic() - max(killed_at, last_read) > 5:
                        break
                    if killed_at is not None and time.monotonic() - killed_at > 20:
                        break
            phase("running group done")
            thread.join(30)
            # a new group reads the topic from the start: only the slave is left to serve it
            verify = LitePullConsumer(
                f"ha_verify_group_{seed}",
                client_config=config,
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            )
            verify.subscribe(topic, "*")
            again: set[bytes] = set()
            with verify:
                # until it has them all, or nothing new came for 5 s (what the slave lacks never will)
                deadline = time.monotonic() + 60
                quiet_until = time.monotonic() + 10
                while not acked <= again and time.monotonic() < min(deadline, quiet_until):
                    batch = verify.poll(0.2)
                    if batch:
                        again.update(m.body for m in batch)
                        quiet_until = time.monotonic() + 5
            phase("new group read the slave")
        phase("clients closed")
        lost = len(acked - again)
        lost_running = len(acked - read.keys())
        return RoundResult(
            seed, role, len(acked), other, len(read), lost, lost_running,
            sum(n - 1 for n in read.values()), failover, kill_after,
        )  # fmt: skip
    finally:
        for p in reversed(procs):
            p.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--role", choices=("sync-master", "async-master"), default="sync-master")
    parser.add_argument("--seed", type=int, default=None, help="first seed (default: drawn at random)")
    args = parser.parse_args()
    seed0 = args.seed if args.seed is not None else random.randrange(1 << 30)
    print(f"role {args.role}, {args.rounds} rounds, seeds from {seed0}", flush=True)
    total_acked = total_lost = total_lost_running = 0
    failovers: list[float] = []
    for i in range(args.rounds):
        r = run_round(seed0 + i, args.role)
        total_acked += r.acked
        total_lost += r.lost
        total_lost_running += r.lost_running
        if r.failover_s is not None:
            failovers.append(r.failover_s)
        print(
            f"seed {r.seed}: kill after {r.kill_after_s:.2f}s, {r.acked} SEND_OK, {r.other_status} other "
            f"status, {r.read} read by the running group ({r.lost_running} missing, "
            f"{r.duplicates} duplicates), "
            f"{r.lost} lost (missing from the slave for a new group), "
            f"failover {r.failover_s if r.failover_s is None else round(r.failover_s, 2)}s",
            flush=True,
        )
    failovers.sort()
    median = failovers[len(failovers) // 2] if failovers else float("nan")
    print(
        f"TOTAL role {args.role}: {total_lost} of {total_acked} SEND_OK messages lost over {args.rounds} "
        f"kills ({total_lost_running} missed by the running group); "
        f"the running group had all after the kill in: median {median:.2f}s, "
        f"max {max(failovers, default=float('nan')):.2f}s"
    )


if __name__ == "__main__":
    main()
