import type { Redis } from 'ioredis';

/**
 * Re-subscribes `sub` to `channels()` after each reconnection (not the first connect, whose
 * SUBSCRIBE its owner sends). Used instead of ioredis's own `autoResubscribe`, which sends the
 * SUBSCRIBE with no handler: if the link drops again before Redis answers, that promise rejects
 * ("Connection is closed.") unhandled, and an unhandled rejection ends the process. Here a failed
 * re-subscribe is simply tried again at the next reconnection.
 */
export function resubscribeOnReconnect(sub: Redis, channels: () => readonly string[]): void {
  let connected = false;
  sub.on('ready', () => {
    if (!connected) {
      connected = true;
      return;
    }
    const list = channels();
    if (list.length > 0) sub.subscribe(...list).catch(() => {});
  });
}
