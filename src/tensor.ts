/**
 * Tensor: a data type, a shape and the storage that holds its elements in row-major order.
 */
import { describe } from "./args.js";
import { TensorcastError } from "./errors.js";
import { roundsPastMax } from "./dtype/minifloat.js";
import { packedByteLength } from "./dtype/packing.js";
import { dtype, type DType, type DTypeLike, type DTypeName, type Storage, type StorageOf } from "./dtype/table.js";
import { convert } from "./kernels/convert.js";
import { markOwned, releaseBuffer, takeBuffer } from "./storage-pool.js";

/** One element as `toValues()` returns it and `fromValues()` accepts it. */
export type ValueOf<N extends DTypeName> =
  N extends "int64" | "uint64" ? bigint
  : N extends "bool" ? boolean
  : N extends "string" ? string
  : N extends "complex64" | "complex128" ? [number, number]
  : number;

/** What `fromValues` accepts for a type: its own values, plus numbers for 64-bit and bool types. */
export type InputOf<N extends DTypeName> =
  N extends "int64" | "uint64" ? bigint | number
  : N extends "bool" ? boolean | number
  : ValueOf<N>;

const MAX_ELEMENTS = Number.MAX_SAFE_INTEGER;

/** Checks a shape and returns its element count. */
export function shapeSize(shape: readonly number[]): number {
  if (!Array.isArray(shape)) {
    throw new TensorcastError("INVALID_SHAPE", `a shape must be an array of dimensions, got ${typeof shape}`);
  }
  let size = 1;
  for (let i = 0; i < shape.length; i++) {
    const d = shape[i];
    // Safe integers only: 2^1000 is an integer to JS, but no dimension, and [0, 2^1000] would pass
    // a product test.
    if (typeof d !== "number" || !Number.isSafeInteger(d) || d < 0) {
      throw new TensorcastError(
        "INVALID_SHAPE",
        `dimension ${i} of shape ${shapeText(shape)} is ${describe(d)}; dimensions must be integers in [0, 2^53 - 1]`,
      );
    }
    size *= d;
  }
  if (size > MAX_ELEMENTS) {
    throw new TensorcastError("INVALID_SHAPE", `shape ${shapeText(shape)} has more than 2^53 - 1 elements`);
  }
  return size;
}

/** A shape for a message: at most 16 dimensions spelled out, each bounded. */
export function shapeText(shape: readonly unknown[]): string {
  const dims = shape.slice(0, 16).map((d) => describe(d));
  return `[${dims.join(", ")}${shape.length > 16 ? `, ... (${shape.length} dimensions)` : ""}]`;
}

/** `x` must be a Tensor whose storage still holds it (expectStorage); `what` names the argument ("cast's input"). */
export function expectTensor(x: unknown, what: string): asserts x is Tensor {
  if (!(x instanceof Tensor)) throw new TensorcastError("INVALID_DATA", `${what}: expected a Tensor, got ${describe(x)}`);
  expectStorage(x, what);
}

/**
 * Throws unless `x`'s storage still holds exactly the entries its shape needs, as fromStorage
 * checked when it was made. Three things change a storage afterwards: dispose() (or an arena's
 * reset) detaches its buffer; a resizable ArrayBuffer shrunk under a view puts the view out of
 * bounds (it reads as empty, and a kernel over it would read undefined: zeros from cast, NaN from
 * toValues); a view that tracks a resizable or growable buffer's length follows every resize. A
 * string tensor's array can be lengthened or cut. One length comparison, so every operation makes it.
 * @example expectStorage(x, "cast's input") // throws INVALID_DATA once x's buffer was shrunk
 * @throws TensorcastError INVALID_DATA naming `what` and the entries held and needed.
 */
export function expectStorage(x: Tensor, what: string): void {
  const data = x.data as Storage;
  const need = storageLength(x.dtype, x.size);
  if (data.length === need) return;
  if (Array.isArray(data)) {
    throw new TensorcastError("INVALID_DATA", `${what}: the string array holds ${data.length} entries now, the shape ${shapeText(x.shape)} needs ${need}`);
  }
  const buffer = data.buffer as ArrayBuffer & { resizable?: boolean; growable?: boolean };
  if (buffer.resizable === true || buffer.growable === true) {
    throw new TensorcastError(
      "INVALID_DATA",
      `${what}: its ${buffer.resizable === true ? "resizable ArrayBuffer" : "growable SharedArrayBuffer"} was resized to ${buffer.byteLength} bytes: ` +
        `the storage holds ${data.length} of the ${need} entries the shape ${shapeText(x.shape)} needs`,
    );
  }
  throw new TensorcastError("INVALID_DATA", `${what}: the tensor was disposed (its storage is released)`);
}

/**
 * A typed array of `length` entries, or INVALID_SHAPE when the platform cannot allocate it (V8
 * refuses typed arrays beyond 2^32 or so entries and any allocation the memory cannot hold, with
 * a RangeError).
 */
function allocate<T>(make: () => T, t: DType, length: number): T {
  try {
    return make();
  } catch (e) {
    if (!(e instanceof RangeError)) throw e;
    throw new TensorcastError(
      "INVALID_SHAPE",
      `${length} storage entries of ${t.name} are more than this platform can allocate (${e.message})`,
    );
  }
}

/** Entries a storage holds for `size` elements of type `t`: bytes when packed, pairs for complex. */
export function storageLength(t: DType, size: number): number {
  if (t.packed) return packedByteLength(size, t.bits);
  return t.kind === "complex" ? 2 * size : size;
}

/** The constructor of a typed-array storage. */
export type TypedArrayCtor =
  (new (buffer: ArrayBufferLike, byteOffset?: number, length?: number) => Exclude<Storage, string[]>) &
  (new (length: number) => Exclude<Storage, string[]>) & { readonly BYTES_PER_ELEMENT: number };

/** The typed-array constructor of every fixed-width container. */
export const TYPED_ARRAYS: Readonly<Record<Exclude<DType["array"], "Array">, TypedArrayCtor>> = {
  Float32Array, Float64Array, Int8Array, Uint8Array, Int16Array, Uint16Array, Int32Array, Uint32Array,
  BigInt64Array, BigUint64Array,
};

/** A zero-filled storage for `size` elements of type `t`. */
export function allocateStorage<N extends DTypeName>(t: DType<N>, size: number): StorageOf<N> {
  const length = storageLength(t, size);
  if (t.array === "Array") return allocate(() => new Array<string>(length).fill(""), t, length) as StorageOf<N>;
  const ctor = TYPED_ARRAYS[t.array];
  return allocate(() => new ctor(length), t, length) as StorageOf<N>;
}

/**
 * Storage for an output that will be written in full (or cleared by the caller when `reused`):
 * memory a disposed output left in the pool (storage-pool.ts) when one of the size is there,
 * else a fresh zero-filled storage. Either way the buffer is marked as this library's, so that
 * `dispose()` of the tensor built on it can pool it.
 */
export function allocateOutputStorage<N extends DTypeName>(t: DType<N>, size: number): { data: StorageOf<N>; reused: boolean } {
  if (t.array === "Array") return { data: allocateStorage(t, size), reused: false };
  const ctor = TYPED_ARRAYS[t.array];
  const length = storageLength(t, size);
  const pooled = takeBuffer(length * ctor.BYTES_PER_ELEMENT);
  if (pooled) return { data: new ctor(pooled, 0, length) as StorageOf<N>, reused: true };
  const data = allocateStorage(t, size);
  markOwned((data as Exclude<Storage, string[]>).buffer as ArrayBuffer);
  return { data, reused: false };
}

/**
 * A typed tensor. Storage per type: native typed arrays where one exists (`BigInt64Array` for
 * int64), `Uint16Array` bit patterns for float16/bfloat16, `Uint8Array` codes for 8-bit floats,
 * packed `Uint8Array` for sub-byte types (see `packing.ts`), `string[]` for strings and interleaved
 * (re, im) typed arrays for complex.
 */
export class Tensor<N extends DTypeName = DTypeName> {
  readonly dtype: DType<N>;
  readonly shape: readonly number[];
  /** Number of elements: the product of the shape (1 for a scalar, shape []). */
  readonly size: number;
  readonly data: StorageOf<N>;

  private constructor(t: DType<N>, shape: readonly number[], size: number, data: StorageOf<N>) {
    this.dtype = t;
    this.shape = Object.freeze(shape.slice());
    this.size = size;
    this.data = data;
  }

  /**
   * Releases the storage of a tensor that cast() (or castLike()) allocated, so that a later cast()
   * of the same byte size reuses its memory instead of faulting in fresh pages. Afterwards this
   * tensor's `data`, and every view of its buffer anyone holds, is detached (length 0): the memory
   * is never visible through two live tensors. A no-op for storage the caller supplied
   * (`fromStorage`, `fromBytes`), for outputs under 1 MiB, a second time, for tensors in an arena
   * (`createArena`: `arena.reset()` releases them all at once), and on runtimes without
   * `ArrayBuffer.prototype.transfer` (Node 20). Also `[Symbol.dispose]`, for `using`.
   *
   * @example { using y = cast(x, "float16"); send(y.bytes()); } // y's memory serves the next cast()
   * @example const y = cast(x, "float16"); use(y); y.dispose(); y.data.length // 0 (Node 22+)
   */
  dispose(): void {
    if (!Array.isArray(this.data)) releaseBuffer((this.data as Exclude<Storage, string[]>).buffer);
  }

  /** Whether `dispose()` detached this tensor's storage (its data then has no elements). */
  get disposed(): boolean {
    return !Array.isArray(this.data) && this.size > 0 && (this.data as Exclude<Storage, string[]>).byteLength === 0;
  }

  /**
   * Wraps an existing storage without copying it. The storage must be the container `dtype` uses
   * and hold exactly the entries the shape needs.
   */
  static fromStorage<N extends DTypeName>(data: StorageOf<N>, type: DTypeLike<N>, shape: readonly number[]): Tensor<N> {
    const t = dtype(type);
    const size = shapeSize(shape);
    const expected = storageLength(t, size);
    data = float16Bits(t, data);
    const container = t.array === "Array" ? Array : TYPED_ARRAYS[t.array];
    const ok = t.array === "Array" ? Array.isArray(data) : data instanceof (container as TypedArrayCtor);
    if (!ok) {
      throw new TensorcastError("INVALID_DATA", `${t.name} is stored in a ${t.array}${t.name === "float16" ? " (or a Float16Array)" : ""}, got ${describe(data)}`);
    }
    if (data.length !== expected) {
      throw new TensorcastError(
        "SHAPE_MISMATCH",
        `shape ${shapeText(shape)} of ${t.name} needs ${expected} storage entries, got ${data.length}`,
      );
    }
    if (t.array === "Array") {
      const strings = data as string[];
      for (let i = 0; i < strings.length; i++) {
        if (typeof strings[i] !== "string") throw new TensorcastError("INVALID_DATA", `string storage entry ${i} is ${describe(strings[i])}, not a string`);
      }
    }
    return new Tensor(t, shape, size, data);
  }

  /** A zero-filled tensor (code 0 for every element: 2^-127 for e8m0, "" for strings). */
  static zeros<N extends DTypeName>(type: DTypeLike<N>, shape: readonly number[]): Tensor<N> {
    const t = dtype(type);
    const size = shapeSize(shape);
    return new Tensor(t, shape, size, allocateStorage(t, size));
  }

  /**
   * Builds a tensor from plain values, in row-major order; the shape defaults to `[values.length]`.
   * - Floats: numbers, rounded to nearest even (e8m0: to the nearest power of two, ties up).
   *   Infinities and NaN stay what they are where the type has them. A value the type cannot hold
   *   (beyond the range of a type without infinities, NaN for float4/float6, <= 0 for e8m0) is an
   *   INVALID_VALUE error: use `cast` from float64 for saturating conversion.
   * - Integers: numbers (or bigints for 64-bit types) that are integers within the type's range;
   *   anything else is an INVALID_VALUE error rather than a silent wrap.
   * - bool: booleans or 0 / 1. string: strings. complex: [re, im] pairs.
   * - A `Float16Array` for float16 is copied bit for bit (NaN payloads and -0 kept); for other types
   *   its elements are numbers like any others. `fromStorage` wraps one without copying.
   *
   * @example Tensor.fromValues([1, 0.1, NaN], "float16").data // Uint16Array [0x3c00, 0x2e66, 0x7e00]
   */
  static fromValues<N extends DTypeName>(values: ArrayLike<InputOf<N>>, type: DTypeLike<N>, shape?: readonly number[]): Tensor<N> {
    const t = dtype(type);
    const length = typeof values === "object" && values !== null ? (values as { length?: unknown }).length : undefined;
    if (typeof length !== "number" || !Number.isSafeInteger(length) || length < 0) {
      throw new TensorcastError("INVALID_DATA", `values must be an array (or array-like) of values, got ${describe(values)}`);
    }
    const dims = shape ?? [length];
    const size = shapeSize(dims);
    if (length !== size) {
      throw new TensorcastError("SHAPE_MISMATCH", `shape ${shapeText(dims)} needs ${size} values, got ${length}`);
    }
    // Reading a Float16Array's elements as numbers would turn every NaN code into one NaN: copy its bits.
    if (t.name === "float16" && isFloat16Array(values)) {
      const v = values as unknown as Uint16Array;
      const bits = allocateStorage(t, size) as Uint16Array;
      bits.set(new Uint16Array(v.buffer, v.byteOffset, v.length));
      return new Tensor(t, dims, size, bits as StorageOf<N>);
    }
    return new Tensor(t, dims, size, storageFromValues(t, values as ArrayLike<unknown>) as StorageOf<N>);
  }

  /**
   * Builds a tensor from raw little-endian bytes laid out as ONNX raw_data (sub-byte types packed
   * from the low bits). Shares `bytes`' memory when its offset is aligned for the element type,
   * copies otherwise. Strings have no raw layout.
   */
  static fromBytes<N extends DTypeName>(bytes: ArrayBufferView | ArrayBufferLike, type: DTypeLike<N>, shape: readonly number[]): Tensor<N> {
    const t = dtype(type);
    const size = shapeSize(shape);
    if (t.array === "Array") {
      throw new TensorcastError("UNSUPPORTED_TYPE", "string tensors have no raw byte layout; use fromValues");
    }
    const view = byteView(bytes);
    const length = storageLength(t, size);
    const ctor = TYPED_ARRAYS[t.array];
    const expected = length * ctor.BYTES_PER_ELEMENT;
    if (view.byteLength !== expected) {
      throw new TensorcastError(
        "SHAPE_MISMATCH",
        `shape ${shapeText(shape)} of ${t.name} needs ${expected} bytes, got ${view.byteLength}`,
      );
    }
    // A copy, not `view.slice()`: on a Node Buffer slice() shares memory and stays unaligned.
    const aligned = view.byteOffset % ctor.BYTES_PER_ELEMENT === 0 ? view : new Uint8Array(view);
    const data = new ctor(aligned.buffer, aligned.byteOffset, length);
    return new Tensor(t, shape, size, data as StorageOf<N>);
  }

  /**
   * The raw little-endian bytes (ONNX raw_data layout), sharing this tensor's memory.
   * @throws TensorcastError UNSUPPORTED_TYPE for strings; INVALID_DATA once disposed.
   */
  bytes(): Uint8Array {
    if (this.dtype.array === "Array") {
      throw new TensorcastError("UNSUPPORTED_TYPE", "string tensors have no raw byte layout");
    }
    // A detached buffer would make the Uint8Array constructor throw a bare TypeError.
    expectStorage(this, "bytes()");
    const d = this.data as Exclude<Storage, string[]>;
    return new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
  }

  /**
   * This float16 tensor's storage as a `Float16Array` over the same memory (no copy: writes through
   * either side show in the other), for APIs that take one (WebGPU uploads, onnxruntime-web on
   * Node 24+). Reading an element gives its exact value; every NaN code reads as NaN, so keep
   * `t.data` (the Uint16Array of bit patterns) where NaN payloads matter.
   *
   * @example Tensor.fromValues([1.5, -0, 65504], "float16").toFloat16Array() // Float16Array [1.5, -0, 65504]
   * @throws TensorcastError UNSUPPORTED_TYPE for a tensor of another type (`cast(t, "float16")`
   *         first); UNSUPPORTED_PLATFORM where the runtime has no Float16Array (Node 20 and 22,
   *         Chromium before 135, Firefox before 129, Safari before 18.2).
   */
  toFloat16Array(): Float16ArrayOf {
    if (this.dtype.name !== "float16") {
      throw new TensorcastError(
        "UNSUPPORTED_TYPE",
        `toFloat16Array needs a float16 tensor, got ${this.dtype.name}; cast it first: cast(t, "float16").toFloat16Array()`,
      );
    }
    const F16 = float16ArrayClass();
    if (F16 === undefined) {
      throw new TensorcastError(
        "UNSUPPORTED_PLATFORM",
        "toFloat16Array: this runtime has no Float16Array (it needs Node 24+, Deno, Bun or a current browser); use t.data, the Uint16Array of float16 bit patterns",
      );
    }
    expectStorage(this, "toFloat16Array()");
    const d = this.data as Uint16Array;
    return new F16(d.buffer, d.byteOffset, d.length) as Float16ArrayOf;
  }

  /**
   * The elements as plain values in row-major order: numbers (exact; NaN for every NaN code),
   * bigints for int64/uint64, booleans, strings, or [re, im] pairs for complex.
   */
  toValues(): ValueOf<N>[] {
    expectStorage(this, "toValues()");
    const t: DType = this.dtype;
    const d = this.data as Storage;
    if (t.array === "Array") return (d as string[]).slice() as ValueOf<N>[];
    if (t.bits === 64 && t.kind !== "float" && t.kind !== "complex") return Array.from(d as BigInt64Array) as ValueOf<N>[];
    if (t.kind === "complex") {
      const pairs: [number, number][] = [];
      const c = d as Float32Array | Float64Array;
      for (let i = 0; i < this.size; i++) pairs.push([c[2 * i], c[2 * i + 1]]);
      return pairs as ValueOf<N>[];
    }
    if (t.kind === "bool") return Array.from(d as Uint8Array, (v) => v !== 0) as ValueOf<N>[];
    if (!t.packed && !t.format) return Array.from(d as Int32Array) as ValueOf<N>[];
    const f64 = new Float64Array(this.size);
    convert(d, t, f64, dtype("float64"), this.size, { saturate: true, roundMode: "up" });
    return Array.from(f64) as ValueOf<N>[];
  }
}

const FLOAT64 = dtype("float64");

/**
 * fromBytes takes any typed array, DataView or (Shared)ArrayBuffer as the bytes it holds, never as
 * values: `fromBytes(new Float32Array([1.5]), "uint8", [4])` is the four bytes of 1.5.
 */
function byteView(bytes: unknown): Uint8Array {
  if (bytes instanceof Uint8Array) return bytes;
  if (ArrayBuffer.isView(bytes)) return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes instanceof ArrayBuffer || (typeof SharedArrayBuffer === "function" && bytes instanceof SharedArrayBuffer)) {
    return new Uint8Array(bytes);
  }
  throw new TensorcastError("INVALID_DATA", `bytes must be a Uint8Array, another typed array, a DataView or an ArrayBuffer, got ${describe(bytes)}`);
}

/**
 * A Float16Array (Node 24+, current browsers; what WebGPU read-backs and onnxruntime-web hand
 * out) is float16 storage too: it is viewed as the Uint16Array of its bit patterns, no copy.
 */
function float16Bits<T>(t: DType, data: T): T {
  if (t.name !== "float16" || !isFloat16Array(data)) return data;
  const view = data as unknown as Uint16Array;
  return new Uint16Array(view.buffer, view.byteOffset, view.length) as T;
}

type Float16ArrayClass = new (buffer: ArrayBufferLike, byteOffset: number, length: number) => unknown;

/** The platform's Float16Array, or undefined (Node 20 and 22, older browsers). Looked up per call: cheap, and tests can hide it. */
function float16ArrayClass(): Float16ArrayClass | undefined {
  return (globalThis as { Float16Array?: Float16ArrayClass }).Float16Array;
}

/** Whether `x` is a Float16Array of this platform (false wherever there is none). */
export function isFloat16Array(x: unknown): boolean {
  const F16 = float16ArrayClass();
  return F16 !== undefined && x instanceof F16;
}

/**
 * The slice of the Float16Array API tensorcast promises, for TypeScript setups whose `lib` lacks
 * ES2025's Float16Array: a typed array of numbers over a buffer.
 */
export interface Float16ArrayLike extends ArrayLike<number> {
  [index: number]: number;
  readonly buffer: ArrayBufferLike;
  readonly byteOffset: number;
  readonly byteLength: number;
  readonly BYTES_PER_ELEMENT: number;
  subarray(begin?: number, end?: number): Float16ArrayLike;
  set(array: ArrayLike<number>, offset?: number): void;
}

/**
 * What `toFloat16Array` returns: the global `Float16Array` type where TypeScript's `lib` has it
 * (ES2025 or later, "DOM"), else Float16ArrayLike.
 */
export type Float16ArrayOf = typeof globalThis extends { Float16Array: abstract new (...args: never[]) => infer A } ? A : Float16ArrayLike;

function storageFromValues(t: DType, values: ArrayLike<unknown>): Storage {
  const n = values.length;
  const out = allocateStorage(t, n);
  const bad = (i: number, why: string): never => {
    throw new TensorcastError("INVALID_VALUE", `value ${i} (${describe(values[i])}) ${why}`);
  };
  switch (t.kind) {
    case "string": {
      const s = out as string[];
      for (let i = 0; i < n; i++) {
        const v = values[i];
        if (typeof v !== "string") bad(i, "is not a string");
        s[i] = v as string;
      }
      return s;
    }
    case "complex": {
      const c = out as Float32Array | Float64Array;
      for (let i = 0; i < n; i++) {
        const v = values[i];
        if (!Array.isArray(v) || v.length !== 2 || typeof v[0] !== "number" || typeof v[1] !== "number") {
          bad(i, `is not a [re, im] pair of numbers for ${t.name}`);
        }
        const pair = v as [number, number];
        c[2 * i] = pair[0];
        c[2 * i + 1] = pair[1];
      }
      return c;
    }
    case "bool": {
      const b = out as Uint8Array;
      for (let i = 0; i < n; i++) {
        const v = values[i];
        if (v === true || v === 1) b[i] = 1;
        else if (v === false || v === 0) b[i] = 0;
        else bad(i, "is not a boolean (or 0 / 1) for bool");
      }
      return b;
    }
    case "float": {
      const f64 = allocate(() => new Float64Array(n), FLOAT64, n);
      for (let i = 0; i < n; i++) {
        const v = values[i];
        if (typeof v !== "number") bad(i, `is not a number for ${t.name}`);
        f64[i] = v as number;
      }
      if (t.array === "Float64Array") return f64;
      convert(f64, FLOAT64, out, t, n, { saturate: false, roundMode: "nearest" });
      const back = allocate(() => new Float64Array(n), FLOAT64, n);
      convert(out, t, back, FLOAT64, n, { saturate: false, roundMode: "nearest" });
      for (let i = 0; i < n; i++) {
        const why = lostValue(t, f64[i], back[i]);
        if (why) bad(i, `${why}; cast() from float64 converts with saturation instead`);
      }
      return out;
    }
    case "int":
    case "uint": {
      const min = t.min!;
      const max = t.max!;
      if (t.bits === 64) {
        const w = out as BigInt64Array | BigUint64Array;
        for (let i = 0; i < n; i++) {
          const v = values[i];
          let b: bigint;
          if (typeof v === "bigint") b = v;
          else if (typeof v === "number" && Number.isSafeInteger(v)) b = BigInt(v);
          else b = bad(i, `is not a bigint or safe integer for ${t.name}`);
          if (b < (min as bigint) || b > (max as bigint)) bad(i, `is outside ${t.name}'s range [${min}, ${max}]`);
          w[i] = b;
        }
        return w;
      }
      const f64 = allocate(() => new Float64Array(n), FLOAT64, n);
      for (let i = 0; i < n; i++) {
        const v = values[i];
        if (typeof v !== "number" || !Number.isInteger(v)) bad(i, `is not an integer for ${t.name}`);
        if ((v as number) < (min as number) || (v as number) > (max as number)) {
          bad(i, `is outside ${t.name}'s range [${min}, ${max}]`);
        }
        f64[i] = v as number;
      }
      // In range, so float -> int truncation is exact here.
      convert(f64, FLOAT64, out, t, n, { saturate: true, roundMode: "up" });
      return out;
    }
  }
}

/**
 * Why storing `x` as `t` (which gave `y`) is not a rounding of `x`: a finite value that overflows a
 * type without infinities, a NaN or infinity the type cannot hold, or an e8m0 value out of its range.
 */
function lostValue(t: DType, x: number, y: number): string | undefined {
  if (x !== x) return y !== y ? undefined : `cannot be stored: ${t.name} has no NaN`;
  if (!Number.isFinite(x)) return y === x ? undefined : `cannot be stored: ${t.name} has no infinity`;
  if (y !== y) return `is outside ${t.name}'s range [${t.min}, ${t.max}]`;
  const f = t.format;
  if (f?.overflow === "clamp" && roundsPastMax(f, Math.abs(x))) return `is outside ${t.name}'s range [${t.min}, ${t.max}]`;
  return undefined;
}

// `using y = cast(...)` calls [Symbol.dispose]; the symbol exists on Node 20+ and current browsers
// (lib ES2022 does not declare it, so it is attached here rather than in the class body).
const disposeSymbol = (Symbol as { readonly dispose?: symbol }).dispose;
if (disposeSymbol) {
  Object.defineProperty(Tensor.prototype, disposeSymbol, {
    value(this: Tensor): void { this.dispose(); }, writable: true, configurable: true,
  });
}
