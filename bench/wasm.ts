/**
 * WebAssembly SIMD kernels against the scalar fast kernels and a plain memory copy:
 *
 *   npx tsc -p tsconfig.test.json && node --expose-gc build/bench/wasm.js [--n 16777216] [--reps 7]
 *
 * Per pair: wasmCast (copies in and out of the module's memory included), fastCast, and the copy
 * bound (TypedArray.prototype.set of the source's bytes into a preallocated array of the same size),
 * each into a preallocated output, as M elements/s from the median of `reps` runs after 2 warm-ups.
 * `--pair float16->float32` runs one pair. Inputs as bench/cast.ts (bench/inputs.ts). Checks that
 * wasm and fast give the same bytes. For float32 -> int8 / uint8, also the relaxed-SIMD build of
 * the kernel against the plain one, where the engine has relaxed SIMD.
 */
import os from "node:os";
import { dtype, type DTypeName, type Storage } from "../src/dtype/table.js";
import { fastCast } from "../src/kernels/fast/index.js";
import type { ResolvedCastOptions } from "../src/kernels/reference.js";
import { u8View } from "../src/kernels/fast/views.js";
import { useWasmBuild, wasmAvailable, wasmCast, wasmRelaxed } from "../src/kernels/wasm/index.js";
import { Rng } from "../test/support/rng.js";
import { inputFor, median } from "./inputs.js";

const gc = (globalThis as { gc?: () => void }).gc;
const OPTS: ResolvedCastOptions = { saturate: true, roundMode: "up" };

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
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
    const src = inputFor(f, n, new Rng(0x2545f491));
    const a = output(t, n);
    const b = output(t, n);
    const copy = new Uint8Array(u8View(src).length);
    const w = rate(() => { wasmCast(src, from, a, to, n, OPTS); }, n, reps);
    const fast = rate(() => { fastCast(src, from, b, to, n, OPTS); }, n, reps);
    const mem = rate(() => { copy.set(u8View(src)); }, n, reps);
    const x = u8View(a);
    const y = u8View(b);
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) throw new Error(`${f} -> ${t}: wasm and fast differ at byte ${i}`);
    console.log(`| ${f} -> ${t} | ${f0(w.wall)} | ${f0(fast.wall)} | ${f0(mem.wall)} | ${f2(w.wall / fast.wall)}x | ${f2(w.wall / mem.wall)} | ${f2(w.cpu / fast.cpu)}x |`);
    if (t === "int8" || t === "uint8") relaxedRows.push(relaxedAgainstPlain(src, f, t, n, reps));
  }
  if (relaxedRows.length > 0) {
    console.log(`\nf32_i8 with relaxed SIMD (in use here: ${wasmRelaxed() ? "yes" : "no, the engine lacks it"}) against the plain build, turn by turn`);
    console.log("| pair | relaxed M/s | plain M/s | relaxed/plain |");
    console.log("|---|---:|---:|---:|");
    for (const row of relaxedRows) console.log(row);
  }
}

const relaxedRows: string[] = [];

/** The relaxed and plain builds of f32_i8 alternating round by round (both load once, then stay). */
function relaxedAgainstPlain(src: Storage, f: DTypeName, t: DTypeName, n: number, reps: number): string {
  if (!wasmRelaxed()) return `| ${f} -> ${t} | - | - | - |`;
  const from = dtype(f);
  const to = dtype(t);
  const out = output(t, n);
  const times: Record<"auto" | "plain", number[]> = { auto: [], plain: [] };
  for (let r = 0; r < reps + 2; r++) {
    for (const build of ["auto", "plain"] as const) {
      useWasmBuild(build);
      wasmCast(src, from, out, to, 16, OPTS); // instantiates the build outside the timing
      gc?.();
      const t0 = performance.now();
      wasmCast(src, from, out, to, n, OPTS);
      if (r >= 2) times[build].push(performance.now() - t0);
    }
  }
  useWasmBuild("auto");
  const relaxed = n / median(times.auto) / 1e3;
  const plain = n / median(times.plain) / 1e3;
  return `| ${f} -> ${t} | ${f0(relaxed)} | ${f0(plain)} | ${f2(relaxed / plain)}x |`;
}

main();
