import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { SluiceError } from '../../../errors.js';

/** The subset of uWebSockets.js this adapter uses. */
export interface UwsResponse {
  onAborted(handler: () => void): UwsResponse;
  onData(handler: (chunk: ArrayBuffer, isLast: boolean) => void): UwsResponse;
  cork(cb: () => void): UwsResponse;
  writeStatus(status: string): UwsResponse;
  writeHeader(key: string, value: string): UwsResponse;
  write(chunk: string): boolean;
  /** Called when the socket can take more after a write met backpressure; return false if a write failed again. */
  onWritable(handler: (offset: number) => boolean): UwsResponse;
  end(body?: string, closeConnection?: boolean): UwsResponse;
  endWithoutBody(reportedContentLength?: number, closeConnection?: boolean): UwsResponse;
  close(): UwsResponse;
  getRemoteAddress(): ArrayBuffer;
  getRemoteAddressAsText(): ArrayBuffer;
}
export interface UwsRequest {
  getMethod(): string;
  getUrl(): string;
  getHeader(name: string): string;
  forEach(cb: (key: string, value: string) => void): void;
}
export interface UwsApp {
  any(pattern: string, handler: (res: UwsResponse, req: UwsRequest) => void): UwsApp;
  listen(host: string, port: number, cb: (socket: unknown) => void): UwsApp;
  close?(): void;
  /** Connections opening (count 1) and closing (-1); uWS ≥ v20.4x only (not the trufflesuite v20.30 build). */
  filter?(cb: (res: UwsResponse, count: number) => void): UwsApp;
}
export interface Uws {
  App(options?: Record<string, unknown>): UwsApp;
  us_listen_socket_close(socket: unknown): void;
  us_socket_local_port(socket: unknown): number;
}

/** Where the loaded binding came from (for the adapter decision's log and `Server.adapterDetail`). */
export interface UwsSource {
  /** The npm package name it was loaded from. */
  readonly packageName: string;
  readonly version: string;
  /** Whether it is the official uWebSockets.js (installed from GitHub) or an npm build of it. */
  readonly official: boolean;
  /** The native binary that was loaded. */
  readonly file: string;
  /** One line for logs: what serves, from where. */
  readonly description: string;
}

export interface LoadedUws {
  readonly uws: Uws;
  readonly source: UwsSource;
  /**
   * Why the official uWebSockets.js, when it is installed, was not used (its binary did not load
   * for this Node/OS): an npm build serves instead. Undefined when it was not installed or was used.
   */
  readonly officialSkipped: string | undefined;
  /** Why each candidate tried before the one that serves did not (not installed, no binary for this ABI, did not load). */
  readonly skipped: readonly string[];
}

/** The official package's name (it is not on the npm registry: users install it from GitHub). */
export const kOfficialPackage = 'uWebSockets.js';
/**
 * The npm build of uWS v20.57 with binaries for ABI 115/127/137/141 (Node 20/22/24/25), linked
 * against glibc 2.38: it loads on current distributions (Debian 13, Ubuntu 24.04), not on Debian 12.
 * An optional dependency; docs/deployment.md says what was checked before taking it.
 */
export const kCurrentBuildPackage = '@btc-vision/uwebsockets.js';
/** The npm republish of uWS v20.30 (native binaries for ABI 93/108/115 only, any glibc this project runs on). */
export const kPackagedPackage = '@trufflesuite/uws-js-unofficial';

/** A package that may hold a native uWS binding, and where its binary for this ABI sits. */
interface Candidate {
  readonly packageName: string;
  readonly official: boolean;
  /** Resolves the package folder (throws when it is not installed). */
  readonly folder: (require: NodeRequire) => string;
  /** The binary's folder inside the package. */
  readonly binaries: string;
  /** What the package ships, for the message when it has no binary for this ABI. */
  readonly ships: string;
}

// The official package and the btc-vision build export only their entry (uws.js), so their folder is
// found from the entry (resolved, never run). Each binary is loaded directly: the trufflesuite
// republish's entry falls back to a slow JavaScript imitation when its binary does not load.
const kCandidates: readonly Candidate[] = [
  { packageName: kOfficialPackage, official: true, folder: (r) => dirname(r.resolve(kOfficialPackage)), binaries: '.', ships: 'the ABIs of its release' },
  { packageName: kCurrentBuildPackage, official: false, folder: (r) => dirname(r.resolve(kCurrentBuildPackage)), binaries: '.', ships: 'ABI 115/127/137/141: Node 20/22/24/25, glibc >= 2.38' },
  { packageName: kPackagedPackage, official: false, folder: (r) => dirname(r.resolve(`${kPackagedPackage}/package.json`)), binaries: 'binaries', ships: 'ABI 93/108/115: Node 16/18/20' },
];

let loaded: LoadedUws | undefined;

/**
 * Loads a native uWebSockets.js binding, in this order: the official `uWebSockets.js` when the user
 * installed it and its binary loads on this Node; else `@btc-vision/uwebsockets.js` when its binary
 * for the running ABI loads (Node 22/24 on glibc >= 2.38); else the `@trufflesuite/uws-js-unofficial`
 * binary (Node 16/18/20). Any binding must prove native: either one loads, or this throws
 * `uws_native_unavailable` naming why each was passed over, and the caller says so loudly.
 */
export function loadUws(): Uws {
  return loadUwsWithSource().uws;
}

/** `loadUws`, with where the binding came from. Cached after the first success. */
export function loadUwsWithSource(): LoadedUws {
  loaded ??= findUws(createRequire(import.meta.url));
  return loaded;
}

/** The binary name uWS.js uses for this platform and Node ABI. */
function binaryName(): string {
  return `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
}

function where(): string {
  return `${process.platform}-${process.arch}, Node ${process.versions.node} (ABI ${process.versions.modules})`;
}

function packageVersion(dir: string): string {
  try {
    const version = (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version?: unknown }).version;
    return typeof version === 'string' ? version : 'unknown';
  } catch {
    return 'unknown';
  }
}

/** A native binding exposes native functions; a JavaScript imitation does not. */
function assertNative(candidate: unknown, what: string): Uws {
  const uws = candidate as Partial<Uws> | null;
  const native = (fn: unknown) => typeof fn === 'function' && Function.prototype.toString.call(fn).includes('[native code]');
  if (uws === null || typeof uws !== 'object' || !native(uws.App) || !native(uws.us_listen_socket_close) || !native(uws.us_socket_local_port)) {
    throw new Error(`${what} is not a native uWebSockets.js binding (a JavaScript imitation?)`);
  }
  return uws as Uws;
}

function describe(candidate: Candidate, version: string, file: string): string {
  return candidate.official ? `official uWebSockets.js v${version} (native ${file})` : `uWebSockets.js from ${candidate.packageName} v${version} (native ${file})`;
}

/**
 * The search, with `require` resolving packages from where Sluice is installed (tests pass their
 * own to stand in fake packages).
 */
export function findUws(require: NodeRequire): LoadedUws {
  const file = binaryName();
  const skipped: string[] = [];
  let officialSkipped: string | undefined;
  let lastError: unknown;
  for (const candidate of kCandidates) {
    let dir: string;
    try {
      dir = candidate.folder(require);
    } catch (error) {
      skipped.push(candidate.official ? 'the official uWebSockets.js is not installed' : `${candidate.packageName} is not installed`);
      lastError = error;
      continue;
    }
    const version = packageVersion(dir);
    const path = join(dir, candidate.binaries, file);
    try {
      const uws = assertNative(require(path), path);
      return { uws, source: { packageName: candidate.packageName, version, official: candidate.official, file: path, description: describe(candidate, version, file) }, officialSkipped, skipped };
    } catch (error) {
      lastError = error;
      const name = candidate.official ? `the official uWebSockets.js v${version}` : `${candidate.packageName} v${version}`;
      const reason = existsSync(path) || candidate.official
        ? `${name} is installed but its binary does not load on ${where()}: ${firstLine(error)}`
        : `${name} has no native uWebSockets.js binding for ${where()} (it ships ${candidate.ships})`;
      if (candidate.official) officialSkipped = reason;
      skipped.push(reason);
    }
  }
  throw new SluiceError('uws_native_unavailable', skipped.join('; '), { cause: lastError });
}

function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split('\n')[0];
}
