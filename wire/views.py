"""Views on the wire: ``pb.GameView`` <-> the view dict (``engine.view``'s dict plus the service's ``game_id``,
``version``, ``role``, ``seats`` and, for the seat to act, ``legal_moves`` as engine moves; with a time control
also ``clocks`` and ``deadline_ms``).

``view_to_proto`` fills a message in place with the fields the view has (every field given to a upb constructor
costs, even an empty list); the server passes its caches for the parts that recur (hand results, legal moves, and
the seats, legal moves and last hand in wire format: ``seats_bytes``, ``legal_move_bytes``, ``last_hand_bytes``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NotRequired, TypedDict

import engine
from engine.views import MeldDict, ViewDict
from rummy_pb.rummy.v1 import game_pb2 as pb
from wire.clocks import clocks_from_proto, seat_clocks_to_proto
from wire.events import hand_result_from_proto, hand_result_to_proto, match_result_from_proto, match_result_to_proto
from wire.moves import move_from_proto, move_to_proto
from wire.values import (
    GAME_NAMES,
    GAMES,
    MELD_KIND_NAMES,
    MELD_KINDS,
    PHASE_NAMES,
    PHASES,
    ROLE_NAMES,
    ROLES,
    SEAT_KIND_NAMES,
    SEAT_KINDS,
)


class SeatDict(TypedDict):
    """A seat as views and settings show it: display name, label ("human" / "bot"), whether it is open (for
    JoinGame); in settings also its house bot ("": none), when the game has one."""

    name: str
    kind: str
    open: bool
    bot: NotRequired[str]


class GameViewDict(ViewDict):
    """A view as the service answers it (GameView): ``engine.view``'s dict (``ViewDict``, with the clocks of a
    game with a time control) plus the game's id and version, the viewer's role, the seats and, for the seat to
    act, its legal moves as engine moves."""

    game_id: str
    version: int
    role: str  # engine.Role
    seats: Sequence[SeatDict]
    legal_moves: NotRequired[Sequence[engine.Move]]


def legal_move_bytes(move: engine.Move) -> bytes:
    """One element of GameView.legal_moves in wire format. The encodings of the elements of a repeated field, one
    after the other, are the encoding of the field, so a view's legal moves are parsed in at once
    (MergeFromString) from pieces a caller may make once per distinct move."""
    return pb.GameView(legal_moves=[move_to_proto(move)]).SerializeToString()


def seats_bytes(v: GameViewDict) -> bytes:
    """GameView.seats of a view dict in wire format (what ``fill_view`` fills in), merged in at once
    (MergeFromString) from a caller's cache of it: the seats change only with hand sizes, known cards, scores,
    boxes and names."""
    view = pb.GameView()
    _fill_seats(view.seats, v)
    return view.SerializeToString()


def last_hand_bytes(result: pb.HandResult) -> bytes:
    """GameView.last_hand in wire format, for a caller's cache of it (merged in as ``seats_bytes``)."""
    view = pb.GameView()
    view.last_hand.CopyFrom(result)
    return view.SerializeToString()


def _fill_seats(seats: Any, v: GameViewDict) -> None:
    # each SeatView made in place (``add``): a message built apart would be copied into the view; its fields set
    # one by one (upb's keyword arguments cost more than twice as much)
    sizes, known, scores, boxes = v["hand_sizes"], v["known_cards"], v["scores"], v["boxes"]
    add = seats.add
    for i, info in enumerate(v["seats"]):
        seat = add()
        seat.seat = i
        seat.display_name = info["name"]
        seat.kind = SEAT_KINDS.get(info["kind"], pb.SEAT_KIND_HUMAN)
        seat.hand_size = sizes[i]
        seat.score = scores[i]
        seat.boxes = boxes[i]
        if info["open"]:
            seat.open = True
        if known[i]:
            seat.known_cards.extend(known[i])
    if "games" in v:  # Hollywood
        for i, seat in enumerate(seats):
            seat.hollywood_scores.extend(g[i] for g in v["games"])
            seat.hollywood_boxes.extend(g[i] for g in v["game_boxes"])


def table_meld_to_proto(m: MeldDict) -> pb.TableMeld:
    """A table meld of a view dict."""
    return pb.TableMeld(
        id=m["id"], owner=m["owner"], kind=MELD_KINDS.get(m["kind"], pb.MELD_KIND_UNSPECIFIED), cards=m["cards"],
        layoffs=[pb.LaidOff(card=x["card"], seat=x["seat"]) for x in m["layoffs"]],
    )  # fmt: skip


def table_meld_from_proto(m: pb.TableMeld) -> MeldDict:
    """A view dict's table meld: cards, the whole meld now (laid-off cards included); layoffs, which of them were
    laid off and by whom."""
    return {"id": m.id, "owner": m.owner, "kind": MELD_KIND_NAMES.get(m.kind, ""), "cards": list(m.cards),
            "layoffs": [{"card": x.card, "seat": x.seat} for x in m.layoffs]}  # fmt: skip


def view_to_proto(v: GameViewDict) -> pb.GameView:
    """A GameView of a view dict."""
    view = pb.GameView()
    fill_view(view, v)
    return view


def fill_view(
    view: pb.GameView,
    v: GameViewDict,
    hand_result: Callable[[Mapping[str, Any]], pb.HandResult] = hand_result_to_proto,
    move_bytes: Callable[[engine.Move], bytes] = legal_move_bytes,
    *,
    pieces: Callable[[GameViewDict], bytes | None] | None = None,
) -> None:
    """Fills ``view`` in place (a response's own view: no copy of a finished GameView into it). ``hand_result``
    and ``move_bytes`` encode the last hand's result and each legal move (a caller's cached ones). ``pieces``,
    when given, may instead give the seats, the legal moves and the last hand at once in wire format (a caller's
    cache of ``seats_bytes``, ``legal_move_bytes`` and ``last_hand_bytes``, joined), merged in at once; None:
    built here."""
    encoded = pieces(v) if pieces is not None else None
    view.game_id = v["game_id"]
    view.version = v["version"]
    view.viewer_role = ROLES[v["role"]]
    view.game = GAMES[v["game"]]
    view.phase = PHASES[v["phase"]]
    view.dealer = v["dealer"]
    view.hand_number = v["hand_no"]
    if encoded is not None:
        view.MergeFromString(encoded)
    else:
        _fill_seats(view.seats, v)
        if legal := v.get("legal_moves"):
            view.MergeFromString(b"".join([move_bytes(m) for m in legal]))
        if (last := v.get("last_hand")) is not None:
            view.last_hand.CopyFrom(hand_result(last))
    view.discard_pile.extend(v["discard_pile"])
    view.stock_size = v["stock_size"]
    view.turns = v["turns"]
    view.hands_played = v["hands_played"]
    if (hand := v.get("hand")) is not None:
        view.hand.extend(hand)
    if v["melds"]:
        view.melds.extend(table_meld_to_proto(m) for m in v["melds"])
    if (ended := v.get("games_ended")) is not None:
        view.hollywood_games_ended.extend(ended)
    if (hands := v.get("hands")) is not None:
        view.hands.extend(pb.Cards(cards=h) for h in hands)
    if (stock := v.get("stock")) is not None:
        view.stock.extend(stock)
    if v["role"] == "seat":
        view.viewer_seat = v["viewer"]
    if v["to_act"] >= 0:
        view.to_act = v["to_act"]
    if (taken := v.get("taken_card")) is not None:
        view.taken_card = taken
    if (upcard := v.get("upcard")) is not None:
        view.upcard = upcard
    if (limit := v.get("knock_limit")) is not None:
        view.knock_limit = limit
    if (k := v.get("knock")) is not None:
        knock = view.knock
        knock.SetInParent()
        knock.knocker = k["knocker"]
        knock.deadwood = k["deadwood"]
        knock.deadwood_cards.extend(k["deadwood_cards"])
    if (result := v.get("result")) is not None:
        view.result.CopyFrom(match_result_to_proto(result))
    if (clocks := v.get("clocks")) is not None:
        seat_clocks_to_proto(view.clocks, clocks)
        if (deadline := v.get("deadline_ms")) is not None:
            view.deadline_ms = deadline


def view_from_proto(v: pb.GameView, *, legal: bool = True) -> GameViewDict:
    """The view dict of a GameView: what ``engine.view`` gives for this viewer, plus ``game_id``, ``version``,
    ``role`` and ``seats`` (name, kind, open); ``legal_moves`` when the message has some and ``legal``."""
    role = ROLE_NAMES.get(v.viewer_role, "spectator")
    viewer = v.viewer_seat if v.HasField("viewer_seat") else (engine.REFEREE if role == "referee" else engine.SPECTATOR)
    game = GAME_NAMES.get(v.game, "gin")
    d: GameViewDict = {  # type: ignore[typeddict-item]  # the service's keys last, below (as the service orders them)
        "game": game, "viewer": viewer, "phase": PHASE_NAMES.get(v.phase, "match_over"),
        "to_act": v.to_act if v.HasField("to_act") else -1, "dealer": v.dealer, "hand_no": v.hand_number,
        "hand_sizes": [s.hand_size for s in v.seats], "known_cards": [list(s.known_cards) for s in v.seats],
        "melds": [table_meld_from_proto(m) for m in v.melds],
        "discard_pile": list(v.discard_pile), "stock_size": v.stock_size,
        "taken_card": v.taken_card if v.HasField("taken_card") else None, "turns": v.turns,
        "scores": [s.score for s in v.seats], "boxes": [s.boxes for s in v.seats], "hands_played": v.hands_played,
        "last_hand": hand_result_from_proto(v.last_hand) if v.HasField("last_hand") else None,
        "result": match_result_from_proto(v.result) if v.HasField("result") else None,
    }  # fmt: skip
    if game == "gin":
        d["upcard"] = v.upcard if v.HasField("upcard") else None
        d["knock_limit"] = v.knock_limit if v.HasField("knock_limit") else None
        d["knock"] = (
            {"knocker": v.knock.knocker, "deadwood": v.knock.deadwood, "deadwood_cards": list(v.knock.deadwood_cards)}
            if v.HasField("knock") else None
        )  # fmt: skip
        if v.hollywood_games_ended:
            d["games"] = [list(g) for g in zip(*(s.hollywood_scores for s in v.seats), strict=True)]
            d["game_boxes"] = [list(g) for g in zip(*(s.hollywood_boxes for s in v.seats), strict=True)]
            d["games_ended"] = list(v.hollywood_games_ended)
    if role == "referee":
        d["hands"] = [list(h.cards) for h in v.hands]
        d["stock"] = list(v.stock)
    elif role == "seat":
        d["hand"] = list(v.hand)
    if v.clocks:  # a game with a time control
        d["clocks"] = clocks_from_proto(v.clocks)
        d["deadline_ms"] = v.deadline_ms if v.HasField("deadline_ms") else None
    d["game_id"], d["version"], d["role"] = v.game_id, v.version, role
    d["seats"] = [{"name": s.display_name, "kind": SEAT_KIND_NAMES.get(s.kind, "human"), "open": s.open}
                  for s in v.seats]  # fmt: skip
    if legal and v.legal_moves:
        d["legal_moves"] = legal_from_proto(v)
    return d


def typed_view_from_proto(v: pb.GameView, rules: Mapping[str, Any] | None = None) -> engine.View:
    """The typed view (``engine.View``, the value bots receive) of a GameView and the game's options (GetGame's
    settings; without them only ``game`` and ``players`` are known)."""
    d = view_from_proto(v, legal=False)
    return engine.View.from_engine(d, rules if rules is not None else {"game": d["game"], "players": len(v.seats)})


def legal_from_proto(v: pb.GameView) -> tuple[engine.Move, ...]:
    """The viewer's legal moves as engine moves (empty unless it is the viewer's turn)."""
    return tuple(move_from_proto(m) for m in v.legal_moves)
