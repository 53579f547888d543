"""``rocketq lab duplicate-client-id``: two processes, one client id (the third seed's bug).

A client id is ``<ip>@<instance name>``. Two consumer processes forced to the same instance name
on the same host send the broker the same id; the broker lists it twice. Each process then looks
for *its* id in the sorted list, finds the first of the two copies - index 0 - and takes index
0's share: with AVG over 8 queues and 2 ids, both take queues 0..3 (every message of those is
consumed twice) and queues 4..7, the share of index 1, go to nobody: their lag only grows.
rocketq flags it twice over: the broker's duplicate view (request 10901, what ``rocketq group
members`` shows) and :func:`rocketq.allocate.check_duplicate_client_ids` on the broker's member
list. Restarted with the default unique ids (``<pid>#<ns>``), the two split the 8 queues and the
backlog drains.
"""

from __future__ import annotations

from rocketq.allocate import check_duplicate_client_ids, get_strategy
from rocketq.lab.common import received_by, send_numbered, wait_committed
from rocketq.lab.harness import Lab
from rocketq.lab.narrate import queue_ranges
from rocketq.lab.scenario import Run

TOPIC = "LabDuplicateId"
GROUP = "lab-duplicate-id"
SHARED_INSTANCE = "shared"


def _lag(lab: Lab) -> dict[int, int]:
    return {q.queue.queue_id: q.lag for q in lab.admin.group_progress(GROUP, TOPIC).queues}


def run(run: Run) -> None:
    lab = run.lab
    queues = lab.create_topic(TOPIC, 8)
    d1 = lab.spawn_consumer("consumer-1", GROUP, [TOPIC], instance=SHARED_INSTANCE, strategy=run.strategy)
    d2 = lab.spawn_consumer("consumer-2", GROUP, [TOPIC], instance=SHARED_INSTANCE, strategy=run.strategy)
    dup = [d1, d2]
    share = lab.wait_stable(GROUP, dup, [TOPIC], strategy=run.strategy)[TOPIC]
    cid = d1.client_id or ""
    taken = sorted({q for w in dup for q in w.owned(TOPIC) or []})
    orphans = [q for q in queues if q not in taken]
    taken_ids = {q.queue_id for q in taken}
    members = lab.admin.group_members(GROUP)
    flagged = [d.client_id for d in members.duplicates]
    broker_ids = [
        c.client_id or "?" for cc in lab.admin.consumer_connection(GROUP).values() for c in cc.connection_set
    ]
    logged = [
        line.split(": ", 1)[-1].strip()
        for log in lab.server_logs()
        for line in log.read_text(errors="replace").splitlines()
        if "DUPLICATE CLIENT ID" in line
    ]
    report = check_duplicate_client_ids(broker_ids, queues, strategy=get_strategy(run.strategy), group=GROUP)
    run.step(
        "two consumer processes with the same client id",
        workers=dup,
        topics=[TOPIC],
        notes=[
            f"both processes run as {cid}; the broker lists the group as {broker_ids}",
            f"each looks up its own id in that sorted list and finds index 0, so both take index 0's share "
            f"{queue_ranges(share.get(cid, []))}; {queue_ranges(orphans)} belong to index 1, which nobody is",
            *(f"the broker logged: {line}" for line in logged[:1]),
        ],
        broker_client_ids=broker_ids,
    )
    run.check(
        "both processes own the same queues",
        d1.owned(TOPIC) == d2.owned(TOPIC) and bool(orphans),
        f"consumer-1 {queue_ranges(d1.owned(TOPIC) or [])}, consumer-2 "
        f"{queue_ranges(d2.owned(TOPIC) or [])}, unowned {queue_ranges(orphans)}",
    )
    run.check(
        "the broker's duplicate view flags the shared id",
        cid in flagged,
        f"rocketq group members: duplicates {flagged or 'none'}",
    )
    run.check(
        "check_duplicate_client_ids finds it and predicts the unconsumed queues",
        report.duplicates.get(cid) == 2 and list(report.unconsumed) == orphans,
        f"duplicates {report.duplicates}, unconsumed {queue_ranges(report.unconsumed)}, "
        f"consumed twice {queue_ranges(report.consumed_twice)}",
    )

    lags: list[dict[int, int]] = []
    total_sent: list[str] = []
    for i in (1, 2):
        sent = send_numbered(run, TOPIC, f"dup-r{i}", 16)
        total_sent += [s.body for s in sent]
        wanted = {s.body for s in sent if s.queue in taken}
        lab.wait_until(
            lambda wanted=wanted: wanted <= {r.body for w in dup for r in w.received()},  # type: ignore[misc]
            45.0,
            "the owned queues' messages to be consumed",
        )
        lab.wait_until(
            lambda: all(_lag(lab)[q] == 0 for q in taken_ids),
            45.0,
            "the owned queues' offsets to be committed",
        )
        lag = _lag(lab)
        lags.append(lag)
        got = received_by(dup, sent)
        twice = sum(len(r) for r in got.values()) - len({x.body for r in got.values() for x in r})
        run.step(
            f"round {i}: 16 messages over the 8 queues (the producer's round robin)",
            workers=dup,
            topics=[TOPIC],
            messages=got,
            notes=[
                f"lag per queue (group progress): {lag}",
                f"{twice} messages were consumed twice (both processes pull queues {queue_ranges(taken)})",
            ],
            lag=lag,
            consumed_twice=twice,
        )
    orphan_ids = [q.queue_id for q in orphans]
    run.check(
        "the unowned queues' lag grows",
        all(lags[1][q] > lags[0][q] > 0 for q in orphan_ids),
        f"lag of {orphan_ids}: {[lags[0][q] for q in orphan_ids]} -> {[lags[1][q] for q in orphan_ids]}",
    )
    # both at once: were one to leave first, the other would be the id's only holder, take all 8
    # queues and drain the backlog itself before it stopped
    lab.stop_workers(dup)
    backlog_bodies = {r.body for w in dup for r in w.received() if r.queue in orphans}

    u1 = lab.spawn_consumer("consumer-1", GROUP, [TOPIC], instance=None, strategy=run.strategy)
    u2 = lab.spawn_consumer("consumer-2", GROUP, [TOPIC], instance=None, strategy=run.strategy)
    fixed = [u1, u2]
    share2 = lab.wait_stable(GROUP, fixed, [TOPIC], strategy=run.strategy)[TOPIC]
    backlog = sum(lags[1][q] for q in orphan_ids)
    wait_committed(lab, GROUP, TOPIC, timeout=45.0)
    drained = _lag(lab)
    owned_now = sorted(q for w in fixed for q in w.owned(TOPIC) or [])
    backlog_got = {w.name: len([r for r in w.received() if r.queue in orphans]) for w in fixed}
    late = len(backlog_bodies)
    fixed_bodies = [r.body for w in fixed for r in w.received() if r.queue in orphans]
    redelivered = len(fixed_bodies) - len(set(fixed_bodies))
    first = min(fixed, key=lambda w: int(w.rebalances(TOPIC)[0]["ts_ms"]) if w.rebalances(TOPIC) else 0)
    why_twice = (
        [
            f"{redelivered} backlog messages were consumed by both: {first.name} started first, was alone in "
            "the group for a moment and took all 8 queues; when the other joined it handed queues over "
            "before committing what it had consumed, and the newcomer began at the last committed offset - "
            "RocketMQ's asynchronous commits at work (see `rocketq lab rebalance-cost`)"
        ]
        if redelivered
        else []
    )
    run.step(
        "restarted with the default unique client ids",
        workers=fixed,
        topics=[TOPIC],
        notes=[
            f"ids are now {u1.client_id} and {u2.client_id}: distinct, so each has its own index "
            f"and the 8 queues split {queue_ranges(share2.get(u1.client_id or '', []))} / "
            f"{queue_ranges(share2.get(u2.client_id or '', []))}",
            f"the {backlog} messages waiting on {queue_ranges(orphans)} were consumed: {backlog_got}"
            + (f" ({late} of them by a shared-id process while it stopped)" if late else ""),
            *why_twice,
            f"lag per queue now: {drained}",
        ],
        lag=drained,
    )
    run.check("all 8 queues are owned, each once", owned_now == queues, f"owned: {queue_ranges(owned_now)}")
    run.check(
        "the backlog drains",
        sum(drained.values()) == 0 and sum(backlog_got.values()) + late >= backlog,
        f"total lag {sum(drained.values())}; {sum(backlog_got.values())} backlog messages consumed",
    )
    run.result.data.update(
        {
            "shared_client_id": cid,
            "unowned": orphan_ids,
            "lag_rounds": [{str(k): v for k, v in lag.items()} for lag in lags],
            "flagged": flagged,
            "sent": len(total_sent),
            "backlog": backlog,
            "backlog_consumed_twice_after_restart": redelivered,
        }
    )
