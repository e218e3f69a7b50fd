"""An adversarial review of the clocks (README "Time controls and timeout policies", docs/rules.md section 10, the
proto's TimeControl / SeatClock / GameView.deadline_ms), through real referees over real redis-servers.

No test here asserts that something happened within some time: a deadline is waited for in Redis's own clock
(``_wait_past``), a timeout by watching the game until it shows up (bounded only by a generous failure timeout).
"""

from __future__ import annotations

import threading

import grpc
import redis

from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from tests.kit import ServerThread
from tests.server.refkit import (
    Client,
    Game,
    expect_error,
    md,
    move_from_text,
)

TC = pb.TimeControl
FORFEIT = pb.TimeoutPolicy(kind=pb.TimeoutPolicy.KIND_FORFEIT_MATCH)
AUTO = pb.TimeoutPolicy(kind=pb.TimeoutPolicy.KIND_AUTO_MOVE, max_auto_moves=2)
DRAW = move_from_text("draw stock")


def _redis_ms(url: str) -> int:
    r = redis.Redis.from_url(url)
    try:
        seconds, micros = r.time()
    finally:
        r.close()
    return int(seconds) * 1000 + int(micros) // 1000


def _wait_past(url: str, deadline_ms: int, seconds: float = 30.0) -> None:
    """Wait until Redis's clock is past ``deadline_ms`` (the failure bound: ``seconds`` of Redis's clock)."""
    limit = _redis_ms(url) + int(seconds * 1000)
    while (now := _redis_ms(url)) <= deadline_ms:
        assert now < limit, "Redis's clock never passed the deadline"
        threading.Event().wait(min(0.02, (deadline_ms - now + 1) / 1000))


def _create(client: Client, profile: str, control: pb.TimeControl, policy: pb.TimeoutPolicy | None = None,
            players: int = 2, token: str | None = None, **fields: object) -> Game:  # fmt: skip
    request = rpb.CreateGameRequest(
        profile=profile, seats=[pb.SeatSpec(display_name=f"P{i}") for i in range(players)], time_control=control,
        allow_spectators=True, **fields,
    )  # fmt: skip
    if policy is not None:
        request.timeout_policy.CopyFrom(policy)
    created = client.stub.CreateGame(request, metadata=md(token))
    return Game(created.game_id, {t.seat: t.token for t in created.seat_tokens}, created.spectator_token, created)


# ------------------------------------------------------------------ a referee that fires no timeouts (the session's)


def test_validate_move_after_the_deadline_is_out_of_time_as_submit_move(
    client: Client, referee_server: ServerThread
) -> None:
    """referee.proto: ValidateMove checks "as SubmitMove would (same statuses)"; README: "the same checks". Past
    its deadline a move is refused OUT_OF_TIME by SubmitMove, so ValidateMove must say so too (this referee fires
    no timeouts: the decision stays due, unplayed)."""
    game = _create(client, "gin", TC(per_move=TC.PerMove(limit_ms=50)), FORFEIT)
    view = client.view(game, game.tokens[0])
    token = game.tokens[view.to_act]
    _wait_past(referee_server.redis_url, view.deadline_ms)
    with expect_error(grpc.StatusCode.FAILED_PRECONDITION, "OUT_OF_TIME"):
        client.move(game, token, DRAW)
    with expect_error(grpc.StatusCode.FAILED_PRECONDITION, "OUT_OF_TIME"):
        client.stub.ValidateMove(rpb.ValidateMoveRequest(game_id=game.game_id, move=DRAW), metadata=md(token))
    # the rules' refusals come first, as in SubmitMove (the engine checks before the commit does)
    with expect_error(grpc.StatusCode.FAILED_PRECONDITION, "NOT_YOUR_TURN"):
        client.stub.ValidateMove(rpb.ValidateMoveRequest(game_id=game.game_id, move=DRAW),
                                 metadata=md(game.tokens[1 - view.to_act]))  # fmt: skip
    with expect_error(grpc.StatusCode.FAILED_PRECONDITION, "NOT_YOUR_TURN"):
        client.move(game, game.tokens[1 - view.to_act], DRAW)


def test_validate_move_before_the_deadline_is_accepted(client: Client) -> None:
    game = _create(client, "gin", TC(per_move=TC.PerMove(limit_ms=600_000)), FORFEIT)
    view = client.view(game, game.tokens[0])
    answer = client.stub.ValidateMove(rpb.ValidateMoveRequest(game_id=game.game_id, move=DRAW),
                                      metadata=md(game.tokens[view.to_act]))  # fmt: skip
    assert answer.version == 0
