"""What one viewer may see (RULES.md section 4).

Everyone: the discard pile, table melds and layoffs, hand sizes, the stock size, every card taken from the discard
pile that is still in a hand, a knocker's melds and deadwood (the knocker's hand is face up after the knock), and
every hand once a hand has ended (``last_hand``). A seat: also its own hand. The referee: everything but the seed.
"""

from __future__ import annotations

from typing import Any

from engine.cards import CARD_TEXTS, card_text, cards_of
from engine.state import REFEREE, SPECTATOR, GameState

_TEXT = CARD_TEXTS.__getitem__  # card_text without a Python call per card: views are on the referee's hot path


def _cards(mask: int) -> list[str]:
    return list(map(_TEXT, cards_of(mask)))


def view(state: GameState, viewer: int) -> dict[str, Any]:
    """The JSON-able view of ``viewer``: a seat number, SPECTATOR or REFEREE."""
    s = state
    r = s.rules
    v: dict[str, Any] = {
        "game": r.game,
        "viewer": viewer,
        "phase": s.phase,
        "to_act": s.to_act,
        "dealer": s.dealer,
        "hand_no": s.hand_no,
        "hand_sizes": [h.bit_count() for h in s.hands],
        "known_cards": [_cards(k) for k in s.known],
        "melds": [m.to_dict() for m in s.melds],
        "discard_pile": list(map(_TEXT, s.discard)),
        "stock_size": len(s.stock),
        "taken_card": card_text(s.taken) if s.taken >= 0 else None,
        "turns": s.turns,
        "scores": list(s.scores),
        "boxes": list(s.boxes),
        "hands_played": s.hands_played,
        "last_hand": s.last_hand,
        "result": s.result,
    }
    if r.game == "gin":
        v["upcard"] = card_text(s.upcard)
        v["knock_limit"] = s.knock_limit
        v["knock"] = (
            {"knocker": s.knocker, "deadwood": s.knock_deadwood, "deadwood_cards": _cards(s.known[s.knocker])}
            if s.knocker >= 0 and s.phase != "match_over" else None
        )
        if r.hollywood:
            v["games"] = [list(g) for g in s.games]
            v["game_boxes"] = [list(g) for g in s.game_boxes]
            v["games_ended"] = list(s.games_ended)
    if viewer == REFEREE:
        v["hands"] = [_cards(h) for h in s.hands]
        v["stock"] = list(map(_TEXT, s.stock))
    elif viewer != SPECTATOR and 0 <= viewer < r.players:
        v["hand"] = _cards(s.hands[viewer])
    return v
