"""Every in-process cache of the referee is bounded by entries and by (estimated) bytes: server.memo tables and
the state cache. (The whole process under load: tests/server/test_soak.py.)"""

from __future__ import annotations

import json

import pytest

import engine
from server import cache, codec, memo, service
from server.cache import StateCache, config_json, progress_json, state_entry_bytes
from server.memo import MIB, Memo
from server.store import StoredGame


def test_a_memo_table_is_bounded_by_entries_and_by_bytes() -> None:
    table: Memo[int, str] = Memo("test-table", share=1.0)
    table.max_entries, table.max_bytes = 10, 1000
    for i in range(100):
        assert table.put(i, f"v{i}", 50) == f"v{i}"
        assert len(table) <= 10 and table.nbytes <= 1000
    assert table.clears >= 9
    assert table.get(99) == "v99"
    big = "x" * 10
    assert table.put(-1, big, 5000) is big  # larger than the whole table: returned, not kept
    assert table.get(-1) is None and table.nbytes <= 1000
    for i in range(30):  # by bytes, before the count
        table.put(1000 + i, "y", 400)
        assert len(table) <= 2 and table.nbytes <= 1000


def test_configure_resizes_every_table_by_its_share() -> None:
    names = {t.name for t in memo.tables()}
    assert {"parsed_meta", "parsed_config", "public_seats", "presented_tokens", "move_dicts", "event_bodies",
            "hand_results", "hand_result_texts"} <= names  # fmt: skip
    try:
        memo.configure(100, 1.0)
        for table in memo.tables():
            assert table.max_entries == max(1, int(100 * table.share))
            assert table.max_bytes == max(1, int(MIB * table.share))
            assert len(table) == 0
        with pytest.raises(ValueError):
            memo.configure(0, 1.0)
    finally:
        memo.configure()


def test_the_referees_tables_stay_within_their_bounds_over_many_distinct_values() -> None:
    try:
        memo.configure(64, 0.05)
        for i in range(2000):
            token = f"st_token-{i:040d}"
            service.presented_hash(token)
            seat = {"kind": "bot", "name": f"n{i}", "auth": ""}
            meta = json.dumps({"profile": "gin", "seats": [seat], "spectator": "", "spectators": False}).encode()
            cache.public_seats(meta)
            codec._event_body("test", {"card": engine.card_text(i % 52), "n": i})
        for table in memo.tables():
            assert len(table) <= table.max_entries and table.nbytes <= table.max_bytes, table.name
    finally:
        memo.configure()


def _stored(game_id: str, state: engine.GameState, version: int) -> StoredGame:
    return StoredGame(game_id, progress_json(state), version, b'{"seats":[]}', config_json(state), None)


def test_the_state_cache_is_bounded_by_games_and_by_bytes() -> None:
    state = engine.new_game(engine.rules_from_profile("gin", players=2), b"0123456789abcdef0123456789abcdef")
    entry = state_entry_bytes(_stored("g", state, 0))
    by_count = StateCache(size=5, max_mib=100)
    by_bytes = StateCache(size=1000, max_mib=entry * 3.5 / MIB)
    for i in range(50):
        for states in (by_count, by_bytes):
            states.put(_stored(f"g{i}", state, 1), state)
            states.put(_stored(f"g{i}", state, 2), state)  # the same game again: replaced, not added
    assert len(by_count) == 5 and by_count.nbytes == 5 * entry
    assert len(by_bytes) == 3 and by_bytes.nbytes == 3 * entry
    assert by_count.latest("g49") is not None and by_count.latest("g44") is None  # the least recent went first
    by_count.forget("g49")
    assert len(by_count) == 4 and by_count.nbytes == 4 * entry


# A watcher's queue bounded by bytes: tests/server/test_fanout.py (test_a_watcher_too_slow_is_cut_...)
