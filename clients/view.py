"""The friendly, typed value a bot receives: what one seat may see of a game, cards as text.

The type is the engine's (``engine.seat_view``): ``engine.typed_view(state, seat)`` builds it off a state,
``View.from_engine(engine.view(state, seat), state.rules.to_dict())`` off a view dict, and the SDK builds the same
value off the server's views (``wire.typed_view_from_proto``, the SDK's ``convert.view_from_proto``). Re-exported
here for bot authors, with the card helpers (``card_int``, ``card_mask``, ``card_texts``) that turn card texts into
engine cards and masks.
"""

from engine.seat_view import KnockInfo, SeatClock, TableMeld, View, card_int, card_mask, card_texts

__all__ = ["KnockInfo", "SeatClock", "TableMeld", "View", "card_int", "card_mask", "card_texts"]
