// S2 load generator: `concurrency` loops, each doing initialize → initialized → tools/call → DELETE,
// for `seconds`; prints {"lifecycles":n,"errors":n,"p50ms":x,"p99ms":y}.
import { Agent, request } from 'node:http';
const [port, concurrency, seconds] = process.argv.slice(2).map(Number);
const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
const send = (method, body, headers) => new Promise((resolve, reject) => {
  const req = request({ host: '127.0.0.1', port, path: '/mcp', method, agent, headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers } }, (res) => {
    const chunks = [];
    res.on('data', (c) => chunks.push(c));
    res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString() }));
  });
  req.on('error', reject);
  req.end(body);
});
const init = JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } });
const initialized = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' });
const call = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'bench' } } });
let lifecycles = 0;
let errors = 0;
const times = [];
const until = Date.now() + seconds * 1000;
await Promise.all(Array.from({ length: concurrency }, async () => {
  while (Date.now() < until) {
    const t0 = performance.now();
    try {
      const a = await send('POST', init, {});
      const session = a.headers['mcp-session-id'];
      const h = { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
      await send('POST', initialized, h);
      const c = await send('POST', call, h);
      if (!c.body.includes('"bench"')) throw new Error('wrong result');
      await send('DELETE', undefined, h);
      lifecycles++;
      times.push(performance.now() - t0);
    } catch {
      errors++;
    }
  }
}));
times.sort((a, b) => a - b);
process.stdout.write(`${JSON.stringify({ lifecycles, errors, p50ms: times[Math.floor(times.length / 2)] ?? 0, p99ms: times[Math.floor(times.length * 0.99)] ?? 0 })}\n`);
agent.destroy();
