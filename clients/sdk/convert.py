"""The SDK's convenience on top of the one wire codec (``wire``, which the referee uses too): what a bot author
gets from a message.

Moves are engine ``Move`` objects (cards as ints, melds as masks), views the dict ``engine.view`` would give (and
from it ``clients.view.View``), events the dict ``engine.event_for`` would give plus the ``version`` and ``index``
the service stamps on them. A message the referee would refuse is refused here the same way (``wire.Malformed``,
a ValueError, with the referee's reason code).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import engine
import wire
from clients.view import View
from rummy_pb.rummy.v1 import game_pb2 as pb
from wire import SEAT_KIND_NAMES as SEAT_KIND_NAMES
from wire import SEAT_KINDS as SEAT_KINDS
from wire import OptionValue as OptionValue
from wire import deal_to_proto as deal_to_proto
from wire import event_from_proto as event_from_proto
from wire import legal_from_proto as legal_from_proto
from wire import move_from_proto as move_from_proto
from wire import move_to_proto as move_to_proto
from wire import option_to_proto as option_to_proto
from wire import options_from_proto as options_from_proto

if TYPE_CHECKING:
    from clients.sdk.values import TimeControl, TimeoutPolicy


# ------------------------------------------------------------------------------------------------- clocks


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def time_control_to_proto(tc: object) -> pb.TimeControl:
    """The TimeControl message of ``PerMove``, ``Clock`` or ``Bank`` (None: none; anything else: TypeError)."""
    from clients.sdk.values import Bank, Clock, PerMove  # values imports this module

    if tc is None:
        return pb.TimeControl()
    if isinstance(tc, PerMove):
        return wire.time_control_to_proto("per_move", _ms(tc.limit), 0)
    if isinstance(tc, Clock):
        return wire.time_control_to_proto("clock", _ms(tc.initial), _ms(tc.increment))
    if isinstance(tc, Bank):
        return wire.time_control_to_proto("bank", _ms(tc.allowance), _ms(tc.bank))
    raise TypeError(f"a time control is a PerMove, a Clock or a Bank (clients.sdk), not {tc!r}")


def time_control_from_proto(tc: pb.TimeControl) -> TimeControl | None:
    """``PerMove``, ``Clock`` or ``Bank`` of a TimeControl message; None when it has no kind."""
    from clients.sdk.values import Bank, Clock, PerMove

    value = wire.time_control_from_proto(tc)
    if value is None:
        return None
    kind, a, b = value
    if kind == "per_move":
        return PerMove(a / 1000)
    if kind == "clock":
        return Clock(a / 1000, b / 1000)
    return Bank(a / 1000, b / 1000)


def timeout_policy_to_proto(policy: object) -> pb.TimeoutPolicy:
    """The TimeoutPolicy message of a ``TimeoutPolicy`` (None: unset; anything else: TypeError)."""
    from clients.sdk.values import TimeoutPolicy

    if policy is None:
        return pb.TimeoutPolicy()
    if not isinstance(policy, TimeoutPolicy):
        raise TypeError(f"a timeout policy is a clients.sdk.TimeoutPolicy, not {policy!r}")
    return wire.timeout_policy_to_proto(policy.kind, policy.max_auto_moves)


def timeout_policy_from_proto(policy: pb.TimeoutPolicy) -> TimeoutPolicy:
    """The ``TimeoutPolicy`` of a TimeoutPolicy message (an unset kind is forfeit_match, the referee's default)."""
    from clients.sdk.values import TimeoutPolicy

    kind, max_auto_moves = wire.timeout_policy_from_proto(policy)
    return TimeoutPolicy(kind, max_auto_moves)


# -------------------------------------------------------------------------------------------------- views


def view_dict_from_proto(v: pb.GameView) -> wire.GameViewDict:
    """The dict ``engine.view`` gives for this viewer, plus the service's ``game_id``, ``version``, ``role`` and
    ``seats`` (name, kind, open). Legal moves are not in it (see ``legal_from_proto``)."""
    return wire.view_from_proto(v, legal=False)


def view_from_proto(v: pb.GameView, rules: Mapping[str, Any] | None = None) -> View:
    """``clients.view.View`` of a GameView. ``rules`` is the game's complete option set (``Settings.options``);
    without it the view carries only ``game`` and ``players``."""
    return wire.typed_view_from_proto(v, rules)


def cards_to_text(cards: Iterable[str | int]) -> list[str]:
    """Card texts of engine cards or texts."""
    return [c if isinstance(c, str) else engine.card_text(c) for c in cards]


def melds_text(melds: Sequence[pb.Cards]) -> tuple[tuple[str, ...], ...]:
    """Groups of cards as tuples of texts."""
    return tuple(tuple(m.cards) for m in melds)
