"""Golden transcripts: complete games stored as text (options, seed, every move, every event, result).

Regenerate with ``python -m tests.engine.transcripts`` (only when a rule change is intended: the diff is the
review). ``tests/engine/test_golden.py`` replays every file and demands identical events.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import engine as E
from engine.melds import meldable

GOLDEN_DIR = Path(__file__).parent / "golden"
HEADER = "# rummy-referee golden transcript v1"

#: name -> (profile, players, overrides, seed)
GAMES: dict[str, tuple[str, int | None, dict[str, Any], bytes]] = {
    "gin": ("gin", None, {}, b"golden:gin:00001"),
    "gin-standard": ("gin-standard", None, {}, b"golden:gin-std:01"),
    "oklahoma-gin": ("oklahoma-gin", None, {}, b"golden:oklahoma:1"),
    "hollywood-gin": ("hollywood-gin", None, {"target_score": 60}, b"golden:hollywood1"),
    "gin-fiftieth": (
        "gin", None, {"stock_end_rule": "fiftieth_card", "knock_limit": 0, "max_hands": 6}, b"golden:fiftieth:1"
    ),
    "gin-only": ("gin", None, {"knock_limit": 0, "max_hands": 8}, b"golden:gin-only:1"),
    "rummy-3": ("rummy", 3, {}, b"golden:rummy:3p:1"),
    "rummy-6": ("rummy", 6, {"max_hands": 3}, b"golden:rummy:6p:1"),
    "rummy-g4a": ("rummy-g4a", None, {}, b"golden:g4a:00001"),
    "rummy-2-options": (
        "rummy", 2,
        {"ace_high_low": True, "restock": "turn_over", "must_discard_to_go_out": True, "max_hands": 3},
        b"golden:rummy:2p:1",
    ),
}


def _gin_choice(s: E.GameState, moves: list[E.Move], rnd: random.Random) -> E.Move:
    hand = s.hands[s.to_act]
    kinds = {m.kind for m in moves}
    if s.phase == "layoff":
        return E.Declare()
    if "big_gin" in kinds:
        return next(m for m in moves if m.kind == "big_gin")
    knocks = [m for m in moves if isinstance(m, E.Knock)]
    if knocks:
        return min(knocks, key=lambda m: (E.min_deadwood(hand & ~(1 << m.discard)), m.discard))
    if s.phase in ("take_or_pass", "draw", "last_card") and s.discard:
        top = s.discard[-1]
        useful = meldable(hand | (1 << top)) >> top & 1
        if "draw_discard" in kinds and useful:
            return E.DrawDiscard()
        return E.DrawStock() if "draw_stock" in kinds else E.Pass()
    discards = [m for m in moves if isinstance(m, E.Discard)]
    if s.rules.knock_limit == 0 and rnd.random() < 0.5:
        return rnd.choice(discards)
    return min(discards, key=lambda m: (E.min_deadwood(hand & ~(1 << m.card)), -E.CARD_VALUE[m.card], m.card))


def _rummy_choice(s: E.GameState, moves: list[E.Move], rnd: random.Random) -> E.Move:
    hand = s.hands[s.to_act]
    if s.phase == "draw":
        top = s.discard[-1] if s.discard else -1
        if top >= 0 and meldable(hand | (1 << top), s.rules.ace_high_low) >> top & 1:
            return E.DrawDiscard()
        return E.DrawStock()
    melds = [m for m in moves if isinstance(m, E.MeldMove)]
    if melds:
        return max(melds, key=lambda m: (m.cards.bit_count(), m.cards))
    layoffs = [m for m in moves if isinstance(m, E.LayOff)]
    if layoffs:
        return layoffs[0]
    discards = [m for m in moves if isinstance(m, E.Discard)]
    if rnd.random() < 0.2:
        return rnd.choice(discards)
    return max(discards, key=lambda m: (E.CARD_VALUE[m.card], m.card))


def choose(s: E.GameState, rnd: random.Random) -> E.Move:
    """A simple deterministic-given-rnd greedy policy, to make realistic games."""
    moves = E.legal_moves(s)
    if s.rules.game == "gin":
        return _gin_choice(s, moves, rnd)
    return _rummy_choice(s, moves, rnd)


def event_line(ev: E.Event) -> str:
    """One event as a transcript line (the referee's complete record)."""
    secret = "" if ev.secret is None else f" secret[{ev.secret_for}]=" + json.dumps(ev.secret, sort_keys=True)
    return f"  {ev.kind} seat={ev.seat} " + json.dumps(ev.public, sort_keys=True) + secret


def play(name: str) -> str:
    """Play one golden game and return its transcript text."""
    profile, players, overrides, seed = GAMES[name]
    rules = E.rules_from_profile(profile, players, **overrides)
    s = E.new_game(rules, seed)
    rnd = random.Random(name)
    lines = [HEADER, f"name: {name}", "options: " + json.dumps(rules.to_dict(), sort_keys=True), f"seed: {seed.hex()}"]
    lines.append("deal: " + json.dumps(E.view(s, E.REFEREE)["hands"]))
    while s.phase != "match_over":
        move = choose(s, rnd)
        seat = s.to_act
        s, events = E.apply(s, seat, move)
        lines.append(f"> {seat} {E.move_text(move)}")
        lines.extend(event_line(ev) for ev in events)
    lines.append("result: " + json.dumps(s.result, sort_keys=True))
    return "\n".join(lines) + "\n"


def replay(text: str) -> tuple[list[str], E.GameState]:
    """Replay a transcript's moves; returns the transcript lines the engine produces now, and the final state."""
    lines = text.splitlines()
    header = dict(line.split(": ", 1) for line in lines[1:5])
    rules = E.Rules.from_dict(json.loads(header["options"]))
    s = E.new_game(rules, bytes.fromhex(header["seed"]))
    out = [*lines[:4], "deal: " + json.dumps(E.view(s, E.REFEREE)["hands"])]
    for line in lines:
        if line.startswith("> "):
            seat_text, move_text = line[2:].split(" ", 1)
            s, events = E.apply(s, int(seat_text), E.parse_move(move_text))
            out.append(line)
            out.extend(event_line(ev) for ev in events)
    out.append("result: " + json.dumps(s.result, sort_keys=True))
    return out, s


def main() -> None:
    """Write every golden transcript."""
    GOLDEN_DIR.mkdir(exist_ok=True)
    for name in GAMES:
        path = GOLDEN_DIR / f"{name}.txt"
        path.write_text(play(name))
        print(f"wrote {path} ({path.stat().st_size} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
