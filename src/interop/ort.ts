/**
 * onnxruntime-web / onnxruntime-node tensors, duck-typed: any `{ type, data, dims }` in, and the
 * same shape (or a `Tensor` made by the constructor the caller passes) out. Nothing here imports
 * onnxruntime, so a page that never loads it pays nothing.
 *
 * onnxruntime-common 1.30's conventions (lib/tensor.ts, tensor-impl-type-mapping.ts), which
 * tensorcast's storage already follows for every type both have, so both directions share memory:
 * - 15 type names, all spelled as tensorcast spells them: float32, uint8, int8, uint16, int16,
 *   int32, int64, string, bool, float16, float64, uint32, uint64, uint4, int4. No bfloat16, no
 *   float8, no complex: onnxruntime's JS API has no name for them.
 * - bool is a Uint8Array; int64 / uint64 are BigInt64Array / BigUint64Array.
 * - float16 is a Uint16Array of bit patterns, or a Float16Array where the platform has one
 *   (onnxruntime-common wraps a Uint16Array in a Float16Array itself on Node 24+).
 * - int4 / uint4 are packed two per byte, element 0 in the low nibble (ONNX's order), so N
 *   elements take ceil(N / 2) bytes and the last byte's high nibble is padding when N is odd.
 *   onnxruntime-common's constructor wants a Uint8Array for both; its type declaration says
 *   Int8Array for int4, so either is read.
 */
import { describe, expectObject } from "../args.js";
import { TensorcastError } from "../errors.js";
import { dtype, type DTypeName, type StorageOf } from "../dtype/table.js";
import { expectTensor, isFloat16Array, shapeSize, shapeText, Tensor, TYPED_ARRAYS } from "../tensor.js";

/** The type names of onnxruntime's JS tensors (onnxruntime-common's `Tensor.Type`). */
export type OrtTypeName =
  | "float32" | "uint8" | "int8" | "uint16" | "int16" | "int32" | "int64" | "string" | "bool"
  | "float16" | "float64" | "uint32" | "uint64" | "uint4" | "int4";

/**
 * Every `OrtTypeName`, in onnxruntime-common's order.
 * @example ORT_TYPES.includes(t.dtype.name as OrtTypeName) // whether toOrt(t) takes t
 */
export const ORT_TYPES: readonly OrtTypeName[] = Object.freeze([
  "float32", "uint8", "int8", "uint16", "int16", "int32", "int64", "string", "bool",
  "float16", "float64", "uint32", "uint64", "uint4", "int4",
] as const);

/** The storage of each type as onnxruntime holds it (and as `toOrt` hands it over). */
export type OrtData = StorageOf<OrtTypeName>;

/**
 * What `toOrt` returns without a constructor: onnxruntime's CPU tensor fields. onnxruntime-node's
 * `session.run` takes it as a feed as it is (its binding reads these four fields).
 */
export interface OrtTensorData<T extends OrtTypeName = OrtTypeName> {
  type: T;
  data: StorageOf<T>;
  dims: number[];
  location: "cpu";
}

/** What `fromOrt` reads: an onnxruntime `Tensor`, or any object with these fields. */
export interface OrtTensorLike {
  readonly type: string;
  readonly dims: readonly number[];
  /** Read only when `location` is absent, "cpu" or "cpu-pinned". */
  readonly data?: unknown;
  readonly location?: string;
}

/** A constructor called as onnxruntime's `Tensor` is: `new Tensor(type, data, dims)`. */
export type OrtTensorConstructor<R> = new (type: OrtTypeName, data: OrtData, dims: readonly number[]) => R;

const CONTAINERS: Readonly<Record<OrtTypeName, string>> = {
  float32: "Float32Array", uint8: "Uint8Array", int8: "Int8Array", uint16: "Uint16Array", int16: "Int16Array",
  int32: "Int32Array", int64: "BigInt64Array", string: "Array of strings", bool: "Uint8Array",
  float16: "Uint16Array or Float16Array", float64: "Float64Array", uint32: "Uint32Array",
  uint64: "BigUint64Array", uint4: "Uint8Array (packed)", int4: "Uint8Array or Int8Array (packed)",
};

function isOrtType(x: unknown): x is OrtTypeName {
  return typeof x === "string" && (ORT_TYPES as readonly string[]).includes(x);
}

/**
 * A tensorcast Tensor over an onnxruntime tensor's data (an onnxruntime-web or onnxruntime-node
 * `Tensor`, or any `{ type, dims, data }`). It never copies: the Tensor shares the data's memory
 * (a Float16Array is viewed as its Uint16Array bit patterns, an Int8Array of int4 as a Uint8Array,
 * a string array is used as it is), so writing to either changes both.
 * - bool bytes pass through as they are (onnxruntime keeps a 2 as 2; every tensorcast operation reads
 *   nonzero as true).
 * - int4 / uint4 need ceil(N / 2) bytes, element 0 in the low nibble; the padding nibble of an odd
 *   count is kept as it is.
 * - A tensor on a GPU (`location` "gpu-buffer", "texture" or "ml-tensor") is an UNSUPPORTED_PLATFORM
 *   error, since reading it is asynchronous: `await t.getData()` first and pass
 *   `{ type: t.type, dims: t.dims, data }`. A disposed tensor (location "none") is INVALID_DATA.
 *
 * @example
 * const out = (await session.run({ x }))["y"];   // onnxruntime Tensor, type "float16"
 * fromOrt(out).toValues();                        // [1, NaN, -Infinity]  (Float16Array or Uint16Array alike)
 * @example fromOrt({ type: "int4", data: new Uint8Array([0xf1, 0x07]), dims: [3] }).toValues(); // [1, -1, 7]
 * @throws TensorcastError UNSUPPORTED_TYPE for a type name onnxruntime does not have; INVALID_DATA for
 *   data in the wrong container; SHAPE_MISMATCH when `dims` and the data's length disagree.
 */
export function fromOrt(x: OrtTensorLike): Tensor {
  expectObject(x, "fromOrt's input");
  const { type, location } = x;
  if (!isOrtType(type)) {
    throw new TensorcastError("UNSUPPORTED_TYPE", `fromOrt: onnxruntime tensor type ${describe(type)} is not one of ${ORT_TYPES.join(", ")}`);
  }
  if (location !== undefined && location !== "cpu" && location !== "cpu-pinned") {
    if (location === "none") throw new TensorcastError("INVALID_DATA", "fromOrt: the onnxruntime tensor was disposed (location \"none\"); it has no data left");
    throw new TensorcastError(
      "UNSUPPORTED_PLATFORM",
      `fromOrt: the ${type} tensor's data is in ${describe(location)}, not in memory; download it first ` +
        "(`const data = await t.getData()`) and pass { type: t.type, dims: t.dims, data }",
    );
  }
  const dims = x.dims;
  if (!Array.isArray(dims)) throw new TensorcastError("INVALID_SHAPE", `fromOrt: dims must be an array of dimensions, got ${describe(dims)}`);
  const size = shapeSize(dims);
  let data: unknown = x.data;
  if (type === "int4" && data instanceof Int8Array) data = new Uint8Array(data.buffer, data.byteOffset, data.length);
  if (!containerFits(type, data)) {
    throw new TensorcastError("INVALID_DATA", `fromOrt: ${type} data must be a ${CONTAINERS[type]}, got ${describe(data)}`);
  }
  const length = (data as ArrayLike<unknown>).length;
  if ((type === "int4" || type === "uint4") && length !== Math.ceil(size / 2)) {
    throw new TensorcastError(
      "SHAPE_MISMATCH",
      `fromOrt: dims ${shapeText(dims)} of ${type} need ${Math.ceil(size / 2)} bytes (two elements per byte, ` +
        `element 0 in the low nibble), got ${length}`,
    );
  }
  // The remaining checks (string elements, lengths) are fromStorage's.
  return Tensor.fromStorage(data as StorageOf<DTypeName>, dtype(type), dims);
}

function containerFits(type: OrtTypeName, data: unknown): boolean {
  if (type === "string") return Array.isArray(data);
  if (type === "float16" && isFloat16Array(data)) return true;
  const array = dtype(type).array;
  return array !== "Array" && data instanceof TYPED_ARRAYS[array];
}

/**
 * onnxruntime's view of a tensorcast Tensor, sharing its storage (no copy). Without `Ctor`, the
 * plain `{ type, data, dims, location: "cpu" }`, which onnxruntime-node's `session.run` takes as a
 * feed. With onnxruntime's `Tensor` class as `Ctor`, `new Ctor(type, data, dims)`.
 *
 * float16 and `Ctor`: on Node 24+ (any platform with `Float16Array`) onnxruntime-common 1.30 wraps
 * the Uint16Array in a Float16Array, and onnxruntime-node 1.30's binding reads a Float16Array as
 * 0 bytes ("not enough space: expected 8, got 0"): a Float16Array works on no Node version. So the
 * tensor's data is set back to the Uint16Array of bit patterns, the type onnxruntime-common
 * declares for float16 (onnxruntime-web's WebAssembly backend copies the bytes whatever the view).
 *
 * Types onnxruntime has no name for (bfloat16, the float8s, float4e2m1, float6s, int2, uint2,
 * complex) are UNSUPPORTED_TYPE errors that say which exact cast to make first.
 *
 * @example
 * import * as ort from "onnxruntime-node";
 * const x = Tensor.fromValues([1, NaN, -Infinity], "float16");
 * const feeds = { x: toOrt(x, ort.Tensor) };      // ort.Tensor, data a Uint16Array on every Node
 * toOrt(Tensor.fromValues([1, -1, 7], "int4"));    // { type: "int4", data: Uint8Array [0xf1, 0x07], dims: [3], location: "cpu" }
 * @throws TensorcastError UNSUPPORTED_TYPE as above; INVALID_ATTRIBUTE when `Ctor` is not a
 *   function; INVALID_DATA when `Ctor` throws (its message is kept).
 */
export function toOrt(t: Tensor): OrtTensorData;
export function toOrt<R>(t: Tensor, Ctor: OrtTensorConstructor<R>): R;
export function toOrt<R>(t: Tensor, Ctor?: OrtTensorConstructor<R>): OrtTensorData | R {
  expectTensor(t, "toOrt's input");
  const name = t.dtype.name;
  if (!isOrtType(name)) {
    throw new TensorcastError(
      "UNSUPPORTED_TYPE",
      `toOrt: onnxruntime has no tensor type for ${name}; it has ${ORT_TYPES.join(", ")}. ${castAdvice(name)}`,
    );
  }
  const data = t.data as OrtData;
  const dims = t.shape.slice();
  if (Ctor === undefined) return { type: name, data, dims, location: "cpu" };
  if (typeof Ctor !== "function") {
    throw new TensorcastError("INVALID_ATTRIBUTE", `toOrt: the second argument must be onnxruntime's Tensor class, got ${describe(Ctor)}`);
  }
  let out: R;
  try {
    out = new Ctor(name, data, dims);
  } catch (e) {
    throw new TensorcastError("INVALID_DATA", `toOrt: new ${Ctor.name || "Ctor"}("${name}", ...) threw: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (name === "float16") keepBitPatterns(out as object, data as Uint16Array);
  return out;
}

/**
 * Puts the Uint16Array back where onnxruntime-common put a Float16Array over it. `cpuData` is the
 * field onnxruntime-common 1.30's Tensor keeps its data in (its `data` getter returns it, and
 * `dispose()` clears it); if a later version renames it, an own `data` property does the same job.
 */
function keepBitPatterns(out: object, bits: Uint16Array): void {
  const o = out as { data?: unknown; cpuData?: unknown };
  if (o.data instanceof Uint16Array) return;
  if (Object.prototype.hasOwnProperty.call(o, "cpuData")) o.cpuData = bits;
  if (o.data !== bits) Object.defineProperty(o, "data", { value: bits, configurable: true, enumerable: false, writable: false });
}

/** The exact cast that makes `name` something onnxruntime takes, or why there is none. */
function castAdvice(name: DTypeName): string {
  switch (name) {
    case "bfloat16": case "float8e4m3fn": case "float8e4m3fnuz": case "float8e5m2": case "float8e5m2fnuz":
    case "float8e8m0": case "float4e2m1": case "float6e2m3": case "float6e3m2":
      return `cast(t, "float32") first: every ${name} value is exact in float32`;
    case "int2": return "cast(t, \"int8\") (or \"int4\") first: exact";
    case "uint2": return "cast(t, \"uint8\") (or \"uint4\") first: exact";
    default: return "onnxruntime's JavaScript API has no complex tensors: pass the real and imaginary parts as two float tensors";
  }
}
