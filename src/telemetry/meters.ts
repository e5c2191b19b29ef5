/**
 * The histograms through the OpenTelemetry metrics API, when a meter provider is registered in
 * the thread (the `tracing` module may register one with its SDK): each observation is also
 * recorded on an OTel histogram named as the semantic conventions say, and each in-flight change
 * on an UpDownCounter. Without the API, or with only the no-op provider, nothing is made and the
 * histograms cost nothing more.
 */
import type * as Api from '@opentelemetry/api';
import { loadOtelApi } from '../otel-api.js';
import type { OtelApi } from '../otel-api.js';

/**
 * What a histogram series measures. `operation`: an MCP request (`mcp.server.operation.duration`);
 * `poolWait`: how long a pool tool's call waited for a pool thread; `session`: a legacy session's
 * life, from initialize to its DELETE or expiry (`mcp.server.session.duration`).
 */
export type HistogramFamily = 'operation' | 'poolWait' | 'session';

/**
 * The labels of one in-flight gauge, with the OTel attributes made from them on first use (so a
 * request's +1 and −1 build nothing).
 */
export interface InFlightLabels {
  readonly method: string;
  /** The tool named (tools/call only), or ''. */
  readonly target: string;
  attributes: Api.Attributes | undefined;
}

/** The advised bucket bounds, given to the SDK as the instruments' advice. */
const kAdvice = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];

export class MeterHistograms {
  readonly #instruments: Record<HistogramFamily, Api.Histogram>;
  readonly #inFlight: Api.UpDownCounter;

  /** The OTel histograms if a (non-no-op) meter provider is registered in this thread, else undefined. */
  static create(api: OtelApi | undefined = loadOtelApi()): MeterHistograms | undefined {
    if (api === undefined) return undefined;
    const meter = api.metrics.getMeter('sluice');
    if (meter instanceof (api.createNoopMeter().constructor as new () => Api.Meter)) return undefined;
    return new MeterHistograms(meter);
  }

  constructor(meter: Api.Meter) {
    const histogram = (name: string, description: string) => meter.createHistogram(name, { description, unit: 's', advice: { explicitBucketBoundaries: kAdvice } });
    this.#instruments = {
      operation: histogram('mcp.server.operation.duration', 'MCP request duration as observed by the server'),
      poolWait: histogram('sluice.pool.queue.wait', 'How long a pool tool call waited for a pool thread'),
      session: histogram('mcp.server.session.duration', 'Legacy-era session duration'),
    };
    this.#inFlight = meter.createUpDownCounter('sluice.server.requests.in_flight', { description: 'Requests being served now whose handler went async', unit: '{request}' });
  }

  /** A request of these labels entered (+1) or left (−1) the in-flight gauge. */
  inFlight(labels: InFlightLabels, delta: 1 | -1): void {
    let attributes = labels.attributes;
    if (attributes === undefined) {
      attributes = labels.attributes = { 'mcp.method.name': labels.method };
      if (labels.target !== '') attributes['gen_ai.tool.name'] = labels.target;
    }
    this.#inFlight.add(delta, attributes);
  }

  /** Records one observation with its attributes (named as the conventions' attributes). */
  record(family: HistogramFamily, method: string, target: string, error: string, seconds: number): void {
    const attributes: Api.Attributes = {};
    if (method !== '' && family === 'operation') attributes['mcp.method.name'] = method;
    if (target !== '') attributes[method === 'prompts/get' ? 'gen_ai.prompt.name' : 'gen_ai.tool.name'] = target;
    if (error !== '') attributes['error.type'] = error;
    this.#instruments[family].record(seconds, attributes);
  }
}
