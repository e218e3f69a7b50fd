"""Tournament ratings: Bradley-Terry on the Elo scale with bootstrap intervals."""

from __future__ import annotations

from clients.tournament.ratings import BASE, Result, head_to_head, ratings


def test_stronger_entrant_rates_higher_with_an_interval_around_it() -> None:
    results = [Result("strong", "weak", 1.0)] * 18 + [Result("strong", "weak", 0.0)] * 2
    table = {r.name: r for r in ratings(results, bootstrap=100)}
    strong, weak = table["strong"], table["weak"]
    assert strong.elo > weak.elo
    assert strong.low <= strong.elo <= strong.high
    assert strong.wins == 18 and strong.losses == 2 and strong.games == 20
    assert abs((strong.elo + weak.elo) / 2 - BASE) < 1e-6
    # 90% score is about +380 Elo; the prior pulls it in a little
    assert 250 < strong.elo - weak.elo < 450


def test_equal_results_give_equal_ratings_and_draws_count_half() -> None:
    results = [Result("a", "b", 0.5)] * 4 + [Result("a", "b", 1.0), Result("a", "b", 0.0)]
    table = {r.name: r for r in ratings(results, bootstrap=20)}
    assert abs(table["a"].elo - table["b"].elo) < 1e-6
    assert table["a"].score == 0.5 and table["a"].draws == 4


def test_transitive_order_and_head_to_head() -> None:
    results = [Result("a", "b", 1.0)] * 5 + [Result("b", "c", 1.0)] * 5 + [Result("a", "c", 1.0)] * 5
    order = [r.name for r in ratings(results, bootstrap=10)]
    assert order == ["a", "b", "c"]
    h2h = head_to_head(results)
    assert h2h[("a", "b")] == (5.0, 5) and h2h[("b", "a")] == (0.0, 5)


def test_unbeaten_entrant_stays_finite() -> None:
    table = ratings([Result("x", "y", 1.0)] * 3, bootstrap=10)
    assert all(abs(r.elo) < 10_000 for r in table)
