"""`rummy-tournament`: a duplicate-deal round robin of bots through the referee, with ratings and a report.

    rummy-tournament random random@2 gin 'example=cmd:python3 clients/tournament/examples/program_bot.py' \
        --deals 10 --out results/

Exit status: 0 every game played; 1 some games failed (not recorded: run again with --resume); 2 a bad
configuration (also: an entrant's program cannot start or fails its first request); 3 stopped by --stop-after;
130 interrupted (Ctrl-C). See clients/tournament/README.md.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import engine
from clients.sdk import RefereeClient
from clients.tournament.entrants import Entrant, parse_entrant
from clients.tournament.journal import GameRecord, Journal, JournalError
from clients.tournament.play import Arena, RunOutcome, run_games
from clients.tournament.progress import progress_bar
from clients.tournament.referee import RefereeStartError, referee
from clients.tournament.report import NO_CHART, summarize, table_text, write_files
from clients.tournament.schedule import RECORDS_DIR, Config, ConfigError, ScheduledGame, parse_option, schedule

JOURNAL = "journal.jsonl"
EXIT_FAILED, EXIT_CONFIG, EXIT_STOPPED, EXIT_INTERRUPTED = 1, 2, 3, 130


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rummy-tournament",
        description="Round robin of bots through the rummy referee, on duplicate deals, with ratings.",
        epilog="Entrants: [NAME=]BOT[@SEED] for a bundled bot (random, gin, rummy, strong), NAME=cmd:COMMAND for "
               "a program speaking the JSON-lines protocol of clients/tournament/README.md.",
    )  # fmt: skip
    p.add_argument("entrants", nargs="*", metavar="ENTRANT", help="at least two (or the player count) entrants")
    g = p.add_argument_group("what is played (recorded in the journal; --resume takes it from there)")
    g.add_argument("--profile", help="rules profile: gin (default), gin-standard, oklahoma-gin, hollywood-gin, "
                                     "rummy, rummy-g4a")  # fmt: skip
    g.add_argument("--players", type=int, help="seats per game (Rummy 2..6; default: the profile's)")
    g.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                   help="a rule option override, e.g. --option knock_limit=7 (repeatable)")
    g.add_argument("--hands-per-match", type=int, metavar="N",
                   help="a game ends after N hands (max_hands); 0 = play each match to the target score "
                        "(default 1: single hands, fast)")  # fmt: skip
    g.add_argument("--target-score", type=int, metavar="POINTS", help="match target (default: the profile's)")
    g.add_argument("--deals", type=int, help="duplicate deals; each combination of entrants plays each deal in "
                                             "every rotation of its seats (default 10)")  # fmt: skip
    g.add_argument("--seed", help="seed text of the deals and the bots (default: a fresh random one, printed)")
    t = g.add_mutually_exclusive_group()
    t.add_argument("--move-timeout", type=float, metavar="SECONDS",
                   help="the referee's time control: SECONDS for every move (default 10); a bot out of time loses "
                        "the match on time")
    t.add_argument("--clock", metavar="INITIAL+INCREMENT",
                   help="the referee's time control: a clock per seat, INITIAL seconds plus INCREMENT seconds "
                        "after each move (e.g. 60+1)")
    t.add_argument("--time-bank", metavar="ALLOWANCE+BANK",
                   help="the referee's time control: ALLOWANCE free seconds per move and a BANK of seconds per "
                        "seat spent beyond it (e.g. 1+30)")
    r = p.add_argument_group("how it is run")
    r.add_argument("--referee", metavar="HOST:PORT", help="a running referee, or several sharing one Redis as "
                   "HOST:PORT,HOST:PORT (calls balanced over them; default: start one of our own)")  # fmt: skip
    r.add_argument("--organizer-token", default=os.environ.get("RUMMY_ORGANIZER_TOKEN"),
                   help="the referee's organizer token, needed with --referee (default: $RUMMY_ORGANIZER_TOKEN)")
    r.add_argument("--parallel", type=int, default=2, metavar="N", help="games played at once (default 2)")
    r.add_argument("--out", type=Path, default=Path("tournament-results"), metavar="DIR",
                   help="output directory: journal, results.json, CSV files, ratings.png "
                        "(default ./tournament-results)")
    r.add_argument("--resume", action="store_true", help="continue the tournament journaled in --out")
    r.add_argument("--stop-after", type=int, metavar="N", help="stop once N games were played in this run")
    r.add_argument("--bootstrap", type=int, default=500, metavar="N", help="resamples of the rating intervals")
    r.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr (default: when stderr is a terminal)")
    return p  # fmt: skip


def _config(args: argparse.Namespace, previous: Config | None) -> tuple[Config, list[Entrant]]:
    """The configuration from the flags, on top of a resumed journal's (whose fields the flags must agree with)."""
    fields: dict[str, Any] = {}
    if args.entrants:
        entrants = [parse_entrant(t) for t in args.entrants]
        fields["entrants"] = tuple((e.name, e.spec) for e in entrants)
    if args.profile is not None:
        fields["profile"] = args.profile
    if args.option:
        fields["options"] = tuple(sorted(dict(parse_option(o) for o in args.option).items()))
    for name in ("players", "hands_per_match", "target_score", "deals", "seed"):
        if getattr(args, name) is not None:
            fields[name] = getattr(args, name)
    if args.move_timeout is not None:
        fields["time_control"] = f"{args.move_timeout:g}"
    elif args.clock is not None:
        fields["time_control"] = args.clock if "+" in args.clock else f"{args.clock}+0"
    elif args.time_bank is not None:
        fields["time_control"] = f"bank:{args.time_bank}"
    if previous is not None:
        wanted = replace(previous, **fields)
        diff = previous.differences(wanted)
        if diff:
            raise ConfigError(f"--resume: {', '.join(diff)} differ from the journal's tournament "
                              f"(leave them out to use the journal's)")  # fmt: skip
        config = previous
    else:
        if "entrants" not in fields:
            if args.resume:
                raise ConfigError(f"--resume: no tournament journal in {args.out} (name the entrants to start one)")
            raise ConfigError("name at least two entrants (e.g. random gin)")
        fields.setdefault("profile", "gin")
        fields.setdefault("seed", secrets.token_hex(16))  # 128 bits: no entrant can search them
        if "players" not in fields:
            try:
                fields["players"] = engine.rules_from_profile(fields["profile"]).players
            except engine.RuleError as exc:
                raise ConfigError(exc.message) from None
        config = Config(**fields)
    return config, [parse_entrant(f"{name}={spec}") for name, spec in config.entrants]


def _load(args: argparse.Namespace) -> tuple[Config, list[Entrant], list[GameRecord], bool]:
    """The configuration, the entrants, the games already recorded, and whether the journal exists already."""
    path = args.out / JOURNAL
    previous: Config | None = None
    records: list[GameRecord] = []
    if path.exists() and not args.resume:
        raise ConfigError(f"{path} exists: add --resume to continue that tournament, or choose another --out")
    if args.resume and path.exists():
        header, records = Journal.read(path)
        if header is None:
            path.unlink()  # the run that created it died before its first line reached the disk
        else:
            previous = Config.from_dict(header)
    config, entrants = _config(args, previous)
    return config, entrants, records, previous is not None


def main(argv: list[str] | None = None) -> int:
    """Entry point of `rummy-tournament`."""
    args = _parser().parse_args(argv)
    if args.parallel < 1 or (args.stop_after is not None and args.stop_after < 1):
        print("rummy-tournament: --parallel and --stop-after must be positive", file=sys.stderr)
        return EXIT_CONFIG
    if args.referee and not args.organizer_token:
        print("rummy-tournament: --referee needs the organizer token (--organizer-token or $RUMMY_ORGANIZER_TOKEN): "
              "the tournament's deals are organizer presets", file=sys.stderr)  # fmt: skip
        return EXIT_CONFIG
    try:
        config, entrants, records, existing = _load(args)
    except (ConfigError, JournalError) as exc:
        print(f"rummy-tournament: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    games = schedule(config)
    order = {g.key: g.index for g in games}
    kept: list[GameRecord] = []
    for rec in records:  # the first record of each scheduled game (a game is never recorded twice, but be sure)
        if rec.key in order and rec.key not in {k.key for k in kept}:
            kept.append(rec)
    done = {rec.key for rec in kept}
    todo = [g for g in games if g.key not in done]
    print(f"rummy-tournament: {len(games)} games ({len(kept)} played already), seed {config.seed!r}, "
          f"output in {args.out}", file=sys.stderr)  # fmt: skip
    try:
        outcome = _play(args, config, entrants, todo, kept, existing, len(games))
    except RefereeStartError as exc:
        print(f"rummy-tournament: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except KeyboardInterrupt:
        print(f"\nrummy-tournament: interrupted; {args.out / JOURNAL} keeps the finished games: --resume continues",
              file=sys.stderr)  # fmt: skip
        return EXIT_INTERRUPTED
    if outcome.broken:
        if existing:
            after = f"; --resume continues once {outcome.fix}, the command line otherwise the same"
        else:  # a tournament that never got going (found out in the first deal): keep nothing
            (args.out / JOURNAL).unlink(missing_ok=True)
            after = f"; nothing was kept: run the same command again once {outcome.fix}"
        print(f"rummy-tournament: stopped: {outcome.aborted}{after}", file=sys.stderr)
        return EXIT_CONFIG
    if outcome.aborted:
        print(f"rummy-tournament: stopped: {outcome.aborted}; --resume continues", file=sys.stderr)
        return EXIT_FAILED
    if outcome.stopped:
        print(f"rummy-tournament: stopped after {outcome.recorded} games; --resume continues", file=sys.stderr)
        return EXIT_STOPPED
    kept.sort(key=lambda rec: order[rec.key])
    summary = summarize(config, kept, len(games), bootstrap=args.bootstrap)
    paths = write_files(summary, args.out)
    print(table_text(summary))
    print("\nwrote " + ", ".join(str(p) for p in paths.values()))
    print(f"game records (rummy replay FILE): {args.out / RECORDS_DIR}/ ({len(kept)} games)")
    if "chart" not in paths:
        print(f"rummy-tournament: {NO_CHART}", file=sys.stderr)
    if outcome.failed:
        print(f"rummy-tournament: {len(outcome.failed)} games failed and are not counted; --resume plays them",
              file=sys.stderr)  # fmt: skip
        return EXIT_FAILED
    return 0


def _play(
    args: argparse.Namespace,
    config: Config,
    entrants: list[Entrant],
    todo: list[ScheduledGame],
    records: list[GameRecord],
    existing: bool,
    total: int,
) -> RunOutcome:
    """Play ``todo``, journaling each finished game (the journal is created once the referee answers)."""
    if not todo:
        return RunOutcome()
    with referee(args.referee, args.organizer_token, args.out / "logs" / "referee.log") as ref, \
            RefereeClient(ref.address) as client:  # fmt: skip
        path = args.out / JOURNAL
        journal = Journal.reopen(path) if existing else Journal.create(path, config.to_dict())
        show = sys.stderr.isatty() if args.progress is None else bool(args.progress)
        bar = progress_bar(total, total - len(todo), show, sys.stderr)
        forfeits = sum(len(r.forfeits) for r in records)

        def on_record(rec: GameRecord) -> None:
            nonlocal forfeits
            journal.append(rec)
            records.append(rec)
            forfeits += len(rec.forfeits)
            bar.update(1)
            if rec.forfeits:
                bar.set_postfix(forfeits=forfeits)

        def on_failure(game: ScheduledGame, message: str) -> None:
            bar.write(f"rummy-tournament: game {game.key} failed: {message}", file=sys.stderr)

        arena = Arena(config, {e.name: e for e in entrants}, client, ref.organizer_token, args.out / "logs",
                      out_dir=args.out)  # fmt: skip
        try:
            return run_games(arena, todo, args.parallel, on_record, on_failure, args.stop_after)
        finally:
            bar.close()
            journal.close()


if __name__ == "__main__":
    sys.exit(main())
