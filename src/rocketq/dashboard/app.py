"""The web application: Starlette routes over the views, Jinja2 pages, JSON for the live parts.

==========================  ==================================================================
``/``                       cluster: name servers, brokers (version, TPS, disk, uptime), TPS
                            history of the brokers and the busiest topics, topics
``/brokers/{addr}/config``  a broker's settings
``/topics``                 every topic with queue counts; create (POST)
``/topics/{topic}``         queues per broker with offsets, consuming groups; update, send a test
                            message, delete (POST, each asking first)
``/groups``                 consumer groups: online connections, lag, TPS
``/groups/{group}``         the live ownership map, timeline, lag, members, duplicates; reset and
                            skip the backlog (POST)
``/groups/{group}/config``  the group's settings on every master; create/update, delete (POST)
``/groups/{g}/clients/{c}`` a member's own report (subscriptions, queues, rates, properties)
``/api/groups/{g}``         the group page's live state as JSON (polled by the page every second)
``/producers``              a producer group's connections
``/messages``               look-up by id, by key or time range (paged, the true count), by queue
                            and offset; consumed-or-not per group; send again to a group (POST)
``/dlq``                    a group's dead letters; send back (POST), export as JSON lines
``/planner``                ``rocketq allocate`` in the browser
``/metrics``                Prometheus exposition (see :mod:`rocketq.dashboard.metrics`)
==========================  ==================================================================

Every action that changes something answers first with a confirmation page saying what it would
do (:meth:`_Pages.confirmation`); only the confirmed form (``confirmed=1``, and for a delete or a
skip the name typed) acts. A page waits for the cluster no longer than ``page_budget`` and then
says what did not answer; the header's badge is the sampler's view of every server
(:meth:`rocketq.dashboard.monitor.Monitor.health`).

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
from rocketq.client.message import Message
from rocketq.dashboard import metrics, views
from rocketq.dashboard.config import DashboardConfig
from rocketq.dashboard.monitor import PRODUCER_GROUP, Monitor, describe_error
from rocketq.errors import (
    ConfigError,
    RemotingError,
    RocketQError,
    SystemTopicError,
    TopicExistsError,
    UnknownGroupError,
    UnknownTopicError,
)
from rocketq.protocol.topics import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX

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
    ("/producers", "Producers"),
    ("/dlq", "Dead letters"),
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
        self.monitor.forget_cache()
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
        self.monitor.forget_cache()
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

    # ------------------------------------------------------------------ confirmations

    def confirmation(
        self,
        request: Request,
        form: Mapping[str, str],
        *,
        title: str,
        lines: list[str],
        back: str,
        type_name: str | None = None,
        pairs: list[tuple[str, str]] | None = None,
    ) -> HTMLResponse | None:
        """``None`` when the form was confirmed (and, with ``type_name``, that name typed);
        else the page that says what the action would do and asks, with Confirm and Cancel.
        Nothing changes until it is confirmed."""
        confirmed = form.get("confirmed") == "1"
        typed = form.get("confirm_name", "").strip()
        if confirmed and (type_name is None or typed == type_name):
            return None
        error = None
        if confirmed:
            error = f"type {type_name} to confirm: nothing was changed"
        keep = [
            (k, v)
            for k, v in (pairs if pairs is not None else list(form.items()))
            if k not in ("token", "confirmed", "confirm_name")
        ]
        return self.render(
            request,
            "confirm.html",
            error=error,  # asked again (HTTP 200): a confirmation page, not a failure
            title=title,
            lines=lines,
            back=back,
            action=request.url.path,
            fields=keep,
            type_name=type_name,
        )

    async def _pairs(self, request: Request) -> list[tuple[str, str]]:
        """The posted form's fields in order, repeated names kept (the token checked first)."""
        await self._checked_form(request)
        return parse_qsl((await request.body()).decode("utf-8", "replace"), keep_blank_values=True)

    # ------------------------------------------------------------------ topics: delete, send

    async def delete_topic(self, request: Request) -> Response:
        topic = request.path_params["topic"]
        back = f"/topics/{quote(topic, safe='')}"
        try:
            form = await self._checked_form(request)
            force = form.get("force_system_topic", "").strip() or None
            try:
                stats = await self.monitor.admin.topic_stats(topic)
                names = ", ".join(sorted({q.queue.broker_name for q in stats.queues})) or "no broker"
                held = f"{stats.total_messages:,} message(s) on {names}"
            except RocketQError as exc:
                held = f"messages unknown ({describe_error(exc)})"
            asked = self.confirmation(
                request,
                form,
                title=f"Delete topic {topic}?",
                lines=[
                    f"deletes {topic} from every broker that holds it and from every name server",
                    f"its {held} can no longer be read; producers sending to it fail "
                    "(or create it again where brokers create topics on demand)",
                    "the groups' committed offsets of it stay on the brokers",
                ],
                back=back,
                type_name=topic,
            )
            if asked is not None:
                return asked
            deleted = await self.monitor.admin.delete_topic(topic, force_system_topic=force)
        except SystemTopicError as exc:
            return _redirect(back, None, error=exc.refusal)
        except RocketQError as exc:
            return _redirect(back, None, error=describe_error(exc))
        self.monitor.forget_cache()
        return _redirect("/topics", f"topic {topic} deleted from {', '.join(sorted(deleted)) or 'no broker'}")

    async def send_message(self, request: Request) -> Response:
        topic = request.path_params["topic"]
        back = f"/topics/{quote(topic, safe='')}"
        try:
            form = await self._checked_form(request)
            body = form.get("body", "")
            tag = form.get("tag", "").strip() or None
            key = form.get("key", "").strip() or None
            if not body:
                raise ConfigError("a test message needs a body")
            asked = self.confirmation(
                request,
                form,
                title=f"Send a message to {topic}?",
                lines=[
                    f"sends one message of {len(body.encode()):,} bytes to {topic}"
                    + (f", tag {tag}" if tag else "")
                    + (f", key {key}" if key else ""),
                    f"as producer group {PRODUCER_GROUP}; every group consuming {topic} will receive it",
                ],
                back=back,
            )
            if asked is not None:
                return asked
            sent = await self.monitor.send(Message(topic, body, tags=tag, keys=key))
        except RocketQError as exc:
            return _redirect(back, None, error=describe_error(exc))
        mq = sent.message_queue
        where = f"{mq.broker_name}:{mq.queue_id} offset {sent.queue_offset}" if mq else "?"
        return _redirect(
            f"/messages?topic={quote(topic, safe='')}&id={sent.msg_id}",
            f"sent message {sent.msg_id} to {where} ({sent.status.name})",
        )

    # ------------------------------------------------------------------ producers, brokers, TPS

    async def producers(self, request: Request) -> Response:
        group = request.query_params.get("group", "").strip()
        return await self.guarded(
            request, "producers.html", lambda: views.producers_view(self.monitor, group), group=group
        )

    async def broker_config(self, request: Request) -> Response:
        addr = request.path_params["addr"]
        return await self.guarded(
            request, "broker.html", lambda: views.broker_config_view(self.monitor, addr), addr=addr
        )

    # ------------------------------------------------------------------ group settings, skip

    async def group_config(self, request: Request) -> Response:
        group = request.path_params["group"]
        return await self.guarded(
            request, "group_config.html", lambda: views.group_config_view(self.monitor, group), group=group
        )

    async def client(self, request: Request) -> Response:
        group, client_id = request.path_params["group"], request.path_params["client"]
        return await self.guarded(
            request,
            "client.html",
            lambda: views.client_view(self.monitor, group, client_id),
            group=group,
            client_id=client_id,
        )

    async def group_config_named(self, request: Request) -> Response:
        group = request.query_params.get("group", "").strip()
        if not group:
            return _redirect("/groups", None, error="give the group's name")
        return RedirectResponse(f"/groups/{quote(group, safe='')}/config", status_code=303)

    async def update_group_config(self, request: Request) -> Response:
        group = request.path_params["group"]
        back = f"/groups/{quote(group, safe='')}/config"
        try:
            pairs = await self._pairs(request)
            form = dict(pairs)
            chosen = sorted({v for k, v in pairs if k == "broker"})
            config = views.group_config_of(group, form)
            now = await views.group_config_view(self.monitor, group)
            if not chosen:
                raise ConfigError("choose at least one broker to write the settings on")
            changes = views.group_config_changes(now["start"], config)
            if now["exists"] and not changes:
                return _redirect(back, "nothing to change: the settings are already these")
            doing = "changes" if now["exists"] else "creates the group with"
            asked = self.confirmation(
                request,
                form,
                title=f"{'Update' if now['exists'] else 'Create'} group {group} on {', '.join(chosen)}?",
                lines=[f"{doing}: {c}" for c in changes]
                or [f"creates {group} with RocketMQ's default settings"],
                back=back,
                pairs=pairs,
            )
            if asked is not None:
                return asked
            brokers = await self.monitor.admin.update_group_config(config, brokers=chosen)
        except RocketQError as exc:
            page = await self.guarded(
                request,
                "group_config.html",
                lambda: views.group_config_view(self.monitor, group),
                group=group,
                form_error=describe_error(exc),
            )
            if page.status_code == 200:  # the form was refused: nothing written
                page.status_code = _status_of(exc)
            return page
        self.monitor.forget_cache()
        return _redirect(back, f"settings of {group} written on {', '.join(brokers)}")

    async def delete_group_config(self, request: Request) -> Response:
        group = request.path_params["group"]
        back = f"/groups/{quote(group, safe='')}/config"
        try:
            pairs = await self._pairs(request)
            form = dict(pairs)
            offsets = form.get("remove_offsets") == "on"
            chosen = sorted({v for k, v in pairs if k == "broker"})
            if not chosen:
                raise ConfigError("choose at least one broker to delete the group on")
            asked = self.confirmation(
                request,
                form,
                title=f"Delete group {group}?",
                pairs=pairs,
                lines=[
                    f"deletes the settings of {group} on {', '.join(chosen)}",
                    "and its committed offsets: it starts again as a new group"
                    if offsets
                    else "its committed offsets stay (a group of that name resumes from them)",
                    "members still online make the broker create it again at their next heartbeat "
                    "(where brokers create groups on demand)",
                ],
                back=back,
                type_name=group,
            )
            if asked is not None:
                return asked
            brokers = await self.monitor.admin.delete_group_config(
                group, remove_offsets=offsets, brokers=chosen
            )
        except RocketQError as exc:
            return _redirect(back, None, error=describe_error(exc))
        self.monitor.forget(group)
        return _redirect("/groups", f"group {group} deleted on {', '.join(brokers)}")

    async def skip(self, request: Request) -> Response:
        """Skip accumulated messages: the group's offsets of a topic set to each queue's end."""
        group = request.path_params["group"]
        back = f"/groups/{quote(group, safe='')}"
        try:
            form = await self._checked_form(request)
            topic = form.get("topic", "").strip()
            if not topic:
                raise ConfigError("say which topic's backlog to skip")
            lag = "its backlog"
            try:
                progress = await self.monitor.admin.group_progress(group)
                total = sum(q.lag for q in progress.queues if q.queue.topic == topic)
                lag = f"{total:,} message(s) of lag"
            except RocketQError:
                pass
            asked = self.confirmation(
                request,
                form,
                title=f"Skip the backlog of {group} on {topic}?",
                lines=[
                    f"sets the offsets of {group} on {topic} to each queue's end: {lag} will never "
                    "be consumed by this group",
                ],
                back=back,
                type_name=group,
            )
            if asked is not None:
                return asked
            result = await self.monitor.admin.reset_offsets(group, topic, "last")
        except RocketQError as exc:
            return _redirect(back, None, error=describe_error(exc))
        return _redirect(
            back, f"backlog of {group} on {topic} skipped: {len(result.offsets)} queues at their end"
        )

    # ------------------------------------------------------------------ dead letters

    async def dlq(self, request: Request) -> Response:
        group = request.query_params.get("group", "").strip()
        page_text = request.query_params.get("page", "1")
        page = int(page_text) if page_text.isdigit() else 1
        return await self.guarded(
            request,
            "dlq.html",
            lambda: views.dlq_view(self.monitor, group, page),
            budget=self.monitor.config.page_budget * 5,
            group=group,
        )

    async def dlq_export(self, request: Request) -> Response:
        group = request.query_params.get("group", "").strip()
        try:
            if not group:
                raise ConfigError("give the group whose dead letters to export")
            chosen = {v.strip().upper() for k, v in request.query_params.multi_items() if k == "id"}
            lines = await views.dlq_lines(self.monitor, group, chosen or None)
        except UnknownTopicError:
            lines = []
        except RocketQError as exc:
            return PlainTextResponse(describe_error(exc) + "\n", status_code=_status_of(exc))
        name = "".join(c if c.isalnum() or c in "-_" else "_" for c in group)
        return Response(
            "".join(line + "\n" for line in lines),
            media_type="application/x-ndjson",
            headers={"Content-Disposition": f'attachment; filename="dlq-{name}.jsonl"'},
        )

    async def dlq_resend(self, request: Request) -> Response:
        """Send chosen dead letters back to their group: a copy to ``%RETRY%group`` with the
        original topic, which the group's members consume as a retry (RocketMQ Dashboard asks
        one online member to consume it directly, a request rocketq's broker does not relay)."""
        try:
            pairs = await self._pairs(request)
            form = dict(pairs)
            group = form.get("group", "").strip()
            ids = [v.strip() for k, v in pairs if k == "id" and v.strip()]
            back = f"/dlq?group={quote(group, safe='')}"
            if not group or not ids:
                raise ConfigError("choose the dead letters to send back")
            asked = self.confirmation(
                request,
                form,
                title=f"Send {len(ids)} dead letter(s) back to {group}?",
                lines=[
                    f"sends a copy of each to {RETRY_GROUP_TOPIC_PREFIX}{group}; the members of {group} "
                    "consume it as a retry of its original topic",
                    "the dead letters stay in the dead-letter queue",
                    *(f"message {i}" for i in ids[:20]),
                ],
                back=back,
                pairs=pairs,
            )
            if asked is not None:
                return asked
            dlq_topic = DLQ_GROUP_TOPIC_PREFIX + group
            sent = 0
            for msg_id in ids:
                found = await self.monitor.admin.view_message(msg_id, topic=dlq_topic)
                if not found:
                    raise ConfigError(f"dead letter {msg_id} was not found in {dlq_topic}")
                await self.monitor.send(views.resend_copy(found[0], group))
                sent += 1
        except RocketQError as exc:
            return _redirect("/dlq", None, error=describe_error(exc))
        return _redirect(back, f"{sent} dead letter(s) sent back to {group}")

    async def resend_message(self, request: Request) -> Response:
        """A stored message sent again to one group: a copy to ``%RETRY%group`` (RocketMQ
        Dashboard asks an online member to consume it directly: CONSUME_MESSAGE_DIRECTLY, which
        rocketq's broker does not relay; a retry reaches whichever member owns the queue)."""
        try:
            form = await self._checked_form(request)
            topic, msg_id, group = (form.get(k, "").strip() for k in ("topic", "id", "group"))
            back = f"/messages?topic={quote(topic, safe='')}&id={quote(msg_id, safe='')}"
            if not (topic and msg_id and group):
                raise ConfigError("say which message (topic and id) to send to which group")
            found = await self.monitor.admin.view_message(msg_id, topic=topic)
            if not found:
                raise ConfigError(f"message {msg_id} was not found in {topic}")
            asked = self.confirmation(
                request,
                form,
                title=f"Send message {msg_id} to {group} again?",
                lines=[
                    f"sends a copy to {RETRY_GROUP_TOPIC_PREFIX}{group}: the members of {group} consume it "
                    f"again as a retry of {topic}; no other group receives it",
                ],
                back=back,
            )
            if asked is not None:
                return asked
            sent = await self.monitor.send(views.resend_copy(found[0], group))
        except RocketQError as exc:
            return _redirect("/messages", None, error=describe_error(exc))
        return _redirect(back, f"message {msg_id} sent to {group} again ({sent.msg_id})")

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
    joint = "&" if "?" in url else "?"
    return RedirectResponse(f"{url}{joint}{urlencode(query)}" if query else url, status_code=303)


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
        Route("/topics/{topic:path}/delete", pages.delete_topic, methods=["POST"]),
        Route("/topics/{topic:path}/send", pages.send_message, methods=["POST"]),
        Route("/topics/{topic:path}", pages.topic, methods=["GET"]),
        Route("/topics/{topic:path}", pages.update_topic, methods=["POST"]),
        Route("/groups", pages.groups),
        Route("/group-config", pages.group_config_named, methods=["GET"]),
        Route("/groups/{group:path}/reset", pages.reset, methods=["POST"]),
        Route("/groups/{group:path}/skip", pages.skip, methods=["POST"]),
        Route("/groups/{group:path}/delete", pages.delete_group_config, methods=["POST"]),
        Route("/groups/{group}/clients/{client}", pages.client, methods=["GET"]),
        Route("/groups/{group:path}/config", pages.group_config, methods=["GET"]),
        Route("/groups/{group:path}/config", pages.update_group_config, methods=["POST"]),
        Route("/groups/{group:path}", pages.group),
        Route("/api/groups/{group:path}", pages.group_api),
        Route("/messages", pages.messages, methods=["GET"]),
        Route("/messages/resend", pages.resend_message, methods=["POST"]),
        Route("/producers", pages.producers),
        Route("/brokers/{addr}/config", pages.broker_config),
        Route("/dlq", pages.dlq, methods=["GET"]),
        Route("/dlq/export", pages.dlq_export, methods=["GET"]),
        Route("/dlq/resend", pages.dlq_resend, methods=["POST"]),
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
