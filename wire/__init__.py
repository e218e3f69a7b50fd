"""The one translation between the protobuf messages (``rummy_pb``) and engine types, both directions.

The server and the SDK both go through it, so both sides read and refuse the same messages the same way
(``Malformed``, or the engine's ``InvalidMoveError`` for unknown card text). It imports only ``engine`` and
``rummy_pb`` and keeps no caches (the server keeps its own, ``server.codec``). Modules: ``cards``, ``moves``,
``values`` (enums, options, preset deals, time controls, versions), ``clocks``, ``views``, ``events`` (events and
results).
"""

from wire.cards import card_from_proto, cards_from_proto, cards_to_proto, melds_from_proto, melds_to_proto
from wire.clocks import clocks_from_proto, seat_clocks_to_proto
from wire.errors import Malformed
from wire.events import event_from_proto, event_to_proto, fill_event, plain
from wire.moves import meld_id_from_proto, move_from_proto, move_to_proto
from wire.values import (
    GAME_NAMES,
    GAMES,
    MAX_VERSION,
    MELD_KIND_NAMES,
    MELD_KINDS,
    PHASE_NAMES,
    PHASES,
    ROLE_NAMES,
    ROLES,
    SEAT_KIND_NAMES,
    SEAT_KINDS,
    TIMEOUT_POLICIES,
    TIMEOUT_POLICY_NAMES,
    OptionValue,
    TimeControlValue,
    deal_dict,
    deal_from_proto,
    deal_to_proto,
    option_from_proto,
    option_to_proto,
    options_from_proto,
    options_to_proto,
    seat_kind_from_proto,
    time_control_from_proto,
    time_control_to_proto,
    timeout_policy_from_proto,
    timeout_policy_to_proto,
    version_from_proto,
)
from wire.views import (
    GameViewDict,
    SeatDict,
    fill_view,
    last_hand_bytes,
    legal_from_proto,
    legal_move_bytes,
    seats_bytes,
    typed_view_from_proto,
    view_from_proto,
    view_to_proto,
)

__all__ = [
    "GAMES", "GAME_NAMES", "MAX_VERSION", "MELD_KINDS", "MELD_KIND_NAMES", "PHASES", "PHASE_NAMES", "ROLES",
    "ROLE_NAMES", "SEAT_KINDS", "SEAT_KIND_NAMES", "TIMEOUT_POLICIES", "TIMEOUT_POLICY_NAMES", "GameViewDict",
    "Malformed", "OptionValue", "SeatDict", "TimeControlValue", "card_from_proto", "cards_from_proto", "cards_to_proto",
    "clocks_from_proto", "deal_dict", "deal_from_proto", "deal_to_proto", "event_from_proto", "event_to_proto",
    "fill_event", "fill_view", "last_hand_bytes", "legal_from_proto", "legal_move_bytes", "meld_id_from_proto",
    "melds_from_proto", "melds_to_proto", "move_from_proto", "move_to_proto", "option_from_proto", "option_to_proto",
    "options_from_proto", "options_to_proto", "plain", "seat_clocks_to_proto", "seat_kind_from_proto", "seats_bytes",
    "time_control_from_proto", "time_control_to_proto", "timeout_policy_from_proto", "timeout_policy_to_proto",
    "typed_view_from_proto", "version_from_proto", "view_from_proto", "view_to_proto",
]  # fmt: skip
