import { createServer as createNetServer } from 'node:net';
import { SluiceError } from '../errors.js';

/** A port that was free a moment ago on `host`. */
export function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createNetServer();
    probe.once('error', reject);
    probe.listen(0, host, () => {
      const address = probe.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

/**
 * Rejects with `port_in_use` when another process holds `host:port`. Our HTTP workers share one
 * port through SO_REUSEPORT, which would just as silently share it with any other SO_REUSEPORT
 * holder (another Sluice, any uWS server) and split the traffic. A plain bind without SO_REUSEPORT
 * fails on a port held by anyone, reuseport or not, so one brief exclusive listen before the
 * workers start tells us. Other probe errors are left to the real listen to report.
 */
export function checkPortFree(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = createNetServer();
    probe.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EADDRINUSE') {
        reject(new SluiceError('port_in_use', `cannot listen on ${host}:${port}: the port is already in use by another process (EADDRINUSE)`, { cause: error }));
      } else {
        resolve();
      }
    });
    probe.listen({ port, host, exclusive: true }, () => { probe.close(() => resolve()); });
  });
}
