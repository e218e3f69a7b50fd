"""Typed hand and match results: one record each for Gin, Oklahoma, Hollywood and Rummy.

The engine keeps a hand's result (``GameState.last_hand``, the ``hand_ended`` event) and a match's
(``GameState.result``, the ``match_ended`` event) as JSON-able dicts: they are stored in states and logs, whose
bytes must not change. ``HandResult`` and ``MatchResult`` are the same records typed: ``from_dict`` reads such a
dict, ``to_dict`` gives it back equal (same keys, same order), and ``hand_result_of`` / ``match_result_of`` give
a state's. The proto's HandResult and MatchResult (proto/rummy/v1/game.proto) carry exactly these fields.

Which fields a game has:

- every hand: hand_no, reason, winner (None: nobody scored), points, hands, hand_values, melds, scores;
- Hollywood: ``hollywood`` (the games the hand's win was entered in, and each game's points after it);
- Gin, a hand ended by a knock, gin or big gin: knocker, knocker_deadwood, defender_deadwood;
- Rummy, a hand won by going out: going_rummy;
- a hand ended by a resign: resigned (the seat); by a loss on time: lost_on_time (the seat).

A match: totals, winners, ended (completed, resigned, time), seat_ends; ``resigned`` / ``lost_on_time`` (the
seat); a Gin (or Oklahoma) match played to its end: ``breakdown`` (points, boxes, bonuses); a Hollywood match
played to its end: ``hollywood_games`` (one breakdown per game); a resigned or lost match: ``breakdown`` with the
points and boxes only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.state import GameState


def _ints(v: Sequence[Any]) -> tuple[int, ...]:
    return tuple(int(x) for x in v)


@dataclass(frozen=True, slots=True)
class ResultMeld:
    """A table meld as a result shows it (``TableMeld.to_dict``): cards as text in table order, and its layoffs as
    (card, seat) in the order they were laid off."""

    id: int
    owner: int
    kind: str
    cards: tuple[str, ...]
    layoffs: tuple[tuple[str, int], ...] = ()

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> ResultMeld:
        """From ``TableMeld.to_dict`` output."""
        return ResultMeld(
            int(d["id"]), int(d["owner"]), str(d["kind"]), tuple(d["cards"]),
            tuple((str(x["card"]), int(x["seat"])) for x in d["layoffs"]),
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """As ``TableMeld.to_dict``."""
        return {
            "id": self.id, "owner": self.owner, "kind": self.kind, "cards": list(self.cards),
            "layoffs": [{"card": c, "seat": s} for c, s in self.layoffs],
        }  # fmt: skip


@dataclass(frozen=True, slots=True)
class HollywoodHand:
    """Hollywood: the games (0..2) a hand's win was entered in, and every game's points per seat after it."""

    games_entered: tuple[int, ...]
    games: tuple[tuple[int, ...], ...]


@dataclass(frozen=True, slots=True)
class HandResult:
    """How a hand ended (the ``hand_ended`` event, ``last_hand`` of the views)."""

    hand_no: int
    reason: str
    winner: int | None
    points: int
    hands: tuple[tuple[str, ...], ...]
    hand_values: tuple[int, ...]
    melds: tuple[ResultMeld, ...]
    scores: tuple[int, ...]
    hollywood: HollywoodHand | None = None
    knocker: int | None = None
    knocker_deadwood: int | None = None
    defender_deadwood: int | None = None
    going_rummy: bool | None = None
    resigned: int | None = None
    lost_on_time: int | None = None

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> HandResult:
        """From the engine's dict (``GameState.last_hand``, a ``hand_ended`` event's fields)."""
        hollywood = None
        if "games" in d:
            hollywood = HollywoodHand(_ints(d["games_entered"]), tuple(_ints(g) for g in d["games"]))
        winner = d.get("winner")
        return HandResult(
            hand_no=int(d["hand_no"]), reason=str(d["reason"]), winner=None if winner is None else int(winner),
            points=int(d["points"]), hands=tuple(tuple(h) for h in d["hands"]), hand_values=_ints(d["hand_values"]),
            melds=tuple(ResultMeld.from_dict(m) for m in d["melds"]), scores=_ints(d["scores"]),
            hollywood=hollywood, knocker=_opt_int(d, "knocker"), knocker_deadwood=_opt_int(d, "knocker_deadwood"),
            defender_deadwood=_opt_int(d, "defender_deadwood"),
            going_rummy=None if d.get("going_rummy") is None else bool(d["going_rummy"]),
            resigned=_opt_int(d, "resigned"), lost_on_time=_opt_int(d, "lost_on_time"),
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """The engine's dict, equal to the one ``from_dict`` read (keys in the engine's order)."""
        d: dict[str, Any] = {
            "hand_no": self.hand_no, "reason": self.reason, "winner": self.winner, "points": self.points,
            "hands": [list(h) for h in self.hands], "hand_values": list(self.hand_values),
            "melds": [m.to_dict() for m in self.melds], "scores": list(self.scores),
        }  # fmt: skip
        if self.hollywood is not None:
            d["games_entered"] = list(self.hollywood.games_entered)
            d["games"] = [list(g) for g in self.hollywood.games]
        for name in ("knocker", "knocker_deadwood", "defender_deadwood", "going_rummy", "resigned", "lost_on_time"):
            value = getattr(self, name)
            if value is not None:
                d[name] = value
        return d


def _opt_int(d: Mapping[str, Any], name: str) -> int | None:
    v = d.get(name)
    return None if v is None else int(v)


@dataclass(frozen=True, slots=True)
class ScoreBreakdown:
    """How the totals of a game were made (scoring): hand points and boxes won per seat; for a game played to its
    end also each seat's box bonus, game (or shutout) bonus, total and the winners. A resigned or lost match's
    breakdown has the points and boxes only (the others None)."""

    points: tuple[int, ...]
    boxes: tuple[int, ...]
    box_bonus: tuple[int, ...] | None = None
    game_bonus: tuple[int, ...] | None = None
    totals: tuple[int, ...] | None = None
    winners: tuple[int, ...] | None = None

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> ScoreBreakdown:
        """From a result's ``detail`` (or one of Hollywood's ``games``)."""
        def get(name: str) -> tuple[int, ...] | None:
            return None if d.get(name) is None else _ints(d[name])

        return ScoreBreakdown(_ints(d["points"]), _ints(d["boxes"]), get("box_bonus"), get("game_bonus"),
                              get("totals"), get("winners"))  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """The engine's dict."""
        d: dict[str, Any] = {"points": list(self.points), "boxes": list(self.boxes)}
        for name in ("box_bonus", "game_bonus", "totals", "winners"):
            value = getattr(self, name)
            if value is not None:
                d[name] = list(value)
        return d


@dataclass(frozen=True, slots=True)
class MatchResult:
    """The result of a finished match (the ``match_ended`` event, ``result`` of the views). ``ended`` and
    ``seat_ends`` are None only in a result stored before results named their ending (a match played to its
    end)."""

    totals: tuple[int, ...]
    winners: tuple[int, ...]
    ended: str | None
    seat_ends: tuple[str, ...] | None
    breakdown: ScoreBreakdown | None = None
    hollywood_games: tuple[ScoreBreakdown, ...] | None = None
    resigned: int | None = None
    lost_on_time: int | None = None

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> MatchResult:
        """From the engine's dict (``GameState.result``, a ``match_ended`` event's fields)."""
        return MatchResult(
            totals=_ints(d["totals"]), winners=_ints(d["winners"]),
            ended=None if d.get("ended") is None else str(d["ended"]),
            seat_ends=None if d.get("seat_ends") is None else tuple(map(str, d["seat_ends"])),
            breakdown=None if d.get("detail") is None else ScoreBreakdown.from_dict(d["detail"]),
            hollywood_games=None if d.get("games") is None else tuple(ScoreBreakdown.from_dict(g) for g in d["games"]),
            resigned=_opt_int(d, "resigned"), lost_on_time=_opt_int(d, "lost_on_time"),
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """The engine's dict, equal to the one ``from_dict`` read (keys in the engine's order)."""
        d: dict[str, Any] = {"totals": list(self.totals), "winners": list(self.winners)}
        if self.hollywood_games is not None:
            d["games"] = [g.to_dict() for g in self.hollywood_games]
        if self.breakdown is not None:
            d["detail"] = self.breakdown.to_dict()
        if self.ended is not None:
            d["ended"] = self.ended
        if self.resigned is not None:
            d["resigned"] = self.resigned
        if self.lost_on_time is not None:
            d["lost_on_time"] = self.lost_on_time
        if self.seat_ends is not None:
            d["seat_ends"] = list(self.seat_ends)
        return d


def hand_result_of(state: GameState) -> HandResult | None:
    """The result of the last hand played in ``state`` (None before the first hand ends)."""
    return None if state.last_hand is None else HandResult.from_dict(state.last_hand)


def match_result_of(state: GameState) -> MatchResult | None:
    """The result of the match in ``state`` (None until it is over)."""
    return None if state.result is None else MatchResult.from_dict(state.result)
