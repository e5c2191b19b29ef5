import { Roster } from '../../native-free-shm/index.js';
import type { RosterDescriptor, RosterMember } from '../../native-free-shm/index.js';
import { MeterHistograms } from './meters.js';
import type { HistogramFamily, InFlightLabels } from './meters.js';

export type { HistogramFamily };

/**
 * Latency histograms kept like the counters: each serving thread writes its own block of shared
 * memory (single writer, plain stores, no lock), a scrape sums the blocks. A block holds up to
 * `kSeriesPerThread` series, each named by its labels (method, target, error type) in the block's
 * own directory: the writer fills a series' name and zeroed cells, then publishes the new series
 * count with one atomic store, so a reader never sees a half-written name.
 *
 * A thread joins on its first observation (pool threads never take a block; the supervisor only
 * when it expires a legacy session);
 * a replacement thread that takes a dead thread's block reads its directory and counts on, so
 * every series stays monotonic.
 *
 * The same blocks hold the in-flight gauges per (method, tool), with a directory of their own
 * (`kGaugesPerThread` names, published in header word 1) and one Int32 cell each, which the owning
 * thread alone adds to and subtracts from. A gauge is not a history: when a thread's block is
 * released (the thread exited, perhaps mid-request) its gauge cells are zeroed before the block
 * can be taken again, while its histogram cells stay in the sums.
 */

/**
 * Bucket bounds in seconds: the explicit boundaries the MCP semantic conventions advise for
 * `mcp.server.operation.duration` (@opentelemetry/semantic-conventions 1.45.0).
 */
export const kDurationBounds: readonly number[] = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];

/** Serving threads that can hold a block at once (a thread past it records nothing). */
export const kHistogramThreads = 128;
/** Series one thread block can name; later new label sets go to the `_other` series. */
export const kSeriesPerThread = 64;
/** Bytes of one series' name (`family \0 method \0 target \0 error`, UTF-8, cut at a character boundary). */
const kNameBytes = 96;
/** Cells per series: one per bucket (the last is +Inf), then the sum. The count is the buckets' total. */
const kBuckets = kDurationBounds.length + 1;
const kCells = kBuckets + 1;
/** In-flight gauges one thread block can name; later new label sets go to the `_other` gauge. */
export const kGaugesPerThread = 64;
/** Per block: the published series count (Int32 word 0), the published gauge count (word 1). */
const kHeaderWords = 16; // a 64-byte header, so blocks do not share a line with their neighbour

export interface HistogramsDescriptor {
  readonly kind: 'sluice/histograms';
  readonly roster: RosterDescriptor;
  readonly cells: SharedArrayBuffer;
  readonly names: SharedArrayBuffer;
  /** The in-flight gauges: an Int32 cell per (block, gauge), then their names (`method \0 target`). */
  readonly gauges: SharedArrayBuffer;
  readonly gaugeNames: SharedArrayBuffer;
}

const kFamilies: readonly HistogramFamily[] = ['operation', 'poolWait', 'session'];

/** One series' labels and totals, summed over every thread block. */
export interface HistogramSeries {
  readonly family: HistogramFamily;
  readonly method: string;
  /** The tool or prompt named, or ''. */
  readonly target: string;
  /** `error.type`: '' when the request succeeded. */
  readonly error: string;
  /** Counts per bucket (not cumulative), `kDurationBounds.length + 1` of them (the last: +Inf). */
  readonly buckets: number[];
  /** Seconds. */
  sum: number;
  count: number;
}

/** One in-flight gauge's labels and its value summed over every thread block. */
export interface InFlightSeries {
  readonly method: string;
  /** The tool named (tools/call only), or ''. */
  readonly target: string;
  value: number;
}

/**
 * What a thread knows of one (method, target) of a family: its series per error type, and (the
 * operation family only) its in-flight gauge. The run that entered the gauge holds this object
 * until it ends, so the end needs one map lookup (the error type), not three.
 */
export interface TargetSlots extends InFlightLabels {
  readonly errors: Map<string, number>;
  /** Index of its in-flight gauge in this thread's block, or -1 while it has none. */
  gauge: number;
}

const kOther = '_other';
/** This thread's OperationHistograms per block set (see `attach`). */
const attached = new WeakMap<SharedArrayBuffer, OperationHistograms>();
const encoder = new TextEncoder();
const decoder = new TextDecoder();

export class OperationHistograms {
  readonly #roster: Roster;
  readonly #cells: Float64Array;
  readonly #headers: Int32Array;
  readonly #names: Uint8Array;
  readonly #gauges: Int32Array;
  readonly #gaugeNames: Uint8Array;
  readonly #descriptor: HistogramsDescriptor;
  #member: RosterMember | undefined;
  /** False once joining failed (every block taken): this thread records nothing. */
  #usable = true;
  /** This thread's series, per family (kFamilies order): method → target → its slots (series per error, gauge). */
  readonly #index = kFamilies.map(() => new Map<string, Map<string, TargetSlots>>());
  /** The OpenTelemetry histograms, when a meter provider was registered in this thread (checked once, at join). */
  #meters: MeterHistograms | undefined;
  #count = 0;
  #cellBase = 0;
  #gaugeCount = 0;
  #gaugeBase = 0;

  /**
   * This thread's histograms over `descriptor`: one object per thread and block set, since a
   * thread has one block and its series directory must have one writer (an in-process server's
   * supervisor side and its engine both observe).
   */
  static attach(descriptor: HistogramsDescriptor): OperationHistograms {
    let histograms = attached.get(descriptor.cells);
    if (histograms === undefined) attached.set(descriptor.cells, histograms = new OperationHistograms(descriptor));
    return histograms;
  }

  static create(threads = kHistogramThreads): OperationHistograms {
    const roster = Roster.create({ capacity: threads, counters: 0 });
    return new OperationHistograms({
      kind: 'sluice/histograms',
      roster: roster.descriptor,
      cells: new SharedArrayBuffer(threads * (kHeaderWords * 4 + kSeriesPerThread * kCells * 8)),
      names: new SharedArrayBuffer(threads * kSeriesPerThread * kNameBytes),
      gauges: new SharedArrayBuffer(threads * kGaugesPerThread * 4),
      gaugeNames: new SharedArrayBuffer(threads * kGaugesPerThread * kNameBytes),
    });
  }

  constructor(descriptor: HistogramsDescriptor) {
    this.#descriptor = descriptor;
    this.#roster = Roster.attach(descriptor.roster);
    const threads = this.#roster.capacity;
    // Layout: every block's 64-byte header first, then every block's cells.
    this.#headers = new Int32Array(descriptor.cells, 0, threads * kHeaderWords);
    this.#cells = new Float64Array(descriptor.cells, threads * kHeaderWords * 4, threads * kSeriesPerThread * kCells);
    this.#names = new Uint8Array(descriptor.names);
    this.#gauges = new Int32Array(descriptor.gauges);
    this.#gaugeNames = new Uint8Array(descriptor.gaugeNames);
    // Runs in the thread that releases a dead thread's block, before anyone can take it again:
    // what that thread had in flight went with it.
    this.#roster.onRelease((entry) => this.#gauges.fill(0, entry * kGaugesPerThread, (entry + 1) * kGaugesPerThread));
  }

  get descriptor(): HistogramsDescriptor {
    return this.#descriptor;
  }

  /**
   * Counts one operation of `seconds` under its labels. Allocation-free once the series exists:
   * three map lookups, a bucket search and two stores into this thread's block.
   */
  observe(method: string, target: string, error: string, seconds: number): void {
    this.#observe(0, method, target, error, seconds);
  }

  /** A pool tool's call waited `seconds` for a pool thread. */
  observePoolWait(tool: string, seconds: number): void {
    this.#observe(1, 'tools/call', tool, '', seconds);
  }

  /** A legacy session ended (DELETE or expiry) after `seconds`. */
  observeSession(seconds: number): void {
    this.#observe(2, '', '', '', seconds);
  }

  #observe(family: number, method: string, target: string, error: string, seconds: number): void {
    let series = this.#index[family]!.get(method)?.get(target)?.errors.get(error);
    if (series === undefined) {
      series = this.#seriesFor(family, method, target, error);
      if (series < 0) return;
    }
    this.#record(family, series, method, target, error, seconds);
  }

  /**
   * A request whose handler went async is in flight from now: +1 on this thread's gauge for its
   * (method, tool), and the slots to give back to `end`. The target is a label for tools/call only:
   * there an unknown tool is refused before the handler returns, so the name is a registered tool;
   * prompts/get and resources/read learn that a name is unknown only as they fail, so they are
   * counted per method (the histograms' rule: a name that may be the client's invention is no label).
   * Allocation-free once the gauge exists: two map lookups and an add into this thread's block.
   */
  enter(method: string, target: string): TargetSlots | undefined {
    if (method !== 'tools/call') target = '';
    let slots = this.#index[0]!.get(method)?.get(target);
    if (slots === undefined || slots.gauge < 0) {
      slots = this.#gaugeFor(method, target);
      if (slots === undefined) return undefined;
    }
    this.#gauges[this.#gaugeBase + slots.gauge]! += 1; // single writer: a plain add (Int32 cells do not tear)
    this.#meters?.inFlight(slots, 1);
    return slots;
  }

  /**
   * A request ended: −1 on the gauge `entered` (what `enter` gave, if anything), and its duration
   * observed as `observe` does, through the entered slots when the labels are the same.
   */
  end(entered: TargetSlots | undefined, method: string, target: string, error: string, seconds: number): void {
    if (entered === undefined) {
      this.#observe(0, method, target, error, seconds);
      return;
    }
    this.#gauges[this.#gaugeBase + entered.gauge]! -= 1;
    this.#meters?.inFlight(entered, -1);
    const series = entered.target === target && entered.method === method ? entered.errors.get(error) : undefined;
    if (series === undefined) this.#observe(0, method, target, error, seconds);
    else this.#record(0, series, method, target, error, seconds);
  }

  #record(family: number, series: number, method: string, target: string, error: string, seconds: number): void {
    let bucket = 0;
    while (bucket < kBuckets - 1 && seconds > kDurationBounds[bucket]!) bucket++;
    const at = this.#cellBase + series * kCells;
    this.#cells[at + bucket]! += 1;
    this.#cells[at + kBuckets]! += seconds;
    this.#meters?.record(kFamilies[family]!, method, target, error, seconds);
  }

  /** The series for these labels in this thread's block, made (and published) if new; -1 if unusable. */
  #seriesFor(family: number, method: string, target: string, error: string): number {
    if (this.#member === undefined && !this.#join()) return -1;
    if (this.#count >= kSeriesPerThread - 1) {
      // Full: everything new lands in one `_other` operation series (the last slot), so a flood
      // of names cannot grow the output.
      const other = this.#index[0]!.get(kOther)?.get('')?.errors.get('');
      if (other !== undefined) return other;
      if (this.#count >= kSeriesPerThread) return -1;
      family = 0;
      method = kOther;
      target = '';
      error = '';
    }
    const series = this.#count;
    const entry = this.#member!.index;
    writeName(this.#names, (entry * kSeriesPerThread + series) * kNameBytes, `${kFamilies[family]}\0${method}\0${target}\0${error}`);
    this.#cells.fill(0, this.#cellBase + series * kCells, this.#cellBase + (series + 1) * kCells);
    this.#count = series + 1;
    Atomics.store(this.#headers, entry * kHeaderWords, this.#count); // publishes the name and cells
    this.#remember(family, method, target, error, series);
    return series;
  }

  /**
   * The slots of (method, target) with an in-flight gauge in this thread's block, made (and
   * published) if new; when the gauge directory is full, the `_other` gauge's; undefined if unusable.
   */
  #gaugeFor(method: string, target: string): TargetSlots | undefined {
    if (this.#member === undefined && !this.#join()) return undefined;
    if (this.#gaugeCount >= kGaugesPerThread - 1) {
      const other = this.#slots(0, kOther, '');
      if (other.gauge >= 0 || this.#gaugeCount >= kGaugesPerThread) return other.gauge >= 0 ? other : undefined;
      method = kOther;
      target = '';
    }
    const gauge = this.#gaugeCount;
    const entry = this.#member!.index;
    writeName(this.#gaugeNames, (entry * kGaugesPerThread + gauge) * kNameBytes, `${method}\0${target}`);
    this.#gauges[this.#gaugeBase + gauge] = 0;
    this.#gaugeCount = gauge + 1;
    Atomics.store(this.#headers, entry * kHeaderWords + 1, this.#gaugeCount); // publishes the name and cell
    const slots = this.#slots(0, method, target);
    slots.gauge = gauge;
    return slots;
  }

  #remember(family: number, method: string, target: string, error: string, series: number): void {
    this.#slots(family, method, target).errors.set(error, series);
  }

  /** This thread's slots of (method, target) in `family`, made empty if new. */
  #slots(family: number, method: string, target: string): TargetSlots {
    const index = this.#index[family]!;
    let byTarget = index.get(method);
    if (byTarget === undefined) index.set(method, byTarget = new Map());
    let slots = byTarget.get(target);
    if (slots === undefined) byTarget.set(target, slots = { method, target, errors: new Map(), gauge: -1, attributes: undefined });
    return slots;
  }

  /** Takes a block; a block a dead thread left is continued (its directory read back). */
  #join(): boolean {
    if (!this.#usable) return false;
    try {
      this.#member = this.#roster.join();
    } catch {
      this.#usable = false; // every block is held by a live thread
      return false;
    }
    const entry = this.#member.index;
    this.#cellBase = entry * kSeriesPerThread * kCells;
    this.#count = Atomics.load(this.#headers, entry * kHeaderWords);
    for (let series = 0; series < this.#count; series++) {
      const [family, method, target, error] = this.#nameOf(entry, series);
      this.#remember(kFamilies.indexOf(family), method, target, error, series);
    }
    this.#gaugeBase = entry * kGaugesPerThread;
    this.#gaugeCount = Atomics.load(this.#headers, entry * kHeaderWords + 1);
    for (let gauge = 0; gauge < this.#gaugeCount; gauge++) {
      const [method = '', target = ''] = readName(this.#gaugeNames, (entry * kGaugesPerThread + gauge) * kNameBytes).split('\0');
      this.#slots(0, method, target).gauge = gauge;
    }
    this.#meters = MeterHistograms.create();
    return true;
  }

  #nameOf(entry: number, series: number): [HistogramFamily, string, string, string] {
    const text = readName(this.#names, (entry * kSeriesPerThread + series) * kNameBytes);
    const [family = 'operation', method = '', target = '', error = ''] = text.split('\0');
    return [kFamilies.includes(family as HistogramFamily) ? family as HistogramFamily : 'operation', method, target, error];
  }

  /** Every series summed over the thread blocks (the scrape). */
  snapshot(): HistogramSeries[] {
    const merged = new Map<string, HistogramSeries>();
    const threads = this.#roster.capacity;
    for (let entry = 0; entry < threads; entry++) {
      const count = Atomics.load(this.#headers, entry * kHeaderWords);
      for (let series = 0; series < count; series++) {
        const [family, method, target, error] = this.#nameOf(entry, series);
        const key = `${family}\0${method}\0${target}\0${error}`;
        let out = merged.get(key);
        if (out === undefined) merged.set(key, out = { family, method, target, error, buckets: new Array<number>(kBuckets).fill(0), sum: 0, count: 0 });
        const at = (entry * kSeriesPerThread + series) * kCells;
        for (let b = 0; b < kBuckets; b++) {
          const n = this.#cells[at + b]!;
          out.buckets[b]! += n;
          out.count += n;
        }
        out.sum += this.#cells[at + kBuckets]!;
      }
    }
    const key = (x: HistogramSeries) => `${x.method}\0${x.target}\0${x.error}`;
    return [...merged.values()].sort((a, b) => (a.family !== b.family ? kFamilies.indexOf(a.family) - kFamilies.indexOf(b.family) : key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  }

  /** Every in-flight gauge summed over the thread blocks (a released block's cells are zero). */
  inFlight(): InFlightSeries[] {
    const merged = new Map<string, InFlightSeries>();
    for (let entry = 0; entry < this.#roster.capacity; entry++) {
      const count = Atomics.load(this.#headers, entry * kHeaderWords + 1);
      for (let gauge = 0; gauge < count; gauge++) {
        const key = readName(this.#gaugeNames, (entry * kGaugesPerThread + gauge) * kNameBytes);
        let out = merged.get(key);
        if (out === undefined) {
          const [method = '', target = ''] = key.split('\0');
          merged.set(key, out = { method, target, value: 0 });
        }
        out.value += Atomics.load(this.#gauges, entry * kGaugesPerThread + gauge);
      }
    }
    return [...merged.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, series]) => series);
  }

  /**
   * Frees the block of the thread `threadId` once it is gone: its histogram counts stay in the
   * sums, its in-flight gauges are zeroed (the release hook in the constructor).
   */
  threadExited(threadId: number): void {
    this.#roster.release(threadId);
  }
}

/** Writes `text` as a directory name at `at`: a length byte, then UTF-8 cut to fit at a character boundary. */
function writeName(names: Uint8Array, at: number, text: string): void {
  let name = encoder.encode(text);
  if (name.length > kNameBytes - 1) {
    let end = kNameBytes - 1;
    while (end > 0 && (name[end]! & 0xc0) === 0x80) end--; // not inside a character
    name = name.subarray(0, end);
  }
  names[at] = name.length;
  names.set(name, at + 1);
}

function readName(names: Uint8Array, at: number): string {
  return decoder.decode(names.subarray(at + 1, at + 1 + names[at]!));
}

/** Escapes a Prometheus label value. */
function label(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** Each family's Prometheus name and help line. */
const kFamilyText: Record<HistogramFamily, { readonly name: string; readonly help: string }> = {
  operation: { name: 'mcp_server_operation_duration_seconds', help: 'MCP request duration as observed by the server, from receipt until the result is sent.' },
  poolWait: { name: 'sluice_pool_queue_wait_seconds', help: 'How long a pool tool call waited for a pool thread to start it.' },
  session: { name: 'mcp_server_session_duration_seconds', help: 'Legacy-era session duration, from initialize until its DELETE or expiry.' },
};

/**
 * The Prometheus text of the histograms: `mcp.server.operation.duration` as
 * `mcp_server_operation_duration_seconds` (labels named as the OpenTelemetry attributes with dots
 * as underscores; tools/call's target is `gen_ai_tool_name`, prompts/get's `gen_ai_prompt_name`),
 * the pool queue wait per tool, and the legacy session duration.
 */
export function histogramText(series: readonly HistogramSeries[], lines: string[]): void {
  for (const family of kFamilies) {
    const { name, help } = kFamilyText[family];
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} histogram`);
    for (const s of series) if (s.family === family) seriesText(name, s, lines);
  }
}

/**
 * The Prometheus text of the in-flight gauges: `sluice_requests_in_flight_by_target`, labelled as
 * the histograms are (`mcp_method_name`, and `gen_ai_tool_name` for tools/call).
 */
export function inFlightText(series: readonly InFlightSeries[], lines: string[]): void {
  const name = 'sluice_requests_in_flight_by_target';
  lines.push(`# HELP ${name} Requests being served now whose handler went async, per method and tool, across every thread.`, `# TYPE ${name} gauge`);
  for (const s of series) {
    const tool = s.target === '' ? '' : `,gen_ai_tool_name="${label(s.target)}"`;
    lines.push(`${name}{mcp_method_name="${label(s.method)}"${tool}} ${s.value}`);
  }
}

function seriesText(name: string, s: HistogramSeries, lines: string[]): void {
  const parts: string[] = [];
  if (s.family === 'operation') parts.push(`mcp_method_name="${label(s.method)}"`);
  if (s.target !== '') parts.push(`${s.method === 'prompts/get' ? 'gen_ai_prompt_name' : 'gen_ai_tool_name'}="${label(s.target)}"`);
  if (s.error !== '') parts.push(`error_type="${label(s.error)}"`);
  const labels = parts.join(',');
  const open = labels === '' ? '{' : `{${labels},`;
  let cumulative = 0;
  for (let b = 0; b < kDurationBounds.length; b++) {
    cumulative += s.buckets[b]!;
    lines.push(`${name}_bucket${open}le="${kDurationBounds[b]}"} ${cumulative}`);
  }
  const plain = labels === '' ? '' : `{${labels}}`;
  lines.push(`${name}_bucket${open}le="+Inf"} ${s.count}`, `${name}_sum${plain} ${s.sum}`, `${name}_count${plain} ${s.count}`);
}
