// The referee client in Node: Connect over HTTP/1.1 (connect-node) to the referee's HTTP port.
import { createConnectTransport } from "@connectrpc/connect-node";
import { refereeClient, type Referee } from "./referee.js";

export * from "./referee.js";

/** A client of the referee whose HTTP port is at `baseUrl` (e.g. "http://localhost:8080"). JSON by default
 * (readable on the wire); `binary` sends protobuf. */
export function connectReferee(baseUrl: string, opts: { binary?: boolean } = {}): Referee {
  return refereeClient(createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: opts.binary ?? false }));
}
