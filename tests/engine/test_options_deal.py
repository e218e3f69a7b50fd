"""Rule-clause tests for options, profiles, deals and state serialization (RULES.md head, sections 1 and 3).

Each test is named after the clause it checks; its docstring cites that clause.
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

import pytest

from engine import (
    PROFILES,
    BigGin,
    Deal,
    DrawDiscard,
    DrawStock,
    GameState,
    InvalidDealError,
    InvalidOptionsError,
    Knock,
    LayOff,
    MeldMove,
    Move,
    Rules,
    apply,
    config_from_dict,
    config_to_dict,
    deal_from_order,
    find_profile,
    legal_moves,
    new_game,
    parse_card,
    progress_to_dict,
    rules_from_profile,
    seeded_deal,
    state_from_json,
    state_from_parts,
    state_to_json,
    validate_deal,
)

SEED = b"options-and-deal-test-seed-0001"

#: Section 3 "Deal": cards per seat by player count, and the stock left after the upcard
RUMMY_DEAL_SIZES = {2: (10, 31), 3: (7, 30), 4: (7, 23), 5: (6, 21), 6: (6, 15)}


def cards(text: str) -> tuple[int, ...]:
    """Cards of a space-separated card text."""
    return tuple(parse_card(t) for t in text.split())


def preset(rules: Rules, dealer: int, hands: list[str], upcard: str, stock_top_first: str = "") -> Deal:
    """A preset deal from card text; the stock holds the given cards on top and every remaining card below them."""
    hand_cards = tuple(cards(h) for h in hands)
    top = list(cards(stock_top_first))
    used = {c for h in hand_cards for c in h} | {parse_card(upcard)} | set(top)
    rest = [c for c in range(52) if c not in used]
    return Deal(dealer, hand_cards, parse_card(upcard), tuple(reversed(top + rest)))


def identity_deal(rules: Rules, dealer: int) -> Deal:
    """The deal of an unshuffled deck (card 0 on top)."""
    return deal_from_order(rules, dealer, list(range(52)))


# ------------------------------------------------------------------------------------------------- profiles


def test_rummy_profile_seed_004_values() -> None:
    """Section 3 profiles: ``rummy`` (seed 004, default): 2-6 players, ace_value_high_low 15, going rummy x2,
    target 150; shared options ace_high_low false, must_discard_to_go_out false, max_melds_per_turn unlimited,
    layoff_requires_own_meld false, restock shuffle, discard_taken_card_allowed false."""
    r = rules_from_profile("rummy")
    assert (r.game, r.ace_value_high_low, r.going_rummy_multiplier, r.target_score) == ("rummy", 15, 2, 150)
    assert 2 <= r.players <= 6
    assert (r.ace_high_low, r.must_discard_to_go_out, r.max_melds_per_turn, r.layoff_requires_own_meld) == (
        False, False, 0, False)
    assert (r.restock, r.discard_taken_card_allowed, r.max_turns, r.max_hands) == ("shuffle", False, 1000, 0)
    for players in range(2, 7):
        assert rules_from_profile("rummy", players=players).players == players


def test_rummy_g4a_profile_seed_000_values() -> None:
    """Section 3 profiles: ``rummy-g4a`` (seed 000): 3 players by default (2-6 allowed), ace_value_high_low 11,
    going rummy x1, target 100, same shared options."""
    r = rules_from_profile("rummy-g4a")
    assert (r.game, r.players, r.ace_value_high_low, r.going_rummy_multiplier, r.target_score) == (
        "rummy", 3, 11, 1, 100)
    assert (r.ace_high_low, r.must_discard_to_go_out, r.max_melds_per_turn, r.layoff_requires_own_meld) == (
        False, False, 0, False)
    assert (r.restock, r.discard_taken_card_allowed) == ("shuffle", False)
    assert rules_from_profile("rummy-g4a", players=2).players == 2
    assert rules_from_profile("rummy-g4a", players=6).players == 6


def test_profile_overrides_are_applied_and_pinned() -> None:
    """Head of RULES.md: "A game is created from a profile plus overrides ... the complete option set is pinned into
    the game record"."""
    r = rules_from_profile("rummy", players=4, ace_high_low=True, restock="turn_over", max_melds_per_turn=2)
    assert (r.players, r.ace_high_low, r.restock, r.max_melds_per_turn) == (4, True, "turn_over", 2)
    d = r.to_dict()
    assert Rules.from_dict(d) == r
    assert set(d) == {f for f in Rules.__dataclass_fields__}
    s = new_game(r, SEED)
    assert state_from_json(state_to_json(s)).rules == r


def test_every_profile_is_valid_and_found_by_name() -> None:
    """Profiles are named option sets looked up by name."""
    for name in PROFILES:
        assert find_profile(name) == PROFILES[name]
        rules_from_profile(name)
    assert {"rummy", "rummy-g4a"} <= set(PROFILES)


# ------------------------------------------------------------------------------------------------- option validation


def _refused(exc: pytest.ExceptionInfo[InvalidOptionsError], code: str, name: str) -> None:
    assert exc.value.code == code
    assert name in exc.value.message


@pytest.mark.parametrize("players", [0, 1, 7, 8, -2])
def test_rummy_is_for_two_to_six_players(players: int) -> None:
    """Section 1 "Seat count ... Rummy: 2 to 6"; section 3 "Two to six players": 1 or 7 players are refused,
    naming the option."""
    for profile in ("rummy", "rummy-g4a"):
        with pytest.raises(InvalidOptionsError) as exc:
            rules_from_profile(profile, players=players)
        _refused(exc, "INVALID_OPTION", "players")


def test_unknown_option_refused_naming_it() -> None:
    """Options are validated when the game is created: an unknown option name is refused."""
    with pytest.raises(InvalidOptionsError) as exc:
        rules_from_profile("rummy", jokers=2)
    _refused(exc, "UNKNOWN_OPTION", "jokers")
    with pytest.raises(InvalidOptionsError) as exc:
        Rules.from_dict({"game": "rummy", "players": 3, "wild_deuces": True})
    _refused(exc, "UNKNOWN_OPTION", "wild_deuces")


def test_unknown_profile_refused() -> None:
    """A profile is a named set of option values: an unknown name is refused."""
    with pytest.raises(InvalidOptionsError) as exc:
        rules_from_profile("canasta")
    _refused(exc, "UNKNOWN_PROFILE", "canasta")
    with pytest.raises(InvalidOptionsError):
        find_profile("Rummy ")


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("players", "3"),
        ("players", 3.0),
        ("players", True),
        ("ace_high_low", 1),
        ("ace_high_low", "true"),
        ("must_discard_to_go_out", None),
        ("layoff_requires_own_meld", 0),
        ("discard_taken_card_allowed", "no"),
        ("ace_value_high_low", "15"),
        ("ace_value_high_low", 15.0),
        ("going_rummy_multiplier", True),
        ("max_melds_per_turn", 1.5),
        ("target_score", "150"),
        ("max_hands", None),
        ("max_turns", "1000"),
        ("restock", 1),
        ("restock", "deal"),
        ("restock", "Shuffle"),
        ("max_melds_per_turn", -1),
        ("going_rummy_multiplier", -2),
        ("ace_value_high_low", -1),
        ("max_hands", -1),
        ("target_score", 0),
        ("max_turns", 0),
    ],
)
def test_wrong_option_type_or_value_refused_naming_it(name: str, value: Any) -> None:
    """Options are validated when the game is created: a wrong type (bool for int, int for bool, text for a
    number) or a value out of range or not among the choices is refused with the option named."""
    with pytest.raises(InvalidOptionsError) as exc:
        rules_from_profile("rummy", **{name: value})
    _refused(exc, "INVALID_OPTION", name)


@pytest.mark.parametrize(("name", "value"), [("knock_limit", 5), ("gin_bonus", 30), ("oklahoma", True),
                                             ("first_upcard_rule", "take_or_pass"), ("hollywood", True)])
def test_gin_option_refused_in_rummy(name: str, value: Any) -> None:
    """Options belong to a variant: a Gin-only option set on a Rummy game is refused, naming it."""
    with pytest.raises(InvalidOptionsError) as exc:
        rules_from_profile("rummy", **{name: value})
    _refused(exc, "INVALID_OPTION", name)


def test_rummy_option_refused_in_gin() -> None:
    """Options belong to a variant: a Rummy-only option set on a Gin game is refused, naming it."""
    with pytest.raises(InvalidOptionsError) as exc:
        rules_from_profile("gin", ace_high_low=True)
    _refused(exc, "INVALID_OPTION", "ace_high_low")


def test_options_are_frozen() -> None:
    """Rules are a frozen, self-validating config; ``replace`` validates again."""
    r = rules_from_profile("rummy", players=3)
    with pytest.raises(AttributeError):
        r.players = 7  # type: ignore[misc]
    with pytest.raises(InvalidOptionsError) as exc:
        r.replace(players=7)
    _refused(exc, "INVALID_OPTION", "players")
    with pytest.raises(InvalidOptionsError) as exc:
        r.replace(colour="red")
    _refused(exc, "UNKNOWN_OPTION", "colour")


# ------------------------------------------------------------------------------------------------- deals


@pytest.mark.parametrize("players", sorted(RUMMY_DEAL_SIZES))
def test_rummy_deal_sizes_by_player_count(players: int) -> None:
    """Section 3: "Deal: 2 players 10 cards each, 3-4 players 7, 5-6 players 6. Upcard, rest is stock"."""
    size, stock = RUMMY_DEAL_SIZES[players]
    r = rules_from_profile("rummy", players=players)
    assert r.n_cards == size
    s = new_game(r, SEED)
    assert [h.bit_count() for h in s.hands] == [size] * players
    assert len(s.discard) == 1
    assert s.discard[0] == s.upcard
    assert len(s.stock) == stock == 52 - players * size - 1
    assert not s.melds


@pytest.mark.parametrize("players", sorted(RUMMY_DEAL_SIZES))
def test_deal_one_card_at_a_time_starting_after_the_dealer(players: int) -> None:
    """Section 1 "Deal: cards are dealt one at a time, starting with the seat after the dealer. Then one card is
    turned face up ... (the upcard); the rest is the face-down stock"."""
    r = rules_from_profile("rummy", players=players)
    k = r.n_cards
    for dealer in range(players):
        d = identity_deal(r, dealer)
        for i in range(players):
            seat = (dealer + 1 + i) % players
            assert d.hands[seat] == tuple(range(i, players * k, players))
        assert d.upcard == players * k
        assert d.stock[-1] == players * k + 1, "the next card of the deck is the top of the stock"
        assert d.stock[0] == 51
        validate_deal(r, d)


@pytest.mark.parametrize("players", sorted(RUMMY_DEAL_SIZES))
def test_seat_after_dealer_acts_first(players: int) -> None:
    """Section 1: "The dealer's next seat acts first in every hand"."""
    r = rules_from_profile("rummy", players=players)
    for dealer in range(players):
        s = new_game(r, SEED, (identity_deal(r, dealer),))
        assert s.dealer == dealer
        assert s.to_act == (dealer + 1) % players
        assert s.phase == "draw"


def test_seat_zero_deals_the_first_hand_without_a_preset() -> None:
    """Section 1: "Unless a preset deal names another, seat 0 deals the first hand of a match"."""
    for players in range(2, 7):
        s = new_game(rules_from_profile("rummy", players=players), SEED)
        assert (s.dealer, s.to_act) == (0, 1)


def test_preset_deal_is_dealt_exactly() -> None:
    """Section 1: reproducible games come from an explicit preset deal: hands, upcard and stock order as given."""
    r = rules_from_profile("rummy", players=3)
    d = preset(r, 2, ["AS 2S 3S 4S 5S 6S 7S", "AH 2H 3H 4H 5H 6H 7H", "AD 2D 3D 4D 5D 6D 7D"], "KC", "QC JC")
    s = new_game(r, SEED, (d,))
    assert s.hands == tuple(sum(1 << c for c in h) for h in d.hands)
    assert s.discard == (parse_card("KC"),)
    assert s.stock == d.stock
    s, _ = apply(s, 0, DrawStock())
    assert s.hands[0] >> parse_card("QC") & 1


def test_seeded_deals_are_reproducible_from_the_seed() -> None:
    """Section 1: "Reproducible games come only from an explicit preset deal or an explicit seed"."""
    r = rules_from_profile("rummy", players=4)
    a, b = new_game(r, SEED), new_game(r, SEED)
    assert a == b
    assert new_game(r, SEED + b"x") != a
    assert seeded_deal(r, 0, SEED, 0) == seeded_deal(r, 0, SEED, 0)
    assert seeded_deal(r, 0, SEED, 0) != seeded_deal(r, 0, SEED, 1)
    validate_deal(r, seeded_deal(r, 3, SEED, 7))


def test_seed_too_short_refused() -> None:
    """Section 1: seeds are supplied by a trusted caller; a short seed is refused."""
    with pytest.raises(InvalidDealError) as exc:
        new_game(rules_from_profile("rummy"), b"short")
    assert exc.value.code == "INVALID_SEED"


# ------------------------------------------------------------------------------------------------- deal validation


def _bad_deal(rules: Rules, deal: Deal, words: str) -> None:
    with pytest.raises(InvalidDealError) as exc:
        validate_deal(rules, deal)
    assert exc.value.code == "INVALID_DEAL"
    assert words in exc.value.message
    with pytest.raises(InvalidDealError):
        new_game(rules, SEED, (deal,))


def test_deal_with_a_duplicate_card_refused() -> None:
    """Section 4: "A card appears in two places" must never happen: a preset deal listing a card twice is refused."""
    r = rules_from_profile("rummy", players=3)
    d = identity_deal(r, 0)
    hands = (d.hands[0], d.hands[1][:-1] + (d.hands[0][0],), d.hands[2])
    _bad_deal(r, Deal(0, hands, d.upcard, d.stock), "twice")
    _bad_deal(r, Deal(0, d.hands, d.hands[2][3], d.stock), "twice")
    _bad_deal(r, Deal(0, d.hands, d.upcard, (*d.stock[:-1], d.upcard)), "twice")


def test_deal_with_a_missing_card_refused() -> None:
    """Section 4: "one of the 52 disappears" must never happen: a preset deal without every card is refused."""
    r = rules_from_profile("rummy", players=3)
    d = identity_deal(r, 0)
    _bad_deal(r, Deal(0, d.hands, d.upcard, d.stock[1:]), "lacks")
    _bad_deal(r, Deal(0, d.hands, d.upcard, ()), "lacks")


def test_deal_with_wrong_hand_sizes_refused() -> None:
    """Section 3 deal sizes: a preset deal whose hands are not the size the player count calls for is refused
    (even when it holds all 52 cards)."""
    r = rules_from_profile("rummy", players=3)
    d = identity_deal(r, 0)
    moved = d.hands[0][-1]
    _bad_deal(r, Deal(0, (d.hands[0][:-1], d.hands[1], d.hands[2]), d.upcard, (moved, *d.stock)), "dealt 6")
    _bad_deal(r, Deal(0, (d.hands[0], d.hands[1], (*d.hands[2], d.stock[-1])), d.upcard, d.stock[:-1]), "dealt 8")
    _bad_deal(r, Deal(0, d.hands[:2], d.upcard, (*d.hands[2], *d.stock)), "hands given")
    ten = rules_from_profile("rummy", players=2)
    _bad_deal(ten, Deal(0, d.hands[:2], d.upcard, (*d.hands[2], *d.stock)), "dealt 7")


@pytest.mark.parametrize("dealer", [-1, 3, 4, 99])
def test_deal_with_dealer_out_of_range_refused(dealer: int) -> None:
    """Section 1 seats are numbered 0..n-1: a preset dealer outside them is refused."""
    r = rules_from_profile("rummy", players=3)
    d = identity_deal(r, 0)
    _bad_deal(r, Deal(dealer, d.hands, d.upcard, d.stock), "dealer")


def test_deal_with_a_non_card_refused() -> None:
    """One 52-card deck: a number that is no card (52, -1) in a preset deal is refused."""
    r = rules_from_profile("rummy", players=2)
    d = identity_deal(r, 0)
    _bad_deal(r, Deal(0, d.hands, 52, d.stock), "not a card")
    _bad_deal(r, Deal(0, d.hands, d.upcard, (-1, *d.stock[1:])), "not a card")


def test_later_preset_is_validated_at_creation() -> None:
    """Head of RULES.md: options and deals are validated when the game is created, not when the hand comes up."""
    r = rules_from_profile("rummy", players=2)
    good = identity_deal(r, 0)
    bad = Deal(1, good.hands, good.upcard, good.stock[1:])
    with pytest.raises(InvalidDealError):
        new_game(r, SEED, (good, bad))


# ------------------------------------------------------------------------------------------------- serialization


def _pick(s: GameState, rnd: random.Random) -> Move:
    """A random legal move, preferring melds, layoffs and knocks so that the table fills up and hands end."""
    moves = legal_moves(s)
    table = [mv for mv in moves if isinstance(mv, MeldMove | LayOff | Knock | BigGin)]
    if table and rnd.random() < 0.7:
        return rnd.choice(table)
    draws = [mv for mv in moves if isinstance(mv, DrawStock | DrawDiscard)]
    if draws:
        return rnd.choice(draws)
    return rnd.choice([mv for mv in moves if mv not in table] or moves)


SERIALIZATION_GAMES: list[tuple[str, dict[str, Any]]] = [
    ("rummy", {"players": 2}),
    ("rummy", {"players": 3, "ace_high_low": True, "restock": "turn_over"}),
    ("rummy", {"players": 4, "must_discard_to_go_out": True, "max_melds_per_turn": 1}),
    ("rummy", {"players": 5, "layoff_requires_own_meld": True, "discard_taken_card_allowed": True}),
    ("rummy", {"players": 6, "max_turns": 40}),
    ("rummy-g4a", {"ace_high_low": True, "max_hands": 3}),
    ("gin", {}),
    ("gin-standard", {}),
]


@pytest.mark.parametrize(("profile", "options"), SERIALIZATION_GAMES)
def test_state_serialization_round_trip_in_random_games(profile: str, options: dict[str, Any]) -> None:
    """Design: ``state_from_json(state_to_json(s)) == s`` exactly, at every point of random games (several hands,
    restocks, melds, layoffs, match end), and the reloaded state plays on identically."""
    rules = rules_from_profile(profile, **options)
    for game_no in range(3):
        seed = hashlib.sha256(f"{profile}{options}{game_no}".encode()).digest()
        rnd = random.Random(seed)
        s = new_game(rules, seed)
        for _ in range(600):
            text = state_to_json(s)
            back = state_from_json(text)
            assert back == s
            assert state_to_json(back) == text
            if s.phase == "match_over":
                break
            move = _pick(s, rnd)
            s, events = apply(s, s.to_act, move)
            again, events_again = apply(back, back.to_act, move)
            assert again == s
            assert events_again == events


@pytest.mark.parametrize(("profile", "options"), SERIALIZATION_GAMES)
def test_state_config_and_progress_round_trip(profile: str, options: dict[str, Any]) -> None:
    """Storage keeps a game's configuration (rules, seed, preset deals) apart from its progress: the config is the
    same for every state of a match, the progress holds none of it, and the two parts give back the state exactly."""
    rules = rules_from_profile(profile, **options)
    seed = hashlib.sha256(f"parts{profile}{options}".encode()).digest()
    presets = (seeded_deal(rules, 1, b"preset-one", 0), seeded_deal(rules, 0, b"preset-two", 1))
    rnd = random.Random(seed)
    s = new_game(rules, seed, presets)
    config_json = json.dumps(config_to_dict(s))
    config = config_from_dict(json.loads(config_json))
    assert (config.rules, config.seed, config.presets) == (rules, seed, presets)
    for _ in range(600):
        progress = progress_to_dict(s)
        assert not {"rules", "seed", "presets"} & set(progress)
        assert json.dumps(config_to_dict(s)) == config_json
        assert state_from_parts(config, json.loads(json.dumps(progress))) == s
        if s.phase == "match_over":
            break
        s, _ = apply(s, s.to_act, _pick(s, rnd))
    assert s.hand_no > 0  # the match went past its first (preset) deal


def _plain_shuffle(cards: list[int], seed: bytes, label: str) -> list[int]:
    """The documented shuffle, spelled plainly: Fisher-Yates over 32-bit big-endian words of SHA-256(seed || 0 ||
    label || counter), counter 8 bytes big-endian, rejection sampling below the largest multiple of n."""
    stream, out = b"", list(cards)
    counter = 0
    for i in range(len(out) - 1, 0, -1):
        n = i + 1
        while True:
            if len(stream) < 4:
                stream += hashlib.sha256(seed + b"\x00" + label.encode() + counter.to_bytes(8, "big")).digest()
                counter += 1
            x, stream = int.from_bytes(stream[:4], "big"), stream[4:]
            if x < (1 << 32) - (1 << 32) % n:
                break
        j = x % n
        out[i], out[j] = out[j], out[i]
    return out


def test_seeded_shuffle_matches_its_plain_definition() -> None:
    """RULES.md section 1: every shuffle comes from the game's secret seed (engine/deal.py's stream, word by word)."""
    from engine.deal import SeededStream, shuffled

    rng = random.Random(13)
    for i in range(200):
        seed, cards = rng.randbytes(16 + i % 17), list(range(52 - i % 45))
        assert shuffled(cards, seed, f"deal:{i}") == _plain_shuffle(cards, seed, f"deal:{i}")
    # SeededStream reads the same words: a bound of 2**31 + 1 rejects about half of them, across digests
    seed = b"s" * 16
    words = b"".join(hashlib.sha256(seed + b"\x00x" + k.to_bytes(8, "big")).digest() for k in range(8))
    plain = [x for x in (int.from_bytes(words[i : i + 4], "big") for i in range(0, len(words), 4)) if x < 2**31 + 1]
    stream = SeededStream(seed, "x")
    assert [stream.below(2**31 + 1) for _ in range(20)] == [x % (2**31 + 1) for x in plain[:20]]


def test_seeded_shuffle_with_a_rejected_word_matches_its_plain_definition(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shuffle's way without a rejection and its way word by word agree: with bounds that make the first test
    fail (as a rejected word would), the shuffle is still its plain definition."""
    from engine import deal

    rng = random.Random(14)
    monkeypatch.setattr(deal, "_LIMITS_DOWN", (0,) * len(deal._LIMITS_DOWN))  # every word "rejected" by the check
    for i in range(50):
        seed, cards = rng.randbytes(16), list(range(52 - i))
        assert deal.shuffled(cards, seed, f"deal:{i}") == _plain_shuffle(cards, seed, f"deal:{i}")
