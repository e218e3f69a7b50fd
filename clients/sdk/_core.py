"""What the blocking and the asyncio clients share: channel options, request building, answer parsing, and the
cursor that lets a watch resume without a gap or a duplicate."""

from __future__ import annotations

import ipaddress
import json
import socket
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import grpc

import engine
from clients.sdk import convert
from clients.sdk.errors import RefereeError
from clients.sdk.values import (
    Analysis,
    CreatedGame,
    GameInfo,
    GameSnapshot,
    JoinedSeat,
    MoveResult,
    Replay,
    RetryPolicy,
    SeatSpec,
    Settings,
    TimeControl,
    TimeoutPolicy,
)
from engine.events import EventDict
from rummy_pb.rummy.v1 import game_pb2 as pb
from rummy_pb.rummy.v1 import referee_pb2 as rpb

DEFAULT_TIMEOUT = 10.0
#: A watch stream is renewed (resumed) after this long, so that it has a deadline like every other call.
DEFAULT_WATCH_TIMEOUT = 300.0
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
MAX_SEQ = 2**64 - 1
#: ``after_version`` of a watch from the very start: every event of the game, the first deal's (version 0) too.
FROM_START = -1

#: Channel arguments: reconnect quickly after a server restart, notice a dead peer on idle watch streams. (Not
#: ``grpc.min_reconnect_backoff_ms``: gRPC takes it as the least time a connection attempt is given, 20 s by
#: default; at 100 ms a referee slow to send its SETTINGS frame, loaded or far away, failed the first call.)
CHANNEL_OPTIONS: tuple[tuple[str, int], ...] = (
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 2000),
    ("grpc.keepalive_time_ms", 20_000),  # the server accepts pings every 10 s or more
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.enable_retries", 0),  # the SDK retries itself (same request_id); no hidden transparent resends
)

Seat = str | SeatSpec

#: The service config of a channel over several referees: round_robin over those it is connected to. (No
#: client-side health checking: grpcio for Python does not run it, a healthCheckConfig here opens no Watch.)
BALANCED_SERVICE_CONFIG = json.dumps({"loadBalancingConfig": [{"round_robin": {}}]})
_SCHEMES = ("dns:", "ipv4:", "ipv6:", "unix:", "unix-abstract:", "vsock:", "xds:")


def addresses(target: str | Sequence[str]) -> list[str]:
    """The referee addresses of ``target``: "host:port", a comma-separated list of them, or a sequence."""
    parts = [target] if isinstance(target, str) and target.startswith(_SCHEMES) else (
        target.split(",") if isinstance(target, str) else list(target))  # fmt: skip
    found = [p.strip() for p in parts if p.strip()]
    if not found:
        raise ValueError(f"no referee address in {target!r}")
    return found


def _split_host_port(address: str) -> tuple[str, str]:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ValueError(f"a referee address is host:port, not {address!r}")
    return host.removeprefix("[").removesuffix("]"), port


def _resolved(address: str) -> list[tuple[int, str]]:
    """The (IP version, "ip:port") of ``address``, a name resolved now (every address it has, IPv4 first)."""
    host, port = _split_host_port(address)
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        try:
            infos = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
        except socket.gaierror as exc:
            raise ValueError(f"cannot resolve the referee {address!r}: {exc}") from None
        ips = sorted({ipaddress.ip_address(info[4][0]) for info in infos}, key=lambda a: (a.version, str(a)))
    else:
        ips = [ip]
    return [(a.version, f"{a}:{port}" if a.version == 4 else f"[{a}]:{port}") for a in ips]


def channel_target(target: str | Sequence[str]) -> tuple[str, list[tuple[str, Any]]]:
    """The gRPC target and the channel options for ``target``: one address as it is; several ("host:port,
    host:port", or a sequence) as one channel balancing calls over all of them with ``round_robin``, each
    referee used while it is connected (names are resolved once, now; the IPv4 addresses are
    used when there are any, else the IPv6 ones). The channel's authority (the name a TLS certificate is checked
    against) is then the first address's host."""
    found = addresses(target)
    if len(found) == 1:
        return found[0], []
    resolved = [r for address in found for r in _resolved(address)]
    version = 4 if any(v == 4 for v, _ in resolved) else 6
    unique = list(dict.fromkeys(a for v, a in resolved if v == version))
    options: list[tuple[str, Any]] = [
        ("grpc.service_config", BALANCED_SERVICE_CONFIG),
        ("grpc.default_authority", found[0]),
    ]
    return f"ipv{version}:{','.join(unique)}", options


def channel_credentials(
    credentials: grpc.ChannelCredentials | None,
    tls: bool,
    ca_file: str | Path | None,
    client_cert_file: str | Path | None,
    client_key_file: str | Path | None,
) -> grpc.ChannelCredentials | None:
    """The credentials of the client's channel: ``credentials`` when given; else TLS when ``tls`` or any file is
    given (the server checked against ``ca_file``, by default the system's roots; a client certificate and its key
    for a server that asks for one: mutual TLS); else None (plaintext)."""
    if credentials is not None:
        return credentials
    if not (tls or ca_file or client_cert_file or client_key_file):
        return None
    if (client_cert_file is None) != (client_key_file is None):
        raise ValueError("a client certificate needs its key (client_key_file), and a key its certificate")
    return grpc.ssl_channel_credentials(
        root_certificates=Path(ca_file).read_bytes() if ca_file else None,
        private_key=Path(client_key_file).read_bytes() if client_key_file else None,
        certificate_chain=Path(client_cert_file).read_bytes() if client_cert_file else None,
    )
Metadata = tuple[tuple[str, str], ...]


#: The reason of a SubmitMove answered UNAVAILABLE when the referee cannot know whether the move was committed
#: (its storage took the write but did not confirm it in time). Only a resend with the same request_id tells:
#: the original answer if it was applied, else the move is applied now.
COMMIT_OUTCOME_UNKNOWN = "COMMIT_OUTCOME_UNKNOWN"
#: Resends of a move whose outcome is unknown, beyond (not counted in) the retry policy's attempts.
OUTCOME_RESENDS = 8


class Resends:
    """When a failed send is sent again: transient failures while the retry policy has attempts left; and a move
    answered COMMIT_OUTCOME_UNKNOWN (``resolve_unknown``) up to OUTCOME_RESENDS times more, even with the policy's
    attempts spent (even with ``NO_RETRY``), since only a resend resolves it. A call that gives up after such an
    answer fails with that reason, whatever the last send said: the move may have been applied."""

    def __init__(self, policy: RetryPolicy, *, resolve_unknown: bool = False) -> None:
        self.policy = policy
        self.resolve_unknown = resolve_unknown
        self.sends = 0
        self.unknown = 0  # sends answered COMMIT_OUTCOME_UNKNOWN

    def after(self, err: RefereeError) -> float:
        """One send failed with ``err``: the seconds to wait before the next send, or ``err`` raised."""
        if self.resolve_unknown and err.reason == COMMIT_OUTCOME_UNKNOWN:
            self.unknown += 1
            if self.unknown <= OUTCOME_RESENDS:
                return self.policy.backoff(min(self.unknown - 1, 4))
        elif err.transient and self.sends - self.unknown < self.policy.attempts:
            return self.policy.backoff(self.sends - self.unknown - 1)
        if self.unknown and err.reason != COMMIT_OUTCOME_UNKNOWN:
            raise RefereeError(err.code, COMMIT_OUTCOME_UNKNOWN,
                               f"the outcome of the move is unknown (resend it with the same request_id to learn "
                               f"it); the last send: {err.reason or err.code.name}: {err.message}",
                               domain=err.domain) from None  # fmt: skip
        raise err from None


def metadata(token: str | None) -> Metadata:
    """The bearer token as request metadata (none without a token)."""
    return (("authorization", f"Bearer {token}"),) if token else ()


def new_request_id() -> str:
    """A fresh idempotency key for one move."""
    return uuid.uuid4().hex


def create_request(
    profile: str,
    seats: Sequence[Seat],
    options: Mapping[str, convert.OptionValue] | None,
    target_score: int | None,
    max_hands: int | None,
    allow_spectators: bool,
    preset_deals: Iterable[engine.Deal],
    seed: bytes | None,
    time_control: TimeControl | None = None,
    timeout_policy: TimeoutPolicy | None = None,
) -> rpb.CreateGameRequest:
    """The CreateGame request (a time control or a policy of the wrong type: TypeError, before anything is sent;
    a policy without a time control: ValueError, as the referee would refuse it)."""
    specs = [SeatSpec(s, "human") if isinstance(s, str) else s for s in seats]
    request = rpb.CreateGameRequest(
        profile=profile,
        options={k: convert.option_to_proto(v) for k, v in (options or {}).items()},
        seats=[pb.SeatSpec(display_name=s.name, kind=convert.SEAT_KINDS.get(s.kind, pb.SEAT_KIND_HUMAN), open=s.open,
                           bot=s.bot)
               for s in specs],
        allow_spectators=allow_spectators,
        preset_deals=[convert.deal_to_proto(d) for d in preset_deals],
        seed=seed or b"",
    )  # fmt: skip
    if time_control is not None:
        request.time_control.CopyFrom(convert.time_control_to_proto(time_control))
    if timeout_policy is not None:
        if time_control is None:
            raise ValueError("a timeout policy needs a time control")
        request.timeout_policy.CopyFrom(convert.timeout_policy_to_proto(timeout_policy))
    if target_score is not None:
        request.match.target_score = target_score
    if max_hands is not None:
        request.match.max_hands = max_hands
    return request


def created(r: rpb.CreateGameResponse) -> CreatedGame:
    """CreateGame's answer."""
    return CreatedGame(
        game_id=r.game_id,
        tokens={t.seat: t.token for t in r.seat_tokens},
        spectator_token=r.spectator_token or None,
        settings=Settings.from_proto(r.settings),
        version=r.version,
    )


def join_request(game_id: str, display_name: str, seat: int | None) -> rpb.JoinGameRequest:
    """The JoinGame request."""
    request = rpb.JoinGameRequest(game_id=game_id, display_name=display_name)
    if seat is not None:
        request.seat = seat
    return request


def joined(r: rpb.JoinGameResponse) -> JoinedSeat:
    """JoinGame's answer."""
    return JoinedSeat(r.seat, r.token)


def game_info(r: rpb.GetGameResponse) -> GameInfo:
    """GetGame's answer."""
    settings = Settings.from_proto(r.settings)
    return GameInfo(GameSnapshot.from_proto(r.view, settings.options), settings)


def submit_request(
    game_id: str, move: engine.Move, request_id: str, expected_version: int | None
) -> rpb.SubmitMoveRequest:
    """The SubmitMove request (``request_id`` already chosen: every resend carries the same one)."""
    request = rpb.SubmitMoveRequest(game_id=game_id, move=convert.move_to_proto(move), request_id=request_id)
    if expected_version is not None:
        request.expected_version = expected_version
    return request


def move_result(
    r: rpb.SubmitMoveResponse, rules: Mapping[str, Any] | None, request_id: str, attempts: int
) -> MoveResult:
    """SubmitMove's answer."""
    return MoveResult(
        version=r.version,
        events=tuple(convert.event_from_proto(e) for e in r.events),
        snapshot=GameSnapshot.from_proto(r.view, rules),
        request_id=request_id,
        attempts=attempts,
        proto=r,
    )


def resign_request(game_id: str, request_id: str, expected_version: int | None) -> rpb.ResignRequest:
    """The Resign request (``request_id`` already chosen: every resend carries the same one)."""
    request = rpb.ResignRequest(game_id=game_id, request_id=request_id)
    if expected_version is not None:
        request.expected_version = expected_version
    return request


def resign_result(
    r: rpb.ResignResponse, rules: Mapping[str, Any] | None, request_id: str, attempts: int
) -> MoveResult:
    """Resign's answer, as a MoveResult (its ``proto`` the same fields as a SubmitMoveResponse)."""
    return move_result(rpb.SubmitMoveResponse(version=r.version, events=r.events, view=r.view), rules, request_id,
                       attempts)  # fmt: skip


def validate_request(game_id: str, move: engine.Move, expected_version: int | None) -> rpb.ValidateMoveRequest:
    """The ValidateMove request."""
    request = rpb.ValidateMoveRequest(game_id=game_id, move=convert.move_to_proto(move))
    if expected_version is not None:
        request.expected_version = expected_version
    return request


def replay_request(game_id: str, after_version: int | None, max_events: int) -> rpb.GetReplayRequest:
    """One GetReplay page request."""
    request = rpb.GetReplayRequest(game_id=game_id, max_events=max_events)
    if after_version is not None:
        request.after_version = after_version
    return request


class ReplayPages:
    """Joins GetReplay pages."""

    def __init__(self) -> None:
        self.first: rpb.GetReplayResponse | None = None
        self.last: rpb.GetReplayResponse | None = None
        self.events: list[EventDict] = []

    def add(self, r: rpb.GetReplayResponse) -> int | None:
        """Take one page; the after_version of the next page, None after the last."""
        self.first = self.first or r
        self.last = r
        self.events.extend(convert.event_from_proto(e) for e in r.events)
        return r.next_after_version if r.HasField("next_after_version") else None

    def replay(self, next_after_version: int | None) -> Replay:
        """The joined pages."""
        assert self.first is not None and self.last is not None
        return Replay(
            settings=Settings.from_proto(self.last.settings),
            initial=convert.view_dict_from_proto(self.first.initial),
            events=tuple(self.events),
            current=convert.view_dict_from_proto(self.last.current),
            next_after_version=next_after_version,
        )


def analyze_request(
    cards: Iterable[str | int], profile: str, options: Mapping[str, convert.OptionValue] | None
) -> rpb.AnalyzeHandRequest:
    """The AnalyzeHand request."""
    return rpb.AnalyzeHandRequest(
        cards=convert.cards_to_text(cards),
        profile=profile,
        options={k: convert.option_to_proto(v) for k, v in (options or {}).items()},
    )


def analysis(r: rpb.AnalyzeHandResponse) -> Analysis:
    """AnalyzeHand's answer."""
    return Analysis.from_proto(r)


def resumable(err: RefereeError) -> bool:
    """A watch that failed so may be resumed: the server went away, the stream's deadline passed, or the server
    cut a watcher that fell behind."""
    return err.transient or (err.code == grpc.StatusCode.RESOURCE_EXHAUSTED and err.reason == "WATCHER_TOO_SLOW")


class WatchCursor:
    """Where a watch is: what to ask for when (re)connecting, and which stream messages are new.

    Resuming asks for every event after the position (version, index) of the last event delivered, or after the
    whole version of a snapshot; whatever arrives at or before that position anyway is dropped. ``after_version``
    ``FROM_START`` (-1) starts before the game's first event: the first deal's events (version 0) are delivered
    too (asked for as after_version 0, after_index 0, since event indexes start at 1)."""

    def __init__(self, after_version: int | None) -> None:
        if after_version is not None and after_version < FROM_START:
            raise ValueError(f"after_version is a version (>= 0), or {FROM_START} for the start, not {after_version}")
        self.last: tuple[int, int] | None = None if after_version is None else (after_version, MAX_SEQ)
        self.ended = False

    def request(self, game_id: str) -> rpb.WatchGameRequest:
        """The WatchGame request of the next connection."""
        request = rpb.WatchGameRequest(game_id=game_id)
        if self.last is not None:
            if self.last[0] < 0:  # nothing yet of a watch from the start: all of version 0
                request.after_version, request.after_index = 0, 0
            else:
                request.after_version = self.last[0]
                if self.last[1] != MAX_SEQ:
                    request.after_index = self.last[1]
        return request

    @property
    def version(self) -> int | None:
        """The last version seen (snapshot or event); before anything, the ``after_version`` it started from (None
        for a watch that starts with a snapshot)."""
        return None if self.last is None else self.last[0]

    def accept(self, update: rpb.WatchGameResponse) -> pb.GameView | EventDict | None:
        """The snapshot or the event dict of a stream message, or None when it was already delivered."""
        if update.HasField("snapshot"):
            if self.last is not None:  # only a fresh watch sends one; never deliver a view that went back
                return None
            snap = update.snapshot
            self.last = (snap.version, MAX_SEQ)
            return snap
        event = update.event
        position = (event.version, event.index)
        if self.last is not None and position <= self.last:
            return None
        self.last = position
        d = convert.event_from_proto(event)
        if d["kind"] == "match_ended":
            self.ended = True
        return d
