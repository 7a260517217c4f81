/**
 * Run by test/runtimes/bun-deno.test.ts in Node, Bun and Deno: quantize and dequantize 2 Mi
 * float32 (per tensor to int8, blocked by 32 to int4, MX float4e2m1) with tensorcast/node's helper
 * thread on, until the helper has run chunks (at most 5 s), and print the outputs' FNV-1a hashes,
 * the one-thread outputs' hashes and the helper's chunk count as one JSON line.
 */
import { Tensor, dequantizeLinear, quantizeLinear } from "../../src/index.js";
import { quantizeThreadChunks, useQuantizeThread } from "../../src/node/quant-helper.js";

const fnv = (b: Uint8Array): string => {
  let h = 0x811c9dc5;
  for (let i = 0; i < b.length; i++) h = Math.imul(h ^ b[i], 0x01000193) >>> 0;
  return h.toString(16);
};

const rows = 1024;
const cols = 2048;
const n = rows * cols;
const x = Tensor.fromStorage(Float32Array.from({ length: n }, (_, i) => Math.fround(Math.sin(i * 0.37) * 9 + (i % 7 === 0 ? 0.5 : 0))), "float32", [rows, cols]);
const perTensor = Tensor.fromStorage(Float32Array.of(0.061), "float32", []);
const blockScales = Tensor.fromStorage(Float32Array.from({ length: rows * (cols / 32) }, (_, i) => Math.fround(0.5 + (i % 13) * 0.1)), "float32", [rows, cols / 32]);
const mxScales = Tensor.fromStorage(Uint8Array.from({ length: rows * (cols / 32) }, (_, i) => 124 + (i % 5)), "float8e8m0", [rows, cols / 32]);
const blocked = { axis: 1, blockSize: 32 };

function hashes(): string[] {
  const q8 = quantizeLinear(x, perTensor);
  const q4 = quantizeLinear(x, blockScales, undefined, { ...blocked, outputDtype: "int4" });
  const mx = quantizeLinear(x, mxScales, undefined, { ...blocked, outputDtype: "float4e2m1" });
  const back = dequantizeLinear(q4, blockScales, undefined, blocked);
  return [q8, q4, mx, back].map((t) => fnv(t.bytes()));
}

const one = hashes();
useQuantizeThread();
let two = hashes();
for (const t0 = Date.now(); quantizeThreadChunks() === 0 && Date.now() - t0 < 5000;) {
  await new Promise((r) => setTimeout(r, 20));
  two = hashes();
}
console.log(JSON.stringify({ one, two, chunks: quantizeThreadChunks() }));
