"""Steps the scenarios share: send numbered messages, wait for them, check them against the plan,
wait for committed offsets, and explain an allocation in words."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rocketq.allocate import java_sorted
from rocketq.analytics import counted
from rocketq.lab.harness import Lab, Received, Worker
from rocketq.lab.narrate import queue_ranges
from rocketq.lab.scenario import Run
from rocketq.models import MessageQueue

__all__ = [
    "Sent",
    "check_against_plan",
    "consumers",
    "deliver",
    "explain_allocation",
    "owner_names",
    "received_by",
    "send_numbered",
    "settle",
    "settled_round",
    "wait_committed",
    "wait_delivered",
]


@dataclass(frozen=True, slots=True)
class Sent:
    body: str
    queue: MessageQueue
    offset: int


def send_numbered(run: Run, topic: str, label: str, count: int) -> list[Sent]:
    """Send ``count`` messages ``<label>-<n>`` with the producer's default queue choice (round robin)."""
    out = []
    for i in range(1, count + 1):
        body = f"{label}-{i}"
        result = run.lab.send(topic, body)
        out.append(Sent(body, result.message_queue, result.queue_offset))
    return out


def wait_delivered(
    lab: Lab,
    workers: Sequence[Worker],
    sent: Sequence[Sent],
    timeout: float = 45.0,
    owned: Sequence[MessageQueue] | None = None,
) -> None:
    """Wait until every body of ``sent`` (on one of the ``owned`` queues, when given) was consumed."""
    bodies = {s.body for s in sent if owned is None or s.queue in owned}

    def done() -> bool:
        seen = {r.body for w in workers for r in w.received()}
        return bodies <= seen

    lab.wait_until(done, timeout, f"{len(bodies)} messages to be consumed")


def consumers(run: Run, group: str, topic: str, names: Sequence[str]) -> list[Worker]:
    """One consumer process per name in ``names``, of ``group`` on ``topic``, under the run's strategy."""
    return [run.lab.spawn_consumer(name, group, [topic], strategy=run.strategy) for name in names]


def settle(
    run: Run, group: str, topic: str, workers: Sequence[Worker]
) -> tuple[dict[str, list[MessageQueue]], dict[str, str]]:
    """Wait until ``workers`` own ``topic``'s queues as the run's strategy plans
    (:meth:`~rocketq.lab.harness.Lab.wait_stable`); the plan (client id to queues) and the
    workers' names by client id."""
    plan = run.lab.wait_stable(group, workers, [topic], strategy=run.strategy)[topic]
    return plan, {w.client_id or "": w.name for w in workers}


def deliver(
    run: Run, topic: str, label: str, count: int, workers: Sequence[Worker]
) -> tuple[list[Sent], dict[str, list[Received]]]:
    """Send ``count`` numbered messages (:func:`send_numbered`), wait until ``workers`` consumed
    them all, and give what was sent and, per worker, what it received of them."""
    sent = send_numbered(run, topic, label, count)
    wait_delivered(run.lab, workers, sent)
    return sent, received_by(workers, sent)


def received_by(workers: Sequence[Worker], sent: Sequence[Sent]) -> dict[str, list[Received]]:
    """Per worker, its receipts of the bodies in ``sent`` (in the order it got them)."""
    bodies = {s.body for s in sent}
    return {w.name: [r for r in w.received() if r.body in bodies] for w in workers}


def owner_names(
    workers: Sequence[Worker], share: Mapping[str, Sequence[MessageQueue]]
) -> dict[MessageQueue, list[str]]:
    """Per queue, the workers whose client id the plan gives it to (two when an id is shared)."""
    out: dict[MessageQueue, list[str]] = {}
    for w in workers:
        for q in share.get(w.client_id or "", ()):
            out.setdefault(q, []).append(w.name)
    return out


def check_against_plan(
    run: Run,
    what: str,
    workers: Sequence[Worker],
    sent: Sequence[Sent],
    share: Mapping[str, Sequence[MessageQueue]],
) -> bool:
    """Check that each message of ``sent`` was consumed by the owner the plan gives its queue."""
    owners = owner_names(workers, share)
    got = received_by(workers, sent)
    by_body: dict[str, list[str]] = {}
    for name, recs in got.items():
        for r in recs:
            by_body.setdefault(r.body, []).append(name)
    wrong = []
    unowned = 0
    for s in sent:
        who = by_body.get(s.body, [])
        expected = owners.get(s.queue, [])
        unowned += not expected
        if (expected and not who) or any(name not in expected for name in who):
            wrong.append(
                f"{s.body} (queue {s.queue.queue_id}) went to {who or 'nobody'}, plan says {expected}"
            )
    if wrong:
        detail = "; ".join(wrong[:4]) + (f" and {len(wrong) - 4} more" if len(wrong) > 4 else "")
    else:
        detail = f"all {len(sent) - unowned} consumed by the planned owner of their queue"
        if unowned:
            detail += f"; {unowned} on queues the plan gives nobody stayed unconsumed"
    return run.check(what, not wrong, detail)


def wait_committed(lab: Lab, group: str, topic: str, timeout: float = 45.0) -> None:
    """Wait until the group's committed offsets of ``topic`` reach the broker's (lag 0)."""

    def caught_up() -> bool:
        return lab.admin.group_progress(group, topic).total_lag == 0

    lab.wait_until(caught_up, timeout, f"{group} to commit its offsets of {topic}")


def settled_round(
    run: Run,
    title: str,
    *,
    group: str,
    topic: str,
    queues: Sequence[MessageQueue],
    workers: Sequence[Worker],
    send: tuple[str, int],
    notes: Sequence[str] = (),
) -> tuple[dict[str, list[MessageQueue]], list[Sent], dict[str, list[Received]]]:
    """A step of the seeds' experiments: wait until ``workers`` own ``topic`` as planned
    (:func:`settle`), send ``send`` = (label, count) numbered messages and wait for them
    (:func:`deliver`), and record the step ``title`` with the allocation explained first in its
    notes. The plan, what was sent and what each worker received."""
    plan, names = settle(run, group, topic, workers)
    sent, got = deliver(run, topic, *send, workers)
    explained = explain_allocation(run.strategy, queues, list(plan), names)
    run.step(title, workers=workers, topics=[topic], messages=got, notes=[explained, *notes])
    return plan, sent, got


def explain_allocation(
    strategy: str, queues: Sequence[MessageQueue], ids: Sequence[str], names: Mapping[str, str]
) -> str:
    """One sentence on why the plan is what it is, citing the strategy's rule."""
    ordered = java_sorted(ids)
    distinct = list(dict.fromkeys(ordered))
    label = [names.get(cid, cid) for cid in distinct]
    n, m = len(queues), len(ordered)
    order = " < ".join(f"{names.get(c, c)} ({c})" for c in distinct)
    if strategy.upper() == "AVG" and m:
        base, extra = divmod(n, m)
        if m == 1:
            rule = f"AVG: {counted(n, 'queue')} / 1 consumer -> all {n} to it"
        elif n == m:
            rule = f"AVG: {n} queues / {m} consumers -> one each, in sorted order"
        elif n < m:
            rule = (
                f"AVG: {counted(n, 'queue')} / {m} consumers -> one each to the first {n} in sorted order, "
                "none after"
            )
        elif extra == 0:
            rule = f"AVG: {n} queues / {m} consumers -> {base} each, as contiguous blocks in sorted order"
        else:
            rule = (
                f"AVG: {n} queues / {m} consumers = {base} rem {extra} -> the first {extra} in sorted order "
                f"get {base + 1}, the others {base}, as contiguous blocks"
            )
        return f"{rule}; the ids sort as {order}" + (f", so {label[0]} comes first" if len(label) > 1 else "")
    if strategy.upper() == "AVG_BY_CIRCLE" and m:
        return f"AVG_BY_CIRCLE: queue i goes to consumer i mod {m} in sorted order ({order})"
    return f"{strategy}: the share rocketq.allocate.plan computes for these {n} queues and ids ({order})"


def describe_share(share: Mapping[str, Sequence[MessageQueue]], names: Mapping[str, str]) -> str:
    return ", ".join(f"{names.get(cid, cid)} {queue_ranges(qs)}" for cid, qs in share.items())
