// The referee client in Node: Connect over HTTP/1.1 (connect-node) to the referee's HTTP port, over TLS for an
// https:// address (the referee's --tls-cert: checked against `ca`, else the system's roots).
import { readFileSync } from "node:fs";
import { createConnectTransport } from "@connectrpc/connect-node";
import { refereeClient, roundRobin, type ClientOptions, type Referee } from "./referee.js";

export * from "./referee.js";

export interface NodeOptions extends ClientOptions {
  /** Send protobuf (default: JSON, readable on the wire). */
  binary?: boolean;
  /** https only: the CA the referee's certificate must be signed by (PEM text, or the path of a PEM file). */
  ca?: string;
  /** https with mutual TLS: this client's certificate and key (PEM text or paths). */
  clientCert?: string;
  clientKey?: string;
}

function pem(value: string | undefined): string | undefined {
  return value === undefined || value.includes("-----BEGIN ") ? value : readFileSync(value, "utf8");
}

/** A client of the referee whose HTTP port is at `baseUrl` (e.g. "http://localhost:8080", or "https://..." for a
 * referee serving TLS), or of several referees sharing one Redis: a list of base URLs (an array, or one string
 * separated by commas), each call sent to the next one in turn (`roundRobin`, which skips one that just refused a
 * connection). Each unary call has a deadline: `opts.timeoutMs` (default DEFAULT_TIMEOUT_MS, 10 s). */
export function connectReferee(baseUrl: string | string[], opts: NodeOptions = {}): Referee {
  const urls = (Array.isArray(baseUrl) ? baseUrl : baseUrl.split(",")).map((u) => u.trim()).filter((u) => u);
  if (urls.length === 0) throw new Error(`no referee address in ${JSON.stringify(baseUrl)}`);
  const tls = { ca: pem(opts.ca), cert: pem(opts.clientCert), key: pem(opts.clientKey) };
  const transports = urls.map((url) =>
    createConnectTransport({
      baseUrl: url,
      httpVersion: "1.1",
      useBinaryFormat: opts.binary ?? false,
      nodeOptions: url.startsWith("https:") ? tls : undefined,
    }),
  );
  return refereeClient(transports.length === 1 ? transports[0]! : roundRobin(transports), opts);
}
