"""``rummy replay``: step through a saved game (a record of ``clients.sdk.records``) with every hand face up.

A step is one move (or a deal): what happened, in words, then every seat's hand, the stock, the discard pile and
the table's melds as they are after it. Interactively Enter shows the next step and ``q`` quits; when the input is
not a terminal (or with ``--no-pause``) every step is printed at once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import engine
from clients.sdk.records import RecordError, check_record, load_record
from clients.terminal.events import describe
from clients.terminal.render import Style, hand_line, meld_line
from clients.view import card_mask

_SETUP = frozenset({"hand_started", "dealt"})


@dataclass
class Table:
    """The cards as the events move them: every hand, the discard pile, the stock's size and the table melds."""

    game: str
    hands: list[list[str]] = field(default_factory=list)
    pile: list[str] = field(default_factory=list)
    stock: int = 0
    melds: dict[int, tuple[int, list[str]]] = field(default_factory=dict)

    def _drop(self, seat: int, cards: Sequence[str]) -> None:
        gone = set(cards)
        self.hands[seat] = [c for c in self.hands[seat] if c not in gone]

    def take(self, e: Mapping[str, Any]) -> None:
        """Apply one event."""
        kind, seat = e["kind"], int(e.get("seat", -1))
        if kind == "hand_started":
            self.hands = [[] for _ in e.get("hand_sizes", ())]
            self.pile = [str(e["upcard"])] if e.get("upcard") else []
            self.stock = int(e.get("stock_size", 0))
            self.melds = {}
        elif kind == "dealt":
            self.hands[seat] = list(e.get("cards", ()))
        elif kind == "drew":
            if e.get("source") == "stock":
                self.stock -= 1
            elif self.pile:
                self.pile.pop()
            if e.get("card"):
                self.hands[seat].append(str(e["card"]))
        elif kind == "discarded":
            self._drop(seat, [e["card"]])
            self.pile.append(str(e["card"]))
        elif kind in ("knocked", "big_gin"):
            for m in e.get("melds", ()):
                self.melds[int(m["id"])] = (int(m["owner"]), list(m["cards"]))
                self._drop(seat, m["cards"])
        elif kind == "melded":
            m = e["meld"]
            self.melds[int(m["id"])] = (int(m["owner"]), list(m["cards"]))
            self._drop(seat, m["cards"])
        elif kind == "laid_off":
            owner, cards = self.melds.get(int(e["meld_id"]), (seat, []))
            self.melds[int(e["meld_id"])] = (owner, [*cards, str(e["card"])])
            self._drop(seat, [e["card"]])
        elif kind == "restocked":
            self.pile = self.pile[-1:]
            self.stock = int(e.get("stock_size", 0))

    def lines(self, names: Sequence[str], style: Style) -> list[str]:
        """Every hand face up (Gin: with its deadwood), the stock and pile, the melds."""
        width = max(len(n) for n in names)
        out = []
        for seat, hand in enumerate(self.hands):
            dead = f"   deadwood {engine.min_deadwood(card_mask(hand))}" if self.game == "gin" and hand else ""
            out.append(f"  {names[seat]:<{width}}  ({len(hand):>2})  {hand_line(hand, style)}{dead}")
        shown = self.pile[-6:]
        more = "… " if len(self.pile) > len(shown) else ""
        pile = " ".join(hand_line([c], style) for c in shown) if shown else "(empty)"
        out.append(f"  stock {self.stock} · discard pile ({len(self.pile)}): {more}{pile}")
        out.extend(f"  {meld_line(i, cards, names[owner], style)}" for i, (owner, cards) in sorted(self.melds.items()))
        return out


def _names(record: Mapping[str, Any]) -> list[str]:
    names = [str(n) or f"Seat {i}" for i, n in enumerate(record["players"])]
    return [f"{n} ({i})" if names.count(n) > 1 else n for i, n in enumerate(names)]


def header(record: Mapping[str, Any]) -> str:
    """What the record is: the game, its players and rules, its size."""
    settings = record["settings"]
    options = settings["options"]
    title = ("Gin Rummy" if options.get("game") == "gin" else "Rummy") + f" ({settings['profile']})"
    meta = record.get("meta") or {}
    where = f" · tournament game {meta['tournament_game']}" if meta.get("tournament_game") else ""
    hands = len(record["deals"])
    return (f"{title} · game {record.get('game_id', '?')}{where}\n"
            f"Players: {', '.join(_names(record))} · target {options.get('target_score')} · "
            f"{hands} hand{'' if hands == 1 else 's'}, {len(record['moves'])} moves")  # fmt: skip


def steps(record: Mapping[str, Any], style: Style) -> Iterator[str]:
    """The record as steps: each deal, then each move, as text (the last one is the outcome)."""
    names = _names(record)
    rules = record["settings"]["options"]
    table = Table(str(rules.get("game", "gin")))
    moves = {int(m["version"]): m for m in record["moves"]}
    groups: list[list[Mapping[str, Any]]] = []
    for e in record["events"]:  # a step per version, and a new one where a hand is dealt
        last = groups[-1][-1] if groups else None
        if last is None or int(e["version"]) != int(last["version"]) or (
                e["kind"] == "hand_started" and last["kind"] not in _SETUP):  # fmt: skip
            groups.append([])
        groups[-1].append(e)
    for group in groups:
        lines: list[str] = []
        move = moves.get(int(group[0]["version"]))
        if move is not None and group[0]["kind"] not in _SETUP:
            lines.append(style.dim(f"move {int(move['version'])}: {names[int(move['seat'])]}: {move['move']}"))
        for e in group:
            table.take(e)
            text = describe(e, names, style, rules)
            if text:
                lines.append(text)
        if group[-1]["kind"] not in ("hand_ended", "match_ended"):
            lines.extend(table.lines(names, style))
        yield "\n".join(lines)
    result = record["result"]
    if not result.get("over"):
        reasons = (record.get("meta") or {}).get("reasons") or []
        why = f": {'; '.join(str(r) for r in reasons)}" if reasons else ""
        yield style.bold(f"The record ends here: the match was not over ({result.get('phase')}){why}.")


def find_games(path: Path) -> list[tuple[Path, dict[str, Any]]]:
    """The records in ``path``: a record file, a tournament's output directory or results.json, or a directory
    of record files (RecordError when there is none)."""
    if path.is_dir():
        files = sorted((path / "games").glob("*.json")) or sorted(path.glob("*.json"))
        found = []
        for f in files:
            try:
                found.append((f, load_record(f)))
            except RecordError:
                continue
        if not found:
            raise RecordError(f"{path}: no game records in it (nor in its games/)")
        return found
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecordError(f"{path}: {exc}") from None
    if isinstance(data, dict) and "tournament" in data and isinstance(data.get("games"), list):  # results.json
        return find_games(path.parent)
    return [(path, check_record(data, str(path)))]


def pick(games: Sequence[tuple[Path, dict[str, Any]]], wanted: str | None) -> tuple[Path, dict[str, Any]]:
    """The game named ``wanted`` (its game id, tournament game key or file name), or the only one."""
    if wanted is None:
        if len(games) == 1:
            return games[0]
        listing = "\n".join(f"  {r.get('game_id')}  {(r.get('meta') or {}).get('tournament_game', p.stem)}  "
                            f"{' vs '.join(r['players'])}" for p, r in games)  # fmt: skip
        raise RecordError(f"{len(games)} games here: choose one with --game ID (a game id, key or file name):\n"
                          f"{listing}")  # fmt: skip
    for p, r in games:
        if wanted in (r.get("game_id"), (r.get("meta") or {}).get("tournament_game"), p.stem, p.name):
            return p, r
    raise RecordError(f"no game {wanted!r} here (--game takes a game id, a tournament game key or a file name)")


def run(record: Mapping[str, Any], style: Style, say: Callable[[str], None],
        ask: Callable[[str], str] | None) -> None:  # fmt: skip
    """Show the record step by step: ``ask`` reads a line between steps (q quits); None shows every step."""
    say(style.bold(header(record)))
    for text in steps(record, style):
        say("")
        say(text)
        if ask is None:
            continue
        try:
            answer = ask("[Enter] next · q quit > ").strip().lower()
        except EOFError:
            answer = "q"
        if answer in ("q", "quit", "exit"):
            say("Bye!")
            return
    say("")
    say("End of the record.")
