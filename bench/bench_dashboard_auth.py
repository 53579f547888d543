"""What logins cost the dashboard: a page behind the login gate against the same page without it.

    python bench/bench_dashboard_auth.py [--runs N]

Two dashboards in this process (uvicorn on port 0, no cluster needed: the planner page is
computed locally), one plain and one behind :class:`~rocketq.dashboard.auth.LoginGate` with a
logged-in session. Each page is fetched ``--runs`` times, alternating between the two so that the
machine's noise falls on both alike; the **baseline** is the plain dashboard's page in the same
run, and the gate's figures print as ratios of it. Also timed: a login (one scrypt check, n=2**14)
and ``/metrics`` by basic auth (the first check, then the remembered one) and by bearer token.
"""

from __future__ import annotations

import argparse
import base64
import re
import statistics
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

from rocketq.dashboard import BackgroundServer, DashboardConfig, create_app
from rocketq.dashboard.auth import ADMIN, LoginConfig, LoginGate, set_user

PAGE = "planner?strategy=AVG&queues=16&brokers=2&consumers=3&to=4"


def timed(call: Callable[[], object]) -> float:
    began = time.perf_counter()
    call()
    return time.perf_counter() - began


def fetch(url: str, headers: dict[str, str] | None = None, data: bytes | None = None) -> int:
    request = urllib.request.Request(url, headers=headers or {}, data=data)
    with urllib.request.urlopen(request, timeout=30) as answer:
        answer.read()
        return int(answer.status)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="rocketq-bench-auth-"))
    users, token = folder / "users", "t" * 32
    set_user(str(users), "alice", ADMIN, "alice-password")
    (folder / "token").write_text(token)
    config = DashboardConfig(namesrv="127.0.0.1:1", metrics_interval=3600.0)
    login = LoginConfig(users_file=str(users), metrics_token_file=str(folder / "token"))
    with (
        BackgroundServer(create_app(config)) as plain,
        BackgroundServer(LoginGate(create_app(config), login)) as gated,
    ):
        jar = urllib.request.HTTPCookieProcessor()
        opener = urllib.request.build_opener(jar)
        form = opener.open(gated.url + "login").read().decode()
        nonce = re.search(r'name="token" value="([^"]+)"', form)
        assert nonce is not None
        body = urllib.parse.urlencode(
            {"token": nonce.group(1), "name": "alice", "password": "alice-password", "next": "/" + PAGE}
        ).encode()
        login_s = timed(lambda: opener.open(gated.url + "login", data=body).read())
        cookie = "; ".join(f"{c.name}={c.value}" for c in jar.cookiejar)
        assert "rocketq_session" in cookie
        basic = {"Authorization": "Basic " + base64.b64encode(b"alice:alice-password").decode()}
        first_basic = timed(lambda: fetch(gated.url + "metrics", basic))
        plain_s, gated_s = [], []
        for _ in range(args.runs):
            plain_s.append(timed(lambda: fetch(plain.url + PAGE)))
            gated_s.append(timed(lambda: fetch(gated.url + PAGE, {"Cookie": cookie})))
        metrics_plain = [timed(lambda: fetch(plain.url + "metrics")) for _ in range(20)]
        metrics_basic = [timed(lambda: fetch(gated.url + "metrics", basic)) for _ in range(20)]
        bearer = {"Authorization": "Bearer " + token}
        metrics_bearer = [timed(lambda: fetch(gated.url + "metrics", bearer)) for _ in range(20)]
    base, gate = statistics.median(plain_s), statistics.median(gated_s)
    mp = statistics.median(metrics_plain)
    bearer_x, basic_x = statistics.median(metrics_bearer) / mp, statistics.median(metrics_basic) / mp
    print(f"planner page, {args.runs} runs each, median: plain {base * 1000:.2f} ms (baseline)")
    print(f"  behind the gate, logged in: {gate * 1000:.2f} ms = {gate / base:.2f}x")
    print(f"login (one scrypt check): {login_s * 1000:.0f} ms = {login_s / base:.0f}x the page")
    print(f"/metrics median: open {mp * 1000:.2f} ms (baseline); bearer {bearer_x:.2f}x; basic, remembered")
    print(f"  {basic_x:.2f}x; basic, first check {first_basic * 1000:.0f} ms")


if __name__ == "__main__":
    main()
