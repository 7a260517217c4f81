/**
 * Text rendering: aligned tables and the spelling of numbers. Values print exactly (JS's shortest
 * round-trip form of the float64, which identifies it uniquely); long errors are cut to 3
 * significant digits, since they are there to be read, not compared.
 */

export type Align = "left" | "right";

export interface Column {
  readonly header: string;
  readonly align?: Align;
}

/** Columns separated by two spaces, each as wide as its widest cell; no trailing spaces. */
export function renderTable(columns: readonly Column[], rows: readonly (readonly string[])[]): string {
  const widths = columns.map((c, i) => Math.max(c.header.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]): string =>
    columns
      .map((c, i) => {
        const cell = cells[i] ?? "";
        return c.align === "right" ? cell.padStart(widths[i]) : cell.padEnd(widths[i]);
      })
      .join("  ")
      .trimEnd();
  return [line(columns.map((c) => c.header)), ...rows.map(line)].join("\n") + "\n";
}

/** A value as the CLI spells it: nan, inf, -inf and -0 by name, everything else exactly. */
export function formatNumber(x: number, negativeNaN = false): string {
  if (x !== x) return negativeNaN ? "-nan" : "nan";
  if (x === Infinity) return "inf";
  if (x === -Infinity) return "-inf";
  if (x === 0 && 1 / x < 0) return "-0";
  // Integers from 2^53 to 1e21 would print as rounded digits (2^63 as 9223372036854776000); the
  // exact digits are as short and say which integer it is. Beyond 1e21 JS switches to exponents.
  if (Number.isInteger(x) && Math.abs(x) >= 2 ** 53 && Math.abs(x) < 1e21) return BigInt(x).toString();
  return String(x);
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

/**
 * A type limit. Tiny and huge powers of two print as 2^k, because 2^-149 says more than
 * 1.401298464324817e-45; everything else (integer limits included) prints exactly.
 */
export function formatLimit(x: number | bigint | undefined): string {
  if (x === undefined) return "-";
  if (typeof x === "bigint") return String(x);
  const a = Math.abs(x);
  if (a > 0 && Number.isFinite(a)) {
    const k = Math.round(Math.log2(a));
    if ((k <= -10 || k >= 64) && 2 ** k === a) return `${x < 0 ? "-" : ""}2^${k}`;
  }
  return formatNumber(x);
}
