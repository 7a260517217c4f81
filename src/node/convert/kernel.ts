/**
 * The work done on one chunk of a tensor, in a worker thread or in the main one: convert it with
 * the library's own `cast` and measure what the conversion did, or compute value statistics, or
 * compare two chunks. Pure functions of bytes in and bytes / numbers out.
 *
 * Statistics read every element as a float64 (exact for every type but 64-bit integers beyond
 * 2^53, which are rounded; the statistics are for reading, not for comparing bits). Types stored
 * as codes (float16, bfloat16, the float8s, e8m0, float4, float6, int4, int2) are decoded through a
 * table of every code's value, built once by `cast` itself, so the statistics never depend on a
 * second definition of a format.
 */
import { cast, castInto, dtype, Tensor, type DType, type DTypeName } from "../../index.js";
import { exponentOf, overflowThreshold } from "../../dtype/minifloat.js";
import { packCodes, unpackCodes } from "../../dtype/packing.js";
import { castWeights } from "../../io/onnx/precision/tensors.js";
import { rawToNpy } from "../io/npy.js";
import { rawByteLength } from "../io/tensors.js";
import { CAST_TALLY_BLOCK, castTally, castTallyTarget, SCRATCH, simdTally, type CastTallyTarget } from "./cast-tally.js";
import { SUB_BLOCK, type Settled } from "./tally-simd.js";

/** Elements decoded at a time for statistics: bounds the scratch memory. */
const BLOCK = CAST_TALLY_BLOCK;
/**
 * `Math.abs(v) <= MAX` is how the loops below test for a finite value: false for NaN and the
 * infinities, and measured 2-3x faster in V8 than `v - v === 0`.
 */
const MAX = Number.MAX_VALUE;

/** What converting a run of elements did. Errors are over elements finite before and after. */
export interface ConvertStats {
  count: number;
  /** Largest |new - old|, 0 when no element is finite on both sides. */
  maxAbsError: number;
  /** Largest |new - old| / |old| over non-zero old values. */
  maxRelError: number;
  /** Elements whose value changed (NaN to NaN counts as unchanged). */
  changed: number;
  /** Elements beyond the target's finite range (infinities included where the target has none). */
  outOfRange: number;
  /** Of those, the ones clamped to the target's largest or smallest finite value. */
  saturated: number;
  /** Elements that are NaN or infinite after the conversion. */
  nonFinite: number;
  /** Elements that were finite before and are NaN or infinite after. */
  becameNonFinite: number;
}

/** Value statistics of a run of elements. */
export interface ValueStats {
  count: number;
  /** Over finite values; null when there is none. */
  min: number | null;
  max: number | null;
  /** Sum of the finite values (the mean is sum / finite). */
  sum: number;
  finite: number;
  nan: number;
  inf: number;
}

/** How two runs of elements differ. */
export interface DiffStats {
  count: number;
  /** Elements whose values differ (NaN equals NaN; 0 equals -0). */
  differing: number;
  /** Over elements finite in both. */
  maxAbsError: number;
  maxRelError: number;
  /** Largest |a - b| in units of the coarser type's ULP at the smaller magnitude of the two. */
  maxUlp: number;
  /** Elements where one is finite and the other not, or both non-finite but different. */
  nonFiniteMismatch: number;
}

export function emptyConvertStats(): ConvertStats {
  return { count: 0, maxAbsError: 0, maxRelError: 0, changed: 0, outOfRange: 0, saturated: 0, nonFinite: 0, becameNonFinite: 0 };
}

export function emptyValueStats(): ValueStats {
  return { count: 0, min: null, max: null, sum: 0, finite: 0, nan: 0, inf: 0 };
}

export function emptyDiffStats(): DiffStats {
  return { count: 0, differing: 0, maxAbsError: 0, maxRelError: 0, maxUlp: 0, nonFiniteMismatch: 0 };
}

export function mergeConvertStats(into: ConvertStats, s: ConvertStats): void {
  into.count += s.count;
  into.maxAbsError = Math.max(into.maxAbsError, s.maxAbsError);
  into.maxRelError = Math.max(into.maxRelError, s.maxRelError);
  into.changed += s.changed;
  into.outOfRange += s.outOfRange;
  into.saturated += s.saturated;
  into.nonFinite += s.nonFinite;
  into.becameNonFinite += s.becameNonFinite;
}

export function mergeValueStats(into: ValueStats, s: ValueStats): void {
  into.count += s.count;
  if (s.min !== null) into.min = into.min === null ? s.min : Math.min(into.min, s.min);
  if (s.max !== null) into.max = into.max === null ? s.max : Math.max(into.max, s.max);
  into.sum += s.sum;
  into.finite += s.finite;
  into.nan += s.nan;
  into.inf += s.inf;
}

export function mergeDiffStats(into: DiffStats, s: DiffStats): void {
  into.count += s.count;
  into.differing += s.differing;
  into.maxAbsError = Math.max(into.maxAbsError, s.maxAbsError);
  into.maxRelError = Math.max(into.maxRelError, s.maxRelError);
  into.maxUlp = Math.max(into.maxUlp, s.maxUlp);
  into.nonFiniteMismatch += s.nonFiniteMismatch;
}

/** Whether statistics can be computed for a type (every numeric type but complex). */
export function hasValues(t: DType): boolean {
  return t.kind !== "string" && t.kind !== "complex";
}

// ---- decoding to float64 ------------------------------------------------------------------------

const tables = new Map<DTypeName, Float64Array>();

/** The value of every code of a type stored as codes, computed by `cast`. */
function codeTable(t: DType): Float64Array {
  let table = tables.get(t.name);
  if (!table) {
    const n = 2 ** t.bits;
    const codes = t.bits === 16 ? new Uint16Array(n) : new Uint8Array(n);
    for (let i = 0; i < n; i++) codes[i] = i;
    let tensor: Tensor;
    if (t.packed) {
      const packed = new Uint8Array(Math.ceil((n * t.bits) / 8));
      packCodes(codes as Uint8Array, t.bits, 0, n, packed);
      tensor = Tensor.fromBytes(packed, t, [n]);
    } else {
      tensor = Tensor.fromBytes(new Uint8Array(codes.buffer), t, [n]);
    }
    table = cast(tensor, "float64").data as Float64Array;
    tables.set(t.name, table);
  }
  return table;
}

/** Whether `t` decodes through a table of codes. */
function isCoded(t: DType): boolean {
  return t.packed || (t.kind === "float" && t.bits <= 16);
}

/**
 * A function writing the values of elements [start, start + n) of `tensor` into out[0..n).
 * `start` is a multiple of 8.
 */
function decoder(tensor: Tensor): (start: number, n: number, out: Float64Array) => void {
  const t = tensor.dtype;
  const data = tensor.data;
  if (isCoded(t)) {
    const table = codeTable(t);
    if (t.packed) {
      const codes = new Uint8Array(BLOCK);
      return (start, n, out) => {
        unpackCodes(data as Uint8Array, t.bits, start, n, codes);
        for (let j = 0; j < n; j++) out[j] = table[codes[j]];
      };
    }
    const c = data as Uint8Array | Uint16Array;
    return (start, n, out) => {
      for (let j = 0; j < n; j++) out[j] = table[c[start + j]];
    };
  }
  if (t.bits === 64 && t.kind !== "float") {
    const b = tensor.bytes();
    const words = new Uint32Array(b.buffer, b.byteOffset, b.byteLength >>> 2);
    const signed = t.kind === "int";
    return (start, n, out) => {
      for (let j = 0, w = 2 * start; j < n; j++, w += 2) {
        const hi = signed ? words[w + 1] | 0 : words[w + 1];
        out[j] = hi * 4294967296 + words[w];
      }
    };
  }
  if (t.kind === "bool") {
    const b = data as Uint8Array;
    return (start, n, out) => {
      for (let j = 0; j < n; j++) out[j] = b[start + j] !== 0 ? 1 : 0;
    };
  }
  const a = data as Float32Array | Float64Array | Int8Array | Uint8Array | Int16Array | Uint16Array | Int32Array | Uint32Array;
  return (start, n, out) => {
    for (let j = 0; j < n; j++) out[j] = a[start + j];
  };
}

/**
 * Like `decoder`, into float32 blocks, for the types whose every value float32 holds exactly
 * (float32, and the unpacked floats of 16 bits or fewer); undefined for the others. The block
 * returned is `out`, or for float32 a view of the tensor's own elements. The others are decoded
 * by castInto, whose widening kernels (WebAssembly for float16, bfloat16 and the 8-bit types) are
 * exact: a JS loop shifting bfloat16 codes took a fifth of a checkpoint conversion's statistics.
 */
function decoder32(tensor: Tensor): ((start: number, n: number, out: Float32Array) => Float32Array) | undefined {
  const t = tensor.dtype;
  if (t.name === "float32") {
    const a = tensor.data as Float32Array;
    return (start, n) => a.subarray(start, start + n);
  }
  if (t.kind !== "float" || t.packed || t.bits > 16) return undefined;
  const c = tensor.data as Uint8Array | Uint16Array;
  return (start, n, out) => {
    const block = out.subarray(0, n);
    castInto(Tensor.fromStorage(c.subarray(start, start + n), t, [n]), Tensor.fromStorage(block, "float32", [n]));
    return block;
  };
}

// ---- the three jobs ---------------------------------------------------------------------------

export interface ConvertResult {
  /** The converted elements in the output's encoding. */
  bytes: Uint8Array;
  stats: ConvertStats;
}

/**
 * Converts `count` elements (raw layout) from `from` to `to` with `cast` (Cast-28 rules, `saturate`
 * as given), and measures the change element by element. With `into` of the converted raw
 * bytes' length, they are written there (castInto) and `bytes` is `into`: no fresh output.
 * `weights`: a model's float32 weights, converted as the whole-model pass converts them
 * (castWeights: float16 overflow clamped to +/-65504 rather than Inf; always a fresh output).
 * @example
 * convertChunk(new Uint8Array(new Float32Array([1, 65520]).buffer), "float32", "float16", 2, true, "raw")
 * // bytes [0x00, 0x3c, 0x00, 0x7c] (1 and +Inf), stats.becameNonFinite 1
 */
export function convertChunk(
  raw: Uint8Array, fromName: DTypeName, toName: DTypeName, count: number, saturate: boolean, encoding: "raw" | "npy", into?: Uint8Array, weights = false,
): ConvertResult {
  const from = dtype(fromName);
  const to = dtype(toName);
  const source = Tensor.fromBytes(raw, from, [count]);
  const asWeights = weights && from.name === "float32";
  const reuse = !asWeights && encoding === "raw" && into !== undefined && into.length === rawByteLength(to, count);
  let result: Tensor | undefined;
  let stats: ConvertStats | undefined;
  const fused = asWeights ? undefined : castTallyTarget(from, to);
  if (fused) {
    // The checkpoint conversion's pairs: cast and measured in one memory (cast-tally.ts); their
    // kernels ignore `saturate`, as cast does for float16 and bfloat16 targets.
    result = reuse ? Tensor.fromBytes(into, to, [count]) : Tensor.fromStorage(new Uint16Array(count), to, [count]);
    stats = castAndMeasure(source.data as Float32Array, result.data as Uint16Array, fused);
  }
  if (!result || !stats) {
    result = asWeights ? castWeights(source, { to, saturate }) : reuse ? Tensor.fromBytes(into, to, [count]) : cast(source, to, { saturate });
    if (reuse) castInto(source, result, { saturate });
    stats = measureConversion(source, result);
  }
  const bytes = encoding === "npy" ? rawToNpy(to, result.bytes(), count) : result.bytes();
  return { bytes, stats };
}

/**
 * Casts float32 `x` into the float16 or bfloat16 codes `out` (of x's length), as castInto does,
 * and returns measureConversion's statistics of it. When both live in one ResidentChunks'
 * memory, the kernels cast and the tally reads them where they are; otherwise each block crosses
 * into WebAssembly memory once and its codes come out once (cast-tally.ts). Undefined, having
 * written nothing, without WebAssembly SIMD.
 * @example
 * const out = new Uint16Array(2);
 * castAndMeasure(new Float32Array([1, 1.00390625]), out, "bfloat16")
 * // out [0x3f80, 0x3f80]; { count: 2, changed: 1, maxAbsError: 0.00390625, maxRelError: 0.0038910505836575876, ... }
 */
export function castAndMeasure(x: Float32Array, out: Uint16Array, to: CastTallyTarget): ConvertStats | undefined {
  const f = castTally(x.buffer === out.buffer ? x.buffer : undefined);
  if (!f) return undefined;
  const inPlace = x.buffer === f.buffer;
  const { X_AT, CODES_AT, Y_AT } = SCRATCH;
  const bf16 = to === "bfloat16";
  const narrow = bf16 ? f.kernels.f32_bf16 : f.kernels.f32_f16;
  const s = newTally(dtype(to));
  f.begin(Math.min(s.upper, -s.lower));
  const maxRel = (): number => s.maxRel;
  const widened = bf16 ? bf16Scalar(s) : undefined;
  for (let start = 0; start < x.length; start += CAST_TALLY_BLOCK) {
    const n = Math.min(CAST_TALLY_BLOCK, x.length - start);
    let xs: Float32Array;
    let codes: Uint16Array;
    if (inPlace) {
      xs = x.subarray(start, start + n);
      codes = out.subarray(start, start + n);
      // Whole groups of 8 where they are; a last partial group through the scratch blocks, as
      // the kernel would write a whole group past the end of `out`.
      const whole = n - (n % 8);
      narrow(xs.byteOffset, codes.byteOffset, whole / 8);
      if (whole < n) {
        f.x.set(xs.subarray(whole));
        narrow(X_AT, CODES_AT, 1);
        codes.set(f.codes.subarray(0, n - whole), whole);
      }
    } else {
      xs = f.x;
      codes = f.codes;
      xs.set(x.subarray(start, start + n));
      // A last partial group converts stale lanes of the scratch block, which nobody reads.
      narrow(X_AT, CODES_AT, Math.ceil(n / 8));
      out.set(codes.subarray(0, n), start);
    }
    // float16 codes widened for the tally (a partial group reads at most 7 codes past the block:
    // the scratch block's, or the slack of the chunk's own slot).
    if (!bf16) f.kernels.f16_f32(codes.byteOffset, Y_AT, Math.ceil(n / 8));
    const y = f.y;
    const scalar = widened ? widened(xs, codes) : (from: number, to: number): void => tally(xs.subarray(from, to), y.subarray(from, to), to - from, s);
    f.settle(xs.byteOffset, bf16 ? codes.byteOffset : Y_AT, bf16, n, maxRel, scalar);
  }
  addSettled(s, f.end());
  return statsOf(s, x.length);
}

/**
 * How converting `source` into `result` changed each element (see ConvertStats). `via`
 * "float64" takes the general path (every value decoded to float64) even where both types fit in
 * float32, and "float32" the float32 blocks without the SIMD bulk pass: tests compare the three.
 * @example
 * const x = Tensor.fromValues([1, 1.001, 70000], "float32");
 * measureConversion(x, cast(x, "float16"))
 * // { count: 3, changed: 2, nonFinite: 1, becameNonFinite: 1, outOfRange: 1, maxAbsError: 0.00002..., ... }
 */
export function measureConversion(source: Tensor, result: Tensor, via: "auto" | "float32" | "float64" = "auto"): ConvertStats {
  const s = newTally(result.dtype);
  // Both sides exact in float32 (the 16- and 8-bit floats and float32 itself): decoded to float32
  // blocks, a float32 source not even copied, which takes the conversion's statistics from most
  // of a checkpoint conversion's time to a fraction of it. Each value read is the same double the
  // float64 decoders give, so the tally is the same.
  const decodeX32 = via !== "float64" ? decoder32(source) : undefined;
  const decodeY32 = decodeX32 && decoder32(result);
  // Most elements settled in bulk by WebAssembly SIMD, the rest (rejected sub-blocks, in order)
  // by the scalar loop: the same numbers (tally-simd.ts says why) at a fraction of the cost.
  const simd = via === "auto" && decodeX32 && decodeY32 ? simdTally() : undefined;
  if (simd && decodeX32 && decodeY32) {
    simd.begin(Math.min(s.upper, -s.lower));
    const maxRel = (): number => s.maxRel;
    // bfloat16 results (the checkpoint conversion's) go to the kernel as codes, widened there;
    // only the sub-blocks handed back are widened here, by the same shift, for the scalar loop.
    const codes = result.dtype.name === "bfloat16" ? (result.data as Uint16Array) : undefined;
    const widened = codes ? bf16Scalar(s) : undefined;
    for (let start = 0; start < source.size; start += BLOCK) {
      const n = Math.min(BLOCK, source.size - start);
      const x = decodeX32(start, n, simd.x());
      if (codes && widened) {
        const c = codes.subarray(start, start + n);
        simd.block(x, c, n, maxRel, widened(x, c));
        continue;
      }
      const y = decodeY32(start, n, simd.y());
      simd.block(x, y, n, maxRel, (from, to) => tally(x.subarray(from, to), y.subarray(from, to), to - from, s));
    }
    addSettled(s, simd.end());
  } else if (decodeX32 && decodeY32) {
    const x = new Float32Array(Math.min(BLOCK, source.size));
    const y = new Float32Array(x.length);
    for (let start = 0; start < source.size; start += BLOCK) {
      const n = Math.min(BLOCK, source.size - start);
      tally(decodeX32(start, n, x), decodeY32(start, n, y), n, s);
    }
  } else {
    const decodeX = decoder(source);
    const decodeY = decoder(result);
    const x = new Float64Array(Math.min(BLOCK, source.size));
    const y = new Float64Array(x.length);
    for (let start = 0; start < source.size; start += BLOCK) {
      const n = Math.min(BLOCK, source.size - start);
      decodeX(start, n, x);
      decodeY(start, n, y);
      tally(x, y, n, s);
    }
  }
  return statsOf(s, source.size);
}

/**
 * The scalar loop for the sub-blocks the SIMD pass hands back when the new values are bfloat16
 * codes: `widened(x, codes)(from, to)` widens codes [from, to) by the tally kernel's own shift into
 * one scratch block and tallies them against x [from, to), in order, into `s`.
 */
function bf16Scalar(s: Tally): (x: Float32Array, codes: Uint16Array) => (from: number, to: number) => void {
  const scratch = new Float32Array(SUB_BLOCK);
  const bits = new Uint32Array(scratch.buffer);
  return (x, codes) => (from, to) => {
    for (let i = from; i < to; i++) bits[i - from] = codes[i] << 16;
    tally(x.subarray(from, to), scratch, to - from, s);
  };
}

/** Adds what a SIMD pass settled in bulk (order-free: a count and a maximum) to `s`. */
function addSettled(s: Tally, settled: Settled): void {
  s.changed += settled.changed;
  if (settled.maxAbs > s.maxAbs) s.maxAbs = settled.maxAbs;
}

/** A tally of nothing yet, against the limits of target `to`. */
function newTally(to: DType): Tally {
  const hi = to.max === undefined ? Infinity : Number(to.max);
  const lo = to.min === undefined ? -Infinity : Number(to.min);
  // Beyond the range: a finite value past [lower, upper] (or at a limit that is a tie going past),
  // or an infinity that became finite.
  const [past, tieIsPast] = pastMax(to);
  return {
    upper: past ?? hi, lower: past === undefined ? lo : -past, tieIsPast, hi, lo,
    maxAbs: 0, maxRel: 0, changed: 0, outOfRange: 0, saturated: 0, nonFinite: 0, becameNonFinite: 0,
  };
}

function statsOf(s: Tally, count: number): ConvertStats {
  return {
    count, maxAbsError: s.maxAbs, maxRelError: s.maxRel, changed: s.changed, outOfRange: s.outOfRange,
    saturated: s.saturated, nonFinite: s.nonFinite, becameNonFinite: s.becameNonFinite,
  };
}

/** The running counts of measureConversion, and the target's limits they are measured against. */
interface Tally {
  readonly upper: number;
  readonly lower: number;
  readonly tieIsPast: boolean;
  readonly hi: number;
  readonly lo: number;
  maxAbs: number;
  maxRel: number;
  changed: number;
  outOfRange: number;
  saturated: number;
  nonFinite: number;
  becameNonFinite: number;
}

/** Adds elements [0, n) of old values `x` and new values `y` to `s`. */
function tally(x: Float32Array | Float64Array, y: Float32Array | Float64Array, n: number, s: Tally): void {
  const { upper, lower, tieIsPast, hi, lo } = s;
  // Below this magnitude a value is strictly inside [lower, upper]: one comparison instead of the
  // four of the full test (which, with tieIsPast, were half of this loop's time). NaN or negative
  // when nothing is that simple (a lower limit above 0): then every value takes the full test.
  const inner = Math.min(upper, -lower);
  // Counters in locals, not object fields: this loop runs once per element.
  let maxAbs = s.maxAbs;
  let maxRel = s.maxRel;
  let changed = 0;
  let outOfRange = 0;
  let saturated = 0;
  let nonFinite = 0;
  let becameNonFinite = 0;
  for (let j = 0; j < n; j++) {
    const a = x[j];
    const b = y[j];
    const m = Math.abs(a);
    if (m <= MAX && Math.abs(b) <= MAX) {
      // Both finite: the common case.
      if (a !== b) {
        changed++;
        const err = Math.abs(b - a);
        if (err > maxAbs) maxAbs = err;
        if (m !== 0 && err > maxRel * m) maxRel = err / m;
      }
      if (!(m < inner) && (a > upper || a < lower || (tieIsPast && (a === upper || a === lower)))) {
        outOfRange++;
        if (b === hi || b === lo) saturated++;
      }
      continue;
    }
    const aFinite = Math.abs(a) <= MAX;
    if (a !== b && (a === a || b === b)) changed++;
    if (!(Math.abs(b) <= MAX)) {
      nonFinite++;
      if (aFinite) {
        becameNonFinite++;
        if (a > upper || a < lower || (tieIsPast && (a === upper || a === lower))) outOfRange++;
      }
    } else if (a === a) {
      // An infinity that became finite.
      outOfRange++;
      if (b === hi || b === lo) saturated++;
    }
  }
  s.maxAbs = maxAbs;
  s.maxRel = maxRel;
  s.changed += changed;
  s.outOfRange += outOfRange;
  s.saturated += saturated;
  s.nonFinite += nonFinite;
  s.becameNonFinite += becameNonFinite;
}

/**
 * For float targets with a sign: where rounding leaves the finite range (`overflowThreshold`), so
 * that 464 -> float8e4m3fn's 448 counts as rounded, not saturated. Undefined for other targets,
 * whose range is [min, max].
 */
function pastMax(to: DType): [number | undefined, boolean] {
  if (to.kind !== "float" || to.name === "float8e8m0" || !to.format) return [undefined, false];
  const { at, tieOverflows } = overflowThreshold(to.format);
  return [at, tieOverflows];
}

/** Value statistics of `count` elements (raw layout) of `type`. */
export function valueChunk(raw: Uint8Array, typeName: DTypeName, count: number): ValueStats {
  const t = dtype(typeName);
  const s = emptyValueStats();
  s.count = count;
  if (!hasValues(t) || count === 0) return s;
  const decode = decoder(Tensor.fromBytes(raw, t, [count]));
  const x = new Float64Array(Math.min(BLOCK, count));
  let min = Infinity;
  let max = -Infinity;
  let sum = 0;
  for (let start = 0; start < count; start += BLOCK) {
    const n = Math.min(BLOCK, count - start);
    decode(start, n, x);
    for (let j = 0; j < n; j++) {
      const v = x[j];
      if (Math.abs(v) <= MAX) {
        if (v < min) min = v;
        if (v > max) max = v;
        sum += v;
        s.finite++;
      } else if (v === v) s.inf++;
      else s.nan++;
    }
  }
  if (s.finite > 0) {
    s.min = min;
    s.max = max;
  }
  s.sum = sum;
  return s;
}

/**
 * How a type's ULP depends on the exponent e of a value: 2^(max(e, minExp) - manBits) for floats
 * (the subnormal step below the normal range), 1 (2^0) for integers and bool.
 */
interface UlpRule {
  readonly float: boolean;
  readonly minExp: number;
  readonly manBits: number;
}

function ulpRule(t: DType): UlpRule {
  if (t.kind !== "float") return { float: false, minExp: 0, manBits: 0 };
  return { float: true, minExp: Math.round(Math.log2(t.minNormal!)), manBits: t.name === "float64" ? 52 : t.format!.manBits };
}

/** 2^-k for k in [-1200, 1200], indexed by k + 1200. */
const INVERSE_POWERS = Float64Array.from({ length: 2401 }, (_, i) => 2 ** -(i - 1200));

/** How `count` elements of A and of B (raw layouts, types `a` and `b`) differ. */
export function diffChunk(rawA: Uint8Array, aName: DTypeName, rawB: Uint8Array, bName: DTypeName, count: number): DiffStats {
  const ta = dtype(aName);
  const tb = dtype(bName);
  const s = emptyDiffStats();
  s.count = count;
  if (!hasValues(ta) || !hasValues(tb) || count === 0) return s;
  const decodeA = decoder(Tensor.fromBytes(rawA, ta, [count]));
  const decodeB = decoder(Tensor.fromBytes(rawB, tb, [count]));
  const ra = ulpRule(ta);
  const rb = ulpRule(tb);
  const x = new Float64Array(Math.min(BLOCK, count));
  const y = new Float64Array(x.length);
  for (let start = 0; start < count; start += BLOCK) {
    const n = Math.min(BLOCK, count - start);
    decodeA(start, n, x);
    decodeB(start, n, y);
    for (let j = 0; j < n; j++) {
      const a = x[j];
      const b = y[j];
      if (a === b || (a !== a && b !== b)) continue;
      s.differing++;
      if (!(Math.abs(a) <= MAX && Math.abs(b) <= MAX)) {
        s.nonFiniteMismatch++;
        continue;
      }
      const err = Math.abs(a - b);
      if (err > s.maxAbsError) s.maxAbsError = err;
      if (a !== 0 && err / Math.abs(a) > s.maxRelError) s.maxRelError = err / Math.abs(a);
      // The coarser ULP at the smaller magnitude: 2^k with k the larger of the two types' exponents.
      const m = Math.min(Math.abs(a), Math.abs(b));
      const e = m === 0 ? -1100 : exponentOf(m);
      const ka = ra.float ? (e > ra.minExp ? e : ra.minExp) - ra.manBits : 0;
      const kb = rb.float ? (e > rb.minExp ? e : rb.minExp) - rb.manBits : 0;
      const ulps = err * INVERSE_POWERS[(ka > kb ? ka : kb) + 1200];
      if (ulps > s.maxUlp) s.maxUlp = ulps;
    }
  }
  return s;
}
