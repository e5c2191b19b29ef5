import { kLogLevels } from '../../tools/context.js';
import type { EngineConfig } from '../contract.js';
import { kCacheTtlMs } from '../eras/rules.js';
import type { Method, Run } from '../run.js';
import { ErrorCode, ProtocolError, kLegacyVersions, kModernVersion } from '../wire.js';

type Config = Pick<EngineConfig, 'serverInfo' | 'instructions'>;

/** The revision whose initialize may declare `tasks`: experimental tasks exist only in 2025-11-25. */
const kTasksRevision = '2025-11-25';

/**
 * Legacy lifecycle: initialize, ping, logging/setLevel. initialize declares the capabilities of the
 * revision it negotiates: `tasks` only at 2025-11-25 (earlier revisions have no tasks).
 */
export function legacyLifecycle(config: Config, capabilities: Record<string, unknown>): Array<[string, Method]> {
  const { tasks: _tasks, ...withoutTasks } = capabilities;
  const byVersion = (version: string): Record<string, unknown> => version === kTasksRevision ? capabilities : withoutTasks;
  return [
    ['initialize', { handler: (_run, params) => initialize(config, byVersion, params) }],
    ['ping', { handler: () => ({}) }],
    ['logging/setLevel', { handler: setLevel }],
  ];
}

/** 2026-07-28 lifecycle: server/discover, whose result is fixed for the engine's life (built once, never mutated). */
export function modernLifecycle(config: Config, capabilities: Record<string, unknown>): Array<[string, Method]> {
  const discover: Record<string, unknown> = {
    supportedVersions: [kModernVersion, ...kLegacyVersions],
    capabilities,
    ttlMs: kCacheTtlMs,
    cacheScope: 'public',
  };
  if (config.instructions !== undefined) discover.instructions = config.instructions;
  return [['server/discover', { handler: () => discover }]];
}

function initialize(config: Config, capabilities: (version: string) => Record<string, unknown>, params: Record<string, unknown> | undefined): Record<string, unknown> {
  const requested = params?.protocolVersion;
  const version = typeof requested === 'string' && (kLegacyVersions as readonly string[]).includes(requested) ? requested : kLegacyVersions[0];
  const result: Record<string, unknown> = { protocolVersion: version, capabilities: capabilities(version), serverInfo: config.serverInfo };
  if (config.instructions !== undefined) result.instructions = config.instructions;
  return result;
}

function setLevel(run: Run, params: Record<string, unknown> | undefined): Record<string, unknown> {
  const level = kLogLevels.indexOf(params?.level as (typeof kLogLevels)[number]);
  if (level < 0) throw new ProtocolError(ErrorCode.InvalidParams, `level must be one of ${kLogLevels.join(', ')}`);
  run.info.levelStore?.setLogLevel(level);
  return {};
}
