"""Typed events and results on the wire: every event a viewer receives carries the typed message of its kind
(``Event.payload``), whose fields are the Struct's (``Event.data``) content, for random matches of every profile;
the typed fields hold no secret the viewer may not see; hand and match results' typed fields are their
``details``' content. Checked on the conversion alone (``wire.events``) and through a real referee over gRPC."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import engine
from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server import codec
from server.redis_launcher import RedisProcess
from tests.engine.test_results import CONFIGS, _matches
from tests.server.refkit import ORGANIZER, Client, Game, ServerThread, bot_move, md
from wire import events as wire_events

TC = pb.TimeControl


def _struct_only(event: pb.Event) -> pb.Event:
    """The event as an older referee sent it: no payload."""
    old = pb.Event()
    old.CopyFrom(event)
    if (which := old.WhichOneof("payload")) is not None:
        old.ClearField(which)  # type: ignore[arg-type]  # a oneof member
    return old


def _typed_only(event: pb.Event) -> pb.Event:
    """The event without its Struct: what a client reading only the typed message sees."""
    new = pb.Event()
    new.CopyFrom(event)
    new.ClearField("data")
    return new


def check_event(event: pb.Event, secret: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The typed message is the event's kind and holds exactly the Struct's content; ``secret``: fields this viewer
    may not see, in neither. Returns the event's dict."""
    assert event.WhichOneof("payload") == event.kind, event
    from_struct = wire_events.event_from_proto(_struct_only(event))
    typed = _typed_only(event)
    for result in ("hand_ended", "match_ended"):  # their typed results read without their details Struct
        if typed.HasField(result):  # type: ignore[arg-type]
            getattr(typed, result).result.ClearField("details")
    from_typed = wire_events.event_from_proto(typed)
    assert from_typed == from_struct, (event.kind, from_typed, from_struct)
    assert not secret & set(from_typed), (event.kind, secret, from_typed)
    return from_typed


def _secret_for(e: engine.Event, viewer: int) -> frozenset[str]:
    if e.secret is None or viewer == engine.REFEREE or (viewer >= 0 and viewer == e.secret_for):
        return frozenset()
    return frozenset(e.secret)


# ----------------------------------------------------------------------------------------- the conversion


@pytest.mark.parametrize(("profile", "players"), CONFIGS)
def test_every_converted_event_carries_its_typed_message(profile: str, players: int | None) -> None:
    kinds = set()
    for played in _matches(profile, players, 6):
        n = max(e.seat for e in played) + 1
        for index, e in enumerate(played):
            for viewer in (*range(n), engine.SPECTATOR, engine.REFEREE):
                d = {**engine.event_for(e, viewer), "version": 1 + index // 7, "index": 1 + index % 7}
                encoded = codec.event_to_proto(d)  # the server's, with its caches of event bodies
                assert encoded == wire_events.event_to_proto(d)  # the same message as the uncached conversion
                back = check_event(encoded, _secret_for(e, viewer))
                assert back == d
                kinds.add(e.kind)
    assert {"hand_started", "dealt", "drew", "discarded", "hand_ended", "match_ended"} <= kinds


REFEREE_EVENTS: list[dict[str, Any]] = [  # the kinds the referee adds (server.clocks, server.service)
    {"kind": "clock_stopped", "seat": 1, "spent_ms": 1200, "remaining_ms": 58800, "at_ms": 1_700_000_000_123},
    {"kind": "clock_stopped", "seat": 0, "spent_ms": 5, "remaining_ms": 0, "at_ms": 1_700_000_000_999,
     "clocks": [{"seat": 0, "remaining_ms": 0, "running": False, "started_ms": None, "deadline_ms": None,
                 "auto_moves": 0}]},
    {"kind": "clock_started", "seat": 0, "started_ms": 1_700_000_000_123, "deadline_ms": 1_700_000_030_123,
     "remaining_ms": 30000,
     "clocks": [{"seat": 0, "remaining_ms": 30000, "running": True, "started_ms": 1_700_000_000_123,
                 "deadline_ms": 1_700_000_030_123, "auto_moves": 1}]},
    {"kind": "timed_out", "seat": 1, "policy": "auto_move", "deadline_ms": 1_700_000_000_500, "forfeit": False},
    {"kind": "timed_out", "seat": 0, "policy": "forfeit_match", "deadline_ms": 1_700_000_000_500, "forfeit": True},
    *({"kind": "auto_moved", "seat": 1, "move": engine.move_to_dict(m), "auto_moves": 2} for m in (
        engine.DrawStock(), engine.Pass(), engine.Discard(7), engine.Declare(), engine.Knock(3),
        engine.Declare((engine.mask_of([0, 1, 2]),), ((5, 0),)), engine.Done(), engine.DrawDiscard(),
    )),
    {"kind": "game_expired", "seat": -1},
    {"kind": "game_abandoned", "seat": -1},
]  # fmt: skip


@pytest.mark.parametrize("d", REFEREE_EVENTS, ids=lambda d: str(d["kind"]))
def test_the_referee_s_own_events_carry_their_typed_message(d: dict[str, Any]) -> None:
    d = {**d, "version": 3, "index": 2}
    assert codec.event_to_proto(d) == wire_events.event_to_proto(d)
    assert check_event(codec.event_to_proto(d)) == d


def test_every_event_kind_has_a_typed_message() -> None:
    names = {f.name for f in pb.Event.DESCRIPTOR.oneofs_by_name["payload"].fields}
    assert names == {k.value for k in engine.EventKind}


# ------------------------------------------------------------------------------------------- over gRPC


@pytest.fixture
def timed_server(private_redis: RedisProcess) -> Iterator[ServerThread]:
    """A referee of this test's own Redis with the timeout firer on (time controls' automatic moves)."""
    server = ServerThread(private_redis.url, firer=True)
    try:
        yield server
    finally:
        server.stop()


def _watch(client: Client, game_id: str, token: str, into: list[pb.Event]) -> threading.Thread:
    def read() -> None:
        request = rpb.WatchGameRequest(game_id=game_id, after_version=0, after_index=0)
        for message in client.stub.WatchGame(request, metadata=md(token), timeout=120):
            if message.HasField("event"):
                into.append(message.event)
            elif message.snapshot.HasField("last_hand"):
                check_hand_result(message.snapshot.last_hand)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def check_hand_result(h: pb.HandResult) -> None:
    """A HandResult's typed fields say what its details say."""
    typed = pb.HandResult()
    typed.CopyFrom(h)
    typed.ClearField("details")
    struct_only = pb.HandResult()
    struct_only.CopyFrom(h)
    for name in ("melds", "hollywood", "resigned_seat", "lost_on_time_seat"):
        struct_only.ClearField(name)  # type: ignore[arg-type]
    assert wire_events.hand_result_from_proto(typed) == wire_events.hand_result_from_proto(struct_only)


def check_match_result(r: pb.MatchResult) -> None:
    """A MatchResult's typed fields say what its details say."""
    typed = pb.MatchResult()
    typed.CopyFrom(r)
    typed.ClearField("details")
    struct_only = pb.MatchResult()
    struct_only.CopyFrom(r)
    for name in ("breakdown", "hollywood_games"):
        struct_only.ClearField(name)  # type: ignore[arg-type]
    assert wire_events.match_result_from_proto(typed) == wire_events.match_result_from_proto(struct_only)


def _play(client: Client, profile: str, players: int, rng: random.Random, **fields: Any) -> tuple[Game, dict]:
    names = tuple(f"P{i}" for i in range(players))
    game = client.create(profile, names, token=ORGANIZER, allow_spectators=True,
                         match=rpb.MatchSettings(max_hands=rng.randint(1, 2)), **fields)  # fmt: skip
    received: dict[str, list[pb.Event]] = {f"seat {s}": [] for s in game.tokens}
    received["spectator"] = []
    tokens = {**{f"seat {s}": t for s, t in game.tokens.items()}, "spectator": game.spectator}
    readers = [_watch(client, game.game_id, tokens[name], received[name]) for name in received]
    resign_at = rng.choice([None, rng.randint(3, 60)])
    moves = 0
    while True:
        view = client.view(game, game.spectator)
        if view.phase == pb.PHASE_MATCH_OVER:
            check_match_result(view.result)
            break
        if moves == resign_at:
            quitter = game.tokens[rng.randrange(players)]
            client.stub.Resign(rpb.ResignRequest(game_id=game.game_id), metadata=md(quitter))
            continue
        seat = view.to_act
        own = client.view(game, game.tokens[seat])
        response = client.move(game, game.tokens[seat], bot_move(own, rng))
        for event in response.events:
            check_event(event)
        moves += 1
    for reader in readers:
        reader.join(60)
        assert not reader.is_alive(), "a watch stream did not end with the match"
    return game, received


SECRETS = {"dealt": "cards", "restocked": "stock"}


@pytest.mark.parametrize(("profile", "players"), [(p, n or (3 if p == "rummy-g4a" else 2)) for p, n in CONFIGS])
def test_every_watched_event_carries_its_typed_message(client: Client, profile: str, players: int) -> None:
    rng = random.Random(profile + str(players))
    game, received = _play(client, profile, players, rng, time_control=TC(per_move=TC.PerMove(limit_ms=600_000)))
    kinds = set()
    for name, got in received.items():
        assert got and got[-1].kind == "match_ended", name
        for event in got:
            d = check_event(event)
            kinds.add(event.kind)
            seat = int(name.split()[1]) if name.startswith("seat") else engine.SPECTATOR
            # secrets: dealt cards only to their seat, a card drawn from the stock only to its drawer, the new
            # stock to nobody
            if (event.kind in SECRETS and event.seat != seat) or event.kind == "restocked":
                assert SECRETS.get(event.kind, "") not in d, (name, d)
            if event.kind == "drew" and d["source"] == "stock" and event.seat != seat:
                assert "card" not in d and not event.drew.HasField("card"), (name, d)
            if event.kind == "dealt" and event.seat != seat:
                assert not event.dealt.cards
            if event.kind == "hand_ended":
                check_hand_result(event.hand_ended.result)
            if event.kind == "match_ended":
                check_match_result(event.match_ended.result)
    assert {"hand_started", "dealt", "drew", "discarded", "hand_ended", "match_ended", "clock_started",
            "clock_stopped"} <= kinds, kinds
    for page in client.replay(game):  # the organizer's replay: every card, typed too
        for event in page.events:
            check_event(event)


def test_timeout_events_over_grpc_carry_their_typed_message(timed_server: ServerThread) -> None:
    client = Client(timed_server.address)
    try:
        request = rpb.CreateGameRequest(
            profile="gin", seats=[pb.SeatSpec(display_name=f"P{i}") for i in range(2)], allow_spectators=True,
            time_control=TC(per_move=TC.PerMove(limit_ms=200)),
            timeout_policy=pb.TimeoutPolicy(kind=pb.TimeoutPolicy.KIND_AUTO_MOVE, max_auto_moves=1),
        )  # fmt: skip
        created = client.stub.CreateGame(request)
        got: list[pb.Event] = []
        _watch(client, created.game_id, created.spectator_token, got).join(60)
        kinds = [e.kind for e in got]
        assert kinds and kinds[-1] == "match_ended", kinds
        assert {"timed_out", "auto_moved", "clock_started", "clock_stopped"} <= set(kinds), kinds
        for event in got:
            check_event(event)
            if event.kind == "match_ended":
                assert event.match_ended.result.HasField("lost_on_time_seat")
                check_match_result(event.match_ended.result)
    finally:
        client.close()
