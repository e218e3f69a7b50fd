"""Idempotent answers rebuilt from the game log (issue 8, items 9 and 12): a resent move gets its first answer
byte for byte, whether the game is still at that version or has moved on (the state replayed from the config),
and with the seats as they were then even when a seat was joined since."""

from __future__ import annotations

import random
from pathlib import Path

import redis

from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.redis_launcher import RedisProcess
from server.store import idem_key
from tests.server.refkit import ORGANIZER, Client, Game, bot_move, md, move_from_text


def _wire(response: rpb.SubmitMoveResponse) -> bytes:
    return bytes(response.SerializeToString())


def _raw_move(client: Client, request: rpb.SubmitMoveRequest, token: str) -> bytes:
    """The answer to a SubmitMove as the bytes on the wire (not parsed and serialized again here)."""
    call = client.channel.unary_unary(
        "/rummy.v1.RefereeService/SubmitMove",
        request_serializer=rpb.SubmitMoveRequest.SerializeToString,
        response_deserializer=bytes,
    )
    return bytes(call(request, metadata=md(token)))


def test_resent_moves_get_their_first_answers_byte_for_byte_after_the_game_moved_on(client: Client) -> None:
    game = client.create("gin", token=ORGANIZER, seed=b"rebuild-seed-0123456")
    rng = random.Random(5)
    sent: list[tuple[str, rpb.SubmitMoveRequest, rpb.SubmitMoveResponse]] = []
    view = client.view(game, game.tokens[0])
    for n in range(120):  # past the end of the first hand (a knock or gin, then a new deal) when it comes
        token = game.tokens[view.to_act]
        own = client.view(game, token)
        if own.phase == pb.PHASE_MATCH_OVER:
            break
        request = rpb.SubmitMoveRequest(game_id=game.game_id, move=bot_move(own, rng), request_id=f"m{n}")
        response = client.stub.SubmitMove(request, metadata=md(token))
        sent.append((token, request, response))
        view = response.view
    for token, request, first in sent:
        again = client.stub.SubmitMove(request, metadata=md(token))
        assert _wire(again) == _wire(first), f"version {first.version}"
    assert client.view(game, game.tokens[0]).version == len(sent)


def test_a_resend_shows_the_seats_as_they_were_before_a_join(client: Client) -> None:
    create = rpb.CreateGameRequest(
        profile="gin",
        seats=[pb.SeatSpec(display_name="Seat zero", open=True), pb.SeatSpec(display_name="Bob")],
    )
    created = client.stub.CreateGame(create)
    game = Game(created.game_id, {t.seat: t.token for t in created.seat_tokens}, "", created)
    bob = game.tokens[1]
    view = client.view(game, bob)
    assert view.to_act == 1 and view.seats[0].open
    draw = rpb.SubmitMoveRequest(game_id=game.game_id, move=move_from_text("draw stock"), request_id="d")
    drew = client.stub.SubmitMove(draw, metadata=md(bob))
    card = next(c for c in drew.view.hand)
    discard = rpb.SubmitMoveRequest(game_id=game.game_id, move=move_from_text(f"discard {card}"), request_id="x")
    discarded = client.stub.SubmitMove(discard, metadata=md(bob))
    joined = client.stub.JoinGame(rpb.JoinGameRequest(game_id=game.game_id, display_name="Joiner"))
    assert joined.seat == 0
    now = client.view(game, bob)
    assert not now.seats[0].open and now.seats[0].display_name == "Joiner"
    for request, first in ((draw, drew), (discard, discarded)):
        again = client.stub.SubmitMove(request, metadata=md(bob))
        assert _wire(again) == _wire(first)
        assert again.view.seats[0].open and again.view.seats[0].display_name == "Seat zero"
    # a move after the join shows the seat joined, and so does its resend
    ann = joined.token
    moved = client.stub.SubmitMove(
        rpb.SubmitMoveRequest(game_id=game.game_id, move=move_from_text("draw stock"), request_id="a"),
        metadata=md(ann),
    )
    assert not moved.view.seats[0].open
    again = client.stub.SubmitMove(
        rpb.SubmitMoveRequest(game_id=game.game_id, move=move_from_text("draw stock"), request_id="a"),
        metadata=md(ann),
    )
    assert _wire(again) == _wire(moved)


def test_the_records_are_small_and_say_nothing_of_the_answer(client: Client, redis_server: RedisProcess) -> None:
    game = client.create("gin", token=ORGANIZER, seed=b"records-seed-0123456")
    view = client.view(game, game.tokens[1])
    client.move(game, game.tokens[1], move_from_text("draw stock"), request_id="r" * 128)
    records = redis.Redis.from_url(redis_server.url).get(idem_key(game.game_id))
    assert records is not None and len(records) == 20
    assert b"r" * 8 not in records and not any(card.encode() in records for card in view.hand)


def test_another_referee_process_gives_the_same_bytes(
    client: Client, redis_server: RedisProcess, tmp_path: Path
) -> None:
    """A resend answered by another referee process (another hash seed for the events' Struct maps) is the same
    bytes: answers are serialized deterministically."""
    from tests.clients.clientkit import ServerProcess

    other = ServerProcess(redis_server.url, log_dir=tmp_path)
    other.start()
    try:
        game = client.create("gin", token=ORGANIZER, seed=b"two-processes-012345")
        token = game.tokens[1]
        request = rpb.SubmitMoveRequest(game_id=game.game_id, move=move_from_text("draw stock"), request_id="p")
        far = Client(other.address)
        try:
            answers = [_raw_move(c, request, token) for c in (client, far, client, far)]
        finally:
            far.close()
        assert len(set(answers)) == 1
        assert rpb.SubmitMoveResponse.FromString(answers[0]).version == 1
    finally:
        other.stop()
