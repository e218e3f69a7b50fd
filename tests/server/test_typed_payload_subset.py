"""The typed event messages (``Event.payload``, issue 11) never carry a card that the same event's ``data`` Struct
does not: both are filled from the one dict ``engine.event_for`` gave that viewer, so the typed fields cannot show
a seat, a spectator or a replay's reader more than the Struct always did (RULES.md section 4).

Checked over a real server for every answer a seat or a spectator gets in whole matches (GetGame, SubmitMove,
Resign, WatchGame from the deal) and the replays, in Gin, Hollywood Gin and three-seat Rummy. (The review of the
refactor also compared these answers, typed fields left out, with f6cb0f5's byte for byte: the same.)
"""

from __future__ import annotations

import random

import pytest
from google.protobuf.message import Message

import engine
from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from tests.server.refkit import ORGANIZER, Client, md

TEXTS = [engine.card_text(c).encode() for c in range(52)]


def _cards(message: Message) -> set[bytes]:
    """The card texts in a message's encoding (a card is a 2-byte string: its length, then its text)."""
    data = message.SerializeToString()
    return {t for t in TEXTS if b"\x02" + t in data}


def _events(message: Message) -> list[pb.Event]:
    """Every Event inside ``message``."""
    if isinstance(message, pb.Event):
        return [message]
    found: list[pb.Event] = []
    for field, value in message.ListFields():
        if field.message_type is None or field.message_type.GetOptions().map_entry:
            continue
        for part in value if field.is_repeated else [value]:
            found += _events(part)
    return found


def _check(message: Message, seen: list[str]) -> None:
    for event in _events(message):
        which = event.WhichOneof("payload")
        assert which == event.kind, event
        extra = _cards(getattr(event, which)) - _cards(event.data)
        assert not extra, (event.kind, extra, event)
        seen.append(event.kind)


@pytest.mark.parametrize(("profile", "seats", "options", "resign_at"), [
    ("gin", 2, {"max_hands": 2}, None),
    ("hollywood-gin", 2, {"max_hands": 2}, 60),
    ("rummy", 3, {"max_hands": 1}, None),
])  # fmt: skip
def test_typed_event_messages_carry_no_card_their_struct_lacks(
    client: Client, profile: str, seats: int, options: dict[str, int], resign_at: int | None
) -> None:
    request = rpb.CreateGameRequest(
        profile=profile, seats=[pb.SeatSpec(display_name=f"P{i}") for i in range(seats)], allow_spectators=True,
        seed=bytes(range(32)), options={k: pb.OptionValue(int_value=v) for k, v in options.items()},
    )  # fmt: skip
    created = client.stub.CreateGame(request, metadata=md(ORGANIZER))
    gid, spectator = created.game_id, created.spectator_token
    tokens = {t.seat: t.token for t in created.seat_tokens}
    readers = [*tokens.values(), spectator]
    rng = random.Random(7)
    seen: list[str] = []
    for step in range(3000):
        views = {token: client.stub.GetGame(rpb.GetGameRequest(game_id=gid), metadata=md(token)) for token in readers}
        for got in views.values():
            _check(got, seen)
        view = views[spectator].view
        if view.phase == pb.PHASE_MATCH_OVER:
            break
        mover = tokens[view.to_act]
        if step == resign_at:
            _check(client.stub.Resign(rpb.ResignRequest(game_id=gid), metadata=md(mover)), seen)
            continue
        legal = views[mover].view.legal_moves
        move = legal[rng.randrange(len(legal))]
        _check(client.stub.SubmitMove(rpb.SubmitMoveRequest(game_id=gid, move=move), metadata=md(mover)), seen)
    else:
        pytest.fail("the match did not end")
    for token in readers:
        for update in client.stub.WatchGame(rpb.WatchGameRequest(game_id=gid, after_version=0), metadata=md(token),
                                            timeout=60):  # fmt: skip
            _check(update, seen)
        _check(client.stub.GetReplay(rpb.GetReplayRequest(game_id=gid), metadata=md(token), timeout=60), seen)
    assert {"dealt", "drew", "discarded", "hand_ended", "match_ended"} <= set(seen), set(seen)
