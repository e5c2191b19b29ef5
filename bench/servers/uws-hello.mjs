// S0 calibration: raw uWebSockets.js hello world.
// The same native binding Sluice's loader picks for this Node (never a JavaScript imitation).
import { loadUws } from '../../dist/src/transport/http/uws/load.js';
const uws = loadUws();
uws.App().any('/*', (res) => { res.end('Hello'); }).listen('127.0.0.1', 0, (s) => {
  process.stdout.write(`READY ${uws.us_socket_local_port(s)}\n`);
});
