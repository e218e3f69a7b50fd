"""Match scoring: hand results into match totals, Hollywood's three games, bonuses, match end, next dealer."""

from __future__ import annotations

from typing import Any

from engine.state import GameState

N_HOLLYWOOD = 3


def record_hand_win(s: GameState, winner: int, points: int) -> list[int]:
    """Enter a hand win into the match (and Hollywood games); returns the Hollywood games it was entered in."""
    r = s.rules
    s.boxes = _add(s.boxes, winner, 1)
    if not r.hollywood:
        s.scores = _add(s.scores, winner, points)
        return []
    # "had a score in game g-1": a win entered there (its box), even one of no points (RULES.md 2: "1st win in
    # game 1, 2nd in games 1 and 2")
    entered = [
        g for g in range(N_HOLLYWOOD)
        if not s.games_ended[g] and (g == 0 or s.game_boxes[g - 1][winner] > 0 or s.games_ended[g - 1])
    ]
    games = list(s.games)
    boxes = list(s.game_boxes)
    ended = list(s.games_ended)
    for g in entered:
        games[g] = _add(games[g], winner, points)
        boxes[g] = _add(boxes[g], winner, 1)
        if games[g][winner] >= r.target_score:
            ended[g] = True
    s.games, s.game_boxes, s.games_ended = tuple(games), tuple(boxes), tuple(ended)
    s.scores = tuple(sum(games[g][seat] for g in range(N_HOLLYWOOD)) for seat in range(r.players))
    return entered


def _add(t: tuple[int, ...], i: int, v: int) -> tuple[int, ...]:
    return t[:i] + (t[i] + v,) + t[i + 1 :]


def match_is_over(s: GameState) -> bool:
    """True when the match has ended after the hand just recorded (hands_played already counted)."""
    r = s.rules
    if r.max_hands and s.hands_played >= r.max_hands:
        return True
    if r.hollywood:
        return all(s.games_ended)
    return max(s.scores) >= r.target_score


def _bonus_totals(points: tuple[int, ...], boxes: tuple[int, ...], s: GameState, reached: bool) -> dict[str, Any]:
    """Totals of one scored game: hand points, boxes, and the game (or shutout) bonus of a sole winner."""
    r = s.rules
    top = max(points)
    winners = [i for i, p in enumerate(points) if p == top]
    totals = [p + r.box_bonus * b for p, b in zip(points, boxes, strict=True)]
    game_bonus = [0] * len(points)
    if len(winners) == 1 and (reached or r.max_hands):
        w = winners[0]
        shutout = all(p == 0 for i, p in enumerate(points) if i != w)
        bonus = r.shutout_game_bonus if shutout and r.shutout_game_bonus else r.game_bonus
        game_bonus[w] = bonus
        totals[w] += bonus
    return {
        "points": list(points), "boxes": list(boxes), "box_bonus": [r.box_bonus * b for b in boxes],
        "game_bonus": game_bonus, "totals": totals, "winners": winners,
    }


#: how a match ended (``result["ended"]``): played to its end, or a seat resigned (clocks and organizers will add
#: "time" and "organizer")
COMPLETED, RESIGNED, TIME = "completed", "resigned", "time"
#: how it ended for each seat (``result["seat_ends"]``)
SEAT_FINISHED, SEAT_RESIGNED, SEAT_LOST_ON_TIME, SEAT_FORFEITED = (
    "finished", "resigned", "lost_on_time", "forfeited_by_organizer",
)
SEAT_ENDS = (SEAT_FINISHED, SEAT_RESIGNED, SEAT_LOST_ON_TIME, SEAT_FORFEITED)


def match_result(s: GameState) -> dict[str, Any]:
    """Final result of a match played to its end: per-seat totals with bonuses, the winner(s) (a tie is a shared
    win), ``ended`` ("completed") and ``seat_ends`` (each seat "finished")."""
    return {**_played_result(s), "ended": COMPLETED, "seat_ends": [SEAT_FINISHED] * s.rules.players}


def resigned_result(s: GameState, seat: int, *, on_time: bool = False) -> dict[str, Any]:
    """Result of a match that ``seat`` resigned: the others win. Among several others (Rummy) the highest total
    wins, a tie shared, as when ``max_hands`` ends a match. Totals are the points so far (with Gin's box bonuses;
    no game bonus: no game was won). ``seat_ends``: "resigned" for ``seat``, "finished" for the others.
    ``on_time``: the seat lost on time instead (``ended`` "time", ``lost_on_time``: the seat, its seat end
    "lost_on_time")."""
    r = s.rules
    n = r.players
    if r.hollywood:
        totals = [
            sum(s.games[g][i] + r.box_bonus * s.game_boxes[g][i] for g in range(N_HOLLYWOOD)) for i in range(n)
        ]
    elif r.game == "gin":
        totals = [p + r.box_bonus * b for p, b in zip(s.scores, s.boxes, strict=True)]
    else:
        totals = list(s.scores)
    others = [i for i in range(n) if i != seat]
    top = max(totals[i] for i in others)
    ends = [SEAT_FINISHED] * n
    ends[seat] = SEAT_LOST_ON_TIME if on_time else SEAT_RESIGNED
    how = {"ended": TIME, "lost_on_time": seat} if on_time else {"ended": RESIGNED, "resigned": seat}
    return {
        "totals": totals, "winners": [i for i in others if totals[i] == top],
        "detail": {"points": list(s.scores), "boxes": list(s.boxes)},
        **how, "seat_ends": ends,
    }  # fmt: skip


def _played_result(s: GameState) -> dict[str, Any]:
    r = s.rules
    if r.hollywood:
        games = [
            _bonus_totals(s.games[g], s.game_boxes[g], s, s.games_ended[g]) for g in range(N_HOLLYWOOD)
        ]
        totals = [sum(g["totals"][seat] for g in games) for seat in range(r.players)]
        top = max(totals)
        return {"totals": totals, "winners": [i for i, t in enumerate(totals) if t == top], "games": games}
    if r.game == "gin":
        res = _bonus_totals(s.scores, s.boxes, s, max(s.scores) >= r.target_score)
        # the winner is decided on hand points; bonuses are added afterwards
        return {"totals": res["totals"], "winners": res["winners"], "detail": res}
    top = max(s.scores)
    return {"totals": list(s.scores), "winners": [i for i, p in enumerate(s.scores) if p == top]}


def next_dealer(s: GameState, winner: int | None) -> int:
    """Gin: the hand's winner deals next, the same dealer after a hand nobody won. Rummy: the next seat."""
    if s.rules.game == "gin":
        return s.dealer if winner is None else winner
    return (s.dealer + 1) % s.rules.players
