"""The web application: Starlette routes over the views, Jinja2 pages, JSON for the live parts.

=====================  ======================================================================
``/``                  cluster: name servers, brokers (version, TPS in/out, disk), topics
``/topics``            every topic with queue counts; create (POST)
``/topics/{topic}``    queues per broker with min/max offsets, consuming groups; update (POST)
``/groups``            consumer groups: online connections, lag, TPS
``/groups/{group}``    the live ownership map, timeline, lag, members, duplicates; reset (POST)
``/api/groups/{g}``    the group page's live state as JSON (polled by the page every second)
``/messages``          look-up by message id, key, or queue and offset
``/planner``           ``rocketq allocate`` in the browser
``/metrics``           Prometheus exposition (see :mod:`rocketq.dashboard.metrics`)
=====================  ======================================================================

Every asset (templates, CSS, JavaScript) ships in the package; nothing is fetched from
elsewhere. A failure to reach a name server or broker, an unknown topic or group, or a bad form
value is the page's banner (with HTTP 502, 404 or 400), never a stack trace; anything unexpected
is logged and shown as one line. Forms that change something carry a per-process token (a page
of another site cannot post them). Creating a topic that exists changes nothing: the page says what
would change and offers the update as a button of its own; a system topic is written only when
the form names it again (the admin layer's checks, :mod:`rocketq.admin.guard`).
With logins on (:mod:`.auth`, in front of the app) the forms' token is the session's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from importlib import resources
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from rocketq import __version__
from rocketq.admin import parse_reset_target
from rocketq.dashboard import metrics, views
from rocketq.dashboard.config import DashboardConfig
from rocketq.dashboard.monitor import Monitor, describe_error
from rocketq.errors import (
    ConfigError,
    RemotingError,
    RocketQError,
    SystemTopicError,
    TopicExistsError,
    UnknownGroupError,
    UnknownTopicError,
)

__all__ = ["create_app", "create_exporter_app"]

logger = logging.getLogger(__name__)

_FORM_LIMIT = 64 * 1024  # bytes of a posted form

_FAVICON = (
    b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">'
    b'<rect width="32" height="32" rx="6" fill="#1d2330"/>'
    b'<path d="M16 4c5 4 6 10 4 17h-8C10 14 11 8 16 4z" fill="#3565c9"/>'
    b'<path d="M12 21l-4 5h5zM20 21l4 5h-5z" fill="#f28e2b"/></svg>'
)
"""The tab's icon (``/favicon.ico``, which browsers ask for on every page): a rocket, as SVG."""

_NAV = (
    ("/", "Cluster"),
    ("/topics", "Topics"),
    ("/groups", "Groups"),
    ("/messages", "Messages"),
    ("/planner", "Planner"),
    ("/metrics", "Metrics"),
)


def _status_of(exc: RocketQError) -> int:
    if isinstance(exc, UnknownGroupError | UnknownTopicError):
        return 404
    if isinstance(exc, ConfigError):
        return 400
    if isinstance(exc, RemotingError):
        return 502
    return 502


class _Pages:
    """The handlers, sharing the monitor, the templates and the form token."""

    def __init__(self, monitor: Monitor) -> None:
        self.monitor = monitor
        self.token = secrets.token_urlsafe(24)
        self.collector = metrics.MetricsCollector(monitor)
        self.env = Environment(
            loader=PackageLoader("rocketq.dashboard", "templates"),
            autoescape=select_autoescape(["html"]),
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters["urlpart"] = lambda s: quote(str(s), safe="")
        self.env.filters["num"] = _num
        self.env.filters["pct"] = lambda v: "-" if v is None else f"{v * 100:.1f}%"

    # ------------------------------------------------------------------ rendering

    def render(
        self,
        request: Request,
        template: str,
        *,
        status: int = 200,
        error: str | None = None,
        **context: Any,
    ) -> HTMLResponse:
        base = {
            "nav": _NAV,
            "path": request.url.path,
            "version": __version__,
            "namesrv": ";".join(self.monitor.admin.namesrv_addrs),
            "token": _form_token(request, self.token),
            "user": getattr(request.state, "user", None),
            "role": getattr(request.state, "role", None),
            "error": error or request.query_params.get("error"),
            "notice": request.query_params.get("notice"),
            "health": self.monitor.health().to_dict(),
        }
        page = self.env.get_template(template).render({**base, **context})
        return HTMLResponse(page, status_code=status)

    async def guarded(
        self,
        request: Request,
        template: str,
        make: Callable[[], Awaitable[Mapping[str, Any]]],
        *,
        budget: float | None = None,
        **extra: Any,
    ) -> HTMLResponse:
        """Render ``template`` with ``make()``'s data, or with the error as its banner; data that
        does not come within ``budget`` seconds (default: a page's) is a banner saying what did
        not answer."""
        budget = budget or self.monitor.config.page_budget
        try:
            data = await asyncio.wait_for(make(), budget)
        except TimeoutError:
            return self.render(request, template, status=504, error=self.silence(budget), **extra)
        except RocketQError as exc:
            return self.render(request, template, status=_status_of(exc), error=describe_error(exc), **extra)
        except Exception:
            logger.exception("dashboard page %s failed", request.url.path)
            return self.render(
                request,
                template,
                status=500,
                error="internal error: the dashboard's log has the details",
                **extra,
            )
        return self.render(request, template, **{**extra, **data})

    def silence(self, budget: float) -> str:
        """The banner of a page whose data did not come within its budget: what did not answer."""
        problems = self.monitor.health().problems
        said = f": {'; '.join(problems)}" if problems else ""
        return f"the cluster did not answer within {budget:g} s, so this page shows nothing{said}"

    async def _checked_form(self, request: Request) -> dict[str, str]:
        # the forms post application/x-www-form-urlencoded: the standard library reads that
        body = await request.body()
        if len(body) > _FORM_LIMIT:
            raise ConfigError(f"the form is too large ({len(body)} bytes)")
        values = dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
        if not secrets.compare_digest(values.get("token", ""), _form_token(request, self.token)):
            raise ConfigError(
                "the form has expired (the dashboard was restarted): reload the page and try again"
            )
        return values

    # ------------------------------------------------------------------ pages

    async def cluster(self, request: Request) -> Response:
        return await self.guarded(request, "cluster.html", lambda: views.cluster_view(self.monitor))

    async def topics(self, request: Request) -> Response:
        return await self.guarded(request, "topics.html", lambda: views.topics_view(self.monitor))

    async def topic(self, request: Request) -> Response:
        topic = request.path_params["topic"]
        return await self.guarded(
            request, "topic.html", lambda: views.topic_view(self.monitor, topic), topic=topic
        )

    async def create_topic(self, request: Request) -> Response:
        """The "Create a topic" form. A topic that exists is not changed: the page says what the
        settings would change and offers the update as a button of its own; a system topic is
        not written unless the form's override field names it (the admin layer's checks)."""
        asked: dict[str, Any] = {}
        try:
            form = await self._checked_form(request)
            topic = form.get("topic", "").strip()
            queues = _queue_count(form.get("queues", ""), "queues")
            perm = _perm(form.get("perm", "6"))
            update = form.get("update") == "1"
            force = form.get("force_system_topic", "").strip() or None
            order = form.get("order") == "on"
            asked = {"topic": topic, "queues": queues, "perm": perm, "order": order, "force": force}
            await self.monitor.admin.create_topic(
                topic, queues=queues, perm=perm, order=order, update=update, force_system_topic=force
            )
        except TopicExistsError as exc:
            return await self.topics_page(request, 409, would_change={**asked, "changes": exc.changes})
        except SystemTopicError as exc:
            return await self.topics_page(
                request, 409, system_topic={**asked, "refusal": exc.refusal, "doing": "create or change"}
            )
        except RocketQError as exc:
            return await self.topics_page(request, _status_of(exc), form_error=describe_error(exc))
        done = "updated to" if update else "created with"
        return _redirect(f"/topics/{quote(topic, safe='')}", f"topic {topic} {done} {queues} queues")

    async def topics_page(self, request: Request, status: int, **extra: Any) -> HTMLResponse:
        """The topics page with a form's answer (``extra``) above the table."""
        page = await self.guarded(request, "topics.html", lambda: views.topics_view(self.monitor), **extra)
        if page.status_code == 200:
            page.status_code = status
        return page

    async def update_topic(self, request: Request) -> Response:
        topic = request.path_params["topic"]
        try:
            form = await self._checked_form(request)
            read = _queue_count(form.get("read_queues", ""), "read queues", optional=True)
            write = _queue_count(form.get("write_queues", ""), "write queues", optional=True)
            perm = _perm(form["perm"]) if form.get("perm") else None
            force = form.get("force_system_topic", "").strip() or None
            await self.monitor.admin.update_topic(
                topic, read_queues=read, write_queues=write, perm=perm, force_system_topic=force
            )
        except RocketQError as exc:
            error = f"{exc.refusal}" if isinstance(exc, SystemTopicError) else describe_error(exc)
            return await self.guarded(
                request,
                "topic.html",
                lambda: views.topic_view(self.monitor, topic),
                topic=topic,
                form_error=error,
            )
        return _redirect(f"/topics/{quote(topic, safe='')}", f"topic {topic} updated")

    async def groups(self, request: Request) -> Response:
        show_all = request.query_params.get("all") == "1"
        return await self.guarded(
            request, "groups.html", lambda: views.groups_view(self.monitor, show_all=show_all)
        )

    async def group(self, request: Request) -> Response:
        group = request.path_params["group"]
        watch = self.monitor.watch(group)
        if not watch.polled_ms:
            await self._poll_within_budget(group)
        state = views.group_state(self.monitor, watch)
        if watch.unknown:
            self.monitor.forget(group)  # a typo is not polled on; the page says so
        status = 404 if watch.unknown else 502 if watch.error and not watch.polled_ms else 200
        # a failed poll is shown (and cleared) by the page's script; an unknown group has no script
        error = watch.error if watch.unknown else None
        return self.render(request, "group.html", status=status, error=error, group=group, state=state)

    async def group_api(self, request: Request) -> Response:
        group = request.path_params["group"]
        watch = self.monitor.watch(group)
        if not watch.polled_ms and not watch.error:
            await self._poll_within_budget(group)
        return JSONResponse(views.group_state(self.monitor, watch))

    async def _poll_within_budget(self, group: str) -> None:
        """A first poll of ``group``, waited for no longer than a page's budget (it goes on in the
        background; the page says what did not answer)."""
        budget = self.monitor.config.page_budget
        poll = asyncio.ensure_future(self.monitor.poll_now(group))
        done, _ = await asyncio.wait({poll}, timeout=budget)
        if not done:
            watch = self.monitor.watch(group)
            watch.error = watch.error or self.silence(budget)

    async def favicon(self, request: Request) -> Response:
        return Response(_FAVICON, media_type="image/svg+xml", headers={"Cache-Control": "max-age=86400"})

    async def reset(self, request: Request) -> Response:
        group = request.path_params["group"]
        back = f"/groups/{quote(group, safe='')}"
        try:
            form = await self._checked_form(request)
            topic = form.get("topic", "").strip()
            target = form.get("to", "").strip()
            if not topic:
                raise ConfigError("say which topic's offsets to reset")
            if form.get("confirm", "").strip() != group:
                raise ConfigError(f"type the group's name ({group}) to confirm the reset")
            result = await self.monitor.admin.reset_offsets(group, topic, parse_reset_target(target))
        except RocketQError as exc:
            return _redirect(back, None, error=describe_error(exc))
        return _redirect(
            back, f"offsets of {group} on {topic} reset to {target}: {len(result.offsets)} queues"
        )

    async def messages(self, request: Request) -> Response:
        params = dict(request.query_params)
        # a search may read many messages: five times a page's budget
        return await self.guarded(
            request,
            "messages.html",
            lambda: views.message_view(self.monitor, params),
            budget=self.monitor.config.page_budget * 5,
            form=params,
        )

    async def planner(self, request: Request) -> Response:
        params = dict(request.query_params)

        async def make() -> Mapping[str, Any]:
            return views.planner_view(params)

        return await self.guarded(
            request, "planner.html", make, form=params, strategies=views.PLANNER_STRATEGIES
        )

    async def metrics(self, request: Request) -> Response:
        try:
            snapshot = await self.collector.collect()
        except Exception:  # the endpoint answers whatever happens; the log has the details
            logger.exception("metrics collection failed")
            snapshot = metrics.Snapshot()
        return Response(metrics.exposition(snapshot), media_type=metrics.CONTENT_TYPE)


def _form_token(request: Request, token: str) -> str:
    """The forms' token: the session's with logins on (:mod:`rocketq.dashboard.auth`), else the
    process's."""
    return str(getattr(request.state, "csrf", None) or token)


def _num(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _queue_count(text: str, what: str, *, optional: bool = False) -> int | None:
    text = text.strip()
    if not text and optional:
        return None
    if not text.isdigit() or not 0 <= int(text) <= 1024:
        raise ConfigError(f"{what} must be a queue count 0..1024, got {text!r}")
    return int(text)


def _perm(text: str) -> int:
    if text not in ("2", "4", "6"):
        raise ConfigError(f"perm must be 2 (write only), 4 (read only) or 6 (both), got {text!r}")
    return int(text)


def _redirect(url: str, notice: str | None, *, error: str | None = None) -> RedirectResponse:
    query = {k: v for k, v in (("notice", notice), ("error", error)) if v}
    return RedirectResponse(f"{url}?{urlencode(query)}" if query else url, status_code=303)


def _static_dir() -> str:
    return str(resources.files("rocketq.dashboard") / "static")


def create_app(config: DashboardConfig | None = None, *, monitor: Monitor | None = None) -> Starlette:
    """The dashboard as an ASGI application; its monitor starts and stops with the app."""
    monitor = monitor or Monitor(config or DashboardConfig())
    pages = _Pages(monitor)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await monitor.start()
        try:
            yield
        finally:
            await monitor.close()

    routes = [
        Route("/", pages.cluster),
        Route("/favicon.ico", pages.favicon),
        Route("/topics", pages.topics, methods=["GET"]),
        Route("/topics", pages.create_topic, methods=["POST"]),
        Route("/topics/{topic:path}", pages.topic, methods=["GET"]),
        Route("/topics/{topic:path}", pages.update_topic, methods=["POST"]),
        Route("/groups", pages.groups),
        Route("/groups/{group:path}/reset", pages.reset, methods=["POST"]),
        Route("/groups/{group:path}", pages.group),
        Route("/api/groups/{group:path}", pages.group_api),
        Route("/messages", pages.messages),
        Route("/planner", pages.planner),
        Route("/metrics", pages.metrics),
        Mount("/static", StaticFiles(directory=_static_dir()), name="static"),
    ]
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={404: _not_found})
    app.state.monitor = monitor
    return app


async def _not_found(request: Request, exc: Exception) -> Response:
    return PlainTextResponse(f"no page at {request.url.path}", status_code=404)


def create_exporter_app(
    config: DashboardConfig | None = None, *, monitor: Monitor | None = None
) -> Starlette:
    """Only ``/metrics`` (``rocketq exporter``): every group is watched from the start."""
    monitor = monitor or Monitor(config or DashboardConfig())
    pages = _Pages(monitor)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        monitor.watch_all()
        await monitor.start()
        try:
            yield
        finally:
            await monitor.close()

    async def index(request: Request) -> Response:
        return HTMLResponse('<p>rocketq exporter: metrics at <a href="/metrics">/metrics</a></p>')

    app = Starlette(
        routes=[Route("/", index), Route("/metrics", pages.metrics)],
        lifespan=lifespan,
        exception_handlers={404: _not_found},
    )
    app.state.monitor = monitor
    return app
