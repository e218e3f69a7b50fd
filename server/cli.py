"""`rummy-referee serve`: run the referee (and `rummy-referee verify`: check a game's deals, clients/verify.py).

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
import resource
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from server.app import StartupError, build_referee, host_settings_of, open_store
from server.bot_host import BotHost, HostSettings
from server.bot_seats import BotSeats
from server.durability import MODES, DurabilityError, check_durability
from server.grpc_api import (
    SERVICE_NAME,
    set_serving,
)
from server.logs import FORMATS, configure
from server.metrics import Metrics, start_metrics_server, watch_open_games
from server.redis_launcher import (
    DataDirLock,
    RedisLaunchError,
    RedisProcess,
    data_dir_in_use,
    default_data_dir,
    lock_data_dir,
    start_redis,
)
from server.settings import (
    DEFAULTS,
    BotSettings,
    CacheSettings,
    GameSettings,
    LimitSettings,
    NetworkSettings,
    RetentionSettings,
    Settings,
    StorageSettings,
)
from server.store import MAX_TTL_S, GameStore, connect
from server.tls import TlsError, TlsFiles, channel_credentials, load_tls

log = logging.getLogger("rummy_referee")

DAY = 24 * 3600
_D = DEFAULTS  # every default of `serve` (server.settings)


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


def _timeout(text: str) -> float:
    """A timeout for a command-line option: seconds, more than 0 and at most an hour."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"a timeout is more than 0 and at most 3600 seconds, not {value}")
    return value


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


def _count(text: str) -> int:
    """A count for a command-line option: an integer, 0 or more."""
    value = _whole(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"cannot be negative: {value}")
    return value


def _port(text: str) -> int:
    """A TCP port for a command-line option: 0..65535 (gRPC would take 70000 as 70000 - 65536)."""
    value = _whole(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0..65535, not {value}")
    return value


def _positive(text: str) -> int:
    """A positive whole number for a command-line option."""
    value = _whole(text)
    if not 1 <= value <= 10_000_000:
        raise argparse.ArgumentTypeError(f"1..10000000, not {value}")
    return value


def _age(text: str) -> float:
    """A connection age for a command-line option: seconds, 0 (off) or more, at most a day."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 <= value <= DAY:
        raise argparse.ArgumentTypeError(f"0 (off) to {DAY} seconds, not {text}")
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


def _mib(text: str) -> float:
    """A size in MiB for a command-line option: more than 0, at most 64 GiB."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of MiB: {text!r}") from None
    if not 0 < value <= 65536:
        raise argparse.ArgumentTypeError(f"more than 0 and at most 65536 MiB, not {value}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rummy-referee", description="Gin Rummy and Rummy referee (gRPC)")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the referee (gRPC, and Connect / gRPC-Web / JSON over HTTP)")
    serve.add_argument("--host", default=_D.network.host, help="address to listen on (0.0.0.0 in containers)")
    serve.add_argument("--port", type=_port, default=_D.network.port, help="port (0: any free port, printed at start)")
    serve.add_argument(
        "--http-port",
        type=int,
        default=_D.network.http_port,
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
        default=_D.retention.finished_ttl_s,
        help="seconds a finished game is kept (default: 7 days; 0: for ever)",
    )
    serve.add_argument(
        "--idle-ttl",
        type=_seconds,
        default=_D.retention.idle_ttl_s,
        help="seconds an unfinished game is kept after its last move (default: 30 days; 0: for ever)",
    )
    serve.add_argument(
        "--unplayed-ttl",
        type=_seconds,
        default=_D.retention.unplayed_ttl_s,
        help="seconds a new game is kept if no move comes; the first move gives it --idle-ttl "
        "(default: 1 hour; 0: for ever; the organizer's games get --idle-ttl from the start)",
    )
    serve.add_argument(
        "--max-open-games",
        type=_count,
        default=_D.limits.max_open_games,
        help="most unfinished games in Redis, counted across the referees sharing it (default: 100000; 0: no cap)",
    )
    serve.add_argument(
        "--games-per-minute",
        type=_rate,
        default=_D.limits.games_per_minute,
        help="new games per minute per client address, and per token, in this process (default: 60; 0: off; "
        "the organizer token is exempt)",
    )
    serve.add_argument(
        "--requests-per-second",
        type=_rate,
        default=_D.limits.requests_per_s,
        help="calls per second per client address, every RPC, in this process (default: 2000; 0: off)",
    )
    serve.add_argument(
        "--request-burst",
        type=_count,
        default=_D.limits.request_burst,
        help="calls a client address may make at once above that rate (default: 4000)",
    )
    serve.add_argument(
        "--watches-per-address",
        type=_count,
        default=_D.limits.watches_per_peer,
        help=f"streams (WatchGame, health Watch, reflection) a client address may have open at once, in this "
        f"process (default: {_D.limits.watches_per_peer}; 0: no cap)",
    )
    serve.add_argument(
        "--storage-timeout",
        type=_timeout,
        default=_D.storage.timeout_s,
        help=f"seconds a storage operation may wait for Redis before the call fails UNAVAILABLE (default: "
             f"{_D.storage.timeout_s:g}; less when the caller's deadline is sooner)",
    )
    serve.add_argument(
        "--wait-replicas",
        type=_count,
        default=_D.storage.wait_replicas,
        help=(
            "answer a move (or a creation) as done only once this many replicas of the game's Redis node have "
            "it (Redis WAIT; default: 0, do not wait); if they do not acknowledge it in time the call fails "
            "UNAVAILABLE COMMIT_OUTCOME_UNKNOWN (resend it with its request_id)"
        ),
    )
    serve.add_argument(
        "--wait-replicas-timeout",
        type=_timeout,
        default=_D.storage.wait_timeout_s,
        help=f"seconds a move waits for the replicas of --wait-replicas (default: {_D.storage.wait_timeout_s:g})",
    )
    serve.add_argument(
        "--timeout-poll",
        type=_timeout,
        default=_D.games.timeout_poll_s,
        help="seconds between two looks at the index of due deadlines (time controls; default: 0.1, plus up to "
             "25%% jitter)",
    )
    serve.add_argument(
        "--state-cache-games",
        type=_positive,
        default=_D.caches.state_games,
        help=f"games whose parsed state is kept in memory (default: {_D.caches.state_games})",
    )
    serve.add_argument(
        "--state-cache-mib",
        type=_mib,
        default=_D.caches.state_mib,
        help=f"MiB the parsed states may take, estimated (default: {_D.caches.state_mib:g})",
    )
    serve.add_argument(
        "--memo-entries",
        type=_positive,
        default=_D.caches.memo_entries,
        help=f"entries of each in-memory memo table (meta, tokens, moves, ...; default: {_D.caches.memo_entries})",
    )
    serve.add_argument(
        "--memo-mib",
        type=_mib,
        default=_D.caches.memo_mib,
        help=f"MiB of each memo table, estimated (default: {_D.caches.memo_mib:g})",
    )
    serve.add_argument(
        "--idem-ttl",
        type=_seconds,
        default=_D.retention.idem_ttl_s,
        help="seconds a game's idempotency records (request_ids) are kept after its last move with one (default: "
        "1 day; 0: as long as the game); a resend after that is taken as a new move",
    )
    serve.add_argument("--grace", type=float, default=_D.network.grace_s, help="seconds to drain calls on shutdown")
    serve.add_argument(
        "--http-read-timeout",
        type=_age,
        default=_D.network.http_read_timeout_s,
        help=f"seconds an HTTP request has to arrive whole, from its connection's start or its last answer, else "
        f"the connection is closed (slow or silent clients; default: {_D.network.http_read_timeout_s:g}; 0: none)",
    )
    serve.add_argument(
        "--trusted-proxy",
        action="append",
        default=[],
        metavar="ADDRESS",
        help="a reverse proxy in front of the HTTP port (an IP address or a network, e.g. 127.0.0.1 or 10.0.0.0/8; "
        "repeatable): its X-Forwarded-For names the client, whom the per-address limits then count (default: "
        "none; the header is ignored, every call counts as the connection's address)",
    )
    serve.add_argument(
        "--max-connection-age",
        type=_age,
        default=_D.network.max_connection_age_s,
        help=f"seconds a client's gRPC connection lives before the referee asks it to reconnect (GOAWAY, +-10%% "
        f"jitter), so long-lived bots spread over referees added since (default: "
        f"{_D.network.max_connection_age_s:g}; 0: never)",
    )
    serve.add_argument(
        "--max-connection-age-grace",
        type=_age,
        default=_D.network.max_connection_age_grace_s,
        help=f"seconds the calls in flight on such a connection get to finish (default: "
        f"{_D.network.max_connection_age_grace_s:g}; a watch stream cut then is resumed by the SDK)",
    )
    serve.add_argument(
        "--durability",
        choices=MODES,
        default=_D.storage.durability,
        help="warn: log what Redis keeps across a crash, a WARNING if nothing (default); strict: refuse to start "
        "unless Redis has appendonly yes and appendfsync always (the private Redis is then started so)",
    )
    serve.add_argument(
        "--metrics-port",
        type=_port,
        default=None,
        help="serve Prometheus metrics at http://HOST:PORT/metrics (on --host; 0: a free port, printed at start; "
        "default: off)",
    )
    serve.add_argument("--log-format", choices=FORMATS, default="text",
                       help="text (default) or json: one JSON object per line, with the call's method, game_id and "
                       "request_id")  # fmt: skip
    serve.add_argument("--tls-cert", type=Path, default=None, help="serve gRPC and the HTTP port over TLS with "
                       "this certificate chain (PEM; needs --tls-key)")  # fmt: skip
    serve.add_argument("--tls-key", type=Path, default=None, help="the private key of --tls-cert (PEM)")
    serve.add_argument("--tls-client-ca", type=Path, default=None, help="mutual TLS, on both ports: refuse "
                       "clients without a certificate signed by this CA (PEM)")  # fmt: skip
    serve.add_argument(
        "--no-bots",
        action="store_true",
        help="run no bot host here (house-bot seats are then played by a `rummy-referee bots` process, or wait)",
    )
    _bot_host_arguments(serve)
    bots = commands.add_parser(
        "bots", help="run only a bot host: play the house-bot seats registered in Redis against a referee"
    )
    bots.add_argument("--referee", default="127.0.0.1:50051", help="host:port of the referee to play through (or "
                      "host:port,host:port: several, balanced)")  # fmt: skip
    bots.add_argument("--redis-url", default=os.environ.get("REDIS_URL"), required=not os.environ.get("REDIS_URL"),
                      help="the referees' Redis, where the bot seats are registered (default: $REDIS_URL)")
    bots.add_argument("--redis-cluster", action="store_true", help="the URL is a Redis Cluster node")
    _bot_host_arguments(bots)
    health = commands.add_parser("health", help="exit 0 if a referee answers SERVING (container health checks)")
    health.add_argument("--address", default="127.0.0.1:50051", help="host:port of the referee")
    health.add_argument("--service", default=SERVICE_NAME,
                        help=f"the health service name to check (default: {SERVICE_NAME}; "
                             f"{SERVICE_NAME}/storage: every Redis shard serves)")  # fmt: skip
    health.add_argument("--tls", action="store_true", help="connect over TLS (the system's roots unless --ca-file)")
    health.add_argument("--ca-file", type=Path, default=None, help="verify the referee with this CA (PEM; implies "
                        "--tls)")  # fmt: skip
    health.add_argument("--client-cert", type=Path, default=None, help="mutual TLS: this client certificate (PEM)")
    health.add_argument("--client-key", type=Path, default=None, help="mutual TLS: its private key (PEM)")
    health.add_argument("--server-name", default=None, help="the name to verify the referee's certificate against "
                        "(default: the host of --address)")  # fmt: skip
    migrate = commands.add_parser(
        "migrate", help="convert the games stored by an earlier version of the referee to today's layout (the "
        "referee refuses them, STORED_BY_EARLIER_VERSION, and never writes them)",
    )  # fmt: skip
    migrate.add_argument("--redis-url", default=os.environ.get("REDIS_URL"), required=not os.environ.get("REDIS_URL"),
                         help="the referees' Redis (default: $REDIS_URL)")  # fmt: skip
    migrate.add_argument("--redis-cluster", action="store_true", help="the URL is a Redis Cluster node")
    migrate.add_argument("game_ids", nargs="*", metavar="GAME_ID", help="the games to convert (default: every game)")
    verify = commands.add_parser(
        "verify", help="check a finished game's deals against the seed commitment (docs/fairness.md)"
    )
    from clients.verify import add_arguments  # the checker is a client of the public API, not the server's

    add_arguments(verify)
    return parser  # fmt: skip


def _tls_files(args: argparse.Namespace) -> TlsFiles | None:
    """The TLS files of ``serve`` (None: plaintext), or StartupError in one line."""
    if args.tls_cert is None and args.tls_key is None:
        if args.tls_client_ca is not None:
            raise StartupError("--tls-client-ca needs --tls-cert and --tls-key")
        return None
    if args.tls_cert is None or args.tls_key is None:
        raise StartupError("TLS needs both --tls-cert and --tls-key")
    try:
        return load_tls(args.tls_cert, args.tls_key, args.tls_client_ca)
    except TlsError as exc:
        raise StartupError(str(exc)) from None


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
        return host_settings_of(Settings(bots=BotSettings(max_seats=args.bot_seats, lease_s=args.bot_lease,
                                                          poll_s=args.bot_poll)))  # fmt: skip
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


def settings_from_args(args: argparse.Namespace, redis_url: str | None = None) -> Settings:
    """The settings of ``serve``'s flags (``redis_url``: the private redis-server's, when it started one)."""
    return Settings(
        storage=StorageSettings(
            redis_url=redis_url or args.redis_url, cluster=args.redis_cluster, data_dir=args.data_dir,
            durability=args.durability, timeout_s=args.storage_timeout, wait_replicas=args.wait_replicas,
            wait_timeout_s=args.wait_replicas_timeout,
        ),
        retention=RetentionSettings(finished_ttl_s=args.finished_ttl, idle_ttl_s=args.idle_ttl,
                                    unplayed_ttl_s=args.unplayed_ttl, idem_ttl_s=args.idem_ttl),
        caches=CacheSettings(state_games=args.state_cache_games, state_mib=args.state_cache_mib,
                             memo_entries=args.memo_entries, memo_mib=args.memo_mib),
        network=NetworkSettings(
            host=args.host, port=args.port, http_port=None if args.no_http else args.http_port,
            cors_origins=tuple(args.cors_origin), max_connection_age_s=args.max_connection_age,
            max_connection_age_grace_s=args.max_connection_age_grace, grace_s=args.grace,
            http_read_timeout_s=args.http_read_timeout, trusted_proxies=tuple(args.trusted_proxy),
            metrics_port=args.metrics_port, log_format=args.log_format, tls_cert=args.tls_cert,
            tls_key=args.tls_key, tls_client_ca=args.tls_client_ca,
        ),
        limits=LimitSettings(requests_per_s=args.requests_per_second, request_burst=max(1, args.request_burst),
                             watches_per_peer=args.watches_per_address,
                             games_per_minute=args.games_per_minute, max_open_games=args.max_open_games),
        games=GameSettings(organizer_token=args.organizer_token or None, timeout_poll_s=args.timeout_poll),
        bots=BotSettings(enabled=not args.no_bots, max_seats=args.bot_seats, lease_s=args.bot_lease,
                         poll_s=args.bot_poll),
    )  # fmt: skip


async def serve(args: argparse.Namespace) -> None:
    """Run until SIGTERM or SIGINT."""
    _raise_open_files_limit()
    try:
        _check_port_free(args.host, args.port)  # before anything starts: nothing to undo
        if not args.no_http:
            _check_port_free(args.host, args.http_port)
    except StartupError:
        # a second `make run`: its ports are the first's, and the data directory too; say who has them
        in_use = None if args.redis_url else data_dir_in_use(args.data_dir or default_data_dir())
        if in_use is not None:
            raise in_use from None
        raise
    tls = _tls_files(args)
    lock, redis = _start_private_redis(args) if not args.redis_url else (None, None)
    settings = settings_from_args(args, redis.url if redis is not None else None)
    net = settings.network
    try:
        store = open_store(settings)
        await check_durability(store.client, settings.storage.durability)
        metrics = Metrics() if net.metrics_port is not None else None
        app = build_referee(settings, store=store, tls=tls, metrics=metrics)
        referee, health, port, http = app.referee, app.health, app.port, app.http
        if lock is not None:
            lock.record(port=port)  # for a second referee on this data directory, told who has it
        await set_serving(health, False)  # known from the start; SERVING once Redis answers (watch_storage)
        host = None if not settings.bots.enabled else BotHost(referee.bot_seats, _loopback(net.host, port),
                                                              _host_settings(args))  # fmt: skip
        if host is not None and tls is not None:  # the bot host's client speaks plaintext gRPC only, for now
            log.warning("house bots are not played by a referee serving TLS: run `rummy-referee bots` against a "
                        "plaintext referee sharing this Redis")  # fmt: skip
            host = None
        await app.start()
        _tune_gc()
        monitor = app.watch_storage()
        app.start_firer()
        host_task = None
        if host is not None:
            referee.on_bot_seats = host.wake
            if metrics is not None:
                metrics.watch_bot_host(host)
            host_task = asyncio.create_task(host.run())
        metrics_http = _start_metrics(metrics, net.host, args.metrics_port) if metrics is not None else None
        counting = asyncio.create_task(watch_open_games(referee, metrics)) if metrics is not None else None
        # the signals are handled before the first line says the referee listens (a SIGTERM right after it, as a
        # supervisor or a test may send, once killed the process unhandled: exit -15, no graceful stop)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        print(f"rummy-referee listening on {net.host}:{port}{' (TLS)' if tls is not None else ''}", flush=True)
        if http is not None:
            print(f"rummy-referee http on {net.host}:{http.port}{' (TLS)' if http.tls else ''}", flush=True)
        if metrics_http is not None:
            print(f"rummy-referee metrics on {net.host}:{metrics_http.server_port}", flush=True)
        print(f"stop it with Ctrl-C, or SIGTERM (kill {os.getpid()}): calls in flight get {net.grace_s:g}s",
              flush=True)  # fmt: skip
        await stop.wait()
        log.info("shutting down (grace %.1fs)", net.grace_s)
        if host is not None and host_task is not None:  # first: its seats' leases are given up for other hosts
            await host.close()
            await host_task
        await app.stop_firer()
        monitor.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await monitor
        if counting is not None:
            counting.cancel()
        if metrics_http is not None:
            metrics_http.shutdown()
        await app.stop()
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


def _start_metrics(metrics: Metrics, host: str, port: int) -> Any:
    try:
        return start_metrics_server(metrics, host, port)[0]
    except OSError as exc:
        raise StartupError(f"cannot serve metrics on {host}:{port}: {exc.strerror or exc}") from None


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


def _raise_open_files_limit() -> None:
    """The soft limit on open files raised to the hard one (at most 2^20): every client connection and every Redis
    connection holds a descriptor, and the soft limit systems ship (1024) would refuse clients long before the
    system's own limit. The private redis-server started after it inherits it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 1 << 20 if hard == resource.RLIM_INFINITY else min(hard, 1 << 20)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        with contextlib.suppress(ValueError, OSError):  # not allowed here: the soft limit stays
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def _tune_gc() -> None:
    """The cyclic garbage collector, tuned for a server that allocates a few hundred short-lived objects per move
    (most freed by reference counting): what exists once the server is up (modules, protobuf descriptors, the
    engine's tables) is frozen out of every collection, and the young generation is collected every 10,000
    allocations instead of 700. Measured in bench/service.py: the collector's time per move 7 -> 3 us."""
    gc.collect()  # what startup left as garbage goes now: frozen, it never would
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)


def check_health(
    address: str,
    timeout: float = 3.0,
    *,
    credentials: grpc.ChannelCredentials | None = None,
    server_name: str | None = None,
    service: str = SERVICE_NAME,
) -> bool:
    """Whether the referee at ``address`` reports ``service`` (by default the referee's) SERVING through the gRPC
    health service (over TLS with ``credentials``, the certificate checked against ``server_name`` when given).
    It prints to stderr the health service names that are not SERVING (a Redis Cluster's shards that cannot
    serve their games: ``rummy.v1.Referee/shard/<slots>``, and ``rummy.v1.Referee/storage``)."""
    options = [("grpc.ssl_target_name_override", server_name)] if server_name else []
    if credentials is not None:
        channel = grpc.secure_channel(address, credentials, options)
    else:
        channel = grpc.insecure_channel(address)
    with channel:
        try:
            stub = health_pb2_grpc.HealthStub(channel)
            reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout)
        except grpc.RpcError:
            return False
        try:
            statuses = stub.List(health_pb2.HealthListRequest(), timeout=timeout).statuses
        except grpc.RpcError:  # (a referee without Health/List)
            statuses = {}
    down = sorted(name for name, status in statuses.items()
                  if name and status.status == health_pb2.HealthCheckResponse.NOT_SERVING)  # fmt: skip
    if down:
        print(f"rummy-referee health: not serving: {', '.join(down)}", file=sys.stderr)
    return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `rummy-referee` command."""
    args = _parser().parse_args(argv)
    if args.command == "health":
        return _health(args)
    if args.command == "verify":
        from clients.verify import run

        return run(args)
    if args.command == "migrate":
        return asyncio.run(_migrate(args))
    configure(getattr(args, "log_format", "text"))  # `bots` logs as text
    try:
        asyncio.run(serve(args) if args.command == "serve" else run_bot_host(args))
    except (RedisLaunchError, DurabilityError, StartupError) as exc:
        print(f"rummy-referee: {exc}", file=sys.stderr)
        return 1
    return 0


async def _migrate(args: argparse.Namespace) -> int:
    import redis.exceptions

    from server.migrate import migrate

    store = GameStore(connect(args.redis_url, cluster=args.redis_cluster), op_timeout_s=10.0)
    try:
        return await migrate(store, args.game_ids, sys.stdout)
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError) as exc:
        print(f"rummy-referee migrate: Redis: {exc}", file=sys.stderr)
        return 1
    finally:
        await store.close()


def _health(args: argparse.Namespace) -> int:
    credentials = None
    if args.tls or args.ca_file or args.client_cert or args.client_key:
        try:
            credentials = channel_credentials(args.ca_file, args.client_cert, args.client_key)
        except (TlsError, OSError) as exc:
            print(f"rummy-referee health: {exc}", file=sys.stderr)
            return 1
    healthy = check_health(args.address, credentials=credentials, server_name=args.server_name, service=args.service)
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main())
