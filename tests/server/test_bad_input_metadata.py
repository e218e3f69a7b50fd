"""Call metadata that is not UTF-8, through the real server over real sockets and a real Redis.

gRPC's C core refuses to *send* a non "-bin" metadata value with bytes outside printable ASCII, but any other
HTTP/2 client can send one, and grpc.aio's server then decodes it itself (cygrpc ``_decode``): it logs the whole
traceback with the raw bytes (a token, perhaps) at ERROR and reads the value as Latin-1. These tests let a real
gRPC client send a placeholder and a proxy on the wire put the bytes in its place (same length: the HPACK framing
stays valid; gRPC's encoder writes non-binary values as they are, without Huffman coding).
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Iterator

import grpc
import pytest

from rummy_pb.rummy.v1 import referee_pb2 as rpb
from rummy_pb.rummy.v1 import referee_pb2_grpc
from server.wire import MetadataEncodingFilter
from tests.clients.clientkit import PREFACE, read_exact
from tests.server.refkit import GIN_KNOCK_DEAL, ORGANIZER, Client, Game, ServerThread, expect_error, move_from_text

C = grpc.StatusCode
PLACEHOLDER = b"not-utf8-QQQQ-end"
NOT_UTF8 = b"not-utf8-\xff\xfe\xc3\x28-end"  # 0xff, 0xfe: never UTF-8; C3 28: a bad continuation byte
assert len(PLACEHOLDER) == len(NOT_UTF8)
_HEADERS, _CONTINUATION = 1, 9



class RewritingProxy:
    """A TCP proxy in front of the referee that replaces PLACEHOLDER by NOT_UTF8 in the header blocks the client
    sends (HEADERS and CONTINUATION frames); everything else goes through as it is."""

    def __init__(self, upstream: str) -> None:
        host, _, port = upstream.rpartition(":")
        self.upstream = (host, int(port))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.listener.getsockname()[1]}"
        self.rewritten = 0
        self._socks: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True, name="rewriting-proxy").start()

    def close(self) -> None:
        self.listener.close()
        for sock in self._socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self) -> None:
        while True:
            try:
                down, _ = self.listener.accept()
                up = socket.create_connection(self.upstream)
            except OSError:
                return
            self._socks += [down, up]
            threading.Thread(target=self._requests, args=(down, up), daemon=True).start()
            threading.Thread(target=self._replies, args=(up, down), daemon=True).start()

    def _requests(self, down: socket.socket, up: socket.socket) -> None:
        with contextlib.suppress(OSError):
            preface = read_exact(down, len(PREFACE))
            if preface is None:
                return
            up.sendall(preface)
            while (header := read_exact(down, 9)) is not None:
                length = int.from_bytes(header[:3], "big")
                payload = read_exact(down, length) if length else b""
                if payload is None:
                    return
                if header[3] in (_HEADERS, _CONTINUATION) and PLACEHOLDER in payload:
                    payload = payload.replace(PLACEHOLDER, NOT_UTF8)
                    self.rewritten += 1
                up.sendall(header + payload)

    def _replies(self, up: socket.socket, down: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := up.recv(65536):
                down.sendall(data)


@pytest.fixture
def proxy(referee_server: ServerThread) -> Iterator[RewritingProxy]:
    p = RewritingProxy(referee_server.address)
    try:
        yield p
    finally:
        p.close()


@pytest.fixture
def stub(proxy: RewritingProxy) -> Iterator[referee_pb2_grpc.RefereeServiceStub]:
    channel = grpc.insecure_channel(proxy.address)
    try:
        yield referee_pb2_grpc.RefereeServiceStub(channel)
    finally:
        channel.close()


def _logged(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "rummy_referee" or r.name.startswith("grpc")]


def test_a_token_that_is_not_utf8_is_bad_token_and_one_short_log_line(
    stub: referee_pb2_grpc.RefereeServiceStub, proxy: RewritingProxy, client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    game: Game = client.create("gin", token=ORGANIZER, preset_deals=[GIN_KNOCK_DEAL])
    auth = (("authorization", "Bearer " + PLACEHOLDER.decode()),)
    draw = rpb.SubmitMoveRequest(game_id=game.game_id, move=move_from_text("draw stock"))
    for _ in range(15):
        with expect_error(C.UNAUTHENTICATED, "BAD_TOKEN"):
            stub.SubmitMove(draw, metadata=auth, timeout=10)
        with expect_error(C.UNAUTHENTICATED, "BAD_TOKEN"):
            stub.GetGame(rpb.GetGameRequest(game_id=game.game_id), metadata=auth, timeout=10)
        stub.Ping(rpb.PingRequest(), metadata=auth, timeout=10)  # no token needed: a malformed one is none
    assert proxy.rewritten >= 45  # the bytes did reach the server
    assert client.view(game, game.tokens[1]).version == 0
    lines = _logged(caplog)
    assert len(lines) <= 2, [r.getMessage()[:200] for r in lines]  # one per 10 s (a second if the test straddles)
    assert all(r.exc_info is None and len(r.getMessage()) < 200 for r in lines), [r.getMessage()[:200] for r in lines]
    assert not any("not-utf8" in r.getMessage() or "\\xff" in r.getMessage() for r in lines)  # never the value


def test_another_key_that_is_not_utf8_does_not_stop_the_call(
    stub: referee_pb2_grpc.RefereeServiceStub, proxy: RewritingProxy, client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    game: Game = client.create("gin", token=ORGANIZER, preset_deals=[GIN_KNOCK_DEAL])
    metadata = (("authorization", f"Bearer {game.tokens[1]}"), ("x-client-note", PLACEHOLDER.decode()))
    for _ in range(10):
        view = stub.GetGame(rpb.GetGameRequest(game_id=game.game_id), metadata=metadata, timeout=10).view
        assert view.version == 0
    moved = stub.SubmitMove(rpb.SubmitMoveRequest(game_id=game.game_id, move=move_from_text("draw stock")),
                            metadata=metadata, timeout=10)  # fmt: skip
    assert moved.version == 1 and proxy.rewritten >= 11
    lines = _logged(caplog)
    assert len(lines) <= 2, [r.getMessage()[:200] for r in lines]
    assert all(r.exc_info is None and len(r.getMessage()) < 200 for r in lines)


def test_the_metadata_log_says_how_many_it_left_out(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    note = MetadataEncodingFilter(every_s=3600.0)
    grpc_log = logging.getLogger("test.cygrpc")
    grpc_log.addFilter(note)
    try:
        for _ in range(5):
            grpc_log.error("Invalid encoding on %s", b"Bearer \xff secret")
        note._next = 0.0  # the period is over
        grpc_log.error("Invalid encoding on %s", b"Bearer \xff secret")
        grpc_log.error("something else")  # other records go through
    finally:
        grpc_log.removeFilter(note)
    messages = [r.getMessage() for r in caplog.records]
    assert note.seen == 6 and len(messages) == 3, messages
    assert "not UTF-8" in messages[0] and "4 more" in messages[1] and messages[2] == "something else"
    assert not any("secret" in m for m in messages)
