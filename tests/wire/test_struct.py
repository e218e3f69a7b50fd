"""``wire.events.struct`` (the data and details Structs of events and results) makes exactly the Struct that
``google.protobuf.Struct.update`` makes of the same value, whatever JSON-like value it is given."""

from __future__ import annotations

from typing import Any

from google.protobuf import struct_pb2
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.events import EventKind
from wire import events

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False)
    | st.text(max_size=4)
    | st.sampled_from(list(EventKind))  # a str subclass, as event kinds are
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=5) | st.tuples(inner, inner) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)


def _reference(d: dict[str, Any]) -> struct_pb2.Struct:
    s = struct_pb2.Struct()
    s.update(d)
    return s


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.text(max_size=6), _VALUES, max_size=6))
def test_struct_is_what_struct_update_makes(d: dict[str, Any]) -> None:
    made, reference = events.struct(d), _reference(d)
    assert made == reference
    assert made.SerializeToString(deterministic=True) == reference.SerializeToString(deterministic=True)
