/**
 * The fast kernels alone: `fastCast` into a preallocated output (what castAsync workers or a caller
 * reusing buffers would pay), beside the same call with a fresh zero-filled output (what cast()
 * pays: the first write to each fresh page faults). Best of `reps` by process CPU time, which is
 * steadier than wall time on a shared machine.
 *
 *   npx tsc -p tsconfig.test.json && node build/bench/kernels.js [--size N] [--reps 15]
 */
import { dtype, type DTypeName, type Storage } from "../src/dtype/table.js";
import { fastCast } from "../src/kernels/fast/index.js";
import type { ResolvedCastOptions } from "../src/kernels/reference.js";
import { allocateStorage } from "../src/tensor.js";

const PAIRS: [DTypeName, DTypeName][] = [
  ["float32", "float16"], ["float16", "float32"], ["float32", "bfloat16"], ["bfloat16", "float32"],
  ["float32", "float8e4m3fn"], ["float8e4m3fn", "float32"], ["float32", "float8e5m2"], ["float32", "float8e8m0"],
  ["float32", "int8"], ["float32", "int32"], ["int64", "int32"], ["float64", "float32"], ["float32", "uint4"],
  ["float32", "float4e2m1"], ["float16", "float8e4m3fn"], ["float8e4m3fn", "float16"],
];

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

let seed = 0x5eedbe9c;
function u32(): number {
  seed ^= seed << 13;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  return seed >>> 0;
}

/** Random bits for 8/16-bit sources; for float32 / float64 / int64 the bench's distributions. */
function input(t: DTypeName, n: number): Storage {
  switch (t) {
    case "float32": case "float64": {
      const w = new Uint32Array(n);
      for (let i = 0; i < n; i++) w[i] = (u32() & 0x807fffff) | ((111 + (u32() % 33)) << 23);
      const f = new Float32Array(w.buffer);
      return t === "float32" ? f : Float64Array.from(f);
    }
    case "int64": {
      const w = new Uint32Array(2 * n);
      for (let i = 0; i < 2 * n; i++) w[i] = u32();
      return new BigInt64Array(w.buffer);
    }
    default: {
      const s = allocateStorage(dtype(t), n) as Uint8Array | Uint16Array;
      for (let i = 0; i < s.length; i++) s[i] = u32();
      return s;
    }
  }
}

function cpuMs(fn: () => void): number {
  const c0 = process.cpuUsage();
  fn();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1e3;
}

const n = arg("--size", 1 << 22);
const reps = arg("--reps", 15);
const opts: ResolvedCastOptions = { saturate: true, roundMode: "up" };
console.log(`fastCast kernels, ${n} elements, best of ${reps} by CPU time, Node ${process.version}\n`);
console.log("| pair | preallocated M/s | fresh output M/s |");
console.log("| --- | --- | --- |");
for (const [a, b] of PAIRS) {
  const from = dtype(a);
  const to = dtype(b);
  const src = input(a, n);
  const out = allocateStorage(to, n);
  let pre = Infinity;
  let fresh = Infinity;
  for (let r = 0; r < reps; r++) {
    pre = Math.min(pre, cpuMs(() => { if (!fastCast(src, from, out, to, n, opts)) throw new Error(`${a} -> ${b} not taken`); }));
    fresh = Math.min(fresh, cpuMs(() => { fastCast(src, from, allocateStorage(to, n), to, n, opts); }));
  }
  console.log(`| ${a} -> ${b} | ${(n / pre / 1e3).toFixed(0)} | ${(n / fresh / 1e3).toFixed(0)} |`);
}
