"""The dashboard as an operator uses it beside RocketMQ's: one broker, one dashboard and one
headless Chromium for the whole module (``docs/dashboard.md``, the parity table).

Each test of a bug of issue 30 failed on the code before it: a key search capped at 64 with a
card per result, a missing queue id shown as the broker's raw ``CODE: 1 DESC:``, offset ``-1``
refused as "not a number", a silent name server shown green, ``/favicon.ico`` a 404, uptime as
``[ 0 days, ... ]``, client ids cut in the ownership tiles. Cases are drawn at random (the seed
is printed with every assertion that uses it).
"""

from __future__ import annotations

import json
import os
import random
import re
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rocketq import ClientConfig, ConsumeConcurrentlyStatus, ConsumeFromWhere, Message, Producer, PushConsumer
from rocketq.admin import Admin
from rocketq.dashboard import BackgroundServer, DashboardConfig, create_app
from rocketq.models import MessageQueue
from tests import browserkit
from tests.integration.clientkit import ClusterThread, Received, wait_until

pytestmark = pytest.mark.integration

OK = ConsumeConcurrentlyStatus.CONSUME_SUCCESS
SHOTS = os.environ.get("ROCKETQ_DASHBOARD_SHOTS")
"""A folder to write each page's screenshot to (``docs/dashboard`` holds the committed ones)."""


def shot(page: Any, name: str) -> None:
    """The page's top 1,000 px at 1280 px wide, when ``ROCKETQ_DASHBOARD_SHOTS`` names a folder."""
    if SHOTS:
        height = min(int(page.evaluate("document.documentElement.scrollHeight")), 1000)
        clip = {"x": 0, "y": 0, "width": 1280, "height": height}
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True, clip=clip)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterThread]:
    c = ClusterThread(tmp_path_factory.mktemp("dash-ops"))
    try:
        yield c
    finally:
        c.close()


@pytest.fixture(scope="module")
def dash_app(cluster: ClusterThread) -> Any:
    config = DashboardConfig(
        namesrv=cluster.namesrv, poll_interval=0.3, sample_interval=0.5, topic_sample_interval=0.5
    )
    return create_app(config)


@pytest.fixture(scope="module")
def dashboard(dash_app: Any) -> Iterator[BackgroundServer]:
    with BackgroundServer(dash_app) as server:
        yield server


@pytest.fixture(scope="module")
def admin(cluster: ClusterThread) -> Iterator[Admin]:
    with Admin(cluster.namesrv) as a:
        yield a


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium for the module (no test here runs asyncio on the main thread)."""
    why = browserkit.missing()
    if why is not None:
        pytest.skip(why)
    with browserkit.launch() as b:
        yield b


class Page:
    """A browser page that records script errors and console errors (a 404 is one)."""

    def __init__(self, browser: Any, width: int = 1280) -> None:
        self.page = browser.new_page(viewport={"width": width, "height": 900})
        self.errors: list[str] = []
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.page.on("console", lambda msg: self.errors.append(msg.text) if msg.type == "error" else None)

    def __enter__(self) -> Any:
        return self.page

    def __exit__(self, *exc: object) -> None:
        self.page.close()


def get(url: str) -> tuple[int, str, dict[str, str]]:
    try:
        with urllib.request.urlopen(url, timeout=30) as answer:
            return answer.status, answer.read().decode(), dict(answer.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), dict(exc.headers)


def producer(cluster: ClusterThread, name: str) -> Producer:
    config = ClientConfig(namesrv=cluster.namesrv, client_ip="127.0.0.1", instance_name=name)
    return Producer(f"{name}_group", client_config=config)


# ------------------------------------------------------------------------------------ the bugs


def test_favicon_uptime_and_a_green_badge_only_when_everything_answers(
    cluster: ClusterThread, dashboard: BackgroundServer, browser: Any
) -> None:
    status, body, headers = get(dashboard.url + "favicon.ico")
    assert status == 200
    assert headers["content-type"].startswith("image/svg+xml")
    assert body.startswith("<svg")
    holder = Page(browser)
    with holder as page:
        # the sampler asks the name server and the broker every 0.5 s: green once both answered
        assert wait_until(
            lambda: (
                page.goto(dashboard.url) is not None and page.get_attribute("#health", "data-level") == "ok"
            ),
            timeout=10,
        )
        assert "live: 1 name server(s) and 1 broker(s) answer" in page.inner_text("#health")
        uptime = page.inner_text("#brokers td.uptime")
        assert re.fullmatch(r"\d+ s|\d+ min \d+ s", uptime), uptime
        assert "days" in (page.get_attribute("#brokers td.uptime", "title") or "")
    assert holder.errors == []


def test_key_search_counts_every_match_pages_them_and_takes_a_time_range(
    cluster: ClusterThread, dashboard: BackgroundServer, browser: Any
) -> None:
    """Before: "64 message(s) for key k1" whatever the count, a card per message."""
    seed = random.randrange(1 << 32)
    rng = random.Random(seed)
    topic = "KeySearch"
    cluster.create_topic(topic, rng.randint(2, 4))
    early, late = rng.randint(70, 130), rng.randint(5, 40)
    with producer(cluster, "dash-keys") as p:
        for i in range(early):
            p.send(Message(topic, f"early-{i}", keys=rng.choice(["k1 other", "k1"])))
        p.send(Message(topic, "noise", keys="k2"))
        mid = int(time.time() * 1000) + 1
        while int(time.time() * 1000) <= mid:  # the late ones are stored after mid, to the ms
            pass
        for i in range(late):
            p.send(Message(topic, f"late-{i}", keys="k1"))
    total = early + late
    holder = Page(browser)
    with holder as page:
        page.goto(dashboard.url + f"messages?topic={topic}&key=k1")
        assert f"{total} message(s) for key k1 in {topic}" in page.inner_text("#found"), seed
        assert page.eval_on_selector_all("#results tbody tr", "e => e.length") == 50, seed
        assert page.eval_on_selector_all("section.message", "e => e.length") == 0  # no cards
        assert page.evaluate("document.documentElement.scrollHeight") < 3000, seed
        assert browserkit.layout_problems(page, 1280) == []
        # newest first: the late ones lead
        assert page.inner_text("#results tbody tr:first-child td.body").startswith("late-"), seed
        pages = -(-total // 50)
        seen = page.eval_on_selector_all("#results tbody td.body", "e => e.map((x) => x.innerText)")
        for _ in range(pages - 1):
            page.click("#next")
            page.wait_for_selector("#pager")
            seen += page.eval_on_selector_all("#results tbody td.body", "e => e.map((x) => x.innerText)")
        assert sorted(seen) == sorted(
            [f"early-{i}" for i in range(early)] + [f"late-{i}" for i in range(late)]
        )
        assert page.query_selector("#next") is None
        # a time range: only the late ones
        page.goto(dashboard.url + f"messages?topic={topic}&key=k1&begin={mid}")
        assert f"{late} message(s) for key k1 in {topic}" in page.inner_text("#found"), seed
        # the topic and a time range alone: every message stored since mid
        page.goto(dashboard.url + f"messages?topic={topic}&begin={mid}")
        assert f"{late} message(s) for {topic}" in page.inner_text("#found"), seed
        page.goto(dashboard.url + f"messages?topic={topic}&key=k1")
        shot(page, "messages-search")
    assert holder.errors == [], seed


def test_a_queue_that_does_not_exist_and_offset_minus_one_get_sentences(
    cluster: ClusterThread, dashboard: BackgroundServer
) -> None:
    seed = random.randrange(1 << 32)
    rng = random.Random(seed)
    topic = "QueueWords"
    queues = rng.randint(1, 6)
    cluster.create_topic(topic, queues)
    held = rng.randint(1, 5)
    with producer(cluster, "dash-words") as p:
        for i in range(held):
            p.send(Message(topic, f"m{i}"), queue=MessageQueue(topic, "broker-a", 0))
    missing = rng.randint(queues, 99)
    status, body, _ = get(dashboard.url + f"messages?topic={topic}&queue=broker-a:{missing}&offset=0")
    assert status == 400, seed
    assert "CODE:" not in body, seed
    want = f"queue {missing} does not exist: topic {topic} has queues 0..{queues - 1} on broker-a"
    assert want in body, (seed, body[-2000:])
    status, body, _ = get(dashboard.url + f"messages?topic={topic}&queue=broker-a:0&offset=-1")
    assert status == 400, seed
    assert "offset must be a number" not in body
    assert (
        f"offset -1 is not an offset of queue broker-a:0: offsets count up from 0 "
        f"(it holds offsets 0..{held - 1}, the newest is {held - 1})"
    ) in body, (seed, body[-2000:])


class SilentServer:
    """Accepts connections on 127.0.0.1 and never answers (nor closes them) until closed."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.addr = f"127.0.0.1:{self.sock.getsockname()[1]}"
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def close(self) -> None:
        self.sock.close()
        for c in self.held:
            c.close()
        self.thread.join(5)


def test_a_name_server_that_never_answers_is_shown_red_within_the_page_budget(browser: Any) -> None:
    """Before: every page waited the 3 s request timeout and the group page said "live"."""
    silent = SilentServer()
    budget = round(random.uniform(0.5, 1.0), 2)
    config = DashboardConfig(
        namesrv=silent.addr, page_budget=budget, request_timeout=3.0, sample_interval=0.5
    )
    try:
        with BackgroundServer(create_app(config)) as server:
            for path in ("", "topics/T", "groups/g", "api/groups/g"):
                started = time.monotonic()
                status, body, _ = get(server.url + path)
                took = time.monotonic() - started
                assert took < budget + 1.0, (path, took, budget)
                assert status in (502, 504) or path.startswith("api/"), (path, status)
                assert silent.addr in body, (path, body[-1500:])
            holder = Page(browser)
            with holder as page:
                page.goto(server.url)
                assert page.get_attribute("#health", "data-level") == "down"
                assert f"no answer: name server {silent.addr}" in page.inner_text("#health")
                page.goto(server.url + "groups/g")
                page.wait_for_selector("#live.stale")
                assert page.inner_text("#live") == "no answer"
                assert silent.addr in (page.get_attribute("#live", "title") or "")
    finally:
        silent.close()


def test_client_ids_are_whole_in_the_tiles_and_the_members_table(
    cluster: ClusterThread, dashboard: BackgroundServer, browser: Any
) -> None:
    """Before: ``14484#6724…`` in every tile (cut with an ellipsis)."""
    seed = random.randrange(1 << 32)
    rng = random.Random(seed)
    topic, group = "TileTopic", "tile_group"
    cluster.create_topic(topic, 4)
    instance = f"{rng.randint(1000, 99999)}#{rng.randint(10**15, 10**16)}"
    c = PushConsumer(
        group,
        client_config=ClientConfig(namesrv=cluster.namesrv, client_ip="127.0.0.1", instance_name=instance),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )
    got = Received()
    c.subscribe(topic)
    c.register_listener(lambda msgs: (got.add("c", msgs), OK)[1])
    c.start()
    try:
        holder = Page(browser)
        with holder as page:
            page.goto(dashboard.url + f"groups/{group}")
            page.wait_for_selector(f"#ownership .cell[data-queue^='{topic}@']", timeout=30_000)
            cells = page.eval_on_selector_all(
                f"#ownership .cell[data-queue^='{topic}@'] span",
                "els => els.map((e) => [e.innerText, e.scrollWidth <= e.clientWidth + 1,"
                " e.parentElement.title])",
            )
            assert len(cells) == 4, seed
            for text, fits, title in cells:
                assert text == instance, (seed, text)
                assert fits, (seed, text)
                assert f"127.0.0.1@{instance}" in title, seed
            assert f"127.0.0.1@{instance}" in page.inner_text("#members tbody"), seed
            assert browserkit.layout_problems(page, 1280) == []
            page.set_viewport_size({"width": 390, "height": 800})
            assert browserkit.layout_problems(page, 390) == []
            # the member's own report, one click away: the whole id, its queues and subscriptions
            page.click(f"#members tbody a:has-text('{instance}')")
            page.wait_for_selector("#queues")
            assert f"127.0.0.1@{instance}" in page.inner_text("h1"), seed
            held = page.eval_on_selector_all("#queues tbody td:first-child", "e => e.map((x) => x.innerText)")
            assert {q for q in held if q.startswith(topic)} == {f"{topic}@broker-a:{i}" for i in range(4)}
            assert f"{topic} [*]" in page.inner_text("#subscriptions"), seed
            assert browserkit.layout_problems(page, 390) == []
            page.set_viewport_size({"width": 1280, "height": 900})
            assert browserkit.layout_problems(page, 1280) == []
            shot(page, "client")
        assert holder.errors == [], seed
    finally:
        c.shutdown()


def _quote(s: str) -> str:
    return urllib.parse.quote(s, safe="")


# ------------------------------------------------------------------------------------ actions


def token_of(url: str) -> str:
    _, body, _ = get(url)
    m = re.search(r'name="token" value="([^"]+)"', body)
    assert m is not None
    return m.group(1)


def post(url: str, fields: list[tuple[str, str]]) -> tuple[int, str]:
    data = urllib.parse.urlencode(fields).encode()
    request = urllib.request.Request(url, data=data, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_send_and_delete_a_topic_ask_first_and_do_exactly_what_they_said(
    cluster: ClusterThread, admin: Admin, dashboard: BackgroundServer, browser: Any
) -> None:
    seed = random.randrange(1 << 32)
    rng = random.Random(seed)
    doomed, kept = f"Doomed{rng.randint(0, 999)}", "KeptTopic"
    cluster.create_topic(doomed, rng.randint(1, 4))
    cluster.create_topic(kept, 2)
    body = f"test-{rng.randrange(10**9)}"
    holder = Page(browser)
    with holder as page:
        page.goto(dashboard.url + f"topics/{doomed}")
        page.fill("#send input[name=body]", body)
        page.fill("#send input[name=key]", "probe")
        page.click("#send button")
        effects = page.inner_text("#effects")
        assert f"sends one message of {len(body)} bytes to {doomed}, key probe" in effects, seed
        shot(page, "confirm")
        page.click("#cancel")  # cancelled: nothing sent
        page.wait_for_url(f"**/topics/{doomed}")
        assert admin.topic_stats(doomed).total_messages == 0, seed
        page.fill("#send input[name=body]", body)
        page.fill("#send input[name=key]", "probe")
        page.click("#send button")
        page.click("#confirm-button")
        page.wait_for_selector(".banner.notice")
        assert "sent message" in page.inner_text(".banner.notice"), seed
        assert body in page.inner_text("main"), seed  # the message, looked up by its id
        assert admin.topic_stats(doomed).total_messages == 1, seed
        assert [m.body.decode() for m in admin.query_message(doomed, "probe")] == [body], seed
        # the producers page lists the dashboard's own producer
        page.goto(dashboard.url + "producers?group=rocketq_dashboard_producer")
        assert "1 connection(s) of rocketq_dashboard_producer" in page.inner_text("#found")
        assert "rocketq-dashboard-" in page.inner_text("#producers")
        shot(page, "producers")

        # delete: a mistyped name changes nothing, the right one deletes that topic only
        page.goto(dashboard.url + f"topics/{doomed}")
        page.click("#delete button")
        assert "1 message(s) on broker-a can no longer be read" in page.inner_text("#effects"), seed
        page.fill("input[name=confirm_name]", doomed + "x")
        page.click("#confirm-button")
        assert f"type {doomed} to confirm: nothing was changed" in page.inner_text("#banner"), seed
        assert doomed in admin.topic_list(), seed
        page.fill("input[name=confirm_name]", doomed)
        page.click("#confirm-button")
        page.wait_for_url("**/topics?**")
        assert f"topic {doomed} deleted from broker-a" in page.inner_text(".banner.notice"), seed
        topics = admin.topic_list()
        assert doomed not in topics, seed
        assert kept in topics, seed
    assert holder.errors == [], seed
    # without the form's token nothing happens (another site cannot post it)
    status, text = post(dashboard.url + f"topics/{kept}/delete", [("confirmed", "1"), ("confirm_name", kept)])
    assert status == 303 or "form has expired" in text
    assert kept in admin.topic_list()


def test_group_settings_are_created_updated_and_deleted_after_asking(
    cluster: ClusterThread, admin: Admin, dashboard: BackgroundServer, browser: Any
) -> None:
    seed = random.randrange(1 << 32)
    rng = random.Random(seed)
    group = f"cfg_group_{rng.randint(0, 999)}"
    retries = rng.randint(0, 15)
    holder = Page(browser)
    with holder as page:
        page.goto(dashboard.url + "groups")
        page.fill("#group-settings input[name=group]", group)
        page.click("#group-settings button")
        page.wait_for_selector("#absent")
        page.fill("#update input[name=retry_max_times]", str(retries))
        page.uncheck("#update input[name=consume_broadcast_enable]")
        page.click("#update button")
        effects = page.inner_text("#effects")
        assert f"creates the group with: retry times: 16 -> {retries}" in effects, seed
        assert "broadcast allowed: yes -> no" in effects, seed
        assert group not in admin.group_configs(cluster.broker_addr), seed  # asked, not written
        page.click("#confirm-button")
        page.wait_for_selector(".banner.notice")
        config = admin.group_configs(cluster.broker_addr)[group]
        assert (config.retry_max_times, config.consume_broadcast_enable) == (retries, False), seed
        assert (config.retry_queue_nums, config.consume_from_min_enable) == (1, True), seed
        assert page.inner_text("#settings tr[data-field=retry_max_times]").split()[-1] == str(retries)
        shot(page, "group-settings")
        # no broker ticked, or a broker that is not there: refused, nothing written
        token = token_of(dashboard.url + "topics")
        form = [("token", token), ("retry_max_times", "7"), ("retry_queue_nums", "1"), ("broker_id", "0")]
        form += [("which_broker_when_consume_slowly", "1"), ("confirmed", "1")]
        for brokers in ([], [("broker", "broker-zz")]):
            status, text = post(dashboard.url + f"groups/{group}/config", form + brokers)
            assert status == 400, seed
            assert "choose at least one broker" in text or "no master broker named broker-zz" in text
            assert admin.group_configs(cluster.broker_addr)[group].retry_max_times == retries, seed
        # the same settings again: nothing to change, nothing asked
        page.click("#update button")
        assert "nothing to change" in page.inner_text(".banner.notice"), seed
        # delete: the group's name typed wrong changes nothing
        page.click("#delete button")
        page.fill("input[name=confirm_name]", "nope")
        page.click("#confirm-button")
        assert group in admin.group_configs(cluster.broker_addr), seed
        page.fill("input[name=confirm_name]", group)
        page.click("#confirm-button")
        page.wait_for_url("**/groups?**")
        assert group not in admin.group_configs(cluster.broker_addr), seed
    assert holder.errors == [], seed


def test_skip_the_backlog_and_consumed_or_not_per_group(
    cluster: ClusterThread, admin: Admin, dashboard: BackgroundServer
) -> None:
    seed = random.randrange(1 << 32)
    rng = random.Random(seed)
    topic, group = "SkipTopic", "skip_group"
    cluster.create_topic(topic, 2)
    done, backlog = rng.randint(2, 6), rng.randint(3, 12)
    with producer(cluster, "dash-skip") as p:
        first = [p.send(Message(topic, f"old-{i}")) for i in range(done)]
        got = Received()
        c = PushConsumer(
            group,
            client_config=ClientConfig(namesrv=cluster.namesrv, client_ip="127.0.0.1", instance_name="skip"),
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        )
        c.subscribe(topic)
        c.register_listener(lambda msgs: (got.add("c", msgs), OK)[1])
        c.start()
        try:
            assert wait_until(lambda: got.distinct() == done), seed
        finally:
            c.shutdown()  # commits its offsets
        later = [p.send(Message(topic, f"new-{i}")) for i in range(backlog)]
    _, body, _ = get(dashboard.url + f"messages?topic={topic}&id={first[0].msg_id}")
    assert f"{group}: consumed" in body, seed
    _, body, _ = get(dashboard.url + f"messages?topic={topic}&id={later[0].msg_id}")
    assert f"{group}: not yet" in body, seed
    token = token_of(dashboard.url + "topics")
    url = dashboard.url + f"groups/{group}/skip"
    status, body = post(url, [("token", token), ("topic", topic)])
    assert status == 200, seed
    assert f"{backlog} message(s) of lag will never be consumed" in body, (seed, body[-800:])
    status, body = post(url, [("token", token), ("topic", topic), ("confirmed", "1"), ("confirm_name", "x")])
    assert f"type {group} to confirm: nothing was changed" in body, seed
    assert sum(q.lag for q in admin.group_progress(group).queues if q.queue.topic == topic) == backlog, seed
    status, body = post(
        url, [("token", token), ("topic", topic), ("confirmed", "1"), ("confirm_name", group)]
    )
    progress = [q for q in admin.group_progress(group).queues if q.queue.topic == topic]
    assert sum(q.lag for q in progress) == 0, seed
    assert all(q.consumer_offset == q.broker_offset for q in progress), seed
    _, body, _ = get(dashboard.url + f"messages?topic={topic}&id={later[-1].msg_id}")
    assert f"{group}: consumed" in body, seed
    # one message sent to the group again: one copy in its retry topic, asked first
    retry = f"%RETRY%{group}"
    copies = admin.topic_stats(retry).total_messages if retry in admin.topic_list() else 0
    fields = [("token", token), ("topic", topic), ("id", later[0].msg_id), ("group", group)]
    status, body = post(dashboard.url + "messages/resend", fields)
    assert f"sends a copy to {retry}" in body, seed
    assert (admin.topic_stats(retry).total_messages if retry in admin.topic_list() else 0) == copies
    status, body = post(dashboard.url + "messages/resend", [*fields, ("confirmed", "1")])
    assert f"message {later[0].msg_id} sent to {group} again" in body, seed
    assert admin.topic_stats(retry).total_messages == copies + 1, seed
    copy = admin.read_queue(MessageQueue(retry, "broker-a", 0), copies, 1).messages[0]
    assert copy.body == b"new-0", seed
    assert copy.properties["ORIGIN_MESSAGE_ID"] == later[0].msg_id, seed


def test_dead_letters_are_browsed_exported_and_sent_back_to_their_group(
    cluster: ClusterThread, admin: Admin, dashboard: BackgroundServer, browser: Any
) -> None:
    seed = random.randrange(1 << 32)
    rng = random.Random(seed)
    topic, group = "DeadTopic", "dead_group"
    cluster.create_topic(topic, 2)
    bad = rng.randint(2, 5)
    failing = threading.Event()
    failing.set()
    got = Received()

    def listen(msgs: list[Any]) -> ConsumeConcurrentlyStatus:
        if failing.is_set() and any(m.body.startswith(b"bad-") for m in msgs):
            return ConsumeConcurrentlyStatus.RECONSUME_LATER
        got.add("c", msgs)
        return OK

    c = PushConsumer(
        group,
        client_config=ClientConfig(namesrv=cluster.namesrv, client_ip="127.0.0.1", instance_name="dead"),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        max_reconsume_times=0,  # the first failure goes to the dead-letter queue
        consume_message_batch_max_size=1,
    )
    c.subscribe(topic)
    c.register_listener(listen)
    c.start()
    try:
        with producer(cluster, "dash-dead") as p:
            for i in range(bad):
                p.send(Message(topic, f"bad-{i}", keys=f"bad-{i}"))
        dlq = f"%DLQ%{group}"
        assert wait_until(
            lambda: dlq in admin.topic_list() and admin.topic_stats(dlq).total_messages == bad, 30
        ), seed
        status, text, headers = get(dashboard.url + f"dlq/export?group={group}")
        assert status == 200
        assert "jsonl" in headers["content-disposition"]
        lines = [x for x in text.splitlines() if x]
        assert sorted(json_body(x) for x in lines) == sorted(f"bad-{i}" for i in range(bad)), seed
        one = json.loads(rng.choice(lines))
        _, text, _ = get(dashboard.url + f"dlq/export?group={group}&id={one['msg_id']}")
        assert [json_body(x) for x in text.splitlines() if x] == [one["body"]], seed
        failing.clear()
        holder = Page(browser)
        with holder as page:
            page.goto(dashboard.url + f"dlq?group={group}")
            assert f"{bad} dead letter(s) of {group}" in page.inner_text("#found"), seed
            shot(page, "dead-letters")
            page.check("#results tbody tr:first-child input[name=id]")
            chosen = page.inner_text("#results tbody tr:first-child td.body")
            page.click("#resend button")
            assert f"Send 1 dead letter(s) back to {group}?" in page.inner_text("h1")
            page.click("#cancel")
            page.wait_for_selector("#results")
            assert got.distinct() == 0, seed
            page.check("#results tbody tr:first-child input[name=id]")
            page.click("#resend button")
            page.click("#confirm-button")
            page.wait_for_selector(".banner.notice")
            assert "1 dead letter(s) sent back" in page.inner_text(".banner.notice"), seed
            assert wait_until(lambda: got.distinct() == 1, 30), seed
            assert [m.body.decode() for m in got.messages] == [chosen], seed
            assert admin.topic_stats(dlq).total_messages == bad, seed  # the dead letters stay
        assert holder.errors == [], seed
    finally:
        c.shutdown()


def json_body(line: str) -> str:
    return str(json.loads(line)["body"])


PAGES = (
    ("cluster", ""),
    ("topics", "topics"),
    ("topic", "topics/PagesTopic"),
    ("groups", "groups"),
    ("group", "groups/pages_group"),
    ("messages-by-id", None),
    ("planner", "planner"),
    ("producers-empty", "producers"),
    ("dead-letters-empty", "dlq"),
    ("broker-config", None),
    ("message-trace", None),
)


def test_every_page_loads_clean_and_fits_1280_and_390(
    cluster: ClusterThread, admin: Admin, dash_app: Any, dashboard: BackgroundServer, browser: Any
) -> None:
    """Runs last in the module: the pages hold what the tests before made."""
    cluster.create_topic("PagesTopic", 2)
    # its traffic counts from its first reading (a topic's TPS is the change between two)
    assert wait_until(lambda: "PagesTopic" in dash_app.state.monitor.topic_totals, 10)
    with producer(cluster, "dash-pages") as p:
        sent = p.send(Message("PagesTopic", "page-body", keys="k1"))
        # traffic the busiest topics' chart sees (it reads every 0.5 s): more than any test before
        for i in range(200):
            p.send(Message("PagesTopic", f"traffic-{i}"))
    config = ClientConfig(namesrv=cluster.namesrv, client_ip="127.0.0.1", instance_name="dash-traced")
    with Producer("dash_traced", client_config=config, trace=True) as traced_producer:
        traced = traced_producer.send(Message("PagesTopic", "traced-body"))
    got = Received()
    c = PushConsumer(
        "pages_group",
        client_config=ClientConfig(namesrv=cluster.namesrv, client_ip="127.0.0.1", instance_name="pages"),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )
    c.subscribe("PagesTopic")
    c.register_listener(lambda msgs: (got.add("c", msgs), OK)[1])
    c.start()
    try:
        assert wait_until(lambda: got.distinct() == 202)
        assert wait_until(lambda: len(admin.message_trace(traced.msg_id, topic="PagesTopic").events) >= 1, 15)
        _every_page(cluster, dashboard, browser, sent.msg_id, traced.msg_id)
    finally:
        c.shutdown()


def _every_page(
    cluster: ClusterThread, dashboard: BackgroundServer, browser: Any, msg_id: str, traced: str
) -> None:
    special = {
        "message-trace": f"messages?trace={traced}&topic=PagesTopic",
        "messages-by-id": f"messages?topic=PagesTopic&id={msg_id}",
        "broker-config": f"brokers/{urllib.parse.quote(cluster.broker_addr, safe='')}/config",
    }
    for name, given in PAGES:
        path = given if given is not None else special[name]
        for width in (1280, 390):
            holder = Page(browser, width)
            with holder as page:
                answer = page.goto(dashboard.url + path)
                assert answer is not None, name
                assert answer.status == 200, (name, answer.status)
                if name == "cluster":
                    page.wait_for_selector("#tps figure.chart")
                    assert int(page.get_attribute("#tps figure.chart", "data-points") or 0) >= 2
                    # the most traffic of the window, once the sampler (every 0.5 s) has seen it
                    assert wait_until(
                        lambda: (
                            page.reload() is not None
                            and page.get_attribute("#topic-tps figure", "data-topic") == "PagesTopic"
                        ),
                        timeout=10,
                    ), page.get_attribute("#topic-tps figure", "data-topic")
                if name == "topic":
                    assert int(page.get_attribute("figure#tps", "data-points") or 0) >= 1
                if name == "topics" and width == 1280:  # sorted by a click on a header, both ways
                    names = "els => els.filter((e) => !e.hidden).map((e) => e.cells[0].innerText)"
                    page.click("#topics th:has-text('topic')")
                    up = page.eval_on_selector_all("#topics tbody tr", names)
                    assert up == sorted(up, key=str.lower), up
                    page.click("#topics th:has-text('topic')")
                    assert page.eval_on_selector_all("#topics tbody tr", names) == up[::-1]
                if name == "message-trace":  # a bar per event, on one time axis
                    rows = page.eval_on_selector_all("#trace tbody tr", "e => e.length")
                    assert page.eval_on_selector_all("#trace-graph rect", "e => e.length") == rows >= 1
                if name == "broker-config":
                    assert "brokerName" in page.inner_text("#config")
                problems = browserkit.layout_problems(page, width)
                assert problems == [], (name, width, problems)
                if name == "group":
                    page.wait_for_selector("#ownership .cell")
                if width == 1280 and not name.endswith("-empty"):
                    shot(page, name)
            assert holder.errors == [], (name, width, holder.errors)
