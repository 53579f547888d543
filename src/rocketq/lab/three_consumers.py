"""``rocketq lab three-consumers``: 16 queues over 3 consumers, the seeds' 6/5/5.

AVG gives ``16 // 3 = 5`` queues each and the remainder ``16 % 3 = 1`` to the first sorted
consumer, as contiguous blocks: ``[0..5] [6..10] [11..15]``. 32 messages then land on each
queue's owner.
"""

from __future__ import annotations

from rocketq.lab.common import (
    check_against_plan,
    consumers,
    deliver,
    explain_allocation,
    settle,
)
from rocketq.lab.scenario import Run

TOPIC = "LabThreeConsumers"
GROUP = "lab-three-consumers"


def run(run: Run) -> None:
    lab = run.lab
    queues = lab.create_topic(TOPIC, 16)
    workers = consumers(run, GROUP, TOPIC, ["consumer-1", "consumer-2", "consumer-3"])
    share, names = settle(run, GROUP, TOPIC, workers)
    sent, got = deliver(run, TOPIC, "msg", 32, workers)
    run.step(
        "3 consumers, 16 queues, 32 messages",
        workers=workers,
        topics=[TOPIC],
        messages=got,
        notes=[explain_allocation(run.strategy, queues, list(share), names)],
    )
    check_against_plan(run, "every message consumed by its queue's planned owner", workers, sent, share)
    owned = {w.name: [q.queue_id for q in w.owned(TOPIC) or []] for w in workers}
    if run.strategy == "AVG":
        want = {
            "consumer-1": list(range(6)),
            "consumer-2": list(range(6, 11)),
            "consumer-3": list(range(11, 16)),
        }
        run.check("AVG: 6/5/5 as [0..5] [6..10] [11..15]", owned == want, f"owned: {owned}")
    counts = {name: len(recs) for name, recs in got.items()}
    run.check(
        "32 messages, each consumed once",
        sum(counts.values()) == 32 and len({r.body for recs in got.values() for r in recs}) == 32,
        f"per consumer: {counts}",
    )
    run.result.data.update({"owned": owned, "messages": counts})
