"""Rule-clause tests for the common parts: cards, card text, card values and melds (RULES.md head and section 1).

Each test is named after the clause it checks; its docstring quotes or cites that clause.
"""

from __future__ import annotations

import pytest

from engine import (
    CARD_VALUE,
    Discard,
    InvalidMoveError,
    LayOff,
    MeldMove,
    card_text,
    cards_of,
    extends,
    mask_of,
    mask_text,
    mask_value,
    meld_kind,
    move_from_dict,
    move_text,
    move_to_dict,
    parse_card,
    parse_cards,
    parse_move,
)


def m(text: str) -> int:
    """Mask of space-separated card texts."""
    return mask_of(parse_card(t) for t in text.split())


# ------------------------------------------------------------------------------------------------- cards


def test_card_is_suit_times_13_plus_rank() -> None:
    """Design: a card is ``suit * 13 + rank``, rank 0 = ace .. 12 = king, suits in the order S H D C."""
    assert parse_card("AS") == 0
    assert parse_card("KS") == 12
    assert parse_card("AH") == 13
    assert parse_card("2D") == 2 * 13 + 1
    assert parse_card("KC") == 51


def test_card_text_rank_then_suit() -> None:
    """RULES.md card text: rank ``A 2 3 4 5 6 7 8 9 T J Q K`` + suit ``S H D C``: ``AS``, ``TD``, ``KH``."""
    texts = [card_text(c) for c in range(52)]
    assert texts[:13] == ["AS", "2S", "3S", "4S", "5S", "6S", "7S", "8S", "9S", "TS", "JS", "QS", "KS"]
    assert [t[1] for t in texts[::13]] == ["S", "H", "D", "C"]
    assert len(set(texts)) == 52
    assert all(parse_card(card_text(c)) == c for c in range(52))


@pytest.mark.parametrize("text", ["10D", "10d", "TD", "td", "tD", " TD ", "Td"])
def test_card_text_accepts_10_for_ten_and_lower_case(text: str) -> None:
    """RULES.md card text: "accept ``10`` for ten on input"; lower case is accepted too. Output is always ``TD``."""
    assert parse_card(text) == parse_card("TD") == 2 * 13 + 9
    assert card_text(parse_card(text)) == "TD"


@pytest.mark.parametrize("text", ["as", "kh", "qc", "2d", "jS"])
def test_card_text_lower_case_accepted(text: str) -> None:
    """Card text on input is case-insensitive."""
    assert card_text(parse_card(text)) == text.upper()


@pytest.mark.parametrize(
    "text", ["", " ", "A", "S", "1D", "11D", "0D", "TX", "ZZ", "AS5", "A S", "10", "100D", "KHS", "1OD", "XX"]
)
def test_card_text_garbage_refused_with_invalid_card(text: str) -> None:
    """Card text that is not a rank plus a suit is malformed input: InvalidMoveError with code INVALID_CARD."""
    with pytest.raises(InvalidMoveError) as err:
        parse_card(text)
    assert err.value.code == "INVALID_CARD"


def test_card_list_refuses_a_repeated_card() -> None:
    """One 52-card deck: a card listed twice (``TD`` and ``10D`` are the same card) is refused."""
    assert parse_cards(["AS", "td", "KH"]) == [0, parse_card("TD"), parse_card("KH")]
    with pytest.raises(InvalidMoveError) as err:
        parse_cards(["TD", "10D"])
    assert err.value.code == "DUPLICATE_CARD"
    with pytest.raises(InvalidMoveError) as err:
        parse_cards(["TD", "QX"])
    assert err.value.code == "INVALID_CARD"


@pytest.mark.parametrize("text", ["A\u017f", "10\u017f", "K\u017f"])
def test_card_text_of_letters_that_only_upper_case_to_a_suit_is_refused(text: str) -> None:
    """Card text is the ranks and suits of RULES.md, in either case: the long s (U+017F), which str.upper() turns
    into S, is no spade (INVALID_CARD)."""
    with pytest.raises(InvalidMoveError) as err:
        parse_card(text)
    assert err.value.code == "INVALID_CARD"


def test_move_text_takes_card_text_with_10_and_lower_case() -> None:
    """Moves given as text accept the same card text (``10``, lower case) and print the canonical form."""
    assert parse_move("discard 10d") == Discard(parse_card("TD"))
    assert parse_move("MELD 8h 9H 10h") == MeldMove(m("8H 9H TH"))
    assert parse_move("layoff 10c 3") == LayOff(parse_card("TC"), 3)
    assert move_text(parse_move("meld 10h 8h 9h")) == "meld 8H 9H TH"
    with pytest.raises(InvalidMoveError) as err:
        parse_move("discard 1D")
    assert err.value.code == "INVALID_CARD"
    for move in (Discard(5), MeldMove(m("2C 3C 4C")), LayOff(51, 0)):
        assert parse_move(move_text(move)) == move
        assert move_from_dict(move_to_dict(move)) == move


@pytest.mark.parametrize("text", ["layoff 7S \u00b2", "layoff 7S \u0663", "declare 7S 8S 9S; 6S \u00b2"])
def test_move_text_meld_id_of_other_digits_is_bad_move_text(text: str) -> None:
    """A meld id is written in the digits 0-9: text such as a superscript two, which str.isdigit() takes for a
    digit (and int() refuses), is no move (BAD_MOVE_TEXT), never a ValueError (parse_move's contract)."""
    with pytest.raises(InvalidMoveError) as err:
        parse_move(text)
    assert err.value.code == "BAD_MOVE_TEXT"


def test_mask_text_lists_cards_by_suit_then_rank() -> None:
    """Sets of cards print in display order, one card text each."""
    assert mask_text(m("KC AS TD 2S")) == "AS 2S TD KC"
    assert cards_of(m("KC AS")) == (0, 51)


# ------------------------------------------------------------------------------------------------- card values


def test_card_values_ace_1_pips_face_value_faces_10() -> None:
    """Section 1 card values: ace 1, 2-10 face value, J Q K 10."""
    for suit in "SHDC":
        values = [CARD_VALUE[parse_card(r + suit)] for r in "A23456789TJQK"]
        assert values == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 10, 10, 10]
    assert mask_value(m("AS KH TD 5C")) == 1 + 10 + 10 + 5
    assert sum(CARD_VALUE) == 4 * 85


def test_card_values_ace_high_low_changes_only_the_ace() -> None:
    """Section 1: "Rummy with high-and-low aces changes the ace's value (option ``ace_value_high_low``)"."""
    assert mask_value(m("AS AH KC 2D"), ace_value=15) == 15 + 15 + 10 + 2
    assert mask_value(m("AS AH KC 2D"), ace_value=11) == 11 + 11 + 10 + 2


# ------------------------------------------------------------------------------------------------- melds


@pytest.mark.parametrize("text", ["7S 7H 7D", "7S 7H 7C", "7S 7D 7C", "7H 7D 7C", "7S 7H 7D 7C", "AS AH AC",
                                  "KS KD KC"])
def test_set_is_three_or_four_of_a_rank(text: str) -> None:
    """Section 1: "Set: 3 or 4 cards of one rank"."""
    assert meld_kind(m(text)) == "set"
    assert meld_kind(m(text), ace_high=True) == "set"


@pytest.mark.parametrize("text", ["7S 7H", "7S", "7S 7H 8D", "7S 7H 7D 8C", "7S 8S 9H"])
def test_not_a_set_fewer_than_three_or_mixed_ranks(text: str) -> None:
    """Section 1: a set is 3 or 4 cards of *one* rank; two cards, or mixed ranks and suits, are no meld."""
    assert meld_kind(m(text)) is None
    assert meld_kind(m(text), ace_high=True) is None


@pytest.mark.parametrize("text", ["4H 5H 6H", "4H 5H 6H 7H", "TC JC QC KC", "AD 2D 3D", "2S 3S 4S 5S 6S 7S 8S 9S"])
def test_run_is_three_or_more_consecutive_of_one_suit(text: str) -> None:
    """Section 1: "Run: 3 or more cards of one suit in consecutive rank"."""
    assert meld_kind(m(text)) == "run"
    assert meld_kind(m(text), ace_high=True) == "run"


@pytest.mark.parametrize("text", ["4H 5H", "4H 5H 6D", "4H 5H 7H", "4H 6H 8H", "4H 5H 6H 8H", "JC QC KC AD"])
def test_not_a_run_short_mixed_suit_or_gap(text: str) -> None:
    """Section 1: a run needs 3 or more cards, one suit, consecutive ranks (no gaps)."""
    assert meld_kind(m(text)) is None
    assert meld_kind(m(text), ace_high=True) is None


@pytest.mark.parametrize("suit", "SHDC")
def test_run_has_no_upper_length_thirteen_card_run(suit: str) -> None:
    """Section 1: "no upper length (A..K is one 13-card run)"."""
    whole = m(" ".join(r + suit for r in "A23456789TJQK"))
    assert whole.bit_count() == 13
    assert meld_kind(whole) == "run"
    assert meld_kind(whole, ace_high=True) == "run"


def test_ace_is_low_a23_is_a_run() -> None:
    """Section 1: "Ace is low: ``A-2-3`` is a run"."""
    assert meld_kind(m("AS 2S 3S")) == "run"
    assert meld_kind(m("AC 2C 3C 4C")) == "run"


@pytest.mark.parametrize("text", ["QS KS AS", "JH QH KH AH", "2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD"])
def test_qka_is_a_run_only_with_ace_high_low(text: str) -> None:
    """Section 1: "``Q-K-A`` is not [a run]. With Rummy's ``ace_high_low``, ``Q-K-A`` is also a run"."""
    if text.count(" ") < 12:
        assert meld_kind(m(text)) is None
    assert meld_kind(m(text), ace_high=True) == "run"


@pytest.mark.parametrize("text", ["KS AS 2S", "QS KS AS 2S", "KH AH 2H 3H", "JC QC KC AC 2C", "KD AD 2D 3D 4D"])
def test_never_round_the_corner(text: str) -> None:
    """Section 1: "Never round the corner: ``K-A-2`` and ``Q-K-A-2`` are never runs" (not even with ace_high_low)."""
    assert meld_kind(m(text)) is None
    assert meld_kind(m(text), ace_high=True) is None


def test_exhaustive_meld_kinds_match_the_definition() -> None:
    """Section 1 sets and runs, checked against a direct reading of the definition for every 3- and 4-card
    combination of the cards ranked A 2 3 4 J Q K (all suits: every corner case), with and without ace_high_low."""

    def by_definition(cards: list[int], ace_high: bool) -> str | None:
        ranks = sorted(c % 13 for c in cards)
        suits = {c // 13 for c in cards}
        if len(set(ranks)) == 1 and len(cards) in (3, 4):
            return "set"
        if len(suits) != 1 or len(cards) < 3:
            return None
        if ranks == list(range(ranks[0], ranks[0] + len(ranks))):
            return "run"
        if ace_high and ranks[0] == 0 and ranks[1:] == list(range(14 - len(ranks), 13)):
            return "run"
        return None

    from itertools import combinations

    pool = [c for c in range(52) if c % 13 in (0, 1, 2, 3, 10, 11, 12)]
    for size in (3, 4):
        for combo in combinations(pool, size):
            mask = mask_of(combo)
            for ace_high in (False, True):
                assert meld_kind(mask, ace_high) == by_definition(list(combo), ace_high), (mask_text(mask), ace_high)


# ------------------------------------------------------------------------------------------------- laying off


def test_lay_off_fourth_card_of_a_set() -> None:
    """Section 3: lay off "the 4th card of a set"; a set of four takes nothing more."""
    assert extends(m("8S 8H 8D"), parse_card("8C"))
    assert not extends(m("8S 8H 8D"), parse_card("9C"))
    assert not extends(m("8S 8H 8D"), parse_card("8S"))
    assert not extends(m("8S 8H 8D 8C"), parse_card("8C"))


def test_lay_off_extends_a_run_at_either_end() -> None:
    """Section 3: lay off "cards extending a run at either end"; never in the middle, never another suit."""
    run = m("8H 9H TH")
    assert extends(run, parse_card("7H"))
    assert extends(run, parse_card("JH"))
    assert not extends(run, parse_card("QH"))
    assert not extends(run, parse_card("7D"))
    assert not extends(run, parse_card("9H"))
    assert not extends(m("3C 4C 5C"), parse_card("AC"))
    assert extends(m("2C 3C 4C"), parse_card("AC"))


def test_lay_off_chained_cards_count_as_part_of_the_run() -> None:
    """Section 3 with section 2's example: cards laid off earlier count as part of the run (8H, 9H, TH can all go on
    5H-6H-7H, one after another)."""
    run = m("5H 6H 7H")
    for text in ("8H", "9H", "TH", "4H"):
        card = parse_card(text)
        assert extends(run, card)
        run |= 1 << card
    assert meld_kind(run) == "run"


def test_lay_off_ace_on_king_only_with_ace_high_low() -> None:
    """Section 1: ``Q-K-A`` is a run only with ace_high_low, so an ace extends J-Q-K only then; K never extends
    A-2-3 (K-A-2 is never a run)."""
    assert not extends(m("JS QS KS"), parse_card("AS"))
    assert extends(m("JS QS KS"), parse_card("AS"), ace_high=True)
    assert extends(m("QS KS AS"), parse_card("JS"), ace_high=True)
    assert not extends(m("QS KS AS"), parse_card("2S"), ace_high=True)
    assert not extends(m("AS 2S 3S"), parse_card("KS"), ace_high=True)
    assert not extends(m("AS 2S 3S"), parse_card("KS"))


def test_lay_off_nothing_extends_a_thirteen_card_run() -> None:
    """Section 1: A..K is the longest run; no card of another suit or a repeated card can extend it."""
    whole = m(" ".join(r + "D" for r in "A23456789TJQK"))
    for c in range(52):
        assert not extends(whole, c)
        assert not extends(whole, c, ace_high=True)
    twelve = whole & ~m("AD")
    assert extends(twelve, parse_card("AD"))
    assert extends(twelve, parse_card("AD"), ace_high=True)
