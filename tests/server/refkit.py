"""Test kit for the referee: a real server on port 0 in a background thread, a small client, deals, a bot.

The server is the production one, wired by server.app's ``build_referee`` from server.settings (tests/kit.py)
over a real Redis; only its event loop runs in a thread of the test process so that plain blocking gRPC clients
can drive it.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc
import redis
from google.rpc import error_details_pb2  # type: ignore[import-untyped]
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status

import engine
from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from rummy_pb.rummy.v1 import referee_pb2_grpc
from server.grpc_api import SERVICE_NAME
from server.limits import Limits
from tests import kit

ORGANIZER = kit.ORGANIZER
TEST_LIMITS = kit.TEST_LIMITS  # far above the tests' rates, still on (every call goes through the limiter)
ALL_CARDS = [engine.card_text(c) for c in range(52)]
TEST_STORAGE_TIMEOUT_S = kit.TEST_STORAGE_TIMEOUT_S
T = TypeVar("T")


class ServerThread(kit.ServerThread):
    """The referee on 127.0.0.1:<free port>, its asyncio loop in a daemon thread (tests/kit.py: the production
    wiring, server.app). With ``http``, also its HTTP port (Connect, gRPC-Web: server.http_server) on another free
    port, in the same loop, as `serve` runs it."""

    def __init__(self, redis_url: str, *, organizer_token: str | None = ORGANIZER, finished_ttl_s: int = 3600,
                 max_attempts: int = 8, limits: Limits = TEST_LIMITS, max_open_games: int = 100_000,
                 unplayed_ttl_s: int = 3600, also_ipv6: bool = False,
                 store_options: dict[str, Any] | None = None, http: bool = False,
                 cors_origins: Sequence[str] = (), firer: bool = False) -> None:  # fmt: skip
        self.limits = limits
        settings = kit.referee_settings(
            redis_url, organizer_token=organizer_token, limits=limits, max_open_games=max_open_games,
            finished_ttl_s=finished_ttl_s, unplayed_ttl_s=unplayed_ttl_s, http=http, cors_origins=cors_origins,
            also_ipv6=also_ipv6, max_attempts=max_attempts, firer=firer, **(store_options or {}),
        )  # fmt: skip
        super().__init__(settings)


def md(token: str | None) -> tuple[tuple[str, str], ...]:
    """Call metadata carrying ``token``."""
    return () if token is None else (("authorization", f"Bearer {token}"),)


def reason_of(exc: grpc.RpcError) -> str | None:
    """The ErrorInfo reason of a failed call (None if it has no rich status)."""
    status = rpc_status.from_call(exc)  # type: ignore[arg-type]
    if status is None:
        return None
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            assert info.domain == "rummy-referee"
            return str(info.reason)
    return None


@contextlib.contextmanager
def expect_error(code: grpc.StatusCode, reason: str | None = None) -> Iterator[list[grpc.RpcError]]:
    """Assert the block fails with ``code`` (and ``reason`` when given); yields a list holding the error."""
    caught: list[grpc.RpcError] = []
    try:
        yield caught
    except grpc.RpcError as exc:
        caught.append(exc)
        assert exc.code() == code, f"expected {code}, got {exc.code()}: {exc.details()}"
        got = reason_of(exc)
        assert got is not None, "no google.rpc.ErrorInfo in the status"
        if reason is not None:
            assert got == reason, f"expected reason {reason}, got {got}: {exc.details()}"
        return
    raise AssertionError(f"expected {code}, the call succeeded")


@dataclass
class Game:
    """A created game and its tokens."""

    game_id: str
    tokens: dict[int, str]
    spectator: str
    created: rpb.CreateGameResponse


@dataclass
class Client:
    """A blocking client of one server."""

    address: str
    channel: grpc.Channel = field(init=False)
    stub: referee_pb2_grpc.RefereeServiceStub = field(init=False)

    def __post_init__(self) -> None:
        self.channel = grpc.insecure_channel(self.address)
        self.stub = referee_pb2_grpc.RefereeServiceStub(self.channel)

    def close(self) -> None:
        self.channel.close()

    def create(self, profile: str = "gin", names: Sequence[str] = ("Ann", "Bob"), *, token: str | None = None,
               **fields: Any) -> Game:  # fmt: skip
        request = rpb.CreateGameRequest(
            profile=profile, seats=[pb.SeatSpec(display_name=n, kind=pb.SEAT_KIND_BOT) for n in names], **fields
        )
        created = self.stub.CreateGame(request, metadata=md(token))
        return Game(created.game_id, {t.seat: t.token for t in created.seat_tokens}, created.spectator_token,
                    created)  # fmt: skip

    def view(self, game: Game, token: str) -> pb.GameView:
        view: pb.GameView = self.stub.GetGame(rpb.GetGameRequest(game_id=game.game_id), metadata=md(token)).view
        return view

    def move(self, game: Game, token: str, move: pb.Move, **fields: Any) -> rpb.SubmitMoveResponse:
        response: rpb.SubmitMoveResponse = self.stub.SubmitMove(
            rpb.SubmitMoveRequest(game_id=game.game_id, move=move, **fields), metadata=md(token)
        )
        return response

    def replay(self, game: Game, token: str | None = ORGANIZER) -> list[rpb.GetReplayResponse]:
        """Every page of the replay."""
        pages = []
        request = rpb.GetReplayRequest(game_id=game.game_id)
        while True:
            page = self.stub.GetReplay(request, metadata=md(token))
            pages.append(page)
            if not page.HasField("next_after_version"):
                return pages
            request = rpb.GetReplayRequest(game_id=game.game_id, after_version=page.next_after_version)


def move_from_text(text: str) -> pb.Move:
    """A Move message from the engine's text form ("discard TD", "knock 5C", "declare best", ...)."""
    import wire

    return wire.move_to_proto(engine.parse_move(text))


def deal(dealer: int, hands: Sequence[str], upcard: str, stock_top: str = "") -> pb.PresetDeal:
    """A preset deal from card texts: the named hands and upcard; ``stock_top`` lists the first cards drawn from
    the stock (top first); the other cards lie beneath them in deck order."""
    hand_cards = [h.split() for h in hands]
    top = stock_top.split()
    used = {c for h in hand_cards for c in h} | {upcard} | set(top)
    rest = [c for c in ALL_CARDS if c not in used]
    return pb.PresetDeal(
        dealer=dealer, hands=[pb.Cards(cards=h) for h in hand_cards], upcard=upcard, stock=rest + top[::-1]
    )


def bot_move(view: pb.GameView, rng: random.Random) -> pb.Move:
    """A quick, legal, match-finishing choice among the view's legal moves: go out when possible, meld and lay
    off, discard the card that leaves the least deadwood, take a discard now and then (the Gin defender
    declares best)."""
    moves = list(view.legal_moves)
    assert moves, f"no legal move in phase {view.phase}"
    kinds: dict[str, list[pb.Move]] = {}
    for m in moves:
        kinds.setdefault(str(m.WhichOneof("move")), []).append(m)
    for preferred in ("big_gin", "knock", "declare", "meld", "lay_off"):
        if preferred in kinds:
            return rng.choice(kinds[preferred])
    if "draw_discard" in kinds and rng.random() < 0.3:
        return kinds["draw_discard"][0]
    for first in ("draw_stock", "pass_turn"):
        if first in kinds:
            return kinds[first][0]
    if "discard" in kinds:
        hand = engine.mask_of(engine.parse_cards(view.hand))
        return min(
            kinds["discard"],
            key=lambda m: (engine.min_deadwood(hand & ~(1 << engine.parse_card(m.discard.card))), rng.random()),
        )
    return rng.choice(moves)


def play(client: Client, game: Game, rng: random.Random, moves: int | None = None) -> None:
    """Bot moves (bot_move, each by the seat to act): ``moves`` of them, or to the end of the match."""
    play_over([client], game, rng, moves)


def play_over(clients: Sequence[Client], game: Game, rng: random.Random, moves: int | None = None) -> None:
    """Bot moves sent to the referees in turn: ``moves`` of them, or to the end of the match."""
    n = 0
    while moves is None or n < moves:
        c = clients[n % len(clients)]
        view = c.view(game, game.tokens[0])
        if view.phase == pb.PHASE_MATCH_OVER:
            return
        c.move(game, game.tokens[view.to_act], bot_move(c.view(game, game.tokens[view.to_act]), rng))
        n += 1


def create_timed(client: Client, profile: str, control: pb.TimeControl, policy: pb.TimeoutPolicy | None = None,
                 players: int = 2, token: str | None = None, **fields: Any) -> Game:  # fmt: skip
    """A game of human seats P0, P1, ... under ``control`` (and ``policy``: else the referee's default), open to
    spectators."""
    request = rpb.CreateGameRequest(
        profile=profile, seats=[pb.SeatSpec(display_name=f"P{i}") for i in range(players)], time_control=control,
        allow_spectators=True, **fields,
    )  # fmt: skip
    if policy is not None:
        request.timeout_policy.CopyFrom(policy)
    created = client.stub.CreateGame(request, metadata=md(token))
    return Game(created.game_id, {t.seat: t.token for t in created.seat_tokens}, created.spectator_token, created)


def redis_ms(url: str) -> int:
    """Redis's clock (TIME) in milliseconds: the clock the referee's deadlines are in."""
    r = redis.Redis.from_url(url)
    try:
        seconds, micros = r.time()
    finally:
        r.close()
    return int(seconds) * 1000 + int(micros) // 1000


def wait_past(url: str, deadline_ms: int, seconds: float = 30.0) -> None:
    """Wait until Redis's clock is past ``deadline_ms`` (the failure bound: ``seconds`` of Redis's clock)."""
    limit = redis_ms(url) + int(seconds * 1000)
    while (now := redis_ms(url)) <= deadline_ms:
        assert now < limit, "Redis's clock never passed the deadline"
        threading.Event().wait(min(0.02, (deadline_ms - now + 1) / 1000))


# Gin, dealer 0, seat 1 first. Seat 1 draws 2C and knocks with KC: melds AS-2S-3S, 4H-5H-6H, 7D-8D-9D, deadwood
# 2C = 2. Seat 0 melds JS-QS-KS, lays off 4S, 7H, TD, keeps 5C 5D 9C 8C = 27. Knocker scores 27 - 2 = 25.
KNOCKER = "AS 2S 3S 4H 5H 6H 7D 8D 9D KC"
DEFENDER = "4S 7H TD JS QS KS 5C 5D 9C 8C"
GIN_KNOCK_DEAL = deal(0, [DEFENDER, KNOCKER], "QC", "2C")
GIN_KNOCK_MOVES = ((1, "draw stock"), (1, "knock KC"), (0, "declare best"))


def drawn_knock_game(client: Client) -> Game:
    """A game of GIN_KNOCK_DEAL after its first move (seat 1 drew 2C; it is to discard, e.g. KC): the referee's
    connections are open and it knows Redis's clock, so its next commit is sent at once (the fault tests')."""
    game = client.create("gin", token=ORGANIZER, preset_deals=[GIN_KNOCK_DEAL])
    assert client.move(game, game.tokens[1], move_from_text("draw stock")).version == 1
    return game


def wait_for(condition: Callable[[], bool], what: str, seconds: float = 30.0) -> None:
    """Wait until ``condition()`` holds; fail the test, saying it never did ``what``, after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"never {what}"
        time.sleep(0.05)


def retry_unavailable(call: Callable[[], T], seconds: float = 30.0, also: tuple[grpc.StatusCode, ...] = ()) -> T:
    """``call`` until it stops failing UNAVAILABLE (Redis has just come back; or with a status of ``also``), sent
    again as the SDK does; after ``seconds``, its failure is the test's."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return call()
        except grpc.RpcError as exc:
            if (exc.code() != grpc.StatusCode.UNAVAILABLE and exc.code() not in also) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def evalsha_calls(r: redis.Redis) -> int:
    """How many EVALSHA (the commit's, among others) the Redis behind ``r`` has run since it started."""
    return int(r.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0))


def health_status(address: str) -> int | None:
    """The referee's health status (grpc.health.v1 Check of its service), None when the call fails."""
    with grpc.insecure_channel(address) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=5
            )
        except grpc.RpcError:
            return None
    return int(reply.status)
