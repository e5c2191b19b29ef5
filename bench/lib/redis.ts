/**
 * A real redis-server for a test or a bench: started on a free loopback port with persistence off, in its own
 * temporary folder, and stopped (SIGKILL after a grace) by `stop()`. No mocks of Redis anywhere.
 * `.ci/run` installs redis-server (Debian) when it is missing.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface RedisInstance {
  readonly port: number;
  /** `redis://127.0.0.1:<port>` */
  readonly url: string;
  /** Stops it (the data goes with it: persistence is off). */
  stop(): Promise<void>;
  /** Starts it again on the same port (empty), e.g. after `kill()`. */
  restart(): Promise<void>;
  /** SIGKILLs it (a crash), leaving the port free. */
  kill(): Promise<void>;
}

/** A free loopback TCP port. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let reply = '';
    socket.setTimeout(500, () => { socket.destroy(); resolve(false); });
    socket.on('error', () => resolve(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk.toString();
      if (reply.includes('\r\n')) {
        socket.destroy();
        resolve(reply.startsWith('+PONG'));
      }
    });
  });
}

/** Starts redis-server on a free loopback port (persistence off) and waits until it answers PING. */
export async function startRedis(): Promise<RedisInstance> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'sluice-redis-'));
  let child: ChildProcess | undefined;
  const launch = async (): Promise<void> => {
    mkdirSync(dir, { recursive: true }); // kill() removed it
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--loglevel', 'warning'], { stdio: 'ignore' });
    const deadline = Date.now() + 10_000;
    while (!(await ping(port))) {
      if (child.exitCode !== null) throw new Error(`redis-server exited (${child.exitCode}) on port ${port}`);
      if (Date.now() > deadline) throw new Error('redis-server did not answer PING within 10 s');
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const halt = async (signal: NodeJS.Signals): Promise<void> => {
    const c = child;
    if (c === undefined || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill(signal);
    const timer = setTimeout(() => c.kill('SIGKILL'), 3000);
    await exited;
    clearTimeout(timer);
  };
  await launch();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    // The folder goes with the server: a test run starts dozens of them.
    stop: () => halt('SIGTERM').finally(() => rmSync(dir, { recursive: true, force: true })),
    kill: () => halt('SIGKILL').finally(() => rmSync(dir, { recursive: true, force: true })),
    restart: async () => {
      await halt('SIGKILL');
      await launch();
    },
  };
}
