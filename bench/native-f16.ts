/**
 * The platform's own float16 (Float16Array, Math.f16round) against the path that runs without it,
 * on whichever runtime runs this file: Node 24 / 26, Bun, Deno; Chromium, Firefox and WebKit through
 * bench/browser-native.ts.
 * The numbers behind convert()'s choice of pairs (src/kernels/convert.ts, docs/performance.md).
 *
 *   npm run bench:native                                   # tsc, then Node with --expose-gc
 *   bun build/bench/native-f16.js
 *   deno run --allow-read --allow-env --v8-flags=--expose-gc build/bench/native-f16.js
 *   ... [--n 16777216] [--reps 9] [--warmup 2] [--only float64->float16,float16->float64]
 *
 * Per pair (float32 / float64 -> float16 and back) and input (every bit pattern uniformly: NaN
 * payloads, Inf, subnormals; and ordinary values like a model's), each contender converts `n`
 * elements into a preallocated output, after `warmup` untimed rounds; the contenders take turns
 * for `reps` rounds so a change in the machine's load hits them alike. The table gives million
 * elements per second from the fastest and the median round, the median's ratio to the replaced
 * path, and whether the bytes equal the replaced path's (the reference's:
 * test/kernels/*.test.ts). Contenders:
 * - replaced: what convert() runs where the platform has no Float16Array: WebAssembly SIMD where a
 *   kernel exists and the engine runs it, else the JS fast kernels, else castReference;
 * - convert(): as it dispatches on this runtime;
 * - native set: src/kernels/native/float16.ts (TypedArray set in 16 Ki blocks + NaN fix-up);
 * - native loop: one Float16Array element store (or load) per element, NaN by bits;
 * - Math.f16round loop (to float16 only): the engine rounds, the code comes from the result's
 *   float32 bits by integer operations.
 * Only core modules are imported (no Node built-ins), so every runtime runs the same code.
 */
import { dtype, type DType, type DTypeName, type Storage } from "../src/dtype/table.js";
import { convert } from "../src/kernels/convert.js";
import { fastCast } from "../src/kernels/fast/index.js";
import { nativeFloat16Cast } from "../src/kernels/native/float16.js";
import { castReference, type ResolvedCastOptions } from "../src/kernels/reference.js";
import { wasmCast } from "../src/kernels/wasm/index.js";
import { Rng } from "../test/support/rng.js";
import { float16Weights, inputFor, median } from "./inputs.js";

const OPTS: ResolvedCastOptions = { saturate: true, roundMode: "up" };

interface F16Array {
  [index: number]: number;
}
type F16Ctor = new (buffer: ArrayBufferLike, byteOffset: number, length: number) => F16Array;
const F16 = (globalThis as { Float16Array?: F16Ctor }).Float16Array;
const f16round = (Math as { f16round?: (x: number) => number }).f16round;

interface Host {
  readonly name: string;
  readonly args: readonly string[];
  readonly gc?: () => void;
}

/** Which runtime this is, its arguments and its way to collect garbage before a timed round. */
function host(): Host {
  const g = globalThis as {
    Bun?: { version: string; gc(force: boolean): void };
    Deno?: { version: { deno: string; v8: string }; args: string[] };
    process?: { version: string; versions: { v8: string }; argv: string[] };
    gc?: () => void;
    navigator?: { userAgent: string };
    benchArgs?: string[];
  };
  // A page (bench/browser-native.ts): no GC to call in Firefox and WebKit, so rounds stay interleaved.
  if (!g.process && g.navigator) return { name: g.navigator.userAgent, args: g.benchArgs ?? [], gc: g.gc };
  if (g.Bun) return { name: `Bun ${g.Bun.version} (JavaScriptCore)`, args: g.process!.argv.slice(2), gc: () => g.Bun!.gc(true) };
  if (g.Deno) return { name: `Deno ${g.Deno.version.deno} (V8 ${g.Deno.version.v8})`, args: g.Deno.args, gc: g.gc };
  return { name: `Node ${g.process!.version} (V8 ${g.process!.versions.v8})`, args: g.process!.argv.slice(2), gc: g.gc };
}

interface Options {
  n: number;
  reps: number;
  warmup: number;
  only: string[];
}

function parseArgs(argv: readonly string[]): Options {
  const o: Options = { n: 16 * 1024 * 1024, reps: 9, warmup: 2, only: [] };
  for (let i = 0; i < argv.length; i += 2) {
    const [k, v] = [argv[i], argv[i + 1]];
    if (k === "--n") o.n = Number(v);
    else if (k === "--reps") o.reps = Number(v);
    else if (k === "--warmup") o.warmup = Number(v);
    else if (k === "--only") o.only = v.split(",");
    else throw new Error(`unknown argument ${k}; expected --n, --reps, --warmup or --only`);
  }
  if (!(Number.isSafeInteger(o.n) && o.n > 0 && o.reps >= 1 && o.warmup >= 0)) throw new Error("--n and --reps must be positive, --warmup not negative");
  return o;
}

type Run = (src: Storage, dst: Storage, n: number) => void;

/** convert() without the native kernels, and which kernel that is here. */
function replaced(from: DType, to: DType, src: Storage, dst: Storage): { run: Run; name: string } {
  const probe = Math.min(64, (src as Uint16Array).length);
  const name = wasmCast(src, from, dst, to, probe, OPTS) ? "wasm SIMD" : fastCast(src, from, dst, to, probe, OPTS) ? "JS fast" : "reference";
  return {
    name,
    run: (s, d, n) => {
      if (!wasmCast(s, from, d, to, n, OPTS) && !fastCast(s, from, d, to, n, OPTS)) castReference(s, from, d, to, n, OPTS);
    },
  };
}

/** `h[i] = src[i]` per element (the engine rounds), then a NaN gets the reference's code by bits. */
function storeLoop(stride: number): Run {
  return (src, dst, n) => {
    const d = dst as Uint16Array;
    const h = new F16!(d.buffer, d.byteOffset, n);
    const s = src as Float32Array | Float64Array;
    const w = new Uint32Array(s.buffer, s.byteOffset, s.byteLength >>> 2);
    for (let i = 0; i < n; i++) {
      h[i] = s[i];
      if ((d[i] & 0x7fff) > 0x7c00) d[i] = 0x7e00 | ((w[stride * i + stride - 1] >>> 16) & 0x8000);
    }
  };
}

/** `dst[i] = h[i]` per element; a NaN is written by bits (quiet, sign kept, payload dropped). */
function loadLoop(stride: number): Run {
  return (src, dst, n) => {
    const s = src as Uint16Array;
    const h = new F16!(s.buffer, s.byteOffset, n);
    const d = dst as Float32Array | Float64Array;
    const w = new Uint32Array(d.buffer, d.byteOffset, d.byteLength >>> 2);
    for (let i = 0; i < n; i++) {
      const c = s[i];
      if ((c & 0x7fff) <= 0x7c00) d[i] = h[i];
      else if (stride === 2) {
        w[2 * i] = 0;
        w[2 * i + 1] = 0x7ff80000 | ((c & 0x8000) << 16);
      } else w[i] = 0x7fc00000 | ((c & 0x8000) << 16);
    }
  };
}

const one32 = new Float32Array(1);
const oneBits = new Int32Array(one32.buffer);

/**
 * Math.f16round rounds once from the exact value; its result is a float16 value, exact in float32,
 * whose bits give the code: normals by rebiasing the exponent (0x38000000 = (127 - 15) << 23),
 * subnormals (below 2^-14 = 0x38800000) as |y| * 2^24, an integer.
 */
function f16roundLoop(stride: number): Run {
  return (src, dst, n) => {
    const s = src as Float32Array | Float64Array;
    const d = dst as Uint16Array;
    const w = new Uint32Array(s.buffer, s.byteOffset, s.byteLength >>> 2);
    const round = f16round!;
    for (let i = 0; i < n; i++) {
      const x = s[i];
      if (x !== x) {
        d[i] = 0x7e00 | ((w[stride * i + stride - 1] >>> 16) & 0x8000);
        continue;
      }
      const y = round(x);
      one32[0] = y;
      const b = oneBits[0];
      const m = b & 0x7fffffff;
      const code = m >= 0x7f800000 ? 0x7c00 : m >= 0x38800000 ? (m - 0x38000000) >>> 13 : (y < 0 ? -y : y) * 16777216;
      d[i] = ((b >>> 16) & 0x8000) | code;
    }
  };
}

function contenders(from: DType, to: DType, src: Storage, dst: Storage): [string, Run][] {
  const base = replaced(from, to, src, dst);
  const list: [string, Run][] = [
    [`replaced: ${base.name}`, base.run],
    ["convert() as dispatched here", (s, d, n) => convert(s, from, d, to, n, OPTS)],
  ];
  if (F16) {
    list.push(["native set + NaN fix-up", (s, d, n) => void nativeFloat16Cast(s, from, d, to, n)]);
    const wide = (to.name === "float16" ? from : to).name === "float64" ? 2 : 1;
    list.push([to.name === "float16" ? "native loop: Float16Array stores" : "native loop: Float16Array loads", to.name === "float16" ? storeLoop(wide) : loadLoop(wide)]);
    if (to.name === "float16" && f16round) list.push(["Math.f16round loop", f16roundLoop(wide)]);
  }
  return list;
}

function outputFor(t: DTypeName, n: number): Storage {
  return t === "float16" ? new Uint16Array(n) : t === "float32" ? new Float32Array(n) : new Float64Array(n);
}

function bytesOf(a: Storage): Uint8Array {
  const t = a as Uint8Array;
  return new Uint8Array(t.buffer, t.byteOffset, t.byteLength);
}

function differing(a: Storage, b: Storage, elementBytes: number): number {
  const x = bytesOf(a);
  const y = bytesOf(b);
  let count = 0;
  for (let i = 0; i < x.length; i += elementBytes) {
    for (let k = 0; k < elementBytes; k++) {
      if (x[i + k] !== y[i + k]) {
        count++;
        break;
      }
    }
  }
  return count;
}

/** Every bit pattern uniformly, and values like a model's (bench/inputs.ts). */
function inputs(from: DTypeName, n: number): [string, Storage][] {
  const rng = new Rng(0x2545f491);
  const words = new Uint32Array(n * (from === "float64" ? 2 : from === "float32" ? 1 : 0.5));
  for (let i = 0; i < words.length; i++) words[i] = rng.u32();
  if (from === "float16") return [["random bits", new Uint16Array(words.buffer)], ["ordinary values", float16Weights(n, rng)]];
  const bits = from === "float64" ? new Float64Array(words.buffer) : new Float32Array(words.buffer);
  return [["random bits", bits], ["ordinary values", inputFor(from, n, rng)]];
}

const PAIRS: [DTypeName, DTypeName][] = [["float32", "float16"], ["float64", "float16"], ["float16", "float32"], ["float16", "float64"]];

function main(): void {
  const h = host();
  const o = parseArgs(h.args);
  const rate = (ms: number): string => (o.n / ms / 1e3).toFixed(0);
  console.log(`${h.name}; Float16Array: ${F16 ? "yes" : "no"}, Math.f16round: ${f16round ? "yes" : "no"}; ` +
    `${o.n} elements, ${o.warmup} warm-up + ${o.reps} timed rounds; gc between rounds: ${h.gc ? "yes" : "no"}`);
  console.log("M elements/s, fastest / median round; ratio of medians to the replaced path");
  for (const [f, t] of PAIRS) {
    const pair = `${f}->${t}`;
    if (o.only.length > 0 && !o.only.includes(pair)) continue;
    const from = dtype(f);
    const to = dtype(t);
    const size = to.bits / 8;
    const want = outputFor(t, o.n);
    const out = outputFor(t, o.n);
    const rows: string[][] = [];
    const cases = inputs(f, o.n);
    for (const [input, src] of cases) {
      const runs = contenders(from, to, src, out);
      runs[0][1](src, want, o.n);
      const times: number[][] = runs.map(() => []);
      const diff = runs.map(([, run]) => {
        bytesOf(out).fill(0xa5);
        run(src, out, o.n);
        return differing(out, want, size);
      });
      for (let r = 1; r < o.warmup; r++) runs.forEach(([, run]) => run(src, out, o.n));
      for (let r = 0; r < o.reps; r++) {
        runs.forEach(([, run], k) => {
          h.gc?.();
          const t0 = performance.now();
          run(src, out, o.n);
          times[k].push(performance.now() - t0);
        });
      }
      runs.forEach(([name], k) => {
        rows[k] ??= [name];
        const med = median(times[k]);
        rows[k].push(`${rate(Math.min(...times[k]))} / ${rate(med)}`, `${(median(times[0]) / med).toFixed(2)}x`, diff[k] === 0 ? "same" : `${diff[k]} differ`);
      });
    }
    console.log(`\n${pair}`);
    console.log(`| contender | ${cases.map(([input]) => `${input}: M/s | ratio | bytes`).join(" | ")} |`);
    console.log(`|---|${cases.map(() => "---:|---:|---").join("|")}|`);
    for (const row of rows) console.log(`| ${row.join(" | ")} |`);
  }
}

main();
