"""Make server/gamelog_dict_v1.txt, the preset dictionary of the game log's compression (run once; kept for the
record). The file must never change once games are stored with it: a new dictionary is a new entry format.

    .venv/bin/python tools/gamelog_dict.py > server/gamelog_dict_v1.txt
"""

from __future__ import annotations

import random
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import orjson

import engine
from clients.bots import make_bot
from clients.bots.arena import play_match

LIMIT = 3800  # the compressor's window is 4096 bytes (minus 262 of lookahead)


def main() -> None:
    samples: dict[tuple[str, ...], bytes] = {}
    counts: Counter[tuple[str, ...]] = Counter()

    def record(state: engine.GameState, seat: int, move: engine.Move) -> None:
        _, events = engine.apply(state, seat, move)
        kinds = (move.__class__.__name__, *(e.kind for e in events))
        counts[kinds] += 1
        entry = orjson.dumps([len(counts), seat, engine.move_to_dict(move), [e.to_dict() for e in events]])
        samples.setdefault(kinds, entry)

    rng = random.Random(7)
    for profile, players, bot in (("gin", 2, "gin"), ("oklahoma-gin", 2, "gin"), ("rummy", 3, "rummy")):
        for _ in range(3):
            rules = engine.rules_from_profile(profile, players=players)
            bots = [make_bot(bot) for _ in range(players)]
            play_match(rules, bots, rng.randbytes(32), on_move=lambda s, seat, v, legal, m: record(s, seat, m))
    rules = engine.rules_from_profile("gin", players=2)
    _, dealt = engine.new_game_with_events(rules, rng.randbytes(32))
    deal = orjson.dumps([0, -1, None, [e.to_dict() for e in dealt]])
    chosen = [samples[k] for k, _ in reversed(counts.most_common())]  # the most frequent last: the nearest
    text = deal
    for entry in chosen:
        text += entry
    sys.stdout.write(text[-LIMIT:].decode())


if __name__ == "__main__":
    main()
