"""Provably fair deals through a real referee: the commitment published at creation, the seed revealed only once the
match is over, and `rummy-referee verify` on a saved record and on a live game."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest

from clients.sdk import RefereeClient
from clients.sdk.fairness import FairnessError, fairness_settings, verify_game, verify_record
from engine.fairness import seed_commitment
from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.cli import main as referee_cli
from tests.server.refkit import (
    GIN_KNOCK_DEAL,
    GIN_KNOCK_MOVES,
    ORGANIZER,
    Client,
    Game,
    ServerThread,
    bot_move,
    md,
    move_from_text,
)


def _finish(client: Client, game: Game, seed: int = 3) -> None:
    rng = random.Random(seed)
    view = client.view(game, game.tokens[0])
    while view.phase != pb.PHASE_MATCH_OVER:
        token = game.tokens[view.to_act]
        view = client.move(game, token, bot_move(client.view(game, token), rng)).view


def _record(address: str, game_id: str) -> dict[str, Any]:
    """A saved game record (docs/records.md) as far as verification reads it."""
    with RefereeClient(address, ORGANIZER) as sdk:
        replay = sdk.get_replay(game_id)
    s = replay.settings
    return {
        "format": "rummy-referee/game-record",
        "version": 1,
        "game_id": game_id,
        "settings": {"profile": s.profile, "options": dict(s.options), **fairness_settings(s)},
        "events": [dict(e) for e in replay.events],
    }


def _verify_file(tmp_path: Path, record: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    path = tmp_path / "game.json"
    path.write_text(json.dumps(record))
    code = referee_cli(["verify", str(path)])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_commitment_published_at_creation_seed_revealed_only_once_over(client: Client) -> None:
    game = client.create("gin", options={"target_score": pb.OptionValue(int_value=10)}, allow_spectators=True)
    commitment = game.created.seed_commitment
    assert len(commitment) == 64 and game.created.settings.seed_commitment == commitment
    for token in (game.tokens[0], game.spectator):
        got = client.stub.GetGame(rpb.GetGameRequest(game_id=game.game_id), metadata=md(token))
        assert got.settings.seed_commitment == commitment and not got.settings.seed
    before = client.replay(game, ORGANIZER)  # not even the organizer learns a random seed before the end
    assert before[-1].settings.seed_commitment == commitment and not before[-1].settings.seed
    _finish(client, game)
    after = client.replay(game, game.tokens[1])[-1].settings
    assert len(after.seed) == 32 and after.seed_commitment == commitment
    assert seed_commitment(game.game_id, after.seed) == commitment
    got = client.stub.GetGame(rpb.GetGameRequest(game_id=game.game_id), metadata=md(game.tokens[0]))
    assert not got.settings.seed  # revealed by GetReplay only


@pytest.mark.parametrize(("profile", "names", "target"), [("gin", ("A", "B"), 30), ("rummy", ("A", "B", "C"), 40)])
def test_a_saved_record_verifies_and_tampering_fails(
    referee_server: ServerThread, client: Client, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    profile: str, names: tuple[str, ...], target: int,
) -> None:  # fmt: skip
    game = client.create(profile, names, options={"target_score": pb.OptionValue(int_value=target)})
    _finish(client, game)
    record = _record(referee_server.address, game.game_id)
    code, out = _verify_file(tmp_path, record, capsys)
    assert code == 0 and "verified" in out, out

    swapped = copy.deepcopy(record)
    dealt = [e for e in swapped["events"] if e["kind"] == "dealt"]
    dealt[0]["cards"][0], dealt[1]["cards"][0] = dealt[1]["cards"][0], dealt[0]["cards"][0]
    code, out = _verify_file(tmp_path, swapped, capsys)
    assert code == 1 and "FAILED: deal" in out, out

    other_seed = copy.deepcopy(record)
    other_seed["settings"]["seed"] = "00" * 32
    code, out = _verify_file(tmp_path, other_seed, capsys)
    assert code == 1 and "FAILED: commitment" in out, out

    other_game = copy.deepcopy(record)
    other_game["game_id"] = "g_another"
    code, out = _verify_file(tmp_path, other_game, capsys)
    assert code == 1 and "FAILED: commitment" in out, out


def test_preset_deals_are_covered_by_the_commitment(
    referee_server: ServerThread, client: Client, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    game = client.create("gin", token=ORGANIZER, preset_deals=[GIN_KNOCK_DEAL], seed=b"fair-seed-0123456",
                         options={"target_score": pb.OptionValue(int_value=25)})  # fmt: skip
    for seat, text in GIN_KNOCK_MOVES:
        client.move(game, game.tokens[seat], move_from_text(text))
    record = _record(referee_server.address, game.game_id)
    assert record["settings"]["seed"] == b"fair-seed-0123456".hex() and len(record["settings"]["preset_deals"]) == 1
    assert verify_record(record).preset_hands == 1
    tampered = copy.deepcopy(record)
    stock = tampered["settings"]["preset_deals"][0]["stock"]
    stock[0], stock[1] = stock[1], stock[0]  # deep in the stock: no event shows it, the commitment does
    with pytest.raises(FairnessError) as exc:
        verify_record(tampered)
    assert exc.value.what == "commitment"
    code, out = _verify_file(tmp_path, tampered, capsys)
    assert code == 1 and "commitment" in out


def test_verify_a_live_game(referee_server: ServerThread, client: Client, capsys: pytest.CaptureFixture[str]) -> None:
    game = client.create("gin", options={"target_score": pb.OptionValue(int_value=10)})
    # before the end the seed is secret: nothing to verify yet
    code = referee_cli(["verify", "--referee", referee_server.address, "--game", game.game_id, "--token", ORGANIZER])
    assert code == 2 and "revealed only once the match is over" in capsys.readouterr().err
    _finish(client, game)
    with RefereeClient(referee_server.address, game.tokens[0]) as sdk:
        assert verify_game(sdk, game.game_id).hands >= 1
    code = referee_cli(
        ["verify", "--referee", referee_server.address, "--game", game.game_id, "--token", game.tokens[1]]
    )
    out = capsys.readouterr()
    assert code == 0 and f"{game.game_id}: verified:" in out.out, out.err


def test_verify_needs_a_record_or_a_referee_and_a_game(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert referee_cli(["verify"]) == 2
    assert referee_cli(["verify", "--referee", "127.0.0.1:1"]) == 2  # no --game
    assert "give a RECORD file" in capsys.readouterr().err
    missing = tmp_path / "missing.json"
    assert referee_cli(["verify", str(missing)]) == 2
    (tmp_path / "other.json").write_text(json.dumps({"format": "something-else"}))
    assert referee_cli(["verify", str(tmp_path / "other.json")]) == 2
    assert "not a game record" in capsys.readouterr().err


def test_a_record_written_by_save_record_verifies_and_replays_its_resign(
    referee_server: ServerThread, client: Client, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The records rummy-tournament writes (clients.sdk.records.save_record) carry the commitment and, once the
    match is over, the seed: `rummy-referee verify` checks them as they are; a resignation is recorded as a move."""
    from clients.sdk.records import load_record, save_record

    game = client.create("gin", ("Ann", "Bob"))
    view = client.view(game, game.tokens[0])
    token = game.tokens[view.to_act]
    client.move(game, token, bot_move(client.view(game, token), random.Random(1)))
    with RefereeClient(referee_server.address) as sdk:
        sdk.resign(game.game_id, token=game.tokens[0])
        path = tmp_path / "saved.json"
        save_record(sdk, game.game_id, path, token=game.tokens[1])
    record = load_record(path)
    assert record["settings"]["seed_commitment"] and record["settings"]["seed"]
    assert record["moves"][-1]["move"] == "resign" and record["moves"][-1]["seat"] == 0
    assert referee_cli(["verify", str(path)]) == 0, capsys.readouterr()


def test_a_saved_record_whose_deals_or_moves_are_not_its_events_fails(
    referee_server: ServerThread, client: Client, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A record's ``deals`` and ``moves`` (docs/records.md: read off its events) are what a reader of the JSON sees
    first: `rummy-referee verify` checks them too. Each deal must be the seed's (dealer, upcard, every seat's
    cards, the stock when the record has it), and the moves those its events say."""
    from clients.sdk.records import load_record, save_record

    game = client.create("gin", ("Ann", "Bob"), options={"target_score": pb.OptionValue(int_value=1)})
    _finish(client, game)
    with RefereeClient(referee_server.address) as sdk:
        save_record(sdk, game.game_id, tmp_path / "saved.json", token=game.tokens[0])
    record = load_record(tmp_path / "saved.json")
    assert record["deals"][0]["stock"] and record["moves"]
    code, out = _verify_file(tmp_path, record, capsys)
    assert code == 0 and "verified" in out, out

    swapped = copy.deepcopy(record)  # one card of seat 0 traded for one of seat 1, in the deal only
    hands = swapped["deals"][0]["hands"]
    hands[0][0], hands[1][0] = hands[1][0], hands[0][0]
    code, out = _verify_file(tmp_path, swapped, capsys)
    assert code == 1 and "FAILED: deal" in out and "deals[0]" in out, out

    stock = copy.deepcopy(record)  # the upcard traded for the stock's bottom card
    deal = stock["deals"][0]
    deal["upcard"], deal["stock"][0] = deal["stock"][0], deal["upcard"]
    code, out = _verify_file(tmp_path, stock, capsys)
    assert code == 1 and "FAILED: deal" in out and "deals[0]" in out, out

    reordered = copy.deepcopy(record)  # the deal's hands in another order are the same deal
    reordered["deals"][0]["hands"][0].reverse()
    assert _verify_file(tmp_path, reordered, capsys)[0] == 0

    moved = copy.deepcopy(record)
    moved["moves"][0]["move"] = "draw discard" if moved["moves"][0]["move"] != "draw discard" else "draw stock"
    code, out = _verify_file(tmp_path, moved, capsys)
    assert code == 1 and "FAILED: moves" in out and "moves[0]" in out, out
