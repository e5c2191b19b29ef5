/**
 * One HTTP request to a bench server on 127.0.0.1, and reading its /metrics. No side effects on import.
 */
import { request } from 'node:http';
import type { Agent } from 'node:http';

export interface Call { path: string; method: string; body?: string; headers: Record<string, string> }

export interface Reply { status: number; body: string; headers: Record<string, string | string[] | undefined> }

export interface SendOptions {
  /** Rejects after this long, so no loop can hang on a stalled server. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** Sends `call` to 127.0.0.1:`port` (a fresh connection unless `agent` is given) and reads the whole reply. */
export function send(port: number, call: Call, agent: Agent | false = false, options: SendOptions = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1', port, path: call.path, method: call.method, headers: call.headers, agent,
      ...(options.timeoutMs === undefined ? {} : { timeout: options.timeoutMs }),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString(), headers: res.headers }));
      res.on('error', reject);
    });
    if (options.timeoutMs !== undefined) req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(call.body);
  });
}

/** The text of the server's /metrics (Prometheus exposition). */
export async function metricsText(port: number, timeoutMs?: number): Promise<string> {
  return (await send(port, { path: '/metrics', method: 'GET', headers: {} }, false, timeoutMs === undefined ? {} : { timeoutMs })).body;
}

/** The value of an unlabelled series in /metrics text; undefined when the series is missing. */
export function metricValue(text: string, name: string): number | undefined {
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return m === null ? undefined : Number(m[1]);
}
