/**
 * The values a person types to see what a cast does to them, on the command line (`tensorcast
 * cast`) and in the playground. Only plain decimal literals and the special names are accepted:
 * `Number()` alone would also take "0x10", "0b1", "" and " 1 ", which are more likely typos than
 * intent when the point is to see exactly what a value becomes.
 */

export interface InputValue {
  /** The text as given. */
  readonly text: string;
  /** Its value as a float64 (how JS reads the literal; NaN for nan and -nan). */
  readonly number: number;
  /** For nan/-nan: whether the sign bit is set. A JS NaN cannot be trusted to carry it. */
  readonly negativeNaN: boolean;
  /** The exact integer for literals without fraction or exponent, so 64-bit integers survive. */
  readonly integer?: bigint;
}

const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$/i;
const INTEGER = /^[+-]?\d+$/;
const SPECIAL = /^([+-]?)(nan|inf|infinity)$/i;

/** What `parseValue` accepts, worded for error messages. */
export const VALUE_SYNTAX = "a decimal literal such as 1.5, -2e-3 or 448, or nan, -nan, inf, +inf, -inf";

/** A decimal literal or a special name; undefined for anything else (callers word the error). */
export function parseValue(text: string): InputValue | undefined {
  const special = SPECIAL.exec(text);
  if (special) {
    const negative = special[1] === "-";
    if (special[2].toLowerCase() === "nan") return { text, number: NaN, negativeNaN: negative };
    return { text, number: negative ? -Infinity : Infinity, negativeNaN: false };
  }
  if (!DECIMAL.test(text)) return undefined;
  const value: InputValue = { text, number: Number(text), negativeNaN: false };
  return INTEGER.test(text) ? { ...value, integer: BigInt(text) } : value;
}
