"""Ratings from game results: Bradley-Terry maximum likelihood on the Elo scale, with bootstrap confidence
intervals, and head-to-head tables. Pure Python, deterministic for a given seed."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

ELO_SCALE = 400 / math.log(10)  # Elo points per natural-log unit of strength
BASE = 1500.0


@dataclass(frozen=True, slots=True)
class Result:
    """One finished game between two entrants: score of ``a`` is 1 (win), 0.5 (shared) or 0 (loss)."""

    a: str
    b: str
    score_a: float


@dataclass(frozen=True, slots=True)
class Rating:
    """An entrant's rating with a 95% confidence interval and its record."""

    name: str
    elo: float
    low: float
    high: float
    games: int
    wins: float
    losses: float
    draws: float

    @property
    def score(self) -> float:
        """Fraction of points won (draws count half)."""
        return (self.wins + 0.5 * self.draws) / self.games if self.games else 0.0


def _fit(names: Sequence[str], results: Sequence[Result], iterations: int = 200) -> dict[str, float]:
    """Bradley-Terry strengths by the MM algorithm (Hunter 2004), with a weak prior of one draw against an
    average virtual opponent so that unbeaten or winless entrants stay finite; returned on the Elo scale."""
    strength = dict.fromkeys(names, 1.0)
    wins = dict.fromkeys(names, 0.5)  # the prior's half point
    pair_games: dict[tuple[str, str], float] = {}
    for r in results:
        wins[r.a] += r.score_a
        wins[r.b] += 1.0 - r.score_a
        key = (r.a, r.b) if r.a < r.b else (r.b, r.a)
        pair_games[key] = pair_games.get(key, 0.0) + 1.0
    for _ in range(iterations):
        new = {}
        for n in names:
            denom = 1.0 / (strength[n] + 1.0)  # the virtual opponent of strength 1
            for (x, y), g in pair_games.items():
                if n in (x, y):
                    denom += g / (strength[x] + strength[y])
            new[n] = wins[n] / denom
        # normalise: geometric mean 1
        mean = math.exp(sum(math.log(v) for v in new.values()) / len(new))
        strength = {n: v / mean for n, v in new.items()}
    return {n: BASE + ELO_SCALE * math.log(v) for n, v in strength.items()}


def ratings(results: Sequence[Result], names: Sequence[str] | None = None, bootstrap: int = 200,
            seed: int = 0) -> list[Rating]:
    """Ratings of every entrant, best first; confidence intervals from ``bootstrap`` resamples of the games."""
    entrants = sorted(set(names or []) | {r.a for r in results} | {r.b for r in results})
    if not entrants:
        return []
    point = _fit(entrants, results)
    rng = random.Random(seed)
    samples: dict[str, list[float]] = {n: [] for n in entrants}
    for _ in range(bootstrap if results else 0):
        resample = [results[rng.randrange(len(results))] for _ in results]
        fit = _fit(entrants, resample, iterations=60)
        for n in entrants:
            samples[n].append(fit[n])
    out = []
    for n in entrants:
        s = sorted(samples[n])
        low = s[int(0.025 * (len(s) - 1))] if s else point[n]
        high = s[int(0.975 * (len(s) - 1))] if s else point[n]
        games = [r for r in results if n in (r.a, r.b)]
        mine = [r.score_a if r.a == n else 1.0 - r.score_a for r in games]
        out.append(Rating(
            n, point[n], min(low, point[n]), max(high, point[n]), len(games),
            wins=sum(1 for x in mine if x == 1.0), losses=sum(1 for x in mine if x == 0.0),
            draws=sum(1 for x in mine if x == 0.5),
        ))
    return sorted(out, key=lambda r: (-r.elo, r.name))


def head_to_head(results: Sequence[Result]) -> dict[tuple[str, str], tuple[float, int]]:
    """(a, b) -> (points a scored against b, games), for every ordered pair that met."""
    table: dict[tuple[str, str], tuple[float, int]] = {}
    for r in results:
        for x, y, sc in ((r.a, r.b, r.score_a), (r.b, r.a, 1.0 - r.score_a)):
            pts, g = table.get((x, y), (0.0, 0))
            table[(x, y)] = (pts + sc, g + 1)
    return table
