"""How long the dashboard's pages take on a cluster of 1,000 topics and 100 consumer groups.

    python bench/bench_dashboard.py [--topics N] [--groups N] [--runs N] [--browser]

A ``rocketq server`` in its own process gets ``--topics`` topics of 4 queues and ``--groups``
consumer groups, each with committed offsets on its own topic (and a backlog of 5 messages), plus
one group with a live push consumer. The dashboard runs in this process (uvicorn on port 0) and
each page is fetched over HTTP: the first fetch (nothing cached) and the median and worst of
``--runs`` more. The **baseline** is a static file from the same server in the same run (what a
request costs with no cluster work), so each page prints its time as a ratio of it. ``--browser``
also loads the heaviest pages in headless Chromium (Playwright) to the ``load`` event.

A key held by ``--keyed`` messages (more than the 64 a broker's index answers) is searched too:
the page reads the topic's queues for the true count; its rate (messages read per second) is
printed beside the same reads done with ``AsyncAdmin.read_queue`` alone in the same run. And one
sweep of the sampler over every topic (the busiest topics' TPS, every 60 s by default) is timed.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from rocketq import ClientConfig, ConsumeConcurrentlyStatus, ConsumeFromWhere, Message, Producer, PushConsumer
from rocketq.dashboard import BackgroundServer, DashboardConfig, create_app
from rocketq.embedded import spawn_server
from rocketq.models import MessageQueue
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode, calls
from rocketq.protocol.bodies import SubscriptionGroupConfig
from rocketq.remoting import RemotingClient

LIVE_GROUP = "bench_live_group"


async def populate(broker: str, topics: int, groups: int) -> None:
    """Topics and groups straight at the broker, as ``mqadmin`` would send them."""
    client = RemotingClient()
    try:
        sem = asyncio.Semaphore(32)

        async def send(request: RemotingCommand) -> None:
            async with sem:
                answer = await client.invoke(broker, request, 30.0)
                assert answer.code == ResponseCode.SUCCESS, answer.remark

        await asyncio.gather(
            *(send(calls.create_topic(f"Bench{i:04d}", 4, 4).request) for i in range(topics))
        )
        creates = []
        for g in range(groups):
            body = SubscriptionGroupConfig(group_name=f"bench_group_{g:03d}").encode()
            creates.append(
                send(RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body))
            )
            for q in range(4):
                mq = MessageQueue(f"Bench{g:04d}", "broker-a", q)
                creates.append(send(calls.update_consumer_offset(f"bench_group_{g:03d}", mq, 0).request))
        await asyncio.gather(*creates)
    finally:
        await client.close()


def fetch(url: str) -> float:
    began = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as answer:
        answer.read()
        assert answer.status == 200, (url, answer.status)
    return time.perf_counter() - began


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keyed", type=int, default=5000, help="messages carrying the searched key")
    parser.add_argument("--browser", action="store_true", help="also time page loads in headless Chromium")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        server = spawn_server(Path(tmp) / "data")
        consumer: PushConsumer | None = None
        try:
            began = time.perf_counter()
            asyncio.run(populate(server.broker_addr, args.topics, args.groups))
            config = ClientConfig(namesrv=server.namesrv_addr, client_ip="127.0.0.1", instance_name="bench")
            with Producer("bench_producer", client_config=config) as p:
                for g in range(args.groups):
                    for i in range(5):
                        p.send(Message(f"Bench{g:04d}", f"m{i}"))
                for i in range(args.keyed):
                    p.send(Message("Bench0001", f"keyed-{i}", keys="hot"))
            consumer = PushConsumer(
                LIVE_GROUP,
                client_config=config,
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            )
            consumer.subscribe("Bench0000")
            consumer.register_listener(lambda msgs: ConsumeConcurrentlyStatus.CONSUME_SUCCESS)
            consumer.start()
            print(
                f"cluster: {args.topics} topics x 4 queues, {args.groups} groups + 1 live "
                f"(made in {time.perf_counter() - began:.1f} s)"
            )
            app = create_app(DashboardConfig(namesrv=server.namesrv_addr))
            with BackgroundServer(app) as web:
                base = [fetch(web.url + "static/dashboard.css") for _ in range(args.runs + 1)]
                baseline = statistics.median(base)
                print(f"baseline (static file): {baseline * 1000:.1f} ms")
                print(f"{'page':<28}{'first':>10}{'median':>10}{'worst':>10}{'x baseline':>12}")
                pages = [
                    ("cluster /", ""),
                    ("topics /topics", "topics"),
                    ("topic /topics/Bench0000", "topics/Bench0000"),
                    ("groups /groups", "groups"),
                    (f"group /groups/{LIVE_GROUP}", f"groups/{LIVE_GROUP}"),
                    ("group state /api/groups/..", f"api/groups/{LIVE_GROUP}"),
                    ("metrics /metrics", "metrics"),
                    ("planner /planner", "planner?queues=64&before=8&after=9"),
                    ("producers /producers?group=", "producers?group=bench_producer"),
                    ("group settings ../config", "groups/bench_group_000/config"),
                    ("dead letters /dlq?group=", "dlq?group=bench_group_000"),
                    ("broker settings", f"brokers/{server.broker_addr}/config"),
                    ("messages ?key= (64 or fewer)", "messages?topic=Bench0002&key=none"),
                ]
                for label, path in pages:
                    first = fetch(web.url + path)
                    times = [fetch(web.url + path) for _ in range(args.runs)]
                    median = statistics.median(times)
                    print(
                        f"{label[:27]:<28}{first * 1000:>8.0f}ms{median * 1000:>8.0f}ms"
                        f"{max(times) * 1000:>8.0f}ms{median / baseline:>11.0f}x"
                    )
                search(web.url, server.namesrv_addr, args.keyed)
                sweep = asyncio.run(sweep_topics(server.namesrv_addr))
                print(f"sampler: one sweep of every topic's stats took {sweep * 1000:.0f} ms")
                if args.browser:
                    browse(web.url)
        finally:
            if consumer is not None:
                consumer.shutdown()
            server.stop()
    return 0


def search(url: str, namesrv: str, keyed: int) -> None:
    """The key search that reads the queues (the key is on more messages than the index answers),
    against the same reads through the admin alone (the baseline of this line)."""
    began = time.perf_counter()
    with urllib.request.urlopen(url + "messages?topic=Bench0001&key=hot", timeout=300) as answer:
        text = answer.read().decode()
    took = time.perf_counter() - began
    assert f"{keyed:,} message(s) for key hot" in text, text[-500:]
    page = fetch(url + "messages?topic=Bench0001&key=hot&page=2")  # cached: paging reads nothing
    plain = asyncio.run(read_all(namesrv, "Bench0001"))
    print(
        f"key search, true count of {keyed:,} (reads the queues): {took * 1000:.0f} ms; the same "
        f"reads through the admin alone {plain * 1000:.0f} ms ({took / plain:.2f}x); "
        f"a further page {page * 1000:.0f} ms"
    )


async def read_all(namesrv: str, topic: str) -> float:
    from rocketq.admin import AsyncAdmin

    async with AsyncAdmin(namesrv) as admin:
        stats = await admin.topic_stats(topic)
        began = time.perf_counter()
        for q in stats.queues:
            offset = q.min_offset
            while offset < q.max_offset:
                read = await admin.read_queue(q.queue, offset, 32)
                if not read.messages:
                    break
                offset = read.next_offset
        return time.perf_counter() - began


async def sweep_topics(namesrv: str) -> float:
    from rocketq.dashboard.monitor import Monitor

    monitor = Monitor(DashboardConfig(namesrv=namesrv))
    try:
        began = time.perf_counter()
        await monitor.sample()  # the first sample reads every topic
        return time.perf_counter() - began
    finally:
        await monitor.close()


def browse(url: str) -> None:
    """Each heavy page loaded in headless Chromium to its ``load`` event (median of 3)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests import browserkit

    why = browserkit.missing()
    if why is not None:
        print(f"browser: skipped ({why})")
        return
    with browserkit.launch() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        for path in ("", "topics", "groups", f"groups/{LIVE_GROUP}"):
            times = []
            for _ in range(3):
                began = time.perf_counter()
                page.goto(url + path, wait_until="load")
                times.append(time.perf_counter() - began)
            print(f"browser load /{path:<26}{statistics.median(times) * 1000:>8.0f}ms")


if __name__ == "__main__":
    sys.exit(main())
