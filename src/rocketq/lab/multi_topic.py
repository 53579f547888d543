"""``rocketq lab multi-topic``: one group on two topics balances badly, per topic (a seed's case).

RocketMQ allocates each topic on its own. With 4 consumers and two topics of 2 queues each, AVG
gives each topic's 2 queues to the first 2 sorted consumers - the *same* two for both topics - so
consumer-1 and consumer-2 own 2 queues each and consumer-3 and consumer-4 idle. rocketq's
group-wide balance (``PushConsumerConfig(balance="group")``; :func:`rocketq.allocate.plan_group`
with ``balance="group"``) rotates the sorted id list by the number of queues of the topics
before - the group's retry topic, ``%RETRY%<group>`` with its one queue, counts too - so each
topic starts where the one before ended: 1/1/1/1.
"""

from __future__ import annotations

from rocketq.lab.common import Sent, check_against_plan, received_by, send_numbered, wait_delivered
from rocketq.lab.harness import Worker
from rocketq.lab.narrate import queue_ranges
from rocketq.lab.scenario import Run

TOPICS = ("LabTopicP", "LabTopicS")
GROUPS = {"topic": "lab-multi-topic", "group": "lab-multi-topic-balanced"}


def _counts(workers: list[Worker]) -> dict[str, int]:
    return {w.name: sum(len(w.owned(t) or []) for t in TOPICS) for w in workers}


def run(run: Run) -> None:
    lab = run.lab
    for t in TOPICS:
        lab.create_topic(t, 2)
    results: dict[str, dict[str, int]] = {}
    for balance, group in GROUPS.items():
        workers = [
            lab.spawn_consumer(f"consumer-{i}", group, list(TOPICS), strategy=run.strategy, balance=balance)
            for i in (1, 2, 3, 4)
        ]
        plans = lab.wait_stable(group, workers, list(TOPICS), strategy=run.strategy, balance=balance)
        sent: dict[str, list[Sent]] = {t: send_numbered(run, t, f"{balance}-{t}", 8) for t in TOPICS}
        everything = [s for t in TOPICS for s in sent[t]]
        wait_delivered(lab, workers, everything)
        counts = _counts(workers)
        results[balance] = counts
        share_text = "; ".join(
            f"{w.name}: " + ", ".join(f"{t} {queue_ranges(w.owned(t) or [])}" for t in TOPICS if w.owned(t))
            for w in workers
            if counts[w.name]
        )
        idle = [w.name for w in workers if not counts[w.name]]
        notes = (
            [
                "RocketMQ allocates every topic on its own over the same sorted ids: with AVG each topic's "
                "2 queues go to the first 2 consumers, for both topics",
                f"owned: {share_text}; idle: {', '.join(idle) or 'none'}",
            ]
            if balance == "topic"
            else [
                f"balance='group': the group's topics in Java string order - %RETRY%{group} (the retry topic "
                "every clustering group subscribes, 1 queue), LabTopicP, LabTopicS - each with the sorted id "
                "list rotated left by the queues before it (1, then 3): where one topic's queues stop, the "
                "next topic's start",
                f"owned: {share_text}; idle: {', '.join(idle) or 'none'}",
            ]
        )
        run.step(
            f"4 consumers, 2 topics x 2 queues, balance={balance!r}, 16 messages",
            workers=workers,
            topics=list(TOPICS),
            messages=received_by(workers, everything),
            notes=notes,
            queues_per_consumer=counts,
        )
        for t in TOPICS:
            check_against_plan(
                run, f"balance={balance}: {t} messages follow the plan", workers, sent[t], plans[t]
            )
        if run.strategy == "AVG":
            want = (
                {"consumer-1": 2, "consumer-2": 2, "consumer-3": 0, "consumer-4": 0}
                if balance == "topic"
                else dict.fromkeys(counts, 1)
            )
            label = (
                "per-topic AVG puts all 4 queues on 2 consumers"
                if balance == "topic"
                else "group balance: 1/1/1/1"
            )
            run.check(label, counts == want, f"queues per consumer: {counts}")
        lab.stop_workers(workers)
    run.result.data.update({"queues_per_consumer": results, "topics": list(TOPICS)})
