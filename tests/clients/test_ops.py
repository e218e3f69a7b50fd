"""The SDK's calls without any I/O (clients.sdk.ops): each operation is driven here by hand, effect by effect, as
the blocking and the asyncio clients drive it, to show the decisions they share: the same request_id on every
resend, an unknown commit outcome resolved beyond the retry policy, and a watch resumed after the last event it
delivered. (Over real sockets, the same behaviour is tested in test_retry, test_commit_outcome, test_watch_resume.)"""

from __future__ import annotations

from typing import Any

import grpc
import pytest

import engine
from clients.sdk import COMMIT_OUTCOME_UNKNOWN, NO_RETRY, OUTCOME_RESENDS, RefereeError, RetryPolicy, ops
from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb


class _Offline(ops.Session[Any]):
    """A session without a channel: its operations are only stepped by hand."""

    def _open_channel(self, *args: Any) -> None:
        return None


def _session() -> _Offline:
    session = _Offline("127.0.0.1:1", "token", retry=RetryPolicy(attempts=3, initial_backoff=0.01))
    session._rules["g"] = engine.rules_from_profile("gin").to_dict()
    return session


def _drive(op: ops.Op[Any], answers: list[Any]) -> tuple[list[Any], Any]:
    """Step ``op``, answering each Send with the next of ``answers`` (a Sleep with None): its effects, its value."""
    effects: list[Any] = []
    answer: Any = None
    while True:
        done, effect = ops.step(op, answer)
        if done:
            return effects, effect
        effects.append(effect)
        answer = answers.pop(0) if isinstance(effect, ops.Send) else None


def _unavailable(reason: str = "") -> RefereeError:
    return RefereeError(grpc.StatusCode.UNAVAILABLE, reason, "down")


def test_a_move_is_resent_with_one_request_id_after_transient_failures() -> None:
    op = ops.submit_move(_session(), "g", engine.DrawStock(), expected_version=4)
    effects, result = _drive(op, [_unavailable(), _unavailable(), rpb.SubmitMoveResponse(version=5)])
    sends = [e.request for e in effects if isinstance(e, ops.Send) and isinstance(e.request, rpb.SubmitMoveRequest)]
    assert len(sends) == 3
    assert [type(e) for e in effects] == [ops.Send, ops.Sleep, ops.Send, ops.Sleep, ops.Send]
    assert len({r.request_id for r in sends}) == 1 and sends[0].expected_version == 4
    assert effects[0].metadata == (("authorization", "Bearer token"),)
    assert (result.version, result.attempts, result.request_id) == (5, 3, sends[0].request_id)


def test_an_unknown_commit_outcome_is_resolved_beyond_the_policy_and_reported_as_unknown() -> None:
    resolved = ops.submit_move(_session(), "g", engine.DrawStock(), retry=NO_RETRY)
    _, result = _drive(resolved, [_unavailable(COMMIT_OUTCOME_UNKNOWN), rpb.SubmitMoveResponse(version=1)])
    assert result.attempts == 2  # NO_RETRY, yet sent again: only a resend tells what happened
    never = ops.submit_move(_session(), "g", engine.DrawStock(), retry=NO_RETRY)
    with pytest.raises(RefereeError) as failed:
        _drive(never, [_unavailable(COMMIT_OUTCOME_UNKNOWN)] * (OUTCOME_RESENDS + 1))
    assert failed.value.reason == COMMIT_OUTCOME_UNKNOWN


def test_create_and_join_are_never_resent() -> None:
    with pytest.raises(RefereeError):
        _drive(ops.create_game(_session()), [_unavailable()])
    with pytest.raises(RefereeError):
        _drive(ops.join_game(_session(), "g", "Ann"), [_unavailable()])


def _event(version: int, index: int, kind: str = "drew") -> rpb.WatchGameResponse:
    return rpb.WatchGameResponse(event=pb.Event(version=version, index=index, kind=kind))


def test_a_watch_resumes_after_the_last_event_it_delivered() -> None:
    reconnected: list[int | None] = []
    watch = ops.WatchLoop(_session(), "g", 3, None, RetryPolicy(attempts=3, initial_backoff=0.01), 5.0,
                          reconnected.append)  # fmt: skip
    reads: list[Any] = [_event(4, 1), _event(4, 2), _unavailable(), _event(4, 2), _event(5, 1, "match_ended")]
    opened: list[rpb.WatchGameRequest] = []
    delivered: list[tuple[int, int]] = []
    op = watch._loop()
    answer: Any = None
    while True:
        done, effect = ops.step(op, answer)
        if done:
            break
        answer = None
        if isinstance(effect, ops.Open):
            opened.append(effect.request)
            answer = "stream"
        elif isinstance(effect, ops.Read):
            answer = reads.pop(0) if reads else ops.END
        elif isinstance(effect, ops.Deliver):
            assert isinstance(effect.item, dict)
            delivered.append((effect.item["version"], effect.item["index"]))
    assert delivered == [(4, 1), (4, 2), (5, 1)]  # (4, 2) again after the resumption: dropped
    assert [(r.after_version, r.after_index) for r in opened] == [(3, 0), (4, 2)]
    assert not opened[0].HasField("after_index")
    assert reconnected == [4] and watch.reconnects == 1 and watch.cursor.ended


def _quiet_cuts(pings: list[Any]) -> tuple[int, BaseException | None]:
    """A watch whose every stream is cut (UNAVAILABLE, no reason) before anything new, each cut followed by a Ping
    answered with the next of ``pings``, until they run out; then the match ends. (Opens, the error raised.)"""
    watch = ops.WatchLoop(_session(), "g", 3, None, RetryPolicy(attempts=3, initial_backoff=0.01), 5.0, None)
    op, answer, opens, last = watch._loop(), None, 0, [_event(4, 1, "match_ended")]
    while True:
        try:
            done, effect = ops.step(op, answer)
        except RefereeError as exc:
            return opens, exc
        if done:
            return opens, None
        answer = None
        if isinstance(effect, ops.Open):
            opens += 1
            answer = "stream"
        elif isinstance(effect, ops.Read):
            answer = _unavailable() if pings else (last.pop() if last else ops.END)
        elif isinstance(effect, ops.Send):
            assert effect.method == "Ping"
            answer = pings.pop(0)


def test_a_watch_cut_while_quiet_counts_no_failure_while_the_referee_answers_a_ping() -> None:
    assert _quiet_cuts([rpb.PingResponse()] * 6) == (7, None)  # 6 cuts in a row, 3 attempts: the referee is there
    opens, error = _quiet_cuts([_unavailable()] * 6)  # ... and while it does not, the retry policy bounds them
    assert opens == 3 and isinstance(error, RefereeError) and error.code == grpc.StatusCode.UNAVAILABLE
