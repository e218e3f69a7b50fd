"""Typed failures of the referee's calls.

Every failed call raises ``RefereeError``: ``code`` is the gRPC status code, ``reason`` the stable reason code the
service put in its ``google.rpc.ErrorInfo`` detail (``NOT_YOUR_TURN``, ``CARD_NOT_IN_HAND``, ...; empty when the
failure never reached the service, e.g. a connection refused).
"""

from __future__ import annotations

from typing import Any, cast

import grpc
from google.rpc import error_details_pb2  # type: ignore[import-untyped]
from grpc_status import rpc_status

DOMAIN = "rummy-referee"

#: The codes after which a call may be sent again: the service did not answer (or could not reach its storage).
TRANSIENT = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})
#: What grpc says of a call this client cancelled itself: every other CANCELLED was the referee's (a referee
#: stopping, or ending a connection past its maximum age, cuts the calls it has not answered): sent again too.
LOCAL_CANCEL = "Locally cancelled by application!"
#: A move the rules refuse, or a malformed one: the bot's fault, never worth resending.
REJECTED = frozenset({grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.INVALID_ARGUMENT})


class RefereeError(Exception):
    """A call the referee refused or that did not get through: ``code`` (grpc.StatusCode), ``reason`` (the
    ErrorInfo reason, or ""), ``message`` (the status message)."""

    def __init__(
        self, code: grpc.StatusCode, reason: str, message: str, *, domain: str = "", retry_after_s: float | None = None
    ) -> None:
        """``retry_after_s``: the google.rpc.RetryInfo delay the referee sent (over a rate limit or the cap on open
        games: RESOURCE_EXHAUSTED ``RATE_LIMITED`` / ``TOO_MANY_OPEN_GAMES``), None when it sent none."""
        super().__init__(f"{code.name} {reason or '-'}: {message}")
        self.code = code
        self.reason = reason
        self.message = message
        self.domain = domain
        self.retry_after_s = retry_after_s

    @property
    def transient(self) -> bool:
        """The call may succeed if sent again (UNAVAILABLE, DEADLINE_EXCEEDED; CANCELLED by the referee, which
        the referee's own answers never are: a call it cut while stopping or ending an old connection)."""
        if self.code == grpc.StatusCode.CANCELLED:
            return not self.reason and self.message != LOCAL_CANCEL
        return self.code in TRANSIENT

    @property
    def rejected_move(self) -> bool:
        """The move itself was refused (malformed or not allowed now): resending it cannot help."""
        return self.code in REJECTED

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self.code.name, self.reason, self.message, self.domain, self.retry_after_s))


def _rebuild(code: str, reason: str, message: str, domain: str, retry_after_s: float | None = None) -> RefereeError:
    return RefereeError(grpc.StatusCode[code], reason, message, domain=domain, retry_after_s=retry_after_s)


def _retry_after(exc: grpc.RpcError) -> float | None:
    """The retry_delay (seconds) of the google.rpc.RetryInfo in the call's rich status, None without one."""
    try:
        status = rpc_status.from_call(cast(grpc.Call, exc))
    except ValueError:
        return None
    for detail in status.details if status is not None else ():
        info = error_details_pb2.RetryInfo()
        if detail.Is(info.DESCRIPTOR) and detail.Unpack(info):
            return float(info.retry_delay.seconds + info.retry_delay.nanos / 1e9)
    return None


def _error_info(exc: grpc.RpcError) -> tuple[str, str]:
    """Reason and domain of the google.rpc.ErrorInfo in the call's rich status (grpcio-status), or ("", "")."""
    try:
        status = rpc_status.from_call(cast(grpc.Call, exc))  # duck-typed: RpcError and AioRpcError both fit
    except ValueError:  # the rich status disagrees with the plain one: trust the plain code, read no reason
        return "", ""
    for detail in status.details if status is not None else ():
        info = error_details_pb2.ErrorInfo()
        if detail.Is(info.DESCRIPTOR) and detail.Unpack(info):
            return str(info.reason), str(info.domain)
    return "", ""


def from_rpc_error(exc: grpc.RpcError) -> RefereeError:
    """The RefereeError of a failed call (sync ``grpc.RpcError`` or ``grpc.aio.AioRpcError``)."""
    code = exc.code() if callable(getattr(exc, "code", None)) else grpc.StatusCode.UNKNOWN
    details = exc.details() if callable(getattr(exc, "details", None)) else str(exc)
    retry_after_s = None
    try:
        reason, domain = _error_info(exc) if callable(getattr(exc, "trailing_metadata", None)) else ("", "")
        if code == grpc.StatusCode.RESOURCE_EXHAUSTED and reason:
            retry_after_s = _retry_after(exc)
    except Exception:  # a garbled detail must not hide the status itself
        reason, domain = "", ""
    return RefereeError(
        code or grpc.StatusCode.UNKNOWN, reason, details or "", domain=domain, retry_after_s=retry_after_s
    )
