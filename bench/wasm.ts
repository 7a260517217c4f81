/**
 * WebAssembly SIMD kernels against the scalar fast kernels and a plain memory copy:
 *
 *   npx tsc -p tsconfig.test.json && node --expose-gc build/bench/wasm.js [--n 16777216] [--reps 7]
 *
 * Per pair: wasmCast (copies in and out of the module's memory included), fastCast, and the copy
 * bound (TypedArray.prototype.set of the source's bytes into a preallocated array of the same size),
 * each into a preallocated output, as M elements/s from the median of `reps` runs after 2 warm-ups.
 * `--pair float16->float32` runs one pair. Inputs as bench/cast.ts: float32 (and float64) with random
 * sign and mantissa and exponent uniform in [-16, 16]; float16 every code uniformly at random; int64
 * random bits. Checks that wasm and fast give the same bytes.
 */
import os from "node:os";
import { dtype, type DTypeName, type Storage } from "../src/dtype/table.js";
import { fastCast } from "../src/kernels/fast/index.js";
import type { ResolvedCastOptions } from "../src/kernels/reference.js";
import { wasmAvailable, wasmCast } from "../src/kernels/wasm/index.js";

const gc = (globalThis as { gc?: () => void }).gc;
const OPTS: ResolvedCastOptions = { saturate: true, roundMode: "up" };

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

let seed = 0x2545f491;
function u32(): number {
  seed ^= seed << 13;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  seed >>>= 0;
  return seed;
}

function input(t: DTypeName, n: number): Storage {
  if (t === "float64") {
    const w = new Uint32Array(2 * n);
    for (let i = 0; i < n; i++) {
      w[2 * i] = u32();
      w[2 * i + 1] = (u32() & 0x800fffff) | ((1023 - 16 + (u32() % 33)) << 20);
    }
    return new Float64Array(w.buffer);
  }
  if (t === "int64") {
    const w = new Uint32Array(2 * n);
    for (let i = 0; i < 2 * n; i++) w[i] = u32();
    return new BigInt64Array(w.buffer);
  }
  if (t === "float32") {
    const w = new Uint32Array(n);
    for (let i = 0; i < n; i++) w[i] = (u32() & 0x807fffff) | ((127 - 16 + (u32() % 33)) << 23);
    return new Float32Array(w.buffer);
  }
  const h = new Uint16Array(n);
  for (let i = 0; i < n; i++) h[i] = u32();
  return h;
}

function output(t: DTypeName, n: number): Storage {
  switch (t) {
    case "float32": return new Float32Array(n);
    case "int32": return new Int32Array(n);
    case "int8": return new Int8Array(n);
    case "uint8": return new Uint8Array(n);
    default: return new Uint16Array(n);
  }
}

function bytesOf(a: Storage): Uint8Array {
  const t = a as Exclude<Storage, string[]>;
  return new Uint8Array(t.buffer, t.byteOffset, t.byteLength);
}

function median(a: number[]): number {
  const s = a.slice().sort((x, y) => x - y);
  return s[s.length >> 1];
}

/** M elements/s from the median wall-clock and the median CPU time (less hurt by a busy machine). */
function rate(fn: () => void, n: number, reps: number): { wall: number; cpu: number } {
  for (let i = 0; i < 2; i++) fn();
  const ms: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < reps; i++) {
    gc?.();
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    fn();
    ms.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1e3);
  }
  return { wall: n / median(ms) / 1e3, cpu: n / median(cpu) / 1e3 };
}

const f0 = (v: number): string => v.toFixed(0);
const f2 = (v: number): string => v.toFixed(2);

function main(): void {
  const n = arg("n", 16 * 1024 * 1024);
  const reps = arg("reps", 7);
  if (!wasmAvailable()) throw new Error("WebAssembly SIMD is not available here");
  const pairs: [DTypeName, DTypeName][] = [
    ["float32", "float16"], ["float16", "float32"], ["float32", "bfloat16"], ["bfloat16", "float32"], ["float32", "int8"], ["float32", "uint8"],
    ["float64", "float32"], ["int64", "int32"],
  ];
  const only = process.argv.indexOf("--pair");
  const chosen = only >= 0 ? pairs.filter(([f, t]) => `${f}->${t}` === process.argv[only + 1]) : pairs;
  console.log(`Node ${process.version}, ${os.cpus()[0]?.model ?? "?"}, ${os.cpus().length} cores; n = ${n}; median of ${reps}; load ${os.loadavg()[0].toFixed(2)}`);
  console.log("| pair | wasm M/s | fast M/s | memcpy M/s | wasm/fast | wasm/mem | wasm/fast by CPU time |");
  console.log("|---|---:|---:|---:|---:|---:|---:|");
  for (const [f, t] of chosen) {
    const from = dtype(f);
    const to = dtype(t);
    const src = input(f, n);
    const a = output(t, n);
    const b = output(t, n);
    const copy = new Uint8Array(bytesOf(src).length);
    const w = rate(() => { wasmCast(src, from, a, to, n, OPTS); }, n, reps);
    const fast = rate(() => { fastCast(src, from, b, to, n, OPTS); }, n, reps);
    const mem = rate(() => { copy.set(bytesOf(src)); }, n, reps);
    const x = bytesOf(a);
    const y = bytesOf(b);
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) throw new Error(`${f} -> ${t}: wasm and fast differ at byte ${i}`);
    console.log(`| ${f} -> ${t} | ${f0(w.wall)} | ${f0(fast.wall)} | ${f0(mem.wall)} | ${f2(w.wall / fast.wall)}x | ${f2(w.wall / mem.wall)} | ${f2(w.cpu / fast.cpu)}x |`);
  }
}

main();
