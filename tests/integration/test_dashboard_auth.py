"""Logins on the dashboard and the exporter, as a person and Prometheus meet them: a real rocketq
server, the dashboard (behind :class:`~rocketq.dashboard.auth.LoginGate`) served by uvicorn on
port 0, and a headless Chromium logging in.

Passwords and topic names are drawn at random each run and printed, so a failure replays.
"""

from __future__ import annotations

import base64
import random
import secrets
import signal
import string
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from rocketq import ClientConfig, ConsumeConcurrentlyStatus, ConsumeFromWhere, Message, Producer, PushConsumer
from rocketq.admin import Admin
from rocketq.dashboard import BackgroundServer, DashboardConfig, create_app, create_exporter_app
from rocketq.dashboard.auth import ADMIN, READ_ONLY, LoginConfig, LoginGate, set_user
from tests import browserkit
from tests.integration.clientkit import ClusterThread, Received, wait_until
from tests.integration.clikit import CliProcess

pytestmark = pytest.mark.integration

IDLE = 600.0


class Clock:
    """The gate's clock: it moves only when the test says."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def password() -> str:
    alphabet = string.ascii_letters + string.digits + string.punctuation + " éß"
    return "".join(random.choice(alphabet) for _ in range(random.randint(8, 24)))


@pytest.fixture
def users(tmp_path: Path) -> dict[str, str]:
    """alice (admin) and bob (read-only) in ``users.properties``, with random passwords."""
    drawn = {"alice": password(), "bob": password()}
    print(f"\npasswords drawn: {drawn!r}")
    set_user(str(tmp_path / "users.properties"), "alice", ADMIN, drawn["alice"])
    set_user(str(tmp_path / "users.properties"), "bob", READ_ONLY, drawn["bob"])
    return drawn


@pytest.fixture
def admin(cluster: ClusterThread) -> Iterator[Admin]:
    with Admin(cluster.namesrv) as a:
        yield a


def log_in(page: Any, url: str, name: str, secret: str) -> None:
    page.fill("input[name=name]", name)
    page.fill("input[name=password]", secret)
    with page.expect_navigation():
        page.click("#login button")


def post_status(page: Any, path: str, body: str) -> int:
    """A same-origin POST from the page's own script (its cookies go along, no form token unless
    ``body`` has one)."""
    return int(
        page.evaluate(
            """async ([path, body]) => (await fetch(path, {method: 'POST', body,
                 headers: {'content-type': 'application/x-www-form-urlencoded'}})).status""",
            [path, body],
        )
    )


def test_login_roles_csrf_and_expiry_in_a_browser(
    cluster: ClusterThread, admin: Admin, users: dict[str, str], tmp_path: Path, chromium: Any
) -> None:
    topic = "Auth" + secrets.token_hex(3)
    held = random.randint(2, 6)
    print(f"topic {topic}, {held} queues")
    cluster.create_topic(topic, held)
    clock = Clock()
    config = DashboardConfig(namesrv=cluster.namesrv, poll_interval=0.3)
    login = LoginConfig(users_file=str(tmp_path / "users.properties"), session_idle=IDLE)
    with BackgroundServer(LoginGate(create_app(config), login, clock=clock)) as server:
        page = chromium.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))

        # nobody: every page leads to the login form, JSON and forms are refused
        page.goto(server.url + "topics")
        assert page.url.startswith(server.url + "login?next=%2Ftopics")
        assert post_status(page, "/topics", f"topic=Sneaky&queues=1&token={'x' * 32}") == 401
        # a wrong password and an unknown name get the same words
        log_in(page, server.url, "alice", users["bob"])
        wrong_password = page.inner_text("#banner")
        log_in(page, server.url, "mallory", users["alice"])
        assert page.inner_text("#banner") == wrong_password == "wrong name or password"
        assert browserkit.layout_problems(page, 1280) == []

        # bob (read-only) sees the pages, and changes nothing
        log_in(page, server.url, "bob", users["bob"])
        page.wait_for_url(server.url + "topics")
        assert topic in page.inner_text("#topics")
        assert "bob (read-only)" in page.inner_text("#who")
        assert browserkit.layout_problems(page, 1280) == []
        cookie = next(c for c in page.context.cookies() if c["name"] == "rocketq_session")
        assert cookie["httpOnly"]
        assert cookie["sameSite"] == "Strict"
        page.goto(server.url + f"topics/{topic}")
        assert topic in page.inner_text("main")
        page.goto(server.url + "topics")
        page.fill("#create input[name=topic]", "BobWasHere")
        page.click("#create button")
        assert "read-only user" in page.inner_text("#banner")
        assert "BobWasHere" not in admin.topic_list()

        # bob's session ends after IDLE seconds unused (the gate's clock jumps)
        clock.now += IDLE - 1
        page.goto(server.url)
        assert page.url == server.url  # still in: each request restarts the idle time
        clock.now += IDLE
        page.goto(server.url + "groups")
        assert "/login?next=%2Fgroups" in page.url

        # alice (admin) changes things through the forms, and only with the session's token
        log_in(page, server.url, "alice", users["alice"])
        page.wait_for_url(server.url + "groups")
        page.goto(server.url + f"topics/{topic}")
        fewer = random.randint(1, held - 1)
        for body in (f"read_queues={fewer}&write_queues={fewer}", f"read_queues={fewer}&token=forged"):
            assert post_status(page, f"/topics/{topic}", body) == 403, body
        assert post_status(page, "/topics", "topic=NoToken&queues=2") == 403
        assert post_status(page, "/logout", "") == 403  # logging out is a form too
        assert [q.read_queue_nums for q in admin.topic_route(topic).queue_datas] == [held]
        assert "NoToken" not in admin.topic_list()
        page.goto(server.url + "topics")
        page.fill("#create input[name=topic]", topic + "New")
        page.fill("#create input[name=queues]", str(fewer))
        page.click("#create button")
        page.wait_for_url(f"**/topics/{topic}New**")
        assert [q.read_queue_nums for q in admin.topic_route(topic + "New").queue_datas] == [fewer]

        page.click("#logout button")
        page.wait_for_url(server.url + "login")
        page.goto(server.url + "topics")
        assert "/login" in page.url
        assert errors == []


def test_a_group_reset_without_the_token_is_refused_and_resets_nothing(
    cluster: ClusterThread, admin: Admin, users: dict[str, str], tmp_path: Path, chromium: Any
) -> None:
    topic, group = "AuthReset", "auth_group"
    count = random.randint(3, 12)
    print(f"{count} messages")
    cluster.create_topic(topic, 2)
    got = Received()
    config = ClientConfig(namesrv=cluster.namesrv, client_ip="127.0.0.1", instance_name="auth")
    consumer = PushConsumer(
        group, client_config=config, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    )
    consumer.subscribe(topic)
    consumer.register_listener(
        lambda msgs: (got.add("c", msgs), ConsumeConcurrentlyStatus.CONSUME_SUCCESS)[1]
    )
    consumer.start()
    try:
        with Producer("auth_producer", client_config=config) as p:
            for i in range(count):
                p.send(Message(topic, f"m{i}"))
        assert wait_until(lambda: got.distinct() == count)
    finally:
        consumer.shutdown()  # its offsets committed as it leaves: an offline group the broker resets
    before = admin.committed_offsets(group, topic)
    assert sum(before.values()) == count
    login = LoginConfig(users_file=str(tmp_path / "users.properties"))
    app = LoginGate(create_app(DashboardConfig(namesrv=cluster.namesrv, poll_interval=0.3)), login)
    with BackgroundServer(app) as server:
        page = chromium.new_page()
        page.goto(server.url + f"groups/{group}")
        log_in(page, server.url, "alice", users["alice"])
        body = f"topic={topic}&to=first&confirm={group}"
        assert post_status(page, f"/groups/{group}/reset", body) == 403
        assert post_status(page, f"/groups/{group}/reset", body + "&token=" + "A" * 32) == 403
        assert admin.committed_offsets(group, topic) == before
        # the same request with the page's token resets (so the refusals above were the token's)
        token = page.eval_on_selector("#logout input[name=token]", "e => e.value")
        assert post_status(page, f"/groups/{group}/reset", body + "&token=" + token) == 200
        assert set(admin.committed_offsets(group, topic).values()) == {0}


def get(url: str, auth: str | None = None) -> tuple[int, str, str]:
    request = urllib.request.Request(url, headers={"Authorization": auth} if auth else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.read().decode(), ""
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), exc.headers.get("WWW-Authenticate", "")


def basic(name: str, secret: str) -> str:
    return "Basic " + base64.b64encode(f"{name}:{secret}".encode()).decode()


def test_the_exporter_serves_metrics_only_with_the_token_or_a_user(
    cluster: ClusterThread, users: dict[str, str], tmp_path: Path
) -> None:
    token = secrets.token_urlsafe(32)
    (tmp_path / "token").write_text(token + "\n")
    login = LoginConfig(
        users_file=str(tmp_path / "users.properties"), metrics_token_file=str(tmp_path / "token")
    )
    app = create_exporter_app(DashboardConfig(namesrv=cluster.namesrv, metrics_interval=0.5))
    with BackgroundServer(LoginGate(app, login, metrics_only=True)) as server:
        url = server.url + "metrics"
        for auth in (
            None,
            "Bearer " + token[:-1],
            "Bearer",
            basic("bob", users["alice"]),
            basic("eve", "x" * 9),
            "Basic !!",
        ):
            status, text, challenge = get(url, auth)
            assert status == 401, auth
            assert "rocketq_" not in text
            assert challenge == 'Basic realm="rocketq"'
        assert get(server.url, None)[0] == 401
        for auth in ("Bearer " + token, basic("bob", users["bob"]), basic("bob", users["bob"])):
            status, text, _ = get(url, auth)
            assert status == 200, auth
            assert "rocketq_namesrv_up" in {f.name for f in text_string_to_metric_families(text)}


def test_dashboard_metrics_take_the_token_while_pages_ask_for_a_login(
    cluster: ClusterThread, users: dict[str, str], tmp_path: Path
) -> None:
    token = secrets.token_urlsafe(24)
    (tmp_path / "token").write_text(token)
    login = LoginConfig(
        users_file=str(tmp_path / "users.properties"), metrics_token_file=str(tmp_path / "token")
    )
    app = create_app(DashboardConfig(namesrv=cluster.namesrv, metrics_interval=0.5))
    with BackgroundServer(LoginGate(app, login)) as server:
        assert get(server.url + "metrics")[0] == 401
        assert get(server.url + "metrics", "Bearer " + token)[0] == 200
        assert get(server.url + "api/groups/g", "Bearer " + token)[0] == 401
        status, text, _ = get(server.url + "topics", "Bearer " + token)
        assert status == 200
        assert 'id="login"' in text


def test_cli_dashboard_with_users_asks_for_a_login(
    cluster: ClusterThread, users: dict[str, str], tmp_path: Path
) -> None:
    token = secrets.token_urlsafe(24)
    (tmp_path / "token").write_text(token)
    proc = CliProcess(
        [
            *("dashboard", "--port", "0", "--namesrv", cluster.namesrv),
            *("--users", str(tmp_path / "users.properties"), "--metrics-token-file", str(tmp_path / "token")),
        ]
    )
    try:
        assert proc.wait_for(lambda lines: any(x.startswith("rocketq dashboard ready: ") for x in lines))
        url = next(x for x in proc.snapshot() if x.startswith("rocketq dashboard ready: ")).split()[3]
        status, text, _ = get(url + "groups")
        assert status == 200
        assert 'id="login"' in text
        assert get(url + "metrics")[0] == 401
        assert get(url + "metrics", basic("alice", users["alice"]))[0] == 200
        assert get(url + "metrics", "Bearer " + token)[0] == 200
        proc.signal(signal.SIGINT)
        assert proc.wait() == 0
    finally:
        proc.close()
