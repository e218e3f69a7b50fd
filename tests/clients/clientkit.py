"""Test kit of the client tests: real referees to talk to (in a thread, or as a subprocess to kill and restart)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from clients.sdk import RefereeClient

ROOT = Path(__file__).resolve().parents[2]
ORGANIZER = "organizer-token-of-the-client-tests"
# The client tests create many games from 127.0.0.1, quickly: limits far above theirs (still on).
TEST_LIMIT_FLAGS = ("--games-per-minute", "1000000", "--requests-per-second", "1000000", "--request-burst", "1000000")


class ServerThread:
    """The referee on 127.0.0.1:<port 0>, its event loop in a daemon thread."""

    def __init__(self, redis_url: str) -> None:
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, args=(redis_url,), daemon=True, name="referee")
        self._thread.start()
        if not self._ready.wait(30) or self._error is not None:
            raise RuntimeError("the referee did not start") from self._error

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _main(self, redis_url: str) -> None:
        try:
            asyncio.run(self._serve(redis_url))
        except BaseException as exc:
            self._error = exc
            self._ready.set()

    async def _serve(self, redis_url: str) -> None:
        from grpc_health.v1._async import HealthServicer

        from server.clocks import TimeoutFirer
        from server.grpc_api import create_server, set_serving, shutdown
        from server.limits import Limits
        from server.service import Referee
        from server.store import GameStore, connect

        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        store = GameStore(connect(redis_url), finished_ttl_s=3600, op_timeout_s=5.0)  # as refkit's: a loaded machine
        referee = Referee(store, organizer_token=ORGANIZER)
        health = HealthServicer()
        limits = Limits(requests_per_s=1e6, request_burst=1_000_000, games_per_minute=1e6)  # = TEST_LIMIT_FLAGS
        server, self.port = create_server("127.0.0.1:0", referee, health_servicer=health, limits=limits)
        await server.start()
        await set_serving(health, True)
        firer = TimeoutFirer(referee)  # fires the deadlines of time controls, as `serve` does
        firing = asyncio.create_task(firer.run())
        self._ready.set()
        await self._stop.wait()
        await firer.close()
        await firing
        await shutdown(server, referee, health, grace=1.0)

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(15)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class ServerProcess:
    """``python -m server.cli serve`` on a fixed port over a given Redis; kill() is SIGKILL (a crash). With
    ``http``, its HTTP port (Connect, gRPC-Web) is on a fixed port too (``http_port``); else ``--no-http``."""

    def __init__(self, redis_url: str, port: int | None = None, log_dir: Path | None = None,
                 args: Sequence[str] = (), *, http: bool = False, extra_args: Sequence[str] = ()) -> None:  # fmt: skip
        """``args`` (or ``extra_args``): more options of ``serve``; ``http``: serve the HTTP port too (else
        ``--no-http``)."""
        self.redis_url = redis_url
        self.args = tuple(args) + tuple(extra_args)
        self.port = port or free_port()
        self.http_port = free_port() if http else None
        self.log = (log_dir or Path("/tmp")) / f"referee-{self.port}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> None:
        """Start (again, on the same port) and wait until it answers Ping."""
        assert self.process is None or self.process.poll() is not None, "already running"
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "server.cli", "serve", "--redis-url", self.redis_url,
                 "--port", str(self.port), "--organizer-token", ORGANIZER, "--grace", "1", *TEST_LIMIT_FLAGS,
                 *(["--http-port", str(self.http_port)] if self.http_port else ["--no-http"]), *self.args],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )  # fmt: skip
        self.starts += 1
        deadline = time.monotonic() + timeout
        with RefereeClient(self.address, timeout=1.0) as probe:
            while True:
                if self.process.poll() is not None:
                    raise RuntimeError(f"the referee exited with {self.process.returncode}: {self.log_tail()}")
                try:
                    probe.ping(timeout=0.5)
                    return
                except Exception:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL: the referee dies with calls and streams in flight."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        """SIGTERM, SIGKILL if it does not exit."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


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
_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def _read_exact(sock: socket.socket, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _read_frame(sock: socket.socket) -> tuple[int, int, int, bytes, bytes] | None:
    """One HTTP/2 frame: (type, flags, stream id, raw frame, payload), None at the end of the connection."""
    header = _read_exact(sock, 9)
    if header is None:
        return None
    length = int.from_bytes(header[:3], "big")
    payload = _read_exact(sock, length) if length else b""
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
    - ``stall``: while set, the server's answers to calls are swallowed (the connection itself stays healthy).
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
            preface = _read_exact(downstream, len(_PREFACE))
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
