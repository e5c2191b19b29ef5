// S0 calibration: node:http hello world.
import { createServer } from 'node:http';
const server = createServer((req, res) => { req.resume(); res.end('Hello'); });
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`READY ${server.address().port}\n`));
