"""``rocketq lab fewer-queues``: more consumers than queues, then as many.

Part 1: a 1-queue topic and two consumer processes. AVG deals the queues over the sorted client
ids; with one queue only the first id gets one, so consumer-1 receives everything and consumer-2
idles (it is in the group, heartbeats, and owns nothing). Part 2: a 2-queue topic and two new
consumer processes: one queue each, and the split is the same on every send, because both
consumers sort the same inputs the same way and nothing in the group changes.
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

TOPIC_ONE = "LabFewerQueues1"
TOPIC_TWO = "LabFewerQueues2"
GROUP_ONE = "lab-fewer-queues-1"
GROUP_TWO = "lab-fewer-queues-2"
ROUNDS = 3


def run(run: Run) -> None:
    lab = run.lab
    queues1 = lab.create_topic(TOPIC_ONE, 1)
    queues2 = lab.create_topic(TOPIC_TWO, 2)
    part1 = consumers(run, GROUP_ONE, TOPIC_ONE, ["consumer-1", "consumer-2"])
    plan1, names = settle(run, GROUP_ONE, TOPIC_ONE, part1)
    sent1, got1 = deliver(run, TOPIC_ONE, "one-queue", 4, part1)
    run.step(
        "part 1: 1 queue, 2 consumers, 4 messages",
        workers=part1,
        topics=[TOPIC_ONE],
        messages=got1,
        notes=[
            explain_allocation(run.strategy, queues1, list(plan1), names),
            "consumer-2 is a member of the group (the broker lists it, it heartbeats) but owns no queue: "
            "adding consumers beyond the queue count adds no parallelism",
        ],
    )
    check_against_plan(run, "part 1 messages follow the plan", part1, sent1, plan1)
    idle = [w.name for w in part1 if not plan1.get(w.client_id or "")]
    if run.strategy == "AVG":
        run.check(
            "AVG gives the only queue to the first sorted consumer; the second idles",
            idle == ["consumer-2"] and len(got1["consumer-1"]) == 4 and not got1["consumer-2"],
            f"idle: {idle}; consumer-1 got {len(got1['consumer-1'])}, consumer-2 {len(got1['consumer-2'])}",
        )
    else:
        run.check("one consumer idles: a queue has one owner", len(idle) == 1, f"idle: {idle}")
    lab.stop_workers(part1)

    part2 = consumers(run, GROUP_TWO, TOPIC_TWO, ["consumer-1", "consumer-2"])
    plan2, names = settle(run, GROUP_TWO, TOPIC_TWO, part2)
    records_before = {w.name: len(w.rebalances(TOPIC_TWO)) for w in part2}
    all_ok = True
    per_round: list[dict[str, int]] = []
    for i in range(1, ROUNDS + 1):
        sent, got = deliver(run, TOPIC_TWO, f"two-queues-r{i}", 4, part2)
        per_round.append({name: len(recs) for name, recs in got.items()})
        run.step(
            f"part 2, round {i}: 2 queues, 2 consumers, 4 messages",
            workers=part2,
            topics=[TOPIC_TWO],
            messages=got,
            notes=[explain_allocation(run.strategy, queues2, list(plan2), names)] if i == 1 else [],
        )
        all_ok &= check_against_plan(run, f"round {i} messages follow the plan", part2, sent, plan2)
    records_after = {w.name: len(w.rebalances(TOPIC_TWO)) for w in part2}
    run.check(
        "the split is stable across sends: no consumer rebalanced its queues",
        records_before == records_after and all_ok,
        f"queue changes seen between rounds: {sum(records_after.values()) - sum(records_before.values())}",
    )
    if run.strategy in ("AVG", "AVG_BY_CIRCLE"):
        counts = {w.name: len(plan2.get(w.client_id or "", [])) for w in part2}
        run.check(
            "one queue each", counts == {"consumer-1": 1, "consumer-2": 1}, f"queues per consumer: {counts}"
        )
    run.result.data.update({"idle": idle, "rounds": per_round})
