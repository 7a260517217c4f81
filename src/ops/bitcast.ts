/**
 * Bitcast: the same bytes read as another type, never a value conversion. Two rule sets:
 * TensorFlow's `tf.bitcast` (the default) and ONNX BitCast-26. Both read the bytes as
 * little-endian on every platform and share the input's memory wherever the bytes allow.
 */
import { describe } from "../args.js";
import { TensorcastError } from "../errors.js";
import { dtype, type DType, type DTypeLike, type DTypeName, type Storage, type StorageOf } from "../dtype/table.js";
import { expectStorage, storageLength, Tensor, TYPED_ARRAYS, type TypedArrayCtor } from "../tensor.js";

/** Whose rules: TensorFlow's `tf.bitcast`, or ONNX BitCast-26. */
export type BitcastSemantics = "tensorflow" | "onnx";

export interface BitcastOptions {
  /**
   * "tensorflow" (the default): `tf.bitcast`, where the byte-size ratio adds or removes a last
   * dimension. "onnx": BitCast-26, equal bit widths only, shape unchanged.
   */
  semantics?: BitcastSemantics;
  /** With `semantics: "onnx"` only: the model opset; BitCast exists from 26. Default: 26 or later. */
  opset?: number;
}

/** A storage backed by a typed array (every type but string). */
type TypedStorage = Exclude<Storage, string[]>;
/**
 * The types `tf.bitcast` accepts, less its quantized types, which tensorcast does not have. It refuses
 * bool, string, every float8 (e8m0 included) and every sub-byte type.
 */
const TENSORFLOW_TYPES: ReadonlySet<DTypeName> = new Set<DTypeName>([
  "bfloat16", "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
  "uint64", "complex64", "complex128",
]);

/** BitCast-26 is the only version. */
const BITCAST_VERSION = 26;
const OPTION_KEYS = new Set(["semantics", "opset"]);
const SEMANTICS: readonly BitcastSemantics[] = ["tensorflow", "onnx"];

/** Whether this platform stores typed-array elements little-endian (every mainstream one does). */
const LITTLE_ENDIAN_HOST = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * Reinterprets the bytes of `x` as the type `to`, without converting any value: NaN payloads, -0,
 * padding bits and bool bytes other than 0 / 1 pass through untouched.
 *
 * TensorFlow semantics (the default; `tf.bitcast` exactly). With `in` and `out` the byte sizes:
 * - `in == out`: the shape is kept (`int8 [-1]` as uint8 is `[255]`).
 * - `in > out`: a last dimension of size `in / out` is appended, for every rank, scalars and empty
 *   tensors included: float32 `[3]` to uint8 is `[3, 4]`, element j holding byte j (least
 *   significant first); `[3, 0]` becomes `[3, 0, 4]`; a scalar becomes `[in / out]`.
 * - `in < out`: the last dimension must equal `out / in` exactly (a multiple is not enough, and a
 *   scalar has none) and is removed: int8 `[4, 4]` to int32 is `[4]`, uint8 `[8]` to uint64 is a
 *   scalar, int8 `[0, 4]` to int32 is `[0]`, while int8 `[6]` to int16 and `[4, 0]` to int32 fail.
 * - complex is a (re, im) pair, real first: complex64 `1+2j` is float32 `[1, 2]`.
 * - bool, string, the float8 types (e8m0 too) and the sub-byte types are refused, as TensorFlow
 *   refuses them; ONNX semantics accept all of them but string.
 *
 * ONNX semantics (`{ semantics: "onnx" }`, BitCast-26): the two types must have the same bit width
 * (complex64 counts 64 bits, bool 8, int4/uint4/float4e2m1 4, int2/uint2 2, float6 6) and the shape
 * never changes. Every type but string is accepted, bool, float8, e8m0 and the sub-byte types
 * included: int4 -1 is uint4 15, float4e2m1 -6 is int4 -1, a uint8 2 is a bool that reads as true
 * (and is 2 again when cast back). Needs opset 26 or later.
 *
 * Zero copy: the result's storage is a view of the input's `ArrayBuffer` (the same typed array when
 * both types use the same container), so writing to one is seen by the other. The bytes are copied
 * only when they must be: when the input's byte offset is not a multiple of the target element
 * size (a uint8 view at an odd offset read as int32), and, on a big-endian host, when the element
 * sizes differ (the bytes are then rearranged so the answer is the little-endian one).
 *
 * @example bitcast(Tensor.fromValues([0, 1, 1], "float32"), "uint8").toValues()
 *          // [0, 0, 0, 0, 0, 0, 128, 63, 0, 0, 128, 63], shape [3, 4]
 * @example bitcast(Tensor.fromValues([-1, -128, 127], "int8"), "uint8", { semantics: "onnx" }).toValues()
 *          // [255, 128, 127]
 * @example bitcast(Tensor.fromValues([1, 2, 3], "float32"), "complex128")
 *          // TensorcastError SHAPE_MISMATCH: cannot bitcast from float32 to complex128: shape [3];
 *          // an upcast from 4 to 16 bytes needs a last dimension of exactly 4, got 3
 * @throws TensorcastError UNSUPPORTED_TYPE for a type the semantics refuse, or (ONNX) two widths
 *         that differ; SHAPE_MISMATCH when (TensorFlow) an upcast's last dimension is not the ratio
 *         or the input is a scalar; INVALID_OPSET for ONNX below opset 26; INVALID_ATTRIBUTE for an
 *         unknown or malformed option; UNKNOWN_DTYPE for an unknown `to`.
 */
export function bitcast<N extends DTypeName>(x: Tensor, to: DTypeLike<N>, opts: BitcastOptions = {}): Tensor<N> {
  const semantics = checkOptions(opts);
  if (!(x instanceof Tensor)) {
    throw new TensorcastError("INVALID_DATA", `bitcast expects a Tensor as input, got ${typeof x}`);
  }
  expectStorage(x, "bitcast's input");
  const target = dtype(to);
  const shape = semantics === "onnx" ? onnxShape(x, target) : tensorflowShape(x, target);
  const size = shape.reduce((a, b) => a * b, 1);
  const data = reinterpret(x.data as TypedStorage, target, storageLength(target, size));
  return Tensor.fromStorage(data as StorageOf<N>, target, shape);
}

/** `tf.bitcast`'s shape rule, after its type check. */
function tensorflowShape(x: Tensor, to: DType): number[] {
  const from = x.dtype;
  const prefix = `cannot bitcast from ${from.name} to ${to.name}: shape [${x.shape.join(", ")}];`;
  for (const t of [from, to]) {
    if (TENSORFLOW_TYPES.has(t.name)) continue;
    const why = t.kind === "string" ? `${t.name} has no fixed byte size` : `tf.bitcast does not accept ${t.name}`;
    const onnx = t.kind === "string" ? "" : `; ONNX BitCast-26 ({ semantics: "onnx" }) accepts it between types of equal width`;
    throw new TensorcastError(
      "UNSUPPORTED_TYPE",
      `${prefix} ${why} (it accepts ${[...TENSORFLOW_TYPES].join(", ")})${onnx}`,
    );
  }
  const a = from.bits / 8;
  const b = to.bits / 8;
  if (a === b) return x.shape.slice();
  if (a > b) return [...x.shape, a / b];
  const ratio = b / a;
  const rule = `an upcast from ${a} to ${b} bytes needs a last dimension of exactly ${ratio}`;
  if (x.shape.length === 0) {
    throw new TensorcastError("SHAPE_MISMATCH", `${prefix} ${rule}, and a scalar has no dimension`);
  }
  const last = x.shape[x.shape.length - 1];
  if (last !== ratio) {
    throw new TensorcastError("SHAPE_MISMATCH", `${prefix} ${rule}, got ${last}`);
  }
  return x.shape.slice(0, -1);
}

/** BitCast-26's rules: no string, equal bit widths, the shape unchanged. */
function onnxShape(x: Tensor, to: DType): number[] {
  const from = x.dtype;
  const prefix = `cannot bitcast from ${from.name} to ${to.name}: shape [${x.shape.join(", ")}];`;
  for (const t of [from, to]) {
    if (t.kind === "string") {
      throw new TensorcastError(
        "UNSUPPORTED_TYPE",
        `${prefix} BitCast-${BITCAST_VERSION} does not accept string, which has no fixed bit width`,
      );
    }
  }
  if (from.bits !== to.bits) {
    throw new TensorcastError(
      "UNSUPPORTED_TYPE",
      `${prefix} BitCast-${BITCAST_VERSION} requires input and output types to have the same bit-width, ` +
        `but ${from.name} has ${from.bits} bits and ${to.name} has ${to.bits} bits ` +
        `(tf.bitcast, the default semantics, changes the shape instead)`,
    );
  }
  return x.shape.slice();
}

/**
 * `length` elements of the container `to` uses, holding the bytes of `src`: `src` itself when the
 * container is the same, a view of its buffer when that is aligned, a copy otherwise.
 */
function reinterpret(src: TypedStorage, to: DType, length: number): TypedStorage {
  if (to.array === "Array") throw new Error("unreachable: string targets are refused before");
  const ctor = TYPED_ARRAYS[to.array];
  if (src instanceof ctor) return src;
  const bpe = ctor.BYTES_PER_ELEMENT;
  const sameOrder = LITTLE_ENDIAN_HOST || bpe === src.BYTES_PER_ELEMENT;
  if (!sameOrder) return copyLittleEndian(src, ctor, length);
  if (src.byteOffset % bpe === 0) return new ctor(src.buffer, src.byteOffset, length);
  // Misaligned for the target element: copy the bytes to a fresh (aligned) buffer.
  const copy = new Uint8Array(new Uint8Array(src.buffer, src.byteOffset, src.byteLength));
  return new ctor(copy.buffer, 0, length);
}

/**
 * A new `ctor` storage of `length` elements whose little-endian bytes are the little-endian bytes of
 * `src`'s elements, on any host. Elements move as unsigned integers, so NaN payloads survive. The
 * big-endian path of `bitcast`; exported for its tests, which run on little-endian hosts, where it
 * must agree with a view.
 * @internal
 */
export function copyLittleEndian(src: TypedStorage, ctor: TypedArrayCtor, length: number): TypedStorage {
  const bytes = new DataView(new ArrayBuffer(src.byteLength));
  const from = unsignedView(src);
  for (let i = 0; i < from.length; i++) writeLittleEndian(bytes, i, from);
  const out = new ctor(length);
  const into = unsignedView(out);
  for (let i = 0; i < into.length; i++) readLittleEndian(bytes, i, into);
  return out;
}

type UnsignedView = Uint8Array | Uint16Array | Uint32Array | BigUint64Array;

/** The same elements as unsigned integers of the same size. */
function unsignedView(a: TypedStorage): UnsignedView {
  switch (a.BYTES_PER_ELEMENT) {
    case 1: return new Uint8Array(a.buffer, a.byteOffset, a.length);
    case 2: return new Uint16Array(a.buffer, a.byteOffset, a.length);
    case 4: return new Uint32Array(a.buffer, a.byteOffset, a.length);
    default: return new BigUint64Array(a.buffer, a.byteOffset, a.length);
  }
}

function writeLittleEndian(bytes: DataView, i: number, from: UnsignedView): void {
  if (from instanceof Uint8Array) bytes.setUint8(i, from[i]);
  else if (from instanceof Uint16Array) bytes.setUint16(2 * i, from[i], true);
  else if (from instanceof Uint32Array) bytes.setUint32(4 * i, from[i], true);
  else bytes.setBigUint64(8 * i, from[i], true);
}

function readLittleEndian(bytes: DataView, i: number, into: UnsignedView): void {
  if (into instanceof Uint8Array) into[i] = bytes.getUint8(i);
  else if (into instanceof Uint16Array) into[i] = bytes.getUint16(2 * i, true);
  else if (into instanceof Uint32Array) into[i] = bytes.getUint32(4 * i, true);
  else into[i] = bytes.getBigUint64(8 * i, true);
}

function checkOptions(opts: BitcastOptions): BitcastSemantics {
  if (typeof opts !== "object" || opts === null) {
    throw new TensorcastError("INVALID_ATTRIBUTE", `options must be an object, got ${describe(opts)}`);
  }
  for (const key of Object.keys(opts)) {
    if (!OPTION_KEYS.has(key)) {
      throw new TensorcastError("INVALID_ATTRIBUTE", `unknown option "${key}"; bitcast accepts ${[...OPTION_KEYS].join(", ")}`);
    }
  }
  const semantics = opts.semantics ?? "tensorflow";
  if (!SEMANTICS.includes(semantics)) {
    throw new TensorcastError(
      "INVALID_ATTRIBUTE",
      `semantics must be one of ${SEMANTICS.join(", ")}; got ${JSON.stringify(opts.semantics)}`,
    );
  }
  if (opts.opset !== undefined) {
    if (semantics !== "onnx") {
      throw new TensorcastError(
        "INVALID_ATTRIBUTE",
        `opset applies to ONNX BitCast only; tf.bitcast has no versions (pass { semantics: "onnx", opset })`,
      );
    }
    if (!Number.isInteger(opts.opset) || opts.opset < BITCAST_VERSION) {
      throw new TensorcastError(
        "INVALID_OPSET",
        `BitCast does not exist at opset ${String(opts.opset)}; its only version is ${BITCAST_VERSION}`,
      );
    }
  }
  return semantics;
}
