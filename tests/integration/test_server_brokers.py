"""``rocketq server --brokers 2``: every feature across two supervised broker processes.

One real ``rocketq server --brokers 2`` (a subprocess: the name server in it, two ``rocketq
broker`` children, SQL92 filtering and short transaction checks passed on to both) serves the
whole module: topics created through the admin layer get queues on both brokers; a consumer
group's allocation covers both; per-queue order, a transaction's check, SQL92, look-ups by key and
by id, and request-reply work whichever broker holds the message; and a broker killed with
SIGKILL at a random moment is restarted by the supervisor on its address with every
acknowledged message kept.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketq import (
    Admin,
    ClientConfig,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    LocalTransactionState,
    Message,
    MessageExt,
    MessageQueue,
    MessageSelector,
    Producer,
    PushConsumer,
    TransactionProducer,
    create_reply,
)
from rocketq.embedded import ServerProcess, spawn_server
from rocketq.errors import RocketQError
from rocketq.remoting import run
from rocketq.supervisor import Supervisor, SupervisorConfig, broker_plan
from tests.integration.clientkit import Received, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

FIRST = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
BROKERS = ("broker-a", "broker-b")


class Server:
    """The module's ``rocketq server --brokers 2`` and its log."""

    def __init__(self, root: Path) -> None:
        self.log_path = root / "server.log"
        self._log = self.log_path.open("w", encoding="utf-8")
        self.proc: ServerProcess = spawn_server(
            root / "data",
            brokers=2,
            stderr=self._log,
            timeout=90,
            extra_args=(
                "--enable-property-filter",
                "--transaction-timeout",
                "0.3",
                "--transaction-check-interval",
                "0.3",
            ),
        )
        self.admin = Admin(self.proc.namesrv_addr)

    def config(self, name: str) -> ClientConfig:
        return ClientConfig(namesrv=self.proc.namesrv_addr, client_ip="127.0.0.1", instance_name=name)

    def create_topic(self, topic: str, queues: int) -> None:
        written = self.admin.create_topic(topic, queues=queues)
        assert sorted(written) == list(BROKERS)  # cluster-wide, as mqadmin updateTopic -c

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(encoding="utf-8")

    def close(self) -> None:
        self.admin.close()
        code = self.proc.stop()
        self._log.close()
        assert code == 0, self.log()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = Server(tmp_path_factory.mktemp("brokers"))
    try:
        yield s
    finally:
        s.close()


def broker_of(server: Server, msg: MessageExt) -> str:
    """The broker that stored ``msg``, by its store address."""
    addr = str(msg.store_host)
    return BROKERS[list(server.proc.broker_addrs).index(addr)]


def push(server: Server, group: str, topic: str, name: str, got: Received) -> PushConsumer:
    c = PushConsumer(group, client_config=server.config(name), consume_from_where=FIRST)
    c.subscribe(topic)
    c.register_listener(lambda msgs: got.add(name, msgs) or ConsumeConcurrentlyStatus.CONSUME_SUCCESS)  # type: ignore[func-returns-value]
    return c


def test_the_ready_line_lists_both_brokers_and_the_cluster_has_them(server: Server) -> None:
    assert len(server.proc.broker_addrs) == 2
    assert server.proc.broker_addr == server.proc.broker_addrs[0]
    assert len(server.proc.broker_pids()) == 2
    masters = server.admin.master_addrs()
    assert masters == dict(zip(BROKERS, server.proc.broker_addrs, strict=True))
    assert sorted(server.admin.cluster_info().cluster_addr_table["DefaultCluster"]) == list(BROKERS)


def test_a_group_spreads_over_both_brokers_and_gets_every_message_once(server: Server) -> None:
    topic = "SpreadTopic"
    server.create_topic(topic, 4)
    route = server.admin.topic_route(topic)
    assert sorted((q.broker_name, q.write_queue_nums) for q in route.queue_datas) == [
        ("broker-a", 4),
        ("broker-b", 4),
    ]
    got = Received()
    consumers = [push(server, "spread_group", topic, f"c{i}", got) for i in range(2)]
    for c in consumers:
        c.start()
    try:
        with Producer("spread_producer", client_config=server.config("spread-p")) as p:
            results = [p.send(Message(topic, f"m{i}")) for i in range(80)]
        per_broker = Counter(r.message_queue.broker_name for r in results)
        # round robin over all 8 queues (a send that times out on a loaded machine is retried on the
        # other broker, so not exactly 40 each)
        assert set(per_broker) == set(BROKERS)
        assert all(36 <= n <= 44 for n in per_broker.values()), per_broker
        assert wait_until(lambda: got.distinct() == 80, 30)

        def owned() -> list[set[MessageQueue]]:
            return [{mq for mq in c.running_info().mq_table if mq.topic == topic} for c in consumers]

        # AVG: 4 queues each, disjoint, the 8 queues of both brokers between them
        assert wait_until(lambda: sorted(len(o) for o in owned()) == [4, 4], 30), owned()
        mine = owned()
        assert not (mine[0] & mine[1])
        assert {mq.broker_name for mq in mine[0] | mine[1]} == set(BROKERS)
        assert got.duplicates() == 0
    finally:
        for c in consumers:
            c.shutdown()


def test_each_queue_of_each_broker_is_consumed_in_order(server: Server) -> None:
    topic = "OrderTopic"
    server.create_topic(topic, 2)
    seen: dict[tuple[str, int], list[int]] = {}
    lock = threading.Lock()

    def listener(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
        with lock:
            for m in msgs:
                assert m.queue_id == ctx.message_queue.queue_id
                seen.setdefault((ctx.message_queue.broker_name, m.queue_id), []).append(int(m.body))
        return ConsumeOrderlyStatus.SUCCESS

    queues = [MessageQueue(topic, b, q) for b in BROKERS for q in range(2)]
    with Producer("order_producer", client_config=server.config("order-p")) as p:
        for i in range(50):
            for mq in queues:
                p.send(Message(topic, str(i)), queue=mq)
    c = PushConsumer("order_group", client_config=server.config("order-c"), consume_from_where=FIRST)
    c.subscribe(topic)
    c.register_listener(listener, orderly=True)
    with c:
        assert wait_until(lambda: sum(len(v) for v in seen.values()) == 200, 30)
    assert seen == {(mq.broker_name, mq.queue_id): list(range(50)) for mq in queues}


def test_transactions_left_unknown_are_checked_on_both_brokers(server: Server) -> None:
    topic = "TxSpreadTopic"
    server.create_topic(topic, 2)
    asked: list[MessageExt] = []

    def checker(msg: MessageExt) -> LocalTransactionState:
        asked.append(msg)
        return LocalTransactionState.COMMIT_MESSAGE

    got = Received()
    c = push(server, "tx_spread_group", topic, "tx-c", got)
    c.start()
    try:
        with TransactionProducer(
            "tx_spread_producer", client_config=server.config("tx-p"), checker=checker
        ) as p:
            sent = [
                p.send_in_transaction(
                    Message(topic, f"tx{i}"), execute=lambda m, a: LocalTransactionState.UNKNOW
                )
                for i in range(8)
            ]
            assert {r.message_queue.broker_name for r in sent} == set(BROKERS)
            assert wait_until(lambda: got.distinct() == 8, 30)
        assert sorted(got.bodies) == sorted(f"tx{i}".encode() for i in range(8))
        assert {m.body for m in asked} >= {f"tx{i}".encode() for i in range(8)}  # each checked
        assert {broker_of(server, m) for m in got.messages} == set(BROKERS)
    finally:
        c.shutdown()


def test_sql92_filters_on_both_brokers(server: Server) -> None:
    topic = "SqlSpreadTopic"
    server.create_topic(topic, 2)
    rng = random.Random(seed := random.randrange(2**32))
    values = [rng.randrange(100) for _ in range(40)]
    threshold = rng.randrange(20, 80)
    with Producer("sql_spread_producer", client_config=server.config("sql-p")) as p:
        for i, v in enumerate(values):
            p.send(Message(topic, f"{i}", properties={"v": str(v)}))
    got = Received()
    c = PushConsumer("sql_spread_group", client_config=server.config("sql-c"), consume_from_where=FIRST)
    c.subscribe(topic, MessageSelector.by_sql(f"v > {threshold}"))
    c.register_listener(lambda msgs: got.add("c", msgs) or ConsumeConcurrentlyStatus.CONSUME_SUCCESS)  # type: ignore[func-returns-value]
    expected = {str(i).encode() for i, v in enumerate(values) if v > threshold}
    with c:
        assert wait_until(lambda: got.distinct() >= len(expected), 30), f"seed {seed}"
        time.sleep(0.5)  # anything more (that should not come) would arrive with the same pulls
    assert set(got.bodies) == expected, f"seed {seed}"


def test_lookups_by_key_and_id_ask_every_broker(server: Server) -> None:
    topic = "LookupTopic"
    server.create_topic(topic, 1)
    with Producer("lookup_producer", client_config=server.config("lookup-p")) as p:
        results = [p.send(Message(topic, f"k{i}", keys=["shared", f"own-{i}"])) for i in range(4)]
    assert {r.message_queue.broker_name for r in results} == set(BROKERS)
    found = server.admin.query_message(topic, "shared")
    assert sorted(m.body for m in found) == [b"k0", b"k1", b"k2", b"k3"]
    assert {broker_of(server, m) for m in found} == set(BROKERS)
    for r in results:
        by_id = server.admin.view_message(r.msg_id, topic=topic)  # the producer's id: every broker asked
        assert [m.msg_id for m in by_id] == [r.msg_id]
        by_offset = server.admin.view_message(r.offset_msg_id)  # the broker's id: its own broker
        assert [m.msg_id for m in by_offset] == [r.msg_id]


def test_request_reply_through_either_broker(server: Server) -> None:
    topic = "RequestSpreadTopic"
    server.create_topic(topic, 1)
    replier_producer = Producer("replier_producer", client_config=server.config("replier")).start()
    replier = PushConsumer("replier_group", client_config=server.config("replier"))
    replier.subscribe(topic)

    def answer(msgs: list[MessageExt]) -> ConsumeConcurrentlyStatus:
        for m in msgs:
            replier_producer.send(create_reply(m, b"re:" + m.body))
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    replier.register_listener(answer)
    replier.start()
    try:
        with Producer("requester", client_config=server.config("requester")) as p:
            for b in BROKERS:
                reply = p.request(Message(topic, b), 15.0, queue=MessageQueue(topic, b, 0))
                assert reply.body == b"re:" + b.encode()
    finally:
        replier.shutdown()
        replier_producer.shutdown()


def test_a_killed_broker_is_restarted_and_keeps_every_acknowledged_message(server: Server) -> None:
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    topic = "KillTopic"
    server.create_topic(topic, 2)
    victim = BROKERS[rng.randrange(2)]
    kill_after = rng.randrange(20, 150)
    pid = server.proc.broker_pids()[victim]
    acked: list[str] = []
    restarted = f"broker {victim} restarted"
    killed = False
    deadline = time.monotonic() + 60
    with Producer("kill_producer", client_config=server.config("kill-p")) as p:
        for i in range(100_000):
            if not killed and len(acked) >= kill_after:
                os.kill(pid, signal.SIGKILL)
                killed = True
            try:
                acked.append(p.send(Message(topic, f"k{i}")).msg_id)
            except RocketQError:
                pass  # not acknowledged: may or may not be stored
            if killed and len(acked) >= kill_after + 100 and i % 10 == 0 and restarted in server.log():
                break
            assert time.monotonic() < deadline, f"seed {seed}: not restarted in time: {server.log()}"

        def takes_sends() -> bool:  # the restarted broker, on its old address
            try:
                acked.append(p.send(Message(topic, "after"), queue=MessageQueue(topic, victim, 0)).msg_id)
            except RocketQError:
                return False
            return True

        assert wait_until(takes_sends, 30), f"seed {seed}"
    assert f"broker {victim} (pid {pid}) exited with code -9; restarting it" in server.log()
    assert server.proc.broker_pids()[victim] != pid
    got = Received()
    c = push(server, "kill_group", topic, "kill-c", got)
    with c:
        assert wait_until(lambda: set(acked) <= {m.msg_id for m in got.messages}, 30), f"seed {seed}"


def test_a_broker_that_cannot_be_restarted_ends_the_supervision_with_its_reason(tmp_path: Path) -> None:
    """The restart budget: broker-b's data dir becomes a file, so its restarts fail, and the
    supervisor gives up after ``max_restarts`` with a line that says why (``rocketq server`` then
    stops every broker and exits 1)."""
    lines: list[str] = []
    config = SupervisorConfig(
        namesrv_port=0,
        brokers=tuple(broker_plan("broker-a", 0, tmp_path / "data", 2)),
        max_restarts=1,
    )

    async def scenario() -> str | None:
        async with Supervisor(config, lines.append) as supervisor:
            pid = supervisor.broker_pids[1]
            assert pid is not None
            b_dir = tmp_path / "data" / "broker-b"
            os.kill(pid, signal.SIGKILL)
            b_dir.rename(tmp_path / "kept-b")
            b_dir.write_text("not a directory")
            return await asyncio.wait_for(supervisor.wait(asyncio.Event()), 60)

    reason = run(scenario())
    assert reason is not None, lines
    assert reason.startswith("broker broker-b (pid "), reason
    assert reason.endswith("restarted 1 time(s) in the last 60 s already; not restarting it"), reason
    assert any("exited with code -9; restarting it" in line for line in lines), lines
    assert any("did not start (exit code 2)" in line for line in lines), lines


def test_sigint_stops_every_broker_cleanly_and_a_restart_serves_their_data(tmp_path: Path) -> None:
    data = tmp_path / "data"
    log = (tmp_path / "server.log").open("w", encoding="utf-8")
    try:
        with spawn_server(data, brokers=2, stderr=log, timeout=90) as server:
            assert len(server.broker_addrs) == 2
            pids = server.broker_pids()
            assert sorted(pids) == ["broker-a", "broker-b"]
            with Admin(server.namesrv_addr) as admin:
                admin.create_topic("KeptTopic", queues=1)
            config = ClientConfig(namesrv=server.namesrv_addr, client_ip="127.0.0.1")
            with Producer("kept_producer", client_config=config) as p:
                kept = Counter(
                    p.send(Message("KeptTopic", f"k{i}")).message_queue.broker_name for i in range(30)
                )
            server.proc.send_signal(signal.SIGINT)
            assert server.proc.wait(60) == 0
            for pid in pids.values():
                assert not running(pid)  # every child stopped, by the supervisor
        for name in ("", "broker-b"):
            assert not (data / name / "abort").exists()  # each shut down cleanly
        with (
            spawn_server(data, brokers=2, stderr=log, timeout=90) as server,
            Admin(server.namesrv_addr) as admin,
        ):
            stats = admin.topic_stats("KeptTopic")
            assert Counter({q.queue.broker_name: q.max_offset for q in stats.queues}) == kept
    finally:
        log.close()


def running(pid: int) -> bool:
    """``pid`` exists and is not a zombie (an orphan's zombie waits for whoever adopts it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_no_broker_outlives_a_killed_supervisor(tmp_path: Path) -> None:
    with spawn_server(tmp_path / "data", brokers=2, stderr=subprocess.DEVNULL, timeout=90) as server:
        pids = server.broker_pids()
        assert len(pids) == 2
        server.proc.kill()  # SIGKILL: the supervisor cannot stop its children itself
        server.proc.wait(30)
        # each child got SIGTERM from the kernel (PR_SET_PDEATHSIG) and stopped cleanly
        assert wait_until(lambda: not any(running(pid) for pid in pids.values()), 30)
    assert not (tmp_path / "data" / "abort").exists()
    assert not (tmp_path / "data" / "broker-b" / "abort").exists()
