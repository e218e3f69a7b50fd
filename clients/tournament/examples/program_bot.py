#!/usr/bin/env python3
"""An external bot for rummy-tournament, standard library only: it speaks the JSON-lines protocol of
clients/tournament/README.md (one request per line on stdin, one move text per line on stdout).

It knocks or goes out whenever it may, never takes the discard, and otherwise discards its highest card;
ties are broken by a random generator seeded from RUMMY_BOT_SEED, so that a tournament rerun plays the same.

    rummy-tournament random 'example=cmd:python3 clients/tournament/examples/program_bot.py'
"""

import json
import os
import random
import sys
from typing import Any

RANKS = "A23456789TJQK"


def value(card: str) -> int:
    """Deadwood value of a card text such as "TD"."""
    return min(10, RANKS.index(card[0]) + 1)


def choose(request: dict[str, Any], rng: random.Random) -> str:
    """One move text among the legal ones."""
    legal: list[str] = request["legal"]
    for prefix in ("big_gin", "knock", "meld", "layoff", "declare best", "done"):
        found = [m for m in legal if m.startswith(prefix)]
        if found:
            return found[0]
    if "draw stock" in legal:
        return "draw stock"
    discards = [m for m in legal if m.startswith("discard ")]
    if discards:
        top = max(value(m.split()[1]) for m in discards)
        return rng.choice([m for m in discards if value(m.split()[1]) == top])
    return rng.choice(legal)


def main() -> None:
    """Answer every request until stdin closes."""
    rng = random.Random(int(os.environ.get("RUMMY_BOT_SEED", "0")))
    for line in sys.stdin:
        if line.strip():
            print(choose(json.loads(line), rng), flush=True)


if __name__ == "__main__":
    main()
