"""server.connect_api's codecs: the JSON codec (protobuf-py's native JSON over rummy_pb/*_pb.py) writes exactly
what google.protobuf.json_format writes and reads it back, for every request and response of a real game; an
undecodable body is MALFORMED_REQUEST; a response over 256 KiB is refused as gRPC refuses it."""

from __future__ import annotations

import json
import random

import pytest
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from google.protobuf import json_format
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2

from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.connect_api import _NATIVE, BinaryCodec, JsonCodec
from tests.server.refkit import ORGANIZER, Client, bot_move, md

SERVICE = rpb.DESCRIPTOR.services_by_name["RefereeService"]


def test_every_request_and_response_has_its_native_class() -> None:
    for method in SERVICE.methods:
        assert method.input_type.full_name in _NATIVE and method.output_type.full_name in _NATIVE


def _same(message: Message) -> None:
    codec = JsonCodec()
    data = codec.encode(message)
    assert json.loads(data) == json_format.MessageToDict(message)
    assert codec.decode(data, type(message)) == message
    assert codec.decode(json_format.MessageToJson(message).encode(), type(message)) == message


def test_json_is_json_format_for_a_whole_game(client: Client) -> None:
    game = client.create("gin", token=ORGANIZER, seed=bytes(32), allow_spectators=True,
                         match=rpb.MatchSettings(target_score=20, max_hands=2))  # fmt: skip
    _same(game.created)
    rng = random.Random(3)
    moves = 0
    while True:
        got = client.stub.GetGame(rpb.GetGameRequest(game_id=game.game_id), metadata=md(game.spectator))
        _same(got)
        if got.view.phase == 7:  # match over
            break
        seat = got.view.to_act
        move = bot_move(client.view(game, game.tokens[seat]), rng)
        request = rpb.SubmitMoveRequest(game_id=game.game_id, move=move, expected_version=got.view.version,
                                        request_id=f"m{moves}")  # fmt: skip
        _same(request)
        _same(client.stub.SubmitMove(request, metadata=md(game.tokens[seat])))
        moves += 1
    for page in client.replay(game):
        _same(page)
    _same(client.stub.AnalyzeHand(rpb.AnalyzeHandRequest(cards=["AS", "2S", "3S", "4S", "9H", "9D", "9C", "KD"])))
    _same(rpb.WatchGameRequest(game_id=game.game_id, after_version=2**40, after_index=3))


def test_other_messages_go_through_json_format() -> None:
    message = health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)
    assert json.loads(JsonCodec().encode(message)) == {"status": "SERVING"}
    assert JsonCodec().decode(b'{"service": "x"}', health_pb2.HealthCheckRequest).service == "x"


@pytest.mark.parametrize("body", [b"{", b'{"gameId": 5}', b"[]", b'"x"', b"\xff"])
def test_undecodable_json_is_malformed_request(body: bytes) -> None:
    with pytest.raises(ConnectError) as caught:
        JsonCodec().decode(body, rpb.GetGameRequest)
    assert caught.value.code is Code.INVALID_ARGUMENT and caught.value.details


def test_unknown_json_fields_are_ignored_and_an_empty_body_is_the_empty_message() -> None:
    assert JsonCodec().decode(b'{"gameId": "g_x", "future": 1}', rpb.GetGameRequest).game_id == "g_x"
    assert JsonCodec().decode(b"", rpb.PingRequest) == rpb.PingRequest()


def test_undecodable_binary_is_malformed_request() -> None:
    with pytest.raises(ConnectError) as caught:
        BinaryCodec().decode(b"\xff\xff\xff", rpb.GetGameRequest)
    assert caught.value.code is Code.INVALID_ARGUMENT and caught.value.details


@pytest.mark.parametrize("codec", [JsonCodec(), BinaryCodec()], ids=["json", "proto"])
def test_a_response_over_256_kib_is_resource_exhausted(codec: JsonCodec | BinaryCodec) -> None:
    big = rpb.JoinGameResponse(token="x" * (300 * 1024))
    with pytest.raises(ConnectError) as caught:
        codec.encode(big)
    assert caught.value.code is Code.RESOURCE_EXHAUSTED
