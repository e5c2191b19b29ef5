import { Agent, request } from 'node:http';

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One POST of a JSON-RPC message on a given agent (so a test controls which connection it uses). */
export function post(url: string, message: unknown, headers: Record<string, string> = {}, agent?: Agent): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const body = typeof message === 'string' ? message : JSON.stringify(message);
    const req = request(url, {
      method: 'POST',
      agent: agent ?? false,
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'content-length': Buffer.byteLength(body), ...headers },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(20_000, () => req.destroy(new Error('request timed out')));
    req.end(body);
  });
}

/**
 * A keep-alive agent whose one connection is served by a worker thread other than `notThread`:
 * new connections are opened until the kernel hands one to another thread.
 */
export async function agentOnWorker(url: string, thread: string, headers: Record<string, string>, probe: unknown): Promise<Agent> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const res = await post(url, probe, headers, agent);
    if (String(res.headers['sluice-worker']) === thread) return agent;
    agent.destroy();
  }
  throw new Error(`no connection landed on worker ${thread}`);
}

export async function agentOnOtherWorker(url: string, notThread: string, headers: Record<string, string>, probe: unknown): Promise<{ agent: Agent; thread: string }> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const res = await post(url, probe, headers, agent);
    const thread = String(res.headers['sluice-worker']);
    if (thread !== notThread) return { agent, thread };
    agent.destroy();
  }
  throw new Error(`no connection landed on a worker other than ${notThread}`);
}
