/**
 * The exact decimal value of a float64, every digit: 0.1 is stored as
 * 0.1000000000000000055511151231257827021181583404541015625. Every value of every float type
 * tensorcast has is a float64 exactly, so this spells any of them.
 */

/**
 * All the digits of finite `x` (a float64 is a whole number times a power of two, so they end).
 * @example exactDecimal(0.1)   // "0.1000000000000000055511151231257827021181583404541015625"
 * @example exactDecimal(2 ** 70) // "1180591620717411303424"
 * @throws RangeError for inf and NaN, which have no digits.
 */
export function exactDecimal(x: number): string {
  if (!Number.isFinite(x)) throw new RangeError(`${x} has no decimal expansion`);
  if (x === 0) return Object.is(x, -0) ? "-0" : "0";
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const bits = view.getBigUint64(0);
  const negative = bits >> 63n === 1n;
  const biased = Number((bits >> 52n) & 0x7ffn);
  const fraction = bits & ((1n << 52n) - 1n);
  // x = m * 2^e with m an integer.
  const m = biased === 0 ? fraction : fraction | (1n << 52n);
  const e = (biased === 0 ? 1 : biased) - 1075;
  let digits: string;
  if (e >= 0) digits = (m << BigInt(e)).toString();
  else {
    // m / 2^k = m * 5^k / 10^k.
    const k = -e;
    const scaled = (m * 5n ** BigInt(k)).toString().padStart(k + 1, "0");
    const whole = scaled.slice(0, scaled.length - k);
    const frac = scaled.slice(scaled.length - k).replace(/0+$/, "");
    digits = frac === "" ? whole : `${whole}.${frac}`;
  }
  return negative ? `-${digits}` : digits;
}
