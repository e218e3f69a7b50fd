"""The only translation between protobuf messages and engine types / engine JSON.

Inbound (``*_from_proto``) raises ``BadRequest`` for a malformed message and lets the engine's
``InvalidMoveError`` (e.g. INVALID_CARD for unknown card text) through; both become INVALID_ARGUMENT.
Outbound (``*_to_proto``) reads the JSON-able dicts the engine's ``view`` / ``event_for`` produce (cards already
in text form) plus the server's additions (version, seats, legal moves).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from google.protobuf import struct_pb2

import engine
from engine.errors import excerpt
from engine.timeouts import AUTO_MOVE, DEFAULT_MAX_AUTO_MOVES, FORFEIT_MATCH
from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.clocks import TimeControl
from server.delay import SpectatorDelay
from server.errors import BadRequest, Unauthenticated
from server.memo import Memo
from server.model import GameSpec, SeatSpec
from wire import events
from wire.clocks import seat_clocks_to_proto

_PHASES = {
    "take_or_pass": pb.PHASE_TAKE_OR_PASS, "draw": pb.PHASE_DRAW, "discard": pb.PHASE_DISCARD,
    "play": pb.PHASE_PLAY, "layoff": pb.PHASE_LAYOFF, "last_card": pb.PHASE_LAST_CARD,
    "match_over": pb.PHASE_MATCH_OVER,
}  # fmt: skip
_GAMES = {"gin": pb.GAME_KIND_GIN, "rummy": pb.GAME_KIND_RUMMY}
_MELD_KINDS = {"set": pb.MELD_KIND_SET, "run": pb.MELD_KIND_RUN}
_ROLES = {"seat": pb.ROLE_SEAT, "spectator": pb.ROLE_SPECTATOR, "referee": pb.ROLE_REFEREE}
SEAT_KINDS = {"human": pb.SEAT_KIND_HUMAN, "bot": pb.SEAT_KIND_BOT}
_SEAT_KIND_NAMES: dict[int, str] = {int(v): k for k, v in SEAT_KINDS.items()}


# ------------------------------------------------------------------------------------------------ inbound


MAX_VERSION = 2**53 - 1  # no game gets near it (a move a microsecond for 285 years); exact in JSON and JavaScript


def version_from_proto(value: int, name: str) -> int:
    """A version field of a request (uint64 on the wire): refused beyond MAX_VERSION (VERSION_AHEAD), which
    no game reaches (and past which a stream position would overflow in Redis)."""
    if value > MAX_VERSION:
        raise BadRequest("VERSION_AHEAD", f"{name} {value} is beyond any game's version (at most {MAX_VERSION})")
    return value


def meld_id_from_proto(value: int) -> int:
    """A table meld id of a move (int32 on the wire): ids count from 0, so a negative one is a malformed move
    (BAD_MOVE); one that is not on the table is the rules' UNKNOWN_MELD."""
    if value < 0:
        raise BadRequest("BAD_MOVE", f"a meld id is 0 or more, not {value}")
    return value


def cards_from_proto(texts: Iterable[str]) -> int:
    """Card texts to a mask; a card named twice is malformed."""
    mask = 0
    for text in texts:
        card = engine.parse_card(text)
        bit = 1 << card
        if mask & bit:
            raise BadRequest("DUPLICATE_CARD", f"card {engine.card_text(card)} named twice")
        mask |= bit
    return mask


def _melds(groups: Iterable[pb.Cards]) -> tuple[int, ...]:
    return tuple(cards_from_proto(g.cards) for g in groups)


def move_from_proto(move: pb.Move) -> engine.Move:
    """The engine move of a Move message (exactly one oneof field set)."""
    which = move.WhichOneof("move")
    if which is None:
        raise BadRequest("MISSING_MOVE", "the request has no move")
    if which == "draw_stock":
        return engine.DrawStock()
    if which == "draw_discard":
        return engine.DrawDiscard()
    if which == "pass_turn":
        return engine.Pass()
    if which == "done":
        return engine.Done()
    if which == "discard":
        return engine.Discard(engine.parse_card(move.discard.card))
    if which == "knock":
        knock = move.knock
        return engine.Knock(
            engine.parse_card(knock.discard), _melds(knock.melds.melds) if knock.HasField("melds") else None
        )
    if which == "big_gin":
        big = move.big_gin
        return engine.BigGin(_melds(big.melds.melds) if big.HasField("melds") else None)
    if which == "meld":
        return engine.MeldMove(cards_from_proto(move.meld.cards))
    if which == "lay_off":
        return engine.LayOff(engine.parse_card(move.lay_off.card), meld_id_from_proto(move.lay_off.meld_id))
    declare = move.declare
    if declare.best:
        if declare.melds or declare.layoffs:
            raise BadRequest("BAD_MOVE", "declare: best excludes explicit melds and layoffs")
        return engine.Declare()
    layoffs = tuple((engine.parse_card(x.card), meld_id_from_proto(x.meld_id)) for x in declare.layoffs)
    return engine.Declare(_melds(declare.melds), layoffs)


def option_from_proto(name: str, value: pb.OptionValue) -> bool | int | str:
    """One option value (which field is set says its type; the engine checks it is the option's type)."""
    which = value.WhichOneof("value")
    if which is None:
        raise BadRequest("INVALID_OPTION", f"option {excerpt(name, 40)} has no value")
    result: bool | int | str = getattr(value, which)
    return result


def options_from_proto(options: Mapping[str, pb.OptionValue]) -> dict[str, bool | int | str]:
    """Option overrides by name."""
    return {name: option_from_proto(name, value) for name, value in options.items()}


def deal_from_proto(deal: pb.PresetDeal) -> engine.Deal:
    """An organizer's preset deal (the engine validates it against the rules when the game is created)."""
    return engine.Deal(
        dealer=deal.dealer,
        hands=tuple(tuple(engine.parse_cards(h.cards)) for h in deal.hands),
        upcard=engine.parse_card(deal.upcard),
        stock=tuple(engine.parse_cards(deal.stock)),
    )


def _seat_kind(kind: int) -> str:
    if kind == pb.SEAT_KIND_UNSPECIFIED:
        return "human"
    name = _SEAT_KIND_NAMES.get(kind)
    if name is None:  # an enum value of a newer client, or garbage
        raise BadRequest("INVALID_SEATS", f"unknown seat kind {kind}")
    return name


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
        seats=tuple(SeatSpec(s.display_name, _seat_kind(s.kind), s.open, s.bot) for s in req.seats),
        allow_spectators=req.allow_spectators,
        presets=tuple(deal_from_proto(d) for d in req.preset_deals),
        seed=req.seed or None,
        spectator_delay=SpectatorDelay(req.spectator_delay.moves, req.spectator_delay.until_hand_end),
        time_control=time_control_from_proto(req),
    )


_POLICIES = {pb.TimeoutPolicy.KIND_UNSPECIFIED: FORFEIT_MATCH, pb.TimeoutPolicy.KIND_FORFEIT_MATCH: FORFEIT_MATCH,
             pb.TimeoutPolicy.KIND_AUTO_MOVE: AUTO_MOVE}  # fmt: skip
_POLICY_KINDS = {FORFEIT_MATCH: pb.TimeoutPolicy.KIND_FORFEIT_MATCH, AUTO_MOVE: pb.TimeoutPolicy.KIND_AUTO_MOVE}


def time_control_from_proto(req: rpb.CreateGameRequest) -> TimeControl | None:
    """CreateGame's time control and timeout policy (None: no time control; a policy alone is refused)."""
    tc = req.time_control
    which = tc.WhichOneof("kind") if req.HasField("time_control") else None
    if which is None:
        if req.HasField("timeout_policy"):
            raise BadRequest("INVALID_TIME_CONTROL", "a timeout policy needs a time control")
        return None
    policy = _POLICIES.get(req.timeout_policy.kind)
    if policy is None:
        raise BadRequest("INVALID_TIME_CONTROL", f"unknown timeout policy {req.timeout_policy.kind}")
    max_auto = req.timeout_policy.max_auto_moves or DEFAULT_MAX_AUTO_MOVES
    if policy != AUTO_MOVE and req.timeout_policy.max_auto_moves:
        raise BadRequest("INVALID_TIME_CONTROL", "max_auto_moves is for the auto_move policy")
    if which == "per_move":
        control = TimeControl("per_move", tc.per_move.limit_ms, 0, policy, max_auto)
    elif which == "clock":
        control = TimeControl("clock", tc.clock.initial_ms, tc.clock.increment_ms, policy, max_auto)
    else:
        control = TimeControl("bank", tc.bank.allowance_ms, tc.bank.bank_ms, policy, max_auto)
    return control.checked()


def _time_control_to_proto(d: Mapping[str, Any], settings: pb.GameSettings) -> None:
    tc = settings.time_control
    if d["kind"] == "per_move":
        tc.per_move.limit_ms = d["a"]
    elif d["kind"] == "clock":
        tc.clock.initial_ms = d["a"]
        tc.clock.increment_ms = d["b"]
    else:
        tc.bank.allowance_ms = d["a"]
        tc.bank.bank_ms = d["b"]
    settings.timeout_policy.kind = _POLICY_KINDS[d["policy"]]
    if d["policy"] == AUTO_MOVE:
        settings.timeout_policy.max_auto_moves = d["max_auto_moves"]


_seat_clocks = seat_clocks_to_proto


# ----------------------------------------------------------------------------------------------- outbound


def option_to_proto(value: Any) -> pb.OptionValue:
    """One pinned option value."""
    if isinstance(value, bool):
        return pb.OptionValue(bool_value=value)
    if isinstance(value, int):
        return pb.OptionValue(int_value=value)
    return pb.OptionValue(string_value=str(value))


def settings_to_proto(settings: Mapping[str, Any]) -> pb.GameSettings:
    """GameSettings from the service's settings dict (profile, options, seats, spectators, organizer_deals,
    seed_commitment; revealed once the match is over: seed, preset_deals)."""
    out = pb.GameSettings(
        profile=settings["profile"],
        options={k: option_to_proto(v) for k, v in settings["options"].items()},
        seats=[
            pb.SeatSpec(
                display_name=s["name"],
                kind=SEAT_KINDS.get(s["kind"], pb.SEAT_KIND_HUMAN),
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
        _time_control_to_proto(control, out)
    return out


_SIMPLE_KINDS = frozenset(("discard", "knock", "draw_stock", "draw_discard", "pass", "done"))
_SIMPLE_MOVES: dict[tuple[str, str], pb.Move] = {}  # (kind, card) -> message, for moves without melds
_LEGAL_MOVE_BYTES: dict[tuple[str, str], bytes] = {}  # (kind, card) -> one GameView.legal_moves element


def _simple_move_key(d: Mapping[str, Any]) -> tuple[str, str] | None:
    """(kind, card) of a move without melds, whose encodings are made once and shared; None for the others."""
    kind = d["kind"]
    if kind in _SIMPLE_KINDS and "melds" not in d:
        return kind, d.get("card") or d.get("discard") or ""
    return None


def move_to_proto(d: Mapping[str, Any]) -> pb.Move:
    """A Move message from ``engine.move_to_dict`` output (do not modify it: simple moves are shared)."""
    key = _simple_move_key(d)
    if key is None:
        return _move_to_proto(d)
    move = _SIMPLE_MOVES.get(key)
    if move is None:
        move = _SIMPLE_MOVES[key] = _move_to_proto(d)
    return move


def _legal_move_bytes(d: Mapping[str, Any]) -> bytes:
    # One element of GameView.legal_moves in wire format: the encodings of the elements of a repeated field, one
    # after the other, are the encoding of the field, so a view's legal moves are parsed in once (MergeFromString)
    # from pieces made once per distinct simple move, instead of a message copied in per move.
    key = _simple_move_key(d)
    encoded = None if key is None else _LEGAL_MOVE_BYTES.get(key)
    if encoded is None:
        encoded = pb.GameView(legal_moves=[move_to_proto(d)]).SerializeToString()
        if key is not None:
            _LEGAL_MOVE_BYTES[key] = encoded
    return encoded


def _move_to_proto(d: Mapping[str, Any]) -> pb.Move:
    kind = d["kind"]
    if kind == "draw_stock":
        return pb.Move(draw_stock=pb.Move.DrawStock())
    if kind == "draw_discard":
        return pb.Move(draw_discard=pb.Move.DrawDiscard())
    if kind == "pass":
        return pb.Move(pass_turn=pb.Move.PassTurn())
    if kind == "done":
        return pb.Move(done=pb.Move.Done())
    if kind == "discard":
        return pb.Move(discard=pb.Move.Discard(card=d["card"]))
    if kind == "knock":
        knock = pb.Move.Knock(discard=d["discard"])
        if d.get("melds") is not None:
            knock.melds.CopyFrom(_melds_to_proto(d["melds"]))
        return pb.Move(knock=knock)
    if kind == "big_gin":
        big = pb.Move.BigGin()
        if d.get("melds") is not None:
            big.melds.CopyFrom(_melds_to_proto(d["melds"]))
        return pb.Move(big_gin=big)
    if kind == "meld":
        return pb.Move(meld=pb.Move.Meld(cards=d["cards"]))
    if kind == "lay_off":
        return pb.Move(lay_off=pb.Move.LayOff(card=d["card"], meld_id=d["meld_id"]))
    if kind == "declare":
        if d.get("melds") is None and d.get("layoffs") is None:
            return pb.Move(declare=pb.Move.Declare(best=True))
        return pb.Move(declare=pb.Move.Declare(
            melds=[pb.Cards(cards=m) for m in d.get("melds") or ()],
            layoffs=[pb.LayOffCard(card=c, meld_id=i) for c, i in d.get("layoffs") or ()],
        ))  # fmt: skip
    raise ValueError(f"unknown move kind {kind!r}")


def _melds_to_proto(melds: Sequence[Sequence[str]]) -> pb.Melds:
    return pb.Melds(melds=[pb.Cards(cards=m) for m in melds])


def event_to_proto(d: Mapping[str, Any]) -> pb.Event:
    """An Event from a viewer's event dict (``engine.event_for`` plus "version" and "index"), with the memoized
    data Structs and event bodies."""
    event = pb.Event()
    events.fill_event(event, d, _event_data, _event_body)
    return event


def _fill_event(event: pb.Event, d: Mapping[str, Any]) -> None:
    events.fill_event(event, d, _event_data, _event_body)


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


_EVENT_DATA: Memo[tuple[tuple[tuple[str, Any], ...], tuple[type, ...]], struct_pb2.Struct] = Memo("event_data", 2.0)


def _event_data(data: dict[str, Any]) -> struct_pb2.Struct:
    # Most events carry a few plain values ({"card": "TD"}, {"source": "stock", ...}) that recur: their Struct is
    # built once (Struct.update is Python, and the slowest part of an event). The key has the values' types, as
    # True == 1 but a Struct tells them apart.
    try:
        key = (tuple(data.items()), tuple(map(type, data.values())))
        cached = _EVENT_DATA.get(key)
    except TypeError:  # a list or dict inside: not cached
        return events.struct(data)
    if cached is None:
        cached = events.struct(data)
        _EVENT_DATA.put(key, cached, _ENTRY_BYTES + _PROTO_FACTOR * (cached.ByteSize() + len(key[0]) * 64))
    return cached


_HAND_RESULTS: Memo[int, tuple[Mapping[str, Any], pb.HandResult]] = Memo("hand_results")
_HAND_RESULT_TEXTS: Memo[str, pb.HandResult] = Memo("hand_result_texts", 0.25)
# Bounds (server.memo) count a protobuf message as a few times its wire size, and a fixed cost per entry.
_PROTO_FACTOR = 4
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
MATCH_ENDS = events.MATCH_ENDS
SEAT_ENDS = events.SEAT_ENDS


def _fill_seats(seats: Any, v: Mapping[str, Any]) -> None:
    # each SeatView made in place (``add``): a message built apart would be copied into the view; its fields set
    # one by one (upb's keyword arguments cost more than twice as much)
    sizes, known, scores, boxes = v["hand_sizes"], v["known_cards"], v["scores"], v["boxes"]
    add = seats.add
    for i, info in enumerate(v["seats"]):
        seat = add()
        seat.seat = i
        seat.display_name = info["name"]
        seat.kind = SEAT_KINDS.get(info["kind"], pb.SEAT_KIND_HUMAN)
        seat.hand_size = sizes[i]
        seat.score = scores[i]
        seat.boxes = boxes[i]
        if info["open"]:
            seat.open = True
        if known[i]:
            seat.known_cards.extend(known[i])
    if "games" in v:  # Hollywood
        for i, seat in enumerate(seats):
            seat.hollywood_scores.extend(g[i] for g in v["games"])
            seat.hollywood_boxes.extend(g[i] for g in v["game_boxes"])


def _table_meld(m: Mapping[str, Any]) -> pb.TableMeld:
    return pb.TableMeld(
        id=m["id"], owner=m["owner"], kind=_MELD_KINDS.get(m["kind"], pb.MELD_KIND_UNSPECIFIED), cards=m["cards"],
        layoffs=[pb.LaidOff(card=x["card"], seat=x["seat"]) for x in m["layoffs"]],
    )  # fmt: skip


def view_to_proto(v: Mapping[str, Any]) -> pb.GameView:
    """A GameView from the service's view dict (``engine.view`` plus game_id, version, role, seats, legal)."""
    view = pb.GameView()
    _fill_view(view, v)
    return view


def _fill_view(view: pb.GameView, v: Mapping[str, Any]) -> None:
    # Fills ``view`` in place (a response's own view: no copy of a finished GameView into it), and only with the
    # fields this view has (every field given to a upb constructor costs, even an empty list).
    view.game_id = v["game_id"]
    view.version = v["version"]
    view.viewer_role = _ROLES[v["role"]]
    view.game = _GAMES[v["game"]]
    view.phase = _PHASES[v["phase"]]
    view.dealer = v["dealer"]
    view.hand_number = v["hand_no"]
    _fill_seats(view.seats, v)
    view.discard_pile.extend(v["discard_pile"])
    view.stock_size = v["stock_size"]
    view.turns = v["turns"]
    view.hands_played = v["hands_played"]
    get = v.get
    if (hand := get("hand")) is not None:
        view.hand.extend(hand)
    if v["melds"]:
        view.melds.extend(_table_meld(m) for m in v["melds"])
    if legal := get("legal_moves"):
        view.MergeFromString(b"".join([_legal_move_bytes(m) for m in legal]))
    if (ended := get("games_ended")) is not None:
        view.hollywood_games_ended.extend(ended)
    if (hands := get("hands")) is not None:
        view.hands.extend(pb.Cards(cards=h) for h in hands)
    if (stock := get("stock")) is not None:
        view.stock.extend(stock)
    if v["role"] == "seat":
        view.viewer_seat = v["viewer"]
    if v["to_act"] >= 0:
        view.to_act = v["to_act"]
    if (taken := get("taken_card")) is not None:
        view.taken_card = taken
    if (upcard := get("upcard")) is not None:
        view.upcard = upcard
    if (limit := get("knock_limit")) is not None:
        view.knock_limit = limit
    if (k := get("knock")) is not None:
        knock = view.knock
        knock.SetInParent()
        knock.knocker = k["knocker"]
        knock.deadwood = k["deadwood"]
        knock.deadwood_cards.extend(k["deadwood_cards"])
    if (last := get("last_hand")) is not None:
        view.last_hand.CopyFrom(_hand_result(last))
    if (result := get("result")) is not None:
        view.result.CopyFrom(_match_result(result))
    if (clocks := get("clocks")) is not None:
        _seat_clocks(view.clocks, clocks)
        if (deadline := get("deadline_ms")) is not None:
            view.deadline_ms = deadline


def move_response_to_proto(r: Mapping[str, Any]) -> rpb.SubmitMoveResponse:
    """SubmitMoveResponse from the service's move result dict (version, events, view)."""
    response = rpb.SubmitMoveResponse()
    response.version = r["version"]
    add = response.events.add
    for e in r["events"]:
        _fill_event(add(), e)
    _fill_view(response.view, r["view"])
    return response


def analysis_to_proto(a: Mapping[str, Any]) -> rpb.AnalyzeHandResponse:
    """AnalyzeHandResponse from the service's analysis dict."""
    return rpb.AnalyzeHandResponse(
        min_deadwood=a["min_deadwood"],
        arrangements=[
            rpb.Arrangement(melds=[pb.Cards(cards=m) for m in x["melds"]], deadwood_cards=x["deadwood_cards"])
            for x in a["arrangements"]
        ],
        arrangements_truncated=a["truncated"],
        knock_discards=[rpb.KnockDiscard(card=k["card"], deadwood=k["deadwood"]) for k in a["knock_discards"]],
    )


# ------------------------------------------------------------------------------ envelopes (both transports)


def create_response_to_proto(created: Mapping[str, Any]) -> rpb.CreateGameResponse:
    """CreateGame's answer, from ``Referee.create_game``'s result (the gRPC and HTTP transports alike)."""
    return rpb.CreateGameResponse(
        game_id=created["game_id"],
        seat_tokens=[rpb.SeatToken(seat=s, token=t) for s, t in sorted(created["tokens"].items())],
        spectator_token=created["spectator_token"],
        settings=settings_to_proto(created["settings"]),
        version=created["version"],
        seed_commitment=created["settings"]["seed_commitment"],
    )


def replay_response_to_proto(replay: Mapping[str, Any]) -> rpb.GetReplayResponse:
    """GetReplay's answer, from ``Referee.replay``'s result."""
    response = rpb.GetReplayResponse(
        settings=settings_to_proto(replay["settings"]),
        initial=view_to_proto(replay["initial"]),
        events=[event_to_proto(e) for e in replay["events"]],
        current=view_to_proto(replay["current"]),
    )
    if replay["next_after_version"] is not None:
        response.next_after_version = replay["next_after_version"]
    return response


def resign_response_to_proto(result: Mapping[str, Any]) -> rpb.ResignResponse:
    """Resign's answer, from ``Referee.resign``'s result (a move's answer)."""
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
