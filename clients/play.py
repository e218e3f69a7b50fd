"""``rummy play``: play a match against the bundled bots in a terminal, through the referee's public gRPC API;
``rummy replay FILE``: step through a saved game (``clients.terminal.replay``).

Without ``--referee`` a private referee is started for the game (``rummy-referee serve`` with its zero-setup
redis-server, in a temporary directory, stopped at the end); ``--seed`` is only for that local referee, whose
organizer token this command holds. The human takes seat 0; the bots (``--bots gin,random``) take the others and
play through ``clients.runner.play_seat``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from clients.bots import BOTS, make_bot
from clients.sdk import RefereeClient, RefereeError, SeatSpec, TimeoutPolicy, time_control_from_text
from clients.sdk.records import RecordError
from clients.sdk.values import TIMEOUT_POLICIES
from clients.terminal import replay as replay_view
from clients.terminal.local import LocalReferee, LocalRefereeError
from clients.terminal.render import Style, detect_style
from clients.terminal.session import PATIENT, BotSeat, Session

OptionValue = bool | int | str
PROFILES = ("gin", "gin-standard", "oklahoma-gin", "hollywood-gin", "rummy", "rummy-g4a")
_DEFAULT_PLAYERS = {"rummy-g4a": 3}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rummy", description="Gin Rummy and Rummy in a terminal")
    commands = parser.add_subparsers(dest="command", required=True)
    play = commands.add_parser("play", help="play a match against bots",
                               description="Play a match against bots in this terminal.")  # fmt: skip
    play.add_argument(
        "--referee", metavar="HOST:PORT", help="a running referee, or several sharing one Redis as HOST:PORT,HOST:PORT "
        "(calls balanced over them; default: start a private one for this game)"
    )
    play.add_argument("--profile", default="gin", choices=PROFILES, help="the rules (default: gin)")
    play.add_argument("--players", type=int, help="seats, you included (Gin: 2; Rummy: 2 to 6)")
    play.add_argument(
        "--bots",
        default="",
        metavar="NAME,NAME",
        help=f"the bots of the other seats, in seat order ({', '.join(BOTS)}; default: strong, which plays "
        "the gin or the rummy bot by the game; the last name fills any seat left)",
    )
    play.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a rule option override, e.g. knock_limit=5 or target_score=50 (repeatable)",
    )
    play.add_argument("--clock", metavar="TIME",
                      help="a time control the referee keeps: SECONDS per move (30), INITIAL+INCREMENT seconds for "
                           "a clock per seat (300+5), or bank:ALLOWANCE+BANK (bank:5+60); default none")
    play.add_argument("--on-timeout", choices=TIMEOUT_POLICIES, default="auto_move",
                      help="with --clock, what the referee does for a seat out of time: auto_move (default: it "
                           "plays a fixed move for it; after 3 in a row its next timeout loses the match) or "
                           "forfeit_match")
    play.add_argument("--seed", help="any text: the same text deals the same cards (local referee only)")
    play.add_argument("--name", default=os.environ.get("USER") or "Player", help="your display name")
    play.add_argument("--no-color", action="store_true", help="no ANSI colours (also: NO_COLOR=1)")
    play.add_argument("--ascii", action="store_true", help="suit letters instead of symbols")
    replay = commands.add_parser(
        "replay", help="step through a saved game, every hand face up",
        description="Step through a saved game record (rummy-tournament saves one per game in games/ of its "
                    "output directory; clients.sdk.records.save_record saves any game): Enter for the next move, "
                    "q to quit. Every step is printed at once when the input is not a terminal, or with --no-pause.",
    )
    replay.add_argument("file", type=Path, metavar="FILE",
                        help="a game record, a directory of them, or a tournament's output directory")
    replay.add_argument("--game", metavar="ID", help="the game to show, when FILE holds several: its game id, "
                                                     "tournament game key (0:gin|random) or file name")
    replay.add_argument("--no-pause", action="store_true", help="print every step at once")
    replay.add_argument("--no-color", action="store_true", help="no ANSI colours (also: NO_COLOR=1)")
    replay.add_argument("--ascii", action="store_true", help="suit letters instead of symbols")
    return parser  # fmt: skip


def parse_option(text: str) -> tuple[str, OptionValue]:
    """``name=value``: true/false become booleans, whole numbers ints, anything else a string."""
    name, sep, raw = text.partition("=")
    if not sep or not name.strip() or not raw.strip():
        raise ValueError(f"an option is NAME=VALUE, not {text!r}")
    value = raw.strip()
    if value.lower() in ("true", "false", "yes", "no", "on", "off"):
        return name.strip(), value.lower() in ("true", "yes", "on")
    with contextlib.suppress(ValueError):
        return name.strip(), int(value)
    return name.strip(), value


def seat_bots(names: str, profile: str, players: int | None) -> list[str]:
    """The bot of each seat after the human's: ``names`` (comma-separated) padded with its last name to
    ``players - 1`` seats (``players`` defaults to the profile's seat count, or one seat per named bot)."""
    listed = [n.strip() for n in names.split(",") if n.strip()]
    for n in listed:
        if n not in BOTS:
            raise ValueError(f"unknown bot {n!r} (known: {', '.join(BOTS)})")
    count = players if players is not None else max(_DEFAULT_PLAYERS.get(profile, 2), len(listed) + 1)
    if count < 2:
        raise ValueError("a game needs at least 2 players")
    if len(listed) > count - 1:
        raise ValueError(f"{len(listed)} bots named for {count - 1} seat(s)")
    listed = listed or ["strong"]
    return listed + [listed[-1]] * (count - 1 - len(listed))


def seed_bytes(text: str) -> bytes:
    """The referee's seed (32 bytes) of a seed text."""
    return hashlib.sha256(text.encode()).digest()


def _bot_names(bots: Sequence[str]) -> list[str]:
    names = [f"{b.capitalize()} bot" for b in bots]
    return [f"{n} {i + 1}" if names.count(n) > 1 else n for i, n in enumerate(names)]


def play(args: argparse.Namespace) -> int:
    """Set the game up, play it, tear everything down. The exit status."""
    try:
        bots = seat_bots(args.bots, args.profile, args.players)
        options = dict(parse_option(o) for o in args.option)
        args.time_control = None if args.clock is None else time_control_from_text(args.clock)
    except ValueError as exc:
        print(f"rummy play: {exc}", file=sys.stderr)
        return 2
    if args.seed is not None and args.referee:
        print("rummy play: --seed needs the local referee (a seed is organizer-only): drop --referee",
              file=sys.stderr)  # fmt: skip
        return 2
    style = detect_style(sys.stdout, no_color=args.no_color, ascii_only=args.ascii)
    local: LocalReferee | None = None
    try:
        if args.referee:
            target, organizer = args.referee, None
        else:
            local = LocalReferee()
            target, organizer = local.start(), local.organizer_token
        return _play_game(args, target, organizer, bots, options, style)
    except LocalRefereeError as exc:
        print(f"rummy play: {exc}\n(install redis-server, or pass --referee HOST:PORT)", file=sys.stderr)
        return 1
    except RefereeError as exc:
        where = args.referee or "the local referee"
        if exc.transient:
            print(f"rummy play: cannot reach {where}: {exc.message}", file=sys.stderr)
        else:
            print(f"rummy play: {where} refused: {exc.message} [{exc.reason or exc.code.name}]", file=sys.stderr)
        return 1
    finally:
        if local is not None:
            local.stop()


def _play_game(args: argparse.Namespace, target: str, organizer: str | None, bots: list[str],
               options: dict[str, OptionValue], style: Style) -> int:  # fmt: skip
    names = _bot_names(bots)
    with RefereeClient(target, organizer) as admin:
        created = admin.create_game(
            args.profile,
            [SeatSpec(args.name[:64] or "Player", "human"), *(SeatSpec(n, "bot") for n in names)],
            options=options,
            seed=seed_bytes(args.seed) if args.seed is not None else None,
            time_control=args.time_control,
            timeout_policy=None if args.time_control is None else TimeoutPolicy(args.on_timeout),
        )
    base = int.from_bytes(seed_bytes(args.seed)[:4], "big") if args.seed is not None else None
    seats = [BotSeat(n, i + 1, make_bot(b, None if base is None else base + i)) for i, (b, n) in
             enumerate(zip(bots, names, strict=True))]  # fmt: skip
    stop = threading.Event()
    title = ("Gin Rummy" if created.settings.game == "gin" else "Rummy") + f" ({created.settings.profile})"
    with RefereeClient(target, created.tokens[0], retry=PATIENT) as client:
        session = Session(client, created.game_id, style, bots=seats, title=title)
        _complete_with(session)
        try:
            first = session.watch()
            for b in seats:
                b.start(target, created.game_id, created.tokens[b.seat], stop)
            finished = session.run(first)
        finally:
            stop.set()
            session.close()
            for b in seats:
                if b.thread is not None:
                    b.thread.join(5)
    if finished:
        session.say("Thanks for playing!")
    return 0 if finished or not any(b.trouble() for b in seats) else 1


def _complete_with(session: Session) -> None:
    """Line editing, history and Tab completion of commands and legal moves, when readline is there and a
    terminal is attached."""
    if not sys.stdin.isatty():
        return
    try:
        import readline
    except ImportError:
        return

    def complete(text: str, state: int) -> str | None:
        line = readline.get_line_buffer().lstrip().lower()
        start = len(line) - len(text)
        found = [c[start:] for c in session.completions if c.startswith(line)]
        return found[state] if state < len(found) else None

    readline.set_completer_delims(" ")
    readline.set_completer(complete)
    readline.parse_and_bind("tab: complete")


def replay(args: argparse.Namespace) -> int:
    """``rummy replay``: the exit status."""
    try:
        _, record = replay_view.pick(replay_view.find_games(args.file), args.game)
    except RecordError as exc:
        print(f"rummy replay: {exc}", file=sys.stderr)
        return 2
    style = detect_style(sys.stdout, no_color=args.no_color, ascii_only=args.ascii)
    interactive = not args.no_pause and sys.stdin.isatty()
    try:
        replay_view.run(record, style, lambda text: print(text, flush=True), input if interactive else None)
    except BrokenPipeError:  # piped into a pager or head that has seen enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rummy`` command."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "replay":
            return replay(args)
        return play(args)
    except KeyboardInterrupt:
        print("\nInterrupted. Bye!", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
