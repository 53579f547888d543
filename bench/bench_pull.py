"""The broker's pull handler alone: microseconds per PULL_MESSAGE, against the store's read it makes.

    python bench/bench_pull.py [--rounds R] [--pulls N] [--against OLD_PULL_PY]

An in-process broker (temp data dir, port 0) holds a topic of 8 queues filled with 128 B messages.
Its :class:`~rocketq.broker.handlers.pull.PullProcessor` is called directly, in the event loop, as
the remoting layer calls it - no socket, no codec: what is timed is the handler's own Python (the
header parsed, the group, topic and queue checked, the filter chosen, the store read, the answer
built). Pulls, each ``N`` times per round:

* **found**: 32 messages, the subscription in the request (``*``, flag 4), as a Java consumer;
* **found + view**: the same with rocketq's view fence (``rqEpoch``), as rocketq's push consumer;
* **not found**: at the end of a queue, without the suspend flag (answered PULL_NOT_FOUND);
* **view changed**: a stale ``rqEpoch``, answered PULL_VIEW_CHANGED without reading the store.

**Baseline, same run**: the store's ``get_messages`` of the same 32 messages, alone; a pull's
ratio to it is the handler's cost over the read it cannot avoid. Each figure is this thread's CPU
time (not wall time: the machine is shared), the best of ``R`` rounds.

With ``--against FILE`` (another version of ``rocketq/broker/handlers/pull.py``, e.g.
``git show main:src/rocketq/broker/handlers/pull.py > /tmp/pull_main.py``), that version's
handler is timed in the same rounds, interleaved, and each pull's ratio new / old printed: how a
change of the handler moved its speed, measured in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.util
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from rocketq.broker import Broker, BrokerConfig
from rocketq.broker.handlers import pull as pull_module
from rocketq.protocol import RemotingCommand, RequestCode
from rocketq.protocol.bodies import TopicConfig
from rocketq.protocol.calls import VIEW_FIELD, view_stamp
from rocketq.protocol.codes import ResponseCode, RocketQResponseCode
from rocketq.protocol.headers import PullMessageRequestHeader
from rocketq.protocol.message import encode_message
from rocketq.protocol.properties import properties_to_string, tags_code

TOPIC = "BenchPull"
GROUP = "bench_pull_group"
QUEUES = 8
PER_QUEUE = 4096
BATCH = 32


def _load(path: Path) -> ModuleType:
    """Another version of the pull handler module, imported beside the installed one."""
    name = "rocketq.broker.handlers._pull_against"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _request(queue_id: int, offset: int, view: str | None = None) -> RemotingCommand:
    header = PullMessageRequestHeader(
        consumer_group=GROUP,
        topic=TOPIC,
        queue_id=queue_id,
        queue_offset=offset,
        max_msg_nums=BATCH,
        sys_flag=4,
        commit_offset=0,
        suspend_timeout_millis=0,
        subscription="*",
        sub_version=0,
        expression_type="TAG",
    )
    fields = header.to_ext_fields()
    if view is not None:
        fields[VIEW_FIELD] = view
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, fields)


def _fill(broker: Broker) -> None:
    broker.topics.update(
        TopicConfig(topic_name=TOPIC, read_queue_nums=QUEUES, write_queue_nums=QUEUES), broker.wall()
    )
    props = properties_to_string({"TAGS": "TagA", "KEYS": "k", "WAIT": "true"})
    for q in range(QUEUES):
        for i in range(PER_QUEUE):
            record = encode_message(topic=TOPIC, body=b"%08d" % i + b"x" * 120, properties=props, queue_id=q)
            broker.store.put_message(TOPIC, q, record, tags_code("TagA"))


def _time(call: Callable[[int], Any], n: int) -> float:
    """CPU microseconds of this thread per ``call(i)``, ``i`` in ``range(n)`` (the garbage collector
    off: its pauses land on whichever call triggers them)."""
    gc.collect()
    gc.disable()
    try:
        t0 = time.thread_time()
        for i in range(n):
            call(i)
        return (time.thread_time() - t0) / n * 1e6
    finally:
        gc.enable()


def _cases(broker: Broker, proc: Any, n: int) -> dict[str, Callable[[int], Any]]:
    current = view_stamp(broker.consumers.epoch(GROUP), QUEUES)
    stale = view_stamp(broker.consumers.epoch(GROUP) + 1, QUEUES)
    starts = [(i % QUEUES, (i // QUEUES * BATCH) % (PER_QUEUE - BATCH)) for i in range(n)]
    found = [_request(q, o) for q, o in starts]
    viewed = [_request(q, o, current) for q, o in starts]
    at_end = [_request(i % QUEUES, PER_QUEUE) for i in range(n)]
    stale_views = [_request(q, o, stale) for q, o in starts]

    def check(expected: int, requests: list[RemotingCommand]) -> Callable[[int], Any]:
        answer = proc.pull(None, requests[0])
        if answer is None or answer.code != expected:
            raise RuntimeError(f"pull answered {answer.code} {answer.remark}" if answer else "pull held")
        return lambda i: proc.pull(None, requests[i])

    return {
        "found": check(ResponseCode.SUCCESS, found),
        "found + view": check(ResponseCode.SUCCESS, viewed),
        "not found": check(ResponseCode.PULL_NOT_FOUND, at_end),
        "view changed": check(int(RocketQResponseCode.PULL_VIEW_CHANGED), stale_views),
    }


async def _bench(rounds: int, n: int, against: ModuleType | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        broker = Broker(BrokerConfig(host="127.0.0.1", port=0, data_dir=Path(tmp)))
        await broker.start()
        try:
            _fill(broker)
            store = broker.store
            starts = [(i % QUEUES, (i // QUEUES * BATCH) % (PER_QUEUE - BATCH)) for i in range(n)]

            def read(i: int) -> Any:
                q, o = starts[i]
                return store.get_messages(TOPIC, q, o, BATCH, None, None, group=GROUP, property_filter=None)

            versions = {"new": _cases(broker, pull_module.PullProcessor(broker), n)}
            if against is not None:
                versions["old"] = _cases(broker, against.PullProcessor(broker), n)
            best: dict[tuple[str, str], float] = {}
            timed: list[tuple[tuple[str, str], Callable[[int], Any]]] = [
                (("store", "get_messages x32"), read)
            ]
            for case in versions["new"]:  # each case's versions back to back: the same load on both
                timed += [((version, case), cases[case]) for version, cases in versions.items()]
            for r in range(rounds):
                for key, call in timed if r % 2 == 0 else timed[::-1]:
                    best[key] = min(best.get(key, float("inf")), _time(call, n))
        finally:
            await broker.close()
    base = best[("store", "get_messages x32")]
    print(
        f"pull handler, {n:,} pulls a round, best of {rounds} rounds (us per pull; ratio to the store read)"
    )
    print(f"  {'baseline: store get_messages x32':<34} {base:7.2f} us")
    for case in versions["new"]:
        new = best[("new", case)]
        line = f"  {'pull ' + case:<34} {new:7.2f} us  {new / base:5.2f}x the read"
        if against is not None:
            old = best[("old", case)]
            line += f"   old {old:7.2f} us   new/old {new / old:5.3f}"
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="rounds; the best is kept (default 7)")
    parser.add_argument(
        "--pulls", type=int, default=20_000, help="pulls of each kind a round (default 20000)"
    )
    parser.add_argument("--against", type=Path, help="another pull.py to time in the same rounds")
    args = parser.parse_args()
    against = _load(args.against) if args.against is not None else None
    asyncio.run(_bench(args.rounds, args.pulls, against))


if __name__ == "__main__":
    main()
