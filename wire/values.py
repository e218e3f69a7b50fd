"""Plain values on the wire: enums (phase, game kind, meld kind, role, seat kind, timeout policy), option
values, preset deals, time control values and request versions, both directions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import engine
from engine import excerpt
from rummy_pb.rummy.v1 import game_pb2 as pb
from wire.cards import card_from_proto
from wire.errors import Malformed

PHASES: dict[str, pb.Phase.ValueType] = {
    "take_or_pass": pb.PHASE_TAKE_OR_PASS, "draw": pb.PHASE_DRAW, "discard": pb.PHASE_DISCARD,
    "play": pb.PHASE_PLAY, "layoff": pb.PHASE_LAYOFF, "last_card": pb.PHASE_LAST_CARD,
    "match_over": pb.PHASE_MATCH_OVER,
}  # fmt: skip
GAMES: dict[str, pb.GameKind.ValueType] = {"gin": pb.GAME_KIND_GIN, "rummy": pb.GAME_KIND_RUMMY}
MELD_KINDS: dict[str, pb.MeldKind.ValueType] = {"set": pb.MELD_KIND_SET, "run": pb.MELD_KIND_RUN}
ROLES: dict[str, pb.Role.ValueType] = {"seat": pb.ROLE_SEAT, "spectator": pb.ROLE_SPECTATOR, "referee": pb.ROLE_REFEREE}
SEAT_KINDS: dict[str, pb.SeatKind.ValueType] = {"human": pb.SEAT_KIND_HUMAN, "bot": pb.SEAT_KIND_BOT}
TIMEOUT_POLICIES: dict[str, pb.TimeoutPolicy.Kind.ValueType] = {
    "forfeit_match": pb.TimeoutPolicy.KIND_FORFEIT_MATCH, "auto_move": pb.TimeoutPolicy.KIND_AUTO_MOVE,
}  # fmt: skip
PHASE_NAMES: dict[int, str] = {int(v): k for k, v in PHASES.items()}
GAME_NAMES: dict[int, str] = {int(v): k for k, v in GAMES.items()}
MELD_KIND_NAMES: dict[int, str] = {int(v): k for k, v in MELD_KINDS.items()}
ROLE_NAMES: dict[int, str] = {int(v): k for k, v in ROLES.items()}
SEAT_KIND_NAMES: dict[int, str] = {int(v): k for k, v in SEAT_KINDS.items()}
TIMEOUT_POLICY_NAMES: dict[int, str] = {int(v): k for k, v in TIMEOUT_POLICIES.items()}

OptionValue = bool | int | str
MAX_VERSION = 2**53 - 1  # no game gets near it (a move a microsecond for 285 years); exact in JSON and JavaScript


def version_from_proto(value: int, name: str) -> int:
    """A version field of a request (uint64 on the wire): refused beyond MAX_VERSION (VERSION_AHEAD), which
    no game reaches (and past which a stream position would overflow in Redis)."""
    if value > MAX_VERSION:
        raise Malformed("VERSION_AHEAD", f"{name} {value} is beyond any game's version (at most {MAX_VERSION})")
    return value


def seat_kind_from_proto(kind: int) -> str:
    """``"human"`` (also for an unset kind) or ``"bot"``; an unknown kind is INVALID_SEATS."""
    if kind == pb.SEAT_KIND_UNSPECIFIED:
        return "human"
    name = SEAT_KIND_NAMES.get(kind)
    if name is None:  # an enum value of a newer client, or garbage
        raise Malformed("INVALID_SEATS", f"unknown seat kind {kind}")
    return name


# ------------------------------------------------------------------------------------------------ options


def option_from_proto(name: str, value: pb.OptionValue) -> OptionValue:
    """One option value (which field is set says its type; the engine checks it is the option's type); one
    without a value is INVALID_OPTION."""
    which = value.WhichOneof("value")
    if which is None:
        raise Malformed("INVALID_OPTION", f"option {excerpt(name, 40)} has no value")
    result: OptionValue = getattr(value, which)
    return result


def options_from_proto(options: Mapping[str, pb.OptionValue]) -> dict[str, OptionValue]:
    """Option values by name (as ``engine.Rules.to_dict`` has them)."""
    return {name: option_from_proto(name, value) for name, value in options.items()}


def option_to_proto(value: OptionValue) -> pb.OptionValue:
    """One option value (its Python type picks the field; anything else: TypeError)."""
    if isinstance(value, bool):
        return pb.OptionValue(bool_value=value)
    if isinstance(value, int):
        return pb.OptionValue(int_value=value)
    if isinstance(value, str):
        return pb.OptionValue(string_value=value)
    raise TypeError(f"an option value is a bool, an int or a str, not {value!r}")


def options_to_proto(options: Mapping[str, OptionValue]) -> dict[str, pb.OptionValue]:
    """Option values by name."""
    return {k: option_to_proto(v) for k, v in options.items()}


# ------------------------------------------------------------------------------------------- preset deals


def deal_from_proto(deal: pb.PresetDeal) -> engine.Deal:
    """An organizer's preset deal (the engine validates it against the rules when the game is created)."""
    return engine.Deal(
        dealer=deal.dealer,
        hands=tuple(tuple(engine.parse_cards(h.cards)) for h in deal.hands),
        upcard=card_from_proto(deal.upcard),
        stock=tuple(engine.parse_cards(deal.stock)),
    )


def deal_to_proto(deal: engine.Deal) -> pb.PresetDeal:
    """An organizer's preset deal."""
    text = engine.card_text
    return pb.PresetDeal(
        dealer=deal.dealer,
        hands=[pb.Cards(cards=[text(c) for c in h]) for h in deal.hands],
        upcard=text(deal.upcard),
        stock=[text(c) for c in deal.stock],
    )


def deal_dict(deal: engine.Deal) -> dict[str, Any]:
    """A preset deal as the settings have it: dealer, hands, upcard, stock (cards as text)."""
    text = engine.card_text
    return {"dealer": deal.dealer, "hands": [[text(c) for c in h] for h in deal.hands], "upcard": text(deal.upcard),
            "stock": [text(c) for c in deal.stock]}  # fmt: skip


# ------------------------------------------------------------------------------------------ time controls

#: A time control as numbers: its kind ("per_move", "clock", "bank") and two values in ms (per_move: the limit
#: and 0; clock: initial and increment; bank: the allowance per move and the bank).
TimeControlValue = tuple[str, int, int]


def time_control_to_proto(kind: str, a: int, b: int) -> pb.TimeControl:
    """The TimeControl message of a time control value."""
    if kind == "per_move":
        return pb.TimeControl(per_move=pb.TimeControl.PerMove(limit_ms=a))
    if kind == "clock":
        return pb.TimeControl(clock=pb.TimeControl.Clock(initial_ms=a, increment_ms=b))
    if kind == "bank":
        return pb.TimeControl(bank=pb.TimeControl.Bank(allowance_ms=a, bank_ms=b))
    raise ValueError(f"unknown time control kind {kind!r}")


def time_control_from_proto(tc: pb.TimeControl) -> TimeControlValue | None:
    """The value of a TimeControl message; None when it has no kind."""
    which = tc.WhichOneof("kind")
    if which == "per_move":
        return "per_move", tc.per_move.limit_ms, 0
    if which == "clock":
        return "clock", tc.clock.initial_ms, tc.clock.increment_ms
    if which == "bank":
        return "bank", tc.bank.allowance_ms, tc.bank.bank_ms
    return None


def timeout_policy_to_proto(kind: str, max_auto_moves: int) -> pb.TimeoutPolicy:
    """The TimeoutPolicy message of a policy ("forfeit_match" or "auto_move", with its max_auto_moves)."""
    policy = pb.TimeoutPolicy(kind=TIMEOUT_POLICIES[kind])
    if kind == "auto_move" and max_auto_moves:
        policy.max_auto_moves = max_auto_moves
    return policy


def timeout_policy_from_proto(policy: pb.TimeoutPolicy) -> tuple[str, int]:
    """(kind, max_auto_moves) of a TimeoutPolicy message: an unset kind is forfeit_match (the referee's
    default); an unknown kind, or max_auto_moves with another policy than auto_move, is INVALID_TIME_CONTROL."""
    if policy.kind == pb.TimeoutPolicy.KIND_UNSPECIFIED:
        kind = "forfeit_match"
    elif (name := TIMEOUT_POLICY_NAMES.get(policy.kind)) is not None:
        kind = name
    else:
        raise Malformed("INVALID_TIME_CONTROL", f"unknown timeout policy {policy.kind}")
    if kind != "auto_move" and policy.max_auto_moves:
        raise Malformed("INVALID_TIME_CONTROL", "max_auto_moves is for the auto_move policy")
    return kind, policy.max_auto_moves
