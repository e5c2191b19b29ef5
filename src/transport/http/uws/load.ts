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
  /** Whether it is the official uWebSockets.js (installed from GitHub) or the packaged npm republish. */
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
   * for this Node/OS): the packaged binding serves instead. Undefined when it was not installed or
   * was used.
   */
  readonly officialSkipped: string | undefined;
}

/** The official package's name (it is not on the npm registry: users install it from GitHub). */
export const kOfficialPackage = 'uWebSockets.js';
/** The npm republish this project depends on (native binaries for ABI 93/108/115 only). */
export const kPackagedPackage = '@trufflesuite/uws-js-unofficial';

let loaded: LoadedUws | undefined;

/**
 * Loads a native uWebSockets.js binding: the official `uWebSockets.js` when the user installed it
 * and its binary loads on this Node, else the packaged `@trufflesuite/uws-js-unofficial` binary for
 * the running ABI. That npm republish silently falls back to a slow JavaScript imitation when its
 * binary does not load; we never go through that path (its binary is required directly, and any
 * binding must prove native): either a native binding loads, or this throws
 * `uws_native_unavailable` naming what was tried, and the caller says so loudly.
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

/**
 * The search, with `require` resolving packages from where Sluice is installed (tests pass their
 * own to stand in a fake `uWebSockets.js`).
 */
export function findUws(require: NodeRequire): LoadedUws {
  const file = binaryName();
  let officialSkipped: string | undefined;
  // 1. The official uWebSockets.js, if installed. Its package may export only its entry (uws.js),
  //    so find its folder from the entry, then load the binary for this ABI directly.
  let officialDir: string | undefined;
  try {
    officialDir = dirname(require.resolve(kOfficialPackage));
  } catch {
    officialDir = undefined; // not installed: the usual case
  }
  if (officialDir !== undefined) {
    const version = packageVersion(officialDir);
    const path = join(officialDir, file);
    try {
      const uws = assertNative(require(path), path);
      return { uws, source: { packageName: kOfficialPackage, version, official: true, file: path, description: `official uWebSockets.js v${version} (native ${file})` }, officialSkipped: undefined };
    } catch (error) {
      officialSkipped = `the official uWebSockets.js v${version} is installed but its binary does not load on ${where()}: ${firstLine(error)}`;
    }
  }
  // 2. The packaged binding for the running ABI, never its JavaScript fallback.
  let dir: string;
  try {
    dir = dirname(require.resolve(`${kPackagedPackage}/package.json`));
  } catch (error) {
    throw new SluiceError('uws_native_unavailable', joinReasons(officialSkipped, `the package ${kPackagedPackage} is not installed`), { cause: error });
  }
  const version = packageVersion(dir);
  const path = join(dir, 'binaries', file);
  try {
    const uws = assertNative(require(path), path);
    return { uws, source: { packageName: kPackagedPackage, version, official: false, file: path, description: `uWebSockets.js from ${kPackagedPackage} v${version} (native ${file})` }, officialSkipped };
  } catch (error) {
    const reason = existsSync(path)
      ? `the native uWebSockets.js binding of ${kPackagedPackage} v${version} did not load on ${where()}: ${firstLine(error)}`
      : `${kPackagedPackage} v${version} has no native uWebSockets.js binding for ${where()} (it ships ABI 93/108/115: Node 16/18/20)`;
    throw new SluiceError('uws_native_unavailable', joinReasons(officialSkipped, reason), { cause: error });
  }
}

function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split('\n')[0];
}

function joinReasons(official: string | undefined, packaged: string): string {
  return official === undefined ? `${packaged}; the official uWebSockets.js is not installed` : `${official}; and ${packaged}`;
}
