/**
 * The SIMD bulk pass of measureConversion (src/node/convert/tally-simd.ts): which sub-blocks it
 * settles and which it hands back to the scalar loop, and that measureConversion with it gives
 * exactly the numbers of the scalar float32 loop, of the float64 path and of the pre-issue-16
 * reference (test/node/reference-stats.ts) on weights at many
 * scales (so the relative error's running maximum moves across many sub-blocks), with NaN, Inf,
 * subnormals and out-of-range values sprinkled in, blocks crossed and ragged tails.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { cast, dtype, Tensor, type DTypeName } from "../../src/index.js";
import { measureConversion } from "../../src/node/convert/kernel.js";
import { simdTally } from "../../src/node/convert/cast-tally.js";
import { SUB_BLOCK } from "../../src/node/convert/tally-simd.js";
import { random } from "./helpers.js";
import { referenceStats } from "./reference-stats.js";


const unit = (next: () => number): number => next() / 4294967296;

/**
 * Weights-like float32 values, each sub-block at its own scale (2^-30 to 2^30), so the largest
 * relative error so far is raised in many sub-blocks; with `specials`, one sub-block in about
 * eight gets a NaN, an infinity, a subnormal, a zero or a value past float16's range.
 */
function weights(n: number, seed: number, specials: boolean): Tensor {
  const next = random(seed);
  const f = new Float32Array(n);
  let scale = 1;
  for (let i = 0; i < n; i++) {
    if (i % SUB_BLOCK === 0) scale = 2 ** Math.floor(unit(next) * 60 - 30);
    f[i] = (unit(next) - 0.5) * scale;
  }
  if (specials) {
    const odd = [NaN, -NaN, Infinity, -Infinity, 2 ** -140, -(2 ** -149), 0, -0, 70000, -1e38, 3.4e38, 65520, 464, 2 ** -20];
    // Each in a sub-block of its own where there are enough (every eighth), at a random place.
    for (let k = 0, at = 0; at < n; k++, at += SUB_BLOCK * 8) f[at + Math.floor(unit(next) * Math.min(SUB_BLOCK, n - at))] = odd[k % odd.length];
  }
  return Tensor.fromStorage(f, "float32", [n]);
}

test("SIMD tally: available on this engine, so the tests below exercise it", () => {
  assert.ok(simdTally(), "WebAssembly SIMD (Node 20+)");
});

test("SIMD tally: a sub-block of simple elements is settled, anything else is handed back in order", () => {
  const t = simdTally()!;
  const n = 3 * SUB_BLOCK + 7;
  const x = new Float32Array(n);
  const y = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    x[i] = 1 + (i % 5) / 8; // 1, 1.125, ..., 1.5
    y[i] = i % 5 === 0 ? x[i] : x[i] + 2 ** -10; // 4 in 5 changed, by 2^-10
  }
  const handed: [number, number][] = [];
  const run = (rel: number, inner = 65520): { changed: number; maxAbs: number } => {
    handed.length = 0;
    t.begin(inner);
    t.block(x, y, n, () => rel, (from, to) => handed.push([from, to]));
    return t.end();
  };
  // maxRel 2^-10: err 2^-10 > 2^-10 * |a| for no |a| >= 1, so the three sub-blocks are settled.
  const changedIn = (from: number, to: number): number => Array.from({ length: to - from }, (_, i) => from + i).filter((i) => i % 5 !== 0).length;
  assert.deepEqual(run(2 ** -10), { changed: changedIn(0, 3 * SUB_BLOCK), maxAbs: 2 ** -10 });
  assert.deepEqual(handed, [[3 * SUB_BLOCK, n]], "only the tail");
  // A lower maxRel: every sub-block would raise it, so each goes to the scalar loop.
  assert.deepEqual(run(2 ** -12), { changed: 0, maxAbs: 0 });
  assert.deepEqual(handed, [[0, SUB_BLOCK], [SUB_BLOCK, 2 * SUB_BLOCK], [2 * SUB_BLOCK, 3 * SUB_BLOCK], [3 * SUB_BLOCK, n]]);
  // One element of the middle sub-block not simple, each way.
  const cases: [string, () => void][] = [
    // (The new value kept finite, or equal to the old one, so that only the old value can reject.)
    ["old NaN", () => (x[SUB_BLOCK + 3] = NaN)],
    ["old -Inf", () => (x[SUB_BLOCK + 3] = -Infinity)],
    ["old at the inner limit", () => (x[SUB_BLOCK + 3] = y[SUB_BLOCK + 3] = 65520)],
    ["old past it", () => (x[SUB_BLOCK + 3] = y[SUB_BLOCK + 3] = -70000)],
    ["new NaN", () => (y[SUB_BLOCK + 1022] = NaN)],
    ["new Inf", () => (y[SUB_BLOCK + 1023] = Infinity)],
    ["a relative-error update", () => (y[SUB_BLOCK + 512] = x[SUB_BLOCK + 512] + 2 ** -9)],
  ];
  for (const [what, spoil] of cases) {
    const keepX = x.slice();
    const keepY = y.slice();
    spoil();
    const settled = run(2 ** -10);
    assert.deepEqual(handed, [[SUB_BLOCK, 2 * SUB_BLOCK], [3 * SUB_BLOCK, n]], what);
    // The other two sub-blocks' counts only.
    assert.deepEqual(settled, { changed: changedIn(0, SUB_BLOCK) + changedIn(2 * SUB_BLOCK, 3 * SUB_BLOCK), maxAbs: 2 ** -10 }, what);
    x.set(keepX);
    y.set(keepY);
  }
});

test("SIMD tally: most sub-blocks of ordinary weights are settled in bulk", () => {
  const x = weights(1 << 16, 3, false);
  const y = cast(x, "bfloat16");
  const t = simdTally()!;
  const xs = x.data as Float32Array;
  const ys = cast(y, "float32").data as Float32Array;
  // The new values as float32, then as the bfloat16 codes themselves (widened in the kernel).
  const runs = [ys, y.data as Uint16Array].map((yv) => {
    let handed = 0;
    let rel = 0;
    t.begin(3.3e38);
    t.block(xs, yv, xs.length, () => rel, (from, to) => {
      handed++;
      for (let i = from; i < to; i++) {
        const m = Math.abs(xs[i]);
        const err = Math.abs(ys[i] - xs[i]);
        if (m !== 0 && err > rel * m) rel = err / m;
      }
    });
    return { handed, rel, ...t.end() };
  });
  const [f32, bf16] = runs;
  assert.ok(f32.handed < 16, `${f32.handed} of 64 sub-blocks handed back`);
  assert.ok(f32.changed > 40000 && f32.maxAbs > 0, JSON.stringify(f32));
  assert.deepEqual(bf16, f32, "bfloat16 codes: the same sub-blocks settled, the same counts");
});

const TARGETS: DTypeName[] = ["bfloat16", "float16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e8m0"];

test("measureConversion with the SIMD pass: the numbers of the scalar loops and of the reference", () => {
  // Three blocks and a ragged tail (not a multiple of 4 or of a sub-block), and a short one.
  for (const [n, seed] of [[3 * 65536 + 1234 + 3, 5], [1000, 6], [SUB_BLOCK + 1, 7]]) {
    for (const specials of [false, true]) {
      const x = weights(n, seed, specials);
      for (const to of TARGETS) {
        for (const saturate of [true, false]) {
          const y = cast(x, to, { saturate });
          const label = `${n} float32 (specials ${specials}) -> ${to}, saturate ${saturate}`;
          const fast = measureConversion(x, y);
          assert.deepEqual(fast, measureConversion(x, y, "float32"), label);
          assert.deepEqual(fast, measureConversion(x, y, "float64"), label);
          assert.deepEqual(fast, referenceStats(x, y), label);
        }
      }
    }
  }
});

test("measureConversion with the SIMD pass: every float16 and bfloat16 code, shuffled, to the other types", () => {
  for (const from of ["float16", "bfloat16"] as DTypeName[]) {
    const next = random(from === "float16" ? 11 : 12);
    const codes = Uint16Array.from({ length: 65536 }, (_, i) => i);
    // Shuffled so that NaN and Inf codes fall in scattered sub-blocks, not only the last ones.
    for (let i = codes.length - 1; i > 0; i--) {
      const j = Math.floor(unit(next) * (i + 1));
      [codes[i], codes[j]] = [codes[j], codes[i]];
    }
    const x = Tensor.fromBytes(new Uint8Array(codes.buffer), from, [codes.length]);
    for (const to of ["float16", "bfloat16", "float32", "float8e4m3fn", "float8e5m2"] as DTypeName[]) {
      if (to === from || dtype(to) === x.dtype) continue;
      const y = cast(x, to);
      const fast = measureConversion(x, y);
      assert.deepEqual(fast, measureConversion(x, y, "float32"), `${from} -> ${to}`);
      assert.deepEqual(fast, referenceStats(x, y), `${from} -> ${to}`);
    }
  }
});
