"""What a tournament plays, fixed by its configuration alone: the entrants, the rules, the deals and the games.

Duplicate deals: deal ``j`` is the same for every table. For each combination of ``players`` entrants and each deal,
the combination plays once per cyclic rotation of its seats (Gin: both seatings; Rummy with n seats: n games, so
that every entrant holds every seat once), and seat ``s`` always receives the same cards. Each game's id (``key``)
is derived from the schedule, so an interrupted tournament knows which games it has finished.

Randomness: every seed is SHA-256 of the tournament's seed text and a purpose, so that the same configuration
always plays the same deals and seeds the bots the same way (``random`` is never used here: the tournament is the
organizer, and RULES.md wants its deals from a cryptographic stream).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import engine
from clients.sdk.values import TimeControl, time_control_from_text

OptionValue = bool | int | str

#: Entrant names: short, printable, no separator of the game keys.
LABEL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}")
#: The time control of a tournament that names none: 10 seconds per move.
DEFAULT_TIME_CONTROL = "10"
#: Options with a flag of their own (``--players``, ``--hands-per-match``, ``--target-score``).
RESERVED_OPTIONS = frozenset({"game", "players", "max_hands", "target_score"})


class ConfigError(ValueError):
    """A tournament configuration that cannot be played."""


@dataclass(frozen=True, slots=True)
class Config:
    """Everything that decides what a tournament plays (and so which results a resumed run may reuse).

    ``entrants``: (name, bot spec) pairs; ``options``: rule option overrides, sorted by name;
    ``hands_per_match``: the match ends after that many hands (``max_hands``), 0 = play to the target score;
    ``target_score``: None = the profile's; ``deals``: duplicate deals per combination of entrants."""

    entrants: tuple[tuple[str, str], ...]
    profile: str = "gin"
    players: int = 2
    options: tuple[tuple[str, OptionValue], ...] = ()
    hands_per_match: int = 1
    target_score: int | None = None
    deals: int = 10
    seed: str = "0"
    #: The time control the referee keeps in every game (``clients.sdk.time_control_from_text``): ``10`` seconds
    #: per move (the default), ``60+1`` a clock with an increment, ``bank:2+60`` an allowance and a bank.
    time_control: str = DEFAULT_TIME_CONTROL

    def __post_init__(self) -> None:
        names = [name for name, _ in self.entrants]
        for name in names:
            if not LABEL_RE.fullmatch(name):
                raise ConfigError(f"bad entrant name {name!r}: 1-64 of A-Z a-z 0-9 . _ @ + - (a letter or digit first)")
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise ConfigError(f"entrant names must be unique, {', '.join(dup)} repeats: name them (NAME=SPEC)")
        if self.deals < 1:
            raise ConfigError(f"--deals must be at least 1, got {self.deals}")
        if self.hands_per_match < 0:
            raise ConfigError(f"--hands-per-match must be 0 (play to the target) or more, got {self.hands_per_match}")
        for name, _ in self.options:
            if name in RESERVED_OPTIONS:
                raise ConfigError(f"option {name} has a flag of its own (--players, --hands-per-match, --target-score)")
        try:
            time_control_from_text(self.time_control)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        try:
            rules = self.rules()
        except engine.RuleError as exc:
            raise ConfigError(exc.message) from None
        if len(names) < max(2, rules.players):
            raise ConfigError(f"{rules.players}-player games need at least {max(2, rules.players)} entrants, "
                              f"got {len(names)}")  # fmt: skip

    @property
    def names(self) -> tuple[str, ...]:
        """The entrants' names, in the order given."""
        return tuple(name for name, _ in self.entrants)

    @property
    def clock(self) -> TimeControl:
        """The time control of every game."""
        return time_control_from_text(self.time_control)

    @property
    def option_map(self) -> dict[str, OptionValue]:
        """The option overrides sent with CreateGame."""
        return dict(self.options)

    def rules(self) -> engine.Rules:
        """The rules every game is played with (validated by the engine, as the referee will)."""
        overrides: dict[str, Any] = dict(self.options)
        if self.hands_per_match:
            overrides["max_hands"] = self.hands_per_match
        if self.target_score is not None:
            overrides["target_score"] = self.target_score
        return engine.rules_from_profile(self.profile, players=self.players, **overrides)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (the journal's header keeps it)."""
        return {
            "entrants": [[name, spec] for name, spec in self.entrants], "profile": self.profile,
            "players": self.players, "options": {k: v for k, v in self.options},
            "hands_per_match": self.hands_per_match, "target_score": self.target_score, "deals": self.deals,
            "seed": self.seed, "time_control": self.time_control,
        }  # fmt: skip

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> Config:
        """Read back ``to_dict``."""
        return Config(
            entrants=tuple((str(n), str(s)) for n, s in d["entrants"]), profile=str(d["profile"]),
            players=int(d["players"]), options=tuple(sorted(dict(d["options"]).items())),
            hands_per_match=int(d["hands_per_match"]),
            target_score=None if d["target_score"] is None else int(d["target_score"]),
            deals=int(d["deals"]), seed=str(d["seed"]),
            time_control=str(d.get("time_control", DEFAULT_TIME_CONTROL)),  # journals from before: 10 s per move
        )  # fmt: skip

    def differences(self, other: Config) -> list[str]:
        """The fields in which ``other`` differs from this configuration."""
        return [f.name for f in dataclasses.fields(self) if getattr(self, f.name) != getattr(other, f.name)]


def parse_option(text: str) -> tuple[str, OptionValue]:
    """``NAME=VALUE`` of a rule option, the value typed as the option is (true/false, a number, a word)."""
    name, sep, raw = text.partition("=")
    name, raw = name.strip(), raw.strip()
    kinds = {f.name: f.type for f in dataclasses.fields(engine.Rules)}
    if not sep or name not in kinds:
        raise ConfigError(f"--option wants NAME=VALUE with a rule option name, got {text!r} "
                          f"(options: {', '.join(sorted(set(kinds) - RESERVED_OPTIONS))})")  # fmt: skip
    if name in RESERVED_OPTIONS:
        raise ConfigError(f"option {name} has a flag of its own (--players, --hands-per-match, --target-score)")
    kind = kinds[name]
    if kind in ("bool", bool):
        lowered = raw.lower()
        if lowered not in ("true", "false", "yes", "no", "on", "off", "1", "0"):
            raise ConfigError(f"option {name} is true or false, got {raw!r}")
        return name, lowered in ("true", "yes", "on", "1")
    if kind in ("int", int):
        try:
            return name, int(raw)
        except ValueError:
            raise ConfigError(f"option {name} is a number, got {raw!r}") from None
    return name, raw


@dataclass(frozen=True, slots=True)
class ScheduledGame:
    """One game of the schedule: its position, its deal, and the entrant in each seat (seat 0 first)."""

    index: int
    deal: int
    seats: tuple[str, ...]

    @property
    def key(self) -> str:
        """The game's id within the tournament: ``deal:name|name|...`` (the same in every run)."""
        return f"{self.deal}:{'|'.join(self.seats)}"


#: The subdirectory of the output directory that holds the games' records (clients.sdk.records).
RECORDS_DIR = "games"


def record_name(key: str) -> str:
    """The record file of the game ``key`` (``deal:a|b`` -> ``games/deal_a~b.json``: the deal is digits, and
    names never hold ``~``), relative to the output directory."""
    deal, _, seats = key.partition(":")
    return f"{RECORDS_DIR}/{deal}_{seats.replace('|', '~')}.json"


def schedule(config: Config) -> list[ScheduledGame]:
    """Every game, deal by deal: for each deal, each combination of entrants in each rotation of its seats."""
    n = config.players
    games: list[ScheduledGame] = []
    for deal in range(config.deals):
        for combo in itertools.combinations(config.names, n):
            for r in range(n):
                games.append(ScheduledGame(len(games), deal, combo[r:] + combo[:r]))
    return games


def _digest(config: Config, *parts: str) -> bytes:
    h = hashlib.sha256(b"rummy-tournament\x00" + config.seed.encode())
    for p in parts:
        h.update(b"\x00" + p.encode())
    return h.digest()


def deal_seed(config: Config, deal: int) -> bytes:
    """The 32-byte game seed of deal ``deal`` (CreateGame's ``seed``: later hands and reshuffles)."""
    return _digest(config, "deal", str(deal))


def preset_deals(config: Config, rules: engine.Rules, deal: int) -> tuple[engine.Deal, ...]:
    """The explicit first hand of deal ``deal`` (seat 0 deals): exactly the deal the engine would derive from
    ``deal_seed``, so that preset and seeded hands come from one stream. Later hands are left to the seed, because
    in Gin the winner of a hand deals the next and a preset would override that."""
    return (engine.seeded_deal(rules, 0, deal_seed(config, deal), 0),)


def bot_seed(config: Config, game: ScheduledGame, seat: int, spec: str) -> int:
    """The seed of the bot in ``seat`` of ``game`` (a 63-bit integer, the same in every run)."""
    digest = _digest(config, "bot", game.key, str(seat), spec)
    return int.from_bytes(digest[:8], "big") >> 1


def rating_seed(config: Config) -> int:
    """The seed of the ratings' bootstrap."""
    return int.from_bytes(_digest(config, "ratings")[:8], "big") >> 1


def seat_counts(games: Sequence[ScheduledGame]) -> dict[str, list[int]]:
    """How often each entrant sits in each seat (a fairness check of the schedule)."""
    out: dict[str, list[int]] = {}
    for g in games:
        for seat, name in enumerate(g.seats):
            out.setdefault(name, [0] * len(g.seats))[seat] += 1
    return out
