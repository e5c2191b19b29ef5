// S1 ceiling: a raw uWebSockets.js JSON-RPC echo (parse, build the result, stringify), no MCP rules.
// The same native binding Sluice's loader picks for this Node (never a JavaScript imitation).
import { loadUws } from '../../dist/src/transport/http/uws/load.js';
import { echoAnswer } from './echo-answer.mjs';
const uws = loadUws();
uws.App().post('/*', (res) => {
  const chunks = [];
  res.onAborted(() => { res.aborted = true; });
  res.onData((chunk, last) => {
    chunks.push(Buffer.from(chunk.slice(0)));
    if (!last) return;
    const m = JSON.parse(Buffer.concat(chunks).toString());
    const body = echoAnswer(m);
    if (!res.aborted) res.cork(() => { res.writeHeader('content-type', 'application/json').end(body); });
  });
}).listen('127.0.0.1', 0, (s) => process.stdout.write(`READY ${uws.us_socket_local_port(s)}\n`));
