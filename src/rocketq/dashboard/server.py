"""Serving the dashboard (or the exporter) with uvicorn, on a socket bound before it starts.

:func:`bind` opens the listening socket first, so the address is known at once - port 0 picks a
free one - and a port in use is a one-line :class:`~rocketq.errors.ConfigError`, not a uvicorn
log. :func:`serve` runs until SIGINT/SIGTERM (uvicorn's own handling: open requests finish).
:class:`BackgroundServer` runs one on a thread of its own, for tests and benchmarks.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import uvicorn

from rocketq.errors import ConfigError
from rocketq.remoting.tls import TlsMode, TlsServerConfig, server_context

__all__ = ["BackgroundServer", "Https", "bind", "serve", "url_of"]


@dataclass(frozen=True, slots=True)
class Https:
    """Serve HTTPS with this certificate chain and key (PEM files), read (and checked) at once:
    a file that cannot be read, or a key that does not fit, is a :class:`ConfigError`."""

    cert_path: str
    key_path: str

    def __post_init__(self) -> None:
        tls = TlsServerConfig(mode=TlsMode.ENFORCING, cert_path=self.cert_path, key_path=self.key_path)
        try:
            server_context(tls)  # the same checks as the remoting ports'
        except ConfigError as exc:
            text = str(exc).replace("tls.server.certPath", "HTTPS certificate")
            raise ConfigError(text.replace("tls.server.keyPath", "HTTPS key")) from None


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (IPv4 or IPv6 by the host's form)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(128)
    sock.setblocking(False)
    return sock


def url_of(sock: socket.socket, https: Https | None = None) -> str:
    """``http://host:port/`` (``https://`` with ``https``) of a bound socket."""
    host, port = sock.getsockname()[:2]
    scheme = "http" if https is None else "https"
    return f"{scheme}://[{host}]:{port}/" if ":" in host else f"{scheme}://{host}:{port}/"


def _server(app: Any, https: Https | None = None) -> uvicorn.Server:
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=5,
        ssl_certfile=None if https is None else https.cert_path,
        ssl_keyfile=None if https is None else https.key_path,
    )
    return uvicorn.Server(config)


def serve(
    app: Any,
    sock: socket.socket,
    https: Https | None = None,
    *,
    stop_within: float | None = None,
    overdue: Callable[[], object] | None = None,
) -> int | None:
    """Serve ``app`` on ``sock`` until SIGINT/SIGTERM; returns the signal that stopped it.

    uvicorn finishes open requests, then re-raises the signal to the handler that was there
    before it: ours, which notes it, so the process ends normally (exit code 0). A signal that
    comes before uvicorn has put its own handlers in place (the ready line is out by then, and a
    loaded machine takes a while to import the app) reaches ours, which tells uvicorn to stop as
    soon as it runs: it used to be noted and lost, and the dashboard served on. With
    ``stop_within``, ``overdue`` is called (on a timer thread) if serving has not ended that many
    seconds after the first signal: a command's bound on its stop (the monitor's last polls of a
    flooded broker took over a second to close)."""
    seen: list[int] = []
    server = _server(app, https)
    done = threading.Event()

    def late() -> None:
        if not done.is_set() and overdue is not None:
            overdue()

    def note(signum: int, frame: object) -> None:
        seen.append(signum)
        if server.should_exit:
            server.force_exit = True
        server.should_exit = True
        if len(seen) == 1 and stop_within is not None:
            timer = threading.Timer(stop_within, late)
            timer.daemon = True
            timer.start()

    stops = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.signal(sig, note) for sig in stops}
    try:
        server.run(sockets=[sock])
    finally:
        done.set()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return seen[0] if seen else None


class BackgroundServer:
    """``app`` served on its own thread and event loop (over HTTPS with ``https``); :meth:`stop`
    ends it (by its flag)."""

    def __init__(
        self, app: Any, host: str = "127.0.0.1", port: int = 0, *, https: Https | None = None
    ) -> None:
        self.sock = bind(host, port)
        self.url = url_of(self.sock, https)
        self._server = _server(app, https)
        self._thread = threading.Thread(target=self._run, name="rocketq-dashboard-server", daemon=True)
        self._error: BaseException | None = None

    def _run(self) -> None:
        try:
            asyncio.run(self._server.serve(sockets=[self.sock]))
        except BaseException as exc:  # reported by start()/stop()
            self._error = exc

    def start(self, timeout: float = 30.0) -> BackgroundServer:
        """Start serving; returns once the server listens (uvicorn's ``started`` flag)."""
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)  # uvicorn offers a flag, not an event
        if not self._server.started:
            self._server.should_exit = True
            raise RuntimeError(f"the dashboard did not start: {self._error!r}")
        return self

    def stop(self, timeout: float = 15.0) -> None:
        self._server.should_exit = True
        self._thread.join(timeout)
        self.sock.close()
        if self._thread.is_alive():
            raise RuntimeError("the dashboard server did not stop")

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
