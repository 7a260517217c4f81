/**
 * `npm run bench:ggml-dequant`: GGML dequantization per type, tensorcast's decoders (src/ggml) against
 * ggml's own C `to_float` (llama.cpp's libggml-base from test-peers/, called through koffi) on the same
 * blocks in the same run, both on one thread, both into a buffer allocated once.
 *
 * Blocks are random bytes with realistic scales (binary16 scales of about 1e-3, E8M0 / UE4M3 scales
 * near 1), so no NaN or subnormal path dominates. Before timing, the two outputs are compared bit for
 * bit (NaN as NaN); a difference stops the run. Each contender's time is per call over --n values;
 * the contenders take turns for --reps calls; the table gives M values/s by the median (the fastest)
 * and the ratio ours / ggml's (above 1: tensorcast is faster). Three tensorcast contenders: the
 * reference decoders (src/ggml/dequantize.ts, useGgmlSimd(false)), dequantizeBlocks on ordinary
 * arrays (the SIMD kernels where the type has one, streamed through their memory: the blocks copied
 * in, the float32 copied out), and dequantizeBlocks with the blocks and the output in one arena
 * (the kernels in place, no copy). A last column, "store", is no decoder: a v128.store loop writing
 * the same number of float32 into a WebAssembly memory of its own, in the same turns, the ceiling
 * that the output's memory traffic alone sets (at 1 Mi values the 4 MiB output outgrows L2).
 *
 * Arguments: --n N (values per call, default 1 Mi), --reps R (default 9), --only NAME,NAME, --burst K
 * (each turn runs a contender K times in a row and times all but the first: outputs warm in the
 * caches, as a streaming caller's reused chunk buffer is, instead of evicted by the other contenders).
 */
import { loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { createArena } from "../src/arena.js";
import { dequantizeBlocks, GGML_TYPES, canDequantize, type GgmlType } from "../src/ggml/index.js";
import { useGgmlSimd } from "../src/ggml/simd.js";
import { get, i32, i32Add, i32Sub, i32x4Splat, moduleBytes, repeatWhile, set, store } from "../src/kernels/wasm/encoder.js";
import { ggmlPeer } from "../test/support/ggml-peer.js";
import { Rng } from "../test/support/rng.js";

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}
const N = Number(arg("--n") ?? 1 << 20);
const REPS = Number(arg("--reps") ?? 9);
const BURST = Math.max(1, Number(arg("--burst") ?? 1));
const ONLY = arg("--only")?.toUpperCase().split(",");

const peer = ggmlPeer();
if (typeof peer === "string") {
  console.error(`bench:ggml-dequant needs the ggml peer: ${peer}`);
  process.exit(1);
}

/** A function writing `values` float32 (zeros) by v128.store into a WebAssembly memory of its own. */
function storeLoop(values: number): () => void {
  const [DST, COUNT, ZERO, V] = [0, 1, 2, 3];
  const body = [
    ...set(V, i32x4Splat(get(ZERO))),
    ...repeatWhile(COUNT, [
      ...[0, 16, 32, 48].flatMap((off) => store(get(DST), get(V), off)),
      ...set(DST, i32Add(get(DST), i32(64))),
      ...set(COUNT, i32Sub(get(COUNT), i32(1))),
    ]),
  ];
  const pages = Math.ceil((4 * values) / 65536) + 1;
  const w = (globalThis as unknown as { WebAssembly: { Instance: new (m: object, i: object) => { exports: Record<string, (...a: number[]) => void> }; Module: new (b: Uint8Array) => object } }).WebAssembly;
  const fill = new w.Instance(new w.Module(moduleBytes([{ name: "fill", params: 3, i32Locals: 0, v128Locals: 1, body }], pages)), {}).exports.fill;
  const count = Math.ceil(values / 16);
  return () => fill(0, count, 0);
}

/** Random blocks of `t` whose scale fields hold ordinary values. */
function blocks(t: GgmlType, count: number, seed: number): Uint8Array {
  const rng = new Rng(seed);
  const out = new Uint8Array(count * t.typeSize);
  for (let i = 0; i < out.length; i++) out[i] = rng.below(256);
  for (let b = 0; b < count; b++) {
    for (const f of t.fields) {
      for (let k = 0; k < f.count; k++) {
        if (f.kind === "f16") {
          // 0x1000-0x17ff: binary16 values from 2^-11 to 2^-9, positive or negative.
          const h = 0x1000 + rng.below(0x800) + (rng.below(2) << 15);
          const at = b * t.typeSize + f.offset + 2 * k;
          out[at] = h & 0xff;
          out[at + 1] = h >> 8;
        } else if (f.kind === "e8m0") out[b * t.typeSize + f.offset + k] = 120 + rng.below(16);
        else if (f.kind === "ue4m3") out[b * t.typeSize + f.offset + k] = 0x30 + rng.below(0x20);
      }
    }
  }
  return out;
}

const median = (v: number[]): number => [...v].sort((a, b) => a - b)[v.length >> 1];
const sameBits = (a: Float32Array, b: Float32Array): boolean => {
  const x = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const y = new Uint32Array(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i] && !(a[i] !== a[i] && b[i] !== b[i])) return false;
  return true;
};

const rows: string[][] = [];
for (const t of GGML_TYPES) {
  if (!t.quantized || !t.stored || !canDequantize(t)) continue;
  if (ONLY && !ONLY.includes(t.name)) continue;
  const traits = peer.traits(t.id);
  if (!traits.hasToFloat) continue;
  const count = Math.max(1, Math.floor(N / t.blockSize));
  const n = count * t.blockSize;
  const src = blocks(t, count, 0x9e37 + t.id);
  const ours = new Float32Array(n);
  const theirs = new Float32Array(n);
  const arena = createArena(src.length + 4 * n + 128);
  const srcIn = arena.zeros("uint8", [src.length]).data as Uint8Array;
  srcIn.set(src);
  const outIn = arena.zeros("float32", [n]).data as Float32Array;
  peer.toFloatInto(t.id, src, theirs);
  const runs = {
    reference: () => {
      useGgmlSimd(false);
      dequantizeBlocks(t, src, 0, ours, 0, count);
      useGgmlSimd(true);
    },
    arrays: () => dequantizeBlocks(t, src, 0, ours, 0, count),
    arena: () => dequantizeBlocks(t, srcIn, 0, outIn, 0, count),
    ggml: () => peer.toFloatInto(t.id, src, theirs),
    store: storeLoop(n),
  };
  for (const [name, run] of Object.entries(runs)) {
    if (name === "ggml" || name === "store") continue;
    ours.fill(0);
    outIn.fill(0);
    run();
    if (!sameBits(name === "arena" ? outIn : ours, theirs)) throw new Error(`${t.name}: tensorcast (${name}) and ggml differ on the bench's blocks`);
  }
  const times: Record<string, number[]> = { reference: [], arrays: [], arena: [], ggml: [], store: [] };
  for (let r = 0; r < REPS + 1; r++) {
    for (const [name, run] of Object.entries(runs)) {
      for (let b = 0; b < BURST; b++) {
        const t0 = performance.now();
        run();
        // The first turn warms every contender up (the JIT, the pages of the outputs); with
        // --burst, a turn's first call brings its output back into the caches the others used.
        if (r > 0 && (b > 0 || BURST === 1)) times[name].push(performance.now() - t0);
      }
    }
  }
  const rate = (ms: number): string => (n / ms / 1000).toFixed(0);
  const cell = (name: string): string => `${rate(median(times[name]))} (${rate(Math.min(...times[name]))})`;
  const ratio = (name: string): string =>
    `${(median(times.ggml) / median(times[name])).toFixed(2)}x (${(Math.min(...times.ggml) / Math.min(...times[name])).toFixed(2)}x)`;
  rows.push([t.name, cell("ggml"), cell("reference"), ratio("reference"), cell("arrays"), ratio("arrays"), cell("arena"), ratio("arena"), cell("store")]);
}

console.log(`GGML dequantization, ${N} values per call, ${REPS} ${BURST > 1 ? `turns of ${BURST} calls (the first of each untimed)` : "calls"} each, one thread; M values/s by the median (the fastest); load average ${loadavg().map((l) => l.toFixed(2)).join(" ")}\n`);
const head = ["type", "ggml to_float", "reference", "/ ggml", "arrays", "/ ggml", "arena", "/ ggml", "store"];
const width = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
for (const r of [head, ...rows]) console.log(r.map((c, i) => c.padEnd(width[i])).join("  "));
