"""docs/design.md's status table against the running referee: every documented (status, reason) pair is provoked
through the real gRPC server and a real Redis, and must come back exactly so (the status, and the reason in the
google.rpc.ErrorInfo). Pairs that no test can provoke are listed in EXEMPT with the reason.

Moves that should be refused are sent with ValidateMove where that suffices (same checks, nothing changes).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
import redis

from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.redis_launcher import RedisProcess, free_port
from server.store import game_key
from tests.server.refkit import (
    GIN_KNOCK_DEAL,
    ORGANIZER,
    Client,
    Game,
    ServerThread,
    deal,
    expect_error,
    md,
    move_from_text,
    wait_past,
)

DRAW = move_from_text("draw stock")
DESIGN_MD = Path(__file__).resolve().parents[2] / "docs" / "design.md"


def documented_pairs() -> list[tuple[str, str]]:
    """(status, reason) for every backticked reason code in the rows of design.md's status table."""
    text = DESIGN_MD.read_text()
    table = text[text.index("**Statuses**"):]
    pairs = []
    for line in table.splitlines()[1:]:
        m = re.match(r"^\| ([A-Z_]+) \| (.*) \|$", line)
        if m is None:
            if pairs and not line.startswith("|"):
                break
            continue
        pairs += [(m.group(1), code) for code in re.findall(r"`([A-Z][A-Z_]+)`", m.group(2))]
    return pairs


@dataclass
class Ctx:
    """What a provocation may use: the session's referee and a client of it, and the suite's Redis."""

    client: Client
    server: ServerThread
    redis: RedisProcess

    def validate(self, game: Game, token: str, move: pb.Move | str, **fields: object) -> None:
        """ValidateMove (the move as a message, or in the engine's text form)."""
        message = move_from_text(move) if isinstance(move, str) else move
        self.client.stub.ValidateMove(
            rpb.ValidateMoveRequest(game_id=game.game_id, move=message, **fields), metadata=md(token)
        )

    def play(self, game: Game, *moves: tuple[int, str]) -> None:
        """Submit moves (seat, text) that must succeed."""
        for seat, text in moves:
            self.client.move(game, game.tokens[seat], move_from_text(text))

    def gin(self, profile: str = "gin", deal_: pb.PresetDeal = GIN_KNOCK_DEAL, **options: object) -> Game:
        """A Gin game from a preset deal (default: refkit's knock deal, seat 1 acts first), spectators allowed."""
        return self.client.create(profile, token=ORGANIZER, preset_deals=[deal_], allow_spectators=True,
                                  options={k: _option(v) for k, v in options.items()})  # fmt: skip


def _option(value: object) -> pb.OptionValue:
    if isinstance(value, bool):
        return pb.OptionValue(bool_value=value)
    if isinstance(value, int):
        return pb.OptionValue(int_value=value)
    return pb.OptionValue(string_value=str(value))


# Rummy, dealer 0, seat 1 first: seat 1 holds the spade run AS..TS, seat 0 holds JS (it extends 7S-TS).
RUMMY_SPADES = "AS 2S 3S 4S 5S 6S 7S 8S 9S TS"
RUMMY_DEAL = deal(0, ["JS AH 3H 5H 7H 9H JH KH 2D 4D", RUMMY_SPADES], "KC", "QD")
RUMMY_DEAL_JS = deal(0, ["QS AH 3H 5H 7H 9H JH KH 2D 4D", RUMMY_SPADES], "KC", "JS")  # seat 1 draws JS
# Gin hands that cannot go gin with one card more: with knock_limit 0 nobody can ever knock.
JUNK_DEAL = deal(0, ["AS 3S 5S 7S 9S JS KS 2H 4H 6H", "8H TH QH AD 3D 5D 7D 9D JD KD"], "2C")


def _rummy(t: Ctx, deal_: pb.PresetDeal, **options: object) -> Game:
    return t.client.create("rummy", token=ORGANIZER, preset_deals=[deal_],
                           options={k: _option(v) for k, v in options.items()})  # fmt: skip


def _last_card(t: Ctx) -> Game:
    """A fiftieth_card game at its last-card phase: the stock is down to 2 after 29 turns of draw-and-discard."""
    game = t.gin(deal_=JUNK_DEAL, stock_end_rule="fiftieth_card", knock_limit=0)
    seat = 1
    for _ in range(29):  # each seat draws from the stock and discards the card drawn: the hands never change
        drawn = t.client.move(game, game.tokens[seat], move_from_text("draw stock")).view.hand
        card = next(c for c in drawn if c not in JUNK_DEAL.hands[seat].cards)
        t.client.move(game, game.tokens[seat], move_from_text(f"discard {card}"))
        seat = 1 - seat
    view = t.client.view(game, game.tokens[seat])
    assert view.phase == pb.PHASE_LAST_CARD and view.stock_size == 2
    return game


def _knocked(t: Ctx, **options: object) -> Game:
    """Refkit's knock deal after seat 1 drew and knocked with KC: seat 0 is to lay off."""
    game = t.gin(**options)
    t.play(game, (1, "draw stock"), (1, "knock KC"))
    return game


def _finished(t: Ctx) -> Game:
    game = t.client.create("gin", token=ORGANIZER, preset_deals=[GIN_KNOCK_DEAL], match=rpb.MatchSettings(
        target_score=25))  # fmt: skip
    t.play(game, (1, "draw stock"), (1, "knock KC"), (0, "declare best"))
    return game


def _watch_first(t: Ctx, game: Game, token: str, **fields: object) -> rpb.WatchGameResponse:
    stream = t.client.stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id, **fields), metadata=md(token))
    try:
        first: rpb.WatchGameResponse = next(stream)
        return first
    finally:
        stream.cancel()


def _shutting_down(t: Ctx) -> None:
    """A watch stream open on a referee that stops ends with UNAVAILABLE SHUTTING_DOWN."""
    own = ServerThread(t.redis.url)
    client = Client(own.address)
    stopper = threading.Thread(target=own.stop)
    try:
        game = client.create("gin")
        stream = client.stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id), metadata=md(game.tokens[0]),
                                       timeout=60)  # fmt: skip
        assert next(stream).HasField("snapshot")
        stopper.start()
        for _ in stream:  # nothing more happens in the game: the next thing the stream gives is its end
            pass
    finally:
        client.close()
        if stopper.ident is not None:
            stopper.join(60)
        own.stop()


def _storage_unavailable(t: Ctx) -> None:
    dead = ServerThread(f"redis://127.0.0.1:{free_port()}/0")
    client = Client(dead.address)
    try:
        client.create("gin")
    finally:
        client.close()
        dead.stop()


def _internal(t: Ctx) -> None:
    game = t.client.create("gin")
    redis.Redis.from_url(t.redis.url).hset(game_key(game.game_id), "state", '{"v": 1, "rules": "TD"}')
    t.client.view(game, game.tokens[0])


def _out_of_time(t: Ctx) -> None:
    # this referee runs no timeout firer: once the deadline has passed in Redis's clock, the move is refused
    created = t.client.stub.CreateGame(rpb.CreateGameRequest(
        seats=SEATS, time_control=pb.TimeControl(per_move=pb.TimeControl.PerMove(limit_ms=50))))  # fmt: skip
    tokens = {s.seat: s.token for s in created.seat_tokens}
    game = Game(created.game_id, tokens, "", created)
    view = t.client.view(game, tokens[0])
    wait_past(t.redis.url, view.deadline_ms)
    t.client.move(game, tokens[view.to_act], DRAW)


def _idempotency_key_reused(t: Ctx) -> None:
    game = t.gin()
    t.client.move(game, game.tokens[1], move_from_text("draw stock"), request_id="key-1")
    t.client.move(game, game.tokens[1], move_from_text("discard KC"), request_id="key-1")


def _then(setup: Callable[[Ctx], Game], seat: int, move: pb.Move | str) -> Callable[[Ctx], None]:
    """Set a game up, then validate ``move`` by ``seat``."""
    def provoke(t: Ctx) -> None:
        game = setup(t)
        t.validate(game, game.tokens[seat], move)
    return provoke


def _drawn(**options: object) -> Callable[[Ctx], Game]:
    """Refkit's knock deal after seat 1 drew 2C from the stock."""
    def setup(t: Ctx) -> Game:
        game = t.gin(**options)
        t.play(game, (1, "draw stock"))
        return game
    return setup


def _after(*moves: tuple[int, str], profile: str = "gin", rummy: pb.PresetDeal | None = None,
           **options: object) -> Callable[[Ctx], Game]:  # fmt: skip
    def setup(t: Ctx) -> Game:
        game = _rummy(t, rummy, **options) if rummy is not None else t.gin(profile, **options)
        t.play(game, *moves)
        return game
    return setup


def _knock_with(melds: list[str] | None) -> pb.Move:
    arrangement = pb.Melds(melds=[pb.Cards(cards=m.split()) for m in melds or ()])
    return pb.Move(knock=pb.Move.Knock(discard="KC", melds=arrangement))


def _create(**fields: object) -> Callable[[Ctx], None]:
    def provoke(t: Ctx) -> None:
        t.client.stub.CreateGame(rpb.CreateGameRequest(**fields), metadata=md(ORGANIZER))
    return provoke


def _with_game(
    call: Callable[[Ctx, Game], object], setup: Callable[[Ctx], Game] | None = None
) -> Callable[[Ctx], None]:
    """Make a game (refkit's knock deal, or ``setup``'s), then make the call."""
    def provoke(t: Ctx) -> None:
        call(t, setup(t) if setup is not None else t.gin())
    return provoke


SEATS = [pb.SeatSpec(display_name="Ann"), pb.SeatSpec(display_name="Bob")]

#: reason -> a call that must fail with that reason (and the status design.md gives it)
PROVOKE: dict[str, Callable[[Ctx], None]] = {
    # INVALID_ARGUMENT
    "MALFORMED_REQUEST": lambda t: t.client.channel.unary_unary("/rummy.v1.RefereeService/GetGame")(
        bytes.fromhex("0a02fffe"), metadata=md("some-token")),  # invalid UTF-8 in game_id
    "INVALID_CARD": _then(_drawn(), 1, pb.Move(discard=pb.Move.Discard(card="ZZ"))),
    "DUPLICATE_CARD": lambda t: t.client.stub.AnalyzeHand(rpb.AnalyzeHandRequest(cards=["AS", "AS"])),
    "BAD_MOVE": _then(_knocked, 0, pb.Move(declare=pb.Move.Declare(best=True, melds=[pb.Cards(cards=["JS", "QS",
                                                                                                   "KS"])]))),
    "UNKNOWN_OPTION": _create(seats=SEATS, options={"no_such_option": pb.OptionValue(bool_value=True)}),
    "INVALID_OPTION": _create(seats=SEATS, options={"defender_deadwood": pb.OptionValue(string_value="all")}),
    "UNKNOWN_PROFILE": _create(profile="canasta", seats=SEATS),
    "INVALID_DEAL": _create(seats=SEATS, preset_deals=[pb.PresetDeal(dealer=0, upcard="AS")]),
    "INVALID_SEED": _create(seats=SEATS, seed=b"too short"),
    "MISSING_MOVE": _with_game(lambda t, g: t.client.stub.SubmitMove(rpb.SubmitMoveRequest(game_id=g.game_id),
                                                                     metadata=md(g.tokens[1]))),
    "INVALID_GAME_ID": lambda t: t.client.stub.GetGame(rpb.GetGameRequest(game_id="no such/id"),
                                                       metadata=md("some-token")),
    "INVALID_NAME": _create(seats=[pb.SeatSpec(display_name=""), pb.SeatSpec(display_name="Bob")]),
    "INVALID_SEATS": _create(profile="rummy", seats=[pb.SeatSpec(display_name=f"P{i}") for i in range(7)]),
    "UNKNOWN_BOT": _create(seats=[SEATS[0], pb.SeatSpec(bot="deep-blue")]),
    "BOT_SEAT_OPEN": _create(seats=[SEATS[0], pb.SeatSpec(bot="gin", open=True)]),
    "INVALID_SEAT": lambda t: t.client.stub.JoinGame(rpb.JoinGameRequest(
        game_id=t.client.stub.CreateGame(rpb.CreateGameRequest(
            seats=[SEATS[0], pb.SeatSpec(open=True)])).game_id, seat=5, display_name="Eve")),
    "INVALID_REQUEST_ID": _with_game(lambda t, g: t.client.move(g, g.tokens[1], DRAW, request_id="x" * 129)),
    "INVALID_PAGE_SIZE": _with_game(lambda t, g: t.client.stub.GetReplay(
        rpb.GetReplayRequest(game_id=g.game_id, max_events=5000), metadata=md(ORGANIZER))),
    "INVALID_HAND_SIZE": lambda t: t.client.stub.AnalyzeHand(rpb.AnalyzeHandRequest(cards=[])),
    "VERSION_AHEAD": _with_game(lambda t, g: _watch_first(t, g, g.tokens[0], after_version=99)),
    "INVALID_POSITION": _with_game(lambda t, g: _watch_first(t, g, g.tokens[0], after_index=1)),
    "INVALID_TIME_CONTROL": _create(seats=SEATS, time_control=pb.TimeControl(
        per_move=pb.TimeControl.PerMove(limit_ms=0))),
    # FAILED_PRECONDITION
    "NOT_YOUR_TURN": _then(_after(), 0, "draw stock"),
    "GAME_OVER": _then(_finished, 1, "draw stock"),
    "WRONG_PHASE": _then(_after(), 1, "discard KC"),
    "CARD_NOT_IN_HAND": _then(_drawn(), 1, "discard 4S"),
    "DISCARD_TAKEN_CARD": _then(_after((1, "draw discard")), 1, "discard QC"),
    "MUST_DRAW_STOCK": _then(_after((1, "pass"), (0, "pass"), profile="gin-standard"), 1, "draw discard"),
    "KNOCK_OVER_LIMIT": _then(_drawn(), 1, _knock_with(None)),
    "INVALID_MELD": _then(_drawn(), 1, _knock_with(["AS 2S 4H"])),
    "BIG_GIN_DISABLED": _then(_drawn(big_gin_bonus=0), 1, pb.Move(big_gin=pb.Move.BigGin())),
    "NOT_ALL_MELDED": _then(_drawn(), 1, pb.Move(big_gin=pb.Move.BigGin())),
    "MUST_KNOCK_WITH_LAST_CARD": _with_game(lambda t, g: t.validate(g, _to_act(t, g), "draw discard"), _last_card),
    "STOCK_END": _with_game(lambda t, g: t.validate(g, _to_act(t, g), "draw stock"), _last_card),
    "UNKNOWN_MELD": _then(_knocked, 0, "layoff 4S 99"),
    "CANNOT_LAY_OFF": _then(_knocked, 0, "layoff 5C 0"),
    "LAYOFF_REQUIRES_OWN_MELD": _then(
        _after((1, "draw stock"), (1, "meld 7S 8S 9S TS"), (1, "discard QD"), (0, "draw stock"), rummy=RUMMY_DEAL,
               layoff_requires_own_meld=True), 0, "layoff JS 0"),
    "MELD_LIMIT_REACHED": _then(_after((1, "draw stock"), (1, "meld AS 2S 3S"), rummy=RUMMY_DEAL,
                                       max_melds_per_turn=1), 1, "meld 4S 5S 6S"),
    "MUST_DISCARD_TO_GO_OUT": _then(_after((1, "draw stock"), rummy=RUMMY_DEAL_JS, must_discard_to_go_out=True), 1,
                                    f"meld {RUMMY_SPADES} JS"),
    "WOULD_STRAND_TAKEN_CARD": _then(_after((1, "draw discard"), rummy=RUMMY_DEAL), 1, f"meld {RUMMY_SPADES}"),
    "OUT_OF_TIME": _out_of_time,
    "SEAT_TAKEN": _with_game(lambda t, g: t.client.stub.JoinGame(
        rpb.JoinGameRequest(game_id=g.game_id, seat=0, display_name="Eve"))),
    "IDEMPOTENCY_KEY_REUSED": _idempotency_key_reused,
    # ABORTED
    "VERSION_MISMATCH": _with_game(lambda t, g: t.validate(g, g.tokens[1], "draw stock", expected_version=5)),
    # UNAUTHENTICATED
    "MISSING_TOKEN": _with_game(lambda t, g: t.client.stub.GetGame(rpb.GetGameRequest(game_id=g.game_id))),
    "BAD_TOKEN": _with_game(lambda t, g: t.client.view(g, "garbage")),
    # PERMISSION_DENIED
    "SPECTATOR": _with_game(lambda t, g: t.validate(g, g.spectator, "draw stock")),
    "MATCH_NOT_OVER": _with_game(lambda t, g: t.client.replay(g, g.tokens[0])),
    "ORGANIZER_ONLY": _with_game(lambda t, g: t.client.create("gin", token=g.tokens[0], seed=b"0123456789abcdef")),
    "ORGANIZER_NO_SEAT": _with_game(lambda t, g: t.client.move(g, ORGANIZER, DRAW)),
    # NOT_FOUND
    "GAME_NOT_FOUND": lambda t: t.client.view(Game("nosuchgame", {}, "", rpb.CreateGameResponse()), "some-token"),
    # RESOURCE_EXHAUSTED
    "TOO_MANY_PRESETS": lambda t: t.client.create("gin", token=ORGANIZER, preset_deals=[GIN_KNOCK_DEAL] * 201),
    # UNAVAILABLE
    "STORAGE_UNAVAILABLE": _storage_unavailable,
    "SHUTTING_DOWN": _shutting_down,
    # INTERNAL
    "INTERNAL": _internal,
}

#: reason -> why no test can provoke it (OUT_OF_TIME: provoked here because this referee runs no timeout firer)
EXEMPT: dict[str, str] = {
    "STOCK_EMPTY": "a guard no game reaches: Gin ends the hand when the stock is down to 2 cards, and Rummy rebuilds "
                   "the stock (or ends the hand) before a turn can begin with an empty one",
    "DISCARD_EMPTY": "a guard no game reaches: every turn ends with a discard (or the hand), and a rebuilt stock "
                     "leaves the top card of the discard pile",
    "VERSION_CONFLICT": "needs another commit to land between this move's load and its commit (one pipelined round "
                        "trip): a race no test can place without a hook inside the server",
    "CONTENDED": "needs that same race lost 8 times in a row",
    "WATCHER_TOO_SLOW": "needs a watcher thousands of events behind (the settings' watch.queue_limit): provoked in "
                        "tests/server/test_fanout.py",
    "RATE_LIMITED": "needs a referee with low limits (this one has the test kit's high ones): provoked in "
                    "tests/server/test_limits.py",
    "TOO_MANY_OPEN_GAMES": "needs a referee with a small --max-open-games: provoked in tests/server/test_limits.py",
    "COMMIT_OUTCOME_UNKNOWN": "needs Redis to stop answering while a commit is in flight: provoked with SIGSTOP in "
                              "tests/server/test_faults_commit.py and tests/clients/test_commit_outcome.py",
    "STORED_BY_EARLIER_VERSION": "needs a game written in the earlier layout: provoked in tests/server/test_matches.py",
    "STORAGE_BUSY": "needs the process's connection pool held busy: provoked in tests/server/test_fanout.py",
    "DEADLINE_TOO_SHORT": "a call must reach the storage with under 10 ms of its deadline left; a client that close "
                          "to its deadline sees its own DEADLINE_EXCEEDED first: shown at the store in "
                          "tests/server/test_storage_faults.py",
}


def _to_act(t: Ctx, game: Game) -> str:
    view = t.client.view(game, game.tokens[0])
    return game.tokens[view.to_act]


@pytest.fixture
def ctx(client: Client, referee_server: ServerThread, redis_server: RedisProcess) -> Iterator[Ctx]:
    yield Ctx(client, referee_server, redis_server)


PAIRS = documented_pairs()


def test_the_table_is_parsed_and_every_pair_is_provoked_or_exempt() -> None:
    codes = [code for _, code in PAIRS]
    assert len(codes) == len(set(codes)), "a reason listed under two statuses"
    assert {"INVALID_CARD", "INVALID_MELD", "NOT_YOUR_TURN", "VERSION_MISMATCH", "INTERNAL"} <= set(codes)
    assert ("FAILED_PRECONDITION", "INVALID_MELD") in PAIRS  # not INVALID_ARGUMENT: the rules refuse it
    missing = sorted(set(codes) - set(PROVOKE) - set(EXEMPT))
    assert not missing, f"documented reasons with neither a provocation nor an exemption: {missing}"
    stale = sorted((set(PROVOKE) | set(EXEMPT)) - set(codes))
    assert not stale, f"provoked or exempt reasons design.md does not document: {stale}"
    assert not set(PROVOKE) & set(EXEMPT)


@pytest.mark.parametrize(("status", "reason"), PAIRS, ids=[reason for _, reason in PAIRS])
def test_documented_status_and_reason_is_what_the_referee_returns(ctx: Ctx, status: str, reason: str) -> None:
    if reason in EXEMPT:
        pytest.skip(f"exempt: {EXEMPT[reason]}")
    with expect_error(getattr(grpc.StatusCode, status), reason):
        PROVOKE[reason](ctx)
