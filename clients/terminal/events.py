"""What happened, in words: one line per event of the WatchGame stream, and the reveal at the end of a hand.

Events are the SDK's dicts (``engine.event_for`` shape: ``kind``, ``seat`` and the event's fields, cards as text).
``names`` gives each seat's name as the human reads it (their own seat is "You").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import engine
from clients.terminal.render import Style, cards, hand_line, meld_line

_REASONS = {
    "knock": "{w} knocked and won",
    "gin": "{w} went gin",
    "big_gin": "{w} went big gin",
    "undercut": "{w} undercut the knock",
    "tie": "a tie: nobody scores",
    "went_out": "{w} went out",
    "stock_end": "the stock ran out: a drawn hand, no score",
    "turn_cap": "the turn limit was reached: a drawn hand, no score",
    "no_cards_left": "no cards left to draw: a drawn hand, no score",
    "stalled": "nothing was melded since the last restock: a drawn hand, no score",
}


def describe(
    event: Mapping[str, Any], names: Sequence[str], style: Style, rules: Mapping[str, Any] | None = None
) -> str | None:
    """One event as a line (or a few), or None for events not worth a line (``dealt``: the hand is drawn).
    ``rules`` (the game's options) adds what a variant makes of the deal (Oklahoma's knock limit)."""
    kind = event["kind"]
    seat = event.get("seat", -1)
    who = names[seat] if isinstance(seat, int) and 0 <= seat < len(names) else "?"
    c = str(event.get("card") or "")
    if kind == "hand_started":
        return _hand_started(event, names, style, rules or {})
    if kind == "drew":
        if event.get("source") == "stock":
            return f"{who} drew {cards([c], style)} from the stock." if c else f"{who} drew from the stock."
        return f"{who} took {cards([c], style)} from the discard pile."
    if kind == "passed":
        return f"{who} passed on {cards([c], style)}." if c else f"{who} passed."
    if kind == "discarded":
        return f"{who} discarded {cards([c], style)}."
    if kind == "knocked":
        return _knocked(event, who, names, style)
    if kind == "big_gin":
        return style.bold(f"{who} went BIG GIN:") + "\n" + _melds(event.get("melds", ()), names, style)
    if kind == "melded":
        meld = event["meld"]
        return f"{who} melded #{meld['id']}: {cards(meld['cards'], style)}."
    if kind == "laid_off":
        return f"{who} laid off {cards([c], style)} on #{event['meld_id']}."
    if kind == "declared":
        return f"{who} declared: deadwood {event['deadwood']}."
    if kind == "restocked":
        how = "turned over" if event.get("mode") == "turn_over" else "shuffled"
        return f"The discard pile was {how} into a new stock of {event.get('stock_size')} cards."
    if kind == "hand_ended":
        return reveal(event, names, style)
    if kind == "match_ended":
        return match_over(event, names, style)
    if kind == "timed_out":
        then = "the match is lost on time" if event.get("forfeit") else "the referee moves instead"
        return style.bold(f"{who}: out of time, {then}.")
    if kind == "auto_moved":
        return f"The referee played {_move_words(event.get('move'))} for {who} " \
               f"({_ordinal(int(event.get('auto_moves', 1)))} in a row)."
    return None  # dealt (the hand is drawn), clock_started and clock_stopped (the clocks line shows them)


def _move_words(move: object) -> str:
    if not isinstance(move, Mapping):
        return "a move"
    try:
        return engine.move_text(engine.move_from_dict(dict(move)))
    except (engine.RuleError, KeyError, TypeError, ValueError):
        return "a move"


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _hand_started(event: Mapping[str, Any], names: Sequence[str], style: Style, rules: Mapping[str, Any]) -> str:
    dealer, first = names[int(event["dealer"])], names[int(event["to_act"])]
    deals = "you deal" if dealer == "You" else f"{dealer} deals"
    text = f"Hand {int(event['hand_no']) + 1} is dealt: {deals}, upcard {cards([event['upcard']], style)}"
    if rules.get("oklahoma"):
        limit = event.get("knock_limit")
        text += f" (Oklahoma: knock limit {limit}" if limit else " (Oklahoma: gin only"
        text += ", spades double)" if rules.get("spades_double") and event["upcard"][-1] == "S" else ")"
    return style.bold(text) + (", you play first." if first == "You" else f", {first} plays first.")


def _knocked(event: Mapping[str, Any], who: str, names: Sequence[str], style: Style) -> str:
    # the discard has a line of its own (the "discarded" event just before)
    head = f"{who} went GIN:" if event.get("gin") else f"{who} KNOCKED with {event['deadwood']} deadwood:"
    lines = [style.bold(head), _melds(event.get("melds", ()), names, style)]
    if event.get("deadwood_cards"):
        lines.append(f"  deadwood: {cards(event['deadwood_cards'], style)}")
    return "\n".join(lines)


def _melds(melds: Sequence[Mapping[str, Any]], names: Sequence[str], style: Style) -> str:
    return "\n".join(f"  {meld_line(int(m['id']), m['cards'], names[int(m['owner'])], style)}" for m in melds)


def reveal(event: Mapping[str, Any], names: Sequence[str], style: Style) -> str:
    """The end of a hand: how it ended, every hand face up, the melds, the hand score and the match score."""
    winner = event.get("winner")
    w = names[winner] if isinstance(winner, int) and 0 <= winner < len(names) else "nobody"
    how = _REASONS.get(str(event.get("reason")), str(event.get("reason"))).format(w=w)
    lines = [style.bold(f"━━ Hand {int(event['hand_no']) + 1} is over: {how}. ━━")]
    lines.append("Every hand, face up:")
    width = max(len(n) for n in names)
    for seat, (hand, value) in enumerate(zip(event.get("hands", ()), event.get("hand_values", ()), strict=False)):
        shown = f"{hand_line(hand, style)}   (worth {value})" if hand else "(every card melded)"
        lines.append(f"  {names[seat]:<{width}}  {shown}")
    if event.get("melds"):
        lines.append("Melds on the table:")
        lines.append(_melds(event["melds"], names, style))
    if "knocker_deadwood" in event and "defender_deadwood" in event:
        lines.append(f"Knocker's deadwood {event['knocker_deadwood']}, defender's deadwood "
                     f"{event['defender_deadwood']}.")  # fmt: skip
    if isinstance(winner, int) and winner >= 0:
        extra = " (going rummy: multiplied)" if event.get("going_rummy") else ""
        lines.append(style.bold(f"Hand score: {w} +{event.get('points', 0)}{extra}"))
    else:
        lines.append(style.bold("Hand score: none (a drawn hand)"))
    scores = event.get("scores", ())
    lines.append("Match score: " + " · ".join(f"{names[i]} {s}" for i, s in enumerate(scores)))
    return "\n".join(lines)


def match_over(event: Mapping[str, Any], names: Sequence[str], style: Style) -> str:
    """The match result: totals (bonuses included) and the winner or winners."""
    totals = event.get("totals", ())
    winners = [names[i] for i in event.get("winners", ()) if 0 <= i < len(names)]
    if len(winners) == 1:
        head = "You win the match!" if winners[0] == "You" else f"{winners[0]} wins the match."
    else:
        head = f"A shared win: {' and '.join(winners)}."
    lines = [style.bold(f"━━ Match over. {head} ━━")]
    lines.append("Totals (bonuses included): " + " · ".join(f"{names[i]} {t}" for i, t in enumerate(totals)))
    return "\n".join(lines)
