/** `sluice serve`: flags to server options, the HTTP or stdio server, signals, the start-up line. */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer } from '../process/supervisor.js';
import { serveStdioServer } from '../process/stdio-server.js';
import { keepStderrFailuresQuiet } from '../server/config.js';
import { kServerLogLevels } from '../server/options.js';
import type { ServerLogLevel, ServerOptions } from '../server/options.js';
import { toolsModuleLabel, toolsModuleUrl } from '../catalog/catalog.js';
import type { CatalogNames } from '../catalog/catalog.js';
import { SluiceError } from '../errors.js';
import { resolveAuth } from '../auth/options.js';
import type { AuthOptions } from '../auth/contract.js';
import { UsageError, choiceFlag, integerFlag } from './flags.js';

/** After a signalled stdio shutdown, how long what is left may run before the process exits. */
const kExitSlackMs = 500;

export interface ServeFlags {
  tools?: string | undefined;
  host?: string | undefined;
  port?: string | undefined;
  workers?: string | undefined;
  http?: string | undefined;
  stdio?: string | boolean | undefined;
  metrics?: boolean | undefined;
  'metrics-host'?: string | undefined;
  'metrics-port'?: string | undefined;
  'no-sessions'?: boolean | undefined;
  'cancel-on-disconnect'?: boolean | undefined;
  'cors-origin'?: string[] | undefined;
  'shutdown-grace'?: string | undefined;
  'log-level'?: string | undefined;
  redis?: string | undefined;
  'redis-prefix'?: string | undefined;
  'redis-tls-ca'?: string | undefined;
  'start-degraded'?: boolean | undefined;
  'auth-issuer'?: string[] | undefined;
  'auth-audience'?: string | undefined;
  'auth-jwks'?: string | undefined;
  'auth-scope'?: string[] | undefined;
  'auth-token-types'?: string | undefined;
  tracing?: string | undefined;
}

/** `--metrics-port P [--metrics-host H]`: /metrics on a listener of its own (implies --metrics). */
function metricsListenerFlags(values: ServeFlags): { metricsPort?: number; metricsHost?: string } {
  const port = integerFlag('metrics-port', values['metrics-port'], 0, 65535);
  if (port === undefined) {
    if (values['metrics-host'] !== undefined) throw new UsageError('--metrics-host needs --metrics-port <port>');
    return {};
  }
  return { metricsPort: port, ...(values['metrics-host'] === undefined ? {} : { metricsHost: values['metrics-host'] }) };
}

/** Where `sluice serve` reads the requestState key ring (comma-separated base64/base64url keys, newest first). */
export const kStateKeysEnv = 'SLUICE_REQUEST_STATE_KEYS';

/** The server options `sluice serve` flags stand for (checked: a bad value is a usage error). */
export function serveOptions(values: ServeFlags, env: NodeJS.ProcessEnv = process.env): ServerOptions & { tools: string; logLevel: ServerLogLevel } {
  let tools: string;
  if (values.tools === undefined) {
    tools = fileURLToPath(new URL('../../examples/tools.js', import.meta.url));
  } else {
    // Resolved here, against the current directory, so every message names the same file.
    tools = toolsModuleUrl(values.tools);
    const file = toolsModuleLabel(tools);
    if (tools.startsWith('file:') && !existsSync(file)) {
      throw new SluiceError('tools_module_failed', `the tools module ${file} does not exist (--tools ${values.tools}, resolved against the current directory ${process.cwd()})`);
    }
  }
  const shutdownGraceMs = integerFlag('shutdown-grace', values['shutdown-grace'], 0, 2 ** 31 - 1);
  const origins = values['cors-origin'] ?? [];
  if (values.redis === undefined && (values['redis-prefix'] !== undefined || values['start-degraded'] === true || values['redis-tls-ca'] !== undefined)) {
    throw new UsageError('--redis-prefix, --redis-tls-ca and --start-degraded need --redis <url>');
  }
  if (values.redis !== undefined && !/^rediss?:\/\/\S+$/.test(values.redis)) throw new UsageError(`--redis must be a redis:// or rediss:// URL, got ${JSON.stringify(values.redis)}`);
  const auth = authOptions(values);
  const keys = env[kStateKeysEnv]?.split(',').map((k) => k.trim()).filter((k) => k !== '');
  return {
    tools,
    host: values.host,
    port: integerFlag('port', values.port, 0, 65535) ?? 3000,
    workers: integerFlag('workers', values.workers, 1, 256),
    http: choiceFlag('http', values.http, ['auto', 'uws', 'node'] as const),
    metrics: values.metrics === true,
    ...metricsListenerFlags(values),
    sessions: values['no-sessions'] !== true,
    logLevel: choiceFlag('log-level', values['log-level'], kServerLogLevels) ?? 'warn',
    cancelOnDisconnect: values['cancel-on-disconnect'] === true,
    ...(origins.length > 0 ? { cors: { origins } } : {}),
    ...(shutdownGraceMs === undefined ? {} : { shutdownGraceMs }),
    ...(values.redis === undefined ? {} : { cluster: { redis: values.redis, keyPrefix: values['redis-prefix'], startDegraded: values['start-degraded'] === true, tlsCaFile: values['redis-tls-ca'] } }),
    ...(keys === undefined || keys.length === 0 ? {} : { requestStateKeys: keys }),
    ...(auth === undefined ? {} : { auth }),
    ...(values.tracing === undefined ? {} : { tracing: tracingModule(values.tracing) }),
  };
}

/** `--tracing <module>`: an OpenTelemetry setup module every serving thread imports; it must exist. */
function tracingModule(spec: string): string {
  const url = toolsModuleUrl(spec);
  if (url.startsWith('file:') && !existsSync(fileURLToPath(url))) throw new UsageError(`--tracing: the module ${fileURLToPath(url)} does not exist (resolved against the current directory ${process.cwd()})`);
  return url;
}

/** The --auth-* flags as `auth` options (checked by resolveAuth: a bad URL is a usage error). */
function authOptions(values: ServeFlags): AuthOptions | undefined {
  const issuers = values['auth-issuer'] ?? [];
  const audience = values['auth-audience'];
  const tokenTypes = values['auth-token-types']?.split(',').map((t) => t.trim());
  const given = issuers.length > 0 || audience !== undefined || values['auth-jwks'] !== undefined || (values['auth-scope'] ?? []).length > 0 || tokenTypes !== undefined;
  if (!given) return undefined;
  if (issuers.length === 0 || audience === undefined) throw new UsageError('OAuth needs both --auth-issuer <url> and --auth-audience <uri> (--auth-jwks, --auth-scope and --auth-token-types only add to them)');
  if (values.stdio !== undefined && values.stdio !== false) throw new UsageError('--auth-* flags are for HTTP: a stdio server takes its credentials from the environment');
  const auth: AuthOptions = {
    audience,
    issuers,
    ...(values['auth-jwks'] === undefined ? {} : { jwks: values['auth-jwks'] }),
    ...(values['auth-scope'] === undefined ? {} : { scopes: values['auth-scope'] }),
    // Any strings: resolveAuth, just below, refuses the ones that are not token types.
    ...(tokenTypes === undefined ? {} : { tokenTypes: tokenTypes as NonNullable<AuthOptions['tokenTypes']> }),
  };
  try {
    resolveAuth(auth);
  } catch (error) {
    if (error instanceof SluiceError) throw new UsageError(error.message.replace(/^auth\.(issuers\[\d+\]|audience|jwks|scopes|tokenTypes)/, (m) => flagOf(m)));
    throw error;
  }
  return auth;
}

function flagOf(option: string): string {
  if (option.startsWith('auth.issuers')) return '--auth-issuer';
  if (option === 'auth.audience') return '--auth-audience';
  if (option === 'auth.jwks') return '--auth-jwks';
  if (option === 'auth.tokenTypes') return '--auth-token-types';
  return '--auth-scope';
}

/** `sluice serve`. */
export async function serve(extra: string[], values: ServeFlags): Promise<number> {
  if (extra.length > 0) {
    const hint = /\.[cm]?[jt]s$/.test(extra[0]!) ? ` (to serve a tools module: --tools ${extra[0]})` : '';
    throw new UsageError(`serve takes no arguments, got ${extra.join(' ')}${hint}`);
  }
  const options = serveOptions(values);
  const { logLevel } = options;
  // A client (or supervisor) that closes our stderr must not end the server with an unhandled EPIPE.
  keepStderrFailuresQuiet();
  if (values.stdio === true) {
    // Desktop clients stop a stdio server with SIGTERM: shut down as gracefully as over HTTP.
    const shutdown = new AbortController();
    const stop = () => { process.stderr.write('sluice: shutting down\n'); shutdown.abort(); };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    try {
      await serveStdioServer({
        ...options,
        signal: shutdown.signal,
        onServing: (served) => { if (logLevel !== 'error') process.stderr.write(`sluice: serving MCP over stdio\n${describeServed(served)}`); },
      });
    } finally {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    }
    // An inline tool that ignored the shutdown cancel must not hold the process open.
    if (shutdown.signal.aborted) setTimeout(() => process.exit(0), kExitSlackMs).unref();
    return 0;
  }
  const server = createServer(options);
  // Signal handlers first: a SIGTERM that arrives while starting must still shut down cleanly.
  let onSignal = () => {};
  const stopped = new Promise<void>((resolve) => {
    onSignal = () => { process.stderr.write('sluice: shutting down\n'); resolve(); };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  });
  try {
    const address = await server.listen();
    if (logLevel !== 'error') {
      const threads = Math.max(1, server.workerThreadIds.length);
      const served = server.served === undefined ? '' : describeServed(server.served);
      process.stderr.write(`sluice: serving MCP at ${address.url} (${server.adapterDetail ?? server.adapter}, ${threads} HTTP thread${threads === 1 ? '' : 's'})\n${served}`);
      if (address.metricsUrl !== undefined) process.stderr.write(`sluice: serving /metrics at ${address.metricsUrl}\n`);
    }
    await stopped;
    await server.close();
    return 0;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** Longest run of names on the start-up line before the rest are counted instead. */
const kNamesWidth = 100;

/** The start-up lines naming what is served: "  tools (3): echo, sleep, spin". */
export function describeServed(served: CatalogNames): string {
  const rows: [string, readonly string[]][] = [['tools', served.tools], ['resources', served.resources], ['prompts', served.prompts]];
  let text = '';
  for (const [what, names] of rows) {
    if (names.length === 0 && what !== 'tools') continue;
    let shown = '';
    let count = 0;
    for (const name of names) {
      const next = shown === '' ? name : `${shown}, ${name}`;
      if (count > 0 && next.length > kNamesWidth) break;
      shown = next;
      count++;
    }
    const more = names.length > count ? `, and ${names.length - count} more` : '';
    text += `  ${what} (${names.length}): ${names.length === 0 ? 'none' : shown + more}\n`;
  }
  return text;
}
