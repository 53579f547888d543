"""TLS settings, certificates and the commands' TLS options: what is refused, and how (no server runs).

A bad certificate file (missing, not PEM, a key of another certificate) is one line naming the
option and exit code 2 from every server and client command, before anything is made; which
command and which file is drawn at random (the draw is printed).
"""

from __future__ import annotations

import random
import ssl
from pathlib import Path

import pytest

from rocketq.cli.main import main
from rocketq.errors import ConfigError
from rocketq.remoting import ClientAuth, ServerConfig, TlsClientConfig, TlsMode, TlsServerConfig
from rocketq.remoting.certs import TestCerts, make_test_certs
from rocketq.remoting.tls import client_context, read_tls_properties, server_context
from rocketq.spark.source import parse_options


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> TestCerts:
    return make_test_certs(tmp_path_factory.mktemp("certs"), hosts=["broker.example"])


def test_the_test_certificates_make_a_server_and_client_that_trust_each_other(certs: TestCerts) -> None:
    server = server_context(
        TlsServerConfig(
            mode=TlsMode.ENFORCING,
            cert_path=str(certs.server_cert),
            key_path=str(certs.server_key),
            trust_cert_path=str(certs.ca),
            need_client_auth=ClientAuth.REQUIRE,
        )
    )
    client = client_context(
        TlsClientConfig(
            enable=True,
            trust_cert_path=str(certs.ca),
            cert_path=str(certs.client_cert),
            key_path=str(certs.client_key),
        )
    )
    assert server is not None
    assert client is not None
    assert server.verify_mode == ssl.CERT_REQUIRED
    assert client.check_hostname
    # a handshake in memory: the server's name (and each --host) is checked, the client's certificate too
    for host in ("localhost", "127.0.0.1", "broker.example"):
        assert _handshake(client, server, host).getpeercert() is not None
    with pytest.raises(ssl.SSLCertVerificationError):  # a name the certificate does not carry
        _handshake(client, server, "elsewhere.example")


def _handshake(client: ssl.SSLContext, server: ssl.SSLContext, host: str) -> ssl.SSLObject:
    """Run a TLS handshake between the two contexts through memory; the server's side."""
    to_server, to_client = ssl.MemoryBIO(), ssl.MemoryBIO()
    c = client.wrap_bio(to_client, to_server, server_hostname=host)
    s = server.wrap_bio(to_server, to_client, server_side=True)
    done = {id(c): False, id(s): False}
    for _ in range(10):
        for side in (c, s):
            try:
                side.do_handshake()
                done[id(side)] = True
            except ssl.SSLWantReadError:
                pass
        if all(done.values()):
            return s
    raise AssertionError("the handshake did not finish")


def test_make_test_certs_refuses_to_overwrite(certs: TestCerts, tmp_path: Path) -> None:
    out = make_test_certs(tmp_path / "c")
    before = out.server_cert.read_bytes()
    with pytest.raises(ConfigError, match=r"already has ca\.pem"):
        make_test_certs(tmp_path / "c")
    assert out.server_cert.read_bytes() == before
    assert (out.server_key.stat().st_mode & 0o777) == 0o600
    assert make_test_certs(tmp_path / "c", overwrite=True).server_cert.read_bytes() != before


def test_modes_need_their_files() -> None:
    assert not TlsServerConfig().enabled
    assert ServerConfig().tls.mode is TlsMode.DISABLED  # today's plaintext stays the default
    with pytest.raises(ConfigError, match="needs a certificate and its key"):
        TlsServerConfig(mode=TlsMode.PERMISSIVE)
    with pytest.raises(ConfigError, match="trustCertPath"):
        TlsServerConfig(mode="enforcing", cert_path="a", key_path="b", need_client_auth="require")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="disabled, permissive or enforcing"):
        TlsServerConfig(mode="strict")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="go together"):
        TlsClientConfig(enable=True, cert_path="a")


def test_rocketmq_tls_properties_are_read_by_their_names(certs: TestCerts, tmp_path: Path) -> None:
    rng = random.Random()
    seed = rng.randrange(1 << 30)
    print("seed", seed)
    rng.seed(seed)
    mode = rng.choice(["permissive", "enforcing", "ENFORCING"])
    auth = rng.choice(["none", "optional", "require"])
    sep = rng.choice(["=", ":", " = "])
    lines = [
        "# 4.9's tls.properties",
        f"tls.server.mode{sep}{mode}",
        f"tls.server.certPath{sep}{certs.server_cert}",
        f"tls.server.keyPath{sep}{certs.server_key}",
        f"tls.server.trustCertPath{sep}{certs.ca}",
        f"tls.server.need.client.auth{sep}{auth}",
        f"tls.enable{sep}true",
        f"tls.client.trustCertPath{sep}{certs.ca}",
        f"tls.client.authServer{sep}{rng.choice(['true', 'false'])}",
    ]
    rng.shuffle(lines)
    path = tmp_path / "tls.properties"
    path.write_text("\n".join(lines) + "\n")
    server, client = read_tls_properties(path)
    assert server.mode is TlsMode(mode.lower())
    assert server.need_client_auth is ClientAuth(auth)
    assert server.cert_path == str(certs.server_cert)
    assert client.enable
    assert client.trust_cert_path == str(certs.ca)
    assert server_context(server) is not None
    path.write_text("tls.test.mode.enable=true\n")
    with pytest.raises(ConfigError, match=r"tls\.test\.mode\.enable"):
        read_tls_properties(path)


def _bad_file(kind: str, certs: TestCerts, tmp_path: Path) -> tuple[dict[str, str], str]:
    """Certificate files with one thing wrong (``kind``), and the option the error must name."""
    files = {"cert": str(certs.server_cert), "key": str(certs.server_key), "ca": str(certs.ca)}
    if kind == "missing cert":
        files["cert"] = str(tmp_path / "nope.pem")
        return files, "--tls-cert"
    if kind == "missing key":
        files["key"] = str(tmp_path / "nope.key")
        return files, "--tls-key"
    if kind == "missing ca":
        files["ca"] = str(tmp_path / "nope-ca.pem")
        return files, "--tls-ca"
    if kind == "key of another certificate":
        files["key"] = str(certs.client_key)
        return files, "--tls-cert/--tls-key"
    if kind == "ca not PEM":
        junk = tmp_path / "junk.pem"
        junk.write_bytes(random.randbytes(300))
        files["ca"] = str(junk)
        return files, "--tls-ca"
    raise AssertionError(kind)


KINDS = ["missing cert", "missing key", "missing ca", "key of another certificate", "ca not PEM"]


@pytest.mark.parametrize("command", ["server", "broker", "namesrv"])
def test_a_server_with_a_bad_certificate_file_is_one_line_and_exit_2_before_anything_starts(
    command: str, certs: TestCerts, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kind = random.choice(KINDS)
    mode = random.choice(["permissive", "enforcing"])
    print("drawn:", command, kind, mode)
    files, option = _bad_file(kind, certs, tmp_path)
    data = tmp_path / "data"
    argv = [command, "--tls-mode", mode, "--tls-cert", files["cert"], "--tls-key", files["key"]]
    argv += ["--tls-ca", files["ca"]]
    if command in ("server", "broker"):
        argv += ["--data-dir", str(data), "--broker-port", "0"]
    if command == "broker":
        argv += ["--namesrv", "127.0.0.1:9"]
    if command in ("server", "namesrv"):
        argv += ["--namesrv-port" if command == "server" else "--port", "0"]
    capsys.readouterr()
    assert main(argv) == 2
    out, err = capsys.readouterr()
    print(err)
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"rocketq {command}: error: {option}")
    assert not data.exists()  # nothing made


@pytest.mark.parametrize("command", ["dashboard", "exporter", "topic list", "produce T", "group members g"])
def test_a_client_with_a_bad_certificate_file_is_one_line_and_exit_2(
    command: str, certs: TestCerts, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kind = random.choice([k for k in KINDS if k != "missing key"])  # a client's key goes with its cert
    print("drawn:", command, kind)
    files, option = _bad_file(kind, certs, tmp_path)
    argv = [*command.split(), "--namesrv", "127.0.0.1:9", "--tls", "--tls-ca", files["ca"]]
    if kind != "missing ca":
        mismatched = kind == "key of another certificate"
        argv += ["--tls-cert", str(certs.client_cert) if mismatched else files["cert"]]
        argv += ["--tls-key", str(certs.server_key) if mismatched else files["key"]]
    if command in ("dashboard", "exporter"):
        argv += ["--port", "0"]
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    print(err)
    lines = err.strip().splitlines()
    assert len(lines) == 1
    path = " ".join(word for word in command.split() if word not in ("T", "g"))  # the command, no args
    assert lines[0].startswith(f"rocketq {path}: error: {option}")
    assert "127.0.0.1:9" not in lines[0]  # refused before dialling anything


def test_https_files_of_the_dashboard_are_checked_at_once(
    certs: TestCerts, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    command = random.choice(["dashboard", "exporter"])
    print("drawn:", command)
    argv = [
        command,
        "--port",
        "0",
        "--https-cert",
        str(certs.server_cert),
        "--https-key",
        str(tmp_path / "x"),
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "HTTPS key: no such file" in err[0]
    assert main([command, "--port", "0", "--https-cert", str(certs.server_cert)]) == 2
    assert "go together" in capsys.readouterr().err


def test_tls_client_options_need_tls(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["topic", "list", "--namesrv", "127.0.0.1:9", "--tls-insecure"]) == 2
    assert "need --tls" in capsys.readouterr().err


def test_the_spark_source_takes_rocketmq_tls_properties(certs: TestCerts, tmp_path: Path) -> None:
    opts = {"namesrv": "127.0.0.1:9876", "topic": "T"}
    assert parse_options(opts, streaming=False).tls is None
    parsed = parse_options(
        {**opts, "tls.enable": "true", "tls.client.trustCertPath": str(certs.ca)}, streaming=False
    )
    assert parsed.tls == TlsClientConfig(enable=True, trust_cert_path=str(certs.ca))
    lower = {
        k.lower(): v for k, v in {**opts, "tls.enable": "TRUE", "tls.client.authServer": "false"}.items()
    }
    parsed = parse_options(lower, streaming=False)  # Spark hands the keys lower-cased
    assert parsed.tls is not None
    assert not parsed.tls.auth_server
    with pytest.raises(ConfigError, match=r"tls\.client\.trustCertPath"):
        parse_options({**opts, "tls.enable": "true", "tls.client.trustCertPath": str(tmp_path / "no")})
    with pytest.raises(ConfigError, match=r"needs 'tls\.enable'"):
        parse_options({**opts, "tls.client.trustCertPath": str(certs.ca)})


def test_tls_config_file_with_options_that_override_it(certs: TestCerts, tmp_path: Path) -> None:
    from rocketq.cli._tls import tls_server_config
    from rocketq.cli.main import build_parser

    path = tmp_path / "tls.properties"
    path.write_text(
        f"tls.server.mode=permissive\ntls.server.certPath={certs.server_cert}\n"
        f"tls.server.keyPath={certs.server_key}\n"
    )
    mode = random.choice([None, "enforcing", "permissive"])
    print("--tls-mode", mode)
    argv = ["namesrv", "--tls-config", str(path)] + (["--tls-mode", mode] if mode else [])
    config = tls_server_config(build_parser().parse_args(argv))
    assert config.mode is TlsMode(mode or "permissive")
    assert config.cert_path == str(certs.server_cert)
