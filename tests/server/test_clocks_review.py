"""An adversarial review of the clocks (README "Time controls and timeout policies", docs/rules.md section 10, the
proto's TimeControl / SeatClock / GameView.deadline_ms), through real referees over real redis-servers.

No test here asserts that something happened within some time: a deadline is waited for in Redis's own clock
(``_wait_past``), a timeout by watching the game until it shows up (bounded only by a generous failure timeout).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import grpc
import httpx
import pytest
from google.protobuf import json_format

import engine
from clients.bots import make_bot
from clients.runner import SeatResult, play_seat
from clients.sdk import PerMove, RefereeClient, TimeoutPolicy
from clients.sdk.errors import RefereeError
from clients.view import View
from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server import clocks
from server.redis_launcher import RedisProcess, start_redis
from tests.kit import ServerThread
from tests.server import refkit, webkit
from tests.server.refkit import (
    GIN_KNOCK_DEAL,
    ORGANIZER,
    Client,
    Game,
    expect_error,
    md,
    move_from_text,
)
from tests.server.refkit import create_timed as _create
from tests.server.refkit import redis_ms as _redis_ms  # noqa: F401 (the module's name for it, as before)
from tests.server.refkit import wait_past as _wait_past

TC = pb.TimeControl
FORFEIT = pb.TimeoutPolicy(kind=pb.TimeoutPolicy.KIND_FORFEIT_MATCH)
AUTO = pb.TimeoutPolicy(kind=pb.TimeoutPolicy.KIND_AUTO_MOVE, max_auto_moves=2)
DRAW = move_from_text("draw stock")
T = TypeVar("T")


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


@pytest.mark.parametrize("storage", ["standalone", "cluster"])
def test_validate_move_past_the_deadline_is_out_of_time_however_rough_the_clock_estimate(
    storage: str, request: pytest.FixtureRequest
) -> None:
    """ValidateMove compares a deadline with an estimate of Redis's clock that is never later than it (the commit
    reads Redis's own); a rough estimate (its measurement's round trip took seconds: a loaded machine) must not make
    it accept what SubmitMove refuses. A CI run saw that with the ordinary error of a few ms, just past the deadline.
    On a cluster, the clock read is the game's node's (the one its commit reads)."""
    url = request.getfixturevalue("redis_server" if storage == "standalone" else "redis_cluster").url
    with refkit.ServerThread(url) as server:  # a referee of its own (no firer): its estimate is made rough
        client = Client(server.address)
        try:
            game = _create(client, "gin", TC(per_move=TC.PerMove(limit_ms=50)), FORFEIT)
            view = client.view(game, game.tokens[0])
            token = game.tokens[view.to_act]
            _wait_past(server.redis_url.replace("redis-cluster://", "redis://"), view.deadline_ms)
            with expect_error(grpc.StatusCode.FAILED_PRECONDITION, "OUT_OF_TIME"):
                client.move(game, token, DRAW)
            store = server.referee.store
            store._clock_error = 2.0  # type: ignore[attr-defined]  # (the health check's next ping measures it again)
            with expect_error(grpc.StatusCode.FAILED_PRECONDITION, "OUT_OF_TIME"):
                client.stub.ValidateMove(rpb.ValidateMoveRequest(game_id=game.game_id, move=DRAW), metadata=md(token))
        finally:
            client.close()


def test_validate_move_before_the_deadline_is_accepted(client: Client) -> None:
    game = _create(client, "gin", TC(per_move=TC.PerMove(limit_ms=600_000)), FORFEIT)
    view = client.view(game, game.tokens[0])
    answer = client.stub.ValidateMove(rpb.ValidateMoveRequest(game_id=game.game_id, move=DRAW),
                                      metadata=md(game.tokens[view.to_act]))  # fmt: skip
    assert answer.version == 0


# ------------------------------------------------------------- a referee that fires timeouts, over its own Redis


@pytest.fixture(scope="module")
def own_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisProcess]:
    """A redis-server of this module: its firers must not fire other modules' games (nor they ours)."""
    process = start_redis(tmp_path_factory.mktemp("clocks-review-redis"))
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def firing(own_redis: RedisProcess) -> Iterator[ServerThread]:
    """A referee that fires timeouts, with its HTTP port."""
    with refkit.ServerThread(own_redis.url, firer=True, http=True) as server:
        yield server


@pytest.fixture
def fclient(firing: ServerThread) -> Iterator[Client]:
    c = Client(firing.address)
    try:
        yield c
    finally:
        c.close()


def _watch(client: Client, game: Game, token: str, until: Callable[[pb.Event], bool],
           seconds: float = 60) -> list[pb.Event]:  # fmt: skip
    """Every event of the game from its creation, as ``token`` sees them, up to the first that ``until`` holds
    for (or the match's end)."""
    stream = client.stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id, after_version=0, after_index=0),
                                   metadata=md(token), timeout=seconds)  # fmt: skip
    seen: list[pb.Event] = []
    try:
        for r in stream:
            if r.HasField("event"):
                seen.append(r.event)
                if until(r.event) or r.event.kind == "match_ended":
                    break
    finally:
        stream.cancel()
    return seen


def _of_version(events: list[pb.Event], version: int) -> list[pb.Event]:
    return [e for e in events if e.version == version]


def test_a_timeout_in_the_gin_defenders_layoff_phase_declares_best(fclient: Client) -> None:
    """docs/rules.md section 10: the Gin defender's automatic move is `declare best`; timed_out comes first, then
    auto_moved, then the declaration's own events; the defender's clock is charged for the whole decision."""
    game = _create(fclient, "gin", TC(per_move=TC.PerMove(limit_ms=2000)), AUTO, token=ORGANIZER,
                   preset_deals=[GIN_KNOCK_DEAL])  # fmt: skip
    fclient.move(game, game.tokens[1], DRAW)  # (2 s each: generous for one round trip)
    knocked = fclient.move(game, game.tokens[1], move_from_text("knock KC"))
    started = [e for e in knocked.events if e.kind == "clock_started"]
    assert [e.seat for e in started] == [0] and knocked.view.phase == pb.PHASE_LAYOFF
    events = _watch(fclient, game, game.spectator, lambda e: e.version == 3 and e.kind == "clock_started")
    timeout = _of_version(events, 3)
    kinds = [e.kind for e in timeout]
    assert kinds[:2] == ["timed_out", "auto_moved"], kinds
    assert timeout[0].seat == 0 and not timeout[0].timed_out.forfeit
    assert timeout[0].timed_out.policy == pb.TimeoutPolicy.KIND_AUTO_MOVE
    assert timeout[0].timed_out.deadline_ms == started[0].deadline_ms
    assert timeout[1].auto_moved.move == move_from_text("declare best") and timeout[1].auto_moved.auto_moves == 1
    ended = next(e for e in timeout if e.kind == "hand_ended").hand_ended.result
    assert (ended.reason, ended.winner, ended.points) == ("knock", 1, 25)  # as refkit's GIN_KNOCK_MOVES score it
    stopped = next(e for e in timeout if e.kind == "clock_stopped")
    assert stopped.seat == 0 and stopped.clock_stopped.spent_ms >= 2000
    assert stopped.clock_stopped.at_ms >= timeout[0].timed_out.deadline_ms
    fclient.stub.Resign(rpb.ResignRequest(game_id=game.game_id), metadata=md(game.tokens[1]))


def test_take_or_pass_and_a_draw_timed_out_until_the_forfeit(fclient: Client, firing: ServerThread) -> None:
    """Nobody moves in a take-or-pass game under auto_move (2 in a row): pass, pass, then draw stock and at once
    (the same timeout's second step, no timed_out of its own) the discard of the card drawn, for each seat; the
    next timeout forfeits. The drawn card stays the drawer's alone until it is discarded; the clocks stop at the
    end; every viewer (the seats, a spectator, the HTTP port's JSON) sees the same clocks."""
    game = _create(fclient, "gin-standard", TC(per_move=TC.PerMove(limit_ms=300)), AUTO, token=ORGANIZER,
                   preset_deals=[GIN_KNOCK_DEAL])  # fmt: skip
    as_spectator = _watch(fclient, game, game.spectator, lambda e: False)
    as_seat1 = _watch(fclient, game, game.tokens[1], lambda e: False)
    assert [(e.version, e.index, e.kind) for e in as_spectator] == [(e.version, e.index, e.kind) for e in as_seat1]
    by_version = {v: _of_version(as_spectator, v) for v in range(1, as_spectator[-1].version + 1)}
    plays = [(v, [e.kind for e in es if e.kind not in ("clock_stopped", "clock_started")]) for v, es in
             by_version.items()]  # fmt: skip
    assert plays == [
        (1, ["timed_out", "auto_moved", "passed"]),
        (2, ["timed_out", "auto_moved", "passed"]),
        (3, ["timed_out", "auto_moved", "drew"]),
        (4, ["discarded"]),
        (5, ["timed_out", "auto_moved", "drew"]),
        (6, ["discarded"]),
        (7, ["timed_out", "hand_ended", "match_ended"]),
    ], plays
    for es in by_version.values():  # each decision starts at the commit that ended the one before
        stop = next(e for e in es if e.kind == "clock_stopped")
        start = next((e for e in es if e.kind == "clock_started"), None)
        assert start is None or start.clock_started.started_ms == stop.clock_stopped.at_ms
        if es[0].kind == "timed_out":
            assert es[0].timed_out.deadline_ms <= stop.clock_stopped.at_ms
    autos = {v: es[1] for v, es in by_version.items() if len(es) > 1 and es[1].kind == "auto_moved"}
    assert [(autos[v].seat, autos[v].auto_moved.auto_moves) for v in (1, 2, 3, 5)] == [(1, 1), (0, 1), (1, 2), (0, 2)]
    assert autos[3].auto_moved.move == DRAW
    # the second step: the card drawn, hidden from the spectator until discarded
    drew_seen = next(e for e in as_seat1 if e.version == 3 and e.kind == "drew")
    drew_public = next(e for e in as_spectator if e.version == 3 and e.kind == "drew")
    assert drew_seen.drew.card == "2C" and not drew_public.drew.card
    assert next(e for e in by_version[4] if e.kind == "discarded").discarded.card == "2C"
    second = next(e for e in by_version[3] if e.kind == "clock_started")
    assert second.seat == 1 and second.deadline_ms < second.clock_started.started_ms  # "due at once"
    # the forfeit: seat 1 lost on time, and no clock runs any more
    final = by_version[7]
    assert final[0].timed_out.forfeit and final[0].seat == 1
    hand = next(e for e in final if e.kind == "hand_ended").hand_ended.result
    assert hand.reason == "time" and hand.lost_on_time_seat == 1 and not hand.HasField("winner")
    assert [list(h.cards) for h in hand.hands] and all(h.cards for h in hand.hands)  # every hand shown
    assert [e.kind for e in final][-2:] == ["clock_stopped", "match_ended"]
    assert len(final[-2].clocks) == 2 and not any(c.running for c in final[-2].clocks)
    result = final[-1].match_ended.result
    assert result.ended == pb.MATCH_END_TIME and list(result.winners) == [0] and result.lost_on_time_seat == 1
    assert list(result.seat_ends) == [pb.SEAT_END_FINISHED, pb.SEAT_END_LOST_ON_TIME]
    views = [fclient.view(game, t) for t in (game.tokens[0], game.tokens[1], game.spectator)]
    for view in views:
        assert not view.HasField("deadline_ms") and list(view.clocks) == list(final[-2].clocks)
        assert [c.auto_moves for c in view.clocks] == [2, 2]
    with httpx.Client(base_url=firing.http_url, timeout=30) as http:
        reply = http.post("/rummy.v1.RefereeService/GetGame", json={"gameId": game.game_id},
                          headers={"authorization": f"Bearer {game.spectator}"})  # fmt: skip
        assert reply.status_code == 200, reply.text
        assert reply.json()["view"]["clocks"] == json_format.MessageToDict(views[2])["clocks"]
        assert "deadlineMs" not in reply.json()["view"]


def test_the_http_ports_json_shows_the_running_clock_as_grpc_does(fclient: Client, firing: ServerThread) -> None:
    game = _create(fclient, "rummy", TC(bank=TC.Bank(allowance_ms=600_000, bank_ms=60_000)), FORFEIT, players=3)
    grpc_view = json_format.MessageToDict(fclient.view(game, game.tokens[2]))
    with httpx.Client(base_url=firing.http_url, timeout=30) as http:
        reply = http.post("/rummy.v1.RefereeService/GetGame", json={"gameId": game.game_id},
                          headers={"authorization": f"Bearer {game.tokens[2]}"})  # fmt: skip
    assert reply.status_code == 200, reply.text
    view = reply.json()["view"]
    assert view["clocks"] == grpc_view["clocks"] and view["deadlineMs"] == grpc_view["deadlineMs"]
    running = [c for c in view["clocks"] if c.get("running")]
    assert len(running) == 1 and running[0]["deadlineMs"] == view["deadlineMs"]
    assert int(view["deadlineMs"]) == int(running[0]["startedMs"]) + 600_000 + 60_000


def test_a_resend_after_the_timeout_fired_gets_the_first_answer(fclient: Client) -> None:
    """A seat draws (request_id "d"), then lets its discard time out: the referee discards the card it drew by
    that move (docs/rules.md section 10). A resend of the draw afterwards is its first answer, byte for byte."""
    game = _create(fclient, "gin", TC(per_move=TC.PerMove(limit_ms=2000)), AUTO, token=ORGANIZER,
                   preset_deals=[GIN_KNOCK_DEAL])  # fmt: skip
    request = rpb.SubmitMoveRequest(game_id=game.game_id, move=DRAW, request_id="d")
    first = fclient.stub.SubmitMove(request, metadata=md(game.tokens[1]))
    assert next(e for e in first.events if e.kind == "drew").drew.card == "2C"
    events = _watch(fclient, game, game.spectator, lambda e: e.version == 2 and e.kind == "clock_started")
    v2 = _of_version(events, 2)
    assert [e.kind for e in v2[:3]] == ["timed_out", "auto_moved", "discarded"]
    assert v2[1].auto_moved.move == move_from_text("discard 2C") and v2[2].discarded.card == "2C"
    again = fclient.stub.SubmitMove(request, metadata=md(game.tokens[1]))
    assert again.SerializeToString(deterministic=True) == first.SerializeToString(deterministic=True)
    fclient.stub.Resign(rpb.ResignRequest(game_id=game.game_id), metadata=md(game.tokens[0]))


def test_a_timeout_in_rummys_play_phase_after_a_meld_discards_the_highest_card(fclient: Client) -> None:
    """Rummy's turn steps are timed alone. Seat 1 draws AC, melds, then lets its discard time out: the move just
    before was the meld, not the draw, so the automatic discard is the legal discard of the highest point value
    (6S), not the card drawn (docs/rules.md section 10, "by the move just before")."""
    rummy_deal = refkit.deal(0, ["JS AH 3H 5H 7H 9H JH KH 2D 4D", "AS 2S 3S 4S 5S 6S 7S 8S 9S TS"], "KC", "AC")
    game = _create(fclient, "rummy", TC(per_move=TC.PerMove(limit_ms=2000)), AUTO, token=ORGANIZER,
                   preset_deals=[rummy_deal])  # fmt: skip
    drew = fclient.move(game, game.tokens[1], DRAW)
    assert next(e for e in drew.events if e.kind == "drew").drew.card == "AC"
    melded = fclient.move(game, game.tokens[1], move_from_text("meld 7S 8S 9S TS"))
    assert melded.view.clocks[1].running and melded.view.clocks[1].auto_moves == 0
    events = _watch(fclient, game, game.spectator, lambda e: e.version == 3 and e.kind == "clock_started")
    v3 = _of_version(events, 3)
    assert [e.kind for e in v3] == ["timed_out", "auto_moved", "discarded", "clock_stopped", "clock_started"]
    assert v3[1].auto_moved.move == move_from_text("discard 6S") and v3[2].discarded.card == "6S"
    assert v3[-1].seat == 0 and [c.auto_moves for c in v3[-1].clocks] == [0, 1]
    # seat 1's own move resets its count (seat 0 draws and discards, then seat 1 draws)
    fclient.move(game, game.tokens[0], DRAW)
    fclient.move(game, game.tokens[0], move_from_text("discard JS"))
    own = fclient.move(game, game.tokens[1], DRAW)
    assert [c.auto_moves for c in own.view.clocks] == [0, 0]
    fclient.stub.Resign(rpb.ResignRequest(game_id=game.game_id), metadata=md(game.tokens[0]))


def test_a_resign_stops_the_running_clock_and_a_second_resign_answers_the_same(fclient: Client) -> None:
    """README "Resign": a seat resigns at any time, here while the other seat's clock runs (a Fischer clock): the
    running seat's clock stops, charged its time, with no increment; no clock runs after; a second resign answers
    the same events and view."""
    game = _create(fclient, "gin", TC(clock=TC.Clock(initial_ms=600_000, increment_ms=5_000)), FORFEIT)
    view = fclient.view(game, game.tokens[0])
    running = view.to_act
    resigner = 1 - running
    first = fclient.stub.Resign(rpb.ResignRequest(game_id=game.game_id), metadata=md(game.tokens[resigner]))
    kinds = [e.kind for e in first.events]
    assert kinds == ["resigned", "hand_ended", "clock_stopped", "match_ended"], kinds
    stopped = first.events[2]
    assert stopped.seat == running
    assert stopped.clock_stopped.remaining_ms == 600_000 - stopped.clock_stopped.spent_ms  # no increment
    assert len(stopped.clocks) == 2 and not any(c.running for c in stopped.clocks)
    assert not first.view.HasField("deadline_ms") and list(first.view.clocks) == list(stopped.clocks)
    assert first.view.result.ended == pb.MATCH_END_RESIGNED
    again = fclient.stub.Resign(rpb.ResignRequest(game_id=game.game_id), metadata=md(game.tokens[resigner]))
    assert list(again.events) == list(first.events) and again.view == first.view
    watched = _watch(fclient, game, game.spectator, lambda e: False)
    assert [(e.kind, e.index) for e in watched if e.version == first.version] == \
        [(e.kind, e.index) for e in first.events]  # fmt: skip


# ------------------------------------------------------------------------ firers that die, and a Redis restart


def _in_loop(server: ServerThread, coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` in the referee's own event loop (its thread), and wait for its result."""
    assert server._loop is not None
    return asyncio.run_coroutine_threadsafe(coro, server._loop).result(60)


def test_a_firer_that_dies_between_an_automatic_draw_and_its_discard_leaves_the_discard_to_another(
    private_redis: RedisProcess,
) -> None:
    """docs/design.md: an automatic draw is followed by its discard as a second commit, due at once; "if the
    firer dies between the two, another one plays it" (a new process, which must find the card drawn in the
    log). Meanwhile the seat cannot slip in a discard of its own: the second step is due (OUT_OF_TIME)."""
    with refkit.ServerThread(private_redis.url) as quiet:  # fires nothing by itself
        client = Client(quiet.address)
        try:
            game = _create(client, "gin", TC(per_move=TC.PerMove(limit_ms=100)), AUTO, token=ORGANIZER,
                           preset_deals=[GIN_KNOCK_DEAL])  # fmt: skip
            _wait_past(private_redis.url, client.view(game, game.tokens[1]).deadline_ms)
            referee = quiet.referee
            assert referee is not None
            original = referee.fire_timeout

            async def dying(stored: Any, clock: Any, drawn: int | None = None) -> bool | None:
                if dying.calls:  # type: ignore[attr-defined]
                    raise RuntimeError("the firer's process died here")
                dying.calls += 1  # type: ignore[attr-defined]
                return await original(stored, clock, drawn)

            dying.calls = 0  # type: ignore[attr-defined]

            async def first_step() -> None:
                stored = await referee.store.load(game.game_id)
                assert stored is not None
                referee.fire_timeout = dying  # type: ignore[method-assign]
                try:
                    with pytest.raises(RuntimeError, match="died here"):
                        await referee.fire_timeout(stored, clocks.parse_clock(stored.clock))
                finally:
                    del referee.fire_timeout  # type: ignore[method-assign]

            _in_loop(quiet, first_step())
            view = client.view(game, game.tokens[1])
            assert view.version == 1 and view.phase == pb.PHASE_DISCARD and view.to_act == 1
            assert view.deadline_ms < view.clocks[1].started_ms  # the second step, due at once
            _wait_past(private_redis.url, view.deadline_ms + 1000)  # (ValidateMove: a lower estimate of the clock)
            with expect_error(grpc.StatusCode.FAILED_PRECONDITION, "OUT_OF_TIME"):
                client.move(game, game.tokens[1], move_from_text("discard KC"))
            with expect_error(grpc.StatusCode.FAILED_PRECONDITION, "OUT_OF_TIME"):
                client.stub.ValidateMove(rpb.ValidateMoveRequest(game_id=game.game_id,
                                         move=move_from_text("discard KC")), metadata=md(game.tokens[1]))  # fmt: skip
        finally:
            client.close()
    with refkit.ServerThread(private_redis.url, firer=True) as other:
        client = Client(other.address)
        try:
            events = _watch(client, game, game.spectator, lambda e: e.version == 2 and e.kind == "clock_started")
            v2 = _of_version(events, 2)
            assert [e.kind for e in v2] == ["discarded", "clock_stopped", "clock_started"], [e.kind for e in v2]
            assert v2[0].seat == 1 and v2[0].discarded.card == "2C"  # the card drawn by the first step
            assert [c.auto_moves for c in v2[-1].clocks] == [0, 1]  # one automatic move, not two
            assert [e.kind for e in events].count("timed_out") == 1
            client.stub.Resign(rpb.ResignRequest(game_id=game.game_id), metadata=md(game.tokens[0]))
        finally:
            client.close()


def test_deadlines_that_pass_while_redis_is_down_fire_once_it_is_back(private_redis: RedisProcess) -> None:
    with refkit.ServerThread(private_redis.url, firer=True) as server:
        client = Client(server.address)
        try:
            games = [_create(client, "gin", TC(per_move=TC.PerMove(limit_ms=1500)), FORFEIT) for _ in range(3)]
            deadlines = [client.view(g, g.spectator).deadline_ms for g in games]
            private_redis.stop()  # SIGTERM: the append-only file keeps every game (and the deadline index)
            threading.Event().wait(max(0.0, (max(deadlines) - time.time() * 1000) / 1000) + 0.5)
            private_redis.restart()
            for game, deadline in zip(games, deadlines, strict=True):
                events = refkit.retry_unavailable(lambda g=game: _watch(client, g, g.spectator, lambda e: False),
                                                  seconds=60)  # fmt: skip
                timed_out = [e for e in events if e.kind == "timed_out"]
                assert len(timed_out) == 1 and timed_out[0].timed_out.forfeit
                assert timed_out[0].timed_out.deadline_ms == deadline
                assert events[-1].kind == "match_ended"
                assert events[-1].match_ended.result.ended == pb.MATCH_END_TIME
        finally:
            client.close()


def test_a_replays_initial_view_has_the_clocks_of_version_0(fclient: Client) -> None:
    """README: "Clocks are public. Every view has `clocks` ... and `deadline_ms`". GetReplay's `initial` is the
    referee's view at creation (version 0), when the first decision's clock had started (version 0's
    clock_started): its clocks are those, as `current`'s are the game's now."""
    game = _create(fclient, "gin", TC(per_move=TC.PerMove(limit_ms=600_000)), FORFEIT)
    fclient.move(game, game.tokens[fclient.view(game, game.tokens[0]).to_act], DRAW)
    pages = fclient.replay(game)
    first = next(e for e in pages[0].events if e.version == 0 and e.kind == "clock_started")
    initial = pages[0].initial
    assert list(initial.clocks) == list(first.clocks)
    assert initial.deadline_ms == first.deadline_ms
    now = fclient.view(game, game.tokens[0])
    assert list(pages[-1].current.clocks) == list(now.clocks) and pages[-1].current.deadline_ms == now.deadline_ms
    later = fclient.stub.GetReplay(rpb.GetReplayRequest(game_id=game.game_id, after_version=0),
                                   metadata=md(ORGANIZER))  # fmt: skip
    assert list(later.initial.clocks) == list(first.clocks)  # on every page


# --------------------------------------------------------------------------------------------- the HTTP port


@pytest.mark.parametrize("method", ["SubmitMove", "ValidateMove"])
def test_out_of_time_over_the_http_port(web: ServerThread, method: str) -> None:
    """The HTTP port refuses a move past its deadline as the gRPC port does (this referee fires no timeouts)."""
    client = Client(web.address)
    try:
        game = _create(client, "gin", TC(per_move=TC.PerMove(limit_ms=50)), FORFEIT)
        view = client.view(game, game.tokens[0])
        _wait_past(web.redis_url, view.deadline_ms + 1000)  # (ValidateMove: a lower estimate of Redis's clock)
        request_type = rpb.SubmitMoveRequest if method == "SubmitMove" else rpb.ValidateMoveRequest
        response_type = rpb.SubmitMoveResponse if method == "SubmitMove" else rpb.ValidateMoveResponse
        with httpx.Client(base_url=web.http_url, timeout=30) as http:
            for protocol in ("connect-json", "connect-proto", "grpc-web"):
                got = webkit.call(http, protocol, method, request_type(game_id=game.game_id, move=DRAW),
                                  response_type, game.tokens[view.to_act])  # fmt: skip
                assert (got.status, got.reason) == ("FAILED_PRECONDITION", "OUT_OF_TIME"), (protocol, got)
    finally:
        client.close()


def test_a_connect_watch_carries_the_clock_events_as_grpc_does(fclient: Client, firing: ServerThread) -> None:
    game = _create(fclient, "gin", TC(per_move=TC.PerMove(limit_ms=200)), FORFEIT)
    by_grpc = _watch(fclient, game, game.spectator, lambda e: False)
    with httpx.Client(base_url=firing.http_url, timeout=60) as http:
        parts, end = webkit.watch(http, rpb.WatchGameRequest(game_id=game.game_id, after_version=0, after_index=0),
                                  game.spectator)  # fmt: skip
    assert end is not None and end.status == "OK"
    by_connect = [p.message.event for p in parts if p.message.HasField("event")]
    assert by_connect == by_grpc
    assert [e.kind for e in by_grpc][-4:] == ["timed_out", "hand_ended", "clock_stopped", "match_ended"]


# ------------------------------------------------------------------------------------ several firing referees


def test_three_firing_referees_play_each_timeout_once(own_redis: RedisProcess, firing: ServerThread) -> None:
    """Three referees fire the deadlines of one Redis (each polls every 0.1 s): games nobody moves in, under
    auto_move, each decision timed out once: every timeout's version has one timed_out, an automatic draw is
    followed by exactly one discard (its second step, no timeout of its own), then the forfeit ends the match."""
    with refkit.ServerThread(own_redis.url, firer=True) as second, \
            refkit.ServerThread(own_redis.url, firer=True) as third:  # fmt: skip
        clients = [Client(s.address) for s in (firing, second, third)]
        try:
            games = [
                _create(clients[i % 3], profile, TC(per_move=TC.PerMove(limit_ms=150)),
                        pb.TimeoutPolicy(kind=pb.TimeoutPolicy.KIND_AUTO_MOVE, max_auto_moves=2), players)
                for i, (profile, players) in enumerate([("gin", 2), ("rummy", 3), ("gin-standard", 2)] * 3)
            ]  # fmt: skip
            for i, game in enumerate(games):
                events = _watch(clients[(i + 1) % 3], game, game.spectator, lambda e: False, seconds=120)
                assert events[-1].kind == "match_ended", [e.kind for e in events]
                versions = sorted({e.version for e in events if e.version > 0})
                assert versions == list(range(1, versions[-1] + 1))
                for v in versions:
                    kinds = [e.kind for e in _of_version(events, v)]
                    assert kinds.count("timed_out") <= 1
                    if "drew" in kinds:  # an automatic draw: the next version is its discard alone
                        assert kinds[:2] == ["timed_out", "auto_moved"], kinds
                        after = [e.kind for e in _of_version(events, v + 1)]
                        assert after[0] == "discarded" and "timed_out" not in after, after
                    elif kinds[0] != "discarded":
                        assert kinds[0] == "timed_out", kinds
                autos = [e for e in events if e.kind == "auto_moved"]
                loser = next(e for e in events if e.kind == "timed_out" and e.timed_out.forfeit).seat
                assert [e.auto_moved.auto_moves for e in autos if e.seat == loser] == [1, 2]
                assert events[-1].match_ended.result.ended == pb.MATCH_END_TIME
        finally:
            for c in clients:
                c.close()


def test_a_fischer_clock_gets_its_increment_after_an_automatic_move_but_not_after_the_forfeit(
    fclient: Client,
) -> None:
    """docs/rules.md section 10 (and the proto's Clock): increment_ms is added after each decision, "after an
    automatic move too"; the automatic draw's discard (its second step) spends nothing; the forfeit adds none."""
    game = _create(fclient, "gin", TC(clock=TC.Clock(initial_ms=200, increment_ms=150)),
                   pb.TimeoutPolicy(kind=pb.TimeoutPolicy.KIND_AUTO_MOVE, max_auto_moves=1))  # fmt: skip
    first = fclient.view(game, game.tokens[0]).to_act
    events = _watch(fclient, game, game.spectator, lambda e: False)
    stops = [(e.version, e.seat, e.clock_stopped.spent_ms, e.clock_stopped.remaining_ms) for e in events
             if e.kind == "clock_stopped"]  # fmt: skip
    # the first seat: timed out (draw), its discard; the other: the same; then the first seat's forfeit
    assert [(v, s) for v, s, _, _ in stops] == [(1, first), (2, first), (3, 1 - first), (4, 1 - first), (5, first)]
    (_, _, spent1, left1), (_, _, spent2, left2), (_, _, spent3, left3), _, (_, _, _, left5) = stops
    assert spent1 >= 200 and left1 == 150  # all of its clock spent, then the increment
    assert spent2 == 0 and left2 == 150  # the second step: nothing spent, no increment
    assert spent3 >= 200 and left3 == 150
    assert left5 == 0  # out of its 150 ms again: lost on time, no increment
    started = next(e for e in events if e.kind == "clock_started" and e.version == 4)
    assert started.seat == first and started.deadline_ms == started.clock_started.started_ms + 150


# ----------------------------------------------------------------------------------- the SDK's seat runner


class _Watched(RefereeClient):
    """The SDK's blocking client, noting each move the referee refused OUT_OF_TIME."""

    def __init__(self, address: str) -> None:
        super().__init__(address)
        self.out_of_time = threading.Event()

    def submit_move(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        try:
            return super().submit_move(*args, **kwargs)
        except RefereeError as err:
            if err.reason == "OUT_OF_TIME":
                self.out_of_time.set()
            raise


class _LateOnce:
    """A bot whose first answer comes once its decision is due in Redis's clock (before any timeout fires);
    quick ever after."""

    name = "late-once"

    def __init__(self, redis_url: str) -> None:
        self.redis_url = redis_url
        self.inner = make_bot("random", 7)
        self.asked = 0

    def choose(self, view: View, legal: Sequence[engine.Move]) -> engine.Move:
        self.asked += 1
        if self.asked == 1:
            assert view.deadline_ms is not None
            _wait_past(self.redis_url, view.deadline_ms)
        return self.inner.choose(view, legal)

    def observe(self, event: Mapping[str, Any]) -> None:
        pass


def test_the_runner_waits_for_the_referees_policy_after_an_out_of_time_refusal(private_redis: RedisProcess) -> None:
    """README "Your time": a bot still thinking when its decision is due is left behind once the referee has
    applied the policy, and the runner goes on from the game as it is. A bot that answered just after its
    deadline, before the referee's timeout (here: before any referee fires timeouts), was refused OUT_OF_TIME;
    the runner counted that as a refusal of the move, and with max_rejections 0 (the default, and the
    tournament's) forfeited the seat: it stopped playing, though the referee's automatic move came next."""
    with refkit.ServerThread(private_redis.url) as quiet:
        sdk = _Watched(quiet.address)
        try:
            game = sdk.create_game("gin", ["Late", "Fine"], time_control=PerMove(0.3),
                                   timeout_policy=TimeoutPolicy("auto_move", 3))  # fmt: skip
            seat = sdk.get_game(game.game_id, token=game.tokens[0]).snapshot.to_act
            assert seat is not None
            bot = _LateOnce(private_redis.url)
            stop = threading.Event()
            results: dict[int, SeatResult] = {}
            threads = [
                threading.Thread(target=lambda s=s, b=b, c=c: results.__setitem__(s, play_seat(
                    c, game.game_id, game.tokens[s], b, idle_check=1.0, stop=stop)), daemon=True)
                for s, b, c in ((seat, bot, sdk), (1 - seat, make_bot("random", 8), quiet.address))
            ]  # fmt: skip
            for t in threads:
                t.start()
            assert sdk.out_of_time.wait(60), "the late answer was never refused"
            # only now does a referee fire timeouts: the runner must have waited for its automatic move
            with refkit.ServerThread(private_redis.url, firer=True):
                refkit.wait_for(lambda: bot.asked >= 4 or not threads[0].is_alive(), "played on")
                stop.set()
                for t in threads:
                    t.join(60)
                    assert not t.is_alive(), "a seat's runner never stopped"
        finally:
            sdk.close()
    late = results[seat]
    assert not late.forfeit, late.forfeit_reason
    assert late.rejected == 0 and late.late == 1
    assert late.moves > 0  # it played on after the referee's automatic move


def test_a_delayed_spectator_gets_every_timeouts_events_in_order(fclient: Client) -> None:
    """README "Spectator delay": a delayed watch gets each event once its version is released, late but complete
    and in order, everything at the match's end: the timeouts' events too (timed_out, auto_moved, the clocks)."""
    game = _create(fclient, "gin-standard", TC(per_move=TC.PerMove(limit_ms=200)), AUTO,
                   spectator_delay=pb.SpectatorDelay(moves=3))  # fmt: skip
    stream = fclient.stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id), metadata=md(game.spectator),
                                    timeout=60)  # fmt: skip
    delayed = list(stream)
    assert delayed[0].HasField("snapshot")
    events = [r.event for r in delayed[1:]]
    everything = _watch(fclient, game, game.tokens[0], lambda e: False)
    public = [(e.version, e.index, e.kind) for e in everything if e.version > delayed[0].snapshot.version]
    assert [(e.version, e.index, e.kind) for e in events] == public
    assert events[-1].kind == "match_ended"
    assert {"timed_out", "auto_moved", "clock_started", "clock_stopped"} <= {e.kind for e in events}
