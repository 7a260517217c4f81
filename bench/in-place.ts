/**
 * What running the WebAssembly kernels in place gains (issue 16; arenas do it): each kernel over 4 Mi
 * elements that already live in the module's memory (the output left there), against wasmCast on
 * ordinary typed arrays (every 16 Ki-element chunk copied in and out), alternating in one process,
 * the bytes of both compared. Two more columns say what ordinary arrays cannot avoid: the chunk
 * copies alone (wasmCast's loop with no kernel), and a JavaScript loop assigning element by element
 * on the arrays themselves (no copies, and exact for these pairs' in-range values: the fastest path
 * that reads the caller's memory where it is). A measurement for docs/performance.md.
 *
 *   npx tsc -p tsconfig.test.json && node build/bench/in-place.js [--size N] [--reps 11]
 */
import os from "node:os";
import { dtype, type DTypeName, type Storage } from "../src/dtype/table.js";
import { kernelModule } from "../src/kernels/wasm/kernels.js";
import { wasmCast } from "../src/kernels/wasm/index.js";
import { TYPED_ARRAYS } from "../src/tensor.js";

type Kernel = (src: number, dst: number, groups: number) => void;
interface WasmApi {
  validate(bytes: Uint8Array): boolean;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { readonly exports: Record<string, unknown> };
}
const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

const argv = process.argv.slice(2);
const option = (name: string, fallback: number): number => {
  const i = argv.indexOf(name);
  return i >= 0 ? Number(argv[i + 1]) : fallback;
};
const n = option("--size", 4 << 20);
const reps = option("--reps", 11);

// [kernel, from, to, elements per group]
const PAIRS: [string, DTypeName, DTypeName, number][] = [
  ["f32_f16", "float32", "float16", 8], ["f16_f32", "float16", "float32", 8], ["f32_i8", "float32", "int8", 16],
  ["f64_f32", "float64", "float32", 8], ["i64_i32", "int64", "int32", 8],
];

const pages = Math.ceil((12 * n) / 65536) + 1;
let code = kernelModule(pages, { relaxed: true });
const relaxed = wasm.validate(code);
if (!relaxed) code = kernelModule(pages);
const instance = new wasm.Instance(new wasm.Module(code), {});
const memory = new Uint8Array((instance.exports.memory as { buffer: ArrayBuffer }).buffer);
const OUT = 8 * n;

console.log(`${process.version}, ${os.cpus().length} x ${os.cpus()[0]?.model ?? "?"}, relaxed SIMD: ${relaxed ? "yes" : "no"}, n = ${n}, ${reps} calls each, alternating`);
console.log("| pair | in place ms (min / median) | with copies ms (min / median) | in place M/s (best) | copies M/s (best) | gain (best / median) | copies alone M/s (best / median) | JS loop M/s (best / median) | same bytes |");
console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
const CHUNK = 16384;
// A memory of wasmCast's size of its own, so the in-place kernel's input is left alone.
const staging = new Uint8Array(new (wasm as unknown as { Memory: new (d: { initial: number }) => { buffer: ArrayBuffer } }).Memory({ initial: Math.ceil((12 * CHUNK) / 65536) }).buffer);
/** wasmCast's chunk loop without its kernel: what an ordinary array pays before anything is converted. */
function copiesAlone(src: Uint8Array, dst: Uint8Array, inSize: number, outSize: number): void {
  for (let start = 0; start < n; start += CHUNK) {
    const m = Math.min(CHUNK, n - start);
    staging.set(src.subarray(start * inSize, (start + m) * inSize), 0);
    dst.set(staging.subarray(8 * CHUNK, 8 * CHUNK + m * outSize), start * outSize);
  }
}
/**
 * Element by element on the caller's arrays (a BigInt64Array source read as its low words), one
 * function per pair so that each loop's element accesses stay of one type, as in a real kernel.
 */
function jsLoop(): (x: ArrayLike<number>, y: { [i: number]: number }, step: number) => void {
  return new Function("x", "y", "step", `for (let i = 0, j = 0; i < ${n}; i++, j += step) y[i] = x[j];`) as ReturnType<typeof jsLoop>;
}
const rate = (ms: number): string => (n / ms / 1e3).toFixed(0);
for (const [k, f, t, group] of PAIRS) {
  const from = dtype(f);
  const to = dtype(t);
  const src = new Uint8Array((n * from.bits) / 8);
  for (let i = 0; i < src.length; i++) src[i] = Math.imul(i, 0x9e3779b1) >>> 23;
  if (f === "float16") for (let i = 1; i < src.length; i += 2) src[i] &= 0x7b; // no Inf / NaN codes
  const dst = new Uint8Array((n * to.bits) / 8);
  memory.set(src, 0);
  const ctorOf = (name: DTypeName) => TYPED_ARRAYS[dtype(name).array as keyof typeof TYPED_ARRAYS];
  const s = new (ctorOf(f))(src.buffer) as Storage;
  const d = new (ctorOf(t))(dst.buffer) as Storage;
  const kernel = instance.exports[k] as Kernel;
  const inPlace: number[] = [];
  const copies: number[] = [];
  const alone: number[] = [];
  const loop: number[] = [];
  const scratch = new Uint8Array(dst.length);
  const scratchView = new (ctorOf(t))(scratch.buffer) as unknown as { [i: number]: number };
  const loopSource = (s instanceof BigInt64Array ? new Int32Array(s.buffer) : s) as ArrayLike<number>;
  const loopFn = jsLoop();
  for (let r = 0; r < reps; r++) {
    let t0 = performance.now();
    kernel(0, OUT, n / group);
    inPlace.push(performance.now() - t0);
    t0 = performance.now();
    wasmCast(s, from, d, to, n, { saturate: true, roundMode: "up" });
    copies.push(performance.now() - t0);
    t0 = performance.now();
    copiesAlone(src, scratch, from.bits / 8, to.bits / 8);
    alone.push(performance.now() - t0);
    // float16 has no JS element type here, so its pairs get no loop column.
    if (f !== "float16" && t !== "float16") {
      t0 = performance.now();
      loopFn(loopSource, scratchView, s instanceof BigInt64Array ? 2 : 1);
      loop.push(performance.now() - t0);
    }
  }
  let same = true;
  for (let i = 0; i < dst.length && same; i++) same = dst[i] === memory[OUT + i];
  inPlace.sort((a, b) => a - b);
  copies.sort((a, b) => a - b);
  alone.sort((a, b) => a - b);
  loop.sort((a, b) => a - b);
  const mid = reps >> 1;
  console.log(`| ${f}->${t} | ${inPlace[0]!.toFixed(2)} / ${inPlace[mid]!.toFixed(2)} | ${copies[0]!.toFixed(2)} / ${copies[mid]!.toFixed(2)} | ` +
    `${(n / inPlace[0]! / 1e3).toFixed(0)} | ${(n / copies[0]! / 1e3).toFixed(0)} | ${(copies[0]! / inPlace[0]!).toFixed(2)}x / ${(copies[mid]! / inPlace[mid]!).toFixed(2)}x | ` +
    `${rate(alone[0]!)} / ${rate(alone[mid]!)} | ${loop.length ? `${rate(loop[0]!)} / ${rate(loop[mid]!)}` : "–"} | ${same ? "yes" : "NO"} |`);
}
