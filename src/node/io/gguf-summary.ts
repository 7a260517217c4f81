/**
 * A GGUF model's metadata for people and for JSON: each key with its type and value, arrays as
 * their item type, count and first items (a tokenizer's 150,000 tokens are not printed), long
 * strings (chat templates) cut, and 64-bit integers past 2^53 as decimal strings so JSON keeps them.
 */
import type { GgufArray, GgufMetadataEntry, GgufValue } from "../../io/gguf/values.js";
import type { GgufModel } from "../../io/gguf/split.js";

/** Items of an array shown (tokenizer arrays: fewer). */
const FIRST_ITEMS = 8;
const FIRST_TOKENIZER_ITEMS = 4;
/** Characters of a string shown. */
const STRING_CHARS = 120;

export interface GgufMetadataSummary {
  key: string;
  /** "uint32", "string", "array" ... */
  type: string;
  /** For arrays: the item type ("array" for arrays of arrays) and the count. */
  itemType?: string;
  count?: number;
  /** A scalar's value (a 64-bit integer past 2^53 as a string), or an array's first items. */
  value: unknown;
  /** Whether `value` holds only the first items or characters. */
  cut?: boolean;
}

export interface GgufSummary {
  version: number;
  endian: "little" | "big";
  alignment: number;
  /** The files of the model (more than one for a split model). */
  parts: number;
  metadata: GgufMetadataSummary[];
}

function jsonScalar(v: GgufValue | number | bigint | string): unknown {
  if (typeof v === "bigint") return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : String(v);
  if (typeof v === "number" && !Number.isFinite(v)) return String(v);
  return v;
}

function firstItems(a: GgufArray, n: number): unknown[] {
  const items = a.items as ArrayLike<unknown>;
  const out: unknown[] = [];
  for (let i = 0; i < Math.min(n, items.length); i++) {
    const x = items[i];
    if (a.itemType === "array") out.push(`array[${(x as GgufArray).itemType}] x ${(x as GgufArray).items.length}`);
    else if (a.itemType === "bool") out.push(x === 1);
    else if (typeof x === "string") out.push(x.length > STRING_CHARS ? `${x.slice(0, STRING_CHARS)}...` : x);
    else out.push(jsonScalar(x as number | bigint));
  }
  return out;
}

/** One entry, summarized. */
export function summarizeEntry(e: GgufMetadataEntry): GgufMetadataSummary {
  if (e.type === "array") {
    const a = e.value as GgufArray;
    const n = e.key.startsWith("tokenizer.") ? FIRST_TOKENIZER_ITEMS : FIRST_ITEMS;
    return { key: e.key, type: e.type, itemType: a.itemType, count: a.items.length, value: firstItems(a, n), cut: a.items.length > n };
  }
  if (typeof e.value === "string" && e.value.length > STRING_CHARS) return { key: e.key, type: e.type, value: `${e.value.slice(0, STRING_CHARS)}...`, cut: true };
  return { key: e.key, type: e.type, value: jsonScalar(e.value) };
}

/** The header and metadata of `model`, summarized. */
export function summarizeGguf(model: GgufModel): GgufSummary {
  const first = model.files[0];
  return {
    version: first.version, endian: first.littleEndian ? "little" : "big", alignment: first.alignment, parts: model.files.length,
    metadata: [...model.metadata.values()].map(summarizeEntry),
  };
}

/** An entry's type and value as the inspect table prints them. */
export function entryText(s: GgufMetadataSummary): { type: string; value: string } {
  const show = (v: unknown): string => (typeof v === "string" ? JSON.stringify(v) : Object.is(v, -0) ? "-0" : String(v));
  if (s.type === "array") {
    const items = (s.value as unknown[]).map(show).join(", ");
    return { type: `array[${s.itemType}] x ${s.count}`, value: `[${items}${s.cut ? ", ..." : ""}]` };
  }
  return { type: s.type, value: show(s.value) };
}
