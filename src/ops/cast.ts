/**
 * Cast and CastLike: check the operator version's rules, then run the conversion kernel.
 */
import { describe } from "../args.js";
import { TensorcastError } from "../errors.js";
import type { RoundMode } from "../dtype/minifloat.js";
import { dtype, type DType, type DTypeLike, type DTypeName, type Storage, type StorageOf } from "../dtype/table.js";
import { convert } from "../kernels/convert.js";
import { allocateOutputStorage, expectStorage, Tensor } from "../tensor.js";
import { LATEST_OPSET, operatorVersion, type OperatorVersion } from "./opsets.js";
import { formatStrings, parseStrings, type StringFormat } from "./strings.js";

export interface CastOptions {
  /**
   * Float8 and e8m0 targets only (Cast-19+): out-of-range values and infinities become +/-max
   * (true, the default) or follow the non-saturating table (Inf for e5m2, NaN otherwise). Other
   * targets ignore it, as the spec says.
   */
  saturate?: boolean;
  /** e8m0 targets only (Cast-24+): how a value between two powers of two rounds. Default "up". */
  roundMode?: RoundMode;
  /** The model opset whose operator version applies. Default: the newest (28). */
  opset?: number;
  /**
   * How numbers print when casting to string: "python" (default; shortest round-trip digits in
   * Python's repr layout, "1e-05", "16777216.0", "nan") or "onnxruntime" (C's %.8g: "NaN", "INF", "-0").
   */
  stringFormat?: StringFormat;
}

const OPTION_KEYS = new Set(["saturate", "roundMode", "opset", "stringFormat"]);
const STRING_FORMATS: readonly StringFormat[] = ["python", "onnxruntime"];
const ROUND_MODES: readonly RoundMode[] = ["up", "down", "nearest"];

/**
 * ONNX Cast: converts every element of `x` to the type `to`, keeping the shape.
 *
 * Follows docs/semantics.md row by row: floats round to nearest even from the exact source value;
 * float -> integer truncates and follows the x86-64 rule out of range (INT_MIN for int32/int64);
 * integer -> integer wraps; float8 saturates unless `saturate: false`; e8m0 honours `roundMode`.
 *
 * @example cast(Tensor.fromValues([1.5, 448, 1000, NaN], "float32"), "float8e4m3fn").bytes()
 *          // Uint8Array [0x3c, 0x7e, 0x7e, 0x7f]
 * @throws TensorcastError UNSUPPORTED_TYPE when the opset's Cast version does not allow a type
 *         (complex is never allowed), INVALID_ATTRIBUTE for options that version lacks.
 */
export function cast<N extends DTypeName>(x: Tensor, to: DTypeLike<N>, opts: CastOptions = {}): Tensor<N> {
  const version = operatorVersion("Cast", checkOptions(opts));
  if (version.version < 6 && typeof to !== "string") {
    throw new TensorcastError(
      "INVALID_ATTRIBUTE",
      `Cast-${version.version} takes \`to\` as a type-name string such as "FLOAT16"; got ${describeTo(to)}`,
    );
  }
  return run(version, x, dtype(to), opts);
}

/**
 * ONNX CastLike: `cast` to the data type of `like` (its shape and values are not used). Unlike the
 * upstream function body, `roundMode` is honoured.
 */
export function castLike<N extends DTypeName>(x: Tensor, like: Tensor<N> | DType<N>, opts: CastOptions = {}): Tensor<N> {
  const version = operatorVersion("CastLike", checkOptions(opts));
  const to = like instanceof Tensor ? like.dtype : dtype(like);
  return run(version, x, to, opts);
}

/**
 * `cast` into a tensor the caller owns: `out` (of the target type, `x`'s shape) receives the
 * result and is returned; nothing is allocated for numeric types. Reusing one output across calls
 * spares the page faults a fresh multi-megabyte array costs on every call (docs/performance.md).
 *
 * @example const out = Tensor.zeros("float16", x.shape); castInto(x, out); castInto(y, out);
 * @throws TensorcastError as `cast`; SHAPE_MISMATCH when the shapes differ; ALIASED_OUTPUT when
 *         `out`'s bytes overlap `x`'s (except the same storage with the same type: a no-op).
 */
export function castInto<N extends DTypeName>(x: Tensor, out: Tensor<N>, opts: CastOptions = {}): Tensor<N> {
  const resolved = checkCastInto(x, out, opts);
  const from = x.dtype;
  const to = out.dtype;
  if (from === to) {
    if (x.data !== out.data) copyStorage(x.data, out.data);
    saturateInfinities(out.data, to, resolved);
  } else if (to.kind === "string" || from.kind === "string") {
    copyStorage(convertStorage(x, to, opts, resolved), out.data);
  } else {
    prepareOutput(out);
    convert(x.data, from, out.data, to, x.size, resolved);
  }
  return out;
}

/**
 * Every check `castInto(x, out, opts)` makes, without converting: the opset's types and
 * attributes, equal shapes, no overlap. Returns the options with their defaults.
 */
export function checkCastInto(x: Tensor, out: Tensor, opts: CastOptions): Resolved {
  const version = operatorVersion("Cast", checkOptions(opts));
  if (!(out instanceof Tensor)) {
    throw new TensorcastError("INVALID_DATA", `castInto expects a Tensor as output, got ${typeof out}`);
  }
  expectStorage(out, "castInto's output");
  const resolved = checkCast(version, x, out.dtype, opts);
  if (!sameShape(x.shape, out.shape)) {
    throw new TensorcastError(
      "SHAPE_MISMATCH",
      `castInto: the output's shape [${out.shape.join(", ")}] differs from the input's [${x.shape.join(", ")}]`,
    );
  }
  if (!(x.dtype === out.dtype && x.data === out.data) && overlaps(x.data, out.data)) {
    throw new TensorcastError(
      "ALIASED_OUTPUT",
      `castInto: the output's bytes overlap the input's (${x.dtype.name} -> ${out.dtype.name}); use a separate output`,
    );
  }
  return resolved;
}

/** Kernels for packed and 64-bit integer targets merge into a zero-filled output (see convert): clear it. */
export function prepareOutput(out: Tensor): void {
  if (mergesIntoZeros(out.dtype)) zeroFill(out.data);
}

function mergesIntoZeros(t: DType): boolean {
  return t.packed || (t.bits === 64 && t.kind !== "float");
}

export type Resolved = { readonly saturate: boolean; readonly roundMode: RoundMode };

/** Checks the input and target types and the options against the operator version. */
function checkCast(version: OperatorVersion, x: Tensor, to: DType, opts: CastOptions): Resolved {
  if (!(x instanceof Tensor)) {
    throw new TensorcastError("INVALID_DATA", `${version.op} expects a Tensor as input, got ${typeof x}`);
  }
  expectStorage(x, `${version.op}'s input`);
  checkType(version, x.dtype, "input");
  checkType(version, to, "target");
  checkAttribute(version, "saturate", opts.saturate);
  checkAttribute(version, "round_mode", opts.roundMode);
  return { saturate: opts.saturate ?? true, roundMode: opts.roundMode ?? "up" };
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

/** Whether two storages share bytes (strings arrays never do: their elements are values). */
function overlaps(a: Storage, b: Storage): boolean {
  if (Array.isArray(a) || Array.isArray(b)) return false;
  if (a.buffer !== b.buffer) return false;
  return a.byteOffset < b.byteOffset + b.byteLength && b.byteOffset < a.byteOffset + a.byteLength;
}

function zeroFill(s: Storage): void {
  if (s instanceof BigInt64Array || s instanceof BigUint64Array) s.fill(0n);
  else (s as Uint8Array).fill(0);
}

function copyStorage(from: Storage, to: Storage): void {
  if (Array.isArray(to)) {
    const src = from as string[];
    for (let i = 0; i < src.length; i++) to[i] = src[i];
  } else {
    (to as Uint8Array).set(from as Uint8Array);
  }
}

/** A string side's conversion, which builds its own storage. */
function convertStorage(x: Tensor, to: DType, opts: CastOptions, resolved: Resolved): Storage {
  if (to.kind === "string") return formatStrings(x.data, x.dtype, x.size, opts.stringFormat ?? "python");
  return parseStrings(x.data as string[], to, resolved);
}

function run<N extends DTypeName>(version: OperatorVersion, x: Tensor, to: DType<N>, opts: CastOptions): Tensor<N> {
  const resolved = checkCast(version, x, to, opts);
  const from = x.dtype;
  let data: Storage;
  if (from === to) {
    // Same type: the bytes are the answer (NaN payloads included), but for the saturate rule.
    data = x.data.slice();
    saturateInfinities(data, to, resolved);
  } else if (to.kind === "string" || from.kind === "string") {
    data = convertStorage(x, to, opts, resolved);
  } else {
    // Memory a disposed output left behind when there is some: no fresh pages to fault in.
    const output = allocateOutputStorage(to, x.size);
    data = output.data;
    if (output.reused && mergesIntoZeros(to)) zeroFill(data);
    convert(x.data, from, data, to, x.size, resolved);
  }
  return Tensor.fromStorage(data as StorageOf<N>, to, x.shape);
}

/**
 * A same-type cast is a conversion like any other (DECISIONS.md, "same type"): the only rule that
 * can change a value of a type into itself is saturate=1 mapping +/-Inf to +/-max, which exists
 * only for float8 formats with an Inf code (float8e5m2: 0x7C -> 0x7B, 0xFC -> 0xFB). Every other
 * code, NaN payloads included, is kept.
 */
function saturateInfinities(data: Storage, t: DType, resolved: Resolved): void {
  const f = t.format;
  if (!f || !f.inf || f.overflow !== "saturable" || !resolved.saturate || t.bits !== 8) return;
  const codes = data as Uint8Array;
  const inf = f.maxCode + 1;
  const sign = 1 << (t.bits - 1);
  for (let i = 0; i < codes.length; i++) {
    const c = codes[i];
    if ((c & ~sign) === inf) codes[i] = (c & sign) | f.maxCode;
  }
}

function checkOptions(opts: CastOptions): number {
  if (typeof opts !== "object" || opts === null) {
    throw new TensorcastError("INVALID_ATTRIBUTE", `options must be an object, got ${describe(opts)}`);
  }
  for (const key of Object.keys(opts)) {
    if (!OPTION_KEYS.has(key)) {
      throw new TensorcastError(
        "INVALID_ATTRIBUTE",
        `unknown option "${key}"; Cast and CastLike accept ${[...OPTION_KEYS].join(", ")}`,
      );
    }
  }
  if (opts.saturate !== undefined && typeof opts.saturate !== "boolean") {
    throw new TensorcastError("INVALID_ATTRIBUTE", `saturate must be true or false, got ${String(opts.saturate)}`);
  }
  if (opts.roundMode !== undefined && !ROUND_MODES.includes(opts.roundMode)) {
    throw new TensorcastError(
      "INVALID_ATTRIBUTE",
      `roundMode must be one of ${ROUND_MODES.join(", ")}; got ${JSON.stringify(opts.roundMode)}`,
    );
  }
  if (opts.stringFormat !== undefined && !STRING_FORMATS.includes(opts.stringFormat)) {
    throw new TensorcastError(
      "INVALID_ATTRIBUTE",
      `stringFormat must be one of ${STRING_FORMATS.join(", ")}; got ${JSON.stringify(opts.stringFormat)}`,
    );
  }
  return opts.opset ?? LATEST_OPSET;
}

function checkType(version: OperatorVersion, t: DType, role: "input" | "target"): void {
  const name = `${version.op}-${version.version}`;
  if (t.kind === "complex") {
    throw new TensorcastError(
      "UNSUPPORTED_TYPE",
      `${t.name} cannot be cast: no version of ${version.op} accepts complex types (the ONNX spec excludes them)`,
    );
  }
  if (!version.types.has(t.name)) {
    throw new TensorcastError(
      "UNSUPPORTED_TYPE",
      `${name} does not accept ${t.name} as ${role} type; it allows ${[...version.types].join(", ")}`,
    );
  }
}

function checkAttribute(version: OperatorVersion, attribute: string, value: unknown): void {
  if (value !== undefined && !version.attributes.has(attribute)) {
    const since = attribute === "saturate" ? 19 : 24;
    throw new TensorcastError(
      "INVALID_ATTRIBUTE",
      `${version.op}-${version.version} has no ${attribute} attribute (it exists from ${version.op}-${since}); ` +
        `its attributes are ${[...version.attributes].join(", ") || "none"}`,
    );
  }
}

function describeTo(to: unknown): string {
  return typeof to === "object" && to !== null && "name" in to ? `the DType ${(to as DType).name}` : String(to);
}
