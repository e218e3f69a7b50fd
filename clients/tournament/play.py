"""Playing the schedule through the referee: one game at a time per worker, ``parallel`` workers, each seat played
by ``clients.runner.play_seat`` in a thread of its own.

The referee keeps the time: every game is created with the tournament's time control and the ``forfeit_match``
timeout policy, so a seat out of time loses the match on time (the game ends with the referee's result, and the
record says how it ended for each seat: ``ends``). A seat whose bot raises or makes a move the referee refuses
forfeits (the runner says so); the other seats of that game are then stopped, and the game is recorded as lost by
the forfeiting seat. A game that fails for another reason (the referee unreachable, a bug) is not recorded: a
later ``--resume`` plays it again.
"""

from __future__ import annotations

import concurrent.futures as cf
import shlex
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from clients.runner import SeatResult, play_seat
from clients.sdk import Bank, Clock, CreatedGame, PerMove, RefereeClient, RefereeError, SeatSpec, TimeoutPolicy
from clients.sdk.records import save_record
from clients.tournament.entrants import Entrant, Player, ProgramBot, make_player
from clients.tournament.journal import GameRecord
from clients.tournament.schedule import Config, ScheduledGame, bot_seed, deal_seed, preset_deals, record_name

#: How often a seat waiting for its turn looks at the game anyway (so a stop is noticed within that time).
IDLE_CHECK = 0.5
#: How long a seat waits for a referee that went away to come back before its game fails.
RECONNECT = 30.0


class GameInterrupted(Exception):
    """The tournament was stopped while the game was being played."""


class GameFailed(Exception):
    """The game could not be played to an outcome (not the bots' fault). ``fatal``: no game will do better (the
    referee refused to create it: a wrong organizer token, options it does not accept)."""

    def __init__(self, message: str, fatal: bool = False) -> None:
        super().__init__(message)
        self.fatal = fatal


class BadConfiguration(GameFailed):
    """A configuration to fix before any game can be played: the tournament stops at once (exit status 2)."""

    #: What to fix before the same command is run again (the CLI's advice).
    fix = "the configuration is fixed"

    def __init__(self, message: str) -> None:
        super().__init__(message, fatal=True)


class EntrantBroken(BadConfiguration):
    """An entrant's program cannot start, or failed its first request (it exited, timed out, or answered
    something that is not a move) before any process of it ever answered: it does not speak the protocol, so no
    game will do better. The tournament stops at once."""

    fix = "the program works"


class TokenRefused(BadConfiguration):
    """The referee refused the organizer token (PERMISSION_DENIED or UNAUTHENTICATED on CreateGame: the
    tournament's deals are organizer presets): no game will do better. The tournament stops at once."""

    fix = "--organizer-token (or $RUMMY_ORGANIZER_TOKEN) is the referee's"


@dataclass
class Arena:
    """What every game shares: the configuration, the entrants, the referee client and the limits."""

    config: Config
    entrants: Mapping[str, Entrant]
    client: RefereeClient
    organizer_token: str
    log_dir: Path | None = None
    #: Entrants one of whose programs has answered a request with a move (in this run).
    proven: set[str] = field(default_factory=set)
    #: Where each game's record is written (``record_name`` of its key, relative to it); None: nowhere.
    out_dir: Path | None = None

    def play(self, game: ScheduledGame, stop: threading.Event) -> GameRecord:
        """Play one game of the schedule to its end (or a forfeit); raises GameInterrupted or GameFailed."""
        start = time.monotonic()
        cfg = self.config
        players: list[Player] = []
        try:  # the programs start before the game: the referee's clock starts with it
            for seat, name in enumerate(game.seats):
                entrant = self.entrants[name]
                players.append(make_player(entrant, bot_seed(cfg, game, seat, entrant.spec), self.log_dir))
            created = self._create(game, stop)
            results = self._play_seats(created.game_id, created.tokens, players, stop)
            self._check_programs(game, players, results)
        finally:
            for p in players:
                p.close()
        record = _record(game, created.game_id, results, time.monotonic() - start)
        self._save(game, created.game_id, record)
        return record

    def _save(self, game: ScheduledGame, game_id: str, record: GameRecord) -> None:
        """Write the game's record (GetReplay, as the organizer): the game is not recorded without it."""
        if self.out_dir is None:
            return
        meta = {"tournament_game": game.key, "deal": game.deal, "entrants": list(game.seats),
                "forfeits": list(record.forfeits), "reasons": list(record.reasons), "ends": list(record.ends),
                "time_control": self.config.time_control}  # fmt: skip
        try:
            save_record(self.client, game_id, self.out_dir / record_name(game.key), token=self.organizer_token,
                        meta=meta)  # fmt: skip
        except RefereeError as exc:
            raise GameFailed(f"game {game_id}: its record could not be fetched: {exc}") from exc
        except OSError as exc:
            raise GameFailed(f"game {game_id}: its record could not be written: {exc}", fatal=True) from exc

    def _check_programs(self, game: ScheduledGame, players: Sequence[Player], results: Sequence[SeatResult]) -> None:
        """Raise EntrantBroken for a program that forfeited without ever answering a move, unless a process of
        the same entrant has answered one before (then it is an ordinary forfeit)."""
        for seat, (player, result) in enumerate(zip(players, results, strict=True)):
            if not isinstance(player, ProgramBot):
                continue
            name = game.seats[seat]
            if player.moves_answered:
                self.proven.add(name)
            elif (result.forfeit or result.seat_end == "lost_on_time") and name not in self.proven:
                entrant = self.entrants[name]
                log = "no log" if self.log_dir is None else f"its stderr is in {self.log_dir / f'{name}.log'}"
                raise EntrantBroken(
                    f"entrant {name} ({shlex.join(entrant.argv)}) failed its first request: "
                    f"{result.forfeit_reason}; {log}. A program entrant reads one JSON request per line on stdin "
                    f"and answers each with a move line (clients/tournament/README.md)"
                )  # fmt: skip

    def _create(self, game: ScheduledGame, stop: threading.Event) -> CreatedGame:
        """CreateGame with the organizer's deals, tried again for up to RECONNECT seconds while the referee is
        unreachable (a resend may leave an unplayed game behind on the referee: harmless)."""
        cfg = self.config
        deadline = time.monotonic() + RECONNECT
        pause = 0.1
        while True:
            if stop.is_set():
                raise GameInterrupted(game.key)
            try:
                return self.client.create_game(
                    cfg.profile, [SeatSpec(name, "bot") for name in game.seats], options=cfg.option_map,
                    target_score=cfg.target_score, max_hands=cfg.hands_per_match or None,
                    preset_deals=preset_deals(cfg, cfg.rules(), game.deal), seed=deal_seed(cfg, game.deal),
                    time_control=cfg.clock, timeout_policy=TimeoutPolicy("forfeit_match"), token=self.organizer_token,
                )  # fmt: skip
            except RefereeError as exc:
                if exc.code in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED):
                    raise TokenRefused(
                        f"the referee at {self.client.target} refused the organizer token (--organizer-token or "
                        f"$RUMMY_ORGANIZER_TOKEN) for CreateGame: {exc}"
                    ) from exc
                if not exc.transient:
                    raise GameFailed(f"the referee refused CreateGame: {exc}", fatal=True) from exc
                if time.monotonic() > deadline:
                    raise GameFailed(f"CreateGame failed: {exc}") from exc
            stop.wait(pause)
            pause = min(2.0, pause * 2)

    def referee_answers(self) -> bool:
        """The referee answers Ping (within a few seconds)."""
        try:
            self.client.ping(timeout=2.0)
            return True
        except RefereeError:
            return False

    def _play_seats(
        self, game_id: str, tokens: Mapping[int, str], players: Sequence[Player], stop: threading.Event
    ) -> list[SeatResult]:
        game_stop = threading.Event()  # set on a forfeit or a tournament stop: the other seats give up
        with cf.ThreadPoolExecutor(len(players), thread_name_prefix=f"seat-{game_id[:6]}") as pool:
            futures = [  # the referee keeps the time (the runner's move_timeout only for a referee without clocks)
                pool.submit(play_seat, self.client, game_id, tokens[seat], player,
                            move_timeout=_fallback_timeout(self.config), max_rejections=0, idle_check=IDLE_CHECK,
                            reconnect_timeout=RECONNECT, stop=game_stop)
                for seat, player in enumerate(players)
            ]  # fmt: skip
            pending: set[cf.Future[SeatResult]] = set(futures)
            while pending:
                done, pending = cf.wait(pending, timeout=0.2, return_when=cf.FIRST_COMPLETED)
                if stop.is_set() or any(f.exception() is not None or f.result().forfeit for f in done):
                    game_stop.set()
        errors = [f.exception() for f in futures if f.exception() is not None]
        if errors:
            raise GameFailed(f"game {game_id}: {errors[0]!r}") from errors[0]
        results = [f.result() for f in futures]
        if not any(r.forfeit for r in results) and not all(r.finished for r in results):
            if stop.is_set():
                raise GameInterrupted(game_id)
            raise GameFailed(f"game {game_id} ended unfinished without a forfeit")
        return results


def _fallback_timeout(config: Config) -> float:
    """The runner's own move limit, applied only if the referee keeps no time (one without time controls): the
    longest a first decision may take under the time control."""
    tc = config.clock
    if isinstance(tc, PerMove):
        return tc.limit
    if isinstance(tc, Clock):
        return tc.initial + tc.increment
    assert isinstance(tc, Bank)
    return tc.allowance + tc.bank


def _record(game: ScheduledGame, game_id: str, results: Sequence[SeatResult], seconds: float) -> GameRecord:
    """The game's outcome: the match result (how it ended for each seat: ``ends``), or the forfeits (which decide
    it: the forfeiting seats end ``forfeit``, the others ``finished``)."""
    forfeits = tuple(i for i, r in enumerate(results) if r.forfeit)
    final = next((r.final for r in results if r.final is not None), None)
    data = final.data if final is not None else {}
    hands = int(data.get("hands_played", 0))
    scores = tuple(int(s) for s in data.get("scores", ())) or (0,) * len(game.seats)
    if forfeits:
        reasons = tuple(results[i].forfeit_reason or "forfeit" for i in forfeits)
        ends = tuple("forfeit" if i in forfeits else "finished" for i in range(len(game.seats)))
        return GameRecord(game.key, game.deal, game.seats, scores, (), forfeits, reasons, hands, game_id, seconds,
                          ends)  # fmt: skip
    result = next(r.match_result for r in results if r.match_result is not None)
    totals = tuple(int(t) for t in result["totals"])
    winners = tuple(sorted(int(w) for w in result["winners"]))
    ends = tuple(str(e) for e in result.get("seat_ends") or ("finished",) * len(game.seats))
    return GameRecord(game.key, game.deal, game.seats, totals, winners, (), (), hands, game_id, seconds, ends)


@dataclass
class RunOutcome:
    """How a run of the schedule ended: games recorded now, games that failed, whether it was stopped (by
    ``stop_after`` or Ctrl-C) or ``aborted`` (why: the referee stopped answering)."""

    recorded: int = 0
    failed: list[str] = field(default_factory=list)
    stopped: bool = False
    aborted: str | None = None
    #: Aborted because of a configuration to fix (BadConfiguration: an entrant's program does not work, or the
    #: referee refused the organizer token); ``fix`` says what.
    broken: bool = False
    fix: str = ""


def run_games(
    arena: Arena,
    games: Iterable[ScheduledGame],
    parallel: int,
    on_record: Callable[[GameRecord], None],
    on_failure: Callable[[ScheduledGame, str], None],
    stop_after: int | None = None,
) -> RunOutcome:
    """Play ``games`` with ``parallel`` workers; ``on_record`` gets each finished game (in the calling thread, as
    it finishes). ``stop_after``: stop (abandoning the games in play) once that many were recorded. A refused
    CreateGame, or a failed game whose referee no longer answers Ping, aborts the run. Ctrl-C stops the same way
    and is raised again once the workers are done."""
    outcome = RunOutcome()
    stop = threading.Event()
    pool = cf.ThreadPoolExecutor(max(1, parallel), thread_name_prefix="game")
    futures = {pool.submit(arena.play, g, stop): g for g in games}

    def halt() -> None:
        stop.set()
        for f in futures:
            f.cancel()

    try:
        for fut in cf.as_completed(futures):
            game = futures[fut]
            if fut.cancelled():
                continue
            exc = fut.exception()
            if exc is None:
                on_record(fut.result())
                outcome.recorded += 1
            elif isinstance(exc, BadConfiguration):
                outcome.failed.append(game.key)
                if not stop.is_set():
                    outcome.aborted, outcome.broken, outcome.fix = str(exc), True, exc.fix
                    halt()
            elif not isinstance(exc, GameInterrupted):
                outcome.failed.append(game.key)
                on_failure(game, str(exc))
                if stop.is_set():
                    pass
                elif isinstance(exc, GameFailed) and exc.fatal:
                    outcome.aborted = str(exc)
                    halt()
                elif not arena.referee_answers():
                    outcome.aborted = f"the referee at {arena.client.target} does not answer"
                    halt()
            if stop_after is not None and outcome.recorded >= stop_after and not stop.is_set():
                outcome.stopped = True
                halt()
    except KeyboardInterrupt:
        outcome.stopped = True
        halt()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return outcome
