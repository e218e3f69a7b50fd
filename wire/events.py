"""Events and results on the wire: ``pb.Event`` (its ``data`` Struct), ``pb.HandResult`` and ``pb.MatchResult``
(their ``details`` Structs), both directions.

Outbound reads the dicts ``engine.event_for`` / the engine's results give (plus the service's "version" and
"index" of an event); inbound gives those dicts back. ``google.protobuf.Struct`` keeps numbers as floats: whole
numbers come back as ints, so an event dict compares equal to the engine's. No caches here: the server passes
its memoized Struct builder (``event_data``) and memoizes hand results around ``hand_result_to_proto``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from google.protobuf import struct_pb2

from rummy_pb.rummy.v1 import game_pb2 as pb
from wire.clocks import clocks_from_proto, seat_clocks_to_proto

# ----------------------------------------------------------------------------------------------- outbound

_HAND_TYPED = {"hand_no", "reason", "winner", "points", "hands", "hand_values", "scores", "knocker",
               "knocker_deadwood", "defender_deadwood", "going_rummy"}  # fmt: skip


def struct(d: Mapping[str, Any]) -> struct_pb2.Struct:
    """A Struct of a JSON-able dict."""
    s = struct_pb2.Struct()
    s.update(d)
    return s


def event_to_proto(
    d: Mapping[str, Any], event_data: Callable[[dict[str, Any]], struct_pb2.Struct] = struct
) -> pb.Event:
    """An Event from a viewer's event dict (``engine.event_for`` plus "version" and "index")."""
    event = pb.Event()
    fill_event(event, d, event_data)
    return event


def fill_event(
    event: pb.Event, d: Mapping[str, Any], event_data: Callable[[dict[str, Any]], struct_pb2.Struct] = struct
) -> None:
    """Fills ``event`` in place; ``event_data`` builds the data Struct of a non-clock event (callers that keep
    a cache pass theirs)."""
    event.version = d["version"]
    event.index = d["index"]
    event.kind = d["kind"]
    if d["seat"] >= 0:
        event.seat = d["seat"]
    data = {k: v for k, v in d.items() if k not in _EVENT_ENVELOPE}
    if d["kind"] in _CLOCK_EVENTS:  # numbers that never recur (no memo)
        if (clocks := data.pop("clocks", None)) is not None:
            seat_clocks_to_proto(event.clocks, clocks)
        if d["kind"] == "clock_started":
            event.deadline_ms = data.pop("deadline_ms")
        fields = event.data.fields  # numbers only: set directly (Struct.update is several times slower)
        for k, v in data.items():
            fields[k].number_value = v
        return
    if data:
        event.data.CopyFrom(event_data(data))
    else:
        event.data.SetInParent()


_EVENT_ENVELOPE = frozenset(("kind", "seat", "version", "index"))
_CLOCK_EVENTS = frozenset(("clock_started", "clock_stopped"))


def hand_result_to_proto(d: Mapping[str, Any]) -> pb.HandResult:
    """A HandResult from the engine's hand result dict."""
    result = pb.HandResult(
        hand_number=d["hand_no"], reason=d["reason"], points=d["points"],
        hands=[pb.Cards(cards=h) for h in d["hands"]], hand_values=d["hand_values"], scores=d["scores"],
        details=struct({k: v for k, v in d.items() if k not in _HAND_TYPED}),
    )  # fmt: skip
    for name in ("winner", "knocker", "knocker_deadwood", "defender_deadwood", "going_rummy"):
        if d.get(name) is not None:
            setattr(result, name, d[name])
    return result


MATCH_ENDS = {"completed": pb.MATCH_END_COMPLETED, "resigned": pb.MATCH_END_RESIGNED, "time": pb.MATCH_END_TIME}
SEAT_ENDS = {
    "finished": pb.SEAT_END_FINISHED, "resigned": pb.SEAT_END_RESIGNED, "lost_on_time": pb.SEAT_END_LOST_ON_TIME,
    "forfeited_by_organizer": pb.SEAT_END_FORFEITED_BY_ORGANIZER,
}  # fmt: skip
_RESULT_TYPED = ("totals", "winners", "ended", "seat_ends", "resigned", "lost_on_time")


def match_result_to_proto(d: Mapping[str, Any]) -> pb.MatchResult:
    """A MatchResult from the engine's match result dict."""
    # a result stored before results named their ending was a match played to its end
    ends = d.get("seat_ends") or ["finished"] * len(d["totals"])
    result = pb.MatchResult(
        totals=d["totals"], winners=d["winners"],
        details=struct({k: v for k, v in d.items() if k not in _RESULT_TYPED}),
        ended=MATCH_ENDS.get(d.get("ended", "completed"), pb.MATCH_END_UNSPECIFIED),
        seat_ends=[SEAT_ENDS.get(e, pb.SEAT_END_UNSPECIFIED) for e in ends],
    )  # fmt: skip
    if d.get("resigned") is not None:
        result.resigned_seat = d["resigned"]
    return result


# ------------------------------------------------------------------------------------------------ inbound

_HAND_OPTIONAL = ("winner", "knocker", "knocker_deadwood", "defender_deadwood", "going_rummy")


def _value(v: struct_pb2.Value) -> Any:
    kind = v.WhichOneof("kind")
    if kind == "string_value":
        return v.string_value
    if kind == "number_value":
        n = v.number_value
        return int(n) if n.is_integer() else n
    if kind == "struct_value":
        return {k: _value(x) for k, x in v.struct_value.fields.items()}
    if kind == "list_value":
        return [_value(x) for x in v.list_value.values]
    if kind == "bool_value":
        return v.bool_value
    return None


def plain(value: Any) -> Any:
    """A Struct/ListValue (or what ``MessageToDict`` made of one) as plain Python: whole floats become ints."""
    if isinstance(value, struct_pb2.Struct):  # read the fields directly: twice as fast as Struct.items()
        return {k: _value(v) for k, v in value.fields.items()}
    if isinstance(value, struct_pb2.ListValue):
        return [_value(v) for v in value.values]
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def event_from_proto(event: pb.Event) -> dict[str, Any]:
    """An event as ``engine.event_for`` gives it (kind, seat (-1: none), its fields) plus version and index; a
    clock event (clock_started, clock_stopped, timed_out, auto_moved) also ``clocks`` (every seat's, as in a view
    dict) and, clock_started, ``deadline_ms``."""
    d: dict[str, Any] = {"kind": event.kind, "seat": event.seat if event.HasField("seat") else -1}
    d.update(plain(event.data))
    if event.clocks:
        d["clocks"] = clocks_from_proto(event.clocks)
    if event.HasField("deadline_ms"):
        d["deadline_ms"] = event.deadline_ms
    d["version"] = event.version
    d["index"] = event.index
    return d


def hand_result_from_proto(h: pb.HandResult) -> dict[str, Any]:
    """The engine's hand result dict of a HandResult."""
    d: dict[str, Any] = {
        "hand_no": h.hand_number, "reason": h.reason, "winner": None, "points": h.points,
        "hands": [list(c.cards) for c in h.hands], "hand_values": list(h.hand_values), "scores": list(h.scores),
    }  # fmt: skip
    for name in _HAND_OPTIONAL:
        if h.HasField(name):  # type: ignore[arg-type]  # the names are the optional fields
            d[name] = getattr(h, name)
    d.update(plain(h.details))
    return d


MATCH_END_NAMES = {pb.MATCH_END_COMPLETED: "completed", pb.MATCH_END_RESIGNED: "resigned",
                   pb.MATCH_END_TIME: "time", pb.MATCH_END_ORGANIZER: "organizer"}  # fmt: skip
SEAT_END_NAMES = {
    pb.SEAT_END_FINISHED: "finished", pb.SEAT_END_RESIGNED: "resigned", pb.SEAT_END_LOST_ON_TIME: "lost_on_time",
    pb.SEAT_END_FORFEITED_BY_ORGANIZER: "forfeited_by_organizer",
}  # fmt: skip


def match_result_from_proto(r: pb.MatchResult) -> dict[str, Any]:
    """As the engine's result: totals, winners, ``ended`` (completed, resigned, ...), ``seat_ends`` (per seat:
    finished, resigned, lost_on_time, forfeited_by_organizer), ``resigned`` (the seat, when one resigned)."""
    d: dict[str, Any] = {"totals": list(r.totals), "winners": list(r.winners), **plain(r.details)}
    d["ended"] = MATCH_END_NAMES.get(r.ended, "completed")
    d["seat_ends"] = [SEAT_END_NAMES.get(e, "finished") for e in r.seat_ends] or ["finished"] * len(r.totals)
    if r.HasField("resigned_seat"):
        d["resigned"] = r.resigned_seat
    return d
