"""``rocketq lab strategies``: one group shape under each of RocketMQ's six strategies, side by side.

Two brokers behind one name server, named with machine rooms as RocketMQ's room-aware strategies
expect (``room1@broker-a``, ``room2@broker-b``), one topic with 4 queues on each, and for every
strategy a group of three consumer processes named with rooms too (``room1-c1``, ``room1-c2``,
``room2-c3``; client ids ``127.0.0.1@room1-c1``...). The six groups run at once on the same topic;
each one's ownership is checked against :func:`rocketq.allocate.plan` for the same inputs and
every message against its queue's owner in that group. The options the strategies need:

* CONFIG - each consumer is configured with its own queue list (RocketMQ's
  ``AllocateMessageQueueByConfig`` returns that list whatever the group looks like);
* MACHINE_ROOM - ``rooms={"room1"}``: only room1's queues are shared out, room2's go to nobody;
* MACHINE_ROOM_NEARBY - AVG inside each room, consumer rooms read from instance names
  (:class:`~rocketq.lab.worker.InstanceRoomResolver`): room1's consumers split room1's queues,
  room2's consumer takes room2's.
"""

from __future__ import annotations

from typing import Any

from rocketq.allocate import ROCKETMQ_STRATEGIES
from rocketq.lab.common import check_against_plan, received_by, send_numbered, wait_delivered
from rocketq.lab.harness import Worker
from rocketq.lab.scenario import Run
from rocketq.lab.worker import build_strategy
from rocketq.models import MessageQueue

BROKERS = ("room1@broker-a", "room2@broker-b")
TOPIC = "LabStrategies"
INSTANCES = ("room1-c1", "room1-c2", "room2-c3")
_SHORT = {"room1@broker-a": "A", "room2@broker-b": "B"}


def _options(strategy: str, instance: str) -> dict[str, Any] | None:
    if strategy == "CONFIG":
        lists = {
            "room1-c1": [[TOPIC, "room1@broker-a", i] for i in range(4)],
            "room1-c2": [[TOPIC, "room2@broker-b", i] for i in range(2)],
            "room2-c3": [[TOPIC, "room2@broker-b", i] for i in range(2, 4)],
        }
        return {"queues": lists[instance]}
    if strategy == "MACHINE_ROOM":
        return {"rooms": ["room1"]}
    if strategy == "MACHINE_ROOM_NEARBY":
        return {"inner": "AVG"}
    return None


def _short(queues: list[MessageQueue]) -> str:
    by: dict[str, list[int]] = {}
    for q in sorted(queues):
        by.setdefault(_SHORT.get(q.broker_name, q.broker_name), []).append(q.queue_id)
    return " ".join(f"{b}{ids}".replace(" ", "") for b, ids in by.items()) or "-"


def run(run: Run) -> None:
    lab = run.lab
    queues = lab.create_topic(TOPIC, 4)
    groups: dict[str, list[Worker]] = {}
    for strategy in ROCKETMQ_STRATEGIES:
        group = f"lab-strategy-{strategy.lower().replace('_', '-')}"
        groups[strategy] = [
            lab.spawn_consumer(
                inst, group, [TOPIC], strategy=strategy, strategy_options=_options(strategy, inst)
            )
            for inst in INSTANCES
        ]
    plans: dict[str, dict[str, list[MessageQueue]]] = {}
    for strategy, workers in groups.items():
        group = f"lab-strategy-{strategy.lower().replace('_', '-')}"
        ids = [w.wait_started() for w in workers]
        if strategy == "CONFIG":
            # every consumer runs its own configured list: plan each with its own strategy object
            expected = {
                cid: sorted(
                    build_strategy(strategy, _options(strategy, inst)).allocate(
                        group, cid, queues, sorted(ids)
                    )
                )
                for cid, inst in zip(ids, INSTANCES, strict=True)
            }
            plans[strategy] = lab.wait_stable(group, workers, [TOPIC], expected={TOPIC: expected})[TOPIC]
        else:
            plans[strategy] = lab.wait_stable(
                group, workers, [TOPIC], strategy=strategy, strategy_options=_options(strategy, INSTANCES[0])
            )[TOPIC]
    sent = send_numbered(run, TOPIC, "msg", 16)
    for strategy, workers in groups.items():
        wait_delivered(lab, workers, sent, owned=[q for qs in plans[strategy].values() for q in qs])
    rows = []
    for i, inst in enumerate(INSTANCES):
        row: list[object] = [inst]
        for strategy in ROCKETMQ_STRATEGIES:
            w = groups[strategy][i]
            got = len(received_by([w], sent)[w.name])
            row.append(f"{_short(w.owned(TOPIC) or [])} ({got} msgs)")
        rows.append(row)
    unowned_row: list[object] = ["(nobody)"]
    for strategy in ROCKETMQ_STRATEGIES:
        taken = {q for qs in plans[strategy].values() for q in qs}
        unowned_row.append(_short([q for q in queues if q not in taken]))
    rows.append(unowned_row)
    notes = [
        "AVG: 8 queues / 3 = 2 rem 2: contiguous blocks 3/3/2 over the sorted queues (A before B)",
        "AVG_BY_CIRCLE: queue i to consumer i mod 3",
        "CONFIG: each consumer reads the list it was configured with: room1-c1 A[0..3], room1-c2 B[0,1], "
        "room2-c3 B[2,3]",
        "MACHINE_ROOM rooms={room1}: only room1's 4 queues are dealt (4 // 3 = 1 each, the remainder from "
        "the end of the list to the first consumers); room2's queues go to nobody",
        "MACHINE_ROOM_NEARBY (AVG inside rooms): room1's consumers split A, room2's consumer takes B",
        "CONSISTENT_HASH: each queue goes to the next of 10 virtual nodes per consumer on an MD5 ring",
    ]
    run.step(
        "six strategies, one group each, 16 messages",
        notes=notes,
        ownership={
            strategy: {
                w.name: [f"{q.broker_name}:{q.queue_id}" for q in w.owned(TOPIC) or []] for w in workers
            }
            for strategy, workers in groups.items()
        },
        options={s: {inst: _options(s, inst) for inst in INSTANCES} for s in ROCKETMQ_STRATEGIES},
    )
    run.narrator.table(
        "queues owned per strategy (A = room1@broker-a, B = room2@broker-b) and messages received of 16",
        ("consumer", *ROCKETMQ_STRATEGIES),
        rows,
    )
    for strategy, workers in groups.items():
        check_against_plan(
            run, f"{strategy}: messages follow rocketq.allocate's plan", workers, sent, plans[strategy]
        )
    avg_counts = [len(plans["AVG"].get(w.client_id or "", [])) for w in groups["AVG"]]
    run.check("AVG deals 8 queues 3/3/2", avg_counts == [3, 3, 2], f"counts {avg_counts}")
    room = {
        w.name: _short(plans["MACHINE_ROOM_NEARBY"].get(w.client_id or "", []))
        for w in groups["MACHINE_ROOM_NEARBY"]
    }
    run.check(
        "MACHINE_ROOM_NEARBY keeps consumers in their room",
        all(
            q.broker_name.startswith(w.name.split("-")[0])
            for w in groups["MACHINE_ROOM_NEARBY"]
            for q in plans["MACHINE_ROOM_NEARBY"].get(w.client_id or "", [])
        ),
        f"{room}",
    )
    mr_owned = {q for qs in plans["MACHINE_ROOM"].values() for q in qs}
    run.check(
        "MACHINE_ROOM shares only room1's queues",
        mr_owned == {q for q in queues if q.broker_name.startswith("room1@")},
        f"owned {_short(sorted(mr_owned))}",
    )
    run.result.data.update(
        {
            "plans": {
                s: {
                    w.name: [f"{q.broker_name}:{q.queue_id}" for q in p.get(w.client_id or "", [])]
                    for w in groups[s]
                }
                for s, p in plans.items()
            }
        }
    )
