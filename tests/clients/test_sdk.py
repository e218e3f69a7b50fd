"""Every RPC through the SDK, blocking and asyncio, against the real referee and Redis."""

from __future__ import annotations

import asyncio
import pickle
import random
from collections.abc import Sequence
from typing import Any

import grpc
import pytest

import engine
from clients.sdk import (
    FROM_START,
    AsyncRefereeClient,
    GameSnapshot,
    RefereeClient,
    RefereeError,
    SeatSpec,
)
from clients.sdk.values import CreatedGame
from tests.clients.clientkit import ORGANIZER, ServerThread


def _cards(texts: str) -> tuple[int, ...]:
    return tuple(engine.parse_card(t) for t in texts.split())


# Seat 1 (the non-dealer) holds AS 2S 3S 7H 7D 7C 9D 9C 9H KC: deadwood 10, it may knock at once after a draw.
DEAL = engine.Deal(
    dealer=0,
    hands=(_cards("4D 5D 6H 8C TS JS QH KD 2C 3H"), _cards("AS 2S 3S 7H 7D 7C 9D 9C 9H KC")),
    upcard=engine.parse_card("QS"),
    stock=tuple(c for c in range(52) if c not in set(_cards(
        "4D 5D 6H 8C TS JS QH KD 2C 3H AS 2S 3S 7H 7D 7C 9D 9C 9H KC QS 4C")) ) + _cards("4C"),
)  # fmt: skip


def _play_out(client: RefereeClient, game: CreatedGame, rng: random.Random, limit: int = 5000) -> int:
    """Random legal moves for every seat until the match ends; the number of moves."""
    for n in range(limit):
        info = client.get_game(game.game_id, token=game.tokens[0])
        if info.snapshot.over:
            return n
        seat = info.snapshot.to_act
        assert seat is not None
        mine = client.get_game(game.game_id, token=game.tokens[seat])
        client.submit_move(game.game_id, rng.choice(mine.legal), token=game.tokens[seat])
    raise AssertionError("the match did not end")


def test_ping(client: RefereeClient) -> None:
    assert 0 < client.ping() < 5


def test_create_game_returns_tokens_settings_and_version_zero(client: RefereeClient) -> None:
    game = client.create_game("rummy", ["Ann", SeatSpec("Bot", "bot"), SeatSpec(open=True)],
                              options={"going_rummy_multiplier": 3}, target_score=250, max_hands=4,
                              allow_spectators=True)  # fmt: skip
    assert game.version == 0
    assert set(game.tokens) == {0, 1}
    assert game.spectator_token
    s = game.settings
    assert (s.profile, s.game, s.spectators_allowed, s.organizer_deals) == ("rummy", "rummy", True, False)
    assert s.options["going_rummy_multiplier"] == 3
    assert (s.options["target_score"], s.options["max_hands"], s.options["players"]) == (250, 4, 3)
    assert s.seats == (SeatSpec("Ann"), SeatSpec("Bot", "bot"), SeatSpec("", "human", True))


def test_join_game_takes_the_open_seat(client: RefereeClient) -> None:
    game = client.create_game("gin", ["Ann", SeatSpec(open=True)])
    joined = client.join_game(game.game_id, "Zoe")
    assert joined.seat == 1
    info = client.get_game(game.game_id, token=joined.token)
    assert info.snapshot.seat == 1
    assert info.settings.seats[1] == SeatSpec("Zoe", "human", False)
    with pytest.raises(RefereeError) as taken:
        client.join_game(game.game_id, "Max", seat=1)
    assert (taken.value.code, taken.value.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "SEAT_TAKEN")


def test_get_game_gives_the_view_and_the_legal_moves_as_engine_moves(client: RefereeClient) -> None:
    game = client.create_game("gin", ["Ann", "Bob"], preset_deals=[DEAL], token=ORGANIZER)
    assert game.settings.organizer_deals
    to_act = client.get_game(game.game_id, token=game.tokens[1])
    waiting = client.get_game(game.game_id, token=game.tokens[0])
    assert to_act.snapshot.my_turn and not waiting.snapshot.my_turn
    assert set(to_act.legal) == {engine.DrawStock(), engine.DrawDiscard()}
    assert waiting.legal == ()
    view = to_act.view
    assert (view.game, view.seat, view.phase, view.to_act, view.upcard) == ("gin", 1, "draw", 1, "QS")
    assert set(view.hand) == {engine.card_text(c) for c in DEAL.hands[1]}
    assert view.rules["knock_limit"] == 10 and view.players == 2
    assert set(waiting.view.hand) == {engine.card_text(c) for c in DEAL.hands[0]}


def test_submit_move_returns_the_events_and_the_new_view(client: RefereeClient) -> None:
    game = client.create_game("gin", ["Ann", "Bob"], preset_deals=[DEAL], token=ORGANIZER)
    drew = client.submit_move(game.game_id, engine.DrawStock(), token=game.tokens[1], expected_version=0)
    assert drew.version == 1 and drew.attempts == 1 and drew.request_id
    assert drew.events == ({"kind": "drew", "seat": 1, "source": "stock", "stock_size": 30, "card": "4C",
                            "version": 1, "index": 1},)  # fmt: skip
    snap = drew.snapshot
    assert snap.phase == "discard" and "4C" in snap.view.hand
    assert engine.Knock(engine.parse_card("KC")) in snap.legal
    knocked = client.submit_move(game.game_id, engine.Knock(engine.parse_card("KC")), token=game.tokens[1])
    kinds = [e["kind"] for e in knocked.events]
    assert "knocked" in kinds and knocked.version == 2
    assert knocked.snapshot.view.knock is not None and knocked.snapshot.view.knock.knocker == 1


def test_validate_move_checks_without_applying(client: RefereeClient) -> None:
    game = client.create_game("gin", ["Ann", "Bob"], preset_deals=[DEAL], token=ORGANIZER)
    assert client.validate_move(game.game_id, engine.DrawStock(), token=game.tokens[1]) == 0
    with pytest.raises(RefereeError) as not_yours:
        client.validate_move(game.game_id, engine.DrawStock(), token=game.tokens[0])
    assert (not_yours.value.code, not_yours.value.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "NOT_YOUR_TURN")
    assert not_yours.value.rejected_move and not not_yours.value.transient
    with pytest.raises(RefereeError) as stale:
        client.validate_move(game.game_id, engine.DrawStock(), token=game.tokens[1], expected_version=3)
    assert stale.value.code == grpc.StatusCode.ABORTED
    assert client.get_game(game.game_id, token=game.tokens[1]).version == 0


def test_errors_carry_the_status_code_and_the_reason(client: RefereeClient) -> None:
    game = client.create_game("gin", ["Ann", "Bob"], allow_spectators=True)
    cases: list[tuple[Any, grpc.StatusCode, str]] = [
        (lambda: client.get_game(game.game_id, token="not-a-token"), grpc.StatusCode.UNAUTHENTICATED, "BAD_TOKEN"),
        (lambda: client.get_game(game.game_id), grpc.StatusCode.UNAUTHENTICATED, "MISSING_TOKEN"),
        (lambda: client.get_game("no-such-game", token="x"), grpc.StatusCode.NOT_FOUND, "GAME_NOT_FOUND"),
        (lambda: client.submit_move(game.game_id, engine.DrawStock(), token=game.spectator_token),
         grpc.StatusCode.PERMISSION_DENIED, "SPECTATOR"),
        (lambda: client.get_replay(game.game_id, token=game.tokens[0]), grpc.StatusCode.PERMISSION_DENIED,
         "MATCH_NOT_OVER"),
        (lambda: client.create_game("gin", ["A", "B"], options={"no_such_option": 1}),
         grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_OPTION"),
        (lambda: client.analyze_hand([]), grpc.StatusCode.INVALID_ARGUMENT, "INVALID_HAND_SIZE"),
    ]  # fmt: skip
    for call, code, reason in cases:
        with pytest.raises(RefereeError) as caught:
            call()
        assert (caught.value.code, caught.value.reason) == (code, reason), caught.value
        assert caught.value.domain == "rummy-referee"
        copy = pickle.loads(pickle.dumps(caught.value))  # it crosses process boundaries (tournament workers)
        assert (copy.code, copy.reason, copy.message) == (code, reason, caught.value.message)


def test_watch_gives_a_snapshot_then_every_event_until_the_match_ends(client: RefereeClient) -> None:
    game = client.create_game("rummy", ["Ann", "Bob", "Cy"], max_hands=1, allow_spectators=True)
    watch = client.watch(game.game_id, token=game.spectator_token)
    first = next(watch)
    assert isinstance(first, GameSnapshot) and first.version == 0 and first.role == "spectator"
    moves = _play_out(client, game, random.Random(1))
    events = [e for e in watch if isinstance(e, dict)]
    assert events[-1]["kind"] == "match_ended"
    replay = client.get_replay(game.game_id, token=game.tokens[2])
    # the whole game: the first deal (version 0, which the snapshot showed), then exactly the events watched
    assert [(e["version"], e["index"], e["kind"]) for e in replay.events] == [
        (0, 1, "hand_started"), (0, 2, "dealt"), (0, 3, "dealt"), (0, 4, "dealt"),
        *((e["version"], e["index"], e["kind"]) for e in events),
    ]  # fmt: skip
    assert events[-1]["version"] == moves == replay.current["version"]
    seat_watch = list(client.watch(game.game_id, after_version=moves - 1, token=game.tokens[0]))
    assert seat_watch == [e for e in events if e["version"] == moves]  # the spectator saw what a seat sees of it
    # from the start: every event of the game, the first deal's included, each seat seeing its own cards only
    for seat in range(3):
        items = list(client.watch(game.game_id, after_version=FROM_START, token=game.tokens[seat]))
        whole = [e for e in items if isinstance(e, dict)]
        assert len(whole) == len(items)  # no snapshot
        assert [(e["version"], e["index"], e["kind"]) for e in whole] == [
            (e["version"], e["index"], e["kind"]) for e in replay.events
        ]
        dealt = [e for e in whole if e["version"] == 0 and e["kind"] == "dealt"]
        assert [(e["seat"], "cards" in e) for e in dealt] == [(s, s == seat) for s in range(3)]


def test_get_replay_pages_join_into_the_whole_game(client: RefereeClient) -> None:
    game = client.create_game("gin", ["Ann", "Bob"], max_hands=1)
    before = client.get_replay(game.game_id, token=ORGANIZER)  # the organizer may look at any time
    assert before.initial["hands"] and before.initial["stock"]
    # before any move, the events are the first deal's (version 0), with every card: the initial hands
    assert [(e["version"], e["index"], e["kind"]) for e in before.events] == [
        (0, 1, "hand_started"), (0, 2, "dealt"), (0, 3, "dealt")
    ]  # fmt: skip
    assert before.events[0]["upcard"] == before.initial["discard_pile"][-1]
    assert [set(e["cards"]) for e in before.events[1:]] == [set(h) for h in before.initial["hands"]]
    moves = _play_out(client, game, random.Random(2))
    whole = client.get_replay(game.game_id, token=game.tokens[1])
    paged = client.get_replay(game.game_id, token=game.tokens[1], max_events=7)
    one = client.get_replay(game.game_id, token=game.tokens[1], max_events=7, all_pages=False)
    assert whole.events == paged.events and whole.current == paged.current
    assert whole.next_after_version is None and one.next_after_version is not None
    assert len(one.events) <= 7 and one.events == whole.events[: len(one.events)]
    assert whole.current["version"] == moves and whole.current["phase"] == "match_over"
    assert whole.initial == before.initial and whole.events[: len(before.events)] == before.events
    assert all(e["kind"] != "drew" or e["source"] != "stock" or "card" in e for e in whole.events)  # every card


def test_analyze_hand(client: RefereeClient) -> None:
    analysis = client.analyze_hand(["AS", "2S", "3S", "7H", "7D", "7C", "9D", "9C", "9H", "KC", "4S"])
    assert analysis.min_deadwood == 10
    assert ("KC", 0) in analysis.knock_discards
    assert not analysis.truncated
    assert any(set(a.deadwood_cards) == {"KC"} for a in analysis.arrangements)
    ints = client.analyze_hand([engine.parse_card(t) for t in ("AS", "2S", "3S")], profile="rummy")
    assert ints.min_deadwood == 0 and ints.knock_discards == ()


def test_the_async_client_makes_every_call(referee: ServerThread) -> None:
    async def body() -> None:
        async with AsyncRefereeClient(referee.address) as client:
            assert await client.ping() > 0
            game = await client.create_game("gin", ["Ann", SeatSpec(open=True)], max_hands=1,
                                            preset_deals=[DEAL], token=ORGANIZER)  # fmt: skip
            joined = await client.join_game(game.game_id, "Zoe", seat=1)
            tokens = {0: game.tokens[0], 1: joined.token}
            watch = client.watch(game.game_id, token=tokens[0])
            snapshot = await watch.__anext__()
            assert isinstance(snapshot, GameSnapshot) and snapshot.version == 0
            assert await client.validate_move(game.game_id, engine.DrawStock(), token=tokens[1]) == 0
            moved = await client.submit_move(game.game_id, engine.DrawStock(), token=tokens[1])
            assert moved.version == 1
            knock = engine.Knock(engine.parse_card("KC"))
            assert knock in moved.snapshot.legal
            await client.submit_move(game.game_id, knock, token=tokens[1])
            while not (info := await client.get_game(game.game_id, token=tokens[0])).snapshot.over:
                seat = info.snapshot.to_act
                assert seat is not None
                mine = await client.get_game(game.game_id, token=tokens[seat])
                await client.submit_move(game.game_id, mine.legal[0], token=tokens[seat])
            events = [e async for e in watch]
            assert isinstance(events[-1], dict) and events[-1]["kind"] == "match_ended"
            replay = await client.get_replay(game.game_id, token=tokens[0], max_events=3)
            # the first deal (version 0, shown by the snapshot), then exactly the events watched
            assert [(e["version"], e["index"]) for e in replay.events] == [
                (0, 1), (0, 2), (0, 3), *((e["version"], e["index"]) for e in events if isinstance(e, dict))
            ]  # fmt: skip
            items = [e async for e in client.watch(game.game_id, after_version=FROM_START, token=tokens[1])]
            from_start = [e for e in items if isinstance(e, dict)]
            assert len(from_start) == len(items)  # no snapshot
            assert [(e["version"], e["index"]) for e in from_start] == [
                (e["version"], e["index"]) for e in replay.events
            ]
            assert from_start[2] == replay.events[2]  # seat 1 sees its own deal whole: its cards
            assert set(replay.events[2]["cards"]) == {engine.card_text(c) for c in DEAL.hands[1]}
            assert from_start[1]["kind"] == "dealt" and "cards" not in from_start[1]  # and not seat 0's
            analysis = await client.analyze_hand(["AS", "2S", "3S"])
            assert analysis.min_deadwood == 0
            with pytest.raises(RefereeError) as caught:
                await client.get_game(game.game_id, token="nope")
            assert caught.value.code == grpc.StatusCode.UNAUTHENTICATED

    asyncio.run(body())


def test_the_token_goes_as_bearer_metadata(referee: ServerThread) -> None:
    game_tokens: Sequence[str]
    with RefereeClient(referee.address) as anonymous:
        game = anonymous.create_game("gin", ["Ann", "Bob"])
        game_tokens = [game.tokens[0], game.tokens[1]]
    with RefereeClient(referee.address, game_tokens[1]) as seat1:
        assert seat1.get_game(game.game_id).snapshot.seat == 1  # the client's own token
        assert seat1.get_game(game.game_id, token=game_tokens[0]).snapshot.seat == 0  # one given to the call
