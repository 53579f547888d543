"""``rocketq cluster``: every broker the name server knows, masters and slaves (RocketMQ's
``mqadmin clusterList``), with each slave's lag behind its master in bytes and seconds.

The lag is read from both brokers' runtime tables (:class:`~rocketq.admin.SlaveLag`): bytes are
the master's commit-log end less the slave's, seconds the master's newest message's store time
less the slave's newest (``docs/replication.md``).
"""

from __future__ import annotations

import argparse
from typing import Any

from rocketq.admin import BrokerRuntime, SlaveLag
from rocketq.cli._output import add_admin_options, admin_session, print_json, print_table
from rocketq.errors import RocketQError
from rocketq.protocol.codes import MASTER_ID

__all__ = ["describe_slave", "register"]

_LAG_COLUMNS = ("slave lag B", "slave lag s")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "cluster",
        help="every broker, masters and slaves: role, version, TPS in and out, each slave's lag",
        description=(
            "Every broker the name server knows (mqadmin clusterList): cluster, broker name, "
            "brokerId, role, address, version, messages stored and sent per second, and for a "
            "slave how far it is behind its master, in bytes (the commit logs' ends) and seconds "
            "(the newest messages' store times)."
        ),
    )
    add_admin_options(parser, _run, "the brokers")


def describe_slave(lag: SlaveLag) -> str:
    """One line about a slave and its lag, for the views that list a broker's queues.

    >>> describe_slave(SlaveLag("broker-a", 1, "127.0.0.1:10921", "127.0.0.1:10911", 2048, 1.25))
    'slave broker-a/1 at 127.0.0.1:10921: 2048 bytes, 1.250 s behind its master 127.0.0.1:10911'
    """
    where = f"slave {lag.broker_name}/{lag.broker_id} at {lag.addr}"
    if lag.error is not None:
        return f"{where}: lag unknown ({lag.error})"
    return f"{where}: {_bytes(lag)} bytes, {_seconds(lag)} s behind its master {lag.master_addr}"


def _bytes(lag: SlaveLag | None) -> str:
    return "-" if lag is None or lag.lag_bytes is None else str(lag.lag_bytes)


def _seconds(lag: SlaveLag | None) -> str:
    return "-" if lag is None or lag.lag_seconds is None else f"{lag.lag_seconds:.3f}"


def _run(args: argparse.Namespace) -> int:
    with admin_session(args) as admin:
        info = admin.cluster_info()
        cluster_of = {name: c for c, names in info.cluster_addr_table.items() for name in names}
        rows: list[dict[str, Any]] = []
        runtimes: dict[str, BrokerRuntime | RocketQError] = {}
        for name, bd in sorted(info.broker_addr_table.items()):
            for bid, addr in sorted(bd.broker_addrs.items()):
                try:
                    runtimes[addr] = admin.broker_runtime(addr)
                except RocketQError as exc:
                    runtimes[addr] = exc
                rows.append({"cluster": cluster_of.get(name, "?"), "name": name, "id": bid, "addr": addr})
        for row in rows:
            rt = runtimes[row["addr"]]
            master = info.broker_addr_table[row["name"]].broker_addrs.get(MASTER_ID)
            master_rt = runtimes.get(master) if master is not None else None
            lag: SlaveLag | None = None
            if row["id"] != MASTER_ID and isinstance(rt, BrokerRuntime):
                if isinstance(master_rt, BrokerRuntime):
                    lag = SlaveLag.between(row["name"], row["id"], master_rt, rt)
                else:
                    why = "no master registered" if master is None else f"master {master} did not answer"
                    lag = SlaveLag(row["name"], row["id"], row["addr"], master, None, None, why)
            if isinstance(rt, BrokerRuntime):
                row.update(
                    role=rt.table.get("brokerRole") or ("MASTER" if row["id"] == MASTER_ID else "SLAVE"),
                    version=rt.version,
                    put_tps=rt.put_tps,
                    get_tps=rt.get_tps,
                    error=None,
                )
            else:
                row.update(role="?", version="?", put_tps=None, get_tps=None, error=str(rt))
            row.update(
                lag_bytes=None if lag is None else lag.lag_bytes,
                lag_seconds=None if lag is None else lag.lag_seconds,
                lag_error=None if lag is None else lag.error,
            )
    if args.json:
        print_json({"namesrv_addrs": list(admin.namesrv_addrs), "brokers": rows})
        return 0
    print_table(
        "brokers",
        (
            "cluster",
            "broker",
            "id",
            "role",
            "address",
            "version",
            "in TPS",
            "out TPS",
            "slave lag B",
            "slave lag s",
        ),
        [
            (
                r["cluster"],
                r["name"],
                r["id"],
                r["role"],
                r["addr"],
                r["version"] if r["error"] is None else f"did not answer: {r['error']}",
                _tps(r["put_tps"]),
                _tps(r["get_tps"]),
                "-" if r["lag_bytes"] is None else r["lag_bytes"],
                "-" if r["lag_seconds"] is None else f"{r['lag_seconds']:.3f}",
            )
            for r in rows
        ],
        right=("id", "in TPS", "out TPS", *_LAG_COLUMNS),
    )
    return 0


def _tps(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"
