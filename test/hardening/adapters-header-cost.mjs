// Micro-benchmark (not a test): what copying every request header costs against the fixed list,
// on the uWS adapter, for a typical request of 11 headers; and what the adapters' wantedHeader
// (the fixed list plus the `mcp-param-` prefix test) costs against the fixed list alone. Copies through the same addHeader the
// adapter uses, inside a real uWS request handler (HttpRequest is only valid there).
// Run: npm run build && node test/hardening/adapters-header-cost.mjs
import { connect } from 'node:net';
import { addHeader, collectHeader, kRequestHeaders, wantedHeader } from '../../dist/src/transport/http/exchange.js';
import { loadUws } from '../../dist/src/transport/http/uws/load.js';

const kWanted = new Set(kRequestHeaders);
let target = new Map();
let repeated;
const wanted = (name, value) => { if (kWanted.has(name)) repeated ??= addHeader(target, name, value); };
const all = (name, value) => { repeated ??= addHeader(target, name, value); };
const prefixed = (name, value) => { if (wantedHeader(name)) repeated ??= addHeader(target, name, value); };
// What the adapters do now: the name mapped to its constant (knownHeader), so the Map hashes no new string.
const known = (name, value) => { repeated ??= collectHeader(target, name, value, false); };
const kRounds = 200_000;

function measure(req, collect) {
  const start = process.hrtime.bigint();
  for (let i = 0; i < kRounds; i++) {
    target = new Map();
    repeated = undefined;
    req.forEach(collect);
  }
  return Number(process.hrtime.bigint() - start) / kRounds;
}

const uws = loadUws();
const results = { wanted: [], all: [], prefixed: [], known: [] };
const app = uws.App().any('/*', (res, req) => {
  for (let round = 0; round < 5; round++) {
    results.wanted.push(measure(req, wanted));
    results.all.push(measure(req, all));
    results.prefixed.push(measure(req, prefixed));
    results.known.push(measure(req, known));
  }
  res.end('');
});
app.listen('127.0.0.1', 0, (socket) => {
  const port = uws.us_socket_local_port(socket);
  const sock = connect(port, '127.0.0.1', () => {
    sock.write('POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:3000\r\nUser-Agent: node\r\nAccept: application/json, text/event-stream\r\n'
      + 'Content-Type: application/json\r\nContent-Length: 0\r\nMcp-Protocol-Version: 2025-11-25\r\n'
      + 'Mcp-Session-Id: 0123456789abcdef0123456789abcdef\r\nAccept-Encoding: gzip, deflate\r\nConnection: keep-alive\r\n'
      + 'Authorization: Bearer abcdefghijklmnop\r\nX-Api-Key: key-1234567890\r\n\r\n');
  });
  sock.on('data', () => {
    const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const w = median(results.wanted);
    const a = median(results.all);
    const p = median(results.prefixed);
    console.log(`11-header request, median of 5 x ${kRounds} copies: fixed list ${w.toFixed(0)} ns, all headers ${a.toFixed(0)} ns, difference ${(a - w).toFixed(0)} ns per request`);
    console.log(`fixed list + mcp-param- prefix test (wantedHeader, no Mcp-Param header in the request) ${p.toFixed(0)} ns, difference ${(p - w).toFixed(0)} ns per request`);
    const k = median(results.known);
    console.log(`collectHeader (names mapped to their constants, prefix test included) ${k.toFixed(0)} ns, difference to wantedHeader ${(k - p).toFixed(0)} ns per request`);
    sock.destroy();
    uws.us_listen_socket_close(socket);
    process.exit(0);
  });
});
