// S0 calibration: raw uWebSockets.js hello world.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
const require = createRequire(import.meta.url);
const dir = dirname(require.resolve('@trufflesuite/uws-js-unofficial/package.json'));
const uws = require(join(dir, 'binaries', `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`));
uws.App().any('/*', (res) => { res.end('Hello'); }).listen('127.0.0.1', 0, (s) => {
  process.stdout.write(`READY ${uws.us_socket_local_port(s)}\n`);
});
