"""The words of the terminal game: what each phase asks of the player, the brief rules of the game being played,
and the commands (``help``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import engine

PHASE_ASKS = {
    "take_or_pass": "take the upcard ('draw discard') or pass",
    "draw": "draw from the stock, or take the top of the discard pile",
    "discard": "discard a card",
    "play": "meld and lay off as you like, then discard (or go out)",
    "layoff": "lay down your melds and lay off on the knocker's melds, then 'done' (or 'declare best')",
    "last_card": "take the last discard only to knock or go big gin with it, or pass",
}

_GIN_MOVES = """\
  <move>          type a move: draw stock (or draw, s), draw discard (or take), pass, discard 7h,
                  knock td, big_gin; after a knock: meld 7h 8h 9h, layoff 7s #2 (card, then the table
                  meld's #id), declare best, done  (10 or t for ten)"""

_RUMMY_MOVES = """\
  <move>          type a move: draw stock (or draw, s), draw discard (or take), meld 7h 8h 9h, layoff 7s #2
                  (card, then the table meld's #id), discard 7h  (10 or t for ten)"""

_COMMANDS = """\
Commands:
  <number>        play the move with that number in the list
{moves}
  moves           list the legal moves again
  hand / table    redraw your hand / the whole table
  sort            sort your hand by suit or by rank
  hint            the move the strong bot would make
  help            this text
  quit            leave the game"""


def commands(game: str) -> str:
    """The commands, with the moves of ``game`` ("gin" or "rummy")."""
    return _COMMANDS.format(moves=_GIN_MOVES if game == "gin" else _RUMMY_MOVES)


def phase_ask(phase: str, legal: Sequence[engine.Move]) -> str:
    """What the phase asks of the player, naming only what the legal moves allow (a knock, big gin)."""
    ask = PHASE_ASKS.get(phase, phase)
    if phase == "discard":
        extra = [word for kind, word in ((engine.Knock, "knock"), (engine.BigGin, "go big gin"))
                 if any(isinstance(m, kind) for m in legal)]  # fmt: skip
        if extra:
            ask += ", or " + " or ".join(extra)
    return ask


def _gin_rules(rules: Mapping[str, Any]) -> str:
    limit = rules.get("knock_limit", 10)
    lines = [
        "Gin Rummy: two players, 10 cards each. Melds are sets (3 or 4 of a rank) and runs (3+ in sequence of",
        "one suit, ace low). Deadwood is the value of the cards outside melds (A=1, face cards 10).",
        "Each turn: draw one card (stock or top of the discard pile), then discard one. A card taken from the",
        "pile may not be discarded on the same turn.",
        f"Knock (discard and lay down your melds) when your deadwood is {limit} or less"
        + (" (Oklahoma: the first upcard sets the limit)" if rules.get("oklahoma") else "")
        + ".",
        f"Gin (no deadwood) scores {rules.get('gin_bonus', 25)} plus the other player's deadwood.",
        "After a knock the defender lays down melds and lays off cards on the knocker's melds ('declare best'",
        "lets the referee find the best way). The knocker scores the difference in deadwood; a defender whose",
        f"deadwood is {'as low as' if rules.get('undercut_on_tie', True) else 'lower than'} the knocker's undercuts"
        f" and scores {rules.get('undercut_bonus', 25)} plus the difference.",
        "If the stock is down to 2 cards without a knock, the hand is drawn.",
    ]
    if rules.get("defender_deadwood") == "declared":
        lines.append("The defender's cards that are neither laid down in a meld nor laid off count as deadwood.")
    if rules.get("first_upcard_rule") == "take_or_pass":
        lines.append("First turn: the non-dealer may take the upcard or pass, then the dealer; then the stock.")
    if rules.get("hollywood"):
        lines.append("Hollywood: three games are scored at once (a win counts in more games as you go).")
    return "\n".join(lines)


def _rummy_rules(rules: Mapping[str, Any]) -> str:
    lines = [
        "Rummy: melds are sets (3 or 4 of a rank) and runs (3+ in sequence of one suit, ace low"
        + (", or Q-K-A high" if rules.get("ace_high_low") else "")
        + ").",
        "Each turn: draw one card (stock or top of the discard pile); then meld new sets or runs from your hand",
        "and lay off cards on any meld on the table (its #id), as you like; then discard one card.",
        "A card taken from the pile may not be discarded on the same turn.",
        "Go out by getting rid of every card: the player who goes out scores the value of the cards left in the",
        "other hands (A=1, face cards 10).",
    ]
    multiplier = rules.get("going_rummy_multiplier", 1)
    if isinstance(multiplier, int) and multiplier > 1:
        lines.append(f"Going out in one turn without having melded before ('rummy') scores x{multiplier}.")
    return "\n".join(lines)


def help_text(game: str, rules: Mapping[str, Any]) -> str:
    """Brief rules of ``game`` under ``rules`` (the game's option set), then the commands."""
    text = _gin_rules(rules) if game == "gin" else _rummy_rules(rules)
    target = rules.get("target_score")
    if target:
        text += f"\nThe match is won by the first to {target} point{'' if target == 1 else 's'}."
    return text + "\n\n" + commands(game)
