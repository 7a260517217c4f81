/**
 * What a cast worker is asked and answers, and how it answers: one element range, converted with the
 * same `convert()` that `cast` runs. Shared by the Node worker (src/node/cast-worker.ts) and the Web
 * Worker (src/web/cast-worker.ts), which only differ in how messages arrive.
 *
 * Two kinds of range: on shared memory (the worker reads and writes the caller's SharedArrayBuffers
 * in place), and copied (where there is no shared memory: the chunk's bytes arrive in a transferred
 * ArrayBuffer and the converted bytes go back in another).
 *
 * A third kind, resident, is one cast between two tensors of a shared arena (src/arena.ts): every
 * thread instantiates the kernels on the arena's shared WebAssembly memory and takes chunks of the
 * cast from a shared counter until none are left, converting each in place (no staging, no copies,
 * one message per worker per call). The memory itself is sent to a worker only when it differs
 * from the last one that worker was sent: each worker keeps that one attached.
 */
import type { RoundMode } from "../dtype/minifloat.js";
import { dtype, type DType, type DTypeName, type Storage } from "../dtype/table.js";
import { TensorcastError, type ErrorCode } from "../errors.js";
import { convert } from "../kernels/convert.js";
import { prepareOutput } from "../ops/cast.js";
import { attachShared, type WasmMemory } from "../kernels/wasm/resident.js";
import { storageLength, Tensor, TYPED_ARRAYS } from "../tensor.js";

/** Typed-array storage (every type but string). */
export type NumericStorage = Exclude<Storage, string[]>;

interface RangeBase {
  readonly id: number;
  readonly from: DTypeName;
  readonly to: DTypeName;
  readonly count: number;
  readonly saturate: boolean;
  readonly roundMode: RoundMode;
}

/** A chunk on shared memory: `count` elements from the start of `src` into the start of `dst`. */
export interface CastRangeRequest extends RangeBase {
  readonly kind: "shared";
  readonly src: NumericStorage;
  readonly dst: NumericStorage;
  /** Chunks finished, shared with the caller: the worker adds 1 when it has converted its range. */
  readonly done: Int32Array;
  /** The staging slot `src` lives in (-1: none); the worker sets `slots[slot]` to 0 once it has read it. */
  readonly slot: number;
  readonly slots: Int32Array;
}

/**
 * A copied chunk: `count` elements' storage at the start of `src`, converted into the start of
 * `dst`; both buffers are transferred to the worker and back with the answer, so the caller reuses
 * them for its next chunks (no fresh pages per chunk).
 */
export interface CastCopyRequest extends RangeBase {
  readonly kind: "copied";
  readonly src: ArrayBuffer;
  readonly dst: ArrayBuffer;
}

/**
 * One cast within a shared arena: `count` elements from byte `srcOffset` of the arena's memory
 * into byte `dstOffset`, in chunks of `chunk` elements (a multiple of every kernel group) that
 * each thread claims by adding 1 to `next[0]`.
 */
export interface CastResidentRequest extends RangeBase {
  readonly kind: "resident";
  /** The arena's memory, when this worker was not sent it last (it keeps the last one attached). */
  readonly memory?: WasmMemory;
  readonly srcOffset: number;
  readonly dstOffset: number;
  readonly chunk: number;
  readonly next: Int32Array;
  /**
   * One cell per worker of the call, at `cell`: the worker turns its 0 into 1 when it starts; a
   * caller that has run out of chunks turns a 0 into 2, and then neither waits for that worker
   * nor lets it touch the memory (it answers without converting).
   */
  readonly started: Int32Array;
  readonly cell: number;
}

export type CastRequest = CastRangeRequest | CastCopyRequest | CastResidentRequest;

/** A range done: for a copied one, its two buffers handed back. */
export interface CastRangeDone {
  readonly id: number;
  readonly error?: undefined;
  readonly src?: ArrayBuffer;
  readonly dst?: ArrayBuffer;
}

export type CastRangeResponse =
  | CastRangeDone
  | { readonly id: number; readonly error: { readonly name: string; readonly code?: string; readonly message: string } };

/** A worker's answer and the buffers to transfer with it (the copied result, if any). */
export interface Answer {
  readonly response: CastRangeResponse;
  readonly transfer: ArrayBuffer[];
}

/** Converts one requested range and says how it went (never throws: an error becomes the answer). */
export function castRange(request: CastRequest): Answer {
  let answer: Answer;
  try {
    const opts = { saturate: request.saturate, roundMode: request.roundMode };
    const from = dtype(request.from);
    const to = dtype(request.to);
    if (request.kind === "resident") {
      if (request.memory) attached = request.memory;
      // A caller that finished every chunk before this worker woke up has not waited for it.
      if (Atomics.compareExchange(request.started, request.cell, 0, 1) !== 0) return { response: { id: request.id }, transfer: [] };
      if (!attached) throw new TensorcastError("INTERNAL", "a castAsync worker was asked for a shared-arena cast before it was sent the arena");
      if (!attachShared(attached)) throw new TensorcastError("UNSUPPORTED_PLATFORM", "a castAsync worker has no WebAssembly SIMD for a shared-arena cast");
      convertResident(attached.buffer, from, to, request, opts);
      answer = { response: { id: request.id }, transfer: [] };
    } else if (request.kind === "shared") {
      convert(request.src, from, request.dst, to, request.count, opts);
      answer = { response: { id: request.id }, transfer: [] };
    } else {
      // The buffer held an earlier chunk: zero what the merging kernels (packed, 64-bit integer) need zeroed.
      const dst = viewOf(to, request.dst, request.count);
      prepareOutput(Tensor.fromStorage(dst, to, [request.count]));
      convert(viewOf(from, request.src, request.count), from, dst, to, request.count, opts);
      answer = { response: { id: request.id, src: request.src, dst: request.dst }, transfer: [request.src, request.dst] };
    }
  } catch (e) {
    const err = e as Error;
    const error = { name: err?.name ?? "Error", code: e instanceof TensorcastError ? e.code : undefined, message: err?.message ?? String(e) };
    answer = { response: { id: request.id, error }, transfer: [] };
    // A copied range's buffers stay here: the caller allocates new ones if it goes on.
  }
  if (request.kind === "shared") {
    // The chunk is read: its staging slot may be refilled, and the caller may hand out another.
    if (request.slot >= 0) Atomics.store(request.slots, request.slot, 0);
    Atomics.add(request.done, 0, 1);
  }
  return answer;
}

/** The shared memory this worker thread was last sent (see the module comment). */
let attached: WasmMemory | undefined;

/** Where a resident cast is, in a memory: what both the calling thread and the workers convert. */
export interface ResidentRange {
  readonly srcOffset: number;
  readonly dstOffset: number;
  readonly count: number;
  readonly chunk: number;
  readonly next: Int32Array;
}

/**
 * Converts chunks of the resident cast `r` in `buffer` (the shared memory, whose kernels this
 * thread has attached) until the shared counter runs past the end; each chunk goes through
 * convert(), which finds the storages in a resident memory and runs the kernel in place (the last
 * chunk's partial group through the scalar path).
 * @example convertResident(memory.buffer, dtype("float32"), dtype("float16"), { srcOffset: 0, dstOffset: 4096, count: 1024, chunk: 256, next }, opts)
 * @throws TensorcastError INVALID_DATA for a range outside the memory (nothing converted).
 */
export function convertResident(buffer: ArrayBufferLike, from: DType, to: DType, r: ResidentRange, opts: { saturate: boolean; roundMode: RoundMode }): void {
  const inSize = from.bits / 8;
  const outSize = to.bits / 8;
  const { srcOffset, dstOffset, count, chunk, next } = r;
  if (from.packed || to.packed || srcOffset < 0 || dstOffset < 0 || srcOffset + count * inSize > buffer.byteLength || dstOffset + count * outSize > buffer.byteLength) {
    throw new TensorcastError("INVALID_DATA",
      `a shared-arena cast of ${count} ${from.name} at byte ${srcOffset} into ${to.name} at byte ${dstOffset} does not fit the arena's ${buffer.byteLength} bytes`);
  }
  const src = TYPED_ARRAYS[from.array as Exclude<DType["array"], "Array">];
  const dst = TYPED_ARRAYS[to.array as Exclude<DType["array"], "Array">];
  for (;;) {
    const a = Atomics.add(next, 0, 1) * chunk;
    if (a >= count) return;
    const n = Math.min(chunk, count - a);
    convert(new src(buffer, srcOffset + a * inSize, n), from, new dst(buffer, dstOffset + a * outSize, n), to, n, opts);
  }
}

/** `buffer` as the storage of `count` elements of `t`. */
export function viewOf(t: DType, buffer: ArrayBufferLike, count: number): NumericStorage {
  const ctor = TYPED_ARRAYS[t.array as Exclude<DType["array"], "Array">];
  return new ctor(buffer, 0, storageLength(t, count));
}

/** The error a worker's answer carries, rebuilt on the calling side (a TensorcastError keeps its code). */
export function responseError(error: NonNullable<CastRangeResponse["error"]>): Error {
  return error.code ? new TensorcastError(error.code as ErrorCode, error.message) : Object.assign(new Error(error.message), { name: error.name });
}
