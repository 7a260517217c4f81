/**
 * Reshape: the same elements in the same row-major order under a new shape, for every ONNX version
 * (1, 5, 13, 14, 19, 21, 23, 24, 25). The result shares the input's storage: nothing is copied.
 */
import { TensorcastError } from "../errors.js";
import type { DTypeName, StorageOf } from "../dtype/table.js";
import { expectStorage, shapeSize, Tensor } from "../tensor.js";
import { operatorVersion, RESHAPE_VERSIONS, type OperatorVersion } from "./opsets.js";

/**
 * The requested shape: a list of numbers or bigints, or (Reshape-5 onward) a 1-D int64 tensor, as
 * ONNX's second input is. Each entry is a dimension, 0 (copy the input's dimension, or a real zero
 * with `allowzero`) or -1 (inferred).
 */
export type ShapeLike = readonly (number | bigint)[] | Tensor;

export interface ReshapeOptions {
  /**
   * Reshape-14+: a 0 in `shape` is a real zero-sized dimension (true) instead of a copy of the
   * input's dimension at that position (false, the default). Versions before 14 have no such
   * attribute, so giving it at all (even `false`) with an older opset is an INVALID_ATTRIBUTE error.
   */
  allowzero?: boolean;
  /** The model opset whose Reshape version applies. Default 25, the newest Reshape. */
  opset?: number;
}

const OPTION_KEYS = new Set(["allowzero", "opset"]);

/** The newest Reshape version: 25 (later opsets keep it). */
export const LATEST_RESHAPE = RESHAPE_VERSIONS[RESHAPE_VERSIONS.length - 1].version;

/**
 * The Reshape version a model at `opset` runs: the newest one at or below it.
 * @throws TensorcastError INVALID_OPSET below opset 1 or for a non-integer.
 */
export function reshapeVersion(opset: number): OperatorVersion {
  return operatorVersion("Reshape", opset);
}

/**
 * ONNX Reshape: the elements of `x`, in row-major order, under the shape `shape` describes.
 *
 * Each entry of `shape` is a dimension (>= 0), a 0, or one -1:
 * - 0 copies the input's dimension at the same position (it is an error past the input's rank);
 *   with `allowzero: true` (Reshape-14+) it is a real zero instead.
 * - -1 is inferred so that the element count matches. Only one is allowed; with `allowzero` it may
 *   not appear beside a 0, and it may not be inferred when the other dimensions multiply to 0 (the
 *   answer would not be unique).
 * - An empty shape gives a scalar, which needs exactly one element. Empty tensors reshape like any
 *   other (`[0, 3]` to `[3, -1]` is `[3, 0]`).
 * Every other request is an error naming the input's type and shape, the requested shape and the
 * rule broken. Where onnxruntime is looser than the spec (allowzero with 0 and -1 on an empty
 * input) we follow the spec.
 *
 * Zero copy, always: the result wraps the very same storage (`data`) as `x`, typed array, packed
 * sub-byte bytes or `string[]` alike, so writing to either is seen by both. Clone `data` first if
 * you need an independent tensor.
 *
 * Each version checks its own type list: Reshape-1 takes float16/32/64 only and `shape` as a list
 * (its attribute), never a tensor; 5 adds every IR 3 type; 13 bfloat16; 14 `allowzero`; 19 float8;
 * 21 int4/uint4; 23 float4e2m1; 24 float8e8m0; 25 int2/uint2. No version takes float6.
 *
 * @example reshape(Tensor.fromValues([1, 2, 3, 4, 5, 6], "float32"), [0, -1]).shape  // [6]
 * @example reshape(Tensor.zeros("int8", [2, 3, 4]), [2, 0, 1, -1]).shape             // [2, 3, 1, 4]
 * @example reshape(Tensor.zeros("uint4", [0, 3, 4]), [3, 4, 0], { allowzero: true }).shape // [3, 4, 0]
 * @example reshape(Tensor.zeros("float32", [2, 3]), [4, -1])
 *          // TensorcastError SHAPE_MISMATCH: cannot reshape float32 [2, 3] to [4, -1] (Reshape-25):
 *          // the -1 cannot be inferred: 6 elements are not a multiple of 4, the product of the other dimensions
 * @throws TensorcastError INVALID_SHAPE for a malformed request (an entry below -1 or not an
 *         integer, two -1s, 0 beside -1 under allowzero, a shape tensor that is not 1-D);
 *         SHAPE_MISMATCH when the request does not fit the input (element counts differ, a 0 past
 *         the input's rank, a -1 beside dimensions whose product is 0); UNSUPPORTED_TYPE for a type
 *         the version does not accept or a shape tensor that is not int64; INVALID_ATTRIBUTE for
 *         `allowzero` before Reshape-14, a shape tensor for Reshape-1, or an unknown option;
 *         INVALID_OPSET below opset 1.
 */
export function reshape<N extends DTypeName>(x: Tensor<N>, shape: ShapeLike, opts: ReshapeOptions = {}): Tensor<N> {
  const version = reshapeVersion(checkOptions(opts));
  const name = `Reshape-${version.version}`;
  if (!(x instanceof Tensor)) {
    throw new TensorcastError("INVALID_DATA", `${name} expects a Tensor as input, got ${typeof x}`);
  }
  expectStorage(x, `${name}'s input`);
  if (!version.types.has(x.dtype.name)) {
    throw new TensorcastError(
      "UNSUPPORTED_TYPE",
      `${name} does not accept ${x.dtype.name}; it allows ${[...version.types].join(", ")}`,
    );
  }
  if (opts.allowzero !== undefined && !version.attributes.has("allowzero")) {
    throw new TensorcastError(
      "INVALID_ATTRIBUTE",
      `${name} has no allowzero attribute (it exists from Reshape-14); a 0 in its shape always copies the input's dimension`,
    );
  }
  const { dims: requested, text } = requestedShape(shape, version);
  const dims = resolveShape(x, requested, text, opts.allowzero ?? false, name);
  return Tensor.fromStorage(x.data as StorageOf<N>, x.dtype, dims);
}

/**
 * The shape argument as plain numbers (still holding 0 and -1; NaN for an entry that is not a safe
 * integer), and as the user wrote it, for messages.
 */
function requestedShape(shape: ShapeLike, version: OperatorVersion): { dims: number[]; text: string } {
  const name = `Reshape-${version.version}`;
  if (shape instanceof Tensor) {
    expectStorage(shape, `${name}'s shape`);
    if (version.version < 5) {
      throw new TensorcastError(
        "INVALID_ATTRIBUTE",
        `${name} takes shape as an attribute list (numbers or bigints), not a tensor; shape became an int64 input in Reshape-5`,
      );
    }
    if (shape.dtype.name !== "int64") {
      throw new TensorcastError(
        "UNSUPPORTED_TYPE",
        `${name}'s shape input must be an int64 tensor, got ${shape.dtype.name} [${shape.shape.join(", ")}]`,
      );
    }
    if (shape.shape.length !== 1) {
      throw new TensorcastError(
        "INVALID_SHAPE",
        `${name}'s shape input must be a 1-D int64 tensor, got one of shape [${shape.shape.join(", ")}]`,
      );
    }
    const entries = Array.from(shape.data as BigInt64Array);
    return { dims: entries.map(toDimension), text: `[${entries.join(", ")}]` };
  }
  if (!Array.isArray(shape)) {
    throw new TensorcastError(
      "INVALID_SHAPE",
      `${name} expects shape as an array of numbers or bigints or an int64 tensor, got ${describe(shape)}`,
    );
  }
  // describe(), not String(): an entry may be anything (an object without toString, an array nested 100,000 deep).
  return { dims: shape.map(toDimension), text: `[${shape.map((d) => (typeof d === "number" || typeof d === "bigint" ? String(d) : describe(d))).join(", ")}]` };
}

/** A number or bigint entry as a number; NaN when it is not a safe integer. */
function toDimension(d: unknown): number {
  if (typeof d === "bigint") {
    return d >= BigInt(Number.MIN_SAFE_INTEGER) && d <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(d) : NaN;
  }
  return typeof d === "number" && Number.isSafeInteger(d) ? d : NaN;
}

/** Applies the rules of Reshape's doc and shape inference, in the order the spec states them. */
function resolveShape(x: Tensor, requested: readonly number[], text: string, allowzero: boolean, name: string): number[] {
  const fail = (code: "INVALID_SHAPE" | "SHAPE_MISMATCH", rule: string): never => {
    throw new TensorcastError(
      code,
      `cannot reshape ${x.dtype.name} [${x.shape.join(", ")}] to ${text}` +
        `${allowzero ? " with allowzero" : ""} (${name}): ${rule}`,
    );
  };
  const inferred: number[] = [];
  let hasZero = false;
  for (let i = 0; i < requested.length; i++) {
    const d = requested[i];
    if (Number.isNaN(d)) fail("INVALID_SHAPE", `dimension ${i} is not a safe integer; dimensions must be integers >= -1`);
    if (d < -1) fail("INVALID_SHAPE", `dimension ${i} is ${d}; dimensions must be >= -1 (-1 means inferred)`);
    if (d === -1) inferred.push(i);
    if (d === 0) hasZero = true;
  }
  if (inferred.length > 1) {
    fail("INVALID_SHAPE", `at most one dimension may be -1, got ${inferred.length} (at ${inferred.join(", ")})`);
  }
  if (allowzero && hasZero && inferred.length > 0) {
    fail("INVALID_SHAPE", "with allowzero a 0 is a real zero, so a -1 beside it cannot be inferred uniquely");
  }
  const dims = requested.slice();
  if (!allowzero) {
    for (let i = 0; i < dims.length; i++) {
      if (dims[i] !== 0) continue;
      if (i >= x.shape.length) {
        fail(
          "SHAPE_MISMATCH",
          `dimension ${i} is 0, which copies input dimension ${i}, but the input has rank ${x.shape.length}` +
            " (from Reshape-14, allowzero makes a 0 a real zero)",
        );
      }
      dims[i] = x.shape[i];
    }
  }
  const resolved = (): string => (!allowzero && hasZero ? ` (the 0s copy the input: [${dims.join(", ")}])` : "");
  // Products beyond 2^53 lose precision but stay above 2^53 > x.size, so they still compare unequal.
  let others = 1;
  for (let i = 0; i < dims.length; i++) if (dims[i] !== -1) others *= dims[i];
  if (inferred.length === 1) {
    if (others === 0) {
      fail("SHAPE_MISMATCH", `the -1 cannot be inferred: the other dimensions multiply to 0${resolved()}`);
    }
    if (x.size % others !== 0) {
      fail(
        "SHAPE_MISMATCH",
        `the -1 cannot be inferred: ${x.size} elements are not a multiple of ${others}, ` +
          `the product of the other dimensions${resolved()}`,
      );
    }
    dims[inferred[0]] = x.size / others;
  } else if (others !== x.size) {
    const count = Number.isSafeInteger(others) ? String(others) : "more than 2^53 - 1";
    const target = dims.length === 0 ? "a scalar, which holds 1" : `that shape holds ${count}`;
    fail("SHAPE_MISMATCH", `the input has ${x.size} elements but ${target}${resolved()}`);
  }
  shapeSize(dims); // the count equals x.size, so this only re-checks the form
  return dims;
}

function checkOptions(opts: ReshapeOptions): number {
  if (typeof opts !== "object" || opts === null) {
    throw new TensorcastError("INVALID_ATTRIBUTE", `options must be an object, got ${describe(opts)}`);
  }
  for (const key of Object.keys(opts)) {
    if (!OPTION_KEYS.has(key)) {
      throw new TensorcastError("INVALID_ATTRIBUTE", `unknown option "${key}"; Reshape accepts ${[...OPTION_KEYS].join(", ")}`);
    }
  }
  if (opts.allowzero !== undefined && typeof opts.allowzero !== "boolean") {
    throw new TensorcastError("INVALID_ATTRIBUTE", `allowzero must be true or false, got ${String(opts.allowzero)}`);
  }
  return opts.opset ?? LATEST_RESHAPE;
}

function describe(x: unknown): string {
  if (x === null) return "null";
  if (typeof x === "object") return (x as object).constructor?.name ?? "object";
  return typeof x;
}
