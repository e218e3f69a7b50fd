"""Events and results on the wire: ``pb.Event`` (its typed ``payload`` and, kept for one release, its ``data``
Struct), ``pb.HandResult`` and ``pb.MatchResult`` (their typed fields and, kept for one release, their ``details``
Structs), both directions.

Outbound reads the dicts ``engine.event_for`` / the engine's results give (plus the service's "version" and
"index" of an event) and fills the Struct and the typed message from the same viewer's dict, so a typed field
never carries what ``event_for`` hid from that viewer. Inbound gives those dicts back, read from the typed
message (from the Struct only when the message has none: an older referee's). ``google.protobuf.Struct`` keeps
numbers as floats: whole numbers come back as ints, so an event dict compares equal to the engine's. No caches
here: the server passes its memoized Struct builder (``event_data``) and its memo of ``event_body``'s bytes
(``body``), and memoizes hand results around ``hand_result_to_proto``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

from google.protobuf import struct_pb2

import engine
from engine.events import EventDict, EventKind
from engine.views import MeldDict
from rummy_pb.rummy.v1 import game_pb2 as pb
from wire.clocks import clocks_from_proto, seat_clocks_to_proto
from wire.moves import move_from_proto, move_to_proto
from wire.values import MELD_KIND_NAMES, MELD_KINDS, PHASE_NAMES, PHASES, TIMEOUT_POLICIES, TIMEOUT_POLICY_NAMES

# ----------------------------------------------------------------------------------------------- outbound

_HAND_TYPED = {"hand_no", "reason", "winner", "points", "hands", "hand_values", "scores", "knocker",
               "knocker_deadwood", "defender_deadwood", "going_rummy"}  # fmt: skip


def struct(d: Mapping[str, Any]) -> struct_pb2.Struct:
    """A Struct of a JSON-able dict (what ``Struct.update`` makes of it, without its Python calls per value)."""
    s = struct_pb2.Struct()
    _fill_struct(s.fields, d)
    return s


def _fill_struct(fields: Any, d: Mapping[str, Any]) -> None:
    for k, v in d.items():
        _fill_value(fields[k], v)


def _fill_value(target: struct_pb2.Value, value: Any) -> None:
    # What Struct.update sets, for the plain types of JSON (exactly these types: True is an int, a StrEnum a str),
    # each list's strings and numbers set in the loop; anything else by Struct.update itself.
    t = type(value)
    if t is str:
        target.string_value = value
    elif t is int or t is float:
        target.number_value = value
    elif t is list:
        values = target.list_value
        values.Clear()  # (as _SetStructValue: the list is set even when empty)
        add = values.values.add
        for x in value:
            tx = type(x)
            if tx is str:
                add().string_value = x
            elif tx is int or tx is float:
                add().number_value = x
            else:
                _fill_value(add(), x)
    elif value is None:
        target.null_value = 0  # type: ignore[assignment]  # NULL_VALUE, as Struct.update sets it
    elif t is bool:
        target.bool_value = value
    elif t is dict:
        inner = target.struct_value
        inner.Clear()
        _fill_struct(inner.fields, value)
    else:  # a tuple, a subclass of str or int, a Struct, ...: as Struct.update sets it
        holder = struct_pb2.Struct()
        holder.update({"": value})
        target.CopyFrom(holder.fields[""])


def event_to_proto(
    d: EventDict, event_data: Callable[[dict[str, Any]], struct_pb2.Struct] = struct
) -> pb.Event:
    """An Event from a viewer's event dict (``engine.event_for`` plus "version" and "index")."""
    event = pb.Event()
    fill_event(event, d, event_data)
    return event


def fill_event(
    event: pb.Event, d: EventDict, event_data: Callable[[dict[str, Any]], struct_pb2.Struct] = struct,
    body: Callable[[str, dict[str, Any]], bytes | None] | None = None,
) -> None:
    """Fills ``event`` in place; ``event_data`` builds the data Struct of a non-clock event (callers that keep
    a cache pass theirs); ``body``, when given, may instead give ``event_body``'s bytes for the kind and fields
    (a cache of them), merged in at once; None: built here."""
    event.version = d["version"]
    event.index = d["index"]
    event.kind = d["kind"]
    if d["seat"] >= 0:
        event.seat = d["seat"]
    data: dict[str, Any] = dict(d)  # the kind's fields: a copy without the envelope (half a comprehension's cost)
    pop = data.pop
    pop("kind")
    pop("seat", None)
    pop("version", None)
    pop("index", None)
    if d["kind"] in _CLOCK_EVENTS:  # numbers that never recur (no memo)
        if (clocks := data.pop("clocks", None)) is not None:
            seat_clocks_to_proto(event.clocks, clocks)
        if d["kind"] == "clock_started":
            event.deadline_ms = data.pop("deadline_ms")
        fields = event.data.fields  # numbers only: set directly (Struct.update is several times slower)
        for k, v in data.items():
            fields[k].number_value = v
    elif body is not None and (encoded := body(d["kind"], data)) is not None:
        event.MergeFromString(encoded)
        return
    elif data:
        event.data.CopyFrom(event_data(data))
    else:
        event.data.SetInParent()
    fill = _PAYLOAD_FILLERS.get(d["kind"])
    if fill is not None:
        fill(event, data)


_CLOCK_EVENTS = frozenset(("clock_started", "clock_stopped"))


def event_body(kind: str, data: dict[str, Any]) -> bytes:
    """The wire bytes of an Event's data Struct and typed payload alone (no envelope), for an event of ``kind``
    with the fields ``data``: merged into an Event (``MergeFromString``) they set both, as ``fill_event`` would.
    For a cache of the events whose fields recur (a discard of "TD")."""
    event = pb.Event()
    if data:
        event.data.CopyFrom(struct(data))
    else:
        event.data.SetInParent()
    if (fill := _PAYLOAD_FILLERS.get(kind)) is not None:
        fill(event, data)
    return event.SerializeToString(deterministic=True)


# -- the typed payload of each kind, from the same viewer's dict as the Struct (``data``: the event's fields)


def table_meld_to_proto(target: pb.TableMeld, m: MeldDict) -> None:
    """Fills ``target`` from a ``TableMeld.to_dict``."""
    target.id = m["id"]
    target.owner = m["owner"]
    target.kind = MELD_KINDS.get(m["kind"], pb.MELD_KIND_UNSPECIFIED)
    target.cards.extend(m["cards"])
    for x in m["layoffs"]:
        target.layoffs.add(card=x["card"], seat=x["seat"])


def _table_melds(target: Any, melds: Iterable[MeldDict]) -> None:
    for m in melds:
        table_meld_to_proto(target.add(), m)


def _hand_started(event: pb.Event, d: Mapping[str, Any]) -> None:
    m = event.hand_started
    m.hand_no, m.dealer, m.upcard, m.stock_size = d["hand_no"], d["dealer"], d["upcard"], d["stock_size"]
    m.hand_sizes.extend(d["hand_sizes"])
    m.knock_limit, m.to_act = d["knock_limit"], d["to_act"]


def _dealt(event: pb.Event, d: Mapping[str, Any]) -> None:
    m = event.dealt
    m.count = d["count"]
    if (cards := d.get("cards")) is not None:  # the seat's own, and the referee's
        m.cards.extend(cards)


def _drew(event: pb.Event, d: Mapping[str, Any]) -> None:
    m = event.drew
    m.source = d["source"]
    if (size := d.get("stock_size")) is not None:
        m.stock_size = size
    if (card := d.get("card")) is not None:  # from the stock: the drawer's and the referee's only
        m.card = card


def _passed(event: pb.Event, d: Mapping[str, Any]) -> None:
    event.passed.card = d["card"]


def _discarded(event: pb.Event, d: Mapping[str, Any]) -> None:
    event.discarded.card = d["card"]


def _knocked(event: pb.Event, d: Mapping[str, Any]) -> None:
    m = event.knocked
    m.discard, m.gin, m.deadwood = d["discard"], d["gin"], d["deadwood"]
    _table_melds(m.melds, d["melds"])
    m.deadwood_cards.extend(d["deadwood_cards"])


def _big_gin(event: pb.Event, d: Mapping[str, Any]) -> None:
    m = event.big_gin
    m.SetInParent()
    m.deadwood = d["deadwood"]
    _table_melds(m.melds, d["melds"])


def _melded(event: pb.Event, d: Mapping[str, Any]) -> None:
    m = event.melded
    table_meld_to_proto(m.meld, d["meld"])
    m.meld_id = d["meld_id"]


def _laid_off(event: pb.Event, d: Mapping[str, Any]) -> None:
    m = event.laid_off
    m.card, m.meld_id = d["card"], d["meld_id"]


def _declared(event: pb.Event, d: Mapping[str, Any]) -> None:
    m = event.declared
    m.SetInParent()
    m.deadwood = d["deadwood"]


def _restocked(event: pb.Event, d: Mapping[str, Any]) -> None:
    m = event.restocked
    m.stock_size, m.mode = d["stock_size"], d["mode"]
    if (stock := d.get("stock")) is not None:  # the referee's only
        m.stock.SetInParent()
        m.stock.cards.extend(stock)


def _resigned(event: pb.Event, d: Mapping[str, Any]) -> None:
    m = event.resigned
    m.hand_no, m.phase = d["hand_no"], PHASES.get(d["phase"], pb.PHASE_UNSPECIFIED)


def _hand_ended(event: pb.Event, d: Mapping[str, Any]) -> None:
    event.hand_ended.result.CopyFrom(hand_result_to_proto(d))


def _match_ended(event: pb.Event, d: Mapping[str, Any]) -> None:
    event.match_ended.result.CopyFrom(match_result_to_proto(d))


def _clock_stopped(event: pb.Event, d: Mapping[str, Any]) -> None:
    m = event.clock_stopped
    m.spent_ms, m.remaining_ms, m.at_ms = d["spent_ms"], d["remaining_ms"], d["at_ms"]


def _clock_started(event: pb.Event, d: Mapping[str, Any]) -> None:
    m = event.clock_started
    m.started_ms, m.remaining_ms = d["started_ms"], d["remaining_ms"]


def _timed_out(event: pb.Event, d: Mapping[str, Any]) -> None:
    m = event.timed_out
    m.deadline_ms, m.forfeit = d["deadline_ms"], d["forfeit"]
    m.policy = TIMEOUT_POLICIES.get(d["policy"], pb.TimeoutPolicy.KIND_UNSPECIFIED)


def _auto_moved(event: pb.Event, d: Mapping[str, Any]) -> None:
    m = event.auto_moved
    m.auto_moves = d["auto_moves"]
    m.move.CopyFrom(move_to_proto(engine.move_from_dict(d["move"])))


def _game_expired(event: pb.Event, d: Mapping[str, Any]) -> None:
    event.game_expired.SetInParent()


def _game_abandoned(event: pb.Event, d: Mapping[str, Any]) -> None:
    event.game_abandoned.SetInParent()


_PAYLOAD_FILLERS: dict[str, Callable[[pb.Event, Mapping[str, Any]], None]] = {
    EventKind.HAND_STARTED: _hand_started, EventKind.DEALT: _dealt, EventKind.DREW: _drew,
    EventKind.PASSED: _passed, EventKind.DISCARDED: _discarded, EventKind.KNOCKED: _knocked,
    EventKind.BIG_GIN: _big_gin, EventKind.MELDED: _melded, EventKind.LAID_OFF: _laid_off,
    EventKind.DECLARED: _declared, EventKind.RESTOCKED: _restocked, EventKind.RESIGNED: _resigned,
    EventKind.HAND_ENDED: _hand_ended, EventKind.MATCH_ENDED: _match_ended,
    EventKind.CLOCK_STOPPED: _clock_stopped, EventKind.CLOCK_STARTED: _clock_started,
    EventKind.TIMED_OUT: _timed_out, EventKind.AUTO_MOVED: _auto_moved,
    EventKind.GAME_EXPIRED: _game_expired, EventKind.GAME_ABANDONED: _game_abandoned,
}  # fmt: skip


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
    _table_melds(result.melds, d.get("melds") or ())
    if (games := d.get("games")) is not None:  # Hollywood
        result.hollywood.games_entered.extend(d["games_entered"])
        result.hollywood.games.extend(pb.SeatPoints(points=g) for g in games)
    if d.get("resigned") is not None:
        result.resigned_seat = d["resigned"]
    if d.get("lost_on_time") is not None:
        result.lost_on_time_seat = d["lost_on_time"]
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
    if d.get("lost_on_time") is not None:
        result.lost_on_time_seat = d["lost_on_time"]
    if (detail := d.get("detail")) is not None:
        _breakdown(result.breakdown, detail)
    for game in d.get("games") or ():  # Hollywood
        _breakdown(result.hollywood_games.add(), game)
    return result


def _breakdown(target: pb.ScoreBreakdown, d: Mapping[str, Any]) -> None:
    target.SetInParent()
    for name in _BREAKDOWN_FIELDS:
        if values := d.get(name):
            getattr(target, name).extend(values)


_BREAKDOWN_FIELDS = ("points", "boxes", "box_bonus", "game_bonus", "totals", "winners")


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


def event_from_proto(event: pb.Event) -> EventDict:
    """An event as ``engine.event_for`` gives it (kind, seat (-1: none), its fields) plus version and index; a
    clock event (clock_started, clock_stopped, timed_out, auto_moved) also ``clocks`` (every seat's, as in a view
    dict) and, clock_started, ``deadline_ms``."""
    d: dict[str, Any] = {"kind": event.kind, "seat": event.seat if event.HasField("seat") else -1}
    which = event.WhichOneof("payload")
    if which is None:  # an older referee's event: its fields only in the Struct
        d.update(plain(event.data))
    else:
        _PAYLOAD_READERS[which](getattr(event, which), d)
    if event.clocks:
        d["clocks"] = clocks_from_proto(event.clocks)
    if event.HasField("deadline_ms"):
        d["deadline_ms"] = event.deadline_ms
    d["version"] = event.version
    d["index"] = event.index
    return cast(EventDict, d)  # its kind's fields, as the readers above give them


def table_meld_from_proto(m: pb.TableMeld) -> MeldDict:
    """A ``TableMeld.to_dict`` of a TableMeld."""
    return {"id": m.id, "owner": m.owner, "kind": MELD_KIND_NAMES.get(m.kind, ""), "cards": list(m.cards),
            "layoffs": [{"card": x.card, "seat": x.seat} for x in m.layoffs]}  # fmt: skip


def _read_hand_started(m: pb.Event.HandStarted, d: dict[str, Any]) -> None:
    d.update(hand_no=m.hand_no, dealer=m.dealer, upcard=m.upcard, stock_size=m.stock_size,
             hand_sizes=list(m.hand_sizes), knock_limit=m.knock_limit, to_act=m.to_act)  # fmt: skip


def _read_dealt(m: pb.Event.Dealt, d: dict[str, Any]) -> None:
    d["count"] = m.count
    if m.cards:
        d["cards"] = list(m.cards)


def _read_drew(m: pb.Event.Drew, d: dict[str, Any]) -> None:
    d["source"] = m.source
    if m.HasField("stock_size"):
        d["stock_size"] = m.stock_size
    if m.HasField("card"):
        d["card"] = m.card


def _read_card(m: pb.Event.Passed | pb.Event.Discarded, d: dict[str, Any]) -> None:
    d["card"] = m.card


def _read_knocked(m: pb.Event.Knocked, d: dict[str, Any]) -> None:
    d.update(discard=m.discard, gin=m.gin, deadwood=m.deadwood, melds=[table_meld_from_proto(x) for x in m.melds],
             deadwood_cards=list(m.deadwood_cards))  # fmt: skip


def _read_big_gin(m: pb.Event.BigGin, d: dict[str, Any]) -> None:
    d.update(deadwood=m.deadwood, melds=[table_meld_from_proto(x) for x in m.melds])


def _read_melded(m: pb.Event.Melded, d: dict[str, Any]) -> None:
    d.update(meld=table_meld_from_proto(m.meld), meld_id=m.meld_id)


def _read_laid_off(m: pb.Event.LaidOff, d: dict[str, Any]) -> None:
    d.update(card=m.card, meld_id=m.meld_id)


def _read_declared(m: pb.Event.Declared, d: dict[str, Any]) -> None:
    d["deadwood"] = m.deadwood


def _read_restocked(m: pb.Event.Restocked, d: dict[str, Any]) -> None:
    d.update(stock_size=m.stock_size, mode=m.mode)
    if m.HasField("stock"):
        d["stock"] = list(m.stock.cards)


def _read_resigned(m: pb.Event.Resigned, d: dict[str, Any]) -> None:
    d.update(hand_no=m.hand_no, phase=PHASE_NAMES.get(m.phase, ""))


def _read_hand_ended(m: pb.Event.HandEnded, d: dict[str, Any]) -> None:
    d.update(hand_result_from_proto(m.result))


def _read_match_ended(m: pb.Event.MatchEnded, d: dict[str, Any]) -> None:
    d.update(match_result_from_proto(m.result))
    if m.result.HasField("lost_on_time_seat"):  # the event has the engine's whole result (a view's has not)
        d["lost_on_time"] = m.result.lost_on_time_seat


def _read_clock_stopped(m: pb.Event.ClockStopped, d: dict[str, Any]) -> None:
    d.update(spent_ms=m.spent_ms, remaining_ms=m.remaining_ms, at_ms=m.at_ms)


def _read_clock_started(m: pb.Event.ClockStarted, d: dict[str, Any]) -> None:
    d.update(started_ms=m.started_ms, remaining_ms=m.remaining_ms)


def _read_timed_out(m: pb.Event.TimedOut, d: dict[str, Any]) -> None:
    d.update(policy=TIMEOUT_POLICY_NAMES.get(m.policy, "forfeit_match"), deadline_ms=m.deadline_ms, forfeit=m.forfeit)


def _read_auto_moved(m: pb.Event.AutoMoved, d: dict[str, Any]) -> None:
    d.update(move=engine.move_to_dict(move_from_proto(m.move)), auto_moves=m.auto_moves)


def _read_nothing(m: Any, d: dict[str, Any]) -> None:
    pass


_PAYLOAD_READERS: dict[str, Callable[[Any, dict[str, Any]], None]] = {
    "hand_started": _read_hand_started, "dealt": _read_dealt, "drew": _read_drew, "passed": _read_card,
    "discarded": _read_card, "knocked": _read_knocked, "big_gin": _read_big_gin, "melded": _read_melded,
    "laid_off": _read_laid_off, "declared": _read_declared, "restocked": _read_restocked,
    "resigned": _read_resigned, "hand_ended": _read_hand_ended, "match_ended": _read_match_ended,
    "clock_stopped": _read_clock_stopped, "clock_started": _read_clock_started, "timed_out": _read_timed_out,
    "auto_moved": _read_auto_moved, "game_expired": _read_nothing, "game_abandoned": _read_nothing,
}  # fmt: skip


def hand_result_from_proto(h: pb.HandResult) -> dict[str, Any]:
    """The engine's hand result dict of a HandResult."""
    d: dict[str, Any] = {
        "hand_no": h.hand_number, "reason": h.reason, "winner": None, "points": h.points,
        "hands": [list(c.cards) for c in h.hands], "hand_values": list(h.hand_values), "scores": list(h.scores),
    }  # fmt: skip
    for name in _HAND_OPTIONAL:
        if h.HasField(name):  # type: ignore[arg-type]  # the names are the optional fields
            d[name] = getattr(h, name)
    d["melds"] = [table_meld_from_proto(m) for m in h.melds]
    if h.HasField("hollywood"):
        d["games_entered"] = list(h.hollywood.games_entered)
        d["games"] = [list(g.points) for g in h.hollywood.games]
    if h.HasField("resigned_seat"):
        d["resigned"] = h.resigned_seat
    if h.HasField("lost_on_time_seat"):
        d["lost_on_time"] = h.lost_on_time_seat
    for k, v in plain(h.details).items():  # an older referee's: these fields only in the Struct
        if k not in d or (k == "melds" and not h.melds):
            d[k] = v
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
    d: dict[str, Any] = {"totals": list(r.totals), "winners": list(r.winners)}
    if r.hollywood_games:
        d["games"] = [_breakdown_from_proto(g) for g in r.hollywood_games]
    if r.HasField("breakdown"):
        d["detail"] = _breakdown_from_proto(r.breakdown)
    for k, v in plain(r.details).items():  # an older referee's: these fields only in the Struct
        d.setdefault(k, v)
    d["ended"] = MATCH_END_NAMES.get(r.ended, "completed")
    d["seat_ends"] = [SEAT_END_NAMES.get(e, "finished") for e in r.seat_ends] or ["finished"] * len(r.totals)
    if r.HasField("resigned_seat"):
        d["resigned"] = r.resigned_seat
    return d


def _breakdown_from_proto(b: pb.ScoreBreakdown) -> dict[str, Any]:
    # a field is in the engine's breakdown when it has a value per seat (a resigned match's: points and boxes)
    return {name: list(values) for name in _BREAKDOWN_FIELDS if (values := getattr(b, name))}
