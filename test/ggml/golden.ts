/**
 * The GGML / GGUF golden files in test/fixtures/gguf (ggml's own C output and gguf-py's files; the
 * README there says how they were made), and bit comparison of float32 arrays with NaN as NaN.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** test/fixtures/gguf, from build/test/ggml. */
export const GGUF_FIXTURES = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "test", "fixtures", "gguf");

export function fixture(...parts: string[]): Uint8Array {
  return new Uint8Array(readFileSync(join(GGUF_FIXTURES, ...parts)));
}

export interface GoldenIndex {
  dequant: Record<string, { block: number; bytes_per_block: number; blocks: number }>;
  files: Record<string, {
    kv: Record<string, { type: number[]; value: unknown }>;
    tensors: { name: string; ggml_type: string; shape_ggml: number[]; offset: number; bytes: number }[];
    alignment: number;
  }>;
}

export const INDEX: GoldenIndex = JSON.parse(readFileSync(join(GGUF_FIXTURES, "index.json"), "utf8"));

/** The float32 data of a little-endian '<f4' .npy file. */
export function npyFloat32(bytes: Uint8Array): Float32Array {
  const headerLength = bytes[8] | (bytes[9] << 8);
  const header = new TextDecoder().decode(bytes.subarray(10, 10 + headerLength));
  assert.match(header, /'descr': '<f4'/);
  return new Float32Array(bytes.slice(10 + headerLength).buffer);
}

/** The first index where a and b differ as float32 bits (any NaN equals any NaN), or -1. */
export function firstBitDifference(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  const ua = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const ub = new Uint32Array(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < a.length; i++) {
    if (ua[i] !== ub[i] && !(a[i] !== a[i] && b[i] !== b[i])) return i;
  }
  return -1;
}

/** Asserts a and b are the same float32 bits, NaN as NaN, naming the first element that differs. */
export function assertSameFloats(ours: Float32Array, theirs: Float32Array, what: string): void {
  const at = firstBitDifference(ours, theirs);
  if (at === -1) return;
  const hex = (x: Float32Array, i: number): string => (i < x.length ? new Uint32Array(x.buffer, x.byteOffset, x.length)[i].toString(16).padStart(8, "0") : "none");
  assert.fail(`${what}: element ${at} differs: ours ${ours[at]} (0x${hex(ours, at)}), expected ${theirs[at]} (0x${hex(theirs, at)}); lengths ${ours.length}, ${theirs.length}`);
}
