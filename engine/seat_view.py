"""The typed view: what one seat may see of a game as a frozen value, cards as text. It is the value bots receive
(``clients.view`` re-exports it): ``typed_view(state, seat)`` builds it off a state, ``View.from_engine`` off
``view(state, seat)`` and the rules' dict, and ``wire.typed_view_from_proto`` (the SDK's) the same value off the
referee's GameView.

Card texts are RULES.md's (``"TD"``, ``"AS"``); ``card_int``, ``card_mask`` and ``card_texts`` turn them into
engine cards (``suit * 13 + rank``) and masks for the analysis functions.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from engine.cards import CARD_TEXTS, cards_of, parse_card
from engine.state import GameState
from engine.views import ClockDict, ViewDict
from engine.views import view as engine_view

_CARD_OF_TEXT: dict[str, int] = {t: c for c, t in enumerate(CARD_TEXTS)}


def card_int(text: str) -> int:
    """The engine card of a card text (``"TD"``, also ``"10D"``, ``"td"``); else InvalidMoveError(INVALID_CARD)."""
    c = _CARD_OF_TEXT.get(text)
    return c if c is not None else parse_card(text)


def card_mask(texts: Iterable[str]) -> int:
    """The engine mask of some card texts."""
    m = 0
    for t in texts:
        m |= 1 << card_int(t)
    return m


def card_texts(mask: int) -> tuple[str, ...]:
    """Card texts of a mask, in engine card order."""
    return tuple(CARD_TEXTS[c] for c in cards_of(mask))


def typed_view(state: GameState, viewer: int) -> View:
    """The typed view of seat ``viewer`` (``view(state, viewer)`` as a ``View``, with the game's rules)."""
    return View.from_engine(engine_view(state, viewer), state.rules.to_dict())


@dataclass(frozen=True, slots=True)
class TableMeld:
    """A meld on the table: its stable id, the seat that melded it, ``"set"``/``"run"``, its cards (layoffs
    included) in table order, and the layoffs made on it as ``(card, seat)``."""

    id: int
    owner: int
    kind: str
    cards: tuple[str, ...]
    layoffs: tuple[tuple[str, int], ...] = ()

    def mask(self) -> int:
        """The meld's cards as an engine mask."""
        return card_mask(self.cards)


@dataclass(frozen=True, slots=True)
class KnockInfo:
    """Gin: who knocked, with what deadwood, and the knocker's (now face up) deadwood cards."""

    knocker: int
    deadwood: int
    deadwood_cards: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SeatClock:
    """One seat's clock in a game with a time control (clocks are public). ``remaining``: its time left in seconds
    (a clock: its clock; a bank: its bank; a limit per move: the limit), as of the start of its current decision
    while ``running`` (its decision is being timed), else as of its last one; ``started_ms`` / ``deadline_ms``
    (running only): when that decision started and when it is due, in ms since the epoch by the referee's clock;
    ``auto_moves``: the automatic moves the referee made for it in a row (the ``auto_move`` timeout policy)."""

    seat: int
    remaining: float
    running: bool = False
    started_ms: int | None = None
    deadline_ms: int | None = None
    auto_moves: int = 0

    @staticmethod
    def from_dict(d: ClockDict) -> SeatClock:
        """From the view dict's ``clocks`` entry (``remaining_ms`` in ms)."""
        started, due = d.get("started_ms"), d.get("deadline_ms")
        return SeatClock(int(d["seat"]), int(d["remaining_ms"]) / 1000, bool(d.get("running")),
                         None if started is None else int(started), None if due is None else int(due),
                         int(d.get("auto_moves", 0)))  # fmt: skip

    def to_dict(self) -> ClockDict:
        """The view dict's ``clocks`` entry."""
        return {
            "seat": self.seat, "remaining_ms": round(self.remaining * 1000), "running": self.running,
            "started_ms": self.started_ms, "deadline_ms": self.deadline_ms, "auto_moves": self.auto_moves,
        }  # fmt: skip

    def left(self, now: float | None = None) -> float:
        """Seconds left now: for the running seat until its deadline (by this machine's clock, ``time.time()``
        unless ``now`` is given: the referee's is Redis's, so the two should agree), else ``remaining``."""
        if self.running and self.deadline_ms is not None:
            return max(0.0, self.deadline_ms / 1000 - (time.time() if now is None else now))
        return self.remaining


@dataclass(frozen=True, slots=True)
class View:
    """What seat ``seat`` may see. Piles are listed bottom to top; phases are the engine's phase names
    (``take_or_pass``, ``draw``, ``discard``, ``play``, ``layoff``, ``last_card``, ``match_over``)."""

    game: str
    seat: int
    phase: str
    to_act: int
    dealer: int
    hand_no: int
    hand: tuple[str, ...]
    hand_sizes: tuple[int, ...]
    known_cards: tuple[tuple[str, ...], ...]
    melds: tuple[TableMeld, ...]
    discard_pile: tuple[str, ...]
    stock_size: int
    taken_card: str | None
    upcard: str | None
    knock_limit: int | None
    knock: KnockInfo | None
    scores: tuple[int, ...]
    rules: Mapping[str, Any]
    players: int
    turns: int = 0
    extra: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    #: Every seat's clock, seat 0 first (empty without a time control).
    clocks: tuple[SeatClock, ...] = ()
    #: When the decision of the seat to act is due, ms since the epoch by the referee's clock (None without a
    #: time control, or while no clock runs).
    deadline_ms: int | None = None

    @property
    def my_clock(self) -> SeatClock | None:
        """This seat's clock (None without a time control)."""
        return next((c for c in self.clocks if c.seat == self.seat), None)

    def time_left(self, now: float | None = None) -> float | None:
        """Seconds this seat has left for its decision now, until ``deadline_ms`` (by this machine's clock, see
        ``SeatClock.left``), when it is to act in a game with a time control; None otherwise."""
        if self.deadline_ms is None or self.to_act != self.seat:
            return None
        return max(0.0, self.deadline_ms / 1000 - (time.time() if now is None else now))

    @staticmethod
    def from_engine(view: ViewDict, rules: Mapping[str, Any]) -> View:
        """Build from ``engine.view(state, seat)`` and ``state.rules.to_dict()``."""
        knock = view.get("knock")
        known = {"last_hand", "result", "boxes", "hands_played", "games", "game_boxes", "games_ended"}
        fields: Mapping[str, Any] = view  # (the ``known`` ones, by name)
        return View(
            game=str(view["game"]),
            seat=int(view["viewer"]),
            phase=str(view["phase"]),
            to_act=int(view["to_act"]),
            dealer=int(view["dealer"]),
            hand_no=int(view["hand_no"]),
            hand=tuple(view.get("hand", ())),
            hand_sizes=tuple(int(n) for n in view["hand_sizes"]),
            known_cards=tuple(tuple(k) for k in view["known_cards"]),
            melds=tuple(
                TableMeld(
                    int(m["id"]),
                    int(m["owner"]),
                    str(m["kind"]),
                    tuple(m["cards"]),
                    tuple((str(x["card"]), int(x["seat"])) for x in m.get("layoffs", ())),
                )
                for m in view["melds"]
            ),
            discard_pile=tuple(view["discard_pile"]),
            stock_size=int(view["stock_size"]),
            taken_card=view.get("taken_card"),
            upcard=view.get("upcard"),
            knock_limit=view.get("knock_limit"),
            knock=None
            if knock is None
            else KnockInfo(int(knock["knocker"]), int(knock["deadwood"]), tuple(knock["deadwood_cards"])),
            scores=tuple(int(s) for s in view["scores"]),
            rules=MappingProxyType(dict(rules)),
            players=int(rules["players"]),
            turns=int(view.get("turns", 0)),
            extra=MappingProxyType({k: fields[k] for k in known if k in fields}),
            clocks=tuple(SeatClock.from_dict(c) for c in view.get("clocks", ())),
            deadline_ms=None if (due := view.get("deadline_ms")) is None else int(due),
        )

    def to_dict(self) -> ViewDict:
        """The engine-view-shaped dict this value was built from (``from_engine`` reads it back)."""
        d: dict[str, Any] = {
            "game": self.game,
            "viewer": self.seat,
            "phase": self.phase,
            "to_act": self.to_act,
            "dealer": self.dealer,
            "hand_no": self.hand_no,
            "hand": list(self.hand),
            "hand_sizes": list(self.hand_sizes),
            "known_cards": [list(k) for k in self.known_cards],
            "melds": [
                {
                    "id": m.id,
                    "owner": m.owner,
                    "kind": m.kind,
                    "cards": list(m.cards),
                    "layoffs": [{"card": c, "seat": s} for c, s in m.layoffs],
                }
                for m in self.melds
            ],
            "discard_pile": list(self.discard_pile),
            "stock_size": self.stock_size,
            "taken_card": self.taken_card,
            "scores": list(self.scores),
            "turns": self.turns,
            **self.extra,
        }
        if self.clocks:  # a game with a time control (the engine's views have no clocks)
            d["clocks"] = [c.to_dict() for c in self.clocks]
            d["deadline_ms"] = self.deadline_ms
        if self.game == "gin":
            d["upcard"] = self.upcard
            d["knock_limit"] = self.knock_limit
            d["knock"] = (
                None
                if self.knock is None
                else {
                    "knocker": self.knock.knocker,
                    "deadwood": self.knock.deadwood,
                    "deadwood_cards": list(self.knock.deadwood_cards),
                }
            )
        return d  # type: ignore[return-value]  # a ViewDict (with the ``extra`` keys it was built from)

    # ------------------------------------------------------------------------------------- engine masks

    def hand_mask(self) -> int:
        """The own hand as an engine mask."""
        return card_mask(self.hand)

    def pile_mask(self) -> int:
        """Every card of the discard pile as a mask."""
        return card_mask(self.discard_pile)

    def table_mask(self) -> int:
        """Every card in a meld on the table as a mask."""
        m = 0
        for tm in self.melds:
            m |= tm.mask()
        return m

    def known_mask(self, seat: int) -> int:
        """Cards everyone saw ``seat`` take from the discard pile (still in that hand) as a mask."""
        return card_mask(self.known_cards[seat])

    def top_discard(self) -> int | None:
        """The top card of the discard pile, or None when it is empty."""
        return card_int(self.discard_pile[-1]) if self.discard_pile else None

    def taken(self) -> int | None:
        """The card taken from the discard pile this turn, or None."""
        return None if self.taken_card is None else card_int(self.taken_card)

    def unseen_mask(self) -> int:
        """Cards this seat cannot locate: in the stock or in another hand, not known taken from the pile."""
        seen = self.hand_mask() | self.pile_mask() | self.table_mask()
        for k in self.known_cards:
            seen |= card_mask(k)
        if self.knock is not None:
            seen |= card_mask(self.knock.deadwood_cards)
        return ((1 << 52) - 1) & ~seen
