/**
 * Text rendering: aligned tables and type limits. Values and errors are spelled by src/explain/format.ts,
 * which the playground shares.
 */
import { formatNumber } from "../../explain/format.js";

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
