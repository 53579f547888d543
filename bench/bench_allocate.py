"""How fast ``plan()`` shares 10,000 queues among 1,000 consumers, for every strategy.

A plan runs the strategy for every consumer of the group, as every RocketMQ client does for
itself on each rebalance. Figures, all measured in this process on the same inputs:

* **allocations/s**: consumer shares computed per second (1,000 per plan);
* **x sort**: the plan's time over the time to sort the inputs once (``RebalanceImpl``'s own
  ``Collections.sort`` of queues and client ids, which every plan must do anyway);
* **all ms** vs **naive ms**: ``allocate_all`` (every share at once, on sorted inputs) against
  the obvious implementation, ``allocate`` called once per consumer (``list.index`` per
  consumer, one hash ring per consumer ...), timed on a sample of consumers and scaled to the
  whole group; **naive/all** is how many times slower the obvious way is.

Run: ``python bench/bench_allocate.py`` (``--consumers``, ``--queues``, ``--repeat``).
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

from rocketq.allocate import (
    AllocateAveragely,
    AllocateAveragelyByCircle,
    AllocateByConfig,
    AllocateByMachineRoom,
    AllocateConsistentHash,
    AllocateMachineRoomNearby,
    AllocateSticky,
    AllocationStrategy,
    java_sorted,
    plan,
    sorted_queues,
)
from rocketq.models import MessageQueue


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--consumers", type=int, default=1_000)
    parser.add_argument("--queues", type=int, default=10_000)
    parser.add_argument("--brokers", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--naive-sample", type=int, default=20, help="consumers timed for the naive loop")
    args = parser.parse_args()

    rng = random.Random(7)
    per_broker = args.queues // args.brokers
    rooms = ("hz", "sh")
    queues = [
        MessageQueue("TopicBench", f"{rooms[b % 2]}@broker-{b:02d}", q)
        for b in range(args.brokers)
        for q in range(per_broker)
    ]
    cids = [
        f"{rooms[i % 2]}@10.0.{i // 250}.{i % 250}@{4000 + i}#{rng.getrandbits(40)}"
        for i in range(args.consumers)
    ]
    rng.shuffle(queues)  # as a client holds them: a hash set, in no useful order
    rng.shuffle(cids)

    sorted_mq, sorted_cid = sorted_queues(queues), java_sorted(cids)
    previous = plan(AllocateAveragely(), "bench", queues, cids[1:])  # the group before one consumer joined
    strategies: list[AllocationStrategy] = [
        AllocateAveragely(),
        AllocateAveragelyByCircle(),
        AllocateByConfig(sorted_mq[:16]),
        AllocateByMachineRoom({"hz"}),
        AllocateMachineRoomNearby(AllocateAveragely()),
        AllocateConsistentHash(),
        AllocateSticky(previous),
    ]

    sort_time = best_of(args.repeat, lambda: (sorted_queues(queues), java_sorted(cids)))
    n = args.consumers
    print(
        f"plan(): {n:,} consumers x {len(queues):,} queues on {args.brokers} brokers, best of {args.repeat}"
    )
    print(f"baseline: sorting the inputs once (what RebalanceImpl does first) takes {sort_time * 1e3:.2f} ms")
    print("naive: allocate() called once per consumer on the sorted inputs (sampled, scaled to the group)")
    print()
    header = (
        f"{'strategy':<25}{'plan ms':>9}{'allocations/s':>15}{'x sort':>8}"
        f"{'all ms':>9}{'naive ms':>10}{'naive/all':>11}"
    )
    print(header)
    print("-" * len(header))
    sample = sorted_cid[:: max(1, n // args.naive_sample)][: args.naive_sample]
    for strategy in strategies:
        elapsed = best_of(args.repeat, lambda s=strategy: plan(s, "bench", queues, cids))  # type: ignore[misc]
        whole = best_of(args.repeat, lambda s=strategy: s.allocate_all("bench", sorted_mq, sorted_cid))  # type: ignore[misc]

        def naive(s: AllocationStrategy = strategy) -> None:
            for cid in sample:
                s.allocate("bench", cid, sorted_mq, sorted_cid)

        naive_elapsed = best_of(1, naive) * n / len(sample)
        print(
            f"{strategy.name:<25}{elapsed * 1e3:>9.1f}{n / elapsed:>15,.0f}{elapsed / sort_time:>8.1f}"
            f"{whole * 1e3:>9.1f}{naive_elapsed * 1e3:>10.0f}{naive_elapsed / whole:>10.0f}x"
        )


if __name__ == "__main__":
    main()
