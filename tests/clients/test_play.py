"""``rummy play``: card drawing and text (units), and the real program driven through a pseudo-terminal against a
real referee and a real redis-server (its own zero-setup one, or the suite's referee with ``--referee``)."""

from __future__ import annotations

import codecs
import fcntl
import io
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import engine
from clients.play import main, parse_option, seat_bots, seed_bytes
from clients.terminal import events, render
from clients.terminal.guide import help_text, phase_ask
from clients.terminal.render import RED, RESET, Style, card, detect_style, strip_ansi
from clients.terminal.session import move_input, typed_move
from clients.view import View
from server.redis_launcher import RedisProcess, find_redis_server
from tests.clients.clientkit import ServerProcess, ServerThread

ROOT = Path(__file__).resolve().parents[2]
COLOR = Style(symbols=True, color=True)
PLAIN = Style(symbols=True, color=False)
LETTERS = Style(symbols=False, color=False)

# ------------------------------------------------------------------------------------------- card drawing


def test_card_symbols_and_red_suits() -> None:
    assert card("AS", COLOR) == "A♠"
    assert card("KC", COLOR) == "K♣"
    assert card("7H", COLOR) == f"{RED}7♥{RESET}"
    assert card("TD", COLOR) == f"{RED}10♦{RESET}"


def test_card_without_colour_has_no_escape_codes() -> None:
    assert card("7H", PLAIN) == "7♥"
    assert card("TD", PLAIN) == "10♦"
    assert "\x1b" not in render.cards(["AS", "2H", "3D", "4C"], PLAIN)


def test_card_letters_when_symbols_are_off() -> None:
    assert card("7H", LETTERS) == "7H"
    assert card("TD", LETTERS) == "10D"
    assert card("QS", Style(symbols=False, color=True)) == "QS"
    assert card("QD", Style(symbols=False, color=True)) == f"{RED}QD{RESET}"


class _Stream(io.TextIOWrapper):
    """An output stream with a given encoding that is, or is not, a terminal."""

    def __init__(self, encoding: str, tty: bool) -> None:
        super().__init__(io.BytesIO(), encoding=encoding)
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


def test_style_follows_terminal_encoding_and_no_color() -> None:
    utf_tty = _Stream("utf-8", tty=True)
    assert detect_style(utf_tty, environ={}) == Style(symbols=True, color=True)
    assert detect_style(utf_tty, environ={"NO_COLOR": "1"}) == Style(symbols=True, color=False)
    assert detect_style(utf_tty, environ={"NO_COLOR": ""}) == Style(symbols=True, color=True)  # set but empty
    assert detect_style(utf_tty, environ={"TERM": "dumb"}).color is False
    assert detect_style(utf_tty, no_color=True, environ={}).color is False
    assert detect_style(utf_tty, ascii_only=True, environ={}).symbols is False
    assert detect_style(_Stream("ANSI_X3.4-1968", tty=True), environ={}) == Style(symbols=False, color=True)
    assert detect_style(_Stream("UTF8", tty=False), environ={}) == Style(symbols=True, color=False)


def test_hand_is_sorted_by_suit_with_alternating_colours_or_by_rank() -> None:
    hand = ["2D", "KS", "TH", "AS", "3C", "AD"]
    assert render.hand_line(hand, PLAIN) == "A♠ K♠   10♥   3♣   A♦ 2♦"
    assert render.hand_line(hand, PLAIN, by_rank=True) == "A♠ A♦   2♦   3♣   10♥   K♠"
    assert render.hand_line(hand, LETTERS) == "AS KS   10H   3C   AD 2D"


def test_symbols_typed_by_the_player_are_read_as_letters() -> None:
    assert engine.parse_move(render.card_input("discard 7♥")) == engine.Discard(engine.parse_card("7H"))


def test_moves_offered_in_a_stable_order_and_numbered() -> None:
    legal = [engine.parse_move(t) for t in ("discard 2D", "knock AS", "discard AS", "meld 7H 8H 9H", "layoff 4C 0")]
    texts = [strip_ansi(render.move(m, COLOR)) for m in render.ordered_moves(legal)]
    assert texts == ["discard A♠", "discard 2♦", "knock A♠", "meld 7♥ 8♥ 9♥", "layoff 4♣ 0"]
    grid = render.numbered(texts, width=60)
    assert sorted(int(n) for n in re.findall(r"(\d+)  [a-z]", grid)) == [1, 2, 3, 4, 5]
    assert all(f"{i}  {text}" in grid for i, text in enumerate(texts, 1))
    assert len(grid.splitlines()) == 3  # columns read downwards, as many as fit the width
    assert len(render.numbered(texts, width=120).splitlines()) == 1
    draw = render.ordered_moves([engine.DrawDiscard(), engine.DrawStock()])
    assert [engine.move_text(m) for m in draw] == ["draw stock", "draw discard"]


def test_events_read_as_sentences() -> None:
    names = ["You", "Gin bot"]
    assert events.describe({"kind": "drew", "seat": 1, "source": "stock"}, names, PLAIN) == (
        "Gin bot drew from the stock."
    )
    assert events.describe({"kind": "drew", "seat": 0, "source": "stock", "card": "5C"}, names, PLAIN) == (
        "You drew 5♣ from the stock."
    )
    assert events.describe({"kind": "discarded", "seat": 1, "card": "TD"}, names, LETTERS) == ("Gin bot discarded 10D.")
    assert events.describe({"kind": "dealt", "seat": 0, "count": 10}, names, PLAIN) is None


def test_clocks_and_clock_events_in_words() -> None:
    """The clocks line of the table (the seat to act counting down, by the wall clock) and the clock events."""
    assert [render.clock_text(x) for x in (245, 7.34, 0, -1, 59.9, 3725)] == ["4:05", "0:07.3", "0:00.0",
                                                                              "0:00.0", "0:59", "1:02:05"]
    rules = engine.rules_from_profile("gin").to_dict()
    state = engine.new_game(engine.rules_from_profile("gin"), b"clocks-line-test")
    d = engine.view(state, 0)
    assert render.clocks_line(View.from_engine(d, rules), ["You", "Gin bot"], PLAIN) is None  # no time control
    now = time.time()
    d["clocks"] = [
        {"seat": 0, "remaining_ms": 300_000, "running": False, "started_ms": None, "deadline_ms": None,
         "auto_moves": 1},
        {"seat": 1, "remaining_ms": 250_000, "running": True, "started_ms": int(now * 1000) - 8000,
         "deadline_ms": int(now * 1000) + 242_500, "auto_moves": 0},
    ]  # fmt: skip
    d["deadline_ms"] = int(now * 1000) + 242_500
    line = render.clocks_line(View.from_engine(d, rules), ["You", "Gin bot"], PLAIN, now=now)
    assert line == "You 5:00 (1 move played by the referee) · Gin bot 4:02 (thinking)"
    table = render.table(View.from_engine(d, rules), ["You", "Gin bot"], PLAIN, title="Gin")
    assert "\nClocks:   You 5:00" in table
    names = ["You", "Gin bot"]
    assert events.describe({"kind": "timed_out", "seat": 1, "forfeit": True}, names, PLAIN) == (
        "Gin bot: out of time, the match is lost on time."
    )
    assert events.describe({"kind": "timed_out", "seat": 0, "forfeit": False}, names, PLAIN) == (
        "You: out of time, the referee moves instead."
    )
    auto = {"kind": "auto_moved", "seat": 0, "move": engine.move_to_dict(engine.DrawStock()), "auto_moves": 2}
    assert events.describe(auto, names, PLAIN) == "The referee played draw stock for You (2nd in a row)."
    for kind in ("clock_started", "clock_stopped"):
        assert events.describe({"kind": kind, "seat": 0}, names, PLAIN) is None


def test_after_a_knock_the_knocker_still_sees_the_cards_the_defender_took_from_the_discard_pile() -> None:
    """RULES.md 4: a card taken from the discard pile stays public while it is in a hand, a knock or not. Ann
    takes Q♦ (Bob's discard), then Bob knocks: Bob's table still shows it in Ann's hand, and Ann's shows Bob's
    face-up deadwood once, with the knock."""

    def cards(text: str) -> tuple[int, ...]:
        return tuple(engine.parse_card(c) for c in text.split())

    hands = (cards("4S 7H JD JS QS KS 5C 5D 9C 8C"), cards("AS 2S 3S 4H 5H 6H 7D 8D 2C KC"))
    used = {*hands[0], *hands[1], *cards("QC 9D QD")}
    stock = tuple(c for c in range(52) if c not in used) + cards("9D QD")  # Bob draws QD, then 9D
    rules = engine.rules_from_profile("gin")
    state = engine.new_game(rules, b"\0" * 32, (engine.Deal(0, hands, engine.parse_card("QC"), stock),))
    for seat, move in ((1, "draw stock"), (1, "discard QD"), (0, "draw discard"), (0, "discard 9C"),
                       (1, "draw stock"), (1, "knock KC")):  # fmt: skip
        state, _ = engine.apply(state, seat, engine.parse_move(move))
    assert state.phase == "layoff"
    names = ["Ann", "Bob"]
    knocker = render.table(View.from_engine(engine.view(state, 1), rules.to_dict()), names, PLAIN, title="Gin")
    assert "\nAnn: 10 cards   known: Q♦\n" in knocker
    defender = render.table(View.from_engine(engine.view(state, 0), rules.to_dict()), names, PLAIN, title="Gin")
    assert "\nBob: 1 card\n" in defender and "Bob knocked with 2 deadwood: 2♣" in defender


def test_the_table_shows_the_whole_discard_pile() -> None:
    """RULES.md 4: everyone sees the discard pile, the whole of it (it showed its top six cards after an ellipsis).
    Three Rummy seats draw from the stock and discard what they drew for three rounds: the upcard and all nine
    discards are on the table's line, bottom to top."""
    rules = engine.rules_from_profile("rummy", players=3)
    state = engine.new_game(rules, b"the whole discard pile is shown")
    for _ in range(9):
        seat = state.to_act
        drawn = state.stock[-1]
        state, _ = engine.apply(state, seat, engine.DrawStock())
        state, _ = engine.apply(state, seat, engine.Discard(drawn))
    pile = [engine.card_text(c) for c in state.discard]
    assert len(pile) == 10
    table = render.table(View.from_engine(engine.view(state, 0), rules.to_dict()), ["Ann", "Bob", "Cy"], LETTERS,
                         title="Rummy")  # fmt: skip
    faces = [render.card(c, LETTERS) for c in pile]  # "10H" for TH
    assert f"   Discard pile (10): {' '.join(faces)}   top: {faces[-1]}\n" in table


def test_reveal_shows_every_hand_and_the_hand_score() -> None:
    ended = {
        "kind": "hand_ended", "seat": 1, "hand_no": 0, "reason": "knock", "winner": 1, "points": 12,
        "hands": [["4H", "5H", "7H"], ["AS", "2S", "AD"]], "hand_values": [16, 4], "scores": [0, 12],
        "melds": [{"id": 0, "owner": 1, "kind": "run", "cards": ["3D", "4D", "5D"], "layoffs": []}],
        "knocker": 1, "knocker_deadwood": 4, "defender_deadwood": 16,
    }  # fmt: skip
    text = events.reveal(ended, ["You", "Gin bot"], PLAIN)
    assert "Hand 1 is over: Gin bot knocked and won." in text
    assert "You      4♥ 5♥ 7♥   (worth 16)" in text
    assert "Gin bot  A♠ 2♠   A♦   (worth 4)" in text
    assert "#0 (Gin bot)  3♦ 4♦ 5♦" in text
    assert "Hand score: Gin bot +12" in text
    assert "Match score: You 0 · Gin bot 12" in text


# --------------------------------------------------------------------------------------------- arguments


def test_options_and_bots_from_the_command_line() -> None:
    assert parse_option("knock_limit=5") == ("knock_limit", 5)
    assert parse_option("undercut_on_tie=false") == ("undercut_on_tie", False)
    assert parse_option("first_upcard_rule=take_or_pass") == ("first_upcard_rule", "take_or_pass")
    with pytest.raises(ValueError):
        parse_option("knock_limit")
    assert seat_bots("", "gin", None) == ["strong"]
    assert seat_bots("gin,random", "rummy", None) == ["gin", "random"]
    assert seat_bots("random", "rummy", 4) == ["random", "random", "random"]
    assert seat_bots("", "rummy-g4a", None) == ["strong", "strong"]
    with pytest.raises(ValueError, match="unknown bot"):
        seat_bots("nobody", "gin", None)
    with pytest.raises(ValueError, match="2 bots named for 1"):
        seat_bots("gin,random", "gin", 2)
    assert len(seed_bytes("x")) == 32 and seed_bytes("x") == seed_bytes("x") != seed_bytes("y")


def test_seed_is_refused_with_a_remote_referee(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["play", "--referee", "127.0.0.1:1", "--seed", "s"]) == 2
    assert "--seed needs the local referee" in capsys.readouterr().err


# ----------------------------------------------------------------------------------------- the real thing


class Terminal:
    """A program on a pseudo-terminal: ``expect`` a pattern in what it printed (escape codes removed),
    ``send`` a line as typed."""

    def __init__(self, args: list[str], env: dict[str, str], cols: int = 120, rows: int = 40) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.process = subprocess.Popen(
            args, stdin=slave, stdout=slave, stderr=slave, cwd=ROOT, env=env, start_new_session=True
        )
        os.close(slave)
        self.fd = master
        self.raw = ""
        self.text = ""
        self.pos = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the program has exited and the terminal is closed
            data = b""
        if not data:
            return False
        self.raw += self._decoder.decode(data)
        self.text = strip_ansi(self.raw).replace("\r", "")
        return True

    def expect(self, pattern: str, timeout: float = 30.0) -> re.Match[str]:
        """Wait for ``pattern`` after what was matched before; returns the match."""
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern)
        while True:
            found = regex.search(self.text, self.pos)
            if found:
                self.pos = found.end()
                return found
            left = deadline - time.monotonic()
            if (left <= 0 or not self._read(min(left, 0.5))) and not regex.search(self.text, self.pos):
                raise AssertionError(f"no {pattern!r} in:\n{self.text[-3000:]}")

    def send(self, line: str) -> None:
        """Type ``line`` and Enter."""
        os.write(self.fd, (line + "\r").encode())

    def wait(self, timeout: float = 20.0) -> int:
        """The program's exit status (its last output is read meanwhile)."""
        deadline = time.monotonic() + timeout
        while self.process.poll() is None and time.monotonic() < deadline:
            self._read(0.1)
        return self.process.wait(max(0.1, deadline - time.monotonic()))

    def close(self) -> None:
        """Kill the program if it still runs; close the terminal."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        os.close(self.fd)


@pytest.fixture
def terminal() -> Iterator[list[Terminal]]:
    started: list[Terminal] = []
    try:
        yield started
    finally:
        for t in started:
            t.close()


def _rummy_play(started: list[Terminal], *args: str, env: dict[str, str] | None = None) -> Terminal:
    environ = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "REDIS_URL")}
    environ.update(PYTHONPATH=str(ROOT), TERM="xterm", LANG="C.UTF-8", PYTHONIOENCODING="utf-8", **(env or {}))
    script = Path(sys.executable).with_name("rummy")  # the console script, once the project is installed
    command = [str(script)] if script.exists() else [sys.executable, "-m", "clients.play"]
    t = Terminal([*command, "play", *args], environ)
    started.append(t)
    return t


@pytest.mark.timeout(90)
def test_a_hand_played_by_number_through_a_terminal(terminal: list[Terminal]) -> None:
    """Local referee (its own redis-server), seeded deal, the strong Gin bot: commands, bad lines, a refused
    move, then move 1 of each list until the hand ends and its reveal and score are shown; then quit."""
    if find_redis_server() is None:
        pytest.skip("no redis-server binary")
    t = _rummy_play(terminal, "--profile", "gin", "--bots", "gin", "--seed", "terminal-test",
                    "--option", "target_score=500", "--name", "Tester")  # fmt: skip
    t.expect(r"you are playing against Gin bot\. Type 'help'", timeout=30)
    t.expect(r"Your hand \(10\):")
    t.expect(r"Your turn: draw from the stock")
    t.expect(r"\n> ")
    assert f"{RED}" in t.raw  # a terminal without NO_COLOR gets red hearts and diamonds
    assert re.search("[♠♥♦♣]", t.text)
    t.send("help")
    t.expect(r"(?s)Gin Rummy: two players.*?Commands:.*?knock td, big_gin.*?layoff 7s #2.*?  quit ")
    t.expect(r"\n> ")
    t.send("xyzzy")
    t.expect(r"'xyzzy': not a move or a command")
    t.send("\u00b2")  # str.isdigit() takes a superscript two for a digit, int() does not: no move number either
    t.expect(r"'\u00b2': not a move or a command")
    t.send("layoff 6d #1")  # the table's way of writing a meld id is a move (refused here: no meld on the table)
    t.expect(r"The referee refused layoff 6♦ 1: .*\[[A-Z_]+\]")
    t.send("discard 7h")
    t.expect(r"The referee refused discard 7♥: .*\[[A-Z_]+\]")
    t.send("hint")
    t.expect(r"Hint: the strong bot would play (draw stock|draw discard)")
    t.send("table")
    t.expect(r"── Gin Rummy \(gin\) · hand 1 · dealer: You ──")
    t.expect(r"\n> ")
    t.send("draw stock")
    eleven = t.expect(r"Your hand \(11\):  (.*)\n  melds: (.*)\n  deadwood (\d+) after discarding (\S+) "
                      r"\(the best discard\)")
    hand = _shown_cards(eleven.group(1))
    mask = sum(1 << engine.parse_card(c) for c in hand)
    after = {c: engine.min_deadwood(mask & ~(1 << engine.parse_card(c))) for c in hand}
    named = _shown_cards(eleven.group(4))[0]
    assert int(eleven.group(3)) == after[named] == min(after.values())  # the 10 cards kept, not the 11
    asked = t.expect(r"Your turn: (discard a card[^.]*)\.\n((?:  .*\n)+)")
    assert ("or knock" in asked.group(1)) == ("knock " in asked.group(2))
    t.expect(r"(?m)^> ")
    for _ in range(200):
        t.send("1")
        found = t.expect(r"(Hand 1 is over: [^\n]*)|(\n> )", timeout=20)
        if found.group(1):
            break
    else:
        raise AssertionError("the hand did not end")
    t.expect(r"Every hand, face up:\n  You      .*\(worth \d+\)\n  Gin bot  ")
    t.expect(r"Hand score: (Gin bot \+\d+|You \+\d+|none \(a drawn hand\))")
    t.expect(r"Match score: You \d+ · Gin bot \d+")
    t.expect(r"Press Enter to deal hand 2 \(q to quit\) ")  # the reveal stays on screen until Enter
    assert "Hand 2 is dealt" not in t.text[t.pos:]
    t.send("")
    t.expect(r"Hand 2 is dealt")
    t.expect(r"\n> ")
    t.send("quit")
    t.expect("Bye!")
    assert t.wait() == 0


@pytest.mark.timeout(60)
def test_rummy_against_two_bots_on_a_running_referee_without_colour(
    terminal: list[Terminal], referee: ServerThread
) -> None:
    """``--referee`` (the suite's referee over its Redis), three seats, NO_COLOR and letters: no escape codes,
    the table shows every seat; a clock the referee keeps (--clock): every seat's time left on the table, the
    human's in the prompt; end of input leaves cleanly."""
    t = _rummy_play(terminal, "--referee", referee.address, "--profile", "rummy", "--bots", "random,rummy",
                    "--ascii", "--clock", "300+5", env={"NO_COLOR": "1"})  # fmt: skip
    t.expect(r"Rummy \(rummy\): you are playing against Random bot, Rummy bot\.", timeout=30)
    clocks = t.expect(r"Clocks:   You (\d:\d\d) \(your move\) · Random bot (\d:\d\d) · Rummy bot (\d:\d\d)\n")
    assert all("4:50" <= c <= "5:10" for c in clocks.groups())  # 5 minutes, less a little, plus 5 s a move
    t.expect(r"Random bot: \d+ cards.*\nRummy bot: \d+ cards")
    t.expect(r"Your hand \(7\):  ([2-9AJQK]|10)[SHDC]")
    t.expect(r"\n\[[45]:\d\d left\] > ")
    assert "\x1b[31m" not in t.raw and not re.search("[♠♥♦♣]", t.text)
    t.send("help")
    help_text = t.expect(r"(?s)Rummy: melds are sets.*?  quit ").group(0)
    assert "layoff 7s #2" in help_text and "discard 7h" in help_text
    assert "knock" not in help_text and "declare" not in help_text and "big_gin" not in help_text
    t.expect(r"\n\[[45]:\d\d left\] > ")
    t.send("1")  # draw stock
    t.expect(r"You drew .* from the stock\.")
    t.expect(r"Your hand \(8\):  .*\n  melds: .*   unmatched: ")
    t.expect(r"Your turn: meld and lay off as you like, then discard")
    t.expect(r"\n\[[45]:\d\d left\] > ")
    os.write(t.fd, b"\x04")  # Ctrl-D: end of input
    assert t.wait() == 0


@pytest.mark.timeout(150)
def test_a_game_goes_on_when_its_referee_restarts(
    terminal: list[Terminal], redis_server: RedisProcess, tmp_path: Path
) -> None:
    """``--referee`` that stops and starts again (a restart or a deploy: same port, same Redis) while it is the
    human's turn: the move typed meanwhile is played once the referee is back, the bot (a thread of this program)
    plays on, and the hand goes on; the program does not give up within the outage (it used to, after about
    1.5 s: "cannot reach", exit 1, the game lost to the player)."""
    server = ServerProcess(redis_server.url, log_dir=tmp_path).start()
    try:
        t = _rummy_play(terminal, "--referee", server.address, "--profile", "gin", "--bots", "gin")
        t.expect(r"you are playing against Gin bot\.", timeout=30)
        t.expect(r"Your turn: draw from the stock")
        t.expect(r"\n> ")
        server.stop()
        t.send("1")  # draw stock, sent to no referee
        time.sleep(3)  # an outage longer than the SDK's default retries (about 1.5 s in all)
        assert t.process.poll() is None, t.text[-2000:]
        server.start()
        t.expect(r"You drew .* from the stock\.", timeout=60)
        t.expect(r"Your turn: discard a card")
        t.expect(r"\n> ")
        t.send("1")
        t.expect(r"You discarded ")
        t.expect(r"Gin bot (drew|took)", timeout=30)  # the bot plays on after the restart
        t.send("quit")
        t.expect("Bye!", timeout=30)
        assert t.wait() == 0
    finally:
        server.stop()


_SYMBOL_SUITS = {"♠": "S", "♥": "H", "♦": "D", "♣": "C"}


def _shown_cards(text: str) -> list[str]:
    """Card texts of a hand as the terminal draws it (``10♦ J♠`` -> ``TD JS``)."""
    return [("T" if w[:-1] == "10" else w[:-1]) + _SYMBOL_SUITS[w[-1]] for w in text.split()]


def test_the_hand_shows_its_melds_and_the_deadwood_after_the_best_discard() -> None:
    view_hand = ["7H", "8H", "9H", "KS", "KH", "KD", "2C", "5D", "QC", "JC", "3S"]

    base = {"game": "gin", "viewer": 0, "phase": "discard", "to_act": 0, "dealer": 1, "hand_no": 0,
            "hand_sizes": [11, 10], "known_cards": [[], []], "melds": [], "discard_pile": ["4D"], "stock_size": 30,
            "taken_card": None, "turns": 1, "scores": [0, 0], "upcard": "4D", "knock_limit": 10, "knock": None}
    rules = engine.rules_from_profile("gin").to_dict()
    text = strip_ansi(render.hand_block(View.from_engine({**base, "hand": view_hand}, rules), COLOR))
    # J or Q of clubs is the best discard (the two tie; the first in hand order is named): 2 + 5 + 10 + 3 = 20 left,
    # where the 11 cards hold 30
    assert "deadwood 20 after discarding J♣ (the best discard)" in text
    assert "melds: 7♥ 8♥ 9♥ · K♠ K♥ K♦   unmatched: 3♠ 2♣ Q♣ 5♦ (after that discard)" in text
    ten = View.from_engine({**base, "phase": "draw", "hand": view_hand[:10], "hand_sizes": [10, 10]}, rules)
    shown = strip_ansi(render.hand_block(ten, COLOR))
    assert "deadwood 27 (knock at 10 or less)" in shown and "unmatched: 2♣ J♣ Q♣ 5♦" in shown
    taken = View.from_engine({**base, "hand": view_hand, "taken_card": "JC"}, rules)  # not to be discarded now
    assert "after discarding Q♣" in strip_ansi(render.hand_block(taken, COLOR))


def test_the_discard_phase_names_a_knock_only_when_one_is_legal() -> None:
    assert phase_ask("discard", [engine.Discard(engine.parse_card("AS"))]) == "discard a card"
    assert phase_ask("discard", [engine.Discard(0), engine.Knock(0)]) == "discard a card, or knock"
    assert phase_ask("discard", [engine.Discard(0), engine.Knock(0), engine.BigGin()]) == (
        "discard a card, or knock or go big gin")
    rummy = help_text("rummy", engine.rules_from_profile("rummy").to_dict())
    assert "knock" not in rummy and "declare best" not in rummy and "layoff 7s #2" in rummy
    assert "knock td" in help_text("gin", engine.rules_from_profile("gin").to_dict())


def test_meld_ids_may_be_typed_as_shown() -> None:
    assert engine.parse_move(move_input("layoff 6d #1")) == engine.LayOff(engine.parse_card("6D"), 1)
    assert engine.parse_move(move_input("layoff 6♦ # 12")) == engine.LayOff(engine.parse_card("6D"), 12)
    assert engine.parse_move(move_input("layoff 6d 1")) == engine.LayOff(engine.parse_card("6D"), 1)


def test_a_bare_draw_draws_from_the_stock_and_the_short_forms_read_as_moves() -> None:
    assert typed_move("draw") == engine.DrawStock()
    assert typed_move("s") == typed_move("stock") == typed_move("draw stock") == engine.DrawStock()
    assert typed_move("take") == typed_move("pile") == typed_move("draw discard") == engine.DrawDiscard()
    assert typed_move("discard 7♥") == engine.Discard(engine.parse_card("7H"))
    with pytest.raises(engine.RuleError):
        typed_move("draw twice")


def test_the_help_counts_the_target_in_points() -> None:
    one = engine.rules_from_profile("gin").to_dict() | {"target_score": 1}
    assert "first to 1 point." in help_text("gin", one)
    assert "first to 100 points." in help_text("gin", engine.rules_from_profile("gin").to_dict())
