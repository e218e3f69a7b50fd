"""RULES.md section 4 over the wire: a byte scan of everything each seat and a spectator receive (views, streams,
move responses, validations, errors, replay refusals) finds no card text they may not see.

The test keeps a local engine replica of the game (same seed, same moves), so it knows at every version which
cards each viewer may see: their own hand (seats), the discard pile, the table melds, and cards everyone saw taken
from the discard pile or laid face up by a knocker. Every other card's text (say "TD") must not occur in what the
viewer got at that version; in protobuf bytes a card is a 2-byte string, so the scan looks for b"\\x02TD", and in
error texts for the word "TD". The scan covers an event's typed message (``Event.payload``) and its Struct alike.
"""

from __future__ import annotations

import random
import re
import threading
from dataclasses import dataclass, field

import grpc

import engine
from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server import codec
from tests.server.refkit import ORGANIZER, Client, Game, bot_move, md

SEED = bytes(range(100, 132))
ALL = frozenset(range(52))


@dataclass
class Received:
    """What one viewer got: (version, what, bytes) for protobuf messages and (version, text) for error texts."""

    messages: list[tuple[int, str, bytes]] = field(default_factory=list)
    texts: list[tuple[int, str]] = field(default_factory=list)

    def error(self, version: int, exc: grpc.RpcError) -> None:
        self.texts.append((version, exc.details() or ""))
        for key, value in exc.trailing_metadata() or ():
            if key.endswith("-bin"):
                self.messages.append((version, f"error metadata {key}", value))


def visible(state: engine.GameState, viewer: int) -> frozenset[int]:
    """The cards ``viewer`` may see in ``state`` (RULES.md section 4)."""
    mask = 0
    for c in state.discard:
        mask |= 1 << c
    for meld in state.melds:
        mask |= meld.cards
    for known in state.known:
        mask |= known
    if viewer >= 0:
        mask |= state.hands[viewer]
    return frozenset(engine.cards_of(mask))


def _find(data: bytes, cards: frozenset[int]) -> list[str]:
    return [engine.card_text(c) for c in cards if b"\x02" + engine.card_text(c).encode() in data]


def _find_text(text: str, cards: frozenset[int]) -> list[str]:
    return [engine.card_text(c) for c in cards if re.search(rf"\b{engine.card_text(c)}\b", text)]


def _watch(client: Client, game: Game, token: str, into: Received) -> threading.Thread:
    def read() -> None:
        for message in client.stub.WatchGame(rpb.WatchGameRequest(game_id=game.game_id), metadata=md(token)):
            if message.HasField("snapshot"):
                snapshot = message.snapshot
                snapshot.ClearField("last_hand")  # the previous hand, revealed at its end (scanned as events)
                into.messages.append((snapshot.version, "snapshot", snapshot.SerializeToString()))
            else:
                event = message.event
                assert event.WhichOneof("payload") == event.kind  # the scan covers the typed fields too
                into.messages.append((event.version, f"event {event.index} {event.kind}", event.SerializeToString()))

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def _probe(client: Client, game: Game, token: str, version: int, into: Received) -> None:
    """A viewer's calls between two moves: GetGame, a refused move, a validation, a refused replay."""
    view = client.view(game, token)
    assert view.version == version
    view.ClearField("last_hand")
    into.messages.append((version, "view", view.SerializeToString()))
    if view.discard_pile:  # a card the viewer sees, but cannot discard: refused
        try:
            client.move(game, token, pb.Move(discard=pb.Move.Discard(card=view.discard_pile[0])))
        except grpc.RpcError as exc:
            into.error(version, exc)
    if view.legal_moves:
        validated = client.stub.ValidateMove(
            rpb.ValidateMoveRequest(game_id=game.game_id, move=view.legal_moves[0]), metadata=md(token)
        )
        into.messages.append((version, "validate", validated.SerializeToString()))
    try:
        client.replay(game, token)
    except grpc.RpcError as exc:
        into.error(version, exc)


def _check(
    name: str, got: Received, allowed: dict[int, frozenset[int]], ended: dict[int, tuple[frozenset[int], int]]
) -> int:
    checked = 0
    for version, what, data in got.messages:
        # the events of a move that ended a hand, before the next deal, reveal the old hand: only its stock is
        # hidden then (what.split()[1] is the event's index)
        old_hand = what.startswith("event") and version in ended and int(what.split()[1]) < ended[version][1]
        hidden = ended[version][0] if old_hand else ALL - allowed[version]
        leaks = _find(data, hidden)
        assert not leaks, f"{name} got hidden {leaks} in {what} at version {version}"
        checked += 1
    for version, text in got.texts:
        leaks = _find_text(text, ALL - allowed[version])
        assert not leaks, f"{name} got hidden {leaks} in the error {text!r} at version {version}"
        checked += 1
    return checked


def _run(client: Client, profile: str, names: tuple[str, ...], target: int) -> None:
    game = client.create(profile, names, token=ORGANIZER, seed=SEED, allow_spectators=True,
                         match=rpb.MatchSettings(target_score=target, max_hands=3))  # fmt: skip
    options = {k: getattr(v, str(v.WhichOneof("value"))) for k, v in game.created.settings.options.items()}
    state = engine.new_game(engine.Rules.from_dict(options), SEED)
    viewers = {f"seat {s}": (token, s) for s, token in game.tokens.items()}
    viewers["spectator"] = (game.spectator, engine.SPECTATOR)
    received = {name: Received() for name in viewers}
    allowed = {name: {0: visible(state, who)} for name, (_, who) in viewers.items()}
    # version of a hand-ending move -> (the old hand's stock, index of the next hand's first event)
    ended: dict[int, tuple[frozenset[int], int]] = {}
    readers = [_watch(client, game, token, received[name]) for name, (token, _) in viewers.items()]
    rng = random.Random(profile)
    version = 0
    while state.phase != "match_over":
        for name, (token, _) in viewers.items():
            _probe(client, game, token, version, received[name])
        seat = state.to_act
        own = client.view(game, game.tokens[seat])
        move = bot_move(own, rng)
        response = client.move(game, game.tokens[seat], move)
        mover = received[f"seat {seat}"]
        for event in response.events:
            assert event.WhichOneof("payload") == event.kind
            mover.messages.append((event.version, f"event {event.index} {event.kind}", event.SerializeToString()))
        response.view.ClearField("last_hand")
        mover.messages.append((response.version, "move response view", response.view.SerializeToString()))
        before = state
        state, events = engine.apply(state, seat, codec.move_from_proto(move))
        version += 1
        assert response.version == version
        if any(e.kind == "hand_ended" for e in events):
            kinds = [e.kind for e in events]
            next_deal = kinds.index("hand_started") + 1 if "hand_started" in kinds else len(kinds) + 1
            ended[version] = (frozenset(before.stock), next_deal)
        for name, (_, who) in viewers.items():
            allowed[name][version] = visible(state, who)
    for reader in readers:
        reader.join(30)
        assert not reader.is_alive(), "a watch stream did not end with the match"
    total = sum(_check(name, received[name], allowed[name], ended) for name in viewers)
    assert total > 100 * len(viewers)
    assert len(ended) >= 1


def test_gin_seats_and_spectator_never_receive_a_hidden_card(client: Client) -> None:
    _run(client, "gin", ("Ann", "Bob"), target=40)


def test_rummy_seats_and_spectator_never_receive_a_hidden_card(client: Client) -> None:
    _run(client, "rummy", ("Ann", "Bob", "Cy"), target=60)


def test_the_scan_finds_a_card_where_there_is_one() -> None:
    """The scan itself works: a view holding a hand shows those cards, and error texts are searched by word."""
    view = pb.GameView(hand=["TD", "AS"], discard_pile=["KC"])
    assert sorted(_find(view.SerializeToString(), frozenset(range(52)))) == ["AS", "KC", "TD"]
    assert _find_text("not in your hand: TD", frozenset([engine.parse_card("TD")])) == ["TD"]
    assert _find_text("DISCARD_TAKEN_CARD", frozenset(range(52))) == []
