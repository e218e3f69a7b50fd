"""What one viewer may see (RULES.md section 4).

Everyone: the discard pile, table melds and layoffs, hand sizes, the stock size, every card taken from the discard
pile that is still in a hand, a knocker's melds and deadwood (the knocker's hand is face up after the knock), and
every hand once a hand has ended (``last_hand``). A seat: also its own hand. The referee: everything but the seed.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

from engine.cards import CARD_TEXTS, cards_of
from engine.state import REFEREE, SPECTATOR, GameState

_TEXT = CARD_TEXTS.__getitem__  # card_text without a Python call per card: views are on the referee's hot path
_BIT_COUNT = int.bit_count


class LayoffDict(TypedDict):
    """A card laid off on a table meld, and by whom."""

    card: str
    seat: int


class MeldDict(TypedDict):
    """A table meld (``TableMeld.to_dict``): cards as text in table order, laid-off cards included."""

    id: int
    owner: int
    kind: str
    cards: list[str]
    layoffs: list[LayoffDict]


class KnockDict(TypedDict):
    """Gin, after a knock: who knocked, with what deadwood, and the knocker's (face up) deadwood cards."""

    knocker: int
    deadwood: int
    deadwood_cards: list[str]


class ClockDict(TypedDict):
    """One seat's clock in a view or a clock event (the referee's, with a time control; GameView.clocks)."""

    seat: int
    remaining_ms: int
    running: bool
    auto_moves: int
    started_ms: NotRequired[int | None]  # while running (read off the wire: None when not)
    deadline_ms: NotRequired[int | None]


class ViewDict(TypedDict):
    """What ``view`` gives (and ``View.to_dict``): the keys every view has, and NotRequired those only some games
    or viewers have. Results are the engine's result dicts (typed: ``engine.results``)."""

    game: str
    viewer: int
    phase: str
    to_act: int
    dealer: int
    hand_no: int
    hand_sizes: list[int]
    known_cards: list[list[str]]
    melds: list[MeldDict]
    discard_pile: list[str]
    stock_size: int
    taken_card: str | None
    turns: int
    scores: list[int]
    boxes: list[int]
    hands_played: int
    last_hand: dict[str, Any] | None
    result: dict[str, Any] | None
    # Gin
    upcard: NotRequired[str | None]
    knock_limit: NotRequired[int | None]
    knock: NotRequired[KnockDict | None]
    # Hollywood
    games: NotRequired[list[list[int]]]
    game_boxes: NotRequired[list[list[int]]]
    games_ended: NotRequired[list[bool]]
    # the referee: every hand and the stock; a seat: its own hand
    hands: NotRequired[list[list[str]]]
    stock: NotRequired[list[str]]
    hand: NotRequired[list[str]]
    # a game with a time control (the referee adds them: never ``view``'s)
    clocks: NotRequired[list[ClockDict]]
    deadline_ms: NotRequired[int | None]


def _cards(mask: int) -> list[str]:
    return list(map(_TEXT, cards_of(mask)))


def view(state: GameState, viewer: int) -> ViewDict:
    """The JSON-able view of ``viewer``: a seat number, SPECTATOR or REFEREE."""
    s = state
    r = s.rules
    v: ViewDict = {
        "game": r.game,
        "viewer": viewer,
        "phase": s.phase,
        "to_act": s.to_act,
        "dealer": s.dealer,
        "hand_no": s.hand_no,
        "hand_sizes": list(map(_BIT_COUNT, s.hands)),
        "known_cards": [_cards(k) if k else [] for k in s.known],  # mostly none: no call for those
        "melds": [m.to_dict() for m in s.melds] if s.melds else [],  # Gin: none before a knock
        "discard_pile": list(map(_TEXT, s.discard)),
        "stock_size": len(s.stock),
        "taken_card": _TEXT(s.taken) if s.taken >= 0 else None,
        "turns": s.turns,
        "scores": list(s.scores),
        "boxes": list(s.boxes),
        "hands_played": s.hands_played,
        "last_hand": s.last_hand,
        "result": s.result,
    }
    if r.game == "gin":
        v["upcard"] = _TEXT(s.upcard)
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
