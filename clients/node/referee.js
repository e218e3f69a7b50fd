// A small client of the rummy-referee gRPC service (rummy.v1.RefereeService).
//
// The .proto files of the repository (proto/rummy/v1) are loaded at run time with @grpc/proto-loader: there is
// no generated code to keep in step with them. Messages are plain objects with the field names of the .proto
// files (snake_case: `game_id`, `legal_moves`, `to_act`), enums as their names ("PHASE_DRAW"), 64-bit numbers
// as JS numbers, a oneof as its set field plus a property naming it (`move.move === "discard"`), an unset
// `optional` field absent. Struct fields (event data, hand and match details) are turned into plain objects.
// Cards are text: "TD", "AS".
//
//   import { connect } from "./referee.js";
//   const referee = connect("127.0.0.1:50051", { token });
//   const { view } = await referee.getGame(gameId);
//   await referee.submitMove(gameId, view.legal_moves[0]);
//
// Every call has a deadline and sends `authorization: Bearer <token>`; failures are thrown as RefereeError,
// which carries the gRPC status and the reason code of the google.rpc.ErrorInfo detail (e.g. NOT_YOUR_TURN).

import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";

import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import protobuf from "protobufjs";

/** The directory holding rummy/v1/*.proto (this repository's proto/, or $RUMMY_PROTO_DIR). */
export const PROTO_DIR = process.env.RUMMY_PROTO_DIR || fileURLToPath(new URL("../../proto", import.meta.url));

export const { status } = grpc;

/** Default deadline of a unary call, in milliseconds. */
export const DEFAULT_DEADLINE_MS = 10_000;
/** Default deadline of one WatchGame stream; watchGame resumes transparently when it runs out. */
export const DEFAULT_WATCH_DEADLINE_MS = 10 * 60_000;
/** The reason of a SubmitMove the referee could not tell was committed or not: resolved by resending it. */
export const COMMIT_OUTCOME_UNKNOWN = "COMMIT_OUTCOME_UNKNOWN";
/** Resends of a move whose outcome is unknown, beyond (not counted in) `retries`. */
export const OUTCOME_RESENDS = 8;

const LOADER_OPTIONS = { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true };

const CHANNEL_OPTIONS = {
  "grpc.keepalive_time_ms": 30_000, // the server accepts pings every 10 s or more
  "grpc.keepalive_timeout_ms": 10_000,
  "grpc.keepalive_permit_without_calls": 1,
  "grpc.max_receive_message_length": 4 * 1024 * 1024,
};

let serviceCtor = null;

/** The RefereeService client constructor, the .proto files loaded once. */
function loadService(protoDir = PROTO_DIR) {
  if (serviceCtor && protoDir === PROTO_DIR) return serviceCtor;
  const definition = protoLoader.loadSync("rummy/v1/referee.proto", { ...LOADER_OPTIONS, includeDirs: [protoDir] });
  const ctor = grpc.loadPackageDefinition(definition).rummy.v1.RefereeService;
  if (protoDir === PROTO_DIR) serviceCtor = ctor;
  return ctor;
}

// ------------------------------------------------------------------------------------------------ errors

// google.rpc.Status and google.rpc.ErrorInfo, enough of them to read `grpc-status-details-bin`.
const rpcTypes = protobuf.Root.fromJSON({
  nested: {
    google: {
      nested: {
        rpc: {
          nested: {
            Status: {
              fields: {
                code: { type: "int32", id: 1 },
                message: { type: "string", id: 2 },
                details: { rule: "repeated", type: "AnyDetail", id: 3 },
              },
            },
            AnyDetail: { fields: { type_url: { type: "string", id: 1 }, value: { type: "bytes", id: 2 } } },
            ErrorInfo: {
              fields: {
                reason: { type: "string", id: 1 },
                domain: { type: "string", id: 2 },
                metadata: { keyType: "string", type: "string", id: 3 },
              },
            },
          },
        },
      },
    },
  },
});
const StatusType = rpcTypes.lookupType("google.rpc.Status");
const ErrorInfoType = rpcTypes.lookupType("google.rpc.ErrorInfo");
const ERROR_INFO_URL = "type.googleapis.com/google.rpc.ErrorInfo";

const CODE_NAMES = Object.fromEntries(Object.entries(grpc.status).map(([name, code]) => [code, name]));

/** A failed call: the gRPC status code (`code`, `codeName`) and the referee's reason code (`reason`). */
export class RefereeError extends Error {
  /**
   * @param {string} method the RPC, e.g. "SubmitMove"
   * @param {grpc.ServiceError} cause the grpc-js error
   */
  constructor(method, cause) {
    const info = errorInfo(cause.metadata);
    const codeName = CODE_NAMES[cause.code] ?? String(cause.code);
    super(`${method}: ${codeName}${info ? ` ${info.reason}` : ""}: ${cause.details}`, { cause });
    this.name = "RefereeError";
    /** @type {number} gRPC status code (see `status`) */
    this.code = cause.code;
    /** @type {string} e.g. "FAILED_PRECONDITION" */
    this.codeName = codeName;
    /** @type {string} the stable reason code, e.g. "NOT_YOUR_TURN" ("" when the server sent none) */
    this.reason = info?.reason ?? "";
    /** @type {string} "rummy-referee" for the referee's own errors */
    this.domain = info?.domain ?? "";
    /** @type {string} the server's message */
    this.details = cause.details;
    this.method = method;
  }
}

/**
 * The google.rpc.ErrorInfo of a failed call's trailing metadata, or null.
 * @param {grpc.Metadata | undefined} metadata
 * @returns {{reason: string, domain: string, metadata: Record<string, string>} | null}
 */
export function errorInfo(metadata) {
  const raw = metadata?.get("grpc-status-details-bin")?.[0];
  if (!raw) return null;
  try {
    const decoded = StatusType.decode(raw);
    for (const detail of decoded.details) {
      if (detail.type_url === ERROR_INFO_URL) {
        const info = ErrorInfoType.toObject(ErrorInfoType.decode(detail.value), { defaults: true });
        return { reason: info.reason, domain: info.domain, metadata: info.metadata ?? {} };
      }
    }
  } catch {
    // a detail that does not decode: report the status alone
  }
  return null;
}

// ------------------------------------------------------------------------------------------------ values

/**
 * A google.protobuf.Struct as decoded by proto-loader, as the plain object it stands for.
 * @param {any} struct
 * @returns {Record<string, any>}
 */
export function structToObject(struct) {
  const out = {};
  for (const [key, value] of Object.entries(struct?.fields ?? {})) out[key] = structValue(value);
  return out;
}

// proto-loader's copy of struct.proto names the fields in camelCase (numberValue), whatever keepCase says.
function structValue(value) {
  const kind = value?.kind;
  const inner = kind ? value[kind] : undefined;
  switch (kind) {
    case "structValue":
    case "struct_value":
      return structToObject(inner);
    case "listValue":
    case "list_value":
      return (inner?.values ?? []).map(structValue);
    case "numberValue":
    case "number_value":
    case "stringValue":
    case "string_value":
    case "boolValue":
    case "bool_value":
      return inner;
    default:
      return null; // nullValue, or no value
  }
}

/** Drops (in place, recursively) proto-loader's markers of proto3 `optional` fields ({_to_act: "to_act"}). */
function tidy(value) {
  if (Array.isArray(value)) {
    value.forEach(tidy);
  } else if (value && typeof value === "object" && !Buffer.isBuffer(value)) {
    for (const [key, inner] of Object.entries(value)) {
      if (key.startsWith("_") && inner === key.slice(1)) delete value[key];
      else tidy(inner);
    }
  }
  return value;
}

/** Struct fields of a view (in place): last_hand.details, result.details. */
function plainView(view) {
  if (view?.last_hand) view.last_hand.details = structToObject(view.last_hand.details);
  if (view?.result) view.result.details = structToObject(view.result.details);
  return view;
}

/** Struct field of an event (in place): data. */
function plainEvent(event) {
  if (event) event.data = structToObject(event.data);
  return event;
}

/**
 * GameSettings.options as {name: value}.
 * @param {{options?: Record<string, any>}} settings
 * @returns {Record<string, boolean | number | string>}
 */
export function optionValues(settings) {
  const out = {};
  for (const [name, option] of Object.entries(settings?.options ?? {})) out[name] = option[option.value];
  return out;
}

/**
 * A value for CreateGameRequest.options: {knock_limit: 5} becomes {knock_limit: {int_value: 5}}.
 * @param {Record<string, boolean | number | string>} values
 */
export function optionOverrides(values) {
  const out = {};
  for (const [name, value] of Object.entries(values ?? {})) {
    if (typeof value === "boolean") out[name] = { bool_value: value };
    else if (typeof value === "number") out[name] = { int_value: value };
    else out[name] = { string_value: String(value) };
  }
  return out;
}

/** The name of the set field of a Move ("draw_stock", "discard", ...). */
export function moveKind(move) {
  if (move?.move) return move.move;
  return MOVE_FIELDS.find((field) => move?.[field] != null) ?? "";
}

const MOVE_FIELDS = [
  "draw_stock", "draw_discard", "pass_turn", "discard", "knock", "big_gin", "meld", "lay_off", "declare", "done",
];

/** A short text of a move for logs: "discard TD", "knock 5C", "draw_stock". */
export function moveText(move) {
  const kind = moveKind(move);
  const body = move?.[kind] ?? {};
  switch (kind) {
    case "discard":
      return `discard ${body.card}`;
    case "knock":
      return `knock ${body.discard}`;
    case "meld":
      return `meld ${(body.cards ?? []).join(" ")}`;
    case "lay_off":
      return `lay_off ${body.card} on ${body.meld_id}`;
    case "declare":
      return body.best ? "declare best" : "declare";
    default:
      return kind;
  }
}

/** A move with only its set field: what SubmitMove needs (drops proto-loader's oneof marker and nulls). */
export function cleanMove(move) {
  const kind = moveKind(move);
  if (!kind) throw new TypeError(`not a move: ${JSON.stringify(move)}`);
  return { [kind]: move[kind] ?? {} };
}

// ------------------------------------------------------------------------------------------------ client

/**
 * @typedef {object} ConnectOptions
 * @property {string} [token] the bearer token sent with every call (a seat's or the spectator's)
 * @property {number} [deadlineMs] deadline of each unary call (default 10 s)
 * @property {number} [watchDeadlineMs] deadline of one WatchGame stream (default 10 min; resumed after)
 * @property {number} [retries] retries of SubmitMove / GetGame on UNAVAILABLE (default 6)
 * @property {number} [retryBaseMs] first retry delay, doubled each time up to 2 s (default 100 ms)
 * @property {grpc.ChannelCredentials} [credentials] ready credentials (default: plaintext, or TLS as below)
 * @property {boolean} [tls] connect over TLS, the referee checked against the system's roots (or `ca`)
 * @property {string | Buffer} [ca] the CA to check the referee's certificate against: a PEM file's path or its
 *   contents (implies `tls`)
 * @property {string | Buffer} [clientCert] mutual TLS: this client's certificate (path or PEM), with `clientKey`
 * @property {string | Buffer} [clientKey] mutual TLS: its private key (path or PEM)
 * @property {Record<string, any>} [channelOptions] extra grpc-js channel options
 * @property {string} [protoDir] where rummy/v1/*.proto are (default: the repository's proto/)
 */

/**
 * The grpc-js target and channel options of `address`: one "host:port" as it is; several ("ip:port,ip:port",
 * "localhost" allowed, or an array) one channel balancing the calls over them with `round_robin`, its authority
 * (the name a TLS certificate is checked against) the first address's host.
 * @param {string | string[]} address
 * @returns {[string, Record<string, any>]}
 */
export function channelTarget(address) {
  const list = (Array.isArray(address) ? address : address.split(",")).map((a) => a.trim()).filter((a) => a);
  if (list.length === 0) throw new TypeError(`no referee address in ${JSON.stringify(address)}`);
  if (list.length === 1) return [list[0], {}];
  const ips = list.map((a) => {
    const m = /^(.*):(\d+)$/.exec(a);
    if (!m) throw new TypeError(`a referee address is host:port, not ${JSON.stringify(a)}`);
    const host = m[1] === "localhost" ? "127.0.0.1" : m[1];
    if (!/^\d+\.\d+\.\d+\.\d+$/.test(host) && !host.startsWith("[")) {
      throw new TypeError(`a list of referees takes IP addresses (or localhost), not ${JSON.stringify(a)}`);
    }
    return `${host}:${m[2]}`;
  });
  const v6 = ips[0].startsWith("[");
  if (ips.some((a) => a.startsWith("[") !== v6)) throw new TypeError("a list of referees is all IPv4 or all IPv6");
  const options = {
    "grpc.service_config": JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] }),
    "grpc.default_authority": list[0],
  };
  return [`${v6 ? "ipv6" : "ipv4"}:${ips.join(",")}`, options];
}

/**
 * A client of the referee at `address` ("host:port"), or of several referees sharing one Redis ("ip:port,ip:port"
 * or an array: each call to the next connected one, gRPC's round_robin; a retried move may reach another).
 * @param {string | string[]} address
 * @param {ConnectOptions} [options]
 * @returns {RefereeClient}
 */
export function connect(address, options = {}) {
  const Service = loadService(options.protoDir);
  const [target, balancing] = channelTarget(address);
  const stub = new Service(target, channelCredentials(options), {
    ...CHANNEL_OPTIONS,
    ...balancing,
    ...options.channelOptions,
  });
  return new RefereeClient(stub, options);
}

/** A PEM given as a Buffer, its text, or a file's path. */
function pem(value) {
  if (value === undefined || value === null) return null;
  if (Buffer.isBuffer(value)) return value;
  return value.includes("-----BEGIN ") ? Buffer.from(value) : readFileSync(value);
}

/**
 * The channel's credentials: `options.credentials`, else TLS when asked for (`tls`, `ca`, a client certificate),
 * else plaintext.
 * @param {ConnectOptions} options
 * @returns {grpc.ChannelCredentials}
 */
export function channelCredentials(options = {}) {
  if (options.credentials) return options.credentials;
  if (!(options.tls || options.ca || options.clientCert || options.clientKey)) {
    return grpc.credentials.createInsecure();
  }
  if (!options.clientCert !== !options.clientKey) {
    throw new Error("a client certificate needs its key (clientKey), and a key its certificate (clientCert)");
  }
  // null roots: Node's own list of trusted CAs (the system's roots)
  return grpc.credentials.createSsl(pem(options.ca), pem(options.clientKey), pem(options.clientCert));
}

export class RefereeClient {
  /**
   * @param {any} stub a RefereeService client of grpc-js
   * @param {ConnectOptions} options
   */
  constructor(stub, options = {}) {
    this.stub = stub;
    this.token = options.token ?? "";
    this.deadlineMs = options.deadlineMs ?? DEFAULT_DEADLINE_MS;
    this.watchDeadlineMs = options.watchDeadlineMs ?? DEFAULT_WATCH_DEADLINE_MS;
    this.retries = options.retries ?? 6;
    this.retryBaseMs = options.retryBaseMs ?? 100;
  }

  /** Another client on the same connection with another token (e.g. a seat's, after CreateGame). */
  withToken(token) {
    return new RefereeClient(this.stub, { ...this, token });
  }

  /** Close the connection (every client made by withToken shares it). */
  close() {
    this.stub.close();
  }

  _metadata(token) {
    const metadata = new grpc.Metadata();
    const bearer = token ?? this.token;
    if (bearer) metadata.set("authorization", `Bearer ${bearer}`);
    return metadata;
  }

  /** One unary call with a deadline; a failure is thrown as RefereeError. */
  _unary(method, request, { token, deadlineMs } = {}) {
    return new Promise((resolve, reject) => {
      const deadline = Date.now() + (deadlineMs ?? this.deadlineMs);
      this.stub[method](request, this._metadata(token), { deadline }, (error, response) => {
        if (error) reject(new RefereeError(method, error));
        else resolve(tidy(response));
      });
    });
  }

  /**
   * `_unary`, retried with backoff while it fails with one of `codes` (at most `retries` times). With
   * `resolveUnknown` (SubmitMove), an answer with the reason COMMIT_OUTCOME_UNKNOWN (the referee cannot tell whether
   * the move was committed) is always sent again, beyond `retries` (up to OUTCOME_RESENDS times), since only a
   * resend with the same request_id resolves it; a call that gives up after such an answer fails with that reason.
   */
  async _retrying(method, request, codes, callOptions, resolveUnknown = false) {
    let unknown = 0;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this._unary(method, request, callOptions);
      } catch (error) {
        if (!(error instanceof RefereeError)) throw error;
        const isUnknown = resolveUnknown && error.reason === COMMIT_OUTCOME_UNKNOWN;
        if (isUnknown) unknown++;
        const again = isUnknown ? unknown <= OUTCOME_RESENDS : codes.includes(error.code) && attempt - unknown < this.retries;
        if (!again) {
          if (unknown && !isUnknown) error.reason = COMMIT_OUTCOME_UNKNOWN; // an earlier send may have been applied
          throw error;
        }
        const delay = Math.min(2000, this.retryBaseMs * 2 ** Math.min(attempt - unknown, 10));
        await sleep(delay / 2 + Math.random() * (delay / 2));
      }
    }
  }

  /**
   * CreateGame. `request` is a CreateGameRequest, e.g.
   * {profile: "gin", seats: [{display_name: "a", kind: "SEAT_KIND_BOT"}, {open: true}], match: {target_score: 50}}.
   * Not retried (it is not idempotent). Returns {game_id, seat_tokens: [{seat, token}], spectator_token, ...}.
   * @param {object} request
   * @param {{token?: string}} [options] the organizer token, for preset deals and seeds
   */
  createGame(request, options = {}) {
    return this._unary("CreateGame", request, options);
  }

  /**
   * JoinGame: take an open seat (no token needed). Returns {seat, token}.
   * @param {string} gameId
   * @param {{display_name: string, seat?: number}} request
   */
  joinGame(gameId, request) {
    return this._unary("JoinGame", { ...request, game_id: gameId }, { token: "" });
  }

  /**
   * GetGame: {view, settings}, the view with its legal_moves when it is the caller's turn.
   * @param {string} gameId
   */
  async getGame(gameId) {
    const response = await this._retrying("GetGame", { game_id: gameId }, [status.UNAVAILABLE]);
    plainView(response.view);
    return response;
  }

  /**
   * SubmitMove as the token's seat. A request_id (a fresh UUID unless given) makes the call idempotent: on
   * UNAVAILABLE or DEADLINE_EXCEEDED it is sent again with the same request_id, so that a move that did land
   * is not played twice (the server answers the original response). UNAVAILABLE with the reason
   * COMMIT_OUTCOME_UNKNOWN is resolved by resending even when the retries are spent (up to OUTCOME_RESENDS more).
   * @param {string} gameId
   * @param {object} move a Move, e.g. {discard: {card: "TD"}} or one of view.legal_moves
   * @param {{expectedVersion?: number, requestId?: string}} [options]
   * @returns {Promise<{version: number, events: any[], view: any}>}
   */
  async submitMove(gameId, move, options = {}) {
    const request = { game_id: gameId, move: cleanMove(move), request_id: options.requestId ?? randomUUID() };
    if (options.expectedVersion !== undefined) request.expected_version = options.expectedVersion;
    const response = await this._retrying(
      "SubmitMove", request, [status.UNAVAILABLE, status.DEADLINE_EXCEEDED], undefined, true,
    );
    response.events.forEach(plainEvent);
    plainView(response.view);
    return response;
  }

  /**
   * Resign the match as the token's seat, at any time (not only on its turn). Idempotent: a request_id (a fresh
   * UUID unless given) is resent on UNAVAILABLE or DEADLINE_EXCEEDED (COMMIT_OUTCOME_UNKNOWN beyond the retries,
   * as submitMove does), and a second resign answers the same.
   * The view's result says who won and how it ended (ended, seat_ends).
   * @param {string} gameId
   * @param {{expectedVersion?: number, requestId?: string}} [options]
   * @returns {Promise<{version: number, events: any[], view: any}>}
   */
  async resign(gameId, options = {}) {
    const request = { game_id: gameId, request_id: options.requestId ?? randomUUID() };
    if (options.expectedVersion !== undefined) request.expected_version = options.expectedVersion;
    const response = await this._retrying(
      "Resign", request, [status.UNAVAILABLE, status.DEADLINE_EXCEEDED], undefined, true,
    );
    response.events.forEach(plainEvent);
    plainView(response.view);
    return response;
  }

  /**
   * ValidateMove: resolves with {version} if the move is legal now, else throws as SubmitMove would.
   * @param {string} gameId
   * @param {object} move
   * @param {{expectedVersion?: number}} [options]
   */
  validateMove(gameId, move, options = {}) {
    const request = { game_id: gameId, move: cleanMove(move) };
    if (options.expectedVersion !== undefined) request.expected_version = options.expectedVersion;
    return this._retrying("ValidateMove", request, [status.UNAVAILABLE]);
  }

  /**
   * AnalyzeHand: {min_deadwood, arrangements, knock_discards, ...} of 1..11 cards.
   * @param {string[]} cards
   * @param {{profile?: string, options?: Record<string, boolean | number | string>}} [options]
   */
  analyzeHand(cards, options = {}) {
    const request = { cards, profile: options.profile ?? "", options: optionOverrides(options.options) };
    return this._retrying("AnalyzeHand", request, [status.UNAVAILABLE]);
  }

  /**
   * GetReplay: one page of the whole game with every card (the match must be over, or the organizer token).
   * @param {string} gameId
   * @param {{afterVersion?: number, maxEvents?: number}} [options]
   */
  async getReplay(gameId, options = {}) {
    const request = { game_id: gameId, max_events: options.maxEvents ?? 0 };
    if (options.afterVersion !== undefined) request.after_version = options.afterVersion;
    const response = await this._retrying("GetReplay", request, [status.UNAVAILABLE]);
    response.events.forEach(plainEvent);
    plainView(response.initial);
    plainView(response.current);
    return response;
  }

  /** Ping: resolves when the server answers. */
  ping() {
    return this._unary("Ping", {});
  }

  /** Whether the referee answers a Ping now. */
  async _answers() {
    try {
      await this.ping();
      return true;
    } catch {
      return false;
    }
  }

  /**
   * WatchGame as an async iterator of {snapshot: view} (first, unless `afterVersion` is given: then every
   * event after that version, or after its event `afterIndex`) and {event: event} (event.version, event.index,
   * event.kind, event.seat, event.data). It ends after the match_ended event. When the stream breaks
   * (UNAVAILABLE: the server restarted or is shutting down; DEADLINE_EXCEEDED: the stream's own deadline;
   * RESOURCE_EXHAUSTED: the watcher fell behind) it is opened again right after the last event received
   * (after_version, after_index): nothing is delivered twice or skipped. Leaving the loop cancels the stream.
   * `maxReconnects` bounds the reconnections in a row that get nothing; a stream cut UNAVAILABLE without a reason
   * before anything came (a connection the referee ended at its maximum age, while the game was quiet) is not
   * counted while the referee answers a Ping.
   * @param {string} gameId
   * @param {{afterVersion?: number, afterIndex?: number, reconnect?: boolean, maxReconnects?: number,
   *   deadlineMs?: number}} [options]
   * @returns {AsyncGenerator<{snapshot?: any, event?: any}>}
   */
  async *watchGame(gameId, options = {}) {
    const reconnect = options.reconnect ?? true;
    const maxReconnects = options.maxReconnects ?? 10;
    const resumable = [status.UNAVAILABLE, status.DEADLINE_EXCEEDED, status.RESOURCE_EXHAUSTED];
    // Everything up to (version, index) was delivered; index Infinity: the whole version.
    let last =
      options.afterVersion !== undefined ? { version: options.afterVersion, index: options.afterIndex ?? Infinity } : null;
    let failures = 0;
    for (;;) {
      const request = { game_id: gameId };
      if (last) {
        request.after_version = last.version;
        if (last.index !== Infinity) request.after_index = last.index; // the rest of a partly received version
      }
      const deadline = Date.now() + (options.deadlineMs ?? this.watchDeadlineMs);
      const call = this.stub.WatchGame(request, this._metadata(), { deadline });
      let received = false;
      try {
        for await (const message of call) {
          failures = 0;
          received = true;
          tidy(message);
          if (message.update === "snapshot") {
            last = { version: message.snapshot.version, index: Infinity };
            yield { snapshot: plainView(message.snapshot) };
            continue;
          }
          const event = plainEvent(message.event);
          if (last && (event.version < last.version || (event.version === last.version && event.index <= last.index))) {
            continue; // already delivered (a guard: the server resumes right after `last`)
          }
          last = { version: event.version, index: event.index };
          yield { event };
          if (event.kind === "match_ended") return;
        }
        return; // the server ended the stream: the match is over
      } catch (error) {
        if (typeof error?.code !== "number") throw error; // not a gRPC status
        const wrapped = new RefereeError("WatchGame", error);
        const cut = reconnect && wrapped.code === status.UNAVAILABLE && !wrapped.reason && !received;
        if (cut && (await this._answers())) failures = 0; // a quiet game's stream cut (a connection aged out)
        if (!reconnect || !resumable.includes(wrapped.code) || failures >= maxReconnects) throw wrapped;
        if (wrapped.code !== status.DEADLINE_EXCEEDED) {
          const delay = Math.min(2000, this.retryBaseMs * 2 ** failures);
          failures++;
          await sleep(delay / 2 + Math.random() * (delay / 2));
        }
      } finally {
        call.cancel();
      }
    }
  }
}
