"""The dashboard's users file, password hashes, sessions and the refusal to serve a host beyond
loopback without logins (:mod:`rocketq.dashboard.auth`, :mod:`rocketq.cli._dashboard_login`).

The parser's properties are checked on files and bytes Hypothesis draws; the browser-side
behaviour is in ``tests/integration/test_dashboard_auth.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import ipaddress
import os
import random
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rocketq.cli._dashboard_login import login_config
from rocketq.cli.main import CliError, main
from rocketq.dashboard.auth import (
    ADMIN,
    READ_ONLY,
    LoginConfig,
    LoginGate,
    Sessions,
    User,
    _Watched,
    hash_password,
    is_loopback,
    parse_users,
    read_users,
    verify_password,
)
from rocketq.errors import ConfigError

names = st.from_regex(r"[A-Za-z0-9_.@-]{1,64}", fullmatch=True)
roles = st.sampled_from([ADMIN, READ_ONLY])


@st.composite
def hashes(draw: st.DrawFn) -> str:
    """A well-formed hash (random salt and digest: the parser does not run scrypt)."""
    n = 2 ** draw(st.integers(1, 20))
    r, p = draw(st.integers(1, 32)), draw(st.integers(1, 32))
    salt = base64.b64encode(draw(st.binary(min_size=8, max_size=32))).decode()
    digest = base64.b64encode(draw(st.binary(min_size=16, max_size=64))).decode()
    return f"scrypt${n}${r}${p}${salt}${digest}"


@st.composite
def users_files(draw: st.DrawFn) -> tuple[str, dict[str, User]]:
    """A users file's text (with comments, blank lines, spaces, ``,0`` spelt out or not) and the
    users it holds."""
    users = {
        name: User(name=name, role=draw(roles), password_hash=draw(hashes()))
        for name in draw(st.lists(names, max_size=8, unique=True))
    }
    lines: list[str] = []
    for user in users.values():
        lines += draw(
            st.lists(st.sampled_from(["", "# a comment", "! another", "   ", "#x=y,1"]), max_size=2)
        )
        pad = draw(st.sampled_from(["", " ", "\t"]))
        flag = ",1" if user.role == ADMIN else draw(st.sampled_from(["", ",0", " , 0"]))
        lines.append(f"{pad}{user.name}{pad}={pad}{user.password_hash}{flag}{pad}")
    ending = draw(st.sampled_from(["\n", "\r\n"]))
    return ending.join(lines) + draw(st.sampled_from(["", ending])), users


@settings(max_examples=100, deadline=None)
@given(users_files())
def test_a_users_file_reads_back_as_the_users_written(drawn: tuple[str, dict[str, User]]) -> None:
    text, users = drawn
    assert parse_users(text) == users
    assert parse_users("\n".join(u.line() for u in users.values())) == users


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
@example("admin=admin,1")  # the RocketMQ Dashboard's own example: a plain password
@example("a=scrypt$3$8$1$AAAAAAAAAAA=$AAAAAAAAAAAAAAAAAAAAAA==")  # n not a power of two
@example("a=scrypt$2097152$8$1$AAAAAAAAAAA=$AAAAAAAAAAAAAAAAAAAAAA==")  # n beyond 2**20
def test_any_text_is_users_or_one_config_error(text: str) -> None:
    refusal = ""
    try:
        users = parse_users(text)
    except ConfigError as exc:
        refusal, users = str(exc), {}
    if refusal:
        assert refusal.startswith("line ")
        assert "\n" not in refusal
    for user in users.values():
        assert user.password_hash.startswith("scrypt$")
        assert user.role in (ADMIN, READ_ONLY)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(users_files(), st.data())
def test_a_damaged_file_is_refused_or_read_never_crashes(
    drawn: tuple[str, dict[str, User]], data: st.DataObject
) -> None:
    text, _ = drawn
    if not text:
        return
    at = data.draw(st.integers(0, len(text) - 1))
    junk = data.draw(st.text(min_size=0, max_size=3))
    damaged = text[:at] + junk + text[at + data.draw(st.integers(0, 3)) :]
    print(f"damaged at {at} with {junk!r}")
    try:
        users = parse_users(damaged)
    except ConfigError:
        return
    assert all(u.password_hash.startswith("scrypt$") for u in users.values())


def test_a_plain_password_is_refused_naming_the_line_and_the_fix() -> None:
    with pytest.raises(ConfigError, match=r"line 3: user admin's password is not a hash .* users add admin"):
        parse_users("# RocketMQ Dashboard's users.properties\n\nadmin=admin,1\n")


@settings(max_examples=12, deadline=None)
@given(st.text(min_size=1, max_size=40), st.text(min_size=1, max_size=40))
def test_a_hash_verifies_its_password_only(password: str, other: str) -> None:
    stored = hash_password(password, n=16)  # the cost is in the hash; the default is below
    assert verify_password(password, stored)
    assert verify_password(other, stored) == (other == password)


def test_the_default_hash_is_scrypt_2_14_with_a_salt_of_its_own() -> None:
    password = os.urandom(12).hex()
    first, second = hash_password(password), hash_password(password)
    assert first.startswith("scrypt$16384$8$1$")
    assert first != second
    assert verify_password(password, first)
    assert verify_password(password, second)
    assert not verify_password(password + "x", first)


@settings(max_examples=100, deadline=None)
@given(st.floats(1.0, 1e5), st.lists(st.floats(0.0, 2e5), max_size=12))
def test_a_session_lives_while_used_within_the_idle_time(idle: float, gaps: list[float]) -> None:
    now = [0.0]
    sessions = Sessions(idle, lambda: now[0])
    sid = sessions.open("alice")
    alive = True
    last = now[0]
    for gap in gaps:
        now[0] += gap
        # the time between two uses as the clock tells it (a sum of floats can round a gap equal
        # to the idle time to just below it)
        alive = alive and now[0] - last < idle
        last = now[0]
        got = sessions.get(sid)
        assert (got is not None) == alive, (idle, gaps)
        if got is not None:
            assert got.name == "alice"
    sessions.close(sid)
    assert sessions.get(sid) is None


def test_sessions_are_bounded_and_the_least_recently_used_goes() -> None:
    now = [0.0]
    sessions = Sessions(100.0, lambda: now[0], limit=3)
    ids = []
    for i in range(3):
        now[0] += 1
        ids.append(sessions.open(f"u{i}"))
    now[0] += 1
    assert sessions.get(ids[0]) is not None  # u0 used last: u1 goes
    ids.append(sessions.open("u3"))
    assert [sessions.get(s) is not None for s in ids] == [True, False, True, True]


def test_the_users_file_is_read_again_when_it_changes_and_a_bad_version_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "users"
    path.write_text(User(name="a", role=ADMIN, password_hash=hash_password("p" * 8, n=16)).line())
    watched = _Watched(str(path), read_users)
    assert set(watched.get()) == {"a"}
    path.write_text(
        path.read_text()
        + "\n"
        + User(name="b", role=READ_ONLY, password_hash=hash_password("q" * 8, n=16)).line()
    )
    os.utime(path, ns=(1, 1))  # a different stamp even within the file system's time resolution
    assert set(watched.get()) == {"a", "b"}
    path.write_text("b=plain\n")
    os.utime(path, ns=(2, 2))
    assert set(watched.get()) == {"a", "b"}  # the last good one stays


def test_loopback_hosts() -> None:
    for host in ("127.0.0.1", "127.3.4.5", "::1", "[::1]", "localhost", "LOCALHOST"):
        assert is_loopback(host), host
    for host in ("0.0.0.0", "::", "10.1.2.3", "192.168.0.1", "example.org", "127.0.0.1.nip.io", ""):
        assert not is_loopback(host), host


def random_public_host(rng: random.Random) -> str:
    while True:
        address = (
            ipaddress.ip_address(rng.getrandbits(32))
            if rng.random() < 0.7
            else ipaddress.ip_address(rng.getrandbits(128))
        )
        if not address.is_loopback:
            return str(address)


def test_a_host_beyond_loopback_without_users_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    hosts = ["0.0.0.0", "::", *(random_public_host(rng) for _ in range(3))]
    print(f"seed {seed}: {hosts}")
    for host in hosts:
        for command in ("dashboard", "exporter"):
            assert main([command, "--host", host, "--port", "0", "--namesrv", "127.0.0.1:1"]) == 2, host
            err = capsys.readouterr().err
            assert err.count("\n") == 1, err
            assert f"--host {host} reaches beyond this machine" in err
            assert "--insecure-no-login" in err


def namespace(**values: object) -> argparse.Namespace:
    base: dict[str, object] = {
        "host": "0.0.0.0",
        "users": None,
        "metrics_token_file": None,
        "insecure_no_login": False,
        "session_idle": 1800.0,
    }
    return argparse.Namespace(**{**base, **values})


def test_what_turns_logins_on() -> None:
    assert login_config(namespace(host="127.0.0.1"), exporter=False) is None  # today's behaviour
    assert login_config(namespace(insecure_no_login=True), exporter=False) is None
    on = login_config(namespace(users="u", session_idle=60.0), exporter=False)
    assert on is not None
    assert on.users_file == "u"
    assert on.session_idle == 60.0
    assert login_config(namespace(metrics_token_file="t"), exporter=True) is not None
    with pytest.raises(CliError):  # a token protects /metrics, not the dashboard's forms
        login_config(namespace(metrics_token_file="t"), exporter=False)


def test_users_add_reads_the_password_from_stdin_and_writes_a_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "users.properties")
    password = os.urandom(9).hex() + " é"
    monkeypatch.setattr("sys.stdin", io.StringIO(password + "\n"))
    assert main(["dashboard", "users", "add", "alice", "--role", "admin", "--file", path]) == 0
    assert capsys.readouterr().out == f"added admin user alice in {path}\n", password
    assert os.stat(path).st_mode & 0o777 == 0o600
    users = read_users(path)
    assert users["alice"].role == ADMIN
    assert verify_password(password, users["alice"].password_hash)
    assert password not in Path(path).read_text()
    before = Path(path).read_text()
    for stdin, args, why in (
        ("other-password\n", ["alice", "--role", "read-only"], "already in"),
        ("short\n", ["bob", "--role", "read-only"], "8 characters or more"),
        ("long-enough\n", ["bad name", "--role", "admin"], "a user name is"),
    ):
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        assert main(["dashboard", "users", "add", *args, "--file", path]) == 2
        err = capsys.readouterr().err
        assert why in err
        assert err.count("\n") == 1, err
        assert Path(path).read_text() == before
    monkeypatch.setattr("sys.stdin", io.StringIO("a-new-password\n"))
    assert (
        main(["dashboard", "users", "add", "alice", "--role", "read-only", "--file", path, "--replace"]) == 0
    )
    monkeypatch.setattr("sys.stdin", io.StringIO("bobs-password\n"))
    assert main(["dashboard", "users", "add", "bob", "--role", "read-only", "--file", path]) == 0
    assert main(["dashboard", "users", "remove", "bob", "--file", path]) == 0
    assert main(["dashboard", "users", "remove", "bob", "--file", path]) == 2
    assert f"no user bob in {path}" in capsys.readouterr().err
    users = read_users(path)
    assert set(users) == {"alice"}
    assert users["alice"].role == READ_ONLY
    assert verify_password("a-new-password", users["alice"].password_hash)


def test_the_security_doc_users_file_holds_the_users_it_says() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "security.md").read_text()
    section = doc[doc.index("## The dashboard and the exporter") :]
    block = re.search(r"```properties\n(.*?)```", section, flags=re.DOTALL)
    assert block is not None
    users = parse_users(block.group(1))
    assert {n: u.role for n, u in users.items()} == {"admin": ADMIN, "viewer": READ_ONLY}
    assert verify_password("change-me-at-once", users["admin"].password_hash)
    assert verify_password("look-dont-touch", users["viewer"].password_hash)


# ---------------------------------------------------------------------- the gate's decisions

PATHS = ["/", "/topics", "/topics/T", "/groups/g/reset", "/api/groups/g", "/metrics", "/login", "/logout"]
PATHS += ["/static/dashboard.css", "/messages"]
METRICS_TOKEN = "m" * 24


class _Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def gate(tmp_path_factory: pytest.TempPathFactory) -> tuple[LoginGate, list[dict[str, object]], _Clock]:
    """A gate over an application that records what reaches it (what the gate lets through is the
    property; the dashboard's own pages are tested in the browser)."""
    folder = tmp_path_factory.mktemp("gate")
    lines = [
        User(name="ann", role=ADMIN, password_hash=hash_password("ann-password", n=16)).line(),
        User(name="rob", role=READ_ONLY, password_hash=hash_password("rob-password", n=16)).line(),
    ]
    (folder / "users").write_text("\n".join(lines))
    (folder / "token").write_text(METRICS_TOKEN)
    reached: list[dict[str, object]] = []

    async def application(scope: Any, receive: Any, send: Any) -> None:
        body = (await receive()).get("body", b"")
        reached.append({"path": scope["path"], "state": dict(scope.get("state") or {}), "body": body})
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    clock = _Clock()
    config = LoginConfig(
        users_file=str(folder / "users"), metrics_token_file=str(folder / "token"), session_idle=60.0
    )
    return LoginGate(application, config, clock=clock), reached, clock


def _basic(text: str) -> str:
    return "Basic " + base64.b64encode(text.encode()).decode()


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    method=st.sampled_from(["GET", "HEAD", "POST", "PUT", "DELETE"]),
    path=st.one_of(st.sampled_from(PATHS), st.from_regex(r"/[a-z/]{0,12}", fullmatch=True)),
    who=st.sampled_from(["nobody", "ann", "rob", "expired", "garbage"]),
    token=st.sampled_from(["none", "right", "other", "random"]),
    auth=st.sampled_from(["none", "bearer", "bearer-wrong", "basic-ann", "basic-rob", "basic-wrong", "junk"]),
)
def test_the_gate_lets_through_exactly_what_the_rules_say(
    gate: tuple[LoginGate, list[dict[str, object]], _Clock],
    method: str,
    path: str,
    who: str,
    token: str,
    auth: str,
) -> None:
    app, reached, clock = gate
    clock.now += 1000.0  # every earlier session has expired
    expired = app.sessions.open("ann")
    clock.now += 61.0
    sessions = {name: app.sessions.open(name) for name in ("ann", "rob")}
    sid = {"nobody": None, "expired": expired, "garbage": "x" * 43, **sessions}[who]
    own = app.sessions.get(sid) if sid else None
    other = app.sessions.get(sessions["rob" if who == "ann" else "ann"])
    assert other is not None
    field = {
        "none": "",
        "right": own.csrf if own else "a" * 32,
        "other": other.csrf,
        "random": "b" * 32,
    }[token]
    body = b"topic=T&queues=1" + (f"&token={field}".encode() if token != "none" else b"")
    headers = [(b"cookie", f"rocketq_session={sid}".encode())] if sid else []
    authorization = {
        "bearer": "Bearer " + METRICS_TOKEN,
        "bearer-wrong": "Bearer " + METRICS_TOKEN[:-1] + "n",
        "basic-ann": _basic("ann:ann-password"),
        "basic-rob": _basic("rob:rob-password"),
        "basic-wrong": _basic("ann:rob-password"),
        "junk": "Basic %%%",
    }.get(auth)
    if authorization:
        headers.append((b"authorization", authorization.encode()))
    scope = {"type": "http", "method": method, "path": path, "headers": headers, "query_string": b""}
    answers: list[Any] = []
    sent = [False]

    async def receive() -> dict[str, object]:
        if sent[0]:
            return {"type": "http.disconnect"}
        sent[0] = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Any) -> None:
        answers.append(message)

    reached.clear()
    asyncio.run(app(scope, receive, send))

    safe = method in ("GET", "HEAD")
    user = who if who in ("ann", "rob") else None
    if path.startswith("/static/"):
        expected = True
    elif path == "/login":
        expected = False
    elif user is not None:
        expected = safe or (token == "right" and user == "ann" and path != "/logout")
    else:
        expected = path == "/metrics" and safe and auth in ("bearer", "basic-ann", "basic-rob")
    assert bool(reached) == expected, (method, path, who, token, auth, answers[0]["status"])
    assert answers[0]["type"] == "http.response.start"
    if reached and user is not None and not path.startswith("/static/"):
        assert reached[0]["state"] == {
            "user": user,
            "role": ADMIN if user == "ann" else READ_ONLY,
            "csrf": own.csrf,
        }  # type: ignore[union-attr]
        if not safe:
            assert reached[0]["body"] == body  # the form the gate read, given on whole
    if not reached:
        assert answers[0]["status"] in (200, 303, 401, 403), answers[0]
