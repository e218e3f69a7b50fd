"""The HTTP port of ``rummy-referee serve``: Connect (JSON and binary), gRPC-Web (binary, and text translated to
it: ``grpc_web_text``) and WatchGame's server stream over HTTP/1.1, for browsers and plain curl, served by uvicorn
in the same asyncio loop as the grpc.aio server.

    /rummy.v1.RefereeService/<Method>   every RPC (server.connect_api; GET for the side-effect-free ones)
    /grpc.health.v1.Health/Check        the same health status as the gRPC port's (POST or GET)
    /  (GET /index.html, /app.js, /table.css)   the reference web table, static files of server/web/ (built from
                                        clients/ts/web by `make web`)

CORS is off unless origins are named (``--cors-origin``): then a preflight from one of them is answered (the
methods and headers Connect and gRPC-Web use), its responses carry ``Access-Control-Allow-Origin`` and expose the
headers a browser client must read; any other origin gets no CORS header (a preflight from it: 403).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import logging
import re
import socket
import ssl
import struct
from collections.abc import Awaitable, Callable, Generator, Iterable, MutableMapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import uvicorn
from grpc_health.v1._async import HealthServicer
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from server.connect_api import Admit, HealthApp, malformed_request, referee_app
from server.service import Referee
from server.settings import DEFAULTS

if TYPE_CHECKING:
    from server.metrics import Metrics

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

log = logging.getLogger("rummy_referee")

CORS_METHODS = "GET, POST"
# What Connect-Web and gRPC-Web clients send, and what they must be able to read.
CORS_ALLOW_HEADERS = (
    "authorization, content-type, connect-protocol-version, connect-timeout-ms, connect-accept-encoding, "
    "connect-content-encoding, content-encoding, accept-encoding, grpc-timeout, grpc-accept-encoding, "
    "grpc-encoding, x-grpc-web, x-user-agent"
)
CORS_EXPOSE_HEADERS = (
    "grpc-status, grpc-message, grpc-status-details-bin, grpc-encoding, grpc-accept-encoding, content-encoding, "
    "connect-content-encoding, connect-accept-encoding"
)
CORS_MAX_AGE = "7200"
_GRPC_WEB = b"application/grpc-web"
_GRPC_WEB_TEXT = b"application/grpc-web-text"
_CONNECT_STREAM = b"application/connect+"
_NATIVE_GRPC = b"native gRPC needs HTTP/2: use the gRPC port, or gRPC-Web or Connect here\n"


async def _respond(send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes = b"") -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


WEB_DIR = Path(__file__).with_name("web")
_WEB_TYPES = {".html": b"text/html; charset=utf-8", ".js": b"text/javascript; charset=utf-8",
              ".css": b"text/css; charset=utf-8", ".png": b"image/png"}  # fmt: skip


class WebTable:
    """The web table's static files (server/web/), read once at start-up: GET or HEAD of ``/`` or a file name."""

    def __init__(self, directory: Path = WEB_DIR) -> None:
        self.files: dict[str, tuple[bytes, bytes]] = {}
        if directory.is_dir():
            for f in sorted(directory.iterdir()):
                if f.suffix in _WEB_TYPES and f.is_file():
                    self.files["/" + f.name] = (_WEB_TYPES[f.suffix], f.read_bytes())
        if "/index.html" in self.files:
            self.files["/"] = self.files["/index.html"]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> bool:
        """Answer a request for one of the files (True), or leave it to the caller (False)."""
        found = self.files.get(scope["path"])
        if found is None or scope["method"] not in ("GET", "HEAD"):
            return False
        kind, body = found
        headers = [(b"content-type", kind), (b"content-length", str(len(body)).encode()),
                   (b"cache-control", b"no-cache"), (b"x-content-type-options", b"nosniff")]  # fmt: skip
        await _respond(send, 200, headers, body if scope["method"] == "GET" else b"")
        return True


class Router:
    """Dispatches by path to the Connect applications; anything else is 404. Native gRPC (``application/grpc``
    without ``-web``) needs HTTP/2 trailers, which this HTTP/1.1 port does not have: 415, pointing to the gRPC
    port."""

    def __init__(self, apps: Iterable[Any]) -> None:
        self.apps: dict[str, ASGIApp] = {app.path + "/": app for app in apps}
        self.web = WebTable()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # no lifespan events are sent (uvicorn runs with lifespan off)
            return
        path: str = scope["path"]
        service, _, _ = path[1:].partition("/")
        app = self.apps.get(f"/{service}/")
        if app is None:
            if await self.web(scope, receive, send):
                return
            await _respond(send, 404, [(b"content-type", b"text/plain")], b"not found\n")
            return
        headers: list[tuple[bytes, bytes]] = scope["headers"]
        for _, value in headers:
            if not value.isascii():  # connectrpc reads header bytes as UTF-8 only (a 500 for 0xff)
                scope = {**scope, "headers": _as_text(headers)}
                break
        for key, value in scope["headers"]:
            if key == b"content-type" and value.startswith(b"application/grpc"):
                if not value.startswith(_GRPC_WEB):
                    await _respond(send, 415, [(b"content-type", b"text/plain")], _NATIVE_GRPC)
                    return
                if value.startswith(_GRPC_WEB_TEXT):
                    await grpc_web_text(app, scope, receive, send)
                    return
            elif key == b"content-type" and value.startswith(_CONNECT_STREAM):
                await connect_stream(app, scope, receive, send, value.partition(b";")[0].strip())
                return
        if scope["method"] == "GET":
            await app(scope, receive, _uncached(send))
            return
        await app(scope, receive, send)


def _as_text(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """Header values that connectrpc, which decodes them as UTF-8, can read: one that is no UTF-8 (0xff in a token,
    a timeout) re-encoded from latin-1 (HTTP's obs-text), so that it gets the answer a bad value of its header gets
    (BAD_TOKEN, MALFORMED_REQUEST, 415), not a UnicodeDecodeError and a 500. A value in UTF-8 stays as it is: the
    gRPC port reads metadata the same way (grpc: UTF-8, else latin-1), so a token means the same on both."""
    return [(k, v if v.isascii() else _latin_1_unless_utf_8(v)) for k, v in headers]


def _latin_1_unless_utf_8(value: bytes) -> bytes:
    try:
        value.decode()
        return value
    except UnicodeDecodeError:
        return value.decode("latin-1").encode()


#: A Connect GET answer is one URL for every caller (the token is a header) and holds the caller's view, its
#: hand: no cache may keep it, nor hand it to another token (RULES.md section 4).
_UNCACHED = ((b"cache-control", b"private, no-store"), (b"vary", b"Authorization"))


def _uncached(send: Send) -> Send:
    async def send_uncached(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), *_UNCACHED]}
        await send(message)

    return send_uncached


def connect_stream(app: ASGIApp, scope: Scope, receive: Receive, send: Send, content_type: bytes) -> Awaitable[None]:
    """A Connect stream (``application/connect+json|proto``: WatchGame) that connectrpc refuses for its headers
    before it starts one (a ``connect-timeout-ms`` that is no timeout, ``connect-protocol-version`` 2) is answered
    as the protocol says every stream is: HTTP 200, the error in the EndStreamResponse (connectrpc answered a unary
    error, HTTP 400, which a Connect streaming client reads as ``internal``). Bodiless refusals (404, 405, 415) and
    every started stream pass as they are."""
    held: list[Message] = []

    async def send_as_stream(message: Message) -> None:
        if message["type"] == "http.response.start" and message["status"] != 200 and any(
                k == b"content-type" and v == b"application/json" for k, v in message.get("headers", ())):  # fmt: skip
            held.append(message)
            return
        if not held:
            await send(message)
            return
        held.append(message)
        if message.get("more_body", False):
            return
        error = b"".join(m.get("body", b"") for m in held[1:])
        end = b'{"error": ' + error + b"}"
        headers = [(k, v) for k, v in held[0].get("headers", ()) if k not in (b"content-type", b"content-length")]
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", content_type), *headers]})  # fmt: skip
        await send({"type": "http.response.body", "body": struct.pack(">BI", 0x02, len(end)) + end})

    return app(scope, receive, send_as_stream)


def grpc_web_text(app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
    """gRPC-Web's text mode (``application/grpc-web-text[+proto]``, the grpc-web JavaScript client's default) as
    its binary mode: the request's base64 is decoded as it arrives (a client may send padded pieces, one after
    another), the call is made as ``application/grpc-web[+proto]``, and each write of the answer (a message, the
    trailers frame) goes out as base64 of its own, padding and all, so that a stream's message is readable as soon
    as it is sent. Text that is no base64 is INVALID_ARGUMENT MALFORMED_REQUEST."""
    headers = [(k, _GRPC_WEB + v[len(_GRPC_WEB_TEXT):] if k == b"content-type" else v)
               for k, v in scope["headers"] if k != b"content-length"]  # fmt: skip
    decoder = _Base64Pieces()

    async def receive_decoded() -> Message:
        message = await receive()
        if message["type"] == "http.request":
            body = decoder.feed(message.get("body", b""), final=not message.get("more_body", False))
            message = {**message, "body": body}
        return message

    async def send_encoded(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [
                (k, _GRPC_WEB_TEXT + v[len(_GRPC_WEB):] if k == b"content-type" and v.startswith(_GRPC_WEB) else v)
                for k, v in message.get("headers", ()) if k != b"content-length"]}  # fmt: skip
        elif message["type"] == "http.response.body" and message.get("body"):
            message = {**message, "body": base64.b64encode(message["body"])}
        await send(message)

    return app({**scope, "headers": headers}, receive_decoded, send_encoded)


class _Base64Pieces:
    """Decodes base64 that arrives in chunks of any size and may be several padded pieces one after the other."""

    def __init__(self) -> None:
        self.pending = b""

    def feed(self, data: bytes, *, final: bool) -> bytes:
        text = self.pending + data.translate(None, b" \t\r\n")
        cut = len(text) if final else len(text) - len(text) % 4
        chunk, self.pending = text[:cut], text[cut:]
        if final and len(chunk) % 4:
            chunk += b"=" * (-len(chunk) % 4)  # an unpadded end
        try:
            return b"".join(base64.b64decode(piece, validate=True) for piece in _PIECES.findall(chunk) if piece)
        except binascii.Error:
            raise malformed_request("the grpc-web-text body is not base64") from None


_PIECES = re.compile(rb"[^=]*=*")


class Cors:
    """CORS for the named origins only (none: every request passes untouched)."""

    def __init__(self, app: ASGIApp, origins: Iterable[str]) -> None:
        self.app = app
        self.origins = frozenset(o.rstrip("/") for o in origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        origin = None
        preflight = False
        if scope["type"] == "http":
            for key, value in scope["headers"]:
                if key == b"origin":
                    origin = value.decode("latin-1")
                elif key == b"access-control-request-method":
                    preflight = True
        if origin is None:
            await self.app(scope, receive, send)
            return
        allowed = origin in self.origins
        if preflight and scope["method"] == "OPTIONS":
            if not allowed:
                await _respond(send, 403, [(b"vary", b"Origin")])
                return
            await _respond(send, 204, [
                (b"access-control-allow-origin", origin.encode("latin-1")),
                (b"access-control-allow-methods", CORS_METHODS.encode()),
                (b"access-control-allow-headers", CORS_ALLOW_HEADERS.encode()),
                (b"access-control-max-age", CORS_MAX_AGE.encode()),
                (b"vary", b"Origin"),
            ])  # fmt: skip
            return
        if not allowed:
            await self.app(scope, receive, send)
            return
        extra = [
            (b"access-control-allow-origin", origin.encode("latin-1")),
            (b"access-control-expose-headers", CORS_EXPOSE_HEADERS.encode()),
            (b"vary", b"Origin"),
        ]

        async def send_with_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_cors)


def create_http_app(
    referee: Referee,
    health: HealthServicer,
    *,
    cors_origins: Iterable[str] = (),
    admit: Admit | None = None,
    metrics: Metrics | None = None,
) -> ASGIApp:
    """The ASGI application of the HTTP port. ``admit`` is the admission check every RPC passes first (per-peer
    limits: see server.connect_api.Admit); ``metrics``: every RPC counted and timed there, as on the gRPC port."""
    app: ASGIApp = Router([referee_app(referee, admit=admit, metrics=metrics), HealthApp(health)])
    origins = tuple(cors_origins)
    return Cors(app, origins) if origins else app


#: The most a request's line and headers may take (counted by the reads that carry them, so with whatever body
#: comes in the same reads: asyncio reads at most 256 KiB at once, and a body is at most 256 KiB).
MAX_HEAD_BYTES = 1 << 20
_HEAD_TOO_LARGE = (b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain\r\n"
                   b"connection: close\r\ncontent-length: 33\r\n\r\nrequest line and headers too big\n")  # fmt: skip


#: The most pipelined requests (sent before the answers to the earlier ones) a connection may have waiting; past
#: it the referee reads no more of it until they are answered (what it sent meanwhile waits in the kernel's buffers).
MAX_PIPELINED = 32
#: What is handed to the HTTP parser at once: every request it completes is queued, so a read of 256 KiB of tiny
#: pipelined requests would queue thousands before the cap above is looked at.
_FEED_BYTES = 4096


class _Flow(FlowControl):
    """uvicorn's flow control, except that reading stays paused while the connection has requests enough queued
    (``_ReadDeadline.held``): uvicorn resumes reading whenever a request's body is asked for or an answer ends."""

    def __init__(self, transport: asyncio.Transport, protocol: _ReadDeadline) -> None:
        super().__init__(transport)
        self.protocol = protocol

    def resume_reading(self) -> None:
        if not self.protocol.held:
            super().resume_reading()


class _ReadDeadline(HttpToolsProtocol):
    """uvicorn's HTTP/1.1 protocol, with a deadline for each request to arrive whole: ``read_timeout_s`` from
    the connection's start, or from the end of its last response, until the request's last body byte. uvicorn
    has none (its keep-alive timer starts only after a response and stops at any byte received), so a client
    that never finishes its headers or its body (slowloris), or sends nothing, held its connection, a file
    descriptor of the process that also serves gRPC and talks to Redis, for as long as it liked. A request
    being answered is never cut (a WatchGame stream lasts as long as its game). And a request's head (line and
    headers) has at most MAX_HEAD_BYTES: httptools buffers headers of any size (200 MiB of them grew the process by
    as much), so a larger one is answered 431 and its connection closed.

    A client that pipelines (sends requests before reading the answers) has at most MAX_PIPELINED of them queued
    (uvicorn queued every one it read), and its answers ``read_timeout_s`` to drain: once the unread ones fill the
    connection's buffers (asyncio's high-water mark), the connection is cut if they do not drain by then. uvicorn
    kept reading, queuing and answering a client that never read (3 GB in 30 s), and never cut it."""

    read_timeout_s: float = DEFAULTS.network.http_read_timeout_s
    _read_deadline: asyncio.TimerHandle | None = None
    _write_deadline: asyncio.TimerHandle | None = None
    _head_bytes = 0  # bytes read since the request began, while its headers are not complete (-1: complete)
    held: bytearray  # bytes read but not yet parsed: the connection has MAX_PIPELINED requests queued

    def data_received(self, data: bytes) -> None:
        if not self.held and len(data) <= _FEED_BYTES and len(self.pipeline) < MAX_PIPELINED:
            self._parse(data)  # the common case: one small request
            return
        self.held += data
        self._feed()

    def _feed(self) -> None:
        """Parse what was read, a piece at a time, until MAX_PIPELINED requests are queued (then reading stops)."""
        held = self.held
        while held and len(self.pipeline) < MAX_PIPELINED and not self.transport.is_closing():
            data = bytes(held[:_FEED_BYTES])
            del held[:_FEED_BYTES]
            self._parse(data)
        if self.transport.is_closing():
            held.clear()
        elif held:
            self.flow.pause_reading()

    def _parse(self, data: bytes) -> None:
        if self._head_bytes >= 0:
            self._head_bytes += len(data)
            if self._head_bytes > MAX_HEAD_BYTES:
                self._refuse_head()
                return
        super().data_received(data)

    def _refuse_head(self) -> None:
        """431 and close: the request's line and headers go beyond MAX_HEAD_BYTES (httptools takes any size)."""
        self._disarm()
        if not self.transport.is_closing():
            self.transport.write(_HEAD_TOO_LARGE)
            self.transport.close()

    def on_headers_complete(self) -> None:
        self._head_bytes = -1
        super().on_headers_complete()

    def _arm(self) -> None:
        self._disarm()
        if self.read_timeout_s > 0:  # 0: none
            self._read_deadline = self.loop.call_later(self.read_timeout_s, self._read_expired)

    def _disarm(self) -> None:
        if self._read_deadline is not None:
            self._read_deadline.cancel()
            self._read_deadline = None

    def _read_expired(self) -> None:
        self._read_deadline = None
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete and not cycle.more_body:
            return  # a whole request is being answered (a pipelined one too): armed again after its response
        if not self.transport.is_closing():
            self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.held = bytearray()
        self.flow = _Flow(transport, self)
        self._arm()

    def on_message_complete(self) -> None:
        self._disarm()
        self._head_bytes = 0  # what comes next is the next request's head
        super().on_message_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()
            if self.held:  # one queued request fewer: parse on, and read again once all that was read is parsed
                self._feed()
                if not self.held:
                    self.flow.resume_reading()

    def pause_writing(self) -> None:
        """The answers not yet taken by the client are over asyncio's high-water mark: they have
        ``read_timeout_s`` to drain."""
        super().pause_writing()
        if self._write_deadline is None and self.read_timeout_s > 0:
            self._write_deadline = self.loop.call_later(self.read_timeout_s, self._write_expired)

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._write_deadline is not None:
            self._write_deadline.cancel()
            self._write_deadline = None

    def _write_expired(self) -> None:
        self._write_deadline = None
        self.held.clear()
        self.transport.abort()  # (close would wait for the buffer to drain)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.held.clear()
        if self._write_deadline is not None:
            self._write_deadline.cancel()
            self._write_deadline = None
        super().connection_lost(exc)


def _protocol(read_timeout_s: float) -> type[HttpToolsProtocol]:
    return type("ReadDeadline", (_ReadDeadline,), {"read_timeout_s": read_timeout_s})


class _Uvicorn(uvicorn.Server):
    """uvicorn inside someone else's loop: the signals are the referee's (server.cli), not uvicorn's."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class HttpServer:
    """uvicorn serving ``app`` on a socket bound at construction (port 0: a free one), in the running loop; over
    TLS with ``ssl_context`` (server.tls: the gRPC port's certificate, key and client CA), else plaintext.
    ``read_timeout_s``: the time a request has to arrive whole (else its connection is closed: _ReadDeadline).
    ``trusted_proxies``: the addresses (or networks) whose X-Forwarded-For is believed (none: it is ignored)."""

    def __init__(
        self, app: ASGIApp, host: str, port: int, *, grace: float = 10.0, ssl_context: ssl.SSLContext | None = None,
        read_timeout_s: float = DEFAULTS.network.http_read_timeout_s, trusted_proxies: Sequence[str] = (),
    ) -> None:
        self.socket = _bind(host, port)
        self.host = host
        self.port: int = self.socket.getsockname()[1]
        config = uvicorn.Config(
            app,
            http=_protocol(read_timeout_s),
            lifespan="off",
            access_log=False,
            log_config=None,
            log_level=logging.WARNING,
            server_header=False,
            # the per-address limits (server.limits) count the connection's address: no X-Forwarded-For rewrites
            # it (uvicorn trusts that header from 127.0.0.1 by default, so a local client dodged every limit),
            # unless it comes from a proxy the operator named
            proxy_headers=bool(trusted_proxies),
            forwarded_allow_ips=list(trusted_proxies) or None,
            timeout_graceful_shutdown=max(1, round(grace)),
            timeout_keep_alive=30,
        )
        if ssl_context is not None:  # uvicorn builds its context from file names only: ours, loaded once, in its place
            config.load()
            config.ssl = ssl_context
        self.tls = ssl_context is not None
        self._server = _Uvicorn(config)
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Serve from now on (returns once uvicorn listens)."""
        logging.getLogger("uvicorn.error").setLevel(logging.WARNING)
        self._task = asyncio.create_task(self._server.serve(sockets=[self.socket]), name="http")
        while not self._server.started:
            if self._task.done():
                self._task.result()  # uvicorn's start-up failure, raised here
                raise OSError(f"the HTTP server on {self.host}:{self.port} did not start")
            await asyncio.sleep(0.005)

    async def stop(self) -> None:
        """Stop accepting, let requests in flight finish within the grace period, close every connection."""
        if self._task is None:
            return
        self._server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and without it Nagle's
    # algorithm holds a response's body until the client ACKs its headers (40 ms of delayed ACK per call)
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is no obstacle, as for gRPC
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # inherited by the accepted sockets
        sock.bind((host, port))
        sock.listen(1024)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock
