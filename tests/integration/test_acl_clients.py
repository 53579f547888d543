"""rocketq's own clients sign for RocketMQ 4.9's ACL: the permission matrix through the real
clients (Producer, PushConsumer, Admin, the blocking client the Spark source uses) against a
broker with ACL on, the CLI with keys in flags and in environment variables, and the exporter.

The accounts' permissions are drawn at random (Hypothesis) and printed: the sub-only, pub-only
and admin accounts in one of the ways 4.9's file can grant the same thing (defaults, resources
listed, unrelated resources around), plus one account with any permissions at all, whose
expected answers come from 4.9's rules written down here (:func:`allowed`).
"""

from __future__ import annotations

import logging
import os
import random
import string
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from rocketq import Admin, Message, Producer, PushConsumer
from rocketq.broker import BrokerConfig
from rocketq.cli._output import AclKeys
from rocketq.cli.main import main
from rocketq.client import ConsumeConcurrentlyStatus
from rocketq.client.blocking import BlockingClient
from rocketq.dashboard import BackgroundServer, DashboardConfig, create_exporter_app
from rocketq.errors import AccessDeniedError, NoPermissionError, RocketQError
from rocketq.lab.harness import Lab
from rocketq.models import MessageQueue
from rocketq.protocol import calls
from rocketq.protocol.acl import Credentials

from .clientkit import FAST_DELAY_LEVELS, ClusterThread

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

TOPIC, GROUP = "AclT", "AclG"
SETUP = Credentials(access_key="setup-admin", secret_key="setup-admin-secret")
PERMS = ("DENY", "PUB", "SUB", "PUB|SUB")
_OWNS = {"DENY": set(), "PUB": {"PUB"}, "SUB": {"SUB"}, "PUB|SUB": {"PUB", "SUB"}}

#: What each request class needs, as 4.9's PlainAccessValidator reads the request: the topic's
#: and the group's permission, the admin role (rocketq: the ACL admin codes too), or only a known
#: account with a good signature.
NEEDS: dict[str, tuple[str | None, str | None, bool]] = {
    # class: (permission on TOPIC, permission on GROUP, admin)
    "send": ("PUB", None, False),
    "pull": ("SUB", "SUB", False),
    "heartbeat": ("SUB", "SUB", False),  # the group, the topic, and %RETRY%group (the group's SUB)
    "offset commit": ("SUB", "SUB", False),
    "topic create": (None, None, True),
    "topic delete": (None, None, True),
    "group reset": (None, None, False),  # 4.9 reads no resource of INVOKE_BROKER_TO_RESET_OFFSET
    "message query": ("SUB", None, False),
    "ACL admin": (None, None, True),
}


@dataclass(frozen=True)
class Account:
    """One account of the file: its keys and what 4.9's file grants it."""

    kind: str
    access_key: str
    secret_key: str
    admin: bool = False
    default_topic: str | None = None
    default_group: str | None = None
    topic_perms: tuple[tuple[str, str], ...] = ()
    group_perms: tuple[tuple[str, str], ...] = ()

    def entry(self) -> dict[str, Any]:
        out: dict[str, Any] = {"accessKey": self.access_key, "secretKey": self.secret_key}
        if self.admin:
            out["admin"] = True
        if self.default_topic is not None:
            out["defaultTopicPerm"] = self.default_topic
        if self.default_group is not None:
            out["defaultGroupPerm"] = self.default_group
        if self.topic_perms:
            out["topicPerms"] = [f"{r}={p}" for r, p in self.topic_perms]
        if self.group_perms:
            out["groupPerms"] = [f"{r}={p}" for r, p in self.group_perms]
        return out

    def owns(self, listed: tuple[tuple[str, str], ...], default: str | None, name: str) -> set[str]:
        for resource, perm in listed:
            if resource == name:
                return _OWNS[perm]
        return _OWNS[default or "DENY"]


def allowed(account: Account | None, what: str) -> bool:
    """4.9's answer to ``what`` from ``account`` (``None``: no account, or a bad signature)."""
    if account is None:
        return False
    topic_perm, group_perm, admin = NEEDS[what]
    if admin and not account.admin:
        return False
    if account.admin and not account.topic_perms and not account.group_perms:
        return True  # 4.9: an admin with no resource listed passes every resource check
    if topic_perm is not None and topic_perm not in account.owns(
        account.topic_perms, account.default_topic, TOPIC
    ):
        return False
    return group_perm is None or group_perm in account.owns(account.group_perms, account.default_group, GROUP)


# ----------------------------------------------------------------------------------- drawing accounts

KEY_CHARS = string.ascii_letters + string.digits + "_-"
keys = st.text(KEY_CHARS, min_size=7, max_size=24)
others = st.lists(
    st.tuples(st.sampled_from(["OtherT", "OtherU"]), st.sampled_from(PERMS)),
    max_size=2,
    unique_by=lambda t: t[0],
)


@st.composite
def granted(draw: st.DrawFn, resource: str, perm: str) -> tuple[str | None, tuple[tuple[str, str], ...]]:
    """``perm`` on ``resource`` as the default, or listed (with a default that differs), with
    unrelated resources listed around it."""
    around = tuple(draw(others))
    if draw(st.booleans()):
        return perm, around
    default = draw(st.sampled_from([None, *(p for p in PERMS if p != perm)]))
    return default, ((resource, perm), *around)


@st.composite
def accounts(draw: st.DrawFn) -> dict[str, Account]:
    # prefixes keep a secret from being a part of an access key (which remarks name)
    names = [f"ak_{k}" for k in draw(st.lists(keys, min_size=4, max_size=4, unique=True))]
    secrets = [f"sk/{k}" for k in draw(st.lists(keys, min_size=4, max_size=4))]
    sub_t, sub_tl = draw(granted(TOPIC, "SUB"))
    sub_g, sub_gl = draw(granted(GROUP, "SUB"))
    pub_t, pub_tl = draw(granted(TOPIC, "PUB"))
    deny_g, deny_gl = draw(granted(GROUP, "DENY"))
    admin_listed = draw(st.booleans())
    return {
        "sub-only": Account("sub-only", names[0], secrets[0], False, sub_t, sub_g, sub_tl, sub_gl),
        "pub-only": Account("pub-only", names[1], secrets[1], False, pub_t, deny_g, pub_tl, deny_gl),
        "admin": Account(
            "admin",
            names[2],
            secrets[2],
            True,
            topic_perms=((TOPIC, "PUB|SUB"),) if admin_listed else (),
            group_perms=((GROUP, "PUB|SUB"),) if admin_listed else (),
        ),
        "random": Account(
            "random",
            names[3],
            secrets[3],
            draw(st.booleans()),
            draw(st.sampled_from([None, *PERMS])),
            draw(st.sampled_from([None, *PERMS])),
            tuple(
                draw(
                    st.lists(
                        st.tuples(st.sampled_from([TOPIC, "OtherT"]), st.sampled_from(PERMS)),
                        max_size=2,
                        unique_by=lambda t: t[0],
                    )
                )
            ),
            tuple(
                draw(
                    st.lists(
                        st.tuples(st.sampled_from([GROUP, "OtherG"]), st.sampled_from(PERMS)),
                        max_size=2,
                        unique_by=lambda t: t[0],
                    )
                )
            ),
        ),
    }


def acl_file(accounts: dict[str, Account]) -> dict[str, Any]:
    setup = {"accessKey": SETUP.access_key, "secretKey": SETUP.secret_key, "admin": True}
    return {
        "globalWhiteRemoteAddresses": ["10.255.255.*"],  # not 127.0.0.1: every request is checked
        "accounts": [setup, *(a.entry() for a in accounts.values())],
    }


def write_acl(path: Path, data: dict[str, Any], version: int) -> None:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    os.utime(path, ns=(version * 10**15, version * 10**15))  # a new mtime whatever the clock's grain


# ----------------------------------------------------------------------------------- the requests


@dataclass
class Env:
    cluster: ClusterThread
    queue: MessageQueue
    run: int


def _keys(creds: Credentials | None) -> AclKeys:
    if creds is None:
        return AclKeys(access_key=None, secret_key=None)
    return AclKeys(access_key=creds.access_key, secret_key=creds.secret_key)


def do_send(env: Env, creds: Credentials | None, tag: str) -> None:
    with Producer(f"P{tag}", env.cluster.namesrv, client_ip="127.0.0.1", **_keys(creds)) as producer:
        producer.send(Message(TOPIC, f"from {tag}".encode(), keys="k1"))


def do_blocking(env: Env, creds: Credentials | None, fn: Callable[[BlockingClient], object]) -> None:
    with BlockingClient(env.cluster.namesrv, credentials=creds) as io:
        fn(io)


def do_heartbeat(env: Env, creds: Credentials | None, tag: str) -> None:
    consumer = PushConsumer(
        GROUP, env.cluster.namesrv, client_ip="127.0.0.1", await_termination=0.5, **_keys(creds)
    )
    consumer.subscribe(TOPIC, "*")
    consumer.register_listener(lambda msgs, ctx: ConsumeConcurrentlyStatus.CONSUME_SUCCESS)
    try:
        consumer.start()
    finally:
        consumer.shutdown()


def do_admin(env: Env, creds: Credentials | None, fn: Callable[[Admin], object]) -> None:
    with Admin(env.cluster.namesrv, timeout=5.0, **_keys(creds)) as admin:
        fn(admin)


def request(env: Env, what: str, creds: Credentials | None, tag: str) -> None:
    """Make a request of class ``what`` with the real client that makes it."""
    made = f"Made-{env.run}-{tag}"
    q = env.queue
    if what == "send":
        do_send(env, creds, tag)
    elif what == "pull":
        do_blocking(
            env, creds, lambda io: io.pull(io.read_queues(TOPIC)[0], group=GROUP, offset=0, max_nums=4)
        )
    elif what == "heartbeat":
        do_heartbeat(env, creds, tag)
    elif what == "offset commit":
        do_blocking(
            env, creds, lambda io: io.call(env.cluster.broker_addr, calls.update_consumer_offset(GROUP, q, 0))
        )
    elif what == "topic create":
        do_admin(env, creds, lambda a: a.create_topic(f"New-{env.run}-{tag}", queues=1, wait=0.0))
    elif what == "topic delete":
        do_admin(env, creds, lambda a: a.delete_topic(made))
    elif what == "group reset":
        do_admin(env, creds, lambda a: a.reset_offsets(GROUP, TOPIC, "first"))
    elif what == "message query":
        do_admin(env, creds, lambda a: a.query_message(TOPIC, "k1"))
    elif what == "ACL admin":
        do_admin(env, creds, lambda a: a.acl_config(env.cluster.broker_addr))
    else:  # pragma: no cover
        raise AssertionError(what)


def outcome(env: Env, what: str, creds: Credentials | None, tag: str) -> AccessDeniedError | None:
    """The ACL's refusal of the request (a NoPermissionError), or ``None`` when it was served."""
    try:
        request(env, what, creds, tag)
    except AccessDeniedError as exc:
        assert isinstance(exc, NoPermissionError)  # noqa: PT017  (the class users catch)
        return exc
    except RocketQError as exc:  # pragma: no cover - a failure to report
        raise AssertionError(f"{what} with {creds!r}: not an ACL refusal: {exc!r}") from exc
    return None


@pytest.fixture
def acl_cluster(tmp_path: Path) -> Iterator[tuple[ClusterThread, Path]]:
    path = tmp_path / "plain_acl.yml"
    write_acl(path, acl_file({}), 1)
    config = BrokerConfig(message_delay_level=FAST_DELAY_LEVELS, acl_file=path, acl_check_interval=1e-9)
    cluster = ClusterThread(tmp_path / "cluster", broker=config)
    try:
        with Admin(cluster.namesrv, **_keys(SETUP)) as admin:
            admin.create_topic(TOPIC, queues=1)
        yield cluster, path
    finally:
        cluster.close()


def test_the_permission_matrix_through_rocketqs_clients(
    acl_cluster: tuple[ClusterThread, Path], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="rocketq")
    cluster, path = acl_cluster
    queue = MessageQueue(TOPIC, "broker-a", 0)
    secrets: set[str] = {SETUP.secret_key}
    runs = iter(range(1, 1000))

    # no shrinking: each example costs seconds; the drawn accounts are printed instead
    @settings(
        max_examples=6,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
        phases=(Phase.explicit, Phase.generate),
    )
    @given(drawn=accounts(), order=st.permutations(list(NEEDS)))
    def matrix(drawn: dict[str, Account], order: list[str]) -> None:
        run = next(runs)
        env = Env(cluster, queue, run)
        write_acl(path, acl_file(drawn), run + 1)
        print(f"drawn (run {run}):", *(f"  {a!r}" for a in drawn.values()), f"  order: {order}", sep="\n")
        secrets.update(a.secret_key for a in drawn.values())
        sub = drawn["sub-only"]
        kinds: dict[str, tuple[Account | None, Credentials | None, str | None]] = {
            "none": (None, None, "No accessKey is configured"),
            "wrong secret": (
                None,
                Credentials(access_key=sub.access_key, secret_key=sub.secret_key + "x"),
                f"Check signature failed for accessKey={sub.access_key}",
            ),
            **{
                k: (a, Credentials(access_key=a.access_key, secret_key=a.secret_key), None)
                for k, a in drawn.items()
            },
        }
        # what the requests need in place: the group's offsets (for the reset), a topic per kind
        # to delete
        with Admin(cluster.namesrv, **_keys(SETUP)) as admin:
            for tag in kinds:
                admin.create_topic(f"Made-{run}-{tag.replace(' ', '_')}", queues=1, wait=0.0)
        with BlockingClient(cluster.namesrv, credentials=SETUP) as io:
            io.call(cluster.broker_addr, calls.update_consumer_offset(GROUP, queue, 0))
        table: list[str] = []
        for what in order:
            for kind, (account, creds, refusal) in kinds.items():
                expect = allowed(account, what)
                refused = outcome(env, what, creds, kind.replace(" ", "_"))
                if refused is None:
                    assert expect, f"{what} by {kind} ({account!r}) was allowed"
                    table.append(f"{what:14} {kind:13} allowed")
                    continue
                assert not expect, f"{what} by {kind} ({account!r}) was refused: {refused}"
                text = str(refused)
                assert "\n" not in text
                assert "refused by the broker's ACL" in text
                if refusal is not None:
                    assert refusal in refused.reason, (what, kind, text)
                elif NEEDS[what][2] and not (account and account.admin):
                    assert "Need admin permission" in refused.reason, (what, kind, text)
                else:
                    assert "No default permission for" in refused.reason, (what, kind, text)
                assert not any(s in text for s in secrets), text
                table.append(f"{what:14} {kind:13} refused: {refused.reason}")
        print(*table, sep="\n")

    matrix()
    for record in caplog.records:
        text = record.getMessage()
        assert not any(s in text for s in secrets), text


# ----------------------------------------------------------------------------------- the CLI


def test_the_cli_signs_with_flags_and_environment_variables(
    acl_cluster: tuple[ClusterThread, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cluster, _ = acl_cluster
    admin = ("--access-key", SETUP.access_key, "--secret-key", SETUP.secret_key)
    ns = ("--namesrv", cluster.namesrv)

    def run(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(argv))
        out, err = capsys.readouterr()
        assert SETUP.secret_key not in out + err
        return code, out, err

    # unsigned: one line naming what was refused and why, exit 2, nothing created
    code, out, err = run("topic", "create", "CliT", "--queues", "1", *ns)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1, err
    assert "create topic CliT on" in err
    assert "refused by the broker's ACL: No accessKey is configured" in err
    # the keys as flags
    code, out, err = run("topic", "create", "CliT", "--queues", "1", *ns, *admin)
    assert code == 0, err
    # the keys in RocketMQ-style environment variables; a flag wins over its variable
    monkeypatch.setenv("ROCKETMQ_ACCESS_KEY", SETUP.access_key)
    monkeypatch.setenv("ROCKETMQ_SECRET_KEY", "not-the-secret")
    code, out, err = run("produce", "CliT", "--count", "2", *ns)
    assert code == 2
    assert err.count("\n") == 1, err
    assert f"Check signature failed for accessKey={SETUP.access_key}" in err
    assert "not-the-secret" not in err
    code, out, err = run("produce", "CliT", "--count", "2", *ns, "--secret-key", SETUP.secret_key)
    assert code == 0, err
    assert "sent 2 messages" in out
    monkeypatch.setenv("ROCKETMQ_SECRET_KEY", SETUP.secret_key)
    code, out, err = run("consume", "CliT", "--group", "CliG", "--from", "first", "--count", "2", *ns)
    assert code == 0, err
    assert sum(line.startswith("RECV ") for line in out.splitlines()) == 2
    code, out, err = run("group", "reset", "CliG", "--topic", "CliT", "--to", "first", *ns)
    assert code == 0, err
    code, out, err = run("consume", "CliT", "--group", "CliG", "--count", "1", *ns, "--secret-key", "wrong-1")
    assert code == 2
    assert err.count("\n") == 1, err
    assert f"refused by the broker's ACL: Check signature failed for accessKey={SETUP.access_key}" in err
    # half an account is a usage error naming what is missing (never the secret)
    monkeypatch.delenv("ROCKETMQ_SECRET_KEY")
    code, out, err = run("topic", "list", *ns)
    assert code == 2
    assert "--secret-key (or $ROCKETMQ_SECRET_KEY) is not set" in err
    # the secret is no default in --help
    monkeypatch.setenv("ROCKETMQ_SECRET_KEY", SETUP.secret_key)
    with pytest.raises(SystemExit):
        main(["produce", "--help"])
    help_text = capsys.readouterr().out
    assert "--access-key KEY" in help_text
    assert "--secret-key SECRET" in help_text
    assert SETUP.secret_key not in help_text


# ----------------------------------------------------------------------------------- the exporter


def _producer_offsets(config: DashboardConfig) -> dict[str, float]:
    with (
        BackgroundServer(create_exporter_app(config)) as server,
        urllib.request.urlopen(server.url + "metrics", timeout=30) as answer,
    ):
        text = answer.read().decode()
    return {
        sample.labels.get("topic", ""): sample.value
        for family in text_string_to_metric_families(text)
        if family.name == "rocketmq_producer_offset"
        for sample in family.samples
    }


def test_the_exporter_reads_a_secured_broker_with_its_keys(acl_cluster: tuple[ClusterThread, Path]) -> None:
    cluster, _ = acl_cluster
    with Producer("ExpP", cluster.namesrv, client_ip="127.0.0.1", **_keys(SETUP)) as producer:
        for i in range(random.randrange(1, 20)):
            producer.send(Message(TOPIC, f"m-{i}".encode()))
    unsigned = DashboardConfig(namesrv=cluster.namesrv, metrics_interval=0.5)
    assert TOPIC not in _producer_offsets(unsigned)  # the broker refused every unsigned request
    signed = DashboardConfig(namesrv=cluster.namesrv, metrics_interval=0.5, **_keys(SETUP))
    assert SETUP.secret_key not in repr(signed)
    assert _producer_offsets(signed).get(TOPIC, 0) > 0


# ----------------------------------------------------------------------------------- the lab


def test_the_lab_signs_for_its_server_and_workers(tmp_path: Path) -> None:
    """A lab whose server has ``--acl``: its admin, producer and a worker process sign (the worker
    gets the keys in its environment, not on its command line)."""
    account = Credentials(access_key="lab-account", secret_key=f"lab-secret-{random.randrange(10**9)}")
    acl = tmp_path / "plain_acl.yml"
    entry = {"accessKey": account.access_key, "secretKey": account.secret_key, "admin": True}
    write_acl(acl, {"globalWhiteRemoteAddresses": [], "accounts": [entry]}, 1)
    n = random.randrange(3, 12)
    with Lab(data_dir=tmp_path / "lab", server_args=("--acl", str(acl)), **_keys(account)) as lab:
        lab.create_topic("LabAcl", 2)
        for i in range(n):
            lab.send("LabAcl", f"m-{i}")
        worker = lab.spawn_consumer("c1", "LabAclG", ["LabAcl"])
        assert account.secret_key not in " ".join(worker.args)
        lab.wait_until(lambda: len(worker.received()) >= n, 60, f"the worker to receive {n} messages")
        assert {r.body for r in worker.received()} == {f"m-{i}" for i in range(n)}
    logs = " ".join(p.read_text() for p in (tmp_path / "lab").glob("*.log"))
    assert account.secret_key not in logs
