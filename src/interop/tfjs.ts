/**
 * TensorFlow.js tensors, duck-typed: anything with `dtype`, `shape` and `dataSync()` in, and the
 * `{ values, shape, dtype }` that `tf.tensor(values, shape, dtype)` takes out. Nothing here imports
 * tfjs.
 *
 * tfjs has five dtypes; each maps to the tensorcast type of the same name:
 * | tfjs        | tensorcast | dataSync() gives                       |
 * | float32     | float32    | Float32Array                           |
 * | int32       | int32      | Int32Array                             |
 * | bool        | bool       | Uint8Array of 0 / 1                    |
 * | complex64   | complex64  | Float32Array, (re, im) interleaved     |
 * | string      | string     | string[] (tfjs decodes its UTF-8 bytes) |
 */
import { describe, expectObject } from "../args.js";
import { TensorcastError } from "../errors.js";
import type { DTypeName } from "../dtype/table.js";
import { expectTensor, shapeSize, shapeText, Tensor } from "../tensor.js";

/** TensorFlow.js's data types. */
export type TfjsDType = "float32" | "int32" | "bool" | "complex64" | "string";

/**
 * Every `TfjsDType`.
 * @example TFJS_DTYPES.includes(t.dtype.name as TfjsDType) // whether toTfjs(t) takes t
 */
export const TFJS_DTYPES: readonly TfjsDType[] = Object.freeze(["float32", "int32", "bool", "complex64", "string"] as const);

/** What `fromTfjs` reads: a tfjs `Tensor`, or any object with these members. */
export interface TfjsTensorLike {
  readonly dtype: string;
  readonly shape: readonly number[];
  dataSync(): unknown;
  readonly isDisposed?: boolean;
}

/**
 * What `toTfjs` returns. For float32, int32, bool and string: `tf.tensor(values, shape, dtype)`.
 * For complex64, which `tf.tensor` refuses to build: `tf.complex(tf.tensor(real, shape), tf.tensor(imag, shape))`.
 */
export type TfjsData =
  | { values: Float32Array; shape: number[]; dtype: "float32" }
  | { values: Int32Array; shape: number[]; dtype: "int32" }
  | { values: Uint8Array; shape: number[]; dtype: "bool" }
  | { values: string[]; shape: number[]; dtype: "string" }
  | { real: Float32Array; imag: Float32Array; shape: number[]; dtype: "complex64" };

/**
 * A tensorcast Tensor of a tfjs tensor's values (`x.dataSync()`), with the same dtype name and
 * shape. A typed array from `dataSync()` of the right kind is shared, not copied: with tfjs's CPU
 * backend that is the tfjs tensor's own storage, so do not write to the result (cast it, which
 * makes a new tensor). Plain arrays are copied and checked as `Tensor.fromValues` checks them
 * (numbers for float32, integers in int32's range, booleans or 0 / 1 for bool, 2 * size numbers
 * for complex64); string elements may also be UTF-8 bytes (what `x.bytes()` gives), decoded.
 *
 * @example
 * fromTfjs(tf.tensor([1.5, -2], [2])).toValues();   // [1.5, -2]
 * fromTfjs({ dtype: "bool", shape: [3], dataSync: () => [1, 0, 1] }).toValues(); // [true, false, true]
 * @throws TensorcastError UNSUPPORTED_TYPE for a dtype tfjs does not have; INVALID_DATA for a
 *   disposed tensor, a `dataSync` that is missing or throws, or data of the wrong kind;
 *   SHAPE_MISMATCH when the shape and the data's length disagree.
 */
export function fromTfjs(x: TfjsTensorLike): Tensor {
  expectObject(x, "fromTfjs's input");
  const type = x.dtype;
  if (typeof type !== "string" || !(TFJS_DTYPES as readonly string[]).includes(type)) {
    throw new TensorcastError("UNSUPPORTED_TYPE", `fromTfjs: tfjs dtype ${describe(type)} is not one of ${TFJS_DTYPES.join(", ")}`);
  }
  const shape = x.shape;
  if (!Array.isArray(shape)) throw new TensorcastError("INVALID_SHAPE", `fromTfjs: shape must be an array of dimensions, got ${describe(shape)}`);
  const size = shapeSize(shape);
  if (x.isDisposed === true) throw new TensorcastError("INVALID_DATA", "fromTfjs: the tfjs tensor is disposed");
  if (typeof x.dataSync !== "function") throw new TensorcastError("INVALID_DATA", `fromTfjs: dataSync must be a function, got ${describe(x.dataSync)}`);
  let data: unknown;
  try {
    data = x.dataSync();
  } catch (e) {
    throw new TensorcastError("INVALID_DATA", `fromTfjs: dataSync() threw: ${e instanceof Error ? e.message : String(e)}`);
  }
  const name = type as TfjsDType & DTypeName;
  const typed = TYPED[name];
  if (typed !== undefined && data instanceof typed.ctor) return Tensor.fromStorage(data as Float32Array, name, shape);
  if (!Array.isArray(data)) {
    const want = typed ? `a ${typed.ctor.name} or an Array` : "an Array of strings";
    throw new TensorcastError("INVALID_DATA", `fromTfjs: dataSync() of a ${type} tensor must give ${want}, got ${describe(data)}`);
  }
  if (name === "string") return Tensor.fromStorage(data.map(decode), "string", shape);
  if (name === "complex64") {
    if (data.length !== 2 * size) {
      throw new TensorcastError("SHAPE_MISMATCH", `fromTfjs: shape ${shapeText(shape)} of complex64 needs ${2 * size} interleaved numbers, got ${data.length}`);
    }
    const pairs: [number, number][] = [];
    for (let i = 0; i < size; i++) pairs.push([data[2 * i] as number, data[2 * i + 1] as number]);
    return Tensor.fromValues(pairs, "complex64", shape);
  }
  return Tensor.fromValues(data as number[], name, shape);
}

const TYPED: Partial<Record<TfjsDType, { ctor: typeof Float32Array | typeof Int32Array | typeof Uint8Array }>> = {
  float32: { ctor: Float32Array }, int32: { ctor: Int32Array }, bool: { ctor: Uint8Array }, complex64: { ctor: Float32Array },
};

// ES2022's lib has no TextDecoder type (the global exists on every runtime tensorcast supports);
// see src/io/onnx/wire.ts. ignoreBOM: a leading U+FEFF is part of the string, not a marker to drop.
interface Utf8Decoder {
  decode(input: Uint8Array): string;
}
declare const TextDecoder: new (label: string, options: { fatal: boolean; ignoreBOM: boolean }) => Utf8Decoder;
let utf8: Utf8Decoder | undefined;

function decode(s: unknown, i: number): string {
  if (typeof s === "string") return s;
  if (s instanceof Uint8Array) {
    try {
      utf8 ??= new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
      return utf8.decode(s);
    } catch {
      throw new TensorcastError("INVALID_DATA", `fromTfjs: string element ${i} is ${s.length} bytes that are not UTF-8`);
    }
  }
  throw new TensorcastError("INVALID_DATA", `fromTfjs: string element ${i} is ${describe(s)}, not a string or UTF-8 bytes`);
}

/**
 * The `{ values, shape, dtype }` of a tensorcast Tensor for `tf.tensor(values, shape, dtype)`,
 * sharing its storage where tfjs takes it as it is (float32, int32, bool of 0 / 1 bytes, strings).
 * complex64 gives `{ real, imag, shape, dtype }` (copies) for `tf.complex`.
 *
 * Only the five types tfjs has are accepted: anything else is an UNSUPPORTED_TYPE error naming the
 * cast to make first, and whether it is exact (int8, uint8, int16, uint16, float16, bfloat16 and
 * the float8/float4/float6 types fit exactly in int32 or float32; float64, int64, uint32 and
 * uint64 do not: casting them rounds or wraps, so tensorcast leaves that choice to the caller).
 *
 * @example
 * const { values, shape, dtype } = toTfjs(Tensor.fromValues([1, 2], "int32"));
 * tf.tensor(values, shape, dtype);                   // int32 [1, 2]
 * toTfjs(cast(Tensor.fromValues([0.5], "bfloat16"), "float32")).values; // Float32Array [0.5]
 * @throws TensorcastError UNSUPPORTED_TYPE for the types above.
 */
export function toTfjs(t: Tensor): TfjsData {
  expectTensor(t, "toTfjs's input");
  const shape = t.shape.slice();
  switch (t.dtype.name) {
    case "float32": return { values: t.data as Float32Array, shape, dtype: "float32" };
    case "int32": return { values: t.data as Int32Array, shape, dtype: "int32" };
    case "string": return { values: t.data as string[], shape, dtype: "string" };
    case "bool": {
      const bytes = t.data as Uint8Array;
      // tfjs keeps a bool tensor's bytes as given; a 2 (from onnxruntime, say) would stay a 2.
      return { values: bytes.every((b) => b <= 1) ? bytes : bytes.map((b) => (b === 0 ? 0 : 1)), shape, dtype: "bool" };
    }
    case "complex64": {
      const c = t.data as Float32Array;
      const real = new Float32Array(t.size);
      const imag = new Float32Array(t.size);
      for (let i = 0; i < t.size; i++) {
        real[i] = c[2 * i];
        imag[i] = c[2 * i + 1];
      }
      return { real, imag, shape, dtype: "complex64" };
    }
    default:
      throw new TensorcastError(
        "UNSUPPORTED_TYPE",
        `toTfjs: tfjs has no ${t.dtype.name} dtype; it has ${TFJS_DTYPES.join(", ")}. ${tfjsAdvice(t.dtype.name)}`,
      );
  }
}

function tfjsAdvice(name: DTypeName): string {
  switch (name) {
    case "int8": case "uint8": case "int16": case "uint16": case "int4": case "uint4": case "int2": case "uint2":
      return `cast(t, "int32") first: exact`;
    case "float16": case "bfloat16": case "float8e4m3fn": case "float8e4m3fnuz": case "float8e5m2": case "float8e5m2fnuz":
    case "float8e8m0": case "float4e2m1": case "float6e2m3": case "float6e3m2":
      return `cast(t, "float32") first: exact`;
    case "float64": return `cast(t, "float32") first: it rounds to nearest even, and values beyond float32's range become +/-Infinity`;
    case "complex128": return "tfjs has only complex64, and Cast does not convert complex types: build it from the real and imaginary parts, each cast to float32";
    default: return `cast(t, "int32") wraps values outside int32's range (keeps the low 32 bits) and cast(t, "float32") rounds them; choose which first`;
  }
}
