/**
 * /metrics on an address of its own (`metricsHost`/`metricsPort`): operators bind it to a private
 * interface so the MCP port never serves it. node:http in the supervisor thread, GET /metrics only;
 * small bounds, since whoever reaches it is not trusted either: few connections at once, short
 * header and idle timeouts, and the text comes from the short cache (MetricsScrape).
 */
import { createServer } from 'node:http';
import type { Socket } from 'node:net';
import { SluiceError } from '../../../errors.js';

/** Connections the metrics listener holds at once (a scraper uses one). */
export const kMaxMetricsConnections = 16;

export interface MetricsListening {
  readonly host: string;
  readonly port: number;
  close(): Promise<void>;
}

export function listenMetrics(host: string, port: number, text: () => string): Promise<MetricsListening> {
  const sockets = new Set<Socket>();
  const server = createServer({ headersTimeout: 5_000, requestTimeout: 10_000, keepAliveTimeout: 5_000, connectionsCheckingInterval: 1_000 }, (req, res) => {
    const path = (req.url ?? '/').split('?', 1)[0];
    if (path !== '/metrics') return void res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    if (req.method !== 'GET' && req.method !== 'HEAD') return void res.writeHead(405, { allow: 'GET' }).end();
    const body = text();
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4', 'content-length': Buffer.byteLength(body) }).end(req.method === 'HEAD' ? undefined : body);
  });
  server.maxHeadersCount = 50;
  server.maxConnections = kMaxMetricsConnections;
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.on('clientError', (_error, socket: Socket) => { socket.destroy(); });
  return new Promise((resolve, reject) => {
    server.once('error', (error) => reject(new SluiceError('listen_failed', `cannot listen for /metrics on ${host}:${port}: ${error.message}`, { cause: error })));
    server.listen({ host, port }, () => {
      const address = server.address();
      resolve({
        host,
        port: typeof address === 'object' && address !== null ? address.port : port,
        close: () => new Promise<void>((done) => {
          server.close(() => done());
          for (const s of sockets) s.destroy();
        }),
      });
    });
  });
}
