"""Entrants: the bundled bots by name, or any program that speaks the tournament's JSON-lines protocol.

An entrant is given as ``[NAME=]BOT[@SEED]`` for a bundled bot (``random``, ``gin``, ``rummy``, ``strong``; the
name defaults to the spec, e.g. ``random@2``) or ``NAME=cmd:COMMAND LINE`` for an external program (the command
line is split like a shell would, without a shell).

The program protocol (one process per seat of each game; UTF-8, one JSON object per line):

- The program is started when the game is created, with ``RUMMY_BOT_SEED`` (a decimal seed, the same in every
  run of the tournament: use it to make the program's own choices repeatable) and ``RUMMY_BOT_NAME`` in its
  environment (the tournament's environment otherwise, without ``RUMMY_ORGANIZER_TOKEN``). Its stderr is appended
  to ``logs/NAME.log`` in the output directory.
- Whenever its seat must move, it receives one line ``{"view": VIEW, "rules": RULES, "legal": [MOVE, ...]}``:
  VIEW is what the seat may see (``clients.view.View.to_dict()``: game, viewer, phase, to_act, dealer, hand,
  hand_sizes, known_cards, melds, discard_pile, stock_size, taken_card, scores, turns, and in Gin upcard,
  knock_limit and knock); RULES is the game's complete option set; each MOVE is a move text
  (``engine.move_text``: ``"draw stock"``, ``"draw discard"``, ``"pass"``, ``"discard TD"``, ``"knock 5C"``,
  ``"big_gin"``, ``"meld 7H 8H 9H"``, ``"layoff 7S 2"``, ``"declare best"``, ``"done"``).
- It answers with one line: the move text (one of ``legal``, or any move ``engine.parse_move`` reads, such as a
  knock that declares its own melds: ``"knock 5C [AS 2S 3S, 7H 8H 9H]"``); a JSON string is accepted too.
- At the end of the game its stdin is closed; it should exit. It is killed if it has not within a second (at
  once if it still owes an answer).

A program that exits, answers something that is not a move, makes a move the referee refuses, or takes longer
than ``--move-timeout`` seconds to answer forfeits the game.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shlex
import shutil
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

import engine
from clients.bots import BOTS, Bot, make_bot
from clients.tournament.schedule import LABEL_RE, ConfigError
from clients.view import View

PROGRAM_PREFIX = "cmd:"
#: The longest answer line read from a program (a move text is a few dozen characters).
MAX_ANSWER = 64 * 1024
#: What a program's environment never holds of the tournament's (the organizer token: clients/tournament/cli.py).
SECRET_ENVIRONMENT = frozenset({"RUMMY_ORGANIZER_TOKEN"})
#: Seconds a program's first answer may take on top of the move timeout: its start-up (an interpreter loading).
STARTUP_GRACE = 10.0


@dataclass(frozen=True, slots=True)
class Entrant:
    """One player of the tournament: its name and what plays for it (a bundled bot or a program's argv)."""

    name: str
    spec: str
    bot: str | None = None
    seed: int | None = None
    argv: tuple[str, ...] = ()

    @property
    def program(self) -> bool:
        """An external program (not a bundled bot)."""
        return self.bot is None


def parse_entrant(text: str) -> Entrant:
    """Read ``[NAME=]BOT[@SEED]`` or ``NAME=cmd:COMMAND``."""
    name, sep, spec = text.partition("=")
    if not sep or name.startswith(PROGRAM_PREFIX):
        name, spec = "", text
    name, spec = name.strip(), spec.strip()
    if spec.startswith(PROGRAM_PREFIX):
        try:
            argv = tuple(shlex.split(spec[len(PROGRAM_PREFIX):]))
        except ValueError as exc:
            raise ConfigError(f"entrant {text!r}: {exc}") from None
        if not name:
            raise ConfigError(f"an external program needs a name: NAME=cmd:COMMAND, got {text!r}")
        if not argv:
            raise ConfigError(f"entrant {text!r} has an empty command")
        if shutil.which(argv[0]) is None:
            raise ConfigError(f"entrant {name}: program {argv[0]!r} not found")
        return Entrant(name, spec, argv=argv)
    bot, at, seed_text = spec.partition("@")
    if bot not in BOTS:
        raise ConfigError(f"unknown bot {bot!r} in {text!r} (bundled: {', '.join(BOTS)}; a program: NAME=cmd:COMMAND)")
    seed = None
    if at:
        try:
            seed = int(seed_text)
        except ValueError:
            raise ConfigError(f"the seed after @ must be a number, got {text!r}") from None
    name = name or spec
    if not LABEL_RE.fullmatch(name):
        raise ConfigError(f"bad entrant name {name!r}: 1-64 of A-Z a-z 0-9 . _ @ + - (a letter or digit first)")
    return Entrant(name, spec, bot=bot, seed=seed)


class Player(Bot, Protocol):
    """A bot that may hold resources (a process) to release after its game."""

    def close(self) -> None:
        """Release them."""
        ...


class _Bundled:
    """A bundled bot, with nothing to release."""

    def __init__(self, bot: Bot) -> None:
        self.bot = bot
        self.name = bot.name

    def choose(self, view: View, legal: Sequence[engine.Move]) -> engine.Move:
        """The bundled bot's move."""
        return self.bot.choose(view, legal)

    def observe(self, event: Mapping[str, Any]) -> None:
        """Passed on."""
        self.bot.observe(event)

    def close(self) -> None:
        """Nothing to do."""


class ProgramError(RuntimeError):
    """The program broke the protocol (exited, or answered something that is not a move)."""


def _plain(value: object) -> object:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, tuple | list | set | frozenset):
        return list(value)
    raise TypeError(f"not JSON-able: {value!r}")


class ProgramBot:
    """A seat played by an external program over the JSON-lines protocol (see the module docstring)."""

    def __init__(self, name: str, argv: Sequence[str], seed: int, log: Path | None = None,
                 timeout: float | None = None) -> None:  # fmt: skip
        self.name = name
        #: Seconds an answer may take (None: no limit); the first answer may take STARTUP_GRACE more.
        self.timeout = timeout
        self._lines: queue.Queue[str] = queue.Queue()
        self._lock = threading.Lock()
        self._error: OSError | None = None
        self._proc: subprocess.Popen[str] | None = None
        self._waiting = False  # a request was sent and not answered (yet)
        self._asked = False  # a request was sent
        #: Requests answered with a move (0 after a forfeit: the program never spoke the protocol).
        self.moves_answered = 0
        # never the organizer token the tournament may have read from its environment: with it a program could
        # read its own game's replay, every hand and the stock, at any time (RULES.md section 4)
        env = {k: v for k, v in os.environ.items() if k not in SECRET_ENVIRONMENT}
        env.update(RUMMY_BOT_SEED=str(seed), RUMMY_BOT_NAME=name)
        stderr: IO[bytes] | int = subprocess.DEVNULL
        try:
            if log is not None:
                log.parent.mkdir(parents=True, exist_ok=True)
                stderr = open(log, "ab")  # noqa: SIM115 - handed to the child, closed right after the start
            self._proc = subprocess.Popen(
                list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env,
                text=True, encoding="utf-8", errors="replace", bufsize=1,
                start_new_session=True,  # a Ctrl-C meant for the tournament must not kill it into a forfeit
            )  # fmt: skip
        except OSError as exc:
            self._error = exc
        finally:
            if not isinstance(stderr, int):
                stderr.close()
        if self._proc is not None and self._proc.stdout is not None:
            threading.Thread(target=self._read, args=(self._proc.stdout,), daemon=True, name=f"program-{name}").start()

    def _read(self, stdout: IO[str]) -> None:
        """Move the program's answer lines into the queue ("" at the end of its output)."""
        try:
            while line := stdout.readline(MAX_ANSWER):
                self._lines.put(line)
        except (OSError, ValueError):
            pass
        finally:
            self._lines.put("")
            with contextlib.suppress(OSError, ValueError):
                stdout.close()

    def choose(self, view: View, legal: Sequence[engine.Move]) -> engine.Move:
        """Send the view and the legal moves, read the answer's move text."""
        proc = self._proc
        if proc is None or proc.stdin is None or proc.stdout is None:
            raise ProgramError(f"the program did not start: {self._error}")
        texts = [engine.move_text(m) for m in legal]
        request = json.dumps({"view": view.to_dict(), "rules": dict(view.rules), "legal": texts}, default=_plain)
        first = not self._asked
        self._asked = True
        self._waiting = True
        try:
            proc.stdin.write(request + "\n")
            proc.stdin.flush()
        except (OSError, ValueError) as exc:  # a broken pipe, or closed by close()
            raise ProgramError(f"the program is gone ({exc})") from None
        wait = None if self.timeout is None else self.timeout + (STARTUP_GRACE if first else 0.0)
        try:
            answer = self._lines.get(timeout=wait)
        except queue.Empty:
            extra = f" (its first answer: {self.timeout}s plus {STARTUP_GRACE:g}s to start)" if first else ""
            raise ProgramError(f"the program took more than {self.timeout}s to move{extra}") from None
        if not answer:
            try:
                status: int | None = proc.wait(0.5)
            except subprocess.TimeoutExpired:
                status = None
            raise ProgramError(f"the program closed its output (exit status {status}) instead of answering")
        self._waiting = False
        text = answer.strip()
        if text.startswith('"'):
            try:
                text = str(json.loads(text))
            except json.JSONDecodeError:
                raise ProgramError(f"the program answered {answer.strip()!r}, not a move") from None
        if text in texts:
            self.moves_answered += 1
            return legal[texts.index(text)]
        try:
            move = engine.parse_move(text)
        except engine.RuleError as exc:
            raise ProgramError(f"the program answered {text!r}, not a move ({exc.message})") from None
        self.moves_answered += 1
        return move

    def observe(self, event: Mapping[str, Any]) -> None:
        """Programs are not told events: the view they get with each request says what they may know."""

    def close(self) -> None:
        """Close its stdin; kill it unless it exits within a second."""
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError, ValueError):
            if proc.stdin is not None:
                proc.stdin.close()
        try:
            proc.wait(0.0 if self._waiting else 1.0)  # one that never answered (it timed out) is not waited for
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5.0)
        # its stdout is closed by the reader thread at its end of file (closing it here could wait on the reader)


def make_player(entrant: Entrant, seed: int, log_dir: Path | None = None, timeout: float | None = None) -> Player:
    """A fresh player of ``entrant`` for one seat of one game, seeded with ``seed``; a program's answers may take
    ``timeout`` seconds (its first one STARTUP_GRACE more)."""
    if entrant.bot is None:
        log = None if log_dir is None else log_dir / f"{entrant.name}.log"
        return ProgramBot(entrant.name, entrant.argv, seed, log, timeout)
    return _Bundled(make_bot(entrant.bot, seed))
