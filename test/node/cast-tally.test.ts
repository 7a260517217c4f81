/**
 * The fused cast and statistics of the checkpoint pairs (src/node/convert/cast-tally.ts, issue 16):
 * float32 -> bfloat16 / float16 through one WebAssembly memory gives castReference's bytes and the
 * statistics of the scalar float64 loop and of the pre-issue-16 reference (reference-stats.ts), on
 * random bit patterns (every NaN payload, subnormals, infinities), weights at many scales (the
 * relative error's running maximum raised in many sub-blocks), values at and around each target's
 * overflow threshold, every length shape (empty, shorter than a kernel group, ragged tails, blocks
 * crossed), a memory left full of NaN by the conversion before, and reused output buffers; and
 * in place, on chunks read into a ResidentChunks' memory, without a byte written outside `out`.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { dtype, Tensor } from "../../src/index.js";
import { castReference } from "../../src/kernels/reference.js";
import { ChunkBuffers } from "../../src/node/convert/buffers.js";
import { CAST_TALLY_BLOCK, castTally, ResidentChunks, type CastTallyTarget } from "../../src/node/convert/cast-tally.js";
import { castAndMeasure, convertChunk, measureConversion, type ConvertStats } from "../../src/node/convert/kernel.js";
import { SUB_BLOCK } from "../../src/node/convert/tally-simd.js";
import { Rng } from "../support/rng.js";
import { randomPatterns } from "../support/cast-inputs.js";
import { referenceStats } from "./reference-stats.js";

const TARGETS: CastTallyTarget[] = ["bfloat16", "float16"];

/** castReference's codes of `x` in `to`. */
function referenceCodes(x: Float32Array, to: CastTallyTarget): Uint16Array {
  const out = new Uint16Array(x.length);
  castReference(x, dtype("float32"), out, dtype(to), x.length, { saturate: true, roundMode: "up" });
  return out;
}

/** The oracle's numbers: the scalar float64 path and the pre-issue-16 loop, which must agree. */
function oracle(x: Float32Array, codes: Uint16Array, to: CastTallyTarget): ConvertStats {
  const source = Tensor.fromStorage(x, "float32", [x.length]);
  const result = Tensor.fromStorage(codes, to, [x.length]);
  const ref = referenceStats(source, result);
  assert.deepEqual(measureConversion(source, result, "float64"), ref);
  return ref;
}

/** Checks castAndMeasure and convertChunk (fresh, into a reused buffer, npy) against the oracle. */
function check(x: Float32Array, to: CastTallyTarget, label: string): void {
  const codes = referenceCodes(x, to);
  const expected = oracle(x, codes, to);
  const out = new Uint16Array(x.length).fill(0xabcd);
  const stats = castAndMeasure(x, out, to);
  assert.ok(stats, "WebAssembly SIMD (Node 20+)");
  assert.deepEqual(out, codes, `${label}: codes`);
  assert.deepEqual(stats, expected, `${label}: statistics`);
  const raw = new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
  const fresh = convertChunk(raw, "float32", to, x.length, true, "raw");
  assert.deepEqual(fresh.bytes, new Uint8Array(codes.buffer), `${label}: convertChunk bytes`);
  assert.deepEqual(fresh.stats, expected, `${label}: convertChunk statistics`);
  const into = new Uint8Array(2 * x.length).fill(0x7f);
  const reused = convertChunk(raw, "float32", to, x.length, false, "raw", into);
  assert.ok(reused.bytes.buffer === into.buffer && reused.bytes.byteOffset === 0 && reused.bytes.length === into.length, `${label}: written into the buffer given`);
  assert.deepEqual(into, new Uint8Array(codes.buffer), `${label}: reused buffer bytes`);
  assert.deepEqual(reused.stats, expected, `${label}: reused buffer statistics`);
}

/** Weights-like values, each sub-block at its own scale (2^-30 to 2^30), with odd values sprinkled in. */
function weights(n: number, rng: Rng): Float32Array {
  const f = new Float32Array(n);
  let scale = 1;
  for (let i = 0; i < n; i++) {
    if (i % SUB_BLOCK === 0) scale = 2 ** (rng.below(60) - 30);
    f[i] = (rng.u32() / 4294967296 - 0.5) * scale;
  }
  const odd = [NaN, -NaN, Infinity, -Infinity, 2 ** -140, -(2 ** -149), 0, -0, 70000, -1e38, 3.4e38, 65520, 65519.996, 2 ** -20];
  for (let k = 0, at = 0; at < n; k++, at += SUB_BLOCK * 5) f[at + rng.below(Math.min(SUB_BLOCK, n - at))] = odd[k % odd.length]!;
  return f;
}

const LENGTHS = [0, 1, 7, 8, 9, SUB_BLOCK - 1, SUB_BLOCK, CAST_TALLY_BLOCK - 3, CAST_TALLY_BLOCK, 2 * CAST_TALLY_BLOCK + 1234 + 3];

test("cast-tally: available on this engine, so the tests below exercise it", () => {
  assert.ok(castTally());
});

test("cast-tally: random bit patterns of every length shape give castReference's codes and the reference statistics", () => {
  const rng = new Rng(41);
  for (const n of LENGTHS) {
    const x = new Float32Array(randomPatterns(dtype("float32"), n, rng).slice().buffer);
    for (const to of TARGETS) check(x, to, `${n} random patterns -> ${to}`);
  }
});

test("cast-tally: weights at many scales, so the running relative error moves across sub-blocks and blocks", () => {
  const rng = new Rng(42);
  for (const n of [3 * CAST_TALLY_BLOCK + 5, SUB_BLOCK * 3 + 1]) {
    const x = weights(n, rng);
    for (const to of TARGETS) check(x, to, `${n} weights -> ${to}`);
  }
});

test("cast-tally: the values at and around each target's overflow threshold and its ties", () => {
  const near = (v: number): number[] => {
    const f = new Float32Array([v]);
    const u = new Uint32Array(f.buffer);
    const out: number[] = [];
    for (let d = -3; d <= 3; d++) {
      u[0] = new Uint32Array(new Float32Array([v]).buffer)[0]! + d;
      out.push(f[0]!, -f[0]!);
    }
    return out;
  };
  // float16: max 65504, overflow threshold 65520 (a tie that rounds up, to Inf); bfloat16: max
  // 0x7F7F = 3.3895e38, threshold 3.3961e38 (0x7F7F8000 as float32); the smallest subnormals; ties.
  const values = [
    ...near(65504), ...near(65520), ...near(2 ** -24), ...near(2 ** -25), ...near(1 + 2 ** -11), ...near(1 + 2 ** -8),
    ...near(3.3895313892515355e38), ...near(new Float32Array(new Uint32Array([0x7f7f8000]).buffer)[0]!), ...near(2 ** -133),
    ...near(3.4028234663852886e38), Infinity, -Infinity, NaN, 0, -0,
  ];
  // Repeated past a sub-block, so they are also met by sub-blocks the SIMD pass would settle.
  const x = new Float32Array(2 * SUB_BLOCK + 3);
  for (let i = 0; i < x.length; i++) x[i] = values[i % values.length]!;
  for (const to of TARGETS) check(x, to, `thresholds -> ${to}`);
});

test("cast-tally: a short chunk after a long one reads nothing the long one left in the memory", () => {
  // The first fills the memory's blocks with NaN (codes and widened values); the kernels convert
  // whole groups of 8, so the second chunk's last group has stale lanes that must stay unread.
  const nan = new Float32Array(CAST_TALLY_BLOCK).fill(NaN);
  for (const to of TARGETS) {
    castAndMeasure(nan, new Uint16Array(nan.length), to);
    for (const n of [1, 5, 9, SUB_BLOCK + 3]) {
      const x = new Float32Array(n).fill(1.5);
      check(x, to, `${n} after NaN -> ${to}`);
      const out = new Uint16Array(n);
      const s = castAndMeasure(x, out, to)!;
      assert.equal(s.nonFinite, 0, `${n} -> ${to}`);
    }
  }
});

test("cast-tally: convertChunk's npy encoding and unaligned input take the same numbers", () => {
  const rng = new Rng(43);
  const x = weights(SUB_BLOCK + 17, rng);
  for (const to of TARGETS) {
    const codes = referenceCodes(x, to);
    const expected = oracle(x, codes, to);
    // The input at an odd byte offset: read through a copy, the same values.
    const raw = new Uint8Array(x.byteLength + 1);
    raw.set(new Uint8Array(x.buffer), 1);
    const odd = convertChunk(raw.subarray(1), "float32", to, x.length, true, "raw");
    assert.deepEqual(odd.bytes, new Uint8Array(codes.buffer), to);
    assert.deepEqual(odd.stats, expected, to);
    const npy = convertChunk(new Uint8Array(x.buffer), "float32", to, x.length, true, "npy");
    assert.deepEqual(npy.stats, expected, to);
    const body = npy.bytes.subarray(npy.bytes.length - codes.byteLength);
    assert.deepEqual(body, new Uint8Array(codes.buffer), `${to}: npy payload`);
  }
});

test("cast-tally in place: chunks in a ResidentChunks' memory, the same codes and numbers, nothing outside out written", () => {
  const rng = new Rng(44);
  const slotBytes = 4 * (2 * CAST_TALLY_BLOCK + 24);
  for (const n of [1, 7, 8, 9, SUB_BLOCK + 5, CAST_TALLY_BLOCK + 3, 2 * CAST_TALLY_BLOCK + 24]) {
    for (const to of TARGETS) {
      const chunks = new ResidentChunks(slotBytes, 4);
      // Every slot's bytes (and the memory around them) set to a sentinel, then x and out taken.
      const slots = [0, 1, 2, 3].map(() => chunks.take(slotBytes)!);
      for (const slot of slots) new Uint8Array(slot.buffer).fill(0xa5, slot.byteOffset, slot.byteOffset + slot.length + 64);
      for (const slot of slots) assert.ok(chunks.give(slot));
      const xBytes = chunks.take(4 * n)!;
      const outBytes = chunks.take(2 * n)!;
      assert.equal(xBytes.buffer, outBytes.buffer, "one memory");
      const values = n % 2 === 1 ? new Float32Array(randomPatterns(dtype("float32"), n, rng).slice().buffer) : weights(n, rng);
      const x = new Float32Array(xBytes.buffer, xBytes.byteOffset, n);
      x.set(values);
      const out = new Uint16Array(outBytes.buffer, outBytes.byteOffset, n);
      // The memory's scratch block of float32 values: used only for a last partial group.
      const scratchX = castTally(xBytes.buffer)!.x;
      assert.equal(scratchX.buffer, xBytes.buffer, "the memory's own instance");
      scratchX.fill(-1);
      const before = new Uint8Array(xBytes.buffer).slice();
      const codes = referenceCodes(values, to);
      const stats = castAndMeasure(x, out, to);
      if (n % 8 === 0) assert.ok(scratchX.every((v) => v === -1), `${n} -> ${to}: cast where it is, not copied`);
      assert.deepEqual(out, codes, `${n} -> ${to}: codes`);
      assert.deepEqual(stats, oracle(values, codes, to), `${n} -> ${to}: statistics`);
      // Only out's bytes and the scratch blocks (below the first slot) changed.
      const after = new Uint8Array(xBytes.buffer);
      const firstSlot = Math.min(...slots.map((b) => b.byteOffset));
      for (let i = firstSlot; i < after.length; i++) {
        if (i >= outBytes.byteOffset && i < outBytes.byteOffset + outBytes.length) continue;
        if (after[i] !== before[i]) assert.fail(`${n} -> ${to}: byte ${i} outside out written (out at ${outBytes.byteOffset})`);
      }
      // And through convertChunk, as writePlan runs it.
      const viaChunk = convertChunk(xBytes, "float32", to, n, true, "raw", outBytes);
      assert.deepEqual(viaChunk.stats, stats);
      assert.equal(viaChunk.bytes.buffer, outBytes.buffer);
    }
  }
});

test("ResidentChunks: slots handed out once until given back, then ordinary buffers; ChunkBuffers over it", () => {
  const chunks = new ResidentChunks(1000, 2);
  const a = chunks.take(1000)!;
  const b = chunks.take(10)!;
  assert.ok(a && b && a.buffer === b.buffer && a.length === 1000 && b.length === 10);
  assert.ok(Math.abs(a.byteOffset - b.byteOffset) >= 1000 + 64, "slots apart, with slack");
  assert.equal(chunks.take(8), undefined, "none free");
  assert.equal(chunks.take(1001), undefined, "larger than a slot");
  assert.equal(chunks.give(new Uint8Array(10)), false, "not a slot");
  assert.equal(chunks.give(a.subarray(1)), false, "not a slot's start");
  assert.equal(chunks.give(a), true);
  assert.equal(chunks.give(a), false, "given twice: once freed");
  assert.equal(chunks.take(5)!.byteOffset, a.byteOffset);
  const buffers = new ChunkBuffers(new ResidentChunks(64, 1));
  const r = buffers.take(64);
  const plain = buffers.take(64);
  assert.notEqual(r.buffer, plain.buffer);
  assert.equal(plain.buffer.byteLength, 64, "an ordinary buffer when no slot is free");
  buffers.give(r);
  assert.equal(buffers.take(64).buffer, r.buffer, "the slot again");
  buffers.give(plain);
  assert.equal(buffers.take(64), plain, "the ordinary one kept as before");
});
