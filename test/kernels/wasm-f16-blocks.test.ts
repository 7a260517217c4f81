/**
 * The float16 -> float32 WebAssembly kernel decides per block of F16_BLOCK_GROUPS groups (64 codes)
 * whether any code is subnormal, and per group after the last whole block. These tests put one
 * subnormal at every position of arrays whose lengths end just before, at and just after one and
 * two blocks (and a few groups past three), among codes the 16-bit-halves path decodes (normals,
 * +/-0, +/-Inf, NaNs), so a block test that missed any group or lane would decode that subnormal as
 * a normal and fail. They also alternate clean and dense blocks (every code subnormal), and check
 * that nothing is written past the last whole group. The kernel is called directly, in place in its
 * module's memory, and through an arena (whose last partial group takes the scalar path).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { createArena } from "../../src/arena.js";
import { dtype } from "../../src/dtype/table.js";
import { castReference, type ResolvedCastOptions } from "../../src/kernels/reference.js";
import { F16_BLOCK_GROUPS, kernelModule } from "../../src/kernels/wasm/kernels.js";
import { Tensor } from "../../src/tensor.js";
import { Rng } from "../support/rng.js";

const OPTS: ResolvedCastOptions = { saturate: true, roundMode: "up" };
const F16 = dtype("float16");
const F32 = dtype("float32");
const BLOCK = 8 * F16_BLOCK_GROUPS;
const LENGTHS = [BLOCK - 1, BLOCK, BLOCK + 1, 2 * BLOCK - 1, 2 * BLOCK, 2 * BLOCK + 1, 3 * BLOCK + 8 + 5];
const DST = 65536;
const SENTINEL = 0xdeadbeef;

type Kernel = (src: number, dst: number, groups: number) => void;
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { readonly exports: Record<string, unknown> };
}
const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
const instance = new wasm.Instance(new wasm.Module(kernelModule(3)), {});
const memory = (instance.exports.memory as { buffer: ArrayBuffer }).buffer;
const f16ToF32 = instance.exports.f16_f32 as Kernel;

/** A code the fast path decodes: a normal, +/-0, +/-Inf or a NaN, either sign. */
function cleanCode(rng: Rng): number {
  const r = rng.below(16);
  const sign = rng.below(2) << 15;
  if (r === 0) return sign;
  if (r === 1) return sign | 0x7c00;
  if (r === 2) return sign | 0x7c00 | (1 + rng.below(0x3ff));
  return sign | ((1 + rng.below(30)) << 10) | rng.below(0x400);
}

function subnormalCode(rng: Rng): number {
  return (rng.below(2) << 15) | (1 + rng.below(0x3ff));
}

/** The kernel over the whole groups of `codes`, in place; its float32 bits and the words after them. */
function runKernel(codes: Uint16Array): { got: Uint32Array; after: Uint32Array } {
  const groups = Math.floor(codes.length / 8);
  new Uint16Array(memory, 0, codes.length).set(codes);
  new Uint32Array(memory, DST, codes.length + 16).fill(SENTINEL);
  f16ToF32(0, DST, groups);
  return {
    got: new Uint32Array(memory, DST, 8 * groups).slice(),
    after: new Uint32Array(memory, DST + 32 * groups, 16).slice(),
  };
}

function expected(codes: Uint16Array): Uint32Array {
  const want = new Float32Array(codes.length);
  castReference(codes, F16, want, F32, codes.length, OPTS);
  return new Uint32Array(want.buffer);
}

function assertKernel(codes: Uint16Array, what: string): void {
  const { got, after } = runKernel(codes);
  const want = expected(codes).subarray(0, got.length);
  for (let i = 0; i < got.length; i++) {
    if (got[i] !== want[i]) {
      assert.fail(`${what}: [${i}] code 0x${codes[i].toString(16)}: got 0x${got[i].toString(16)}, want 0x${want[i].toString(16)}`);
    }
  }
  assert.ok(after.every((w) => w === SENTINEL), `${what}: nothing written past the last whole group`);
}

test("one subnormal at every position, lengths around one and two blocks, among clean codes", () => {
  const rng = new Rng(0x16b10c);
  for (const n of LENGTHS) {
    for (let p = 0; p < n; p++) {
      const codes = Uint16Array.from({ length: n }, () => cleanCode(rng));
      codes[p] = subnormalCode(rng);
      assertKernel(codes, `length ${n}, subnormal at ${p}`);
    }
  }
});

test("clean and dense blocks alternating, and clean arrays with no subnormal at all", () => {
  const rng = new Rng(0x5eed16);
  // Each pattern says, block by block, whether every code is subnormal (1) or none is (0).
  for (const pattern of [[0], [1], [0, 1], [1, 0], [1, 1, 0, 0, 1], [0, 0, 1, 0, 1, 1]]) {
    for (const extra of [0, 8, 13]) {
      const n = pattern.length * BLOCK + extra;
      const codes = Uint16Array.from({ length: n }, (_, i) => (pattern[Math.floor(i / BLOCK)] === 1 ? subnormalCode(rng) : cleanCode(rng)));
      assertKernel(codes, `blocks ${pattern.join("")} + ${extra}`);
    }
  }
});

test("the same through an arena, in place, the last partial group included", () => {
  const rng = new Rng(0xa7e4a);
  const arena = createArena(1 << 20);
  for (const n of LENGTHS) {
    for (const p of [0, 7, 8, BLOCK - 8, BLOCK - 1, n - 1]) {
      if (p >= n) continue;
      arena.reset();
      const codes = Uint16Array.from({ length: n }, () => cleanCode(rng));
      codes[p] = subnormalCode(rng);
      const x = arena.from(Tensor.fromStorage(codes, "float16", [n]));
      const y = arena.cast(x, "float32");
      assert.equal(y.data.buffer, x.data.buffer, "both in the arena");
      const got = new Uint32Array(y.data.buffer, y.data.byteOffset, n);
      assert.deepEqual(got, expected(codes), `length ${n}, subnormal at ${p}`);
    }
  }
});
