/**
 * castAsync's persistent worker pool, whatever the workers are: Node worker threads or Web Workers
 * (a `WorkerHost` starts them). Created on first use; each call's ranges go to the least-loaded
 * worker; a worker that errors or exits breaks the pool (every pending range rejects) and the next
 * call starts a new one.
 */
import type { WasmMemory } from "../kernels/wasm/resident.js";
import { responseError, type CastRangeDone, type CastRangeResponse, type CastRequest, type CastResidentRequest } from "./range.js";

/** What the pool hears from one worker. */
export interface WorkerEvents {
  message(response: CastRangeResponse): void;
  /** The worker failed (an uncaught error, or its script did not load): the pool is broken. */
  error(error: Error): void;
}

/** One started worker, as the pool drives it. */
export interface WorkerHandle {
  /** Sends a request, moving the `transfer` buffers to the worker. */
  post(request: CastRequest, transfer: ArrayBuffer[]): void;
  /** Whether the worker has work in hand (Node: referenced, so an awaited result keeps the process alive). */
  busy(busy: boolean): void;
  terminate(): Promise<unknown>;
}

/** A platform's way of running cast workers. */
export interface WorkerHost {
  /** Threads to use when the caller does not say, the calling thread included. */
  parallelism(): number;
  /** Whether workers can be started here. */
  hasWorkers(): boolean;
  /** Whether SharedArrayBuffer exists and can be shared with the workers (else ranges are copied). */
  sharedMemory(): boolean;
  /** Starts one worker that answers CastRangeRequests (src/parallel/range.ts). */
  spawn(events: WorkerEvents): WorkerHandle;
}

interface Pending {
  resolve(done: CastRangeDone): void;
  reject(error: Error): void;
}

/** A worker and the ranges it has in hand, by request id. */
interface PoolWorker {
  readonly handle: WorkerHandle;
  readonly tasks: Map<number, Pending>;
  /** The shared memory last sent to it (resident ranges): it keeps that one attached. */
  memory?: unknown;
}

/** `Omit` applied to each member of a union. */
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** Staging slots at most (2 MiB each, allocated on first use). */
const MAX_SLOTS = 64;

export class CastPool {
  /** 1 while a staging slot holds a chunk a worker has not read yet (created on first use: shared memory). */
  private flags: Int32Array | undefined;
  private readonly slots: SharedArrayBuffer[] = [];
  private readonly workers: PoolWorker[] = [];
  private nextId = 0;
  private broken: Error | undefined;
  private closing = false;

  constructor(
    private readonly host: WorkerHost,
    private readonly slotBytes: number,
    /** Called once when the pool breaks, so its owner starts a new one next time. */
    private readonly onBroken: (pool: CastPool) => void,
  ) {}

  get slotFlags(): Int32Array {
    this.flags ??= new Int32Array(new SharedArrayBuffer(4 * MAX_SLOTS));
    return this.flags;
  }

  /** A free staging slot, now marked busy, or -1 when every one is in use. */
  takeSlot(): number {
    const want = Math.min(MAX_SLOTS, 2 * this.workers.length + 2);
    const flags = this.slotFlags;
    for (let i = 0; i < want; i++) {
      if (Atomics.load(flags, i) === 0) {
        Atomics.store(flags, i, 1);
        return i;
      }
    }
    return -1;
  }

  slotBuffer(slot: number): SharedArrayBuffer {
    while (this.slots.length <= slot) this.slots.push(new SharedArrayBuffer(this.slotBytes));
    return this.slots[slot];
  }

  /** Starts workers until there are `size`. */
  grow(size: number): void {
    while (this.workers.length < size) {
      const worker: PoolWorker = {
        handle: this.host.spawn({ message: (r) => this.settle(worker, r), error: (e) => this.fail(e) }),
        tasks: new Map<number, Pending>(),
      };
      this.workers.push(worker);
    }
  }

  /**
   * Runs `task` on whichever of the first `limit` workers has the fewest ranges in hand (each works
   * through its own in order), moving `transfer` to it; resolves to the worker's answer (a copied
   * range's buffers handed back), rejects with the error it answered.
   */
  run(task: DistributiveOmit<CastRequest, "id">, limit: number, transfer: ArrayBuffer[] = []): Promise<CastRangeDone> {
    if (this.broken) return Promise.reject(this.broken);
    let w = this.workers[0];
    for (let i = 1; i < limit; i++) if (this.workers[i].tasks.size < w.tasks.size) w = this.workers[i];
    const { handle, tasks } = w;
    const id = this.nextId++;
    return new Promise<CastRangeDone>((resolve, reject) => {
      tasks.set(id, { resolve, reject });
      if (tasks.size === 1) handle.busy(true);
      handle.post({ id, ...task } as CastRequest, transfer);
    });
  }

  /**
   * Runs a resident range (a cast within a shared arena) on worker `index` (< the pool's size),
   * sending `memory` along only when it is not the one that worker was last sent.
   */
  runResident(index: number, task: Omit<CastResidentRequest, "id" | "memory">, memory: WasmMemory): Promise<CastRangeDone> {
    const w = this.workers[index];
    if (this.broken || !w) return Promise.reject(this.broken ?? new Error(`the castAsync pool has no worker ${index}`));
    const send = w.memory === memory ? task : { ...task, memory };
    const { handle, tasks } = w;
    const id = this.nextId++;
    return new Promise<CastRangeDone>((resolve, reject) => {
      tasks.set(id, { resolve, reject });
      if (tasks.size === 1) handle.busy(true);
      handle.post({ id, ...send }, []);
      w.memory = memory; // only once it was sent: a refused message leaves the worker without it
    });
  }

  private settle({ handle, tasks }: PoolWorker, r: CastRangeResponse): void {
    const p = tasks.get(r.id);
    if (!p) return;
    tasks.delete(r.id);
    if (tasks.size === 0) handle.busy(false);
    if (r.error) p.reject(responseError(r.error));
    else p.resolve(r);
  }

  private fail(e: Error): void {
    if (this.broken) return;
    this.broken = e;
    this.onBroken(this);
    for (const { handle, tasks } of this.workers) {
      for (const p of tasks.values()) p.reject(e);
      tasks.clear();
      handle.busy(false);
    }
    if (!this.closing) void this.close();
  }

  async close(): Promise<void> {
    this.closing = true;
    this.fail(new Error("the castAsync pool was closed"));
    await Promise.all(this.workers.map((w) => w.handle.terminate()));
  }
}
