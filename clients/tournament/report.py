"""The tournament's results: ratings with intervals, head-to-head, and the files that hold them.

Every game becomes pairwise results between the entrants at its table (``clients.tournament.ratings.Result``):
a winner beats every non-winner, two winners share, two non-winners compare their totals; a seat that forfeited
loses to every seat that did not (and shares with another forfeiter), and the others of an abandoned game get no
result between them. Gin has one result per game; an n-player Rummy game gives n(n-1)/2.
"""

from __future__ import annotations

import csv
import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clients.sdk.values import Bank, Clock, PerMove, time_control_from_text
from clients.tournament.journal import GameRecord
from clients.tournament.ratings import Rating, Result, head_to_head, ratings
from clients.tournament.schedule import Config, rating_seed, record_name

#: Why ratings.png is missing when matplotlib is not installed (the chart is the ``tournament`` extra).
NO_CHART = ("ratings.png not written: matplotlib is not installed "
            "(pip install 'rummy-referee[tournament]', or make tournament)")  # fmt: skip

FILES = {
    "json": "results.json",
    "standings": "standings.csv",
    "head_to_head": "head_to_head.csv",
    "games": "games.csv",
    "chart": "ratings.png",
}


def pair_results(record: GameRecord) -> list[Result]:
    """The pairwise results of one game (see the module docstring)."""
    out: list[Result] = []
    seats = record.seats
    for i, j in itertools.combinations(range(len(seats)), 2):
        if record.forfeits:
            fi, fj = i in record.forfeits, j in record.forfeits
            if not fi and not fj:
                continue
            score = 0.5 if fi and fj else 0.0 if fi else 1.0
        else:
            wi, wj = i in record.winners, j in record.winners
            if wi != wj:
                score = 1.0 if wi else 0.0
            else:
                ti, tj = record.totals[i], record.totals[j]
                score = 1.0 if ti > tj else 0.0 if ti < tj else 0.5
        out.append(Result(seats[i], seats[j], score))
    return out


@dataclass(frozen=True, slots=True)
class Standing:
    """One line of the standings. Game counts: ``games`` played, ``won`` alone, ``shared`` (won together with
    another seat, or a drawn Gin hand), ``forfeits`` (lost by forfeit; ``lost`` counts them too; the seats that did
    not forfeit won that game), ``time_losses`` (lost on time) and ``resigned``. The rating's
    own counts (``rating.games``, ``rating.wins``, ...) are of pairwise results: a game of n seats gives each seat
    n-1 of them, so in Rummy they are not game counts."""

    rank: int
    rating: Rating
    games: int
    won: int
    shared: int
    forfeits: int
    #: Matches lost on time (the referee's clock ran out; ``lost`` counts them too).
    time_losses: int = 0
    #: Matches resigned (``lost`` counts them too).
    resigned: int = 0

    @property
    def lost(self) -> int:
        """Games neither won nor shared (forfeits included)."""
        return self.games - self.won - self.shared


@dataclass(frozen=True, slots=True)
class Summary:
    """Everything the report shows."""

    config: Config
    rules: dict[str, Any]
    scheduled: int
    records: tuple[GameRecord, ...]
    standings: tuple[Standing, ...]
    h2h: dict[tuple[str, str], tuple[float, int]]

    @property
    def complete(self) -> bool:
        """Every scheduled game has a result."""
        return len(self.records) == self.scheduled


def summarize(config: Config, records: Sequence[GameRecord], scheduled: int, bootstrap: int = 200) -> Summary:
    """Ratings and head-to-head of ``records`` (given in schedule order)."""
    results = [r for rec in records for r in pair_results(rec)]
    table = ratings(results, names=config.names, bootstrap=bootstrap, seed=rating_seed(config))
    counts = {name: [0, 0, 0, 0, 0, 0] for name in config.names}  # games, won, shared, forfeits, on time, resigned
    for rec in records:
        # a game abandoned by a forfeit is won by the seats that did not forfeit
        winners = tuple(s for s in range(len(rec.seats)) if s not in rec.forfeits) if rec.forfeits else rec.winners
        for seat, name in enumerate(rec.seats):
            c = counts[name]
            c[0] += 1
            c[1] += winners == (seat,)
            c[2] += seat in winners and len(winners) > 1
            c[3] += seat in rec.forfeits
            c[4] += rec.ends[seat] == "lost_on_time"
            c[5] += rec.ends[seat] == "resigned"
    standings = tuple(Standing(i + 1, r, *counts[r.name]) for i, r in enumerate(table))
    return Summary(config, config.rules().to_dict(), scheduled, tuple(records), standings, head_to_head(results))


# ------------------------------------------------------------------------------------------------- terminal


def _grid(rows: Sequence[Sequence[str]], right: Sequence[bool]) -> list[str]:
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    lines = []
    for k, row in enumerate(rows):
        cells = [cell.rjust(w) if right[c] else cell.ljust(w)
                 for c, (cell, w) in enumerate(zip(row, widths, strict=True))]  # fmt: skip
        lines.append("  ".join(cells).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def table_text(summary: Summary) -> str:
    """The standings and the head-to-head table, for the terminal."""
    cfg = summary.config
    pairwise = cfg.players > 2  # Gin: one pairwise result per game, the same counts
    head = ["rank", "entrant", "elo", "95% interval", "games", "won", "shared", "lost", "forfeits", "time losses",
            "resigned"]  # fmt: skip
    if pairwise:
        head += ["pairings", "beat", "tied", "lost to"]
    head.append("score")
    rows = [head]
    for s in summary.standings:
        r = s.rating
        row = [str(s.rank), r.name, f"{r.elo:.0f}", f"{r.low:.0f} .. {r.high:.0f}", str(s.games), str(s.won),
               str(s.shared), str(s.lost), str(s.forfeits), str(s.time_losses), str(s.resigned)]  # fmt: skip
        if pairwise:
            row += [str(r.games), f"{r.wins:g}", f"{r.draws:g}", f"{r.losses:g}"]
        rows.append([*row, f"{100 * r.score:.1f}%"])
    title = (f"{cfg.profile}, {cfg.players} players, "
             f"{'matches to ' + str(summary.rules['target_score']) if not cfg.hands_per_match else str(cfg.hands_per_match) + ' hand(s) per match'}, "  # noqa: E501
             f"{cfg.deals} duplicate deal(s), time control {_time_control_words(cfg.time_control)}, "
             f"seed {cfg.seed!r}: "
             f"{len(summary.records)} of {summary.scheduled} games played")  # fmt: skip
    lines = [title, "", *_grid(rows, [c != 1 for c in range(len(head))]), "", _legend(pairwise)]
    names = [s.rating.name for s in summary.standings]
    if len(names) > 1:
        lines += ["", "head to head (points of the row entrant against the column entrant / games):", ""]
        grid = [["", *names]]
        for a in names:
            row = [a]
            for b in names:
                pts, g = summary.h2h.get((a, b), (0.0, 0))
                row.append("-" if a == b else f"{pts:g}/{g}")
            grid.append(row)
        lines += _grid(grid, [False] + [True] * len(names))
    return "\n".join(lines)


def _time_control_words(text: str) -> str:
    tc = time_control_from_text(text)
    if isinstance(tc, PerMove):
        return f"{tc.limit:g} s per move"
    if isinstance(tc, Clock):
        return f"{tc.initial:g} s + {tc.increment:g} s per move"
    assert isinstance(tc, Bank)
    return f"{tc.allowance:g} s per move + a {tc.bank:g} s bank"


def _legend(pairwise: bool) -> str:
    games = ("games: games played; won: games won alone; shared: won together with another seat (or a drawn "
             "hand); lost: the rest, forfeits, time losses and resignations included (a forfeit's game is won by "
             "the other seats);\ntime losses: matches lost on time (the referee's clock); resigned: matches "
             "resigned")  # fmt: skip
    if not pairwise:
        return games + "; score: points per game (a shared game is half a point)."
    return (games + ";\npairings: results against each other seat at the table (a game of n seats gives each seat "
            "n-1: what the ratings count); beat / tied / lost to: those results; score: their points per pairing.")


# ---------------------------------------------------------------------------------------------------- files


def to_json(summary: Summary) -> dict[str, Any]:
    """The JSON report (``results.json``)."""
    return {
        "tournament": summary.config.to_dict(),
        "rules": summary.rules,
        "games_scheduled": summary.scheduled,
        "games_played": len(summary.records),
        "complete": summary.complete,
        "standings": [
            {"rank": s.rank, "entrant": s.rating.name, "elo": round(s.rating.elo, 1), "low": round(s.rating.low, 1),
             "high": round(s.rating.high, 1), "games": s.games, "won": s.won, "shared": s.shared, "lost": s.lost,
             "forfeits": s.forfeits, "time_losses": s.time_losses, "resigned": s.resigned,
             "pairings": s.rating.games, "pairs_won": s.rating.wins,
             "pairs_tied": s.rating.draws, "pairs_lost": s.rating.losses, "score": round(s.rating.score, 4)}
            for s in summary.standings
        ],
        "head_to_head": [
            {"entrant": a, "opponent": b, "points": pts, "games": g} for (a, b), (pts, g) in sorted(summary.h2h.items())
        ],
        "games": [_game_json(r) for r in summary.records],
    }


def _game_json(r: GameRecord) -> dict[str, Any]:
    d = r.to_dict()
    del d["seconds"]  # the report holds only what the same seed always gives (timings stay in the journal)
    d["record"] = record_name(r.key)
    return d


def write_files(summary: Summary, out_dir: Path) -> dict[str, Path]:
    """Write results.json, standings.csv, head_to_head.csv, games.csv and ratings.png into ``out_dir``; the paths
    written (without ``chart`` when matplotlib is not installed: see ``NO_CHART``)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {k: out_dir / v for k, v in FILES.items()}
    report = to_json(summary)
    paths["json"].write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    standings = report["standings"]
    _csv(paths["standings"], list(standings[0]) if standings else ["rank", "entrant"], standings)
    _csv(paths["head_to_head"], ["entrant", "opponent", "points", "games"], report["head_to_head"])
    n = summary.config.players
    game_rows = [
        {"key": r.key, "deal": r.deal, **{f"seat{i}": r.seats[i] for i in range(n)},
         **{f"total{i}": r.totals[i] for i in range(n)}, "winners": " ".join(r.seats[w] for w in r.winners),
         "forfeits": " ".join(r.seats[f] for f in r.forfeits), "ends": " ".join(r.ends), "hands": r.hands,
         "game_id": r.game_id, "record": record_name(r.key)}
        for r in summary.records
    ]  # fmt: skip
    fields = ["key", "deal", *[f"seat{i}" for i in range(n)], *[f"total{i}" for i in range(n)], "winners",
              "forfeits", "ends", "hands", "game_id", "record"]  # fmt: skip
    _csv(paths["games"], fields, game_rows)
    if not chart(summary, paths["chart"]):
        del paths["chart"]
    return paths


def _csv(path: Path, fields: Sequence[str], rows: Sequence[dict[str, Any]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(fields))
        writer.writeheader()
        writer.writerows(rows)


def chart(summary: Summary, path: Path) -> bool:
    """A PNG of the ratings with their 95% intervals, best at the top (matplotlib, Agg canvas). False, and nothing
    written, when matplotlib is not installed."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return False

    standings = list(reversed(summary.standings))  # the best last: at the top of the y axis
    names = [s.rating.name for s in standings]
    elo = [s.rating.elo for s in standings]
    below = [s.rating.elo - s.rating.low for s in standings]
    above = [s.rating.high - s.rating.elo for s in standings]
    fig = Figure(figsize=(7.5, 1.6 + 0.45 * max(1, len(names))), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.axvline(1500, color="0.75", linewidth=1, zorder=0)
    ax.errorbar(elo, range(len(names)), xerr=[below, above], fmt="o", color="tab:blue", ecolor="tab:blue",
                elinewidth=2, capsize=4)  # fmt: skip
    for y, s in enumerate(standings):
        ax.annotate(f"{s.rating.elo:.0f}", (s.rating.elo, y), textcoords="offset points", xytext=(0, 7),
                    ha="center", fontsize=8)  # fmt: skip
    ax.set_yticks(range(len(names)), names)
    ax.set_ylim(-0.7, len(names) - 0.3)
    ax.set_xlabel("rating (Elo scale, 1500 = average), 95% bootstrap interval")
    cfg = summary.config
    title = f"rummy-tournament: {cfg.profile}, {len(summary.records)} games"
    ax.set_title(title)
    ax.grid(axis="x", alpha=0.3)
    fig.savefig(path, format="png", metadata={"Title": title, "Description": "ratings: " + ", ".join(
        f"{s.rating.name} {s.rating.elo:.0f} [{s.rating.low:.0f}, {s.rating.high:.0f}]" for s in summary.standings
    )})  # fmt: skip
    return True
