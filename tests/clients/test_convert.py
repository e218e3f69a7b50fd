"""The SDK's translation is the inverse of the server's (``server.codec``) for every move, view and event that
random matches of every profile produce: what a client reads back is exactly what the engine said."""

from __future__ import annotations

import random
from typing import Any

import pytest

import engine
from clients.bots import make_bot
from clients.sdk import convert
from clients.sdk._core import FROM_START, MAX_SEQ, WatchCursor
from clients.view import View
from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server import codec

PROFILES = [("gin", 2), ("gin-standard", 2), ("oklahoma-gin", 2), ("hollywood-gin", 2), ("rummy", 3),
            ("rummy", 6), ("rummy-g4a", 4), ("rummy", 2)]  # fmt: skip


def _service_view(state: engine.GameState, viewer: int, version: int) -> dict[str, Any]:
    """The view dict the service encodes (engine.view plus the service's additions)."""
    role = "referee" if viewer == engine.REFEREE else "spectator" if viewer == engine.SPECTATOR else "seat"
    d = engine.view(state, viewer)
    d.update(game_id="g-1", version=version, role=role,
             seats=[{"name": f"P{i}", "kind": "bot" if i % 2 else "human", "open": i == 5}
                    for i in range(state.rules.players)])  # fmt: skip
    if role == "seat" and state.to_act == viewer and state.phase != "match_over":
        d["legal_moves"] = [engine.move_to_dict(m) for m in engine.legal_moves(state)]
    return d


def _matches(profile: str, players: int, seed: int, max_moves: int = 3000) -> list[tuple[engine.GameState, Any]]:
    """(state, events that led to it) along one random match (a few hands)."""
    rules = engine.rules_from_profile(profile, players=players, max_hands=3)
    rng = random.Random(seed)
    bots = [make_bot("strong", seed + i) for i in range(players)]  # knocks, gins, undercuts, lay-offs
    rules_dict = rules.to_dict()
    state = engine.new_game(rules, seed.to_bytes(16, "big"))
    out: list[tuple[engine.GameState, Any]] = [(state, ())]
    for _ in range(max_moves):
        if state.phase == "match_over":
            break
        legal = engine.legal_moves(state)
        seat = state.to_act
        if rng.random() < 0.2:
            move = rng.choice(legal)
        else:
            move = bots[seat].choose(View.from_engine(engine.view(state, seat), rules_dict), legal)
        state, events = engine.apply(state, seat, move)
        out.append((state, events))
    return out


def _extra_moves() -> list[engine.Move]:
    c = engine.parse_card
    run = engine.mask_of([c("AS"), c("2S"), c("3S")])
    sevens = engine.mask_of([c("7H"), c("7D"), c("7C")])
    return [
        engine.Knock(c("TD"), (run, sevens)), engine.Knock(c("TD"), ()), engine.BigGin((run, sevens)),
        engine.BigGin(), engine.Declare(), engine.Declare((run,), ((c("4S"), 0), (c("7S"), 1))),
        engine.Declare((), ()), engine.LayOff(c("KC"), 7), engine.MeldMove(sevens),
    ]  # fmt: skip


@pytest.mark.parametrize(("profile", "players"), PROFILES)
def test_views_events_and_moves_read_back_as_the_engine_made_them(profile: str, players: int) -> None:
    moves_seen: set[engine.Move] = set(_extra_moves())
    for version, (state, events) in enumerate(_matches(profile, players, seed=players * 1000 + len(profile))):
        viewers = [*range(players), engine.SPECTATOR, engine.REFEREE]
        for viewer in viewers:
            d = _service_view(state, viewer, version)
            message = codec.view_to_proto(d)
            expected = {k: v for k, v in d.items() if k != "legal_moves"}
            assert convert.view_dict_from_proto(message) == expected
            legal = convert.legal_from_proto(message)
            assert legal == (tuple(engine.legal_moves(state)) if "legal_moves" in d else ())
            moves_seen.update(legal)
            if viewer >= 0:
                rules = state.rules.to_dict()
                assert View.from_proto(message, rules) == View.from_engine(engine.view(state, viewer), rules)
            for index, event in enumerate(events, 1):
                e = {**engine.event_for(event, viewer), "version": version, "index": index}
                assert convert.event_from_proto(codec.event_to_proto(e)) == e
    for move in moves_seen:
        move_message = convert.move_to_proto(move)
        assert move_message == codec.move_to_proto(engine.move_to_dict(move))
        assert convert.move_from_proto(move_message) == move
        assert codec.move_from_proto(move_message) == move


def test_options_keep_their_types() -> None:
    rules = engine.rules_from_profile("oklahoma-gin").to_dict()
    message = codec.settings_to_proto({"profile": "oklahoma-gin", "options": rules, "seats": [],
                                       "spectators": False, "organizer_deals": False})  # fmt: skip
    back = convert.options_from_proto(message.options)
    assert back == rules
    assert all(type(back[k]) is type(v) for k, v in rules.items())
    with pytest.raises(TypeError):
        convert.option_to_proto(1.5)  # type: ignore[arg-type]


def test_a_move_message_without_a_move_is_refused() -> None:
    with pytest.raises(ValueError):
        convert.move_from_proto(pb.Move())


def _event(version: int, index: int, kind: str = "drew") -> rpb.WatchGameResponse:
    return rpb.WatchGameResponse(event=pb.Event(version=version, index=index, kind=kind, seat=0))


def test_the_watch_cursor_resumes_after_the_last_position_and_drops_what_it_saw() -> None:
    cursor = WatchCursor(None)
    assert not cursor.request("g").HasField("after_version")
    snapshot = rpb.WatchGameResponse(snapshot=pb.GameView(game_id="g", version=4))
    assert cursor.accept(snapshot) is not None
    assert (cursor.request("g").after_version, cursor.request("g").HasField("after_index")) == (4, False)
    assert cursor.accept(_event(5, 1)) is not None
    assert cursor.accept(_event(5, 2)) is not None
    request = cursor.request("g")
    assert (request.after_version, request.after_index) == (5, 2)
    # a server that resends from the start of version 5 (or a snapshot) after a reconnection: nothing twice
    assert cursor.accept(_event(5, 1)) is None
    assert cursor.accept(_event(5, 2)) is None
    assert cursor.accept(snapshot) is None
    assert cursor.accept(_event(5, 3, "discarded")) is not None
    assert cursor.accept(_event(6, 1, "match_ended")) is not None
    assert cursor.ended and cursor.version == 6


def test_a_watch_from_a_version_asks_for_everything_after_it() -> None:
    cursor = WatchCursor(7)
    request = cursor.request("g")
    assert (request.after_version, request.HasField("after_index")) == (7, False)
    assert cursor.last == (7, MAX_SEQ)
    assert cursor.accept(_event(7, 9)) is None
    assert cursor.accept(_event(8, 1)) is not None


def test_a_watch_from_the_start_asks_for_the_whole_of_version_zero_and_resumes_within_it() -> None:
    cursor = WatchCursor(FROM_START)
    for _ in range(2):  # nothing received yet (a reconnection too): all of version 0, from its first event
        request = cursor.request("g")
        assert (request.after_version, request.HasField("after_index"), request.after_index) == (0, True, 0)
    assert cursor.version == FROM_START
    assert cursor.accept(_event(0, 1, "hand_started")) is not None
    request = cursor.request("g")
    assert (request.after_version, request.after_index) == (0, 1)  # the rest of the first deal
    assert cursor.accept(_event(0, 1, "hand_started")) is None
    assert cursor.accept(_event(0, 2, "dealt")) is not None
    assert cursor.accept(rpb.WatchGameResponse(snapshot=pb.GameView(game_id="g", version=0))) is None
    assert cursor.accept(_event(1, 1)) is not None and cursor.version == 1
    with pytest.raises(ValueError):
        WatchCursor(-2)
