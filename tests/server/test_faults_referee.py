"""A referee killed (SIGKILL) with commits in flight, and the subscriber connection of a referee's watch feeds cut
by Redis (CLIENT KILL TYPE pubsub) while games are watched: through real `rummy-referee serve` processes (or the
in-process referee) and a real redis-server the test starts itself. Every wait is on a condition, with a generous
deadline; nothing is timed.

README "Scale out": a referee keeps nothing that matters in memory, every move is one Lua commit, and a move resent
after UNAVAILABLE goes to another referee with the same request id. design.md (WatchGame): "A notification can be
missed only while the subscriber connection is down; when it is made again, every channel is subscribed again and
each acknowledgement reads its feed again from its cursor" (no gap, no duplicate)."""

from __future__ import annotations

import random
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import redis

from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.redis_launcher import RedisProcess
from server.store import game_key, log_key
from tests.kit import ServerProcess, two_referees
from tests.server import refkit
from tests.server.refkit import ORGANIZER, Client, Game, ServerThread, bot_move, md, retry_unavailable, wait_for

Position = tuple[int, int]
GAMES = 6


@pytest.fixture
def pair(private_redis: RedisProcess, tmp_path: Path) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    """Two `serve` processes over the test's own Redis: ``a`` is the one to kill."""
    yield from two_referees(private_redis.url, tmp_path, ["--no-bots"])



def _send_until_answered(client: Client, request: rpb.SubmitMoveRequest, token: str) -> rpb.SubmitMoveResponse:
    """The move sent to ``client``'s referee until it answers (UNAVAILABLE, DEADLINE_EXCEEDED: sent again)."""
    return retry_unavailable(lambda: client.stub.SubmitMove(request, metadata=md(token), timeout=10), 60,
                             also=(grpc.StatusCode.DEADLINE_EXCEEDED,))  # fmt: skip


@pytest.mark.parametrize("fault", ["SIGKILL", "SIGSTOP"])
def test_a_referee_killed_or_paused_with_commits_in_flight_leaves_every_game_whole_and_each_resend_applied_once(
    private_redis: RedisProcess, pair: tuple[ServerProcess, ServerProcess], fault: str
) -> None:
    """Six games played as fast as they go through referee A, which is SIGKILLed (or SIGSTOPped: paused, its calls
    past their deadline) mid-play: the move each game had in flight (sent to A, answered by nobody) is resent with
    its request_id to referee B until answered, and the games go on there. Then (a paused A let go on again first,
    with whatever it had read meanwhile) each game's version is the number of moves answered, its log holds each
    answered move once, in order (the replay's events are the answers' events), and every request resent to B
    once more (and to A, when it lives) gets its first answer byte for byte, including the answers A gave before."""
    a, b = pair
    a_timeout = 30 if fault == "SIGKILL" else 8  # a paused referee answers no call: its callers give up
    to_a, to_b = Client(a.address), Client(b.address)
    direct = redis.Redis.from_url(private_redis.url)
    killed = threading.Event()
    errors: list[BaseException] = []
    answered: dict[str, list[tuple[rpb.SubmitMoveRequest, str, rpb.SubmitMoveResponse]]] = {}
    counts = [0] * GAMES
    cut: list[str] = []  # the games whose move in flight to A got no answer
    try:
        games = [to_b.create("gin", token=ORGANIZER, seed=bytes([n + 1]) * 16) for n in range(GAMES)]

        def play(n: int, game: Game) -> None:
            rng = random.Random(n)
            mine = answered.setdefault(game.game_id, [])
            after_kill = 0
            try:
                while after_kill < 6:
                    view = to_b.view(game, game.tokens[0])
                    if view.phase == pb.PHASE_MATCH_OVER:
                        return
                    token = game.tokens[view.to_act]
                    move = bot_move(to_b.view(game, token), rng)
                    request = rpb.SubmitMoveRequest(game_id=game.game_id, move=move, request_id=f"m{len(mine)}")
                    if killed.is_set():
                        answer = _send_until_answered(to_b, request, token)
                        after_kill += 1
                    else:
                        try:
                            answer = to_a.stub.SubmitMove(request, metadata=md(token), timeout=a_timeout)
                        except grpc.RpcError:
                            assert killed.is_set(), "referee A refused a move before it was killed"
                            cut.append(game.game_id)
                            answer = _send_until_answered(to_b, request, token)  # the move A had in flight
                    mine.append((request, token, answer))
                    counts[n] += 1
            except BaseException as exc:  # reported by the test's thread
                errors.append(exc)

        threads = [threading.Thread(target=play, args=(n, g), daemon=True) for n, g in enumerate(games)]
        for t in threads:
            t.start()
        wait_for(lambda: min(counts) >= 5 or bool(errors), "every game played moves through referee A", 60)
        assert not errors, errors
        killed.set()  # (first: a move refused by A from now on is one it had in flight)
        assert a.process is not None
        if fault == "SIGKILL":
            a.kill()  # mid-play: commits of several games are in flight
        else:
            a.process.send_signal(signal.SIGSTOP)
        try:
            for t in threads:
                t.join(120)
        finally:
            if fault == "SIGSTOP":
                a.process.send_signal(signal.SIGCONT)
        assert not any(t.is_alive() for t in threads), "a game's player never finished"
        assert not errors, errors
        survivors = [to_b] if fault == "SIGKILL" else [to_b, to_a]
        print(f"moves answered: {sum(counts)}; in flight to referee A at the fault: {len(cut)}")

        for game in games:
            mine = answered[game.game_id]
            assert [answer.version for _, _, answer in mine] == list(range(1, len(mine) + 1)), game.game_id
            version = len(mine)
            assert to_b.view(game, game.tokens[0]).version == version
            assert direct.hget(game_key(game.game_id), "version") == str(version).encode()
            assert direct.llen(log_key(game.game_id)) == version + 1  # the deal, then each move once
            stored = [(e.version, e.index, e.kind, e.seat) for page in to_b.replay(game) for e in page.events
                      if e.version]  # fmt: skip
            assert stored == [(e.version, e.index, e.kind, e.seat) for _, _, answer in mine for e in answer.events]
            for request, token, answer in mine:  # every answer again, from each living referee
                for referee in survivors:
                    again = _send_until_answered(referee, request, token)
                    assert again.SerializeToString(deterministic=True) == answer.SerializeToString(deterministic=True)
            assert to_b.view(game, game.tokens[0]).version == version  # and nothing applied by the resends
    finally:
        killed.set()
        to_a.close()
        to_b.close()
        direct.close()


class _Watch:
    """One WatchGame stream from the start (its snapshot first), read on a thread of its own."""

    def __init__(self, client: Client, game: Game, token: str) -> None:
        self.got: list[Position] = []
        self.snapshot: int | None = None
        self.end: tuple[str, str | None] | None = None
        self.stream = client.stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id), metadata=md(token),
                                            timeout=120)  # fmt: skip
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            for message in self.stream:
                if message.HasField("snapshot"):
                    self.snapshot = message.snapshot.version
                else:
                    self.got.append((message.event.version, message.event.index))
            self.end = ("OK", None)
        except grpc.RpcError as exc:
            self.end = (exc.code().name, refkit.reason_of(exc))


def _subscribers(direct: redis.Redis) -> int:
    return sum(1 for c in direct.client_list(_type="pubsub"))


def test_a_subscriber_connection_cut_by_redis_is_made_again_and_the_watches_go_on_with_no_gap_or_duplicate(
    private_redis: RedisProcess,
) -> None:
    """Redis cuts the referee's subscriber connection (CLIENT KILL TYPE pubsub) three times, each time just
    before a move is committed, whose notification is then published to nobody. Redis stays up, so the
    subscriber is made again at once: the streams of both seats stay open, and each gets every event of the match
    exactly once, in order, ending after match_ended."""
    direct = redis.Redis.from_url(private_redis.url)
    with ServerThread(private_redis.url) as server:
        client = Client(server.address)
        try:
            game = client.create("gin", token=ORGANIZER, seed=b"subscriber-cut-0", match=rpb.MatchSettings(
                target_score=30))  # fmt: skip
            rng = random.Random(5)
            watches = [_Watch(client, game, game.tokens[seat]) for seat in (0, 1)]
            wait_for(lambda: all(w.snapshot == 0 for w in watches), "the streams started")
            wait_for(lambda: _subscribers(direct) >= 1, "the referee subscribed")
            refkit.play(client, game, rng, moves=2)
            wait_for(lambda: all(len(w.got) >= 2 for w in watches), "the streams got the first moves")
            for _ in range(3):
                killed = direct.client_kill_filter(_type="pubsub")
                assert killed >= 1
                refkit.play(client, game, rng, moves=1)  # published while the subscriber may be down
                version = client.view(game, game.tokens[0]).version
                wait_for(lambda: all(w.got and w.got[-1][0] >= version for w in watches),  # noqa: B023
                         "the streams got the move committed while the subscriber was cut")  # fmt: skip
                assert all(w.end is None for w in watches), [w.end for w in watches]
                refkit.play(client, game, rng, moves=2)
            refkit.play(client, game, rng)  # to the end of the match
            for w in watches:
                w.thread.join(60)
                assert not w.thread.is_alive(), "a stream did not end with the match"
            positions = [(e.version, e.index) for page in client.replay(game) for e in page.events if e.version]
            for w in watches:
                assert w.end == ("OK", None), w.end
                assert w.got == positions
        finally:
            client.close()
            direct.close()
