import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createServer } from '../supervisor/server.js';
import { serveStdioServer } from '../supervisor/stdio-server.js';

import { CancelledError } from '../errors.js';
import { Client } from '../client/client.js';
import { HttpClientTransport } from '../client/http.js';
import { StdioClientTransport } from '../client/stdio.js';

const kUsage = `Usage:
  sluice serve [options]       serve MCP tools over HTTP (or stdio)
  sluice call <url> <tool> [json-args] [--timeout ms]
  sluice call --stdio "<command>" <tool> [json-args] [--timeout ms]
                               call a tool, printing progress as it comes; Ctrl-C cancels the call

Options:
  --tools <module>     module exporting the tools (default: the demo tools: echo, sleep, spin)
  --host <host>        address to bind (default 127.0.0.1)
  --port <port>        port (default 3000; 0 picks a free one)
  --workers <n>        HTTP worker threads (default: available parallelism)
  --http <kind>        auto | uws | node (default auto: uWebSockets.js, else node:http with a warning)
  --stdio              serve over stdin/stdout instead of HTTP
  --metrics            serve Prometheus text at GET /metrics
  --no-sessions        no legacy MCP-Session-Id sessions
  --timeout <ms>       (call) cancel the call after this long
  --era <era>          (call) auto | legacy | modern (default auto)
  -h, --help           show this help
`;

/** After a signalled stdio shutdown, how long what is left may run before the process exits. */
const kExitSlackMs = 500;

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
        // `serve --stdio` is a switch; `call --stdio "<command>"` takes the command to spawn.
        stdio: { type: argv[0] === 'call' ? 'string' : 'boolean' },
        metrics: { type: 'boolean' },
        'no-sessions': { type: 'boolean' },
        timeout: { type: 'string' },
        era: { type: 'string' },
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
  if (positionals[0] === 'call') return call(positionals.slice(1), values as { stdio?: string; timeout?: string; era?: string });
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
    if ((values.stdio as unknown) === true) {
      // Desktop clients stop a stdio server with SIGTERM: shut down as gracefully as over HTTP.
      const shutdown = new AbortController();
      const stop = () => { process.stderr.write('sluice: shutting down\n'); shutdown.abort(); };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      try {
        await serveStdioServer({ tools, signal: shutdown.signal });
      } finally {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
      }
      // An inline tool that ignored the shutdown cancel must not hold the process open.
      if (shutdown.signal.aborted) setTimeout(() => process.exit(0), kExitSlackMs).unref();
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

/** `sluice call`: one tool call, progress on stderr, the result on stdout; SIGINT cancels it. */
async function call(args: string[], values: { stdio?: boolean | string; timeout?: string; era?: string }): Promise<number> {
  const stdioCommand = typeof values.stdio === 'string' ? values.stdio : undefined;
  const [target, tool, json] = stdioCommand === undefined ? args : [undefined, args[0], args[1]];
  if (tool === undefined || (stdioCommand === undefined && target === undefined)) {
    process.stderr.write(`sluice: call needs a server and a tool\n\n${kUsage}`);
    return 2;
  }
  let toolArgs: Record<string, unknown> = {};
  if (json !== undefined) {
    try {
      toolArgs = JSON.parse(json) as Record<string, unknown>;
    } catch {
      process.stderr.write('sluice: the tool arguments must be JSON\n');
      return 2;
    }
  }
  const era = values.era === 'legacy' || values.era === 'modern' ? values.era : 'auto';
  const transport = stdioCommand !== undefined
    ? new StdioClientTransport({ command: '/bin/sh', args: ['-c', `exec ${stdioCommand}`], stderr: 'inherit' })
    : new HttpClientTransport({ url: target! });
  const client = new Client(transport, { era });
  const interrupt = new AbortController();
  const onSigint = () => interrupt.abort('interrupted (SIGINT)');
  process.once('SIGINT', onSigint);
  try {
    const timeoutMs = values.timeout === undefined ? undefined : Number(values.timeout);
    const result = await client.callTool(tool, toolArgs, {
      signal: interrupt.signal,
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
      onProgress: (p) => process.stderr.write(`progress ${p.progress}${p.total === undefined ? '' : `/${p.total}`}${p.message === undefined ? '' : ` ${p.message}`}\n`),
    });
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return result.isError === true ? 1 : 0;
  } catch (error) {
    process.stderr.write(`sluice: ${error instanceof CancelledError ? `cancelled: ${error.reason ?? ''}` : (error as Error).message}\n`);
    return error instanceof CancelledError && interrupt.signal.aborted ? 130 : 1;
  } finally {
    process.off('SIGINT', onSigint);
    await client.close();
  }
}
