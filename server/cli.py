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

from server.bot_host import BotHost, HostSettings
from server.bot_seats import BotSeats
from server.durability import MODES, DurabilityError, check_durability
from server.grpc_api import SERVICE_NAME, create_server, set_serving, shutdown, watch_storage
from server.limits import Limits
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
_LIMITS = Limits()  # the defaults


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


def _count(text: str) -> int:
    """A count for a command-line option: an integer, 0 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"cannot be negative: {value}")
    return value


def _rate(text: str) -> float:
    """A rate for a command-line option: a number, 0 (off) or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"a rate is 0 (off) or more: {text}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rummy-referee", description="Gin Rummy and Rummy referee (gRPC)")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the gRPC server")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0 in containers)")
    serve.add_argument("--port", type=int, default=50051, help="port (0: any free port, printed at start)")
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
    serve.add_argument(
        "--unplayed-ttl",
        type=_seconds,
        default=3600,
        help="seconds a new game is kept if no move comes; the first move gives it --idle-ttl "
        "(default: 1 hour; 0: for ever; the organizer's games get --idle-ttl from the start)",
    )
    serve.add_argument(
        "--max-open-games",
        type=_count,
        default=100_000,
        help="most unfinished games in Redis, counted across the referees sharing it (default: 100000; 0: no cap)",
    )
    serve.add_argument(
        "--games-per-minute",
        type=_rate,
        default=_LIMITS.games_per_minute,
        help="new games per minute per client address, and per token, in this process (default: 60; 0: off; "
        "the organizer token is exempt)",
    )
    serve.add_argument(
        "--requests-per-second",
        type=_rate,
        default=_LIMITS.requests_per_s,
        help="calls per second per client address, every RPC, in this process (default: 2000; 0: off)",
    )
    serve.add_argument(
        "--request-burst",
        type=_count,
        default=_LIMITS.request_burst,
        help="calls a client address may make at once above that rate (default: 4000)",
    )
    serve.add_argument("--grace", type=float, default=10.0, help="seconds to drain calls on shutdown")
    serve.add_argument(
        "--durability",
        choices=MODES,
        default="warn",
        help="warn: log what Redis keeps across a crash, a WARNING if nothing (default); strict: refuse to start "
        "unless Redis has appendonly yes and appendfsync always (the private Redis is then started so)",
    )
    serve.add_argument(
        "--no-bots",
        action="store_true",
        help="run no bot host here (house-bot seats are then played by a `rummy-referee bots` process, or wait)",
    )
    _bot_host_arguments(serve)
    bots = commands.add_parser(
        "bots", help="run only a bot host: play the house-bot seats registered in Redis against a referee"
    )
    bots.add_argument("--referee", default="127.0.0.1:50051", help="host:port of the referee to play through")
    bots.add_argument("--redis-url", default=os.environ.get("REDIS_URL"), required=not os.environ.get("REDIS_URL"),
                      help="the referees' Redis, where the bot seats are registered (default: $REDIS_URL)")
    bots.add_argument("--redis-cluster", action="store_true", help="the URL is a Redis Cluster node")
    _bot_host_arguments(bots)
    health = commands.add_parser("health", help="exit 0 if a referee answers SERVING (container health checks)")
    health.add_argument("--address", default="127.0.0.1:50051", help="host:port of the referee")
    return parser  # fmt: skip


def _bot_host_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = HostSettings()
    parser.add_argument(
        "--bot-seats", type=_count, default=defaults.max_seats,
        help=f"house-bot seats this bot host plays at once, at most (default: {defaults.max_seats})",
    )
    parser.add_argument(
        "--bot-lease", type=float, default=defaults.lease_s,
        help=f"seconds a bot host's claim on a seat lasts unless renewed: how long a dead host's seats wait for "
        f"another host (default: {defaults.lease_s:g})",
    )
    parser.add_argument(
        "--bot-poll", type=float, default=defaults.poll_s,
        help=f"seconds between two looks at the registry of bot seats (default: {defaults.poll_s:g})",
    )  # fmt: skip


def _host_settings(args: argparse.Namespace) -> HostSettings:
    try:
        return HostSettings(max_seats=max(1, args.bot_seats), lease_s=args.bot_lease, poll_s=args.bot_poll)
    except ValueError as exc:
        raise StartupError(str(exc)) from None


def _loopback(host: str, port: int) -> str:
    """The address at which this process reaches its own gRPC port."""
    if host in ("", "0.0.0.0"):
        return f"127.0.0.1:{port}"
    if host in ("::", "[::]"):
        return f"[::1]:{port}"
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


async def run_bot_host(args: argparse.Namespace) -> None:
    """`rummy-referee bots`: a bot host alone, until SIGTERM or SIGINT."""
    settings = _host_settings(args)
    client = connect(args.redis_url, cluster=args.redis_cluster)
    host = BotHost(BotSeats(client), args.referee, settings)
    task = asyncio.create_task(host.run())
    print(f"rummy-referee bot host {host.holder} playing through {args.referee}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await _first_done(stop, task)
    await host.close()
    await task
    await client.aclose()


async def _first_done(stop: asyncio.Event, task: asyncio.Task[None]) -> None:
    waiter = asyncio.create_task(stop.wait())
    await asyncio.wait([waiter, task], return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()


async def serve(args: argparse.Namespace) -> None:
    """Run until SIGTERM or SIGINT."""
    _check_port_free(args.host, args.port)  # before anything starts: nothing to undo
    lock, redis = _start_private_redis(args) if not args.redis_url else (None, None)
    url = redis.url if redis is not None else args.redis_url
    try:
        store = GameStore(
            connect(url, cluster=args.redis_cluster), finished_ttl_s=args.finished_ttl, idle_ttl_s=args.idle_ttl,
            unplayed_ttl_s=args.unplayed_ttl,
        )  # fmt: skip
        await check_durability(store.client, args.durability)
        referee = Referee(store, organizer_token=args.organizer_token or None, max_open_games=args.max_open_games)
        health = HealthServicer()
        limits = Limits(
            requests_per_s=args.requests_per_second,
            request_burst=max(1, args.request_burst),
            games_per_minute=args.games_per_minute,
        )
        server, port = _create_server(args, referee, health, limits)
        if lock is not None:
            lock.record(port=port)  # for a second referee on this data directory, told who has it
        await set_serving(health, False)  # known from the start; SERVING once Redis answers (watch_storage)
        host = None if args.no_bots else BotHost(referee.bot_seats, _loopback(args.host, port), _host_settings(args))
        await server.start()
        _tune_gc()
        monitor = asyncio.create_task(watch_storage(referee, health))
        host_task = None
        if host is not None:
            referee.on_bot_seats = host.wake
            host_task = asyncio.create_task(host.run())
        print(f"rummy-referee listening on {args.host}:{port}", flush=True)
        print(f"stop it with Ctrl-C, or SIGTERM (kill {os.getpid()}): calls in flight get {args.grace:g}s", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        log.info("shutting down (grace %.1fs)", args.grace)
        if host is not None and host_task is not None:  # first: its seats' leases are given up for other hosts
            await host.close()
            await host_task
        monitor.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await monitor
        await shutdown(server, referee, health, args.grace)
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


def _create_server(
    args: argparse.Namespace, referee: Referee, health: HealthServicer, limits: Limits
) -> tuple[grpc.aio.Server, int]:
    try:
        return create_server(f"{args.host}:{args.port}", referee, health_servicer=health, limits=limits)
    except (RuntimeError, OSError) as exc:  # the port was taken between the check and now
        raise StartupError(f"cannot listen on {args.host}:{args.port}: {_first_line(exc)}") from None


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
        asyncio.run(serve(args) if args.command == "serve" else run_bot_host(args))
    except (RedisLaunchError, DurabilityError, StartupError) as exc:
        print(f"rummy-referee: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
