/**
 * castAsync and castIntoAsync for any platform that can run cast workers on shared memory (Node
 * worker threads: src/node/cast-async.ts; Web Workers: src/web/cast-async.ts).
 *
 * Same validation, same errors, same bytes as `cast`. Small tensors, string casts and same-type
 * casts simply run `cast`, and so does every cast where the platform has no shared memory. Otherwise
 * the output is allocated on a SharedArrayBuffer and the elements are cut into chunks (boundaries on
 * multiples of 8 elements, so packed 2-, 4- and 6-bit chunks start on whole bytes). The workers of a
 * persistent pool run `convert()` on chunks taken from the front; the calling thread converts chunks
 * from the back meanwhile, handing out the next front chunk whenever a worker is about to run dry (a
 * shared counter says how many are done), so the split follows whichever thread is faster. Workers
 * read the input where it is when it already lives in a SharedArrayBuffer; otherwise the calling
 * thread copies each chunk it hands out into one (the chunks it converts itself are never copied).
 *
 * castIntoAsync between two tensors of one shared arena (src/arena.ts) takes another path: each
 * worker runs the kernels in place on the arena's own memory, taking chunks from a shared counter
 * (range.ts, resident ranges), and so does the calling thread: no staging, no chunk copies, one
 * message per worker.
 */
import { dtype, type DType, type DTypeLike, type DTypeName, type StorageOf } from "../dtype/table.js";
import { describe } from "../args.js";
import { TensorcastError } from "../errors.js";
import { convert } from "../kernels/convert.js";
import { cast, castInto, checkCastInto, prepareOutput, type CastOptions, type Resolved } from "../ops/cast.js";
import { allocateStorage, expectStorage, shapeSize, storageLength, Tensor, TYPED_ARRAYS } from "../tensor.js";
import { CastPool, type WorkerHost } from "./pool.js";
import { convertResident, viewOf, type NumericStorage } from "./range.js";
import { sharedResidentOf, type WasmMemory } from "../kernels/wasm/resident.js";

export interface CastAsyncOptions extends CastOptions {
  /**
   * How many threads share one cast, the calling thread included. Default: the platform's
   * parallelism (Node: `os.availableParallelism()`, browsers: `navigator.hardwareConcurrency`). 1 runs
   * `cast` in the calling thread. The pool grows to the largest `threads - 1` asked for and keeps
   * its workers (Node: unreferenced, so they never keep the process alive).
   */
  threads?: number;
  /**
   * Tensors with fewer elements than this run `cast` in the calling thread, where handing ranges to
   * workers would cost more than it saves. Default 1048576 (2^20).
   */
  minElements?: number;
  /**
   * Whether the calling thread converts a share of the ranges itself (default true: fastest). With
   * false it only hands ranges to `threads - 1` workers (at least one) and waits for them, yielding
   * to its event loop: slower where cores are few, but a page's main thread stays responsive.
   * (Without shared memory the calling thread never converts; this option changes nothing there.)
   */
  callerConverts?: boolean;
}

/** Default of `minElements`. */
export const CAST_ASYNC_MIN_ELEMENTS = 1 << 20;

/** Chunk boundaries fall on multiples of this many elements (whole bytes for every packed type). */
const ALIGN = 8;
/** Elements per chunk: at most 2^18 (a millisecond or two of work), at least 2^13 unless the tensor is small. */
const MAX_CHUNK = 1 << 18;
const MIN_CHUNK = 1 << 13;
/** Bytes of one staging slot: a largest chunk of the widest (8-byte) type. */
const SLOT_BYTES = MAX_CHUNK * 8;
/** `takeSlot`'s answer when the input is shared and needs no slot. */
const NO_SLOT = -2;

/** The options castAsync adds to cast's, checked and defaulted, and cast's own. */
interface SplitOptions {
  readonly threads: number;
  readonly minElements: number;
  readonly callerConverts: boolean;
  readonly castOpts: CastOptions;
}

function splitOptions(host: WorkerHost, opts: CastAsyncOptions): SplitOptions {
  const { threads, minElements, callerConverts, ...castOpts } = opts;
  return {
    threads: checkCount("threads", threads, 1) ?? host.parallelism(),
    minElements: checkCount("minElements", minElements, 0) ?? CAST_ASYNC_MIN_ELEMENTS,
    callerConverts: checkFlag("callerConverts", callerConverts) ?? true,
    castOpts,
  };
}

/** castAsync on `host`'s workers (see the platform modules for the public doc). */
export async function castAsyncOn<N extends DTypeName>(host: WorkerHost, x: Tensor, to: DTypeLike<N>, opts: CastAsyncOptions): Promise<Tensor<N>> {
  if (typeof opts !== "object" || opts === null) return cast(x, to, opts);
  const { threads, minElements, callerConverts, castOpts } = splitOptions(host, opts);
  if (!(x instanceof Tensor) || threads < 2 || x.size < Math.max(minElements, 2 * ALIGN) || !host.hasWorkers()) return cast(x, to, castOpts);

  expectStorage(x, "castAsync's input");
  // Every check cast makes depends on the types and options only: run them on an empty tensor.
  const target = cast(Tensor.zeros(x.dtype, [0]), to, castOpts).dtype;
  const from: DType = x.dtype;
  if (from === target || from.kind === "string" || target.kind === "string") return cast(x, to, castOpts);

  const resolved = { saturate: castOpts.saturate ?? true, roundMode: castOpts.roundMode ?? "up" } as const;
  let dst: NumericStorage;
  if (host.sharedMemory()) {
    dst = allocateShared(target, x.size);
    await convertSplit(host, x, dst, target, resolved, threads, callerConverts);
  } else {
    dst = allocateStorage(target, x.size) as NumericStorage;
    await convertCopied(host, x, dst, target, resolved, threads);
  }
  return Tensor.fromStorage(dst as StorageOf<N>, target as DType<N>, x.shape);
}

/** castIntoAsync on `host`'s workers (see the platform modules for the public doc). */
export async function castIntoAsyncOn<N extends DTypeName>(host: WorkerHost, x: Tensor, out: Tensor<N>, opts: CastAsyncOptions): Promise<Tensor<N>> {
  if (typeof opts !== "object" || opts === null) return castInto(x, out, opts);
  const { threads, minElements, callerConverts, castOpts } = splitOptions(host, opts);
  const resolved = checkCastInto(x, out, castOpts);
  const from: DType = x.dtype;
  const target: DType = out.dtype;
  // With shared memory the workers write into `out`, which must then be shared; without it (a page
  // that is not cross-origin isolated) their results are copied into any `out`.
  const copied = !host.sharedMemory();
  const shared = copied || (!Array.isArray(out.data) && isShared(out.data.buffer));
  if (!shared || threads < 2 || !host.hasWorkers() || x.size < Math.max(minElements, 2 * ALIGN) || from === target || from.kind === "string" || target.kind === "string") {
    return castInto(x, out, castOpts);
  }
  const memory = copied ? undefined : sharedResidentOf(x.data, out.data, from, target);
  if (memory) {
    prepareOutput(out);
    await castResident(host, x, out, memory, resolved, threads, callerConverts);
  } else if (copied) {
    // Every range's bytes are overwritten whole by a worker's result (its own output was zeroed).
    await convertCopied(host, x, out.data as NumericStorage, target, resolved, threads);
  } else {
    prepareOutput(out);
    await convertSplit(host, x, out.data as NumericStorage, target, resolved, threads, callerConverts);
  }
  return out;
}

/**
 * A zero-filled tensor on a new SharedArrayBuffer.
 * @throws TensorcastError UNSUPPORTED_PLATFORM where SharedArrayBuffer does not exist (a browser
 * page that is not cross-origin isolated).
 */
export function sharedZerosOf<N extends DTypeName>(type: DTypeLike<N>, shape: readonly number[]): Tensor<N> {
  const t = dtype(type);
  return Tensor.fromStorage(allocateShared(t, shapeSize(shape)) as StorageOf<N>, t, shape);
}

/** Whether `buffer` is a SharedArrayBuffer (false, not a ReferenceError, where the constructor is missing). */
function isShared(buffer: ArrayBufferLike): boolean {
  return typeof SharedArrayBuffer === "function" && buffer instanceof SharedArrayBuffer;
}

const pools = new WeakMap<WorkerHost, CastPool>();

/** `host`'s pool, with at least `workers` threads. */
function poolOf(host: WorkerHost, workers: number): CastPool {
  let p = pools.get(host);
  if (!p) {
    p = new CastPool(host, SLOT_BYTES, (broken) => {
      if (pools.get(host) === broken) pools.delete(host);
    });
    pools.set(host, p);
  }
  p.grow(workers);
  return p;
}

/** Stops `host`'s workers; the next call starts new ones. */
export async function closePool(host: WorkerHost): Promise<void> {
  const p = pools.get(host);
  pools.delete(host);
  if (p) await p.close();
}

/**
 * Converts every element of `x` into the shared storage `dst` on `threads` threads, or, when the
 * calling thread does not convert, on `threads - 1` workers (at least one).
 */
async function convertSplit(
  host: WorkerHost, x: Tensor, dst: NumericStorage, target: DType, resolved: Resolved, threads: number, callerConverts: boolean,
): Promise<void> {
  const from: DType = x.dtype;
  const count = x.size;
  const data = x.data as NumericStorage;
  const workers = Math.max(1, threads - 1);
  const p = poolOf(host, workers);
  // Workers read shared memory: the input itself when it is shared, else a copy of each chunk they
  // get, in one of the pool's staging slots (reused from call to call, so their pages are warm).
  const inputShared = isShared(data.buffer);
  const done = new Int32Array(new SharedArrayBuffer(4));
  const pending: Promise<unknown>[] = [];
  const smallest = Math.min(MIN_CHUNK, alignUp(count / (8 * threads)));
  // Workers take chunks from the front, the calling thread from the back: it hands out a chunk
  // whenever fewer than two per worker are waiting, and otherwise converts one itself (or, if it
  // does not convert, waits for the oldest). Chunks shrink as the middle nears (guided
  // scheduling), so the threads finish close together.
  let lo = 0;
  let hi = count;
  let waited = 0;
  try {
    while (lo < hi) {
      const size = Math.max(smallest, Math.min(MAX_CHUNK, alignUp((hi - lo) / (4 * threads))));
      const slot = pending.length - Atomics.load(done, 0) >= 2 * workers ? -1 : inputShared ? NO_SLOT : p.takeSlot();
      if (slot !== -1) {
        const a = lo;
        const b = Math.min(hi, a + size);
        lo = b;
        let src = slice(data, from, a, b);
        if (!inputShared) {
          const copy = viewOf(from, p.slotBuffer(slot), b - a);
          (copy as Uint8Array).set(src as Uint8Array);
          src = copy;
        }
        const request = { kind: "shared" as const, src, dst: slice(dst, target, a, b), from: from.name, to: target.name, count: b - a, ...resolved, done };
        pending.push(p.run({ ...request, slot: inputShared ? -1 : slot, slots: p.slotFlags }, workers));
      } else if (!callerConverts) {
        await pending[waited++];
      } else {
        const b = hi;
        const a = Math.max(lo, hi - size - ((hi - size) % ALIGN));
        hi = a;
        convert(slice(data, from, a, b), from, slice(dst, target, a, b), target, b - a, resolved);
      }
    }
  } finally {
    await settleAll(pending);
  }
}

/**
 * Elements per chunk of a resident cast at most: 256 KiB of float32, small enough that the
 * threads finish close together, large enough that the shared counter is touched a few hundred
 * times per 16 Mi elements. Smaller casts take chunks of an eighth of a thread's share.
 */
const RESIDENT_CHUNK = 1 << 16;
/** Chunks are multiples of every kernel group (8, 16), so only the last has a partial group. */
const RESIDENT_GROUP = 16;

/**
 * Casts `x` into `out`, both in the shared arena `memory`, on `threads` threads (the calling thread
 * included unless it does not convert): every thread claims chunks from one shared counter and
 * converts them in place. When the chunks run out, a worker that has not started yet (a thread
 * woken late on a busy machine) is told not to and is not waited for: the call then costs what
 * one thread does, not that plus a wake-up.
 */
async function castResident(
  host: WorkerHost, x: Tensor, out: Tensor, memory: WasmMemory, resolved: Resolved, threads: number, callerConverts: boolean,
): Promise<void> {
  const from: DType = x.dtype;
  const to: DType = out.dtype;
  const workers = callerConverts ? threads - 1 : Math.max(1, threads - 1);
  const p = poolOf(host, workers);
  const src = x.data as NumericStorage;
  const range = {
    srcOffset: src.byteOffset,
    dstOffset: (out.data as NumericStorage).byteOffset,
    count: x.size,
    chunk: Math.min(RESIDENT_CHUNK, Math.max(RESIDENT_GROUP, Math.ceil(x.size / (8 * threads * RESIDENT_GROUP)) * RESIDENT_GROUP)),
    next: new Int32Array(new SharedArrayBuffer(4)),
  };
  const started = new Int32Array(new SharedArrayBuffer(4 * workers));
  let pending: Promise<unknown>[] = [];
  try {
    for (let i = 0; i < workers; i++) {
      pending.push(p.runResident(i, { kind: "resident", from: from.name, to: to.name, ...range, started, cell: i, ...resolved }, memory));
    }
    if (callerConverts) {
      convertResident(src.buffer, from, to, range, resolved);
      pending = pending.filter((answer, i) => {
        if (Atomics.compareExchange(started, i, 0, 2) !== 0) return true;
        // Never started, never will: its answer (or a broken pool's rejection) concerns nobody.
        answer.catch(() => undefined);
        return false;
      });
    }
  } finally {
    await settleAll(pending);
  }
}

/**
 * Converts every element of `x` into `dst` on `threads - 1` workers without shared memory: each
 * chunk's bytes are copied into an ArrayBuffer transferred to a worker with another for its result;
 * both come back with the answer, this thread copies the result into place and reuses the two
 * buffers for a later chunk. This thread converts nothing and waits (yielding to its event loop)
 * whenever two chunks per worker are in flight, so a page stays responsive; it is about as fast as
 * `cast` (the copies and messages cost what the worker saves).
 */
async function convertCopied(host: WorkerHost, x: Tensor, dst: NumericStorage, target: DType, resolved: Resolved, threads: number): Promise<void> {
  const from: DType = x.dtype;
  const count = x.size;
  const data = x.data as NumericStorage;
  const workers = Math.max(1, threads - 1);
  const p = poolOf(host, workers);
  const size = Math.max(Math.min(MIN_CHUNK, alignUp(count / 2)), Math.min(MAX_CHUNK, alignUp(count / (4 * workers))));
  const free: { src: ArrayBuffer; dst: ArrayBuffer }[] = [];
  const pending: Promise<void>[] = [];
  let waited = 0;
  try {
    for (let a = 0; a < count; a += size) {
      if (pending.length - waited >= 2 * workers) await pending[waited++];
      const b = Math.min(count, a + size);
      const buffers = free.pop() ?? { src: bufferFor(from, size), dst: bufferFor(target, size) };
      const chunk = slice(data, from, a, b);
      (viewOf(from, buffers.src, b - a) as Uint8Array).set(chunk as Uint8Array);
      const request = { kind: "copied" as const, ...buffers, from: from.name, to: target.name, count: b - a, ...resolved };
      pending.push(p.run(request, workers, [buffers.src, buffers.dst]).then((done) => {
        (slice(dst, target, a, b) as Uint8Array).set(viewOf(target, done.dst!, b - a) as Uint8Array);
        free.push({ src: done.src!, dst: done.dst! });
      }));
    }
  } finally {
    await settleAll(pending);
  }
}

/**
 * Waits for every chunk, then throws the first error if any: the call settles only once no worker
 * writes into its output any more (Promise.all would reject at the first error, with ranges still
 * running).
 */
async function settleAll(pending: readonly Promise<unknown>[]): Promise<void> {
  const settled = await Promise.allSettled(pending);
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) throw failed.reason;
}

/** A zeroed ArrayBuffer holding the storage of `count` elements of `t`. */
function bufferFor(t: DType, count: number): ArrayBuffer {
  return (allocateStorage(t, count) as NumericStorage).buffer as ArrayBuffer;
}

/** `n` rounded up to a multiple of ALIGN (at least ALIGN). */
function alignUp(n: number): number {
  return Math.max(ALIGN, Math.ceil(n / ALIGN) * ALIGN);
}

function checkFlag(name: string, value: unknown): boolean | undefined {
  if (value === undefined || typeof value === "boolean") return value;
  throw new TensorcastError("INVALID_ATTRIBUTE", `${name} must be true or false, got ${describe(value)}`);
}

function checkCount(name: string, value: unknown, min: number): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min) {
    throw new TensorcastError("INVALID_ATTRIBUTE", `${name} must be an integer >= ${min}, got ${describe(value)}`);
  }
  return value;
}

/** A zero-filled storage for `count` elements of `t` on a new SharedArrayBuffer. */
function allocateShared(t: DType, count: number): NumericStorage {
  if (typeof SharedArrayBuffer !== "function") {
    throw new TensorcastError("UNSUPPORTED_PLATFORM",
      "SharedArrayBuffer is not available here: a browser page needs cross-origin isolation (the headers " +
      "Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp) to share memory with workers");
  }
  const ctor = TYPED_ARRAYS[t.array as Exclude<DType["array"], "Array">];
  const length = storageLength(t, count);
  return new ctor(new SharedArrayBuffer(length * ctor.BYTES_PER_ELEMENT), 0, length);
}

/** The storage of elements [a, b) of `t` (`a` a multiple of 8; `b` too unless it is the end). */
function slice(data: NumericStorage, t: DType, a: number, b: number): NumericStorage {
  if (t.packed) return data.subarray((a * t.bits) / 8, Math.ceil((b * t.bits) / 8));
  return data.subarray(a, b);
}
