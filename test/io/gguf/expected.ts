/**
 * What gguf-py's reader sees in the GGUF fixtures (test/fixtures/gguf/index.json for the shared
 * golden files, reader/reader.json for make-reader.py's), and the same view of what tensorcast
 * reads, so a test compares the two whole: every key's types and value, every tensor's GGML type,
 * GGML-order shape, absolute data offset, byte count and (for reader.json) a digest of its values.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { dequantizeGgml } from "../../../src/ggml/index.js";
import { GGUF_VALUE_TYPES, type GgufArray, type GgufValue } from "../../../src/io/gguf/values.js";
import type { GgufFile } from "../../../src/io/gguf/header.js";
import type { GgufModel } from "../../../src/io/gguf/split.js";
import { readGgufBlocks } from "../../../src/io/gguf/records.js";

/** test/fixtures/gguf, from build/test/io/gguf. */
export const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "..", "test", "fixtures", "gguf");

export interface Described {
  kv: Record<string, { type: number[]; value: unknown }>;
  tensors: { name: string; ggml_type: string; shape_ggml: number[]; offset: number; bytes: number; sha256?: string }[];
  alignment: number;
  version?: number;
  endian?: string;
}

/**
 * index.json with its 64-bit integers kept exact: JSON.parse would round 2^63 + 5, so every
 * integer literal of 16 or more digits is quoted before parsing.
 */
export function readIndex(path: string): { files: Record<string, Described> } {
  const text = readFileSync(path, "utf8").replace(/(?<=[\s\[,:])(-?\d{16,})(?=[\s,\]}])/g, '"$1"');
  return JSON.parse(text);
}

/** gguf-py's `types` of a value: [9, item type, ...] down the first items of nested arrays. */
function typesOf(type: string, value: GgufValue): number[] {
  const id = GGUF_VALUE_TYPES.indexOf(type as never);
  if (type !== "array") return [id];
  const a = value as GgufArray;
  if (a.itemType === "array") return [id, ...(a.items.length > 0 ? typesOf("array", (a.items as GgufArray[])[0]) : [9])];
  return [id, GGUF_VALUE_TYPES.indexOf(a.itemType as never)];
}

/** gguf-py's contents() of a value: arrays flattened, numbers as they are. */
function flatten(v: GgufValue): unknown[] | unknown {
  if (typeof v !== "object") return v;
  if (v.itemType === "array") return (v.items as GgufArray[]).flatMap((x) => flatten(x) as unknown[]);
  if (v.itemType === "bool") return Array.from(v.items as Uint8Array, (x) => x === 1);
  return Array.from(v.items as ArrayLike<unknown>);
}

/** Whether tensorcast's `got` is gguf-py's `want` (a number, a quoted integer or Python float repr, a bool or a string). */
function same(got: unknown, want: unknown): boolean {
  if (typeof got === "bigint") return typeof want === "string" ? BigInt(want) === got : BigInt(want as number) === got;
  if (typeof got === "number") {
    if (typeof want === "number") return Object.is(got, want);
    const w = want === "inf" ? Infinity : want === "-inf" ? -Infinity : want === "nan" ? NaN : Number(want);
    return Object.is(got, w);
  }
  return got === want;
}

function sha256(b: Uint8Array): string {
  return createHash("sha256").update(b).digest("hex");
}

/** Asserts that tensorcast's reading of `g` is gguf-py's `want`, key by key and tensor by tensor. */
export async function assertSeesSame(g: GgufFile, want: Described, label: string): Promise<void> {
  assert.equal(g.alignment, want.alignment, `${label}: alignment`);
  if (want.version !== undefined) assert.equal(g.version, want.version, `${label}: version`);
  if (want.endian !== undefined) assert.equal(g.littleEndian, want.endian === "LITTLE", `${label}: byte order`);
  assert.deepEqual([...g.metadata.keys()], Object.keys(want.kv), `${label}: keys in order`);
  for (const [key, w] of Object.entries(want.kv)) {
    const e = g.metadata.get(key)!;
    assert.deepEqual(typesOf(e.type, e.value), w.type, `${label}: ${key}'s types`);
    const got = flatten(e.value);
    if (Array.isArray(w.value)) {
      assert.ok(Array.isArray(got), `${label}: ${key} is an array`);
      assert.equal(got.length, w.value.length, `${label}: ${key}'s length`);
      got.forEach((x, i) => assert.ok(same(x, (w.value as unknown[])[i]), `${label}: ${key}[${i}] is ${String(x)}, gguf-py reads ${String((w.value as unknown[])[i])}`));
    } else {
      assert.ok(same(got, w.value), `${label}: ${key} is ${String(got)}, gguf-py reads ${String(w.value)}`);
    }
  }
  assert.equal(g.tensors.length, want.tensors.length, `${label}: tensor count`);
  // One file on its own, a part of a split model too.
  const model: GgufModel = { name: g.name, files: [g], metadata: g.metadata, tensors: g.tensors.map((t) => ({ ...t, split: 0 })) };
  for (let i = 0; i < want.tensors.length; i++) {
    const t = g.tensors[i];
    const w = want.tensors[i];
    assert.deepEqual(
      { name: t.name, ggml_type: t.ggmlType.name, shape_ggml: t.dims, offset: t.position, bytes: t.byteLength },
      { name: w.name, ggml_type: w.ggml_type, shape_ggml: w.shape_ggml, offset: Number(w.offset), bytes: Number(w.bytes) },
      `${label}: tensor ${i}`,
    );
    assert.deepEqual(t.shape, [...w.shape_ggml].reverse(), `${label}: ${t.name}'s row-major shape`);
    if (w.sha256 !== undefined) {
      const bytes = await readGgufBlocks(model, model.tensors[i], 0, t.byteLength / t.ggmlType.typeSize);
      const plain = ["F32", "F16", "BF16", "F64", "I8", "I16", "I32", "I64"].includes(t.ggmlType.name);
      const values = plain ? bytes : new Uint8Array(dequantizeGgml(t.ggmlType, bytes).buffer);
      assert.equal(sha256(values), w.sha256, `${label}: ${t.name}'s ${plain ? "bytes" : "dequantized values"}`);
    }
  }
}
