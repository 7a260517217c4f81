/**
 * The WebAssembly neighbour searches of the codebook types (src/ggml/quantize/lattice-simd.ts)
 * against the reference scans, bit for bit: every IQ1 / IQ2 / IQ3 type with importance weights on
 * weight-like rows at many scales, on adversarial blocks, on rows of a few repeated levels (so that
 * neighbours tie exactly), with weights that are often zero (every neighbour of a group then ties);
 * and the kernel alone on single searches: ties, NaN and overflowing errors (no neighbour, -1), and
 * a pool small enough to start over many times.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { iqGridIndices } from "../../src/ggml/grids.js";
import { ggmlType, quantizeRows } from "../../src/ggml/index.js";
import { Lattice } from "../../src/ggml/quantize/lattice.js";
import { NeighbourKernel } from "../../src/ggml/quantize/lattice-simd.js";
import { useGgmlQuantizeSimd } from "../../src/ggml/quantize/search-simd.js";
import { Rng } from "../support/rng.js";
import { adversarialRows, GRID_KINDS, GRID_MAX_EXP, importance } from "./rows.js";

const TYPES = ["IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S"];

/** The bytes, or the error message where the type refuses the row. */
function outcome(type: string, x: Float32Array, n: number, qw: Float32Array): Uint8Array | string {
  try {
    return quantizeRows(type, x, n, qw);
  } catch (e) {
    return (e as Error).message;
  }
}

function assertSame(type: string, x: Float32Array, n: number, qw: Float32Array, what: string): void {
  const fast = outcome(type, x, n, qw);
  useGgmlQuantizeSimd(false);
  let ref: Uint8Array | string;
  try {
    ref = outcome(type, x, n, qw);
  } finally {
    useGgmlQuantizeSimd(true);
  }
  if (typeof fast === "string" || typeof ref === "string") {
    assert.equal(fast, ref, `${type}, ${what}`);
    return;
  }
  const size = ggmlType(type).typeSize;
  for (let i = 0; i < fast.length; i++) {
    if (fast[i] !== ref[i]) assert.fail(`${type}, ${what}: byte ${i} (block ${Math.floor(i / size)}): SIMD 0x${fast[i].toString(16)}, reference 0x${ref[i].toString(16)}`);
  }
  assert.equal(fast.length, ref.length);
}

function gaussianRows(rows: number, n: number, seed: number, e: number): Float32Array {
  const rng = new Rng(seed);
  const u = (): number => (rng.u32() + 0.5) / 2 ** 32;
  const x = new Float32Array(rows * n);
  for (let i = 0; i < x.length; i++) x[i] = Math.sqrt(-2 * Math.log(u())) * Math.cos(2 * Math.PI * u()) * 2 ** e * (rng.below(32) === 0 ? 6 : 1);
  return x;
}

/** Values from a handful of levels (times one scale), so that several neighbours' errors are equal. */
function levelRows(rows: number, n: number, seed: number): Float32Array {
  const rng = new Rng(seed);
  const x = new Float32Array(rows * n);
  const levels = [-3, -1, 0, 1, 2, 3, 5];
  for (let i = 0; i < x.length; i++) x[i] = levels[rng.below(levels.length)] * 0.25;
  return x;
}

/** Importance weights mostly zero, or zero over whole groups of 8. */
function sparseImportance(n: number, seed: number): Float32Array {
  const rng = new Rng(seed);
  const w = new Float32Array(n);
  for (let j = 0; j < n; j++) w[j] = rng.below(4) === 0 ? 1 + rng.below(3) : 0;
  for (let g = 0; g < n; g += 8) if (rng.below(3) === 0) w.fill(0, g, g + 8);
  return w;
}

for (const type of TYPES) {
  test(`${type}: the neighbour kernel gives the reference's bytes on weight-like rows at scales 2^-20 .. 2^20`, () => {
    const n = 1024;
    for (let e = -20; e <= 20; e += 5) assertSame(type, gaussianRows(2, n, 0x51 + e, e), n, importance(n, 0x77 + e), `scale 2^${e}`);
  });
  test(`${type}: the neighbour kernel gives the reference's bytes on adversarial blocks`, () => {
    const n = 512;
    for (let seed = 1; seed <= 16; seed++) {
      for (const block of [8, 32]) {
        assertSame(type, adversarialRows(2, n, block, seed * 5 + block, GRID_KINDS, GRID_MAX_EXP), n, importance(n, seed), `seed ${seed}, blocks of ${block}`);
      }
    }
  });
  test(`${type}: the neighbour kernel gives the reference's bytes on rows of a few levels and on sparse weights (ties)`, () => {
    const n = 512;
    for (let seed = 1; seed <= 12; seed++) {
      assertSame(type, levelRows(2, n, seed), n, importance(n, seed + 40), `levels, seed ${seed}`);
      assertSame(type, levelRows(2, n, seed), n, sparseImportance(n, seed), `levels, sparse weights, seed ${seed}`);
      assertSame(type, gaussianRows(2, n, seed, 0), n, sparseImportance(n, seed + 1), `gaussian, sparse weights, seed ${seed}`);
    }
  });
}

const LATTICES = [
  { name: "iq2xxs", nwant: 2, dim: 8, bits: 2 },
  { name: "iq2xs", nwant: 2, dim: 8, bits: 2 },
  { name: "iq2s", nwant: 1, dim: 8, bits: 2 },
  { name: "iq1s", nwant: 3, dim: 8, bits: 2 },
  { name: "iq3xxs", nwant: 2, dim: 4, bits: 3 },
  { name: "iq3s", nwant: 3, dim: 4, bits: 3 },
] as const;

/** The reference's answer (the scalar scan, SIMD off), or -1 where it refuses. */
function referenceBest(lat: Lattice, u: number, x: Float32Array, w: Float32Array, scale: number): number {
  useGgmlQuantizeSimd(false);
  try {
    return lat.bestNeighbour(u, x, 0, w, scale, new Int8Array(8), 0);
  } catch {
    return -1;
  } finally {
    useGgmlQuantizeSimd(true);
  }
}

for (const { name, nwant, dim, bits } of LATTICES) {
  test(`${name}: single searches of the kernel, in a pool of one page, equal the reference's`, () => {
    const lat = new Lattice(iqGridIndices()[name], nwant, dim, bits);
    const kernel = NeighbourKernel.create(Float32Array.from(lat.grid), dim, false, lat.map.length, (v) => lat.neighbours(v), 1);
    assert.ok(kernel);
    const rng = new Rng(0xabc + dim);
    const top = bits === 2 ? 3 : 8;
    const x = new Float32Array(dim);
    const w = new Float32Array(dim);
    let offGrid = 0, none = 0;
    for (let t = 0; t < 6000; t++) {
      let u = 0;
      for (let i = 0; i < dim; i++) u |= rng.below(top) << (bits * i);
      if (lat.map[u] >= 0) continue;
      offGrid++;
      const style = t % 6;
      for (let i = 0; i < dim; i++) {
        x[i] = style === 0 ? rng.below(16) : style === 1 ? (rng.u32() / 2 ** 32) * 2 ** (rng.below(40) - 20) : (rng.below(2 * top) + 1) / 2;
        w[i] = style === 2 ? 0 : style === 3 && rng.below(3) === 0 ? 0 : style === 4 && i === 0 && rng.below(4) === 0 ? NaN : 1 + rng.below(4);
      }
      // Scales that tie candidates exactly, ordinary ones, and ones whose errors overflow (-1).
      const scale = Math.fround(style === 5 ? 2 ** (rng.below(2) === 0 ? 125 : 60) : rng.below(2) === 0 ? 1 : 0.5 + rng.u32() / 2 ** 32);
      if (style === 5 && scale > 2 ** 100) for (let i = 0; i < dim; i++) w[i] = 2 ** 100;
      const want = referenceBest(lat, u, x, w, scale);
      if (want < 0) none++;
      kernel.values(x, 0, w, 0, dim);
      assert.equal(kernel.best(u, 0, scale, 0), want, `u 0x${u.toString(16)}, x ${Array.from(x)}, w ${Array.from(w)}, scale ${scale}`);
    }
    assert.ok(offGrid > 1000 && none > 10, `${offGrid} searches, ${none} without a neighbour`);
  });
}
