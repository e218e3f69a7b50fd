"""Provably fair deals: the commitment to a game's secret seed, and the check of a finished game's deals.

At creation the referee publishes ``seed_commitment(game_id, seed, presets)``; once the match is over it reveals
the seed (and any preset deals). ``verify_deals`` then recomputes every deal and every restock from them and checks
them against the commitment and the game's events (as GetReplay gives them: every card). The byte layouts and the
shuffle are specified in docs/fairness.md, so that anyone can check a game in any language.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.cards import parse_card
from engine.deal import Deal, seeded_deal, shuffled
from engine.options import Rules

COMMITMENT_TAG = b"rummy-referee/seed-commitment/v1\x00"
PRESETS_TAG = b"rummy-referee/preset-deals/v1\x00"


def _u16(n: int) -> bytes:
    return n.to_bytes(2, "big")


def presets_digest(presets: Sequence[Deal]) -> bytes:
    """SHA-256 of the preset deals: count, then per deal its dealer, each hand (sorted), the upcard, the stock."""
    out = bytearray(PRESETS_TAG)
    out += _u16(len(presets))
    for deal in presets:
        out.append(deal.dealer)
        out.append(len(deal.hands))
        for hand in deal.hands:
            out.append(len(hand))
            out += bytes(sorted(hand))
        out.append(deal.upcard)
        out.append(len(deal.stock))
        out += bytes(deal.stock)
    return hashlib.sha256(bytes(out)).digest()


def seed_commitment(game_id: str, seed: bytes, presets: Sequence[Deal] = ()) -> str:
    """The published commitment (64 hex digits): SHA-256 over the tag, the game id, the seed and the presets'
    digest, each length-prefixed as docs/fairness.md says."""
    gid = game_id.encode()
    data = COMMITMENT_TAG + _u16(len(gid)) + gid + _u16(len(seed)) + seed + presets_digest(presets)
    return hashlib.sha256(data).hexdigest()


class FairnessError(Exception):
    """A game that does not verify: ``what`` names the first mismatch (stable words), ``message`` says it."""

    def __init__(self, what: str, message: str) -> None:
        super().__init__(f"{what}: {message}")
        self.what = what
        self.message = message


@dataclass(frozen=True, slots=True)
class Verified:
    """What a successful check covered."""

    hands: int  # deals recomputed and matched
    preset_hands: int  # of them, taken from the preset deals
    restocks: int  # restock shuffles recomputed and matched
    stock_draws: int  # cards drawn from a stock, each the expected top card

    def summary(self) -> str:
        """One line for people."""
        return (
            f"{self.hands} deal(s) ({self.preset_hands} preset), {self.restocks} restock(s) and "
            f"{self.stock_draws} stock draw(s) match the seed and the commitment"
        )


def _cards(texts: Iterable[str]) -> list[int]:
    return [parse_card(t) for t in texts]


class _Hand:
    """Where the checker stands in one hand: the expected deal, the stock (bottom to top) and the discard pile."""

    def __init__(self, number: int, deal: Deal) -> None:
        self.number = number
        self.deal = deal
        self.stock = list(deal.stock)
        self.pile = [deal.upcard]
        self.dealt: set[int] = set()
        self.restocks = 0


def verify_deals(
    game_id: str,
    rules: Rules,
    seed: bytes,
    commitment: str,
    presets: Sequence[Deal],
    events: Iterable[Mapping[str, Any]],
) -> Verified:
    """Check a game: the commitment binds (game id, seed, presets), and every deal, restock and stock draw in
    ``events`` (GetReplay's, with every card: kind, seat and the event's fields) is the one the seed and presets
    give. Raises FairnessError at the first mismatch."""
    if seed_commitment(game_id, seed, presets) != commitment.lower():
        raise FairnessError("commitment", "the commitment is not SHA-256 of this game id, seed and preset deals")
    hand: _Hand | None = None
    hands = preset_hands = restocks = draws = 0

    def finish(h: _Hand | None) -> None:
        if h is not None and len(h.dealt) != rules.players:
            raise FairnessError("deal", f"hand {h.number}: {len(h.dealt)} of {rules.players} hands were dealt")

    for position, e in enumerate(events):
        kind = e.get("kind")
        where = f"event {position} ({kind})"
        if kind == "hand_started":
            finish(hand)
            number, dealer = int(e["hand_no"]), int(e["dealer"])
            if number != hands:
                raise FairnessError("deal", f"{where}: hand {number} where hand {hands} was due")
            if number < len(presets):
                deal = presets[number]
                preset_hands += 1
            else:
                deal = seeded_deal(rules, dealer, seed, number)
            if deal.dealer != dealer:
                raise FairnessError("deal", f"{where}: hand {number} dealt by seat {dealer}, not {deal.dealer}")
            if parse_card(e["upcard"]) != deal.upcard:
                raise FairnessError("deal", f"{where}: hand {number} upcard {e['upcard']} is not the seed's")
            if int(e["stock_size"]) != len(deal.stock):
                raise FairnessError("deal", f"{where}: hand {number} stock of {e['stock_size']} cards")
            hand = _Hand(number, deal)
            hands += 1
        elif hand is None:
            continue  # nothing before the first deal to check
        elif kind == "dealt":
            seat = int(e["seat"])
            if "cards" not in e:
                raise FairnessError("incomplete", f"{where}: no cards (the events must be the referee's)")
            if not 0 <= seat < rules.players or seat in hand.dealt:
                raise FairnessError("deal", f"{where}: seat {seat} dealt twice or unknown")
            if sorted(_cards(e["cards"])) != sorted(hand.deal.hands[seat]):
                raise FairnessError("deal", f"{where}: hand {hand.number}, seat {seat} was not dealt the seed's cards")
            hand.dealt.add(seat)
        elif kind == "drew":
            if e.get("source") == "stock":
                if "card" not in e:
                    raise FairnessError("incomplete", f"{where}: no card (the events must be the referee's)")
                if not hand.stock or parse_card(e["card"]) != hand.stock[-1]:
                    raise FairnessError("stock", f"{where}: hand {hand.number}: {e['card']} is not the stock's top")
                hand.stock.pop()
                draws += 1
            else:
                if not hand.pile or parse_card(e["card"]) != hand.pile[-1]:
                    raise FairnessError("stock", f"{where}: {e['card']} is not the top of the discard pile")
                hand.pile.pop()
        elif kind == "discarded":
            hand.pile.append(parse_card(e["card"]))
        elif kind == "restocked":
            if "stock" not in e:
                raise FairnessError("incomplete", f"{where}: no stock (the events must be the referee's)")
            pile = hand.pile[:-1]
            label = f"restock:{hand.number}:{hand.restocks}"
            want = shuffled(pile, seed, label) if rules.restock == "shuffle" else list(reversed(pile))
            if _cards(e["stock"]) != want or hand.stock:
                raise FairnessError(
                    "restock", f"{where}: hand {hand.number}, restock {hand.restocks} is not the seed's"
                )
            hand.stock, hand.pile = want, hand.pile[-1:]
            hand.restocks += 1
            restocks += 1
    finish(hand)
    if hands == 0:
        raise FairnessError("incomplete", "no hand_started event: nothing was dealt")
    return Verified(hands, preset_hands, restocks, draws)
