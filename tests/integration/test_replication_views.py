"""The views show the slave: ``rocketq cluster``, ``topic stats``, ``group progress``, ``/metrics``
and the dashboard's pages, each with the slave's lag behind its master in bytes and seconds.

A real master and slave; the slave's HA link is stopped after a random number of messages and a
random number more is sent, so the lag is known exactly from the two stores: the master's
commit-log end less the slave's, and the store time of the master's newest message less the
slave's newest. Then the link is started again and every view says 0.
"""

from __future__ import annotations

import json
import random
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from rocketq import Message, Producer, SendStatus
from rocketq.admin import Admin
from rocketq.broker import Broker
from rocketq.cli.main import main
from rocketq.dashboard import BackgroundServer, DashboardConfig, create_app
from tests import browserkit
from tests.integration.clientkit import ClusterThread, wait_until
from tests.integration.test_replication import FAST_HA, slave_config, wait_linked

pytestmark = pytest.mark.integration

TOPIC = "ViewsTopic"
GROUP = "views_group"


@dataclass
class Pair:
    cluster: ClusterThread
    master: Broker
    slave: Broker


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Pair]:
    cluster = ClusterThread(tmp_path / "master", role="async-master", ha=FAST_HA)
    slave = Broker(slave_config(cluster, tmp_path))
    cluster.thread.call(slave.start(), timeout=30)
    try:
        master = wait_linked(cluster)
        yield Pair(cluster, master, slave)
    finally:
        cluster.thread.call(slave.close(), timeout=30)
        cluster.close()


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    capsys.readouterr()  # what the test printed before
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def _text(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def _metrics(url: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    with urllib.request.urlopen(url + "metrics", timeout=30) as answer:
        text = answer.read().decode()
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return out


def test_every_view_shows_the_slave_and_its_lag(pair: Pair, capsys: pytest.CaptureFixture[str]) -> None:
    cluster, master, slave = pair.cluster, pair.master, pair.slave
    ns = cluster.namesrv
    seed = random.randrange(1 << 32)
    rng = random.Random(seed)
    before, after, queues = rng.randint(1, 30), rng.randint(1, 40), rng.randint(1, 4)
    with capsys.disabled():
        print(f"seed {seed}: {before} messages, link stopped, {after} more, {queues} queues")
    cluster.create_topic(TOPIC, queues)
    with Producer("views_p", client_config=cluster.client_config()) as producer:

        def send(n: int) -> None:
            for i in range(n):
                body = f"{i}".encode() * rng.randint(1, 300)
                assert producer.send(Message(TOPIC, body)).status is SendStatus.SEND_OK

        send(before)
        assert wait_until(lambda: slave.store.commit_log_max_offset == master.store.commit_log_max_offset, 10)
        assert wait_until(lambda: slave.topics.select(TOPIC) is not None, 10)
        assert slave.ha_client is not None
        cluster.thread.call(slave.ha_client.close(), timeout=10)  # the slave stops following
        send(after)
    with Admin(ns) as admin:
        admin.seed_new_group(GROUP, TOPIC, "first")
    want_bytes = master.store.commit_log_max_offset - slave.store.commit_log_max_offset
    want_seconds = (master.store.latest_store_time() - slave.store.latest_store_time()) / 1000
    assert want_bytes > 0
    with capsys.disabled():
        print(f"lag {want_bytes} bytes, {want_seconds} s")

    # rocketq cluster: both brokers, the slave's lag
    brokers = _json(capsys, "cluster", "--namesrv", ns, "--json")["brokers"]
    by_id = {b["id"]: b for b in brokers}
    assert (by_id[0]["addr"], by_id[1]["addr"]) == (master.address, slave.address)
    assert (by_id[0]["role"], by_id[1]["role"]) == ("ASYNC_MASTER", "SLAVE")
    assert by_id[0]["lag_bytes"] is None
    assert (by_id[1]["lag_bytes"], by_id[1]["lag_seconds"]) == (want_bytes, want_seconds)
    text = _text(capsys, "cluster", "--namesrv", ns)
    assert slave.address in text
    assert str(want_bytes) in text
    assert "slave lag s" in text

    # rocketq topic stats: what the slave holds of each queue, and the lag
    stats = _json(capsys, "topic", "stats", TOPIC, "--namesrv", ns, "--json")
    for q in stats["queues"]:
        assert q["slave_max_offset"] == slave.store.max_offset(TOPIC, q["queue_id"])
        assert q["max_offset"] == master.store.max_offset(TOPIC, q["queue_id"])
    (lag,) = stats["slaves"]
    assert (lag["addr"], lag["lag_bytes"], lag["lag_seconds"]) == (slave.address, want_bytes, want_seconds)
    line = f"slave broker-a/1 at {slave.address}: {want_bytes} bytes, {want_seconds:.3f} s behind its master"
    text = _text(capsys, "topic", "stats", TOPIC, "--namesrv", ns)
    assert "on slave" in text
    assert line in text

    # rocketq group progress: the same line under the group's queues
    progress = _json(capsys, "group", "progress", GROUP, "--topic", TOPIC, "--namesrv", ns, "--json")
    assert [s["lag_bytes"] for s in progress["slaves"]] == [want_bytes]
    assert line in _text(capsys, "group", "progress", GROUP, "--topic", TOPIC, "--namesrv", ns)

    config = DashboardConfig(namesrv=ns, poll_interval=0.3, metrics_interval=0.3)
    with BackgroundServer(create_app(config)) as server:
        # /metrics: rocketmq-exporter's commitlog_diff and ours in seconds, labelled by the slave
        labels = (("broker", "broker-a"), ("brokerIP", slave.address), ("cluster", "DefaultCluster"))
        got = _metrics(server.url)
        assert got["rocketmq_broker_commitlog_diff"] == {labels: want_bytes}
        assert got["rocketq_broker_ha_slave_lag_seconds"] == {labels: want_seconds}
        if browserkit.missing() is None:
            _dashboard_shows(server.url, slave.address, want_bytes, want_seconds)
        # the slave follows again: every view says it caught up
        cluster.thread.call(_restart_link(slave), timeout=10)
        assert wait_until(lambda: slave.store.commit_log_max_offset == master.store.commit_log_max_offset, 15)
        caught_up = {
            "rocketmq_broker_commitlog_diff": {labels: 0},
            "rocketq_broker_ha_slave_lag_seconds": {labels: 0},
        }

        def metrics_caught_up() -> bool:
            got = _metrics(server.url)
            return all(got.get(name) == want for name, want in caught_up.items())

        assert wait_until(metrics_caught_up, 10)
    brokers = _json(capsys, "cluster", "--namesrv", ns, "--json")["brokers"]
    assert [(b["lag_bytes"], b["lag_seconds"]) for b in brokers if b["id"] == 1] == [(0, 0.0)]
    if browserkit.missing() is not None:
        pytest.skip(f"the dashboard's pages were not looked at: {browserkit.missing()}")


async def _restart_link(slave: Broker) -> None:
    assert slave.ha_client is not None
    slave.ha_client.start()


def _dashboard_shows(url: str, slave_addr: str, want_bytes: int, want_seconds: float) -> None:
    """The cluster page's slave row and the topic page's slave line, in a real browser."""
    with browserkit.launch() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(url)
        row = page.locator("#brokers tr", has_text=slave_addr)
        assert row.count() == 1
        cell = row.locator("td.lag").inner_text()
        assert cell == f"{want_bytes:,} B, {want_seconds:.3f} s", cell
        master_cell = page.locator("#brokers tr", has_text="master").locator("td.lag").inner_text()
        assert master_cell == "-"
        page.goto(url + f"topics/{TOPIC}")
        note = page.locator("p.slave").inner_text()
        lag = f"{want_bytes:,} bytes, {want_seconds:.3f} s behind its master"
        assert note == f"slave 1 at {slave_addr}: {lag}", note
        assert page.locator("table.queues th", has_text="on slave").count() == 1
        assert browserkit.layout_problems(page, 1280) == []
        assert errors == []
