"""The application service: the referee's use cases, independent of the transport.

A move: authorize the token, load state + version (one Redis round trip), ``engine.apply``, then commit with one
Lua script (version check, state, events, idempotency record). Optimistic concurrency: a commit that finds the
game at another version is retried from the load (the move may still be legal) unless the caller pinned
``expected_version``, in which case it is ABORTED.

Everything returned is JSON-able (engine views and events plus the server's additions), so an idempotent replay
of a stored response is byte-for-byte the original once encoded.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import hmac
import json
import re
import secrets
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from typing import Any

import orjson

import engine
from server.bot_seats import HOUSE_BOTS, BotSeat, BotSeats
from server.cache import (
    StateCache,
    commit_ids,
    config_json,
    config_of_full_state,
    parsed_meta,
    progress_json,
    public_seats,
)
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
from server.model import Caller, GameSpec, SeatSpec
from server.open_games import OpenGames, release_quietly
from server.store import MAX_SEATS, MAX_SEQ, GameStore, StoredEvent, StoredGame

_GAME_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
MAX_NAME = 64
MAX_REQUEST_ID = 128
MAX_PRESETS = 200
MAX_ANALYSIS_ARRANGEMENTS = 100
REPLAY_PAGE = 500
REPLAY_PAGE_MAX = 2000
REPLAY_SLACK = 64  # fetched beyond a page, to see where its last version ends
REPLAY_PAGE_BYTES = 128 * 1024  # stays well inside the 256 KiB message limit
_SEATS = tuple(Caller("seat", seat) for seat in range(MAX_SEATS))  # Callers are frozen: one of each will do
_SPECTATOR = Caller("spectator")


def token_hash(token: str) -> str:
    """What is stored of a token: its SHA-256 (hex)."""
    return hashlib.sha256(token.encode()).hexdigest()


_PRESENTED: dict[str, str] = {}  # token -> token_hash(token), for the tokens presented lately


def presented_hash(token: str) -> str:
    """``token_hash`` of a token presented by a caller, remembered: a seat presents the same token with every
    move (bounded: at most 16384 tokens of at most 64 characters, ours being 46; forgotten all at once when full)."""
    if len(token) > 64:
        return token_hash(token)
    digest = _PRESENTED.get(token)
    if digest is None:
        if len(_PRESENTED) >= 16384:
            _PRESENTED.clear()
        digest = _PRESENTED[token] = token_hash(token)
    return digest


def new_secret(prefix: str, nbytes: int) -> str:
    """An unguessable id or token (``nbytes`` from the OS CSPRNG, URL-safe) behind a short prefix, so that it never
    begins with "-" (command lines would take it for an option) and says what it is."""
    return prefix + secrets.token_urlsafe(nbytes)


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
    if not 1 <= len(name) <= MAX_NAME or not name.isprintable():
        raise BadRequest("INVALID_NAME", f"a display name is 1..{MAX_NAME} printable characters")


class Referee:
    """The referee's use cases over one GameStore."""

    def __init__(
        self,
        store: GameStore,
        *,
        organizer_token: str | None = None,
        hub: EventHub | None = None,
        max_attempts: int = 8,
        max_open_games: int = 100_000,
        bot_seats: BotSeats | None = None,
    ) -> None:
        """``max_open_games``: the cap on unfinished games, shared in Redis by the referees using it (0: none).
        ``bot_seats``: the registry of house-bot seats (default: in the store's Redis)."""
        self.store = store
        self.open_games = (
            OpenGames(store.client, max_open_games, op_timeout_s=store.op_timeout_s) if max_open_games else None
        )
        self.hub = hub or EventHub(store)
        self._organizer_hash = token_hash(organizer_token) if organizer_token else None
        self._max_attempts = max_attempts
        self._states = StateCache()
        self.bot_seats = bot_seats or BotSeats(store.client, op_timeout_s=store.op_timeout_s)
        #: Called after a game with house-bot seats is created (this process's bot host looks at once).
        self.on_bot_seats: Callable[[], None] | None = None

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
        """The caller, or Unauthenticated."""
        caller = self.identify(game, token)
        if caller is None:
            raise Unauthenticated("BAD_TOKEN", "the token is not one of this game's")
        return caller

    async def _load(self, game_id: str, idem_field: str | None = None) -> StoredGame:
        check_game_id(game_id)
        game = await self.store.load(game_id, idem_field)
        if game is None:
            raise GameNotFound("GAME_NOT_FOUND", f"no game {game_id}")
        if not game.config:  # stored by an earlier version, whole in "state": its config gets its own field now
            try:
                config = config_of_full_state(game.state_json)
            except Exception as exc:  # a stored state that does not load is a bug, never the caller's fault
                raise RuntimeError(f"game {game_id}: stored state does not load") from exc
            await self.store.set_config(game_id, config)
            game = dataclasses.replace(game, config=config)
        return game

    # ------------------------------------------------------------------------------------------ views

    def _view(self, game: StoredGame, state: engine.GameState, version: int, viewer: int, role: str) -> dict[str, Any]:
        view = engine.view(state, viewer)
        view.update(game_id=game.game_id, version=version, role=role, seats=public_seats(game.meta))
        if role == "seat" and state.to_act == viewer and state.phase != "match_over":
            view["legal_moves"] = [_move_dict(m) for m in engine.legal_moves(state)]
        return view

    def _settings(self, game: StoredGame, rules: engine.Rules) -> dict[str, Any]:
        meta = parsed_meta(game.meta)
        seats = public_seats(game.meta)
        if any(seat.get("bot") for seat in meta["seats"]):  # the house bots' names, only where there are some
            seats = [{**s, "bot": m.get("bot", "")} for s, m in zip(seats, meta["seats"], strict=True)]
        return {
            "profile": meta["profile"],
            "options": rules.to_dict(),
            "seats": seats,
            "spectators": meta["spectators"],
            "organizer_deals": meta["organizer_deals"],
        }

    @staticmethod
    def _event_for(stored: StoredEvent, viewer: int) -> dict[str, Any]:
        event = engine.Event.from_dict(json.loads(stored.payload))
        return {**engine.event_for(event, viewer), "version": stored.version, "index": stored.index}

    # ----------------------------------------------------------------------------------------- use cases

    async def create_game(self, spec: GameSpec, token: str | None) -> dict[str, Any]:
        """Create a game; returns game_id, tokens {seat: token}, spectator_token, settings, version."""
        organizer = self.is_organizer(token)
        if spec.presets or spec.seed is not None:
            if token is None:
                raise Unauthenticated("MISSING_TOKEN", "preset deals and seeds need the organizer token")
            if not organizer:
                raise PermissionDenied("ORGANIZER_ONLY", "preset deals and seeds are for the organizer only")
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
        overrides = {k: v for k, v in spec.overrides.items() if k != "players"}
        profile = spec.profile or "gin"
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
        }
        stored_state, stored_meta, stored_config = progress_json(state), json.dumps(meta), config_json(state)
        fields: dict[str, str | bytes] = {
            "config": stored_config,
            "state": stored_state,
            "version": "0",
            "meta": stored_meta,
            "start": json.dumps(engine.view(state, engine.REFEREE)),
        }
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
            # the first deal's events are version 0 of the stream: a replay is the whole game as events
            stored = await self.store.create(game_id, fields, [json.dumps(e.to_dict()) for e in dealt], ttl_s=ttl_s)
        except BaseException:
            if self.open_games is not None:
                await release_quietly(self.open_games, game_id)
            if bots:
                with contextlib.suppress(Exception):  # left behind, it is dropped by the host that finds no game
                    await self.bot_seats.unregister(game_id, [b.seat for b in bots])
            raise
        if not stored:
            raise RuntimeError("a fresh random game id was taken")
        if bots and self.on_bot_seats is not None:
            self.on_bot_seats()
        for bot in bots:
            del tokens[bot.seat]
        created = StoredGame(game_id, stored_state, 0, stored_meta.encode(), stored_config, None)
        return {
            "game_id": game_id,
            "tokens": tokens,
            "spectator_token": spectator_token,
            "settings": self._settings(created, rules),
            "version": 0,
        }

    async def join_game(self, game_id: str, seat: int | None, name: str) -> tuple[int, str]:
        """Take an open seat (the lowest one when ``seat`` is None): the seat and its new token."""
        _check_name(name, required=True)
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

    async def get_game(self, game_id: str, token: str | None) -> dict[str, Any]:
        """The caller's view and the game's settings."""
        game = await self._load(game_id)
        caller = self.authorize(game, token)
        state = self._states.get(game)
        return {
            "view": self._view(game, state, game.version, caller.viewer, caller.role),
            "settings": self._settings(game, state.rules),
        }

    async def validate_move(
        self, game_id: str, token: str | None, move: engine.Move, expected_version: int | None
    ) -> int:
        """Check ``move`` as submit_move would, changing nothing: the version it was checked against."""
        game = await self._load(game_id)
        seat = self._mover(game, token)
        _check_version(game.version, expected_version)
        engine.apply(self._states.get(game), seat, move)
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
    ) -> dict[str, Any]:
        """Apply ``move`` as the caller's seat: {version, events (as the caller sees them), view}."""
        if len(request_id) > MAX_REQUEST_ID or not request_id.isprintable():
            raise BadRequest("INVALID_REQUEST_ID", f"a request_id is at most {MAX_REQUEST_ID} printable characters")
        move_hash = _move_hash(move) if request_id else ""
        # Scoped by token (that is: by seat), so that nobody can fetch another seat's response by its key.
        idem_field = f"idem:{presented_hash(token or '')[:32]}:{request_id}" if request_id else None
        latest = self._states.latest(game_id)
        if latest is not None:  # the common case: this process served the game's last move
            cached, state = latest
            caller = self.identify(cached, token)
            if caller is not None and caller.role == "seat" and expected_version in (None, cached.version):
                try:
                    response = await self._commit_move(cached, state, caller.seat, move, move_hash, idem_field)
                except engine.RuleError:
                    response = None  # perhaps refused only because the cache is stale: the loading path decides
                if response is not None:
                    return response
        for _ in range(self._max_attempts):
            game = await self._load(game_id, idem_field)
            seat = self._mover(game, token)
            if game.idem_record is not None:
                return _replayed(game.idem_record, move_hash)
            _check_version(game.version, expected_version)
            response = await self._commit_move(game, self._states.get(game), seat, move, move_hash, idem_field)
            if response is not None:
                return response
            if expected_version is not None:
                raise StaleVersion("VERSION_CONFLICT", "another move was committed first; reload and retry")
        raise StaleVersion("CONTENDED", "the game kept changing under this move; reload and retry")

    async def _commit_move(
        self,
        game: StoredGame,
        state: engine.GameState,
        seat: int,
        move: engine.Move,
        move_hash: str,
        idem_field: str | None,
    ) -> dict[str, Any] | None:
        """Apply ``move`` to ``state`` (the game at ``game.version``) and commit it: the response, or None when the
        game is no longer at that version (nothing was written)."""
        new_state, events = engine.apply(state, seat, move)
        version = game.version + 1
        response = {
            "version": version,
            "events": [{**engine.event_for(e, seat), "version": version, "index": i} for i, e in enumerate(events, 1)],
            "view": self._view(game, new_state, version, seat, "seat"),
        }
        record = (move_hash + json.dumps(response, separators=(",", ":"))).encode() if idem_field else b""
        new_json = progress_json(new_state)
        result = await self.store.commit(
            game.game_id,
            base_version=game.version,
            state_json=new_json,
            commit_id=next(commit_ids),
            events=[orjson.dumps(e.to_dict()) for e in events],
            idem_field=idem_field or "",
            idem_record=record,
            match_over=new_state.phase == "match_over",
        )
        if result.outcome == "ok":
            self._states.put(StoredGame(game.game_id, new_json, version, game.meta, game.config, None), new_state)
            if self.open_games is not None and new_state.phase == "match_over":
                self.open_games.release_soon(game.game_id)  # the only move that costs a round trip more
            return response
        if result.outcome == "dup":
            return _replayed(result.record, move_hash)
        self._states.forget(game.game_id)
        if result.outcome == "missing":
            raise GameNotFound("GAME_NOT_FOUND", f"no game {game.game_id}")
        return None

    async def watch(
        self, game_id: str, token: str | None, after_version: int | None, after_index: int | None = None
    ) -> AsyncIterator[dict[str, Any]]:
        """{"snapshot": view} (unless resuming), then {"event": event} for every later event, as the caller may
        see them; ends after the match_ended event. Resuming: every event after position (after_version,
        after_index), or after the whole of after_version when after_index is None."""
        game = await self._load(game_id)
        caller = self.authorize(game, token)
        state = self._states.get(game)
        if after_version is None:
            if after_index is not None:
                raise BadRequest("INVALID_POSITION", "after_index needs after_version")
            yield {"snapshot": self._view(game, state, game.version, caller.viewer, caller.role)}
            after_version = game.version
        elif after_version > game.version:
            raise BadRequest("VERSION_AHEAD", f"the game is at version {game.version}, not {after_version} yet")
        position = (after_version, MAX_SEQ if after_index is None else after_index)
        # A finished game gets no new event: what is left is read straight from the stream.
        feed = self._rest(game_id, position) if state.phase == "match_over" else self.hub.follow(game_id, position)
        async with contextlib.aclosing(feed):  # stop following (unregister) as soon as the watch ends
            async for stored in feed:
                event = self._event_for(stored, caller.viewer)
                yield {"event": event}
                if event["kind"] == "match_ended":
                    return

    async def _rest(self, game_id: str, position: tuple[int, int]) -> AsyncGenerator[StoredEvent, None]:
        while page := await self.store.events_since(game_id, position, count=REPLAY_PAGE):
            for stored in page:
                yield stored
            position = (page[-1].version, page[-1].index)

    async def replay(
        self, game_id: str, token: str | None, after_version: int | None, max_events: int
    ) -> dict[str, Any]:
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
        start = await self.store.start_view(game_id)
        if start is None:
            raise GameNotFound("GAME_NOT_FOUND", f"no game {game_id}")
        limit = max_events or REPLAY_PAGE
        fetch = limit + REPLAY_SLACK
        after = (after_version, MAX_SEQ) if after_version is not None else (-1, 0)
        events = await self.store.events_since(game_id, after, count=fetch)
        page, more = _whole_versions(events, limit, fetched_all=len(events) < fetch)
        initial = {**json.loads(start), "game_id": game_id, "version": 0, "role": "referee"}
        initial["seats"] = public_seats(game.meta)
        return {
            "settings": self._settings(game, state.rules),
            "initial": initial,
            "events": [self._event_for(e, engine.REFEREE) for e in page],
            "current": self._view(game, state, game.version, engine.REFEREE, "referee"),
            "next_after_version": page[-1].version if more and page else None,
        }

    @staticmethod
    def analyze(cards: int, profile: str, overrides: Mapping[str, Any]) -> dict[str, Any]:
        """Minimum deadwood, the optimal arrangements, and for 11 Gin cards the discards that allow a knock."""
        n = cards.bit_count()
        if not 1 <= n <= 11:
            raise BadRequest("INVALID_HAND_SIZE", f"a hand to analyze has 1..11 cards, not {n}")
        rules = engine.rules_from_profile(profile or "gin", **overrides)
        ace_high = rules.game == "rummy" and rules.ace_high_low
        arrangements = []
        truncated = False
        for i, (_, melds) in enumerate(engine.arrangements(cards, ace_high, rules.ace_value)):
            if i == MAX_ANALYSIS_ARRANGEMENTS:
                truncated = True
                break
            covered = 0
            for meld in melds:
                covered |= meld
            arrangements.append({
                "melds": [[engine.card_text(c) for c in engine.cards_of(m)] for m in melds],
                "deadwood_cards": [engine.card_text(c) for c in engine.cards_of(cards & ~covered)],
            })  # fmt: skip
        knocks = []
        if rules.game == "gin" and n == 11:
            for c in engine.knock_discards(cards, rules.knock_limit):
                knocks.append({"card": engine.card_text(c), "deadwood": engine.min_deadwood(cards & ~(1 << c))})
        return {
            "min_deadwood": engine.min_deadwood(cards, ace_high, rules.ace_value),
            "arrangements": arrangements,
            "truncated": truncated,
            "knock_discards": knocks,
        }


_MOVE_DICTS: dict[engine.Move, dict[str, Any]] = {}


def _move_dict(move: engine.Move) -> dict[str, Any]:
    """``engine.move_to_dict(move)``, made once per distinct move (moves are frozen, so hashable) and shared: the
    legal moves of every view are mostly the same few hundred (discard X, draw, knock X)."""
    d = _MOVE_DICTS.get(move)
    if d is None:
        if len(_MOVE_DICTS) >= 65536:
            _MOVE_DICTS.clear()
        d = _MOVE_DICTS[move] = engine.move_to_dict(move)
    return d


def _move_hash(move: engine.Move) -> str:
    """What an idempotency record remembers of its move."""
    return hashlib.sha256(json.dumps(engine.move_to_dict(move), sort_keys=True).encode()).hexdigest()


def _check_version(version: int, expected: int | None) -> None:
    if expected is not None and expected != version:
        raise StaleVersion("VERSION_MISMATCH", f"the game is at version {version}, not {expected}")


def _replayed(record: bytes, move_hash: str) -> dict[str, Any]:
    """The stored response of an idempotency key, if it was recorded for the same move."""
    if record[:64].decode() != move_hash:
        raise NotAllowedNow("IDEMPOTENCY_KEY_REUSED", "this request_id was already used for another move")
    response: dict[str, Any] = json.loads(record[64:])
    return response


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
