/**
 * Exact decimal helpers for the string tests' oracles (independent of src/ops/strings.ts): a
 * float64 as an exact dyadic, a decimal compared with a dyadic or a float64 by BigInt arithmetic,
 * and Python's repr layout of given digits.
 */
const f64 = new Float64Array(1);
const f64Bits = new BigUint64Array(f64.buffer);

/** A finite a >= 0 as m * 2^e exactly (m an integer below 2^53). */
export function dyadic(a: number): [bigint, number] {
  f64[0] = a;
  const bits = f64Bits[0];
  const field = Number(bits >> 52n);
  const m = bits & 0xfffffffffffffn;
  return field === 0 ? [m, -1074] : [m | (1n << 52n), field - 1075];
}

const BIG10: bigint[] = [];
/** 10^n as a BigInt (cached). */
export const big10 = (n: number): bigint => (BIG10[n] ??= 10n ** BigInt(n));
/** 2^n as a BigInt. */
export const big2 = (n: number): bigint => 1n << BigInt(n);

/** Sign of (c * 10^j - m * 2^e), exactly. */
export function compareScaled(c: bigint, j: number, m: bigint, e: number): number {
  const lhs = c * big10(Math.max(j, 0)) * big2(Math.max(-e, 0));
  const rhs = m * big2(Math.max(e, 0)) * big10(Math.max(-j, 0));
  return lhs > rhs ? 1 : lhs < rhs ? -1 : 0;
}

/** Sign of digits * 10^p - a, exactly (a finite, >= 0). */
export function compareDecimalExact(digits: bigint, p: number, a: number): number {
  return compareScaled(digits, p, ...dyadic(a));
}

/**
 * Python's repr layout of x (finite, non-zero) whose significant digits are `digits` (no trailing
 * zeros) with the first at 10^exp10: positional with ".0" in [1e-4, 1e16), else scientific.
 */
export function reprLayout(x: number, digits: string, exp10: number): string {
  const a = Math.abs(x);
  let body: string;
  if (a >= 1e-4 && a < 1e16) {
    if (exp10 < 0) body = `0.${"0".repeat(-exp10 - 1)}${digits}`;
    else {
      const padded = digits.padEnd(exp10 + 1, "0");
      body = `${padded.slice(0, exp10 + 1)}.${padded.slice(exp10 + 1) || "0"}`;
    }
  } else {
    const e = Math.abs(exp10);
    body = `${digits[0]}${digits.length > 1 ? `.${digits.slice(1)}` : ""}e${exp10 < 0 ? "-" : "+"}${e < 10 ? "0" : ""}${e}`;
  }
  return x < 0 ? `-${body}` : body;
}
