"""Bot brains: ``make_bot(name, seed)`` for ``random``, ``gin``, ``rummy`` and ``strong``.

Bots take a ``clients.view.View`` and the legal moves and return a move (``Bot`` in ``clients.bots.base``); they
work off the engine directly (``clients.bots.arena``) and off the SDK's views alike.
"""

from clients.bots.base import BOTS, Bot, StrongBot, make_bot

__all__ = ["BOTS", "Bot", "StrongBot", "make_bot"]
