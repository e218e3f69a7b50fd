"""The journal: the tournament's configuration, then one JSON line per finished game, each appended and fsynced
as the game ends, so that an interrupted tournament can resume where it stopped (``--resume``).

A crash can leave a torn last line; reading the journal drops it (and cuts it off the file before anything more is
appended). The results are always computed from the journal, in schedule order, so a resumed tournament reports
exactly what an uninterrupted one would.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

MAGIC = "rummy-tournament journal"
FORMAT = 1


class JournalError(RuntimeError):
    """A journal that cannot be used (not a journal, another format, damaged before its last line)."""


@dataclass(frozen=True, slots=True)
class GameRecord:
    """The outcome of one game of the schedule.

    ``totals``/``winners``: the match result (empty winners when the game was abandoned by a forfeit);
    ``forfeits``: the seats that forfeited, with the ``reasons``; ``hands``: hands played; ``game_id``: the
    referee's id of the game (for GetReplay); ``seconds``: how long it took; ``ends``: how the match ended for
    each seat, as the referee's result says (``finished``, ``lost_on_time``, ``resigned``,
    ``forfeited_by_organizer``), or ``forfeit`` for a seat that forfeited (left out: ``forfeit`` for the forfeits,
    ``finished`` for the others, as in journals from before)."""

    key: str
    deal: int
    seats: tuple[str, ...]
    totals: tuple[int, ...]
    winners: tuple[int, ...]
    forfeits: tuple[int, ...] = ()
    reasons: tuple[str, ...] = ()
    hands: int = 0
    game_id: str = ""
    seconds: float = 0.0
    ends: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.ends:  # a record from before: the forfeits forfeited, the others finished
            ends = tuple("forfeit" if i in self.forfeits else "finished" for i in range(len(self.seats)))
            object.__setattr__(self, "ends", ends)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "key": self.key, "deal": self.deal, "seats": list(self.seats), "totals": list(self.totals),
            "winners": list(self.winners), "forfeits": list(self.forfeits), "reasons": list(self.reasons),
            "hands": self.hands, "game_id": self.game_id, "seconds": round(self.seconds, 3),
            "ends": list(self.ends),
        }  # fmt: skip

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> GameRecord:
        """Read back ``to_dict``."""
        return GameRecord(
            key=str(d["key"]), deal=int(d["deal"]), seats=tuple(str(s) for s in d["seats"]),
            totals=tuple(int(t) for t in d["totals"]), winners=tuple(int(w) for w in d["winners"]),
            forfeits=tuple(int(f) for f in d.get("forfeits", ())), reasons=tuple(str(r) for r in d.get("reasons", ())),
            hands=int(d.get("hands", 0)), game_id=str(d.get("game_id", "")), seconds=float(d.get("seconds", 0.0)),
            ends=tuple(str(e) for e in d.get("ends", ())),
        )  # fmt: skip


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class Journal:
    """An open journal, appended to by one thread."""

    def __init__(self, path: Path, file: IO[str]) -> None:
        self.path = path
        self._file = file

    @staticmethod
    def create(path: Path, config: Mapping[str, Any]) -> Journal:
        """A new journal holding ``config`` (refuses to replace an existing file)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        file = open(path, "x", encoding="utf-8")  # noqa: SIM115 - the Journal owns it until close()
        journal = Journal(path, file)
        journal._write({"journal": MAGIC, "format": FORMAT, "config": dict(config)})
        _fsync_dir(path.parent)
        return journal

    @staticmethod
    def read(path: Path) -> tuple[dict[str, Any] | None, list[GameRecord]]:
        """The configuration and the game records of a journal (a torn last line is cut off the file).
        A journal whose header never made it to the disk reads as (None, [])."""
        data = path.read_bytes()
        lines = data.split(b"\n")
        good = 0  # bytes of complete, readable lines
        parsed: list[dict[str, Any]] = []
        for i, line in enumerate(lines[:-1]):  # the part after the last newline is never complete
            try:
                parsed.append(json.loads(line))
            except ValueError:
                if i == len(lines) - 2:  # the last line: torn by a crash mid-write
                    break
                raise JournalError(f"{path}: line {i + 1} is damaged") from None
            good += len(line) + 1
        if good < len(data):
            with open(path, "r+b") as f:
                f.truncate(good)
                f.flush()
                os.fsync(f.fileno())
        if not parsed:
            return None, []
        header = parsed[0]
        if header.get("journal") != MAGIC:
            raise JournalError(f"{path} is not a tournament journal")
        if header.get("format") != FORMAT:
            raise JournalError(f"{path}: journal format {header.get('format')!r}, this version reads {FORMAT}")
        try:
            records = [GameRecord.from_dict(d) for d in parsed[1:]]
        except (KeyError, TypeError, ValueError) as exc:
            raise JournalError(f"{path}: a game record is damaged ({exc!r})") from None
        return dict(header["config"]), records

    @staticmethod
    def reopen(path: Path) -> Journal:
        """Open an existing journal (already ``read``) to append to it."""
        return Journal(path, open(path, "a", encoding="utf-8"))  # owned until close()

    def append(self, record: GameRecord) -> None:
        """Write one finished game, durably (flushed and fsynced before returning)."""
        self._write(record.to_dict())

    def _write(self, obj: Mapping[str, Any]) -> None:
        self._file.write(json.dumps(obj, separators=(",", ":")) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        """Close the file."""
        self._file.close()
