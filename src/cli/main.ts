import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createServer } from '../supervisor/server.js';
import { serveStdioServer } from '../supervisor/stdio-server.js';

const kUsage = `Usage:
  sluice serve [options]       serve MCP tools over HTTP (or stdio)

Options:
  --tools <module>     module exporting the tools (default: the demo tools: echo, sleep, spin)
  --host <host>        address to bind (default 127.0.0.1)
  --port <port>        port (default 3000; 0 picks a free one)
  --workers <n>        HTTP worker threads (default: available parallelism)
  --http <kind>        auto | uws | node (default auto: uWebSockets.js, else node:http with a warning)
  --stdio              serve over stdin/stdout instead of HTTP
  --metrics            serve Prometheus text at GET /metrics
  --no-sessions        no legacy MCP-Session-Id sessions
  -h, --help           show this help
`;

/** The `sluice` command. Returns the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        tools: { type: 'string' },
        host: { type: 'string' },
        port: { type: 'string' },
        workers: { type: 'string' },
        http: { type: 'string' },
        stdio: { type: 'boolean' },
        metrics: { type: 'boolean' },
        'no-sessions': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    process.stderr.write(`sluice: ${(error as Error).message}\n\n${kUsage}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help === true || positionals.length === 0) {
    process.stdout.write(kUsage);
    return values.help === true ? 0 : 2;
  }
  if (positionals[0] !== 'serve') {
    process.stderr.write(`sluice: unknown command ${positionals[0]}\n\n${kUsage}`);
    return 2;
  }
  const number = (name: string, text: string | undefined): number | undefined => {
    if (text === undefined) return undefined;
    const n = Number(text);
    if (!Number.isInteger(n)) throw new Error(`--${name} must be an integer, got ${text}`);
    return n;
  };
  const tools = values.tools ?? fileURLToPath(new URL('../../examples/tools.js', import.meta.url));
  try {
    if (values.stdio === true) {
      await serveStdioServer({ tools });
      return 0;
    }
    const server = createServer({
      tools,
      host: values.host,
      port: number('port', values.port) ?? 3000,
      workers: number('workers', values.workers),
      http: values.http as 'auto' | 'uws' | 'node' | undefined,
      metrics: values.metrics === true,
      sessions: values['no-sessions'] !== true,
    });
    // Signal handlers first: a SIGTERM that arrives while starting must still shut down cleanly.
    const stopped = new Promise<void>((resolve) => {
      const stop = () => { process.stderr.write('sluice: shutting down\n'); resolve(); };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
    const address = await server.listen();
    process.stderr.write(`sluice: serving MCP at ${address.url} (${server.adapter}, ${Math.max(1, server.workerThreadIds.length)} HTTP thread(s))\n`);
    await stopped;
    await server.close();
    return 0;
  } catch (error) {
    process.stderr.write(`sluice: ${(error as Error).message}\n`);
    return 1;
  }
}
