"""Moves on the wire: ``pb.Move`` <-> ``engine.Move``, strict both ways (the server and the SDK refuse the same
messages: no move set, a card named twice (in one list, or laid off twice or melded and laid off in a
declaration), a negative meld id, ``best`` together with explicit melds)."""

from __future__ import annotations

import engine
from rummy_pb.rummy.v1 import game_pb2 as pb
from wire.cards import card_from_proto, cards_from_proto, cards_to_proto, melds_from_proto, melds_to_proto
from wire.errors import Malformed


def meld_id_from_proto(value: int) -> int:
    """A table meld id of a move (int32 on the wire): ids count from 0, so a negative one is a malformed move
    (BAD_MOVE); one that is not on the table is the rules' UNKNOWN_MELD."""
    if value < 0:
        raise Malformed("BAD_MOVE", f"a meld id is 0 or more, not {value}")
    return value


def move_from_proto(move: pb.Move) -> engine.Move:
    """The engine move of a Move message (exactly one oneof field set)."""
    which = move.WhichOneof("move")
    if which is None:
        raise Malformed("MISSING_MOVE", "the request has no move")
    if which == "draw_stock":
        return engine.DrawStock()
    if which == "draw_discard":
        return engine.DrawDiscard()
    if which == "pass_turn":
        return engine.Pass()
    if which == "done":
        return engine.Done()
    if which == "discard":
        return engine.Discard(card_from_proto(move.discard.card))
    if which == "knock":
        knock = move.knock
        knocked = engine.Knock(
            card_from_proto(knock.discard), melds_from_proto(knock.melds.melds) if knock.HasField("melds") else None
        )
        if engine.named_twice(knocked) is not None:  # as the engine refuses it
            raise Malformed("DUPLICATE_CARD", f"card {engine.card_text(knocked.discard)} is discarded and melded")
        return knocked
    if which == "big_gin":
        big = move.big_gin
        return engine.BigGin(melds_from_proto(big.melds.melds) if big.HasField("melds") else None)
    if which == "meld":
        return engine.MeldMove(cards_from_proto(move.meld.cards))
    if which == "lay_off":
        return engine.LayOff(card_from_proto(move.lay_off.card), meld_id_from_proto(move.lay_off.meld_id))
    if which != "declare":  # a field of the oneof this codec does not know yet: never read as another move
        raise Malformed("BAD_MOVE", f"a move of kind {which!r} is not known to this version")
    declare = move.declare
    if declare.best:
        if declare.melds or declare.layoffs:
            raise Malformed("BAD_MOVE", "declare: best excludes explicit melds and layoffs")
        return engine.Declare()
    layoffs = tuple((card_from_proto(x.card), meld_id_from_proto(x.meld_id)) for x in declare.layoffs)
    declared = engine.Declare(melds_from_proto(declare.melds), layoffs)
    twice = engine.named_twice(declared)  # as the engine refuses it
    if twice is not None:
        raise Malformed("DUPLICATE_CARD", f"card {engine.card_text(twice)} named twice in the declaration")
    return declared


def move_to_proto(move: engine.Move) -> pb.Move:
    """The Move message of an engine move (a message to send, or to copy from: callers may cache it)."""
    match move:
        case engine.DrawStock():
            return pb.Move(draw_stock=pb.Move.DrawStock())
        case engine.DrawDiscard():
            return pb.Move(draw_discard=pb.Move.DrawDiscard())
        case engine.Pass():
            return pb.Move(pass_turn=pb.Move.PassTurn())
        case engine.Done():
            return pb.Move(done=pb.Move.Done())
        case engine.Discard(card=c):
            return pb.Move(discard=pb.Move.Discard(card=engine.card_text(c)))
        case engine.Knock(discard=c, melds=melds):
            knock = pb.Move.Knock(discard=engine.card_text(c))
            if melds is not None:
                knock.melds.SetInParent()
                knock.melds.melds.extend(melds_to_proto(melds))
            return pb.Move(knock=knock)
        case engine.BigGin(melds=melds):
            big = pb.Move.BigGin()
            if melds is not None:
                big.melds.SetInParent()
                big.melds.melds.extend(melds_to_proto(melds))
            return pb.Move(big_gin=big)
        case engine.MeldMove(cards=m):
            return pb.Move(meld=pb.Move.Meld(cards=cards_to_proto(m)))
        case engine.LayOff(card=c, meld_id=i):
            return pb.Move(lay_off=pb.Move.LayOff(card=engine.card_text(c), meld_id=i))
        case engine.Declare(melds=None, layoffs=None):
            return pb.Move(declare=pb.Move.Declare(best=True))
        case engine.Declare(melds=melds, layoffs=layoffs):
            return pb.Move(declare=pb.Move.Declare(
                melds=melds_to_proto(melds or ()),
                layoffs=[pb.LayOffCard(card=engine.card_text(c), meld_id=i) for c, i in layoffs or ()],
            ))  # fmt: skip
    raise TypeError(f"not a move of the wire: {move!r}")
