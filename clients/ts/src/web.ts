// The referee client in a browser: Connect over fetch (connect-web).
import { createConnectTransport } from "@connectrpc/connect-web";
import { refereeClient, type ClientOptions, type Referee } from "./referee.js";

export * from "./referee.js";

/** A client of the referee whose HTTP port is at `baseUrl` (default: the page's own origin); each unary call with a
 * deadline (`opts.timeoutMs`, default DEFAULT_TIMEOUT_MS: 10 s). */
export function connectReferee(
  baseUrl: string = globalThis.location.origin, opts: ClientOptions & { binary?: boolean } = {},
): Referee {
  return refereeClient(createConnectTransport({ baseUrl, useBinaryFormat: opts.binary ?? false }), opts);
}
