/**
 * /metrics made cheap to ask for. A render reads every counter block (the registry's, each
 * thread's, the histograms'); a scrape flood would cost each HTTP worker that much per request, at
 * the expense of the MCP traffic it serves. So each serving thread renders at most
 * `kRendersPerSecond` times a second (a token bucket holding as many): a scraper asking now and
 * then always gets a fresh text, a flood gets the last one, at most 1 / kRendersPerSecond seconds old.
 */
import type { RegistryCounters } from '../registry/index.js';
import { prometheusText } from './counters.js';
import type { ServerCounters } from './counters.js';

/** Renders a serving thread allows itself per second (and in a burst). */
export const kRendersPerSecond = 5;

export interface ScrapeSource {
  counters(): RegistryCounters;
}

export class MetricsScrape {
  readonly #registry: ScrapeSource;
  readonly #server: ServerCounters;
  readonly #cluster: boolean;
  #text = '';
  #tokens = kRendersPerSecond;
  #refilledAt: number;
  /** Renders done (tests). */
  renders = 0;

  constructor(registry: ScrapeSource, server: ServerCounters, cluster: boolean, now = performance.now()) {
    this.#registry = registry;
    this.#server = server;
    this.#cluster = cluster;
    this.#refilledAt = now;
  }

  /** The exposition text: fresh while the render budget lasts, else the last one. */
  text(now = performance.now()): string {
    this.#tokens = Math.min(kRendersPerSecond, this.#tokens + ((now - this.#refilledAt) * kRendersPerSecond) / 1000);
    this.#refilledAt = now;
    if (this.#tokens >= 1 || this.renders === 0) {
      this.#tokens = Math.max(0, this.#tokens - 1);
      this.#text = prometheusText(this.#registry.counters(), this.#server, this.#cluster);
      this.renders++;
    }
    return this.#text;
  }
}
