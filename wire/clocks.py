"""Seat clocks: every seat's clock in a view or a clock event (``SeatClock`` messages <-> view-dict entries)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from engine.views import ClockDict
from rummy_pb.rummy.v1 import game_pb2 as pb


def seat_clocks_to_proto(target: Any, clocks: Iterable[ClockDict]) -> None:
    """Adds every seat's clock (view-dict entries) to the repeated SeatClock field ``target``."""
    add = target.add
    for c in clocks:
        if c["running"]:
            add(seat=c["seat"], remaining_ms=c["remaining_ms"], running=True, auto_moves=c["auto_moves"],
                started_ms=c["started_ms"], deadline_ms=c["deadline_ms"])  # fmt: skip
        else:
            add(seat=c["seat"], remaining_ms=c["remaining_ms"], auto_moves=c["auto_moves"])


def clocks_from_proto(clocks: Iterable[pb.SeatClock]) -> list[ClockDict]:
    """Every seat's clock as view-dict entries (``clients.view.SeatClock.from_dict`` reads them)."""
    return [
        {"seat": c.seat, "remaining_ms": c.remaining_ms, "running": c.running,
         "started_ms": c.started_ms if c.HasField("started_ms") else None,
         "deadline_ms": c.deadline_ms if c.HasField("deadline_ms") else None, "auto_moves": c.auto_moves}
        for c in clocks
    ]  # fmt: skip
