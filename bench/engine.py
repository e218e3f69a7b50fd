"""Engine benchmark: our rules engine against OpenSpiel's gin_rummy, side by side in one run.

Measures, in rounds interleaved between the two engines (medians reported):

- full random-play Gin hands per second (uniformly random legal moves until the hand ends),
- exact minimum-deadwood calls per second on random 10-card hands,
- minimum deadwood of random 11-card hands (the best over the 11 possible discards).

Deadwood hands are drawn afresh for every round (the same hands for both engines), so no call repeats a hand.

Run from the repository root after `pip install -e '.[bench]'` (or `make bench`):

    .venv/bin/python bench/engine.py [--rounds 5] [--seconds 1.0] [--openspiel-only]

Human-readable lines first; the last line is one JSON object with the medians and ratios (ours / OpenSpiel,
so above 1 means ours is faster). A 10-card deadwood mismatch between the engines is printed: it is a bug in
one of them, decided by a brute-force reference kept in this file.
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import _boot  # first of the project's imports: the repository root on sys.path

_BENCH_DIR, _ROOT = _boot.BENCH_DIR, _boot.ROOT

RANKS = "A23456789TJQK"
SUITS = "SHDC"  # our suit order (docs/design.md): card = suit * 13 + rank, rank 0 = ace
# OpenSpiel's gin_rummy is also suit-major with rank 0 = ace, but its suits are ordered s c d h.
OPENSPIEL_SUIT = (0, 3, 2, 1)  # our suit index -> OpenSpiel suit index
ENGINE_API = ("new_game", "rules_from_profile", "legal_moves", "apply", "min_deadwood", "min_deadwood11")
MAX_STEPS_PER_HAND = 20_000
MAX_MISMATCHES_SHOWN = 20  # a hand still running after this many moves is a bug, not a slow hand
# A hand on which OpenSpiel's 11-card min_deadwood is not the best discard (shown once, computed live).
HEURISTIC_DEMO = ("5S", "8S", "9S", "TS", "TC", "3D", "8D", "AH", "8H", "9H", "TH")


def card_text(card: int) -> str:
    """Card text in the project's notation, e.g. 9 -> 'TS'."""
    return RANKS[card % 13] + SUITS[card // 13]


def card_from_text(text: str) -> int:
    """Our card int from text like 'TS'."""
    return SUITS.index(text[1]) * 13 + RANKS.index(text[0])


def to_openspiel(card: int) -> int:
    """Our card int -> OpenSpiel's card int (same rank, OpenSpiel's suit order)."""
    return OPENSPIEL_SUIT[card // 13] * 13 + card % 13


def value(card: int) -> int:
    """Deadwood value: ace 1, 2-10 face value, J Q K 10."""
    return min(card % 13 + 1, 10)


def hands_text(cards: Sequence[int]) -> str:
    """Cards as text, sorted by suit then rank."""
    return " ".join(card_text(c) for c in sorted(cards))


# --- brute-force reference (slow, obviously correct; used only to decide mismatches) ---------------------


def _melds_in(cards: Sequence[int]) -> list[tuple[int, int]]:
    """Every meld (as (mask, value)) that can be formed from the given cards: sets of 3 or 4, runs of 3+."""
    held = set(cards)
    melds: list[tuple[int, int]] = []
    for rank in range(13):
        same = [s * 13 + rank for s in range(4) if s * 13 + rank in held]
        for size in (3, 4):
            for group in itertools.combinations(same, size):
                melds.append((sum(1 << c for c in group), sum(value(c) for c in group)))
    for suit in range(4):
        for low in range(13):
            mask, total = 0, 0
            for rank in range(low, 13):
                card = suit * 13 + rank
                if card not in held:
                    break
                mask, total = mask | 1 << card, total + value(card)
                if rank - low >= 2:
                    melds.append((mask, total))
    return melds


def reference_deadwood(cards: Sequence[int]) -> int:
    """Exact minimum deadwood of a hand by exhaustive search over non-overlapping melds."""
    melds = _melds_in(cards)
    best = 0

    def search(start: int, used: int, melded: int) -> None:
        nonlocal best
        best = max(best, melded)
        for i in range(start, len(melds)):
            mask, worth = melds[i]
            if not mask & used:
                search(i + 1, used | mask, melded + worth)

    search(0, 0, 0)
    return sum(value(c) for c in cards) - best


def reference_deadwood11(cards: Sequence[int]) -> int:
    """Exact minimum over the 11 possible discards of the 10-card minimum deadwood."""
    return min(reference_deadwood([c for c in cards if c != d]) for d in cards)


# --- the two engines ----------------------------------------------------------------------------------------


def load_engine() -> tuple[ModuleType | None, str]:
    """Import our engine; return (module, "") or (None, why it is not usable)."""
    try:
        module = importlib.import_module("engine")
    except ImportError as err:
        return None, f"cannot import engine: {err}"
    missing = [name for name in ENGINE_API if not hasattr(module, name)]
    if missing:
        return None, f"engine lacks {', '.join(missing)} (is engine/__init__.py there yet?)"
    return module, ""


def load_openspiel() -> Any:
    """Import pyspiel, with a hint when the bench extra is not installed."""
    try:
        return importlib.import_module("pyspiel")
    except ImportError:
        sys.exit("pyspiel is missing: run `make bench` or `.venv/bin/pip install -e '.[bench]'`")


def play_our_hand(engine: ModuleType, rules: Any, seed: bytes, rng: random.Random) -> int:
    """Play one hand of a new game with uniformly random legal moves; return the number of moves."""
    state = engine.new_game(rules, seed=seed)
    for step in range(1, MAX_STEPS_PER_HAND + 1):
        state, events = engine.apply(state, state.to_act, rng.choice(engine.legal_moves(state)))
        if any(event.kind == "hand_ended" for event in events):
            return step
    raise RuntimeError(f"our hand with seed {seed.hex()} did not end after {MAX_STEPS_PER_HAND} moves")


def play_openspiel_hand(initial: Any, rng: random.Random) -> int:
    """Play one OpenSpiel gin_rummy game (one hand) from a clone of the cached initial state.

    Returns the number of player moves (chance nodes, the deal and stock draws, are not counted).
    """
    state = initial.clone()
    moves = steps = 0
    while not state.is_terminal():
        if state.is_chance_node():
            # Gin's chance nodes (deal, stock draws) are uniform: checked by check_openspiel_chance.
            state.apply_action(rng.choice(state.chance_outcomes())[0])
        else:
            state.apply_action(rng.choice(state.legal_actions()))
            moves += 1
        steps += 1
        if steps > MAX_STEPS_PER_HAND:
            raise RuntimeError("OpenSpiel hand did not end")
    return moves


def check_openspiel_chance(initial: Any, rng: random.Random) -> None:
    """Play one OpenSpiel hand checking that every chance node is uniform (so rng.choice is exact)."""
    state = initial.clone()
    while not state.is_terminal():
        if state.is_chance_node():
            outcomes = state.chance_outcomes()
            if max(p for _, p in outcomes) - min(p for _, p in outcomes) > 1e-12:
                raise RuntimeError("OpenSpiel chance node is not uniform: sample with its probabilities")
            state.apply_action(rng.choice(outcomes)[0])
        else:
            state.apply_action(rng.choice(state.legal_actions()))


# --- measuring ----------------------------------------------------------------------------------------------


def rate_hands(play: Callable[[], int], seconds: float) -> tuple[float, float]:
    """Hands per second and moves per hand: play hands until `seconds` have passed."""
    hands = moves = 0
    start = time.perf_counter()
    while True:
        moves += play()
        hands += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return hands / elapsed, moves / hands


def timed_map(fn: Callable[[Any], int], inputs: Sequence[Any]) -> tuple[float, list[int]]:
    """Calls per second of fn over the inputs (each called once), and the answers."""
    start = time.perf_counter()
    answers = list(map(fn, inputs))
    return len(inputs) / (time.perf_counter() - start), answers


@dataclass
class HandLists:
    """One round's random hands, the same for both engines in each one's own encoding."""

    cards: list[list[int]]
    masks: list[int]
    openspiel: list[list[int]]

    @classmethod
    def random(cls, rng: random.Random, size: int, count: int) -> HandLists:
        """`count` random hands of `size` cards."""
        cards = [rng.sample(range(52), size) for _ in range(count)]
        return cls(cards, [sum(1 << c for c in h) for h in cards], [[to_openspiel(c) for c in h] for h in cards])


def ratio(ours: float | None, theirs: float) -> float | None:
    """ours / theirs, rounded, or None without our figure."""
    return None if ours is None else round(ours / theirs, 3)


@dataclass
class Agreement:
    """Disagreements between the engines' deadwood answers, decided by the brute-force reference."""

    label: str
    exact: Callable[[Sequence[int]], int]
    checked: int = 0
    mismatches: int = 0
    ours_wrong: int = 0
    openspiel_wrong: int = 0
    shown: int = 0

    def compare(self, hands: list[list[int]], ours: list[int], theirs: list[int]) -> None:
        """Count (and print the first few) hands where the answers differ."""
        self.checked += len(hands)
        for cards, mine, other in zip(hands, ours, theirs, strict=True):
            if mine == other:
                continue
            truth = self.exact(cards)
            self.mismatches += 1
            self.ours_wrong += mine != truth
            self.openspiel_wrong += other != truth
            if self.shown < MAX_MISMATCHES_SHOWN:
                self.shown += 1
                print(f"MISMATCH {self.label}: {hands_text(cards)}: ours {mine}, OpenSpiel {other}, exact {truth}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print the figures; the last line is JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=5, help="measurement rounds (medians are reported)")
    parser.add_argument("--seconds", type=float, default=1.0, help="length of one hands-per-second measurement")
    parser.add_argument("--deadwood-hands", type=int, default=50_000, help="fresh random hands per round")
    parser.add_argument("--seed", type=int, default=20240601, help="seed for hands, deals and moves")
    parser.add_argument("--openspiel-only", action="store_true", help="measure OpenSpiel alone (no engine needed)")
    args = parser.parse_args(argv)

    pyspiel = load_openspiel()
    engine, why = (None, "--openspiel-only was given") if args.openspiel_only else load_engine()
    if engine is None:
        if not args.openspiel_only:
            print(f"error: {why}; use --openspiel-only to measure OpenSpiel alone", file=sys.stderr)
            return 2
        print(f"NOTE: our engine is not measured: {why}")

    rng = random.Random(args.seed)
    utils = pyspiel.gin_rummy.GinRummyUtils(13, 4, 10)  # ranks, suits, hand size (11 cards = just drew)
    game = pyspiel.load_game("gin_rummy")
    initial = game.new_initial_state()  # costs about a millisecond: built once, cloned for every hand
    check_openspiel_chance(initial, random.Random(args.seed))
    sample = HandLists.random(random.Random(args.seed), 10, 200)
    ref_ok = sum(
        utils.min_deadwood(o) == reference_deadwood(c) for c, o in zip(sample.cards, sample.openspiel, strict=True)
    )
    print(f"check: OpenSpiel 10-card min_deadwood equals the brute force on {ref_ok}/200 random hands")
    demo = [card_from_text(t) for t in HEURISTIC_DEMO]
    print(
        "note: OpenSpiel's 11-card min_deadwood takes its best 11-card meld group and drops the highest "
        f"deadwood card, which is not always the best discard: {hands_text(demo)} -> "
        f"{utils.min_deadwood([to_openspiel(c) for c in demo])}, exact {reference_deadwood11(demo)}"
    )

    rules = engine.rules_from_profile("gin") if engine else None
    theirs_rng, ours_rng = random.Random(args.seed + 1), random.Random(args.seed + 2)
    if engine:
        play_our_hand(engine, rules, ours_rng.randbytes(16), ours_rng)  # warm-up, and fail early if broken
    figures: dict[str, list[float]] = {}
    agree10 = Agreement("10 cards", reference_deadwood)
    agree11 = Agreement("11 cards", reference_deadwood11)
    for round_no in range(1, args.rounds + 1):
        measured: dict[str, float] = {}
        measured["openspiel_hands_per_s"], measured["openspiel_moves_per_hand"] = rate_hands(
            lambda: play_openspiel_hand(initial, theirs_rng), args.seconds
        )
        if engine:
            measured["hands_per_s"], measured["moves_per_hand"] = rate_hands(
                lambda: play_our_hand(engine, rules, ours_rng.randbytes(16), ours_rng), args.seconds
            )
        # Fresh hands every round, so no call ever repeats an earlier hand (no memo hit on a whole hand).
        for size, agreement, ours_fn in ((10, agree10, "min_deadwood"), (11, agree11, "min_deadwood11")):
            hands = HandLists.random(rng, size, args.deadwood_hands)
            measured[f"openspiel_deadwood{size}_per_s"], answers = timed_map(utils.min_deadwood, hands.openspiel)
            if engine:
                measured[f"deadwood{size}_per_s"], our_answers = timed_map(getattr(engine, ours_fn), hands.masks)
                agreement.compare(hands.cards, our_answers, answers)
        print(f"round {round_no}: " + ", ".join(f"{k} {v:,.1f}" for k, v in sorted(measured.items())))
        for key, val in measured.items():
            figures.setdefault(key, []).append(val)

    medians = {key: statistics.median(vals) for key, vals in figures.items()}
    result: dict[str, Any] = {
        "rounds": args.rounds,
        "hand_seconds_per_round": args.seconds,
        "deadwood_hands_per_round": args.deadwood_hands,
        "moves_per_hand": round(medians["moves_per_hand"], 1) if engine else None,
        "openspiel_moves_per_hand": round(medians["openspiel_moves_per_hand"], 1),
    }
    ours_moves = "-" if engine is None else f"{medians['moves_per_hand']:.1f}"
    print(f"median moves per hand: ours {ours_moves}, OpenSpiel {medians['openspiel_moves_per_hand']:.1f}")
    for what in ("hands", "deadwood10", "deadwood11"):
        ours = medians.get(f"{what}_per_s")
        theirs = medians[f"openspiel_{what}_per_s"]
        result[f"{what}_per_s"] = None if ours is None else round(ours, 1)
        result[f"openspiel_{what}_per_s"] = round(theirs, 1)
        result[f"{what}_ratio"] = ratio(ours, theirs)
        ours_text = "not measured" if ours is None else f"{ours:,.0f}/s"
        ratio_text = "" if ours is None else f" (ours/OpenSpiel {ours / theirs:.2f})"
        print(f"median {what}: ours {ours_text}, OpenSpiel {theirs:,.0f}/s{ratio_text}")
    if engine:
        result["deadwood10_mismatches"] = agree10.mismatches
        result["deadwood10_ours_wrong"] = agree10.ours_wrong
        result["deadwood11_mismatches"] = agree11.mismatches
        result["deadwood11_ours_wrong"] = agree11.ours_wrong
        result["deadwood11_openspiel_wrong"] = agree11.openspiel_wrong
        for agreement in (agree10, agree11):
            print(
                f"deadwood {agreement.label}: {agreement.mismatches} of {agreement.checked:,} hands differ "
                f"({agreement.ours_wrong} ours wrong, {agreement.openspiel_wrong} OpenSpiel wrong)"
            )
    print(json.dumps(result))
    return 1 if agree10.mismatches or agree11.ours_wrong else 0


if __name__ == "__main__":
    sys.exit(main())
