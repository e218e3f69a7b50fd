"""CreateGame and JoinGame, through the real server and a real Redis: CreateGame without seats (the profile's
player count, RULES.md 3: rummy-g4a is "3 by default", the others 2, or the `players` option's, every seat left
open for JoinGame); display names; the organizer token where a seat is needed; a seat number no game has."""

from __future__ import annotations

import grpc
import pytest

from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from tests.server.refkit import ORGANIZER, Client, expect_error, md, move_from_text


def _create(client: Client, profile: str, **options: int) -> rpb.CreateGameResponse:
    request = rpb.CreateGameRequest(
        profile=profile, options={k: pb.OptionValue(int_value=v) for k, v in options.items()}
    )
    created: rpb.CreateGameResponse = client.stub.CreateGame(request)
    return created


@pytest.mark.parametrize(("profile", "options", "players"), [
    ("rummy-g4a", {}, 3), ("rummy", {}, 2), ("gin", {}, 2), ("oklahoma-gin", {}, 2), ("rummy", {"players": 5}, 5),
    ("rummy-g4a", {"players": 2}, 2),
])  # fmt: skip
def test_no_seats_means_the_profiles_player_count_all_open(
    client: Client, profile: str, options: dict[str, int], players: int
) -> None:
    created = _create(client, profile, **options)
    assert not created.seat_tokens, "an open seat has no token until it is joined"
    assert len(created.settings.seats) == players
    assert created.settings.options["players"].int_value == players
    tokens = []
    for seat in range(players):
        joined = client.stub.JoinGame(rpb.JoinGameRequest(game_id=created.game_id, display_name=f"P{seat}"))
        assert joined.seat == seat
        tokens.append(joined.token)
    with expect_error(grpc.StatusCode.FAILED_PRECONDITION):
        client.stub.JoinGame(rpb.JoinGameRequest(game_id=created.game_id, display_name="late"))
    view = client.stub.GetGame(rpb.GetGameRequest(game_id=created.game_id), metadata=md(tokens[0])).view
    assert len(view.seats) == players
    assert [s.display_name for s in view.seats] == [f"P{i}" for i in range(players)]


def test_no_seats_with_a_player_count_the_game_cannot_have_is_refused(client: Client) -> None:
    for profile, players in (("gin", 3), ("rummy", 7), ("rummy-g4a", 1)):
        with expect_error(grpc.StatusCode.INVALID_ARGUMENT, "INVALID_OPTION"):
            _create(client, profile, players=players)
    with expect_error(grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_PROFILE"):
        _create(client, "canasta")


def test_a_display_name_of_only_blanks_is_refused(client: Client) -> None:
    """A name is shown to every seat and spectator: one that shows nothing (only spaces) is no name."""
    for blank in (" ", "   ", "\u3000", " \u00a0"):
        with expect_error(grpc.StatusCode.INVALID_ARGUMENT, "INVALID_NAME"):
            client.create("gin", names=("Ann", blank))
        created = _create(client, "gin")
        with expect_error(grpc.StatusCode.INVALID_ARGUMENT, "INVALID_NAME"):
            client.stub.JoinGame(rpb.JoinGameRequest(game_id=created.game_id, display_name=blank))
        joined = client.stub.JoinGame(rpb.JoinGameRequest(game_id=created.game_id, display_name=" Ann "))
        assert joined.seat == 0, "the refused join took no seat"


def test_the_organizer_token_where_a_seat_is_needed_is_permission_denied(client: Client) -> None:
    """STYLE.md's table: a valid token that is not allowed is PERMISSION_DENIED (a bad one UNAUTHENTICATED). The
    organizer token creates games and reads replays; it holds no seat, so a move or a seat's view with it is
    refused as that (ORGANIZER_NO_SEAT), not as a token the referee does not know; nothing changes."""
    game = client.create("gin", token=ORGANIZER)
    before = client.view(game, game.tokens[0])
    with expect_error(grpc.StatusCode.PERMISSION_DENIED, "ORGANIZER_NO_SEAT"):
        client.move(game, ORGANIZER, move_from_text("draw stock"))
    with expect_error(grpc.StatusCode.PERMISSION_DENIED, "ORGANIZER_NO_SEAT"):
        client.stub.ValidateMove(rpb.ValidateMoveRequest(game_id=game.game_id, move=move_from_text("draw stock")),
                                 metadata=md(ORGANIZER))  # fmt: skip
    with expect_error(grpc.StatusCode.PERMISSION_DENIED, "ORGANIZER_NO_SEAT"):
        client.view(game, ORGANIZER)
    with expect_error(grpc.StatusCode.PERMISSION_DENIED, "ORGANIZER_NO_SEAT"):
        next(iter(client.stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id), metadata=md(ORGANIZER))))
    with expect_error(grpc.StatusCode.UNAUTHENTICATED, "BAD_TOKEN"):
        client.view(game, "not-a-token-of-anything")
    assert client.view(game, game.tokens[0]) == before
    assert client.replay(game), "the organizer still reads the replay at any time"


def test_a_seat_number_no_game_has_is_invalid_seat_before_the_game_is_looked_up(client: Client) -> None:
    """A malformed request is refused as that whatever the game: JoinGame's seat -1 or 6 (a game has at most 6
    seats) is INVALID_SEAT even for a game id that does not exist (it was GAME_NOT_FOUND there)."""
    created = _create(client, "gin")
    for game_id in ("g_doesnotexist0000000000", created.game_id):
        for seat in (-1, 6, 2**31 - 1):
            with expect_error(grpc.StatusCode.INVALID_ARGUMENT, "INVALID_SEAT"):
                client.stub.JoinGame(rpb.JoinGameRequest(game_id=game_id, seat=seat, display_name="Eve"))
    with expect_error(grpc.StatusCode.INVALID_ARGUMENT, "INVALID_SEAT"):
        client.stub.JoinGame(rpb.JoinGameRequest(game_id=created.game_id, seat=2, display_name="Eve"))  # of 2
    with expect_error(grpc.StatusCode.NOT_FOUND, "GAME_NOT_FOUND"):
        client.stub.JoinGame(rpb.JoinGameRequest(game_id="g_doesnotexist0000000000", seat=1, display_name="Eve"))
    assert client.stub.JoinGame(rpb.JoinGameRequest(game_id=created.game_id, display_name="Eve")).seat == 0
