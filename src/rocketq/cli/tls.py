"""``rocketq tls make-test-certs DIR``: a throwaway CA and a server and client certificate, for trying
TLS on this machine (see docs/security.md, "TLS")."""

from __future__ import annotations

import argparse
from typing import Any

from rocketq.cli._output import add_command_group
from rocketq.cli.main import CliError
from rocketq.errors import ConfigError

__all__ = ["register"]


def register(subparsers: Any) -> None:
    sub = add_command_group(
        subparsers,
        "tls",
        summary="certificates for trying TLS locally",
        description="Certificates for trying rocketq's TLS (--tls-mode on servers, --tls on clients).",
    )
    p = sub.add_parser(
        "make-test-certs",
        help="write a throwaway CA and a server and client certificate it signed into DIR",
        description=(
            "Write DIR/ca.pem (the CA: --tls-ca), DIR/server.pem and DIR/server.key (--tls-cert and "
            "--tls-key of servers; valid for localhost, 127.0.0.1, ::1 and each --host) and "
            "DIR/client.pem and DIR/client.key (of clients, for servers with --tls-client-auth). "
            "The CA's key is not kept. For tests only: use your own CA's certificates in earnest."
        ),
    )
    p.add_argument("dir", metavar="DIR", help="where to write them (made if missing)")
    p.add_argument(
        "--host",
        action="append",
        default=[],
        metavar="NAME",
        help="one more host name or IP address the server certificate is valid for (repeatable)",
    )
    p.add_argument("--days", type=int, default=30, help="days the certificates are valid (default 30)")
    p.add_argument("--force", action="store_true", help="replace certificates already in DIR")
    p.set_defaults(handler=_make)


def _make(args: argparse.Namespace) -> int:
    from rocketq.remoting.certs import make_test_certs  # noqa: PLC0415 - cryptography only when asked

    try:
        certs = make_test_certs(args.dir, hosts=args.host, days=args.days, overwrite=args.force)
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    print(f"CA:     {certs.ca}")
    print(f"server: {certs.server_cert} {certs.server_key}")
    print(f"client: {certs.client_cert} {certs.client_key}")
    print(
        f"try:    rocketq server --tls-mode enforcing --tls-cert {certs.server_cert} "
        f"--tls-key {certs.server_key}\n"
        f"        rocketq produce --tls --tls-ca {certs.ca} TopicTest --count 1"
    )
    return 0
