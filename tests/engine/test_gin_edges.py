"""Edge cases of RULES.md section 2 (Gin Rummy, Oklahoma, Hollywood) and section 4 that the clause tests of
``test_gin_rules.py`` leave out: options combined (take-or-pass with big gin, the fiftieth card with big gin,
Oklahoma's ace of spades), a rule applied to every deal rather than the first, ace-low layoffs, and Hollywood's
per-game boxes and bonuses. Every scenario starts from a preset deal; seat 0 acts first (seat 1 deals).
"""

from __future__ import annotations

from typing import Any

import engine as E
from engine import BigGin, Declare, DrawDiscard, Knock, LayOff, Pass
from tests.engine.helpers import burn_turns, gin_deal, hand_ended, mask, of_kind, play, start
from tests.engine.test_gin_rules import (
    GIN10,
    GIN_DEFENDER,
    K9,
    STOCK_END_HANDS,
    c,
    gin,
    legal_knocks,
    meld_id,
    play_win,
    refused,
    win_deal,
)

# ------------------------------------------------------------------------------- first upcard (2)


def test_take_or_pass_taken_upcard_allows_big_gin_but_is_no_knock_discard() -> None:
    """RULES.md 2: take_or_pass "the non-dealer may take the upcard"; section 1 "A card taken from the discard pile
    may not be discarded in the same turn"; big gin "after drawing, if all 11 cards form melds". Taking TH makes
    7H-TH: the upcard is no knock discard, but big gin (no discard) is open: 31 + 63."""
    s = start(gin(first_upcard_rule="take_or_pass"),
              gin_deal(dealer=1, hands=[GIN10, GIN_DEFENDER], upcard="TH"))
    s, _ = play(s, "draw discard")
    assert s.taken == c("TH") and BigGin() in E.legal_moves(s)
    assert "TH" not in legal_knocks(s) and "AS" in legal_knocks(s)
    refused(s, 0, Knock(c("TH")), "DISCARD_TAKEN_CARD")
    s, events = play(s, BigGin())
    ended = hand_ended(events)
    assert (ended["reason"], ended["winner"], ended["points"]) == ("big_gin", 0, 31 + 63)


def test_take_or_pass_is_offered_again_in_every_deal_to_the_new_non_dealer() -> None:
    """RULES.md 2: "First turn (option first_upcard_rule)" is the first turn of every hand; "The winner of a hand
    deals the next" and "The non-dealer acts first": seat 0 wins hand 1 and deals hand 2, whose upcard is offered
    to seat 1 first, then to seat 0."""
    s = start(gin(first_upcard_rule="take_or_pass"), win_deal(dealer=1, winner=0, loser_deadwood=15),
              win_deal(dealer=0, winner=0, loser_deadwood=15, upcard="QD"))
    s, _ = play_win(s, 0)
    assert (s.hand_no, s.dealer, s.phase, s.to_act, s.passes) == (1, 0, "take_or_pass", 1, 0)
    assert set(E.legal_moves(s)) == {DrawDiscard(), Pass()}
    s, _ = play(s, "pass")
    assert (s.phase, s.to_act) == ("take_or_pass", 0)
    s, _ = play(s, "pass")
    assert (s.phase, s.to_act) == ("draw", 1)
    refused(s, 1, DrawDiscard(), "MUST_DRAW_STOCK")


def test_take_or_pass_taken_upcard_is_seen_by_everyone() -> None:
    """RULES.md 4: "Visible to everyone: the upcard ... and any card taken from the discard pile (everyone saw
    it)": after seat 0 takes the upcard KD, the other seat and a spectator see it in seat 0's hand."""
    s = start(gin(first_upcard_rule="take_or_pass"),
              gin_deal(dealer=1, hands=[K9, GIN_DEFENDER], upcard="KD"))
    s, events = play(s, "draw discard")
    for viewer in (1, E.SPECTATOR):
        v = E.view(s, viewer)
        assert v["known_cards"][0] == ["KD"] and v["taken_card"] == "KD" and v["upcard"] == "KD"
        (drew,) = [E.event_for(e, viewer) for e in of_kind(events, "drew")]
        assert (drew["source"], drew["card"]) == ("discard", "KD")


# ----------------------------------------------------------------------------- end of stock (2)

FIFTIETH_HANDS = ("AS 2S 3S 4S 7H 8H 9H TH 5C 8D", "JS QS KS 5D 6D 7D AC 2C 3C 4C")  # seat 1 holds gin


def test_fiftieth_card_may_be_taken_to_go_big_gin() -> None:
    """RULES.md 2, `fiftieth_card`: "the next player may take that last discard only in order to knock (or go big
    gin) with it": seat 0 throws 8D with the stock at 2; seat 1 takes it (5D-8D) and goes big gin."""
    s = start(gin(stock_end_rule="fiftieth_card"), gin_deal(dealer=1, hands=FIFTIETH_HANDS, upcard="KD"))
    s, _ = burn_turns(s, 28)
    s, _ = play(s, "draw stock", "discard 8D")
    assert (s.phase, s.to_act, len(s.stock)) == ("last_card", 1, 2)
    assert DrawDiscard() in E.legal_moves(s)
    s, _ = play(s, "draw discard")
    assert BigGin() in E.legal_moves(s)
    s, events = play(s, BigGin())
    ended = hand_ended(events)
    assert (ended["reason"], ended["winner"]) == ("big_gin", 1)


def test_fiftieth_card_pass_draws_the_hand_and_the_same_dealer_deals() -> None:
    """RULES.md 2: "pass, which draws the hand"; "after a hand nobody won (a drawn hand ...) the same dealer deals
    again": seat 1 passes a last discard it could have used."""
    s = start(gin(stock_end_rule="fiftieth_card"), gin_deal(dealer=1, hands=FIFTIETH_HANDS, upcard="KD"))
    s, _ = burn_turns(s, 28)
    s, _ = play(s, "draw stock", "discard 8D", "pass")
    assert s.hand_no == 1 and s.dealer == 1 and s.scores == (0, 0)


# ----------------------------------------------------------------------------------- Oklahoma (2)


def test_oklahoma_ace_of_spades_upcard_means_gin_only_and_doubles_the_gin() -> None:
    """RULES.md 2, oklahoma-gin: "an ace upcard means gin only"; "a spade upcard doubles the hand score, bonuses
    included": the AS upcard allows only the gin discard QC, which scores (25 + 98) x 2."""
    s = start(E.rules_from_profile("oklahoma-gin"), gin_deal(
        dealer=1, hands=["2S 3S 4S 5S 6S AH 2H 3H 4H 5H", "KH KD QH QD JS JC TS TC 9H 9D"], upcard="AS",
        stock_top_first="QC"))
    assert s.knock_limit == 0
    s, _ = play(s, "draw stock")
    assert legal_knocks(s) == {"QC"}
    refused(s, 0, Knock(c("2S")), "KNOCK_OVER_LIMIT")
    s, events = play(s, "knock QC")
    ended = hand_ended(events)
    assert (ended["reason"], ended["points"]) == ("gin", 2 * (25 + 98))


def test_oklahoma_each_deal_takes_its_limit_from_its_own_upcard() -> None:
    """RULES.md 2: "the knock limit of each deal is the value of its first upcard": 6 in hand 1, 3 in hand 2."""
    s = start(E.rules_from_profile("oklahoma-gin"), win_deal(dealer=1, winner=0, loser_deadwood=98, upcard="6C"),
              win_deal(dealer=0, winner=0, loser_deadwood=98, upcard="3C"))
    assert s.knock_limit == 6
    s, events = play_win(s, 0)
    assert s.hand_no == 1 and s.knock_limit == 3
    (started,) = of_kind(events, "hand_started")
    assert started.public["knock_limit"] == 3


def test_oklahoma_spade_tie_undercut_is_doubled() -> None:
    """RULES.md 2: "K = D (option undercut_on_tie, default true): the defender scores undercut_bonus + (K - D)";
    a spade upcard "doubles the hand score, bonuses included": (25 + 0) x 2."""
    s = start(E.rules_from_profile("oklahoma-gin"), gin_deal(
        dealer=1, hands=[K9, "JS QS KS 5D 6D 7D AC 2C 3C 9D"], upcard="TS", stock_top_first="KC"))
    s, events = play(s, "draw stock", "knock KC", Declare())
    ended = hand_ended(events)
    assert (ended["reason"], ended["winner"], ended["points"]) == ("undercut", 1, 50)


def test_oklahoma_spade_doubles_the_hand_not_the_box_or_game_bonus() -> None:
    """RULES.md 2: a spade upcard "doubles the hand score, bonuses included" (the hand's gin bonus); docs/rules.md
    reads box and game bonuses as match bonuses, not doubled: 246 + one box 20 + game 100."""
    rules = E.rules_from_profile("oklahoma-gin", box_bonus=20, game_bonus=100)
    s = start(rules, win_deal(dealer=1, winner=0, loser_deadwood=98, upcard="KS"))
    s, _ = play_win(s, 0)
    assert s.phase == "match_over" and s.scores == (246, 0)
    assert s.result is not None and s.result["totals"] == [246 + 20 + 100, 0]


# ------------------------------------------------------------------------------------------- layoffs (2)


def test_layoffs_extend_a_run_below_only_down_to_the_ace() -> None:
    """RULES.md 1: "Ace is low: A-2-3 is a run, Q-K-A is not"; section 2: layoffs "extend a run at either end":
    AH goes below 2H-3H-4H, AC does not go above JC-QC-KC."""
    s = start(gin(), gin_deal(dealer=1, hands=["2H 3H 4H JC QC KC 7S 7D 7C 2D", "AH AC 5D 6D 9S TS 3C 4C 5S 8H"],
                              upcard="6H", stock_top_first="KS"))
    s, _ = play(s, "draw stock", "knock KS")
    low, high = meld_id(s, "2H 3H 4H"), meld_id(s, "JC QC KC")
    moves = E.legal_moves(s)
    assert LayOff(c("AH"), low) in moves and not [m for m in moves if isinstance(m, LayOff) and m.card == c("AC")]
    refused(s, 1, LayOff(c("AC"), high), "CANNOT_LAY_OFF")
    s, events = play(s, LayOff(c("AH"), low), "done")
    assert hand_ended(events)["defender_deadwood"] == 1 + 5 + 6 + 9 + 10 + 3 + 4 + 5 + 8


def test_a_laid_off_card_leaves_the_defenders_hand_for_good() -> None:
    """RULES.md 2: the defender lays off "onto the knocker's melds" and "A card belongs to at most one meld"
    (section 1): 8H laid off on 5H-6H-7H can no longer be melded with the defender's own 8-set."""
    s = start(gin(), gin_deal(dealer=1, hands=["5H 6H 7H AS 2S 3S KC KD KS 2D", "8H 8S 8D 4D 6D TC 3C 5C QS JD"],
                              upcard="JH", stock_top_first="QC"))
    s, _ = play(s, "draw stock", "knock QC")
    s, _ = play(s, LayOff(c("8H"), meld_id(s, "5H 6H 7H")))
    refused(s, 1, E.MeldMove(mask("8H 8S 8D")), "CARD_NOT_IN_HAND")


# -------------------------------------------------------------------------------------- Hollywood (2)


def _games(result: dict[str, Any]) -> list[tuple[list[int], list[int], list[int]]]:
    return [(g["points"], g["box_bonus"], g["game_bonus"]) for g in result["games"]]


def test_hollywood_each_game_has_its_own_boxes_and_game_or_shutout_bonus() -> None:
    """RULES.md 2, hollywood-gin: "Each game ends at target_score with its own boxes and bonuses"; "the winner is
    the player with the higher sum over the three games". Seat 1 wins 30 (game 1), then seat 0 wins 123 three
    times: game 1 (123 to 30: game bonus), game 2 and game 3 (123 to 0: shutout bonus each)."""
    rules = E.rules_from_profile("hollywood-gin", box_bonus=20, game_bonus=100, shutout_game_bonus=200)
    s = start(rules, win_deal(dealer=1, winner=1, loser_deadwood=5), win_deal(dealer=1, winner=0, loser_deadwood=98),
              win_deal(dealer=0, winner=0, loser_deadwood=98), win_deal(dealer=0, winner=0, loser_deadwood=98))
    entered = []
    for winner in (1, 0, 0, 0):
        assert s.phase != "match_over"
        s, events = play_win(s, winner)
        entered.append(hand_ended(events)["games_entered"])
    assert entered == [[0], [0], [1], [2]]
    assert s.phase == "match_over" and s.result is not None
    assert _games(s.result) == [
        ([123, 30], [20, 20], [100, 0]), ([123, 0], [20, 0], [200, 0]), ([123, 0], [20, 0], [200, 0]),
    ]
    assert s.result["totals"] == [243 + 343 + 343, 50] and s.result["winners"] == [0]


def test_a_gin_hand_declared_with_deadwood_is_a_plain_knock() -> None:
    """RULES.md 2: "The knocker may declare any valid arrangement"; "Scoring always uses the arrangement that was
    declared"; "Knocking with 0 deadwood is gin": GIN10 could go gin, but declaring AS-3S leaves 4S as deadwood,
    so it is a knock with K = 4 (the defender may lay off), scoring 63 - 4, not gin's 25 + 63."""
    s = start(gin(), gin_deal(dealer=1, hands=[GIN10, GIN_DEFENDER], upcard="JD", stock_top_first="5D"))
    s, events = play(s, "draw stock", Knock(c("5D"), (mask("AS 2S 3S"), mask("7H 8H 9H"), mask("KC KD KS"))))
    (k,) = of_kind(events, "knocked")
    assert (k.public["gin"], k.public["deadwood"], k.public["deadwood_cards"]) == (False, 4, ["4S"])
    assert s.phase == "layoff" and s.to_act == 1
    s, events = play(s, Declare())
    ended = hand_ended(events)
    assert (ended["reason"], ended["winner"], ended["points"]) == ("knock", 0, 63 - 4)


# ------------------------------------------------------------------------------- options and profiles (2)


def test_every_gin_option_of_rules_md_has_its_default() -> None:
    """RULES.md 1 and 2 name each Gin table option with its default: `discard_taken_card_allowed` false,
    `max_turns` 1000, `first_upcard_rule` none (seed 001), `knock_limit` 10, `big_gin_bonus` 31, gin 25,
    undercut 25, `undercut_on_tie` true, `defender_deadwood` best, `stock_end_rule` draw, `target_score` 100, the
    standard bonuses "all 0 by default", `oklahoma_ace` gin only ("an ace upcard means gin only"), `spades_double`
    on; `oklahoma` and `hollywood` only in their profiles."""
    r = E.rules_from_profile("gin")
    assert r == E.Rules()
    named = {
        "discard_taken_card_allowed": False, "max_turns": 1000, "first_upcard_rule": "none", "knock_limit": 10,
        "big_gin_bonus": 31, "gin_bonus": 25, "undercut_bonus": 25, "undercut_on_tie": True,
        "defender_deadwood": "best", "stock_end_rule": "draw", "target_score": 100, "box_bonus": 0,
        "game_bonus": 0, "shutout_game_bonus": 0, "oklahoma": False, "oklahoma_ace": "gin_only",
        "spades_double": True, "hollywood": False, "max_hands": 0,
    }
    assert {k: r.to_dict()[k] for k in named} == named
    oklahoma, hollywood = E.rules_from_profile("oklahoma-gin"), E.rules_from_profile("hollywood-gin")
    assert (oklahoma.oklahoma, oklahoma.oklahoma_ace, oklahoma.spades_double, oklahoma.target_score) == (
        True, "gin_only", True, 150)
    assert E.Rules(oklahoma=True, target_score=150) == oklahoma
    assert E.Rules(hollywood=True) == hollywood


def test_fiftieth_card_must_be_knocked_with_even_when_the_taken_card_may_be_discarded() -> None:
    """RULES.md 2, `fiftieth_card`: the last discard may be taken "only in order to knock (or go big gin) with it":
    with `discard_taken_card_allowed` on too, the knock may not throw that card back (that is no knock with it)."""
    rules = gin(stock_end_rule="fiftieth_card", discard_taken_card_allowed=True)
    s = start(rules, gin_deal(dealer=1, hands=STOCK_END_HANDS, upcard="KD"))
    s, _ = burn_turns(s, 28)
    s, _ = play(s, "draw stock", "discard 3C", "draw discard")
    refused(s, 1, Knock(c("3C")), "MUST_KNOCK_WITH_LAST_CARD")
    assert legal_knocks(s) == {"9D", "8C"}


def test_fiftieth_card_that_only_a_throw_back_would_use_may_not_be_taken() -> None:
    """The same: seat 1 holds gin; TH, the last discard, would be 10 of deadwood against a knock limit of 5, so
    only throwing TH back would make a knock: taking it is refused, and only the pass (a drawn hand) is left."""
    rules = gin(stock_end_rule="fiftieth_card", discard_taken_card_allowed=True, knock_limit=5)
    s = start(rules, gin_deal(dealer=1, hands=FIFTIETH_HANDS, upcard="KD"))
    s, _ = burn_turns(s, 28)
    s, _ = play(s, "draw stock", "discard TH")
    assert (s.phase, s.to_act) == ("last_card", 1)
    assert E.legal_moves(s) == [Pass()]
    refused(s, 1, DrawDiscard(), "MUST_KNOCK_WITH_LAST_CARD")
