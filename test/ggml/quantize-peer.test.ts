// suite: full
/**
 * Every GGML quantizer against llama.cpp's own, live: node-llama-cpp 3.21.1's libggml-base
 * (test-peers/) through koffi, `ggml_quantize_chunk` on the same rows, without and with an
 * importance matrix. Rows are adversarial block by block (test/ggml/rows.ts: zeros, constants, one
 * outlier, subnormals, values near FLT_MAX, ties, a few levels, ramps, any finite float), then the
 * same with NaN and Inf among them. Skipped with the reason where test-peers is not installed;
 * under CI=true it must run.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { canQuantize, dequantizeGgml, GGML_TYPES, quantizeRows, type GgmlType } from "../../src/ggml/index.js";
import { ggmlPeer, peerSkip } from "../support/ggml-peer.js";
import { property } from "../support/suite.js";
import { firstBitDifference } from "./golden.js";
import { adversarialRows, GRID_KINDS, GRID_MAX_EXP, GRID_TYPES, importance, ROW_KINDS } from "./rows.js";

const peer = ggmlPeer();
const skip = peerSkip(peer);

const FINITE = ROW_KINDS.filter((k) => k !== "nonfinite" && k !== "payloads");
const NO_PAYLOADS = ROW_KINDS.filter((k) => k !== "payloads");

/** Types ggml quantizes the same with or without an importance matrix. */
const IGNORES_IMATRIX = new Set(["F32", "F16", "BF16", "Q8_0", "TQ1_0", "TQ2_0", "MXFP4"]);

function firstByteDifference(a: Uint8Array, b: Uint8Array, t: GgmlType): string | undefined {
  if (a.length !== b.length) return `lengths ${a.length} and ${b.length}`;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return `byte ${i} (block ${Math.floor(i / t.typeSize)}, offset ${i % t.typeSize}): ours 0x${a[i].toString(16)}, ggml 0x${b[i].toString(16)}`;
  return undefined;
}

/** The property: random shapes (1 to 3 rows, 1 to 8 blocks of 32 or 1 to 2 super-blocks) and rows. */
function check(t: GgmlType, withImatrix: boolean, kinds: readonly (typeof ROW_KINDS)[number][], seed: number, runs: number, maxExp = 40): void {
  if (typeof peer === "string") assert.fail(peer);
  const block = t.blockSize === 1 ? 32 : t.blockSize;
  const maxBlocks = block === 32 ? 8 : 2;
  fc.assert(fc.property(fc.integer({ min: 1, max: 0x7fffffff }), fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: maxBlocks }), (s, rows, blocks) => {
    const n = blocks * block;
    const x = adversarialRows(rows, n, block, s, kinds, maxExp);
    const im = withImatrix ? importance(n, s) : undefined;
    const ours = quantizeRows(t, x, n, im);
    const theirs = peer.quantize(t.id, x, n, im);
    const diff = firstByteDifference(ours, theirs, t);
    if (diff !== undefined) throw new Error(`${t.name}${withImatrix ? " with imatrix" : ""} seed ${s}, ${rows} x ${n}: ${diff}`);
    if (t.quantized) {
      const at = firstBitDifference(dequantizeGgml(t, ours), peer.toFloat(t.id, theirs, x.length));
      if (at !== -1) throw new Error(`${t.name} seed ${s}: decoded element ${at} differs from ggml's to_float`);
    }
  }), property(runs, seed, 5));
}

for (const t of GGML_TYPES.filter((r) => GRID_TYPES.has(r.name) && canQuantize(r, true))) {
  // ggml aborts the process on NaN, Inf and overflowing sums for these: finite rows only.
  if (canQuantize(t)) test(`${t.name}: adversarial finite rows quantize as ggml_quantize_chunk's`, { skip }, () => check(t, false, GRID_KINDS, 3601 + t.id, 300, GRID_MAX_EXP));
  test(`${t.name} with an importance matrix: adversarial finite rows quantize as ggml_quantize_chunk's`, { skip }, () => check(t, true, GRID_KINDS, 3801 + t.id, 300, GRID_MAX_EXP));
}

const TYPES = GGML_TYPES.filter((t) => canQuantize(t) && !GRID_TYPES.has(t.name));

for (const t of TYPES) {
  test(`${t.name}: adversarial rows quantize as ggml_quantize_chunk's`, { skip }, () => check(t, false, FINITE, 3601 + t.id, 300));
  test(`${t.name}: rows with NaN and Inf quantize as ggml_quantize_chunk's`, { skip }, () => check(t, false, NO_PAYLOADS, 3701 + t.id, 100));
  if (!t.quantized) {
    // A quantizer's NaN payload can reach its codes through nearest_int's bit trick, by whichever
    // operand x86 propagates; tensorcast promises bits for payload NaNs only in the plain types.
    test(`${t.name}: NaN payloads are ggml's`, { skip }, () => check(t, false, ROW_KINDS, 3751 + t.id, 100));
  }
  if (!IGNORES_IMATRIX.has(t.name)) {
    test(`${t.name} with an importance matrix: adversarial rows quantize as ggml_quantize_chunk's`, { skip }, () => check(t, true, FINITE, 3801 + t.id, 300));
  }
}

test("the types that need an importance matrix are ggml's", { skip }, () => {
  if (typeof peer === "string") assert.fail(peer);
  for (const t of GGML_TYPES) {
    if (t.id > 41 || !t.quantized) continue;
    if (canQuantize(t, true)) assert.equal(!canQuantize(t, false), peer.requiresImatrix(t.id), t.name);
  }
});
