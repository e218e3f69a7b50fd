"""Differential test: random Gin matches played by the engine and by the independent model (gin_model.py).

Every profile of the Gin family with random option values, random seeds, and random choices among the legal
moves (biased towards good play, so that knocks, gin, big gin, undercuts and layoffs happen often): at every step
the engine's legal moves must equal the model's, a few random other moves must be accepted exactly when the model
judges them legal (and change nothing when refused), deadwood must agree, and every hand's end must agree with
the model's (reason, winner, points, both deadwoods), as must the match's scores, boxes, dealer, Hollywood's games
and the match's end with its bonuses.
"""

from __future__ import annotations

import copy
import json
import random
import re
from collections.abc import Sequence
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine as E
from engine import (
    BigGin,
    Declare,
    Discard,
    Done,
    DrawDiscard,
    DrawStock,
    GameState,
    Knock,
    LayOff,
    MeldMove,
    Move,
    Pass,
)
from tests.engine import gin_model as M

PROFILES = ("gin", "gin-standard", "oklahoma-gin", "hollywood-gin")


@st.composite
def gin_rules(draw: st.DrawFn) -> E.Rules:
    """A Gin profile with random values of every Gin option on top."""
    profile = draw(st.sampled_from(PROFILES))
    o: dict[str, Any] = {
        "first_upcard_rule": draw(st.sampled_from(("none", "take_or_pass"))),
        "discard_taken_card_allowed": draw(st.booleans()),
        "big_gin_bonus": draw(st.sampled_from((0, 31, 17))),
        "gin_bonus": draw(st.sampled_from((25, 20, 0))),
        "undercut_bonus": draw(st.sampled_from((25, 10, 0))),
        "undercut_on_tie": draw(st.booleans()),
        "defender_deadwood": draw(st.sampled_from(("best", "declared"))),
        "stock_end_rule": draw(st.sampled_from(("draw", "fiftieth_card"))),
        "box_bonus": draw(st.sampled_from((0, 20, 5))),
        "game_bonus": draw(st.sampled_from((0, 100, 7))),
        "shutout_game_bonus": draw(st.sampled_from((0, 200, 3))),
        "target_score": draw(st.integers(1, 90)),
        "max_turns": draw(st.sampled_from((1000, 1000, 3, 12, 29, 30))),
    }
    # the profiles' switches combined too: Oklahoma's limits and doubling in Hollywood's three games
    if draw(st.integers(0, 4)) == 0:
        o["hollywood"] = True
    if profile != "oklahoma-gin" and draw(st.integers(0, 5)) == 0:
        profile, o["oklahoma"] = "gin", True
    if profile == "oklahoma-gin" or o.get("oklahoma"):
        o["oklahoma_ace"] = draw(st.sampled_from(("gin_only", "one")))
        o["spades_double"] = draw(st.booleans())
    else:
        o["knock_limit"] = draw(st.sampled_from((10, 10, 0, 3, 15, 40, 99)))
    if draw(st.integers(0, 4)) == 0:  # the profile as it is (only a nearer target, so that matches end)
        return E.rules_from_profile(profile, target_score=o["target_score"])
    return E.rules_from_profile(profile, **o)


def model_hand(s: GameState, dealer: int) -> M.GinModel:
    """The model of a freshly dealt hand, its cards copied from the engine's deal."""
    assert s.dealer == dealer, f"dealer {s.dealer}, the model expects {dealer}"
    # dealt one at a time from the seat after this dealer (the seed's deal of this hand)
    deal = E.seeded_deal(s.rules, dealer, s.seed, s.hand_no)
    assert s.hands == tuple(E.mask_of(h) for h in deal.hands) and s.discard == (deal.upcard,)
    assert s.stock == deal.stock and len(s.stock) == 31 and [h.bit_count() for h in s.hands] == [10, 10]
    return M.GinModel(s.rules, dealer, list(s.hands), list(s.stock), list(s.discard))


def check_hand(s: GameState, m: M.GinModel) -> None:
    """The engine's hand state agrees with the model's."""
    assert s.phase == m.phase, f"phase {s.phase}, model {m.phase}"
    assert s.to_act == m.to_act
    assert list(s.hands) == m.hands and list(s.stock) == m.stock and list(s.discard) == m.discard
    assert s.knock_limit == m.limit
    for h in s.hands:
        if h.bit_count() <= 11:
            assert E.min_deadwood(h) == M.min_deadwood(h), M.text(h)


CARD_RE = re.compile(r'"([A2-9TJQK][SHDC])"')


def check_views(s: GameState, m: M.GinModel) -> None:
    """RULES.md 4: no seat and no spectator sees a card the model says they may not see (the finished hand's
    reveal and the match result aside)."""
    for viewer in (0, 1, E.SPECTATOR):
        v = {k: x for k, x in E.view(s, viewer).items() if k not in ("last_hand", "result")}
        seen = E.mask_of(E.parse_cards(set(CARD_RE.findall(json.dumps(v)))))
        assert not seen & m.hidden_from(viewer), f"viewer {viewer} sees {M.text(seen & m.hidden_from(viewer))}"


def check_events(events: Sequence[E.Event], m: M.GinModel) -> None:
    """RULES.md 4: the events of a move within a hand show no seat or spectator a card hidden from them."""
    for viewer in (0, 1, E.SPECTATOR):
        for ev in events:
            seen = E.mask_of(E.parse_cards(set(CARD_RE.findall(json.dumps(E.event_for(ev, viewer))))))
            assert not seen & m.hidden_from(viewer), f"{ev.kind}: viewer {viewer} sees {M.text(seen)}"


def moves_set(s: GameState) -> set[Move]:
    moves = E.legal_moves(s)
    assert len(moves) == len(set(moves)), "a legal move is listed twice"
    return set(moves)


def random_probe(rng: random.Random, m: M.GinModel) -> Move:
    """A random move, legal or not, of any kind."""
    held = M.cards(m.hands[m.to_act]) or [0]
    any_card = rng.randrange(52)
    card = rng.choice(held) if rng.random() < 0.7 else any_card
    melds = tuple(rng.sample(M.ALL_MELDS, rng.randint(0, 3)))
    own = [x for x in M.ALL_MELDS if x & m.hands[m.to_act] == x]
    if own and rng.random() < 0.7:
        melds = tuple(rng.sample(own, min(len(own), rng.randint(1, 3))))
    ids = [*m.table, 99]
    kind = rng.randrange(10)
    probes: list[Move] = [
        DrawStock(),
        DrawDiscard(),
        Pass(),
        Discard(card),
        Knock(card),
        Knock(card, melds),
        BigGin(melds),
        MeldMove(rng.choice(own) if own else melds[0] if melds else 7),
        LayOff(card, rng.choice(ids)),
        Declare(melds, tuple((rng.choice(held), rng.choice(ids)) for _ in range(rng.randint(0, 2)))),
    ]
    return probes[kind]


def phase_probes(rng: random.Random, s: GameState, m: M.GinModel) -> list[Move]:
    """Moves worth judging in this phase: every layoff of the defender onto every table meld (their own melds
    too), one-move declarations with layoffs in a random order, and knocks declaring random card groups."""
    held = M.cards(m.hands[m.to_act])
    if m.phase == "layoff":
        out: list[Move] = [LayOff(c, t.id) for c in held for t in s.melds]
        fits = [(c, i) for i, t in sorted(m.table.items()) for c in held if M.fits(t, c)]
        chain = [(c, i) for i, t in sorted(m.table.items()) for c in held
                 if M.fits(t | M.layoff_choices(t, m.hands[m.to_act])[-1], c)]  # fmt: skip
        rng.shuffle(chain)
        out.append(Declare((), tuple(chain[:3])))
        out.append(Declare(None, tuple(fits[:2])))
        return out
    if m.phase == "discard" and len(held) == 11:
        c = rng.choice(held)
        rest = [x for x in held if x != c]
        groups = []
        for _ in range(rng.randint(1, 3)):
            g = rng.sample(rest, rng.randint(2, 4))
            groups.append(sum(1 << x for x in g))
        out = [Knock(c, tuple(groups)), BigGin(tuple(groups))]
        if M.min_deadwood(m.hands[m.to_act]) == 0:  # big gin with a random complete arrangement, or one short
            full = rng.choice(M.arrangements(m.hands[m.to_act], 0))[1]
            out += [BigGin(full), BigGin(full[1:])]
        return out
    return []


def try_move(s: GameState, move: Move) -> GameState | None:
    """The state after the move, or None when the engine refuses it (then checked to have changed nothing)."""
    before = E.state_to_json(s)
    try:
        new, _ = E.apply(s, s.to_act, move)
    except E.RuleError:
        assert E.state_to_json(s) == before
        return None
    return new


def best_after(held: int, forbidden: int, allowed: bool) -> int:
    """The smallest deadwood left after one allowed discard from an 11-card hand."""
    return min(M.min_deadwood(held & ~(1 << c)) for c in M.cards(held) if c != forbidden or allowed)


def choose(rng: random.Random, m: M.GinModel, legal: set[Move], eager: float) -> Move:
    """A move among the legal ones, biased towards good play; knocks and declarations with random arrangements.
    ``eager``: how often a possible knock is made (a patient player lets the stock run down)."""
    held, allowed = m.hands[m.to_act], m.rules.discard_taken_card_allowed
    if m.phase in ("take_or_pass", "draw", "last_card"):
        if DrawDiscard() in legal and m.discard:
            top = m.discard[-1]
            now = M.min_deadwood(held) if held.bit_count() == 10 else 99
            with_top = best_after(held | (1 << top), top, allowed)
            if (with_top < now and rng.random() < 0.8) or rng.random() < 0.2:
                return DrawDiscard()
        if m.phase == "last_card" and DrawDiscard() in legal and rng.random() < 0.7:
            return DrawDiscard()
        return sorted(legal - {DrawDiscard()}, key=str)[0] if legal - {DrawDiscard()} else DrawDiscard()
    if m.phase == "discard":
        if BigGin() in legal and rng.random() < 0.8:
            return BigGin()
        knocks = sorted(c.discard for c in legal if isinstance(c, Knock))
        if knocks and rng.random() < (eager if len(m.stock) > 3 else 0.5):
            c = rng.choice(knocks)
            if rng.random() < 0.5:
                return Knock(c)
            options = M.arrangements(held & ~(1 << c), m.limit)
            return Knock(c, rng.choice(options)[1])
        discards = sorted(c.card for c in legal if isinstance(c, Discard))
        if not discards:
            return rng.choice(sorted(legal, key=str))
        if rng.random() < 0.7:
            best = min(M.min_deadwood(held & ~(1 << c)) for c in discards)
            return Discard(rng.choice([c for c in discards if M.min_deadwood(held & ~(1 << c)) == best]))
        return Discard(rng.choice(discards))
    # the defender
    r = rng.random()
    if r < 0.2:
        return Declare()
    if r < 0.4:
        return random_declaration(rng, m)
    others = sorted(legal - {Declare(), Done()}, key=str)
    if others and rng.random() < 0.8:
        return rng.choice(others)
    return Done()


def random_declaration(rng: random.Random, m: M.GinModel) -> Declare:
    """A valid one-move declaration: random own melds, then random valid layoffs in order."""
    held = m.hands[m.to_act]
    melds: list[int] = []
    for x in rng.sample(M.ALL_MELDS, len(M.ALL_MELDS)):
        if x & held == x and rng.random() < 0.6:
            melds.append(x)
            held &= ~x
    table, layoffs = dict(m.table), []
    for _ in range(rng.randint(0, 4)):
        fits = [(c, i) for i, t in sorted(table.items()) for c in M.cards(held) if M.fits(t, c)]
        if not fits:
            break
        c, i = rng.choice(fits)
        layoffs.append((c, i))
        table[i] |= 1 << c
        held &= ~(1 << c)
    return Declare(tuple(melds), tuple(layoffs))


def check_knock(s: GameState, events: Sequence[E.Event], m: M.GinModel, move: Knock | BigGin) -> tuple[int, ...]:
    """The knocker's melds the engine put on the table: the declared ones, or a minimum-deadwood pick."""
    kind = "knocked" if isinstance(move, Knock) else "big_gin"
    (ev,) = [e for e in events if e.kind == kind]
    melds = tuple(E.mask_of(E.parse_cards(x["cards"])) for x in ev.public["melds"])
    seat = m.to_act
    rest = m.hands[seat] & ~(1 << move.discard) if isinstance(move, Knock) else m.hands[seat]
    used = 0
    for x in melds:
        assert M.is_meld(x) and x & rest == x and not x & used, M.text(x)
        used |= x
    if move.melds is not None:
        assert sorted(melds) == sorted(move.melds)
    else:
        assert M.mask_value(rest & ~used) == M.min_deadwood(rest)
    assert ev.public["deadwood"] == M.mask_value(rest & ~used)
    if isinstance(move, Knock):
        assert ev.public["gin"] == (M.mask_value(rest & ~used) == 0)
    return melds


def check_hand_end(s: GameState, events: Sequence[E.Event], m: M.GinModel) -> None:
    o = m.outcome
    assert o is not None
    (ended,) = [e.public for e in events if e.kind == "hand_ended"]
    got = (ended["reason"], ended["winner"], ended["points"], ended.get("knocker_deadwood"),
           ended.get("defender_deadwood"))  # fmt: skip
    want = (o.reason, o.winner, o.points, o.knocker_deadwood, o.defender_deadwood)
    if o.reason in ("gin", "big_gin"):
        got = (*got[:3], None, ended.get("defender_deadwood"))
        want = (*want[:3], None, o.defender_deadwood)
    assert got == want, f"hand end: engine {got}, model {want}"


def check_match(s: GameState, mm: M.MatchModel) -> None:
    assert list(s.scores) == mm.points, (s.scores, mm.points)
    assert list(s.boxes) == mm.boxes
    if s.rules.hollywood:
        assert [list(g) for g in s.games] == mm.games
        assert list(s.games_ended) == mm.ended
    assert (s.phase == "match_over") == mm.over
    if mm.over:
        assert s.result is not None
        want = mm.result()
        assert s.result["totals"] == want["totals"] and s.result["winners"] == want["winners"], (s.result, want)
        if s.rules.hollywood:
            for got, exp in zip(s.result["games"], want["games"], strict=True):
                for k in ("points", "boxes", "box_bonus", "game_bonus", "totals"):
                    assert got[k] == exp[k], (k, got, exp)
        else:
            for k in ("points", "boxes", "box_bonus", "game_bonus", "totals"):
                assert s.result["detail"][k] == want["detail"][k], (k, s.result, want)


def out_of_turn(s: GameState, move: Move) -> None:
    """RULES.md 4: a move is never applied out of turn: the other seat's move is refused and changes nothing."""
    before = E.state_to_json(s)
    try:
        E.apply(s, 1 - s.to_act, move)
    except E.RuleError as err:
        assert err.code == "NOT_YOUR_TURN", err.code
    else:
        raise AssertionError(f"seat {1 - s.to_act} played {E.move_text(move)} out of turn")
    assert E.state_to_json(s) == before


def check_probe_end(s: GameState, m: M.GinModel, probe: Move) -> None:
    """A declaring move the engine accepted ends the hand (or starts the layoffs) as the model says."""
    s, events = E.apply(s, s.to_act, probe)
    twin = copy.deepcopy(m)
    twin.apply(probe)
    if twin.outcome is not None:
        check_hand_end(s, events, twin)


def play_match(rules: E.Rules, seed: bytes, rng: random.Random, max_hands: int = 12) -> None:
    """Play one match (at most ``max_hands`` hands) on the engine and the model side by side."""
    s = E.new_game(rules, seed)
    mm = M.MatchModel(rules)
    m = model_hand(s, mm.dealer)
    hands, eager = 0, rng.choice((0.05, 0.3, 0.7))
    while s.phase != "match_over" and hands < max_hands:
        check_hand(s, m)
        check_views(s, m)
        legal = moves_set(s)
        want = m.legal()
        assert legal == want, (
            f"phase {m.phase}: engine only {sorted(map(E.move_text, legal - want))}, "
            f"model only {sorted(map(E.move_text, want - legal))}"
        )
        for probe in [*phase_probes(rng, s, m), random_probe(rng, m), random_probe(rng, m)]:
            after = try_move(s, probe)
            assert (after is not None) == m.judge(probe), (m.phase, E.move_text(probe), m.judge(probe))
            declaring = isinstance(probe, (Declare, BigGin)) or (isinstance(probe, Knock) and bool(probe.melds))
            if after is not None and declaring:
                check_probe_end(s, m, probe)
        move = choose(rng, m, legal, eager)
        out_of_turn(s, move)
        assert m.judge(move), E.move_text(move)
        s, events = E.apply(s, s.to_act, move)
        if isinstance(move, Knock) and move.melds is None:
            melds = check_knock(s, events, m, move)
            move = Knock(move.discard, melds)
        elif isinstance(move, Knock):
            check_knock(s, events, m, move)
        if isinstance(move, Declare) and move.melds is None and move.layoffs is None:
            (dec,) = [e for e in events if e.kind == "declared"]
            want_d = M.best_defence(m.hands[m.to_act], list(m.table.values()))
            assert dec.public["deadwood"] == want_d
        knocker = m.to_act
        m.apply(move)
        if m.phase == "layoff" and isinstance(move, Knock):
            m.set_table({t.id: t.cards for t in s.melds if t.owner == knocker})
        if m.outcome is None:
            check_events(events, m)
        else:
            check_hand_end(s, events, m)
            mm.record(m.outcome)
            check_match(s, mm)
            hands += 1
            if not mm.over:
                m = model_hand(s, mm.dealer)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rules=gin_rules(), seed=st.binary(min_size=16, max_size=16), choices=st.integers(0, 2**32))
def test_engine_agrees_with_the_independent_gin_model(rules: E.Rules, seed: bytes, choices: int) -> None:
    """RULES.md 1, 2: every legal-move set, deadwood, hand end, score, dealer and match end as the model has it."""
    play_match(rules, seed, random.Random(choices))
