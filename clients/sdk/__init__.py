"""The Python SDK of the referee: a blocking ``RefereeClient`` and an asyncio ``AsyncRefereeClient`` over the
public gRPC API, with friendly values (engine moves, ``clients.view.View``, event dicts) and typed errors."""

from clients.sdk._core import COMMIT_OUTCOME_UNKNOWN, FROM_START, OUTCOME_RESENDS, channel_target, new_request_id
from clients.sdk.aio import AsyncRefereeClient, AsyncWatch
from clients.sdk.client import RefereeClient, Watch
from clients.sdk.convert import (
    event_from_proto,
    legal_from_proto,
    move_from_proto,
    move_to_proto,
    view_dict_from_proto,
    view_from_proto,
)
from clients.sdk.errors import RefereeError
from clients.sdk.values import (
    NO_RETRY,
    Analysis,
    Arrangement,
    Bank,
    Clock,
    CreatedGame,
    GameInfo,
    GameSnapshot,
    JoinedSeat,
    MoveResult,
    PerMove,
    Replay,
    RetryPolicy,
    SeatSpec,
    Settings,
    TimeControl,
    TimeoutPolicy,
    time_control_from_text,
    time_control_text,
)
from clients.view import SeatClock

__all__ = [
    "COMMIT_OUTCOME_UNKNOWN", "FROM_START", "NO_RETRY", "OUTCOME_RESENDS", "Analysis", "Arrangement",
    "AsyncRefereeClient", "AsyncWatch", "Bank", "Clock", "CreatedGame", "GameInfo", "GameSnapshot", "JoinedSeat",
    "MoveResult", "PerMove", "RefereeClient", "RefereeError", "Replay", "RetryPolicy", "SeatClock", "SeatSpec",
    "Settings", "TimeControl", "TimeoutPolicy", "Watch", "channel_target", "event_from_proto", "legal_from_proto",
    "move_from_proto", "move_to_proto", "new_request_id", "time_control_from_text", "time_control_text",
    "view_dict_from_proto", "view_from_proto",
]  # fmt: skip
