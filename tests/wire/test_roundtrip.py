"""The one wire codec (``wire``) reads back what it writes: for every legal move and every view (every viewer)
along random matches of every profile, ``from_proto(to_proto(x)) == x``; and the server and the SDK refuse the
same malformed messages the same way (they are one codec)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine
import wire
from clients.sdk import convert
from rummy_pb.rummy.v1 import game_pb2 as pb
from server import codec, errors

CONFIGS: list[tuple[str, int | None]] = [(name, None) for name in engine.PROFILES] + [
    ("rummy", n) for n in (3, 4, 5, 6)
]


def _service_view(state: engine.GameState, viewer: int, version: int, clocks: bool) -> dict[str, Any]:
    """The view dict the service encodes: engine.view plus game_id, version, role, seats, legal moves, clocks."""
    role = "referee" if viewer == engine.REFEREE else "spectator" if viewer == engine.SPECTATOR else "seat"
    d = engine.view(state, viewer)
    d.update(game_id="g-1", version=version, role=role,
             seats=[{"name": f"P{i}", "kind": "bot" if i % 2 else "human", "open": i == 3}
                    for i in range(state.rules.players)])  # fmt: skip
    if role == "seat" and state.to_act == viewer and state.phase != "match_over":
        d["legal_moves"] = tuple(engine.legal_moves(state))
    if clocks:
        d["clocks"] = [{"seat": s, "remaining_ms": 1000 + s, "running": s == state.to_act, "auto_moves": s % 2,
                        "started_ms": 5 if s == state.to_act else None,
                        "deadline_ms": 1005 if s == state.to_act else None}
                       for s in range(state.rules.players)]  # fmt: skip
        d["deadline_ms"] = 1005 if state.to_act >= 0 else None
    return d


def _roundtrip_view(d: dict[str, Any]) -> dict[str, Any]:
    back = wire.view_from_proto(wire.view_to_proto(d))
    if "legal_moves" in back:
        back["legal_moves"] = tuple(back["legal_moves"])
    return back


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=st.sampled_from(CONFIGS), seed=st.integers(0, 2**32 - 1), clocks=st.booleans())
def test_every_legal_move_and_every_view_reads_back_as_it_was(
    config: tuple[str, int | None], seed: int, clocks: bool
) -> None:
    profile, players = config
    rules = engine.rules_from_profile(profile, players=players, max_hands=2, max_turns=40)
    rules_dict = rules.to_dict()
    rng = random.Random(seed)
    state = engine.new_game(rules, seed.to_bytes(16, "big"))
    viewers = [*range(rules.players), engine.SPECTATOR, engine.REFEREE]
    for version in range(400):
        for viewer in viewers:
            d = _service_view(state, viewer, version, clocks)
            assert _roundtrip_view(d) == d
            # the server's encoding (with its caches) is the wire's, byte for byte
            ours, theirs = codec.view_to_proto(d), wire.view_to_proto(d)
            assert ours.SerializeToString(deterministic=True) == theirs.SerializeToString(deterministic=True)
            if viewer >= 0 and not clocks:  # the typed view a bot receives: the same off the wire as off the engine
                assert wire.typed_view_from_proto(theirs, rules_dict) == engine.typed_view(state, viewer)
        if state.phase == "match_over":
            break
        legal = engine.legal_moves(state)
        for move in legal:
            assert wire.move_from_proto(wire.move_to_proto(move)) == move
        state, _ = engine.apply(state, state.to_act, rng.choice(legal))


def test_moves_with_melds_and_declarations_read_back() -> None:
    c = engine.parse_card
    run = engine.mask_of([c("AS"), c("2S"), c("3S")])
    sevens = engine.mask_of([c("7H"), c("7D"), c("7C")])
    moves: list[engine.Move] = [
        engine.Knock(c("TD"), (run, sevens)), engine.Knock(c("TD"), ()), engine.BigGin((run, sevens)),
        engine.BigGin(), engine.Declare(), engine.Declare((run,), ((c("4S"), 0), (c("7S"), 1))),
        engine.Declare((), ()), engine.LayOff(c("KC"), 7), engine.MeldMove(sevens),
    ]  # fmt: skip
    for move in moves:
        assert wire.move_from_proto(wire.move_to_proto(move)) == move


# --------------------------------------------------------------------------------------- strict, both sides

MALFORMED: list[tuple[pb.Move, str]] = [
    (pb.Move(), "MISSING_MOVE"),
    (pb.Move(meld=pb.Move.Meld(cards=["7H", "7D", "7H"])), "DUPLICATE_CARD"),
    (pb.Move(meld=pb.Move.Meld(cards=["7H", "7D", "7h"])), "DUPLICATE_CARD"),  # the same card, other spelling
    (pb.Move(knock=pb.Move.Knock(discard="TD", melds=pb.Melds(melds=[pb.Cards(cards=["AS", "AS", "AD"])]))),
     "DUPLICATE_CARD"),
    (pb.Move(declare=pb.Move.Declare(best=True, melds=[pb.Cards(cards=["AS", "2S", "3S"])])), "BAD_MOVE"),
    (pb.Move(declare=pb.Move.Declare(best=True, layoffs=[pb.LayOffCard(card="4S", meld_id=0)])), "BAD_MOVE"),
    (pb.Move(lay_off=pb.Move.LayOff(card="4S", meld_id=-1)), "BAD_MOVE"),
    (pb.Move(declare=pb.Move.Declare(layoffs=[pb.LayOffCard(card="4S", meld_id=0),
                                              pb.LayOffCard(card="4s", meld_id=1)])), "DUPLICATE_CARD"),  # twice
    (pb.Move(declare=pb.Move.Declare(melds=[pb.Cards(cards=["AS", "2S", "3S"])], layoffs=[pb.LayOffCard(card="3S")])),
     "DUPLICATE_CARD"),  # melded and laid off
    (pb.Move(knock=pb.Move.Knock(discard="3S", melds=pb.Melds(melds=[pb.Cards(cards=["AS", "2S", "3S"])]))),
     "DUPLICATE_CARD"),  # discarded and kept in a meld
    (pb.Move(discard=pb.Move.Discard(card="ZZ")), "INVALID_CARD"),
]  # fmt: skip


@pytest.mark.parametrize(("move", "code"), MALFORMED)
def test_the_server_and_the_sdk_refuse_the_same_moves_the_same_way(move: pb.Move, code: str) -> None:
    for read in (codec.move_from_proto, convert.move_from_proto, wire.move_from_proto):
        with pytest.raises((wire.Malformed, engine.InvalidMoveError)) as caught:
            read(move)
        assert getattr(caught.value, "code", None) == code
        status, reason, _ = errors.classify(caught.value)
        assert (status.name, reason) == ("INVALID_ARGUMENT", code)


def test_a_view_with_a_malformed_legal_move_is_refused_by_the_sdk() -> None:
    view = pb.GameView(legal_moves=[pb.Move(meld=pb.Move.Meld(cards=["7H", "7H", "7C"]))])
    with pytest.raises(wire.Malformed, match="DUPLICATE_CARD"):
        convert.legal_from_proto(view)


def test_options_and_timeout_policies_are_refused_the_same_way() -> None:
    with pytest.raises(wire.Malformed, match="INVALID_OPTION"):
        convert.options_from_proto({"target_score": pb.OptionValue()})
    with pytest.raises(wire.Malformed, match="INVALID_OPTION"):
        codec.options_from_proto({"target_score": pb.OptionValue()})
    with pytest.raises(wire.Malformed, match="INVALID_TIME_CONTROL"):
        convert.timeout_policy_from_proto(pb.TimeoutPolicy(kind=7))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        wire.option_to_proto(1.5)  # type: ignore[arg-type]


def test_the_wire_package_imports_only_the_engine_and_the_messages() -> None:
    import ast
    import pathlib
    import sys

    allowed = {"engine", "rummy_pb", "google", "wire", "__future__"} | set(sys.stdlib_module_names)
    for path in pathlib.Path(wire.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            for name in names:
                assert name.split(".")[0] in allowed, (path.name, name)
