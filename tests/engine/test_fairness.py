"""Provably fair deals: the seed commitment and the check of a whole game's deals, restocks and stock draws."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

import engine as E
from engine.fairness import FairnessError, presets_digest, seed_commitment, verify_deals
from tests.engine.helpers import SEED, deal_from_text

GAME_ID = "g_fairness-test"


def _game(
    profile: str, players: int, presets: tuple[E.Deal, ...] = (), **options: Any
) -> tuple[E.Rules, list[dict[str, Any]]]:
    """A whole game played with random legal moves: its rules and its events as the referee sees them."""
    rules = E.rules_from_profile(profile, players, **options)
    s, first = E.new_game_with_events(rules, SEED, presets)
    events = [E.event_for(e, E.REFEREE) for e in first]
    rnd = random.Random(profile)
    while s.phase != "match_over":
        s, new = E.apply(s, s.to_act, rnd.choice(E.legal_moves(s)))
        events += [E.event_for(e, E.REFEREE) for e in new]
    return rules, events


def test_commitment_binds_game_id_seed_and_presets() -> None:
    base = seed_commitment(GAME_ID, SEED)
    assert len(base) == 64 and base == seed_commitment(GAME_ID, SEED, ())
    assert seed_commitment(GAME_ID + "x", SEED) != base
    assert seed_commitment(GAME_ID, SEED[:-1] + b"!") != base
    deal = deal_from_text(0, ["AS 2S 3S 4S 5S 6S 7S 8S 9S TS", "AH 2H 3H 4H 5H 6H 7H 8H 9H TH"], "KC")
    assert seed_commitment(GAME_ID, SEED, (deal,)) != base


def test_commitment_known_answer() -> None:
    """The byte layout of docs/fairness.md, written out here by hand: the test that another implementation can copy."""
    import hashlib

    seed = bytes(range(16))
    digest = hashlib.sha256(b"rummy-referee/preset-deals/v1\x00" + b"\x00\x00").digest()
    assert presets_digest(()) == digest
    data = b"rummy-referee/seed-commitment/v1\x00" + b"\x00\x04" + b"g_ab" + b"\x00\x10" + seed + digest
    assert seed_commitment("g_ab", seed) == hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize(("profile", "players"), [("gin", 2), ("hollywood-gin", 2), ("rummy", 3), ("rummy", 6)])
def test_a_whole_game_verifies(profile: str, players: int) -> None:
    rules, events = _game(profile, players)
    done = verify_deals(GAME_ID, rules, SEED, seed_commitment(GAME_ID, SEED), (), events)
    assert done.hands == sum(e["kind"] == "hand_started" for e in events) and done.stock_draws > 0


def test_restocks_verify() -> None:
    rules, events = _game("rummy", 2, max_hands=30)
    assert any(e["kind"] == "restocked" for e in events)
    done = verify_deals(GAME_ID, rules, SEED, seed_commitment(GAME_ID, SEED), (), events)
    assert done.restocks == sum(e["kind"] == "restocked" for e in events)
    tampered = copy.deepcopy(events)
    r = next(e for e in tampered if e["kind"] == "restocked")
    r["stock"][0], r["stock"][-1] = r["stock"][-1], r["stock"][0]
    with pytest.raises(FairnessError) as exc:
        verify_deals(GAME_ID, rules, SEED, seed_commitment(GAME_ID, SEED), (), tampered)
    assert exc.value.what == "restock"


def test_one_card_swapped_in_a_deal_fails() -> None:
    rules, events = _game("gin", 2)
    tampered = copy.deepcopy(events)
    dealt = [e for e in tampered if e["kind"] == "dealt"]
    dealt[0]["cards"][0], dealt[1]["cards"][0] = dealt[1]["cards"][0], dealt[0]["cards"][0]
    with pytest.raises(FairnessError) as exc:
        verify_deals(GAME_ID, rules, SEED, seed_commitment(GAME_ID, SEED), (), tampered)
    assert exc.value.what == "deal"


def test_a_different_seed_or_game_id_fails() -> None:
    rules, events = _game("gin", 2)
    other = b"another-seed-of-32-bytes-0000000"
    with pytest.raises(FairnessError) as exc:
        verify_deals(GAME_ID, rules, other, seed_commitment(GAME_ID, SEED), (), events)
    assert exc.value.what == "commitment"
    with pytest.raises(FairnessError) as exc:  # a commitment made for the other seed: the deals give it away
        verify_deals(GAME_ID, rules, other, seed_commitment(GAME_ID, other), (), events)
    assert exc.value.what == "deal"
    with pytest.raises(FairnessError) as exc:
        verify_deals("g_other", rules, SEED, seed_commitment(GAME_ID, SEED), (), events)
    assert exc.value.what == "commitment"


def test_preset_deals_are_covered_by_the_commitment() -> None:
    deal = deal_from_text(1, ["AS 2S 3S 4S 5S 6S 7S 8S 9S TS", "AH 2H 3H 4H 5H 6H 7H 8H 9H TH"], "KC")
    rules, events = _game("gin", 2, (deal,))
    commitment = seed_commitment(GAME_ID, SEED, (deal,))
    done = verify_deals(GAME_ID, rules, SEED, commitment, (deal,), events)
    assert done.preset_hands == 1
    swapped = E.Deal(deal.dealer, (deal.hands[1], deal.hands[0]), deal.upcard, deal.stock)
    with pytest.raises(FairnessError) as exc:
        verify_deals(GAME_ID, rules, SEED, commitment, (swapped,), events)
    assert exc.value.what == "commitment"
    with pytest.raises(FairnessError):  # dropping the preset: the commitment no longer matches
        verify_deals(GAME_ID, rules, SEED, commitment, (), events)


def test_a_stock_draw_out_of_order_fails() -> None:
    rules, events = _game("gin", 2)
    tampered = copy.deepcopy(events)
    draws = [e for e in tampered if e["kind"] == "drew" and e["source"] == "stock"]
    draws[0]["card"], draws[1]["card"] = draws[1]["card"], draws[0]["card"]
    with pytest.raises(FairnessError) as exc:
        verify_deals(GAME_ID, rules, SEED, seed_commitment(GAME_ID, SEED), (), tampered)
    assert exc.value.what == "stock"


def test_spectator_events_are_incomplete() -> None:
    rules, events = _game("gin", 2)
    public = [{k: v for k, v in e.items() if not (e["kind"] == "dealt" and k == "cards")} for e in events]
    with pytest.raises(FairnessError) as exc:
        verify_deals(GAME_ID, rules, SEED, seed_commitment(GAME_ID, SEED), (), public)
    assert exc.value.what == "incomplete"
