"""The caller's deadline, for every storage wait of the request it belongs to.

The gRPC handlers put the call's deadline (``context.time_remaining()``) into a context variable with
``set_from``; every storage operation asks ``budget(storage_timeout_s)`` for how long it may wait: the storage
timeout, or less when the caller's deadline comes first. So the referee never works for a caller that has gone:
a request with too little time left fails at once (``DeadlineTooShort``, DEADLINE_EXCEEDED) and starts no storage
call. Each gRPC request runs in a task of its own, whose context is a copy, so one request's deadline never leaks
into another's; a task started by a request (a watched game's feed) must not inherit it (see ``cleared``).

Per call this costs a ``time_remaining()``, a ``ContextVar.set`` and, per storage wait, a ``ContextVar.get``.
"""

from __future__ import annotations

import time
from contextvars import ContextVar, Token
from typing import Protocol

#: Less time than this left when a storage call would start: it is not started (a round trip to Redis and back
#: to the caller cannot fit).
MIN_BUDGET_S = 0.01

_DEADLINE: ContextVar[float | None] = ContextVar("rummy_referee_deadline", default=None)  # time.monotonic()


class DeadlineTooShort(Exception):
    """The caller's deadline leaves no time for the storage call (DEADLINE_EXCEEDED, nothing was started)."""


class _HasTimeRemaining(Protocol):
    def time_remaining(self) -> float | None: ...


def set_from(context: _HasTimeRemaining) -> None:
    """Take the deadline of the gRPC call ``context`` (none: the call has no deadline) for this request."""
    remaining = context.time_remaining()
    _DEADLINE.set(None if remaining is None else time.monotonic() + remaining)


def set_remaining(seconds: float | None) -> Token[float | None]:
    """Set the deadline ``seconds`` from now (None: no deadline); the token resets it."""
    return _DEADLINE.set(None if seconds is None else time.monotonic() + seconds)


def cleared() -> Token[float | None]:
    """No deadline from here on in this context (for work that outlives the request, e.g. a task it starts)."""
    return _DEADLINE.set(None)


def remaining() -> float | None:
    """Seconds left before the caller's deadline, None without one."""
    deadline = _DEADLINE.get()
    return None if deadline is None else deadline - time.monotonic()


def budget(default_s: float) -> float:
    """How long a storage wait may last: ``default_s`` (the storage timeout), or the time left before the
    caller's deadline when that is shorter. Raises ``DeadlineTooShort`` when less than MIN_BUDGET_S is left."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return default_s
    left = deadline - time.monotonic()
    if left < MIN_BUDGET_S:
        raise DeadlineTooShort(f"{max(left, 0.0) * 1000:.0f} ms left of the call's deadline")
    return left if left < default_s else default_s
