"""rummy-referee's pure rules engine: Gin Rummy and Rummy as RULES.md specifies them.

Standard library only, deterministic: ``new_game(rules, seed)``, ``legal_moves(state)``,
``apply(state, seat, move) -> (state, events)``, ``view(state, viewer)``.
"""

from engine.analysis import Arrangement, HandAnalysis, KnockDiscard, analyze_hand, check_hand_size
from engine.cards import (
    CARD_VALUE,
    card_text,
    cards_of,
    mask_of,
    mask_text,
    mask_value,
    parse_card,
    parse_cards,
)
from engine.deal import Deal, deal_from_order, random_seed, seeded_deal, validate_deal
from engine.errors import (
    IllegalMoveError,
    InvalidDealError,
    InvalidMoveError,
    InvalidOptionsError,
    InvariantError,
    RuleError,
    excerpt,
)
from engine.events import PUBLIC_FIELDS, SECRET_FIELDS, EventKind
from engine.fairness import FairnessError, Verified, verify_deals
from engine.flow import new_game, new_game_with_events
from engine.game import apply, legal_moves
from engine.gin import knock_discards
from engine.history import MOVE_EVENTS, move_of_events
from engine.melds import (
    Declaration,
    all_melds,
    arrangements,
    best_arrangement,
    best_declaration,
    extends,
    meld_kind,
    meldable,
    min_deadwood,
    min_deadwood11,
)
from engine.moves import (
    BigGin,
    Declare,
    Discard,
    Done,
    DrawDiscard,
    DrawStock,
    Knock,
    LayOff,
    LoseOnTime,
    MeldMove,
    Move,
    Pass,
    Resign,
    move_from_dict,
    move_text,
    move_to_dict,
    named_twice,
    parse_move,
)
from engine.options import GIN, OPTION_NAMES, PROFILES, RUMMY, GameKind, Rules, find_profile, rules_from_profile
from engine.results import (
    HandResult,
    HollywoodHand,
    MatchResult,
    ResultMeld,
    ScoreBreakdown,
    hand_result_of,
    match_result_of,
)
from engine.seat_view import KnockInfo, SeatClock, View, card_int, card_mask, card_texts, typed_view
from engine.seat_view import TableMeld as ViewMeld
from engine.serialize import (
    Config,
    config_from_dict,
    config_to_dict,
    progress_to_dict,
    state_from_dict,
    state_from_json,
    state_from_parts,
    state_to_dict,
    state_to_json,
)
from engine.state import (
    PHASES,
    REFEREE,
    SPECTATOR,
    Event,
    GameState,
    Phase,
    Role,
    TableMeld,
    check_cards,
    event_for,
)
from engine.views import view

__all__ = [
    "CARD_VALUE", "GIN", "OPTION_NAMES", "PHASES", "PROFILES", "REFEREE", "RUMMY", "SPECTATOR", "Arrangement",
    "BigGin", "Config", "Deal", "Declaration", "Declare", "Discard", "Done", "DrawDiscard", "DrawStock", "Event",
    "FairnessError", "GameKind", "GameState", "HandAnalysis", "IllegalMoveError", "InvalidDealError",
    "InvalidMoveError", "InvalidOptionsError", "InvariantError", "Knock", "KnockDiscard", "KnockInfo", "LayOff",
    "LoseOnTime", "MeldMove", "Move", "Pass", "Phase", "Resign", "Role", "RuleError", "Rules", "SeatClock",
    "TableMeld", "Verified", "View", "ViewMeld", "all_melds", "analyze_hand", "apply", "arrangements",
    "best_arrangement", "best_declaration", "card_int", "card_mask", "card_text", "card_texts", "cards_of",
    "check_cards", "check_hand_size", "config_from_dict", "config_to_dict", "deal_from_order", "event_for", "excerpt",
    "extends", "find_profile", "knock_discards", "legal_moves", "mask_of", "mask_text", "mask_value", "meld_kind",
    "meldable", "min_deadwood", "min_deadwood11", "move_from_dict", "move_text", "move_to_dict", "named_twice",
    "new_game", "new_game_with_events", "parse_card", "parse_cards", "parse_move", "progress_to_dict", "random_seed",
    "rules_from_profile", "seeded_deal", "state_from_dict", "state_from_json", "state_from_parts", "state_to_dict",
    "state_to_json", "typed_view", "validate_deal", "verify_deals", "view",
]  # fmt: skip
# typed events and results (engine.events, engine.results)
__all__ += [
    "MOVE_EVENTS",
    "PUBLIC_FIELDS",
    "SECRET_FIELDS",
    "EventKind",
    "HandResult",
    "HollywoodHand",
    "MatchResult",
    "ResultMeld",
    "ScoreBreakdown",
    "hand_result_of",
    "match_result_of",
    "move_of_events",
]
