"""RULES.md section 4, attacked through every channel: what a seat, a spectator or a caller with a wrong token
gets from the referee never holds a card they may not see, in any field, however the card is written.

Each test plays a game from a preset deal or a seed through the real server and keeps a local engine replica, so
it knows at every version which cards each viewer may see (tests/server/test_hidden_info.py ``visible``). What
a viewer receives is scanned twice: as protobuf bytes (a card is a 2-byte string, ``b"\\x02TD"``) and as the
message's JSON (json_format, which also spells out Struct fields and every string a card could hide in, such as
an error message or a meld's text), where a card is its text standing alone ("TD", or "10D" as input spells it).
Besides the views, streams and answers of test_hidden_info.py, these tests cover the Gin defender's layoffs made
one by one, gin, resumed watches from old cursors, error side channels (the refusal of a card in the stock and of
a card in another hand must be the same), tokens of another game, of a finished game and of house-bot seats, and
request ids reused by another seat.
"""

from __future__ import annotations

import base64
import json
import random
import re
import sys
import threading
import urllib.request
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import httpx
import pytest
from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc import error_details_pb2  # type: ignore[import-untyped]
from grpc_status import rpc_status

import engine
import wire
from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from tests.server.refkit import (
    GIN_KNOCK_DEAL,
    ORGANIZER,
    Client,
    Game,
    bot_move,
    deal,
    expect_error,
    md,
    move_from_text,
    reason_of,
    wait_for,
)
from tests.server.test_hidden_info import visible

ALL = frozenset(range(52))
ALL_TEXTS = [engine.card_text(c) for c in range(52)]
SEED = bytes(range(7, 39))
# a card standing alone: not inside an id or token (URL-safe base64: A-Z a-z 0-9 _ -)
_CARD = re.compile(r"(?<![A-Za-z0-9_-])(10|[A2-9TJQK])([SHDC])(?![A-Za-z0-9_-])")


def cards_in(text: str) -> set[str]:
    """Every card text standing alone in ``text`` ("10D" read as "TD")."""
    return {("T" if rank == "10" else rank) + suit for rank, suit in _CARD.findall(text)}


def leaks_in(message: Message, hidden: frozenset[int]) -> list[str]:
    """The hidden cards in a message: in its bytes as protobuf strings, or anywhere in its JSON text."""
    data = message.SerializeToString()
    texts = {engine.card_text(c) for c in hidden}
    found = {t for t in texts if b"\x02" + t.encode() in data}
    found |= cards_in(json_format.MessageToJson(message)) & texts
    return sorted(found)


@dataclass
class Got:
    """What one viewer received: (version, event index or 0 for a whole answer, what, message or error text)."""

    items: list[tuple[int, int, str, Message | str]] = field(default_factory=list)

    def message(self, version: int, what: str, message: Message, index: int = 0) -> None:
        self.items.append((version, index, what, message))

    def error(self, version: int, what: str, exc: grpc.RpcError) -> None:
        self.items.append((version, 0, f"{what} error text", exc.details() or ""))
        status = rpc_status.from_call(exc)  # type: ignore[arg-type]
        if status is not None:
            self.items.append((version, 0, f"{what} status", status))
            for detail in status.details:
                info = error_details_pb2.ErrorInfo()
                if detail.Unpack(info):
                    self.items.append((version, 0, f"{what} ErrorInfo", info))
        for key, value in exc.trailing_metadata() or ():
            text = value.decode("latin-1") if isinstance(value, bytes) else value
            self.items.append((version, 0, f"{what} metadata {key}", text))


@dataclass
class Viewer:
    name: str
    token: str
    who: int  # a seat, or engine.SPECTATOR
    got: Got = field(default_factory=Got)
    allowed: dict[int, frozenset[int]] = field(default_factory=dict)


class Table:
    """A game played through the referee beside its engine replica, every viewer's answers kept and scanned."""

    def __init__(self, client: Client, game: Game, rules: engine.Rules, presets: Sequence[pb.PresetDeal] = (),
                 seed: bytes = SEED) -> None:  # fmt: skip
        self.client = client
        self.game = game
        self.state = engine.new_game(rules, seed, tuple(wire.deal_from_proto(d) for d in presets))
        self.version = 0
        self.viewers = [Viewer(f"seat {s}", t, s) for s, t in sorted(game.tokens.items())]
        if game.spectator:
            self.viewers.append(Viewer("spectator", game.spectator, engine.SPECTATOR))
        # version of a hand-ending move -> (the old hand's stock, index of the next hand's first event)
        self.ended: dict[int, tuple[frozenset[int], int]] = {}
        self.states = {0: self.state}
        self._remember()
        self.watches = [self._watch(v) for v in self.viewers]

    def _remember(self) -> None:
        for v in self.viewers:
            v.allowed[self.version] = visible(self.state, v.who)

    def _watch(self, viewer: Viewer) -> threading.Thread:
        def read() -> None:
            request = rpb.WatchGameRequest(game_id=self.game.game_id)
            for message in self.client.stub.WatchGame(request, metadata=md(viewer.token)):
                if message.HasField("snapshot"):
                    viewer.got.message(message.snapshot.version, "watch snapshot", _without_last_hand(message.snapshot))
                else:
                    e = message.event
                    viewer.got.message(e.version, f"watch event {e.kind}", e, e.index)

        thread = threading.Thread(target=read, daemon=True)
        thread.start()
        return thread

    def probe(self) -> None:
        """Every viewer's calls between two moves: GetGame (gRPC), a refused replay, and for a seat a validation
        of its first legal move and refusals of a discard of each card it may not see."""
        for v in self.viewers:
            view = self.client.view(self.game, v.token)
            assert view.version == self.version
            v.got.message(self.version, "view", _without_last_hand(view))
            try:
                self.client.replay(self.game, v.token)
            except grpc.RpcError as exc:
                v.got.error(self.version, "replay", exc)
            if v.who < 0:
                continue
            if view.legal_moves:
                checked = self.client.stub.ValidateMove(
                    rpb.ValidateMoveRequest(game_id=self.game.game_id, move=view.legal_moves[0]), metadata=md(v.token)
                )
                v.got.message(self.version, "validate", checked)

    def play(self, seat: int, move: str | None) -> rpb.SubmitMoveResponse | rpb.ResignResponse:
        """``seat`` plays ``move`` (engine text; None: resigns) after every viewer's probe; its answer is kept."""
        self.probe()
        response: rpb.SubmitMoveResponse | rpb.ResignResponse
        if move is None:
            played: engine.Move = engine.Resign()
            response = self.client.stub.Resign(rpb.ResignRequest(game_id=self.game.game_id),
                                               metadata=md(self.game.tokens[seat]))  # fmt: skip
        else:
            played = engine.parse_move(move)
            response = self.client.move(self.game, self.game.tokens[seat], move_from_text(move))
        mover = next(v for v in self.viewers if v.who == seat)
        for e in response.events:
            mover.got.message(e.version, f"answer event {e.kind}", e, e.index)
        mover.got.message(response.version, "answer view", _without_last_hand(response.view))
        before = self.state
        self.state, events = engine.apply(self.state, seat, played)
        self.version += 1
        assert response.version == self.version
        if any(e.kind == "hand_ended" for e in events):
            kinds = [e.kind for e in events]
            next_deal = kinds.index("hand_started") + 1 if "hand_started" in kinds else len(kinds) + 1
            self.ended[self.version] = (frozenset(before.stock), next_deal)
        self.states[self.version] = self.state
        self._remember()
        return response

    def hidden(self, viewer: Viewer, version: int, index: int) -> frozenset[int]:
        """What ``viewer`` may not see in an item of ``version`` (event ``index``; 0: a whole answer). The events
        of a hand-ending move before the next deal show the old hand's every hand: only its stock is hidden."""
        if version in self.ended and 0 < index < self.ended[version][1]:
            return self.ended[version][0]
        return ALL - viewer.allowed[version]

    def finish(self) -> int:
        """Waits for the watch streams (the match is over), then scans everything; how many items were scanned."""
        self.probe()
        for thread in self.watches:
            thread.join(30)
            assert not thread.is_alive(), "a watch did not end with the match"
        return sum(self.scan(v, v.got.items) for v in self.viewers)

    def scan(self, viewer: Viewer, items: Iterable[tuple[int, int, str, Message | str]]) -> int:
        n = 0
        for version, index, what, item in items:
            hidden = self.hidden(viewer, version, index)
            if isinstance(item, str):
                leaks = sorted(cards_in(item) & {engine.card_text(c) for c in hidden})
            else:
                leaks = leaks_in(item, hidden)
            assert not leaks, f"{viewer.name} got hidden {leaks} in {what} at version {version}.{index}: {item}"
            n += 1
        return n


def _without_last_hand(view: pb.GameView) -> pb.GameView:
    """A copy of ``view`` without the previous hand's result (every hand of it face up: scanned as events)."""
    copy = pb.GameView()
    copy.CopyFrom(view)
    copy.ClearField("last_hand")
    return copy


def _rules(game: Game) -> engine.Rules:
    options = {k: getattr(v, str(v.WhichOneof("value"))) for k, v in game.created.settings.options.items()}
    return engine.Rules.from_dict(options)


def _gin(client: Client, presets: Sequence[pb.PresetDeal], **fields: object) -> tuple[Game, Table]:
    game = client.create("gin", token=ORGANIZER, preset_deals=list(presets), allow_spectators=True, seed=SEED,
                         match=rpb.MatchSettings(max_hands=len(presets)), **fields)  # fmt: skip
    return game, Table(client, game, _rules(game), presets)


def _cards(text: str) -> frozenset[int]:
    return frozenset(engine.parse_cards(text.split()))


# ---------------------------------------------------------------------------------------------- the scan itself


def test_the_scan_finds_a_card_however_it_is_written() -> None:
    """A card in a repeated string, inside a longer string (a Struct's, an error's) or as "10D" is found; ids and
    tokens that happen to hold two such letters are not cards."""
    hidden = _cards("TD AS KC 5H")
    assert leaks_in(pb.GameView(hand=["TD"]), hidden) == ["TD"]
    event = pb.Event(kind="x")
    event.data.update({"note": "not in your hand: AS, KC"})
    assert leaks_in(event, hidden) == ["AS", "KC"]
    assert cards_in("bad card 10D") == {"TD"}
    assert leaks_in(pb.GameView(game_id="g_xKC5H-TD_AS"), hidden) == []


# ---------------------------------------------------------------------------------------------- side channels


def _outcome(client: Client, game: Game, token: str, move: str, card: str) -> tuple[str, str | None, str]:
    """How ValidateMove answers ``move`` (naming ``card``): status, reason and the message with the card blanked."""
    try:
        client.stub.ValidateMove(rpb.ValidateMoveRequest(game_id=game.game_id, move=move_from_text(move)),
                                 metadata=md(token))  # fmt: skip
    except grpc.RpcError as exc:
        return exc.code().name, reason_of(exc), (exc.details() or "").replace(card, "XX")
    return "OK", None, ""


def assert_no_side_channel(table: Table, seat: int, templates: Sequence[str]) -> None:
    """The refusal of a move naming a card ``seat`` may not see is the same wherever that card is: in the stock or
    in another hand (reason, status and message alike, the card's own text aside)."""
    state = table.state
    hidden = ALL - visible(state, seat)
    stock = hidden & frozenset(state.stock)
    elsewhere = hidden - stock
    assert stock and elsewhere
    for template in templates:
        answers: dict[str, set[tuple[str, str | None, str]]] = {"stock": set(), "another hand": set()}
        for where, cards in (("stock", stock), ("another hand", elsewhere)):
            for c in cards:
                text = engine.card_text(c)
                answers[where].add(_outcome(table.client, table.game, table.game.tokens[seat], template.format(text),
                                            text))  # fmt: skip
        assert len(answers["stock"]) == 1 and answers["stock"] == answers["another hand"], (template, answers)
        ((status, _, message),) = answers["stock"]
        assert status != "OK" and not cards_in(message) - {"XX"}, (template, answers)


# ------------------------------------------------------------------------------------------------ Gin knocks


def test_gin_defender_laying_off_one_by_one_stays_hidden_until_the_hand_ends(client: Client) -> None:
    """RULES.md 4: after a knock the knocker's melds and deadwood are public, the defender's cards hidden until the
    hand ends; each meld and lay-off the defender puts on the table is public as it is made."""
    game, table = _gin(client, [GIN_KNOCK_DEAL])
    table.play(1, "draw stock")
    assert_no_side_channel(table, 1, ["discard {}", "knock {}"])
    table.play(1, "knock KC")
    view = client.view(game, game.tokens[0])
    assert view.phase == pb.PHASE_LAYOFF and view.knock.deadwood_cards == ["2C"]
    ids = {frozenset(m.cards): m.id for m in view.melds}
    table.play(0, "meld JS QS KS")
    knocker_view = client.view(game, game.tokens[1])
    assert knocker_view.seats[0].hand_size == 7 and list(knocker_view.hand) == ["2C"]
    table.play(0, f"layoff 4S {ids[_texts('AS 2S 3S')]}")
    table.play(0, f"layoff 7H {ids[_texts('4H 5H 6H')]}")
    table.play(0, f"layoff TD {ids[_texts('7D 8D 9D')]}")
    table.play(0, "done")
    assert table.state.phase == "match_over"
    assert table.finish() > 50


def _texts(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Seat 1 draws 9D from the stock and goes gin discarding KC: AS 2S 3S, 4H 5H 6H, 7D 8D 9D TD. Seat 0's hand is
# shown only by the hand's end, in the same answer.
GIN_DEAL = deal(0, ["4S 7H JD JS QS KS 5C 5D 9C 8C", "AS 2S 3S 4H 5H 6H 7D 8D TD KC"], "QC", "9D")


def test_gin_reveals_the_defender_only_with_the_hand_end(client: Client) -> None:
    _, table = _gin(client, [GIN_DEAL, GIN_KNOCK_DEAL])
    table.play(1, "draw stock")
    table.play(1, "knock KC")
    assert table.state.hand_no == 1
    table.play(1, "draw stock")
    table.play(1, "knock KC")
    table.play(0, "declare best")
    assert table.state.phase == "match_over"
    assert table.finish() > 30


# ------------------------------------------------------------------------------------- watches resumed late


def _stream(client: Client, game: Game, token: str, after_version: int | None = None,
            after_index: int | None = None) -> list[pb.Event]:  # fmt: skip
    request = rpb.WatchGameRequest(game_id=game.game_id)
    if after_version is not None:
        request.after_version = after_version
    if after_index is not None:
        request.after_index = after_index
    return [m.event for m in client.stub.WatchGame(request, metadata=md(token)) if m.HasField("event")]


def test_watches_resumed_from_old_cursors_get_what_was_streamed_live(client: Client) -> None:
    """A seat or spectator resuming a watch from any old position, even once the hand (or match) has ended and
    every hand was shown, gets the events as they were cut for it live: never the stock, never a card drawn
    by another seat before the end."""
    game, table = _gin(client, [GIN_KNOCK_DEAL, GIN_DEAL])
    table.play(1, "draw stock")
    midway = table.version
    table.play(1, "knock KC")
    table.play(0, "declare best")
    table.play(1, "draw stock")
    table.play(1, "knock KC")
    assert table.state.phase == "match_over"
    assert table.finish() > 30
    for v in table.viewers:
        live = [item for _, _, what, item in v.got.items if what.startswith("watch event")]
        live_bytes = [e.SerializeToString() for e in live]  # type: ignore[union-attr]
        for after_version in range(table.version):
            resumed = _stream(client, game, v.token, after_version)
            assert [e.SerializeToString() for e in resumed] == [
                b for e, b in zip(live, live_bytes, strict=True) if e.version > after_version  # type: ignore[union-attr]
            ], (v.name, after_version)
        resumed = _stream(client, game, v.token, midway, 0)
        assert resumed and resumed[0].version == midway and table.scan(
            v, [(e.version, e.index, "resumed event", e) for e in resumed]
        )


# ------------------------------------------------------------------------------------------------- tokens


def _every_call(client: Client, game: Game, token: str | None) -> list[tuple[str, grpc.RpcError | Message]]:
    """Each RPC that takes a game's token, called on ``game`` with ``token``: its answer or its error."""
    gid = game.game_id
    calls = {
        "GetGame": lambda: client.stub.GetGame(rpb.GetGameRequest(game_id=gid), metadata=md(token)),
        "SubmitMove": lambda: client.stub.SubmitMove(
            rpb.SubmitMoveRequest(game_id=gid, move=move_from_text("draw stock")), metadata=md(token)),
        "ValidateMove": lambda: client.stub.ValidateMove(
            rpb.ValidateMoveRequest(game_id=gid, move=move_from_text("draw stock")), metadata=md(token)),
        "WatchGame": lambda: next(iter(client.stub.WatchGame(rpb.WatchGameRequest(game_id=gid), metadata=md(token)))),
        "GetReplay": lambda: client.stub.GetReplay(rpb.GetReplayRequest(game_id=gid), metadata=md(token)),
        "Resign": lambda: client.stub.Resign(rpb.ResignRequest(game_id=gid), metadata=md(token)),
    }  # fmt: skip
    answers: list[tuple[str, grpc.RpcError | Message]] = []
    for name, call in calls.items():
        try:
            answers.append((name, call()))
        except grpc.RpcError as exc:
            answers.append((name, exc))
    return answers


def test_tokens_of_another_game_a_finished_game_and_the_organizer_see_nothing_of_a_game(client: Client) -> None:
    """A seat or spectator token of game A, live or finished, is no key to game B: every RPC of B refuses it
    (UNAUTHENTICATED BAD_TOKEN), and the refusals name no card of B. The organizer token is no seat's either: it
    gets B's replay (every card, by design), nothing else (PERMISSION_DENIED ORGANIZER_NO_SEAT: a valid token)."""
    other = client.create("gin", token=ORGANIZER, allow_spectators=True, seed=bytes(range(50, 82)),
                          match=rpb.MatchSettings(target_score=1))  # fmt: skip
    finished = client.create("gin", allow_spectators=True, match=rpb.MatchSettings(target_score=1))
    client.stub.Resign(rpb.ResignRequest(game_id=finished.game_id), metadata=md(finished.tokens[0]))
    game = client.create("gin", token=ORGANIZER, preset_deals=[GIN_KNOCK_DEAL], allow_spectators=True)
    everything = {engine.card_text(c) for c in range(52)}
    strangers = [*other.tokens.values(), other.spectator, *finished.tokens.values(), finished.spectator,
                 "st_" + "A" * 43, "", None]  # fmt: skip
    for token in strangers:
        for name, answer in _every_call(client, game, token):
            assert isinstance(answer, grpc.RpcError), f"{name} answered a stranger's token: {answer}"
            assert answer.code() == grpc.StatusCode.UNAUTHENTICATED, (name, token, answer)
            assert not cards_in(answer.details() or "") & everything
    for name, answer in _every_call(client, game, ORGANIZER):
        if name == "GetReplay":
            assert not isinstance(answer, grpc.RpcError)
        else:
            assert isinstance(answer, grpc.RpcError), f"{name} answered the organizer token: {answer}"
            assert answer.code() == grpc.StatusCode.PERMISSION_DENIED, (name, answer)
            assert reason_of(answer) == "ORGANIZER_NO_SEAT" and not cards_in(answer.details() or "")
    assert client.view(game, game.tokens[1]).version == 0  # nothing was played by any of them


def test_house_bot_seats_tokens_are_never_handed_out(client: Client) -> None:
    """A house bot's seat has no token for the creator, cannot be joined, and nothing a seat or spectator gets
    holds its token (the bot host's key to its hand)."""
    created = client.stub.CreateGame(rpb.CreateGameRequest(
        profile="gin", seats=[pb.SeatSpec(display_name="Ann"), pb.SeatSpec(bot="gin")], allow_spectators=True))
    assert [t.seat for t in created.seat_tokens] == [0]
    for seat in (1, None):
        with expect_error(grpc.StatusCode.FAILED_PRECONDITION, "SEAT_TAKEN"):
            client.stub.JoinGame(rpb.JoinGameRequest(game_id=created.game_id, display_name="Eve", seat=seat))
    game = Game(created.game_id, {0: created.seat_tokens[0].token}, created.spectator_token, created)
    for token in (game.tokens[0], game.spectator):
        view = client.view(game, token)
        assert view.seats[1].kind == pb.SEAT_KIND_BOT
        data = view.SerializeToString() + client.stub.GetGame(
            rpb.GetGameRequest(game_id=game.game_id), metadata=md(token)).settings.SerializeToString()
        assert not re.search(rb"(st|sp)_[A-Za-z0-9_-]{43}", data), data


def test_a_request_id_of_another_seat_answers_only_the_callers_own_move(client: Client) -> None:
    """Idempotency records are per token: seat 0 resending seat 1's request_id (guessable, "move-1") gets its own
    move judged, never seat 1's recorded answer (which holds seat 1's hand and the card it drew)."""
    game = client.create("gin", token=ORGANIZER, preset_deals=[GIN_KNOCK_DEAL], allow_spectators=True)
    first = client.move(game, game.tokens[1], move_from_text("draw stock"), request_id="move-1")
    assert "2C" in first.view.hand
    hidden = ALL - _cards(" ".join(client.view(game, game.tokens[0]).hand) + " QC")
    for token in (game.tokens[0], game.spectator):
        try:
            answer: Message = client.move(game, token, move_from_text("draw stock"), request_id="move-1")
        except grpc.RpcError as exc:
            assert exc.code() in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.PERMISSION_DENIED)
            assert not cards_in(exc.details() or "") & {engine.card_text(c) for c in hidden}
            continue
        raise AssertionError(f"another seat's request_id answered: {answer}")
    assert client.view(game, game.tokens[1]).version == 1


# ---------------------------------------------------------------------------------------- automatic moves


def _replayed_move(events: Sequence[pb.Event]) -> tuple[int, engine.Move]:
    """The seat and move a version of a replay (the referee's events) committed: a timeout's too."""
    for e in events:
        if e.kind == "timed_out" and e.timed_out.forfeit:
            return e.seat, engine.LoseOnTime()
        if e.kind == "drew":
            return e.seat, engine.DrawStock() if e.drew.source == "stock" else engine.DrawDiscard()
        if e.kind == "discarded":
            return e.seat, engine.Discard(engine.parse_card(e.discarded.card))
        if e.kind == "passed":
            return e.seat, engine.Pass()
    raise AssertionError(f"no move in {[e.kind for e in events]}")


def test_automatic_moves_of_timed_out_seats_show_no_hidden_card(redis_server: object) -> None:
    """With a time control and the auto_move policy the referee plays for seats that do not move (draw from the
    stock, discard the card drawn), then forfeits them: the auto_moved and timed_out events, the clock events and
    the drawn card's secret reach no one but whom RULES.md section 4 lets see them."""
    from tests.server.refkit import ServerThread

    with ServerThread(redis_server.url, firer=True) as server:  # type: ignore[attr-defined]
        client = Client(server.address)
        try:
            control = pb.TimeControl(per_move=pb.TimeControl.PerMove(limit_ms=30))
            policy = pb.TimeoutPolicy(kind=pb.TimeoutPolicy.KIND_AUTO_MOVE, max_auto_moves=2)
            game = client.create("gin", token=ORGANIZER, preset_deals=[GIN_KNOCK_DEAL], seed=SEED,
                                 allow_spectators=True, time_control=control, timeout_policy=policy)  # fmt: skip
            table = Table(client, game, _rules(game), [GIN_KNOCK_DEAL])
            for thread in table.watches:
                thread.join(60)
                assert not thread.is_alive(), "the timeouts never ended the match"
            events = [e for page in client.replay(game) for e in page.events]
            kinds = {e.kind for e in events}
            assert {"auto_moved", "timed_out", "clock_started"} <= kinds, kinds
            by_version: dict[int, list[pb.Event]] = {}
            for e in events:
                by_version.setdefault(e.version, []).append(e)
            for version in sorted(v for v in by_version if v > 0):
                seat, move = _replayed_move(by_version[version])
                before = table.state
                table.state, played = engine.apply(table.state, seat, move)
                table.version = version
                if any(e.kind == "hand_ended" for e in played):
                    table.ended[version] = (frozenset(before.stock), len(by_version[version]) + 1)
                table._remember()
            assert table.state.phase == "match_over"
            assert sum(table.scan(v, v.got.items) for v in table.viewers) > 20
        finally:
            client.close()


# ------------------------------------------------------------------------------------------- the HTTP port


def _body_leaks(body: bytes, hidden: frozenset[int]) -> list[str]:
    """Hidden cards in an HTTP body: protobuf strings, card words of its text, and of an error's decoded details."""
    texts = {engine.card_text(c) for c in hidden}
    found = {t for t in texts if b"\x02" + t.encode() in body}
    text = body.decode("latin-1")
    found |= cards_in(text) & texts
    for value in re.findall(r'"value"\s*:\s*"([A-Za-z0-9+/=_-]*)"', text):
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), altchars=b"-_" if "-" in value or "_" in value
                                   else None)  # fmt: skip
        found |= set(leaks_in(error_details_pb2.ErrorInfo.FromString(decoded), hidden))
    return sorted(found)


def test_every_viewer_over_http_never_receives_a_hidden_card_through_a_knock(web: object) -> None:
    """The Gin knock of the gRPC test above, with every viewer's calls made on the HTTP port: Connect JSON and
    binary, Connect GET, gRPC-Web, a refused move's JSON error (its ErrorInfo decoded) and a refused replay,
    and a Connect JSON watch stream per viewer."""
    from tests.server.webkit import PROTOCOLS, SERVICE, call, connect_watch_frames

    client = Client(web.address)  # type: ignore[attr-defined]
    http = httpx.Client(base_url=web.http_url, timeout=60.0)  # type: ignore[attr-defined]
    try:
        game, table = _gin(client, [GIN_KNOCK_DEAL])
        got: dict[str, list[tuple[int, str, bytes]]] = {v.name: [] for v in table.viewers}
        streamed: dict[str, list[bytes]] = {v.name: [] for v in table.viewers}

        def read(viewer: Viewer) -> None:
            for _, payload in connect_watch_frames(web.http_url, game.game_id, viewer.token,  # type: ignore[attr-defined]
                                                   timeout=60.0):  # fmt: skip
                streamed[viewer.name].append(payload)

        readers = [threading.Thread(target=read, args=(v,), daemon=True) for v in table.viewers]
        for reader in readers:
            reader.start()

        def probe() -> None:
            request = rpb.GetGameRequest(game_id=game.game_id)
            query = json_format.MessageToJson(request, indent=None)
            for v in table.viewers:
                for protocol in PROTOCOLS:
                    answer = call(http, protocol, "GetGame", request, rpb.GetGameResponse, v.token)
                    assert answer.status == "OK", answer
                    got[v.name].append((table.version, f"GetGame {protocol}", answer.body))
                reply = http.get(f"/{SERVICE}/GetGame", params={"connect": "v1", "encoding": "json", "message": query},
                                 headers={"authorization": f"Bearer {v.token}"})  # fmt: skip
                assert reply.status_code == 200, reply.text
                got[v.name].append((table.version, "GetGame GET", reply.content))
                hidden = sorted(ALL - v.allowed[table.version])
                for card in hidden[:3] + hidden[-3:]:
                    refused = call(http, "connect-json", "SubmitMove", rpb.SubmitMoveRequest(
                        game_id=game.game_id, move=move_from_text(f"discard {engine.card_text(card)}")),
                        rpb.SubmitMoveResponse, v.token)  # fmt: skip
                    assert refused.status != "OK"
                    got[v.name].append((table.version, f"refused discard of {engine.card_text(card)}",
                                        refused.body.replace(engine.card_text(card).encode(), b"XX")))  # fmt: skip
                replay = call(http, "connect-json", "GetReplay", rpb.GetReplayRequest(game_id=game.game_id),
                              rpb.GetReplayResponse, v.token)  # fmt: skip
                got[v.name].append((table.version, "replay refusal", replay.body))

        for seat, move in ((1, "draw stock"), (1, "knock KC"), (0, "meld JS QS KS"), (0, "layoff 4S 0"),
                           (0, "layoff 7H 1"), (0, "layoff TD 2"), (0, "done")):  # fmt: skip
            probe()
            table.play(seat, move)
        assert table.state.phase == "match_over"
        for reader in readers:
            reader.join(60)
            assert not reader.is_alive(), "an HTTP watch did not end with the match"
        checked = 0
        for v in table.viewers:
            for version, what, body in got[v.name]:
                leaks = _body_leaks(body, ALL - v.allowed[version])
                assert not leaks, f"{v.name} got hidden {leaks} in {what} at version {version}: {body!r}"
                checked += 1
            for payload in streamed[v.name]:
                data = json.loads(payload)
                item = data.get("snapshot") or data.get("event") or {}
                version, index = int(item.get("version", 0)), int(item.get("index", 0))
                leaks = _body_leaks(payload, table.hidden(v, version, index))
                assert not leaks, f"{v.name} got hidden {leaks} in its HTTP watch at {version}.{index}: {payload!r}"
                checked += 1
        assert checked > 100
        assert table.finish() > 50
    finally:
        http.close()
        client.close()


# ------------------------------------------------------------------------------------------ tournament programs


def test_a_tournament_program_is_not_handed_the_organizer_token(monkeypatch: pytest.MonkeyPatch) -> None:
    """An entrant program (untrusted code playing one seat) must not inherit the organizer token that the
    tournament reads from $RUMMY_ORGANIZER_TOKEN: with it, GetReplay shows every hand and the stock of a game in
    progress (RULES.md 4; the organizer may see everything at any time)."""
    from clients.tournament.entrants import ProgramBot

    monkeypatch.setenv("RUMMY_ORGANIZER_TOKEN", "org-secret-of-the-tournament")
    program = ("import os; print(os.environ.get('RUMMY_BOT_NAME'), os.environ.get('RUMMY_ORGANIZER_TOKEN', '-'),"
               " flush=True); input()")
    bot = ProgramBot("spy", [sys.executable, "-c", program], seed=1)
    try:
        seen = bot._lines.get(timeout=60)  # its first line (the reader thread's queue)
    finally:
        bot.close()
    assert seen.split() == ["spy", "-"]  # its name, and no organizer token


# ------------------------------------------------------------------------------------------------ Rummy


# Rummy, dealer 0, seat 1 first: seat 1 melds AS 2S 3S at once (so the stock may be rebuilt), then both seats
# draw from the stock and discard what they drew until the stock runs out and is rebuilt from the discard pile.
RUMMY_DEAL = deal(0, ["KS QH JD TC 9S 8D 7C 6H 5D 4H", "AS 2S 3S 5C 9H JS 4D 8C KH 7S"], "QS")


@pytest.mark.parametrize("restock", ["shuffle", "turn_over"])
def test_rummy_restock_shows_no_one_the_new_stock(client: Client, restock: str) -> None:
    """RULES.md 3 and 4: when the stock is rebuilt from the discard pile its order stays hidden (the restocked
    event's stock is the referee's), each card drawn from it is the drawer's alone, and a refusal naming a card of
    the stock or of the other hand says the same."""
    game = client.create("rummy", token=ORGANIZER, preset_deals=[RUMMY_DEAL], seed=SEED, allow_spectators=True,
                         options={"restock": pb.OptionValue(string_value=restock)},
                         match=rpb.MatchSettings(max_hands=1))  # fmt: skip
    table = Table(client, game, _rules(game), [RUMMY_DEAL])
    drawn = table.state.stock[-1]
    table.play(1, "draw stock")
    table.play(1, "meld AS 2S 3S")
    assert_no_side_channel(table, 1, ["discard {}", "layoff {} 0", "meld {} 5C 9H"])
    rebuilt_at = None
    while table.state.phase != "match_over":
        seat = table.state.to_act
        if rebuilt_at is None and table.state.restocks:
            rebuilt_at = table.version
            assert_no_side_channel(table, seat, ["discard {}"])
        if restock == "shuffle" and rebuilt_at is not None and table.version >= rebuilt_at + 5:
            table.play(1 - seat, None)  # resigns (not on its turn): every hand face up, the stock never
        elif table.state.phase == "draw":
            table.play(seat, "draw stock")
            drawn = next(iter(engine.cards_of(table.state.hands[seat] & ~table.states[table.version - 1].hands[seat])))
        else:
            table.play(seat, f"discard {engine.card_text(drawn)}")
    assert rebuilt_at is not None and table.state.restocks >= 1
    assert table.state.last_hand is not None
    assert table.state.last_hand["reason"] == ("resigned" if restock == "shuffle" else "stalled")
    assert table.finish() > 500


# Take or pass: seat 1 passes the upcard QC, seat 0 takes it (everyone saw it) and discards KC; seat 1 draws JD
# from the stock and goes big gin: AS 2S 3S, 4H 5H 6H, 7D 8D 9D TD JD.
BIG_GIN_DEAL = deal(0, ["4S 7H JS QS KS 5C 5D 9C 8C KC", "AS 2S 3S 4H 5H 6H 7D 8D 9D TD"], "QC", "JD")


def test_take_or_pass_and_big_gin_show_only_the_upcard_the_taken_card_and_the_melds(client: Client) -> None:
    game, table = _gin(client, [BIG_GIN_DEAL], options={
        "first_upcard_rule": pb.OptionValue(string_value="take_or_pass")})  # fmt: skip
    table.play(1, "pass")
    table.play(0, "draw discard")
    assert list(client.view(game, game.tokens[1]).seats[0].known_cards) == ["QC"]
    assert_no_side_channel(table, 0, ["discard {}", "knock {}"])
    table.play(0, "discard KC")
    table.play(1, "draw stock")
    table.play(1, "big_gin")
    assert table.state.phase == "match_over"
    assert table.finish() > 30


# ------------------------------------------------------------------------------------------- logs and metrics


def test_logs_and_metrics_of_refused_moves_and_a_house_bot_game_carry_no_card(private_redis: object,
                                                                             tmp_path: Path) -> None:  # fmt: skip
    """`serve --log-format json --metrics-port 0` with its bot host: a seat plays a house bot to the end, naming
    hidden cards in refused moves (a stock card, the bot's cards) and in malformed requests on the way; neither
    the JSON log nor /metrics ever holds a card."""
    from tests.server.test_observability import start_serve, stop_serve

    served = start_serve(private_redis.url, tmp_path)  # type: ignore[attr-defined]
    client = Client(served.address)
    try:
        created = client.stub.CreateGame(rpb.CreateGameRequest(
            profile="gin", seats=[pb.SeatSpec(display_name="Ann"), pb.SeatSpec(bot="gin")],
            match=rpb.MatchSettings(target_score=1)))  # fmt: skip
        game = Game(created.game_id, {0: created.seat_tokens[0].token}, "", created)
        raw = client.channel.unary_unary("/rummy.v1.RefereeService/SubmitMove")
        rng = random.Random(3)
        refused = 0
        while True:
            view = client.view(game, game.tokens[0])
            if not view.HasField("to_act"):
                break
            if view.to_act != 0:
                wait_for(lambda: _seat_0_may_move(client, game), "the house bot moved")
                continue
            mine = set(view.hand) | set(view.discard_pile)
            for card in [c for c in ALL_TEXTS if c not in mine][:2]:
                try:
                    client.move(game, game.tokens[0], move_from_text(f"discard {card}"), request_id=f"r{refused}")
                except grpc.RpcError:
                    refused += 1
            with expect_error(grpc.StatusCode.INVALID_ARGUMENT, "MALFORMED_REQUEST"):  # expected_version: "KC"
                raw(rpb.SubmitMoveRequest(game_id=game.game_id).SerializeToString() + b"\x1a\x02KC",
                    metadata=md(game.tokens[0]))  # fmt: skip
            client.move(game, game.tokens[0], bot_move(view, rng), request_id=f"m{view.version}")
        assert refused > 4
        with urllib.request.urlopen(served.metrics_url, timeout=10) as reply:
            metrics = reply.read().decode()
    finally:
        client.close()
        stop_serve(served.process)
    assert "rummy_moves_total" in metrics
    assert not cards_in(metrics), sorted(cards_in(metrics))
    lines = [json.loads(line) for line in served.log.read_text().splitlines() if line.strip()]
    assert any(line.get("game_id") == game.game_id for line in lines)
    for line in lines:
        for text in _strings(line):
            assert not cards_in(text), f"a card in the log: {line}"


def _seat_0_may_move(client: Client, game: Game) -> bool:
    view = client.view(game, game.tokens[0])
    return not view.HasField("to_act") or view.to_act == 0


def _strings(value: object) -> Iterator[str]:
    """Every string in parsed JSON, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def test_connect_get_answers_are_never_stored_by_a_cache(web: object) -> None:
    """A Connect GET of GetGame is one URL for every token (the token is a header), and its answer holds the
    caller's hand: it says that no cache may keep it (``no-store``) and that it varies with the Authorization
    header, so that no browser or proxy cache hands seat 0's hand to seat 1 (RULES.md 4)."""
    from tests.server.webkit import SERVICE

    client = Client(web.address)  # type: ignore[attr-defined]
    try:
        game = client.create("gin", token=ORGANIZER, preset_deals=[GIN_KNOCK_DEAL])
        query = json_format.MessageToJson(rpb.GetGameRequest(game_id=game.game_id), indent=None)
        with httpx.Client(base_url=web.http_url, timeout=60.0) as http:  # type: ignore[attr-defined]
            for method in ("GetGame", "GetReplay"):
                reply = http.get(f"/{SERVICE}/{method}", params={"connect": "v1", "encoding": "json", "message": query},
                                 headers={"authorization": f"Bearer {game.tokens[0]}"})  # fmt: skip
                assert reply.status_code == (200 if method == "GetGame" else 403), reply.text
                assert "no-store" in reply.headers.get("cache-control", ""), (method, reply.headers)
                assert "authorization" in reply.headers.get("vary", "").lower(), (method, reply.headers)
            assert "4S" in http.get(f"/{SERVICE}/GetGame", params={"connect": "v1", "encoding": "json",
                                    "message": query}, headers={"authorization": f"Bearer {game.tokens[0]}"}).text
    finally:
        client.close()
