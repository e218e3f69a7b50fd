"""Text drawing for the terminal game: cards with suit symbols and colour, moves, the table, events, the reveal.

Everything here is a pure function of a ``Style`` and the SDK's values (card texts as in RULES.md, ``"TD"``),
returning strings: the interactive loop decides when to print them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import engine
from clients.view import View, card_int, card_mask

SUIT_SYMBOLS = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}
SUIT_NAMES = {"S": "spades", "H": "hearts", "D": "diamonds", "C": "clubs"}
RED = "\x1b[31m"
BOLD = "\x1b[1m"
DIM = "\x1b[2m"
RESET = "\x1b[0m"
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
#: Display order of the suits: colours alternate (black, red, black, red).
_SUIT_ORDER = {"S": 0, "H": 1, "C": 2, "D": 3}
_RANKS = "A23456789TJQK"
_RANK_WORDS = frozenset({*_RANKS, "10"})


@dataclass(frozen=True, slots=True)
class Style:
    """How cards are drawn: suit symbols (else letters) and ANSI colour (red hearts and diamonds)."""

    symbols: bool = True
    color: bool = True

    def red(self, text: str) -> str:
        """``text`` in red (when colour is on)."""
        return f"{RED}{text}{RESET}" if self.color else text

    def bold(self, text: str) -> str:
        """``text`` in bold (when colour is on)."""
        return f"{BOLD}{text}{RESET}" if self.color else text

    def dim(self, text: str) -> str:
        """``text`` faint (when colour is on)."""
        return f"{DIM}{text}{RESET}" if self.color else text


def detect_style(stream: TextIO, *, no_color: bool = False, ascii_only: bool = False,
                 environ: Mapping[str, str] | None = None) -> Style:  # fmt: skip
    """The style for ``stream``: symbols when it encodes UTF-8; colour when it is a terminal, ``no_color`` is
    False, NO_COLOR is unset or empty (https://no-color.org) and TERM is not ``dumb``."""
    env = os.environ if environ is None else environ
    encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "")
    symbols = not ascii_only and encoding.startswith("utf")
    isatty = getattr(stream, "isatty", None)
    tty = bool(isatty()) if callable(isatty) else False
    color = tty and not no_color and not env.get("NO_COLOR") and env.get("TERM") != "dumb"
    return Style(symbols=symbols, color=color)


def strip_ansi(text: str) -> str:
    """``text`` without ANSI escape sequences."""
    return _ANSI.sub("", text)


# ------------------------------------------------------------------------------------------------------ cards


def card(text: str, style: Style) -> str:
    """One card: rank (``10`` for ten) and suit symbol or letter; hearts and diamonds red."""
    rank, suit = text[:-1], text[-1].upper()
    rank = "10" if rank.upper() in ("T", "10") else rank.upper()
    drawn = rank + (SUIT_SYMBOLS[suit] if style.symbols else suit)
    return style.red(drawn) if suit in "HD" else drawn


def display_key(text: str, by_rank: bool = False) -> tuple[int, int]:
    """Sort key of a card text for display: by suit (alternating colours) then rank, or by rank then suit."""
    suit, rank = _SUIT_ORDER[text[-1].upper()], _RANKS.index(engine.card_text(card_int(text))[0])
    return (rank, suit) if by_rank else (suit, rank)


def sorted_cards(texts: Sequence[str], by_rank: bool = False) -> list[str]:
    """Card texts in display order."""
    return sorted(texts, key=lambda t: display_key(t, by_rank))


def cards(texts: Sequence[str], style: Style, *, sort: bool = False, by_rank: bool = False) -> str:
    """Several cards separated by spaces (sorted for display when asked); ``-`` for none."""
    if not texts:
        return "-"
    return " ".join(card(t, style) for t in (sorted_cards(texts, by_rank) if sort else texts))


def hand_line(texts: Sequence[str], style: Style, by_rank: bool = False) -> str:
    """A hand, sorted, with a wider gap between suits (or ranks) so the groups stand out."""
    groups: list[list[str]] = []
    last: int | None = None
    for t in sorted_cards(texts, by_rank):
        key = display_key(t, by_rank)[0]
        if key != last:
            groups.append([])
            last = key
        groups[-1].append(card(t, style))
    return "   ".join(" ".join(g) for g in groups) if groups else "-"


def card_input(text: str) -> str:
    """Typed text with suit symbols turned into letters (so ``7♥`` works as ``7H``)."""
    for letter, symbol in SUIT_SYMBOLS.items():
        text = text.replace(symbol, letter)
    return text


# ------------------------------------------------------------------------------------------------------ moves


def move(m: engine.Move, style: Style, view: View | None = None) -> str:
    """A move in its typed form (``discard 7H``) with the cards drawn; a few words more where they help."""
    text = engine.move_text(m)
    words = text.split()
    out: list[str] = []
    for w in words:
        stripped = w.strip("[]")
        if len(stripped) >= 2 and stripped[-1] in "SHDC" and stripped[:-1] in _RANK_WORDS:
            out.append(w.replace(stripped, card(stripped, style)))
        else:
            out.append(w)
    shown = " ".join(out)
    if view is not None:
        if isinstance(m, engine.DrawDiscard | engine.Pass) and view.discard_pile:
            shown += f" ({card(view.discard_pile[-1], style)})"
        elif isinstance(m, engine.Knock) and m.melds is None:
            left = view.hand_mask() & ~(1 << m.discard)
            dead = engine.min_deadwood(left)
            shown += " (gin)" if dead == 0 else f" (deadwood {dead})"
    return shown


def _move_order(m: engine.Move) -> tuple[int, int]:
    kinds = ("draw_stock", "draw_discard", "pass", "declare", "done", "discard", "knock", "big_gin", "meld",
             "lay_off")  # fmt: skip
    first = kinds.index(m.kind) if m.kind in kinds else len(kinds)
    match m:
        case engine.Discard(card=c) | engine.Knock(discard=c):
            return first, display_key(engine.card_text(c))[0] * 13 + display_key(engine.card_text(c))[1]
        case engine.MeldMove(cards=mask):
            return first, -engine.mask_value(mask) * 64 + len(engine.cards_of(mask))
        case engine.LayOff(card=c, meld_id=i):
            return first, i * 64 + c
    return first, 0


def ordered_moves(legal: Sequence[engine.Move]) -> list[engine.Move]:
    """The legal moves in the order they are offered: drawing first, then declare/done, discards (in hand
    order), knocks, melds (the most valuable first), layoffs."""
    return sorted(legal, key=_move_order)


def numbered(items: Sequence[str], width: int) -> str:
    """``1 item`` cells in as many columns as fit ``width``."""
    if not items:
        return ""
    digits = len(str(len(items)))
    cells = [f"{i:>{digits}}  {text}" for i, text in enumerate(items, 1)]
    cell = max(len(strip_ansi(c)) for c in cells) + 4
    columns = max(1, min(len(cells), (width - 2) // cell))
    rows = -(-len(cells) // columns)
    lines = []
    for r in range(rows):
        row = [cells[c * rows + r] for c in range(columns) if c * rows + r < len(cells)]
        lines.append("  " + "".join(x + " " * (cell - len(strip_ansi(x))) for x in row).rstrip())
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------------ table


def meld_line(meld_id: int, texts: Sequence[str], owner: str, style: Style) -> str:
    """One table meld: ``#2 (Gin bot)  5♠ 6♠ 7♠``."""
    return f"#{meld_id} ({owner})  {cards(texts, style)}"


def scores_line(view: View, names: Sequence[str], target: int | None) -> str:
    """Match points of every seat."""
    parts = " · ".join(f"{names[i]} {s}" for i, s in enumerate(view.scores))
    games = view.extra.get("games")
    if games:
        ended = view.extra.get("games_ended") or ()
        parts += "   Hollywood: " + " · ".join(
            f"game {g + 1} {'-'.join(str(x) for x in points)}" + (" (over)" if g < len(ended) and ended[g] else "")
            for g, points in enumerate(games)
        )
    return parts + (f"   (playing to {target})" if target else "")


def clock_text(seconds: float) -> str:
    """A time left: ``4:05``, and tenths under ten seconds (``0:07.3``)."""
    seconds = max(0.0, seconds)
    if seconds < 10:
        return f"0:{seconds:04.1f}"
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{whole // 60}:{whole % 60:02d}"


def clocks_line(view: View, names: Sequence[str], style: Style, now: float | None = None) -> str | None:
    """Every seat's time left in a game with a time control (the seat to act counting down: its time left now),
    or None without one: ``You 4:05 · Gin bot 3:58 (thinking)``."""
    if not view.clocks:
        return None
    parts = []
    for c in view.clocks:
        name = names[c.seat] if 0 <= c.seat < len(names) else f"Seat {c.seat}"
        text = f"{name} {clock_text(c.left(now))}"
        if c.running:
            text = style.bold(text) + (" (your move)" if c.seat == view.seat else " (thinking)")
        if c.auto_moves:
            text += f" ({c.auto_moves} move{'' if c.auto_moves == 1 else 's'} played by the referee)"
        parts.append(text)
    return " · ".join(parts)


def table(view: View, names: Sequence[str], style: Style, *, title: str, by_rank: bool = False) -> str:
    """The whole table as the human sees it: scores, clocks, other seats, stock, discard pile, melds, the knock, the
    hand."""
    rules = view.rules
    lines = [style.bold(f"── {title} · hand {view.hand_no + 1} · dealer: {names[view.dealer]} ──")]
    lines.append(f"Scores:   {scores_line(view, names, _int(rules.get('target_score')))}")
    clocks = clocks_line(view, names, style)
    if clocks:
        lines.append(f"Clocks:   {clocks}")
    for seat in range(view.players):
        if seat == view.seat:
            continue
        known = view.known_cards[seat] if seat < len(view.known_cards) else ()
        # a knocker's known cards are its face-up deadwood, shown with the knock below; the defender's (taken from
        # the discard pile) stay public after the knock
        shown_with_knock = view.knock is not None and seat == view.knock.knocker
        extra = f"   known: {cards(known, style)}" if known and not shown_with_knock else ""
        size = view.hand_sizes[seat]
        lines.append(f"{names[seat]}: {size} card{'' if size == 1 else 's'}{extra}")
    pile = view.discard_pile  # the whole of it, bottom to top: everyone sees every card of it (RULES.md 4)
    top = f"   top: {style.bold(card(pile[-1], style))}" if pile else "   (empty)"
    lines.append(f"Stock: {view.stock_size} cards   Discard pile ({len(pile)}): {cards(pile, style)}{top}")
    if view.melds:
        lines.append("Table melds:")
        lines.extend("  " + meld_line(m.id, m.cards, names[m.owner], style) for m in view.melds)
    if view.knock is not None:
        k = view.knock
        lines.append(f"{names[k.knocker]} knocked with {k.deadwood} deadwood: {cards(k.deadwood_cards, style)}")
    lines.append(hand_block(view, style, by_rank))
    return "\n".join(lines)


def best_discard(view: View) -> tuple[str, int] | None:
    """Gin, a hand of 11 cards to discard from: the discard that leaves the least deadwood, and that deadwood (a
    tie goes to the higher card); None otherwise. The card just taken from the pile is not a candidate unless the
    rules allow discarding it."""
    if view.game != "gin" or len(view.hand) <= 10:
        return None
    mask = card_mask(view.hand)
    allowed = [c for c in view.hand if c != view.taken_card or view.rules.get("discard_taken_card_allowed")]
    if not allowed:
        return None
    scored = [(engine.min_deadwood(mask & ~(1 << card_int(c))), -engine.mask_value(1 << card_int(c)),
               display_key(c), c) for c in allowed]  # fmt: skip
    dead, _, _, best = min(scored)
    return best, dead


def melds_line(mask: int, style: Style, ace_high: bool = False) -> str:
    """Which cards of ``mask`` form melds (one best arrangement), and the cards left over."""
    if not mask:
        return "melds: -"
    _, melds = engine.best_arrangement(mask, ace_high)
    covered = 0
    for m in melds:
        covered |= m
    rest = [engine.card_text(c) for c in engine.cards_of(mask & ~covered)]
    shown = " · ".join(cards([engine.card_text(c) for c in engine.cards_of(m)], style, sort=True) for m in melds)
    return f"melds: {shown or 'none yet'}   unmatched: {cards(rest, style, sort=True)}"


def hand_block(view: View, style: Style, by_rank: bool = False) -> str:
    """The human's hand, sorted; the cards that form melds; in Gin its deadwood (with 11 cards: after the best
    discard); the card just taken."""
    line = f"Your hand ({len(view.hand)}):  {hand_line(view.hand, style, by_rank)}"
    notes = []
    mask = card_mask(view.hand)
    kept = mask
    after = ""
    if view.game == "gin" and view.hand:
        best = best_discard(view)
        if best is not None:
            kept = mask & ~(1 << card_int(best[0]))
            note = f"deadwood {best[1]} after discarding {card(best[0], style)} (the best discard)"
            after = " (after that discard)"
        else:
            note = f"deadwood {engine.min_deadwood(mask)}"
        limit = view.knock_limit
        if view.phase in ("take_or_pass", "draw", "discard", "last_card"):
            note += f" (knock at {limit} or less)" if limit else " (gin only: this deal's knock limit is 0)"
        notes.append(note)
    if view.taken_card:
        rule = "" if view.rules.get("discard_taken_card_allowed") else " (not to be discarded this turn)"
        notes.append(f"taken from the pile: {card(view.taken_card, style)}{rule}")
    ace_high = view.game != "gin" and bool(view.rules.get("ace_high_low"))
    lines = [line, f"  {melds_line(kept, style, ace_high)}{after}" if view.hand else ""]
    if notes:
        lines.append("  " + " · ".join(notes))
    return "\n".join(x for x in lines if x)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
