"""The SDK's Resign (both clients), match results that say how they ended, and the fairness check of a game."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from clients.runner import SeatResult
from clients.sdk import AsyncRefereeClient, RefereeClient, RefereeError
from clients.sdk.fairness import verify_game
from tests.clients.clientkit import ServerThread


def test_resign_by_a_seat_not_to_act_and_again(client: RefereeClient) -> None:
    game = client.create_game("gin", ["Ann", "Bob"], allow_spectators=True)
    assert len(game.settings.seed_commitment) == 64 and game.settings.seed is None
    resigned = client.resign(game.game_id, token=game.tokens[0])  # dealer 0: seat 1 is to act
    assert [e["kind"] for e in resigned.events] == ["resigned", "hand_ended", "match_ended"]
    snap = resigned.snapshot
    assert snap.over and snap.result is not None
    assert snap.result["winners"] == [1] and snap.result["ended"] == "resigned" and snap.result["resigned"] == 0
    assert snap.result["seat_ends"] == ["resigned", "finished"]
    assert SeatResult(game.game_id, 0, final=snap).seat_end == "resigned"
    assert SeatResult(game.game_id, 1, final=snap).seat_end == "finished"
    again = client.resign(game.game_id, token=game.tokens[0])
    assert again.version == resigned.version and again.events == resigned.events
    with pytest.raises(RefereeError) as exc:
        client.resign(game.game_id, token=game.spectator_token)
    assert (exc.value.code, exc.value.reason) == (grpc.StatusCode.PERMISSION_DENIED, "SPECTATOR")
    # the match is over: the seed is revealed, and the deal verifies
    replay = client.get_replay(game.game_id, token=game.tokens[1])
    assert replay.settings.seed is not None and replay.settings.seed_commitment == game.settings.seed_commitment
    assert verify_game(client, game.game_id, token=game.tokens[1]).hands == 1


def test_the_async_client_resigns(referee: ServerThread) -> None:
    async def body() -> None:
        async with AsyncRefereeClient(referee.address) as client:
            game = await client.create_game("rummy", ["Ann", "Bob", "Cy"])
            resigned = await client.resign(game.game_id, token=game.tokens[2], request_id="bye")
            resent = await client.resign(game.game_id, token=game.tokens[2], request_id="bye")
            assert resent.proto == resigned.proto
            result = resigned.snapshot.result
            assert result is not None and result["seat_ends"] == ["finished", "finished", "resigned"]
            assert result["winners"] == [0, 1]  # no points yet: the two others share the win

    asyncio.run(body())
