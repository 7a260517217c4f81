/**
 * Resident memory: a WebAssembly memory of fixed size with its own instance of the kernel module,
 * whose kernels run in place on storage that lives in that memory. wasmCast streams
 * ordinary arrays through its module's memory, copying every chunk in and out; on 4 Mi elements
 * the kernels alone are 2.2-2.9x faster than that (bench/in-place.ts), and the copies are what
 * kept castInto below onnxruntime on float32 -> int8, int64 -> int32 and float64 -> float32.
 *
 * The memory is never grown by a cast (growth would detach every view of it). Its one detaching
 * operation is `grow(0)`, used by `reset` on purpose: the WebAssembly JS API refreshes the
 * memory's ArrayBuffer on every grow, detaching the old one, so every typed array anyone still
 * holds over the memory reads as empty (length 0) before its bytes are handed out again. A
 * WebAssembly memory's buffer refuses `transfer()` and `postMessage` transfer (TypeError), so
 * nobody else can detach or steal it.
 *
 * A shared resident memory (`shared: true`, for shared arenas) is a WebAssembly memory whose buffer
 * is a SharedArrayBuffer: worker threads instantiate the same module on it (`attachShared`) and
 * convert slices of one cast in place. On a shared memory `grow(0)` does not detach anything (the
 * threads proposal keeps every view of a shared buffer valid), so it has no reset.
 *
 * Browser-safe: no Node built-ins.
 */
import type { DType, Storage } from "../../dtype/table.js";
import type { ResolvedCastOptions } from "../reference.js";
import { kernelFor, kernelInstance, loadLut, type KernelInstance } from "./index.js";

/** Bytes of one WebAssembly page. */
const PAGE = 65536;
/** The largest memory a 32-bit WebAssembly module addresses: 65536 pages, 4 GiB. */
const MAX_PAGES = 65536;
/**
 * Bytes a resident memory can give out at most: every page but the last, which holds the kernels'
 * table and constants.
 * @example RESIDENT_MAX_BYTES // 4294901760 (4 GiB - 64 KiB)
 */
export const RESIDENT_MAX_BYTES = (MAX_PAGES - 1) * PAGE;

interface WasmMemoryApi {
  Memory: new (d: { initial: number; maximum: number; shared?: boolean }) => KernelInstance["memory"];
}

/** A WebAssembly.Memory object, as the threads that share it pass it around. */
export type WasmMemory = KernelInstance["memory"];

/** A fixed-size WebAssembly memory, with the kernels that work in it when the platform has SIMD. */
export interface ResidentMemory {
  /** The memory's current buffer (a new object after each `reset`; a SharedArrayBuffer when shared). */
  readonly buffer: ArrayBufferLike;
  /** The WebAssembly.Memory when it is shared (workers instantiate the kernels on it), else undefined. */
  readonly shared: WasmMemory | undefined;
  /** Bytes free for storage, from address 0: the memory minus its last page. */
  readonly capacity: number;
  /** Whether casts between storages in this memory run in place (false without WebAssembly SIMD). */
  readonly inPlace: boolean;
  /**
   * Detaches every view of the memory made so far (each reads as empty from now on) and returns
   * the memory's new ArrayBuffer; the bytes stay as they were.
   */
  reset(): ArrayBufferLike;
}

/** The memories whose kernels run in place (on this thread), by their current buffer. */
const residents = new WeakMap<ArrayBufferLike, KernelInstance>();

/**
 * A resident memory with room for `bytes` bytes (rounded up to whole 64 KiB pages), plus one page
 * for the kernels. Without WebAssembly SIMD, a plain fixed WebAssembly memory (casts then take the
 * ordinary paths); without WebAssembly at all, undefined.
 *
 * @example const m = residentMemory(64 << 20); new Float32Array(m!.buffer, 0, 16 << 20)
 * @throws RangeError when the platform cannot reserve the memory (the caller reports it).
 */
export function residentMemory(bytes: number, o: { shared?: boolean } = {}): ResidentMemory | undefined {
  const pages = Math.ceil(bytes / PAGE) + 1;
  if (o.shared) return sharedResident(pages);
  const w = kernelInstance(pages);
  let memory: KernelInstance["memory"];
  if (w) {
    memory = w.memory;
    residents.set(memory.buffer, w);
  } else {
    const api = (globalThis as { WebAssembly?: WasmMemoryApi }).WebAssembly;
    if (!api) return undefined;
    memory = new api.Memory({ initial: pages, maximum: pages });
  }
  return {
    get buffer() {
      return memory.buffer;
    },
    shared: undefined,
    capacity: (pages - 1) * PAGE,
    inPlace: w !== null,
    reset() {
      if (w) residents.delete(memory.buffer);
      memory.grow(0); // detaches the old buffer: see the module comment
      if (w) residents.set(memory.buffer, w);
      return memory.buffer;
    },
  };
}

/**
 * A shared memory of `pages` pages with this thread's kernels on it, or undefined without
 * WebAssembly. Throws TypeError where the engine has no shared WebAssembly memory (the caller reports it).
 */
function sharedResident(pages: number): ResidentMemory | undefined {
  const api = (globalThis as { WebAssembly?: WasmMemoryApi }).WebAssembly;
  if (!api) return undefined;
  if (typeof SharedArrayBuffer !== "function") throw new TypeError("SharedArrayBuffer is not defined");
  const memory = new api.Memory({ initial: pages, maximum: pages, shared: true });
  if (!(memory.buffer instanceof SharedArrayBuffer)) {
    throw new TypeError("WebAssembly.Memory({ shared: true }) did not give a SharedArrayBuffer");
  }
  const w = attachShared(memory);
  return {
    buffer: memory.buffer,
    shared: memory,
    capacity: (pages - 1) * PAGE,
    inPlace: w !== null,
    reset() {
      throw new TypeError("a shared memory cannot detach its views");
    },
  };
}

/**
 * The WebAssembly memory whose current buffer is `buffer`, when it is a (non-shared) resident
 * memory, i.e. an arena's: other kernel modules (the quantization kernels, ../quant/simd.ts)
 * instantiate themselves on it to run in place too. Else undefined.
 * @example const m = residentMemoryOf(x.data.buffer); // an arena tensor's memory, or undefined
 */
export function residentMemoryOf(buffer: ArrayBufferLike): WasmMemory | undefined {
  const w = residents.get(buffer);
  return w && w.memory.buffer === buffer && !(typeof SharedArrayBuffer === "function" && buffer instanceof SharedArrayBuffer) ? w.memory : undefined;
}

/**
 * Instantiates this thread's kernels on the shared memory `memory` (once per memory buffer) and
 * registers them, so that convert() runs storages over it in place here; returns them, or null
 * without WebAssembly SIMD. A worker calls it with the memory it was sent.
 * @example attachShared(request.memory); convert(src, from, dst, to, n, opts) // in place
 */
export function attachShared(memory: WasmMemory): KernelInstance | null {
  const known = residents.get(memory.buffer);
  if (known) return known;
  const w = kernelInstance(memory.buffer.byteLength / PAGE, memory);
  if (w) residents.set(memory.buffer, w);
  return w;
}

/**
 * The shared memory both storages live in, when they live in one whose kernels run in place here
 * and the pair has a kernel other than the 8-bit table one (its table sits at one address of the
 * memory, which threads casting other pairs would overwrite); else undefined.
 * @example const m = sharedResidentOf(x.data, out.data, x.dtype, out.dtype) // threads may split it
 */
export function sharedResidentOf(src: Storage, dst: Storage, from: DType, to: DType): WasmMemory | undefined {
  if (Array.isArray(src) || Array.isArray(dst) || src.buffer !== dst.buffer) return undefined;
  const k = kernelFor(from, to);
  if (!k || k[0] === "byte_lut32") return undefined;
  // A shared memory's instance imports it, and exports that same Memory object.
  const shared = typeof SharedArrayBuffer === "function" && src.buffer instanceof SharedArrayBuffer;
  return shared ? residents.get(src.buffer)?.memory : undefined;
}

/**
 * Casts `count` elements of `src` into `dst` in place when both live in the same resident memory
 * and the pair has a WebAssembly kernel, and returns true; else returns false, having written
 * nothing. The kernels convert whole groups (8 or 16 elements) where the storages are; the last
 * partial group goes through `tail` (the scalar path), because a kernel's whole group would write
 * past the end of `dst` into bytes another tensor (or a view a user holds) may own.
 *
 * @example if (!residentCast(x.data, x.dtype, out.data, out.dtype, x.size, opts, scalar)) wasmCast(...)
 */
export function residentCast(
  src: Storage, from: DType, dst: Storage, to: DType, count: number, opts: ResolvedCastOptions,
  tail: (src: Storage, from: DType, dst: Storage, to: DType, count: number, opts: ResolvedCastOptions) => void,
): boolean {
  if (Array.isArray(src) || Array.isArray(dst)) return false;
  const w = residents.get(src.buffer);
  if (w === undefined || residents.get(dst.buffer) !== w) return false;
  const k = kernelFor(from, to);
  if (!k) return false;
  const [name, , , group] = k;
  if (name === "byte_lut32") loadLut(w, from, to, opts);
  const groups = Math.floor(count / group);
  const whole = groups * group;
  // Offsets past 2^31 reach the kernel's i32 parameters as negative numbers; WebAssembly reads
  // addresses as unsigned, so they still address the right bytes.
  if (groups > 0) w.kernels[name](src.byteOffset, dst.byteOffset, groups);
  // Every kernel's element is one element of its storages (no packed types), so element
  // indices are storage indices.
  if (whole < count) tail(src.subarray(whole, count), from, dst.subarray(whole, count), to, count - whole, opts);
  return true;
}
