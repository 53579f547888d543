"""Who may look at the dashboard and the exporter, and who may change things through them.

Users come from a file in the RocketMQ Dashboard's ``users.properties`` shape, one a line,
``NAME=PASSWORD[,N]`` with ``N`` 1 for an admin and 0 (or nothing) for a read-only user, except
that PASSWORD is a hash, never the password itself::

    # rocketq dashboard users (rocketq dashboard users add NAME --role admin|read-only --file F)
    alice=scrypt$16384$8$1$<salt, base64>$<hash, base64>,1
    bob=scrypt$16384$8$1$<salt, base64>$<hash, base64>

The hash is the standard library's :func:`hashlib.scrypt` with a random 16-byte salt per user and
Django's default cost (n=2**14, r=8, p=1: 16 MiB and 50 to 150 ms here); the cost is
stored with the hash, so a file written with a higher one works. The file is read again when it
changes (as the RocketMQ Dashboard's is), so adding a user or changing a role needs no restart; a
file that no longer parses is logged and the last good one stays in force.

:class:`LoginGate` is an ASGI middleware in front of the dashboard (or the exporter):

* no session: a page redirects to ``/login``, a JSON or form request is refused (401);
* sessions are server-side (a random id in an ``HttpOnly``, ``SameSite=Strict`` cookie, ``Secure``
  over https) and end after ``session_idle`` seconds without a request, or at ``Log out``;
* every request that is not GET/HEAD needs an admin, and the session's CSRF token in the form's
  ``token`` field (checked here, before the application sees the request);
* ``/metrics`` takes ``Authorization: Bearer TOKEN`` (``--metrics-token-file``) or basic auth with a
  user of the file, as Prometheus's ``authorization`` / ``basic_auth`` scrape settings send them (or
  a logged-in browser's session).

A wrong name and a wrong password get the same answer, after the same work (an unknown name is
checked against a dummy hash).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import functools
import hashlib
import hmac
import ipaddress
import logging
import os
import re
import secrets
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl, quote

from rocketq.errors import ConfigError

__all__ = [
    "ADMIN",
    "READ_ONLY",
    "LoginConfig",
    "LoginGate",
    "Role",
    "Sessions",
    "User",
    "hash_password",
    "is_loopback",
    "parse_users",
    "read_users",
    "remove_user",
    "set_user",
    "verify_password",
]

logger = logging.getLogger(__name__)

Role = Literal["admin", "read-only"]
ADMIN: Role = "admin"
READ_ONLY: Role = "read-only"

SCRYPT_N = 2**14
"""scrypt's cost (Django's ``ScryptPasswordHasher`` default), with r=8, p=1."""
_MAX_N, _MAX_RP = 2**20, 32  # a file asking for more is refused (it would take gigabytes)
_NAME = re.compile(r"[A-Za-z0-9_.@-]{1,64}")
_B64 = r"[A-Za-z0-9+/]+={0,2}"
_HASH = re.compile(rf"scrypt\$(\d{{1,8}})\$(\d{{1,3}})\$(\d{{1,3}})\$({_B64})\$({_B64})")
_FORM_LIMIT = 64 * 1024
SESSION_COOKIE = "rocketq_session"
LOGIN_COOKIE = "rocketq_login"


@dataclass(frozen=True, slots=True, kw_only=True)
class User:
    """One line of the users file."""

    name: str
    role: Role
    password_hash: str  # scrypt$N$r$p$salt$hash

    def line(self) -> str:
        return f"{self.name}={self.password_hash}" + (",1" if self.role == ADMIN else "")


@dataclass(frozen=True, slots=True, kw_only=True)
class LoginConfig:
    """Who may use the dashboard (or the exporter). Durations are float seconds."""

    users_file: str | None = None
    """The users file (``--users``): turns logins on."""
    metrics_token_file: str | None = None
    """A file holding the bearer token ``/metrics`` accepts (``--metrics-token-file``)."""
    session_idle: float = 1800.0
    """A session unused this long ends (Spring Boot's ``server.servlet.session.timeout``, which
    the RocketMQ Dashboard runs with, is 30 minutes)."""

    def __post_init__(self) -> None:
        if not self.session_idle > 0:
            raise ConfigError(f"session_idle must be positive, got {self.session_idle}")

    @property
    def enabled(self) -> bool:
        return self.users_file is not None or self.metrics_token_file is not None


def is_loopback(host: str) -> bool:
    """Whether listening on ``host`` reaches this machine only (a name other than localhost is
    taken to reach further)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


# ---------------------------------------------------------------------- hashes


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def hash_password(password: str, *, n: int = SCRYPT_N, salt: bytes | None = None) -> str:
    """``scrypt$N$8$1$salt$hash`` of ``password`` with a fresh random salt."""
    if not password:
        raise ConfigError("the password is empty")
    salt = salt if salt is not None else secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=8, p=1, maxmem=256 * 8 * n, dklen=32)
    return f"scrypt${n}$8$1${_b64(salt)}${_b64(digest)}"


def _check_hash(text: str) -> tuple[int, int, int, bytes, bytes]:
    match = _HASH.fullmatch(text)
    if match is None:
        raise ConfigError("not a scrypt$N$r$p$salt$hash password hash")
    n, r, p = (int(match.group(i)) for i in (1, 2, 3))
    if n < 2 or n > _MAX_N or n & (n - 1) or not 1 <= r <= _MAX_RP or not 1 <= p <= _MAX_RP:
        raise ConfigError(f"scrypt cost n={n} r={r} p={p} is out of range (n a power of 2 up to 2**20)")
    try:
        salt = base64.b64decode(match.group(4), validate=True)
        digest = base64.b64decode(match.group(5), validate=True)
    except binascii.Error:
        raise ConfigError("the hash's salt or digest is not base64") from None
    if len(salt) < 8 or not 16 <= len(digest) <= 64:
        raise ConfigError("the hash's salt is shorter than 8 bytes or its digest is not 16..64 bytes")
    return n, r, p, salt, digest


def verify_password(password: str, password_hash: str) -> bool:
    """Whether ``password`` matches ``password_hash`` (constant time in the digest)."""
    n, r, p, salt, digest = _check_hash(password_hash)
    got = hashlib.scrypt(
        password.encode("utf-8", "replace"),
        salt=salt,
        n=n,
        r=r,
        p=p,
        maxmem=256 * r * n * p + 2**20,
        dklen=len(digest),
    )
    return hmac.compare_digest(got, digest)


@functools.cache
def _dummy_hash() -> str:
    """What an unknown name's password is checked against (the same work as a known one's)."""
    return hash_password(secrets.token_urlsafe(16))


# ---------------------------------------------------------------------- the users file


def parse_users(text: str) -> dict[str, User]:
    """The users of a users file's text; a bad line is a :class:`ConfigError` naming it."""
    users: dict[str, User] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        name, sep, rest = line.partition("=")
        name, rest = name.strip(), rest.strip()
        if not sep or not _NAME.fullmatch(name):
            raise ConfigError(
                f"line {number}: expected NAME=HASH[,1] with a name of letters, digits, _.@- (64 at most)"
            )
        password_hash, comma, flag = rest.partition(",")
        password_hash, flag = password_hash.strip(), flag.strip()
        if comma and flag not in ("0", "1"):
            raise ConfigError(
                f"line {number}: user {name}'s role must be ,1 (admin) or ,0 (read-only), got ,{flag[:20]}"
            )
        if not password_hash.startswith("scrypt$"):
            raise ConfigError(
                f"line {number}: user {name}'s password is not a hash (rocketq keeps no plain passwords):"
                f" set it with `rocketq dashboard users add {name} --file FILE`"
            )
        try:
            _check_hash(password_hash)
        except ConfigError as exc:
            raise ConfigError(f"line {number}: user {name}: {exc}") from None
        if name in users:
            raise ConfigError(f"line {number}: user {name} is already defined above")
        users[name] = User(name=name, role=ADMIN if flag == "1" else READ_ONLY, password_hash=password_hash)
    return users


def read_users(path: str) -> dict[str, User]:
    """:func:`parse_users` of a file; an unreadable file is a :class:`ConfigError`."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"cannot read the users file {path}: {getattr(exc, 'strerror', None) or exc}"
        ) from None
    try:
        return parse_users(text)
    except ConfigError as exc:
        raise ConfigError(f"users file {path}: {exc}") from None


def set_user(path: str, name: str, role: Role, password: str, *, replace: bool = False) -> bool:
    """Add (or with ``replace``, change) ``name`` in the users file at ``path`` (created, mode
    0600, if missing); other lines stay as they are. Returns whether the user was there before.
    The file is written to a temporary file and renamed over, so a reader never sees half."""
    if not _NAME.fullmatch(name):
        raise ConfigError(f"a user name is 1..64 letters, digits or _.@-, got {name!r}")
    target = Path(path)
    text = ""
    if target.exists():
        read_users(path)  # refuses to edit a file that does not parse
        text = target.read_text(encoding="utf-8")
    lines = text.splitlines()
    found = [i for i, line in enumerate(lines) if line.strip().partition("=")[0].strip() == name]
    if found and not replace:
        raise ConfigError(f"user {name} is already in {path}: say --replace to change its password and role")
    entry = User(name=name, role=role, password_hash=hash_password(password)).line()
    if found:
        lines[found[0]] = entry
    else:
        if not lines:
            lines.append(
                "# rocketq dashboard users: NAME=HASH[,1] (,1: an admin); `rocketq dashboard users add`"
            )
        lines.append(entry)
    _write(target, lines)
    return bool(found)


def remove_user(path: str, name: str) -> None:
    """Take ``name`` out of the users file at ``path`` (its sessions end at their next request);
    other lines stay as they are. A name not in the file is a :class:`ConfigError`."""
    users = read_users(path)
    if name not in users:
        raise ConfigError(f"no user {name} in {path}")
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    kept = [
        line for line in lines if line.strip().partition("=")[0].strip() != name or line.lstrip()[:1] in "#!"
    ]
    _write(Path(path), kept)


def _write(target: Path, lines: list[str]) -> None:
    temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write("\n".join(lines) + "\n")
        os.replace(temp, target)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise ConfigError(f"cannot write the users file {target}: {exc.strerror or exc}") from None


class _Watched:
    """A file read again when its ``stat`` changes; a bad new version keeps the last good one."""

    def __init__(self, path: str, read: Callable[[str], Any]) -> None:
        self.path, self._read = path, read
        self._stamp = self._stat()
        self.value = read(path)  # a bad file at start is the caller's ConfigError

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def get(self) -> Any:
        stamp = self._stat()
        if stamp != self._stamp:
            self._stamp = stamp
            try:
                self.value = self._read(self.path)
                logger.info("reloaded %s", self.path)
            except ConfigError as exc:
                logger.error("%s (the last good version stays in force)", exc)
        return self.value


def _read_token(path: str) -> str:
    try:
        token = Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"cannot read the metrics token file {path}: {getattr(exc, 'strerror', None) or exc}"
        ) from None
    if len(token) < 16 or any(c.isspace() for c in token):
        raise ConfigError(f"the metrics token in {path} must be one word of 16 characters or more")
    return token


# ---------------------------------------------------------------------- sessions


@dataclass(slots=True)
class _Session:
    name: str
    csrf: str
    last_used: float


class Sessions:
    """Server-side sessions by random id, ended after ``idle`` seconds unused (``clock`` is
    injected: the tests' clock jumps)."""

    def __init__(self, idle: float, clock: Callable[[], float], limit: int = 10_000) -> None:
        self.idle, self.clock, self.limit = idle, clock, limit
        self._by_id: dict[str, _Session] = {}

    def open(self, name: str) -> str:
        now = self.clock()
        if len(self._by_id) >= self.limit:
            self._by_id = {k: s for k, s in self._by_id.items() if now - s.last_used < self.idle}
            while len(self._by_id) >= self.limit:  # still full: the least recently used goes
                del self._by_id[min(self._by_id, key=lambda k: self._by_id[k].last_used)]
        sid = secrets.token_urlsafe(32)
        self._by_id[sid] = _Session(name, secrets.token_urlsafe(24), now)
        return sid

    def get(self, sid: str) -> _Session | None:
        session = self._by_id.get(sid)
        if session is None:
            return None
        now = self.clock()
        if now - session.last_used >= self.idle:
            del self._by_id[sid]
            return None
        session.last_used = now
        return session

    def close(self, sid: str) -> None:
        self._by_id.pop(sid, None)


# ---------------------------------------------------------------------- the gate

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_SAFE = ("GET", "HEAD")


class LoginGate:
    """The ASGI middleware described in the module's docstring. ``metrics_only``: the exporter
    (every path needs the ``/metrics`` credentials; no login page)."""

    def __init__(
        self,
        app: ASGIApp,
        config: LoginConfig,
        *,
        metrics_only: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.app, self.config, self.metrics_only = app, config, metrics_only
        self.users = _Watched(config.users_file, read_users) if config.users_file else None
        self.token = _Watched(config.metrics_token_file, _read_token) if config.metrics_token_file else None
        self.sessions = Sessions(config.session_idle, clock)
        self._hashing = asyncio.Semaphore(2)  # 16 MiB and ~0.1 s each: a flood of guesses queues
        self._basic_ok: dict[str, str] = {}  # hmac(name, password) -> hash it matched
        self._key = secrets.token_bytes(32)
        from jinja2 import Environment, PackageLoader, select_autoescape  # noqa: PLC0415 - web part

        self.env = Environment(
            loader=PackageLoader("rocketq.dashboard", "templates"), autoescape=select_autoescape(["html"])
        )

    # -- checks

    async def check_password(self, name: str, password: str) -> bool:
        """Whether ``name``/``password`` is a user of the file (same work for an unknown name)."""
        users: dict[str, User] = self.users.get() if self.users else {}
        user = users.get(name)
        stored = user.password_hash if user else _dummy_hash()
        async with self._hashing:
            ok = await asyncio.to_thread(verify_password, password, stored)
        return ok and user is not None

    def user(self, name: str) -> User | None:
        return self.users.get().get(name) if self.users else None

    async def metrics_allowed(self, scope: Scope) -> bool:
        auth = _header(scope, b"authorization")
        scheme, _, value = auth.partition(" ")
        value = value.strip()
        if scheme.lower() == "bearer" and self.token is not None:
            return hmac.compare_digest(value.encode(), str(self.token.get()).encode())
        if scheme.lower() == "basic" and self.users is not None:
            try:
                name, sep, password = base64.b64decode(value, validate=True).decode("utf-8").partition(":")
            except (binascii.Error, UnicodeDecodeError):
                return False
            if not sep:
                return False
            user = self.user(name)
            key = hmac.new(self._key, f"{name}\0{password}".encode(), "sha256").hexdigest()
            if user is not None and self._basic_ok.get(key) == user.password_hash:
                return True  # a scrape every 15 s need not cost a scrypt each time
            if await self.check_password(name, password):
                if len(self._basic_ok) > 64:
                    self._basic_ok.clear()
                self._basic_ok[key] = self.user(name).password_hash  # type: ignore[union-attr]
                return True
        return False

    # -- the middleware

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http":
            await self.app(scope, receive, send)  # the lifespan
            return
        if self.metrics_only or (self.users is None and path == "/metrics"):
            if scope["method"] in _SAFE and await self.metrics_allowed(scope):
                await self.app(scope, receive, send)
            else:
                await _unauthorized(send, basic=self.users is not None)
            return
        # a token for /metrics only; assets and the tab's icon (asked for by the login page too)
        if self.users is None or path.startswith("/static/") or path == "/favicon.ico":
            await self.app(scope, receive, send)
            return
        if path == "/login":
            await self.login(scope, receive, send)
            return
        sid = _cookie(scope, SESSION_COOKIE) or ""
        session = self.sessions.get(sid) if sid else None
        user = self.user(session.name) if session else None
        if session is None or user is None:
            await self.anonymous(scope, receive, send)
            return
        if scope["method"] not in _SAFE:
            replay = await self.change(scope, receive, send, sid, session, user)
            if replay is None:
                return
            receive = replay
        state = dict(scope.get("state") or {})
        state.update(user=user.name, role=user.role, csrf=session.csrf)
        await self.app({**scope, "state": state}, receive, send)

    async def anonymous(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A request without a session: ``/metrics`` with its credentials, else the login page."""
        path = scope["path"]
        if path == "/metrics" and scope["method"] in _SAFE and await self.metrics_allowed(scope):
            await self.app(scope, receive, send)
        elif path == "/metrics" or path.startswith("/api/") or scope["method"] not in _SAFE:
            await _unauthorized(send, basic=path == "/metrics")
        else:
            query = scope.get("query_string", b"").decode("latin-1")
            back = path + (f"?{query}" if query else "")
            await _respond(send, 303, b"", [(b"location", f"/login?next={quote(back, safe='')}".encode())])

    async def change(
        self, scope: Scope, receive: Receive, send: Send, sid: str, session: _Session, user: User
    ) -> Receive | None:
        """A POST: its form's token checked, then logout, or an admin's change (the body replayed
        to the application); ``None`` when answered here."""
        body = await _read_body(receive)
        if body is None:
            await self.page(send, 413, "Too large", "the form is larger than 64 KiB")
            return None
        form = dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
        if not hmac.compare_digest(form.get("token", "").encode(), session.csrf.encode()):
            await self.page(
                send, 403, "Refused", "the form's token is missing or wrong: reload the page and try again"
            )
            return None
        if scope["path"] == "/logout":
            self.sessions.close(sid)
            cleared = _set_cookie(scope, SESSION_COOKIE, "", clear=True)
            await _respond(send, 303, b"", [(b"location", b"/login"), cleared])
            return None
        if user.role != ADMIN:
            await self.page(
                send, 403, "Read-only", f"{user.name} is a read-only user: only an admin may change anything"
            )
            return None
        return _replay(body, receive)

    async def login(self, scope: Scope, receive: Receive, send: Send) -> None:
        """``/login``: the form (GET) or a login (POST). The form's token is also in a cookie of
        its own (a page of another site can post neither the one nor the other)."""
        if scope["method"] in _SAFE:
            query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
            await self.login_page(scope, send, 200, None, _local(query.get("next")))
            return
        body = await _read_body(receive)
        form = dict(parse_qsl((body or b"").decode("utf-8", "replace"), keep_blank_values=True))
        cookie = _cookie(scope, LOGIN_COOKIE) or ""
        back = _local(form.get("next"))
        if (
            body is None
            or not cookie
            or not hmac.compare_digest(form.get("token", "").encode(), cookie.encode())
        ):
            await self.login_page(scope, send, 403, "the login form has expired: try again", back)
            return
        name = form.get("name", "").strip()
        if not await self.check_password(name, form.get("password", "")):
            logger.warning("dashboard login refused: wrong name or password")
            await self.login_page(scope, send, 401, "wrong name or password", back)
            return
        sid = self.sessions.open(name)
        cookies = [_set_cookie(scope, SESSION_COOKIE, sid), _set_cookie(scope, LOGIN_COOKIE, "", clear=True)]
        await _respond(send, 303, b"", [(b"location", back.encode()), *cookies])

    async def login_page(self, scope: Scope, send: Send, status: int, error: str | None, back: str) -> None:
        # the browser's login cookie is kept if it has one: a second tab's login page (or the
        # favicon's redirect here) must not make the first one's form stale
        nonce = _cookie(scope, LOGIN_COOKIE) or ""
        if not re.fullmatch(r"[A-Za-z0-9_-]{32}", nonce):
            nonce = secrets.token_urlsafe(24)
        cookie = _set_cookie(scope, LOGIN_COOKIE, nonce)
        await self.page(send, status, "Log in", error, login=True, nonce=nonce, next=back, cookies=[cookie])

    async def page(
        self,
        send: Send,
        status: int,
        title: str,
        error: str | None,
        *,
        cookies: list[tuple[bytes, bytes]] | None = None,
        **context: Any,
    ) -> None:
        html = self.env.get_template("login.html").render(title=title, error=error, **context)
        headers = [
            (b"content-type", b"text/html; charset=utf-8"),
            (b"cache-control", b"no-store"),
            *(cookies or []),
        ]
        await _respond(send, status, html.encode(), headers)


def _local(url: str | None) -> str:
    """``url`` if it is a path of this site, else ``/`` (no redirect elsewhere after a login)."""
    if url and url.startswith("/") and not url.startswith("//") and "\\" not in url:
        return url
    return "/"


def _header(scope: Scope, name: bytes) -> str:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return ""


def _cookie(scope: Scope, name: str) -> str | None:
    for part in _header(scope, b"cookie").split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


def _set_cookie(scope: Scope, name: str, value: str, *, clear: bool = False) -> tuple[bytes, bytes]:
    attrs = f"{name}={value}; Path=/; HttpOnly; SameSite=Strict"
    if scope.get("scheme") == "https":
        attrs += "; Secure"
    if clear:
        attrs += "; Max-Age=0"
    return (b"set-cookie", attrs.encode())


async def _read_body(receive: Receive) -> bytes | None:
    """The request's body, or ``None`` past the form limit."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > _FORM_LIMIT:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """``receive`` with the body already read given again first (the rest, a disconnect, from
    the client as before)."""
    sent = False

    async def replay() -> MutableMapping[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _unauthorized(send: Send, *, basic: bool) -> None:
    challenge = b'Basic realm="rocketq"' if basic else b'Bearer realm="rocketq"'
    await _respond(
        send,
        401,
        b"log in first (a session, or the metrics credentials)\n",
        [(b"content-type", b"text/plain; charset=utf-8"), (b"www-authenticate", challenge)],
    )


async def _respond(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*headers, (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
