"""Translation between the service's protobuf messages and the client's friendly values.

Moves become engine ``Move`` objects (cards as ints, melds as masks), views become the dict ``engine.view``
would give (and from it ``clients.view.View``), events become the dict ``engine.event_for`` would give plus the
``version`` and ``index`` the service stamps on them. ``google.protobuf.Struct`` keeps numbers as floats: whole
numbers come back as ints, so an event dict compares equal to the engine's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import engine
from clients.view import View, card_int, card_texts
from rummy_pb.rummy.v1 import game_pb2 as pb
from wire.clocks import clocks_from_proto
from wire.events import event_from_proto as event_from_proto  # the SDK's name for it
from wire.events import hand_result_from_proto, match_result_from_proto

if TYPE_CHECKING:
    from clients.sdk.values import TimeControl, TimeoutPolicy

PHASE_NAMES: dict[int, str] = {
    pb.PHASE_TAKE_OR_PASS: "take_or_pass", pb.PHASE_DRAW: "draw", pb.PHASE_DISCARD: "discard",
    pb.PHASE_PLAY: "play", pb.PHASE_LAYOFF: "layoff", pb.PHASE_LAST_CARD: "last_card",
    pb.PHASE_MATCH_OVER: "match_over",
}  # fmt: skip
GAME_NAMES: dict[int, str] = {pb.GAME_KIND_GIN: "gin", pb.GAME_KIND_RUMMY: "rummy"}
ROLE_NAMES: dict[int, str] = {pb.ROLE_SEAT: "seat", pb.ROLE_SPECTATOR: "spectator", pb.ROLE_REFEREE: "referee"}
MELD_KIND_NAMES: dict[int, str] = {pb.MELD_KIND_SET: "set", pb.MELD_KIND_RUN: "run"}
SEAT_KINDS: dict[str, pb.SeatKind.ValueType] = {"human": pb.SEAT_KIND_HUMAN, "bot": pb.SEAT_KIND_BOT}
SEAT_KIND_NAMES: dict[int, str] = {int(v): k for k, v in SEAT_KINDS.items()}

OptionValue = bool | int | str


# ---------------------------------------------------------------------------------------------------- moves


def _melds_pb(melds: Iterable[int]) -> list[pb.Cards]:
    return [pb.Cards(cards=card_texts(m)) for m in melds]


def move_to_proto(move: engine.Move) -> pb.Move:
    """The Move message of an engine move."""
    match move:
        case engine.DrawStock():
            return pb.Move(draw_stock=pb.Move.DrawStock())
        case engine.DrawDiscard():
            return pb.Move(draw_discard=pb.Move.DrawDiscard())
        case engine.Pass():
            return pb.Move(pass_turn=pb.Move.PassTurn())
        case engine.Done():
            return pb.Move(done=pb.Move.Done())
        case engine.Discard(card=c):
            return pb.Move(discard=pb.Move.Discard(card=engine.card_text(c)))
        case engine.Knock(discard=c, melds=melds):
            knock = pb.Move.Knock(discard=engine.card_text(c))
            if melds is not None:
                knock.melds.CopyFrom(pb.Melds(melds=_melds_pb(melds)))
            return pb.Move(knock=knock)
        case engine.BigGin(melds=melds):
            big = pb.Move.BigGin()
            if melds is not None:
                big.melds.CopyFrom(pb.Melds(melds=_melds_pb(melds)))
            return pb.Move(big_gin=big)
        case engine.MeldMove(cards=m):
            return pb.Move(meld=pb.Move.Meld(cards=card_texts(m)))
        case engine.LayOff(card=c, meld_id=i):
            return pb.Move(lay_off=pb.Move.LayOff(card=engine.card_text(c), meld_id=i))
        case engine.Declare(melds=None, layoffs=None):
            return pb.Move(declare=pb.Move.Declare(best=True))
        case engine.Declare(melds=melds, layoffs=layoffs):
            return pb.Move(declare=pb.Move.Declare(
                melds=_melds_pb(melds or ()),
                layoffs=[pb.LayOffCard(card=engine.card_text(c), meld_id=i) for c, i in layoffs or ()],
            ))  # fmt: skip
    raise TypeError(f"not an engine move: {move!r}")


def _mask(texts: Iterable[str]) -> int:
    mask = 0
    for t in texts:
        mask |= 1 << card_int(t)
    return mask


def _melds_of(melds: pb.Melds) -> tuple[int, ...]:
    return tuple(_mask(m.cards) for m in melds.melds)


def move_from_proto(move: pb.Move) -> engine.Move:
    """The engine move of a Move message; ValueError when no move is set, InvalidMoveError for bad card text."""
    which = move.WhichOneof("move")
    if which == "draw_stock":
        return engine.DrawStock()
    if which == "draw_discard":
        return engine.DrawDiscard()
    if which == "pass_turn":
        return engine.Pass()
    if which == "done":
        return engine.Done()
    if which == "discard":
        return engine.Discard(card_int(move.discard.card))
    if which == "knock":
        k = move.knock
        return engine.Knock(card_int(k.discard), _melds_of(k.melds) if k.HasField("melds") else None)
    if which == "big_gin":
        return engine.BigGin(_melds_of(move.big_gin.melds) if move.big_gin.HasField("melds") else None)
    if which == "meld":
        return engine.MeldMove(_mask(move.meld.cards))
    if which == "lay_off":
        return engine.LayOff(card_int(move.lay_off.card), move.lay_off.meld_id)
    if which == "declare":
        d = move.declare
        if d.best:
            return engine.Declare()
        return engine.Declare(
            tuple(_mask(m.cards) for m in d.melds), tuple((card_int(x.card), x.meld_id) for x in d.layoffs)
        )
    raise ValueError("the Move message has no move set")


# ------------------------------------------------------------------------------------------ plain values


def option_from_proto(value: pb.OptionValue) -> OptionValue | None:
    """One option's value (None when the message holds none)."""
    which = value.WhichOneof("value")
    if which is None:
        return None
    result: OptionValue = getattr(value, which)
    return result


def option_to_proto(value: OptionValue) -> pb.OptionValue:
    """One option value (its Python type picks the field)."""
    if isinstance(value, bool):
        return pb.OptionValue(bool_value=value)
    if isinstance(value, int):
        return pb.OptionValue(int_value=value)
    if isinstance(value, str):
        return pb.OptionValue(string_value=value)
    raise TypeError(f"an option value is a bool, an int or a str, not {value!r}")


def options_from_proto(options: Mapping[str, pb.OptionValue]) -> dict[str, OptionValue]:
    """Option values by name (as ``engine.Rules.to_dict`` has them)."""
    out: dict[str, OptionValue] = {}
    for name, value in options.items():
        v = option_from_proto(value)
        if v is not None:
            out[name] = v
    return out


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def time_control_to_proto(tc: object) -> pb.TimeControl:
    """The TimeControl message of ``PerMove``, ``Clock`` or ``Bank`` (None: none; anything else: TypeError)."""
    from clients.sdk.values import Bank, Clock, PerMove  # values imports this module

    if tc is None:
        return pb.TimeControl()
    if isinstance(tc, PerMove):
        return pb.TimeControl(per_move=pb.TimeControl.PerMove(limit_ms=_ms(tc.limit)))
    if isinstance(tc, Clock):
        return pb.TimeControl(clock=pb.TimeControl.Clock(initial_ms=_ms(tc.initial), increment_ms=_ms(tc.increment)))
    if isinstance(tc, Bank):
        return pb.TimeControl(bank=pb.TimeControl.Bank(allowance_ms=_ms(tc.allowance), bank_ms=_ms(tc.bank)))
    raise TypeError(f"a time control is a PerMove, a Clock or a Bank (clients.sdk), not {tc!r}")


def time_control_from_proto(tc: pb.TimeControl) -> TimeControl | None:
    """``PerMove``, ``Clock`` or ``Bank`` of a TimeControl message; None when it has no kind."""
    from clients.sdk.values import Bank, Clock, PerMove

    which = tc.WhichOneof("kind")
    if which == "per_move":
        return PerMove(tc.per_move.limit_ms / 1000)
    if which == "clock":
        return Clock(tc.clock.initial_ms / 1000, tc.clock.increment_ms / 1000)
    if which == "bank":
        return Bank(tc.bank.allowance_ms / 1000, tc.bank.bank_ms / 1000)
    return None


TIMEOUT_POLICY_KINDS: dict[str, pb.TimeoutPolicy.Kind.ValueType] = {
    "forfeit_match": pb.TimeoutPolicy.KIND_FORFEIT_MATCH, "auto_move": pb.TimeoutPolicy.KIND_AUTO_MOVE,
}  # fmt: skip
TIMEOUT_POLICY_NAMES: dict[int, str] = {int(v): k for k, v in TIMEOUT_POLICY_KINDS.items()}


def timeout_policy_to_proto(policy: object) -> pb.TimeoutPolicy:
    """The TimeoutPolicy message of a ``TimeoutPolicy`` (None: unset; anything else: TypeError)."""
    from clients.sdk.values import TimeoutPolicy

    if policy is None:
        return pb.TimeoutPolicy()
    if not isinstance(policy, TimeoutPolicy):
        raise TypeError(f"a timeout policy is a clients.sdk.TimeoutPolicy, not {policy!r}")
    return pb.TimeoutPolicy(kind=TIMEOUT_POLICY_KINDS[policy.kind], max_auto_moves=policy.max_auto_moves)


def timeout_policy_from_proto(policy: pb.TimeoutPolicy) -> TimeoutPolicy:
    """The ``TimeoutPolicy`` of a TimeoutPolicy message (an unset kind is forfeit_match, the referee's default)."""
    from clients.sdk.values import TimeoutPolicy

    kind = TIMEOUT_POLICY_NAMES.get(policy.kind, "forfeit_match")
    return TimeoutPolicy(kind, policy.max_auto_moves if kind == "auto_move" else 0)


_hand_result = hand_result_from_proto
_match_result = match_result_from_proto


def view_dict_from_proto(v: pb.GameView) -> dict[str, Any]:
    """The dict ``engine.view`` gives for this viewer, plus the service's ``game_id``, ``version``, ``role`` and
    ``seats`` (name, kind, open). Legal moves are not in it (see ``legal_from_proto``)."""
    role = ROLE_NAMES.get(v.viewer_role, "spectator")
    viewer = v.viewer_seat if v.HasField("viewer_seat") else (engine.REFEREE if role == "referee" else engine.SPECTATOR)
    game = GAME_NAMES.get(v.game, "gin")
    d: dict[str, Any] = {
        "game": game, "viewer": viewer, "phase": PHASE_NAMES.get(v.phase, "match_over"),
        "to_act": v.to_act if v.HasField("to_act") else -1, "dealer": v.dealer, "hand_no": v.hand_number,
        "hand_sizes": [s.hand_size for s in v.seats], "known_cards": [list(s.known_cards) for s in v.seats],
        "melds": [  # cards: the whole meld now, laid-off cards included; layoffs: which of them were laid off
            {"id": m.id, "owner": m.owner, "kind": MELD_KIND_NAMES.get(m.kind, ""), "cards": list(m.cards),
             "layoffs": [{"card": x.card, "seat": x.seat} for x in m.layoffs]}
            for m in v.melds
        ],
        "discard_pile": list(v.discard_pile), "stock_size": v.stock_size,
        "taken_card": v.taken_card if v.HasField("taken_card") else None, "turns": v.turns,
        "scores": [s.score for s in v.seats], "boxes": [s.boxes for s in v.seats], "hands_played": v.hands_played,
        "last_hand": _hand_result(v.last_hand) if v.HasField("last_hand") else None,
        "result": _match_result(v.result) if v.HasField("result") else None,
    }  # fmt: skip
    if game == "gin":
        d["upcard"] = v.upcard if v.HasField("upcard") else None
        d["knock_limit"] = v.knock_limit if v.HasField("knock_limit") else None
        d["knock"] = (
            {"knocker": v.knock.knocker, "deadwood": v.knock.deadwood, "deadwood_cards": list(v.knock.deadwood_cards)}
            if v.HasField("knock") else None
        )  # fmt: skip
        if v.hollywood_games_ended:
            d["games"] = [list(g) for g in zip(*(s.hollywood_scores for s in v.seats), strict=True)]
            d["game_boxes"] = [list(g) for g in zip(*(s.hollywood_boxes for s in v.seats), strict=True)]
            d["games_ended"] = list(v.hollywood_games_ended)
    if role == "referee":
        d["hands"] = [list(h.cards) for h in v.hands]
        d["stock"] = list(v.stock)
    elif role == "seat":
        d["hand"] = list(v.hand)
    if v.clocks:  # a game with a time control
        d["clocks"] = clocks_from_proto(v.clocks)
        d["deadline_ms"] = v.deadline_ms if v.HasField("deadline_ms") else None
    d.update(
        game_id=v.game_id, version=v.version, role=role,
        seats=[{"name": s.display_name, "kind": SEAT_KIND_NAMES.get(s.kind, "human"), "open": s.open}
               for s in v.seats],
    )  # fmt: skip
    return d


def legal_from_proto(v: pb.GameView) -> tuple[engine.Move, ...]:
    """The viewer's legal moves as engine moves (empty unless it is the viewer's turn)."""
    return tuple(move_from_proto(m) for m in v.legal_moves)


def view_from_proto(v: pb.GameView, rules: Mapping[str, Any] | None = None) -> View:
    """``clients.view.View`` of a GameView. ``rules`` is the game's complete option set (``Settings.options``);
    without it the view carries only ``game`` and ``players``."""
    d = view_dict_from_proto(v)
    if rules is None:
        rules = {"game": d["game"], "players": len(v.seats)}
    return View.from_engine(d, rules)


def cards_to_text(cards: Iterable[str | int]) -> list[str]:
    """Card texts of engine cards or texts."""
    return [c if isinstance(c, str) else engine.card_text(c) for c in cards]


def deal_to_proto(deal: engine.Deal) -> pb.PresetDeal:
    """An organizer's preset deal."""
    return pb.PresetDeal(
        dealer=deal.dealer,
        hands=[pb.Cards(cards=cards_to_text(h)) for h in deal.hands],
        upcard=engine.card_text(deal.upcard),
        stock=cards_to_text(deal.stock),
    )


def melds_text(melds: Sequence[pb.Cards]) -> tuple[tuple[str, ...], ...]:
    """Groups of cards as tuples of texts."""
    return tuple(tuple(m.cards) for m in melds)
