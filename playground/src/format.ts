/**
 * How the page spells tensor elements and errors. Numbers, codes and bits are spelled by the
 * library (formatNumber, formatHex, splitBits), as `tensorcast cast` spells them, so that the page
 * and the CLI can be compared character for character.
 */
import { formatNumber, TensorcastError } from "tensorcast";

/** One element as the tables show it (and as data-value holds it). */
export function formatElement(v: unknown): string {
  if (typeof v === "number") return formatNumber(v);
  if (typeof v === "bigint" || typeof v === "boolean") return String(v);
  if (typeof v === "string") return JSON.stringify(v);
  if (Array.isArray(v)) return `(${v.map((p) => formatNumber(p as number)).join(", ")})`;
  return String(v);
}

/** The library's error as the page shows it: its code and message. */
export function errorText(e: unknown): string {
  if (e instanceof TensorcastError) return `${e.name} ${e.code}: ${e.message}`;
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
}
