"""Golden transcripts replayed: every stored game gives the same events, move by move, and the same result."""

from __future__ import annotations

import pytest

from tests.engine.transcripts import GAMES, GOLDEN_DIR, replay


@pytest.mark.parametrize("name", sorted(GAMES))
def test_golden_transcript_replays_identically(name: str) -> None:
    text = (GOLDEN_DIR / f"{name}.txt").read_text()
    produced, final = replay(text)
    expected = text.splitlines()
    for i, (want, got) in enumerate(zip(expected, produced, strict=False)):
        assert got == want, f"{name}.txt line {i + 1} differs"
    assert len(produced) == len(expected)
    assert final.phase == "match_over"


def test_golden_games_cover_every_hand_end() -> None:
    """Between them, the stored games end hands by knock, gin, undercut, stock end and going out."""
    reasons = set()
    for name in GAMES:
        for line in (GOLDEN_DIR / f"{name}.txt").read_text().splitlines():
            if line.startswith("  hand_ended "):
                reasons.add(line.split('"reason": "')[1].split('"')[0])
    assert {"knock", "gin", "undercut", "stock_end", "went_out"} <= reasons, reasons
