/**
 * The page side of bench/browser-f16.ts: runs in Chromium (bundled by esbuild; no Node built-ins).
 * For float32 / float64 -> float16 and float16 -> float32 / float64, on two inputs each, it times
 * the generic path (what convert() ran before the native kernels: WebAssembly SIMD, else the JS
 * fast kernels), convert() as it now dispatches, the native kernels of
 * src/kernels/native/float16.ts, and the alternatives they were chosen over: other block sizes,
 * one whole-array set then one fix-up pass, a fix-up testing one code at a time, `set` alone (no
 * NaN fix-up: the lower bound of any native kernel, and not the reference's bytes), JS loops of
 * Float16Array element stores / loads, and Math.f16round. Every contender's bytes are compared with
 * the generic path's.
 */
import { dtype, type DType, type DTypeName, type Storage } from "../src/dtype/table.js";
import { convert } from "../src/kernels/convert.js";
import { fastCast } from "../src/kernels/fast/index.js";
import * as native from "../src/kernels/native/float16.js";
import { castReference, type ResolvedCastOptions } from "../src/kernels/reference.js";
import { wasmCast } from "../src/kernels/wasm/index.js";
import { Rng } from "../test/support/rng.js";
import { inputFor, median } from "./inputs.js";

const OPTS: ResolvedCastOptions = { saturate: true, roundMode: "up" };

export interface BenchOptions {
  readonly n: number;
  readonly reps: number;
  readonly warmup: number;
  /** "float32->float16" ...; all four when empty. */
  readonly only: readonly string[];
}

export interface ContenderResult {
  readonly name: string;
  /** Median milliseconds of one conversion of `n` elements. */
  readonly ms: number;
  /** Output elements whose bytes differ from the generic path's (0: the same bytes). */
  readonly differing: number;
}

export interface CaseResult {
  readonly pair: string;
  readonly input: string;
  readonly nanCount: number;
  readonly contenders: readonly ContenderResult[];
}

export interface BenchResult {
  readonly userAgent: string;
  readonly float16Array: boolean;
  readonly f16round: boolean;
  readonly n: number;
  readonly reps: number;
  readonly warmup: number;
  readonly cases: readonly CaseResult[];
}

/** The slice of Float16Array the element-loop variants use. */
interface F16Array {
  [index: number]: number;
  subarray(begin: number, end: number): F16Array;
}
type F16Ctor = new (buffer: ArrayBufferLike, byteOffset: number, length: number) => F16Array;
const F16 = (globalThis as { Float16Array?: F16Ctor }).Float16Array;
const f16round = (Math as { f16round?: (x: number) => number }).f16round;
const gc = (globalThis as { gc?: () => void }).gc;

type Run = (src: Storage, dst: Storage, n: number) => void;

/** What convert() did before the native kernels: WebAssembly SIMD, else the JS fast kernel, else the reference. */
function generic(from: DType, to: DType): Run {
  return (src, dst, n) => {
    if (!wasmCast(src, from, dst, to, n, OPTS) && !fastCast(src, from, dst, to, n, OPTS)) castReference(src, from, dst, to, n, OPTS);
  };
}

/** The contenders of one pair, the generic path first. */
function contenders(from: DType, to: DType): [string, Run][] {
  const key = `${from.name}->${to.name}`;
  const list: [string, Run][] = [
    ["generic (wasm / JS fast)", generic(from, to)],
    ["convert() as dispatched", (s, d, n) => convert(s, from, d, to, n, OPTS)],
    [`native: set + NaN fix-up, ${native.NATIVE_BLOCK / 1024} Ki blocks`, (s, d, n) => { native.nativeFloat16Cast(s, from, d, to, n); }],
  ];
  const kernel = {
    "float32->float16": native.f32ToF16, "float64->float16": native.f64ToF16,
    "float16->float32": native.f16ToF32, "float16->float64": native.f16ToF64,
  }[key] as (s: Storage, d: Storage, n: number, block: number) => void;
  for (const block of [4096, 65536]) list.push([`native, ${block / 1024} Ki blocks`, (s, d, n) => kernel(s, d, n, block)]);
  list.push(["native, one set then one fix-up pass", (s, d, n) => kernel(s, d, n, n)]);
  list.push([`native, fix-up element by element (no word pairs)`, elementFixup(from, to)]);
  list.push([`set only, ${native.NATIVE_BLOCK / 1024} Ki blocks (no NaN fix-up: not the reference)`, setOnly(to.name === "float16")]);
  list.push(["JS loop of Float16Array element accesses + fix-up", to.name === "float16" ? elementStores(from) : elementLoads(to)]);
  if (from.name === "float64") list.push(["JS loop: Math.f16round, bits by integer ops", f16roundLoop]);
  return list;
}

function setOnly(toF16: boolean): Run {
  const block = native.NATIVE_BLOCK;
  return (src, dst, n) => {
    if (toF16) {
      const d = dst as Uint16Array;
      const h = new F16!(d.buffer, d.byteOffset, n) as unknown as Float32Array; // only .set is used
      const s = src as Float32Array | Float64Array;
      for (let start = 0; start < n; start += block) h.set(s.subarray(start, Math.min(start + block, n)), start);
    } else {
      const s = src as Uint16Array;
      const h = new F16!(s.buffer, s.byteOffset, n) as unknown as Float32Array;
      const d = dst as Float32Array | Float64Array;
      for (let start = 0; start < n; start += block) d.set(h.subarray(start, Math.min(start + block, n)), start);
    }
  };
}

/** The native kernel with the NaN fix-up testing one code at a time instead of two per word. */
function elementFixup(from: DType, to: DType): Run {
  const block = native.NATIVE_BLOCK;
  return (src, dst, n) => {
    if (to.name === "float16") {
      const d = dst as Uint16Array;
      const h = new F16!(d.buffer, d.byteOffset, n) as unknown as Float32Array;
      const s = src as Float32Array | Float64Array;
      const w = new Uint32Array(s.buffer, s.byteOffset, s.byteLength >>> 2);
      const stride = from.name === "float64" ? 2 : 1;
      for (let start = 0; start < n; start += block) {
        const end = Math.min(start + block, n);
        h.set(s.subarray(start, end), start);
        for (let i = start; i < end; i++) {
          if ((d[i] & 0x7fff) > 0x7c00) d[i] = 0x7e00 | ((w[stride * i + stride - 1] >>> 16) & 0x8000);
        }
      }
    } else {
      const s = src as Uint16Array;
      const h = new F16!(s.buffer, s.byteOffset, n) as unknown as Float32Array;
      const d = dst as Float32Array | Float64Array;
      const w = new Uint32Array(d.buffer, d.byteOffset, d.byteLength >>> 2);
      const stride = to.name === "float64" ? 2 : 1;
      const nan = stride === 2 ? 0x7ff80000 : 0x7fc00000;
      for (let start = 0; start < n; start += block) {
        const end = Math.min(start + block, n);
        d.set(h.subarray(start, end), start);
        for (let i = start; i < end; i++) {
          const c = s[i];
          if ((c & 0x7fff) > 0x7c00) {
            if (stride === 2) w[2 * i] = 0;
            w[stride * i + stride - 1] = nan | ((c & 0x8000) << 16);
          }
        }
      }
    }
  };
}

/** `h[i] = src[i]` element by element (what the JIT makes of a Float16Array store), then the fix-up. */
function elementStores(from: DType): Run {
  return (src, dst, n) => {
    const d = dst as Uint16Array;
    const h = new F16!(d.buffer, d.byteOffset, n);
    const s = src as Float32Array | Float64Array;
    const w = new Uint32Array(s.buffer, s.byteOffset, s.byteLength >>> 2);
    const hi = from.name === "float64" ? 2 : 1;
    const lo = from.name === "float64" ? 1 : 0;
    for (let i = 0; i < n; i++) {
      h[i] = s[i];
      if ((d[i] & 0x7fff) > 0x7c00) d[i] = 0x7e00 | ((w[hi * i + lo] >>> 16) & 0x8000);
    }
  };
}

/** `dst[i] = h[i]` element by element, NaN written by bits. */
function elementLoads(to: DType): Run {
  return (src, dst, n) => {
    const s = src as Uint16Array;
    const h = new F16!(s.buffer, s.byteOffset, n);
    const d = dst as Float32Array | Float64Array;
    const w = new Uint32Array(d.buffer, d.byteOffset, d.byteLength >>> 2);
    const f64 = to.name === "float64";
    for (let i = 0; i < n; i++) {
      const c = s[i];
      if ((c & 0x7fff) <= 0x7c00) d[i] = h[i];
      else if (f64) {
        w[2 * i] = 0;
        w[2 * i + 1] = 0x7ff80000 | ((c & 0x8000) << 16);
      } else w[i] = 0x7fc00000 | ((c & 0x8000) << 16);
    }
  };
}

const one32 = new Float32Array(1);
const oneBits = new Int32Array(one32.buffer);

/**
 * float64 -> float16 with Math.f16round (one rounding, in the engine), then the code from the
 * result's float32 bits: normals by rebiasing the exponent, subnormals as y * 2^24 (an integer).
 */
const f16roundLoop: Run = (src, dst, n) => {
  const s = src as Float64Array;
  const d = dst as Uint16Array;
  const w = new Uint32Array(s.buffer, s.byteOffset, s.byteLength >>> 2);
  const round = f16round!;
  for (let i = 0; i < n; i++) {
    const x = s[i];
    if (x !== x) {
      d[i] = 0x7e00 | ((w[2 * i + 1] >>> 16) & 0x8000);
      continue;
    }
    const y = round(x);
    one32[0] = y;
    const b = oneBits[0];
    const m = b & 0x7fffffff;
    // 0x38800000 = 2^-14 (the smallest float16 normal); 0x7F800000 = Inf; 0x38000000 rebiases 127 -> 15.
    const code = m >= 0x7f800000 ? 0x7c00 : m >= 0x38800000 ? (m - 0x38000000) >>> 13 : (y < 0 ? -y : y) * 16777216;
    d[i] = ((b >>> 16) & 0x8000) | code;
  }
};

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

/** The two inputs of a source type: every bit pattern uniformly, and values like a model's. */
function inputs(from: DTypeName, n: number): [string, Storage][] {
  const rng = new Rng(0x2545f491);
  if (from === "float16") {
    const ordinary = new Uint16Array(n);
    generic(dtype("float32"), dtype("float16"))(inputFor("float32", n, rng), ordinary, n);
    return [["random bits", inputFor("float16", n, rng)], ["ordinary values", ordinary]];
  }
  const words = new Uint32Array(n * (from === "float64" ? 2 : 1));
  for (let i = 0; i < words.length; i++) words[i] = rng.u32();
  const bits = from === "float64" ? new Float64Array(words.buffer) : new Float32Array(words.buffer);
  return [["random bits", bits], ["ordinary values", inputFor(from, n, rng)]];
}

function nanCount(src: Storage, from: DTypeName): number {
  let count = 0;
  if (from === "float16") {
    for (const c of src as Uint16Array) if ((c & 0x7fff) > 0x7c00) count++;
  } else {
    for (const x of src as Float32Array | Float64Array) if (x !== x) count++;
  }
  return count;
}

const PAIRS: [DTypeName, DTypeName][] = [["float32", "float16"], ["float64", "float16"], ["float16", "float32"], ["float16", "float64"]];

/** Runs every contender of every chosen pair on both inputs; `progress` gets a line per case. */
export function runF16Bench(o: BenchOptions, progress: (line: string) => void = () => {}): BenchResult {
  if (!F16 || !f16round) throw new Error("this browser has no Float16Array / Math.f16round");
  const cases: CaseResult[] = [];
  for (const [f, t] of PAIRS) {
    const pair = `${f}->${t}`;
    if (o.only.length > 0 && !o.only.includes(pair)) continue;
    const from = dtype(f);
    const to = dtype(t);
    for (const [input, src] of inputs(f, o.n)) {
      const runs = contenders(from, to);
      const outs = runs.map(() => outputFor(t, o.n));
      const times: number[][] = runs.map(() => []);
      for (let r = 0; r < o.warmup; r++) runs.forEach(([, run], k) => run(src, outs[k], o.n));
      // The contenders take turns within each repetition, so a change in load hits them alike.
      for (let r = 0; r < o.reps; r++) {
        runs.forEach(([, run], k) => {
          gc?.();
          const t0 = performance.now();
          run(src, outs[k], o.n);
          times[k].push(performance.now() - t0);
        });
      }
      const results = runs.map(([name], k) => ({ name, ms: median(times[k]), differing: differing(outs[k], outs[0], to.bits / 8) }));
      cases.push({ pair, input, nanCount: nanCount(src, f), contenders: results });
      progress(`${pair} ${input}: done`);
    }
  }
  const nav = (globalThis as { navigator?: { userAgent: string } }).navigator;
  return {
    userAgent: nav?.userAgent ?? "?", float16Array: true, f16round: true, n: o.n, reps: o.reps, warmup: o.warmup, cases,
  };
}
