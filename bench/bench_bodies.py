"""How fast rocketq reads and writes RocketMQ's fastjson bodies.

Each figure is a rate next to a baseline measured in the same process on the same data:

* ``json.loads`` / ``json.dumps`` (the standard library's C code) on the *standard-JSON
  equivalent* of the body is the baseline for parsing and writing;
* the typed rows (``TopicRouteData.decode`` …) add building frozen dataclasses on top.

Bodies: a two-broker route (standard JSON, what 4.9.4 clients get), the same route in fastjson's
native form (``{0:"…"}``, which the C parser refuses), a consumer heartbeat, and a ``ConsumeStats``
of 1,024 queues (objects as map keys, the non-standard worst case).

Run: ``python bench/bench_bodies.py`` (``--seconds`` per measurement, default 0.5).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

from rocketq.models import MessageQueue
from rocketq.protocol.bodies import (
    BrokerData,
    ConsumerData,
    ConsumeStats,
    ConsumeType,
    HeartbeatData,
    MessageModel,
    OffsetWrapper,
    ProducerData,
    QueueData,
    SubscriptionData,
    TopicRouteData,
)
from rocketq.protocol.fastjson import _loads_fallback, dumps, loads


def route() -> TopicRouteData:
    return TopicRouteData(
        queue_datas=tuple(
            QueueData(broker_name=f"broker-{c}", read_queue_nums=8, write_queue_nums=8, perm=6) for c in "ab"
        ),
        broker_datas=tuple(
            BrokerData(
                cluster="DefaultCluster",
                broker_name=f"broker-{c}",
                broker_addrs={0: f"127.0.0.1:109{i}1", 1: f"127.0.0.1:109{i}5"},
            )
            for i, c in enumerate("ab", start=1)
        ),
    )


def heartbeat() -> HeartbeatData:
    subs = tuple(
        SubscriptionData(
            topic=topic, sub_string="TagA || TagB", tags_set=("TagA", "TagB"), code_set=(2598919, 2598920),
            sub_version=1795248586842,
        )
        for topic in ("WireDemo", "%RETRY%WireGroup")
    )  # fmt: skip
    return HeartbeatData(
        client_id="127.0.0.1@9627#2662675226830",
        producer_data_set=(ProducerData(group_name="CLIENT_INNER_PRODUCER"),),
        consumer_data_set=(
            ConsumerData(
                group_name="WireGroup",
                consume_type=ConsumeType.CONSUME_PASSIVELY,
                message_model=MessageModel.CLUSTERING,
                subscription_data_set=subs,
            ),
        ),
    )


def consume_stats(queues: int = 1024) -> ConsumeStats:
    return ConsumeStats(
        offset_table={
            MessageQueue("BenchTopic", f"broker-{i % 4}", i // 4): OffsetWrapper(
                broker_offset=1_000_000 + i, consumer_offset=999_000 + i, last_timestamp=1795248587862 + i
            )
            for i in range(queues)
        },
        consume_tps=1234.5,
    )


def standard_equivalent(value: Any) -> Any:
    """The same data with every map key a string, so that ``json`` can handle it."""
    if isinstance(value, dict):
        return {k if isinstance(k, str) else dumps(k): standard_equivalent(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [standard_equivalent(v) for v in value]
    return value


def rate(fn: Callable[[], object], seconds: float) -> float:
    """Calls per second of ``fn`` over about ``seconds``."""
    calls = 0
    batch = 1
    start = time.perf_counter()
    while True:
        for _ in range(batch):
            fn()
        calls += batch
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return calls / elapsed
        batch = min(batch * 2, 10_000)


def report(title: str, rows: list[tuple[str, Callable[[], object]]], seconds: float) -> None:
    print(f"\n{title}")
    base = 0.0
    for i, (label, fn) in enumerate(rows):
        per_second = rate(fn, seconds)
        if i == 0:
            base = per_second
        print(f"  {label:<52} {per_second:>12,.0f}/s  {per_second / base:6.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.5, help="time per measurement")
    seconds = parser.parse_args().seconds

    cases = {
        "route, standard JSON (4.9.4 clients)": (TopicRouteData, route().encode(browser_compatible=True)),
        "route, fastjson native {0:…} (older clients)": (TopicRouteData, route().encode()),
        "heartbeat": (HeartbeatData, heartbeat().encode()),
        "ConsumeStats, 1024 queues (object keys)": (ConsumeStats, consume_stats().encode()),
    }
    for name, (cls, body) in cases.items():
        text = body.decode()
        std_text = json.dumps(standard_equivalent(loads(body)), separators=(",", ":"))
        decoded = cls.decode(body)
        value = decoded.to_json()
        report(
            f"decode {name} ({len(body)} bytes)",
            [
                ("baseline: json.loads of the standard equivalent", lambda t=std_text: json.loads(t)),  # type: ignore[misc]
                ("fastjson.loads", lambda b=body: loads(b)),  # type: ignore[misc]
                ("fallback parser alone", lambda t=text: _loads_fallback(t)),  # type: ignore[misc]
                (f"{cls.__name__}.decode (typed)", lambda b=body, c=cls: c.decode(b)),  # type: ignore[misc]
            ],
            seconds,
        )
        std_value = standard_equivalent(value)
        report(
            f"encode {name}",
            [
                (
                    "baseline: json.dumps of the standard equivalent",
                    lambda v=std_value: json.dumps(v, separators=(",", ":"), ensure_ascii=False),  # type: ignore[misc]
                ),
                ("fastjson.dumps", lambda v=value: dumps(v)),  # type: ignore[misc]
                (f"{cls.__name__}.encode (typed)", lambda d=decoded: d.encode()),  # type: ignore[misc]
            ],
            seconds,
        )


if __name__ == "__main__":
    main()
