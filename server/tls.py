"""TLS for the referee's ports, for deployments without a terminating proxy.

``load_tls(cert, key, client_ca)`` reads and checks the PEM files once (a missing or unreadable file, or one
that is no PEM, is a ``TlsError`` with one line saying which); the ``TlsFiles`` it returns gives the gRPC
server credentials (``server_credentials()``) and, for an HTTP port, a standard ``ssl.SSLContext``
(``ssl_context()``). With a client CA the server asks every client for a certificate signed by it and refuses a
client without one (mutual TLS).
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

import grpc


class TlsError(ValueError):
    """A TLS file is missing, unreadable or not PEM."""


@dataclass(frozen=True)
class TlsFiles:
    """A server's certificate chain and private key (PEM), and the CA its clients' certificates must be signed by
    (mutual TLS; None: clients need none)."""

    cert_path: Path
    key_path: Path
    client_ca_path: Path | None
    cert: bytes
    key: bytes
    client_ca: bytes | None

    def server_credentials(self) -> grpc.ServerCredentials:
        """Credentials for ``grpc.aio.Server.add_secure_port``."""
        return grpc.ssl_server_credentials(
            [(self.key, self.cert)],
            root_certificates=self.client_ca,
            require_client_auth=self.client_ca is not None,
        )

    def ssl_context(self) -> ssl.SSLContext:
        """A server-side ``ssl.SSLContext`` with the same certificate, key and client CA (for an HTTP port)."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.cert_path, self.key_path)
        if self.client_ca_path is not None:
            context.load_verify_locations(cafile=self.client_ca_path)
            context.verify_mode = ssl.CERT_REQUIRED
        return context


def _read_pem(path: Path, what: str, marker: bytes) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TlsError(f"cannot read the {what} {path}: {exc.strerror or exc}") from None
    if b"-----BEGIN " not in data or marker not in data:
        raise TlsError(f"the {what} {path} is not PEM ({marker.decode()} expected)")
    return data


def load_tls(cert: str | Path, key: str | Path, client_ca: str | Path | None = None) -> TlsFiles:
    """The PEM files of a TLS server, read and checked (``TlsError`` naming the file otherwise)."""
    cert_path, key_path = Path(cert), Path(key)
    ca_path = Path(client_ca) if client_ca else None
    files = TlsFiles(
        cert_path=cert_path,
        key_path=key_path,
        client_ca_path=ca_path,
        cert=_read_pem(cert_path, "TLS certificate", b"CERTIFICATE"),
        key=_read_pem(key_path, "TLS key", b"PRIVATE KEY"),
        client_ca=_read_pem(ca_path, "client CA", b"CERTIFICATE") if ca_path is not None else None,
    )
    try:  # a key that does not belong to the certificate, or a damaged file, said now and not at the first call
        files.ssl_context()
    except ssl.SSLError as exc:
        raise TlsError(f"the TLS certificate {cert_path} and key {key_path} do not load: {exc.reason or exc}") from None
    return files


def channel_credentials(
    ca_file: str | Path | None = None, cert_file: str | Path | None = None, key_file: str | Path | None = None
) -> grpc.ChannelCredentials:
    """Client credentials: the server verified against ``ca_file`` (default: the system's roots), and a client
    certificate when the server asks for one (mutual TLS: ``cert_file`` and ``key_file``)."""
    if (cert_file is None) != (key_file is None):
        raise TlsError("a client certificate needs its key, and a key its certificate")
    return grpc.ssl_channel_credentials(
        root_certificates=Path(ca_file).read_bytes() if ca_file else None,
        private_key=Path(key_file).read_bytes() if key_file else None,
        certificate_chain=Path(cert_file).read_bytes() if cert_file else None,
    )
