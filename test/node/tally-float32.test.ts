/**
 * The edges of the SIMD tally's float32 test (src/node/convert/tally-simd.ts, module comment):
 * sub-blocks built so that a looser float32 test would settle an element the scalar loop counts
 * differently, each next to the running maxRel the scalar loop holds there (simulated here in
 * float64, as the scalar loop computes it). measureConversion must give the scalar loops' and the
 * reference's numbers; the direct checks show the test rejects what it must and still settles
 * the plain cases (zeros, unchanged values at maxRel 0).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Tensor } from "../../src/index.js";
import { measureConversion } from "../../src/node/convert/kernel.js";
import { simdTally } from "../../src/node/convert/cast-tally.js";
import { ceil32, rhoOf, SUB_BLOCK } from "../../src/node/convert/tally-simd.js";
import { Rng } from "../support/rng.js";
import { referenceStats } from "./reference-stats.js";

const F = new Float32Array(1);
const U = new Uint32Array(F.buffer);
/** The float32 next to `v` (a float32) away from zero, `steps` times (negative: toward zero). */
function step(v: number, steps: number): number {
  F[0] = v;
  U[0] += steps;
  return F[0]!;
}

/** The running maxRel of the scalar loop after elements [0, n) (finite pairs only, as it counts). */
function runningRel(x: Float32Array, y: Float32Array, n: number, rel = 0, from = 0): number {
  for (let j = from; j < n; j++) {
    const a = x[j]!;
    const b = y[j]!;
    const m = Math.abs(a);
    if (!(m <= Number.MAX_VALUE && Math.abs(b) <= Number.MAX_VALUE) || a === b) continue;
    const err = Math.abs(b - a);
    if (m !== 0 && err > rel * m) rel = err / m;
  }
  return rel;
}

type Kind = "just-above" | "at-or-below" | "tiny" | "inexact";

/**
 * `blocks` sub-blocks: the first of weights rounded to 8 significant bits (a maxRel near 2^-8),
 * then each of unchanged weights with one element of `kind` at a random place:
 * - just-above: b the float32 nearest a whose |b - a| exceeds maxRel * |a| (an update, by a hair);
 * - at-or-below: the farthest b with no update (the float64 test settles it, float32 may not);
 * - tiny: a a subnormal k * 2^-149 and b = a + 2^-148, k picked so that the update is by a hair
 *   and fl32(rho * |a|) rounds up to |b - a| (what the 2^-126 guard is for);
 * - inexact: |b - a| not a float32 (b beyond 2a, or of the other sign), after a first sub-block
 *   whose maxRel (8) keeps it from being an update: the float32 difference would be wrong.
 */
function adversarial(kind: Kind, blocks: number, seed: number): { x: Float32Array; y: Float32Array } {
  const rng = new Rng(seed);
  const n = blocks * SUB_BLOCK;
  const x = new Float32Array(n);
  const y = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    x[i] = ((rng.u32() / 4294967296) * 2 - 1) * 0.5;
    y[i] = x[i]!;
  }
  if (kind === "inexact") {
    // maxRel 8 from one element whose error (2^-7) stays below the inexact ones'.
    x[5] = 2 ** -10;
    y[5] = 9 * 2 ** -10;
  } else {
    for (let i = 0; i < SUB_BLOCK; i++) y[i] = Math.fround(Number(x[i]!.toPrecision(3)));
  }
  let rel = runningRel(x, y, SUB_BLOCK);
  for (let k = 1; k < blocks; k++) {
    const at = k * SUB_BLOCK + rng.below(SUB_BLOCK);
    const a = x[at]!;
    const sign = a < 0 ? -1 : 1;
    if (kind === "tiny") {
      // 1.5 / rho <= k < 2 / rel: 2 / k > rel (an update), and fl32(rho * k * 2^-149) rounds to 2 * 2^-149.
      const units = Math.ceil(2 / rel) - 1;
      x[at] = sign * units * 2 ** -149;
      y[at] = sign * (units + 2) * 2 ** -149;
    } else if (kind === "inexact") {
      const m = 1 + rng.below(1 << 20) * 2 ** -23 + 2 ** -23; // odd last bit
      x[at] = sign * m;
      // |b - a| an odd multiple of 2^-23 in [2, 4), where float32 steps by 2^-22.
      y[at] = rng.below(2) === 0 ? sign * (3.5 + 2 ** -22) : -sign * (1 + 2 ** -22);
    } else {
      let b = Math.fround(a + sign * rel * Math.abs(a));
      const over = (v: number): boolean => Math.abs(v - a) > rel * Math.abs(a);
      while (!over(b)) b = step(b, 1);
      while (over(step(b, -1))) b = step(b, -1);
      y[at] = kind === "just-above" ? b : step(b, -1);
    }
    rel = runningRel(x, y, (k + 1) * SUB_BLOCK, rel, k * SUB_BLOCK);
  }
  return { x, y };
}

/** measureConversion's numbers against the scalar loops and the reference, for float32 pairs. */
function agree(x: Float32Array, y: Float32Array, label: string): void {
  const source = Tensor.fromStorage(x, "float32", [x.length]);
  const result = Tensor.fromStorage(y, "float32", [y.length]);
  const fast = measureConversion(source, result);
  assert.deepEqual(fast, measureConversion(source, result, "float32"), label);
  assert.deepEqual(fast, measureConversion(source, result, "float64"), label);
  assert.deepEqual(fast, referenceStats(source, result), label);
}

test("float32 tally test: elements a looser test would settle give the scalar loop's numbers", () => {
  for (const kind of ["just-above", "at-or-below", "tiny", "inexact"] as Kind[]) {
    for (const seed of [1, 2, 3]) {
      const { x, y } = adversarial(kind, 48, seed);
      agree(x, y, `${kind}, seed ${seed}`);
    }
  }
});

test("float32 tally test: each adversarial element is handed back to the scalar loop", () => {
  const t = simdTally()!;
  for (const kind of ["just-above", "tiny", "inexact"] as Kind[]) {
    const { x, y } = adversarial(kind, 16, 7);
    const handed: number[] = [];
    // The running maxRel as the scalar loop would hold it before each sub-block.
    let rel = runningRel(x, y, SUB_BLOCK);
    t.begin(3.4e38);
    t.block(x.subarray(SUB_BLOCK), y.subarray(SUB_BLOCK), 15 * SUB_BLOCK, () => rel, (from, to) => {
      handed.push(from / SUB_BLOCK);
      rel = runningRel(x.subarray(SUB_BLOCK), y.subarray(SUB_BLOCK), to, rel, from);
    });
    assert.deepEqual(handed, Array.from({ length: 15 }, (_, i) => i), kind);
  }
});

test("float32 tally test: zeros, signed zeros and unchanged values are settled at maxRel 0", () => {
  const t = simdTally()!;
  const n = 4 * SUB_BLOCK;
  const x = new Float32Array(n);
  const y = new Float32Array(n);
  const rng = new Rng(9);
  for (let i = 0; i < n; i++) {
    // Every third a zero of either sign, new value the other zero; the rest unchanged, 2^-140 to 2^9.
    if (i % 3 === 0) {
      x[i] = i % 2 === 0 ? 0 : -0;
      y[i] = i % 2 === 0 ? -0 : 0;
    } else {
      x[i] = ((rng.u32() / 4294967296) * 2 - 1) * 2 ** (rng.below(150) - 140);
      y[i] = x[i]!;
    }
  }
  let handed = 0;
  t.begin(65520);
  t.block(x, y, n, () => 0, () => handed++);
  assert.equal(handed, 0);
  assert.deepEqual(t.end(), { changed: 0, maxAbs: 0 });
  agree(x, y, "zeros and unchanged");
});

test("float32 tally test: rho and ceil32 bound maxRel and the inner limit as the proof needs", () => {
  const rng = new Rng(10);
  for (let i = 0; i < 20000; i++) {
    const rel = (rng.u32() / 4294967296) * 2 ** (rng.below(80) - 40);
    const rho = rhoOf(rel);
    assert.equal(Math.fround(rho), rho);
    assert.ok(rho <= rel * (1 - 2 ** -20) && step(rho, 1) > rel * (1 - 2 ** -20), `rho of ${rel}`);
    const inner = (rng.u32() / 4294967296) * 2 ** (rng.below(300) - 150);
    const c = ceil32(inner);
    assert.ok(c >= inner && Math.fround(c) === c && (c === 0 || step(c, -1) < inner), `ceil32 of ${inner}`);
  }
  assert.equal(rhoOf(0), 0);
  assert.equal(ceil32(65520), 65520);
  assert.equal(ceil32(3.5e38), Infinity);
  assert.equal(ceil32(-0.1), Math.fround(-0.1) >= -0.1 ? Math.fround(-0.1) : step(Math.fround(-0.1), -1));
  assert.ok(Number.isNaN(ceil32(NaN)));
});
