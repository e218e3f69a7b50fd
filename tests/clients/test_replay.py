"""Saved games: records built from GetReplay through a real referee (clients.sdk.records.save_record), checked
against the engine, and `rummy replay` stepping through them, piped and through a pseudo-terminal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import engine
from clients.bots import make_bot
from clients.runner import play_seat
from clients.sdk import RefereeClient
from clients.sdk.records import FORMAT, VERSION, RecordError, load_record, moves_from_events, save_record
from tests.clients.clientkit import ORGANIZER, ROOT, ServerThread
from tests.clients.recordkit import replay_first_hand
from tests.clients.test_play import Terminal

MOVE_EVENTS = {"drew", "passed", "discarded", "knocked", "big_gin", "melded", "laid_off", "declared"}


def _play_match(referee: ServerThread, profile: str, bots: list[str], target: int, seed: bytes) -> str:
    with RefereeClient(referee.address, ORGANIZER) as admin:
        game = admin.create_game(profile, seats=[f"{b}-{i}" for i, b in enumerate(bots)], target_score=target,
                                 seed=seed)  # fmt: skip
    threads = [threading.Thread(target=play_seat, args=(referee.address, game.game_id, game.tokens[i],
                                                        make_bot(b, i)))
               for i, b in enumerate(bots)]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return game.game_id


@pytest.fixture(scope="module")
def gin_record(referee: ServerThread, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A whole Gin match of several hands, saved."""
    game_id = _play_match(referee, "gin", ["gin", "gin"], 150, b"record-gin-seed!" * 2)
    path = tmp_path_factory.mktemp("records") / "gin.json"
    with RefereeClient(referee.address, ORGANIZER) as client:
        record = save_record(client, game_id, path, meta={"label": "gin match"})
        paged = save_record(client, game_id, path.with_name("paged.json"), meta={"label": "gin match"}, page_size=7)
    assert paged == record and len(record["events"]) > 7  # the pages of GetReplay, joined
    return path


def _rummy_play(*args: str, stdin: Any = subprocess.DEVNULL) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "clients.play", *args], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, env=env, stdin=stdin)  # fmt: skip


def test_a_saved_match_holds_settings_every_deal_every_move_every_event_and_the_result(gin_record: Path) -> None:
    record = load_record(gin_record)
    assert (record["format"], record["version"]) == (FORMAT, VERSION) == ("rummy-referee/game-record", 1)
    assert record["meta"] == {"label": "gin match"}
    assert record["settings"]["profile"] == "gin" and record["settings"]["options"]["target_score"] == 150
    assert record["players"] == ["gin-0", "gin-1"]
    result = record["result"]
    assert result["over"] and result["winners"] and len(result["totals"]) == 2
    hands = int(result["hands_played"])
    assert hands >= 2 and len(record["deals"]) == hands  # every deal, the first one with its stock
    assert [d["hand_no"] for d in record["deals"]] == list(range(hands))
    assert all(len(d["hands"]) == 2 and all(len(h) == 10 for h in d["hands"]) for d in record["deals"])
    assert record["deals"][0]["stock"] is not None and len(record["deals"][0]["stock"]) == 31
    # every version that made a move's events has its move, and the first hand's moves make its events again
    versions = {e["version"] for e in record["events"] if e["kind"] in MOVE_EVENTS}
    assert [m["version"] for m in record["moves"]] == sorted(versions)
    assert replay_first_hand(record) == sum(1 for m in record["moves"] if m["hand_no"] == 0) > 0
    assert {m["hand_no"] for m in record["moves"]} == set(range(hands))
    assert record["events"][-1]["kind"] == "match_ended"


def test_a_rummy_record_replays_through_the_engine(referee: ServerThread, tmp_path: Path) -> None:
    game_id = _play_match(referee, "rummy", ["rummy", "random", "rummy"], 1, b"record-rummy-seed" * 2)
    with RefereeClient(referee.address, ORGANIZER) as client:
        record = save_record(client, game_id, tmp_path / "rummy.json")
    assert load_record(tmp_path / "rummy.json") == json.loads(json.dumps(record))
    assert len(record["deals"]) == 1 and replay_first_hand(record) == len(record["moves"])
    shown = _rummy_play("replay", str(tmp_path / "rummy.json"))
    assert shown.returncode == 0, shown.stderr
    assert "Players: rummy-0, random-1, rummy-2" in shown.stdout and shown.stdout.count("\nmove ") == len(
        record["moves"])
    assert "\n  rummy-2   ( 7)  " in shown.stdout and "deadwood" not in shown.stdout.split("━━")[0]
    assert "Match over." in shown.stdout
    # a tournament's results.json names the directory of its records
    (tmp_path / "results.json").write_text(json.dumps({"tournament": {}, "games": []}))
    (tmp_path / "games").mkdir()
    (tmp_path / "rummy.json").rename(tmp_path / "games" / "rummy.json")
    assert _rummy_play("replay", str(tmp_path / "results.json"), "--no-pause").stdout == shown.stdout


def test_an_event_that_names_its_move_is_taken_at_its_word() -> None:
    events = [{"kind": "drew", "seat": 1, "version": 1, "index": 1, "source": "stock", "move": "draw stock"},
              {"kind": "discarded", "seat": 1, "version": 2, "index": 1, "card": "TD"}]  # fmt: skip
    assert [m["move"] for m in moves_from_events(events)] == ["draw stock", "discard TD"]


def test_what_is_not_a_record_is_refused_with_a_reason(tmp_path: Path, gin_record: Path) -> None:
    data = json.loads(gin_record.read_text())
    for name, change, words in (("other.json", {"format": "something-else"}, "not a game record"),
                                ("future.json", {"version": 2}, "version 2, this version reads 1")):  # fmt: skip
        (tmp_path / name).write_text(json.dumps({**data, **change}))
        with pytest.raises(RecordError, match=words):
            load_record(tmp_path / name)
        done = _rummy_play("replay", str(tmp_path / name))
        assert done.returncode == 2 and words in done.stderr
    (tmp_path / "torn.json").write_text(gin_record.read_text()[:100])
    with pytest.raises(RecordError):
        load_record(tmp_path / "torn.json")


def test_rummy_replay_piped_prints_every_step_with_every_hand(gin_record: Path) -> None:
    done = _rummy_play("replay", str(gin_record))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    record = load_record(gin_record)
    assert out.startswith(f"Gin Rummy (gin) · game {record['game_id']}\nPlayers: gin-0, gin-1 · target 150")
    assert out.count("\nmove ") == len(record["moves"])
    assert out.count("Hand ") >= 2 * len(record["deals"])  # each dealt and each over
    first = record["deals"][0]
    # the deal shows both hands face up, with their deadwood
    assert "\n  gin-0  (10)  " in out and "\n  gin-1  (10)  " in out and "deadwood " in out
    assert all(c.replace("T", "10")[:-1] in out for h in first["hands"] for c in h)
    assert "Match over." in out and out.rstrip().endswith("End of the record.")


def test_rummy_replay_through_a_terminal_steps_on_enter_and_quits_on_q(gin_record: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env.update(PYTHONPATH=str(ROOT), TERM="xterm", LANG="C.UTF-8", PYTHONIOENCODING="utf-8")
    script = Path(sys.executable).with_name("rummy")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "clients.play"]
    t = Terminal([*command, "replay", str(gin_record)], env)
    try:
        t.expect(r"Gin Rummy \(gin\) · game g_")
        t.expect(r"Hand 1 is dealt: .*\n  gin-0 .*\n  gin-1 .*\n  stock 31 ")
        t.expect(r"\[Enter\] next · q quit > ")
        assert "move 1:" not in t.text  # it waits
        t.send("")
        t.expect(r"move 1: gin-1: (draw stock|draw discard|pass)\ngin-1 (drew|took|passed) ")
        t.expect(r"\[Enter\] next · q quit > ")
        t.send("")
        t.expect(r"move 2: gin-[01]: ")
        t.expect(r"\[Enter\] next · q quit > ")
        t.send("q")
        t.expect("Bye!")
        assert t.wait() == 0
        assert "move 3:" not in t.text
    finally:
        t.close()


def test_rummy_replay_picks_a_game_of_a_directory(gin_record: Path, tmp_path: Path) -> None:
    record = load_record(gin_record)
    games = tmp_path / "out" / "games"
    games.mkdir(parents=True)
    (games / "first.json").write_text(gin_record.read_text())
    other = {**record, "game_id": "g_other", "meta": {"tournament_game": "3:a|b"}}
    (games / "second.json").write_text(json.dumps(other))
    listed = _rummy_play("replay", str(tmp_path / "out"))
    assert listed.returncode == 2
    assert "2 games here: choose one with --game ID" in listed.stderr and "g_other  3:a|b" in listed.stderr
    for wanted in ("3:a|b", "g_other", "second"):
        shown = _rummy_play("replay", str(tmp_path / "out"), "--game", wanted, "--no-pause")
        assert shown.returncode == 0 and "game g_other · tournament game 3:a|b" in shown.stdout
    missing = _rummy_play("replay", str(tmp_path / "out"), "--game", "nope")
    assert missing.returncode == 2 and "no game 'nope'" in missing.stderr


def test_an_unfinished_game_is_saved_as_far_as_it_went(referee: ServerThread, tmp_path: Path) -> None:
    with RefereeClient(referee.address, ORGANIZER) as admin:
        game = admin.create_game("gin", seats=["a", "b"])
        admin.submit_move(game.game_id, engine.DrawStock(), token=game.tokens[1])
        record = save_record(admin, game.game_id, tmp_path / "open.json")
    assert not record["result"]["over"] and [m["move"] for m in record["moves"]] == ["draw stock"]
    done = _rummy_play("replay", str(tmp_path / "open.json"))
    assert done.returncode == 0 and "The record ends here: the match was not over (discard)." in done.stdout
