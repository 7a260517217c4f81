/**
 * Exact decimal helpers for the string tests' oracles (independent of src/ops/strings.ts): a
 * decimal compared with a float64 by BigInt arithmetic, and Python's repr layout of given digits.
 */
const f64 = new Float64Array(1);
const f64Bits = new BigUint64Array(f64.buffer);

/** Sign of digits * 10^p - a, exactly (a finite, >= 0). */
export function compareDecimalExact(digits: bigint, p: number, a: number): number {
  f64[0] = a;
  const bits = f64Bits[0];
  const field = Number(bits >> 52n);
  const m = field === 0 ? bits & 0xfffffffffffffn : (bits & 0xfffffffffffffn) | (1n << 52n);
  const e = (field === 0 ? 1 : field) - 1075;
  // digits * 10^p against m * 2^e, both sides scaled to integers.
  const lhs = digits * 10n ** BigInt(Math.max(p, 0)) * 2n ** BigInt(Math.max(-e, 0));
  const rhs = m * 2n ** BigInt(Math.max(e, 0)) * 10n ** BigInt(Math.max(-p, 0));
  return lhs > rhs ? 1 : lhs < rhs ? -1 : 0;
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
