/**
 * castAsync: `cast` spread over worker threads for large numeric tensors (Node only).
 *
 * Same validation, same errors, same bytes as `cast`. Small tensors, string casts and same-type
 * casts simply run `cast`. Otherwise the output is allocated on a SharedArrayBuffer and the elements
 * are cut into chunks (boundaries on multiples of 8 elements, so packed 2-, 4- and 6-bit chunks start
 * on whole bytes). The workers of a persistent pool run `convert()` on chunks taken from the front;
 * the calling thread converts chunks from the back meanwhile, handing out the next front chunk
 * whenever a worker is about to run dry (a shared counter says how many are done), so the split
 * follows whichever thread is faster. Workers read the input where it is when it already lives in a
 * SharedArrayBuffer; otherwise the calling thread copies each chunk it hands out into one (the
 * chunks it converts itself are never copied).
 */
import os from "node:os";
import { Worker } from "node:worker_threads";
import type { RoundMode } from "../dtype/minifloat.js";
import { dtype, type DType, type DTypeLike, type DTypeName, type Storage, type StorageOf } from "../dtype/table.js";
import { TensorcastError, type ErrorCode } from "../errors.js";
import { convert } from "../kernels/convert.js";
import { cast, castInto, checkCastInto, prepareOutput, type CastOptions, type Resolved } from "../ops/cast.js";
import { shapeSize, storageLength, Tensor, TYPED_ARRAYS } from "../tensor.js";

export interface CastAsyncOptions extends CastOptions {
  /**
   * How many threads share one cast, the calling thread included. Default:
   * `os.availableParallelism()`. 1 runs `cast` in the calling thread. The pool grows to the largest
   * `threads - 1` asked for and keeps its workers (unreferenced: they never keep the process alive).
   */
  threads?: number;
  /**
   * Tensors with fewer elements than this run `cast` in the calling thread, where handing ranges to
   * workers would cost more than it saves. Default 1048576 (2^20).
   */
  minElements?: number;
}

/** Default of `minElements`. */
export const CAST_ASYNC_MIN_ELEMENTS = 1 << 20;

/** A chunk for a worker: `count` elements from the start of `src` into the start of `dst`. */
export interface CastRangeRequest {
  readonly id: number;
  readonly src: Exclude<Storage, string[]>;
  readonly dst: Exclude<Storage, string[]>;
  readonly from: DTypeName;
  readonly to: DTypeName;
  readonly count: number;
  readonly saturate: boolean;
  readonly roundMode: RoundMode;
  /** Chunks finished, shared with the caller: the worker adds 1 when it has converted its range. */
  readonly done: Int32Array;
  /** The staging slot `src` lives in (-1: none); the worker sets `slots[slot]` to 0 once it has read it. */
  readonly slot: number;
  readonly slots: Int32Array;
}

export type CastRangeResponse =
  | { readonly id: number; readonly error?: undefined }
  | { readonly id: number; readonly error: { readonly name: string; readonly code?: string; readonly message: string } };

/** Chunk boundaries fall on multiples of this many elements (whole bytes for every packed type). */
const ALIGN = 8;
/** Elements per chunk: at most 2^18 (a millisecond or two of work), at least 2^13 unless the tensor is small. */
const MAX_CHUNK = 1 << 18;
const MIN_CHUNK = 1 << 13;
/** Bytes of one staging slot: a largest chunk of the widest (8-byte) type. */
const SLOT_BYTES = MAX_CHUNK * 8;
/** `takeSlot`'s answer when the input is shared and needs no slot. */
const NO_SLOT = -2;

/**
 * ONNX Cast, like `cast`, with large numeric tensors converted on several threads. Resolves to a
 * tensor whose bytes equal `cast(x, to, opts)`'s; rejects with the TensorcastError `cast` throws.
 * When the work is split, the result's storage is backed by a SharedArrayBuffer.
 *
 * @example const y = await castAsync(x, "float16"); // x: a float32 tensor of 16M elements
 */
export async function castAsync<N extends DTypeName>(x: Tensor, to: DTypeLike<N>, opts: CastAsyncOptions = {}): Promise<Tensor<N>> {
  if (typeof opts !== "object" || opts === null) return cast(x, to, opts);
  const { threads: threadsOpt, minElements: minOpt, ...castOpts } = opts;
  const threads = checkCount("threads", threadsOpt, 1) ?? os.availableParallelism();
  const minElements = checkCount("minElements", minOpt, 0) ?? CAST_ASYNC_MIN_ELEMENTS;
  if (!(x instanceof Tensor) || threads < 2 || x.size < Math.max(minElements, 2 * ALIGN)) return cast(x, to, castOpts);

  // Every check cast makes depends on the types and options only: run them on an empty tensor.
  const target = cast(Tensor.zeros(x.dtype, [0]), to, castOpts).dtype;
  const from: DType = x.dtype;
  if (from === target || from.kind === "string" || target.kind === "string") return cast(x, to, castOpts);

  const dst = allocateShared(target, x.size);
  await convertSplit(x, dst, target, { saturate: castOpts.saturate ?? true, roundMode: castOpts.roundMode ?? "up" }, threads);
  return Tensor.fromStorage(dst as StorageOf<N>, target as DType<N>, x.shape);
}

/**
 * `castInto` over worker threads: `out` (of the target type and `x`'s shape) receives the bytes
 * `castInto(x, out, opts)` gives, and is what the promise resolves to. The workers write into `out`
 * directly, so it must live in a SharedArrayBuffer for the work to be split; an `out` on an ordinary
 * ArrayBuffer (and the small, string and same-type cases castAsync leaves to `cast`) runs
 * `castInto` in the calling thread. Reusing one shared output spares the page faults of a fresh one.
 *
 * @example const out = sharedZeros("float16", x.shape); await castIntoAsync(x, out);
 */
export async function castIntoAsync<N extends DTypeName>(x: Tensor, out: Tensor<N>, opts: CastAsyncOptions = {}): Promise<Tensor<N>> {
  if (typeof opts !== "object" || opts === null) return castInto(x, out, opts);
  const { threads: threadsOpt, minElements: minOpt, ...castOpts } = opts;
  const threads = checkCount("threads", threadsOpt, 1) ?? os.availableParallelism();
  const minElements = checkCount("minElements", minOpt, 0) ?? CAST_ASYNC_MIN_ELEMENTS;
  const resolved = checkCastInto(x, out, castOpts);
  const from: DType = x.dtype;
  const target: DType = out.dtype;
  const shared = !Array.isArray(out.data) && out.data.buffer instanceof SharedArrayBuffer;
  if (!shared || threads < 2 || x.size < Math.max(minElements, 2 * ALIGN) || from === target || from.kind === "string" || target.kind === "string") {
    return castInto(x, out, castOpts);
  }
  prepareOutput(out);
  await convertSplit(x, out.data as Exclude<Storage, string[]>, target, resolved, threads);
  return out;
}

/** Converts every element of `x` into the shared storage `dst` on `threads` threads. */
async function convertSplit(x: Tensor, dst: Exclude<Storage, string[]>, target: DType, resolved: Resolved, threads: number): Promise<void> {
  const from: DType = x.dtype;
  const count = x.size;
  const data = x.data as Exclude<Storage, string[]>;
  const workers = threads - 1;
  const p = pool(workers);
  // Workers read shared memory: the input itself when it is shared, else a copy of each chunk they
  // get, in one of the pool's staging slots (reused from call to call, so their pages are warm).
  const isShared = data.buffer instanceof SharedArrayBuffer;
  const ctor = TYPED_ARRAYS[from.array as Exclude<DType["array"], "Array">];
  const done = new Int32Array(new SharedArrayBuffer(4));
  const pending: Promise<void>[] = [];
  const smallest = Math.min(MIN_CHUNK, alignUp(count / (8 * threads)));
  // Workers take chunks from the front, the calling thread from the back: it hands out a chunk
  // whenever fewer than two per worker are waiting, and otherwise converts one itself. Chunks
  // shrink as the middle nears (guided scheduling), so the threads finish close together.
  let lo = 0;
  let hi = count;
  try {
    while (lo < hi) {
      const size = Math.max(smallest, Math.min(MAX_CHUNK, alignUp((hi - lo) / (4 * threads))));
      const slot = pending.length - Atomics.load(done, 0) >= 2 * workers ? -1 : isShared ? NO_SLOT : p.takeSlot();
      if (slot !== -1) {
        const a = lo;
        const b = Math.min(hi, a + size);
        lo = b;
        let src = slice(data, from, a, b);
        if (!isShared) {
          const copy = new ctor(p.slotBuffer(slot), 0, src.length);
          (copy as Uint8Array).set(src as Uint8Array);
          src = copy;
        }
        const request = { src, dst: slice(dst, target, a, b), from: from.name, to: target.name, count: b - a, ...resolved, done };
        pending.push(p.run({ ...request, slot: isShared ? -1 : slot, slots: p.slotFlags }, workers));
      } else {
        const b = hi;
        const a = Math.max(lo, hi - size - ((hi - size) % ALIGN));
        hi = a;
        convert(slice(data, from, a, b), from, slice(dst, target, a, b), target, b - a, resolved);
      }
    }
  } finally {
    await Promise.all(pending);
  }
}

/** `n` rounded up to a multiple of ALIGN (at least ALIGN). */
function alignUp(n: number): number {
  return Math.max(ALIGN, Math.ceil(n / ALIGN) * ALIGN);
}

/** Stops castAsync's worker threads (they never keep the process alive); the next call starts new ones. */
export async function closeCastAsyncPool(): Promise<void> {
  const p = current;
  current = undefined;
  if (p) await p.close();
}

function checkCount(name: string, value: unknown, min: number): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min) {
    throw new TensorcastError("INVALID_ATTRIBUTE", `${name} must be an integer >= ${min}, got ${String(value)}`);
  }
  return value;
}

/**
 * A zero-filled tensor on a new SharedArrayBuffer: an output `castIntoAsync` can split over
 * threads, or an input its workers read where it is.
 *
 * @example const out = sharedZeros("float16", x.shape); await castIntoAsync(x, out);
 */
export function sharedZeros<N extends DTypeName>(type: DTypeLike<N>, shape: readonly number[]): Tensor<N> {
  const t = dtype(type);
  return Tensor.fromStorage(allocateShared(t, shapeSize(shape)) as StorageOf<N>, t, shape);
}

/** A zero-filled storage for `count` elements of `t` on a new SharedArrayBuffer. */
function allocateShared(t: DType, count: number): Exclude<Storage, string[]> {
  const ctor = TYPED_ARRAYS[t.array as Exclude<DType["array"], "Array">];
  const length = storageLength(t, count);
  return new ctor(new SharedArrayBuffer(length * ctor.BYTES_PER_ELEMENT), 0, length);
}

/** The storage of elements [a, b) of `t` (`a` a multiple of 8; `b` too unless it is the end). */
function slice(data: Exclude<Storage, string[]>, t: DType, a: number, b: number): Exclude<Storage, string[]> {
  if (t.packed) return data.subarray((a * t.bits) / 8, Math.ceil((b * t.bits) / 8));
  return data.subarray(a, b);
}

// ---------------------------------------------------------------------------------------------
// The pool: persistent, created on first use, unreferenced while idle.

interface Pending {
  resolve(): void;
  reject(error: Error): void;
}

class CastPool {
  /** 1 while a staging slot holds a chunk a worker has not read yet. */
  readonly slotFlags = new Int32Array(new SharedArrayBuffer(4 * MAX_SLOTS));
  private readonly slots: SharedArrayBuffer[] = [];
  private readonly workers: Worker[] = [];
  private readonly load = new Map<Worker, Map<number, Pending>>();
  private nextId = 0;
  private broken: Error | undefined;
  private closing = false;

  /** A free staging slot, now marked busy, or -1 when every one is in use. */
  takeSlot(): number {
    const want = Math.min(MAX_SLOTS, 2 * this.workers.length + 2);
    for (let i = 0; i < want; i++) {
      if (Atomics.load(this.slotFlags, i) === 0) {
        Atomics.store(this.slotFlags, i, 1);
        return i;
      }
    }
    return -1;
  }

  slotBuffer(slot: number): SharedArrayBuffer {
    while (this.slots.length <= slot) this.slots.push(new SharedArrayBuffer(SLOT_BYTES));
    return this.slots[slot];
  }

  /** Starts workers until there are `size`. */
  grow(size: number): void {
    while (this.workers.length < size) {
      const w = new Worker(new URL("./cast-worker.js", import.meta.url));
      w.unref();
      this.load.set(w, new Map<number, Pending>());
      w.on("message", (r: CastRangeResponse) => this.settle(w, r));
      w.on("error", (e) => this.fail(e));
      w.on("exit", (code) => {
        if (!this.closing) this.fail(new Error(`a castAsync worker exited with code ${code}`));
      });
      this.workers.push(w);
    }
  }

  /** Runs `task` on whichever of the first `limit` workers has the fewest ranges in hand (each works through its own in order). */
  run(task: Omit<CastRangeRequest, "id">, limit: number): Promise<void> {
    if (this.broken) return Promise.reject(this.broken);
    let w = this.workers[0];
    for (let i = 1; i < limit; i++) {
      const c = this.workers[i];
      if (this.load.get(c)!.size < this.load.get(w)!.size) w = c;
    }
    const tasks = this.load.get(w)!;
    const id = this.nextId++;
    return new Promise<void>((resolve, reject) => {
      tasks.set(id, { resolve, reject });
      // Referenced while it has work, so an awaited result keeps the process alive.
      if (tasks.size === 1) w.ref();
      const request: CastRangeRequest = { id, ...task };
      w.postMessage(request);
    });
  }

  private settle(w: Worker, r: CastRangeResponse): void {
    const tasks = this.load.get(w)!;
    const p = tasks.get(r.id);
    if (!p) return;
    tasks.delete(r.id);
    if (tasks.size === 0) w.unref();
    if (r.error) {
      const e = r.error;
      p.reject(e.code ? new TensorcastError(e.code as ErrorCode, e.message) : Object.assign(new Error(e.message), { name: e.name }));
    } else {
      p.resolve();
    }
  }

  private fail(e: Error): void {
    if (this.broken) return;
    this.broken = e;
    if (current === this) current = undefined;
    for (const [w, tasks] of this.load) {
      for (const p of tasks.values()) p.reject(e);
      tasks.clear();
      w.unref();
    }
    if (!this.closing) void this.close();
  }

  async close(): Promise<void> {
    this.closing = true;
    this.fail(new Error("the castAsync pool was closed"));
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}

/** Staging slots at most (2 MiB each, allocated on first use). */
const MAX_SLOTS = 64;

let current: CastPool | undefined;

/** The pool, with at least `workers` threads. */
function pool(workers: number): CastPool {
  current ??= new CastPool();
  current.grow(workers);
  return current;
}
