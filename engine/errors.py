"""Typed engine errors, each with a stable machine-readable reason code.

``InvalidMoveError``: the request is malformed (unknown card text, bad option, impossible deal).
``IllegalMoveError``: the request is well formed but the rules do not allow it now.
"""

from __future__ import annotations


def excerpt(value: object, limit: int = 24) -> str:
    """``repr(value)`` for an error message, cut to about ``limit`` characters: messages echo bad input, which
    may be of any size."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


class RuleError(Exception):
    """Base of every engine error: ``code`` is stable, ``message`` is for people."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class InvalidMoveError(RuleError):
    """Malformed input: it could never be accepted, whatever the state."""


class IllegalMoveError(RuleError):
    """A well-formed move that the rules do not allow in this state."""


class InvalidOptionsError(InvalidMoveError):
    """A rule option, option value, profile or player count that makes no sense."""


class InvalidDealError(InvalidMoveError):
    """A preset deal that is not exactly the 52 cards dealt as the rules say."""


class InvariantError(RuntimeError):
    """A broken engine invariant: a bug, never the caller's fault."""
