// Each command's module is imported when that command runs: `sluice call` loads the client, not
// the server's graph or the load generator's histograms (and `serve` not the load generator).
import { UsageError, choiceFlag, integerFlag } from './flags.js';
import type { ClientFlags } from './client-commands.js';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const kUsage = `Usage:
  sluice serve [options]       serve MCP tools over HTTP (or stdio)
  sluice call <url> <tool> [json-args] [--bearer token] [--task] [--timeout ms] [--era era] [--json]
  sluice call --stdio "<command>" <tool> [json-args] [--task] [--timeout ms] [--json]
                               call a tool, printing progress as it comes; Ctrl-C cancels the call
  sluice list <url> [--bearer token] [--json]
                               list the tools, resources and prompts a server offers
  sluice list --stdio "<command>" [--json]
  sluice bench <url | -- command args…> [--tool name] [--connections n] [--duration 30s] …
                               load any MCP server and report req/s, latency percentiles, errors
                               (\`sluice bench --help\` lists its options)
  sluice --version

  <url> is the MCP endpoint: http://127.0.0.1:3000/mcp; "127.0.0.1:3000" means the same
  (http:// and /mcp are added when missing).

Options of serve:
  --tools <module>     module exporting the tools, resources and prompts (a path resolves
                       against the current directory; .ts works where Node strips types: Node
                       >= 22.18, or started with \`node --import tsx\`). Default: the demo tools
                       (echo, sleep, spin)
  --host <host>        address to bind (default 127.0.0.1)
  --port <port>        port (default 3000; 0 picks a free one)
  --workers <n>        HTTP worker threads (default: available parallelism)
  --http <kind>        auto | uws | node (default auto: uWebSockets.js, else node:http with a warning)
  --stdio              serve over stdin/stdout instead of HTTP
  --metrics            serve Prometheus text at GET /metrics
  --metrics-port <p>   serve /metrics on this port of its own instead (implies --metrics; the MCP
                       port then answers 404 for it)
  --metrics-host <h>   address of the /metrics listener (default 127.0.0.1; needs --metrics-port)
  --no-sessions        no legacy MCP-Session-Id sessions
  --cancel-on-disconnect
                       legacy era: a client that disconnects cancels its requests (the 2026-07-28
                       era always does)
  --cors-origin <origin>
                       let browser pages from this origin call the endpoint (repeatable)
  --shutdown-grace <ms>
                       at SIGINT/SIGTERM, how long running requests may finish before they are
                       cancelled (default 5000)
  --log-level <level>  debug | info | warn | error (default warn; a tool that throws is logged
                       at warn, with its name)
  --tracing <module>   OpenTelemetry: a module every serving and pool thread imports first (it
                       registers an SDK's tracer and/or meter provider): spans per request, the
                       histograms through the metrics API (docs/deployment.md)
  --redis <url>        cluster mode: share cancels, answers, list changes (and sessions, tasks)
                       with the other nodes through this Redis (redis:// or rediss://)
  --redis-prefix <p>   prefix of every Redis key and channel (default sluice:)
  --redis-tls-ca <file>
                       rediss://: trust this PEM CA for the Redis server's certificate
  --start-degraded     start even when Redis cannot be reached (/readyz says so in its body)
  --auth-issuer <url>  OAuth: require a bearer token from this authorization server (repeatable;
                       with it, --auth-audience is required)
  --auth-audience <uri>
                       OAuth: this resource's identifier (the MCP endpoint's public URL); a
                       token's aud must contain it
  --auth-jwks <url>    OAuth: the JWKS URL (default: the jwks_uri of the issuer's metadata)
  --auth-scope <scope> OAuth: a scope every request needs (repeatable)
  --auth-token-types <list>
                       OAuth: the typ values a token may carry, comma-separated, of at+jwt and
                       JWT (default both; at+jwt alone insists on RFC 9068 access tokens)
  Environment: SLUICE_REQUEST_STATE_KEYS=<key>[,<key>…] seals 2026-07-28 requestState with the
                       first key and accepts any (base64/base64url, 32+ bytes each; give every
                       node the same); without it a restarted node or a sibling refuses a retry

Options of call and list:
  --stdio <command>    start this stdio server and talk to it instead of a URL
  --timeout <ms>       (call) cancel the call after this long
  --task               (call) ask the server to run the call as an MCP task: each status change
                       is printed to stderr, the result as usual; Ctrl-C or --timeout sends
                       tasks/cancel (input the task asks for is not given: 2026-07-28 tasks that
                       ask are cancelled, 2025-11-25 requests are declined)
  --era <era>          auto | legacy | modern (default auto)
  --bearer <token>     (a URL) send Authorization: Bearer <token> on every request; default: the
                       SLUICE_BEARER_TOKEN environment variable (the flag wins). A 401 or 403
                       insufficient_scope prints one line naming the resource metadata URL and the
                       scopes the server asks for (exit 1)
  --json               print the raw JSON result instead of readable text

  -h, --help           show this help
  -v, --version        print the version
`;

/** The `sluice` command. Returns the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  // `sluice serve --stdio` owns stdout as its protocol channel (the transport handles its errors).
  if (argv[0] !== 'serve') endQuietlyWhenStdoutCloses();
  try {
    return await run(argv);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`sluice: ${error.message}\n\nRun \`sluice --help\` for the options.\n`);
      return 2;
    }
    process.stderr.write(`sluice: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

/**
 * `sluice call … | head -1`: a reader that closes the pipe early has what it wanted. Its EPIPE ends
 * the command at once with 0, not with an unhandled 'error' and a stack trace; a closed stderr
 * only loses what would have gone there.
 */
function endQuietlyWhenStdoutCloses(): void {
  process.stderr.on('error', () => {});
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') process.stderr.write(`sluice: cannot write the output: ${error.message}\n`);
    process.exit(error.code === 'EPIPE' ? 0 : 1);
  });
}

async function run(argv: readonly string[]): Promise<number> {
  const command = argv[0];
  // bench has its own flags (and `--` before a stdio command): see src/cli/bench.ts.
  if (command === 'bench') return (await import('./bench.js')).bench(argv.slice(1));
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
        // `serve --stdio` is a switch; `call/list --stdio "<command>"` takes the command to spawn.
        stdio: { type: command === 'call' || command === 'list' ? 'string' : 'boolean' },
        metrics: { type: 'boolean' },
        'metrics-port': { type: 'string' },
        'metrics-host': { type: 'string' },
        'no-sessions': { type: 'boolean' },
        'cancel-on-disconnect': { type: 'boolean' },
        'cors-origin': { type: 'string', multiple: true },
        'shutdown-grace': { type: 'string' },
        'log-level': { type: 'string' },
        redis: { type: 'string' },
        'redis-prefix': { type: 'string' },
        'redis-tls-ca': { type: 'string' },
        'start-degraded': { type: 'boolean' },
        'auth-issuer': { type: 'string', multiple: true },
        'auth-audience': { type: 'string' },
        'auth-jwks': { type: 'string' },
        'auth-scope': { type: 'string', multiple: true },
        'auth-token-types': { type: 'string' },
        tracing: { type: 'string' },
        timeout: { type: 'string' },
        era: { type: 'string' },
        json: { type: 'boolean' },
        task: { type: 'boolean' },
        bearer: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help === true) {
    process.stdout.write(kUsage);
    return 0;
  }
  if (values.version === true) {
    process.stdout.write(`sluice ${version()}\n`);
    return 0;
  }
  if (positionals.length === 0) {
    process.stderr.write(kUsage);
    return 2;
  }
  if (values.task === true && positionals[0] !== 'call') throw new UsageError('--task goes with call only');
  if (values.bearer !== undefined && positionals[0] !== 'call' && positionals[0] !== 'list') throw new UsageError('--bearer goes with call and list only');
  if (values.bearer !== undefined && typeof values.stdio === 'string') throw new UsageError('--bearer goes with a URL, not --stdio (a stdio server takes its credentials from its environment)');
  const client: ClientFlags = {
    stdio: typeof values.stdio === 'string' ? values.stdio : undefined,
    timeoutMs: integerFlag('timeout', values.timeout, 1, 2 ** 31 - 1), // setTimeout's longest delay
    era: choiceFlag('era', values.era, ['auto', 'legacy', 'modern'] as const) ?? 'auto',
    json: values.json === true,
    task: values.task === true,
    bearer: typeof values.stdio === 'string' ? undefined : bearerToken(values.bearer),
  };
  switch (positionals[0]) {
    case 'call': return (await import('./client-commands.js')).call(positionals.slice(1), client);
    case 'list': return (await import('./client-commands.js')).list(positionals.slice(1), client);
    case 'serve': return (await import('./serve.js')).serve(positionals.slice(1), values);
    default: throw new UsageError(`unknown command ${positionals[0]} (commands: serve, call, list, bench)`);
  }
}

/** The bearer token: `--bearer`, else SLUICE_BEARER_TOKEN (empty means unset); never echoed in errors. */
function bearerToken(flag: string | undefined): string | undefined {
  const fromEnv = process.env.SLUICE_BEARER_TOKEN;
  const [token, source] = flag !== undefined ? [flag, '--bearer'] : fromEnv !== undefined && fromEnv !== '' ? [fromEnv, 'SLUICE_BEARER_TOKEN'] : [undefined, ''];
  if (token !== undefined && !/^[\x21-\x7e]+$/.test(token)) throw new UsageError(`${source} must be a token of visible ASCII characters without spaces (the token alone, without "Bearer ")`);
  return token;
}

/** The version in Sluice's package.json. */
function version(): string {
  // From dist/src/cli/ or src/cli/: the first package.json up the tree that is Sluice's.
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'sluice' && typeof pkg.version === 'string') return pkg.version;
    }
    dir = dirname(dir);
  }
  return 'unknown';
}
