/**
 * Text rendering: aligned tables, JSON reports, and type limits. Values and errors are spelled by
 * src/explain/format.ts, which the playground shares.
 *
 * A report can list millions of tensors (a safetensors header of 100 MB can), so tables and JSON
 * come as a sequence of chunks (`Text`) that `writeText` prints as they are made: no string as
 * long as the whole output (V8 refuses strings over 2^29 characters) and no row kept after it is
 * printed.
 */
import { formatNumber } from "../../explain/format.js";
import type { Output } from "./io.js";

export type Align = "left" | "right";

export interface Column {
  readonly header: string;
  readonly align?: Align;
}

/** Output made a piece at a time; a plain string is one piece. */
export type Text = string | Iterable<string>;

/**
 * A column is as wide as its widest cell up to this many characters; a longer cell is printed
 * whole and pushes the rest of its row right, so one long tensor name cannot pad a million rows.
 */
export const MAX_ALIGNED_WIDTH = 80;

/** Characters written per `write` call: pieces are joined up to this size. */
const WRITE_CHUNK = 64 * 1024;

/** C0 and C1 control characters, which would move the cursor or recolour a terminal. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const CONTROLS = new RegExp(CONTROL.source, "g");

/** `cell` with its control characters written as \uXXXX, so a tensor name cannot drive the terminal. */
export function visible(cell: string): string {
  return CONTROL.test(cell) ? cell.replace(CONTROLS, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`) : cell;
}

/**
 * The lines of a table of `count` rows, `row(i)` giving row i's cells: columns separated by two
 * spaces, each as wide as its widest cell (up to MAX_ALIGNED_WIDTH), no trailing spaces. Rows are
 * made twice (once to measure, once to print) and never held together.
 */
export function* tableText(columns: readonly Column[], count: number, row: (i: number) => readonly string[]): Generator<string> {
  const widths = columns.map((c) => Math.min(visible(c.header).length, MAX_ALIGNED_WIDTH));
  for (let r = 0; r < count; r++) {
    const cells = row(r);
    for (let i = 0; i < widths.length; i++) {
      const w = visible(cells[i] ?? "").length;
      if (w > widths[i] && w <= MAX_ALIGNED_WIDTH) widths[i] = w;
    }
  }
  const line = (cells: readonly string[]): string =>
    columns
      .map((c, i) => {
        const cell = visible(cells[i] ?? "");
        return c.align === "right" ? cell.padStart(widths[i]) : cell.padEnd(widths[i]);
      })
      .join("  ")
      .trimEnd() + "\n";
  yield line(columns.map((c) => c.header));
  for (let r = 0; r < count; r++) yield line(row(r));
}

/** A small table as one string (see tableText). */
export function renderTable(columns: readonly Column[], rows: readonly (readonly string[])[]): string {
  return [...tableText(columns, rows.length, (i) => rows[i])].join("");
}

/**
 * `value` as `JSON.stringify(value, null, 2)` spells it, then a newline, a piece at a time: each
 * array element and object member is stringified on its own. For plain data (what reports are).
 */
export function* jsonText(value: unknown): Generator<string> {
  yield* jsonPieces(value, "");
  yield "\n";
}

/** Arrays and objects of at most this many items, nested at most 3 deep, are stringified whole. */
const SMALL = 64;

function isSmall(value: unknown, depth: number): boolean {
  if (value === null || typeof value !== "object") return true;
  if (depth === 0) return false;
  const items: unknown[] = Array.isArray(value) ? value : Object.values(value);
  return items.length <= SMALL && items.every((v) => isSmall(v, depth - 1));
}

function* jsonPieces(value: unknown, indent: string): Generator<string> {
  if (isSmall(value, 3)) {
    // JSON.stringify escapes line breaks inside strings, so every "\n" it writes is between items.
    yield (JSON.stringify(value, null, 2) ?? "null").replaceAll("\n", `\n${indent}`);
    return;
  }
  const inner = `${indent}  `;
  if (Array.isArray(value)) {
    if (value.length === 0) {
      yield "[]";
      return;
    }
    yield "[\n";
    for (let i = 0; i < value.length; i++) {
      yield inner;
      const v = value[i];
      // JSON.stringify writes what it cannot represent inside an array as null.
      if (v === undefined || typeof v === "function" || typeof v === "symbol") yield "null";
      else yield* jsonPieces(v, inner);
      yield i < value.length - 1 ? ",\n" : "\n";
    }
    yield `${indent}]`;
    return;
  }
  if (value !== null && typeof value === "object" && !("toJSON" in value)) {
    // ... and leaves such members out of an object.
    const members = Object.entries(value).filter(([, v]) => v !== undefined && typeof v !== "function" && typeof v !== "symbol");
    if (members.length === 0) {
      yield "{}";
      return;
    }
    yield "{\n";
    for (let i = 0; i < members.length; i++) {
      yield `${inner}${JSON.stringify(members[i][0])}: `;
      yield* jsonPieces(members[i][1], inner);
      yield i < members.length - 1 ? ",\n" : "\n";
    }
    yield `${indent}}`;
    return;
  }
  yield (JSON.stringify(value, null, 2) ?? "null").replaceAll("\n", `\n${indent}`);
}

/** The pieces of each of `parts` in turn. */
export function* joinText(...parts: Text[]): Generator<string> {
  for (const part of parts) {
    if (typeof part === "string") yield part;
    else yield* part;
  }
}

/** Writes `text` to `out`, joining small pieces into writes of about 64 K characters. */
export function writeText(out: Output, text: Text): void {
  if (typeof text === "string") {
    out.write(text);
    return;
  }
  let pending: string[] = [];
  let size = 0;
  for (const piece of text) {
    pending.push(piece);
    size += piece.length;
    if (size >= WRITE_CHUNK) {
      out.write(pending.join(""));
      pending = [];
      size = 0;
    }
  }
  if (size > 0) out.write(pending.join(""));
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
