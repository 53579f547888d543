"""The dashboard's pure parts of issue 30: uptime as a person says it, the status badge from what
each server answered (an injected clock), group settings from a form and what they change, a
dead letter's copy for its group, and the busiest topics of the TPS history."""

from __future__ import annotations

import asyncio
from collections import deque

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.dashboard import DashboardConfig
from rocketq.dashboard.monitor import Monitor, ServerHealth
from rocketq.dashboard.views import (
    GROUP_FIELDS,
    group_config_changes,
    group_config_of,
    resend_copy,
    topic_tps_charts,
    uptime_text,
)
from rocketq.errors import ConfigError, RemotingTimeoutError
from rocketq.protocol.bodies import SubscriptionGroupConfig
from rocketq.protocol.message import MessageExt


@given(st.integers(0, 400), st.integers(0, 23), st.integers(0, 59), st.integers(0, 59))
def test_uptime_reads_as_the_two_largest_units(d: int, h: int, m: int, s: int) -> None:
    text = uptime_text(f"[ {d} days, {h} hours, {m} minutes, {s} seconds ]")
    assert "[" not in text
    if d:
        assert text == f"{d} d {h} h"
    elif h:
        assert text == f"{h} h {m} min"
    elif m:
        assert text == f"{m} min {s} s"
    else:
        assert text == f"{s} s"


def test_uptime_of_another_form_is_shown_as_given() -> None:
    assert uptime_text("[ 12 s ]") == "12 s"
    assert uptime_text("") == "-"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


STATES = ("ok", "slow", "failed", "silent", "asking")


@given(
    budget=st.floats(0.2, 5.0),
    servers=st.lists(
        st.tuples(st.sampled_from(["name server", "broker"]), st.sampled_from(STATES)), max_size=6
    ),
)
def test_the_badge_is_green_only_when_every_server_answered_in_time(
    budget: float, servers: list[tuple[str, str]]
) -> None:
    clock = Clock()
    monitor = Monitor(DashboardConfig(namesrv="127.0.0.1:1", page_budget=budget), monotonic=clock)
    for i, (kind, state) in enumerate(servers):
        h = ServerHealth(kind, f"127.0.0.1:{1000 + i}")
        if state in ("ok", "slow", "asking"):
            h.answered_ms, h.took = 1, budget * (0.6 if state == "slow" else 0.4)
        if state == "asking":  # a question out for less than the budget: not silence yet
            h.asking_since = clock.now - budget * 0.9
        if state == "silent":
            h.asking_since = clock.now - budget * 1.1
        if state == "failed":
            h.error, h.failing_since_ms = f"{kind} {h.addr} did not answer", 1
        monitor.servers[(kind, h.addr)] = h
    health = monitor.health()
    namesrv = [state for kind, state in servers if kind == "name server"]
    complaints = [state for _, state in servers if state in ("slow", "failed", "silent")]
    if not namesrv:
        assert health.level == "unknown"
    elif not any(state in ("ok", "slow", "asking") for state in namesrv):
        assert health.level == "down"
        assert health.text.startswith("no answer: name server 127.0.0.1:")
    elif complaints:
        assert health.level == "slow"
    else:
        assert health.level == "ok"
        assert health.text.startswith("live:")
    if namesrv:
        assert len(health.problems) == len(complaints)


def test_a_question_that_is_never_answered_turns_the_badge_red_after_the_budget() -> None:
    clock = Clock()
    monitor = Monitor(DashboardConfig(namesrv="127.0.0.1:1", page_budget=1.0), monotonic=clock)

    async def run() -> list[str]:
        never = asyncio.Event()
        asking = asyncio.ensure_future(monitor._ask("name server", "127.0.0.1:9", "", never.wait))
        await asyncio.sleep(0)
        levels = [monitor.health().level]
        clock.now += 1.5
        levels.append(monitor.health().level)
        assert "name server 127.0.0.1:9 has not answered for 1.5 s" in monitor.health().text
        never.set()  # it answers at last, 1.5 s late: slow (amber), no longer silent
        await asking
        levels.append(monitor.health().level)
        failing = monitor._ask("name server", "127.0.0.1:9", "", _fails)
        assert await failing is None
        levels.append(monitor.health().level)
        return levels

    assert asyncio.run(run()) == ["unknown", "down", "slow", "down"]


async def _fails() -> None:
    raise RemotingTimeoutError("name server 127.0.0.1:9 did not answer: timed out")


settings = st.fixed_dictionaries(
    {f: (st.booleans() if kind == "bool" else st.integers(0, 1024)) for f, _, kind in GROUP_FIELDS}
)


@given(before=settings, after=settings)
def test_group_settings_from_a_form_and_what_they_change(
    before: dict[str, object], after: dict[str, object]
) -> None:
    form = {f: ("on" if after[f] else "") if kind == "bool" else str(after[f]) for f, _, kind in GROUP_FIELDS}
    config = group_config_of("g", form)
    assert config == SubscriptionGroupConfig(group_name="g", **after)  # type: ignore[arg-type]
    changes = group_config_changes(before, config)
    assert len(changes) == sum(before[f] != after[f] for f, _, _ in GROUP_FIELDS)


@pytest.mark.parametrize("bad", ["", "-1", "x", "10001", "1.5"])
def test_a_setting_that_is_no_whole_number_is_refused(bad: str) -> None:
    form = {f: "1" for f, _, kind in GROUP_FIELDS if kind == "int"} | {"retry_max_times": bad}
    with pytest.raises(ConfigError, match="retry times must be a whole number"):
        group_config_of("g", form)


def test_a_dead_letters_copy_goes_to_the_groups_retry_topic_without_the_brokers_properties() -> None:
    dead = MessageExt(
        topic="%DLQ%g",
        body=b"payload",
        properties={
            "KEYS": "k",
            "TAGS": "t",
            "RETRY_TOPIC": "Orders",
            "UNIQ_KEY": "AB" * 16,
            "MIN_OFFSET": "0",
            "MAX_OFFSET": "9",
            "REAL_TOPIC": "x",
            "REAL_QID": "1",
            "RECONSUME_TIME": "16",
            "custom": "kept",
        },
    )
    copy = resend_copy(dead, "g")
    assert copy.topic == "%RETRY%g"
    assert copy.body == b"payload"
    assert copy.properties == {
        "KEYS": "k",
        "TAGS": "t",
        "RETRY_TOPIC": "Orders",
        "custom": "kept",
        "ORIGIN_MESSAGE_ID": dead.msg_id,
        "WAIT": "true",  # a new message's own
    }


@given(st.dictionaries(st.sampled_from("ABCDEFGH"), st.lists(st.integers(0, 500), min_size=1, max_size=6)))
def test_the_busiest_topics_are_those_that_stored_most_in_the_window(growth: dict[str, list[int]]) -> None:
    monitor = Monitor(DashboardConfig(namesrv="127.0.0.1:1"))
    for topic, steps in growth.items():
        total, points = 0, deque([(0, 0)])
        for i, step in enumerate(steps, 1):
            total += step
            points.append((i * 1000, total))
        monitor.topic_totals[topic] = points
    charts = topic_tps_charts(monitor)
    stored = {t: sum(s) for t, s in growth.items()}
    want = sorted(stored, key=lambda t: (-stored[t], t))[:5]
    assert [c["broker"] for c in charts] == want
    for c in charts:
        assert c["stored"] == stored[c["broker"]]
        assert c["last_put"] == growth[c["broker"]][-1]  # one second between readings
