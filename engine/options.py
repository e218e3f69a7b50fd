"""Rule options: a frozen, self-validating config, and the named profiles of RULES.md.

Every option, its default and meaning (RULES.md section in brackets):

common
    game                        "gin" or "rummy"
    players                     seat count; Gin 2, Rummy 2..6                              [1]
    max_turns                   turns (discards) after which a hand is drawn (1000)         [1]
    discard_taken_card_allowed  the card taken from the discard pile may be discarded (False) [1]
    target_score                match target: Gin 100, Rummy 150                            [2, 3]
    max_hands                   0 = no limit; else the match ends after that many hands     [3]
gin
    first_upcard_rule           "none" (seed 001) or "take_or_pass"                         [2]
    knock_limit                 10                                                          [2]
    gin_bonus / big_gin_bonus / undercut_bonus   25 / 31 (0 disables big gin) / 25         [2]
    undercut_on_tie             True: K = D is an undercut; False: it scores nothing        [2]
    defender_deadwood           "best": the defender's deadwood is the minimum over the cards  [2]
                                left after their declared melds and layoffs; "declared": every
                                card neither in a declared meld nor laid off counts. After gin or
                                big gin both count the minimum (the defender declares nothing)
    stock_end_rule              "draw" or "fiftieth_card"                                   [2]
    box_bonus / game_bonus / shutout_game_bonus   0 / 0 / 0                                [2]
    oklahoma, oklahoma_ace ("gin_only" | "one"), spades_double (True)                      [2]
    hollywood                   three games scored at once                                  [2]
rummy
    ace_high_low, ace_value_high_low (15), going_rummy_multiplier (2),
    must_discard_to_go_out, max_melds_per_turn (0 = unlimited; counts new melds, not
    layoffs), layoff_requires_own_meld, restock ("shuffle" | "turn_over")                 [3]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any

from engine.errors import InvalidOptionsError, excerpt


class GameKind(StrEnum):
    """The game a match plays (option ``game``); a GameKind equals its text, as stored and sent."""

    GIN = "gin"
    RUMMY = "rummy"


GIN, RUMMY = GameKind.GIN, GameKind.RUMMY

_GIN_ONLY = {
    "first_upcard_rule", "knock_limit", "gin_bonus", "big_gin_bonus", "undercut_bonus", "undercut_on_tie",
    "defender_deadwood", "stock_end_rule", "box_bonus", "game_bonus", "shutout_game_bonus", "oklahoma", "oklahoma_ace",
    "spades_double", "hollywood",
}
_RUMMY_ONLY = {
    "ace_high_low", "ace_value_high_low", "going_rummy_multiplier", "must_discard_to_go_out",
    "max_melds_per_turn", "layoff_requires_own_meld", "restock",
}
_CHOICES = {
    "game": (GIN, RUMMY),
    "first_upcard_rule": ("none", "take_or_pass"),
    "stock_end_rule": ("draw", "fiftieth_card"),
    "defender_deadwood": ("best", "declared"),
    "oklahoma_ace": ("gin_only", "one"),
    "restock": ("shuffle", "turn_over"),
}
# The largest value of each number option that must not be negative: bounded so that every score stays far
# inside the int32 fields of the API (a hand's points, and the bonuses of a long match, summed over hands).
_NON_NEGATIVE: dict[str, int] = {
    "max_hands": 100_000, "knock_limit": 99, "gin_bonus": 1000, "big_gin_bonus": 1000, "undercut_bonus": 1000,
    "box_bonus": 1000, "game_bonus": 1000, "shutout_game_bonus": 1000, "ace_value_high_low": 100,
    "going_rummy_multiplier": 10, "max_melds_per_turn": 52,
}


@dataclass(frozen=True, slots=True)
class Rules:
    """The complete option set of one game; invalid combinations raise InvalidOptionsError naming the option."""

    game: GameKind = GIN
    players: int = 2
    max_turns: int = 1000
    discard_taken_card_allowed: bool = False
    target_score: int = 100
    max_hands: int = 0
    first_upcard_rule: str = "none"
    knock_limit: int = 10
    gin_bonus: int = 25
    big_gin_bonus: int = 31
    undercut_bonus: int = 25
    undercut_on_tie: bool = True
    defender_deadwood: str = "best"
    stock_end_rule: str = "draw"
    box_bonus: int = 0
    game_bonus: int = 0
    shutout_game_bonus: int = 0
    oklahoma: bool = False
    oklahoma_ace: str = "gin_only"
    spades_double: bool = True
    hollywood: bool = False
    ace_high_low: bool = False
    ace_value_high_low: int = 15
    going_rummy_multiplier: int = 2
    must_discard_to_go_out: bool = False
    max_melds_per_turn: int = 0
    layoff_requires_own_meld: bool = False
    restock: str = "shuffle"

    def __post_init__(self) -> None:
        for f in fields(self):
            value: Any = getattr(self, f.name)
            want = bool if f.type in ("bool", bool) else int if f.type in ("int", int) else str
            if type(value) is not want and not (want is str and isinstance(value, StrEnum)):
                raise InvalidOptionsError(
                    "INVALID_OPTION", f"option {f.name} must be a {want.__name__}, got {excerpt(value)}"
                )
            if f.name in _CHOICES and value not in _CHOICES[f.name]:
                choices = ", ".join(_CHOICES[f.name])
                raise InvalidOptionsError(
                    "INVALID_OPTION", f"option {f.name} must be one of {choices}, got {excerpt(value)}"
                )
            top = _NON_NEGATIVE.get(f.name)
            if top is not None and not 0 <= int(value) <= top:
                raise InvalidOptionsError("INVALID_OPTION", f"option {f.name} must be 0..{top}, got {value}")
        if type(self.game) is not GameKind:  # given as text (stored options, the wire): the enum from now on
            object.__setattr__(self, "game", GameKind(self.game))
        if self.game == GIN and self.players != 2:
            raise InvalidOptionsError(
                "INVALID_OPTION", f"option players: Gin Rummy is for 2 players, got {self.players}"
            )
        if self.game == RUMMY and not 2 <= self.players <= 6:
            raise InvalidOptionsError(
                "INVALID_OPTION", f"option players: Rummy is for 2 to 6 players, got {self.players}"
            )
        if not 1 <= self.max_turns <= 100_000:
            raise InvalidOptionsError("INVALID_OPTION", f"option max_turns must be 1..100000, got {self.max_turns}")
        if not 1 <= self.target_score <= 1_000_000:
            raise InvalidOptionsError(
                "INVALID_OPTION", f"option target_score must be 1..1000000, got {self.target_score}"
            )
        if self.knock_limit > 99:
            raise InvalidOptionsError("INVALID_OPTION", f"option knock_limit must be 0..99, got {self.knock_limit}")
        if self.max_hands > 100_000:
            raise InvalidOptionsError("INVALID_OPTION", f"option max_hands must be 0..100000, got {self.max_hands}")
        defaults = _DEFAULTS
        other = _RUMMY_ONLY if self.game == GIN else _GIN_ONLY
        for name in sorted(other):
            if getattr(self, name) != defaults[name]:
                raise InvalidOptionsError(
                    "INVALID_OPTION", f"option {name} does not apply to {self.game}"
                )
        if self.oklahoma and self.knock_limit != _DEFAULTS["knock_limit"]:
            raise InvalidOptionsError(
                "INVALID_OPTION", "option knock_limit does not apply with oklahoma (the upcard sets the limit)"
            )

    @property
    def n_cards(self) -> int:
        """Cards dealt to each seat."""
        if self.game == GIN or self.players == 2:
            return 10
        return 7 if self.players <= 4 else 6

    @property
    def ace_value(self) -> int:
        """Value of an ace left in hand."""
        return self.ace_value_high_low if self.ace_high_low else 1

    def to_dict(self) -> dict[str, Any]:
        """Every option by name (the pinned option set), as plain values: ``game`` as its text."""
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["game"] = self.game.value
        return d

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> Rules:
        """Build from a complete or partial option mapping; unknown names are refused."""
        check_names(d)
        return Rules(**d)

    def replace(self, **overrides: Any) -> Rules:
        """A copy with some options changed (validated again)."""
        check_names(overrides)
        return dataclasses.replace(self, **overrides)


_DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(Rules)}
OPTION_NAMES = tuple(_DEFAULTS)


def check_names(d: Mapping[str, Any]) -> None:
    """Refuse unknown option names."""
    for name in d:
        if name not in _DEFAULTS:
            raise InvalidOptionsError("UNKNOWN_OPTION", f"unknown option {excerpt(name, 40)}")


#: profile name -> option values that differ from the Rules defaults
PROFILES: dict[str, dict[str, Any]] = {
    "gin": {},
    "gin-standard": {
        "first_upcard_rule": "take_or_pass", "gin_bonus": 20, "undercut_bonus": 10, "big_gin_bonus": 0,
        "box_bonus": 20, "game_bonus": 100, "shutout_game_bonus": 200,
    },
    "oklahoma-gin": {"oklahoma": True, "target_score": 150},
    "hollywood-gin": {"hollywood": True},
    "rummy": {"game": RUMMY, "target_score": 150},
    "rummy-g4a": {
        "game": RUMMY, "players": 3, "ace_value_high_low": 11, "going_rummy_multiplier": 1, "target_score": 100,
    },
}


def find_profile(name: str) -> dict[str, Any]:
    """The option values of a profile; raises InvalidOptionsError(UNKNOWN_PROFILE)."""
    try:
        return dict(PROFILES[name])
    except KeyError:
        raise InvalidOptionsError(
            "UNKNOWN_PROFILE", f"unknown profile {excerpt(name)} (known: {', '.join(PROFILES)})"
        ) from None


def rules_from_profile(name: str = "gin", players: int | None = None, **overrides: Any) -> Rules:
    """Rules of a profile with overrides on top (``players`` may also be given on its own)."""
    values = find_profile(name)
    check_names(overrides)
    values.update(overrides)
    if players is not None:
        values["players"] = players
    elif values.get("game") == RUMMY and "players" not in values:
        values["players"] = 2
    return Rules(**values)
