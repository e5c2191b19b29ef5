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

let loaded: Uws | undefined;

/**
 * Loads the native uWebSockets.js binding directly. The npm republish silently falls back to a slow
 * JavaScript imitation when its binary does not load; we never go through that path: either the
 * native binding loads, or this throws `uws_native_unavailable` and the caller says so loudly.
 */
export function loadUws(): Uws {
  if (loaded !== undefined) return loaded;
  const require = createRequire(import.meta.url);
  let dir: string;
  try {
    dir = dirname(require.resolve('@trufflesuite/uws-js-unofficial/package.json'));
  } catch (error) {
    throw new SluiceError('uws_native_unavailable', 'the package @trufflesuite/uws-js-unofficial is not installed', { cause: error });
  }
  const file = join(dir, 'binaries', `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`);
  try {
    loaded = require(file) as Uws;
  } catch (error) {
    throw new SluiceError('uws_native_unavailable', `the native uWebSockets.js binding did not load for ${process.platform}-${process.arch}, ABI ${process.versions.modules}: ${(error as Error).message}`, { cause: error });
  }
  return loaded;
}
