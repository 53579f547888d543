"""The dashboard as a person sees it: a real rocketq server with a running consumer group, the
dashboard served by uvicorn on port 0, and a headless Chromium (Playwright) looking at it.

Screenshots of every page are written under the test's temp dir (the path is printed), so a run
leaves pictures to look at. ``/metrics`` is read with prometheus_client's own parser and compared
with ``rocketq group progress``.
"""

from __future__ import annotations

import json
import random
import signal
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from rocketq import ClientConfig, ConsumeConcurrentlyStatus, ConsumeFromWhere, Message, Producer, PushConsumer
from rocketq.admin import Admin
from rocketq.cli.main import main
from rocketq.dashboard import BackgroundServer, DashboardConfig, create_app, create_exporter_app
from rocketq.models import MessageQueue
from tests import browserkit
from tests.integration.clientkit import ClusterThread, Received, wait_until
from tests.integration.clikit import CliProcess, consume_args

pytestmark = pytest.mark.integration

TOPIC = "DashTopic"
GROUP = "dash_group"
OK = ConsumeConcurrentlyStatus.CONSUME_SUCCESS


def consumer(cluster: ClusterThread, name: str, got: Received, *, group: str = GROUP) -> PushConsumer:
    c = PushConsumer(
        group,
        client_config=ClientConfig(namesrv=cluster.namesrv, client_ip="127.0.0.1", instance_name=name),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )
    c.subscribe(TOPIC)
    c.register_listener(lambda msgs: (got.add(name, msgs), OK)[1])
    return c.start()


def produce(cluster: ClusterThread, count: int, start: int = 0) -> list[Any]:
    config = ClientConfig(namesrv=cluster.namesrv, client_ip="127.0.0.1", instance_name="dash-producer")
    with Producer("dash_producer", client_config=config) as p:
        return [
            p.send(Message(TOPIC, f"hello-{i:04d}", keys=f"key-{i}")) for i in range(start, start + count)
        ]


@pytest.fixture
def dashboard(cluster: ClusterThread) -> Iterator[BackgroundServer]:
    config = DashboardConfig(namesrv=cluster.namesrv, poll_interval=0.3, metrics_interval=0.5)
    with BackgroundServer(create_app(config)) as server:
        yield server


@pytest.fixture
def admin(cluster: ClusterThread) -> Iterator[Admin]:
    with Admin(cluster.namesrv) as a:
        yield a


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    folder = tmp_path / "screenshots"
    folder.mkdir()
    print(f"\ndashboard screenshots: {folder}")
    return folder


def new_page(chromium: Any) -> tuple[Any, list[str]]:
    """A page 1280 px wide that records script errors."""
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return page, errors


def page_owners(page: Any) -> dict[str, str]:
    cells = page.eval_on_selector_all(
        "#ownership .cell", "els => els.map((e) => [e.dataset.queue, e.dataset.owner])"
    )
    return {q: o for q, o in cells if q.startswith(TOPIC + "@")}


def admin_owners(admin: Admin) -> dict[str, str]:
    return {
        f"{mq.topic}@{mq.broker_name}:{mq.queue_id}": m.client_id
        for m in admin.group_members(GROUP).members
        for mq in m.queues
        if mq.topic == TOPIC
    }


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def metrics(url: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    status, text = get(url + "metrics")
    assert status == 200
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return out


def test_group_page_shows_the_owners_and_follows_a_join_without_reloading(
    cluster: ClusterThread, admin: Admin, dashboard: BackgroundServer, chromium: Any, shots: Path
) -> None:
    cluster.create_topic(TOPIC, 8)
    got = Received()
    first = consumer(cluster, "c1", got)
    second: PushConsumer | None = None
    try:
        assert wait_until(lambda: len(admin_owners(admin)) == 8)
        produce(cluster, 40)
        page, errors = new_page(chromium)
        page.goto(dashboard.url + f"groups/{GROUP}")
        page.wait_for_selector("#ownership .cell")
        assert page_owners(page) == admin_owners(admin)
        assert set(page_owners(page).values()) == {"127.0.0.1@c1"}
        assert page.inner_text("#members tbody").count("127.0.0.1@c1") == 1
        page.screenshot(path=str(shots / "group-one-consumer.png"), full_page=True)
        page.evaluate("window.__sameDocument = true")

        second = consumer(cluster, "c2", got)
        page.wait_for_function(
            "() => new Set([...document.querySelectorAll('#ownership .cell')]"
            ".filter((e) => e.dataset.queue.startsWith('DashTopic@'))"
            ".map((e) => e.dataset.owner)).size === 2",
            timeout=30_000,
        )
        assert page.evaluate("window.__sameDocument") is True  # updated in place, not reloaded
        # the page settles on what the members report, and the change is on the timeline
        assert wait_until(
            lambda: page_owners(page) == admin_owners(admin) and len(set(page_owners(page).values())) == 2
        )
        assert sorted(page_owners(page).values()).count("127.0.0.1@c2") == 4
        page.wait_for_selector("#changes tbody tr:has-text('1 -> 2')")
        row = page.inner_text("#changes tbody tr:has-text('1 -> 2')")
        assert "+c2" in row
        assert page.eval_on_selector_all("#timeline svg rect", "els => els.length") >= 8
        assert wait_until(lambda: got.distinct() == 40)
        page.wait_for_timeout(500)
        page.screenshot(path=str(shots / "group-after-join.png"), full_page=True)
        assert browserkit.layout_problems(page, 1280) == []
        assert errors == []
    finally:
        for c in (first, second):
            if c is not None:
                c.shutdown()


def test_every_page_renders_real_data(
    cluster: ClusterThread, admin: Admin, dashboard: BackgroundServer, chromium: Any, shots: Path
) -> None:
    cluster.create_topic(TOPIC, 4)
    got = Received()
    c1 = consumer(cluster, "c1", got)
    try:
        sent = produce(cluster, 12)
        assert wait_until(lambda: got.distinct() == 12)
        page, errors = new_page(chromium)

        page.goto(dashboard.url)
        assert cluster.broker_addr in page.inner_text("#brokers")
        assert "V4_9_4" in page.inner_text("#brokers")
        topics = page.inner_text("#topics")
        assert TOPIC in topics
        page.screenshot(path=str(shots / "cluster.png"), full_page=True)

        page.goto(dashboard.url + "topics")
        page.fill("input.filter", "dashtop")
        visible = page.eval_on_selector_all(
            "#topics tbody tr:not([hidden])", "els => els.map((e) => e.innerText)"
        )
        assert [v.split("\t")[0] for v in visible] == [TOPIC]
        page.screenshot(path=str(shots / "topics.png"), full_page=True)

        page.goto(dashboard.url + f"topics/{TOPIC}")
        assert GROUP in page.inner_text("main")
        held = sum(q.messages for q in admin.topic_stats(TOPIC).queues)
        assert f"{held} messages held" in page.inner_text("main")
        page.screenshot(path=str(shots / "topic.png"), full_page=True)

        page.goto(dashboard.url + "groups")
        assert GROUP in page.inner_text("#groups")
        page.screenshot(path=str(shots / "groups.png"), full_page=True)

        # message look-ups: by the producer's id, by key, by queue and offset
        first = sent[0]
        page.goto(dashboard.url + f"messages?topic={TOPIC}&id={first.msg_id}")
        assert "hello-0000" in page.inner_text("main")
        page.goto(dashboard.url + f"messages?topic={TOPIC}&key=key-5")
        assert "hello-0005" in page.inner_text("main")
        mq = first.message_queue
        page.goto(
            dashboard.url
            + f"messages?topic={TOPIC}&queue={mq.broker_name}:{mq.queue_id}&offset={first.queue_offset}"
        )
        assert "hello-0000" in page.inner_text("main")
        page.screenshot(path=str(shots / "messages.png"), full_page=True)
        page.goto(dashboard.url + f"messages?topic={TOPIC}&queue={mq.broker_name}:{mq.queue_id}&offset=zz")
        assert "offset must be a number" in page.inner_text("#banner")
        # a message's trace: a traced send is listed (group, broker); an untraced message says so
        config = ClientConfig(namesrv=cluster.namesrv, client_ip="127.0.0.1", instance_name="dash-traced")
        with Producer("dash_traced_producer", client_config=config, trace=True) as traced_producer:
            traced = traced_producer.send(Message(TOPIC, "traced-0", keys="traced"))
        assert wait_until(lambda: bool(admin.message_trace(traced.msg_id, topic=TOPIC).events), 15.0)
        page.goto(dashboard.url + f"messages?trace={traced.msg_id}&topic={TOPIC}")
        row = page.inner_text("#trace tbody tr.trace-sent")
        assert "dash_traced_producer" in row
        assert cluster.broker_addr in row
        assert "traced-0" in page.inner_text("main")  # and the message itself
        page.screenshot(path=str(shots / "message-trace.png"), full_page=True)
        page.goto(dashboard.url + f"messages?topic={TOPIC}&id={first.msg_id}")
        page.click(f"a[href='/messages?trace={first.msg_id}&topic={TOPIC}']")
        assert "no trace records" in page.inner_text("#trace")

        page.goto(dashboard.url + "planner?strategy=AVG&queues=16&before=2&after=3")
        assert "7 of 16 queues move (STICKY would move 5)" in page.inner_text("#plan-summary")
        page.screenshot(path=str(shots / "planner.png"), full_page=True)

        page.goto(dashboard.url + "groups/no_such_group")
        assert "consumer group no_such_group is unknown to every broker" in page.inner_text("#banner")
        page.screenshot(path=str(shots / "unknown-group.png"), full_page=True)
        assert errors == []
    finally:
        c1.shutdown()


def test_topic_create_and_offset_reset_through_the_forms(
    cluster: ClusterThread, admin: Admin, dashboard: BackgroundServer, chromium: Any
) -> None:
    page, errors = new_page(chromium)
    page.goto(dashboard.url + "topics")
    page.fill("input[name=topic]", "FormTopic")
    page.fill("input[name=queues]", "3")
    page.click("form.inline button")
    page.wait_for_url("**/topics/FormTopic**")
    assert "topic FormTopic created with 3 queues" in page.inner_text("main")
    assert [q.read_queue_nums for q in admin.topic_route("FormTopic").queue_datas] == [3]
    # the same checks as the command line: one line, nothing changed
    page.goto(dashboard.url + "topics")
    page.fill("input[name=topic]", "TooMany")
    page.evaluate("document.querySelector('input[name=queues]').removeAttribute('max')")
    page.fill("input[name=queues]", "2000")
    page.click("form.inline button")
    assert "queues must be a queue count 0..1024, got '2000'" in page.inner_text("main")
    assert "TooMany" not in admin.topic_list()

    cluster.create_topic(TOPIC, 2)
    got = Received()
    c1 = consumer(cluster, "c1", got)
    try:
        produce(cluster, 6)
        assert wait_until(lambda: got.distinct() == 6)
        page.goto(dashboard.url + f"groups/{GROUP}")
        page.wait_for_selector("#ownership .cell")
        page.select_option("select[name=topic]", TOPIC)
        page.fill("input[name=to]", "first")
        page.fill("input[name=confirm]", "wrong")
        page.once("dialog", lambda d: d.accept())
        page.click("#reset button")
        assert "type the group's name (dash_group) to confirm the reset" in page.inner_text("#banner")
        page.select_option("select[name=topic]", TOPIC)
        page.fill("input[name=to]", "first")
        page.fill("input[name=confirm]", GROUP)
        page.once("dialog", lambda d: d.accept())
        page.click("#reset button")
        page.wait_for_selector(".banner.notice")
        assert f"offsets of {GROUP} on {TOPIC} reset to first" in page.inner_text(".banner.notice")
        assert wait_until(lambda: got.duplicates() == 6, timeout=20)  # everything consumed again
        assert errors == []
    finally:
        c1.shutdown()


def test_create_form_on_an_existing_topic_changes_nothing_and_offers_the_update(
    cluster: ClusterThread, admin: Admin, dashboard: BackgroundServer, chromium: Any, shots: Path
) -> None:
    """Before: the form made a topic of 4 queues holding 20 messages 1 queue and said "created"."""
    seed = random.randrange(1 << 32)
    rng = random.Random(seed)
    held = rng.randint(2, 8)
    fewer = rng.randint(1, held - 1)
    cluster.create_topic("Held", held)
    config = ClientConfig(namesrv=cluster.namesrv, client_ip="127.0.0.1", instance_name="dash-held")
    with Producer("dash_held", client_config=config) as p:
        for i in range(20):
            p.send(Message("Held", f"m{i}"), queue=MessageQueue("Held", "broker-a", i % held))
    before = admin.topic_stats("Held")
    page, errors = new_page(chromium)
    page.goto(dashboard.url + "topics")
    page.fill("#create input[name=topic]", "Held")
    page.fill("#create input[name=queues]", str(fewer))
    page.click("#create button")
    banner = page.wait_for_selector("#would-change")
    text = banner.inner_text()
    lost = f"[{fewer}..{held - 1}]" if held - fewer > 1 else f"[{fewer}]"
    assert "nothing was changed" in text, (seed, text)
    assert f"read queues {held} -> {fewer}, messages in queues {lost} stop being read" in text, (seed, text)
    assert "created" not in page.inner_text("main"), seed
    page.screenshot(path=str(shots / "topic-exists.png"), full_page=True)
    assert [q.read_queue_nums for q in admin.topic_route("Held").queue_datas] == [held], seed
    assert admin.topic_stats("Held") == before, seed
    # the update is offered as a button of its own, and does what it said
    page.click("#apply-update button")
    page.wait_for_url("**/topics/Held**")
    assert f"topic Held updated to {fewer} queues" in page.inner_text(".banner.notice")
    assert [q.read_queue_nums for q in admin.topic_route("Held").queue_datas] == [fewer], seed

    # a system topic: refused, a mistyped override refused too, the named one reaches the next check
    page.goto(dashboard.url + "topics")
    page.fill("#create input[name=topic]", "SCHEDULE_TOPIC_XXXX")
    page.fill("#create input[name=queues]", "1")
    page.click("#create button")
    assert (
        "is a system topic (it holds delayed messages" in page.wait_for_selector("#system-topic").inner_text()
    )
    page.screenshot(path=str(shots / "system-topic.png"), full_page=True)
    page.fill("#override input[name=force_system_topic]", "SCHEDULE_TOPIC_XXX")
    page.click("#override button")
    assert (
        "the override given names 'SCHEDULE_TOPIC_XXX'"
        in page.wait_for_selector("#system-topic").inner_text()
    )
    page.fill("#override input[name=force_system_topic]", "SCHEDULE_TOPIC_XXXX")
    page.click("#override button")
    assert "read queues 18 -> 1" in page.wait_for_selector("#would-change").inner_text()
    assert [q.read_queue_nums for q in admin.topic_route("SCHEDULE_TOPIC_XXXX").queue_datas] == [18]
    # a system topic's own page asks for its name before an update
    page.goto(dashboard.url + "topics/TBW102")
    assert "TBW102 is a system topic" in page.inner_text("main")
    page.fill("input[name=write_queues]", "1")
    page.click("section.card form button")
    assert "not changed" in page.inner_text("main")
    assert [q.write_queue_nums for q in admin.topic_route("TBW102").queue_datas] == [8]
    assert errors == []


def test_metrics_match_rocketq_group_progress(
    cluster: ClusterThread, admin: Admin, dashboard: BackgroundServer, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster.create_topic(TOPIC, 4)
    got = Received()
    c1 = consumer(cluster, "c1", got)
    try:
        produce(cluster, 20)
        assert wait_until(lambda: got.distinct() == 20)
        # one owner per queue while the consumer runs
        assert wait_until(
            lambda: (
                [
                    v
                    for k, v in metrics(dashboard.url).get("rocketq_queue_owners", {}).items()
                    if ("topic", TOPIC) in k
                ]
                == [1.0] * 4
            )
        )
    finally:
        c1.shutdown()  # commits its offsets on the way out
    produce(cluster, 10, start=20)  # a backlog nobody consumes: lag 10
    assert main(["group", "progress", GROUP, "--topic", TOPIC, "--namesrv", cluster.namesrv, "--json"]) == 0
    progress = json.loads(capsys.readouterr().out)
    assert progress["total_lag"] == 10

    def matches() -> bool:
        m = metrics(dashboard.url)
        queue_lag = {
            (dict(k)["broker"], int(dict(k)["queueid"])): v
            for k, v in m.get("rocketq_queue_lag", {}).items()
            if dict(k)["group"] == GROUP and dict(k)["topic"] == TOPIC
        }
        committed = {
            dict(k)["broker"]: v
            for k, v in m.get("rocketmq_consumer_offset", {}).items()
            if dict(k)["group"] == GROUP and dict(k)["topic"] == TOPIC
        }
        diff = [
            v
            for k, v in m.get("rocketmq_group_diff", {}).items()
            if ("group", GROUP) in k and ("topic", TOPIC) in k
        ]
        return (
            queue_lag == {(q["broker"], q["queue_id"]): q["lag"] for q in progress["queues"]}
            and committed == {"broker-a": progress["total_consumer_offset"]}
            and diff == [progress["total_lag"]]
        )

    assert wait_until(matches, timeout=20)
    m = metrics(dashboard.url)
    accumulation = [
        v
        for k, v in m["rocketmq_message_accumulation"].items()
        if ("group", GROUP) in k and ("topic", TOPIC) in k
    ]
    assert accumulation == [10]
    produced = [v for k, v in m["rocketmq_producer_offset"].items() if ("topic", TOPIC) in k]
    assert produced == [progress["total_broker_offset"]]
    latency = [
        v
        for k, v in m["rocketmq_group_get_latency_by_storetime"].items()
        if ("group", GROUP) in k and ("topic", TOPIC) in k
    ]
    assert len(latency) == 1
    assert latency[0] > 0  # the oldest unconsumed message waits
    assert m["rocketq_namesrv_up"] == {(): 1.0}
    assert (
        m["rocketq_broker_up"][
            (("broker", "broker-a"), ("brokerIP", cluster.broker_addr), ("cluster", "DefaultCluster"))
        ]
        == 1
    )
    assert (("group", GROUP),) in m["rocketq_rebalances_total"]
    assert m["rocketq_duplicate_client_ids"][(("group", GROUP),)] == 0
    owners_now = [
        v for k, v in m["rocketq_queue_owners"].items() if ("topic", TOPIC) in k and ("group", GROUP) in k
    ]
    assert owners_now == [0.0] * 4  # nobody online: nobody reads them


def test_dashboard_keeps_serving_with_the_name_server_down(
    tmp_path: Path, chromium: Any, shots: Path
) -> None:
    cluster: ClusterThread | None = ClusterThread(tmp_path / "doomed")
    assert cluster is not None
    server: BackgroundServer | None = None
    try:
        cluster.create_topic(TOPIC, 2)
        got = Received()
        c1 = consumer(cluster, "c1", got)
        config = DashboardConfig(namesrv=cluster.namesrv, poll_interval=0.3, request_timeout=1.0)
        server = BackgroundServer(create_app(config)).start()
        page, errors = new_page(chromium)
        page.goto(server.url + f"groups/{GROUP}")
        page.wait_for_selector("#ownership .cell")
        c1.shutdown()
        cluster.close()
        cluster = None

        page.wait_for_selector("#poll-banner", timeout=20_000)  # the open group page says so, in place
        assert "cannot reach" in page.inner_text("#poll-banner")
        page.goto(server.url)
        banner = page.inner_text("#banner")
        assert "cannot reach name server" in banner
        assert "Traceback" not in page.content()
        page.screenshot(path=str(shots / "namesrv-down.png"), full_page=True)
        status, _ = get(server.url)
        assert status == 502
        status, text = get(server.url + "metrics")
        assert status == 200
        assert "rocketq_namesrv_up 0.0" in text
        for path in ("topics", "groups", f"topics/{TOPIC}", f"messages?topic={TOPIC}&key=k", "planner"):
            status, body = get(server.url + path)
            assert status in (200, 502), path
            assert "Traceback" not in body
        assert errors == []
    finally:
        if server is not None:
            server.stop()
        if cluster is not None:
            cluster.close()


def test_exporter_serves_only_metrics(cluster: ClusterThread) -> None:
    config = DashboardConfig(namesrv=cluster.namesrv, metrics_interval=0.5)
    with BackgroundServer(create_exporter_app(config)) as server:
        status, text = get(server.url + "metrics")
        assert status == 200
        names = {f.name for f in text_string_to_metric_families(text)}
        assert {
            "rocketmq_broker_tps",
            "rocketmq_producer_offset",
            "rocketq_rebalances",
            "rocketq_namesrv_up",
        } <= names
        assert get(server.url + "groups")[0] == 404


def test_cli_dashboard_prints_where_it_listens_and_stops_on_sigint(cluster: ClusterThread) -> None:
    proc = CliProcess(["dashboard", "--port", "0", "--namesrv", cluster.namesrv])
    try:
        assert proc.wait_for(lambda lines: any(x.startswith("rocketq dashboard ready: ") for x in lines))
        url = next(x for x in proc.snapshot() if x.startswith("rocketq dashboard ready: ")).split()[3]
        assert url.startswith("http://127.0.0.1:")
        status, body = get(url)
        assert status == 200
        assert "Cluster" in body
        proc.signal(signal.SIGINT)
        assert proc.wait() == 0
        # the port is taken: one line, exit code 2
        port = url.rstrip("/").rsplit(":", 1)[1]
        with BackgroundServer(create_exporter_app(DashboardConfig(namesrv=cluster.namesrv)), port=int(port)):
            busy = CliProcess(["exporter", "--port", port, "--namesrv", cluster.namesrv])
            try:
                assert busy.wait() == 2
                assert len(busy.errors) == 1
                assert busy.errors[0].startswith(
                    f"rocketq exporter: error: cannot listen on 127.0.0.1:{port}"
                )
            finally:
                busy.close()
    finally:
        proc.close()


def test_a_duplicated_client_id_is_flagged_on_the_page_and_in_the_metrics(
    cluster: ClusterThread, dashboard: BackgroundServer, chromium: Any, shots: Path
) -> None:
    cluster.create_topic(TOPIC, 4)
    # two processes forced to one client id (RocketMQ's duplicate-id bug): both take the same queues
    procs = [
        CliProcess(consume_args(cluster.namesrv, TOPIC, GROUP, "--instance", "shared", "--from", "first"))
        for _ in range(2)
    ]
    try:
        for p in procs:
            assert p.wait_for(lambda lines: any(x.startswith("REBALANCE ") for x in lines))
        page, errors = new_page(chromium)
        page.goto(dashboard.url + f"groups/{GROUP}")
        page.wait_for_selector("#duplicates:not([hidden])", timeout=30_000)
        banner = page.inner_text("#duplicates")
        assert "DUPLICATE CLIENT ID" in banner
        assert "registered by 2 connections" in banner
        page.wait_for_selector("#ownership .cell.shared")
        shared = page.eval_on_selector_all(
            "#ownership .cell.shared", "els => els.map((e) => e.dataset.owners)"
        )
        assert shared
        assert set(shared) == {"2"}
        page.screenshot(path=str(shots / "duplicate-client-id.png"), full_page=True)

        def shared_owners() -> dict[str, Any] | None:
            # the monitor collects for /metrics on its own cycle: wait for one that saw both members
            m = metrics(dashboard.url)
            owners = [
                v
                for k, v in m.get("rocketq_queue_owners", {}).items()
                if ("topic", TOPIC) in k and ("group", GROUP) in k
            ]
            return m if 2.0 in owners else None

        assert wait_until(lambda: shared_owners() is not None, 30.0)
        m = shared_owners()
        assert m is not None
        assert m["rocketq_duplicate_client_ids"][(("group", GROUP),)] == 1
        assert errors == []
    finally:
        for p in procs:
            p.signal(signal.SIGTERM)
        for p in procs:
            p.wait()
            p.close()
