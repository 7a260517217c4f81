/**
 * The traits of a binary floating-point format, and the one generic decoder and encoder they drive.
 *
 * Every float type tensorcast stores as codes (float16, bfloat16, the float8s, e8m0, float4, float6)
 * and float32 itself is described by a `FloatFormat`. `decodeFloat` and `encodeFloat` are the
 * reference definition of those formats: every faster kernel is tested against them bit for bit.
 *
 * Little-endian hosts only: the word views below read the high word of a float64 at index 1.
 */

/** How a format spells NaN. */
export type NanEncoding =
  /** IEEE 754: exponent all ones and a non-zero mantissa (float16, bfloat16, float32, e5m2). */
  | "ieee"
  /** Only exponent and mantissa all ones is NaN (e4m3fn: 0x7F / 0xFF; e8m0: 0xFF). */
  | "allOnes"
  /** The "negative zero" code 0x80 is the only NaN (the fnuz float8 types). */
  | "negativeZero"
  /** No NaN at all (float4e2m1, float6e2m3, float6e3m2). */
  | "none";

/** What a finite value beyond the largest finite code, or an infinity, becomes. */
export type OverflowRule =
  /** Always +/-Inf: IEEE formats whose cast ignores `saturate` (float16, bfloat16, float32). */
  | "inf"
  /** +/-max when `saturate` is true, else +/-Inf where the format has it, NaN otherwise (float8). */
  | "saturable"
  /** Always +/-max, whatever `saturate` says (float4e2m1, float6). */
  | "clamp";

export interface FloatFormat {
  readonly expBits: number;
  readonly manBits: number;
  readonly bias: number;
  /** False only for e8m0, which has no sign bit. */
  readonly signed: boolean;
  /** False only for e8m0: its exponent field 0 is 2^-127, not a subnormal range. */
  readonly subnormals: boolean;
  /** Whether exponent all ones with mantissa 0 is +/-Inf. */
  readonly inf: boolean;
  readonly nan: NanEncoding;
  readonly overflow: OverflowRule;
  /** The largest finite code without its sign bit. */
  readonly maxCode: number;
}

// Exact powers of two 2^-1126 .. 2^1100, built from their bit patterns so that no libm rounding is
// involved. Index k + POW2_OFFSET holds 2^k.
const POW2_OFFSET = 1126;
const POW2 = new Float64Array(POW2_OFFSET + 1101);
{
  const words = new Uint32Array(POW2.buffer);
  for (let k = -1022; k <= 1023; k++) {
    const i = k + POW2_OFFSET;
    words[2 * i] = 0;
    words[2 * i + 1] = (k + 1023) << 20;
  }
  for (let k = -1023; k >= -1074; k--) POW2[k + POW2_OFFSET] = POW2[k + 1 + POW2_OFFSET] / 2;
}

/** 2^k exactly, for integer k in [-1074, 1023] (0 below, Infinity above). */
export function pow2(k: number): number {
  if (k < -1074) return 0;
  if (k > 1023) return Infinity;
  return POW2[k + POW2_OFFSET];
}

const scratch = new Float64Array(1);
const scratchWords = new Uint32Array(scratch.buffer);

/** floor(log2(a)) for a finite a > 0, exactly; float64 subnormals report -1023 (small enough here). */
export function exponentOf(a: number): number {
  scratch[0] = a;
  const field = (scratchWords[1] >>> 20) & 0x7ff;
  return field === 0 ? -1023 : field - 1023;
}

/** The code of +Inf (without sign) in a format that has one. */
function infCode(f: FloatFormat): number {
  return ((1 << f.expBits) - 1) * pow2(f.manBits);
}

function signBit(f: FloatFormat): number {
  return pow2(f.expBits + f.manBits);
}

/** The value of a code: exact, as a float64 (NaN codes give NaN; use `isNegativeCode` for its sign). */
export function decodeFloat(f: FloatFormat, code: number): number {
  const m = f.manBits;
  const sign = signBit(f);
  const negative = f.signed && code >= sign;
  const mag = negative ? code - sign : code;
  const expAll = (1 << f.expBits) - 1;
  const exp = Math.floor(mag / pow2(m));
  const man = mag - exp * pow2(m);
  switch (f.nan) {
    case "ieee":
      if (exp === expAll) {
        if (man !== 0) return NaN;
        if (f.inf) return negative ? -Infinity : Infinity;
      }
      break;
    case "allOnes":
      if (exp === expAll && man === pow2(m) - 1) return NaN;
      break;
    case "negativeZero":
      if (negative && mag === 0) return NaN;
      break;
    case "none":
      break;
  }
  let value: number;
  if (exp === 0 && f.subnormals) value = man * pow2(1 - f.bias - m);
  else value = (pow2(m) + man) * pow2(exp - f.bias - m);
  return negative ? -value : value;
}

/** Whether a code has its sign bit set (NaN codes included: fnuz 0x80 is a negative NaN). */
export function isNegativeCode(f: FloatFormat, code: number): boolean {
  return f.signed && code >= signBit(f);
}

/**
 * The NaN a cast writes: a quiet NaN carrying the source's sign where the format can. Formats
 * without NaN follow the ONNX reference: +NaN becomes the -0 code and -NaN the +0 code.
 */
export function nanCode(f: FloatFormat, negative: boolean): number {
  const sign = negative && f.signed ? signBit(f) : 0;
  switch (f.nan) {
    case "ieee":
      // exponent all ones, top mantissa bit set: f16 0x7E00, bf16 0x7FC0, e5m2 0x7E
      return infCode(f) + pow2(f.manBits - 1) + sign;
    case "allOnes":
      return signBit(f) - 1 + sign;
    case "negativeZero":
      return signBit(f);
    case "none":
      return negative ? 0 : signBit(f);
  }
}

/**
 * Encodes a non-NaN float64 with one rounding to nearest, ties to even, from the exact value.
 * `saturate` only matters for formats whose overflow rule is "saturable".
 */
export function encodeFloat(f: FloatFormat, x: number, saturate: boolean): number {
  const negative = x < 0 || (x === 0 && 1 / x < 0);
  const a = negative ? -x : x;
  const m = f.manBits;
  let mag: number;
  if (a === Infinity) {
    mag = Infinity;
  } else if (a === 0) {
    mag = 0;
  } else {
    const emin = 1 - f.bias;
    const e = Math.max(exponentOf(a), emin);
    // a / 2^(e-m) has at most m+1 integer bits, so it and its fraction are exact in float64.
    const y = a / pow2(e - m);
    let n = Math.floor(y);
    const rest = y - n;
    if (rest > 0.5 || (rest === 0.5 && n % 2 === 1)) n++;
    // A carry out of the mantissa (n = 2^(m+1)) lands on the next exponent by plain addition.
    mag = (e - emin) * pow2(m) + n;
  }
  if (mag > f.maxCode) {
    if (f.overflow === "clamp" || (f.overflow === "saturable" && saturate)) mag = f.maxCode;
    else if (f.inf) mag = infCode(f);
    else return nanCode(f, negative);
  }
  if (mag === 0 && f.nan === "negativeZero") return 0;
  return negative && f.signed ? mag + signBit(f) : mag;
}

/**
 * Where rounding to nearest even, with no upper exponent limit, leaves a format's finite range: at
 * max + half an ulp of max, and exactly there only when max's code is odd (the tie then goes to the
 * even code beyond). e4m3fn: 464 is a tie that rounds down to 448; e4m3fnuz: 248 rounds past 240.
 * Not meaningful for e8m0, which has no mantissa to round.
 */
export function overflowThreshold(f: FloatFormat): { readonly at: number; readonly tieOverflows: boolean } {
  const max = decodeFloat(f, f.maxCode);
  return { at: max + pow2(exponentOf(max) - f.manBits - 1), tieOverflows: f.maxCode % 2 === 1 };
}

/** Whether rounding the magnitude `a` to nearest even, with no upper exponent limit, passes max. */
export function roundsPastMax(f: FloatFormat, a: number): boolean {
  const { at, tieOverflows } = overflowThreshold(f);
  return a > at || (a === at && tieOverflows);
}

/** How e8m0 rounds a value that falls between two powers of two (Cast-24 `round_mode`). */
export type RoundMode = "up" | "down" | "nearest";

const E8M0_MAX = 0xfe; // 2^(254 - 127) = 2^127
const E8M0_NAN = 0xff;

/**
 * Encodes a float64 as float8e8m0 (value 2^(code-127), no sign, no zero, 0xFF is NaN), following
 * onnxruntime, which follows the spec's value table where the reference implementation does not:
 * - NaN -> 0xFF.
 * - x <= 0 (also -0 and -Inf) and 0 < x < 2^-127: 0x00 (2^-127) when saturating, else NaN.
 * - x > 2^127 and +Inf: 0xFE (2^127) when saturating, else NaN, whatever the round mode.
 * - between 2^k and 2^(k+1): "up" takes 2^(k+1) for any fraction, "down" 2^k, "nearest" 2^(k+1)
 *   from 1.5 * 2^k on (ties up).
 */
export function encodeE8M0(x: number, saturate: boolean, mode: RoundMode): number {
  if (x !== x) return E8M0_NAN;
  if (!(x >= pow2(-127))) return saturate ? 0x00 : E8M0_NAN;
  if (x > pow2(127)) return saturate ? E8M0_MAX : E8M0_NAN;
  const k = exponentOf(x);
  const fraction = x / pow2(k);
  let code = k + 127;
  if (mode === "up" ? fraction > 1 : mode === "nearest" ? fraction >= 1.5 : false) code++;
  return code;
}
