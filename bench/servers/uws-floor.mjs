// The hardened floor: the raw uWS echo (uws-echo.mjs) plus the reads any MCP server that keeps its
// hardening must make per request, and nothing else: method and URL, every header into a Map (repeats
// and Mcp-Param-* need them all), the peer address (per-client limits and scopes), a UTF-8 check,
// a status line. Beside uws-echo.mjs it shows what those reads cost, apart from any protocol logic.
// The peer address is read as Sluice reads it (peers.ts): once per connection where the build
// reports connections (`App.filter`, the btc-vision builds), else a getpeername per request; a floor
// that paid a system call Sluice does not would sit below what Sluice can reach.
import { isUtf8 } from 'node:buffer';
// The same native binding Sluice's loader picks for this Node (never a JavaScript imitation).
import { loadUws } from '../../dist/src/transport/http/uws/load.js';
import { ConnectionPeers } from '../../dist/src/transport/http/uws/peers.js';
import { echoAnswer } from './echo-answer.mjs';
const uws = loadUws();
const peers = new ConnectionPeers();
const app = uws.App();
app.filter?.(peers.changed);
app.any('/*', (res, req) => {
  const method = req.getMethod();
  const url = req.getUrl();
  const headers = new Map();
  req.forEach((k, v) => { headers.set(k, v); });
  const address = peers.address(res);
  const chunks = [];
  res.onAborted(() => { res.aborted = true; });
  res.onData((chunk, last) => {
    chunks.push(Buffer.from(chunk.slice(0)));
    if (!last) return;
    const bytes = Buffer.concat(chunks);
    if (!isUtf8(bytes) || method !== 'post' || url !== '/mcp' || address.length === 0) return res.close();
    const m = JSON.parse(bytes.toString());
    const body = echoAnswer(m);
    if (!res.aborted) res.cork(() => { res.writeStatus('200 OK').writeHeader('content-type', headers.get('content-type') === undefined ? 'text/plain' : 'application/json').end(body); });
  });
}).listen('127.0.0.1', 0, (s) => process.stdout.write(`READY ${uws.us_socket_local_port(s)}\n`));
