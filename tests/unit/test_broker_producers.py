"""The producer registry: groups, channels, closes, expiry and transaction-check channel choice."""

from __future__ import annotations

from rocketq.broker.channels import ClientChannelInfo
from rocketq.broker.producers import ProducerRegistry


def chan(
    client_id: str, conn: str, addr: str, language: str, version: int, now: float
) -> ClientChannelInfo[str]:
    """A producer's channel as a heartbeat brings it."""
    return ClientChannelInfo(conn, client_id, addr, language, version, now)


def test_register_renew_and_list() -> None:
    reg: ProducerRegistry[str] = ProducerRegistry()
    assert reg.register("PG", chan("p1", "conn-1", "10.0.0.1:1", "JAVA", 401, 0.0))
    assert not reg.register("PG", chan("p1", "conn-1", "10.0.0.1:1", "JAVA", 401, 30.0))
    assert reg.register("PG", chan("p2", "conn-2", "10.0.0.2:2", "GO", 317, 1.0))
    members = reg.connections("PG")
    assert [(m.client_id, m.remote_addr, m.language, m.version) for m in members] == [
        ("p1", "10.0.0.1:1", "JAVA", 401),
        ("p2", "10.0.0.2:2", "GO", 317),
    ]
    assert members[0].last_update == 30.0
    assert reg.find_channel("p2") == "conn-2"
    assert reg.groups() == ["PG"]
    assert len(reg) == 2
    assert set(reg.table()) == {"PG"}


def test_unregister_and_close() -> None:
    reg: ProducerRegistry[str] = ProducerRegistry()
    reg.register("PG", chan("p1", "conn-1", "a", "JAVA", 1, 0.0))
    reg.register("PG2", chan("p1", "conn-1", "a", "JAVA", 1, 0.0))
    reg.register("PG", chan("p2", "conn-2", "b", "JAVA", 1, 0.0))
    assert reg.unregister("PG", "conn-2", "p2")
    assert not reg.unregister("PG", "conn-2", "p2")
    assert reg.find_channel("p2") is None
    assert reg.connection_closed("conn-1") == ["PG", "PG2"]
    assert reg.connections("PG") == []
    assert reg.find_channel("p1") is None
    assert reg.table() == {}


def test_expiry_after_120_seconds() -> None:
    reg: ProducerRegistry[str] = ProducerRegistry()
    reg.register("PG", chan("p1", "conn-1", "a", "JAVA", 1, 0.0))
    reg.register("PG", chan("p2", "conn-2", "b", "JAVA", 1, 0.0))
    reg.register("PG", chan("p2", "conn-2", "b", "JAVA", 1, 60.0))
    assert reg.scan_expired(now=120.0) == []
    assert reg.scan_expired(now=120.1) == ["conn-1"]
    assert [m.client_id for m in reg.connections("PG")] == ["p2"]
    assert reg.scan_expired(now=180.1) == ["conn-2"]
    assert len(reg) == 0


def test_available_channel_round_robin_and_fallback() -> None:
    reg: ProducerRegistry[str] = ProducerRegistry()
    assert reg.available_channel("PG") is None
    for i in range(3):
        reg.register("PG", chan(f"p{i}", f"conn-{i}", "a", "JAVA", 1, 0.0))
    picks = [reg.available_channel("PG") for _ in range(6)]
    assert picks == ["conn-1", "conn-2", "conn-0", "conn-1", "conn-2", "conn-0"]
    # Only conn-0 is writable: found within the tries.
    assert reg.available_channel("PG", usable=lambda c: c == "conn-0") == "conn-0"
    # Nothing writable: the last one tried.
    assert reg.available_channel("PG", usable=lambda c: False) in {"conn-0", "conn-1", "conn-2"}
