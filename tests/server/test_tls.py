"""TLS on both ports: `rummy-referee serve --tls-cert/--tls-key` (and ``--tls-client-ca``, mutual TLS), with
a CA, server and client certificates this test makes itself (the `openssl` CLI), against the Python SDK (blocking
and asyncio), `rummy-referee health`, the Node.js client, and JSON and Connect calls over https. Clients without
the CA (or, with mutual TLS, without a client certificate) are refused, and so is a plaintext client."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import shutil
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest

from clients.referee_proc import RefereeProcess
from clients.sdk import AsyncRefereeClient, RefereeClient
from clients.sdk.errors import RefereeError
from clients.sdk.values import NO_RETRY
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.redis_launcher import RedisProcess
from server.tls import TlsError, load_tls
from tests.clients.test_node_client import node_modules as node_modules  # the fixture: `npm ci` once per lock
from tests.clients.test_ts_client import TS_DIR, install_node_modules

ROOT = Path(__file__).resolve().parents[2]
OPENSSL = shutil.which("openssl")
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(OPENSSL is None, reason="the TLS tests make their certificates with `openssl`")


@dataclass(frozen=True)
class Certs:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path  # a CA that signed nothing of these


def _openssl(directory: Path, *args: str) -> None:
    assert OPENSSL is not None
    done = subprocess.run([OPENSSL, *args], cwd=directory, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def _signed(directory: Path, name: str, subject: str, extensions: str) -> None:
    """``name``.key and ``name``.pem, a certificate signed by ca.pem with ``extensions``."""
    (directory / f"{name}.ext").write_text(extensions + "\n")
    _openssl(directory, "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject)  # fmt: skip
    _openssl(directory, "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-days", "2", "-out", f"{name}.pem", "-extfile", f"{name}.ext")  # fmt: skip


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    d = tmp_path_factory.mktemp("tls")
    for ca in ("ca", "other-ca"):
        _openssl(d, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                 "-keyout", f"{ca}.key", "-out", f"{ca}.pem", "-days", "2",
                 "-subj", f"/CN=rummy test {ca}")  # fmt: skip
    _signed(d, "server", "/CN=localhost", "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth")
    _signed(d, "client", "/CN=a bot", "extendedKeyUsage=clientAuth")
    return Certs(d / "ca.pem", d / "server.pem", d / "server.key", d / "client.pem", d / "client.key",
                 d / "other-ca.pem")  # fmt: skip


class Served:
    """`rummy-referee serve` as a subprocess, on a free port."""

    def __init__(self, redis_url: str, log: Path, *flags: str, http: bool = False) -> None:
        self.log = log
        ports = ["--http-port", "0"] if http else ["--no-http"]
        self.referee = RefereeProcess(["--port", "0", *ports, "--redis-url", redis_url, "--grace", "1", *flags],
                                      log=log).start(60)  # fmt: skip
        self.line = self.referee.listening_line
        self.port = self.referee.port
        self.http_line = self.referee.http_line
        self.http_port = self.referee.http_port or 0

    def stop(self) -> None:
        self.referee.stop(20)


@pytest.fixture(scope="module")
def tls_served(redis_server: RedisProcess, certs: Certs, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A referee serving TLS only, on its gRPC and its HTTP port."""
    served = Served(redis_server.url, tmp_path_factory.mktemp("tls-serve") / "stderr", "--tls-cert",
                    str(certs.server_cert), "--tls-key", str(certs.server_key), http=True)  # fmt: skip
    try:
        assert served.line.endswith("(TLS)") and served.http_line.endswith("(TLS)"), (served.line, served.http_line)
        yield served
    finally:
        served.stop()


@pytest.fixture(scope="module")
def tls_referee(tls_served: Served) -> int:
    """The TLS referee's gRPC port."""
    return tls_served.port


@pytest.fixture(scope="module")
def mtls_served(redis_server: RedisProcess, certs: Certs, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A referee asking every client for a certificate signed by the test CA, on both ports."""
    served = Served(redis_server.url, tmp_path_factory.mktemp("mtls-serve") / "stderr", "--tls-cert",
                    str(certs.server_cert), "--tls-key", str(certs.server_key),
                    "--tls-client-ca", str(certs.ca), http=True)  # fmt: skip
    try:
        yield served
    finally:
        served.stop()


@pytest.fixture(scope="module")
def mtls_referee(mtls_served: Served) -> int:
    """The mutual-TLS referee's gRPC port."""
    return mtls_served.port


def https_call(
    port: int, method: str, body: bytes, content_type: str, context: ssl.SSLContext, token: str = ""
) -> bytes:
    """One Connect unary call over https (JSON or binary protobuf, by ``content_type``): the response body."""
    headers = {"content-type": content_type, **({"authorization": f"Bearer {token}"} if token else {})}
    request = urllib.request.Request(f"https://localhost:{port}/rummy.v1.RefereeService/{method}", data=body,
                                     headers=headers, method="POST")  # fmt: skip
    with urllib.request.urlopen(request, timeout=30, context=context) as reply:
        assert reply.status == 200
        return bytes(reply.read())


def _https_refused(port: int, context: ssl.SSLContext) -> None:
    with pytest.raises((urllib.error.URLError, ssl.SSLError, ConnectionError)):
        https_call(port, "Ping", b"{}", "application/json", context)


def test_http_port_serves_json_and_connect_over_tls(tls_served: Served, certs: Certs) -> None:
    """A JSON call and a binary Connect call over https, the server checked against the test CA; a client
    without that CA (the system's roots, or another CA) is refused, and so is plaintext HTTP."""
    trusted = ssl.create_default_context(cafile=str(certs.ca))
    https_call(tls_served.http_port, "Ping", b"{}", "application/json", trusted)
    created = json.loads(https_call(tls_served.http_port, "CreateGame", json.dumps(
        {"profile": "gin", "seats": [{"displayName": "a"}, {"displayName": "b"}]}).encode(), "application/json",
        trusted))  # fmt: skip
    assert created["gameId"]
    reply = rpb.GetGameResponse.FromString(https_call(
        tls_served.http_port, "GetGame", rpb.GetGameRequest(game_id=created["gameId"]).SerializeToString(),
        "application/proto", trusted, created["seatTokens"][0]["token"]))  # fmt: skip
    assert reply.view.game_id == created["gameId"]
    _https_refused(tls_served.http_port, ssl.create_default_context())
    _https_refused(tls_served.http_port, ssl.create_default_context(cafile=str(certs.other_ca)))
    with pytest.raises((urllib.error.URLError, ConnectionError, http.client.HTTPException)):
        urllib.request.urlopen(f"http://localhost:{tls_served.http_port}/rummy.v1.RefereeService/Ping", b"{}",
                               timeout=30)  # fmt: skip


def test_http_port_mutual_tls_refuses_a_client_without_a_certificate(mtls_served: Served, certs: Certs) -> None:
    with_cert = ssl.create_default_context(cafile=str(certs.ca))
    with_cert.load_cert_chain(certs.client_cert, certs.client_key)
    https_call(mtls_served.http_port, "Ping", b"{}", "application/json", with_cert)
    _https_refused(mtls_served.http_port, ssl.create_default_context(cafile=str(certs.ca)))


def _refused(client: RefereeClient) -> RefereeError:
    with pytest.raises(RefereeError) as caught:
        client.ping(timeout=5)
    assert caught.value.code == grpc.StatusCode.UNAVAILABLE, caught.value
    return caught.value


def health(*args: str) -> int:
    return subprocess.run([sys.executable, "-m", "server.cli", "health", *args], cwd=ROOT, capture_output=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60).returncode  # fmt: skip


def test_sdk_plays_over_tls_with_the_ca(tls_referee: int, certs: Certs) -> None:
    with RefereeClient(f"localhost:{tls_referee}", ca_file=certs.ca, retry=NO_RETRY) as referee:
        referee.ping(timeout=10)
        game = referee.create_game("gin", seats=("a", "b"))
        assert referee.get_game(game.game_id, token=game.tokens[0]).snapshot.proto.hand
    with RefereeClient(f"127.0.0.1:{tls_referee}", ca_file=certs.ca, retry=NO_RETRY) as referee:
        referee.ping(timeout=10)  # the certificate names the IP address too

    async def over_aio() -> None:
        async with AsyncRefereeClient(f"localhost:{tls_referee}", ca_file=certs.ca, retry=NO_RETRY) as referee:
            await referee.ping(timeout=10)

    asyncio.run(over_aio())


def test_clients_without_the_ca_are_refused(tls_referee: int, certs: Certs) -> None:
    address = f"localhost:{tls_referee}"
    with RefereeClient(address, tls=True, retry=NO_RETRY) as referee:  # the system's roots: the test CA is not one
        _refused(referee)
    with RefereeClient(address, ca_file=certs.other_ca, retry=NO_RETRY) as referee:
        _refused(referee)
    with RefereeClient(address, retry=NO_RETRY) as referee:  # plaintext
        _refused(referee)


def test_health_over_tls(tls_referee: int, certs: Certs) -> None:
    address = f"localhost:{tls_referee}"
    assert health("--address", address, "--ca-file", str(certs.ca)) == 0
    assert health("--address", f"127.0.0.1:{tls_referee}", "--ca-file", str(certs.ca), "--server-name",
                  "localhost") == 0  # fmt: skip
    assert health("--address", address) == 1  # plaintext
    assert health("--address", address, "--tls") == 1  # the system's roots
    assert health("--address", address, "--ca-file", str(certs.other_ca)) == 1


def test_mutual_tls_refuses_a_client_without_a_certificate(mtls_referee: int, certs: Certs) -> None:
    address = f"localhost:{mtls_referee}"
    with RefereeClient(address, ca_file=certs.ca, client_cert_file=certs.client_cert,
                       client_key_file=certs.client_key, retry=NO_RETRY) as referee:  # fmt: skip
        referee.ping(timeout=10)
        referee.create_game("gin", seats=("a", "b"))
    with RefereeClient(address, ca_file=certs.ca, retry=NO_RETRY) as referee:
        _refused(referee)
    assert health("--address", address, "--ca-file", str(certs.ca), "--client-cert", str(certs.client_cert),
                  "--client-key", str(certs.client_key)) == 0  # fmt: skip
    assert health("--address", address, "--ca-file", str(certs.ca)) == 1


def test_bad_tls_settings_stop_serve_in_one_line(redis_server: RedisProcess, certs: Certs, tmp_path: Path) -> None:
    cases = [
        (["--tls-cert", str(certs.server_cert)], "needs both --tls-cert and --tls-key"),
        (["--tls-client-ca", str(certs.ca)], "--tls-client-ca needs --tls-cert and --tls-key"),
        (["--tls-cert", str(tmp_path / "absent.pem"), "--tls-key", str(certs.server_key)], "cannot read"),
        (["--tls-cert", str(certs.server_cert), "--tls-key", str(certs.client_key)], "do not load"),
    ]
    for flags, words in cases:
        done = subprocess.run(
            [sys.executable, "-m", "server.cli", "serve", "--port", "0", "--no-http", "--redis-url", redis_server.url,
             *flags],
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 1, (flags, done.stderr)
        assert done.stderr.count("\n") == 1 and words in done.stderr, (flags, done.stderr)


def test_load_tls_names_the_file(certs: Certs, tmp_path: Path) -> None:
    files = load_tls(certs.server_cert, certs.server_key, certs.ca)
    assert files.client_ca is not None and files.ssl_context() is not None
    not_pem = tmp_path / "not.pem"
    not_pem.write_text("hello")
    with pytest.raises(TlsError, match="not PEM"):
        load_tls(not_pem, certs.server_key)


@pytest.mark.skipif(NODE is None, reason="the Node.js client's TLS test needs `node`")
def test_node_client_over_tls(tls_referee: int, mtls_referee: int, certs: Certs, node_modules: Path) -> None:
    script = """
import { connect } from "./referee.js";
const [port, mport, ca, cert, key] = process.argv.slice(1);
const results = {};
async function attempt(name, address, options) {
  const referee = connect(address, { deadlineMs: 5000, retries: 0, ...options });
  try { await referee.ping(); results[name] = "ok"; }
  catch (error) { results[name] = error.codeName ?? String(error); }
  finally { referee.close(); }
}
await attempt("ca", `localhost:${port}`, { ca });
await attempt("ca_pem", `localhost:${port}`, { ca: (await import("node:fs")).readFileSync(ca, "utf8") });
await attempt("system_roots", `localhost:${port}`, { tls: true });
await attempt("plaintext", `localhost:${port}`, {});
await attempt("mtls", `localhost:${mport}`, { ca, clientCert: cert, clientKey: key });
await attempt("mtls_no_cert", `localhost:${mport}`, { ca });
console.log(JSON.stringify(results));
"""
    assert NODE is not None
    done = subprocess.run(
        [NODE, "--input-type=module", "-e", script, str(tls_referee), str(mtls_referee), str(certs.ca),
         str(certs.client_cert), str(certs.client_key)],
        cwd=node_modules.parent, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout.strip().splitlines()[-1])
    assert results == {"ca": "ok", "ca_pem": "ok", "system_roots": "UNAVAILABLE", "plaintext": "UNAVAILABLE",
                       "mtls": "ok", "mtls_no_cert": "UNAVAILABLE"}, results  # fmt: skip


def test_typescript_client_over_https(tls_served: Served, mtls_served: Served, certs: Certs) -> None:
    """The TypeScript client (clients/ts, Node) on the HTTP ports: with the CA (a path, or the PEM text) it is
    served; with the system's roots it is refused; with mutual TLS it needs its client certificate."""
    if NODE is None or shutil.which("npm") is None:
        pytest.skip("the TypeScript client needs node and npm")
    install_node_modules()
    script = """
import { readFileSync } from "node:fs";
import { connectReferee, refusal } from "./dist/node.mjs";
const [port, mport, ca, cert, key] = process.argv.slice(1);
const results = {};
async function attempt(name, url, options) {
  try { await connectReferee(url, options).ping({}); results[name] = "ok"; }
  catch (error) { results[name] = refusal(error).code; }
}
await attempt("ca", `https://localhost:${port}`, { ca });
await attempt("ca_pem", `https://localhost:${port}`, { ca: readFileSync(ca, "utf8") });
await attempt("system_roots", `https://localhost:${port}`, {});
await attempt("mtls", `https://localhost:${mport}`, { ca, clientCert: cert, clientKey: key });
await attempt("mtls_no_cert", `https://localhost:${mport}`, { ca });
console.log(JSON.stringify(results));
"""
    assert NODE is not None
    done = subprocess.run(
        [NODE, "--input-type=module", "-e", script, str(tls_served.http_port), str(mtls_served.http_port),
         str(certs.ca), str(certs.client_cert), str(certs.client_key)],
        cwd=TS_DIR, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout.strip().splitlines()[-1])
    assert results["ca"] == results["ca_pem"] == results["mtls"] == "ok", results
    assert "ok" not in (results["system_roots"], results["mtls_no_cert"]), results


def test_a_list_of_tls_referees_is_checked_against_the_first_name(tls_referee: int, certs: Certs) -> None:
    """Several addresses over TLS: one balanced channel whose authority (the name the certificate must carry) is
    the first address's host; "localhost" resolves to the 127.0.0.1 the certificate also names."""
    with RefereeClient(f"localhost:{tls_referee},127.0.0.1:{tls_referee}", ca_file=certs.ca, retry=NO_RETRY) as c:
        for _ in range(4):
            c.ping(timeout=10)
