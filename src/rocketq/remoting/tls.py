"""TLS settings of the remoting transport, as RocketMQ 4.9 names them, and the SSL contexts they make.

A server runs in one of RocketMQ's three modes (``tls.server.mode``, :class:`TlsMode`):

* ``disabled``: plaintext only (a TLS client is closed: its ClientHello is not a frame);
* ``permissive``: each connection's first byte decides (0x16, a TLS record of a ClientHello,
  starts TLS; anything else is served in plaintext), as 4.9's ``HandshakeHandler`` does;
* ``enforcing``: TLS only; a plaintext connection is closed before a byte of it is read as a frame.

A client either speaks TLS to every server it dials (``tls.enable``, the client's ``useTLS``) or
plaintext. Certificates and keys come from PEM files; the field names follow 4.9's
``TlsSystemConfig`` (``tls.server.certPath`` is :attr:`TlsServerConfig.cert_path` ...), and
:func:`read_tls_properties` reads 4.9's ``tls.properties`` file (``tls.config.file``).

::

    server = ServerConfig(tls=TlsServerConfig(mode=TlsMode.PERMISSIVE, cert_path="server.pem",
                                              key_path="server.key"))
    client = RemotingClientConfig(tls=TlsClientConfig(enable=True, trust_cert_path="ca.pem"))
"""

from __future__ import annotations

import enum
import functools
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from rocketq.errors import ConfigError

__all__ = [
    "ClientAuth",
    "TlsClientConfig",
    "TlsMode",
    "TlsServerConfig",
    "client_context",
    "read_tls_properties",
    "server_context",
]

#: The first byte of a TLS record carrying a handshake message (4.9's ``HANDSHAKE_MAGIC_CODE``).
TLS_HANDSHAKE_BYTE = 0x16


class TlsMode(enum.StrEnum):
    """``tls.server.mode``: what a server accepts (4.9's ``TlsMode``)."""

    DISABLED = "disabled"
    PERMISSIVE = "permissive"
    ENFORCING = "enforcing"


class ClientAuth(enum.StrEnum):
    """``tls.server.need.client.auth``: whether a TLS client must show a certificate."""

    NONE = "none"
    OPTIONAL = "optional"
    REQUIRE = "require"


_E = TypeVar("_E", bound=enum.StrEnum)


def _choice(cls: type[_E], name: str, value: str) -> _E:
    """``value`` as one of ``cls``'s members (case and spaces aside), else one line naming them."""
    try:
        return cls(value.strip().lower())
    except ValueError:
        *most, last = [member.value for member in cls]
        raise ConfigError(f"{name} must be {', '.join(most)} or {last}, not {value!r}") from None


def _mode(value: str) -> TlsMode:
    return _choice(TlsMode, "tls.server.mode", value)


def _client_auth(value: str) -> ClientAuth:
    return _choice(ClientAuth, "tls.server.need.client.auth", value)


@dataclass(frozen=True, slots=True, kw_only=True)
class TlsServerConfig:
    """How a server's port speaks TLS (4.9's ``TlsSystemConfig``, server side)."""

    #: ``tls.server.mode``. RocketMQ's default is ``permissive`` with a self-signed certificate
    #: made up at start (``tls.test.mode.enable``); ours is ``disabled``: today's plaintext,
    #: and no certificate nobody can check.
    mode: TlsMode = TlsMode.DISABLED
    #: ``tls.server.certPath``: the server's certificate chain (PEM).
    cert_path: str | None = None
    #: ``tls.server.keyPath``: its private key (PEM).
    key_path: str | None = None
    #: ``tls.server.keyPassword``: the key's password, if it is encrypted.
    key_password: str | None = None
    #: ``tls.server.trustCertPath``: the CAs clients' certificates are checked against (PEM).
    trust_cert_path: str | None = None
    #: ``tls.server.need.client.auth`` (4.9's default: ``none``).
    need_client_auth: ClientAuth = ClientAuth.NONE
    #: Seconds a connection has to send its first byte and to finish the TLS handshake (ours;
    #: asyncio's handshake default is 60 s, 4.9 has none but the 120 s idle timeout). Only in
    #: the permissive and enforcing modes: with TLS disabled the port is served as it always was.
    handshake_timeout: float = 10.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", _mode(str(self.mode)))
        object.__setattr__(self, "need_client_auth", _client_auth(str(self.need_client_auth)))
        if not self.handshake_timeout > 0:
            raise ConfigError(f"handshake_timeout must be positive, got {self.handshake_timeout!r}")
        if self.mode is TlsMode.DISABLED:
            return
        if not self.cert_path or not self.key_path:
            raise ConfigError(
                f"tls.server.mode {self.mode} needs a certificate and its key "
                "(tls.server.certPath and tls.server.keyPath)"
            )
        if self.need_client_auth is not ClientAuth.NONE and not self.trust_cert_path:
            raise ConfigError(
                f"tls.server.need.client.auth={self.need_client_auth} needs tls.server.trustCertPath "
                "(the CA that signs the clients' certificates)"
            )

    @property
    def enabled(self) -> bool:
        return self.mode is not TlsMode.DISABLED

    def context(self) -> ssl.SSLContext | None:
        """:func:`server_context`: the SSL context, its files read (a ConfigError if they cannot be)."""
        return server_context(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class TlsClientConfig:
    """How a client dials servers (4.9's ``tls.enable`` / ``useTLS`` and ``tls.client.*``)."""

    #: ``tls.enable`` (the client's ``useTLS``): speak TLS to every server (4.9's default: off).
    enable: bool = False
    #: ``tls.client.certPath``: the client's certificate (PEM), for servers that ask for one.
    cert_path: str | None = None
    #: ``tls.client.keyPath``: its private key (PEM).
    key_path: str | None = None
    #: ``tls.client.keyPassword``: the key's password, if it is encrypted.
    key_password: str | None = None
    #: ``tls.client.trustCertPath``: the CAs the server's certificate is checked against (PEM);
    #: ``None``: the system's trusted CAs.
    trust_cert_path: str | None = None
    #: ``tls.client.authServer``: check the server's certificate and that it names the host
    #: dialled. 4.9's default is ``false`` (any certificate passes: anyone on the path can read
    #: everything); ours is ``true``. ``false`` gives encryption without knowing who answers.
    auth_server: bool = True

    def __post_init__(self) -> None:
        if bool(self.cert_path) != bool(self.key_path):
            raise ConfigError("tls.client.certPath and tls.client.keyPath go together: give both or neither")

    def context(self) -> ssl.SSLContext | None:
        """:func:`client_context`: the SSL context, its files read (a ConfigError if they cannot be)."""
        return client_context(self)


def silent_close_hint(tls: bool) -> str:
    """What a client adds when its server closed the connection before sending a byte: the
    likely reason, by whether the client spoke TLS."""
    if tls:
        return "; the server said nothing: does it ask for a client certificate? (--tls-cert, --tls-key)"
    return "; the server said nothing: one enforcing TLS closes plaintext connections (--tls, tls.enable)"


def _check_file(prop: str, path: str) -> None:
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{prop}: no such file {path!r}")
    try:
        with p.open("rb"):
            pass
    except OSError as exc:
        raise ConfigError(f"{prop}: cannot read {path!r}: {exc.strerror or exc}") from None


def _load_chain(ctx: ssl.SSLContext, side: str, cert: str, key: str, password: str | None) -> None:
    _check_file(f"tls.{side}.certPath", cert)
    _check_file(f"tls.{side}.keyPath", key)
    try:
        ctx.load_cert_chain(cert, key, password)
    except ssl.SSLError as exc:
        raise ConfigError(
            f"tls.{side}.certPath/keyPath: {cert!r} and {key!r} are not a PEM certificate and its "
            f"private key ({exc.reason or exc})"
        ) from None


def _load_trust(ctx: ssl.SSLContext, side: str, path: str) -> None:
    _check_file(f"tls.{side}.trustCertPath", path)
    try:
        ctx.load_verify_locations(cafile=path)
    except ssl.SSLError as exc:
        raise ConfigError(
            f"tls.{side}.trustCertPath: {path!r} holds no PEM certificate ({exc.reason or exc})"
        ) from None


@functools.lru_cache(maxsize=16)
def server_context(config: TlsServerConfig) -> ssl.SSLContext | None:
    """The SSL context of a server with ``config`` (``None`` when TLS is disabled); made once per
    config. A missing or unreadable file, or a key that does not fit, is a :class:`ConfigError`."""
    if not config.enabled:
        return None
    assert config.cert_path is not None  # __post_init__ checked
    assert config.key_path is not None
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    _load_chain(ctx, "server", config.cert_path, config.key_path, config.key_password)
    if config.trust_cert_path:
        _load_trust(ctx, "server", config.trust_cert_path)
    ctx.verify_mode = {
        ClientAuth.NONE: ssl.CERT_NONE,
        ClientAuth.OPTIONAL: ssl.CERT_OPTIONAL,
        ClientAuth.REQUIRE: ssl.CERT_REQUIRED,
    }[config.need_client_auth]
    return ctx


@functools.lru_cache(maxsize=16)
def client_context(config: TlsClientConfig) -> ssl.SSLContext | None:
    """The SSL context of a client with ``config`` (``None`` when TLS is off); made once per config."""
    if not config.enable:
        return None
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if config.auth_server:
        if config.trust_cert_path:
            _load_trust(ctx, "client", config.trust_cert_path)
        else:
            ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
    else:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if config.cert_path and config.key_path:
        _load_chain(ctx, "client", config.cert_path, config.key_path, config.key_password)
    return ctx


def _parse_properties(text: str) -> dict[str, str]:
    """``key=value`` lines of a Java properties file (``#``/``!`` comments, ``=`` or ``:``)."""
    props: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        cut = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if cut < 0:
            key, value = line, ""
        else:
            key, value = line[:cut].strip(), line[cut + 1 :].strip()
        props[key] = value
    return props


def _bool(props: dict[str, str], key: str, default: bool) -> bool:
    value = props.get(key)
    return default if value is None else value.strip().lower() == "true"  # Java's parseBoolean


def read_tls_properties(path: str | Path) -> tuple[TlsServerConfig, TlsClientConfig]:
    """The server and client settings of 4.9's ``tls.properties`` (``tls.config.file``), by its
    property names: ``tls.server.mode``, ``tls.server.certPath``, ``tls.server.keyPath``,
    ``tls.server.keyPassword``, ``tls.server.trustCertPath``, ``tls.server.need.client.auth``,
    ``tls.enable``, ``tls.client.certPath``, ``tls.client.keyPath``, ``tls.client.keyPassword``,
    ``tls.client.trustCertPath``, ``tls.client.authServer``. Missing keys take our defaults;
    ``tls.test.mode.enable`` (a certificate made up at start) is refused."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"tls.config.file: cannot read {str(path)!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"tls.config.file: {str(path)!r} is not a text file") from None
    props = _parse_properties(text)
    if _bool(props, "tls.test.mode.enable", False):
        raise ConfigError(
            "tls.test.mode.enable=true (a self-signed certificate made up at start) is not supported: "
            "make certificates with `rocketq tls make-test-certs DIR` and name them"
        )
    server = TlsServerConfig(
        mode=_mode(props.get("tls.server.mode", "disabled")),
        cert_path=props.get("tls.server.certPath") or None,
        key_path=props.get("tls.server.keyPath") or None,
        key_password=props.get("tls.server.keyPassword") or None,
        trust_cert_path=props.get("tls.server.trustCertPath") or None,
        need_client_auth=_client_auth(props.get("tls.server.need.client.auth", "none") or "none"),
    )
    client = TlsClientConfig(
        enable=_bool(props, "tls.enable", False),
        cert_path=props.get("tls.client.certPath") or None,
        key_path=props.get("tls.client.keyPath") or None,
        key_password=props.get("tls.client.keyPassword") or None,
        trust_cert_path=props.get("tls.client.trustCertPath") or None,
        auth_server=_bool(props, "tls.client.authServer", True),
    )
    return server, client
