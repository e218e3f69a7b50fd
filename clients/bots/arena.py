"""Bots playing each other through the engine directly (no server): for benchmarks and tests.

Each seat's bot gets its own view (``View.from_engine``) and every event as its seat sees it (``event_for``),
exactly what it would get from the service.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from clients.bots.base import Bot
from clients.view import View
from engine import GameState, Move, Rules, apply, event_for, legal_moves, new_game, view


@dataclass(slots=True)
class MoveClock:
    """Decisions and CPU time spent per bot name (CPU time: a busy machine does not inflate it)."""

    calls: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    worst: dict[str, float] = field(default_factory=dict)

    def add(self, name: str, seconds: float) -> None:
        """Count one decision of ``name``."""
        self.calls[name] = self.calls.get(name, 0) + 1
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds
        self.worst[name] = max(self.worst.get(name, 0.0), seconds)

    def per_move_ms(self, name: str) -> float:
        """Mean milliseconds per decision of ``name``."""
        n = self.calls.get(name, 0)
        return 1000.0 * self.seconds.get(name, 0.0) / n if n else 0.0


#: called with (state before, seat, view, legal moves, chosen move) before the move is applied
MoveHook = Callable[[GameState, int, View, Sequence[Move], Move], None]


def play_match(
    rules: Rules,
    bots: Sequence[Bot],
    seed: bytes,
    clock: MoveClock | None = None,
    on_move: MoveHook | None = None,
    max_moves: int = 1_000_000,
) -> GameState:
    """Play one match to its end and return the final state (``state.result`` holds the winners)."""
    if len(bots) != rules.players:
        raise ValueError(f"{rules.players} seats need {rules.players} bots, got {len(bots)}")
    rules_dict = rules.to_dict()
    state = new_game(rules, seed)
    for _ in range(max_moves):
        if state.phase == "match_over":
            return state
        seat = state.to_act
        legal = legal_moves(state)
        bot = bots[seat]
        start = time.process_time()
        v = View.from_engine(view(state, seat), rules_dict)
        move = bot.choose(v, legal)
        if clock is not None:
            clock.add(bot.name, time.process_time() - start)
        if on_move is not None:
            on_move(state, seat, v, legal, move)
        state, events = apply(state, seat, move)
        for ev in events:
            for i, b in enumerate(bots):
                b.observe(event_for(ev, i))
    raise RuntimeError(f"match still running after {max_moves} moves")
