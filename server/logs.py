"""The referee's log lines: plain text (the default) or one JSON object per line (``--log-format json``).

A JSON line has ``time`` (UTC, ISO 8601, milliseconds), ``level``, ``logger``, ``message`` and, where known,
``method``, ``game_id`` and ``request_id``: the transport sets those for each call (``call_context``, a
contextvar, so that every line logged while the call runs carries them), and a log call may give them itself
(``extra={"game_id": ...}``). In either format an exception is logged as its type and where it was raised (file,
line and function of each frame), never its message nor the source lines (either could name a card: hidden
information stays out of the logs).
"""

from __future__ import annotations

import contextvars
import json
import logging
import sys
import time
import traceback
from types import TracebackType
from typing import TextIO

FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# (method, game_id, request_id) of the call being served; set by the transport (server.metrics.ObserveInterceptor)
call_context: contextvars.ContextVar[tuple[str, str, str] | None] = contextvars.ContextVar(
    "rummy_call_context", default=None
)

_CONTEXT_FIELDS = ("method", "game_id", "request_id")
#: The longest context value a line carries: a game id is at most 64 characters and a request_id 128, but the
#: context is set before either is checked, and a refused call may log (the limiter's line): 256 KiB of a
#: request's game_id on a log line once every 10 s would be the caller's to write.
_MAX_CONTEXT_VALUE = 128


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, and the call's method / game_id / request_id."""

    def format(self, record: logging.LogRecord) -> str:
        seconds = int(record.created)
        millis = int((record.created - seconds) * 1000)
        line: dict[str, object] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        context = call_context.get()
        for i, name in enumerate(_CONTEXT_FIELDS):
            value = getattr(record, name, None) or (context[i] if context is not None else "")
            if value:
                text = str(value)
                line[name] = text if len(text) <= _MAX_CONTEXT_VALUE else text[: _MAX_CONTEXT_VALUE - 3] + "..."
        if record.exc_info and record.exc_info[0] is not None:
            kind, _, tb = record.exc_info
            line["exc_type"] = kind.__name__
            line["stack"] = where(tb)
        return json.dumps(line, ensure_ascii=False)


def where(tb: TracebackType | None) -> str:
    """Where an exception happened: file, line and function of each frame, innermost first; never its message
    nor the source text (either could name a card, or quote a token)."""
    return " < ".join(f"{f.filename}:{f.lineno} in {f.name}" for f in reversed(traceback.extract_tb(tb)))


class TextFormatter(logging.Formatter):
    """The text lines (TEXT_FORMAT), one per record: an exception as its type and where it happened, as in the
    JSON lines. logging's own formatting prints the whole traceback: the exception's message, its causes' and
    the source lines, any of which could name a card (a stack_info is left out for the same reason)."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        saved = record.exc_info, record.exc_text, record.stack_info
        record.exc_info = record.exc_text = record.stack_info = None  # (exc_text: another handler's cached text)
        try:
            line = super().format(record)
        finally:
            record.exc_info, record.exc_text, record.stack_info = saved
        exc_info = saved[0]
        if exc_info and exc_info[0] is not None:
            line += f" [{exc_info[0].__name__} at {where(exc_info[2])}]"
        return line


def configure(log_format: str = "text", *, level: int = logging.INFO, stream: TextIO | None = None) -> None:
    """Send the process's log records to ``stream`` (default stderr) as ``log_format`` lines ("text" or "json")."""
    if log_format not in FORMATS:
        raise ValueError(f"a log format is one of {FORMATS}, not {log_format!r}")
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
