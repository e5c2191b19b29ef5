import { MessageChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import type { Registry, RegistryDescriptor, TrackHandle } from '../registry/index.js';
import { threadEntry } from '../supervisor/entry.js';
import type { ProgressSink } from './context.js';
import type { CallToolResult } from './define.js';

/** What the pool thread gets per task (structured-cloneable). */
export interface PoolTask {
  name: string;
  args: Record<string, unknown>;
  ref: TrackHandle['ref'];
  progress: import('node:worker_threads').MessagePort | undefined;
}

export interface ToolPoolOptions {
  /** Module (URL or absolute path) exporting the tools; the pool thread imports it. */
  toolsModule: string;
  registry: Registry;
  registryDescriptor: RegistryDescriptor;
  /** Pool threads (default 1). */
  threads?: number;
}

/**
 * Runs `pool: true` tools in piscina threads. The thread adopts the request's registry row, so its
 * tool polls the same flag as an inline tool would; killing a task terminates its thread (piscina
 * aborts exactly the thread that runs it), and the registry is told that thread is gone.
 */
export class ToolPool {
  readonly #piscina: Piscina;

  constructor(options: ToolPoolOptions) {
    const threads = options.threads ?? 1;
    this.#piscina = new Piscina({
      filename: threadEntry('pool-worker').href,
      minThreads: threads,
      maxThreads: threads,
      idleTimeout: 60_000,
      workerData: { toolsModule: options.toolsModule, registry: options.registryDescriptor },
    });
    const ids = new Map<unknown, number>();
    this.#piscina.on('workerCreate', (worker: { id: number }) => { ids.set(worker, worker.id); });
    this.#piscina.on('workerDestroy', (worker: { id: number }) => {
      const id = ids.get(worker) ?? worker.id;
      ids.delete(worker);
      if (id >= 0) options.registry.threadExited(id);
    });
  }

  async run(name: string, args: Record<string, unknown>, handle: TrackHandle, sink: ProgressSink | undefined, signal: AbortSignal): Promise<CallToolResult> {
    let channel: MessageChannel | undefined;
    if (sink !== undefined) {
      channel = new MessageChannel();
      channel.port1.on('message', (m: [number, number | undefined, string | undefined]) => sink(m[0], m[1], m[2]));
    }
    const task: PoolTask = { name, args, ref: handle.ref, progress: channel?.port2 };
    try {
      return (await this.#piscina.run(task, { signal, transferList: channel === undefined ? [] : [channel.port2] })) as CallToolResult;
    } finally {
      channel?.port1.close();
    }
  }

  close(): Promise<void> {
    return this.#piscina.destroy();
  }
}
