// The real redis-server launcher lives with the benches (they start one too); tests use it from here.
export { freePort, startRedis } from '../../bench/lib/redis.js';
export type { RedisInstance } from '../../bench/lib/redis.js';
