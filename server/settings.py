"""The referee's settings: every operational number in one frozen object, nested by area.

``Settings()`` is the referee as `rummy-referee serve` runs it with no flags; the CLI builds one from its flags
(server.cli ``settings_from_args``), the tests build one with ``dataclasses.replace`` / keyword arguments, and both
hand it to the one factory that wires the referee (server.app ``build_referee``), so tests run the production
wiring.

Every field reaches the object that uses it through the factory (constructor parameters; the clocks' and memos'
process-wide tables by their ``configure``): a ``Settings`` built with other values is the referee that runs
(tests/server/test_settings.py shows each). Some modules keep their old constant names
(``server.store.STORAGE_TIMEOUT_S``, ...) as reads of ``DEFAULTS``, the defaults of their parameters only: this
module is the one place these values are written. Fields without a ``serve`` flag are marked *(no flag)*.

This module imports nothing of the referee's (every other server module may import it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

DAY = 24 * 3600
MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class StorageSettings:
    """Redis: where, and how long a storage operation may wait."""

    redis_url: str | None = None  # None: `serve` starts a private redis-server (in ``data_dir``)
    cluster: bool = False  # the URL is a Redis Cluster node (a redis-cluster:// URL implies it)
    data_dir: Path | None = None  # of the private redis-server (None: $XDG_DATA_HOME/rummy-referee or ./data)
    durability: Literal["warn", "strict"] = "warn"  # server.durability.MODES
    timeout_s: float = 1.0  # one storage operation (``--storage-timeout``)
    wait_replicas: int = 0  # replicas a commit waits for (Redis WAIT; ``--wait-replicas``)
    wait_timeout_s: float = 1.0  # how long it waits for them (``--wait-replicas-timeout``)
    settle_read_s: float = 1.0  # the most a lost commit's check read waits (no flag)
    pool_max_connections: int = 6  # redis-py's pool (the hot path's connection and the subscriber are apart)
    pool_timeout_s: float = 1.0  # a command waits this long for a connection of a full pool (and in the
    # background tasks' own pools; no flag)
    hot_max_redirects: int = 5  # MOVED / ASK replies a hot-path command follows on a cluster (server.hotpath)
    hot_tryagain_s: float = 0.02  # first pause before a command refused with TRYAGAIN is sent again (no flag)
    hot_refresh_gap_s: float = 0.2  # the hot path refreshes the cluster's slot map at most this often (no flag)
    hot_slot_cache: int = 4096  # keys whose slot the hot path remembers (no flag)


@dataclass(frozen=True, slots=True)
class RetentionSettings:
    """How long Redis keeps a game (0: for ever)."""

    finished_ttl_s: int = 7 * DAY  # a finished game
    idle_ttl_s: int = 30 * DAY  # an unfinished one after its last move
    unplayed_ttl_s: int = 3600  # a new game no move came to
    idem_ttl_s: int = DAY  # a game's idempotency records after its last move with one


@dataclass(frozen=True, slots=True)
class CacheSettings:
    """The in-process caches, each bounded by entries and by estimated bytes."""

    state_games: int = 4096  # parsed states kept (server.cache.StateCache; ``--state-cache-games``)
    state_mib: float = 32.0  # their estimated MiB (``--state-cache-mib``)
    memo_entries: int = 4096  # each memo table (server.memo; ``--memo-entries``), times its share
    memo_mib: float = 4.0  # each memo table's estimated MiB (``--memo-mib``), times its share
    delayed_games: int = 1024  # games whose last rebuilt state is kept for delayed spectators (no flag)
    clock_memo_entries: int = 4096  # each of server.clocks's parse memos (no flag)


@dataclass(frozen=True, slots=True)
class WatchSettings:
    """WatchGame: the event hub's queues and reads (server.events) and expiry watching (server.expiry); no
    flags."""

    backlog_page: int = 500  # events read at once for a watcher catching up
    read_slots: int = 4  # reads of the event log in flight at once
    read_attempts: int = 3  # failed reads in a row that end a feed's watchers with the error
    queue_limit: int = 2000  # events waiting to be sent to one watcher
    watcher_bytes: int = 1 << 20  # payload bytes waiting for one watcher
    total_bytes: int = 64 << 20  # payload bytes waiting for all watchers of the process
    expiry_slack_s: float = 0.05  # a watched game is looked at this long after its PTTL said it expires
    expiry_max_look_s: float = 60.0  # the longest a watched game goes unlooked at
    expiry_retry_s: float = 1.0  # after a failed look
    expiry_batch: int = 1000  # games per pipeline


@dataclass(frozen=True, slots=True)
class NetworkSettings:
    """The ports and what a connection may do."""

    host: str = "127.0.0.1"
    port: int = 50051  # gRPC (0: any free port)
    http_port: int | None = 8080  # Connect / gRPC-Web / JSON (None: no HTTP port; 0: any free port)
    also_ipv6: bool = False  # listen on [::1] too, the same gRPC port (tests: a second peer address)
    cors_origins: tuple[str, ...] = ()
    max_message_bytes: int = 256 * 1024  # of a gRPC message, either way
    max_connection_age_s: float = 300.0  # clients are asked (GOAWAY) to reconnect after this long (0: never)
    max_connection_age_grace_s: float = 30.0  # the calls in flight then get this long
    http_read_timeout_s: float = 30.0  # an HTTP request must arrive whole this soon, else its connection closes
    trusted_proxies: tuple[str, ...] = ()  # reverse proxies whose X-Forwarded-For names the HTTP client (IPs, CIDRs)
    grace_s: float = 10.0  # calls in flight get this long to finish at shutdown (``--grace``)
    health_interval_s: float = 0.5  # between two pings of Redis for the health service (no flag)
    health_ping_timeout_s: float = 1.0  # one such ping (no flag)
    metrics_port: int | None = None  # Prometheus (None: off; 0: any free port)
    log_format: str = "text"  # or "json" (server.logs.FORMATS)
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_client_ca: Path | None = None


@dataclass(frozen=True, slots=True)
class LimitSettings:
    """Per-process limits (server.limits.Limits; 0 turns one off)."""

    requests_per_s: float = 2000.0  # every RPC, per peer
    request_burst: int = 4000  # requests a peer may send at once after a quiet time
    games_per_minute: float = 60.0  # CreateGame per peer and per token (the organizer's exempt)
    max_peers: int = 16384  # peers (and tokens) remembered by each limit
    watches_per_peer: int = 10_000  # streams (WatchGame, health Watch, reflection) a peer may have open at once
    max_open_games: int = 100_000  # unfinished games in Redis, across the referees sharing it (0: no cap)
    open_games_sweep_batch: int = 128  # due entries of the open-games registry checked by one creation (no flag)
    open_games_sweeps_when_full: int = 8  # batches checked before a creation at the cap is refused (no flag)


@dataclass(frozen=True, slots=True)
class GameSettings:
    """The referee's own work."""

    organizer_token: str | None = None  # preset deals, seeds and replays
    max_attempts: int = 8  # a move's load-apply-commit tried this often against concurrent moves
    timeout_firer: bool = True  # fire the deadlines of time controls in this process (server.clocks)
    timeout_poll_s: float = 0.1  # between two looks at the index of due deadlines (plus up to 25% jitter)


@dataclass(frozen=True, slots=True)
class BotSettings:
    """The house bots' host (server.bot_host.HostSettings)."""

    enabled: bool = True  # `serve` runs a bot host (``--no-bots``: none)
    max_seats: int = 64  # seats played at once
    lease_s: float = 10.0  # a claim on a seat lasts this long unless renewed
    poll_s: float = 1.0  # between two looks at the registry of bot seats
    retry_s: float = 5.0  # a failed seat is tried again after this long
    move_timeout_s: float = 10.0  # one bot move's call


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything `serve` is told, nested by area; ``Settings()``: `serve` with no flags."""

    storage: StorageSettings = field(default_factory=StorageSettings)
    retention: RetentionSettings = field(default_factory=RetentionSettings)
    caches: CacheSettings = field(default_factory=CacheSettings)
    watch: WatchSettings = field(default_factory=WatchSettings)
    network: NetworkSettings = field(default_factory=NetworkSettings)
    limits: LimitSettings = field(default_factory=LimitSettings)
    games: GameSettings = field(default_factory=GameSettings)
    bots: BotSettings = field(default_factory=BotSettings)


#: `serve` with no flags; the modules' constants (their parameters' defaults) are reads of it.
DEFAULTS = Settings()
