"""The application service: the referee's use cases, independent of the transport.

A move: authorize the token, load state + version (one Redis round trip), ``engine.apply``, then commit with one
Lua script (version check, state, events, idempotency record). Optimistic concurrency: a commit that finds the
game at another version is retried from the load (the move may still be legal) unless the caller pinned
``expected_version``, in which case it is ABORTED.

Idempotency: a move with a request_id leaves a 20-byte record (a hash of the seat's token and the request_id, and
the version it committed). A resend finds it (before applying, or in the commit script) and gets the original
answer rebuilt from the game log: the same events, the view of that version (the state replayed from the
configuration when the game has moved on), the seats as they were then; the same bytes once encoded.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import hmac
import json
import logging
import re
import secrets
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import orjson

import engine
from engine import timeouts
from engine.fairness import seed_commitment
from server import clocks
from server.bot_seats import HOUSE_BOTS, BotSeat, BotSeats
from server.cache import (
    ENTRY_BYTES,
    StateCache,
    config_json,
    initial_state,
    is_current_config,
    parsed_meta,
    progress_json,
    public_seats,
    seats_at,
)
from server.clocks import parse_clock, view_fields
from server.delay import NO_DELAY, DelayedStates, SpectatorDelay, clock_of, hold_back
from server.errors import (
    BadRequest,
    GameNotFound,
    NotAllowedNow,
    PermissionDenied,
    StaleVersion,
    TooMuch,
    Unauthenticated,
)
from server.events import EventHub
from server.expiry import GameGone
from server.memo import Memo
from server.model import (
    Caller,
    CreatedGame,
    EventData,
    GameSnapshot,
    GameSpec,
    MoveOutcome,
    ReplayPage,
    ResignOutcome,
    SeatSpec,
    SettingsData,
    ViewData,
    WatchUpdate,
)
from server.open_games import OpenGames, release_quietly
from server.ports import EventFeed, GameStorage, Position, StoredEvent, StoredGame
from server.ports import after_version as position_after
from server.settings import DEFAULTS, WatchSettings
from server.storage_errors import CommitOutcomeUnknown, StoreUnavailable
from wire.views import SeatDict

log = logging.getLogger("rummy_referee")

_GAME_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
MAX_NAME = 64
MAX_REQUEST_ID = 128
MAX_PRESETS = 200
MAX_ANALYSIS_ARRANGEMENTS = 100
REPLAY_PAGE = 500
REPLAY_PAGE_MAX = 2000
REPLAY_SLACK = 64  # fetched beyond a page, to see where its last version ends
REPLAY_PAGE_BYTES = 128 * 1024  # stays well inside the 256 KiB message limit
MAX_SEATS = 6
#: ValidateMove reads Redis's clock itself (a round trip) for a deadline this close to its estimate (ms)
_ASK_CLOCK_WITHIN_MS = 1000
_SEATS = tuple(Caller(engine.Role.SEAT, seat) for seat in range(MAX_SEATS))  # Callers are frozen: one of each will do
_SPECTATOR = Caller(engine.Role.SPECTATOR)


def token_hash(token: str) -> str:
    """What is stored of a token: the first 128 bits of its SHA-256 (hex; compared in constant time, so 128 bits
    are as unguessable as the token needs)."""
    return hashlib.sha256(token.encode()).hexdigest()[:32]


_PRESENTED: Memo[str, str] = Memo("presented_tokens", share=4.0)  # token -> token_hash(token), lately presented


def presented_hash(token: str) -> str:
    """``token_hash`` of a token presented by a caller, remembered: a seat presents the same token with every
    move (bounded: only tokens of at most 64 characters, ours being 46, in a server.memo table)."""
    if len(token) > 64:
        return token_hash(token)
    digest = _PRESENTED.get(token)
    if digest is None:
        digest = _PRESENTED.put(token, token_hash(token), 2 * 64 + 2 * ENTRY_BYTES)
    return digest


def new_secret(prefix: str, nbytes: int) -> str:
    """An unguessable id or token (``nbytes`` from the OS CSPRNG, URL-safe) behind a short prefix, so that it never
    begins with "-" (command lines would take it for an option) and says what it is."""
    return prefix + secrets.token_urlsafe(nbytes)


@dataclasses.dataclass(slots=True)
class Tallies:
    """What the referee counts for its metrics (server.metrics reads them when scraped): plain integers, so that
    counting costs the hot path nothing worth measuring."""

    conflicts: int = 0  # commits that found the game at another version
    retries: int = 0  # moves loaded and applied again (after a conflict, or a stale cached state)
    replays: int = 0  # moves answered from their idempotency record
    games_created: int = 0
    games_finished: int = 0
    timeouts: int = 0  # timeouts fired (forfeits and automatic moves)


def check_game_id(game_id: str) -> None:
    """Refuse ids that cannot be ours (they would also be unsafe inside a Redis key)."""
    if not _GAME_ID.fullmatch(game_id):
        raise BadRequest("INVALID_GAME_ID", "a game id is 1..64 characters of A-Z a-z 0-9 _ -")


def _house_seat(seat: SeatSpec) -> SeatSpec:
    """A seat as created: a house bot's is labelled "bot" and, without a name, named after its bot."""
    if not seat.bot:
        return seat
    if seat.bot not in HOUSE_BOTS:
        raise BadRequest("UNKNOWN_BOT", f"no house bot {seat.bot[:64]!r} (there are: {', '.join(HOUSE_BOTS)})")
    if seat.open:
        raise BadRequest("BOT_SEAT_OPEN", "a seat is either open (for JoinGame) or a house bot's, not both")
    return SeatSpec(seat.name or f"{seat.bot} bot", "bot", False, seat.bot)


def _check_name(name: str, *, required: bool) -> None:
    if not name and not required:
        return
    if not 1 <= len(name) <= MAX_NAME or not name.isprintable() or name.isspace():
        raise BadRequest("INVALID_NAME", f"a display name is 1..{MAX_NAME} printable characters, not all blank")


class Referee:
    """The referee's use cases over one storage (server.ports.GameStorage: the Redis adapter ``GameStore``)."""

    def __init__(
        self,
        store: GameStorage,
        *,
        organizer_token: str | None = None,
        hub: EventFeed | None = None,
        max_attempts: int = 8,
        max_open_games: int = 100_000,
        states: StateCache | None = None,
        bot_seats: BotSeats | None = None,
        watch: WatchSettings = DEFAULTS.watch,
        delayed_games: int = DEFAULTS.caches.delayed_games,
        open_games_sweep_batch: int = DEFAULTS.limits.open_games_sweep_batch,
        open_games_sweeps_when_full: int = DEFAULTS.limits.open_games_sweeps_when_full,
    ) -> None:
        """``max_open_games``: the cap on unfinished games, shared in Redis by the referees using it (0: none);
        ``states``: the cache of parsed states (bounded by games and bytes; default ``StateCache()``);
        ``bot_seats``: the registry of house-bot seats (default: in the store's Redis); ``watch``: the event hub's
        settings (when no ``hub`` is given); ``delayed_games``: games whose last rebuilt state is kept for delayed
        spectators; ``open_games_*``: the registry's sweeps (server.open_games)."""
        self.store = store
        self.open_games = (
            OpenGames(store.client, max_open_games, op_timeout_s=store.op_timeout_s,
                      sweep_batch=open_games_sweep_batch, sweeps_when_full=open_games_sweeps_when_full)
            if max_open_games else None
        )  # fmt: skip
        self.hub: EventFeed = hub or EventHub(store, watch=watch)  # type: ignore[arg-type]  # (the Redis adapter's)
        self._organizer_hash = token_hash(organizer_token) if organizer_token else None
        self._max_attempts = max_attempts
        self._states = states if states is not None else StateCache()  # (an empty cache is falsy)
        self.tallies = Tallies()
        self._delayed = DelayedStates(store.log_entries, delayed_games)  # the spectators' views of games with a delay
        self.bot_seats = bot_seats or BotSeats(store.client, op_timeout_s=store.op_timeout_s)
        #: Called after a game with house-bot seats is created (this process's bot host looks at once).
        self.on_bot_seats: Callable[[], None] | None = None
        #: Called for each timeout this process fires: its policy and how late it fired (seconds, Redis's clock).
        self.on_timeout: Callable[[str, float], None] | None = None

    # ---------------------------------------------------------------------------------------- authorization

    def is_organizer(self, token: str | None) -> bool:
        """Whether ``token`` is the organizer token (constant-time comparison of hashes)."""
        if token is None or self._organizer_hash is None:
            return False
        return hmac.compare_digest(token_hash(token), self._organizer_hash)

    @staticmethod
    def identify(game: StoredGame, token: str | None) -> Caller | None:
        """The seat or spectator ``token`` stands for in ``game``, None if it is none of them. Every stored hash is
        compared (in constant time), whatever matches, so timing says nothing about the token."""
        if token is None:
            return None
        presented = presented_hash(token)
        meta = parsed_meta(game.meta)
        found: Caller | None = None
        for seat_no, seat in enumerate(meta["seats"]):
            if seat["auth"] and hmac.compare_digest(presented, seat["auth"]):
                found = _SEATS[seat_no]
        if meta["spectator"] and hmac.compare_digest(presented, meta["spectator"]):
            found = _SPECTATOR
        return found

    def authorize(self, game: StoredGame, token: str | None) -> Caller:
        """The caller; PermissionDenied for the organizer token (it holds no seat), else Unauthenticated."""
        caller = self.identify(game, token)
        if caller is None:
            if self.is_organizer(token):  # a valid token, not one that may do this (STYLE.md: PERMISSION_DENIED)
                raise PermissionDenied(
                    "ORGANIZER_NO_SEAT", "the organizer token holds no seat: use a seat's token or the spectator's"
                )
            raise Unauthenticated("BAD_TOKEN", "the token is not one of this game's")
        return caller

    async def _load(self, game_id: str) -> StoredGame:
        check_game_id(game_id)
        game = await self.store.load(game_id)
        if game is None:
            raise GameNotFound("GAME_NOT_FOUND", f"no game {game_id}")
        if not is_current_config(game.config):  # the read path never writes: an old game is refused, unchanged
            raise _old_format(game_id)
        return game

    # ------------------------------------------------------------------------------------------ views

    def _view(
        self,
        game: StoredGame,
        state: engine.GameState,
        version: int,
        viewer: int,
        role: engine.Role,
        seats: Sequence[SeatDict] | None = None,
        clock: Mapping[str, Any] | None = None,
    ) -> ViewData:
        """``clock``: the clock fields to show (a delayed spectator's, of the released version), None: the game's."""
        view: ViewData = engine.view(state, viewer)  # type: ignore[assignment]  # the service's keys, next:
        view["game_id"], view["version"], view["role"] = game.game_id, version, role
        view["seats"] = seats or public_seats(game.meta)
        fields: Mapping[str, Any] | None = view_fields(game.clock) if clock is None and game.clock else clock
        if fields:
            view["clocks"] = fields["clocks"]
            if "deadline_ms" in fields:
                view["deadline_ms"] = fields["deadline_ms"]
        if role == engine.Role.SEAT and state.to_act == viewer and state.phase != "match_over":
            view["legal_moves"] = engine.legal_moves(state)
        return view

    def _settings(self, game: StoredGame, state: engine.GameState, *, reveal: bool = False) -> SettingsData:
        """The settings; ``reveal`` (GetReplay of a match that is over): with the seed and the preset deals."""
        meta = parsed_meta(game.meta)
        seats: Sequence[SeatDict] = public_seats(game.meta)
        if any(seat.get("bot") for seat in meta["seats"]):  # the house bots' names, only where there are some
            seats = [{**s, "bot": m.get("bot", "")} for s, m in zip(seats, meta["seats"], strict=True)]
        settings: SettingsData = {
            "profile": meta["profile"],
            "options": state.rules.to_dict(),
            "seats": seats,
            "spectators": meta["spectators"],
            "organizer_deals": meta["organizer_deals"],
            "seed_commitment": seed_commitment(game.game_id, state.seed, state.presets),
        }
        delay = SpectatorDelay.of_meta(meta)
        if delay.active:
            settings["spectator_delay"] = delay.to_dict()
        if game.clock:
            settings["time_control"] = parse_clock(game.clock).control.to_dict()
        if reveal and state.phase == "match_over":
            settings["seed"] = state.seed.hex()
            settings["preset_deals"] = [p.to_dict() for p in state.presets]
        return settings

    @staticmethod
    def _event_for(stored: StoredEvent, viewer: int) -> EventData:
        event = engine.Event.from_dict(json.loads(stored.payload))
        return {**engine.event_for(event, viewer), "version": stored.version, "index": stored.index}

    # ----------------------------------------------------------------------------------------- use cases

    async def create_game(self, spec: GameSpec, token: str | None) -> CreatedGame:
        """Create a game: its id, the seats' tokens, the spectator token, its settings and version."""
        organizer = self.is_organizer(token)
        if spec.presets or spec.seed is not None:
            if token is None:
                raise Unauthenticated("MISSING_TOKEN", "preset deals and seeds need the organizer token")
            if not organizer:
                raise PermissionDenied("ORGANIZER_ONLY", "preset deals and seeds are for the organizer only")
        profile = spec.profile or "gin"
        overrides = {k: v for k, v in spec.overrides.items() if k != "players"}
        if not spec.seats:  # the profile's player count (or the option's), every seat open for JoinGame
            count = spec.overrides.get("players")
            players = engine.rules_from_profile(profile, players=count, **overrides).players  # type: ignore[arg-type]
            spec = dataclasses.replace(spec, seats=tuple(SeatSpec("", open=True) for _ in range(players)))
        if not 1 <= len(spec.seats) <= MAX_SEATS:
            raise BadRequest("INVALID_SEATS", f"a game has 1..{MAX_SEATS} seats (Gin 2, Rummy 2..6)")
        seats = tuple(_house_seat(seat) for seat in spec.seats)
        for seat in seats:
            _check_name(seat.name, required=not seat.open)
        if len(spec.presets) > MAX_PRESETS:
            raise TooMuch("TOO_MANY_PRESETS", f"at most {MAX_PRESETS} preset deals")
        if spec.seed is not None and not 16 <= len(spec.seed) <= 64:
            raise BadRequest("INVALID_SEED", "a seed is 16..64 bytes")
        if "players" in spec.overrides and spec.overrides["players"] != len(seats):
            raise BadRequest("INVALID_OPTION", "option players must equal the number of seats")
        rules = engine.rules_from_profile(profile, players=len(seats), **overrides)
        state, dealt = engine.new_game_with_events(rules, spec.seed or engine.random_seed(), spec.presets)

        game_id = new_secret("g_", 16)
        tokens = {i: new_secret("st_", 32) for i, seat in enumerate(seats) if not seat.open}
        spectator_token = new_secret("sp_", 32) if spec.allow_spectators else ""
        meta = {
            "profile": profile,
            "seats": [
                {
                    "kind": seat.kind,
                    "name": seat.name,
                    "auth": token_hash(tokens[i]) if i in tokens else "",
                    **({"bot": seat.bot} if seat.bot else {}),
                }
                for i, seat in enumerate(seats)
            ],
            "spectator": token_hash(spectator_token) if spectator_token else "",
            "spectators": spec.allow_spectators,
            "organizer_deals": bool(spec.presets or spec.seed is not None),
            **({"delay": spec.spectator_delay.to_dict()} if spec.spectator_delay.active else {}),
        }
        control = spec.time_control.checked() if spec.time_control is not None else None
        if control is not None and any(seat.open for seat in seats):
            raise BadRequest("INVALID_TIME_CONTROL", "a game with open seats cannot have a time control (yet)")
        stored_progress, stored_config = progress_json(state), config_json(state)
        stored_meta = json.dumps(meta, separators=(",", ":"))
        clock_seat, bound, stored_clock = -1, 0, ""
        if control is not None:
            stored_clock = control.stored(len(seats))
            clock_seat = state.to_act
            if self.store.clock_unknown():
                await self.store.ping()
            bound = self.store.redis_now_ms(lower=True) + parse_clock(stored_clock).budget(clock_seat)
        # Kept a short time unless a move comes (the organizer's games: the idle time), and counted in the cap on
        # unfinished games (the organizer's too, but they are never refused).
        ttl_s = self.store.idle_ttl_s if organizer else self.store.unplayed_ttl_s
        if self.open_games is not None:
            await self.open_games.reserve(game_id, ttl_s, exempt=organizer)
        # The house bots' seats are registered before the game exists (a host finding no game drops the entry);
        # their tokens are the bot host's, never the creator's.
        bots = [BotSeat(game_id, i, seat.bot, tokens[i]) for i, seat in enumerate(seats) if seat.bot]
        try:
            await self.bot_seats.register(bots)
            # the first deal's events are version 0 of the log: a replay is the whole game as events
            stored = await self.store.create_game(
                game_id, config=stored_config, progress=stored_progress, meta=stored_meta, clock=stored_clock,
                deal_events=[orjson.dumps(e.to_dict()) for e in dealt], ttl_s=ttl_s, clock_seat=clock_seat,
                bound=bound,
            )
        except BaseException:
            if self.open_games is not None:
                await release_quietly(self.open_games, game_id)
            if bots:
                with contextlib.suppress(Exception):  # left behind, it is dropped by the host that finds no game
                    await self.bot_seats.unregister(game_id, [b.seat for b in bots])
            raise
        if not stored:
            raise RuntimeError("a fresh random game id was taken")
        self.tallies.games_created += 1
        log.info("game created: %s, %d seats", spec.profile or "gin", len(spec.seats), extra={"game_id": game_id})
        if bots and self.on_bot_seats is not None:
            self.on_bot_seats()
        for bot in bots:
            del tokens[bot.seat]
        created = StoredGame(game_id, stored_progress, 0, stored_meta.encode(), stored_config,
                             clock=stored_clock.encode())  # fmt: skip
        return CreatedGame(game_id, tokens, spectator_token, self._settings(created, state), 0)

    async def join_game(self, game_id: str, seat: int | None, name: str) -> tuple[int, str]:
        """Take an open seat (the lowest one when ``seat`` is None): the seat and its new token."""
        _check_name(name, required=True)
        if seat is not None and not 0 <= seat < MAX_SEATS:  # no game has it: malformed, whatever the game
            raise BadRequest("INVALID_SEAT", f"no seat {seat}: a game has at most {MAX_SEATS} seats")
        game = await self._load(game_id)
        if seat is not None and not 0 <= seat < len(parsed_meta(game.meta)["seats"]):
            raise BadRequest("INVALID_SEAT", f"no seat {seat} in this game")
        seat_token = new_secret("st_", 32)
        taken = await self.store.join(
            game_id, seat=-1 if seat is None else seat, token_hash=token_hash(seat_token), name=name
        )
        if taken == -2:
            raise GameNotFound("GAME_NOT_FOUND", f"no game {game_id}")
        if taken < 0:
            raise NotAllowedNow("SEAT_TAKEN", "that seat is taken" if seat is not None else "no open seat left")
        return taken, seat_token

    async def get_game(self, game_id: str, token: str | None) -> GameSnapshot:
        """The caller's view and the game's settings."""
        game = await self._load(game_id)
        caller = self.authorize(game, token)
        state = self._states.get(game)
        if caller.role == "spectator":
            version, _, shown, clock = await self._released(game, state)
            view = self._view(game, shown, version, caller.viewer, caller.role, clock=clock)
        else:
            view = self._view(game, state, game.version, caller.viewer, caller.role)
        return GameSnapshot(view, self._settings(game, state))

    async def _released(
        self, game: StoredGame, state: engine.GameState
    ) -> tuple[int, int, engine.GameState, Mapping[str, Any] | None]:
        """What a spectator may see of ``game`` (at ``state``): the released version (server.delay), the last hand
        end at or before it (0 when unknown or unused), the state at that version and the view's clock fields
        at it (None: the game's own, nothing being held back). The clocks are held back too: the live ones say
        whose decision runs now, and since when."""
        delay = SpectatorDelay.of_meta(parsed_meta(game.meta))
        if not delay.active or state.phase == "match_over":
            return game.version, 0, state, None
        version, last_hand_end, held, clock = await self._delayed.released(
            game.game_id, game.config, delay, game.version
        )
        return (version, last_hand_end, state, None) if held is None else (version, last_hand_end, held, clock)

    async def validate_move(
        self, game_id: str, token: str | None, move: engine.Move, expected_version: int | None
    ) -> int:
        """Check ``move`` as submit_move would, changing nothing: the version it was checked against."""
        game = await self._load(game_id)
        seat = self._mover(game, token)
        _check_version(game.version, expected_version)
        engine.apply(self._states.get(game), seat, move)
        if game.clock and type(move) is not engine.Resign:  # as the commit would (commit_move.lua: "out_of_time")
            clock = parse_clock(game.clock)
            if clock.seat >= 0:
                if self.store.clock_unknown():
                    await self.store.ping()
                # a lower estimate of Redis's clock: never refuse what the commit would accept at this instant;
                # close to the deadline (within the estimate's error and a second), Redis's clock itself, so that
                # what the commit just refused is refused here too
                now = self.store.redis_now_ms(lower=True)
                if now <= clock.deadline < self.store.redis_now_ms() + _ASK_CLOCK_WITHIN_MS:
                    now = await self.store.redis_time_ms(game_id)
                if now > clock.deadline:
                    raise NotAllowedNow("OUT_OF_TIME", f"the seat's decision was due at {clock.deadline} ms "
                                                       "(Redis's clock)")  # fmt: skip
        return game.version

    def _mover(self, game: StoredGame, token: str | None) -> int:
        caller = self.authorize(game, token)
        if caller.role != "seat":
            raise PermissionDenied("SPECTATOR", "a spectator token cannot play")
        return caller.seat

    async def submit_move(
        self,
        game_id: str,
        token: str | None,
        move: engine.Move,
        expected_version: int | None = None,
        request_id: str = "",
    ) -> MoveOutcome:
        """Apply ``move`` as the caller's seat: the version, the events (as the caller sees them), the view."""
        if len(request_id) > MAX_REQUEST_ID or not request_id.isprintable():
            raise BadRequest("INVALID_REQUEST_ID", f"a request_id is at most {MAX_REQUEST_ID} printable characters")
        # Scoped by token (that is: by seat), so that nobody can fetch another seat's answer by its key.
        idem = self.store.request_key(token or "", request_id) if request_id else b""
        latest = self._states.latest(game_id)
        if latest is not None:  # the common case: this process served the game's last move
            cached, state = latest
            caller = self.identify(cached, token)
            if caller is not None and caller.role == "seat" and expected_version in (None, cached.version):
                try:
                    response = await self._commit_move(cached, state, caller.seat, move, idem)
                except engine.RuleError:
                    response = None  # perhaps refused only because the cache is stale: the loading path decides
                if isinstance(response, MoveOutcome):
                    return response
                self.tallies.retries += 1
        for attempt in range(self._max_attempts):
            if attempt:
                self.tallies.retries += 1
            game = await self._load(game_id)
            seat = self._mover(game, token)
            try:
                _check_version(game.version, expected_version)
                response = await self._commit_move(game, self._states.get(game), seat, move, idem)
            except (engine.RuleError, StaleVersion):
                # refused, unless this is the resend of a move that was applied: then its answer again
                if not idem:
                    raise
                try:
                    recorded = await self.store.request_version(game_id, idem)
                except StoreUnavailable as exc:  # perhaps the resend of an applied move: never say "not applied"
                    raise CommitOutcomeUnknown(f"the request_id's record could not be read: {exc}") from exc
                if recorded is None:
                    raise
                if self.store.wait_replicas:  # the answer says "done": only once the replicas have it too
                    await self.store.wait_replicated(game_id, recorded)
                self.tallies.replays += 1
                return await self._answer_of(game, seat, recorded, move)
            if isinstance(response, MoveOutcome):
                return response
            if expected_version is not None and response != expected_version:  # (not only a seat joined)
                raise StaleVersion("VERSION_CONFLICT", "another move was committed first; reload and retry")
        raise StaleVersion("CONTENDED", "the game kept changing under this move; reload and retry")

    async def resign(
        self, game_id: str, token: str | None, expected_version: int | None = None, request_id: str = ""
    ) -> ResignOutcome:
        """Resign the match as the caller's seat, committed like a move (a move's outcome). A seat that
        already resigned gets the same answer again (the events of its resignation), and nothing changes."""
        try:
            return await self.submit_move(game_id, token, engine.Resign(), expected_version, request_id)
        except engine.IllegalMoveError as exc:
            if exc.code != "GAME_OVER":
                raise
            game = await self._load(game_id)
            seat = self._mover(game, token)
            state = self._states.get(game)
            if state.result is None or state.result.get("resigned") != seat:
                raise
            last = await self.store.events_after(game_id, game.version - 1, count=REPLAY_PAGE)
            return ResignOutcome(
                game.version,
                [self._event_for(e, seat) for e in last if e.version == game.version],
                self._view(game, state, game.version, seat, engine.Role.SEAT),
            )

    async def _commit_move(
        self,
        game: StoredGame,
        state: engine.GameState,
        seat: int,
        move: engine.Move,
        idem: bytes,
        *,
        op: str = "m",
        prefix: tuple[engine.Event, ...] = (),
        chain: bool = False,
        applied: tuple[engine.GameState, tuple[engine.Event, ...]] | None = None,
        answer: bool = True,
    ) -> MoveOutcome | int:
        """Apply ``move`` to ``state`` (the game at ``game.version``) and commit it: the response, or None when the
        game is no longer at that version or a seat was joined meanwhile (nothing was written): then the game's
        version. With a time control: ``op`` is the clock's step (commit_move.lua: "m" a seat's move, refused
        with OUT_OF_TIME past its deadline; "a", "c", "f" a timeout's, NotDue before it), ``prefix`` events come
        before the move's (a timeout's), ``chain``: the seat's next decision is due at once. ``applied``: the
        move already applied to ``state``; ``answer`` False: no view in the response (the firer's)."""
        new_state, events = applied if applied is not None else engine.apply(state, seat, move)
        if prefix:
            events = prefix + events
        version = game.version + 1
        new_json = progress_json(new_state)
        payloads = [orjson.dumps(e.to_dict()) for e in events]
        index = None
        if type(move) is engine.Resign:
            op = "r"
        next_seat = new_state.to_act if new_state.phase != "match_over" else -1
        # always: the script applies it to the game's clock whenever the hash has one, whatever this copy says
        clock_step = clocks.step(op, next_seat, chain)
        if game.clock and next_seat >= 0:
            before = parse_clock(game.clock)
            now = self.store.redis_now_ms(lower=True)
            bound = now - 1 if chain else before.lower_bound(next_seat, now)
            # the index holds an entry no later than the running deadline: one no earlier than it needs none
            if before.seat < 0 or bound < before.deadline:
                index = (clocks.shard_of(game.game_id), bound, version)
        result = await self.store.commit_move(
            game.game_id,
            base_version=game.version,
            progress=new_json,
            seat=seat,
            move_json=_move_json(move),
            events=payloads,
            request_key=idem,
            joins=game.joins,
            match_over=new_state.phase == "match_over",
            clock_step=clock_step,
            index=index,
        )
        if result.outcome == "ok":
            new_clock, ticks = game.clock, list[dict[str, Any]]()
            if game.clock and result.tail:
                new_clock, ticks = clocks.after_commit(game.clock, result.tail)
            stored = StoredGame(game.game_id, new_json, version, game.meta, game.config, game.joins, new_clock)
            self._states.put(stored, new_state)
            if new_state.phase == "match_over":
                self.tallies.games_finished += 1
                log.info("match over at version %d", version, extra={"game_id": game.game_id})
                if self.open_games is not None:
                    self.open_games.release_soon(game.game_id)  # the only move that costs a round trip more
            told: list[EventData] = [engine.event_for(e, seat) for e in events]
            if ticks:  # public: as every viewer sees them
                told = clocks.merged(told, [{"kind": t["kind"], "seat": t["seat"], **t["public"]} for t in ticks])
            for i, e in enumerate(told, 1):
                e["version"], e["index"] = version, i
            return MoveOutcome(
                version, told, self._view(stored, new_state, version, seat, engine.Role.SEAT) if answer else None
            )
        if result.outcome == "out_of_time":
            raise NotAllowedNow("OUT_OF_TIME", f"the seat's decision was due at {result.version} ms (Redis's clock)")
        if result.outcome == "not_due":
            raise clocks.NotDue(result.version)
        if result.outcome == "dup":
            self.tallies.replays += 1
            try:
                return await self._answer_of(game, seat, result.version, move)
            except StoreUnavailable as exc:  # applied (by the first send): never say "not applied"
                raise CommitOutcomeUnknown(f"the move's answer could not be read: {exc}") from exc
        if result.outcome == "late":  # Redis ran the commit after its fence: nothing was written
            raise StoreUnavailable("the commit reached Redis too late; nothing was written")
        if result.outcome == "conflict":
            self.tallies.conflicts += 1
        self._states.forget(game.game_id)
        if result.outcome == "missing":
            raise GameNotFound("GAME_NOT_FOUND", f"no game {game.game_id}")
        return result.version

    async def fire_timeout(self, game: StoredGame, clock: clocks.Clock, drawn: int | None = None) -> bool | None:
        """Commit the timeout of ``game``'s running decision (``clock``, as loaded with ``game``), as a move at the
        game's version: None when committed, True when the game moved on meanwhile (look again), False when it
        is not due after all (Redis's clock says so). The move is the engine's (engine.timeouts). ``drawn``: the
        card the seat drew by the game's last move, when the caller knows it (None: read from the log)."""
        if not is_current_config(game.config):
            return False
        state = self._states.get(game)
        seat = clock.seat
        if state.phase == "match_over" or seat != state.to_act:
            return True
        control = clock.control
        second_step = clock.deadline < clock.started  # an automatic move's discard, due at once
        prefix: tuple[engine.Event, ...] = ()
        if drawn is None:
            drawn = await self._drawn_by(game, seat) if state.phase in ("discard", "play") else -1
        if second_step:
            move = timeouts.auto_move(state, drawn)
            op = "c"
        else:
            autos = clock.autos[seat]
            move = timeouts.timeout_move(state, control.policy, autos, control.max_auto_moves, drawn)
            forfeit = type(move) is engine.LoseOnTime
            op = "f" if forfeit else "a"
            prefix = (
                engine.Event("timed_out", seat, {"seat": seat, "policy": control.policy, "deadline_ms": clock.deadline,
                                                 "forfeit": forfeit}),
            )  # fmt: skip
            if not forfeit:
                prefix += (
                    engine.Event("auto_moved", seat, {"seat": seat, "move": engine.move_to_dict(move),
                                                      "auto_moves": autos + 1}),
                )  # fmt: skip
        after, played = engine.apply(state, seat, move)
        chain = op == "a" and timeouts.continues(state, after, move)
        try:
            response = await self._commit_move(game, state, seat, move, b"", op=op, prefix=prefix, chain=chain,
                                               applied=(after, played), answer=False)  # fmt: skip
        except clocks.NotDue:
            return False
        if not isinstance(response, MoveOutcome):
            return True
        if op != "c":
            self.tallies.timeouts += 1
            lateness = clocks.fired_lateness(response.events, clock.deadline)
            if self.on_timeout is not None and lateness is not None:
                self.on_timeout(control.policy, lateness)
        if chain:  # the discard, at once (another referee does it if this one dies now)
            latest = self._states.latest(game.game_id)
            if latest is not None and latest[0].clock:
                card = next((e.secret["card"] for e in played if e.kind == "drew" and e.secret), None)
                drawn = engine.parse_card(card) if card else -1
                return await self.fire_timeout(latest[0], parse_clock(latest[0].clock), drawn)
        return None

    async def _drawn_by(self, game: StoredGame, seat: int) -> int:
        """The card ``seat`` drew from the stock by the move of the game's version, -1 when that was no such draw."""
        entry = await self.store.log_entry(game.game_id, game.version)
        if entry is None or entry.seat != seat or (entry.move or {}).get("kind") != "draw_stock":
            return -1
        for e in entry.events:
            if e["kind"] == "drew" and e.get("secret"):
                return engine.parse_card(e["secret"]["card"])
        return -1

    async def _answer_of(self, game: StoredGame, seat: int, version: int, move: engine.Move) -> MoveOutcome:
        """The answer that the move committed as ``version`` got, rebuilt from the log (byte for byte the same
        once encoded), if it was ``move`` by ``seat``; else IDEMPOTENCY_KEY_REUSED."""
        game_id = game.game_id
        latest = await self.store.load(game_id)
        if latest is None:
            raise GameNotFound("GAME_NOT_FOUND", f"no game {game_id}")
        if not is_current_config(latest.config):
            raise _old_format(game_id)
        at_version = latest.version == version
        entries = await self.store.log_entries(game_id, version if at_version else 1, version)
        if not entries or entries[-1].version != version:
            raise RuntimeError(f"game {game_id}: no log entry for version {version}")
        entry = entries[-1]
        wanted = orjson.dumps(engine.move_to_dict(move), option=orjson.OPT_SORT_KEYS)
        if entry.seat != seat or orjson.dumps(entry.move, option=orjson.OPT_SORT_KEYS) != wanted:
            raise NotAllowedNow("IDEMPOTENCY_KEY_REUSED", "this request_id was already used for another move")
        clock: Mapping[str, Any] | None = None  # the game's own: its clock is still the one this move left
        if at_version:
            state = self._states.get(latest)
        else:
            state = initial_state(latest.config)
            for e in entries:
                state, _ = engine.apply(state, e.seat, engine.move_from_dict(e.move or {}))
            if latest.clock:  # the clock as this move left it, from its entry's clock events, not the clock now
                clock = clock_of(entry, {})
        return MoveOutcome(
            version,
            [
                {**engine.event_for(engine.Event.from_dict(e), seat), "version": version, "index": i}
                for i, e in enumerate(entry.events, 1)
            ],
            self._view(latest, state, version, seat, engine.Role.SEAT, seats_at(latest.meta, version), clock),
        )

    async def watch(
        self, game_id: str, token: str | None, after_version: int | None, after_index: int | None = None
    ) -> AsyncIterator[WatchUpdate]:
        """The caller's view (a snapshot; not when resuming), then every later event, as the caller may see them;
        ends after the match_ended event. Resuming: every event after position (after_version, after_index), or
        after the whole of after_version when after_index is None."""
        if after_version is None and after_index is not None:  # malformed: refused before the game is looked up
            raise BadRequest("INVALID_POSITION", "after_index needs after_version")
        game = await self._load(game_id)
        caller = self.authorize(game, token)
        state = self._states.get(game)
        version, shown, last_hand_end, clock = game.version, state, 0, None
        delay = SpectatorDelay.of_meta(parsed_meta(game.meta)) if caller.role == "spectator" else NO_DELAY
        held_back = delay.active and state.phase != "match_over"
        if held_back:  # the version this spectator may see (server.delay), not the live one
            version, last_hand_end, shown, clock = await self._released(game, state)
        if after_version is None:
            yield WatchUpdate(snapshot=self._view(game, shown, version, caller.viewer, caller.role, clock=clock))
            after_version = version
        elif after_version > version:
            raise BadRequest("VERSION_AHEAD", f"the game is at version {version}, not {after_version} yet")
        position = position_after(after_version) if after_index is None else (after_version, after_index)
        # A finished game gets no new event: what is left is read straight from the stream.
        feed = self._rest(game_id, position) if state.phase == "match_over" else self.hub.follow(game_id, position)
        if held_back:  # each event once its version is released
            feed = hold_back(feed, delay, game.version, last_hand_end)
        async with contextlib.aclosing(feed):  # stop following (unregister) as soon as the watch ends
            try:
                async for stored in feed:
                    event = self._event_for(stored, caller.viewer)
                    yield WatchUpdate(event=event)
                    if event["kind"] == "match_ended":
                        return
            except GameGone as gone:  # its keys expired: a last event, and the stream ends (OK)
                yield WatchUpdate(event=_gone_event(gone))

    async def _rest(self, game_id: str, position: Position) -> AsyncGenerator[StoredEvent, None]:
        while page := await self.store.events_since(game_id, position, count=REPLAY_PAGE):
            for stored in page:
                yield stored
            position = (page[-1].version, page[-1].index)

    async def replay(
        self, game_id: str, token: str | None, after_version: int | None, max_events: int
    ) -> ReplayPage:
        """The whole game with every card: settings, initial and current referee views, one page of events."""
        if not 0 <= max_events <= REPLAY_PAGE_MAX:
            raise BadRequest("INVALID_PAGE_SIZE", f"max_events is 0..{REPLAY_PAGE_MAX}")
        game = await self._load(game_id)
        state = self._states.get(game)
        if not self.is_organizer(token) and state.phase != "match_over":
            if token is None:
                raise Unauthenticated("MISSING_TOKEN", "before the match is over a replay needs a token")
            self.authorize(game, token)
            raise PermissionDenied("MATCH_NOT_OVER", "the replay is available once the match is over")
        limit = max_events or REPLAY_PAGE
        fetch = limit + REPLAY_SLACK
        if after_version is None:
            events = await self.store.events_since(game_id, (-1, 0), count=fetch)
        else:
            events = await self.store.events_after(game_id, after_version, count=fetch)
        page, more = _whole_versions(events, limit, fetched_all=len(events) < fetch)
        initial: ViewData = engine.view(initial_state(game.config), engine.REFEREE)  # type: ignore[assignment]
        initial["game_id"], initial["version"], initial["role"] = game_id, 0, engine.Role.REFEREE
        initial["seats"] = public_seats(game.meta)
        if game.clock:  # the clocks of version 0 (its entry's clock_started): the first decision's, started
            dealt = await self.store.log_entry(game_id, 0)
            fields = clock_of(dealt, {}) if dealt is not None else {}
            if "clocks" in fields:
                initial["clocks"] = fields["clocks"]
            if "deadline_ms" in fields:
                initial["deadline_ms"] = fields["deadline_ms"]
        return ReplayPage(
            self._settings(game, state, reveal=True),
            initial,
            [self._event_for(e, engine.REFEREE) for e in page],
            self._view(game, state, game.version, engine.REFEREE, engine.Role.REFEREE),
            page[-1].version if more and page else None,
        )

    @staticmethod
    def analyze(cards: int, profile: str, overrides: Mapping[str, Any]) -> engine.HandAnalysis:
        """Minimum deadwood, the optimal arrangements, and for 11 Gin cards the discards that allow a knock."""
        engine.check_hand_size(cards)  # before the options: a bad hand is refused as such, whatever the options
        if "knock_limit" in overrides:  # under Oklahoma: the deal's limit (its upcard's), which no hand tells
            others = {k: v for k, v in overrides.items() if k != "knock_limit"}
            if engine.rules_from_profile(profile or "gin", **others).oklahoma:
                overrides = {**others, "oklahoma": False, "knock_limit": overrides["knock_limit"]}
        rules = engine.rules_from_profile(profile or "gin", **overrides)
        return engine.analyze_hand(cards, rules, MAX_ANALYSIS_ARRANGEMENTS)


_MOVE_JSON: Memo[engine.Move, bytes] = Memo("move_dicts", share=2.0)


def _move_json(move: engine.Move) -> bytes:
    """``engine.move_to_dict(move)`` as JSON (what the log keeps of a move), made once per distinct move (moves
    are frozen, so hashable; Rummy's melds and lay-offs are many: the table is bounded, server.memo)."""
    text = _MOVE_JSON.get(move)
    if text is None:
        text = orjson.dumps(engine.move_to_dict(move))
        _MOVE_JSON.put(move, text, 2 * ENTRY_BYTES + len(text))
    return text


def _gone_event(gone: GameGone) -> EventData:
    """The last event of a watch whose game expired (never in the log): ``game_abandoned`` when no move was ever
    made (it expired by --unplayed-ttl, or an organizer's game by --idle-ttl, at version 0), else
    ``game_expired`` (--idle-ttl after its last move). Placed right after the last event of the game."""
    version, index = gone.position
    kind = "game_abandoned" if version == 0 else "game_expired"
    return {"kind": kind, "seat": -1, "version": version, "index": index + 1}


def _old_format(game_id: str) -> NotAllowedNow:
    return NotAllowedNow("STORED_BY_EARLIER_VERSION", f"game {game_id} was stored by an earlier version of the referee")


def _check_version(version: int, expected: int | None) -> None:
    if expected is not None and expected != version:
        raise StaleVersion("VERSION_MISMATCH", f"the game is at version {version}, not {expected}")


def _whole_versions(events: list[StoredEvent], limit: int, *, fetched_all: bool) -> tuple[list[StoredEvent], bool]:
    """A replay page: whole versions only, at most ``limit`` events and REPLAY_PAGE_BYTES of payload (but never
    empty while events remain); and whether more remain. Unless ``fetched_all``, the last version in ``events``
    may continue beyond them, so it is left for the next page."""
    groups: list[list[StoredEvent]] = []
    for e in events:
        if groups and groups[-1][0].version == e.version:
            groups[-1].append(e)
        else:
            groups.append([e])
    if not fetched_all and len(groups) > 1:
        groups.pop()
    page: list[StoredEvent] = []
    size = 0
    for group in groups:
        group_size = sum(len(e.payload) for e in group)
        if page and (len(page) + len(group) > limit or size + group_size > REPLAY_PAGE_BYTES):
            return page, True
        page += group
        size += group_size
    return page, not fetched_all
