"""server.codec's caches never change what is encoded."""

from __future__ import annotations

from server import codec
from server.model import MoveOutcome


def _event(**data: object) -> dict[str, object]:
    return {"kind": "test", "seat": 0, "version": 1, "index": 1, **data}


def test_event_data_that_compares_equal_but_differs_in_type_is_encoded_apart() -> None:
    # True == 1 == 1.0 in Python: a cache keyed by the values alone would hand True's Struct to 1
    kinds = [(True, "bool_value"), (1, "number_value"), (1.0, "number_value"), ("1", "string_value"),
             (None, "null_value"), (False, "bool_value"), (0, "number_value")]  # fmt: skip
    for value, kind in kinds:
        assert codec.event_to_proto(_event(x=value)).data.fields["x"].WhichOneof("kind") == kind, value


def test_event_data_with_lists_is_encoded_every_time() -> None:
    first = codec.event_to_proto(_event(cards=["TD", "JD"]))
    second = codec.event_to_proto(_event(cards=["QD"]))
    assert list(first.data["cards"]) == ["TD", "JD"] and list(second.data["cards"]) == ["QD"]


def test_a_hand_result_is_encoded_from_its_own_dict() -> None:
    base = {"hand_no": 0, "reason": "knock", "points": 10, "hands": [["AS"], ["2S"]], "hand_values": [1, 2],
            "scores": [10, 0], "winner": 0}  # fmt: skip
    first = codec._hand_result(base)
    other = codec._hand_result({**base, "points": 20})
    assert (first.points, other.points) == (10, 20)
    assert codec._hand_result(base) is first  # the same dict again: encoded once


def test_a_knock_of_all_zero_values_is_still_present() -> None:
    # the view is filled in place: a knock by seat 0 with no deadwood sets no non-default field of KnockInfo
    view = {
        "game_id": "g", "version": 1, "role": "spectator", "game": "gin", "phase": "layoff", "dealer": 0,
        "hand_no": 0, "seats": [], "hand_sizes": [], "known_cards": [], "scores": [], "boxes": [], "melds": [],
        "discard_pile": [], "stock_size": 0, "turns": 0, "hands_played": 0, "viewer": -1, "to_act": 1,
        "knock": {"knocker": 0, "deadwood": 0, "deadwood_cards": []},
    }  # fmt: skip
    assert codec.view_to_proto(view).HasField("knock")
    response = codec.move_response_to_proto(MoveOutcome(1, [], view))
    assert response.view.HasField("knock") and response.view == codec.view_to_proto(view)
