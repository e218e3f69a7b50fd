"""Moves: small frozen types that print and parse themselves.

Text forms (cards in RULES.md text, melds separated by ``/``):
``draw stock``, ``draw discard``, ``pass``, ``discard TD``, ``knock TD [AS 2S 3S / 7H 7D 7C]``,
``big_gin [melds]``, ``meld 7H 8H 9H``, ``layoff 7S 2`` (card, target meld id), ``declare [melds] [; 7S 2, 8S 2]``,
``declare best``, ``done``, ``resign``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.cards import card_text, cards_of, mask_of, parse_card, parse_cards
from engine.errors import InvalidMoveError, excerpt


@dataclass(frozen=True, slots=True)
class DrawStock:
    """Draw the top card of the stock."""

    kind = "draw_stock"


@dataclass(frozen=True, slots=True)
class DrawDiscard:
    """Take the top card of the discard pile (also: take the upcard in ``take_or_pass``)."""

    kind = "draw_discard"


@dataclass(frozen=True, slots=True)
class Pass:
    """Refuse the upcard (``take_or_pass``) or the last discard (``fiftieth_card``)."""

    kind = "pass"


@dataclass(frozen=True, slots=True)
class Discard:
    """Discard one card, ending the turn."""

    card: int
    kind = "discard"


@dataclass(frozen=True, slots=True)
class Knock:
    """Gin: discard and knock, declaring melds (masks); None lets the referee pick a best arrangement."""

    discard: int
    melds: tuple[int, ...] | None = None
    kind = "knock"


@dataclass(frozen=True, slots=True)
class BigGin:
    """Gin: go out with all 11 cards melded, without discarding."""

    melds: tuple[int, ...] | None = None
    kind = "big_gin"


@dataclass(frozen=True, slots=True)
class MeldMove:
    """Put a new set or run (mask) on the table (Rummy, or the Gin defender after a knock)."""

    cards: int
    kind = "meld"


@dataclass(frozen=True, slots=True)
class LayOff:
    """Add one card to the table meld ``meld_id``."""

    card: int
    meld_id: int
    kind = "lay_off"


@dataclass(frozen=True, slots=True)
class Declare:
    """Gin defender, in one move: own melds plus layoffs ``(card, meld_id)``; all None = the best declaration."""

    melds: tuple[int, ...] | None = None
    layoffs: tuple[tuple[int, int], ...] | None = None
    kind = "declare"


def named_twice(move: Knock | Declare) -> int | None:
    """The card ``move`` names twice, None if none: a knock's discard also in one of its melds; a declaration's
    card laid off twice, or melded and laid off (a card in two of the melds is the rules' INVALID_MELD). The
    engine and the wire codec refuse either as DUPLICATE_CARD. Melds and layoffs must be well-formed."""
    if isinstance(move, Knock):
        return move.discard if any(m >> move.discard & 1 for m in move.melds or ()) else None
    named = 0
    for m in move.melds or ():
        named |= m
    for card, _ in move.layoffs or ():
        if named >> card & 1:
            return card
        named |= 1 << card
    return None


@dataclass(frozen=True, slots=True)
class Done:
    """Gin defender: the declaration is complete."""

    kind = "done"


@dataclass(frozen=True, slots=True)
class Resign:
    """Give up the match: any seat, at any time before the match is over (never among the legal moves)."""

    kind = "resign"


@dataclass(frozen=True, slots=True)
class LoseOnTime:
    """The referee's move for a seat whose decision is due under a time control's forfeit: the seat loses the
    match on time (engine.timeouts). Never among the legal moves, and no client can send it (the API has no such
    move); the game log records it as ``lose_on_time``."""

    kind = "lose_on_time"


Move = (
    DrawStock | DrawDiscard | Pass | Discard | Knock | BigGin | MeldMove | LayOff | Declare | Done | Resign | LoseOnTime
)

# Shared instances for move generation (moves are immutable values, so one object per move serves every state).
DRAW_STOCK = DrawStock()
DRAW_DISCARD = DrawDiscard()
PASS = Pass()
DONE = Done()
DECLARE_BEST = Declare()
BIG_GIN_MOVE = BigGin()
DISCARDS: tuple[Discard, ...] = tuple(Discard(c) for c in range(52))
KNOCKS: tuple[Knock, ...] = tuple(Knock(c) for c in range(52))


def _melds_text(melds: tuple[int, ...]) -> str:
    return " / ".join(" ".join(card_text(c) for c in cards_of(m)) for m in melds)


def move_text(move: Move) -> str:
    """Human/text form of a move (parsed back by ``parse_move``)."""
    match move:
        case DrawStock():
            return "draw stock"
        case DrawDiscard():
            return "draw discard"
        case Pass():
            return "pass"
        case Discard(card=c):
            return f"discard {card_text(c)}"
        case Knock(discard=c, melds=melds):
            return f"knock {card_text(c)}" + (f" [{_melds_text(melds)}]" if melds is not None else "")
        case BigGin(melds=melds):
            return "big_gin" + (f" [{_melds_text(melds)}]" if melds is not None else "")
        case MeldMove(cards=m):
            return "meld " + " ".join(card_text(c) for c in cards_of(m))
        case LayOff(card=c, meld_id=i):
            return f"layoff {card_text(c)} {i}"
        case Declare(melds=melds, layoffs=layoffs):
            if melds is None and layoffs is None:
                return "declare best"
            lay = ", ".join(f"{card_text(c)} {i}" for c, i in layoffs or ())
            return f"declare [{_melds_text(melds or ())}] ; {lay}".rstrip(" ;")
        case Done():
            return "done"
        case Resign():
            return "resign"
        case LoseOnTime():
            return "lose_on_time"
    raise InvalidMoveError("UNKNOWN_MOVE", f"not a move: {move!r}")


def _parse_melds(text: str) -> tuple[int, ...]:
    text = text.strip().strip("[]").strip()
    if not text:
        return ()
    return tuple(mask_of(parse_cards(part.split())) for part in text.split("/"))


def _is_meld_id(text: str) -> bool:
    """A meld id in move text: the digits 0-9 only (``str.isdigit`` alone also takes a superscript two, which
    ``int`` then refuses with a ValueError)."""
    return text.isascii() and text.isdigit()


def parse_move(text: str) -> Move:
    """Parse the text form of a move; raises InvalidMoveError(BAD_MOVE_TEXT / INVALID_CARD)."""
    words = text.strip().split(maxsplit=1)
    if not words:
        raise InvalidMoveError("BAD_MOVE_TEXT", "empty move")
    verb, rest = words[0].lower(), (words[1] if len(words) > 1 else "")
    if verb == "draw" and rest.strip().lower() in ("stock", "discard"):
        return DrawStock() if rest.strip().lower() == "stock" else DrawDiscard()
    if verb in ("take",) and not rest:
        return DrawDiscard()
    if verb == "pass" and not rest:
        return Pass()
    if verb == "done" and not rest:
        return Done()
    if verb == "resign" and not rest:
        return Resign()
    if verb == "discard" and len(rest.split()) == 1:
        return Discard(parse_card(rest))
    if verb == "knock" and rest:
        card, _, melds = rest.partition(" ")
        return Knock(parse_card(card), _parse_melds(melds) if melds.strip() else None)
    if verb in ("big_gin", "biggin"):
        return BigGin(_parse_melds(rest) if rest.strip() else None)
    if verb == "meld" and rest:
        return MeldMove(mask_of(parse_cards(rest.split())))
    if verb in ("layoff", "lay_off") and len(rest.split()) == 2:
        card, meld_id = rest.split()
        if not _is_meld_id(meld_id):
            raise InvalidMoveError("BAD_MOVE_TEXT", f"meld id must be a number: {excerpt(meld_id)}")
        return LayOff(parse_card(card), int(meld_id))
    if verb == "declare":
        if rest.strip().lower() in ("", "best"):
            return Declare()
        melds_text, _, lay_text = rest.partition(";")
        layoffs: list[tuple[int, int]] = []
        for item in lay_text.split(","):
            if item.strip():
                parts = item.split()
                if len(parts) != 2 or not _is_meld_id(parts[1]):
                    raise InvalidMoveError("BAD_MOVE_TEXT", f"layoff must be 'CARD MELD_ID': {excerpt(item.strip())}")
                layoffs.append((parse_card(parts[0]), int(parts[1])))
        return Declare(_parse_melds(melds_text), tuple(layoffs))
    raise InvalidMoveError("BAD_MOVE_TEXT", f"not a move: {excerpt(text)}")


def move_to_dict(move: Move) -> dict[str, Any]:
    """JSON-able form of a move, cards as text."""
    d: dict[str, Any] = {"kind": move.kind}
    match move:
        case Discard(card=c):
            d["card"] = card_text(c)
        case Knock(discard=c, melds=melds):
            d["discard"] = card_text(c)
            if melds is not None:
                d["melds"] = [[card_text(x) for x in cards_of(m)] for m in melds]
        case BigGin(melds=melds):
            if melds is not None:
                d["melds"] = [[card_text(x) for x in cards_of(m)] for m in melds]
        case MeldMove(cards=m):
            d["cards"] = [card_text(x) for x in cards_of(m)]
        case LayOff(card=c, meld_id=i):
            d["card"] = card_text(c)
            d["meld_id"] = i
        case Declare(melds=melds, layoffs=layoffs):
            if melds is not None:
                d["melds"] = [[card_text(x) for x in cards_of(m)] for m in melds]
            if layoffs is not None:
                d["layoffs"] = [[card_text(c), i] for c, i in layoffs]
        case _:
            pass
    return d


def _melds_from(value: Any) -> tuple[int, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise InvalidMoveError("BAD_MOVE", "melds must be a list of card lists")
    return tuple(mask_of(parse_cards(m)) for m in value)


def move_from_dict(d: dict[str, Any]) -> Move:
    """Inverse of ``move_to_dict``; raises InvalidMoveError on anything malformed."""
    try:
        kind = d["kind"]
        if kind == "draw_stock":
            return DrawStock()
        if kind == "draw_discard":
            return DrawDiscard()
        if kind == "pass":
            return Pass()
        if kind == "done":
            return Done()
        if kind == "resign":
            return Resign()
        if kind == "lose_on_time":
            return LoseOnTime()
        if kind == "discard":
            return Discard(parse_card(d["card"]))
        if kind == "knock":
            return Knock(parse_card(d["discard"]), _melds_from(d.get("melds")))
        if kind == "big_gin":
            return BigGin(_melds_from(d.get("melds")))
        if kind == "meld":
            return MeldMove(mask_of(parse_cards(d["cards"])))
        if kind == "lay_off":
            return LayOff(parse_card(d["card"]), int(d["meld_id"]))
        if kind == "declare":
            lay = d.get("layoffs")
            layoffs = None if lay is None else tuple((parse_card(c), int(i)) for c, i in lay)
            return Declare(_melds_from(d.get("melds")), layoffs)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InvalidMoveError("BAD_MOVE", f"malformed move {excerpt(d)}: {excerpt(str(exc), 60)}") from None
    raise InvalidMoveError("UNKNOWN_MOVE", f"unknown move kind {excerpt(d.get('kind'))}")
