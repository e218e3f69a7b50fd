"""bench/memory.py runs end to end (briefly) and prints its figures; and the bars of issue 8 (item 12) on the
suite's Redis: bytes, not timings."""

from __future__ import annotations

import random
import uuid

import pytest
import redis

import engine
from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.redis_launcher import RedisProcess, find_redis_server
from tests import kit
from tests.server.refkit import ORGANIZER, Client, Game, md

KEYS = {"bytes_new_game", "bytes_per_move", "bytes_finished_match"}
# The earlier layout (issue 8): a new game 7.7 KB, and 1.4 KB more per move sent with a request_id.
EARLIER_NEW_GAME = 7700
EARLIER_PER_MOVE = 1400


@pytest.mark.skipif(find_redis_server() is None, reason="no redis-server binary")
def test_the_memory_bench_prints_every_figure() -> None:
    figures, lines = kit.run_bench("memory.py", "--games", "3", "--moves", "4", "--matches", "1", "--no-baseline",
                                   timeout=600)  # fmt: skip
    assert set(figures) >= KEYS, figures
    assert all(figures[k] > 0 for k in KEYS), figures
    assert any("one game's keys (this layout)" in line for line in lines)


def _bytes_of(r: redis.Redis, game_id: str) -> int:
    return sum(int(r.memory_usage(k, samples=0) or 0) for k in r.scan_iter(match=f"game:{{{game_id}}}*"))


def _play(client: Client, game: Game, rng: random.Random) -> int:
    """Both seats to the end of the match, every move with a request_id as the SDK sends it: the moves made."""
    moves = 0
    view = client.view(game, game.tokens[0])
    while view.phase != pb.PHASE_MATCH_OVER:
        token = game.tokens[view.to_act]
        if view.viewer_seat != view.to_act:
            view = client.view(game, token)
        if view.phase == pb.PHASE_DRAW:
            move = pb.Move(draw_stock=pb.Move.DrawStock())
        elif view.phase == pb.PHASE_LAYOFF:
            move = pb.Move(declare=pb.Move.Declare(best=True))
        elif view.phase in (pb.PHASE_TAKE_OR_PASS, pb.PHASE_LAST_CARD):
            move = pb.Move(pass_turn=pb.Move.PassTurn())
        else:
            knock = [m for m in view.legal_moves if m.WhichOneof("move") in ("knock", "big_gin")]
            hand = engine.mask_of(engine.parse_cards(view.hand))
            discards = [m for m in view.legal_moves if m.WhichOneof("move") == "discard"]
            move = (knock or sorted(discards, key=lambda m: (
                engine.min_deadwood(hand & ~(1 << engine.parse_card(m.discard.card))), rng.random())))[0]  # fmt: skip
        request = rpb.SubmitMoveRequest(game_id=game.game_id, move=move, request_id=uuid.uuid4().hex)
        view = client.stub.SubmitMove(request, metadata=md(token)).view
        moves += 1
    return moves


def test_the_bytes_per_game_meet_the_bars(client: Client, redis_server: RedisProcess) -> None:
    """A new game <= 2 KB; a finished 100-point Gin match, played with request ids, <= a tenth of what the
    earlier layout held for it, and <= 120 bytes per move beyond the new game."""
    r = redis.Redis.from_url(redis_server.url)
    new = [client.create("gin", token=ORGANIZER, seed=b"bars-seed-%08d" % i) for i in range(5)]
    sizes = [_bytes_of(r, g.game_id) for g in new]
    assert max(sizes) <= 2048, sizes
    game = new[0]
    moves = _play(client, game, random.Random(3))
    finished = _bytes_of(r, game.game_id)
    assert (finished - sizes[0]) / moves <= 120, (finished, moves)
    assert finished <= (EARLIER_NEW_GAME + EARLIER_PER_MOVE * moves) / 10, (finished, moves)
    r.close()
