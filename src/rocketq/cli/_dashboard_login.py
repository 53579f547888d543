"""Logins for ``rocketq dashboard`` and ``rocketq exporter`` (:mod:`rocketq.dashboard.auth`).

* ``--users FILE`` turns logins on (``--session-idle`` bounds a session), ``--metrics-token-file``
  protects ``/metrics`` with a bearer token; a ``--host`` that reaches beyond this machine without
  them is refused (one line, exit code 2) unless ``--insecure-no-login`` says it is meant;
* ``rocketq dashboard users add NAME --role admin|read-only --file FILE`` writes a user, its
  password read from the terminal (twice) or from stdin's first line, never from the command line;
  ``users remove NAME --file FILE`` takes one out.
"""

from __future__ import annotations

import argparse
import getpass
import sys

from rocketq.cli._output import positive_duration
from rocketq.cli.main import CliError
from rocketq.dashboard.auth import ADMIN, READ_ONLY, LoginConfig, is_loopback, remove_user, set_user
from rocketq.errors import ConfigError

__all__ = ["add_login_options", "login_config", "register_users"]

MIN_PASSWORD = 8


def add_login_options(parser: argparse.ArgumentParser, *, exporter: bool) -> None:
    """``--users``, ``--metrics-token-file``, ``--insecure-no-login`` (and the dashboard's
    ``--session-idle``)."""
    parser.add_argument(
        "--users",
        metavar="FILE",
        default=None,
        help="users file (NAME=HASH[,1]; write it with `rocketq dashboard users add`): "
        + (
            "/metrics takes their basic auth (this or --metrics-token-file is needed with a --host "
            "beyond this machine)"
            if exporter
            else "every page asks for a login, ,1 marks an admin (needed with a --host beyond this machine)"
        ),
    )
    parser.add_argument(
        "--metrics-token-file",
        metavar="FILE",
        default=None,
        help="/metrics takes `Authorization: Bearer` with the token in this file (Prometheus's "
        "authorization.credentials_file)",
    )
    if not exporter:
        parser.add_argument(
            "--session-idle",
            type=positive_duration,
            default=1800.0,
            metavar="SECONDS",
            help="a login unused this long ends (default 1800)",
        )
    parser.add_argument(
        "--insecure-no-login",
        action="store_true",
        help="serve a --host beyond this machine without logins (anyone who reaches it may "
        + ("read the metrics)" if exporter else "change topics and offsets)"),
    )


def login_config(args: argparse.Namespace, *, exporter: bool) -> LoginConfig | None:
    """The logins asked for, or ``None``; refuses a host beyond loopback left open unawares."""
    config = LoginConfig(
        users_file=args.users,
        metrics_token_file=args.metrics_token_file,
        session_idle=getattr(args, "session_idle", 1800.0),
    )
    protected = args.users is not None or (exporter and args.metrics_token_file is not None)
    if not protected and not is_loopback(args.host) and not args.insecure_no_login:
        need = "--users FILE or --metrics-token-file FILE" if exporter else "--users FILE"
        raise CliError(
            f"--host {args.host} reaches beyond this machine and nobody would be asked who they are: "
            f"give {need} (or --insecure-no-login if that is meant)"
        )
    return config if config.enabled else None


def register_users(parser: argparse.ArgumentParser) -> None:
    """``rocketq dashboard users add``."""
    sub = parser.add_subparsers(dest="dashboard_command", metavar="SUBCOMMAND", parser_class=type(parser))
    users = sub.add_parser(
        "users",
        help="manage the users file of --users",
        description="Manage the users file of `rocketq dashboard --users` and `rocketq exporter --users`.",
    )
    users_sub = users.add_subparsers(dest="users_command", metavar="SUBCOMMAND", parser_class=type(parser))
    users_sub.required = True
    add = users_sub.add_parser(
        "add",
        help="add a user (its password from the terminal, or stdin's first line)",
        description=(
            "Add a user to a users file (created, mode 0600, if missing), its password hashed with "
            "scrypt and a salt of its own. The password is asked twice on a terminal, or read from "
            "the first line of stdin; never from the command line (which other users of the machine "
            "can see). The dashboard reads the file again when it changes: no restart needed."
        ),
    )
    add.add_argument("name", metavar="NAME", help="user name: 1..64 letters, digits or _.@-")
    add.add_argument(
        "--role",
        choices=(ADMIN, READ_ONLY),
        required=True,
        help="admin: may change topics and reset offsets; read-only: may look",
    )
    add.add_argument("--file", required=True, metavar="FILE", help="the users file")
    add.add_argument(
        "--replace", action="store_true", help="change the password and role of a user already there"
    )
    add.set_defaults(handler=_add)
    remove = users_sub.add_parser(
        "remove",
        help="take a user out of the file (its sessions end at their next request)",
        description="Take a user out of a users file; a dashboard reading it logs the user out.",
    )
    remove.add_argument("name", metavar="NAME", help="the user to remove")
    remove.add_argument("--file", required=True, metavar="FILE", help="the users file")
    remove.set_defaults(handler=_remove)


def _read_password(name: str) -> str:
    if sys.stdin.isatty():
        first = getpass.getpass(f"password for {name}: ")
        if getpass.getpass("again: ") != first:
            raise CliError("the two passwords differ: nothing written")
        return first
    return sys.stdin.readline().rstrip("\r\n")


def _add(args: argparse.Namespace) -> int:
    password = _read_password(args.name)
    if len(password) < MIN_PASSWORD:
        raise CliError(f"the password must have {MIN_PASSWORD} characters or more: nothing written")
    try:
        replaced = set_user(args.file, args.name, args.role, password, replace=args.replace)
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    print(f"{'changed' if replaced else 'added'} {args.role} user {args.name} in {args.file}")
    return 0


def _remove(args: argparse.Namespace) -> int:
    try:
        remove_user(args.file, args.name)
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    print(f"removed user {args.name} from {args.file}")
    return 0
