"""The game log's entry format: one Redis List element per version of a game (the deal is version 0).

An entry holds what happened at one version with every card: the version, the seat that moved (-1 for the deal),
the move (``engine.move_to_dict`` JSON, ``null`` for the deal) and the events (``engine.Event.to_dict`` JSON), as
the JSON array ``[version, seat, move, [event, ...]]``, compressed (raw deflate, 4 KiB window) with a preset
dictionary of typical entries (``gamelog_dict_v1.txt``): a move's entry takes 20 to 40 bytes instead of 120 to
several hundred. The first byte says the format, so that a later dictionary can be a new format; the dictionary
of a format never changes (``tools/gamelog_dict.py`` made it). A game with a time control has the clock after the
commit appended, uncompressed, after the deflate stream (``|...``, written by the commit script with Redis's
clock: server/clocks.py); it decodes as the version's last events, clock_stopped and clock_started.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import orjson

from server.clocks import merged, tail_events

FORMAT_V1 = b"\x01"
_WBITS = -12  # raw deflate, 4 KiB window: the dictionary fits it, and a compressor is cheap to copy
_MEM_LEVEL = 3
_LEVEL = 6


@functools.cache
def _dictionary() -> bytes:
    return resources.files("server").joinpath("gamelog_dict_v1.txt").read_bytes()


@functools.cache
def _compressor() -> Any:
    # primed once with the dictionary; every entry compresses with a copy (cheaper than setting the dictionary)
    return zlib.compressobj(_LEVEL, zlib.DEFLATED, _WBITS, _MEM_LEVEL, zlib.Z_DEFAULT_STRATEGY, _dictionary())


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One decoded entry: the version, the seat that moved (-1: the deal), the move dict (None: the deal) and the
    events as ``engine.Event.to_dict`` dicts."""

    version: int
    seat: int
    move: dict[str, Any] | None
    events: list[dict[str, Any]]


def encode_entry(version: int, seat: int, move_json: bytes, event_payloads: Sequence[bytes]) -> bytes:
    """The stored entry of one version: ``move_json`` and each of ``event_payloads`` are JSON texts."""
    text = b"[%d,%d,%s,[%s]]" % (version, seat, move_json or b"null", b",".join(event_payloads))
    compressor = _compressor().copy()
    packed: bytes = compressor.compress(text) + compressor.flush()
    return FORMAT_V1 + packed


def decode_entry(raw: bytes) -> LogEntry:
    """Inverse of ``encode_entry``; raises ValueError for bytes that are no entry."""
    if raw[:1] != FORMAT_V1:
        raise ValueError(f"unknown game log entry format {raw[:1]!r}")
    try:
        inflater = zlib.decompressobj(_WBITS, zdict=_dictionary())
        text = inflater.decompress(raw[1:])
        version, seat, move, events = orjson.loads(text)
        events = list(events)
        if inflater.unused_data:
            events = merged(events, tail_events(inflater.unused_data))
    except (zlib.error, orjson.JSONDecodeError, TypeError, ValueError, IndexError) as exc:
        raise ValueError(f"a game log entry does not decode: {exc}") from exc
    return LogEntry(int(version), int(seat), move, events)


def event_payload(event: dict[str, Any]) -> bytes:
    """The JSON text of one decoded event (the same bytes as the ``orjson.dumps`` it was stored from)."""
    return orjson.dumps(event)
