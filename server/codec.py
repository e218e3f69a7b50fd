"""The server's side of the wire: request specs and response envelopes on top of the one wire codec (``wire``),
with the server's caches (server.memo) for what recurs: event bodies, hand results, legal moves, a view's seats and
last hand in wire format.

Inbound, ``wire`` raises ``wire.Malformed`` for a malformed message and lets the engine's ``InvalidMoveError``
(e.g. INVALID_CARD for unknown card text) through; both become INVALID_ARGUMENT (server.errors).
Outbound reads the service's dicts (``engine.view`` / ``event_for`` with cards in text form, plus the server's
additions: version, seats, legal moves as engine moves).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import engine
import wire
from engine import moves
from engine.timeouts import DEFAULT_MAX_AUTO_MOVES
from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.clocks import TimeControl
from server.delay import SpectatorDelay
from server.errors import BadRequest, Unauthenticated
from server.memo import Memo
from server.model import (
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
from wire import events

# the names other modules and tests know the wire's functions by
MAX_VERSION = wire.MAX_VERSION
version_from_proto = wire.version_from_proto
cards_from_proto = wire.cards_from_proto
move_from_proto = wire.move_from_proto
options_from_proto = wire.options_from_proto


# ------------------------------------------------------------------------------------------------ inbound


def game_spec_from_proto(req: rpb.CreateGameRequest) -> GameSpec:
    """What CreateGame asks for; MatchSettings fields become the options of the same name."""
    overrides: dict[str, Any] = options_from_proto(req.options)
    for name in ("target_score", "max_hands"):
        if req.match.HasField(name):
            if name in overrides:
                raise BadRequest("INVALID_OPTION", f"{name} is given both as an option and as a match setting")
            overrides[name] = getattr(req.match, name)
    return GameSpec(
        profile=req.profile,
        overrides=overrides,
        seats=tuple(SeatSpec(s.display_name, wire.seat_kind_from_proto(s.kind), s.open, s.bot) for s in req.seats),
        allow_spectators=req.allow_spectators,
        presets=tuple(wire.deal_from_proto(d) for d in req.preset_deals),
        seed=req.seed or None,
        spectator_delay=SpectatorDelay(req.spectator_delay.moves, req.spectator_delay.until_hand_end),
        time_control=time_control_from_proto(req),
    )


def time_control_from_proto(req: rpb.CreateGameRequest) -> TimeControl | None:
    """CreateGame's time control and timeout policy (None: no time control; a policy alone is refused)."""
    value = wire.time_control_from_proto(req.time_control) if req.HasField("time_control") else None
    if value is None:
        if req.HasField("timeout_policy"):
            raise BadRequest("INVALID_TIME_CONTROL", "a timeout policy needs a time control")
        return None
    policy, max_auto = wire.timeout_policy_from_proto(req.timeout_policy)
    kind, a, b = value
    return TimeControl(kind, a, b, policy, max_auto or DEFAULT_MAX_AUTO_MOVES).checked()


# ----------------------------------------------------------------------------------------------- outbound


def settings_to_proto(settings: SettingsData) -> pb.GameSettings:
    """GameSettings from the service's settings dict (profile, options, seats, spectators, organizer_deals,
    seed_commitment; revealed once the match is over: seed, preset_deals)."""
    out = pb.GameSettings(
        profile=settings["profile"],
        options=wire.options_to_proto(settings["options"]),
        seats=[
            pb.SeatSpec(
                display_name=s["name"],
                kind=wire.SEAT_KINDS.get(s["kind"], pb.SEAT_KIND_HUMAN),
                open=s["open"],
                bot=s.get("bot", ""),
            )
            for s in settings["seats"]
        ],
        spectators_allowed=settings["spectators"],
        organizer_deals=settings["organizer_deals"],
        seed_commitment=settings.get("seed_commitment", ""),
        seed=bytes.fromhex(settings.get("seed", "")),
        spectator_delay=pb.SpectatorDelay(**settings["spectator_delay"]) if settings.get("spectator_delay") else None,
        preset_deals=[
            pb.PresetDeal(
                dealer=d["dealer"], hands=[pb.Cards(cards=h) for h in d["hands"]], upcard=d["upcard"], stock=d["stock"]
            )
            for d in settings.get("preset_deals", ())
        ],
    )
    if (control := settings.get("time_control")) is not None:
        out.time_control.CopyFrom(wire.time_control_to_proto(control["kind"], control["a"], control["b"]))
        out.timeout_policy.CopyFrom(wire.timeout_policy_to_proto(control["policy"], control["max_auto_moves"]))
    return out


def move_to_proto(d: Mapping[str, Any]) -> pb.Move:
    """The Move message of ``engine.move_to_dict`` output (for tests and tools; the service has engine moves)."""
    return wire.move_to_proto(engine.move_from_dict(dict(d)))


_SIMPLE_MOVES = (engine.Discard, engine.DrawStock, engine.DrawDiscard, engine.Pass, engine.Done)
_LEGAL_MOVE_BYTES: dict[engine.Move, bytes] = {}  # a move without melds -> one GameView.legal_moves element


def _legal_move_bytes(move: engine.Move) -> bytes:
    # The encodings of the distinct moves without melds (discard X, knock X, draw, ...: a few hundred) are made
    # once and shared; the others (melds, lay-offs) are encoded each time.
    encoded = _LEGAL_MOVE_BYTES.get(move)
    if encoded is None:
        encoded = wire.legal_move_bytes(move)
        if isinstance(move, _SIMPLE_MOVES) or (isinstance(move, engine.Knock) and move.melds is None):
            _LEGAL_MOVE_BYTES[move] = encoded
    return encoded


def event_to_proto(d: EventData) -> pb.Event:
    """An Event from a viewer's event dict (``engine.event_for`` plus "version" and "index"), with the memoized
    event bodies."""
    event = pb.Event()
    events.fill_event(event, d, body=_event_body)
    return event


def _fill_event(event: pb.Event, d: EventData) -> None:
    events.fill_event(event, d, body=_event_body)


_EVENT_BODIES: Memo[tuple[str, tuple[tuple[str, Any], ...], tuple[type, ...]], bytes] = Memo("event_bodies", 2.0)


def _event_body(kind: str, data: dict[str, Any]) -> bytes | None:
    # Most events carry a few plain values that recur ({"card": "TD"}, {"source": "stock", ...}): their data Struct
    # and typed payload are encoded once (wire.events.event_body) and merged into each event (C code, faster than
    # building either). The key has the values' types (True == 1, but a Struct tells them apart). None for an
    # event with a list or dict inside: built every time.
    try:
        key = (kind, tuple(data.items()), tuple(map(type, data.values())))
        cached = _EVENT_BODIES.get(key)
    except TypeError:
        return None
    if cached is None:
        encoded = events.event_body(kind, data)
        cached = _EVENT_BODIES.put(key, encoded, _ENTRY_BYTES + 2 * len(encoded) + len(key[1]) * 64)
    return cached


_HAND_RESULTS: Memo[int, tuple[Mapping[str, Any], pb.HandResult]] = Memo("hand_results")
_HAND_RESULT_TEXTS: Memo[str, pb.HandResult] = Memo("hand_result_texts", 0.25)
# Bounds (server.memo) count a fixed cost per entry besides what it holds.
_ENTRY_BYTES = 256


def _hand_result(d: Mapping[str, Any]) -> pb.HandResult:
    # The same hand result comes with every view until the next hand ends, as the very same dict (the engine's
    # states share it) as long as this process plays the game: found by identity, else by its JSON.
    hit = _HAND_RESULTS.get(id(d))
    if hit is None or hit[0] is not d:  # the entry holds its dict, so an id is not reused while it is cached
        text = json.dumps(d, sort_keys=True)
        result = _HAND_RESULT_TEXTS.get(text)
        if result is None:
            result = _HAND_RESULT_TEXTS.put(text, _hand_result_of(text), _ENTRY_BYTES + 5 * len(text))
        # the entry keeps the dict alive (the engine's states share it anyway): its text counted again
        hit = _HAND_RESULTS.put(id(d), (d, result), 2 * _ENTRY_BYTES + 3 * len(text))
    return hit[1]


def _hand_result_of(text: str) -> pb.HandResult:
    return events.hand_result_to_proto(json.loads(text))


_match_result = events.match_result_to_proto


def view_to_proto(v: ViewData) -> pb.GameView:
    """A GameView from the service's view dict (``engine.view`` plus game_id, version, role, seats, legal)."""
    view = pb.GameView()
    _fill_view(view, v)
    return view


def _fill_view(view: pb.GameView, v: ViewData) -> None:
    wire.fill_view(view, v, _hand_result, _legal_move_bytes, pieces=_view_pieces)


def _view_pieces(v: ViewData) -> bytes | None:
    # The parts of a view that recur from one move to the next (the seats, the legal moves, the last hand), in
    # wire format from their caches, merged into the view at once (one parse in C, no message built).
    seats = _seats_bytes(v)
    if seats is None:
        return None
    if legal := v.get("legal_moves"):
        seats += _legal_bytes(legal)
    if (last := v.get("last_hand")) is not None:
        seats += _last_hand_bytes(last)
    return seats


_SEATS: Memo[tuple[Any, ...], tuple[object, bytes]] = Memo("view_seats")


def _seats_bytes(v: ViewData) -> bytes | None:
    # A game's seats change only with the hand sizes, known cards, scores and boxes (and its names, a new tuple
    # from server.cache.public_seats when they change): found by the seats' identity (the entry holds them, so an
    # id is not reused while it is cached) and those values. None (built with the view) for a list of seats (an
    # old answer's, seats_at) and Hollywood's per-game scores.
    seats = v["seats"]
    if type(seats) is not tuple or "games" in v:
        return None
    key = (id(seats), tuple(v["hand_sizes"]), tuple(map(tuple, v["known_cards"])), tuple(v["scores"]),
           tuple(v["boxes"]))  # fmt: skip
    hit = _SEATS.get(key)
    if hit is None or hit[0] is not seats:
        encoded = wire.seats_bytes(v)
        hit = _SEATS.put(key, (seats, encoded), _ENTRY_BYTES + 2 * len(encoded) + 32 * len(key[2]) + 64)
    return hit[1]


# The engine's own move objects (engine.moves: the draws, pass, done, declare, big gin, each discard and knock
# of no melds given) live as long as the process, so their ids are never another object's: a legal move's bytes
# are found by its id, in C, without hashing a dataclass (a Python call per move).
_INTERNED_MOVES: tuple[engine.Move, ...] = (  # held here too: their ids stay theirs
    *(moves.DRAW_STOCK, moves.DRAW_DISCARD, moves.PASS, moves.DONE, moves.DECLARE_BEST, moves.BIG_GIN_MOVE),
    *moves.DISCARDS,
    *moves.KNOCKS,
)
_INTERNED_MOVE_BYTES: dict[int, bytes] = {id(m): wire.legal_move_bytes(m) for m in _INTERNED_MOVES}


def _legal_bytes(legal: Sequence[engine.Move]) -> bytes:
    try:
        return b"".join(map(_INTERNED_MOVE_BYTES.get, map(id, legal)))  # type: ignore[arg-type]  # None: below
    except TypeError:  # a None: a meld, a lay-off, ...: move by move
        return b"".join([_legal_move_bytes(m) for m in legal])


_LAST_HANDS: Memo[int, tuple[Mapping[str, Any], bytes]] = Memo("last_hand_bytes", 0.25)


def _last_hand_bytes(d: Mapping[str, Any]) -> bytes:
    # GameView.last_hand, as _hand_result finds it (by identity: the entry holds its dict), in wire format
    hit = _LAST_HANDS.get(id(d))
    if hit is None or hit[0] is not d:
        encoded = wire.last_hand_bytes(_hand_result(d))
        hit = _LAST_HANDS.put(id(d), (d, encoded), 2 * _ENTRY_BYTES + 3 * len(encoded))
    return hit[1]


def move_response_to_proto(r: MoveOutcome) -> rpb.SubmitMoveResponse:
    """SubmitMoveResponse from the service's move outcome (version, events, view)."""
    response = rpb.SubmitMoveResponse()
    response.version = r.version
    add = response.events.add
    for e in r.events:
        _fill_event(add(), e)
    if r.view is not None:  # (always, for a move answered to its seat)
        _fill_view(response.view, r.view)
    return response


def analysis_to_proto(a: engine.HandAnalysis) -> rpb.AnalyzeHandResponse:
    """AnalyzeHandResponse from the engine's hand analysis (``Referee.analyze``)."""
    text = engine.card_text
    return rpb.AnalyzeHandResponse(
        min_deadwood=a.min_deadwood,
        arrangements=[
            rpb.Arrangement(
                melds=[pb.Cards(cards=[text(c) for c in engine.cards_of(m)]) for m in x.melds],
                deadwood_cards=[text(c) for c in engine.cards_of(x.deadwood_cards)],
            )
            for x in a.arrangements
        ],
        arrangements_truncated=a.truncated,
        knock_discards=[rpb.KnockDiscard(card=text(k.card), deadwood=k.deadwood) for k in a.knock_discards],
    )


# ------------------------------------------------------------------------------ envelopes (both transports)


def create_response_to_proto(created: CreatedGame) -> rpb.CreateGameResponse:
    """CreateGame's answer, from ``Referee.create_game``'s outcome (the gRPC and HTTP transports alike)."""
    return rpb.CreateGameResponse(
        game_id=created.game_id,
        seat_tokens=[rpb.SeatToken(seat=s, token=t) for s, t in sorted(created.tokens.items())],
        spectator_token=created.spectator_token,
        settings=settings_to_proto(created.settings),
        version=created.version,
        seed_commitment=created.settings["seed_commitment"],
    )


def watch_response_to_proto(update: WatchUpdate) -> rpb.WatchGameResponse:
    """One WatchGame message, from one of ``Referee.watch``'s updates (a snapshot or an event)."""
    if update.snapshot is not None:
        return rpb.WatchGameResponse(snapshot=view_to_proto(update.snapshot))
    assert update.event is not None
    return rpb.WatchGameResponse(event=event_to_proto(update.event))


def get_response_to_proto(got: GameSnapshot) -> rpb.GetGameResponse:
    """GetGame's answer, from ``Referee.get_game``'s outcome."""
    return rpb.GetGameResponse(view=view_to_proto(got.view), settings=settings_to_proto(got.settings))


def replay_response_to_proto(replay: ReplayPage) -> rpb.GetReplayResponse:
    """GetReplay's answer, from ``Referee.replay``'s outcome."""
    response = rpb.GetReplayResponse(
        settings=settings_to_proto(replay.settings),
        initial=view_to_proto(replay.initial),
        events=[event_to_proto(e) for e in replay.events],
        current=view_to_proto(replay.current),
    )
    if replay.next_after_version is not None:
        response.next_after_version = replay.next_after_version
    return response


def resign_response_to_proto(result: ResignOutcome) -> rpb.ResignResponse:
    """Resign's answer, from ``Referee.resign``'s outcome (a move's)."""
    moved = move_response_to_proto(result)
    return rpb.ResignResponse(version=moved.version, events=moved.events, view=moved.view)


def create_token(presented: str | None, request: rpb.CreateGameRequest) -> str | None:
    """The token CreateGame goes on: only preset deals and seeds need one (the organizer's); there a malformed
    header (``presented`` "") is BAD_TOKEN and none MISSING_TOKEN (the referee's check); elsewhere any header is
    ignored like none (docs/design.md's token table)."""
    if presented:
        return presented
    if presented == "" and (request.preset_deals or request.seed):
        raise Unauthenticated("BAD_TOKEN", "authorization must be 'Bearer <organizer token>'")
    return None


def presented_token(header: str | None) -> str | None:
    """The token of an ``authorization`` header's value (either transport): None without a header, "" (a token
    that is nobody's) for one that is not 'Bearer <token>' or whose token is empty."""
    if header is None:
        return None
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def bearer_token(header: str | None, *, required: bool) -> str | None:
    """The caller's token from an ``authorization`` header's value. ``required``: without one MISSING_TOKEN, a
    malformed one BAD_TOKEN. Otherwise a malformed header counts as no token (docs/design.md's token table)."""
    token = presented_token(header)
    if token is None:
        if required:
            raise Unauthenticated("MISSING_TOKEN", "this call needs 'authorization: Bearer <token>' metadata")
        return None
    if not token:
        if required:
            raise Unauthenticated("BAD_TOKEN", "authorization must be 'Bearer <token>'")
        return None
    return token
