"""Output and option helpers the client and admin commands share.

* :func:`add_command_group` for the commands made of subcommands;
* ``--namesrv`` (else ``$NAMESRV_ADDR``, else ``127.0.0.1:9876``) and ``--json`` options;
* ``--access-key`` / ``--secret-key`` (else ``$ROCKETMQ_ACCESS_KEY`` / ``$ROCKETMQ_SECRET_KEY``):
  the ACL account every request of the command is signed for (:func:`add_acl_options`,
  :func:`acl_keys`); with the TLS options ``--namesrv`` brings (``--tls`` ...), both in one go by
  :func:`client_security`;
* :func:`number_type` makes the argparse ``type=`` checks of numbers: :func:`positive_int`,
  :func:`positive_float`, :func:`positive_duration`, :func:`port_number` for counts, rates,
  seconds, ports - each bounded (a count by Java's ``Long.MAX_VALUE``, seconds by a year, no NaN
  or infinity), so a slip is refused before anything is allocated or started;
* :func:`admin_session`: an :class:`~rocketq.admin.Admin` whose connection failures become one-line
  :class:`~rocketq.cli.main.CliError`\\ s with a hint (``is `rocketq server` running?``);
* tables through rich (plain text when stdout is not a terminal, never wrapped), JSON lines.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, TextIO, TypedDict, TypeVar

from rich.console import Console
from rich.table import Table

from rocketq.admin import Admin
from rocketq.cli._tls import add_tls_client_options, tls_client_config
from rocketq.cli.main import CliError
from rocketq.client.config import (
    ACCESS_KEY_ENV,
    DEFAULT_NAMESRV,
    NAMESRV_ENV,
    SECRET_KEY_ENV,
    credentials_of,
    resolve_namesrv,
)
from rocketq.client.validators import check_group, check_topic
from rocketq.errors import ConfigError, RemotingConnectError, RemotingTimeoutError
from rocketq.remoting.tls import TlsClientConfig

N = TypeVar("N", int, float)

__all__ = [
    "AclKeys",
    "ClientSecurity",
    "acl_keys",
    "add_acl_options",
    "add_admin_options",
    "add_command_group",
    "add_json_option",
    "add_namesrv_option",
    "add_view_options",
    "admin_session",
    "client_security",
    "format_ms",
    "group_name",
    "name_type",
    "non_negative_float",
    "number_type",
    "port_number",
    "positive_duration",
    "positive_float",
    "positive_int",
    "print_json",
    "print_table",
    "topic_name",
    "unreachable_hint",
]


def add_command_group(subparsers: Any, name: str, *, summary: str, description: str) -> Any:
    """Add ``rocketq NAME SUBCOMMAND ...`` (``topic``, ``group``, ``message``): the command's parser,
    with ``summary`` as its ``--help`` line; returns its subcommands, one of which is required."""
    parser = subparsers.add_parser(name, help=summary, description=description)
    sub = parser.add_subparsers(dest=f"{name}_command", metavar="SUBCOMMAND", parser_class=type(parser))
    sub.required = True
    return sub


def add_namesrv_option(parser: argparse.ArgumentParser, *, tls: bool = True) -> None:
    """``--namesrv``, and (``tls``) the TLS options of a client (``--tls`` ..., :mod:`rocketq.cli._tls`)."""
    parser.add_argument(
        "--namesrv",
        metavar="ADDR",
        default=None,
        help=f"name server(s), HOST:PORT[;HOST:PORT] (default ${NAMESRV_ENV}, else {DEFAULT_NAMESRV})",
    )
    if tls:
        add_tls_client_options(parser)


def add_acl_options(parser: argparse.ArgumentParser) -> None:
    """``--access-key`` and ``--secret-key``: the ACL account every request is signed for (no
    default shown: the secret never appears in ``--help``)."""
    parser.add_argument(
        "--access-key",
        metavar="KEY",
        default=None,
        help=f"sign every request for this ACL account (default ${ACCESS_KEY_ENV}; a broker with "
        "--acl refuses unsigned requests)",
    )
    parser.add_argument(
        "--secret-key",
        metavar="SECRET",
        default=None,
        help=f"the account's secret key (default ${SECRET_KEY_ENV}, which keeps it out of the process list)",
    )


class AclKeys(TypedDict):
    """The keyword arguments every client takes for its ACL account."""

    access_key: str | None
    secret_key: str | None


def acl_keys(args: argparse.Namespace) -> AclKeys:
    """``access_key`` and ``secret_key`` from ``--access-key``/``--secret-key``, else from
    ``$ROCKETMQ_ACCESS_KEY``/``$ROCKETMQ_SECRET_KEY`` (both ``None``: unsigned); one without the
    other is a :class:`CliError` naming the missing one, never the secret."""
    access_key = getattr(args, "access_key", None) or os.environ.get(ACCESS_KEY_ENV) or None
    secret_key = getattr(args, "secret_key", None) or os.environ.get(SECRET_KEY_ENV) or None
    if (access_key is None) != (secret_key is None):
        missing = (
            f"--secret-key (or ${SECRET_KEY_ENV})"
            if secret_key is None
            else f"--access-key (or ${ACCESS_KEY_ENV})"
        )
        raise CliError(f"an ACL account needs both keys: {missing} is not set")
    try:
        credentials_of(access_key, secret_key)
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    return AclKeys(access_key=access_key, secret_key=secret_key)


class ClientSecurity(AclKeys):
    """The keyword arguments :class:`~rocketq.admin.Admin` and
    :class:`~rocketq.client.config.ClientConfig` take for the ACL account and for TLS."""

    tls: TlsClientConfig


def client_security(args: argparse.Namespace) -> ClientSecurity:
    """The ACL keys (:func:`acl_keys`) and the TLS settings (``--tls`` ...,
    :func:`~rocketq.cli._tls.tls_client_config`; plaintext for a command without them) of one
    command, each checked (a :class:`CliError` naming the option)."""
    keys = acl_keys(args)
    tls = tls_client_config(args) if hasattr(args, "tls_insecure") else TlsClientConfig()
    return ClientSecurity(access_key=keys["access_key"], secret_key=keys["secret_key"], tls=tls)


def add_json_option(parser: argparse.ArgumentParser, what: str = "the result") -> None:
    parser.add_argument("--json", action="store_true", help=f"print {what} as JSON instead of a table")


def add_admin_options(
    parser: argparse.ArgumentParser, handler: Callable[[argparse.Namespace], int], what: str = "the result"
) -> None:
    """Close an admin subcommand's parser: ``--namesrv``, the ACL keys, ``--json`` (printing
    ``what``) and the handler that runs it."""
    add_namesrv_option(parser)
    add_acl_options(parser)
    add_json_option(parser, what)
    parser.set_defaults(handler=handler)


def add_view_options(parser: argparse.ArgumentParser, views_help: str, fence_help: str) -> None:
    """``--consistent-views {per-broker,union,intersection,off}`` and ``--no-view-fence``: ``rocketq
    consume``'s options, which ``rocketq chaos`` passes on to the consumers it starts."""
    parser.add_argument(
        "--consistent-views",
        choices=("per-broker", "union", "intersection", "off"),
        help=views_help,
    )
    parser.add_argument("--no-view-fence", dest="view_fence", action="store_false", help=fence_help)


def number_type(
    convert: Callable[[str], N],
    not_a: str,
    accept: Callable[[N], bool],
    refusal: str,
    *,
    most: N | None = None,
    too_big: str = "must be at most {most}, got {text}",
) -> Callable[[str], N]:
    """An argparse ``type=``: ``convert(text)`` when ``accept`` takes the number (and it is at most
    ``most``), else a usage error naming the value: ``"<not_a>: 'text'"`` when it is no number at
    all, ``refusal`` when ``accept`` refuses it, ``too_big`` above ``most`` (``{text}``,
    ``{value}`` and ``{most}`` filled in)."""

    def parse(text: str) -> N:
        try:
            value = convert(text)
        except (ValueError, OverflowError):
            raise argparse.ArgumentTypeError(f"{not_a}: {text!r}") from None
        if not accept(value):
            raise argparse.ArgumentTypeError(refusal.format(text=text, value=value))
        if most is not None and not value <= most:
            raise argparse.ArgumentTypeError(too_big.format(text=text, value=value, most=most))
        return value

    return parse


JAVA_LONG_MAX = (1 << 63) - 1
"""The largest count the CLI takes (Java's ``Long.MAX_VALUE``: RocketMQ's offsets and counts are longs)."""
MAX_SECONDS = 365 * 24 * 3600.0
"""The longest duration the CLI takes, a year: more is a slip of the keyboard (and past what a
thread's wait accepts, ``threading.TIMEOUT_MAX``, a wait fails)."""
_A_YEAR = "must be at most a year (31536000 seconds), got {text}"

#: an integer above zero, at most Java's Long.MAX_VALUE
positive_int = number_type(
    int, "not an integer", lambda v: v > 0, "must be positive, got {value}", most=JAVA_LONG_MAX
)
#: a TCP port, 0..65535 (0 for any)
port_number = number_type(
    int, "not a port number", lambda v: 0 <= v <= 65535, "port must be 0..65535, got {value}"
)
#: a finite number above zero (NaN and infinity refused): a rate
positive_float = number_type(
    float,
    "not a number",
    lambda v: v > 0,
    "must be positive, got {text}",
    most=sys.float_info.max,
    too_big="must be a finite number, got {text}",
)
#: seconds above zero, at most a year (NaN and infinity refused)
positive_duration = number_type(
    float, "not a number", lambda v: v > 0, "must be positive, got {text}", most=MAX_SECONDS, too_big=_A_YEAR
)
#: seconds of zero or more, at most a year (NaN and infinity refused)
non_negative_float = number_type(
    float,
    "not a number",
    lambda v: v >= 0,
    "must be 0 or more, got {text}",
    most=MAX_SECONDS,
    too_big=_A_YEAR,
)


def unreachable_hint(
    exc: RemotingConnectError | RemotingTimeoutError, namesrv: str | None = None
) -> CliError:
    """A :class:`CliError` for a server that did not answer, with what to check: a name server
    (the error names one, or one of ``namesrv``'s addresses) or a broker."""
    text = str(exc)
    if "TLS" in text:  # it reached a server, which said what is wrong
        return CliError(text)
    try:
        addrs = resolve_namesrv(namesrv)
    except ConfigError:
        addrs = ()
    if "name server" in text or any(a in text for a in addrs):
        return CliError(f"{text} (is `rocketq server` running? set --namesrv or ${NAMESRV_ENV})")
    return CliError(f"{text} (is the broker running and reachable from here?)")


def name_type(check: Callable[[str], None]) -> Callable[[str], str]:
    """An argparse ``type=``: the name when ``check`` accepts it, else its ConfigError as a usage error."""

    def parse(text: str) -> str:
        try:
            check(text)
        except ConfigError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return text

    return parse


#: a topic name RocketMQ accepts (1..127 of ``[%|a-zA-Z0-9_-]``)
topic_name = name_type(check_topic)
#: a group name RocketMQ accepts (1..255 of ``[%|a-zA-Z0-9_-]``)
group_name = name_type(check_group)


@contextmanager
def admin_session(args: argparse.Namespace) -> Iterator[Admin]:
    """An :class:`Admin` for one command (``args.namesrv``, the ACL keys and TLS settings of
    :func:`client_security`); unreachable servers and bad arguments end as CliError."""
    namesrv: str | None = args.namesrv
    try:
        admin = Admin(namesrv, **client_security(args))
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    try:
        yield admin
    except (RemotingConnectError, RemotingTimeoutError) as exc:
        raise unreachable_hint(exc, namesrv) from None
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    finally:
        admin.close()


def print_json(obj: Any, file: TextIO | None = None) -> None:
    """One JSON document on one line."""
    out = file if file is not None else sys.stdout
    out.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")
    out.flush()


def print_table(
    title: str | None,
    columns: Sequence[str],
    rows: Sequence[Sequence[object]],
    *,
    footer: Sequence[object] | None = None,
    right: Sequence[str] = (),
) -> None:
    """A rich table on stdout; ``right`` names the columns aligned right (numbers)."""
    console = Console(soft_wrap=True, highlight=False, width=None if sys.stdout.isatty() else 1000)
    table = Table(title=title, show_footer=footer is not None, title_justify="left")
    for i, name in enumerate(columns):
        table.add_column(
            name,
            justify="right" if name in right else "left",
            footer=str(footer[i]) if footer is not None and footer[i] is not None else "",
            overflow="fold",
        )
    for row in rows:
        table.add_row(*("" if v is None else str(v) for v in row))
    console.print(table)


def format_ms(ms: int) -> str:
    """Epoch milliseconds as local ``YYYY-MM-DD HH:MM:SS.mmm`` (``-`` for 0)."""
    if ms <= 0:
        return "-"
    try:
        return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    except (ValueError, OverflowError, OSError):  # beyond what a date can hold: the number itself
        return str(ms)
