"""Bounded memo tables: the referee's in-process caches of values made once and shared (parsed meta and configs,
token hashes, move dicts, protobuf pieces), each bounded by a number of entries AND by an estimate of the bytes
its entries hold, so that memory stays flat whatever the clients send.

Every value a table holds is immutable (bytes, str, tuples, frozen records, read-only mappings, or messages its
callers only copy from): a value is shared by every caller that asks for the same key, so one that a caller could
change would change the answer of another game. ``freeze`` makes parsed JSON so (dicts become read-only
mappings, lists tuples).

A table that would pass either bound is emptied at once and starts again (cheaper than LRU order on every hit, and
a hit is one ``dict.get``). Sizes are settings: ``configure`` (``serve --memo-entries / --memo-mib``) applies to
every table, each keeping its own relative share.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from server.settings import DEFAULTS

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

MIB = 1024 * 1024
#: Default bounds of one table (scaled per table by its ``share``).
DEFAULT_ENTRIES = DEFAULTS.caches.memo_entries
DEFAULT_BYTES = int(DEFAULTS.caches.memo_mib * MIB)

_TABLES: list[Memo[object, object]] = []


class Memo(Generic[K, V]):
    """A memo table: ``get(key)``, ``put(key, value, nbytes)``; at most ``share`` times the configured entries
    and bytes (``nbytes``: an estimate of what the entry holds, key and value)."""

    __slots__ = ("_bytes", "_items", "clears", "max_bytes", "max_entries", "name", "share")

    def __init__(self, name: str, share: float = 1.0) -> None:
        self.name = name
        self.share = share
        self.max_entries = max(1, int(DEFAULT_ENTRIES * share))
        self.max_bytes = max(1, int(DEFAULT_BYTES * share))
        self._items: dict[K, V] = {}
        self._bytes = 0
        self.clears = 0
        _TABLES.append(self)  # type: ignore[arg-type]

    def get(self, key: K) -> V | None:
        """The value remembered for ``key``, None if none."""
        return self._items.get(key)

    def put(self, key: K, value: V, nbytes: int) -> V:
        """Remember ``value`` for ``key`` (the table is emptied first if it would pass a bound); returns it."""
        if len(self._items) >= self.max_entries or self._bytes + nbytes > self.max_bytes:
            self.clear()
        if nbytes <= self.max_bytes:  # a value larger than the whole table is made again when asked for
            self._items[key] = value
            self._bytes += nbytes
        return value

    def clear(self) -> None:
        """Forget everything."""
        self._items = {}
        self._bytes = 0
        self.clears += 1

    def __len__(self) -> int:
        return len(self._items)

    @property
    def nbytes(self) -> int:
        """The estimated bytes held now."""
        return self._bytes


def freeze(value: Any) -> Any:
    """``value`` (parsed JSON) made immutable, all the way down: dicts become read-only mappings
    (``MappingProxyType``: ``[]``, ``get``, ``in`` and ``{**m}`` as before), lists tuples; other values as they
    are (str, numbers, bool, None are immutable already)."""
    if isinstance(value, dict):
        return MappingProxyType({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    return value


def frozen_mapping(value: Mapping[str, Any]) -> Mapping[str, Any]:
    """``freeze`` of a JSON object, typed as the read-only mapping it is."""
    made: Mapping[str, Any] = freeze(dict(value))
    return made


def configure(entries: int = DEFAULT_ENTRIES, mib: float = DEFAULT_BYTES / MIB) -> None:
    """Bound every memo table: ``entries`` and ``mib`` MiB each (times its share); the tables are emptied."""
    if entries < 1 or mib <= 0:
        raise ValueError(f"memo bounds must be positive, not {entries} entries and {mib} MiB")
    for table in _TABLES:
        table.max_entries = max(1, int(entries * table.share))
        table.max_bytes = max(1, int(mib * MIB * table.share))
        table.clear()


def tables() -> list[Memo[object, object]]:
    """Every memo table of the process (for tests and diagnostics)."""
    return list(_TABLES)
