"""Roles in the broker's config, and the sync master's group commit over the HA link."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from rocketq.broker.config import ROLES, BrokerConfig
from rocketq.broker.ha import HAConfig, HAMaster
from rocketq.errors import ConfigError
from rocketq.store import MessageStore, StoreConfig


def test_roles_and_ids_are_checked() -> None:
    assert BrokerConfig().role == "async-master"
    assert BrokerConfig(role="slave", broker_id=2).broker_id == 2
    assert set(ROLES.values()) == {"async-master", "sync-master", "slave"}
    for bad in (
        {"role": "slave"},  # a slave's id must be 1 or more
        {"role": "sync-master", "broker_id": 1},
        {"role": "primary"},
        {"ha_listen_port": 70000},
        {"role": "slave", "broker_id": 1, "ha_master_address": "nohost"},
    ):
        with pytest.raises(ConfigError):
            BrokerConfig(**bad)


def test_one_ack_answers_every_send_below_it_and_the_rest_time_out(tmp_path: Path) -> None:
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    print("seed", seed)

    async def run() -> None:
        with MessageStore(tmp_path, StoreConfig(), start_services=False) as store:
            ha = HAMaster(store, "127.0.0.1", 0, HAConfig(slave_timeout=0.2))
            ends = rng.sample(range(1, 10_000), 20)
            waits = {end: ha.wait_for(end) for end in ends}
            ack = rng.choice(ends)
            ha._acked(ack)  # what a slave's report does
            for end, fut in waits.items():
                assert fut.done() == (end <= ack)
                if fut.done():
                    assert fut.result()
            late = await asyncio.gather(*[w for w in waits.values() if not w.done()])
            assert not any(late)  # FLUSH_SLAVE_TIMEOUT for everything above the ack
            assert ha.wait_for(ack).result()  # already acknowledged: at once
            assert not ha.slave_ok(ack)  # no slave connected: SLAVE_NOT_AVAILABLE

    asyncio.run(run())


def test_a_taken_ha_port_gives_way_only_when_derived(tmp_path: Path) -> None:
    async def run() -> None:
        with MessageStore(tmp_path, StoreConfig(), start_services=False) as store:
            first = HAMaster(store, "127.0.0.1", 0)
            await first.start()
            try:
                with pytest.raises(OSError, match="in use"):
                    await HAMaster(store, "127.0.0.1", first.port).start()
                second = HAMaster(store, "127.0.0.1", first.port)
                await second.start(fallback=True)
                assert second.port not in (0, first.port)
                await second.close()
            finally:
                await first.close()

    asyncio.run(run())
