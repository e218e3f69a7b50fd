"""rummy-tournament: the schedule, the journal and the report on their own, then whole tournaments through real
referees over the suite's real redis-server (never mocks): end to end with the tournament's own referee, an
interrupted tournament resumed to the same results, and bots that crash, hang or cheat forfeiting."""

from __future__ import annotations

import csv
import itertools
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from clients.sdk.records import load_record
from clients.tournament.cli import main
from clients.tournament.entrants import parse_entrant
from clients.tournament.journal import GameRecord, Journal
from clients.tournament.report import pair_results
from clients.tournament.schedule import (
    Config,
    ConfigError,
    deal_seed,
    parse_option,
    preset_deals,
    schedule,
    seat_counts,
)
from server.redis_launcher import find_redis_server
from tests.clients.clientkit import ORGANIZER, ROOT, ServerThread
from tests.clients.recordkit import replay_first_hand

EXAMPLE_BOT = ROOT / "clients" / "tournament" / "examples" / "program_bot.py"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

#: A misbehaving program: plays the first legal move ``after`` times, then crashes, hangs, or cheats.
BAD_BOT = textwrap.dedent("""
    import json, sys, time
    mode, after = sys.argv[1], int(sys.argv[2])
    for n, line in enumerate(sys.stdin):
        if n >= after and mode == "crash":
            sys.exit(3)
        if n >= after and mode == "hang":
            time.sleep(600)
        if n >= after and mode == "illegal":  # a card it does not hold
            hand = json.loads(line)["view"]["hand"]
            print("discard", next(r + s for s in "SHDC" for r in "A23456789TJQK" if r + s not in hand), flush=True)
            continue
        print(json.loads(line)["legal"][0], flush=True)
""")


def _program(name: str, *args: str) -> str:
    return f"{name}=cmd:{sys.executable} " + " ".join(args)


def _example_entrant() -> str:
    return _program("example", str(EXAMPLE_BOT))


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main([*argv, "--no-progress"])
    return code, capsys.readouterr().out


def _report(out: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads((out / "results.json").read_text())
    return report


def _deterministic(report: dict[str, Any]) -> dict[str, Any]:
    """The report without the referee's game ids (new ones each time a game is played)."""
    for game in report["games"]:
        del game["game_id"]
    return report


def _journal_games(out: Path) -> int:
    try:
        return max(0, len((out / "journal.jsonl").read_bytes().split(b"\n")) - 2)
    except FileNotFoundError:
        return 0


# ----------------------------------------------------------------------------------------- the pure parts


def test_gin_schedule_plays_every_pair_on_every_deal_in_both_seatings() -> None:
    config = Config(entrants=tuple((n, "random") for n in "abcd"), deals=3, seed="s")
    games = schedule(config)
    assert len(games) == 6 * 2 * 3
    assert len({g.key for g in games}) == len(games)
    for deal in range(3):
        seatings = {g.seats for g in games if g.deal == deal}
        assert seatings == {p for p in itertools.permutations("abcd", 2)}
    assert all(counts == [9, 9] for counts in seat_counts(games).values())
    assert [g.key for g in schedule(config)] == [g.key for g in games]  # the same every time


def test_rummy_schedule_rotates_each_combination_through_every_seat() -> None:
    config = Config(entrants=tuple((n, "rummy") for n in "abcde"), profile="rummy", players=3, deals=2)
    games = schedule(config)
    assert len(games) == 10 * 3 * 2  # C(5, 3) combinations x 3 rotations x 2 deals
    per_combination = Counter((g.deal, frozenset(g.seats)) for g in games)
    assert set(per_combination.values()) == {3}
    assert all(counts == [12, 12, 12] for counts in seat_counts(games).values())


def test_duplicate_deals_are_the_same_for_every_table_and_differ_between_deals() -> None:
    config = Config(entrants=(("a", "random"), ("b", "random")), deals=2, seed="dup")
    rules = config.rules()
    first, second = preset_deals(config, rules, 0), preset_deals(config, rules, 1)
    assert first == preset_deals(config, rules, 0) and first != second
    assert first[0].dealer == 0 and len(first[0].hands) == 2
    assert deal_seed(config, 0) != deal_seed(config, 1) and len(deal_seed(config, 0)) == 32
    other = Config(entrants=config.entrants, deals=2, seed="another")
    assert preset_deals(other, rules, 0) != first


def test_entrant_specs_and_options() -> None:
    assert parse_entrant("random").name == "random"
    twin = parse_entrant("random@2")
    assert (twin.name, twin.bot, twin.seed) == ("random@2", "random", 2)
    named = parse_entrant(f"mine=cmd:{sys.executable} bot.py --fast")
    assert named.program and named.argv == (sys.executable, "bot.py", "--fast")
    for bad in ("cmd:python3 bot.py", "chess", "random@x", "mine=cmd:no-such-program-here"):
        with pytest.raises(ConfigError):
            parse_entrant(bad)
    with pytest.raises(ConfigError, match="unique"):
        Config(entrants=(("a", "random"), ("a", "gin")))
    with pytest.raises(ConfigError, match="at least 3"):
        Config(entrants=(("a", "rummy"), ("b", "rummy")), profile="rummy", players=3)
    assert parse_option("knock_limit=7") == ("knock_limit", 7)
    assert parse_option("undercut_on_tie=false") == ("undercut_on_tie", False)
    assert parse_option("stock_end_rule=fiftieth_card") == ("stock_end_rule", "fiftieth_card")
    for bad in ("knock_limit=seven", "no_such_option=1", "players=3"):
        with pytest.raises(ConfigError):
            parse_option(bad)


def test_pairwise_results_of_wins_totals_and_forfeits() -> None:
    gin = GameRecord("0:a|b", 0, ("a", "b"), (23, 0), (0,))
    assert [(r.a, r.b, r.score_a) for r in pair_results(gin)] == [("a", "b", 1.0)]
    drawn = GameRecord("0:a|b", 0, ("a", "b"), (0, 0), (0, 1))
    assert [r.score_a for r in pair_results(drawn)] == [0.5]
    rummy = GameRecord("0:a|b|c", 0, ("a", "b", "c"), (0, 40, 10), (1,))
    assert {(r.a, r.b): r.score_a for r in pair_results(rummy)} == {("a", "b"): 0.0, ("a", "c"): 0.0, ("b", "c"): 1.0}
    forfeit = GameRecord("0:a|b|c", 0, ("a", "b", "c"), (0, 0, 0), (), forfeits=(2,), reasons=("crashed",))
    assert {(r.a, r.b): r.score_a for r in pair_results(forfeit)} == {("a", "c"): 1.0, ("b", "c"): 1.0}


def test_the_time_control_is_part_of_the_configuration_and_time_losses_are_counted(tmp_path: Path) -> None:
    from clients.sdk import Bank, Clock, PerMove
    from clients.tournament.cli import _config, _parser
    from clients.tournament.report import summarize, table_text

    def config(*flags: str) -> Config:
        return _config(_parser().parse_args(["a=random", "b=random", "--seed", "s", *flags]), None)[0]

    assert config().clock == PerMove(10) and config().time_control == "10"
    assert config("--move-timeout", "0.3").clock == PerMove(0.3)
    assert config("--clock", "60+1").clock == Clock(60, 1) and config("--clock", "5").clock == Clock(5, 0)
    assert config("--time-bank", "1+30").clock == Bank(1, 30)
    for bad in (["--move-timeout", "0"], ["--clock", "fast"], ["--time-bank", "3"], ["--move-timeout", "-1"]):
        with pytest.raises(ConfigError, match="time control"):
            config(*bad)
    with pytest.raises(SystemExit):  # one time control at a time
        _parser().parse_args(["a", "b", "--clock", "60+1", "--move-timeout", "3"])
    assert Config.from_dict({**config("--clock", "60+1").to_dict()}).clock == Clock(60, 1)
    old = config().to_dict()
    del old["time_control"]  # a journal from before time controls: 10 s per move
    assert Config.from_dict(old).time_control == "10"

    cfg = config("--clock", "2+0.5")
    on_time = GameRecord("0:a|b", 0, ("a", "b"), (0, 25), (1,), ends=("lost_on_time", "finished"))
    resigned = GameRecord("0:b|a", 0, ("b", "a"), (25, 0), (0,), ends=("finished", "resigned"))
    forfeit = GameRecord("1:a|b", 1, ("a", "b"), (0, 0), (), forfeits=(1,), reasons=("crashed",))
    assert forfeit.ends == ("finished", "forfeit") and GameRecord.from_dict(on_time.to_dict()) == on_time
    summary = summarize(cfg, [on_time, resigned, forfeit], 3, bootstrap=10)
    by_name = {s.rating.name: s for s in summary.standings}
    assert (by_name["a"].time_losses, by_name["a"].resigned, by_name["a"].lost) == (1, 1, 2)
    assert (by_name["b"].time_losses, by_name["b"].forfeits, by_name["b"].won) == (0, 1, 2)
    table = table_text(summary)
    assert "time control 2 s + 0.5 s per move" in table and "time losses: matches lost on time" in table


def test_journal_cuts_a_torn_last_line_and_keeps_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    journal = Journal.create(path, {"seed": "x"})
    record = GameRecord("0:a|b", 0, ("a", "b"), (10, 0), (0,), hands=1, game_id="g1", seconds=0.5)
    journal.append(record)
    journal.close()
    with open(path, "ab") as f:
        f.write(b'{"key":"0:b|a","de')  # the process died in the middle of this write
    config, records = Journal.read(path)
    assert config == {"seed": "x"} and records == [record]
    assert path.read_bytes().endswith(b"\n")
    with pytest.raises(FileExistsError):
        Journal.create(path, {})


def test_refuses_to_overwrite_or_to_resume_another_tournament(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    Journal.create(tmp_path / "journal.jsonl", Config(entrants=(("random", "random"), ("gin", "gin")),
                                                      seed="one").to_dict()).close()  # fmt: skip
    assert main(["random", "gin", "--seed", "one", "--out", str(tmp_path)]) == 2
    assert "--resume" in capsys.readouterr().err
    assert main(["--resume", "--seed", "two", "--out", str(tmp_path)]) == 2
    assert "seed" in capsys.readouterr().err


# ------------------------------------------------------------------------------------ whole tournaments


def test_small_tournament_end_to_end_with_its_own_referee(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Four entrants (two random bots with different seeds, the Gin bot, and an external program), Gin single hands
    on two duplicate deals, through a referee the tournament starts for itself."""
    if find_redis_server() is None:
        pytest.skip("no redis-server binary")
    out = tmp_path / "out"
    code, table = _run(capsys, "random", "random@2", "gin", _example_entrant(), "--deals", "2", "--seed", "e2e",
                       "--out", str(out))  # fmt: skip
    assert code == 0, table
    names = {"random", "random@2", "gin", "example"}
    for name in names:
        assert name in table
    assert "24 of 24 games played" in table

    report = _report(out)
    assert report["complete"] and report["games_played"] == 24
    assert {s["entrant"] for s in report["standings"]} == names
    assert all(s["games"] == 12 and s["forfeits"] == 0 for s in report["standings"])
    assert all(s["won"] + s["shared"] + s["lost"] == 12 and s["pairings"] == 12 for s in report["standings"])
    assert sum(s["won"] for s in report["standings"]) + sum(s["shared"] for s in report["standings"]) / 2 == 24
    assert re.search(r"rank\s+entrant\s+elo\s+95% interval\s+games\s+won\s+shared\s+lost\s+forfeits\s+time losses"
                     r"\s+resigned\s+score", table)  # fmt: skip
    assert "time control 10 s per move" in table
    assert "pairings" not in table.split("\n\n")[1]  # Gin: one pairwise result per game, no second set of counts
    ranks = [s["rank"] for s in report["standings"]]
    elos = [s["elo"] for s in report["standings"]]
    assert ranks == [1, 2, 3, 4] and elos == sorted(elos, reverse=True)
    assert all(s["low"] <= s["elo"] <= s["high"] for s in report["standings"])
    by_name = {s["entrant"]: s for s in report["standings"]}
    assert by_name["gin"]["elo"] > max(by_name["random"]["elo"], by_name["random@2"]["elo"])
    # duplicate: every pair played each deal once in each seating
    seatings = Counter((g["deal"], tuple(g["seats"])) for g in report["games"])
    assert set(seatings.values()) == {1} and len(seatings) == 24
    assert all(h["games"] == 4 for h in report["head_to_head"])
    assert len(report["head_to_head"]) == 12

    with open(out / "standings.csv", newline="") as f:
        standings = list(csv.DictReader(f))
    assert [row["entrant"] for row in standings] == [s["entrant"] for s in report["standings"]]
    with open(out / "games.csv", newline="") as f:
        games = list(csv.DictReader(f))
    assert len(games) == 24 and all(row["game_id"] for row in games)
    with open(out / "head_to_head.csv", newline="") as f:
        assert len(list(csv.DictReader(f))) == 12

    png = out / "ratings.png"
    assert png.read_bytes()[:8] == PNG_SIGNATURE
    with Image.open(png) as image:
        assert image.format == "PNG" and image.width > 400 and image.height > 200
        assert "matplotlib" in image.info.get("Software", "").lower()
        assert all(name in image.info.get("Description", "") for name in names)
        colours = image.convert("RGB").getcolors(maxcolors=1 << 16)
        assert colours is not None and len(colours) > 10  # axes, markers, text: not a blank canvas
    assert _journal_games(out) == 24
    assert (out / "logs" / "referee.log").exists()

    # every game saved: its record names the game, and its moves played again through the engine make its events
    records = sorted((out / "games").glob("*.json"))
    assert len(records) == 24
    by_key = {g["key"]: g for g in report["games"]}
    for path in records:
        record = load_record(path)
        game = by_key[record["meta"]["tournament_game"]]
        assert out / game["record"] == path and record["game_id"] == game["game_id"]
        assert record["players"] == game["seats"] and record["result"]["over"]
        assert record["result"]["winners"] == game["winners"] and record["result"]["totals"] == game["totals"]
        assert len(record["deals"]) == 1 and replay_first_hand(record) == len(record["moves"]) > 0
    assert f"game records (rummy replay FILE): {out / 'games'}/ (24 games)" in table


def test_interrupted_tournament_resumes_to_the_same_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], referee: ServerThread
) -> None:
    """Killed outright (SIGKILL, a torn journal line), then stopped by --stop-after, then finished: the same
    report as a run that was never interrupted."""
    common = ["random", "random@2", "gin", _example_entrant(), "--deals", "2", "--seed", "resume",
              "--referee", referee.address, "--organizer-token", ORGANIZER, "--parallel", "3"]  # fmt: skip
    straight = tmp_path / "straight"
    code, _ = _run(capsys, *common, "--out", str(straight))
    assert code == 0

    broken = tmp_path / "broken"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "clients.tournament.cli", *common, "--out", str(broken)],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while _journal_games(broken) < 5 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
        assert proc.poll() is None, "the tournament finished before it could be interrupted"
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(10)
    killed_at = _journal_games(broken)
    assert 5 <= killed_at < 24
    with open(broken / "journal.jsonl", "ab") as f:
        f.write(b'{"key":"1:gin|ran')  # as if it had died in the middle of a write

    code = main(["--resume", "--out", str(broken), "--stop-after", "3", "--no-progress"])
    assert code == 3, capsys.readouterr().err
    assert killed_at + 3 <= _journal_games(broken) < 24
    code, table = _run(capsys, "--resume", "--out", str(broken))
    assert code == 0 and "24 of 24 games played" in table
    assert _journal_games(broken) == 24

    assert _deterministic(_report(broken)) == _deterministic(_report(straight))
    for name in ("standings.csv", "head_to_head.csv"):
        assert (broken / name).read_bytes() == (straight / name).read_bytes()


def test_bots_that_crash_or_cheat_forfeit_one_that_hangs_loses_on_time_and_the_tournament_finishes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], referee: ServerThread
) -> None:
    """The referee keeps the time (--move-timeout 2: its limit per move, a program's first answer included): the
    program that hangs loses each of its games on time (recorded as a time loss, not a forfeit), the ones that crash
    or cheat forfeit."""
    script = tmp_path / "bad_bot.py"
    script.write_text(BAD_BOT)
    bad = {"crash": "2", "hang": "1", "illegal": "1"}
    entrants = ["gin", "random", *(_program(mode, str(script), mode, after) for mode, after in bad.items())]
    out = tmp_path / "out"
    started = time.monotonic()
    code = main([*entrants, "--deals", "1", "--seed", "faults", "--move-timeout", "2", "--parallel", "4",
                 "--referee", referee.address, "--organizer-token", ORGANIZER, "--out", str(out), "--no-progress"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    table = captured.out
    assert time.monotonic() - started < 40
    report = _report(out)
    assert report["complete"] and report["games_played"] == 20
    assert report["tournament"]["time_control"] == "2"
    reasons = {"crash": "exit status 3", "illegal": "refused"}
    for game in report["games"]:
        seats = game["seats"]
        culprits = [s for s in seats if s in bad]
        if len(culprits) == 1 and culprits[0] == "hang":  # against a well-behaved bot: lost on time
            hang = seats.index("hang")
            assert game["forfeits"] == [] and game["winners"] == [1 - hang], game
            assert game["ends"][hang] == "lost_on_time" and game["ends"][1 - hang] == "finished", game
            record = load_record(out / game["record"])  # saved as the referee ended it
            assert record["result"]["over"] and record["meta"]["ends"] == game["ends"]
        elif len(culprits) == 1:  # against a well-behaved bot the misbehaving one always forfeits
            assert [seats[i] for i in game["forfeits"]] == culprits and game["winners"] == []
            assert reasons[culprits[0]] in game["reasons"][0], game
            assert game["ends"][seats.index(culprits[0])] == "forfeit"
            record = load_record(out / game["record"])  # a forfeited game is saved too, as far as it went
            assert not record["result"]["over"] and record["meta"]["forfeits"] == game["forfeits"]
        elif len(culprits) == 2:  # two of them: whichever misbehaves first
            assert len(game["forfeits"]) + game["ends"].count("lost_on_time") == 1, game
        else:
            assert game["forfeits"] == [] and game["ends"] == ["finished", "finished"]
    standings = {s["entrant"]: s for s in report["standings"]}
    for mode in bad:
        assert standings[mode]["elo"] < min(standings["gin"]["elo"], standings["random"]["elo"])
    assert standings["crash"]["forfeits"] >= 4 and standings["illegal"]["forfeits"] >= 4
    assert standings["hang"]["forfeits"] == 0 and standings["hang"]["time_losses"] >= 4
    assert standings["gin"]["forfeits"] == standings["random"]["forfeits"] == 0
    assert standings["gin"]["time_losses"] == standings["random"]["time_losses"] == 0
    assert standings["gin"]["won"] >= 6  # every game against a misbehaving bot
    assert standings["gin"]["pairs_won"] >= 6
    row = next(line for line in table.splitlines() if line.split()[1:2] == ["hang"])
    assert row.split()[10:13] == [str(standings["hang"]["forfeits"]), str(standings["hang"]["time_losses"]), "0"]
    with open(out / "games.csv", newline="") as f:
        assert any(row["ends"].split().count("lost_on_time") == 1 for row in csv.DictReader(f))


def test_rummy_tournament_seats_every_entrant_in_every_seat(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], referee: ServerThread
) -> None:
    out = tmp_path / "out"
    code, table = _run(capsys, "rummy", "random", _example_entrant(), "--profile", "rummy", "--players", "3",
                       "--deals", "1", "--seed", "rummy", "--referee", referee.address, "--organizer-token",
                       ORGANIZER, "--out", str(out))  # fmt: skip
    assert code == 0, table
    report = _report(out)
    assert report["rules"]["game"] == "rummy" and report["rules"]["players"] == 3
    assert report["rules"]["max_hands"] == 1
    assert sorted(tuple(g["seats"]) for g in report["games"]) == sorted(
        [("rummy", "random", "example"), ("random", "example", "rummy"), ("example", "rummy", "random")]
    )
    for game in report["games"]:
        assert game["hands"] == 1 and len(game["totals"]) == 3 and game["winners"]
    assert all(s["games"] == 3 and s["pairings"] == 6 for s in report["standings"])
    # game counts count games (3 each), the pairwise columns pairings (2 per game): labelled apart
    assert all(s["won"] + s["shared"] + s["lost"] == 3 for s in report["standings"])
    assert all(s["pairs_won"] + s["pairs_tied"] + s["pairs_lost"] == 6 for s in report["standings"])
    assert sum(s["won"] + s["shared"] for s in report["standings"]) >= 3
    header = re.search(r"rank\s+entrant.*", table)
    assert header is not None and header.group(0).split() == [
        "rank", "entrant", "elo", "95%", "interval", "games", "won", "shared", "lost", "forfeits", "time", "losses",
        "resigned", "pairings", "beat", "tied", "lost", "to", "score"]  # fmt: skip
    assert "pairings: results against each other seat at the table" in table


def _broken_program(tmp_path: Path, kind: str) -> str:
    """An entrant that does not speak the JSON-lines protocol."""
    if kind == "grpc-bot":  # the README's gRPC bot, as the README once named it: it never reads its stdin
        return _program("mine", str(ROOT / "clients" / "examples" / "my_bot.py"), "127.0.0.1:1")
    if kind == "exits":
        return _program("mine", "-c", "'import sys; sys.exit(4)'")
    if kind == "silent":  # reads its requests and never answers
        return _program("mine", "-c", "'import sys, time; sys.stdin.readline(); time.sleep(600)'")
    script = tmp_path / "bot.sh"  # executable, but its interpreter does not exist: the start itself fails
    script.write_text("#!/no/such/interpreter\n")
    script.chmod(0o755)
    return f"mine=cmd:{script}"


@pytest.mark.parametrize("kind", ["grpc-bot", "exits", "silent", "cannot-start"])
def test_an_entrant_program_that_cannot_start_or_never_answers_stops_the_tournament(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], referee: ServerThread
) -> None:
    out = tmp_path / "out"
    code = main(["gin", "random", _broken_program(tmp_path, kind), "--deals", "3", "--seed", "broken",
                 "--move-timeout", "3", "--referee", referee.address, "--organizer-token", ORGANIZER,
                 "--out", str(out), "--no-progress"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2, err
    log = out / "logs" / "mine.log"
    assert "entrant mine (" in err and "failed its first request" in err and str(log) in err, err
    assert "JSON request per line" in err and "nothing was kept" in err
    assert not (out / "journal.jsonl").exists()  # nothing was recorded: once fixed, the same command starts afresh
    assert not (out / "results.json").exists()


def test_a_wrong_organizer_token_is_a_bad_configuration_and_stops_at_the_first_game(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], referee: ServerThread
) -> None:
    """The referee refuses the first CreateGame (the deals are organizer presets) for the token: exit status 2 (a
    bad configuration, as the README says), a message that names the organizer token, no game played, nothing
    kept (the same command with the right token starts afresh)."""
    out = tmp_path / "out"
    created = referee.referee.tallies.games_created
    code = main(["gin", "random", "--deals", "3", "--seed", "token", "--referee", referee.address,
                 "--organizer-token", "not-the-organizer", "--out", str(out), "--no-progress"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2, err
    assert "refused the organizer token (--organizer-token" in err and "ORGANIZER_ONLY" in err, err
    assert "games failed" not in err and "--resume" not in err, err
    assert referee.referee.tallies.games_created == created
    assert not (out / "journal.jsonl").exists()
    assert not (out / "results.json").exists()


def test_a_program_that_answered_before_forfeits_later_games_as_usual(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], referee: ServerThread
) -> None:
    """A program that has answered once speaks the protocol: a later crash is that game's forfeit, not a stop."""
    script = tmp_path / "bad_bot.py"
    script.write_text(BAD_BOT)
    code, _ = _run(capsys, "gin", _program("crash", str(script), "crash", "1"), "--deals", "1", "--seed", "late",
                   "--referee", referee.address, "--organizer-token", ORGANIZER, "--out", str(tmp_path / "out"))
    assert code == 0
    assert all(g["forfeits"] for g in _report(tmp_path / "out")["games"])


def test_the_readme_tournament_command_plays_and_saves_the_game_it_replays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], referee: ServerThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's command as written (one deal instead of ten, on the suite's referee), from the repository's
    root, and the record the README's `rummy replay` line names; `make tournament` plays the same command."""
    readme = (ROOT / "README.md").read_text()
    block = readme.split("## Run a tournament", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    command = next(line for line in block.replace("\\\n", " ").splitlines() if "rummy-tournament " in line)
    argv = shlex.split(command.split("#")[0])
    assert argv[0] == ".venv/bin/rummy-tournament"
    make_args = subprocess.run(["make", "-n", "-C", str(ROOT), "tournament"], capture_output=True, text=True,
                               timeout=60).stdout  # fmt: skip
    assert shlex.join(argv[1:]) in " ".join(shlex.join(shlex.split(line)) for line in make_args.splitlines())
    args = argv[1:]
    args[args.index("--deals") + 1] = "1"
    args[args.index("--out") + 1] = str(tmp_path / "results")
    monkeypatch.chdir(ROOT)
    code, table = _run(capsys, *args, "--seed", "readme", "--referee", referee.address, "--organizer-token",
                       ORGANIZER)  # fmt: skip
    assert code == 0, table
    assert all(s["forfeits"] == 0 for s in _report(tmp_path / "results")["standings"])  # the example entrant plays
    replay_line = next(line for line in readme.splitlines() if "rummy replay results/games/" in line)
    record = replay_line.split("rummy replay results/", 1)[1].split()[0].rstrip("`")
    assert load_record(tmp_path / "results" / record)["meta"]["tournament_game"] == "0:random|gin"


def test_the_default_seed_is_too_long_to_guess() -> None:
    """Every deal derives from the tournament's seed, and each entrant program is handed a bot seed derived from it
    (SHA-256): a default seed short enough to search would give an entrant the stock and every hand. 128 random
    bits, and a fresh one each time."""
    from clients.tournament.cli import _config, _parser

    seeds = {_config(_parser().parse_args(["a=random", "b=random"]), None)[0].seed for _ in range(3)}
    assert len(seeds) == 3
    assert all(len(seed) == 32 and int(seed, 16) >= 0 for seed in seeds), seeds
