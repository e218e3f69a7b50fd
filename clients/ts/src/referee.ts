// The rummy referee's TypeScript client, the same in Node and in the browser: the generated messages and service
// (src/gen, from proto/ by protoc-gen-es), a client over any Connect transport, the bearer token, the ErrorInfo
// reason of a refusal, and WatchGame that resumes after a cut (after_version / after_index). The transports:
// ./node.ts (connect-node, HTTP/1.1) and ./web.ts (connect-web, fetch).
import { create } from "@bufbuild/protobuf";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { Code, ConnectError, createClient, type CallOptions, type Client, type Transport } from "@connectrpc/connect";
import type { Event, GameView, Move } from "./gen/rummy/v1/game_pb.js";
import { MoveSchema } from "./gen/rummy/v1/game_pb.js";
import { RefereeService, type WatchGameResponse } from "./gen/rummy/v1/referee_pb.js";

export * from "./gen/rummy/v1/game_pb.js";
export * from "./gen/rummy/v1/referee_pb.js";
export { Code, ConnectError };

export type Referee = Client<typeof RefereeService>;

/** The deadline of a unary call unless set (per client: `refereeClient`'s or `connectReferee`'s `timeoutMs`; per
 * call: CallOptions' `timeoutMs`): 10 s, the Python SDK's. A referee that accepts a call and never answers (stopped,
 * cut off without a reset) then fails it DEADLINE_EXCEEDED, which `persist` sends again, instead of hanging the
 * caller for ever. WatchGame streams have no deadline of their own: `watchGame` follows them for as long as the
 * game goes on. */
export const DEFAULT_TIMEOUT_MS = 10_000;

export interface ClientOptions {
  /** The deadline of each unary call that sets none itself, in milliseconds (default DEFAULT_TIMEOUT_MS; 0: none). */
  timeoutMs?: number;
}

/** A RefereeService client over `transport`; each unary call with a deadline (`opts.timeoutMs`). */
export function refereeClient(transport: Transport, opts: ClientOptions = {}): Referee {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (timeoutMs <= 0) return createClient(RefereeService, transport);
  return createClient(RefereeService, {
    unary: (method, signal, callTimeoutMs, header, input, contextValues) =>
      transport.unary(method, signal, callTimeoutMs ?? timeoutMs, header, input, contextValues),
    stream: (method, signal, callTimeoutMs, header, input, contextValues) =>
      transport.stream(method, signal, callTimeoutMs, header, input, contextValues),
  });
}

export interface RoundRobinOptions {
  /** How long a referee that refused a connection is left out of the rotation at first, in milliseconds (default
   * 1000); doubled each time it refuses again, up to 30 s, and reset by a call it answers. */
  skipMs?: number;
}

// The errors of a call that never reached a referee: nothing listens there (or no route, no such host).
const REFUSED = new Set(["ECONNREFUSED", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN"]);

function connectionRefused(err: unknown): boolean {
  const seen = new Set<unknown>();
  for (let e: unknown = err; e instanceof Error && !seen.has(e); e = e.cause) {
    seen.add(e);
    if ("code" in e && typeof e.code === "string" && REFUSED.has(e.code)) return true;
  }
  return false;
}

/** One transport over several (referees sharing one Redis): each call goes to the next one in turn. A referee
 * that refused a connection is skipped for a while (`skipMs`, as gRPC's round_robin skips a referee it is not
 * connected to), then tried again; when all of them are skipped, the call goes to the one whose while ends first
 * (there is always one to try). A referee that is down fails the calls sent to it (UNAVAILABLE); watchGame
 * resumes through the next one. */
export function roundRobin(transports: Transport[], opts: RoundRobinOptions = {}): Transport {
  const skipMs = opts.skipMs ?? 1000;
  const downUntil = transports.map(() => 0);
  const skips = transports.map(() => 0);
  let next = 0;
  const pick = (): number => {
    const now = Date.now();
    let best = -1;
    for (let k = 0; k < transports.length; k++) {
      const i = (next + k) % transports.length;
      if (downUntil[i]! <= now) {
        best = i;
        break;
      }
      if (best < 0 || downUntil[i]! < downUntil[best]!) best = i;
    }
    next = best + 1;
    return best;
  };
  const track = <R>(i: number, call: Promise<R>): Promise<R> =>
    call.then(
      (answer) => {
        skips[i] = 0;
        downUntil[i] = 0;
        return answer;
      },
      (err: unknown) => {
        if (connectionRefused(err)) {
          downUntil[i] = Date.now() + Math.min(30_000, skipMs * 2 ** skips[i]!);
          skips[i]! += 1;
        }
        throw err;
      },
    );
  return {
    unary: (method, signal, timeoutMs, header, input, contextValues) => {
      const i = pick();
      return track(i, transports[i]!.unary(method, signal, timeoutMs, header, input, contextValues));
    },
    stream: (method, signal, timeoutMs, header, input, contextValues) => {
      const i = pick();
      return track(i, transports[i]!.stream(method, signal, timeoutMs, header, input, contextValues));
    },
  };
}

/** `call()`, sent again with backoff (50 ms, doubling up to 1 s) while it fails UNAVAILABLE or DEADLINE_EXCEEDED,
 * for up to `seconds`; then its last error is thrown. Those are calls the referee did not answer (down,
 * restarting, cut off, stalled past the call's deadline; or a move whose commit it could not confirm:
 * COMMIT_OUTCOME_UNKNOWN), so only for calls
 * that may be sent twice: reads, and moves and resignations with a fixed `requestId` (applied at most once).
 * Over `roundRobin` each resend goes to the next referee (not one that just refused a connection). */
export async function persist<T>(call: () => Promise<T>, seconds = 60): Promise<T> {
  const until = Date.now() + seconds * 1000;
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      const code = ConnectError.from(err).code;
      if ((code !== Code.Unavailable && code !== Code.DeadlineExceeded) || Date.now() >= until) throw err;
      await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 50 * 2 ** attempt)));
    }
  }
}

/** Call options that send `token` as `authorization: Bearer <token>`. */
export function auth(token: string, extra: CallOptions = {}): CallOptions {
  return { ...extra, headers: { authorization: `Bearer ${token}` } };
}

/** A refusal as the referee states it: the gRPC status name, the ErrorInfo reason code and the message. */
export interface Refusal {
  code: string;
  reason: string;
  message: string;
}

/** The status, reason code and message of any error thrown by a call (reason "" when there is none). */
export function refusal(err: unknown): Refusal {
  const e = ConnectError.from(err);
  let reason = "";
  for (const d of e.details) {
    if ("type" in d && d.type === "google.rpc.ErrorInfo") {
      reason = errorInfoReason(d.value);
    }
  }
  return { code: Code[e.code] ?? String(e.code), reason, message: e.rawMessage };
}

// google.rpc.ErrorInfo { string reason = 1; string domain = 2; map<string, string> metadata = 3; }
function errorInfoReason(bytes: Uint8Array): string {
  const r = new BinaryReader(bytes);
  let reason = "";
  while (r.pos < r.len) {
    const [field, wire] = r.tag();
    if (field === 1) reason = r.string();
    else r.skip(wire);
  }
  return reason;
}

/** A move of the given kind (`{ case: "drawStock", value: {} }` style), as a Move message. */
export function move(m: Move["move"]): Move {
  return create(MoveSchema, { move: m });
}

/** The text form of a move, as the engine parses it ("discard QS", "layoff 6D 1", "draw stock", "big_gin"). */
export function moveText(m: Move): string {
  const x = m.move;
  switch (x.case) {
    case "drawStock":
      return "draw stock";
    case "drawDiscard":
      return "draw discard";
    case "passTurn":
      return "pass";
    case "discard":
      return `discard ${x.value.card}`;
    case "knock":
      return `knock ${x.value.discard}`;
    case "bigGin":
      return "big_gin";
    case "meld":
      return `meld ${x.value.cards.join(" ")}`;
    case "layOff":
      return `layoff ${x.value.card} ${x.value.meldId}`;
    case "declare":
      return x.value.best ? "declare best" : "declare";
    case "done":
      return "done";
    default:
      return "?";
  }
}

/** Where a watcher is in a game's stream: the last event received (version, index). */
export interface StreamPosition {
  version: bigint;
  /** Unset: the whole version was received (a snapshot at it). */
  index?: number;
}

export interface WatchOptions {
  /** Resume after this position (no snapshot); unset: a snapshot first. */
  after?: StreamPosition;
  /** Called on each cut before reconnecting (the error, and the attempt number from 1). */
  onCut?: (err: unknown, attempt: number) => void;
  /** Called each time a stream is open (its response headers arrived): first, and after each resume. */
  onOpen?: () => void;
  /** Stop watching. */
  signal?: AbortSignal;
  /** Give up after this many cuts in a row without a message (default 30). */
  maxAttempts?: number;
}

const RETRYABLE = new Set([Code.Unavailable, Code.Unknown, Code.Internal, Code.DeadlineExceeded, Code.Canceled,
  Code.ResourceExhausted, Code.Aborted]);

/** Every update of a game's WatchGame stream, resumed after a cut from the last event received (exactly once,
 * in order); ends after match_ended (or when `signal` aborts). The first update is a snapshot unless
 * `after` is given; a resume never sends one. */
export async function* watchGame(
  client: Referee, gameId: string, token: string, opts: WatchOptions = {},
): AsyncGenerator<WatchGameResponse> {
  let pos = opts.after;
  let failures = 0;
  for (;;) {
    try {
      const req = pos === undefined ? { gameId } : { gameId, afterVersion: pos.version, afterIndex: pos.index };
      // (afterIndex undefined: the field is left unset, "the whole version was received")
      for await (const update of client.watchGame(req, auth(token, { signal: opts.signal, onHeader: () => opts.onOpen?.() }))) {
        failures = 0;
        if (update.update.case === "event") {
          const ev: Event = update.update.value;
          pos = { version: ev.version, index: ev.index };
        } else if (update.update.case === "snapshot") {
          pos = { version: update.update.value.version };
        }
        yield update;
        if (update.update.case === "event" && update.update.value.kind === "match_ended") return;
      }
      return;
    } catch (err) {
      if (opts.signal?.aborted) return;
      const e = ConnectError.from(err);
      failures += 1;
      if (!RETRYABLE.has(e.code) || failures > (opts.maxAttempts ?? 30)) throw err;
      opts.onCut?.(err, failures);
      await new Promise((resolve) => setTimeout(resolve, Math.min(2000, 100 * 2 ** failures)));
    }
  }
}

/** The view's legal moves of one kind. */
export function legal<K extends Move["move"]["case"]>(view: GameView, kind: K): Extract<Move["move"], { case: K }>[] {
  return view.legalMoves.map((m) => m.move).filter((m): m is Extract<Move["move"], { case: K }> => m.case === kind);
}
