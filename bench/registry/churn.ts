/**
 * Phase 3 (table vs Map, one thread): random delete+insert churn of fresh keys, then the lookups
 * again over the keys live after it (no collapse from tombstones). No side effects on import.
 */
import { KeyScratch } from '../../native-free-shm/index.js';
import { kChurnPairs, kFill, kKeyBytes, kMaxKeyBytes } from './config.js';
import { keyString, makeRng, prepareKeys, shuffledOrder, writeKey } from './keys.js';
import { census, measureLookups, now } from './table.js';
import type { LookupPair, SlotCensus, TableBench } from './table.js';

export interface ChurnResults {
  pairs: number;
  tablePairsPerSec: number;
  mapPairsPerSec: number;
  before: SlotCensus;
  after: SlotCensus;
  lookupsAfter: LookupPair;
}

/** 3: churn, then lookups over the keys live after it. */
export function churnPhase(s: TableBench): ChurnResults {
  const { t, m, member, rng, liveStrings, liveCounter, liveSlot, liveCtl } = s;
  // The same random sequence drives both: delete a random live row, insert a fresh key.
  const before = census(t);
  const churnSeed = rng();
  const scratch = new KeyScratch(kMaxKeyBytes);
  let pick = makeRng(churnSeed);
  const firstFresh = s.nextCounter;
  let nextCounter = firstFresh;
  let start = now();
  for (let p = 0; p < kChurnPairs; p++) {
    const r = pick() % kFill;
    if (t.remove(liveSlot[r], liveCtl[r]) === 0) throw new Error('churn: remove failed');
    const c = nextCounter++;
    writeKey(scratch, c);
    const hash = t.hash(scratch.words, kKeyBytes);
    const slot = t.claim(scratch.words, kKeyBytes, hash, member);
    if (slot < 0) throw new Error('churn: table full');
    t.i32[t.valueIndex(slot)] = c;
    liveCtl[r] = t.publish(slot, member);
    liveSlot[r] = slot;
    liveCounter[r] = c;
  }
  const tableChurnSeconds = (now() - start) / 1000;
  const after = census(t);

  pick = makeRng(churnSeed);
  nextCounter = firstFresh;
  const mapLive = [...liveStrings];
  start = now();
  for (let p = 0; p < kChurnPairs; p++) {
    const r = pick() % kFill;
    if (!m.delete(mapLive[r])) throw new Error('churn: map delete failed');
    const k = keyString(nextCounter);
    m.set(k, nextCounter++);
    mapLive[r] = k;
  }
  const mapChurnSeconds = (now() - start) / 1000;
  s.nextCounter = nextCounter;
  if (m.size !== kFill || after.live !== kFill) throw new Error(`churn: sizes drifted (map ${m.size}, table ${after.live})`);

  // Lookups again, over the keys live now (the Map's own key strings, the same text).
  const liveAfter = prepareKeys(t, mapLive, kMaxKeyBytes);
  for (let i = 0; i < kFill; i++) {
    if (keyString(liveCounter[i]) !== mapLive[i]) throw new Error('churn: table and map diverged');
  }
  const orderAfter = shuffledOrder(kFill, rng);
  const lookupsAfter = measureLookups(t, m, liveAfter, orderAfter);
  return {
    pairs: kChurnPairs,
    tablePairsPerSec: kChurnPairs / tableChurnSeconds,
    mapPairsPerSec: kChurnPairs / mapChurnSeconds,
    before,
    after,
    lookupsAfter,
  };
}
