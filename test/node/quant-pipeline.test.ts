/**
 * The quantize helper thread (src/kernels/quant/pipeline.ts, tensorcast/node's useQuantizeThread):
 * large quantize / dequantize jobs on ordinary arrays, copied by this thread while a worker thread
 * runs the kernels, give the one-thread bytes (which test/ops/quantize-simd.test.ts holds to the
 * reference), on every kernel, per tensor, per axis and blocked (runs of one length, and runs of
 * mixed lengths that end inside a group), with counts that end inside a chunk, a SIMD group and
 * (4-bit) a byte; and the helper really ran chunks. When the helper holds a
 * chunk too long (stalled here on purpose) the caller rescues it; with no thread at all every
 * chunk runs on the caller. The process exits with the thread idle.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Tensor, dequantizeLinear, quantizeLinear, type DTypeName } from "../../src/index.js";
import { PIPELINE_MIN_ELEMENTS, QuantPipeline } from "../../src/kernels/quant/pipeline.js";
import { setQuantStreamHelper } from "../../src/kernels/quant/simd.js";
import { quantizeThreadChunks, useQuantizeThread } from "../../src/node/quant-helper.js";
import { Rng } from "../support/rng.js";
import { withoutQuantSimd } from "../support/quant-simd.js";

const rng = new Rng(2511);
const unit = (): number => rng.u32() / 4294967296;

interface Case {
  name: string;
  q: DTypeName;
  shape: number[];
  /** Per tensor, per axis 0, or blocked by 32 along the last axis. */
  how: "tensor" | "axis" | "block32";
  e8m0?: boolean;
}

// Counts past PIPELINE_MIN_ELEMENTS (524,288) that end inside a chunk (131,072) and a group.
const CASES: Case[] = [
  { name: "int8 per tensor, 600,001 elements", q: "int8", shape: [600001], how: "tensor" },
  { name: "uint8 per tensor", q: "uint8", shape: [524288 + 131072 * 2 + 17], how: "tensor" },
  { name: "int8 per axis (rows of 4,112)", q: "int8", shape: [160, 4112], how: "axis" },
  { name: "uint8 per axis (rows of 4,096)", q: "uint8", shape: [200, 4096], how: "axis" },
  { name: "int4 per tensor, an odd count", q: "int4", shape: [655361], how: "tensor" },
  { name: "uint4 blocked by 32", q: "uint4", shape: [300, 2048], how: "block32" },
  { name: "int4 blocked by 32", q: "int4", shape: [257, 2080], how: "block32" },
  { name: "float8e4m3fn blocked by 32", q: "float8e4m3fn", shape: [300, 2048], how: "block32" },
  { name: "float4e2m1 MX (e8m0 scales)", q: "float4e2m1", shape: [260, 2048], how: "block32", e8m0: true },
  { name: "float8e4m3fn MX (e8m0 scales)", q: "float8e4m3fn", shape: [258, 2048], how: "block32", e8m0: true },
  // Runs of mixed lengths: a call per run.
  { name: "int8 per axis, rows of 4,099 (not whole groups)", q: "int8", shape: [160, 4099], how: "axis" },
  { name: "int4 blocked by 32, rows of 2,050 (a partial last block)", q: "int4", shape: [300, 2050], how: "block32" },
  { name: "uint8 blocked by 32, rows of 2,063", q: "uint8", shape: [300, 2063], how: "block32" },
];

function operands(c: Case): { x: Tensor; scale: Tensor; zp: Tensor | undefined; opts: Record<string, unknown> } {
  const n = c.shape.reduce((a, b) => a * b, 1);
  const scaleShape = c.how === "tensor" ? [] : c.how === "axis" ? [c.shape[0]] : [c.shape[0], Math.ceil(c.shape[1] / 32)];
  const groups = scaleShape.reduce((a, b) => a * b, 1);
  const scale = c.e8m0
    ? Tensor.fromStorage(Uint8Array.from({ length: groups }, () => 122 + Math.floor(unit() * 8)), "float8e8m0", scaleShape)
    : Tensor.fromStorage(Float32Array.from({ length: groups }, () => Math.fround(0.005 + unit() * 0.1)), "float32", scaleShape);
  const integer = c.q.includes("int");
  const lo = c.q === "int8" ? -128 : c.q === "int4" ? -8 : 0;
  const span = c.q.endsWith("4") ? 16 : 256;
  const zp = integer ? Tensor.fromValues(Array.from({ length: groups }, () => lo + Math.floor(unit() * span)), c.q, scaleShape) : undefined;
  // Mostly ordinary values, with ties, NaN, infinities and huge values sprinkled in.
  const specials = [NaN, -NaN, Infinity, -Infinity, 3e38, -3e38, 0, -0];
  const data = Float32Array.from({ length: n }, (_, i) => (i % 997 === 0 ? specials[(i / 997) % specials.length] : Math.fround((unit() - 0.5) * 40)));
  const opts = { outputDtype: c.q, ...(c.how === "tensor" ? {} : c.how === "axis" ? { axis: 0 } : { axis: 1, blockSize: 32 }) };
  return { x: Tensor.fromStorage(data, "float32", c.shape), scale, zp, opts };
}

const same = (a: Tensor, b: Tensor): boolean => Buffer.compare(Buffer.from(a.bytes()), Buffer.from(b.bytes())) === 0;

/** Runs `f` with the helper removed (the one-thread path), putting it back after. */
function oneThread<T>(f: () => T): T {
  const helper = setQuantStreamHelper(undefined);
  try {
    return f();
  } finally {
    setQuantStreamHelper(helper);
  }
}

const settle = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

test("with the helper thread, every kernel's quantize and dequantize give the one-thread bytes, and the helper runs chunks", async () => {
  useQuantizeThread(true);
  try {
    // The first large call starts the thread (and runs every chunk itself meanwhile).
    const warm = operands(CASES[0]);
    quantizeLinear(warm.x, warm.scale, warm.zp, warm.opts);
    await settle(200);
    const before = quantizeThreadChunks();
    const pipeline = setQuantStreamHelper(undefined) as QuantPipeline;
    setQuantStreamHelper(pipeline);
    for (const c of CASES) {
      const { x, scale, zp, opts } = operands(c);
      const one = oneThread(() => quantizeLinear(x, scale, zp, opts));
      const dq = { ...opts, outputDtype: "float32" as const };
      const back1 = oneThread(() => dequantizeLinear(one, scale, zp, dq));
      // After a rescue (a loaded machine) the pipeline leaves some calls to one thread: repeat a
      // call until the pipeline takes it, every answer checked.
      const taken = (what: string, call: () => Tensor, want: Tensor): void => {
        for (let i = 0; i < 200; i++) {
          const before = pipeline.taken;
          assert.ok(same(call(), want), `${c.name}: ${what} differs from the one-thread bytes`);
          if (pipeline.taken > before) return;
        }
        assert.fail(`${c.name}: the helper's pipeline never took the ${what} job`);
      };
      taken("quantize", () => quantizeLinear(x, scale, zp, opts), one);
      taken("dequantize", () => dequantizeLinear(one, scale, zp, dq), back1);
    }
    assert.ok(quantizeThreadChunks() > before, "the helper thread ran no chunk");
  } finally {
    useQuantizeThread(false);
  }
});

test("with the helper thread, per-tensor int8 equals the scalar reference kernels", async () => {
  useQuantizeThread(true);
  try {
    const { x, scale, zp, opts } = operands(CASES[0]);
    quantizeLinear(x, scale, zp, opts);
    await settle(200);
    const two = quantizeLinear(x, scale, zp, opts);
    const reference = withoutQuantSimd(() => quantizeLinear(x, scale, zp, opts));
    assert.ok(same(two, reference));
  } finally {
    useQuantizeThread(false);
  }
});

test("a helper that holds a chunk too long: the caller rescues it, the bytes stay right, and later calls recover", async () => {
  useQuantizeThread(true);
  const pipeline = setQuantStreamHelper(undefined) as QuantPipeline;
  setQuantStreamHelper(pipeline);
  try {
    const { x, scale, zp, opts } = operands(CASES[2]);
    const one = oneThread(() => quantizeLinear(x, scale, zp, opts));
    quantizeLinear(x, scale, zp, opts);
    await settle(200);
    pipeline.stallHelper(true);
    // The caller takes every chunk the stalled helper has not claimed; the one it holds is rescued.
    // A rescue needs the helper to claim a chunk first, which a loaded machine may delay for many
    // calls: up to 10 s of calls, as for its return below.
    let rescued = false;
    for (const t0 = Date.now(); !rescued && Date.now() - t0 < 10000; await settle(1)) {
      assert.ok(same(quantizeLinear(x, scale, zp, opts), one), "a call with a stalled helper differs");
      rescued = pipeline.rescued > 0;
    }
    assert.ok(rescued, "no chunk was rescued from the stalled helper");
    // While the helper still holds its chunk (and for a while after a rescue), calls run on this thread alone.
    const taken = pipeline.taken;
    assert.ok(same(quantizeLinear(x, scale, zp, opts), one));
    assert.equal(pipeline.taken, taken, "a call after a rescue went to the pipeline");
    pipeline.stallHelper(false);
    await settle(200);
    const ran = pipeline.helperChunks();
    // Up to 10 s of calls (a loaded machine may keep the helper off its core for a while).
    for (const t0 = Date.now(); pipeline.helperChunks() === ran && Date.now() - t0 < 10000; await settle(5)) {
      assert.ok(same(quantizeLinear(x, scale, zp, opts), one));
    }
    assert.ok(pipeline.helperChunks() > ran, "the helper did not come back after the stall");
  } finally {
    pipeline.stallHelper(false);
    useQuantizeThread(false);
  }
});

test("no helper thread (it cannot start, or never runs): every chunk on the caller, the same bytes", () => {
  const { x, scale, zp, opts } = operands(CASES[4]);
  const one = quantizeLinear(x, scale, zp, opts);
  const cannot = new QuantPipeline({
    spawn() {
      throw new Error("no threads here");
    },
  });
  const never = new QuantPipeline({ spawn() {} });
  for (const p of [cannot, never]) {
    const before = setQuantStreamHelper(p);
    try {
      assert.ok(same(quantizeLinear(x, scale, zp, opts), one));
      assert.equal(p.helperChunks(), 0);
    } finally {
      setQuantStreamHelper(before);
    }
  }
});

test("jobs below PIPELINE_MIN_ELEMENTS stay on the caller", () => {
  let asked = 0;
  let taken = 0;
  const spy = new QuantPipeline({ spawn() {} });
  const run = spy.run.bind(spy);
  spy.run = (job, x, y, layout) => {
    asked++;
    const took = run(job, x, y, layout);
    if (took) taken++;
    return took;
  };
  const before = setQuantStreamHelper(spy);
  try {
    const small = operands({ name: "small", q: "int8", shape: [PIPELINE_MIN_ELEMENTS - 32], how: "tensor" });
    quantizeLinear(small.x, small.scale, small.zp, small.opts);
    const big = operands({ name: "big", q: "int8", shape: [PIPELINE_MIN_ELEMENTS], how: "tensor" });
    quantizeLinear(big.x, big.scale, big.zp, big.opts);
    assert.deepEqual([asked, taken], [2, 1]);
  } finally {
    setQuantStreamHelper(before);
  }
});

test("a process that used the helper thread exits at once when its work is done", () => {
  const helper = fileURLToPath(new URL("../../src/node/quant-helper.js", import.meta.url));
  const index = fileURLToPath(new URL("../../src/index.js", import.meta.url));
  const script = `
    const { useQuantizeThread, quantizeThreadChunks } = await import(${JSON.stringify(helper)});
    const { Tensor, quantizeLinear } = await import(${JSON.stringify(index)});
    useQuantizeThread();
    const x = Tensor.fromStorage(new Float32Array(1 << 21).fill(1.5), "float32", [1 << 21]);
    const s = Tensor.fromStorage(Float32Array.of(0.5), "float32", []);
    quantizeLinear(x, s);
    await new Promise((r) => setTimeout(r, 100));
    const y = quantizeLinear(x, s);
    console.log(y.data[0], y.data[(1 << 21) - 1]);
    // beforeExit fires only once nothing keeps the event loop alive: a referenced worker or timer
    // would hold it, and the process would not exit at all.
    process.once("beforeExit", () => console.log("loop empty"));
  `;
  // The timeout is a hang guard, not a speed criterion: what is asserted is that the loop emptied.
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", timeout: 120_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), "3 3\nloop empty");
});
