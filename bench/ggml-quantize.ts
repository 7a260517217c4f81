/**
 * `npm run bench:ggml-quantize`: GGML quantization per type, tensorcast's encoders (src/ggml/quantize)
 * against ggml's own `ggml_quantize_chunk` (llama.cpp's libggml-base from test-peers/, called through
 * koffi) on the same rows in the same run, both on one thread, each into an output allocated once.
 *
 * The rows look like a model's weights: rows of 4096 values, normal with a standard deviation of
 * 0.02 and a heavier tail (one value in 64 drawn five times wider), plus a few outlier columns, so
 * that the encoders' searches take the paths real tensors make them take. Before timing, the two
 * outputs are compared byte for byte; a difference stops the run. Each contender's time is per call
 * over --n values; the contenders take turns for --reps calls; the table gives M values/s by the
 * median (the fastest) and the ratio ours / ggml's (above 1: tensorcast is faster). Three
 * tensorcast contenders: quantizeRows (a fresh output each call, its page faults included),
 * quantizeRowsInto an output allocated once (as ggml's), and quantizeRowsInto with the rows and the
 * output in one arena (the per-block kernels then run in place, with no copy in or out).
 *
 * Arguments: --n N (values per call, default 1 Mi), --reps R (default 7), --only NAME,NAME,
 * --row N (values per row, default 4096), --imatrix (with importance weights, for both),
 * --reference (a third contender: tensorcast with its WebAssembly SIMD searches off, the scalar
 * reference path, with its ratio to ggml's).
 */
import { loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { ggmlRowBytes, ggmlType } from "../src/ggml/types.js";
import { createArena } from "../src/arena.js";
import { quantizeRows, quantizeRowsInto } from "../src/ggml/quantize/index.js";
import { useGgmlQuantizeSimd } from "../src/ggml/quantize/search-simd.js";
import { GGML_BASE, ggmlPeer, peerKoffi } from "../test/support/ggml-peer.js";
import { Rng } from "../test/support/rng.js";

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}
const ROW = Number(arg("--row") ?? 4096);
const N = Math.max(ROW, Math.floor(Number(arg("--n") ?? 1 << 20) / ROW) * ROW);
const REPS = Number(arg("--reps") ?? 7);
const ONLY = arg("--only")?.toUpperCase().split(",");
const IMATRIX = process.argv.includes("--imatrix");
const REFERENCE = process.argv.includes("--reference");

/** The types `tensorcast quantize` and `convert --to` write without an importance matrix; with one, also the IQ1 / IQ2 / IQ3 types. */
const TYPES = ["F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS", "TQ1_0", "TQ2_0", "MXFP4",
  ...(IMATRIX ? ["IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S"] : [])];

const peer = ggmlPeer();
const koffi = peerKoffi(GGML_BASE, "the ggml peer");
if (typeof peer === "string" || typeof koffi === "string") {
  console.error(`bench:ggml-quantize needs the ggml peer: ${typeof peer === "string" ? peer : koffi}`);
  process.exit(1);
}
const lib = koffi.load(GGML_BASE);
const quantizeChunk = lib.func("size_t ggml_quantize_chunk(int type, const float *src, uint8_t *dst, int64_t start, int64_t nrows, int64_t n_per_row, const float *imatrix)");
const quantizeInit = lib.func("void ggml_quantize_init(int type)");

/** Weight-like rows: see the file comment. */
export function weightRows(n: number, row: number, seed: number): Float32Array {
  const rng = new Rng(seed);
  const u = (): number => (rng.u32() + 0.5) / 2 ** 32;
  const x = new Float32Array(n);
  const outlier = new Set<number>();
  for (let k = 0; k < 4; k++) outlier.add(rng.below(row));
  for (let i = 0; i < n; i += 2) {
    const r = Math.sqrt(-2 * Math.log(u()));
    const a = 2 * Math.PI * u();
    x[i] = 0.02 * r * Math.cos(a) * (rng.below(64) === 0 ? 5 : 1);
    if (i + 1 < n) x[i + 1] = 0.02 * r * Math.sin(a) * (rng.below(64) === 0 ? 5 : 1);
  }
  for (let i = 0; i < n; i++) if (outlier.has(i % row)) x[i] *= 8;
  return x;
}

const median = (v: number[]): number => [...v].sort((a, b) => a - b)[v.length >> 1];

const rows: string[][] = [];
for (const name of TYPES) {
  if (ONLY && !ONLY.includes(name)) continue;
  const t = ggmlType(name);
  const x = weightRows(N, ROW, 0x51ed + t.id);
  const qw = IMATRIX ? weightRows(ROW, ROW, 0x77).map((v) => v * v * 1e4 + 1e-3) : undefined;
  const nrows = N / ROW;
  const theirs = new Uint8Array(nrows * ggmlRowBytes(t, ROW)!);
  quantizeInit(t.id);
  const into = new Uint8Array(theirs.length);
  const arena = createArena(4 * N + theirs.length + 4096);
  const xIn = arena.zeros("float32", [N]).data as Float32Array;
  xIn.set(x);
  const outIn = arena.zeros("uint8", [theirs.length]).data as Uint8Array;
  const runs: Record<string, () => unknown> = {
    ggml: () => {
      quantizeChunk(t.id, x, theirs, 0, nrows, ROW, qw ?? null);
    },
    tensorcast: () => quantizeRows(t, x, ROW, qw),
    into: () => quantizeRowsInto(t, x, ROW, into, qw),
    arena: () => quantizeRowsInto(t, xIn, ROW, outIn, qw),
  };
  if (REFERENCE) {
    runs.reference = () => {
      useGgmlQuantizeSimd(false);
      try {
        return quantizeRows(t, x, ROW, qw);
      } finally {
        useGgmlQuantizeSimd(true);
      }
    };
  }
  const ours = runs.tensorcast() as Uint8Array;
  runs.ggml();
  if (ours.length !== theirs.length || ours.some((b, i) => b !== theirs[i])) throw new Error(`${name}: tensorcast and ggml_quantize_chunk differ on the bench's rows`);
  for (const k of ["into", "arena"]) {
    const o = runs[k]() as Uint8Array;
    if (o.some((b, i) => b !== theirs[i])) throw new Error(`${name}: tensorcast (${k}) and ggml_quantize_chunk differ on the bench's rows`);
  }
  const ref = runs.reference?.() as Uint8Array | undefined;
  if (ref !== undefined && ref.some((b, i) => b !== theirs[i])) throw new Error(`${name}: tensorcast's reference path and ggml_quantize_chunk differ on the bench's rows`);
  const times: Record<string, number[]> = Object.fromEntries(Object.keys(runs).map((k) => [k, []]));
  for (let r = 0; r < REPS + 1; r++) {
    for (const [k, run] of Object.entries(runs)) {
      const t0 = performance.now();
      run();
      // The first turn warms both up (the JIT, the output's pages).
      if (r > 0) times[k].push(performance.now() - t0);
    }
  }
  const rate = (ms: number): string => (N / ms / 1000).toFixed(ms > 0 && N / ms / 1000 < 10 ? 2 : 0);
  const cell = (k: string): string => `${rate(median(times[k]))} (${rate(Math.min(...times[k]))})`;
  const ratio = (k: string): string => `${(median(times.ggml) / median(times[k])).toFixed(2)}x (${(Math.min(...times.ggml) / Math.min(...times[k])).toFixed(2)}x)`;
  rows.push([name, cell("ggml"), cell("tensorcast"), ratio("tensorcast"), cell("into"), ratio("into"), cell("arena"), ratio("arena"), ...(REFERENCE ? [cell("reference"), ratio("reference")] : [])]);
  console.error(`${name} done`);
}

console.log(`GGML quantization, ${N} values per call (rows of ${ROW})${IMATRIX ? ", with importance weights" : ""}, ${REPS} calls each, one thread; M values/s by the median (the fastest); bytes equal; load average ${loadavg().map((l) => l.toFixed(2)).join(" ")}\n`);
const head = ["type", "ggml_quantize_chunk", "quantizeRows", "/ ggml", "into", "/ ggml", "arena", "/ ggml", ...(REFERENCE ? ["reference", "reference / ggml"] : [])];
const width = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
for (const r of [head, ...rows]) console.log(r.map((c, i) => c.padEnd(width[i])).join("  "));
