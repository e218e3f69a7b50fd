"""`rummy-referee serve`: run the referee.

Without a Redis URL (``--redis-url`` or REDIS_URL) it starts its own redis-server with an append-only file in
the data directory (``--data-dir``, default $XDG_DATA_HOME/rummy-referee or ./data), listening only on a Unix
socket no other user can reach, and stops it on exit; one referee per data directory (a lock file there).
At start-up it reads Redis's persistence settings (``--durability``). SIGTERM / SIGINT: health goes NOT_SERVING,
watch streams end (clients resume elsewhere), calls in flight get ``--grace`` seconds to finish.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import gc
import logging
import os
import signal
import socket
import sys
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer  # grpc_health.v1.health.aio.HealthServicer

from server.durability import MODES, DurabilityError, check_durability
from server.grpc_api import SERVICE_NAME, create_server, set_serving, shutdown, watch_storage
from server.http_server import HttpServer, create_http_app
from server.redis_launcher import (
    DataDirLock,
    RedisLaunchError,
    RedisProcess,
    default_data_dir,
    lock_data_dir,
    start_redis,
)
from server.service import Referee
from server.store import MAX_TTL_S, GameStore, connect

log = logging.getLogger("rummy_referee")

DAY = 24 * 3600


class StartupError(RuntimeError):
    """The referee cannot start (e.g. its gRPC port is taken): said in one line, nothing left running."""


def _seconds(text: str) -> int:
    """A number of seconds for a command-line option: an integer, 0 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of seconds: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"seconds cannot be negative: {value}")
    if value > MAX_TTL_S:  # Redis refuses absurd expiry times, and only after the script's writes
        raise argparse.ArgumentTypeError(f"at most {MAX_TTL_S} seconds (10 years), not {value}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rummy-referee", description="Gin Rummy and Rummy referee (gRPC)")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the referee (gRPC, and Connect / gRPC-Web / JSON over HTTP)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0 in containers)")
    serve.add_argument("--port", type=int, default=50051, help="port (0: any free port, printed at start)")
    serve.add_argument(
        "--http-port",
        type=int,
        default=8080,
        help="HTTP/1.1 port for Connect (JSON, binary), gRPC-Web and plain curl (0: any free port, printed at start)",
    )
    serve.add_argument("--no-http", action="store_true", help="serve gRPC only, no HTTP port")
    serve.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="let browser pages from ORIGIN (e.g. http://localhost:5173) call the HTTP port; repeatable "
        "(default: none, CORS off)",
    )
    serve.add_argument(
        "--redis-url",
        default=os.environ.get("REDIS_URL"),
        help="external Redis (default: $REDIS_URL; none: start a private redis-server)",
    )
    serve.add_argument(
        "--redis-cluster",
        action="store_true",
        help="the URL is a Redis Cluster node (a redis-cluster:// URL implies it)",
    )
    serve.add_argument(
        "--organizer-token",
        default=os.environ.get("RUMMY_ORGANIZER_TOKEN"),
        help="token for preset deals, seeds and replays (default: $RUMMY_ORGANIZER_TOKEN)",
    )
    serve.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="data directory of the private redis-server (default: $XDG_DATA_HOME/rummy-referee or ./data)",
    )
    serve.add_argument(
        "--finished-ttl",
        type=_seconds,
        default=7 * DAY,
        help="seconds a finished game is kept (default: 7 days; 0: for ever)",
    )
    serve.add_argument(
        "--idle-ttl",
        type=_seconds,
        default=30 * DAY,
        help="seconds an unfinished game is kept after its last move (default: 30 days; 0: for ever)",
    )
    serve.add_argument("--grace", type=float, default=10.0, help="seconds to drain calls on shutdown")
    serve.add_argument(
        "--durability",
        choices=MODES,
        default="warn",
        help="warn: log what Redis keeps across a crash, a WARNING if nothing (default); strict: refuse to start "
        "unless Redis has appendonly yes and appendfsync always (the private Redis is then started so)",
    )
    health = commands.add_parser("health", help="exit 0 if a referee answers SERVING (container health checks)")
    health.add_argument("--address", default="127.0.0.1:50051", help="host:port of the referee")
    return parser  # fmt: skip


async def serve(args: argparse.Namespace) -> None:
    """Run until SIGTERM or SIGINT."""
    _check_port_free(args.host, args.port)  # before anything starts: nothing to undo
    if not args.no_http:
        _check_port_free(args.host, args.http_port)
    lock, redis = _start_private_redis(args) if not args.redis_url else (None, None)
    url = redis.url if redis is not None else args.redis_url
    try:
        store = GameStore(
            connect(url, cluster=args.redis_cluster), finished_ttl_s=args.finished_ttl, idle_ttl_s=args.idle_ttl
        )
        await check_durability(store.client, args.durability)
        referee = Referee(store, organizer_token=args.organizer_token or None)
        health = HealthServicer()
        server, port = _create_server(args, referee, health)
        http = None if args.no_http else _create_http_server(args, referee, health)
        if lock is not None:
            lock.record(port=port)  # for a second referee on this data directory, told who has it
        await set_serving(health, False)  # known from the start; SERVING once Redis answers (watch_storage)
        await server.start()
        if http is not None:
            await http.start()
        _tune_gc()
        monitor = asyncio.create_task(watch_storage(referee, health))
        print(f"rummy-referee listening on {args.host}:{port}", flush=True)
        if http is not None:
            print(f"rummy-referee http on {args.host}:{http.port}", flush=True)
        print(f"stop it with Ctrl-C, or SIGTERM (kill {os.getpid()}): calls in flight get {args.grace:g}s", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        log.info("shutting down (grace %.1fs)", args.grace)
        monitor.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await monitor
        await shutdown(server, referee, health, args.grace, also=[http.stop] if http is not None else [])
    finally:
        if redis is not None:
            redis.stop()
        if lock is not None:
            lock.release()  # only once its Redis is gone: a next referee never shares the append-only file


def _start_private_redis(args: argparse.Namespace) -> tuple[DataDirLock, RedisProcess]:
    """The data directory's lock (one referee per data directory), then its redis-server, reachable by this user
    only (with ``appendfsync always`` under ``--durability strict``)."""
    lock = lock_data_dir(args.data_dir or default_data_dir())
    try:
        fsync = "always" if args.durability == "strict" else "everysec"
        redis = start_redis(lock.path.parent, unix_socket=True, appendfsync=fsync)
    except BaseException:
        lock.release()
        raise
    lock.record(redis_pid=redis.pid, socket_dir=str(redis.socket_dir or ""))
    log.info("started redis-server pid %d at %s, data in %s", redis.pid, redis.public_url, redis.data_dir)
    return lock, redis


def _create_server(args: argparse.Namespace, referee: Referee, health: HealthServicer) -> tuple[grpc.aio.Server, int]:
    try:
        return create_server(f"{args.host}:{args.port}", referee, health_servicer=health)
    except (RuntimeError, OSError) as exc:  # the port was taken between the check and now
        raise StartupError(f"cannot listen on {args.host}:{args.port}: {_first_line(exc)}") from None


def _create_http_server(args: argparse.Namespace, referee: Referee, health: HealthServicer) -> HttpServer:
    app = create_http_app(referee, health, cors_origins=args.cors_origin)
    try:
        return HttpServer(app, args.host, args.http_port, grace=args.grace)
    except OSError as exc:  # the port was taken between the check and now
        raise StartupError(f"cannot listen on {args.host}:{args.http_port} (HTTP): {exc.strerror or exc}") from None


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0].split(";")[0]


def _check_port_free(host: str, port: int) -> None:
    """Raise StartupError if ``host:port`` cannot be bound now (port 0 always can)."""
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as exc:
        raise StartupError(f"cannot listen on {host}:{port}: {exc}") from None
    for family, kind, proto, _, address in infos:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC binds: TIME_WAIT is no obstacle
            try:
                probe.bind(address)
            except OSError as exc:  # other errors (e.g. no IPv6 here) are gRPC's to judge: it may bind the rest
                if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                    raise StartupError(f"cannot listen on {host}:{port}: {exc.strerror}") from None


def _tune_gc() -> None:
    """The cyclic garbage collector, tuned for a server that allocates a few hundred short-lived objects per move
    (most freed by reference counting): what exists once the server is up (modules, protobuf descriptors, the
    engine's tables) is frozen out of every collection, and the young generation is collected every 10,000
    allocations instead of 700. Measured in bench/service.py: the collector's time per move 7 -> 3 us."""
    gc.collect()  # what startup left as garbage goes now: frozen, it never would
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)


def check_health(address: str, timeout: float = 3.0) -> bool:
    """Whether the referee at ``address`` reports SERVING through the gRPC health service."""
    with grpc.insecure_channel(address) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=timeout
            )
        except grpc.RpcError:
            return False
    return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `rummy-referee` command."""
    args = _parser().parse_args(argv)
    if args.command == "health":
        return 0 if check_health(args.address) else 1
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        asyncio.run(serve(args))
    except (RedisLaunchError, DurabilityError, StartupError) as exc:
        print(f"rummy-referee: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
