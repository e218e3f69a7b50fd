"""Clauses of RULES.md that the clause tests of ``test_gin_rules.py``, ``test_gin_edges.py`` and
``test_rummy_rules.py`` leave unpinned, found by a clause-by-clause audit: a pinning test each, from a preset deal.
Gin scenarios: seat 1 deals unless a test says otherwise, so seat 0 acts first.
"""

from __future__ import annotations

import engine as E
from engine import BigGin, Declare, DrawStock
from tests.engine.helpers import burn_turns, gin_deal, hand_ended, of_kind, play, start
from tests.engine.test_gin_rules import (
    GIN10,
    GIN_DEFENDER,
    K9,
    PLAIN,
    STOCK_END_HANDS,
    c,
    gin,
    legal_knocks,
    play_win,
    win_deal,
)

THREE_MELDS = "JS QS KS 5D 6D 7D AC 2C 3C 4H"  # D = 4 against K9's knock: an undercut


# ------------------------------------------------------------------------------------------------ match (2)


def test_gin_undercut_winner_deals_the_next_hand() -> None:
    """RULES.md 2: "The winner of a hand deals the next", an undercut winner too. The dealer (seat 1) knocks, so
    the non-dealer undercuts: seat 0 wins 25 + (9 - 4) and deals hand 2, seat 1 acting first."""
    s = start(gin(), gin_deal(dealer=1, hands=[THREE_MELDS, K9], upcard="5S", stock_top_first="QH KC"))
    s, _ = play(s, "draw stock", "discard QH", "draw stock", "knock KC")
    assert s.knocker == 1 and s.to_act == 0
    s, events = play(s, Declare())
    ended = hand_ended(events)
    assert (ended["reason"], ended["winner"], ended["points"]) == ("undercut", 0, 30)
    assert (s.hand_no, s.dealer, s.to_act) == (1, 0, 1)


def test_gin_shutout_game_bonus_zero_means_game_bonus_applies() -> None:
    """RULES.md 2: "`shutout_game_bonus` (replaces `game_bonus` when the loser scored no hand points; 0 means no
    separate shutout bonus, so `game_bonus` applies)": a 123-0 shutout gets the game bonus 100."""
    s = start(gin(game_bonus=100), win_deal(dealer=1, winner=0, loser_deadwood=98))
    s, _ = play_win(s, 0)
    assert s.phase == "match_over" and s.scores == (123, 0)
    assert s.result is not None and s.result["winners"] == [0]
    assert s.result["totals"] == [123 + 100, 0]
    assert s.result["detail"]["game_bonus"] == [100, 0]


LOSER35 = "7D 8D 9D TD KS QH 2C 4D 6S 3C"  # minimum deadwood 35 (7D-TD melds): a gin against it scores 60


def test_hollywood_match_tied_over_the_three_games_is_a_shared_win() -> None:
    """RULES.md 2, `hollywood-gin`: "The match ends when all three games have ended; the winner is the player with
    the higher sum over the three games (a tie is shared)". Target 30: seat 0 ends game 1 with 30; seat 1, shut
    out of it, ends game 2 with 60; seat 0 ends game 3 with 30: 60 against 60."""
    rules = E.rules_from_profile("hollywood-gin", target_score=30)
    loser35 = gin_deal(dealer=0, hands=[LOSER35, "AS 2S 3S 4S 5S AH 2H 3H 4H 5H"], upcard="KC",
                       stock_top_first="QC JD")
    s = start(rules, win_deal(dealer=1, winner=0, loser_deadwood=5), loser35,
              win_deal(dealer=1, winner=0, loser_deadwood=5))
    entered = []
    for winner in (0, 1, 0):
        assert s.phase != "match_over"
        s, events = play_win(s, winner)
        entered.append(hand_ended(events)["games_entered"])
    assert entered == [[0], [1], [2]]
    assert [list(g) for g in s.games] == [[30, 0], [0, 60], [30, 0]] and all(s.games_ended)
    assert s.phase == "match_over" and s.result is not None
    assert s.result["totals"] == [60, 60] and s.result["winners"] == [0, 1]


# ----------------------------------------------------------------------------------------- Oklahoma (2)


def test_oklahoma_spade_upcard_doubles_big_gin_bonus_included() -> None:
    """RULES.md 2: "a spade upcard doubles the hand score, bonuses included": big gin 31 + 63 = 94 becomes 188."""
    s = start(E.rules_from_profile("oklahoma-gin"),
              gin_deal(dealer=1, hands=[GIN10, GIN_DEFENDER], upcard="TS", stock_top_first="TH"))
    s, events = play(s, "draw stock", BigGin())
    ended = hand_ended(events)
    assert (ended["reason"], ended["winner"], ended["points"]) == ("big_gin", 0, 2 * (31 + 63))


def test_oklahoma_limit_stays_when_the_dealer_takes_the_passed_upcard() -> None:
    """RULES.md 2: the knock limit is the first upcard's value, "whoever takes that card": with take-or-pass the
    non-dealer passes the 7D and the dealer takes it; the limit stays 7 for both players."""
    rules = E.rules_from_profile("oklahoma-gin", first_upcard_rule="take_or_pass")
    s = start(rules, gin_deal(dealer=1, hands=PLAIN, upcard="7D"))
    s, _ = play(s, "pass", "draw discard")
    assert s.to_act == 1 and s.hands[1] >> c("7D") & 1 and s.knock_limit == 7
    s, _ = play(s, "discard QS")
    assert s.knock_limit == 7 and E.view(s, 0)["knock_limit"] == 7


# ---------------------------------------------------------------------------- end of stock, turn cap (1, 2)


def test_fiftieth_card_the_player_who_drew_the_third_last_card_may_still_knock() -> None:
    """RULES.md 2: "The player who drew the third-last card may still knock on that turn", under `fiftieth_card`
    as under `draw`: the stock is at 2 and the knock is accepted, no last-card offer."""
    s = start(gin(stock_end_rule="fiftieth_card"), gin_deal(dealer=1, hands=STOCK_END_HANDS, upcard="KD"))
    s, _ = burn_turns(s, 28)
    drawn = s.stock[-1]
    s, _ = play(s, "draw stock")
    assert len(s.stock) == 2 and E.card_text(drawn) in legal_knocks(s)
    s, events = play(s, E.Knock(drawn))
    assert s.phase == "layoff" and not of_kind(events, "hand_ended")


def test_fiftieth_card_knock_after_the_capping_discard_is_scored() -> None:
    """RULES.md 1: "a Gin stock end on the same discard takes precedence" over `max_turns`: with `fiftieth_card`
    the 29th discard (the cap) leaves 2 in the stock, so the next player is offered the last discard; taking it
    to knock is scored as a knock, not drawn by the cap."""
    s = start(gin(stock_end_rule="fiftieth_card", max_turns=29),
              gin_deal(dealer=1, hands=STOCK_END_HANDS, upcard="KD"))
    s, _ = burn_turns(s, 28)
    s, _ = play(s, "draw stock", "discard 3C")
    assert (s.turns, s.phase, s.to_act) == (29, "last_card", 1)
    s, events = play(s, "draw discard", "knock 9D", Declare())
    ended = hand_ended(events)
    assert ended["reason"] in ("knock", "undercut") and ended["winner"] is not None and ended["points"] > 0


def test_take_or_pass_passes_are_no_turns_for_max_turns() -> None:
    """RULES.md 1: "A turn counts when it ends with a discard": two passes of the upcard are not turns, so with
    `max_turns` 2 the hand is drawn after the second discard, not before."""
    s = start(gin(first_upcard_rule="take_or_pass", max_turns=2), gin_deal(dealer=1, hands=PLAIN, upcard="KD"))
    s, _ = play(s, "pass", "pass")
    assert s.turns == 0
    s, events = burn_turns(s, 1)
    assert s.turns == 1 and not of_kind(events, "hand_ended")
    s, events = burn_turns(s, 1)
    assert hand_ended(events)["reason"] == "turn_cap"
    assert s.hand_no == 1 and s.dealer == 1


def test_take_or_pass_after_both_passed_the_next_discard_may_be_taken() -> None:
    """RULES.md 2: "if both pass, the non-dealer must draw from the stock and may no longer take that upcard":
    only that upcard; the dealer may take the non-dealer's discard that now lies on it."""
    s = start(gin(first_upcard_rule="take_or_pass"), gin_deal(dealer=1, hands=PLAIN, upcard="KD"))
    s, _ = play(s, "pass", "pass", "draw stock", "discard 3C")
    assert s.to_act == 1 and set(E.legal_moves(s)) == {DrawStock(), E.DrawDiscard()}
    s, _ = play(s, "draw discard")
    assert s.hands[1] >> c("3C") & 1 and s.discard == (c("KD"),)


# ------------------------------------------------------------------------------------------------ dealer (1)


def test_gin_seat_zero_deals_the_first_hand_without_a_preset() -> None:
    """RULES.md 1: "Unless a preset deal names another, seat 0 deals the first hand of a match"; "The dealer's next
    seat acts first" (section 2: "The non-dealer acts first"), with either first-upcard rule."""
    for rule, phase in (("none", "draw"), ("take_or_pass", "take_or_pass")):
        s = E.new_game(gin(first_upcard_rule=rule), b"gin-seat-zero-deals-first-hand!!")
        assert (s.dealer, s.to_act, s.phase) == (0, 1, phase)


def test_gin_preset_deal_names_its_dealer_over_the_winner_rule() -> None:
    """RULES.md 1: "Unless a preset deal names another" (docs/rules.md 7: a preset deal's dealer overrides the
    usual rotation for that hand): seat 0 wins hand 1, yet hand 2's preset names seat 1 as dealer."""
    s = start(gin(), win_deal(dealer=1, winner=0, loser_deadwood=5), gin_deal(dealer=1, hands=PLAIN, upcard="KD"))
    s, _ = play_win(s, 0)
    assert (s.hand_no, s.dealer, s.to_act) == (1, 1, 0)
    assert s.hands == (E.mask_of(E.parse_cards(PLAIN[0].split())), E.mask_of(E.parse_cards(PLAIN[1].split())))
