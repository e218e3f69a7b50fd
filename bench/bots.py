"""Bot benchmark: the strong bots against the random bot, through the engine directly (no server).

- Gin: ``--gin-matches`` (100) matches to 100 points (profile ``gin``), the strong Gin bot against the random
  bot, seats alternating; reports the strong bot's match win rate (bar: 0.95).
- Rummy: ``--rummy-hands`` (300) 3-player hands (profile ``rummy``, ``max_hands=1``), the strong Rummy bot
  against two random bots, its seat rotating; reports the fraction of hands it won (bar: 0.80). Drawn hands
  (stalled, turn cap) count as not won.

Also the bots' cost per decision (mean and worst CPU milliseconds; the view conversion included). Run from the
repository root:

    .venv/bin/python bench/bots.py [--gin-matches 100] [--rummy-hands 300] [--seed bench]

The last line is one JSON object. Exit status 1 when a bar is missed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter

import _boot  # first of the project's imports: the repository root on sys.path

_BENCH_DIR, _ROOT = _boot.BENCH_DIR, _boot.ROOT

import engine as E  # noqa: E402
from clients.bots import Bot, make_bot  # noqa: E402
from clients.bots.arena import MoveClock, play_match  # noqa: E402

GIN_BAR = 0.95
RUMMY_BAR = 0.80


def _seed(base: str, *parts: object) -> bytes:
    return ":".join(str(p) for p in ("bench-bots", base, *parts)).encode().ljust(16, b".")


def gin_matches(n: int, base: str, clock: MoveClock) -> dict[str, int]:
    """Strong Gin against random, ``n`` matches to 100, seats alternating."""
    rules = E.rules_from_profile("gin")
    wins = hands = 0
    for i in range(n):
        seat = i % 2
        bots: list[Bot] = [make_bot("random", seed=i), make_bot("random", seed=i)]
        bots[seat] = make_bot("gin", seed=i)
        state = play_match(rules, bots, _seed(base, "gin", i), clock)
        assert state.result is not None
        wins += state.result["winners"] == [seat]
        hands += state.hands_played
    return {"gin_matches": n, "gin_wins": wins, "gin_hands": hands}


def rummy_hands(n: int, base: str, clock: MoveClock) -> dict[str, int]:
    """Strong Rummy against two random bots, ``n`` 3-player hands, its seat rotating."""
    rules = E.rules_from_profile("rummy", 3, max_hands=1)
    outcomes: Counter[str] = Counter()
    for i in range(n):
        seat = i % 3
        bots = [make_bot("random", seed=10 * i + k) for k in range(3)]
        bots[seat] = make_bot("rummy", seed=i)
        state = play_match(rules, bots, _seed(base, "rummy", i), clock)
        last = state.last_hand
        assert last is not None
        if last["winner"] == seat:
            outcomes["won"] += 1
        elif last["winner"] is None:
            outcomes["drawn"] += 1
        else:
            outcomes["lost"] += 1
    return {"rummy_hands": n, "rummy_wins": outcomes["won"], "rummy_drawn": outcomes["drawn"],
            "rummy_lost": outcomes["lost"]}


def main(argv: list[str] | None = None) -> int:
    """Run both benchmarks; print a summary and one JSON line; 0 when both bars are met."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--gin-matches", type=int, default=100)
    ap.add_argument("--rummy-hands", type=int, default=300)
    ap.add_argument("--seed", default="v1", help="base of the deal seeds (the same seed plays the same games)")
    args = ap.parse_args(argv)

    clock = MoveClock()
    start = time.perf_counter()
    gin = gin_matches(args.gin_matches, args.seed, clock)
    gin_s = time.perf_counter() - start
    gin_rate = gin["gin_wins"] / max(1, gin["gin_matches"])
    print(f"gin: strong won {gin['gin_wins']}/{gin['gin_matches']} matches to 100 against random "
          f"({gin_rate:.3f}, bar {GIN_BAR}), {gin['gin_hands']} hands, {gin_s:.1f}s")

    start = time.perf_counter()
    rummy = rummy_hands(args.rummy_hands, args.seed, clock)
    rummy_s = time.perf_counter() - start
    rummy_rate = rummy["rummy_wins"] / max(1, rummy["rummy_hands"])
    print(f"rummy: strong won {rummy['rummy_wins']}/{rummy['rummy_hands']} 3-player hands against two random bots "
          f"({rummy_rate:.3f}, bar {RUMMY_BAR}; drawn {rummy['rummy_drawn']}), {rummy_s:.1f}s")

    cost = {}
    for name in ("gin", "rummy", "random"):
        cost[f"{name}_ms_per_move"] = round(clock.per_move_ms(name), 4)
        cost[f"{name}_worst_ms"] = round(1000 * clock.worst.get(name, 0.0), 3)
        cost[f"{name}_moves"] = clock.calls.get(name, 0)
        print(f"{name} bot: {clock.calls.get(name, 0)} decisions, {clock.per_move_ms(name):.3f} ms mean, "
              f"{1000 * clock.worst.get(name, 0.0):.2f} ms worst (CPU time)")
    ok = gin_rate >= GIN_BAR and rummy_rate >= RUMMY_BAR
    print(json.dumps({
        "gin_match_win_rate": round(gin_rate, 4), "rummy_hand_win_rate": round(rummy_rate, 4), **gin, **rummy,
        **cost, "gin_seconds": round(gin_s, 2), "rummy_seconds": round(rummy_s, 2), "bars_met": ok,
    }))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
