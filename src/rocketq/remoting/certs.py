"""Throwaway certificates for trying TLS locally: a CA, and a server and a client certificate it signs.

``rocketq tls make-test-certs DIR`` writes them::

    DIR/ca.pem                       the CA's certificate: --tls-ca of servers and clients
    DIR/server.pem, DIR/server.key   --tls-cert / --tls-key of servers
    DIR/client.pem, DIR/client.key   --tls-cert / --tls-key of clients (servers that ask for one)

The server's certificate names ``localhost``, ``127.0.0.1`` and ``::1`` (and any ``hosts`` given),
so clients that check host names (rocketq's default) accept it on this machine. The CA's private
key is not kept: nothing more can be signed with it, and these certificates are for tests only.
Keys are ECDSA P-256 (a handshake costs a fraction of RSA's); made with the ``cryptography``
package, the standard library has no way to make a certificate.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from rocketq.errors import ConfigError

__all__ = ["TestCerts", "make_test_certs"]

#: The files :func:`make_test_certs` writes, by name.
FILES = ("ca.pem", "server.pem", "server.key", "client.pem", "client.key")


@dataclass(frozen=True, slots=True, kw_only=True)
class TestCerts:
    """Where :func:`make_test_certs` wrote each file."""

    __test__ = False  # not a pytest test class

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _name(common: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "rocketq test certificates"),
            x509.NameAttribute(NameOID.COMMON_NAME, common),
        ]
    )


def _alt_names(hosts: Iterable[str]) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = []
    for host in dict.fromkeys(["localhost", "127.0.0.1", "::1", *hosts]):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names


def _issue(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    ca_name: x509.Name,
    ca_key: ec.EllipticCurvePrivateKey,
    *,
    days: int,
    usage: list[x509.ObjectIdentifier],
    hosts: Iterable[str] = (),
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage(usage), critical=False)
    )
    if ExtendedKeyUsageOID.SERVER_AUTH in usage:
        builder = builder.add_extension(x509.SubjectAlternativeName(_alt_names(hosts)), critical=False)
    return builder.sign(ca_key, hashes.SHA256())


def _ca(days: int) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = _name("rocketq test CA")
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def make_test_certs(
    directory: str | Path, *, hosts: Iterable[str] = (), days: int = 30, overwrite: bool = False
) -> TestCerts:
    """Write a CA and a server and client certificate it signed into ``directory`` (made if
    missing). Existing files are refused unless ``overwrite``: a :class:`ConfigError`, nothing
    written. Keys are written readable by their owner only."""
    if days < 1:
        raise ConfigError(f"days must be 1 or more, got {days}")
    out = Path(directory)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{str(out)!r} exists and is not a directory")
    if not overwrite:
        there = [name for name in FILES if (out / name).exists()]
        if there:
            names = ", ".join(there)
            raise ConfigError(f"{str(out)!r} already has {names}: not overwritten (--force replaces them)")
    hosts = list(hosts)
    ca_cert, ca_key = _ca(days)
    server_key = ec.generate_private_key(ec.SECP256R1())
    client_key = ec.generate_private_key(ec.SECP256R1())
    server = _issue(
        "rocketq test server", server_key, ca_cert.subject, ca_key,
        # a server dials its peers with it too (a broker its name server), so it is a client's too
        days=days, usage=[ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH], hosts=hosts,
    )  # fmt: skip
    client = _issue(
        "rocketq test client", client_key, ca_cert.subject, ca_key,
        days=days, usage=[ExtendedKeyUsageOID.CLIENT_AUTH],
    )  # fmt: skip
    try:
        out.mkdir(parents=True, exist_ok=True)
        files = {
            "ca.pem": (_pem(ca_cert), 0o644),
            "server.pem": (_pem(server), 0o644),
            "server.key": (_key_pem(server_key), 0o600),
            "client.pem": (_pem(client), 0o644),
            "client.key": (_key_pem(client_key), 0o600),
        }
        for name, (data, mode) in files.items():
            path = out / name
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.chmod(path, mode)
    except OSError as exc:
        raise ConfigError(f"cannot write certificates to {str(out)!r}: {exc.strerror or exc}") from None
    return TestCerts(
        ca=out / "ca.pem",
        server_cert=out / "server.pem",
        server_key=out / "server.key",
        client_cert=out / "client.pem",
        client_key=out / "client.key",
    )
