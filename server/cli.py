"""`rummy-referee serve`: run the referee.

Without a Redis URL (``--redis-url`` or REDIS_URL) it starts its own redis-server with an append-only file in
the data directory (``--data-dir``, default $XDG_DATA_HOME/rummy-referee or ./data), listening only on the Unix
socket ``redis.sock`` there (mode 0700: this user only), and stops it on exit.
SIGTERM / SIGINT: health goes NOT_SERVING, watch streams end (clients resume elsewhere), calls in flight get
``--grace`` seconds to finish.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging
import os
import signal
import sys
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer  # grpc_health.v1.health.aio.HealthServicer

from server.grpc_api import SERVICE_NAME, create_server, set_serving, shutdown, watch_storage
from server.redis_launcher import RedisLaunchError, RedisProcess, default_data_dir, start_redis
from server.service import Referee
from server.store import MAX_TTL_S, GameStore, connect

log = logging.getLogger("rummy_referee")

DAY = 24 * 3600


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
        "--idem-ttl",
        type=_seconds,
        default=DAY,
        help="seconds a game's idempotency records (request_ids) are kept after its last move with one (default: "
        "1 day; 0: as long as the game); a resend after that is taken as a new move",
    )
    serve.add_argument("--grace", type=float, default=10.0, help="seconds to drain calls on shutdown")
    health = commands.add_parser("health", help="exit 0 if a referee answers SERVING (container health checks)")
    health.add_argument("--address", default="127.0.0.1:50051", help="host:port of the referee")
    return parser  # fmt: skip


async def serve(args: argparse.Namespace) -> None:
    """Run until SIGTERM or SIGINT."""
    redis: RedisProcess | None = None
    url = args.redis_url
    if not url:
        data_dir = args.data_dir or default_data_dir()
        redis = start_redis(data_dir, unix_socket=True)  # reachable by this user only
        url = redis.url
        log.info("started redis-server pid %d at %s, data in %s", redis.pid, url, redis.data_dir)
    try:
        store = GameStore(
            connect(url, cluster=args.redis_cluster),
            finished_ttl_s=args.finished_ttl,
            idle_ttl_s=args.idle_ttl,
            idem_ttl_s=args.idem_ttl,
        )
        referee = Referee(store, organizer_token=args.organizer_token or None)
        health = HealthServicer()
        server, port = create_server(f"{args.host}:{args.port}", referee, health_servicer=health)
        await set_serving(health, False)  # known from the start; SERVING once Redis answers (watch_storage)
        await server.start()
        _tune_gc()
        monitor = asyncio.create_task(watch_storage(referee, health))
        print(f"rummy-referee listening on {args.host}:{port}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        log.info("shutting down (grace %.1fs)", args.grace)
        monitor.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await monitor
        await shutdown(server, referee, health, args.grace)
    finally:
        if redis is not None:
            redis.stop()


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
    except RedisLaunchError as exc:
        print(f"rummy-referee: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
