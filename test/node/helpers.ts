/**
 * Shared by the file-format and conversion tests: temporary folders, deterministic random bytes,
 * small safetensors files built in memory, hashes, and the CLI run in-process.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after } from "node:test";
import { fileURLToPath } from "node:url";
import { TensorcastError, dtype, type DType, type DTypeLike } from "../../src/index.js";
import { main } from "../../src/node/index.js";
import { encodeSafetensorsHeader } from "../../src/node/io/safetensors.js";
import { rawByteLength } from "../../src/node/io/tensors.js";

/** build/test/node/ -> the repository root. */
export const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
export const FIXTURES = join(ROOT, "test", "fixtures", "checkpoints");

/** A fresh temporary folder, removed when the test file ends. */
export function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), "tensorcast-test-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** mulberry32: deterministic pseudo-random 32-bit words. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

/** `n` random bytes. */
export function randomBytes(n: number, seed: number): Uint8Array {
  const next = random(seed);
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = next() & 0xff;
  return out;
}

/** Random float32 values of moderate size (no NaN), as raw bytes. */
export function randomFloat32(n: number, seed: number, scale = 4): Uint8Array {
  const next = random(seed);
  const f = new Float32Array(n);
  for (let i = 0; i < n; i++) f[i] = ((next() / 4294967296) * 2 - 1) * scale;
  return new Uint8Array(f.buffer);
}

export interface RawTensor {
  name: string;
  dtype: DTypeLike;
  shape: number[];
  bytes: Uint8Array;
}

/** A safetensors file's bytes, written by tensorcast's header writer. */
export function safetensorsBytes(tensors: readonly RawTensor[], metadata?: Record<string, string>): Uint8Array {
  const infos = tensors.map((t) => {
    const d: DType = dtype(t.dtype);
    const size = t.shape.reduce((a, b) => a * b, 1);
    assert.equal(t.bytes.length, rawByteLength(d, size), `test tensor ${t.name} has the wrong byte count`);
    return { name: t.name, dtype: d, shape: t.shape, size, byteLength: t.bytes.length };
  });
  const header = encodeSafetensorsHeader(infos, metadata);
  return Buffer.concat([header, ...tensors.map((t) => t.bytes)]);
}

/** A safetensors file's bytes with a header given as JSON text (not validated). */
export function rawSafetensors(json: string | Uint8Array, data: Uint8Array = new Uint8Array(0)): Uint8Array {
  const header = typeof json === "string" ? Buffer.from(json, "utf8") : json;
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(header.length));
  return Buffer.concat([length, header, data]);
}

export function sha256(path: string): string {
  return createHash("sha256").update(readFileSync(path)).digest("hex");
}

/** Runs the CLI in-process with captured output (stderr a terminal when `tty`). */
export async function cli(argv: string[], tty = false): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const code = await main(argv, {
    stdout: { write: (s: string) => (out += s) },
    stderr: Object.assign({ write: (s: string) => (err += s) }, tty ? { isTTY: true } : {}),
  });
  return { code, out, err };
}

/** Asserts that `promise` rejects with a TensorcastError of `code` whose message matches every pattern. */
export async function rejectsCode(promise: Promise<unknown>, code: string, ...patterns: RegExp[]): Promise<TensorcastError> {
  let caught: unknown;
  try {
    await promise;
  } catch (e) {
    caught = e;
  }
  assert.ok(caught instanceof TensorcastError, `expected a TensorcastError, got ${caught instanceof Error ? caught.stack : String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  for (const p of patterns) assert.match(caught.message, p);
  return caught;
}
