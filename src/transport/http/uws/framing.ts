/**
 * What uWS leaves to the adapter before a request may be handled: copying its headers (the
 * HttpRequest lives only in the handler's synchronous call) and the framing checks over them
 * (header caps, Content-Length twice or beside Transfer-Encoding, a same-turn request of a peer
 * just refused). The refusals are the protocol's (`kAdapterRefusal`); the adapter writes them.
 */
import { collectHeader, kAdapterRefusal, kMaxHeaderBytes, kMaxHeaderCount } from '../exchange.js';
import type { AdapterRefusal } from '../exchange.js';
import type { UwsRequest, UwsResponse } from './load.js';
import type { ConnectionPeers } from './peers.js';

// `HttpRequest.forEach` calls back synchronously: two module-level callbacks and the map they fill
// spare a closure per request. They also count what the framing checks need (every header, wanted
// or not): how many lines and bytes, how many Content-Length lines, whether Transfer-Encoding came.
let collecting = new Map<string, string>();
let repeated: string | undefined;
let headerCount = 0;
let headerBytes = 0;
let contentLengths = 0;
let transferEncoding = false;
function countHeader(name: string, value: string): void {
  headerCount++;
  headerBytes += name.length + value.length + 4;
  if (name.length === 14 && name === 'content-length') contentLengths++;
  else if (name.length === 17 && name === 'transfer-encoding') transferEncoding = true;
}
function collectWanted(name: string, value: string): void {
  countHeader(name, value);
  // Collected even after a repeat: the framing checks read Content-Length whatever came before.
  const again = collectHeader(collecting, name, value, false);
  repeated ??= again;
}
function collectAll(name: string, value: string): void {
  countHeader(name, value);
  const again = collectHeader(collecting, name, value, true);
  repeated ??= again;
}

/**
 * Copies a request's headers into `into` by the rules of `Exchange.header` (every header with
 * `all`), counting what `framingFault` checks next. Returns the first repeated single header.
 */
export function collectHeaders(req: UwsRequest, into: Map<string, string>, all: boolean): string | undefined {
  collecting = into;
  repeated = undefined;
  headerCount = 0;
  headerBytes = 0;
  contentLengths = 0;
  transferEncoding = false;
  req.forEach(all ? collectAll : collectWanted);
  return repeated;
}

/** The peer of a request just refused for its framing (see framingFault); cleared by setImmediate. */
let refusedPeer: string | undefined;
function forgetRefusedPeer(): void {
  refusedPeer = undefined;
}

/**
 * Why the request whose headers `collectHeaders` just copied cannot be framed safely, else
 * undefined; a fault marks its peer (see below). A request whose length is ambiguous
 * (Content-Length twice, or beside Transfer-Encoding, or not a plain number) cannot be answered
 * and then followed on the same connection: what this server takes for the next request, a proxy
 * in front may take for this one's body (request smuggling). The parser of some uWS builds lets
 * such requests through, so they are checked here.
 */
export function framingFault(res: UwsResponse, peers: ConnectionPeers): AdapterRefusal | undefined {
  const fault = firstFault(res, peers);
  if (fault !== undefined) {
    if (refusedPeer === undefined) setImmediate(forgetRefusedPeer);
    refusedPeer = peers.address(res);
  }
  return fault;
}

function firstFault(res: UwsResponse, peers: ConnectionPeers): AdapterRefusal | undefined {
  // uWS answers and closes only once it has parsed all the bytes it read from this connection, and
  // hands the handler each request in them meanwhile, synchronously: a smuggled request that came
  // in the same read as a refused one is refused too: same peer address, same turn of the event loop
  // (uWS.js runs microtasks between requests, so the mark lasts until setImmediate). Another
  // connection from that address whose request lands in that very turn is refused as well.
  if (refusedPeer !== undefined && peers.address(res) === refusedPeer) return kAdapterRefusal.badFraming;
  if (headerCount > kMaxHeaderCount || headerBytes > kMaxHeaderBytes) return kAdapterRefusal.headersTooLarge;
  if (contentLengths > 1 || (contentLengths === 1 && transferEncoding)) return kAdapterRefusal.badFraming;
  if (contentLengths === 1 && !/^[0-9]{1,15}$/.test(collecting.get('content-length') ?? '')) return kAdapterRefusal.badFraming;
  return undefined;
}
