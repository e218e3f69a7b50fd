"""RULES.md section 4 over the HTTP port: the byte scan of tests/server/test_hidden_info.py over the raw HTTP
bodies one seat receives (Connect JSON, Connect binary and gRPC-Web views, its move responses, validations,
refusals, and its WatchGame stream over Connect JSON) finds no card that seat may not see at that version.

Seat 0 plays over HTTP, seat 1 over gRPC; a local engine replica (same seed, same moves) knows what seat 0 may
see at every version. In JSON a card is a quoted string (``"TD"``), in protobuf bytes a 2-byte string
(``b"\\x02TD"``), and in an error's message a word. One hand only (max_hands 1): the move that ends it reveals
every hand, so then only that hand's stock stays hidden.
"""

from __future__ import annotations

import json
import random
import threading

import httpx

import engine
from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server import codec
from tests.server.refkit import ORGANIZER, Client, ServerThread, bot_move
from tests.server.test_hidden_info import ALL, SEED, _find, _find_text, visible
from tests.server.webkit import SERVICE, call, envelope

SEAT = 0


def _json_leaks(body: bytes, hidden: frozenset[int]) -> list[str]:
    leaks = [engine.card_text(c) for c in hidden if b'"' + engine.card_text(c).encode() + b'"' in body]
    try:
        data = json.loads(body)
    except ValueError:
        return leaks
    if isinstance(data, dict) and isinstance(data.get("message"), str):  # an error's words
        leaks += _find_text(data["message"], hidden)
    return leaks


def _stream(http_url: str, game_id: str, token: str, into: list[tuple[int, str, bytes]]) -> threading.Thread:
    """WatchGame over Connect JSON for the whole match: every envelope, raw, with its version."""

    def read() -> None:
        headers = {"authorization": f"Bearer {token}", "content-type": "application/connect+json"}
        body = envelope(json.dumps({"gameId": game_id}).encode())
        with httpx.Client(base_url=http_url, timeout=120.0) as http, \
                http.stream("POST", f"/{SERVICE}/WatchGame", content=body, headers=headers) as reply:  # fmt: skip
            data = reply.read()
        at = 0
        while at < len(data):
            flags, size = data[at], int.from_bytes(data[at + 1 : at + 5], "big")
            payload = data[at + 5 : at + 5 + size]
            at += 5 + size
            if flags & 0x02:
                into.append((-1, "end of stream", payload))
                continue
            message = json.loads(payload)
            part = message.get("snapshot") or message.get("event")
            into.append((int(part.get("version", 0)), "snapshot" if "snapshot" in message else "event", payload))

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def test_a_seat_over_http_never_receives_a_hidden_card(web: ServerThread) -> None:
    client = Client(web.address)
    http = httpx.Client(base_url=web.http_url, timeout=60.0)
    try:
        game = client.create("gin", token=ORGANIZER, seed=SEED, match=rpb.MatchSettings(target_score=500, max_hands=1))
        token = game.tokens[SEAT]
        options = {k: getattr(v, str(v.WhichOneof("value"))) for k, v in game.created.settings.options.items()}
        state = engine.new_game(engine.Rules.from_dict(options), SEED)
        hidden: dict[int, frozenset[int]] = {0: ALL - visible(state, SEAT)}
        got: list[tuple[int, str, bytes]] = []  # (version, what, raw body); JSON unless what says binary
        streamed: list[tuple[int, str, bytes]] = []
        reader = _stream(web.http_url, game.game_id, token, streamed)
        rng = random.Random(5)
        version = 0
        while state.phase != "match_over":
            view = None
            for protocol in ("connect-json", "connect-proto", "grpc-web"):
                answer = call(http, protocol, "GetGame", rpb.GetGameRequest(game_id=game.game_id),
                              rpb.GetGameResponse, token)  # fmt: skip
                assert answer.status == "OK" and answer.message.view.version == version
                got.append((version, f"view {protocol}", answer.body))
                view = answer.message.view
            assert view is not None
            if view.discard_pile:  # seen, but not in the hand: refused, and the refusal says nothing more
                discard = pb.Move(discard=pb.Move.Discard(card=view.discard_pile[0]))
                refused = call(http, "connect-json", "SubmitMove", rpb.SubmitMoveRequest(game_id=game.game_id,
                               move=discard), rpb.SubmitMoveResponse, token)  # fmt: skip
                assert refused.status != "OK"
                got.append((version, "refusal", refused.body))
            replay = call(http, "connect-json", "GetReplay", rpb.GetReplayRequest(game_id=game.game_id),
                          rpb.GetReplayResponse, token)  # fmt: skip
            assert replay.reason == "MATCH_NOT_OVER"
            got.append((version, "replay refusal", replay.body))
            seat = state.to_act
            if seat == SEAT:
                move = bot_move(view, rng)
                checked = call(http, "connect-json", "ValidateMove", rpb.ValidateMoveRequest(
                    game_id=game.game_id, move=move), rpb.ValidateMoveResponse, token)  # fmt: skip
                got.append((version, "validation", checked.body))
                moved = call(http, "connect-json", "SubmitMove", rpb.SubmitMoveRequest(game_id=game.game_id,
                             move=move), rpb.SubmitMoveResponse, token)  # fmt: skip
                assert moved.status == "OK", moved
                got.append((version + 1, "move response", moved.body))
            else:
                move = bot_move(client.view(game, game.tokens[seat]), rng)
                client.move(game, game.tokens[seat], move)
            before = state
            state, _ = engine.apply(state, seat, codec.move_from_proto(move))
            version += 1
            hidden[version] = ALL - visible(state, SEAT)
            if state.phase == "match_over":  # every hand shown: only the stock stays face down
                hidden[version] = frozenset(before.stock)
        final = call(http, "connect-json", "GetGame", rpb.GetGameRequest(game_id=game.game_id), rpb.GetGameResponse,
                     token)  # fmt: skip
        got.append((version, "final view", final.body))
        reader.join(60)
        assert not reader.is_alive(), "the stream did not end with the match"
        assert streamed and streamed[0][1] == "snapshot" and streamed[-1][1] == "end of stream"
        got += [part for part in streamed if part[0] >= 0]
        checked = 0
        for at, what, body in got:
            if what.endswith(("connect-proto", "grpc-web")):
                leaks = _find(body, hidden[at])
            else:
                leaks = _json_leaks(body, hidden[at])
            assert not leaks, f"seat {SEAT} got hidden {leaks} in {what} at version {at}"
            checked += 1
        assert checked > 100 and version > 10
        # the scan can fail: seat 0's JSON view holds its own hand, which seat 1 may not see
        first = got[0]
        assert first[1] == "view connect-json", first
        assert _json_leaks(first[2], ALL - visible(engine.new_game(engine.Rules.from_dict(options), SEED), 1)), first
    finally:
        http.close()
        client.close()
