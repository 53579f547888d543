"""``rocketq lab two-consumers``: the first seed's experiment.

A 16-queue topic and one consumer process, which owns every queue and receives 6 messages.
A second process joins the group: the broker notifies the first (NOTIFY_CONSUMER_IDS_CHANGED),
both re-run the strategy over the same sorted lists, and the first hands over the queues the
plan now gives the newcomer. 6 more messages, then 12 more, each consumed by the owner the plan
gives its queue - checked message by message.
"""

from __future__ import annotations

from rocketq.lab.common import (
    check_against_plan,
    consumers,
    deliver,
    describe_share,
    explain_allocation,
    settle,
    wait_committed,
)
from rocketq.lab.narrate import queue_ranges
from rocketq.lab.scenario import Run

TOPIC = "LabTwoConsumers"
GROUP = "lab-two-consumers"


def run(run: Run) -> None:
    lab = run.lab
    queues = lab.create_topic(TOPIC, 16)
    [c1] = consumers(run, GROUP, TOPIC, ["consumer-1"])
    plan1, names = settle(run, GROUP, TOPIC, [c1])
    sent1, got1 = deliver(run, TOPIC, "step1", 6, [c1])
    run.step(
        "step 1: consumer-1 alone, 6 messages",
        workers=[c1],
        topics=[TOPIC],
        messages=got1,
        notes=[explain_allocation(run.strategy, queues, list(plan1), names)],
    )
    check_against_plan(run, "step 1 messages follow the plan", [c1], sent1, plan1)
    # the newcomer reads its queues from the committed offsets: let consumer-1 commit first, so
    # this step shows the allocation alone (rebalance-cost measures what happens when it has not)
    wait_committed(lab, GROUP, TOPIC)

    [c2] = consumers(run, GROUP, TOPIC, ["consumer-2"])
    workers = [c1, c2]
    plan2, names = settle(run, GROUP, TOPIC, workers)
    moved = [q for q in plan1.get(c1.client_id or "", []) if q not in plan2.get(c1.client_id or "", [])]
    sent2, got2 = deliver(run, TOPIC, "step2", 6, workers)
    rebalance_lines = [
        f"{w.name}: trigger={rec['trigger']} added={len(rec['added'])} removed={len(rec['removed'])}"
        for w in workers
        for rec in w.rebalances(TOPIC)[-1:]
    ]
    run.step(
        "step 2: consumer-2 joins, 6 more messages",
        workers=workers,
        topics=[TOPIC],
        messages=got2,
        notes=[
            "consumer-2 registered with a heartbeat; the broker sent NOTIFY_CONSUMER_IDS_CHANGED to "
            "consumer-1 and both re-ran the strategy over the same sorted lists",
            explain_allocation(run.strategy, queues, list(plan2), names),
            f"consumer-1 dropped {queue_ranges(moved)}; plan: {describe_share(plan2, names)}",
            *rebalance_lines,
        ],
        moved=[q.queue_id for q in moved],
    )
    check_against_plan(run, "step 2 messages follow the new plan", workers, sent2, plan2)
    newcomer_queues = set(plan2.get(c2.client_id or "", []))
    run.check(
        "the newcomer takes over part of the load",
        bool(newcomer_queues) and all(r.queue in newcomer_queues for r in got2["consumer-2"]),
        f"consumer-2 owns {queue_ranges(sorted(newcomer_queues))} and got {len(got2['consumer-2'])} of 6",
    )

    sent3, got3 = deliver(run, TOPIC, "step3", 12, workers)
    run.step(
        "step 3: 12 more messages",
        workers=workers,
        topics=[TOPIC],
        messages=got3,
        notes=["nothing changed in the group, so nothing moved: every queue keeps its owner"],
    )
    check_against_plan(run, "step 3 messages follow the same plan", workers, sent3, plan2)
    all_sent = sent1 + sent2 + sent3
    totals = {w.name: len(w.received()) for w in workers}
    dups = sum(totals.values()) - len({r.body for w in workers for r in w.received()})
    run.result.data.update(
        {
            "topic": TOPIC,
            "group": GROUP,
            "sent": len(all_sent),
            "received": totals,
            "duplicates": dups,
            "plan": {names.get(cid, cid): [q.queue_id for q in qs] for cid, qs in plan2.items()},
        }
    )
    run.check("every message consumed exactly once", dups == 0, f"{len(all_sent)} sent, {dups} duplicates")
