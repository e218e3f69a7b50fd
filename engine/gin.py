"""Gin Rummy (RULES.md section 2): one small function per phase, and the hand score."""

from __future__ import annotations

from engine.cards import CARD_VALUE, card_text, cards_of, mask_text, mask_value, top_value
from engine.errors import IllegalMoveError
from engine.events import EventKind
from engine.flow import (
    BIG_GIN,
    GIN_OUT,
    KNOCK,
    STOCK_END,
    TIE,
    TURN_CAP,
    UNDERCUT,
    check_discard,
    check_in_hand,
    draw_discard,
    draw_stock,
    end_hand,
    lay_off_card,
    next_turn,
    put_discard,
    remove_from_hand,
)
from engine.melds import (
    best_arrangement,
    best_declaration,
    extends,
    meld_kind,
    meldable,
    min_deadwood,
)
from engine.moves import (
    BIG_GIN_MOVE,
    DECLARE_BEST,
    DISCARDS,
    DONE,
    DRAW_DISCARD,
    DRAW_STOCK,
    KNOCKS,
    PASS,
    BigGin,
    Declare,
    Discard,
    Done,
    DrawDiscard,
    DrawStock,
    Knock,
    LayOff,
    MeldMove,
    Move,
    Pass,
)
from engine.state import DISCARD, DRAW, LAST_CARD, LAYOFF, TAKE_OR_PASS, Event, GameState, TableMeld

# ----------------------------------------------------------------------------------------------- analysis


def knock_discards(hand: int, limit: int, forbidden: int = -1) -> list[int]:
    """For an 11-card hand: the discards (other than ``forbidden``) leaving 10 cards of deadwood <= ``limit``."""
    m = meldable(hand)
    outside = hand & ~m
    out_value = mask_value(outside)
    # removing a card never makes another card meldable: deadwood >= value outside melds minus one card (a card
    # is worth 10 at most, so most hands are decided without looking for their highest card)
    if out_value - 10 > limit or out_value - top_value(outside) > limit:
        return []
    full = min_deadwood(hand)
    result = []
    for c in cards_of(hand):
        if c == forbidden:
            continue
        if outside >> c & 1:
            dead = full - CARD_VALUE[c]
        elif out_value > limit:
            continue
        else:
            dead = min_deadwood(hand & ~(1 << c))
        if dead <= limit:
            result.append(c)
    return result


def can_big_gin(s: GameState, hand: int) -> bool:
    """Big gin is on and all 11 cards meld."""
    return (
        s.rules.big_gin_bonus > 0 and hand.bit_count() == 11 and meldable(hand) == hand and min_deadwood(hand) == 0
    )


# ----------------------------------------------------------------------------------------------- legal moves


def _discard_rows(suit: int) -> tuple[tuple[Discard, ...], ...]:
    """For each 13-bit row (a suit's ranks as bits): the discards of that row's cards of ``suit``, in card order."""
    rows: list[tuple[Discard, ...]] = [()]
    base = DISCARDS[suit * 13 : suit * 13 + 13]
    for row in range(1, 1 << 13):
        low = row & -row  # the row's lowest card, then the row without it (already made)
        rows.append((base[low.bit_length() - 1], *rows[row ^ low]))
    return tuple(rows)


#: per suit, per 13-bit row of a hand (as ``cards_of`` splits a mask): the discards of that row's cards, in card
#: order (about 3 MB, as ``cards_of``'s own table)
_DISCARD_ROWS = tuple(_discard_rows(suit) for suit in range(4))


def _discards(held: int) -> list[Move]:
    """The discards of the cards in ``held``, in card order: its four suits' rows of moves joined into one list (no
    tuple of cards made and no moves picked one by one: half the instructions)."""
    dr = _DISCARD_ROWS
    return [*dr[0][held & 0x1FFF], *dr[1][(held >> 13) & 0x1FFF], *dr[2][(held >> 26) & 0x1FFF], *dr[3][held >> 39]]


def legal_moves(s: GameState) -> list[Move]:
    """Every legal move of the seat to act."""
    seat = s.to_act
    hand = s.hands[seat]
    phase = s.phase
    if phase == DISCARD:  # half of all moves, then draw: the phases by how often they come
        # the card just taken, unless allowed; the last discard (fiftieth_card) is to be knocked *with*, always
        forbidden = -1 if s.rules.discard_taken_card_allowed and not s.must_knock else s.taken
        moves: list[Move] = [] if s.must_knock else _discards(hand if forbidden < 0 else hand & ~(1 << forbidden))
        knocks = knock_discards(hand, s.knock_limit, forbidden)
        # a hand that can go big gin can always knock (some meld has a card to spare), so test big gin only then
        if knocks:
            moves += [KNOCKS[c] for c in knocks]
            if can_big_gin(s, hand):
                moves.append(BIG_GIN_MOVE)
        return moves
    if phase == DRAW:
        if s.discard and s.passes < 2:
            return [DRAW_STOCK, DRAW_DISCARD]
        return [DRAW_STOCK]
    if phase == TAKE_OR_PASS:
        return [DRAW_DISCARD, PASS]
    if phase == LAST_CARD:
        moves = [PASS]
        if _last_card_useful(s, hand | (1 << s.discard[-1])):
            moves.append(DRAW_DISCARD)
        return moves
    if phase == LAYOFF:
        moves = [DECLARE_BEST, DONE]
        for m in _own_melds_possible(hand):
            moves.append(MeldMove(m))
        for tm in s.melds:
            if tm.owner == s.knocker:
                moves += [LayOff(c, tm.id) for c in cards_of(hand) if extends(tm.cards, c)]
        return moves
    return []


def _last_card_useful(s: GameState, hand: int) -> bool:
    """Whether the last discard (fiftieth_card), added to the hand, lets it knock or go big gin *with* it: so
    never by throwing it back, whatever ``discard_taken_card_allowed`` says."""
    forbidden = s.discard[-1]
    return bool(knock_discards(hand, s.knock_limit, forbidden)) or can_big_gin(s, hand)


def _own_melds_possible(hand: int) -> list[int]:
    from engine.melds import all_melds

    m = meldable(hand)
    return [x for x in all_melds() if x & m == x]


# ----------------------------------------------------------------------------------------------- apply


def apply(s: GameState, seat: int, move: Move, events: list[Event]) -> None:
    """Apply a Gin move to ``s`` (a private copy)."""
    phase = s.phase
    # the phases by how often they come (discard, draw, then the rest): one comparison for half of all moves
    if phase == DISCARD:
        if isinstance(move, Discard):
            _discard(s, seat, move.card, events)
        elif isinstance(move, Knock):
            _knock(s, seat, move, events)
        elif isinstance(move, BigGin):
            _big_gin(s, seat, move, events)
        else:
            _wrong_phase(s, move)
    elif phase == DRAW:
        if isinstance(move, DrawStock):
            s.passes = 0
            draw_stock(s, events, DISCARD)
        elif isinstance(move, DrawDiscard):
            if s.passes >= 2:
                raise IllegalMoveError("MUST_DRAW_STOCK", "both players passed the upcard: draw from the stock")
            draw_discard(s, events, DISCARD)
        else:
            _wrong_phase(s, move)
    elif phase == TAKE_OR_PASS:
        if isinstance(move, DrawDiscard):
            s.passes = 0
            draw_discard(s, events, DISCARD)
        elif isinstance(move, Pass):
            s.passes += 1
            events.append(Event(EventKind.PASSED, seat, {"card": card_text(s.discard[-1])}))
            if s.passes == 1:
                s.to_act = (seat + 1) % 2
            else:  # both passed: the non-dealer must draw from the stock
                s.to_act = (s.dealer + 1) % 2
                s.phase = DRAW
        else:
            _wrong_phase(s, move)
    elif phase == LAST_CARD:
        if isinstance(move, DrawDiscard):
            if not _last_card_useful(s, s.hands[seat] | (1 << s.discard[-1])):
                raise IllegalMoveError(
                    "MUST_KNOCK_WITH_LAST_CARD", "the last discard may be taken only to knock or go big gin with it"
                )
            draw_discard(s, events, DISCARD)
            s.must_knock = True
        elif isinstance(move, Pass):
            events.append(Event(EventKind.PASSED, seat, {"card": card_text(s.discard[-1])}))
            end_hand(s, events, STOCK_END, None, 0)
        elif isinstance(move, DrawStock):
            raise IllegalMoveError("STOCK_END", "the stock is down to 2 cards: take the last discard to knock, or pass")
        else:
            _wrong_phase(s, move)
    elif phase == LAYOFF:
        if isinstance(move, MeldMove):
            _defender_meld(s, seat, move.cards, events)
        elif isinstance(move, LayOff):
            _lay_off(s, seat, move.card, move.meld_id, events)
        elif isinstance(move, Done):
            _finish_knock(s, events)
        elif isinstance(move, Declare):
            _declare(s, seat, move, events)
        else:
            _wrong_phase(s, move)
    else:
        _wrong_phase(s, move)


def _wrong_phase(s: GameState, move: Move) -> None:
    raise IllegalMoveError("WRONG_PHASE", f"{move.kind} is not a move of the {s.phase} phase")


def _discard(s: GameState, seat: int, card: int, events: list[Event]) -> None:
    if s.must_knock:
        raise IllegalMoveError("MUST_KNOCK_WITH_LAST_CARD", "you took the last discard: knock or go big gin")
    check_discard(s, seat, card)
    put_discard(s, seat, card, events)
    if len(s.stock) <= 2:
        if s.rules.stock_end_rule == "fiftieth_card":
            s.to_act = (seat + 1) % 2
            s.taken = -1
            s.phase = LAST_CARD
        else:
            end_hand(s, events, STOCK_END, None, 0)
        return
    if s.turns >= s.rules.max_turns:
        end_hand(s, events, TURN_CAP, None, 0)
        return
    next_turn(s, events)


def validate_melds(melds: tuple[int, ...], within: int, ace_high: bool = False) -> int:
    """Check declared melds: each valid, disjoint, made of cards in ``within``; returns the covered mask."""
    covered = 0
    for m in melds:
        if meld_kind(m, ace_high) is None:
            raise IllegalMoveError("INVALID_MELD", f"not a set or run: {mask_text(m)}")
        if m & covered:
            raise IllegalMoveError("INVALID_MELD", f"a card is in two declared melds: {mask_text(m & covered)}")
        if m & ~within:
            raise IllegalMoveError("CARD_NOT_IN_HAND", f"not in your hand: {mask_text(m & ~within)}")
        covered |= m
    return covered


def _add_melds(s: GameState, seat: int, melds: tuple[int, ...]) -> list[int]:
    ids = []
    new = list(s.melds)
    for m in melds:
        kind = meld_kind(m)
        assert kind is not None
        new.append(TableMeld(s.next_meld_id, seat, kind, m))
        ids.append(s.next_meld_id)
        s.next_meld_id += 1
    s.melds = tuple(new)
    return ids


def _knock(s: GameState, seat: int, move: Knock, events: list[Event]) -> None:
    check_discard(s, seat, move.discard)
    if s.must_knock and move.discard == s.taken:  # (with discard_taken_card_allowed: check_discard lets it be)
        raise IllegalMoveError(
            "MUST_KNOCK_WITH_LAST_CARD", f"you took {card_text(s.taken)}, the last discard, to knock with it: keep it"
        )
    rest = s.hands[seat] & ~(1 << move.discard)
    if move.melds is None:
        dead, melds = best_arrangement(rest)
    else:
        covered = validate_melds(move.melds, rest)
        melds, dead = move.melds, mask_value(rest & ~covered)
    if dead > s.knock_limit:
        raise IllegalMoveError(
            "KNOCK_OVER_LIMIT", f"deadwood {dead} is over the knock limit of {s.knock_limit}"
            + (f" (best possible: {min_deadwood(rest)})" if move.melds is not None else "")
        )
    s.must_knock = False
    put_discard(s, seat, move.discard, events)
    ids = _add_melds(s, seat, melds)
    covered = 0
    for m in melds:
        covered |= m
    remove_from_hand(s, seat, covered)
    deadwood_cards = s.hands[seat]
    s.known = s.known[:seat] + (deadwood_cards,) + s.known[seat + 1 :]  # the knocker's hand is face up
    s.knocker = seat
    s.knock_deadwood = dead
    s.taken = -1
    events.append(Event(EventKind.KNOCKED, seat, {
        "discard": card_text(move.discard), "gin": dead == 0, "deadwood": dead,
        "melds": [tm.to_dict() for tm in s.melds if tm.id in ids],
        "deadwood_cards": [card_text(c) for c in cards_of(deadwood_cards)],
    }))
    defender = 1 - seat
    if dead == 0:
        d = min_deadwood(s.hands[defender])
        end_hand(s, events, GIN_OUT, seat, s.rules.gin_bonus + d,
                 {"knocker": seat, "knocker_deadwood": 0, "defender_deadwood": d})
        return
    s.to_act = defender
    s.phase = LAYOFF


def _big_gin(s: GameState, seat: int, move: BigGin, events: list[Event]) -> None:
    if s.rules.big_gin_bonus <= 0:
        raise IllegalMoveError("BIG_GIN_DISABLED", "big gin is not played in this game")
    hand = s.hands[seat]
    if move.melds is None:
        dead, melds = best_arrangement(hand)
        if dead:
            raise IllegalMoveError("NOT_ALL_MELDED", "big gin needs all 11 cards in melds")
    else:
        covered = validate_melds(move.melds, hand)
        if covered != hand:
            raise IllegalMoveError("NOT_ALL_MELDED", f"not in a declared meld: {mask_text(hand & ~covered)}")
        melds = move.melds
    s.must_knock = False
    ids = _add_melds(s, seat, melds)
    remove_from_hand(s, seat, hand)
    s.knocker = seat
    s.knock_deadwood = 0
    melded = [tm.to_dict() for tm in s.melds if tm.id in ids]
    events.append(Event(EventKind.BIG_GIN, seat, {"deadwood": 0, "melds": melded}))
    d = min_deadwood(s.hands[1 - seat])
    end_hand(s, events, BIG_GIN, seat, s.rules.big_gin_bonus + d,
             {"knocker": seat, "knocker_deadwood": 0, "defender_deadwood": d})


def _defender_meld(s: GameState, seat: int, cards: int, events: list[Event]) -> None:
    check_in_hand(s, seat, cards)
    kind = meld_kind(cards)
    if kind is None:
        raise IllegalMoveError("INVALID_MELD", f"not a set or run: {mask_text(cards)}")
    ids = _add_melds(s, seat, (cards,))
    remove_from_hand(s, seat, cards)
    events.append(Event(EventKind.MELDED, seat, {"meld": s.melds[-1].to_dict(), "meld_id": ids[0]}))


def _lay_off(s: GameState, seat: int, card: int, meld_id: int, events: list[Event]) -> None:
    check_in_hand(s, seat, 1 << card)
    target = next((m for m in s.melds if m.id == meld_id), None)
    if target is None:
        raise IllegalMoveError("UNKNOWN_MELD", f"no meld {meld_id} on the table")
    if target.owner != s.knocker:
        raise IllegalMoveError("CANNOT_LAY_OFF", "layoffs go only onto the knocker's melds")
    if not extends(target.cards, card):
        raise IllegalMoveError("CANNOT_LAY_OFF", f"{card_text(card)} does not fit meld {meld_id}")
    lay_off_card(s, seat, card, target, events)


def _declare(s: GameState, seat: int, move: Declare, events: list[Event]) -> None:
    if move.melds is None and move.layoffs is None:
        knocker_melds = tuple((m.id, m.cards) for m in s.melds if m.owner == s.knocker)
        best = best_declaration(s.hands[seat], knocker_melds)
        melds, layoffs = best.melds, best.layoffs
    else:
        melds, layoffs = move.melds or (), move.layoffs or ()
        covered = 0
        for m in melds:  # checked before any is laid down: the second would be CARD_NOT_IN_HAND
            if m & covered:
                raise IllegalMoveError("INVALID_MELD", f"a card is in two declared melds: {mask_text(m & covered)}")
            covered |= m
    for m in melds:
        _defender_meld(s, seat, m, events)
    # layoffs may be listed in any order that works: play each as soon as it fits (9H then 8H onto 5H-6H-7H)
    pending = list(layoffs)
    while pending:
        fits = next((i for i, (card, meld_id) in enumerate(pending) if _fits(s, card, meld_id)), None)
        if fits is None:
            _lay_off(s, seat, *pending[0], events)  # raises the precise reason
        card, meld_id = pending.pop(0 if fits is None else fits)
        _lay_off(s, seat, card, meld_id, events)
    _finish_knock(s, events)


def _fits(s: GameState, card: int, meld_id: int) -> bool:
    target = next((m for m in s.melds if m.id == meld_id), None)
    return target is not None and target.owner == s.knocker and extends(target.cards, card)


def _finish_knock(s: GameState, events: list[Event]) -> None:
    knocker = s.knocker
    defender = 1 - knocker
    k = s.knock_deadwood
    left = s.hands[defender]
    # "best": deadwood is the minimum over arrangements, so melds still in hand at "done" do not count;
    # "declared": only what was declared (melds laid down, cards laid off) is out of the deadwood
    d = min_deadwood(left) if s.rules.defender_deadwood == "best" else mask_value(left)
    detail = {"knocker": knocker, "knocker_deadwood": k, "defender_deadwood": d}
    events.append(Event(EventKind.DECLARED, defender, {"deadwood": d}))
    r = s.rules
    if k < d:
        end_hand(s, events, KNOCK, knocker, d - k, detail)
    elif k > d or r.undercut_on_tie:
        end_hand(s, events, UNDERCUT, defender, r.undercut_bonus + (k - d), detail)
    else:
        end_hand(s, events, TIE, None, 0, detail)



