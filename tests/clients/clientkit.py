"""Test kit of the client tests: real referees to talk to (in a thread, or as a subprocess to kill and restart)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from tests import kit

ROOT = Path(__file__).resolve().parents[2]
ORGANIZER = kit.ORGANIZER
TEST_LIMIT_FLAGS = kit.TEST_LIMIT_FLAGS  # far above the tests' rates (still on)


class ServerThread(kit.ServerThread):
    """The referee on 127.0.0.1:<port 0>, its event loop in a daemon thread (tests/kit.py: the production wiring),
    firing the deadlines of time controls as `serve` does."""

    def __init__(self, redis_url: str) -> None:
        super().__init__(kit.referee_settings(redis_url, organizer_token=ORGANIZER, firer=True))

    def stop(self, timeout: float = 15.0) -> None:
        super().stop(timeout)


free_port = kit.free_port


class ServerProcess(kit.ServerProcess):
    """``python -m server.cli serve`` on a fixed port over a given Redis (tests/kit.py, clients.referee_proc);
    kill() is SIGKILL (a crash). With ``http``, its HTTP port (Connect, gRPC-Web) is on a fixed port too
    (``http_port``); else ``--no-http``."""

    def __init__(self, redis_url: str, port: int | None = None, log_dir: Path | None = None,
                 args: Sequence[str] = (), *, http: bool = False, extra_args: Sequence[str] = ()) -> None:  # fmt: skip
        """``args`` (or ``extra_args``): more options of ``serve``; ``http``: serve the HTTP port too (else
        ``--no-http``)."""
        super().__init__(redis_url, ORGANIZER, port, log_dir, tuple(args) + tuple(extra_args), http=http)

    def start(self, timeout: float = 30.0) -> ServerProcess:
        """Start (again, on the same port) and wait until it listens."""
        super().start(timeout)
        return self


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0, interval: float = 0.01) -> bool:
    """Poll ``predicate`` until true or ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


# --------------------------------------------------------------------------------------------- a TCP proxy

_DATA, _HEADERS = 0, 1
_END_STREAM = 0x1
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def read_exact(sock: socket.socket, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _read_frame(sock: socket.socket) -> tuple[int, int, int, bytes, bytes] | None:
    """One HTTP/2 frame: (type, flags, stream id, raw frame, payload), None at the end of the connection."""
    header = read_exact(sock, 9)
    if header is None:
        return None
    length = int.from_bytes(header[:3], "big")
    payload = read_exact(sock, length) if length else b""
    if payload is None:
        return None
    stream_id = int.from_bytes(header[5:9], "big") & 0x7FFFFFFF
    return header[3], header[4], stream_id, header + payload, payload


class H2Proxy:
    """A TCP proxy in front of a gRPC server that reads the HTTP/2 frames going through it, so that a test can
    break a connection at a chosen moment:

    - ``drop_next_reply()``: the next response message of the server is withheld (recorded in ``withheld``)
      and the connection is cut: the server did the work, the client never hears of it;
    - ``drop_next_request()``: the connection is cut as the client opens its next call: the server never sees it;
    - ``cut_all()``: every open connection is cut now (e.g. under a watch stream);
    - ``stall``: while set, the server's answers to calls are swallowed (the connection itself stays healthy);
    - ``greeting_delay_s``: each new connection gets the server's first bytes (its SETTINGS frame) this late, as
      from a referee on a loaded machine or far away.
    """

    def __init__(self, upstream: str) -> None:
        host, _, port = upstream.rpartition(":")
        self.upstream = (host, int(port))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.withheld: list[bytes] = []
        self.cuts = 0
        self._drop_reply = threading.Event()
        self._drop_request = threading.Event()
        self.stall = threading.Event()
        self.greeting_delay_s = 0.0
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True, name="h2proxy").start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def drop_next_reply(self) -> None:
        self._drop_reply.set()

    def drop_next_request(self) -> None:
        self._drop_request.set()

    def cut_all(self) -> None:
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            self._cut(pair)

    def close(self) -> None:
        self._closed = True
        self.listener.close()
        self.cut_all()

    def _cut(self, pair: tuple[socket.socket, socket.socket]) -> None:
        with self._lock:
            self.cuts += 1
        for sock in pair:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                downstream, _ = self.listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.upstream)
            except OSError:
                downstream.close()
                continue
            pair = (downstream, upstream)
            with self._lock:
                self._pairs.append(pair)
            threading.Thread(target=self._requests, args=(pair,), daemon=True).start()
            threading.Thread(target=self._replies, args=(pair,), daemon=True).start()

    def _requests(self, pair: tuple[socket.socket, socket.socket]) -> None:
        downstream, upstream = pair
        try:
            preface = read_exact(downstream, len(PREFACE))
            if preface is None:
                return
            upstream.sendall(preface)
            while (frame := _read_frame(downstream)) is not None:
                kind, _, stream_id, raw, _ = frame
                if kind == _HEADERS and stream_id and self._drop_request.is_set():
                    self._drop_request.clear()
                    self._cut(pair)
                    return
                upstream.sendall(raw)
        except OSError:
            pass
        finally:
            self._cut(pair)

    def _replies(self, pair: tuple[socket.socket, socket.socket]) -> None:
        downstream, upstream = pair
        dropping: int | None = None  # the stream whose reply is being withheld
        message = b""
        try:
            if self.greeting_delay_s:
                time.sleep(self.greeting_delay_s)
            while (frame := _read_frame(upstream)) is not None:
                kind, flags, stream_id, raw, payload = frame
                if dropping is None and kind == _DATA and stream_id and payload and self._drop_reply.is_set():
                    self._drop_reply.clear()
                    dropping = stream_id
                if dropping is not None and stream_id == dropping:
                    if kind == _DATA:
                        message += payload
                    if flags & _END_STREAM:
                        self.withheld.append(message)
                        return
                    continue
                if stream_id and self.stall.is_set():
                    continue
                downstream.sendall(raw)
        except OSError:
            pass
        finally:
            self._cut(pair)
