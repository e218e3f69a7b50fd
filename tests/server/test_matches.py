"""End-to-end matches through the real server and Redis.

Scored scenarios: one match per profile from organizer preset deals, with the scores worked out by hand from
RULES.md. Random matches: one per profile from an organizer seed, played by a bot to the end, then re-played
move by move in the local engine, which must agree on every event and the final result.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

import grpc
import pytest
import redis
from google.protobuf import json_format

import engine
from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb
from server.redis_launcher import RedisProcess
from server.store import game_key
from tests.server.refkit import (
    ALL_CARDS,
    DEFENDER,
    GIN_KNOCK_DEAL,
    GIN_KNOCK_MOVES,
    KNOCKER,
    ORGANIZER,
    Client,
    Game,
    bot_move,
    deal,
    expect_error,
    move_from_text,
)


@dataclass(frozen=True)
class Scenario:
    profile: str
    names: tuple[str, ...]
    deals: tuple[pb.PresetDeal, ...]
    moves: tuple[tuple[int, str], ...]  # (seat, move text)
    options: dict[str, pb.OptionValue]
    target: int
    totals: tuple[int, ...]  # final totals, bonuses included
    hand_points: tuple[int, ...]  # points of each hand, in order
    winners: tuple[int, ...]


GIN_KNOCK = GIN_KNOCK_DEAL


def _mirrored(dealer: int) -> pb.PresetDeal:
    """The same hand with the seats swapped: the non-dealer ``1 - dealer`` holds the knocker's cards."""
    hands = [DEFENDER, DEFENDER]
    hands[1 - dealer] = KNOCKER
    return deal(dealer, hands, "QC", "2C")


SCENARIOS = [
    Scenario("gin", ("Ann", "Bob"), (GIN_KNOCK,), GIN_KNOCK_MOVES, {}, 20, (0, 25), (25,), (1,)),
    # take_or_pass: both pass, seat 1 must draw (8C), knocks with 9C: deadwood 8C = 8. Seat 0 melds JS-QS-KS and
    # AC-2C-3C, lays off 4S 7H TD, keeps 5D = 5 <= 8: undercut, 10 + (8 - 5) = 13. Bonuses: box 20, and the
    # shutout bonus 200 instead of the game bonus (the loser scored no hand point): 13 + 20 + 200.
    Scenario(
        "gin-standard", ("Ann", "Bob"),
        (deal(0, ["4S 7H TD JS QS KS AC 2C 3C 5D", "AS 2S 3S 4H 5H 6H 7D 8D 9D 9C"], "QC", "8C"),),
        ((1, "pass"), (0, "pass"), (1, "draw stock"), (1, "knock 9C"), (0, "declare best")),
        {}, 10, (233, 0), (13,), (0,),
    ),
    # Oklahoma: the upcard 5S sets the knock limit to 5 and, a spade, doubles the hand: (27 - 2) * 2 = 50.
    Scenario(
        "oklahoma-gin", ("Ann", "Bob"), (deal(0, [DEFENDER, KNOCKER], "5S", "2C"),), GIN_KNOCK_MOVES,
        {}, 40, (0, 50), (50,), (1,),
    ),
    # Hollywood, target 10: seat 1's win goes to game 1 (which ends); seat 0's next win to game 2 (game 1 has
    # ended), which ends; seat 1's third win to game 3. All three ended: 25 + 25 for seat 1, 25 for seat 0.
    Scenario(
        "hollywood-gin", ("Ann", "Bob"), (_mirrored(0), _mirrored(1), _mirrored(0)),
        GIN_KNOCK_MOVES + ((0, "draw stock"), (0, "knock KC"), (1, "declare best")) + GIN_KNOCK_MOVES,
        {}, 10, (25, 50), (25, 25, 25), (1,),
    ),
    # Rummy, 3 seats of 7 cards, seat 1 first: draws KC, melds AS-2S-3S-4S and 7H-7D-7C, discards KC: out in one
    # turn (going rummy, x2). Left in hands: seat 0 KH QH JH 9S 8S 2D 3D = 52, seat 2 AH AD 5C 6C TD JD QD = 43.
    Scenario(
        "rummy", ("Ann", "Bob", "Cy"),
        (deal(0, ["KH QH JH 9S 8S 2D 3D", "AS 2S 3S 4S 7H 7D 7C", "AH AD 5C 6C TD JD QD"], "9H", "KC"),),
        ((1, "draw stock"), (1, "meld AS 2S 3S 4S"), (1, "meld 7H 7D 7C"), (1, "discard KC")),
        {}, 150, (0, 190, 0), (190,), (1,),
    ),
    # Rummy g4a with aces high and low: J-Q-K-A of spades is a run; an ace left in hand counts 11; no rummy
    # multiplier. Seat 0 AH AD 2C 3C 9S 8S 4D = 48, seat 2 KH QH JH TH 5C 6C 2D = 53: 101.
    Scenario(
        "rummy-g4a", ("Ann", "Bob", "Cy"),
        (deal(0, ["AH AD 2C 3C 9S 8S 4D", "JS QS KS AS 7H 7D 7C", "KH QH JH TH 5C 6C 2D"], "9H", "KC"),),
        ((1, "draw stock"), (1, "meld JS QS KS AS"), (1, "meld 7H 7D 7C"), (1, "discard KC")),
        {"ace_high_low": pb.OptionValue(bool_value=True)}, 100, (0, 101, 0), (101,), (1,),
    ),
]  # fmt: skip


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.profile for s in SCENARIOS])
def test_preset_match_scores(client: Client, scenario: Scenario) -> None:
    game = client.create(
        scenario.profile, scenario.names, token=ORGANIZER, preset_deals=scenario.deals, options=scenario.options,
        match=rpb.MatchSettings(target_score=scenario.target),
    )  # fmt: skip
    assert game.created.settings.organizer_deals
    assert game.created.settings.options["target_score"].int_value == scenario.target
    hand_points = []
    for n, (seat, text) in enumerate(scenario.moves, 1):
        response = client.move(game, game.tokens[seat], move_from_text(text), expected_version=n - 1)
        assert response.version == n
        hand_points += [int(e.data["points"]) for e in response.events if e.kind == "hand_ended"]
    assert tuple(hand_points) == scenario.hand_points
    view = client.view(game, game.tokens[0])
    assert view.phase == pb.PHASE_MATCH_OVER and not view.HasField("to_act")
    assert tuple(view.result.totals) == scenario.totals
    assert tuple(view.result.winners) == scenario.winners
    assert view.last_hand.points == scenario.hand_points[-1]


PROFILES = ["gin", "gin-standard", "oklahoma-gin", "hollywood-gin", "rummy", "rummy-g4a"]


def _local_replay(game: Game, settings: pb.GameSettings, seed: bytes, moves: list[tuple[int, pb.Move]]) -> tuple[
        list[dict[str, object]], dict[str, object]]:  # fmt: skip
    from server import codec

    options = {k: getattr(v, str(v.WhichOneof("value"))) for k, v in settings.options.items()}
    state, dealt = engine.new_game_with_events(engine.Rules.from_dict(options), seed)
    events: list[dict[str, object]] = [engine.event_for(e, engine.REFEREE) for e in dealt]
    for seat, move in moves:
        state, happened = engine.apply(state, seat, codec.move_from_proto(move))
        events += [engine.event_for(e, engine.REFEREE) for e in happened]
    return events, engine.view(state, engine.REFEREE)


@pytest.mark.parametrize("profile", PROFILES)
def test_random_match_agrees_with_the_engine(client: Client, profile: str) -> None:
    seed = bytes(range(32))
    names = ("Ann", "Bob", "Cy") if profile.startswith("rummy") else ("Ann", "Bob")
    game = client.create(profile, names, token=ORGANIZER, seed=seed, match=rpb.MatchSettings(target_score=40))
    rng = random.Random(profile)
    played: list[tuple[int, pb.Move]] = []
    view = client.view(game, game.tokens[0])
    while view.phase != pb.PHASE_MATCH_OVER:
        assert len(played) < 20_000, "the match does not end"
        seat = view.to_act
        own = client.view(game, game.tokens[seat]) if seat != view.viewer_seat else view
        move = bot_move(own, rng)
        view = client.move(game, game.tokens[seat], move, expected_version=own.version).view
        played.append((seat, move))
    pages = client.replay(game)
    served = [json_format.MessageToDict(e.data) | {"kind": e.kind} for p in pages for e in p.events]
    events, final = _local_replay(game, game.created.settings, seed, played)
    expected = [json.loads(json.dumps({k: v for k, v in e.items() if k != "seat"})) for e in events]
    assert len(served) == len(expected)
    for got, want in zip(served, expected, strict=True):
        assert got == json.loads(json.dumps(want), parse_int=float)
    last = pages[-1].current
    assert last.version == len(played)
    assert last.hands_played >= (3 if profile == "hollywood-gin" else 1)
    assert list(last.result.totals) == final["result"]["totals"]  # type: ignore[index]
    assert [s.score for s in last.seats] == final["scores"]


def test_a_move_writes_the_progress_not_the_config(client: Client, redis_server: RedisProcess) -> None:
    """The game's configuration (rules, seed, up to 200 preset deals) is written once, at creation; a move writes
    only the rest of the state, so a tournament game's moves cost no more than any other's."""
    presets = [deal(i % 2, [" ".join(ALL_CARDS[:10]), " ".join(ALL_CARDS[10:20])], ALL_CARDS[20]) for i in range(200)]
    game = client.create("gin", token=ORGANIZER, preset_deals=presets)
    stored = redis.Redis.from_url(redis_server.url)
    config = stored.hget(game_key(game.game_id), "config")
    assert config is not None and len(json.loads(config)["presets"]) == 200
    view = client.view(game, game.tokens[0])
    for _ in range(6):
        if view.viewer_seat != view.to_act:
            view = client.view(game, game.tokens[view.to_act])
        view = client.move(game, game.tokens[view.to_act], bot_move(view, random.Random(1))).view
    assert stored.hget(game_key(game.game_id), "config") == config
    assert stored.hget(game_key(game.game_id), "version") == b"6"
    progress = json.loads(stored.hget(game_key(game.game_id), "state") or b"{}")
    assert progress["phase"] == engine.PHASES[view.phase - 1] and not {"rules", "seed", "presets"} & set(progress)


@pytest.mark.parametrize("layout", ["whole state", "config of the engine's format"])
def test_a_game_stored_by_an_earlier_version_is_refused_and_left_unchanged(
    client: Client, redis_server: RedisProcess, layout: str
) -> None:
    """Games stored by an earlier layout (the whole state in "state", or an engine-format config, an event stream
    and a "start" field) are refused with a clear reason by every RPC, and nothing of them is written: the read
    path never writes."""
    game = client.create("gin")
    stored = redis.Redis.from_url(redis_server.url)
    fields = stored.hgetall(game_key(game.game_id))
    old_id = game.game_id + "old"  # a game this referee never saw, stored the earlier way
    engine_config = {"v": 1, "rules": engine.rules_from_profile("gin").to_dict(), "seed": "00" * 32, "presets": []}
    old_fields = {k: v for k, v in fields.items() if k != b"config"}
    if layout == "whole state":
        old_fields[b"state"] = json.dumps({**engine_config, **json.loads(fields[b"state"])}).encode()
    else:
        old_fields[b"config"] = json.dumps(engine_config).encode()
    old_fields[b"start"] = b"{}"
    stored.hset(game_key(old_id), mapping=old_fields)
    stored.xadd(f"game:{{{old_id}}}:events", {"e": "{}"}, id="0-1")
    before = stored.hgetall(game_key(old_id))
    old = Game(old_id, game.tokens, game.spectator, game.created)

    with expect_error(grpc.StatusCode.FAILED_PRECONDITION, "STORED_BY_EARLIER_VERSION"):
        client.view(old, old.tokens[0])
    with expect_error(grpc.StatusCode.FAILED_PRECONDITION, "STORED_BY_EARLIER_VERSION"):
        client.move(old, old.tokens[0], move_from_text("draw stock"), request_id="r")
    assert stored.hgetall(game_key(old_id)) == before
    assert sorted(stored.keys(f"game:{{{old_id}}}*")) == [
        game_key(old_id).encode(),
        f"game:{{{old_id}}}:events".encode(),
    ]
