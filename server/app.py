"""The one factory that wires a referee from its settings (server.settings), for `rummy-referee serve` and the tests
alike: the store over Redis, the memo bounds, the state cache, the application service, the health service, the
limiter (one for both ports), the gRPC server and the HTTP port, and the timeout firer.

``open_store(settings)`` makes the store (`serve` checks Redis's durability on it before anything else);
``build_referee(settings, store=...)`` wires the rest, not yet listening; ``RefereeApp.start()`` opens the ports,
``start_firer()`` fires the deadlines of time controls, ``watch_storage()`` has the health service follow Redis,
``stop()`` shuts down gracefully (health NOT_SERVING, watch streams ended, calls in flight given
``network.grace_s``, storage closed). What only `serve` does around it
(a private redis-server, signals, the bot host, metrics over HTTP, the printed addresses) stays in server.cli.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import grpc
from grpc_health.v1._async import HealthServicer

from server import clocks, memo
from server.bot_host import HostSettings
from server.cache import StateCache
from server.clocks import TimeoutFirer
from server.grpc_api import RefereeHealth, create_server, shutdown, watch_storage
from server.http_server import HttpServer, create_http_app
from server.limits import LimitInterceptor, Limits
from server.metrics import Metrics
from server.service import Referee
from server.settings import LimitSettings, Settings
from server.store import GameStore, connect
from server.tls import TlsFiles


class StartupError(RuntimeError):
    """The referee cannot start (e.g. its gRPC port is taken): said in one line, nothing left running."""


def limits_of(settings: Settings) -> Limits:
    """The per-process limits of ``settings`` (server.limits)."""
    s = settings.limits
    return Limits(requests_per_s=s.requests_per_s, request_burst=s.request_burst,
                  games_per_minute=s.games_per_minute, max_peers=s.max_peers,
                  watches_per_peer=s.watches_per_peer)  # fmt: skip


def limit_settings(limits: Limits, **more: int) -> LimitSettings:
    """``LimitSettings`` holding ``limits`` (and ``more`` of its fields, e.g. ``max_open_games``)."""
    return LimitSettings(requests_per_s=limits.requests_per_s, request_burst=limits.request_burst,
                         games_per_minute=limits.games_per_minute, max_peers=limits.max_peers,
                         watches_per_peer=limits.watches_per_peer, **more)  # fmt: skip


def host_settings_of(settings: Settings) -> HostSettings:
    """The bot host's settings (server.bot_host; ValueError if out of range)."""
    b = settings.bots
    return HostSettings(max_seats=max(1, b.max_seats), lease_s=b.lease_s, poll_s=b.poll_s, retry_s=b.retry_s,
                        move_timeout_s=b.move_timeout_s)  # fmt: skip


def open_store(settings: Settings, redis_url: str | None = None) -> GameStore:
    """The game store over ``redis_url`` (default: ``settings.storage.redis_url``), with the settings' TTLs and
    timeouts."""
    url = redis_url or settings.storage.redis_url
    if not url:
        raise StartupError("no Redis URL to connect to")
    s, r = settings.storage, settings.retention
    return GameStore(
        connect(url, cluster=s.cluster, max_connections=s.pool_max_connections, pool_timeout_s=s.pool_timeout_s),
        finished_ttl_s=r.finished_ttl_s, idle_ttl_s=r.idle_ttl_s,
        unplayed_ttl_s=r.unplayed_ttl_s, idem_ttl_s=r.idem_ttl_s, op_timeout_s=s.timeout_s,
        wait_replicas=s.wait_replicas, wait_timeout_s=s.wait_timeout_s, settle_read_s=s.settle_read_s,
        background_pool_timeout_s=s.pool_timeout_s, hot_max_redirects=s.hot_max_redirects,
        hot_tryagain_s=s.hot_tryagain_s, hot_refresh_gap_s=s.hot_refresh_gap_s, hot_slot_cache=s.hot_slot_cache,
    )  # fmt: skip


@dataclass
class RefereeApp:
    """A wired referee (``build_referee``): its parts, and its ports once ``start``-ed."""

    settings: Settings
    store: GameStore
    referee: Referee
    health: HealthServicer
    limits: Limits
    limiter: LimitInterceptor | None
    server: grpc.aio.Server
    port: int
    http: HttpServer | None
    tls: TlsFiles | None = None
    firer: TimeoutFirer | None = None
    _firing: asyncio.Task[None] | None = field(default=None, repr=False)

    @property
    def http_port(self) -> int | None:
        return self.http.port if self.http is not None else None

    async def start(self) -> None:
        """Open the gRPC port, then the HTTP port."""
        await self.server.start()
        if self.http is not None:
            await self.http.start()

    def start_firer(self) -> None:
        """Fire the deadlines of time controls in this process (every ``games.timeout_poll_s``)."""
        if self.firer is None:
            self.firer = TimeoutFirer(self.referee, poll_s=self.settings.games.timeout_poll_s)
            self._firing = asyncio.create_task(self.firer.run())

    def watch_storage(self) -> asyncio.Task[None]:
        """The health service follows the storage (server.grpc_api ``watch_storage``: a ping every
        ``network.health_interval_s``, each allowed ``network.health_ping_timeout_s``), until the task is
        cancelled."""
        net = self.settings.network
        return asyncio.create_task(watch_storage(self.referee, self.health, net.health_interval_s,
                                                 net.health_ping_timeout_s))  # fmt: skip

    async def stop_firer(self) -> None:
        if self.firer is not None and self._firing is not None:
            await self.firer.close()
            await self._firing
        self.firer = self._firing = None

    async def stop(self, also: Sequence[Callable[[], Awaitable[None]]] = ()) -> None:
        """Graceful shutdown (server.grpc_api.shutdown) of both ports within ``network.grace_s``; the firer
        first, if it runs."""
        await self.stop_firer()
        stops = [*also, *([self.http.stop] if self.http is not None else [])]
        await shutdown(self.server, self.referee, self.health, self.settings.network.grace_s, also=stops)


def build_referee(
    settings: Settings,
    *,
    store: GameStore | None = None,
    tls: TlsFiles | None = None,
    metrics: Metrics | None = None,
) -> RefereeApp:
    """Wire a referee from ``settings`` over ``store`` (default: ``open_store(settings)``); not yet listening
    (``RefereeApp.start``). Raises StartupError (in one line) if a port cannot be bound."""
    store = store if store is not None else open_store(settings)
    caches, games, net = settings.caches, settings.games, settings.network
    memo.configure(caches.memo_entries, caches.memo_mib)
    clocks.configure(caches.clock_memo_entries)
    states = StateCache(caches.state_games, caches.state_mib)
    lim = settings.limits
    referee = Referee(store, organizer_token=games.organizer_token or None, max_attempts=games.max_attempts,
                      max_open_games=lim.max_open_games, states=states, watch=settings.watch,
                      delayed_games=caches.delayed_games, open_games_sweep_batch=lim.open_games_sweep_batch,
                      open_games_sweeps_when_full=lim.open_games_sweeps_when_full)  # fmt: skip
    health = RefereeHealth()
    limits = limits_of(settings)
    # one limiter for both ports: an address's calls count the same by gRPC and by HTTP
    limiter = LimitInterceptor(limits, referee.is_organizer) if limits.active else None
    address = f"{net.host}:{net.port}"
    try:
        server, port = create_server(
            address, referee, health_servicer=health, max_message_bytes=net.max_message_bytes, limits=limits,
            metrics=metrics, log_context=net.log_format == "json",
            tls=tls.server_credentials() if tls is not None else None, limiter=limiter,
            max_connection_age_s=net.max_connection_age_s or None,
            max_connection_age_grace_s=net.max_connection_age_grace_s,
        )  # fmt: skip
        if net.also_ipv6 and server.add_insecure_port(f"[::1]:{port}") != port:
            raise OSError(f"cannot bind [::1]:{port}")
    except (RuntimeError, OSError) as exc:  # the port was taken between the check and now
        raise StartupError(f"cannot listen on {address}: {_first_line(exc)}") from None
    http = None
    if net.http_port is not None:
        app = create_http_app(referee, health, cors_origins=list(net.cors_origins),
                              admit=limiter.admit if limiter is not None else None, metrics=metrics)  # fmt: skip
        try:
            http = HttpServer(app, net.host, net.http_port, grace=net.grace_s,
                              ssl_context=tls.ssl_context() if tls is not None else None,
                              read_timeout_s=net.http_read_timeout_s, trusted_proxies=net.trusted_proxies)  # fmt: skip
        except OSError as exc:  # the port was taken between the check and now
            raise StartupError(
                f"cannot listen on {net.host}:{net.http_port} (HTTP): {exc.strerror or exc}"
            ) from None
    return RefereeApp(settings, store, referee, health, limits, limiter, server, port, http, tls)


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0].split(";")[0]
