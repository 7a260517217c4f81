/**
 * The spelling of numbers shared by the CLI and the playground, so that the two can be compared
 * character for character. Values print exactly (JS's shortest round-trip form of the float64,
 * which identifies it uniquely); long errors are cut to 3 significant digits, since they are there
 * to be read, not compared.
 */
import { describe, exactNumber } from "../args.js";
import { TensorcastError } from "../errors.js";

/** A value spelled with nan, inf, -inf and -0 by name, everything else exactly. */
export function formatNumber(x: number, negativeNaN = false): string {
  if (typeof x !== "number") throw new TensorcastError("INVALID_DATA", `formatNumber takes a number, got ${describe(x)}`);
  if (x !== x) return negativeNaN ? "-nan" : "nan";
  if (x === Infinity) return "inf";
  if (x === -Infinity) return "-inf";
  if (x === 0 && 1 / x < 0) return "-0";
  // Integers from 2^53 to 1e21 would print as rounded digits (2^63 as 9223372036854776000); the
  // exact digits are as short and say which integer it is. Beyond 1e21 JS switches to exponents.
  return exactNumber(x);
}

/**
 * A rounding error: exact when that is short (552, 0.125), else to 3 significant digits; "-" where
 * none is defined (NaN or infinite operands).
 */
export function formatError(x: number | null): string {
  if (x === null) return "-";
  const exact = String(x);
  return exact.length <= 7 ? exact : String(Number(x.toPrecision(3)));
}
