"""The one place where failures become gRPC statuses (STYLE.md's errors table).

Engine errors carry a stable reason code; the server's own failures are ``RefereeError`` subclasses with one.
``rpc_status(exc)`` turns any exception into a ``grpc.Status`` whose details hold a ``google.rpc.ErrorInfo``
(reason = the code, domain "rummy-referee"), and a ``google.rpc.RetryInfo`` when the error says when to try again
(``retry_after_s``: the rate and capacity limits). An exception that is none of these is a bug: INTERNAL, logged, and
its text is not sent (it could name a card).
"""

from __future__ import annotations

import logging
import math

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2  # type: ignore[import-untyped]
from grpc_status import rpc_status as grpc_rpc_status

import engine
import wire
from server.deadlines import DeadlineTooShort
from server.storage_errors import CommitOutcomeUnknown, StoreBusy, StoreUnavailable

DOMAIN = "rummy-referee"
MAX_MESSAGE = 400  # characters of a status message: it travels twice (grpc-message and the details), in headers


log = logging.getLogger("rummy_referee")


class RefereeError(Exception):
    """A failure of a request that the server reports to the caller: ``code`` is its stable reason."""

    status = grpc.StatusCode.INTERNAL

    def __init__(self, code: str, message: str, *, retry_after_s: float | None = None) -> None:
        """``retry_after_s``: when trying again may succeed (sent as a google.rpc.RetryInfo), None: not said."""
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.retry_after_s = retry_after_s


class BadRequest(RefereeError):
    """Malformed request: a missing field, a bad id, a value out of range."""

    status = grpc.StatusCode.INVALID_ARGUMENT


class NotAllowedNow(RefereeError):
    """Well formed, but refused in the game's present state (e.g. a seat already taken, a reused request id)."""

    status = grpc.StatusCode.FAILED_PRECONDITION


class StaleVersion(RefereeError):
    """The game is not at the version the caller based the request on, or it lost a race: reload and retry."""

    status = grpc.StatusCode.ABORTED


class Unauthenticated(RefereeError):
    """No token, or a token that does not belong to this game."""

    status = grpc.StatusCode.UNAUTHENTICATED


class PermissionDenied(RefereeError):
    """A valid token that may not do this."""

    status = grpc.StatusCode.PERMISSION_DENIED


class GameNotFound(RefereeError):
    """No game with that id (never created, or expired after its end)."""

    status = grpc.StatusCode.NOT_FOUND


class TooMuch(RefereeError):
    """Over a size or rate limit (a rate or capacity limit says when to retry: ``retry_after_s``)."""

    status = grpc.StatusCode.RESOURCE_EXHAUSTED


class ShuttingDown(RefereeError):
    """The server is stopping: the caller should retry (elsewhere)."""

    status = grpc.StatusCode.UNAVAILABLE


def _known(exc: BaseException) -> tuple[grpc.StatusCode, str, str] | None:
    if isinstance(exc, RefereeError):
        return exc.status, exc.code, exc.message
    if isinstance(exc, wire.Malformed):  # a message the wire codec refuses (DUPLICATE_CARD, BAD_MOVE, ...)
        return grpc.StatusCode.INVALID_ARGUMENT, exc.code, exc.message
    if isinstance(exc, engine.IllegalMoveError):
        return grpc.StatusCode.FAILED_PRECONDITION, exc.code, exc.message
    if isinstance(exc, engine.InvalidMoveError):  # includes InvalidOptionsError and InvalidDealError
        return grpc.StatusCode.INVALID_ARGUMENT, exc.code, exc.message
    if isinstance(exc, CommitOutcomeUnknown):  # before StoreUnavailable: it is one, but says more
        return (
            grpc.StatusCode.UNAVAILABLE,
            "COMMIT_OUTCOME_UNKNOWN",
            "the request may or may not have been applied; for a move, resend it with the same request_id",
        )
    if isinstance(exc, StoreBusy):  # Redis answers, but this process's connections to it are all in use
        return grpc.StatusCode.UNAVAILABLE, "STORAGE_BUSY", "every connection to the game storage is busy; retry"
    if isinstance(exc, StoreUnavailable):
        return grpc.StatusCode.UNAVAILABLE, "STORAGE_UNAVAILABLE", "the game storage is unreachable; retry later"
    if isinstance(exc, DeadlineTooShort):  # nothing was started: the caller may resend with a longer deadline
        return grpc.StatusCode.DEADLINE_EXCEEDED, "DEADLINE_TOO_SHORT", f"too little time left: {exc}"
    return None


def classify(exc: BaseException) -> tuple[grpc.StatusCode, str, str]:
    """Status code, reason code and message for ``exc``; anything unexpected is INTERNAL and logged."""
    known = _known(exc)
    if known is not None:
        return known
    log.error("internal error", exc_info=exc)
    return grpc.StatusCode.INTERNAL, "INTERNAL", "internal error (logged on the server)"


def reason_code(exc: BaseException) -> str:
    """The reason code ``rpc_status(exc)`` sends, without logging anything (for the metrics)."""
    known = _known(exc)
    return known[1] if known is not None else "INTERNAL"


def status_name(exc: BaseException) -> str:
    """The name of the status code ``rpc_status(exc)`` sends, without logging anything (for the metrics)."""
    known = _known(exc)
    return known[0].name if known is not None else "INTERNAL"


def describe(exc: BaseException) -> str:
    """``exc`` for a log line: its text, or its type's name when it has none (a timeout's ``TimeoutError()``); an
    engine error by its type and reason code alone (its text may name a card: logs never carry one)."""
    if isinstance(exc, engine.RuleError):
        return f"{type(exc).__name__} {exc.code}"
    return str(exc) or type(exc).__name__


def cut(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` cut to at most ``limit`` characters (marked with "...")."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def rpc_status(exc: BaseException) -> grpc.Status:
    """The rich status for ``exc``: code, message, a google.rpc.ErrorInfo detail and, when the error says when to
    try again, a google.rpc.RetryInfo detail."""
    code, reason, message = classify(exc)
    message = cut(message)  # at most MAX_MESSAGE characters: the last guard against an error echoing its input
    info = any_pb2.Any()
    info.Pack(error_details_pb2.ErrorInfo(reason=reason, domain=DOMAIN))
    details = [info]
    retry_after_s = getattr(exc, "retry_after_s", None)
    if retry_after_s is not None:
        details.append(retry_info(retry_after_s))
    status: grpc.Status = grpc_rpc_status.to_status(
        status_pb2.Status(code=_CODES[code], message=message, details=details)
    )
    return status


def retry_info(seconds: float) -> any_pb2.Any:
    """A packed google.rpc.RetryInfo whose retry_delay is ``seconds`` (rounded up to whole milliseconds)."""
    millis = max(0, math.ceil(seconds * 1000))
    delay = duration_pb2.Duration(seconds=millis // 1000, nanos=(millis % 1000) * 1_000_000)
    packed = any_pb2.Any()
    packed.Pack(error_details_pb2.RetryInfo(retry_delay=delay))
    return packed


_CODES: dict[grpc.StatusCode, int] = {
    grpc.StatusCode.INVALID_ARGUMENT: code_pb2.INVALID_ARGUMENT,
    grpc.StatusCode.FAILED_PRECONDITION: code_pb2.FAILED_PRECONDITION,
    grpc.StatusCode.ABORTED: code_pb2.ABORTED,
    grpc.StatusCode.UNAUTHENTICATED: code_pb2.UNAUTHENTICATED,
    grpc.StatusCode.PERMISSION_DENIED: code_pb2.PERMISSION_DENIED,
    grpc.StatusCode.NOT_FOUND: code_pb2.NOT_FOUND,
    grpc.StatusCode.RESOURCE_EXHAUSTED: code_pb2.RESOURCE_EXHAUSTED,
    grpc.StatusCode.UNAVAILABLE: code_pb2.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED: code_pb2.DEADLINE_EXCEEDED,
    grpc.StatusCode.INTERNAL: code_pb2.INTERNAL,
}
