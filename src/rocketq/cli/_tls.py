"""The TLS options of the servers' and the clients' commands (see docs/security.md, "TLS").

Servers (``rocketq server``, ``broker``, ``namesrv``, ``dashboard``, ``exporter``)::

    --tls-mode disabled|permissive|enforcing   tls.server.mode (default disabled)
    --tls-cert FILE --tls-key FILE             tls.server.certPath, tls.server.keyPath
    --tls-ca FILE                              tls.server.trustCertPath (clients' certificates)
    --tls-client-auth none|optional|require    tls.server.need.client.auth
    --tls-config FILE                          4.9's tls.properties (options given here win)

Clients (every command that dials a name server)::

    --tls                                      tls.enable (useTLS)
    --tls-ca FILE                              tls.client.trustCertPath (default: the system's CAs)
    --tls-cert FILE --tls-key FILE             tls.client.certPath, tls.client.keyPath
    --tls-insecure                             tls.client.authServer=false: no certificate check

Each reads its files at once: a missing or unreadable file, or a key that does not fit its
certificate, is one line and exit code 2 before anything starts.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from rocketq.cli.main import CliError
from rocketq.errors import ConfigError
from rocketq.remoting.tls import (
    ClientAuth,
    TlsClientConfig,
    TlsMode,
    TlsServerConfig,
    client_context,
    read_tls_properties,
    server_context,
)

__all__ = [
    "add_tls_client_options",
    "add_tls_server_options",
    "own_client_tls",
    "tls_client_config",
    "tls_server_config",
]

#: RocketMQ's property names in our messages, with the option that sets each
_OPTION_OF = {
    "tls.server.certPath/keyPath": "--tls-cert/--tls-key",
    "tls.client.certPath/keyPath": "--tls-cert/--tls-key",
    "tls.server.certPath": "--tls-cert",
    "tls.server.keyPath": "--tls-key",
    "tls.server.trustCertPath": "--tls-ca",
    "tls.client.certPath": "--tls-cert",
    "tls.client.keyPath": "--tls-key",
    "tls.client.trustCertPath": "--tls-ca",
}


def _cli_error(exc: ConfigError) -> CliError:
    text = str(exc)
    for prop, option in _OPTION_OF.items():
        if text.startswith(prop + ":"):
            return CliError(f"{option} ({prop}){text[len(prop) :]}")
    return CliError(text)


def add_tls_server_options(parser: argparse.ArgumentParser, *, what: str = "this server's port") -> None:
    """``--tls-mode``, ``--tls-cert``, ``--tls-key``, ``--tls-ca``, ``--tls-client-auth``,
    ``--tls-config``."""
    parser.add_argument(
        "--tls-mode",
        choices=[m.value for m in TlsMode],
        default=None,
        help=f"TLS on {what} (tls.server.mode): disabled (plaintext only, the default), permissive "
        "(TLS and plaintext clients), enforcing (TLS only); see docs/security.md",
    )
    parser.add_argument("--tls-cert", metavar="FILE", default=None, help="the server's certificate, PEM")
    parser.add_argument("--tls-key", metavar="FILE", default=None, help="its private key, PEM")
    parser.add_argument(
        "--tls-ca",
        metavar="FILE",
        default=None,
        help="CA certificates (PEM) that clients' certificates are checked against, and that this "
        "process trusts when it dials its peers over TLS",
    )
    parser.add_argument(
        "--tls-client-auth",
        choices=[a.value for a in ClientAuth],
        default=None,
        help="ask TLS clients for a certificate signed by --tls-ca (tls.server.need.client.auth; "
        "default none)",
    )
    parser.add_argument(
        "--tls-config",
        metavar="FILE",
        default=None,
        help="RocketMQ 4.9's tls.properties (tls.server.mode, tls.server.certPath ...); the "
        "options above override it",
    )


def tls_server_config(args: argparse.Namespace) -> TlsServerConfig:
    """The server's TLS settings from :func:`add_tls_server_options`' options, its files read
    (a :class:`CliError` naming the option when one cannot be)."""
    try:
        base = TlsServerConfig() if args.tls_config is None else read_tls_properties(args.tls_config)[0]
        given = {
            "mode": args.tls_mode,
            "cert_path": args.tls_cert,
            "key_path": args.tls_key,
            "trust_cert_path": args.tls_ca,
            "need_client_auth": args.tls_client_auth,
        }
        config = replace(base, **{k: v for k, v in given.items() if v is not None})
        if config.mode is TlsMode.DISABLED and (args.tls_cert or args.tls_key):
            raise CliError("--tls-cert/--tls-key are for TLS: give --tls-mode permissive or enforcing too")
        server_context(config)
    except ConfigError as exc:
        raise _cli_error(exc) from None
    return config


def own_client_tls(server: TlsServerConfig) -> TlsClientConfig:
    """How a server dials its own peers (a broker its name servers and master): over TLS when its
    port speaks TLS, trusting its ``--tls-ca`` (else the system's CAs) and showing its own
    certificate to peers that ask for one."""
    if not server.enabled:
        return TlsClientConfig()
    return TlsClientConfig(
        enable=True,
        cert_path=server.cert_path,
        key_path=server.key_path,
        key_password=server.key_password,
        trust_cert_path=server.trust_cert_path,
    )


def add_tls_client_options(parser: argparse.ArgumentParser) -> None:
    """``--tls``, ``--tls-ca``, ``--tls-cert``, ``--tls-key``, ``--tls-insecure``."""
    parser.add_argument(
        "--tls",
        action="store_true",
        help="speak TLS to the name server and brokers (tls.enable; for servers with --tls-mode "
        "permissive or enforcing)",
    )
    parser.add_argument(
        "--tls-ca",
        metavar="FILE",
        default=None,
        help="CA certificates (PEM) the servers' certificates are checked against (default: the system's)",
    )
    parser.add_argument(
        "--tls-cert",
        metavar="FILE",
        default=None,
        help="this client's certificate (PEM), for servers that ask for one",
    )
    parser.add_argument("--tls-key", metavar="FILE", default=None, help="its private key, PEM")
    parser.add_argument(
        "--tls-insecure",
        action="store_true",
        help="do not check the servers' certificates (tls.client.authServer=false, RocketMQ's "
        "default): encrypted, but anyone on the path can pose as the server",
    )


def tls_client_config(args: argparse.Namespace) -> TlsClientConfig:
    """The client's TLS settings from :func:`add_tls_client_options`' options, its files read."""
    given = args.tls_ca or args.tls_cert or args.tls_key or args.tls_insecure
    if given and not args.tls:
        raise CliError("--tls-ca, --tls-cert, --tls-key and --tls-insecure need --tls")
    try:
        config = TlsClientConfig(
            enable=args.tls,
            cert_path=args.tls_cert,
            key_path=args.tls_key,
            trust_cert_path=args.tls_ca,
            auth_server=not args.tls_insecure,
        )
        client_context(config)
    except ConfigError as exc:
        raise _cli_error(exc) from None
    return config
