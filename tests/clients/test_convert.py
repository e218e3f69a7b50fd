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
        d["legal_moves"] = engine.legal_moves(state)
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
                assert convert.view_from_proto(message, rules) == View.from_engine(engine.view(state, viewer), rules)
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


# ---------------------------------------------------------------------------------------------- time controls


def test_time_controls_convert_both_ways_in_whole_milliseconds() -> None:
    from clients.sdk import Bank, Clock, PerMove, TimeoutPolicy, time_control_from_text, time_control_text

    cases = {PerMove(0.3): pb.TimeControl(per_move=pb.TimeControl.PerMove(limit_ms=300)),
             Clock(60, 1.5): pb.TimeControl(clock=pb.TimeControl.Clock(initial_ms=60_000, increment_ms=1500)),
             Clock(5): pb.TimeControl(clock=pb.TimeControl.Clock(initial_ms=5000)),
             Bank(0.5, 30): pb.TimeControl(bank=pb.TimeControl.Bank(allowance_ms=500, bank_ms=30_000))}  # fmt: skip
    for value, message in cases.items():
        assert convert.time_control_to_proto(value) == message
        assert convert.time_control_from_proto(message) == value
        assert time_control_from_text(time_control_text(value)) == value
    assert convert.time_control_from_proto(pb.TimeControl()) is None and time_control_text(None) == "none"
    assert time_control_from_text("10") == PerMove(10) and time_control_from_text("60+0") == Clock(60, 0)
    assert time_control_from_text("bank:2+60") == Bank(2, 60)
    auto = TimeoutPolicy("auto_move", 2)
    assert convert.timeout_policy_to_proto(auto) == pb.TimeoutPolicy(kind=pb.TimeoutPolicy.KIND_AUTO_MOVE,
                                                                      max_auto_moves=2)  # fmt: skip
    assert convert.timeout_policy_from_proto(convert.timeout_policy_to_proto(auto)) == auto
    assert convert.timeout_policy_from_proto(pb.TimeoutPolicy()) == TimeoutPolicy("forfeit_match")


def test_bad_time_controls_are_refused_before_anything_is_sent() -> None:
    from clients.sdk import Bank, Clock, PerMove, TimeoutPolicy, time_control_from_text
    from clients.sdk._core import create_request

    for make, error in [(lambda: PerMove(0), ValueError), (lambda: PerMove(-1), ValueError),
                        (lambda: PerMove(0.0004), ValueError), (lambda: PerMove(86_401), ValueError),
                        (lambda: PerMove(float("nan")), TypeError), (lambda: PerMove(True), TypeError),
                        (lambda: PerMove("10"), TypeError), (lambda: Clock(60, -1), ValueError),
                        (lambda: Clock(0, 1), ValueError), (lambda: Bank(1, 0), ValueError),
                        (lambda: TimeoutPolicy("sleep"), ValueError),
                        (lambda: TimeoutPolicy("auto_move", -1), ValueError),
                        (lambda: TimeoutPolicy("forfeit_match", 3), ValueError),
                        (lambda: TimeoutPolicy("auto_move", 1.5), TypeError)]:  # type: ignore[arg-type]  # fmt: skip
        with pytest.raises(error):
            make()
    for text in ("", "ten", "60+", "+1", "bank:5", "0", "bank:1+x", "1e9"):
        with pytest.raises(ValueError, match="bad time control"):
            time_control_from_text(text)
    with pytest.raises(TypeError):
        convert.time_control_to_proto(10)
    with pytest.raises(TypeError):
        convert.timeout_policy_to_proto("auto_move")
    with pytest.raises(ValueError, match="needs a time control"):
        create_request("gin", ["a", "b"], None, None, None, False, (), None, None, TimeoutPolicy("auto_move"))
    request = create_request("gin", ["a", "b"], None, None, None, False, (), None, PerMove(0.3))
    assert request.time_control.per_move.limit_ms == 300 and not request.HasField("timeout_policy")


def test_clocks_of_views_and_events_reach_the_view_a_bot_receives() -> None:
    state, _ = _matches("gin", 2, 7)[0]
    me = state.to_act
    view = codec.view_to_proto(_service_view(state, me, 3))
    plain_dict = convert.view_dict_from_proto(view)
    assert "clocks" not in plain_dict and "deadline_ms" not in plain_dict  # no time control: as the engine's
    view.clocks.extend([
        pb.SeatClock(seat=me, remaining_ms=4500, running=True, started_ms=1_000_000, deadline_ms=1_004_500),
        pb.SeatClock(seat=1 - me, remaining_ms=2250, auto_moves=1),
    ])  # fmt: skip
    view.deadline_ms = 1_004_500
    d = convert.view_dict_from_proto(view)
    assert d["deadline_ms"] == 1_004_500
    assert d["clocks"][1] == {"seat": 1 - me, "remaining_ms": 2250, "running": False, "started_ms": None,
                              "deadline_ms": None, "auto_moves": 1}  # fmt: skip
    bot_view = convert.view_from_proto(view, state.rules.to_dict())
    mine, other = bot_view.clocks
    assert (mine.seat, mine.remaining, mine.running, mine.deadline_ms) == (me, 4.5, True, 1_004_500)
    assert (other.remaining, other.running, other.auto_moves, other.left()) == (2.25, False, 1, 2.25)
    assert bot_view.deadline_ms == 1_004_500 and bot_view.my_clock == mine
    assert bot_view.time_left(now=1_003.0) == pytest.approx(1.5) and mine.left(now=1_010.0) == 0.0
    assert View.from_engine(bot_view.to_dict(), state.rules.to_dict()) == bot_view  # programs get them too
    event = pb.Event(version=4, index=1, kind="clock_started", seat=me, clocks=view.clocks, deadline_ms=1_009_000)
    e = convert.event_from_proto(event)
    assert e["kind"] == "clock_started" and e["deadline_ms"] == 1_009_000 and e["clocks"] == d["clocks"]
    assert "clocks" not in convert.event_from_proto(pb.Event(version=4, index=2, kind="discarded", seat=0))
