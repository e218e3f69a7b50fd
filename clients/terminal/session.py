"""The interactive loop of one human seat: follow the game's WatchGame stream, draw the table, offer the legal
moves as a numbered list, read the player's choice and submit it, through the public gRPC API only.

Only the main thread prints: a reader thread moves the stream's items into a queue, and the loop prints the events
up to the version it is about to show before it draws the table, so what the bots did always comes first.
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

import grpc

import engine
from clients.bots import StrongBot
from clients.bots.base import Bot
from clients.runner import SeatResult, play_seat
from clients.sdk import GameSnapshot, RefereeClient, RefereeError, RetryPolicy
from clients.terminal import render
from clients.terminal.events import describe
from clients.terminal.guide import help_text, phase_ask
from clients.terminal.render import Style

#: How long the loop waits for the stream to deliver the events of a version it already holds a view of.
CATCH_UP_S = 2.0
#: A gap this long in the stream means the events of the version being shown are all in.
QUIET_S = 0.05
_ALIASES = {"draw": "draw stock", "stock": "draw stock", "s": "draw stock", "pile": "draw discard",
            "take": "draw discard", "declare": "declare best"}  # fmt: skip
#: How the terminal's calls (the human's and its bots') retry a referee out of reach: for about a minute in all
#: (35-70 s), so that a referee that restarts meanwhile (a deploy; a crash and its supervisor) loses no one's game.
#: The SDK's default gives up after about 1.5 s, and the game could not be taken up again from here.
PATIENT = RetryPolicy(attempts=40, max_backoff=2.0)
_COMMANDS = ("help", "hand", "table", "moves", "sort", "hint", "quit")
#: A table meld's id as the table shows it (``#2``): typed moves may name it so.
_MELD_ID = re.compile(r"#\s*(\d+)")


def move_input(text: str) -> str:
    """A typed move in the form ``engine.parse_move`` reads: suit symbols as letters, ``#2`` as ``2``."""
    return _MELD_ID.sub(r"\1", render.card_input(text))


def typed_move(line: str) -> engine.Move:
    """The move a typed line names, short forms included (a bare ``draw`` draws from the stock, ``take`` the top
    of the discard pile); raises engine.RuleError for a line that is no move."""
    text = move_input(line).strip().lower()
    return engine.parse_move(_ALIASES.get(text, text))


class _Ended:
    """Stream marker: the stream ended (the match is over), or failed (``error``)."""

    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error


class Quit(Exception):
    """The player asked to leave."""


@dataclass
class BotSeat:
    """One bot playing its seat through ``clients.runner.play_seat`` in a thread of its own."""

    name: str
    seat: int
    bot: Bot
    result: SeatResult | None = None
    error: BaseException | None = None
    thread: threading.Thread | None = field(default=None, repr=False)

    def start(self, target: str, game_id: str, token: str, stop: threading.Event) -> None:
        """Begin playing (returns at once)."""

        def run() -> None:
            try:
                with RefereeClient(target, token, retry=PATIENT) as client:
                    self.result = play_seat(client, game_id, token, self.bot, stop=stop, idle_check=1.0)
            except BaseException as exc:
                self.error = exc

        self.thread = threading.Thread(target=run, daemon=True, name=f"bot-{self.seat}")
        self.thread.start()

    def trouble(self) -> str | None:
        """Why this bot stopped before the match was over (None while it plays, or once the match is over)."""
        if self.thread is None or self.thread.is_alive():
            return None
        if self.error is not None:
            return f"{self.name} lost the referee: {self.error}"
        if self.result is not None and self.result.forfeit:
            return f"{self.name} forfeited: {self.result.forfeit_reason}"
        return None


class Session:
    """The human's seat (``token``) of game ``game_id``. ``ask`` reads a line (``input``); ``out`` is written."""

    def __init__(
        self,
        client: RefereeClient,
        game_id: str,
        style: Style,
        *,
        ask: Callable[[str], str] = input,
        out: TextIO | None = None,
        bots: Sequence[BotSeat] = (),
        title: str = "",
    ) -> None:
        self.client = client
        self.game_id = game_id
        self.style = style
        self.ask = ask
        self.out = out or sys.stdout
        self.title = title
        self.bots = bots
        self.names: list[str] = []
        self.rules: Mapping[str, Any] = {}
        self.by_rank = False
        self.hint_bot = StrongBot()
        self.completions: list[str] = list(_COMMANDS)
        self._stream: queue.Queue[object] = queue.Queue()
        self._seen = (-1, 0)
        self._ended = False
        self._watch: Any = None
        self._revealed = False  # a hand's end was shown: the next deal waits for Enter
        self._status = False  # a clocks status line is shown (a terminal only): the next output replaces it

    def say(self, text: str = "") -> None:
        """Print a line (or several)."""
        if self._status:
            self.out.write("\r\x1b[K")
            self._status = False
        print(text, file=self.out, flush=True)

    def show_clocks(self, snap: GameSnapshot) -> None:
        """On a terminal, while another seat thinks in a game with a time control: the clocks, counting down, on
        a status line of their own (replaced by the next output)."""
        isatty = getattr(self.out, "isatty", None)
        line = render.clocks_line(snap.view, self.names, self.style)
        if line is None or not (callable(isatty) and isatty()) or snap.over or os.environ.get("TERM") == "dumb":
            return
        self.out.write(f"\r\x1b[K  {line}")
        self.out.flush()
        self._status = True

    # ---------------------------------------------------------------------------------------------- stream

    def watch(self) -> GameSnapshot:
        """Open the game's stream: returns its first snapshot (start the bots after this: nothing is missed)."""
        self._watch = self.client.watch(self.game_id)
        threading.Thread(target=self._read, daemon=True, name="watch").start()
        first = self._stream.get(timeout=30)
        if isinstance(first, _Ended) and first.error is not None:
            raise first.error
        if not isinstance(first, GameSnapshot):
            raise RuntimeError(f"the stream began with {first!r}, not a snapshot")
        self._seen = (first.version, 2**32)
        self._learn_names(first)
        self.rules = first.view.rules
        return first

    def _read(self) -> None:
        try:
            for item in self._watch:
                self._stream.put(item)
            self._stream.put(_Ended())
        except BaseException as exc:
            self._stream.put(_Ended(exc))

    def _take(self, item: object) -> None:
        if isinstance(item, _Ended):
            self._ended = True
            if item.error is not None and not isinstance(item.error, grpc.RpcError | RefereeError):
                raise item.error
            return
        if not isinstance(item, dict):
            return
        position = (int(item["version"]), int(item["index"]))
        if position <= self._seen:
            return
        self._seen = position
        self.hint_bot.observe(item)
        if item.get("kind") == "hand_started" and self._revealed:
            self._next_hand(int(item.get("hand_no", 0)))
        self._revealed = item.get("kind") == "hand_ended"
        text = describe(item, self.names, self.style, self.rules)
        if text:
            self.say(text)

    def _next_hand(self, hand_no: int) -> None:
        """Wait for Enter between the end of a hand and the next deal (raises Quit)."""
        try:
            answer = self.ask(f"Press Enter to deal hand {hand_no + 1} (q to quit) ").strip().lower()
        except (EOFError, KeyboardInterrupt):
            self.say()
            raise Quit from None
        if answer in ("q", "quit", "exit"):
            self.say("Leaving the game. Bye!")
            raise Quit

    def pump(self, timeout: float) -> bool:
        """Print the events that arrive within ``timeout`` seconds (then any already queued): True if any came."""
        try:
            self._take(self._stream.get(timeout=timeout))
        except queue.Empty:
            return False
        while True:
            try:
                self._take(self._stream.get_nowait())
            except queue.Empty:
                return True

    def catch_up(self, version: int, *, until_end: bool = False) -> None:
        """Print every event up to ``version`` (and, with ``until_end``, to the end of the stream). A version's
        events are sent together: once one of them is in, the loop goes on until the stream is quiet."""
        deadline = time.monotonic() + CATCH_UP_S
        while not self._ended and time.monotonic() < deadline and (self._seen[0] < version or until_end):
            self.pump(0.1)
        while self.pump(QUIET_S):
            pass

    def close(self) -> None:
        """Stop following the stream."""
        if self._watch is not None:
            self._watch.cancel()

    # ------------------------------------------------------------------------------------------------ loop

    def _learn_names(self, snap: GameSnapshot) -> None:
        seats = snap.data.get("seats", ())
        self.names = ["You" if i == snap.seat else (s.get("name") or f"Seat {i}") for i, s in enumerate(seats)]

    def fetch(self) -> GameSnapshot:
        """The human's current view."""
        return self.client.get_game(self.game_id).snapshot

    def run(self, snap: GameSnapshot) -> bool:
        """Play until the match is over (True) or the player quits or a bot stops (False)."""
        try:
            return self._run(snap)
        except Quit:
            return False

    def _run(self, snap: GameSnapshot) -> bool:
        title = self.title or _title(snap)
        self.say(self.style.bold(f"{title}: you are playing against {', '.join(self.names[1:])}.") +
                 " Type 'help' for the rules and the commands.")  # fmt: skip
        shown: tuple[int, int] | None = None  # (hand_no, turns) of the last full table drawn
        while True:
            if snap.over:
                self.catch_up(snap.version, until_end=True)
                return True
            if not snap.my_turn:
                idle = 0
                self.show_clocks(snap)
                while not self.pump(0.5) and idle < 4 and not self._ended:  # a look every 2 s without events
                    idle += 1
                    self.show_clocks(snap)
                    trouble = next((t for t in (b.trouble() for b in self.bots) if t), None)
                    if trouble:
                        self.say(trouble)
                        return False
                snap = self.fetch()
                continue
            self.catch_up(snap.version)
            turn = (snap.view.hand_no, snap.view.turns)
            self.say()
            if shown != turn:
                self.say(render.table(snap.view, self.names, self.style, title=title, by_rank=self.by_rank))
                shown = turn
            else:
                self.say(render.hand_block(snap.view, self.style, self.by_rank))
            snap = self.turn(snap, title)

    def turn(self, snap: GameSnapshot, title: str) -> GameSnapshot:
        """Offer the moves, read until a move is accepted; the new snapshot (raises Quit)."""
        moves = render.ordered_moves(snap.legal)
        self._offer(snap, moves)
        while True:
            choice = self._read_choice(snap, moves, title)
            try:
                result = self.client.submit_move(self.game_id, choice, expected_version=snap.version)
            except RefereeError as err:
                if err.code == grpc.StatusCode.ABORTED:
                    self.say("The game moved on meanwhile; here it is again.")
                    return self.fetch()
                if not err.rejected_move:
                    raise
                if snap.view.deadline_ms is not None:
                    now = self.fetch()
                    if now.version != snap.version:  # the referee's timeout came first
                        self.say(f"Too late: you ran out of time [{err.reason or err.code.name}].")
                        return now
                self.say(f"The referee refused {render.move(choice, self.style)}: "
                         f"{err.message} [{err.reason or err.code.name}]")  # fmt: skip
                continue
            return result.snapshot

    def _offer(self, snap: GameSnapshot, moves: Sequence[engine.Move]) -> None:
        self.say(self.style.bold(f"Your turn: {phase_ask(snap.phase, moves)}."))
        width = shutil.get_terminal_size((100, 24)).columns
        self.say(render.numbered([render.move(m, self.style, snap.view) for m in moves], width))
        self.completions = [*_COMMANDS, *(engine.move_text(m).lower() for m in moves)]

    def _read_choice(self, snap: GameSnapshot, moves: Sequence[engine.Move], title: str) -> engine.Move:
        """Read lines until one names a move; commands are answered on the way."""
        while True:
            left = snap.view.time_left()
            prompt = "> " if left is None else f"[{render.clock_text(left)} left] > "
            try:
                line = self.ask(prompt).strip()
            except (EOFError, KeyboardInterrupt):
                self.say()
                raise Quit from None
            text = move_input(line).strip().lower()
            if not text:
                continue
            if text in ("quit", "exit", "q"):
                self.say("Leaving the game. Bye!")
                raise Quit
            if text in ("help", "?", "h"):
                self.say(help_text(snap.view.game, snap.view.rules))
            elif text == "hand":
                self.say(render.hand_block(snap.view, self.style, self.by_rank))
            elif text == "table":
                self.say(render.table(snap.view, self.names, self.style, title=title, by_rank=self.by_rank))
            elif text in ("moves", "list", "ls"):
                self._offer(snap, moves)
            elif text == "sort":
                self.by_rank = not self.by_rank
                self.say(render.hand_block(snap.view, self.style, self.by_rank))
            elif text == "hint":
                self._hint(snap, moves)
            elif text.isascii() and text.isdigit():  # (isdigit alone: also a superscript two, which int refuses)
                n = int(text)
                if 1 <= n <= len(moves):
                    return moves[n - 1]
                self.say(f"There is no move {n}: choose 1 to {len(moves)}, or type 'moves' to see them again.")
            else:
                try:
                    return typed_move(line)
                except engine.RuleError as err:
                    why = "not a move or a command" if err.code == "BAD_MOVE_TEXT" else err.message
                    self.say(f"{line!r}: {why}. Type a number, a move such as 'discard 7h', or 'help'.")

    def _hint(self, snap: GameSnapshot, moves: Sequence[engine.Move]) -> None:
        try:
            best = self.hint_bot.choose(snap.view, snap.legal)
        except Exception as exc:  # a hint is a nicety: a bot's failure must not end the game
            self.say(f"No hint this time ({exc}).")
            return
        number = next((i for i, m in enumerate(moves, 1) if m == best), None)
        where = f" (number {number})" if number else ""
        self.say(f"Hint: the strong bot would play {render.move(best, self.style, snap.view)}{where}.")


def _title(snap: GameSnapshot) -> str:
    return "Gin Rummy" if snap.view.game == "gin" else "Rummy"
