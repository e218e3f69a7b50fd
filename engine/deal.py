"""Deals: preset deals, validation, and shuffles from a secret seed.

The engine never draws randomness itself. A game carries a secret seed (32 bytes from ``random_seed()``, i.e. the
``secrets`` module, unless a trusted organizer supplies one); every shuffle of that game is a Fisher-Yates shuffle
driven by SHA-256 of (seed, purpose, counter): a cryptographically secure and reproducible stream.
"""

from __future__ import annotations

import hashlib
import itertools
import secrets
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from operator import lt
from typing import TypedDict

from engine.cards import DECK_SIZE, card_text
from engine.errors import InvalidDealError
from engine.options import Rules


class DealDict(TypedDict):
    """``Deal.to_dict``: a deal with card texts (GetReplay's settings show the preset deals so)."""

    dealer: int
    hands: list[list[str]]
    upcard: str
    stock: list[str]


@dataclass(frozen=True, slots=True)
class Deal:
    """One hand's deal: the dealer, each seat's hand, the upcard, and the stock listed bottom to top."""

    dealer: int
    hands: tuple[tuple[int, ...], ...]
    upcard: int
    stock: tuple[int, ...]

    def to_dict(self) -> DealDict:
        """JSON-able form with card texts."""
        return {
            "dealer": self.dealer,
            "hands": [[card_text(c) for c in h] for h in self.hands],
            "upcard": card_text(self.upcard),
            "stock": [card_text(c) for c in self.stock],
        }


def random_seed() -> bytes:
    """A fresh secret seed from the operating system's CSPRNG."""
    return secrets.token_bytes(32)


_SPAN = 1 << 32
_WORDS = struct.Struct(">8I")  # one SHA-256 digest: eight big-endian 32-bit words
#: the rejection bounds of a deck's draws in a shuffle's order, n = 52 down to 2: a word is accepted below n's bound
_LIMITS_DOWN: tuple[int, ...] = tuple(_SPAN - _SPAN % n for n in range(DECK_SIZE, 1, -1))


def _words(prefix: bytes) -> Iterator[int]:
    """The 32-bit words of SHA-256(prefix || counter), counter = 0, 1, ... (8 bytes, big-endian), in order."""
    for counter in itertools.count():
        yield from _WORDS.unpack(hashlib.sha256(prefix + counter.to_bytes(8, "big")).digest())


def _below(words: Iterator[int], n: int) -> int:
    limit = _SPAN - _SPAN % n
    x = next(words)
    while x >= limit:
        x = next(words)
    return x % n


class SeededStream:
    """Deterministic cryptographic byte stream: SHA-256(seed || label || counter)."""

    def __init__(self, seed: bytes, label: str) -> None:
        self._words = _words(seed + b"\x00" + label.encode())

    def below(self, n: int) -> int:
        """Uniform integer in [0, n) by rejection sampling on 32-bit words."""
        return _below(self._words, n)


def shuffled(cards: list[int], seed: bytes, label: str) -> list[int]:
    """A Fisher-Yates shuffle of ``cards`` from the seeded stream (the input is not modified).

    The words of ``_words(seed || 0 || label)`` (the ``SeededStream``), computed in one go: the digests a shuffle
    needs without a rejection, one ``struct`` unpack, then one more digest per rejected word (``_redraw``)."""
    out = list(cards)
    need = len(out) - 1
    if need <= 0:
        return out
    prefix = seed + b"\x00" + label.encode()
    sha = hashlib.sha256
    blocks = (need + 7) // 8
    words = list(
        struct.unpack(f">{8 * blocks}I", b"".join([sha(prefix + k.to_bytes(8, "big")).digest() for k in range(blocks)]))
    )
    limits = _LIMITS_DOWN
    if need <= len(limits) and all(map(lt, words, limits[len(limits) - need :])):
        # no word rejected (the rule for a deck's shuffle: a rejection comes about once in 80 million): each draw is
        # the next word, as below, without a bound to compute and an index to keep per card
        for i, x in zip(range(need, 0, -1), words, strict=False):  # (words: whole digests, need or more)
            j = x % (i + 1)
            out[i], out[j] = out[j], out[i]
        return out
    k = 0
    for i in range(need, 0, -1):
        n = i + 1
        x = words[k]
        k += 1
        if x >= _SPAN - _SPAN % n:  # rejected (about once in 80 million shuffles of a deck)
            x, k = _redraw(words, k, n, prefix)
        j = x % n
        out[i], out[j] = out[j], out[i]
    return out


def _redraw(words: list[int], k: int, n: int, prefix: bytes) -> tuple[int, int]:
    """After a rejected word: the next accepted word below ``n``'s limit and the index after it. ``words`` gets one
    more digest per rejected word, so it always holds a word for every draw left."""
    limit = _SPAN - _SPAN % n
    while True:
        words.extend(_WORDS.unpack(hashlib.sha256(prefix + (len(words) // 8).to_bytes(8, "big")).digest()))
        x = words[k]
        k += 1
        if x < limit:
            return x, k


def deal_from_order(rules: Rules, dealer: int, order: list[int]) -> Deal:
    """Deal a deck whose top card is ``order[0]``: one card at a time from the seat after the dealer, then the
    upcard, and the rest is the stock (so the stock's top, the last of the tuple, is the next card of the deck)."""
    n = rules.players
    k = rules.n_cards
    hands: list[list[int]] = [[] for _ in range(n)]
    for i in range(n * k):
        hands[(dealer + 1 + i) % n].append(order[i])
    upcard = order[n * k]
    stock = tuple(reversed(order[n * k + 1 :]))
    return Deal(dealer, tuple(tuple(h) for h in hands), upcard, stock)


def seeded_deal(rules: Rules, dealer: int, seed: bytes, hand_no: int) -> Deal:
    """The deal of hand ``hand_no`` derived from the game's seed."""
    return deal_from_order(rules, dealer, shuffled(list(range(DECK_SIZE)), seed, f"deal:{hand_no}"))


def validate_deal(rules: Rules, deal: Deal) -> None:
    """Refuse a deal that is not exactly the 52 cards dealt as the rules say (InvalidDealError)."""
    if not 0 <= deal.dealer < rules.players:
        raise InvalidDealError(
            "INVALID_DEAL", f"dealer seat {deal.dealer} is not a seat of a {rules.players}-player game"
        )
    if len(deal.hands) != rules.players:
        raise InvalidDealError("INVALID_DEAL", f"{len(deal.hands)} hands given for {rules.players} players")
    for seat, hand in enumerate(deal.hands):
        if len(hand) != rules.n_cards:
            raise InvalidDealError(
                "INVALID_DEAL", f"seat {seat} is dealt {len(hand)} cards; this game deals {rules.n_cards}"
            )
    everything = [c for h in deal.hands for c in h] + [deal.upcard, *deal.stock]
    for c in everything:
        if not 0 <= c < DECK_SIZE:
            raise InvalidDealError("INVALID_DEAL", f"not a card: {c}")
    seen: set[int] = set()
    for c in everything:
        if c in seen:
            raise InvalidDealError("INVALID_DEAL", f"card {card_text(c)} appears twice in the deal")
        seen.add(c)
    if len(seen) != DECK_SIZE:
        missing = " ".join(card_text(c) for c in range(DECK_SIZE) if c not in seen)
        raise InvalidDealError("INVALID_DEAL", f"the deal lacks {missing}")
