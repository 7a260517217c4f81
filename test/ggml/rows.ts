/**
 * Float32 rows for the quantizer tests, block by block of one adversarial kind each, so one row
 * meets many edges: Gaussian and heavy-tailed weights at scales from 2^-40 to 2^40, zeros of both
 * signs, constants, one outlier among zeros, subnormals, values near FLT_MAX, ties (multiples of
 * half a power of two, which land on the .5 of nearest_int and roundf), a few levels, ramps, just
 * below and above powers of two, any finite float's bits, and (the last two kinds) NaN and Inf
 * among them, the last with NaN payloads.
 */
import { Rng } from "../support/rng.js";

export const ROW_KINDS = [
  "gaussian", "heavy", "zeros", "constant", "outlier", "subnormal", "huge", "ties", "levels", "ramp", "tiny", "bits", "nearpow2", "nonfinite", "payloads",
] as const;
export type RowKind = (typeof ROW_KINDS)[number];

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

function fromBits(u: number): number {
  u32[0] = u >>> 0;
  return f32[0];
}

function uniform(rng: Rng): number {
  return (rng.u32() + 0.5) / 4294967296;
}

function gauss(rng: Rng): number {
  return Math.sqrt(-2 * Math.log(uniform(rng))) * Math.cos(2 * Math.PI * uniform(rng));
}

/** One block of `size` values of `kind` into x from `at`. */
export function fillBlock(x: Float32Array, at: number, size: number, kind: RowKind, rng: Rng, maxExp = 40): void {
  const scale = 2 ** (rng.below(2 * maxExp + 1) - maxExp);
  const sign = (): number => (rng.below(2) === 0 ? 1 : -1);
  const below = rng.below(2) === 0;
  for (let j = 0; j < size; j++) {
    let v: number;
    switch (kind) {
      case "gaussian": v = gauss(rng) * scale; break;
      case "heavy": v = (gauss(rng) / Math.max(1e-3, Math.abs(gauss(rng)))) * scale; break;
      case "zeros": v = rng.below(3) === 0 ? -0 : 0; break;
      case "constant": v = j === 0 ? gauss(rng) * scale : x[at]; break;
      case "outlier": v = j === 0 ? 0 : rng.below(4) === 0 ? gauss(rng) * 1e-3 * scale : 0; break;
      case "subnormal": v = fromBits((rng.u32() & 0x807fffff) >>> 0); break;
      case "huge": v = sign() * fromBits(0x7f000000 + (rng.u32() & 0x7fffff)) / (rng.below(2) === 0 ? 1 : 2 ** rng.below(60)); break;
      case "ties": v = ((rng.below(33) - 16) / 2) * scale; break;
      case "levels": v = [-2, -1, 0, 1, 2][rng.below(5)] * scale; break;
      case "ramp": v = (-1 + (2 * j) / (size - 1)) * scale; break;
      case "tiny": v = gauss(rng) * 2 ** -(14 + rng.below(20)); break;
      case "bits": {
        const b = rng.u32();
        v = (b & 0x7f800000) === 0x7f800000 ? 0 : fromBits(b);
        break;
      }
      // The whole block below (or at and above) the power of two: its amax is then just below it.
      case "nearpow2": v = sign() * scale * (below ? 1 - (1 + rng.below(4)) * 2 ** -24 : 1 + rng.below(4) * 2 ** -23) * (rng.below(4) === 0 ? 0.75 : 1); break;
      case "nonfinite": case "payloads": v = [NaN, Infinity, -Infinity, 1, -1, 0][rng.below(6)] * (rng.below(2) === 0 ? 1 : gauss(rng)); break;
    }
    x[at + j] = v;
  }
  if (kind === "outlier") x[at + rng.below(size)] = sign() * scale * (1 + rng.below(1000));
  if (kind === "payloads") {
    // NaNs with payloads, signalling ones included, written as bits (a JS number would quiet them).
    const bits = new Uint32Array(x.buffer, x.byteOffset, x.length);
    for (let k = rng.below(4); k > 0; k--) bits[at + rng.below(size)] = (0x7f800000 | (rng.u32() & 0x807fffff) | 1) >>> 0;
  }
}

/**
 * `rows` rows of `n` values, each `block` values one kind drawn from `kinds` (the first blocks take
 * the kinds in turn, so a short row still holds several), at scales from 2^-maxExp to 2^maxExp.
 */
export function adversarialRows(rows: number, n: number, block: number, seed: number, kinds: readonly RowKind[], maxExp = 40): Float32Array {
  const rng = new Rng(seed);
  const x = new Float32Array(rows * n);
  for (let at = 0, b = 0; at < x.length; at += block, b++) {
    const kind = b < kinds.length && rng.below(2) === 0 ? kinds[b] : kinds[rng.below(kinds.length)];
    fillBlock(x, at, block, kind, rng, maxExp);
  }
  return x;
}

/** An importance matrix of `n` columns: gamma-like positive weights, sometimes zeros, ones or spikes. */
export function importance(n: number, seed: number): Float32Array {
  const rng = new Rng(seed ^ 0x5bd1e995);
  const w = new Float32Array(n);
  const style = rng.below(4);
  for (let j = 0; j < n; j++) {
    const g = -Math.log(uniform(rng));
    w[j] = style === 0 ? 1 : style === 1 && rng.below(8) === 0 ? 0 : style === 2 && rng.below(16) === 0 ? g * 1e4 : g * g + 1e-3;
  }
  return w;
}

/**
 * The codebook types: ggml's code aborts on NaN, Inf and sums that overflow there (an error
 * w * diff^2 of a lattice point past FLT_MAX for every neighbour), so their rows keep to
 * GRID_KINDS at scales up to 2^GRID_MAX_EXP.
 */
export const GRID_MAX_EXP = 20;
export const GRID_TYPES: ReadonlySet<string> = new Set(["IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M"]);

/** The kinds whose rows ggml quantizes to a codebook type without aborting. */
export const GRID_KINDS: readonly RowKind[] = ROW_KINDS.filter((k) => k !== "huge" && k !== "bits" && k !== "nonfinite" && k !== "payloads");
