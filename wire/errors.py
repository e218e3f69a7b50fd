"""The one error of the wire codec."""

from __future__ import annotations


class Malformed(ValueError):
    """A message that no game could accept, whatever its state: ``code`` is the stable reason (DUPLICATE_CARD,
    BAD_MOVE, MISSING_MOVE, VERSION_AHEAD, INVALID_OPTION, INVALID_SEATS, INVALID_TIME_CONTROL). The server
    answers it INVALID_ARGUMENT (server.errors); unknown card text is the engine's InvalidMoveError
    (INVALID_CARD) instead."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
