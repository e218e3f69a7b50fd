"""The tournament's progress bar: tqdm's when the ``tournament`` extra is installed, else none (and a note saying
why, when a bar was wanted): the tournament plays the same either way."""

from __future__ import annotations

import sys
from typing import Any, Protocol, TextIO

#: Why there is no bar when tqdm is missing.
NO_BAR = ("no progress bar: tqdm is not installed (pip install 'rummy-referee[tournament]', "
          "or make tournament)")  # fmt: skip


class Bar(Protocol):
    """What the tournament asks of a progress bar."""

    def update(self, n: int = 1) -> Any:
        """``n`` more games done."""
        ...

    def set_postfix(self, **values: Any) -> Any:
        """Counters shown after the bar."""
        ...

    def write(self, text: str, file: TextIO | None = None) -> Any:
        """A line printed above the bar."""
        ...

    def close(self) -> Any:
        """The bar is done."""
        ...


class NoBar:
    """No bar: lines are printed as they are."""

    def update(self, n: int = 1) -> None:
        """Nothing to draw."""

    def set_postfix(self, **values: Any) -> None:
        """Nothing to draw."""

    def write(self, text: str, file: TextIO | None = None) -> None:
        """Print ``text``."""
        print(text, file=file or sys.stderr)

    def close(self) -> None:
        """Nothing to close."""


def progress_bar(total: int, done: int, show: bool, stream: TextIO) -> Bar:
    """A bar of ``total`` games, ``done`` of them already, on ``stream`` when ``show``."""
    if not show:
        return NoBar()
    try:
        from tqdm import tqdm
    except ImportError:
        print(f"rummy-tournament: {NO_BAR}", file=stream)
        return NoBar()
    bar: Bar = tqdm(total=total, initial=done, desc="games", unit="game", file=stream, dynamic_ncols=True)
    return bar
